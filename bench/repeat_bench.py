"""What a quick run costs when it is run many times: `bisectk run SPEC --repeat N` of a subject that
does nothing (`true`), against `--repeat 1`, a base tree and this one in turns (issue 27: a
bisection's confirmation runs one commit a dozen times; a warm-less ablation repeats its passes).

    per-run cost = (wall of --repeat N - wall of --repeat 1) / (N - 1)

Every run is supervised, classified and written to the ledger, as in any command; the spare
supervisors (run/spares.py) are what this measures most: a run of `true` ends before a new
interpreter has started.

    python bench/repeat_bench.py --base DIR [--n 41] [--samples 7]

DIR holds a base tree's `bisectk/` (`git archive REV bisectk | tar -x -C DIR`).
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = """name = "quick"
[subject]
command = ["true", "{x}"]
timeout = 10
[good]
x = 0
[bad]
x = 1
"""


def wall(root: Path, work: Path, repeat: int) -> float:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", "run", str(work / "q.toml"), "--repeat", str(repeat), "--fresh",
                        "--json", "--ledger", str(work / "q.db")], cwd=work, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root)})
    took = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"{root}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--n", type=int, default=41)
    ap.add_argument("--samples", type=int, default=7)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bisectk-repeat-"))
    atexit.register(shutil.rmtree, work, True)   # its repositories and ledgers go with it
    (work / "q.toml").write_text(SPEC)
    sides = {"base": a.base.resolve(), "new": ROOT}
    per: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(a.samples):
        for name, root in sides.items():
            one, many = wall(root, work, 1), wall(root, work, a.n)
            per[name].append((many - one) / (a.n - 1))
    for name, xs in per.items():
        print(f"{name}: {statistics.median(xs) * 1000:.1f} ms per run (min {min(xs) * 1000:.1f}, max "
              f"{max(xs) * 1000:.1f}; medians of {a.samples}, --repeat {a.n} against --repeat 1)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
