"""`--flaky` on an ablation whose good side fails now and then, though not in its endpoint runs:
the engine's choice of what the confirmation weighs (engine/ablate.good_runs) over seeded
simulated searches (no processes). Under --flaky good is measured over `--calibrate-runs` runs;
a race failing 5% of runs passes all ten 60% of the time, and flakiness_rule then falls back to
the one-sided rule. Its answers had their FAIL claims taken as proven by one more failure: a
spurious failure of a hybrid on good's side named a set of innocent factors at exit 0."""

from __future__ import annotations

import collections
import random
from types import SimpleNamespace

from bisectk.engine.ablate import flakiness_rule, good_runs, good_suspect
from bisectk.engine.records import Rate
from bisectk.outcome import Outcome
from bisectk.search import ConfidenceRule, SearchStopped, ablate

P, F = Outcome.PASS, Outcome.FAIL
CAP = 10    # --calibrate-runs


def flaky_ablation(k: int, p_old: float, p_new: float, seed: int, n: int = 8) -> str:
    """One `ablate --flaky` as the engine runs it, in short: good and bad measured over CAP runs
    each; where good never failed, the one-sided rule and good_runs' choice for the confirmation;
    good re-checked where good_suspect asks. 'right', 'WRONG' (an answer at exit 0 naming other
    sets than the planted one), or why there was no answer."""
    rng = random.Random(seed)
    items = [f"f{i}" for i in range(n)]
    planted = frozenset(rng.sample(items, k))

    def oracle(config: frozenset) -> Outcome:
        return F if rng.random() < (p_new if planted <= config else p_old) else P
    good = [oracle(frozenset()) for _ in range(CAP)]
    bad = [oracle(frozenset(items)) for _ in range(CAP)]
    if F in good or F not in bad:
        return "not this path"      # the two-rate rule, or unusable endpoints
    check = SimpleNamespace(good_rate=Rate(0, CAP), bad_rate=Rate(bad.count(F), CAP), flaky=True)
    policy = SimpleNamespace(flaky=True)
    rule = flakiness_rule(check, two_rate=True)
    assert isinstance(rule, ConfidenceRule)     # good held: the one-sided rule
    try:
        res = ablate(items, oracle, rule=rule, max_runs=2000, measure_removal=True, more_sets=7,
                     confidence=0.99, endpoint=(bad.count(F), CAP), good=good_runs(check, policy))
    except SearchStopped:
        return "stopped"
    if good_suspect(res, False):
        again = [oracle(frozenset()) for _ in range(max(rule.repeats, CAP))]
        if F in again:
            return "unusable after the search"
    if not res.complete:
        return "not answered"
    sets = [frozenset(s.members) for s in res.sets if s.members] or [frozenset(res.culprits)]
    return "right" if sets == [planted] else "WRONG"


def test_flaky_with_a_good_side_that_held_its_runs_weighs_its_fail_claims():
    """Before: under --flaky with good passing its ten runs, 5 of 5 answers at exit 0 over these
    200 seeds named wrong sets for the pair, and 4 of 28 for the lone culprit (a race 5% -> 70%).
    A FAIL claim is now confirmed under two rates, from good's runs, as without --flaky."""
    pair = collections.Counter(flaky_ablation(2, 0.05, 0.7, seed) for seed in range(200))
    lone = collections.Counter(flaky_ablation(1, 0.05, 0.7, seed) for seed in range(200))
    assert pair["WRONG"] == 0 and lone["WRONG"] == 0, (pair, lone)
    assert lone["right"] >= 15, lone        # still answered where the rates tell the sides apart


def test_flaky_keeps_the_two_rate_model_when_good_failed_in_its_runs():
    """Where good showed the failure, the two-rate rule is the model: no second weighing."""
    check = SimpleNamespace(good_rate=Rate(2, CAP), bad_rate=Rate(8, CAP))
    assert good_runs(check, SimpleNamespace(flaky=True)) is None
    assert good_runs(check, SimpleNamespace(flaky=None)) == (2, CAP)
    held = SimpleNamespace(good_rate=Rate(0, CAP), bad_rate=Rate(8, CAP))
    assert good_runs(held, SimpleNamespace(flaky=True)) == (0, CAP)
