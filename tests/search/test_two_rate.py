"""Issue 23, the two-rate model (a race that got more frequent): the posterior against brute-force
enumeration on small DAGs, and the searches on simulated histories where both sides fail. All
pure simulation (no processes): seconds."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search.ablation import ablate
from bisectk.search.history import Dag, Observation, SearchOptions, SearchStopped, search_dag
from bisectk.search.posterior import CulpritPosterior
from bisectk.search.rates import ONE_SIDED, SWITCHED, TWO_RATE, RatePrior, RateRule, flake_model

from .dags import ancestors, dags, history
from .oracles import flaky, planted

P, F = Outcome.PASS, Outcome.FAIL
SMALL = RatePrior(old_zero=0.5, grid=6)     # a grid small enough to enumerate by hand


# -- the posterior against brute force --------------------------------------------------------------
def brute_joint(parents, observations, prior: RatePrior, base=(0, 0)) -> tuple[np.ndarray, np.ndarray]:
    """p(c, pair | obs) by enumerating every culprit and pair and multiplying run by run."""
    grid = prior.build()
    anc = ancestors(parents)
    n, k = len(parents), len(grid)
    log = np.zeros((n, k))
    for c in range(n):
        for j in range(k):
            po, pn = grid.old[j], grid.new[j]
            w = grid.log_prior[j] + (base[0] * _log(po) if base[0] else 0.0) + (base[1] * _log(1 - po) if base[1] else 0.0)
            for i, outcome in observations:
                p = pn if c in anc[i] else po
                w += _log(p) if outcome is F else _log(1 - p)
            log[c, j] = w
    joint = np.exp(log - log.max())
    return joint / joint.sum(), grid


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


@st.composite
def observed(draw):
    parents = draw(dags(max_n=7))
    n = len(parents)
    obs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from([P, F])), max_size=12))
    base = (draw(st.integers(0, 3)), draw(st.integers(0, 6)))
    return parents, obs, base


@settings(max_examples=60, deadline=None)
@given(observed())
def test_two_rate_posterior_matches_enumeration(case):
    parents, obs, base = case
    model = CulpritPosterior.from_observations(Dag(parents), [Observation(i, o) for i, o in obs],
                                               prior=SMALL, base=base)
    joint, grid = brute_joint(parents, obs, SMALL, base)
    assert np.allclose(model.joint, joint, atol=1e-9)
    assert np.allclose(model.marginal(), joint.sum(axis=1), atol=1e-9)
    assert np.allclose(model.pair_weights(), joint.sum(axis=0), atol=1e-9)
    # I(C; Y_i) for one run of every commit, from the enumerated joint
    anc = ancestors(parents)
    for i in range(len(parents)):
        pf = np.array([[grid.new[j] if c in anc[i] else grid.old[j] for j in range(len(grid))]
                       for c in range(len(parents))])
        mass_c = joint.sum(axis=1)
        fail_c = (joint * pf).sum(axis=1)
        h = lambda x: -sum(v * math.log2(v) for v in x if v > 0)   # noqa: E731
        info = h([fail_c.sum(), 1 - fail_c.sum()]) - sum(
            h([f, m - f]) - h([m]) for f, m in zip(fail_c, mass_c))
        assert model.information_gain()[i] == pytest.approx(info, abs=1e-7)


@settings(max_examples=30, deadline=None)
@given(observed(), st.data())
def test_joint_information_of_two_probes_matches_enumeration(case, data):
    parents, obs, base = case
    n = len(parents)
    probes = [data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))]
    model = CulpritPosterior.from_observations(Dag(parents), [Observation(i, o) for i, o in obs],
                                               prior=SMALL, base=base)
    joint, grid = brute_joint(parents, obs, SMALL, base)
    anc = ancestors(parents)
    p_y = {}
    h_cond = 0.0
    for c in range(n):
        for j in range(len(grid)):
            rates = [grid.new[j] if c in anc[i] else grid.old[j] for i in probes]
            for ys in itertools.product([0, 1], repeat=2):
                p = joint[c, j] * math.prod(r if y else 1 - r for r, y in zip(rates, ys))
                p_y[ys] = p_y.get(ys, 0.0) + p
        # H(Y | C = c) with the pair summed out within c
        mc = joint[c].sum()
        if mc > 0:
            pyc = {}
            for j in range(len(grid)):
                rates = [grid.new[j] if c in anc[i] else grid.old[j] for i in probes]
                for ys in itertools.product([0, 1], repeat=2):
                    pyc[ys] = pyc.get(ys, 0.0) + joint[c, j] * math.prod(r if y else 1 - r for r, y in zip(rates, ys))
            h_cond += -sum(v * math.log2(v / mc) for v in pyc.values() if v > 0)
    h_y = -sum(v * math.log2(v) for v in p_y.values() if v > 0)
    assert model.batch_information(probes) == pytest.approx(h_y - h_cond, abs=1e-7)


def test_one_sided_failure_is_proof_and_two_rate_failure_is_evidence():
    dag = Dag.chain(8)
    one = CulpritPosterior.from_observations(dag, [(7, F), (3, F)], prior=ONE_SIDED)
    assert one.marginal()[4:].sum() == 0          # culprits after 3 cannot explain 3's failure
    two = CulpritPosterior.from_observations(dag, [(7, F), (3, F)], prior=TWO_RATE)
    assert 0 < two.marginal()[4:].sum() < 1        # under two rates it is evidence, not proof
    assert two.marginal()[:4].sum() > 4 / 8        # ... that moves mass towards commits up to 3


# -- searches on simulated histories ---------------------------------------------------------------
def simulate(parents, culprit, p_old, p_new, seed, *, flaky_mode, base_runs=10, max_runs=None, confidence=0.99):
    """Search one generated history: runs of a commit that descends from `culprit` fail with
    p_new, the others with p_old. Returns (result, stopped reason or None)."""
    rng = random.Random(seed)
    anc = ancestors(parents)
    n = len(parents)

    def oracle(i):
        return F if rng.random() < (p_new if culprit in anc[i] else p_old) else P
    seed_obs = [Observation(n - 1, oracle(n - 1))]
    while seed_obs[-1].outcome is P and len(seed_obs) < 10:
        seed_obs.append(Observation(n - 1, oracle(n - 1)))
    good_fails = sum(rng.random() < p_old for _ in range(base_runs)) if flaky_mode else 0
    opt = SearchOptions(flaky=flaky_mode, prior=TWO_RATE if flaky_mode else ONE_SIDED, switch_prior=SWITCHED,
                        base=(good_fails, base_runs - good_fails) if flaky_mode else (0, 0), max_runs=max_runs,
                        confidence=confidence)
    try:
        return search_dag(Dag(parents), oracle, options=opt, observations=seed_obs), None
    except SearchStopped as stop:
        return stop.result, stop.reason


@pytest.mark.parametrize("p_old, p_new", [(0.1, 0.7), (0.2, 0.6)])
def test_rate_change_histories_are_right_or_not_separable(p_old, p_new):
    right = 0
    for seed in range(16):
        rng = random.Random(seed)
        parents = history(60, rng) if seed % 2 else [()] + [(i - 1,) for i in range(1, 60)]
        culprit = rng.randrange(60)
        result, stopped = simulate(parents, culprit, p_old, p_new, seed, flaky_mode=True, max_runs=400)
        if result.complete and stopped is None:     # an answer given as found (exit 0)
            assert culprit in result.candidates, (seed, culprit, result.candidates)
            assert result.confidence >= 0.99 and result.separable is True
            right += 1
        else:
            assert result.separable is False and result.rates is not None
    assert right >= 12      # mostly answered: not separable is for rates too close, not these


def test_close_rates_within_a_small_budget_are_not_separable_with_both_rates():
    parents = [()] + [(i - 1,) for i in range(1, 40)]
    result, stopped = simulate(parents, 20, 0.35, 0.45, 1, flaky_mode=True, max_runs=40)
    assert stopped == "budget" and not result.complete and result.separable is False
    r = result.rates
    assert 0 <= r.old_lo <= r.old <= r.old_hi <= 1 and 0 <= r.new_lo <= r.new <= r.new_hi <= 1
    assert result.more_runs and result.more_runs > 10      # the bits missing over a weak channel


def test_more_runs_is_not_low_at_a_high_confidence():
    """"About N more runs" when the budget stops a flake-aware search: at --confidence 0.9999 the
    search went on to make a median 2.2 times the runs it said (the bits missing, by entropy, are
    almost none once a commit leads; its log-odds still have far to go). Said against what the
    same search then made, seed by seed (the oracle's draws are the same up to the stop)."""
    import statistics
    ratios = []
    for seed in range(8):
        parents = [()] + [(i - 1,) for i in range(1, 60)]
        culprit = random.Random(seed).randrange(60)
        full, stopped = simulate(parents, culprit, 0.1, 0.7, seed, flaky_mode=True, confidence=0.9999)
        assert stopped is None and full.complete
        for share in (0.3, 0.6, 0.85):
            part, stopped = simulate(parents, culprit, 0.1, 0.7, seed, flaky_mode=True, confidence=0.9999,
                                     max_runs=max(1, int(full.new_runs * share)))
            if stopped == "budget" and part.more_runs:
                ratios.append((full.new_runs - part.new_runs) / part.more_runs)
    assert len(ratios) >= 16 and 0.6 <= statistics.median(ratios) <= 1.6, sorted(ratios)     # was 2.2


def test_one_sided_case_under_flaky_is_still_right():
    for seed in range(10):
        rng = random.Random(100 + seed)
        parents = history(80, rng)
        culprit = rng.randrange(80)
        result, stopped = simulate(parents, culprit, 0.0, 0.5, seed, flaky_mode=True, max_runs=600)
        assert stopped is None and result.complete and culprit in result.candidates


def test_undeclared_half_flake_bisect_is_right_or_unsure():
    wrong = answered = 0
    for seed in range(60):
        rng = random.Random(1000 + seed)
        parents = history(120, rng) if seed % 2 else [()] + [(i - 1,) for i in range(1, 120)]
        culprit = rng.randrange(120)
        result, stopped = simulate(parents, culprit, 0.0, 0.5, seed, flaky_mode=False, max_runs=800)
        if result.complete and stopped is None and len(result.candidates) == 1:
            answered += 1
            wrong += result.culprit != culprit
    assert wrong == 0 and answered >= 50


def test_one_spurious_failure_of_a_good_commit_is_not_named_the_culprit():
    """A good commit (the culprit's parent) fails once -- a run starved past its watchdog, the
    OOM killer -- and passes on the confirmation's re-run. The search that goes on from that
    contradiction must not read the one failure as proof: under ONE_SIDED it named the parent at
    0.99 (docs/debug/flake-switch-prior.md)."""
    cases = [(23, 12, False), (40, 7, False), (200, 77, False), (60, 31, True), (90, 50, True)]
    for n, culprit, dag in cases:
        parents = history(n, random.Random(n)) if dag else [()] + [(i - 1,) for i in range(1, n)]
        anc = ancestors(parents)
        spurious = [parents[culprit][0]]

        def oracle(i):
            if i in spurious:
                spurious.remove(i)
                return F
            return F if culprit in anc[i] else P
        result = search_dag(Dag(parents), oracle, options=SearchOptions(), observations=[(n - 1, F)])
        assert not spurious, "the spurious failure was never drawn: the case tests nothing"
        assert result.switched is not None, (n, culprit)
        assert result.complete and result.culprit == culprit and result.confidence >= 0.99, (n, result.culprit)


@pytest.mark.parametrize("p_old, p_new", [(0.3, 0.9), (0.1, 0.7)])
def test_an_undeclared_race_is_right_or_unsure(p_old, p_new):
    """A race that a commit made more frequent, nobody said --flaky, and the good endpoint
    happened to pass: once the confirmation contradicts the deterministic answer, the search
    must allow the good side to fail. Under ONE_SIDED (0.3 -> 0.9) it was wrong every time at
    confidence 1.0 (bench/switch_prior_sim.py)."""
    wrong = answered = 0
    for seed in range(16):
        rng = random.Random(500 + seed)
        parents = history(60, rng) if seed % 2 else [()] + [(i - 1,) for i in range(1, 60)]
        culprit = rng.randrange(1, 60)
        result, stopped = simulate(parents, culprit, p_old, p_new, seed, flaky_mode=False, max_runs=800)
        # the switched searches: a deterministic answer whose confirmation passed by luck (the
        # culprit's ancestor failed again) is the confirmation's limit, not the switch's
        if result.switched is not None and result.complete and stopped is None and len(result.candidates) == 1:
            answered += 1
            wrong += result.culprit != culprit
    # answers at >= 0.99 may be wrong 1% of the time: one in 16 is luck (bench/switch_prior_sim.py:
    # 1 of 193 across five rate pairs), ONE_SIDED's half is not
    assert answered >= 12 and wrong <= 1, (answered, wrong)


def test_an_undeclared_race_whose_bad_endpoint_passed_is_right_or_unsure():
    """The bisection's own start when the bad endpoint passed before it failed and nobody said
    --flaky (engine/bisect.py: flaky, in rates.flake_model(False)): the good endpoint's one passing
    run says nothing about the good side. Under ONE_SIDED (p_old = 0) the first old-side failure of
    a race (0.05 -> 0.7) was proof, and 16 of these 22 answers named a wrong commit at >= 0.99."""
    wrong = answered = tried = 0
    for seed in range(60):
        rng = random.Random(700 + seed)
        parents = history(32, rng) if seed % 2 else [()] + [(i - 1,) for i in range(1, 32)]
        culprit = rng.randrange(1, 32)
        anc = ancestors(parents)

        def oracle(i):
            return F if rng.random() < (0.7 if culprit in anc[i] else 0.05) else P
        bad = [Observation(31, oracle(31))]
        while bad[-1].outcome is P and len(bad) < 10:
            bad.append(Observation(31, oracle(31)))
        if len(bad) == 1 or bad[-1].outcome is P:       # not the intermittent start, or unusable
            continue
        tried += 1
        opt = SearchOptions(flaky=True, prior=flake_model(False), switch_prior=SWITCHED, max_runs=400)
        try:
            result = search_dag(Dag(parents), oracle, options=opt, observations=bad)
        except SearchStopped:
            continue
        if result.complete and len(result.candidates) == 1:
            answered += 1
            wrong += result.culprit != culprit
    assert tried == 22 and answered >= 18 and wrong <= 1, (tried, answered, wrong)


def test_the_switched_prior_puts_its_mass_where_it_says():
    """SWITCHED: p_old = 0, a rare spurious rate (Beta(1, 100)) or a race's (Beta(1, 4)); before
    the p_old < p_new conditioning 0.4 / 0.4 / 0.2."""
    g = SWITCHED.build()
    w = np.exp(g.log_prior)
    zero, rare, wide = w[g.old == 0].sum(), w[(g.old > 0) & (g.old < 0.05)].sum(), w[g.old >= 0.05].sum()
    assert abs(zero + rare + wide - 1.0) < 1e-9
    assert 0.3 < zero < 0.5 and 0.3 < rare < 0.5 and 0.08 < wide < 0.25, (zero, rare, wide)
    with pytest.raises(ValueError, match="rare"):
        RatePrior(old_zero=0.7, rare=0.5)


@pytest.mark.parametrize("cause", [{"f03"}, {"f03", "f11"}])
def test_undeclared_half_flake_ablate_is_right_or_unsure(cause):
    items = [f"f{i:02d}" for i in range(16)]
    for seed in range(80):
        result = ablate(items, flaky(planted(cause), 0.5, seed), confidence=0.99, endpoint=(1, 1))
        if result.complete:
            assert set(result.culprits) == cause and result.interaction == (len(cause) > 1), seed


def test_a_factor_that_raises_a_hang_rate_is_found_under_the_rate_rule():
    items = [f"f{i:02d}" for i in range(12)]
    for seed in range(10):
        rng = random.Random(seed)

        def oracle(config):
            return F if rng.random() < (0.6 if "f05" in config else 0.05) else P
        good = [oracle(frozenset()) for _ in range(10)]
        bad = [oracle(frozenset(items)) for _ in range(10)]
        rule = RateRule(good.count(F), 10, bad.count(F), 10)
        result = ablate(items, oracle, rule=rule)
        if result.complete:
            assert result.culprits == ("f05",), seed


def test_a_set_kept_by_a_verdict_the_rate_rule_never_gave_is_no_answer():
    """--flaky, a race 10% -> 40% in one factor of eight, both endpoints measured over ten runs, as
    engine/ablate runs it. The rates are known only roughly, so the rule may leave the lone
    culprit UNRESOLVED after its most runs; minimisation then kept an innocent member beside it,
    and the set was answered at exit 0 as 1-minimal ("proof incomplete"): 7 of 15 answers over
    these seeds. Such a set is now a stopped search's answer: the members shown necessary, the
    rest not yet resolved, and why (result.UNDECIDED)."""
    from bisectk.search.tester import SearchStopped as Stopped
    items = [f"f{i}" for i in range(8)]
    right = undecided = 0
    for seed in range(100):
        rng = random.Random(seed)
        cause = rng.choice(items)

        def oracle(config):
            return F if rng.random() < (0.4 if cause in config else 0.1) else P
        good = [oracle(frozenset()) for _ in range(10)]
        bad = [oracle(frozenset(items)) for _ in range(10)]
        if F not in good or F not in bad:
            continue        # the one-sided rule, or unusable endpoints: not this rule's case
        try:
            result = ablate(items, oracle, rule=RateRule(good.count(F), 10, bad.count(F), 10), max_runs=3000,
                            measure_removal=True, more_sets=7, confidence=0.99, endpoint=(bad.count(F), 10))
        except Stopped:
            continue
        if result.complete:
            assert [s.members for s in result.sets] == [(cause,)], (seed, cause, result.sets)
            right += 1
        elif result.stop_reason.startswith("the flake rule could not tell"):     # result.UNDECIDED
            undecided += 1
            assert result.suspects, seed        # the members never shown necessary
            assert any(step.get("undecided") for step in result.advice)
    assert right >= 2 and undecided >= 4, (right, undecided)
