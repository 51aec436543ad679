"""Runs ahead of the search (issue 25, search/ahead.py): `ablate --jobs K` of CPU hang subjects,
this tree against a base tree, taken in turns so the machine's drift falls on both alike.

Subjects: variants/cpu/pipeline-hang.toml (a ring-buffer deadlock, 6 differences, runs of
0.15 s, hangs called at ~1.2 s) and the JIT-shaped subject of bench/hang_bench.py (imports, a
compile, a kernel; hang=1 the culprit among 4 differences), cold and --warm.
Reported per command: wall, runs (made ahead and not needed), culprits.

    python bench/ahead_bench.py --base DIR [--jobs 4] [--rounds 3] [--startup 1.0]

DIR holds a base tree's `bisectk/` (e.g. `git archive d704478 bisectk | tar -x -C DIR`).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from hang_bench import spec as jit_spec  # noqa: E402


def ablate(root: Path, spec: Path, extra: list[str], ledger: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(spec), "--json", "--ledger", str(ledger), *extra],
                       cwd=root, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return {"rc": p.returncode, "wall": wall, "error": p.stderr[-300:]}
    return {"rc": p.returncode, "wall": wall, "runs": d.get("runs"), "unused": d.get("unused_runs", 0),
            "culprits": d.get("culprits")}


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--base", required=True, type=Path)
    a.add_argument("--jobs", type=int, default=4)
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--startup", type=float, default=1.0)
    o = a.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ahead-bench-"))
    atexit.register(shutil.rmtree, work, True)   # its repositories and ledgers go with it
    subjects = {"pipeline-hang": ROOT / "variants" / "cpu" / "pipeline-hang.toml",
                "jit-hang": jit_spec(work / "jit", o.startup, quiet=False)}
    walls: dict[tuple, list[float]] = {}
    for r in range(o.rounds):
        for name, spec in subjects.items():
            for mode in ("cold", "warm"):
                extra = ["--jobs", str(o.jobs)] + (["--warm"] if mode == "warm" else [])
                for side, root in (("base", o.base.resolve()), ("new", ROOT)):
                    got = ablate(root, spec, extra, work / f"{side}-{name}-{mode}-{r}.db")
                    walls.setdefault((name, mode, side), []).append(got["wall"])
                    print(f"round {r + 1} {name:13} {mode} {side:4}: rc {got['rc']}, wall {got['wall']:.2f} s, "
                          f"runs {got.get('runs')} ({got.get('unused')} ahead, not needed), culprits {got.get('culprits')}"
                          + (f" {got['error']}" if "error" in got else ""), flush=True)
    print(f"medians of {o.rounds}, --jobs {o.jobs}:")
    for name in subjects:
        for mode in ("cold", "warm"):
            b, n = (statistics.median(walls[(name, mode, s)]) for s in ("base", "new"))
            print(f"  {name:13} {mode}: base {b:.2f} s, new {n:.2f} s (x{n / b:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
