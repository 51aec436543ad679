"""History bisection benchmark (issue 4): bisectk's history search against real `git bisect run`.

Each repository is generated with `git fast-import` (seconds for all of them): N commits (default
1,024) over a static tree of 100 source files, each commit rewriting `state.txt`:

    commit <i>
    build ok|broken      10% of the commits, in runs of 1-8, "do not build" (the test exits 125)
    bug no|yes           yes from the culprit on (culprit and its parent always build)

`test.sh` (outside the repository) reads ./state.txt with bash builtins and fails a bad commit
with probability q (1.0 / 0.7 / 0.3), drawing bash's $SRANDOM (getrandom(2)); every run appends a
byte to a counter file, so *runs* are counted the same way for every method.

Methods, on the same repositories:
- `git`: `git bisect start BAD GOOD && git bisect run test.sh` (real git, real checkouts).
- `git-rR`: the same with a wrapper that runs test.sh up to R times and says bad if any failed.
- `bisectk`: bisectk.spaces.commits.list_graph for the candidates (on this chain, git's DAG is
  the chain), then bisectk.search.history.search_dag, the search `bisectk bisect` runs; its
  oracle runs the same test.sh in a scratch directory holding the commit's state.txt (from a
  persistent `git cat-file --batch`: checkouts are timed separately below). Endpoint checks are
  counted: good once, bad once (deterministic) or until it fails (flaky; at most 30). The
  deterministic rows count the search alone (`confirm=False`); `bisectk-confirmed` adds the
  confirmation runs the CLI makes before it names a deterministic answer (search/confirm.py).
  `-flaky` is the Bayesian mode, `-jN` k-way multisection with N parallel runs per round;
  *rounds* are search rounds (the endpoint checks add one parallel round).

Correct = the reported first bad commit is the culprit. Goals are checked at the end.
Usage: python bench/history_bench.py [--repos 50] [--commits 1024] [--repeats 4] [--jobs 4]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search.history import Dag, SearchOptions, search_dag  # noqa: E402
from bisectk.spaces.commits import list_graph  # noqa: E402
from bisectk.spaces.worktrees import WorktreePool  # noqa: E402

TEST_SH = r"""#!/bin/bash
printf x >> "$BENCH_COUNTER"
while read -r key value; do
  case $key in build) build=$value ;; bug) bug=$value ;; esac
done < state.txt
[ "$build" = broken ] && exit 125
[ "$bug" = yes ] || exit 0
(( SRANDOM % 1000000 < BENCH_PPM )) && exit 1
exit 0
"""
REPEAT_SH = r"""#!/bin/bash
for ((k = 0; k < BENCH_REPEATS; k++)); do
  "$BENCH_TEST"; rc=$?
  [ $rc -eq 125 ] && exit 125
  [ $rc -ne 0 ] && exit 1
done
exit 0
"""
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass
class Row:
    setting: str
    method: str
    correct: bool
    runs: int
    rounds: int
    secs: float


def sh(cwd: Path, *args: str, env: dict | None = None, stdin: bytes | None = None) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env={**os.environ, **GIT_ENV, **(env or {})},
                          input=stdin, capture_output=True, check=False)
    if proc.returncode not in (0,) and args[:3] != ("git", "bisect", "run"):
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr.decode()[-500:]}")
    return proc.stdout.decode()


def make_repo(path: Path, n: int, culprit: int, broken: set[int], static_files: int = 100) -> None:
    """N commits through one fast-import stream; commit i's state.txt says whether it builds."""
    path.mkdir(parents=True)
    sh(path, "git", "init", "-q", "-b", "main")
    out = []
    for k in range(static_files):
        body = (f"// source file {k}\n" + "int f(int x) { return x + %d; }\n" % k * 30).encode()
        out += [b"blob\n", f"mark :{k + 1}\ndata {len(body)}\n".encode(), body, b"\n"]
    for i in range(n):
        msg = f"commit {i}\n".encode()
        state = (f"commit {i}\nbuild {'broken' if i in broken else 'ok'}\n"
                 f"bug {'yes' if i >= culprit else 'no'}\n").encode()
        out += [b"commit refs/heads/main\n",
                f"committer bench <b@x> {1_700_000_000 + i * 60} +0000\ndata {len(msg)}\n".encode(), msg]
        if i == 0:
            out += [f"M 100644 :{k + 1} src/f{k:03d}.c\n".encode() for k in range(static_files)]
        out += [f"M 100644 inline state.txt\ndata {len(state)}\n".encode(), state, b"\n"]
    sh(path, "git", "fast-import", "--quiet", stdin=b"".join(out))
    sh(path, "git", "reset", "-q", "--hard", "main")


def plant(n: int, rng: random.Random) -> tuple[int, set[int]]:
    culprit = rng.randrange(1, n)
    keep = {0, n - 1, culprit - 1, culprit}     # so the answer is unique: see module docstring
    broken: set[int] = set()
    while len(broken) < round(0.1 * n):
        start = rng.randrange(1, n - 1)
        broken |= {i for i in range(start, start + rng.randint(1, 8)) if i < n - 1} - keep
    return culprit, broken


class ContentOracle:
    """Runs test.sh in scratch directories holding a commit's state.txt (one per parallel job)."""

    def __init__(self, repo: Path, shas: list[str], scratch: Path, env: dict, jobs: int):
        self.shas, self.env = shas, env
        self.cat = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE)
        self.dirs = [scratch / f"job{j}" for j in range(jobs)]
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)

    def _content(self, i: int) -> bytes:
        self.cat.stdin.write(f"{self.shas[i]}:state.txt\n".encode())
        self.cat.stdin.flush()
        size = int(self.cat.stdout.readline().split()[2])
        data = self.cat.stdout.read(size + 1)[:-1]
        return data

    def batch(self, indices: list[int]) -> list[Outcome]:
        assert len(indices) <= len(self.dirs), "more parallel runs than scratch directories"
        procs = []
        for d, i in zip(self.dirs, indices):
            (d / "state.txt").write_bytes(self._content(i))
            procs.append(subprocess.Popen([str(self.env["BENCH_TEST"])], cwd=d, env=self.env))
        return [self.classify(p.wait()) for p in procs]

    def __call__(self, i: int) -> Outcome:
        return self.batch([i])[0]

    @staticmethod
    def classify(code: int) -> Outcome:
        # git bisect run's protocol: 0 good, 125 skip, 1-127 bad (>= 128 would abort).
        if code == 0:
            return Outcome.PASS
        if code == 125:
            return Outcome.UNRESOLVED
        if 1 <= code < 128:
            return Outcome.FAIL
        raise RuntimeError(f"test.sh exited {code}")

    def close(self) -> None:
        self.cat.stdin.close()
        self.cat.wait()


def count(counter: Path) -> int:
    return counter.stat().st_size if counter.exists() else 0


def run_git_bisect(repo: Path, good: str, bad: str, env: dict, script: Path) -> str | None:
    sh(repo, "git", "bisect", "start", bad, good, env=env)
    out = sh(repo, "git", "bisect", "run", str(script), env=env)
    sh(repo, "git", "bisect", "reset", env=env)
    for line in out.splitlines():
        if line.endswith("is the first bad commit"):
            return line.split()[0]
    return None


def run_bisectk(repo: Path, env: dict, scratch: Path, flaky: bool, jobs: int,
                confirm: bool = False) -> tuple[str | None, int]:
    good_sha = first_sha(repo)
    graph = list_graph(repo, good_sha, "main")
    # the good commit is no candidate of the DAG search: it is run first, as the CLI verifies it
    shas = [good_sha, *(graph.sha(i) for i in range(len(graph)))]
    oracle = ContentOracle(repo, shas, scratch, env, max(jobs, 2))
    try:
        n = len(graph)
        # Endpoint checks (the CLI's verify step), counted as runs; the bad one's are fed to the search.
        good, bad = oracle.batch([0, n])
        log = [(n - 1, bad)]
        while flaky and log[-1][1] is not Outcome.FAIL and len(log) < 30:
            log.append((n - 1, oracle(n)))
        assert good is Outcome.PASS and log[-1][1] is Outcome.FAIL, "endpoints misbehave"
        search = lambda i: oracle(i + 1)                                 # noqa: E731
        batch = lambda idx: oracle.batch([i + 1 for i in idx])           # noqa: E731
        result = search_dag(Dag.from_csr(*graph.csr()), search, batch_oracle=batch, observations=log,
                            options=SearchOptions(flaky=flaky, jobs=jobs, confirm=confirm))
    finally:
        oracle.close()
    return (shas[result.culprit + 1] if result.found else None), result.rounds


def first_sha(repo: Path) -> str:
    return sh(repo, "git", "rev-list", "--max-parents=0", "main").strip()


def bench_repo(task: tuple[float, int, int, int, int]) -> list[Row]:
    q, seed, n, repeats, jobs = task
    rng = random.Random(seed)
    culprit, broken = plant(n, rng)
    setting = f"q={q:.1f}"
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="hbench-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, n, culprit, broken)
        shas = sh(repo, "git", "rev-list", "--reverse", "main").split()
        test, wrap = root / "test.sh", root / "repeat.sh"
        for path, text in ((test, TEST_SH), (wrap, REPEAT_SH)):
            path.write_text(text)
            path.chmod(0o755)
        methods: list[tuple[str, object]] = [("git", None), (f"git-r{repeats}", None)]
        if q == 1.0:
            methods += [("bisectk", (False, 1)), ("bisectk-confirmed", (False, 1, True)),
                        (f"bisectk-j{jobs}", (False, jobs)), ("bisectk-flaky", (True, 1))]
        else:
            methods += [("bisectk-flaky", (True, 1)), (f"bisectk-flaky-j{jobs}", (True, jobs))]
        for name, how in methods:
            counter = root / f"count-{name}"
            env = {**os.environ, "BENCH_COUNTER": str(counter), "BENCH_PPM": str(round(q * 1e6)),
                   "BENCH_TEST": str(test), "BENCH_REPEATS": str(repeats)}
            t0 = time.perf_counter()
            if how is None:
                found = run_git_bisect(repo, shas[0], shas[-1], env, wrap if "-r" in name else test)
                rounds = 0
            else:
                found, rounds = run_bisectk(repo, env, root / f"scratch-{name}", *how)
            rows.append(Row(setting, name, found == shas[culprit], count(counter), rounds,
                            time.perf_counter() - t0))
    return rows


def z_channel_bound(q: float, n: int, error: float = 0.01) -> float:
    """Fewest expected runs any method needs for `error` on n-1 hypotheses (Fano + capacity).

    One run of a commit is a Z-channel (bad fails with prob q, good never fails), capacity
    C = log2(1 + (1-s) s^(s/(1-s))) bits with s = 1-q; feedback does not raise it.
    """
    s = 1.0 - q
    cap = 1.0 if s == 0 else math.log2(1 + (1 - s) * s ** (s / (1 - s)))
    h = -(error * math.log2(error) + (1 - error) * math.log2(1 - error))
    return ((1 - error) * math.log2(n - 1) - h) / cap


def time_worktrees(n: int, reps: int = 5) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="hbench-wt-") as tmp:
        repo = Path(tmp) / "repo"
        make_repo(repo, n, n // 2, set())
        shas = sh(repo, "git", "rev-list", "--reverse", "main").split()
        build = ["bash", "-c", "cat src/*.c state.txt > build.out"]
        first, switch, close = [], [], []
        for r in range(reps):
            t0 = time.perf_counter()
            pool = WorktreePool(repo, size=1, keep=False).__enter__()
            with pool.lease(shas[n // 10 + r]) as wt:
                subprocess.run(build, cwd=wt, check=True)
            t1 = time.perf_counter()
            with pool.lease(shas[7 * n // 10 + r]) as wt:
                subprocess.run(build, cwd=wt, check=True)
            t2 = time.perf_counter()
            pool.close()
            t3 = time.perf_counter()
            first.append(t1 - t0), switch.append(t2 - t1), close.append(t3 - t2)
    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms"  # noqa: E731
    return [f"worktree checkout + build, {n}-commit repo, 101 files (median of {reps}):",
            f"  new worktree (git worktree add) + build: {ms(first)}",
            f"  reused worktree switched to another commit + build: {ms(switch)}",
            f"  pool exit (worktree remove + prune): {ms(close)}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repos", type=int, default=50, help="repositories per setting")
    ap.add_argument("--commits", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=4, help="runs per commit for git-rR")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--settings", default="1.0,0.7,0.3", help="failure probabilities of a bad commit")
    ap.add_argument("--workers", type=int, default=2, help="repositories benchmarked in parallel")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if shutil.which("git") is None:
        print("git not found", file=sys.stderr)
        return 2
    qs = [float(x) for x in args.settings.split(",")]
    tasks = [(q, args.seed * 1_000_003 + k * 100_000 + r, args.commits, args.repeats, args.jobs)
             for k, q in enumerate(qs) for r in range(args.repos)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = [row for rows in pool.map(bench_repo, tasks) for row in rows]
    wall = time.perf_counter() - t0

    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.setting, row.method), []).append(row)
    print(f"{args.repos} repositories per setting, {args.commits} commits, 10% unbuildable in runs "
          f"of 1-8; wall {wall:.0f} s with {args.workers} workers\n")
    print(f"{'setting':8} {'method':18} {'mean runs':>9} {'accuracy':>9} {'mean rounds':>11} "
          f"{'max rounds':>10} {'s/repo':>7}")
    stats = {}
    for (setting, method), rs in groups.items():
        mean_runs = statistics.mean(r.runs for r in rs)
        acc = sum(r.correct for r in rs) / len(rs)
        stats[(setting, method)] = (mean_runs, acc, max(r.rounds for r in rs))
        rounds = f"{statistics.mean(r.rounds for r in rs):11.2f} {max(r.rounds for r in rs):10d}" \
            if "-j" in method else f"{'':11} {'':10}"
        print(f"{setting:8} {method:18} {mean_runs:9.2f} {acc:9.1%} {rounds} "
              f"{statistics.mean(r.secs for r in rs):7.2f}")
    print()
    for line in time_worktrees(args.commits):
        print(line)
    print()
    return report_goals(stats, args, qs)


def report_goals(stats: dict, args: argparse.Namespace, qs: list[float]) -> int:
    ok = True

    def goal(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        print(f"[{'PASS' if passed else 'FAIL'}] {name}: {detail}")

    det = stats.get(("q=1.0", "bisectk"))
    if det:
        git = stats[("q=1.0", "git")][0]
        goal("deterministic runs <= git bisect + 2", det[0] <= git + 2,
             f"bisectk {det[0]:.2f} (2 endpoint checks included) vs git bisect {git:.2f}")
        bound = math.ceil(math.log(args.commits) / math.log(args.jobs + 1) - 1e-9) + 1
        jr = stats[("q=1.0", f"bisectk-j{args.jobs}")][2]
        goal(f"--jobs {args.jobs} rounds <= ceil(log{args.jobs + 1} N) + 1 = {bound}", jr <= bound,
             f"max {jr} search rounds over all repositories (+1 round of endpoint checks)")
    if 0.3 in qs:
        fl = stats[("q=0.3", "bisectk-flaky")]
        gits = {m: s[1] for (st, m), s in stats.items() if st == "q=0.3" and m.startswith("git")}
        goal("q=0.3: bisectk >= 99% correct", fl[1] >= 0.99, f"{fl[1]:.1%} over {args.repos} repositories")
        goal("q=0.3: git bisect < 99% correct", all(a < 0.99 for a in gits.values()),
             ", ".join(f"{m} {a:.1%}" for m, a in gits.items()))
        if det:
            bound = z_channel_bound(0.3, args.commits)
            goal("q=0.3: runs <= 4 x deterministic", fl[0] <= 4 * det[0],
                 f"{fl[0]:.1f} vs 4 x {det[0]:.2f} = {4 * det[0]:.1f}; note: any method needs >= "
                 f"{bound:.1f} runs on average for 99% at q=0.3 (Fano bound, Z-channel capacity)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
