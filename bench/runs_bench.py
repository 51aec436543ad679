"""Runs bench (issue 23): how many runs a flaky bisection costs on 1,000-commit histories where
the good side never fails (the one-sided case), simulated at the search level (no git, no
processes: the search code the CLI runs, fed by a random oracle), side by side on the same
histories and random streams:

- `bisectk`: bisectk.search.history.search_dag in the flake model the CLI uses when the bad
  endpoint shows an intermittent failure (ONE_SIDED: p_old = 0), seeded as run_bisect seeds it
  (the bad endpoint run until it fails, the good endpoint once). Runs include those endpoint runs.
- `bisectk --flaky`: the two-rate model (TWO_RATE: the good side may fail too, p_old unknown),
  the same endpoint runs. It pays for not assuming p_old = 0.
- `bisectk, q known`: as `bisectk` with the true q given (fail_prob): what learning q costs.
- `git-rR`: `git bisect run` with a wrapper that runs the test up to R = ceil(log 0.01 / log(1-q))
  times and says bad at the first failure: git's binary search on a chain (the midpoint of the
  commits still possible), each verdict from those repeats, endpoints given (not run, as a user
  marks them). Simulated step by step; a step's miss sends git the wrong way for good.
- `git_bayesect`: git_bayesect 1.2's Bisector (pip: git-bayesect==1.2), its own entropy rule and
  Jeffreys priors, stopped when its top commit holds 0.99 (its default is 0.95), endpoints given.
- `bound`: the information bound, (0.99 log2(N-1) - h(0.01)) / C(q) runs with C the Z-channel's
  capacity (bench/history_bench.z_channel_bound): no method averages fewer for 99% right.

Usage: python bench/runs_bench.py [--commits 1000] [--seeds 20] [--qs 0.3,0.5,0.7,0.9]
Writes bench/results/runs_bench.json and prints the table bench/README.md quotes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search.history import Dag, Observation, SearchOptions, SearchStopped, search_dag  # noqa: E402
from bisectk.search.rates import ONE_SIDED, TWO_RATE  # noqa: E402

F, P = Outcome.FAIL, Outcome.PASS
WRONG: list[tuple] = []     # bisectk answers given as found (exit 0) that named another commit


def z_channel_bound(q: float, n: int, error: float = 0.01) -> float:
    s = 1.0 - q
    cap = 1.0 if s == 0 else math.log2(1 + (1 - s) * s ** (s / (1 - s)))
    h = -(error * math.log2(error) + (1 - error) * math.log2(1 - error))
    return ((1 - error) * math.log2(n - 1) - h) / cap


def repeats(q: float) -> int:
    return 1 if q >= 1 else math.ceil(math.log(0.01) / math.log(1 - q))


def run_bisectk(n: int, culprit: int, q: float, seed: int, two_rate: bool,
                known: bool = False) -> tuple[bool, int]:
    rng = random.Random(seed)

    def oracle(i: int) -> Outcome:
        return F if i >= culprit and rng.random() < q else P
    seed_obs = [Observation(n - 1, oracle(n - 1))]
    while seed_obs[-1].outcome is P:
        seed_obs.append(Observation(n - 1, oracle(n - 1)))
    endpoint_runs = len(seed_obs) + 1      # the good endpoint, once (it passes: p_old = 0)
    opt = SearchOptions(flaky=True, prior=TWO_RATE if two_rate else ONE_SIDED,
                        base=(0, 1) if two_rate else (0, 0), fail_prob=q if known else None)
    try:
        r = search_dag(Dag.chain(n), oracle, options=opt, observations=seed_obs)
    except SearchStopped as stop:
        r = stop.result
    if r.complete and r.culprit != culprit:
        WRONG.append((n, culprit, q, seed, two_rate, known))
    return r.complete and r.culprit == culprit, r.new_runs + endpoint_runs


def run_git(n: int, culprit: int, q: float, seed: int) -> tuple[bool, int]:
    """git bisect run on a chain, each verdict from up to R runs (bad at the first failure)."""
    rng = random.Random(seed)
    r_max = repeats(q)
    lo, hi = -1, n - 1          # lo: known good (-1 = --good), hi: known bad
    runs = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        bad = False
        for _ in range(r_max):
            runs += 1
            if mid >= culprit and rng.random() < q:
                bad = True
                break
        if bad:
            hi = mid
        else:
            lo = mid
    return hi == culprit, runs


def run_bayesect(n: int, culprit: int, q: float, seed: int, confidence: float = 0.99,
                 cap: int = 3000) -> tuple[bool, int] | None:
    try:
        from git_bayesect import Bisector
    except ImportError:
        return None
    import numpy as np
    rng = random.Random(seed)
    # git_bayesect's index 0 is the newest commit; the culprit and newer are at indices <= B
    b = n - 1 - culprit
    bis = Bisector(np.ones(n))
    runs = 0
    while bis.distribution.max() < confidence and runs < cap:
        i = bis.select()
        runs += 1
        bis.record(i, i <= b and rng.random() < q)
    return bool(int(np.argmax(bis.distribution)) == b and bis.distribution.max() >= confidence), runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--qs", default="0.3,0.5,0.7,0.9")
    args = ap.parse_args()
    n = args.commits
    table = {}
    t0 = time.time()
    for q in map(float, args.qs.split(",")):
        rows: dict[str, list[tuple[bool, int]]] = {"bisectk": [], "bisectk --flaky": [], "bisectk, q known": [],
                                                   "git-rR": [], "git_bayesect": []}
        for s in range(args.seeds):
            culprit = random.Random(f"{q}:{s}").randrange(n)
            rows["bisectk"].append(run_bisectk(n, culprit, q, s, False))
            rows["bisectk --flaky"].append(run_bisectk(n, culprit, q, s, True))
            rows["bisectk, q known"].append(run_bisectk(n, culprit, q, s, False, known=True))
            rows["git-rR"].append(run_git(n, culprit, q, s))
            b = run_bayesect(n, culprit, q, s)
            if b is not None:
                rows["git_bayesect"].append(b)
        bound = z_channel_bound(q, n)
        out = {"R": repeats(q), "bound": round(bound, 1)}
        for name, got in rows.items():
            if got:
                out[name] = {"mean_runs": round(sum(r for _, r in got) / len(got), 1),
                             "right": int(sum(bool(ok) for ok, _ in got)), "of": len(got)}
        table[q] = out
        print(f"q={q}: " + json.dumps(out), flush=True)
    print(f"\n{n} commits, {args.seeds} seeds per q, {time.time() - t0:.0f} s; bisectk answers given and wrong: "
          f"{len(WRONG)} {WRONG}; the others not right were not separable within the budget (exit 2)\n")
    print("| q | bisectk | bisectk --flaky | bisectk, q known | git-rR (R) | git_bayesect | bound | "
          "bisectk / git-rR | bisectk / git_bayesect | bisectk / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for q, o in table.items():
        def cell(name):
            r = o.get(name)
            return f"{r['mean_runs']} ({r['right']}/{r['of']})" if r else "n/a"
        bk, gr, gb = o["bisectk"]["mean_runs"], o["git-rR"]["mean_runs"], o.get("git_bayesect", {}).get("mean_runs")
        print(f"| {q} | {cell('bisectk')} | {cell('bisectk --flaky')} | {cell('bisectk, q known')} | "
              f"{cell('git-rR')} R={o['R']} | "
              f"{cell('git_bayesect')} | {o['bound']} | {bk / gr:.2f} | "
              f"{(f'{bk / gb:.2f}' if gb else 'n/a')} | {bk / o['bound']:.2f} |")
    res = ROOT / "bench" / "results"
    res.mkdir(exist_ok=True)
    (res / "runs_bench.json").write_text(json.dumps({"commits": n, "seeds": args.seeds, "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
