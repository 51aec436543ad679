"""The timeline of one session in a ledger: when each run started and ended, and the gaps between.

Where a command's wall goes that its runs do not account for (worker start-up, a spare's preload
after a hang, the search's own work) shows as the gap before a run.

    python bench/ledger_timeline.py LEDGER [--session N]      (default: the last session)
"""

from __future__ import annotations

import argparse
import sqlite3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ledger")
    p.add_argument("--session", type=int)
    a = p.parse_args()
    db = sqlite3.connect(a.ledger)
    sid = a.session or db.execute("select max(id) from sessions").fetchone()[0]
    t0, t1 = db.execute("select created, finished from sessions where id = ?", (sid,)).fetchone()
    rows = db.execute("select created, duration_s, outcome, kind from runs where session = ? order by created",
                      (sid,)).fetchall()
    end, gaps = t0, 0.0
    print(f"session {sid}: {len(rows)} runs, {((t1 or rows[-1][0]) - t0):.2f} s from its start to its end")
    for created, dur, outcome, kind in rows:
        start = created - (dur or 0.0)
        gap = start - end
        gaps += max(gap, 0.0)
        print(f"  +{start - t0:7.2f} s  gap {gap:6.2f}  run {dur or 0:6.2f}  {outcome} {kind or ''}")
        end = created
    print(f"runs {sum(r[1] or 0 for r in rows):.2f} s, gaps {gaps:.2f} s, after the last run {((t1 or end) - end):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
