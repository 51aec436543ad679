"""`bisectk bisect` against `git bisect run` on big generated histories (issue 27), side by side.

Repositories come from bench/repogen.py (one `git fast-import` stream each): linear histories
and ones with a merge every 10th commit, of 30,000 / 100,000 / 300,000 commits, and a tree of
10,000 files with 300 commits. One first bad commit is planted (it adds `BUG`); both tools run
the same oracle, `test.sh`: exit 1 when BUG exists, else 0.

- git: `git bisect start BAD GOOD; git bisect run test.sh; git bisect reset` in the generated
  repository's own checkout (git bisects where it stands).
- bisectk: `python -m bisectk bisect --repo R --good GOOD --bad BAD --run test.sh --json` with a
  fresh ledger: endpoint checks, worktrees under the repository's git dir, every run recorded.
  On the big tree: once with no cached worktree (taken away first, as `--drop` says: bench/
  coldtree.py; one full checkout) and once more right after (`--fresh`: every run again, the
  cached worktree reused).

Wall is the whole command, start-up included; CPU is user + system time of its whole process tree
(less sensitive to a shared machine than wall). Peak RSS is the largest process of each
command's tree (getrusage of the reaped children in a fresh wrapper process). Right = the named first bad
commit is the planted one. The fixed cost line times `bisectk bisect` on a 2-commit range with a
subject that stamps its runs: set-up before the first run, and wrap-up after the last.

Goals: right every time; peak RSS <= 300 MB at 300,000 commits; wall <= 2x git's on the
histories, <= 1.5x on the big tree, <= 1.2x with the cached worktree.

Usage: python bench/scale_bench.py [--sizes 30000 100000 300000] [--shapes linear merges]
                                   [--no-tree] [--repeat N] [--drop move|gc] [--work DIR]
                                   [--out bench/results/scale_bench.txt]
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import coldtree  # noqa: E402
from repogen import GIT_ENV, generate  # noqa: E402

TEST_SH = "#!/bin/sh\n[ -e BUG ] && exit 1\nexit 0\n"
STAMP_SH = ('#!/bin/sh\ns=$(date +%s.%N)\nif [ -e BUG ]; then r=1; else r=0; fi\n'
            'echo "$s $(date +%s.%N)" >> "$BENCH_LOG"\nexit $r\n')
MEASURE = ("import resource, subprocess, sys, time\n"
           "t = time.perf_counter()\n"
           "rc = subprocess.run(sys.argv[2:], cwd=sys.argv[1], stdout=subprocess.DEVNULL if sys.argv[2] == 'sh' else None).returncode\n"
           "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print('BENCH', rc, time.perf_counter() - t, u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr)\n")


@dataclass
class Row:
    case: str
    commits: int
    tool: str
    wall: float
    cpu: float
    rss_mb: float
    right: bool
    runs: int | None = None


def measured(cwd: Path, argv: list[str], env: dict | None = None) -> tuple[int, float, float, float, str]:
    """(exit code, wall s, CPU s of the whole tree, peak RSS MB of its largest process, stdout) of
    one command, in a fresh wrapper process."""
    p = subprocess.run([sys.executable, "-c", MEASURE, str(cwd), *argv], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("BENCH "))
    _, rc, wall, rss, cpu = line.split()
    return int(rc), float(wall), float(cpu), int(rss) / 1024, p.stdout


def git_bisect(repo: Path, good: str, bad: str, test: Path) -> tuple[float, float, float, str | None]:
    script = (f"git bisect start {bad} {good} >/dev/null && git bisect run {test} > bisect.out 2>&1; "
              "git bisect reset >/dev/null 2>&1")
    env = {**GIT_ENV}
    (repo / ".git" / "info").mkdir(exist_ok=True)
    with open(repo / ".git" / "info" / "exclude", "a") as f:
        f.write("bisect.out\n")
    _, wall, cpu, rss, _ = measured(repo, ["sh", "-c", script], env)
    out = (repo / "bisect.out").read_text()
    (repo / "bisect.out").unlink()
    found = next((ln.split()[0] for ln in out.splitlines() if ln.endswith("is the first bad commit")), None)
    return wall, cpu, rss, found


def bisectk_bisect(repo: Path, good: str, bad: str, test: Path, ledger: Path, *extra: str) -> tuple[float, float, float, dict]:
    rc, wall, cpu, rss, out = measured(repo, [sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", good,
                                         "--bad", bad, "--run", str(test), "--json", "--ledger", str(ledger), *extra],
                                  {"PYTHONPATH": str(ROOT)})
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {"error": f"exit {rc}"}
    return wall, cpu, rss, doc


def _median_row(rows: list[Row]) -> Row:
    """One row from repeated measurements of a cell: the median wall and CPU (each its own median),
    the largest RSS, right only if every repetition was."""
    mid = lambda xs: sorted(xs)[len(xs) // 2]   # noqa: E731
    first = rows[0]
    return Row(first.case, first.commits, first.tool, mid([r.wall for r in rows]), mid([r.cpu for r in rows]),
               max(r.rss_mb for r in rows), all(r.right for r in rows), first.runs)


def case(name: str, repo: Path, g, test: Path, work: Path, rows: list[Row], *, cached: bool = False,
         repeat: int = 1, drop: str = "move") -> None:
    """git and bisectk on one repository, `repeat` times in turn (a fresh ledger each time; the
    cached worktree dropped before each uncached bisectk run); each cell is the median."""
    cells: dict[str, list[Row]] = {}
    for i in range(repeat):
        gw, gcpu, grss, gfound = git_bisect(repo, g.good, g.bad, test)
        cells.setdefault("git bisect run", []).append(Row(name, g.commits, "git bisect run", gw, gcpu, grss,
                                                          gfound == g.culprit))
        coldtree.drop(repo, work / "trash", drop)
        ledger = work / f"{name}-{i}.db"
        ledger.unlink(missing_ok=True)
        bw, bcpu, brss, doc = bisectk_bisect(repo, g.good, g.bad, test, ledger)
        first = (doc.get("first_bad") or {}).get("sha")
        cells.setdefault("bisectk", []).append(Row(name, g.commits, "bisectk", bw, bcpu, brss, first == g.culprit,
                                                   doc.get("runs")))
        if cached:
            bw, bcpu, brss, doc = bisectk_bisect(repo, g.good, g.bad, test, ledger, "--fresh")
            first = (doc.get("first_bad") or {}).get("sha")
            cells.setdefault("bisectk, cached worktree", []).append(
                Row(name, g.commits, "bisectk, cached worktree", bw, bcpu, brss, first == g.culprit, doc.get("runs")))
    coldtree.empty(work / "trash")
    rows += [_median_row(cell) for cell in cells.values()]
    print(" | ".join(f"{r.tool} {r.wall:.2f}s ({r.cpu:.2f}s CPU) {r.rss_mb:.0f}MB {'right' if r.right else 'WRONG'}"
                     for r in rows if r.case == name), flush=True)


def fixed_cost(work: Path) -> str:
    repo = work / "fixed"
    g = generate(repo, 2, seed=1, culprit=1)
    stamp = work / "stamp.sh"
    stamp.write_text(STAMP_SH)
    stamp.chmod(0o755)
    befores, afters = [], []
    for k in range(5):
        log = work / f"stamp-{k}.log"
        log.unlink(missing_ok=True)     # a --work directory used before keeps its logs
        (work / f"fixed-{k}.db").unlink(missing_ok=True)
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", g.good, "--bad",
                        g.bad, "--run", str(stamp), "--json", "--ledger", str(work / f"fixed-{k}.db")],
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT), "BENCH_LOG": str(log)})
        t1 = time.time()
        stamps = [tuple(map(float, ln.split())) for ln in log.read_text().splitlines()]
        befores.append(stamps[0][0] - t0)
        afters.append(t1 - stamps[-1][1])
    return (f"fixed cost per command (2-commit range, {len(stamps)} runs, median of 5): "
            f"{sorted(befores)[2]:.2f} s before the first run, {sorted(afters)[2]:.2f} s after the last")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[30_000, 100_000, 300_000])
    ap.add_argument("--shapes", nargs="*", default=["linear", "merges"])
    ap.add_argument("--no-tree", action="store_true")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the generated repositories in --work")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--repeat", type=int, default=1, help="measure each cell this often, in turns; report medians")
    ap.add_argument("--drop", choices=coldtree.HOWS, default="move",
                    help="how the cached worktree is taken away before a cold run (bench/coldtree.py)")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="bisectk-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    test = work / "test.sh"
    test.write_text(TEST_SH)
    test.chmod(0o755)
    rows: list[Row] = []
    lines = [fixed_cost(work)]
    print(lines[0], flush=True)
    for shape in a.shapes:
        for n in a.sizes:
            name = f"{shape}-{n}"
            repo = work / name
            if repo.exists() and not a.keep:
                shutil.rmtree(repo)
            t = time.perf_counter()
            g = generate(repo, n, shape=shape, seed=a.seed) if not repo.exists() or not a.keep else None
            if g is None:
                g = generate(work / f"{name}-again", n, shape=shape, seed=a.seed)
            print(f"{name}: generated in {time.perf_counter() - t:.1f} s (culprit #{g.culprit_index}, "
                  f"{g.merges} merges)", flush=True)
            case(name, repo, g, test, work, rows, repeat=a.repeat, drop=a.drop)
    if not a.no_tree:
        name = "tree-10000-files"
        g = generate(work / name, 300, files=10_000, seed=a.seed)
        case(name, work / name, g, test, work, rows, cached=True, repeat=a.repeat, drop=a.drop)
    lines += ["", f"{'history':<18} {'commits':>8} {'tool':<26} {'wall s':>7} {'x git':>6} {'CPU s':>6} {'x git':>6} "
                  f"{'peak RSS MB':>11} {'runs':>5} right"]
    git_wall = {r.case: r.wall for r in rows if r.tool == "git bisect run"}
    git_cpu = {r.case: r.cpu for r in rows if r.tool == "git bisect run"}
    ok = True
    for r in rows:
        ratio = r.wall / git_wall[r.case]
        lines.append(f"{r.case:<18} {r.commits:>8} {r.tool:<26} {r.wall:>7.2f} {ratio:>6.2f} {r.cpu:>6.2f} "
                     f"{r.cpu / git_cpu[r.case]:>6.2f} {r.rss_mb:>11.0f} {'' if r.runs is None else r.runs:>5} "
                     f"{'yes' if r.right else 'NO'}")
        if r.tool != "git bisect run":
            goal = 1.2 if "cached" in r.tool else 1.5 if r.case.startswith("tree") else 2.0
            ok &= r.right and ratio <= goal and (r.commits < 300_000 or r.rss_mb <= 300)
    lines.append("")
    lines.append(f"goals (right; RSS <= 300 MB at 300,000; wall <= 2x git, tree 1.5x, cached 1.2x): {'PASS' if ok else 'FAIL'}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    if not a.work and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
