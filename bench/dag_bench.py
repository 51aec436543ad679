"""DAG bisection benchmark (issue 11): bisectk's DAG search against real `git bisect run`.

Histories. Each seed draws N (500-2,000 candidates) and a branchy history with 20-30% merges: a
mainline, feature branches (about one in ten forked before --good, so only git's semantics, not
--ancestry-path, sees them), merges into the mainline (some branches merged twice), back-merges
of the mainline into a branch, octopus merges. The culprit is any candidate, merges included.
Each history becomes a real repository through one `git fast-import` stream: 100 static source
files, `id.txt` rewritten by every commit, `BUG` present exactly in the descendants of the culprit
(the culprit introduces it, merges carry it), and in the skip setting `BROKEN` in 10% of the
commits, in runs of 1-8 along the history (the culprit, its parents and --bad always build, so
the answer is unique for any method that can test them).

`test.sh` (outside the repository) appends a byte to a counter, exits 125 when `BROKEN` exists,
0 without `BUG`, and with `BUG` fails with probability q (bash's $SRANDOM). Every method runs this
one script, so runs are counted the same way for all.

Methods, on the same repositories in the same run:
- `git`: `git bisect start BAD GOOD && git bisect run test.sh` (real checkouts).
- `bisectk`: candidates from `bisectk.spaces.commits.list_graph` (git's DAG between the refs),
  searched by `bisectk.search.history.search_dag`; its oracle runs test.sh in a scratch directory
  holding the commit's BUG/BROKEN markers (read with one persistent `git cat-file --batch-check`).
  `-jK` is k-way multisection (K scratch directories run in parallel), `-flaky` the Bayesian
  search (stops at 0.99). Before searching, the endpoints are run as the CLI verifies them: good
  once, bad once (deterministic) or until it fails (flaky, at most 30); those runs are reported
  apart ("+ends"), since git bisect run trusts its endpoints. `bisectk` counts the search alone;
  `bisectk-confirmed` adds the confirmation the CLI makes before it names a deterministic answer
  (search/confirm.py, issue 23: the first bad commit fails again, its parents pass again).

Correct = the named first bad commit is the culprit (an ambiguous answer is wrong).
Usage: python bench/dag_bench.py [--seeds 100] [--workers 2] [--quick] [--out PATH]
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

TEST_SH = r"""#!/bin/bash
printf x >> "$BENCH_COUNTER"
[ -e BROKEN ] && exit 125
[ -e BUG ] || exit 0
(( SRANDOM % 1000000 < BENCH_PPM )) && exit 1
exit 0
"""
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
Parents = list[tuple[int, ...]]


@dataclass
class Row:
    setting: str
    method: str
    n: int
    merges: float
    correct: bool
    runs: int           # runs of test.sh by the search
    ends: int           # endpoint runs before it (bisectk only)
    rounds: int
    secs: float


def sh(cwd: Path, *args: str, env: dict | None = None, stdin: bytes | None = None,
       check: bool = True) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env={**os.environ, **GIT_ENV, **(env or {})},
                          input=stdin, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr.decode()[-500:]}")
    return proc.stdout.decode()


# -- histories -------------------------------------------------------------------------------------
def history(n: int, rng: random.Random, merge_rate: float) -> Parents:
    """Candidates 0..n-1, parents first; () = forked on the good side; n-1 merges what is open."""
    parents: Parents = [()]
    main, branches = 0, []
    while len(parents) < n - 1:
        i, r = len(parents), rng.random()
        if branches and r < merge_rate:
            b = rng.randrange(len(branches))
            if len(branches) > 2 and rng.random() < 0.1:            # octopus
                picked = rng.sample(range(len(branches)), 3)
                parents.append((main, *dict.fromkeys(branches[o] for o in picked)))
                branches = [t for o, t in enumerate(branches) if o not in picked]
                main = i
            elif rng.random() < 0.15:                              # back-merge into the branch
                parents.append((branches[b], main))
                branches[b] = i
            else:
                parents.append((main, branches[b]))
                main = i
                if rng.random() < 0.7:
                    branches.pop(b)                                # else merged again later
        elif r < merge_rate + 0.08:                                # a new branch
            parents.append(() if rng.random() < 0.1 else (rng.choice([main, *branches]),))
            branches.append(i)
        elif branches and rng.random() < 0.6:
            b = rng.randrange(len(branches))
            parents.append((branches[b],))
            branches[b] = i
        else:
            parents.append((main,))
            main = i
    has_child = {p for ps in parents for p in ps}
    open_tips = [main, *(i for i in range(len(parents)) if i not in has_child and i != main)]
    parents.append(tuple(open_tips))
    return [tuple(dict.fromkeys(ps)) for ps in parents]


def draw_history(rng: random.Random, lo: int, hi: int) -> Parents:
    while True:
        parents = history(rng.randint(lo, hi), rng, rng.uniform(0.27, 0.38))
        if 0.20 <= merge_share(parents) <= 0.30:
            return parents


def merge_share(parents: Parents) -> float:
    return sum(len(p) > 1 for p in parents) / len(parents)


def ancestors(parents: Parents) -> list[set[int]]:
    out: list[set[int]] = []
    for i, ps in enumerate(parents):
        out.append({i}.union(*(out[p] for p in ps)))
    return out


def plant_broken(parents: Parents, keep: set[int], rng: random.Random) -> set[int]:
    """10% of the candidates untestable, in runs of 1-8 walking from a commit to a random child."""
    children: list[list[int]] = [[] for _ in parents]
    for i, ps in enumerate(parents):
        for p in ps:
            children[p].append(i)
    broken: set[int] = set()
    while len(broken) < round(0.1 * len(parents)):
        i = rng.randrange(len(parents))
        for _ in range(rng.randint(1, 8)):
            if i not in keep:
                broken.add(i)
            if not children[i]:
                break
            i = rng.choice(children[i])
    return broken


def make_repo(path: Path, parents: Parents, bad: set[int], broken: set[int]) -> tuple[str, list[str]]:
    """fast-import: root, --good, then the candidates; returns (good sha, candidate shas)."""
    path.mkdir(parents=True)
    sh(path, "git", "init", "-q", "-b", "main")
    out: list[bytes] = []
    for k in range(100):
        body = (f"// source file {k}\n" + "int f(int x) { return x + %d; }\n" % k * 30).encode()
        out += [b"blob\n", f"mark :{k + 1}\ndata {len(body)}\n".encode(), body, b"\n"]
    base = 1000                     # marks: 1000 root, 1001 good, 1002 + i candidate i
    state = {base: (False, False), base + 1: (False, False)}

    def commit(mark: int, first: int | None, merges: list[int], name: str, flags: tuple[bool, bool]) -> None:
        out.extend([b"commit refs/heads/main\n", f"mark :{mark}\n".encode(),
                    f"committer bench <b@x> {1_700_000_000 + mark * 60} +0000\n".encode(),
                    f"data {len(name)}\n{name}\n".encode()])
        if first is not None:
            out.append(f"from :{first}\n".encode())
        out.extend(f"merge :{m}\n".encode() for m in merges)
        if first is None:
            out.extend(f"M 100644 :{k + 1} src/f{k:03d}.c\n".encode() for k in range(100))
        out.append(f"M 100644 inline id.txt\ndata {len(name) + 1}\n{name}\n".encode())
        # the tree starts as the first parent's: add or drop the markers where they differ
        was = state[first] if first is not None else (False, False)
        for flag, had, file in zip(flags, was, ("BUG", "BROKEN")):
            if flag and not had:
                out.append(f"M 100644 inline {file}\ndata 1\nx\n".encode())
            elif had and not flag:
                out.append(f"D {file}\n".encode())
        state[mark] = flags
        out.append(b"\n")

    commit(base, None, [], "root", (False, False))
    commit(base + 1, base, [], "good", (False, False))
    for i, ps in enumerate(parents):
        marks = [base + 2 + p for p in ps] or [base + 1 if i == 0 else base]
        commit(base + 2 + i, marks[0], marks[1:], f"c{i}", (i in bad, i in broken))
    sh(path, "git", "fast-import", "--quiet", stdin=b"".join(out))
    sh(path, "git", "reset", "-q", "--hard", "main")
    names = dict(line.split(" ", 1)[::-1] for line in sh(path, "git", "log", "--format=%H %s", "main").split("\n") if line)
    return names["good"], [names[f"c{i}"] for i in range(len(parents))]


# -- the two sides -------------------------------------------------------------------------------
def count(counter: Path) -> int:
    return counter.stat().st_size if counter.exists() else 0


def run_git_bisect(repo: Path, good: str, bad: str, env: dict, script: Path) -> str | None:
    sh(repo, "git", "bisect", "start", bad, good, env=env)
    out = sh(repo, "git", "bisect", "run", str(script), env=env, check=False)
    sh(repo, "git", "bisect", "reset", env=env)
    for line in out.splitlines():
        if line.endswith("is the first bad commit"):
            return line.split()[0]
    return None


class MarkerOracle:
    """Runs test.sh in scratch directories holding a commit's markers (one per parallel job)."""

    def __init__(self, repo: Path, shas: list[str], scratch: Path, env: dict, jobs: int):
        self.shas, self.env = shas, env
        self.cat = subprocess.Popen(["git", "cat-file", "--batch-check"], cwd=repo,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.dirs = [scratch / f"job{j}" for j in range(jobs)]
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)

    def _has(self, sha: str, name: str) -> bool:
        self.cat.stdin.write(f"{sha}:{name}\n".encode())
        self.cat.stdin.flush()
        return not self.cat.stdout.readline().rstrip().endswith(b"missing")

    def batch(self, indices: list[int]) -> list[Outcome]:
        procs = []
        for d, i in zip(self.dirs, indices, strict=False):
            for name in ("BUG", "BROKEN"):
                marker = d / name
                if self._has(self.shas[i], name):
                    marker.touch()
                else:
                    marker.unlink(missing_ok=True)
            procs.append(subprocess.Popen([str(self.env["BENCH_TEST"])], cwd=d, env=self.env))
        assert len(procs) == len(indices), "more parallel runs than scratch directories"
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


def run_bisectk(repo: Path, good: str, bad: str, env: dict, scratch: Path, flaky: bool,
                jobs: int, counter: Path, confirm: bool = False) -> tuple[str | None, int, int]:
    """(named culprit sha or None, endpoint runs, search rounds); the search's runs are counted
    by test.sh after the endpoint runs."""
    graph = list_graph(repo, good, bad)
    shas = [graph.sha(i) for i in range(len(graph))]
    oracle = MarkerOracle(repo, shas, scratch, env, max(jobs, 1))
    good_oracle = MarkerOracle(repo, [good], scratch / "good", env, 1)
    try:
        n = len(shas)
        assert good_oracle(0) is Outcome.PASS, "good endpoint fails"
        log = [(n - 1, oracle(n - 1))]
        while flaky and log[-1][1] is not Outcome.FAIL and len(log) < 30:
            log.append((n - 1, oracle(n - 1)))
        assert log[-1][1] is Outcome.FAIL, "bad endpoint does not fail"
        ends = count(counter)
        result = search_dag(Dag.from_csr(*graph.csr()), oracle, batch_oracle=oracle.batch, observations=log,
                            options=SearchOptions(flaky=flaky, jobs=jobs, confirm=confirm))   # confirm=False: the search alone, as git's
    finally:
        oracle.close()
        good_oracle.close()
    return (shas[result.culprit] if result.found else None), ends, result.rounds


# -- one seed ----------------------------------------------------------------------------------------
def bench_seed(task: tuple[int, int, int, int, float]) -> list[Row]:
    seed, lo, hi, jobs, q = task
    rng = random.Random(seed)
    parents = draw_history(rng, lo, hi)
    n, anc = len(parents), ancestors(parents)
    culprit = rng.randrange(n)
    bad = {i for i in range(n) if culprit in anc[i]}
    broken = plant_broken(parents, {culprit, *parents[culprit], n - 1}, rng)
    settings = [("det", set(), 1.0, [("git", None), ("bisectk", (False, 1)), ("bisectk-confirmed", (False, 1, True)),
                                     (f"bisectk-j{jobs}", (False, jobs))]),
                ("det+skips", broken, 1.0, [("git", None), ("bisectk", (False, 1)),
                                            ("bisectk-confirmed", (False, 1, True))]),
                (f"q={q:g}", set(), q, [("git", None), ("bisectk-flaky", (True, 1)),
                                         (f"bisectk-flaky-j{jobs}", (True, jobs))])]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dagbench-") as tmp:
        root = Path(tmp)
        test = root / "test.sh"
        test.write_text(TEST_SH)
        test.chmod(0o755)
        repos: dict[frozenset, tuple[Path, str, list[str]]] = {}
        for setting, skips, fail_q, methods in settings:
            key = frozenset(skips)
            if key not in repos:
                path = root / f"repo{len(repos)}"
                repos[key] = (path, *make_repo(path, parents, bad, skips))
            repo, good, shas = repos[key]
            for name, how in methods:
                counter = root / f"count-{setting}-{name}"
                env = {**os.environ, "BENCH_COUNTER": str(counter), "BENCH_PPM": str(round(fail_q * 1e6)),
                       "BENCH_TEST": str(test)}
                t0 = time.perf_counter()
                if how is None:
                    found, ends, rounds = run_git_bisect(repo, good, shas[-1], env, test), 0, 0
                else:
                    found, ends, rounds = run_bisectk(repo, good, shas[-1], env, root / f"scratch-{setting}-{name}",
                                                      *how[:2], counter, *how[2:])
                rows.append(Row(setting, name, n, merge_share(parents), found == shas[culprit],
                                count(counter) - ends, ends, rounds, time.perf_counter() - t0))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--min-commits", type=int, default=500)
    ap.add_argument("--max-commits", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=4, help="probes per round for the -jK methods")
    ap.add_argument("--fail-prob", type=float, default=0.5, help="q of the flaky setting")
    ap.add_argument("--workers", type=int, default=2, help="seeds benchmarked in parallel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="20 seeds of 500-1,000 commits")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "dag_bench.txt")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.max_commits = min(args.seeds, 20), min(args.max_commits, 1000)
    if shutil.which("git") is None:
        print("git not found", file=sys.stderr)
        return 2
    tasks = [(args.seed * 1_000_003 + s, args.min_commits, args.max_commits, args.jobs, args.fail_prob)
             for s in range(args.seeds)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = [row for rows in pool.map(bench_seed, tasks) for row in rows]
    lines, ok = report(rows, args, time.perf_counter() - t0)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if ok else 1


def report(rows: list[Row], args: argparse.Namespace, wall: float) -> tuple[list[str], bool]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.setting, row.method), []).append(row)
    first = next(iter(groups.values()))
    sizes, shares = [r.n for r in first], [r.merges for r in first]
    out = [f"{args.seeds} histories of {min(sizes)}-{max(sizes)} candidates (mean {statistics.mean(sizes):.0f}), "
           f"merges {min(shares):.0%}-{max(shares):.0%} (mean {statistics.mean(shares):.1%}); "
           f"wall {wall:.0f} s with {args.workers} workers on {os.cpu_count()} cores",
           "runs = runs of test.sh by the search; +ends = with bisectk's endpoint checks "
           "(git bisect run trusts its endpoints)", "",
           f"{'setting':10} {'method':17} {'accuracy':>8} {'mean runs':>9} {'+ends':>7} {'max runs':>8} "
           f"{'mean rounds':>11} {'max rounds':>10} {'s/seed':>7}"]
    stats = {}
    for (setting, method), rs in groups.items():
        runs = statistics.mean(r.runs for r in rs)
        acc = sum(r.correct for r in rs) / len(rs)
        stats[(setting, method)] = (acc, runs, max(r.rounds for r in rs))
        rounds = (f"{statistics.mean(r.rounds for r in rs):11.2f} {max(r.rounds for r in rs):10d}"
                  if "-j" in method else f"{'':11} {'':10}")
        ends = f"{statistics.mean(r.runs + r.ends for r in rs):7.2f}" if method != "git" else f"{'':7}"
        out.append(f"{setting:10} {method:17} {acc:8.1%} {runs:9.2f} {ends} {max(r.runs for r in rs):8d} "
                   f"{rounds} {statistics.mean(r.secs for r in rs):7.2f}")
    out.append("")
    ok = True

    def goal(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        out.append(f"[{'PASS' if passed else 'FAIL'}] {name}: {detail}")

    for setting in ("det", "det+skips"):
        acc, runs, _ = stats[(setting, "bisectk")]
        git_acc, git_runs, _ = stats[(setting, "git")]
        goal(f"{setting}: bisectk 100% right", acc == 1.0, f"{acc:.1%} (git bisect {git_acc:.1%})")
        goal(f"{setting}: runs <= 1.2 x git bisect", runs <= 1.2 * git_runs,
             f"{runs:.2f} vs {git_runs:.2f} (ratio {runs / git_runs:.3f}; with the 2 endpoint "
             f"checks {(runs + 2) / git_runs:.3f})")
        acc, runs, _ = stats[(setting, "bisectk-confirmed")]
        goal(f"{setting}: bisectk-confirmed 100% right", acc == 1.0,
             f"{acc:.1%}; {runs:.2f} runs with the confirmation (ratio {runs / git_runs:.3f} to git bisect; "
             f"with the 2 endpoint checks {(runs + 2) / git_runs:.3f})")
    acc, runs, max_rounds = stats[("det", f"bisectk-j{args.jobs}")]
    goal(f"det: bisectk-j{args.jobs} 100% right", acc == 1.0, f"{acc:.1%}; {runs:.2f} runs, max {max_rounds} "
         f"rounds (a chain of {max(sizes)} would take <= {math.ceil(math.log(max(sizes), args.jobs + 1)) + 1})")
    flaky = f"q={args.fail_prob:g}"
    acc, runs, _ = stats[(flaky, "bisectk-flaky")]
    goal(f"{flaky}: bisectk-flaky >= 95% right", acc >= 0.95,
         f"{acc:.1%}, {runs:.1f} runs (git bisect {stats[(flaky, 'git')][0]:.1%})")
    acc, runs, _ = stats[(flaky, f"bisectk-flaky-j{args.jobs}")]
    goal(f"{flaky}: bisectk-flaky-j{args.jobs} >= 95% right", acc >= 0.95, f"{acc:.1%}, {runs:.1f} runs")
    return out, ok


if __name__ == "__main__":
    sys.exit(main())
