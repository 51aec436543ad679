"""A command's fixed cost and a 30,000-commit bisection, a base tree against this one, in turns
(issue 27). This machine's timings drift by +-0.1 s between commands, so each sample takes one
command of every side in turn and the medians of many are compared.

- fixed: `bisectk bisect` of a 2-commit range with a subject that stamps its runs (as
  bench/scale_bench.py's fixed-cost line): seconds before the first run, after the last, whole;
  and the floor under it, the interpreter's own start (`python -c pass`, and with `-S`).
- history: `bisectk bisect --run test.sh` of a generated linear history (bench/repogen.py), and
  `git bisect run` of the same, whole-command walls; every answer checked against the planted one.
- tree: the same on a generated 10,000-file tree of 300 commits, each side twice in a row: once
  with its cached worktree taken away (cold: the worktree is added, every file written; `--drop`
  says how, bench/coldtree.py) and once more (cached: the worktree left by the first is switched).

    python bench/startup_ab.py --base DIR [--fixed 21] [--history 7] [--commits 30000] [--tree 5]
                               [--drop move|gc] [--new-args "--no-flaky"]

DIR holds a base tree's `bisectk/` (`git archive REV bisectk | tar -x -C DIR`). Both trees'
bytecode is compiled first: a shell with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every
module of a tree never imported with bytecode writes on, on every command (a base without its
.pyc measured ~0.14 s slower before its first run).
"""

from __future__ import annotations

import argparse
import atexit
import compileall
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
import coldtree  # noqa: E402
from repogen import generate  # noqa: E402
from scale_bench import STAMP_SH, TEST_SH  # noqa: E402


NEW_ARGS: list[str] = []    # --new-args: more options for the new side's bisect commands


def bisect(root: Path, repo: Path, good: str, bad: str, run: Path, work: Path, log: Path | None = None):
    db = work / "ab.db"
    db.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(root)}
    if log is not None:
        log.unlink(missing_ok=True)
        env["BENCH_LOG"] = str(log)
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", good, "--bad", bad,
                        "--run", str(run), "--json", "--ledger", str(db), *(NEW_ARGS if root == ROOT else [])],
                       capture_output=True, text=True, env=env,
                       cwd=work)
    return t0, time.time(), json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--fixed", type=int, default=21, help="samples of the 2-commit range (0: skip)")
    ap.add_argument("--history", type=int, default=7, help="samples of the long history (0: skip)")
    ap.add_argument("--commits", type=int, default=30_000)
    ap.add_argument("--tree", type=int, default=0, help="samples of the 10,000-file tree (0: skip)")
    ap.add_argument("--drop", choices=coldtree.HOWS, default="move",
                    help="how a cold sample's cached worktree is taken away (bench/coldtree.py)")
    ap.add_argument("--new-args", default="", help="more options for the new side's bisect commands")
    a = ap.parse_args()
    NEW_ARGS[:] = a.new_args.split()
    sides = {"base": a.base.resolve(), "new": ROOT}
    for root in sides.values():
        compileall.compile_dir(root / "bisectk", quiet=1)
    work = Path(tempfile.mkdtemp(prefix="bisectk-startup-"))
    atexit.register(shutil.rmtree, work, True)   # its repositories and ledgers go with it
    stamp, test = work / "stamp.sh", work / "test.sh"
    for path, text in ((stamp, STAMP_SH), (test, TEST_SH)):
        path.write_text(text)
        path.chmod(0o755)
    if a.fixed:
        g = generate(work / "fixed", 2, seed=1, culprit=1)
        got = {k: ([], [], []) for k in sides}
        # the floor under "before the first run": this interpreter's own start, with and without
        # site (the .pth hooks of the installed packages run at every start, bisectk's or not)
        floor: dict[str, list[float]] = {"python -c pass": [], "python -S -c pass": []}
        for _ in range(a.fixed):
            for label, argv in (("python -c pass", ["-c", "pass"]), ("python -S -c pass", ["-S", "-c", "pass"])):
                t0 = time.time()
                subprocess.run([sys.executable, *argv], check=True)
                floor[label].append(time.time() - t0)
            for name, root in sides.items():
                log = work / "stamps.log"
                t0, t1, _ = bisect(root, work / "fixed", g.good, g.bad, stamp, work, log)
                stamps = [tuple(map(float, ln.split())) for ln in log.read_text().splitlines()]
                before, after, whole = got[name]
                before.append(stamps[0][0] - t0)
                after.append(t1 - stamps[-1][1])
                whole.append(t1 - t0)
        for name, (before, after, whole) in got.items():
            print(f"fixed {name}: before the first run {statistics.median(before):.3f} s (min {min(before):.3f}), "
                  f"after the last {statistics.median(after):.3f} s, whole {statistics.median(whole):.3f} s "
                  f"(medians of {a.fixed})", flush=True)
        for label, walls in floor.items():
            print(f"fixed floor: {label} {statistics.median(walls):.3f} s (min {min(walls):.3f})", flush=True)
    if a.history:
        versus_git(f"history {a.commits}", generate(work / "history", a.commits, shape="linear", seed=1),
                   sides, work, test, a.history, ("",))
    if a.tree:  # each side cold (its cached worktree dropped first), then cached (the one it left)
        versus_git("tree 10000 files", generate(work / "tree", 300, files=10_000, seed=1),
                   sides, work, test, a.tree, (" cold", " cached"), a.drop)
    return 0


def versus_git(label: str, g, sides: dict[str, Path], work: Path, test: Path, samples: int,
               hows: tuple[str, ...], drop: str = "move") -> None:
    """`git bisect run` and every side's `bisectk bisect` of the generated repository `g`, in turns,
    once per entry of `hows` in a row (more than one: the side's cached worktrees dropped before
    the first, the way `drop` says: bench/coldtree.py); the medians of whole-command walls, and
    each against git's."""
    repo = g.path
    with open(repo / ".git" / "info" / "exclude", "a") as f:
        f.write("bisect.out\n")
    walls: dict[str, list[float]] = {"git": []}
    for _ in range(samples):
        t0 = time.time()
        subprocess.run(["sh", "-c", f"git bisect start {g.bad} {g.good} >/dev/null && git bisect run {test} "
                                    "> bisect.out 2>&1; git bisect reset >/dev/null 2>&1"], cwd=repo)
        walls["git"].append(time.time() - t0)
        for name, root in sides.items():
            if len(hows) > 1:
                coldtree.drop(repo, work / "trash", drop, root)
            for how in hows:
                t0, t1, doc = bisect(root, repo, g.good, g.bad, test, work)
                assert (doc.get("first_bad") or {}).get("sha") == g.culprit, (name, how, doc.get("first_bad"))
                walls.setdefault(name + how, []).append(t1 - t0)
    coldtree.empty(work / "trash")
    git = statistics.median(walls["git"])
    for name, w in walls.items():
        print(f"{label} {name}: whole {statistics.median(w):.3f} s (min {min(w):.3f}), "
              f"x git {statistics.median(w) / git:.2f} (medians of {samples})", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
