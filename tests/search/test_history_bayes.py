"""Flake-aware history search: the posterior, its information, replay, and noisy oracles."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bisectk.outcome import Outcome
from bisectk.search.bayes import FirstBadPosterior, bayes_bisect
from bisectk.search.history import InconsistentObservations, Observation, SearchStopped, StopSearch
from bisectk.search.multisect import bayes_multisect

P, F, U = Outcome.PASS, Outcome.FAIL, Outcome.UNRESOLVED


def flaky(culprit: int, q: float, rng: random.Random, untestable=frozenset()):
    """Bad from `culprit` on; a bad commit fails with probability q, a good one never."""
    def oracle(i: int) -> Outcome:
        if i in untestable:
            return U
        return F if i >= culprit and rng.random() < q else P
    return oracle


def endpoints(n: int, oracle) -> list[Observation]:
    """What the caller's verification hands over: good once, bad until it fails."""
    log = [Observation(0, P)]
    while True:
        log.append(Observation(n - 1, oracle(n - 1)))
        if log[-1].outcome is F:
            return log


def test_prior_is_uniform_over_possible_first_bad_commits():
    m = FirstBadPosterior(10).marginal()
    assert m[0] == 0 and np.allclose(m[1:], 1 / 9)


def test_a_failure_bounds_the_first_bad_commit_and_passes_only_weigh():
    model = FirstBadPosterior.from_observations(100, [(40, F), (20, P), (20, P)])
    m = model.marginal()
    assert m[41:].sum() == 0 and m[:21].sum() < m[21:41].sum()
    assert 0 < model.fail_prob() <= 1
    with pytest.raises(InconsistentObservations):
        FirstBadPosterior.from_observations(10, [(0, F)]).marginal()
    with pytest.raises(InconsistentObservations):
        FirstBadPosterior.from_observations(10, [(9, P)], fail_prob=1.0).marginal()


def test_known_q_of_one_is_plain_bisection():
    model = FirstBadPosterior.from_observations(8, [(4, P), (6, F), (5, F)], fail_prob=1.0)
    assert model.best_group() == (5, 5, 1.0)


def test_information_of_single_and_joint_probes():
    model = FirstBadPosterior.from_observations(200, [(199, F), (199, P), (60, P)])
    gain = model.information_gain()
    for i in (10, 100, 150, 198):
        assert model.batch_information([i]) == pytest.approx(gain[i], abs=1e-9)
    pair = model.batch_information([100, 150])
    assert max(gain[100], gain[150]) < pair < gain[100] + gain[150]
    assert model.batch_information([100, 100]) < 2 * gain[100]     # a repeat adds less
    batch = model.next_batch(4)
    assert len(batch) == 4 and model.batch_information(batch) >= pair


@pytest.mark.parametrize("q,seeds,min_right", [(0.7, 30, 29), (0.3, 30, 28)])
def test_flaky_search_reaches_confidence_and_is_right(q, seeds, min_right):
    n, right = 128, 0
    for seed in range(seeds):
        rng = random.Random(seed)
        culprit = rng.randrange(1, n)
        oracle = flaky(culprit, q, rng)
        result = bayes_bisect(n, oracle, observations=endpoints(n, oracle))
        assert result.complete and result.confidence >= 0.99 and result.mode == "bayes"
        assert result.posterior[0][0] == result.first_bad and result.fail_prob is not None
        right += result.first_bad == culprit
    assert right >= min_right


def test_deterministic_failures_in_flaky_mode_cost_little():
    n = 256
    for culprit in (1, 77, 128, 255):
        result = bayes_bisect(n, flaky(culprit, 1.0, random.Random(0)), observations=[(n - 1, F)])
        assert result.first_bad == culprit and result.runs <= 4 * 8   # q is learnt, not assumed


def test_replay_rebuilds_the_same_posterior_and_resume_reruns_nothing():
    n, rng = 300, random.Random(7)
    oracle = flaky(123, 0.5, rng)
    with pytest.raises(SearchStopped) as info:
        def stopping(i, calls=[]):     # noqa: B006 - a counter local to this test
            calls.append(i)
            if len(calls) > 15:
                raise StopSearch
            return oracle(i)
        bayes_bisect(n, stopping, observations=[(n - 1, F)])
    partial = info.value.result
    assert not partial.complete and partial.runs == 16 and partial.posterior
    resumed = bayes_bisect(n, oracle, observations=partial.observations)
    assert resumed.observations[:16] == partial.observations
    assert resumed.new_runs == resumed.runs - 16 and resumed.first_bad == 123
    replay = FirstBadPosterior.from_observations(n, [o.to_json() for o in resumed.observations])
    assert replay.top(5) == [(i, pytest.approx(p, abs=1e-6)) for i, p in resumed.posterior]
    assert replay.best_group()[2] == pytest.approx(resumed.confidence)


def test_untestable_neighbours_make_an_ambiguous_group():
    n, rng = 64, random.Random(3)
    result = bayes_bisect(n, flaky(31, 0.8, rng, frozenset({30, 31, 32})), observations=[(n - 1, F)])
    assert result.candidates == (30, 31, 32, 33) and result.ambiguous
    assert (result.last_good, result.first_bad) == (29, 33) and result.confidence >= 0.99
    assert {30, 31, 32} >= set(result.skipped) and result.skipped


def test_budget_ends_an_unfinished_search():
    result = bayes_bisect(512, flaky(200, 0.2, random.Random(1)), observations=[(511, F)], max_runs=5)
    assert result.new_runs == 5 and not result.complete and result.confidence < 0.99


def test_flaky_multisection_runs_batches():
    n, right = 128, 0
    for seed in range(6):
        rng = random.Random(seed)
        culprit = rng.randrange(1, n)
        oracle = flaky(culprit, 0.5, rng)
        result = bayes_multisect(n, lambda idx: [oracle(i) for i in idx], jobs=4,
                                 observations=endpoints(n, oracle))
        assert result.confidence >= 0.99 and result.rounds * 4 >= result.new_runs > result.rounds
        right += result.first_bad == culprit
    assert right >= 5
