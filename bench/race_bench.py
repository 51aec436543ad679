"""Parallel-bisection race bench (issue 10): `bisectk bisect --jobs 4 --flaky` on histories whose
subject fails whenever its build step did not run in its own worktree (tests/fixtures/buildrepo.py):
a runner that mixes up worktrees, or runs a commit twice at once in one, blames good commits.

Usage: python bench/race_bench.py [--seeds 40] [--commits 40] [--jobs 4] [--rev REV]
(--rev: run an older bisectk, e.g. 6dbe8b9, checked out into a temporary worktree, for comparison)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from buildrepo import make_build_repo  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--commits", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--fail-prob", type=float, default=0.6)
    ap.add_argument("--rev", default=None)
    ap.add_argument("--out", default=str(HERE / "results" / "race_bench.txt"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    wrong, right, other = [], 0, []
    with tempfile.TemporaryDirectory(prefix="race-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ)
        if args.rev:
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tmp / "old"), args.rev], cwd=ROOT, check=True)
            env["PYTHONPATH"] = str(tmp / "old")
        try:
            for seed in range(args.seeds):
                culprit = random.Random(seed).randrange(2, args.commits - 1)
                shas = make_build_repo(tmp / f"r{seed}", n=args.commits, culprit=culprit, fail_prob=args.fail_prob)
                p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(tmp / f"r{seed}"),
                                    "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
                                    "--build", "python build.py", "--flaky", "--jobs", str(args.jobs), "--json",
                                    "--ledger", str(tmp / f"l{seed}.db")],
                                   capture_output=True, text=True, env=env, cwd=tmp, timeout=1800)
                try:
                    found = (json.loads(p.stdout).get("first_bad") or {}).get("sha")
                except json.JSONDecodeError:
                    found = None
                if found == shas[culprit]:
                    right += 1
                elif found in shas:
                    wrong.append((seed, culprit, shas.index(found)))
                else:
                    other.append((seed, p.returncode, p.stderr.strip()[-200:]))
        finally:
            if args.rev:
                subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "old")], cwd=ROOT)
    text = (f"# bench/race_bench.py --seeds {args.seeds} --commits {args.commits} --jobs {args.jobs} "
            f"--fail-prob {args.fail_prob}" + (f" --rev {args.rev}" if args.rev else "")
            + f"  ({time.perf_counter() - t0:.0f} s)\n"
            f"right: {right}/{args.seeds}; wrong culprit: {len(wrong)} {wrong}; no answer: {len(other)} {other[:3]}")
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
