"""The timeline of one session in a ledger: when each run started and ended, and the gaps between.

Where a command's wall goes that its runs do not account for (worker start-up, a spare's preload
after a hang, the search's own work) shows as the gap before a run.

    python bench/ledger_timeline.py LEDGER [--session N]      (default: the last session)
"""

from __future__ import annotations

import argparse
import sqlite3


def timeline(ledger: str, session: int | None = None):
    """(session id, its start, its end or None, [(start, duration, outcome, kind)] of its runs in
    the order they ended); the last session when `session` is None."""
    db = sqlite3.connect(ledger)
    sid = session or db.execute("select max(id) from sessions").fetchone()[0]
    t0, t1 = db.execute("select created, finished from sessions where id = ?", (sid,)).fetchone()
    rows = db.execute("select created, duration_s, outcome, kind from runs where session = ? order by created",
                      (sid,)).fetchall()
    return sid, t0, t1, [(created - (dur or 0.0), dur or 0.0, outcome, kind) for created, dur, outcome, kind in rows]


def waits(t0: float, runs) -> tuple[float, float]:
    """(seconds from the session's start to its first run, seconds between runs after it)."""
    if not runs:
        return float("nan"), 0.0
    gaps = sum(max(0.0, b[0] - (a[0] + a[1])) for a, b in zip(runs, runs[1:]))
    return runs[0][0] - t0, gaps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ledger")
    p.add_argument("--session", type=int)
    a = p.parse_args()
    sid, t0, t1, runs = timeline(a.ledger, a.session)
    end = t0
    last = runs[-1][0] + runs[-1][1] if runs else t0
    print(f"session {sid}: {len(runs)} runs, {(t1 or last) - t0:.2f} s from its start to its end")
    for start, dur, outcome, kind in runs:
        print(f"  +{start - t0:7.2f} s  gap {start - end:6.2f}  run {dur:6.2f}  {outcome} {kind or ''}")
        end = start + dur
    first, between = waits(t0, runs)
    print(f"runs {sum(r[1] for r in runs):.2f} s, gaps {max(first, 0.0) + between:.2f} s, "
          f"after the last run {((t1 or end) - end):.2f} s")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
