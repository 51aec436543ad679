"""Which flake model a contradicted deterministic bisection should go on in: a simulation.

A deterministic search is confirmed (search/confirm.py); when its culprit passes on a re-run, it
goes on in a flake model from every observation so far (search/history.py, `switch_prior`). The
engine gave ONE_SIDED there until stop 44 (the good side never fails, so any failure is proof that
the culprit is among the run's ancestors); it gives SWITCHED now. Three histories tell the models
apart:

- spurious: the bad side always fails; one good commit, the culprit's parent, fails once, on its
  first run (a run starved of CPU past its watchdog, the OOM killer, a transient import error);
- flake: the bad side fails at --rate and the good side never (an undeclared flake);
- race: the good side fails at --old-rate and the bad side at --new-rate (an undeclared race that
  the culprit made more frequent, and a good endpoint that happened to pass).

For each prior, N seeds of a chain: how often the answer is the true culprit, the runs, and the
confidence the search claims. Pure search (no processes); seconds to run.

    python bench/switch_prior_sim.py [--seeds 40] [--commits 23] [--rate 0.5] [--old-rate 0.3 --new-rate 0.9]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search.gateway import SearchStopped  # noqa: E402
from bisectk.search.history import Dag, SearchOptions, search_dag  # noqa: E402
from bisectk.search.rates import ONE_SIDED, SWITCHED, TWO_RATE, RatePrior  # noqa: E402

PRIORS = {
    "ONE_SIDED (before stop 44)": ONE_SIDED,
    "SWITCHED (now)": SWITCHED,
    "TWO_RATE (--flaky's)": TWO_RATE,
    "half at 0, else Beta(1,20)": RatePrior(old_zero=0.5, old=(1.0, 20.0), grid=50),
    "0.9 at 0, else Beta(1,20)": RatePrior(old_zero=0.9, old=(1.0, 20.0), grid=50),
}


def one(prior: RatePrior, history: str, seed: int, n: int, culprit: int, rate: float,
        rates: tuple[float, float] = (0.3, 0.9)):
    rng = random.Random(seed)
    spurious_left = [culprit - 1]

    def oracle(i: int) -> Outcome:
        bad = i >= culprit
        if history == "spurious":
            if not bad and i in spurious_left:
                spurious_left.remove(i)
                return Outcome.FAIL
            return Outcome.FAIL if bad else Outcome.PASS
        if history == "race":
            return Outcome.FAIL if rng.random() < rates[bad] else Outcome.PASS
        return Outcome.FAIL if bad and rng.random() < rate else Outcome.PASS

    dag = Dag([[i - 1] if i else [] for i in range(n)])
    try:
        return search_dag(dag, oracle, options=SearchOptions(switch_prior=prior, max_runs=500),
                          observations=[(n - 1, Outcome.FAIL)])
    except SearchStopped as stop:
        return stop.result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--commits", type=int, default=23)
    ap.add_argument("--rate", type=float, default=0.5, help="the bad side's failure rate in the flake history")
    ap.add_argument("--old-rate", type=float, default=0.3, help="the good side's failure rate in the race history")
    ap.add_argument("--new-rate", type=float, default=0.9, help="the bad side's failure rate in the race history")
    a = ap.parse_args()
    culprit = a.commits // 2 + 1
    print(f"{a.commits} commits, culprit {culprit}, {a.seeds} seeds; flake history: bad fails {a.rate:g}; "
          f"race history: good fails {a.old_rate:g}, bad {a.new_rate:g}")
    print(f"{'history':9} {'prior':28} {'right':>7} {'switched':>8} {'runs (mean)':>11} {'confidence (median)':>20}")
    for history in ("spurious", "flake", "race"):
        for name, prior in PRIORS.items():
            results = [one(prior, history, s, a.commits, culprit, a.rate, (a.old_rate, a.new_rate))
                       for s in range(a.seeds)]
            right = sum(r.culprit == culprit for r in results)
            switched = sum(r.switched is not None for r in results)
            runs = statistics.mean(r.new_runs for r in results)
            conf = statistics.median(r.confidence for r in results)
            print(f"{history:9} {name:28} {right:>3}/{a.seeds:<3} {switched:>8} {runs:>11.1f} {conf:>20.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
