"""Flake-aware search on commit DAGs: the posterior and its information against brute force,
noisy oracles on generated histories, skips, replay, budget and contradictions."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search.dag import Dag
from bisectk.search.dag_bayes import MAX_JOINT, CulpritPosterior, dag_bayes_bisect, dag_bayes_multisect
from bisectk.search.gateway import InconsistentObservations, Observation, SearchStopped, StopSearch
from tests.search.dags import (CRISS_CROSS, OCTOPUS, TWICE_MERGED, ancestors, batch, dags,
                               deterministic, flaky, history, truth_group)

P, F, U = Outcome.PASS, Outcome.FAIL, Outcome.UNRESOLVED


def brute_joint(parents, observations, grid=100, prior=(1.0, 2.0)) -> np.ndarray:
    """p(c, q | obs) by multiplying the likelihood of every observation, with plain loops."""
    anc = ancestors(parents)
    qs = (np.arange(grid) + 0.5) / grid
    out = np.zeros((len(parents), grid))
    for c in range(len(parents)):
        for k, q in enumerate(qs):
            like = q ** (prior[0] - 1) * (1 - q) ** (prior[1] - 1)
            for i, outcome in observations:
                bad = c in anc[i]
                like *= (q if bad else 0.0) if outcome is F else (1 - q if bad else 1.0) if outcome is P else 1.0
            out[c, k] = like
    return out / out.sum()


def brute_information(parents, joint, probes, qs) -> float:
    """I(C; Y_S) in bits by enumerating every outcome pattern."""
    anc = ancestors(parents)
    pc = joint.sum(axis=1)
    p_cy = {}
    for y in itertools.product((0, 1), repeat=len(probes)):
        for c in range(len(parents)):
            lik = np.ones_like(qs)
            for t, j in enumerate(probes):
                bad = c in anc[j]
                lik = lik * ((qs if bad else 0.0) if y[t] else (1 - qs if bad else 1.0))
            p_cy[(c, y)] = float(joint[c] @ lik)
    info = 0.0
    for y in itertools.product((0, 1), repeat=len(probes)):
        py = sum(p_cy[(c, y)] for c in range(len(parents)))
        for c in range(len(parents)):
            v = p_cy[(c, y)]
            if v > 0:
                info += v * math.log2(v / (pc[c] * py))
    return info


@st.composite
def observed(draw):
    """A DAG and observations that some culprit explains (q < 1: passes anywhere are possible)."""
    parents = draw(dags(12))
    anc = ancestors(parents)
    culprit = draw(st.integers(0, len(parents) - 1))
    obs = []
    for _ in range(draw(st.integers(0, 8))):
        i = draw(st.integers(0, len(parents) - 1))
        fail = culprit in anc[i] and draw(st.booleans())
        obs.append((i, F if fail else draw(st.sampled_from([P, P, U]))))
    return parents, obs


@settings(max_examples=60, deadline=None)
@given(observed())
def test_posterior_matches_brute_force(problem):
    parents, obs = problem
    model = CulpritPosterior.from_observations(Dag(parents), obs)
    assert np.allclose(model.joint, brute_joint(parents, obs), atol=1e-9)
    anc = ancestors(parents)
    failed = [i for i, o in obs if o is F]
    assert all(all(c in anc[i] for i in failed) for c in np.flatnonzero(model.marginal()))


@settings(max_examples=25, deadline=None)
@given(observed(), st.data())
def test_information_matches_brute_force(problem, data):
    parents, obs = problem
    dag = Dag(parents)
    model = CulpritPosterior.from_observations(dag, obs, grid=20)
    gain = model.information_gain()
    for i in range(dag.n):
        assert gain[i] == pytest.approx(brute_information(parents, model.joint, [i], model.q), abs=1e-9)
        assert model.batch_information([i]) == pytest.approx(gain[i], abs=1e-9)
    probes = data.draw(st.lists(st.integers(0, dag.n - 1), min_size=2, max_size=3))
    assert model.batch_information(probes) == pytest.approx(
        brute_information(parents, model.joint, probes, model.q), abs=1e-9)


def test_on_a_chain_it_is_the_first_bad_posterior():
    """On a chain (`--first-parent`) the culprit is the first bad commit: nothing at or after the
    first failure can be it, passes before it only weigh, as brute force over the chain says."""
    n, rng = 60, random.Random(1)
    obs = [(rng.randrange(n), rng.choice([P, P, F])) for _ in range(12)]
    obs = [(i, o) for i, o in obs if o is P or i >= 40] + [(45, F), (30, P)]   # 40 is the culprit
    model = CulpritPosterior.from_observations(Dag.chain(n), obs)
    parents = [()] + [(i - 1,) for i in range(1, n)]
    brute = brute_joint(parents, obs)
    assert np.allclose(model.joint, brute, atol=1e-9)
    first_fail = min(i for i, o in obs if o is F)
    assert model.marginal()[first_fail + 1:].sum() == 0 and model.marginal()[first_fail] > 0
    qs = (np.arange(brute.shape[1]) + 0.5) / brute.shape[1]
    assert model.fail_prob() == pytest.approx(float(brute.sum(axis=0) @ qs))


def test_deterministic_failures_in_flaky_mode_cost_little():
    n, chain = 255, [set(range(i + 1)) for i in range(255)]
    for culprit in (0, 76, 127, 254):
        result = dag_bayes_bisect(Dag.chain(n), deterministic(chain, culprit), observations=[(n - 1, F)])
        assert result.culprit == culprit and result.runs <= 4 * 8   # q is learnt, not assumed


@settings(max_examples=60, deadline=None)
@given(dags(30), st.data())
def test_deterministic_oracle_in_flaky_mode_finds_the_truth_group(parents, data):
    n = len(parents)
    culprit = data.draw(st.integers(0, n - 1))
    untestable = data.draw(st.sets(st.integers(0, n - 1), max_size=n // 4)) - {n - 1}
    anc = ancestors(parents)
    result = dag_bayes_bisect(Dag(parents), deterministic(anc, culprit, untestable),
                              observations=[(n - 1, F)])
    assert culprit in result.candidates and result.confidence >= 0.99 and result.complete
    assert set(result.candidates) <= truth_group(anc, culprit, untestable)
    assert result.posterior and result.posterior[0][1] >= result.posterior[-1][1]


@pytest.mark.parametrize("parents", [OCTOPUS, CRISS_CROSS, TWICE_MERGED], ids=["octopus", "criss-cross", "twice-merged"])
def test_named_shapes_flaky(parents):
    anc = ancestors(parents)
    n = len(parents)
    for culprit in range(n):
        for seed in range(3):
            rng = random.Random(seed)
            oracle = flaky(anc, culprit, 0.5, rng)
            result = dag_bayes_bisect(Dag(parents), oracle, observations=[(n - 1, F)])
            assert result.culprit == culprit and result.parents == parents[culprit]


@pytest.mark.parametrize("q,seeds,min_right", [(0.5, 30, 28), (0.3, 20, 18)])
def test_flaky_search_on_branchy_histories_is_right(q, seeds, min_right):
    right = 0
    for seed in range(seeds):
        rng = random.Random(seed)
        parents = history(300, rng)
        anc, culprit = ancestors(parents), rng.randrange(300)
        result = dag_bayes_bisect(Dag(parents), flaky(anc, culprit, q, rng), observations=[(299, F)])
        assert result.complete and result.confidence >= 0.99 and result.mode == "dag-bayes"
        assert result.fail_prob is not None and 0 < result.fail_prob <= 1
        right += result.culprit == culprit
    assert right >= min_right


def test_flaky_multisection_runs_batches_and_is_right():
    right = 0
    for seed in range(8):
        rng = random.Random(seed)
        parents = history(200, rng)
        anc, culprit = ancestors(parents), rng.randrange(200)
        result = dag_bayes_multisect(Dag(parents), batch(flaky(anc, culprit, 0.5, rng)), jobs=4,
                                     observations=[(199, F)])
        assert result.confidence >= 0.99 and result.rounds * 4 >= result.new_runs > result.rounds
        assert result.mode == "dag-bayes-multisect-4"
        right += result.culprit == culprit
    assert right >= 7


def test_untestable_commits_leave_an_ambiguous_group():
    # chain 0..9 with 4 and 5 untestable: culprits 4, 5 and 6 look alike
    chain = [set(range(i + 1)) for i in range(10)]
    result = dag_bayes_bisect(Dag.chain(10), flaky(chain, 5, 0.8, random.Random(2), {4, 5}),
                              observations=[(9, F)])
    assert result.candidates == (4, 5, 6) and result.culprit is None and result.ambiguous
    assert set(result.skipped) <= {4, 5} and result.confidence >= 0.99
    assert result.to_dict()["culprit"] is None and result.to_dict()["candidates"] == [4, 5, 6]


def test_replay_rebuilds_the_posterior_and_resume_reruns_nothing():
    parents = history(300, random.Random(7))
    anc, rng = ancestors(parents), random.Random(8)
    oracle = flaky(anc, 150, 0.5, rng)
    calls: list[int] = []

    def stopping(i):
        calls.append(i)
        if len(calls) > 12:
            raise StopSearch
        return oracle(i)
    with pytest.raises(SearchStopped) as info:
        dag_bayes_bisect(Dag(parents), stopping, observations=[(299, F)])
    partial = info.value.result
    assert not partial.complete and partial.runs == 13 and partial.posterior
    assert info.value.reason == "stop"
    resumed = dag_bayes_bisect(Dag(parents), oracle, observations=partial.observations)
    assert resumed.observations[:13] == partial.observations
    assert resumed.new_runs == resumed.runs - 13 and resumed.culprit == 150
    replay = CulpritPosterior.from_observations(Dag(parents), [o.to_json() for o in resumed.observations])
    assert replay.top(5) == [(i, pytest.approx(p, abs=1e-6)) for i, p in resumed.posterior]
    assert replay.best_group()[1] == pytest.approx(resumed.confidence)


def test_budget_raises_search_stopped():
    parents = history(400, random.Random(1))
    anc = ancestors(parents)
    with pytest.raises(SearchStopped) as info:
        dag_bayes_bisect(Dag(parents), flaky(anc, 200, 0.2, random.Random(1)),
                         observations=[(399, F)], max_runs=5)
    assert info.value.reason == "budget" and not info.value.interrupted
    best = info.value.result
    assert best.new_runs == 5 and not best.complete and best.confidence < 0.99


def test_contradictions_in_flaky_mode():
    parents = [(), (), (), (0,), (3,), (4,), (1, 2), (5, 6)]
    dag = Dag(parents)
    calls: list[int] = []
    result = dag_bayes_bisect(dag, deterministic(ancestors(parents), 0, calls=calls),
                              observations=[(1, F), (2, F)])
    assert result.culprit is None and result.conflict == (1, 2) and calls == []
    # with q known to be 1 a pass below a failure is impossible, as in the deterministic search
    result = dag_bayes_bisect(dag, deterministic(ancestors(parents), 0), fail_prob=1.0,
                              observations=[(3, F), (5, P)])
    assert result.contradiction and result.conflict == (3, 5) and not result.complete
    # a commit that passed and failed is flaky evidence, not the contradiction
    result = dag_bayes_bisect(dag, deterministic(ancestors(parents), 0),
                              observations=[(4, P), (4, F), (1, F), (2, F)])
    assert result.conflict == (1, 2) and "share no candidate ancestor" in result.contradiction
    with pytest.raises(InconsistentObservations):
        CulpritPosterior.from_observations(dag, [(1, F), (2, F)]).marginal()
    # with q unknown the same pass is only evidence
    result = dag_bayes_bisect(dag, flaky(ancestors(parents), 0, 0.5, random.Random(0)),
                              observations=[(3, F), (5, P)])
    assert result.contradiction is None and result.culprit in (0, 3)


def test_on_observation_sees_every_run_and_can_interrupt():
    parents = history(100, random.Random(3))
    anc = ancestors(parents)
    seen: list[Observation] = []

    def callback(obs):
        seen.append(obs)
        if len(seen) == 6:
            raise KeyboardInterrupt
    with pytest.raises(SearchStopped) as info:
        dag_bayes_multisect(Dag(parents), batch(flaky(anc, 40, 0.5, random.Random(4))), jobs=3,
                            observations=[(99, F)], on_observation=callback)
    assert info.value.interrupted and list(info.value.result.observations[1:]) == seen


def test_more_workers_than_jointly_weighed_probes_repeat_the_best():
    parents = history(500, random.Random(5))
    model = CulpritPosterior.from_observations(Dag(parents), [(499, F), (100, P)])
    batch14 = model.next_batch(14)
    assert len(batch14) == 14 and len(set(batch14)) <= MAX_JOINT
    assert set(batch14) == set(model.next_batch(MAX_JOINT))
    with pytest.raises(ValueError, match="at most"):
        model.batch_information(list(range(MAX_JOINT + 1)))


@settings(max_examples=40, deadline=None)
@given(dags(25), st.data(), st.floats(0.2, 1.0), st.integers(0, 10**6))
def test_flaky_answers_never_contradict_a_failure(parents, data, q, seed):
    """Whatever the luck, every candidate of the answer (or of the best answer when the budget
    runs out: a wide octopus at low q can need more) is an ancestor of every failing run, and a
    complete answer holds the confidence asked for."""
    n = len(parents)
    culprit = data.draw(st.integers(0, n - 1))
    anc = ancestors(parents)
    rng = random.Random(seed)
    try:
        result = dag_bayes_bisect(Dag(parents), flaky(anc, culprit, q, rng),
                                  observations=[(n - 1, F)], max_runs=300)
    except SearchStopped as stop:
        assert stop.reason == "budget" and not stop.result.complete
        result = stop.result
    failed = {o.index for o in result.observations if o.outcome is F}
    assert result.candidates and all(c in anc[i] for c in result.candidates for i in failed)
    assert culprit in {c for c in range(n) if all(c in anc[i] for i in failed)}
    assert not result.complete or result.confidence >= 0.99
