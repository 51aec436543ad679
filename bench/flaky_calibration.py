"""Are the answers given at exit 0 right as often as their confidence says, when nobody declared the
failure intermittent? A simulation at the search level (the code the CLI runs, fed by seeded random
oracles: no git, no processes), with the endpoints handled as engine/endpoints.verify does.

Histories (`bisect`): chains and branchy DAGs (tests/search/dags.history) of `--commits`
candidates, the culprit drawn at random. A run fails with p_new from the culprit on and p_old
before it. The good endpoint runs once (a failure: unusable, as without --flaky); the bad one until
it fails, at most 10 runs (never: unusable). A bad endpoint that passed first starts the
flake-aware search (rates.flake_model); one that failed first starts the deterministic search,
confirmed, and switched to the flake model on a contradiction (search/history.py).

Factor sets (`ablate`): n differences, k planted ones that fail only together (at p_new; every
other configuration at p_old). The endpoints as for a bisection, bad measured over 10 runs when it
passed first (then the one-sided rule of search/flaky.py); the answer confirmed at 0.99 (under
that rule its FAIL claims as evidence, from good's one run: confirm.claim_rule, as the engine
does without --flaky); good re-checked after the shapes engine/ablate.good_suspect names.
Right: the set found is the planted one and no other set is named (dd: context and difference
hold the planted set, the context alone does not).

Thresholds (`threshold`): a declared ordinal factor n = 1..`--n` (good 1, bad the last) and one
benign difference; a run fails with p_new from a threshold drawn at random on and p_old below it.
The endpoints and the culprit search as for `ablate`, then the threshold as engine/ablate.py finds
it (the search's rule as it ended, the boundary confirmed at 0.99 from the failures seen). Right:
`fails from <the threshold> on`; an unconfirmed threshold, or one the runs say is not monotone,
is not an answer (`not answered`); `--no-confirm` runs the bisection unconfirmed (as before).

Each cell prints what was answered at exit 0 (right / WRONG, by path: `det` the deterministic
search confirmed, `switched` gone on in the flake model, `bayes` the flake-aware start),
unusable endpoints, searches that stopped or stayed unconfirmed, and the mean runs. A wrong share
of the answers above 1% beyond sampling error is a miscalibration: `--check` exits 1 on one
(one-sided binomial p < 0.01).

Usage: python bench/flaky_calibration.py bisect [--trials 1000] [--commits 32] [--cells 0.1,0.4 ...]
       python bench/flaky_calibration.py ablate [--trials 1000] [--n 8] [--k 1] [--strategy adaptive]
       python bench/flaky_calibration.py threshold [--trials 1000] [--n 16] [--no-confirm] [--cells 0,0.9]
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search import ConfidenceRule, SearchStopped, ablate, find_threshold  # noqa: E402
from bisectk.search.history import Dag, Observation, SearchOptions, search_dag  # noqa: E402
from bisectk.search.history import SearchStopped as DagStopped  # noqa: E402
from bisectk.search.rates import SWITCHED, flake_model  # noqa: E402
from bisectk.engine.ablate import failing_runs  # noqa: E402
from bisectk.search.result import GOOD_FAILED  # noqa: E402
from tests.search.dags import ancestors, history  # noqa: E402

F, P = Outcome.FAIL, Outcome.PASS
CAP = 10        # --calibrate-runs
# (p_old, p_new): an undeclared flake of the bad side, a good side that fails sometimes, races
CELLS = [(0, .9), (0, .7), (0, .5), (0, .3), (.05, 1), (.2, 1), (.1, .4), (.05, .7), (.2, .9)]


def endpoints(run_good, run_bad) -> tuple[list[Outcome], list[Outcome]] | None:
    """verify() without --flaky: good once, bad until it fails (at most CAP); None when unusable."""
    good = [run_good()]
    if F in good:
        return None
    bad = [run_bad()]
    while bad[-1] is P and len(bad) < CAP:
        bad.append(run_bad())
    return (good, bad) if F in bad else None


def bisect_one(parents, culprit: int, p_old: float, p_new: float, seed: int) -> tuple[str, int]:
    rng = random.Random(seed)
    anc, n = ancestors(parents), len(parents)

    def oracle(i: int) -> Outcome:
        return F if rng.random() < (p_new if culprit in anc[i] else p_old) else P
    ends = endpoints(lambda: F if rng.random() < p_old else P, lambda: oracle(n - 1))
    if ends is None:
        return "unusable", 0
    flaky = P in ends[1]
    opt = SearchOptions(flaky=flaky, prior=flake_model(False), switch_prior=SWITCHED)
    try:
        r = search_dag(Dag(parents), oracle, options=opt, observations=[Observation(n - 1, o) for o in ends[1]])
    except DagStopped as stop:
        return "stopped", stop.result.new_runs
    if not r.complete or r.culprit is None:
        return "not answered", r.new_runs
    path = "switched" if r.switched else "bayes" if flaky else "det"
    return f"{'right' if r.culprit == culprit else 'WRONG'}-{path}", r.new_runs


def _good_suspect(res) -> bool:
    """engine/ablate.good_suspect, in short."""
    if res.stop_reason == GOOD_FAILED:
        return True
    if not isinstance(res.rule, ConfidenceRule):
        return False
    return len([s for s in res.sets if s.members]) > 1 or res.stop_reason == "unconfirmed"


def ablate_one(n: int, k: int, p_old: float, p_new: float, seed: int, strategy: str) -> tuple[str, int]:
    rng = random.Random(seed)
    items = [f"f{i}" for i in range(n)]
    planted = frozenset(rng.sample(items, k))

    def oracle(cfg: frozenset) -> Outcome:
        return F if rng.random() < (p_new if planted <= cfg else p_old) else P
    everything = frozenset(items)
    ends = endpoints(lambda: oracle(frozenset()), lambda: oracle(everything))
    if ends is None:
        return "unusable", 0
    bad = ends[1]
    rule = None
    if P in bad:        # intermittent: measured over CAP runs, the one-sided rule
        bad += [oracle(everything) for _ in range(CAP - len(bad))]
        rule = ConfidenceRule.derive(bad.count(F), len(bad))
    try:
        res = ablate(items, oracle, strategy=strategy, rule=rule, max_runs=2000, measure_removal=True,
                     more_sets=7, confidence=0.99, endpoint=(bad.count(F), len(bad)), good=(0, len(ends[0])))
        stopped = False
    except SearchStopped as stop:
        res, stopped = stop.result, True
    if _good_suspect(res):
        again: list[Outcome] = []
        for _ in range(max(getattr(res.rule, "repeats", 1), CAP)):
            again.append(oracle(frozenset()))
            if F in again and len(again) + 1 >= CAP:
                break
        if F in again:
            return "unusable after the search", res.runs
    if stopped or not res.complete:
        return "not answered", res.runs
    sets = [frozenset(s.members) for s in res.sets if s.members] or [frozenset(res.culprits)]
    if res.context:
        right = planted <= res.context | frozenset(res.culprits) and not planted <= res.context
    else:
        right = sets == [planted]
    return f"{'right' if right else 'WRONG'}{'-switched' if res.switched else ''}", res.runs


def threshold_one(n: int, p_old: float, p_new: float, seed: int, confirm: bool = True) -> tuple[str, int]:
    rng = random.Random(seed)
    first = rng.randrange(1, n)         # index of the first failing value: 0 (good) passes

    def run(index: int) -> Outcome:
        return F if rng.random() < (p_new if index >= first else p_old) else P

    def oracle(cfg: frozenset) -> Outcome:
        return run(n - 1 if "n" in cfg else 0)
    ends = endpoints(lambda: oracle(frozenset()), lambda: oracle(frozenset({"n", "m"})))
    if ends is None:
        return "unusable", 0
    bad, rule = ends[1], None
    if P in bad:
        bad += [oracle(frozenset({"n", "m"})) for _ in range(CAP - len(bad))]
        rule = ConfidenceRule.derive(bad.count(F), len(bad))
    try:
        res = ablate(["n", "m"], oracle, rule=rule, max_runs=2000, measure_removal=True, more_sets=7,
                     confidence=0.99, endpoint=(bad.count(F), len(bad)), good=(0, len(ends[0])))
    except SearchStopped as stop:
        return "not answered", stop.result.runs
    if not res.complete or list(res.culprits) != ["n"]:
        return "no culprit n", res.runs
    evidence = failing_runs(res, (bad.count(F), len(bad)))
    try:
        t = find_threshold(list(range(n)), run, rule=res.rule,
                           **(dict(confidence=0.99, evidence=evidence, good=(0, len(ends[0]))) if confirm else {}))
    except SearchStopped as stop:
        return "not answered", res.runs + stop.result.runs
    runs = res.runs + t.runs
    if not t.confirmed or not t.monotone:
        return "not answered", runs
    path = "switched" if res.switched or t.switched else "flaky" if rule else "det"
    return f"{'right' if t.exact and t.first_fail == first else 'WRONG'}-{path}", runs


def binom_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))


def report(label: str, tags: collections.Counter, runs: list[int], seconds: float) -> bool:
    given = sum(v for t, v in tags.items() if t.startswith(("right", "WRONG")))
    wrong = sum(v for t, v in tags.items() if t.startswith("WRONG"))
    p = binom_tail(wrong, given, 0.01) if wrong else 1.0
    flag = "  MISCALIBRATED" if p < 0.01 else ""
    print(f"{label}: answered {given}, wrong {wrong} ({wrong / max(given, 1):.2%}, p={p:.3g}){flag}; "
          f"mean runs {sum(runs) / max(len(runs), 1):.1f}; {dict(sorted(tags.items()))}; {seconds:.0f} s", flush=True)
    return not flag


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("bisect", "ablate", "threshold"))
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=32)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--strategy", default="adaptive")
    ap.add_argument("--cells", nargs="*", default=None, help="p_old,p_new pairs (default: the nine above)")
    ap.add_argument("--check", action="store_true", help="exit 1 on a miscalibrated cell")
    ap.add_argument("--no-confirm", action="store_true", help="threshold: the bisection unconfirmed (as before)")
    a = ap.parse_args()
    cells = [tuple(map(float, c.split(","))) for c in a.cells] if a.cells else CELLS
    ok = True
    shapes = (("linear", "merges") if a.what == "bisect" else (f"{a.strategy} n={a.n} k={a.k}",) if a.what == "ablate"
              else (f"threshold n={a.n}{' unconfirmed' if a.no_confirm else ''}",))
    for shape in shapes:
        for p_old, p_new in cells:
            t0, tags, runs = time.time(), collections.Counter(), []
            for s in range(a.trials):
                rng = random.Random(f"{shape}:{p_old}:{p_new}:{s}")
                if a.what == "bisect":
                    n = a.commits
                    parents = [()] + [(i - 1,) for i in range(1, n)] if shape == "linear" else history(n, rng)
                    tag, r = bisect_one(parents, rng.randrange(n), p_old, p_new, rng.randrange(2 ** 32))
                elif a.what == "ablate":
                    tag, r = ablate_one(a.n, a.k, p_old, p_new, rng.randrange(2 ** 32), a.strategy)
                else:
                    tag, r = threshold_one(a.n, p_old, p_new, rng.randrange(2 ** 32), not a.no_confirm)
                tags[tag] += 1
                runs.append(r)
            ok &= report(f"{shape} p_old={p_old:g} p_new={p_new:g}", tags, runs, time.time() - t0)
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
