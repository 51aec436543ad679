"""A test that pays a first run's cost, bisected with the calibrated watchdog: a base tree against this one.

The history's test keeps a "JIT cache" keyed by the source, as Triton's and the CuTe DSL's are: a
commit's first run spends COST seconds filling it, later runs nothing. The two endpoints are run
by hand first (cached), as the user who knows which commit is good and which is bad has run them;
every commit between them is run for the first time by the bisection. Two histories:

- exit1: the failure hunted is `exit 1` from commit BAD_FROM on;
- hang:  the failure hunted is a silent hang (the test waits forever, printing nothing) from
  BAD_FROM on;
- hang-lines: the same hang, the test printing `compiling kernel` before its cache and `launching
  kernel` after it (the watchdog then follows the good run's progress).

Each side gets a fresh copy of each history and of the cache, and is run REPEATS times; the
answer, whether it is right, the runs and the whole command's wall are printed.

    python bench/first_run_cost_bench.py --base DIR [--commits 16] [--bad-from 10] [--cost 4]
                                         [--repeats 1]

DIR holds a base tree's `bisectk/` (`git archive REV bisectk | tar -x -C DIR`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def history(where: Path, commits: int, bad_from: int, hang: bool, cost: float,
            progress: bool = False) -> tuple[Path, Path]:
    """The repository and its test, the endpoints' cache entries made. `progress`: the test prints
    `compiling kernel` before the cache and `launching kernel` after it, as a JIT subject does."""
    repo = where / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for i in range(1, commits + 1):
        (repo / "kernel.txt").write_text(f"{i}\n")
        subprocess.run(["git", "add", "kernel.txt"], cwd=repo, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"c{i}"], cwd=repo, check=True, env=env)
    cache = where / "cache"
    test = where / "test.sh"
    broken = "exec sleep 1000" if hang else "exit 1"
    say = ("echo compiling kernel\n", "echo launching kernel\n") if progress else ("", "")
    test.write_text(f"#!/bin/sh\n{say[0]}h=$(cksum < kernel.txt | cut -d' ' -f1)\n"
                    f"[ -f {cache}/$h ] || {{ sleep {cost}; mkdir -p {cache}; touch {cache}/$h; }}\n"
                    f"{say[1]}[ $(cat kernel.txt) -ge {bad_from} ] && {broken}\nexit 0\n")
    test.chmod(0o755)
    for ref in (f"main~{commits - 1}", "main"):
        git(repo, "checkout", "-q", ref)
        subprocess.run(["timeout", str(cost + 2), str(test)], cwd=repo, check=False, stdout=subprocess.DEVNULL)
    git(repo, "checkout", "-q", "main")
    return repo, test


def bisect(tree: Path, repo: Path, test: Path, commits: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONUNBUFFERED", None)
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", f"HEAD~{commits - 1}",
                        "--bad", "HEAD", "--run", str(test), "--json", "--snapshots", "0"],
                       capture_output=True, text=True, env=env, timeout=1800, cwd=repo)   # not this checkout:
    # `python -m` puts the working directory first on the path, before PYTHONPATH's tree
    wall = time.monotonic() - start
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"answer": f"no JSON (exit {p.returncode})", "runs": 0, "wall": wall, "exit": p.returncode}
    first = doc.get("first_bad") or {}
    answer = first.get("subject") or ("ambiguous: " + str(len(doc.get("skipped") or [])) + " skipped"
                                      if doc.get("ambiguous") else doc.get("endpoints", {}).get("problem") or "none")
    return {"answer": answer, "confidence": doc.get("confidence"), "runs": doc.get("runs"), "wall": wall,
            "exit": p.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, type=Path)
    ap.add_argument("--commits", type=int, default=16)
    ap.add_argument("--bad-from", type=int, default=10)
    ap.add_argument("--cost", type=float, default=4.0)
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    want = f"c{a.bad_from}"
    print(f"{a.commits} commits, the test fails from {want} on; a first run costs {a.cost:g} s; endpoints cached")
    print(f"{'history':8} {'side':5} {'answer':28} {'right':5} {'conf':>6} {'runs':>5} {'wall s':>8} exit")
    for kind in ("exit1", "hang", "hang-lines"):
        for _ in range(a.repeats):
            for side, tree in (("base", a.base.resolve()), ("new", ROOT)):
                where = Path(tempfile.mkdtemp(prefix="bisectk-frc-"))
                try:
                    repo, test = history(where, a.commits, a.bad_from, kind != "exit1", a.cost, kind == "hang-lines")
                    r = bisect(tree, repo, test, a.commits)
                finally:
                    shutil.rmtree(where, ignore_errors=True)
                conf = f"{r['confidence']:.4f}" if isinstance(r.get("confidence"), float) else "-"
                print(f"{kind:8} {side:5} {str(r['answer'])[:28]:28} {'yes' if r['answer'] == want else 'NO':5} "
                      f"{conf:>6} {r['runs']!s:>5} {r['wall']:8.1f} {r['exit']}", flush=True)


if __name__ == "__main__":
    main()
