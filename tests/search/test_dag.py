"""Deterministic search on commit DAGs: ancestry, git's probe choice, skips, k-way multisection,
contradictions, stop and resume, each answer checked against brute-force truth (tests/search/dags.py)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search.dag import Dag, DagResult, groups
from bisectk.search.dag import testable_odds as odds_of
from bisectk.search.dag_bisect import best_probe, dag_bisect, dag_multisect, split_probes
from bisectk.search.gateway import Observation, SearchStopped, StopSearch
from bisectk.search.history import SearchOptions, search_dag
from tests.search.dags import (CRISS_CROSS, OCTOPUS, TWICE_MERGED, ancestors, batch, dags,
                               dense_best_probe, dense_split_probes, deterministic, git_bisect,
                               history, reference_odds, truth_group)

P, F, U = Outcome.PASS, Outcome.FAIL, Outcome.UNRESOLVED


def consistent(anc, culprit: int, observations) -> bool:
    return all(o.outcome is U or (culprit in anc[o.index]) == (o.outcome is F) for o in observations)


@st.composite
def problems(draw, max_n: int = 40):
    """A DAG, a culprit anywhere, and some untestable commits (the bad one stays testable)."""
    parents = draw(dags(max_n))
    n = len(parents)
    culprit = draw(st.integers(0, n - 1))
    untestable = draw(st.sets(st.integers(0, n - 1), max_size=n // 3)) - {n - 1}
    return parents, culprit, untestable


def test_ancestry_matches_the_brute_force_walk():
    rng = random.Random(5)
    for parents in (OCTOPUS, CRISS_CROSS, TWICE_MERGED, history(300, rng)):
        check_ancestry(parents, rng)


@settings(max_examples=300, deadline=None)
@given(dags(40), st.integers(0, 10**6))
def test_ancestry_of_random_dags_matches_the_brute_force_walk(parents, seed):
    check_ancestry(parents, random.Random(seed))


def check_ancestry(parents, rng):
    """Ancestor sets, descendant sets and ancestor sums (integer and float, one column or several)
    against plain set walks."""
    anc, n = ancestors(parents), len(parents)
    dag = Dag(parents)
    for i in range(n):
        assert set(np.flatnonzero(dag.ancestors(i)).tolist()) == anc[i]
        assert set(np.flatnonzero(dag.descendants([i])).tolist()) == {x for x in range(n) if i in anc[x]}
        assert dag.parents_of(i) == tuple(dict.fromkeys(parents[i]))
        assert set(dag.children_of(i)) == {j for j, ps in enumerate(parents) if i in ps}
    ints = np.array([rng.randrange(4) for _ in range(n)])
    assert dag.ancestor_sums(ints).tolist() == [sum(ints[c] for c in anc[i]) for i in range(n)]
    floats = np.array([[rng.random(), rng.random()] for _ in range(n)])
    assert np.allclose(dag.ancestor_sums(floats), [floats[sorted(anc[i])].sum(axis=0) for i in range(n)])
    some = rng.sample(range(n), min(n, 3))
    assert set(np.flatnonzero(dag.descendants(some)).tolist()) == {x for x in range(n) if anc[x] & set(some)}


@settings(max_examples=200, deadline=None)
@given(dags(40), st.data())
def test_probe_choice_is_the_dense_reference(parents, data):
    """best_probe and split_probes read the same weights and cells as the dense N x N rule they
    replaced (tests/search/dags.py keeps it), so they pick the same commits."""
    n = len(parents)
    anc = ancestors(parents)
    dag = Dag(parents)
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    eligible = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    odds = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.3, 0.9, 1.0]), min_size=n, max_size=n)))
    assert dag.weights(allowed).tolist() == [sum(allowed[c] for c in anc[i]) for i in range(n)]
    assert best_probe(dag, allowed, eligible, odds) == dense_best_probe(anc, allowed, eligible, odds)
    k = data.draw(st.integers(1, 4))
    assert split_probes(dag, allowed, eligible, odds, k) == dense_split_probes(anc, allowed, eligible, odds, k)


def test_dag_rejects_what_is_not_a_candidate_dag():
    with pytest.raises(ValueError, match="topological"):
        Dag([(), (2,), ()])
    with pytest.raises(ValueError, match="descend from every candidate"):
        Dag([(), (), (0,)])
    with pytest.raises(ValueError, match="at least one"):
        Dag([])
    assert dag_bisect(Dag([()]), deterministic([{0}], 0)).culprit == 0   # bad is the only candidate


@settings(max_examples=300, deadline=None)
@given(problems())
def test_bisect_answers_the_truth_group_and_is_consistent(problem):
    parents, culprit, untestable = problem
    anc = ancestors(parents)
    calls: list[int] = []
    result = dag_bisect(Dag(parents), deterministic(anc, culprit, untestable, calls))
    assert set(result.candidates) == truth_group(anc, culprit, untestable)
    assert result.complete and result.confidence == 1.0 and result.contradiction is None
    assert (result.culprit == culprit) == (len(result.candidates) == 1)
    assert all(consistent(anc, c, result.observations) for c in result.candidates)
    assert len(calls) == len(set(calls)) == result.runs and len(parents) - 1 not in calls
    assert set(result.skipped) == set(calls) & untestable
    if result.culprit is not None:
        assert set(result.parents) == set(parents[culprit])


@settings(max_examples=150, deadline=None)
@given(problems(), st.integers(2, 5))
def test_multisect_answers_the_truth_group(problem, jobs):
    parents, culprit, untestable = problem
    anc = ancestors(parents)
    calls: list[int] = []
    result = dag_multisect(Dag(parents), batch(deterministic(anc, culprit, untestable, calls)), jobs=jobs)
    assert set(result.candidates) == truth_group(anc, culprit, untestable) and result.complete
    assert len(calls) == len(set(calls)) == result.runs <= jobs * result.rounds
    assert result.mode == f"dag-multisect-{jobs}"


@settings(max_examples=100, deadline=None)
@given(dags(30), st.data())
def test_culprit_and_its_testable_parents_pin_it_down(parents, data):
    """Skips anywhere else never hide a culprit whose parents and itself can be tested."""
    n = len(parents)
    culprit = data.draw(st.integers(0, n - 1))
    keep = {culprit, *parents[culprit], n - 1}
    untestable = data.draw(st.sets(st.integers(0, n - 1), max_size=n)) - keep
    anc = ancestors(parents)
    assert dag_bisect(Dag(parents), deterministic(anc, culprit, untestable)).culprit == culprit


@pytest.mark.parametrize("parents", [OCTOPUS, CRISS_CROSS, TWICE_MERGED], ids=["octopus", "criss-cross", "twice-merged"])
def test_named_shapes_every_culprit(parents):
    anc = ancestors(parents)
    for culprit in range(len(parents)):
        for search in (lambda d, o: dag_bisect(d, o), lambda d, o: dag_multisect(d, batch(o), jobs=3)):
            result = search(Dag(parents), deterministic(anc, culprit))
            assert result.culprit == culprit and result.parents == parents[culprit]


def test_side_branch_culprit_merged_twice_is_the_branch_commit_not_a_merge():
    anc = ancestors(TWICE_MERGED)
    calls: list[int] = []
    result = dag_bisect(Dag(TWICE_MERGED), deterministic(anc, 2, calls=calls))
    assert result.culprit == 2 and result.parents == (1,)
    # both merges (3, 6) and the later branch commit (4) are bad; the mainline commit 0 is good
    assert [i for i in range(8) if 2 in anc[i]] == [2, 3, 4, 5, 6, 7] and 2 not in anc[0]


def test_probe_halves_by_ancestor_count_as_git_does():
    # culprits 0..5 on a chain, 6..8 on a side branch forked on the good side, 9 = merge = bad
    parents = [(), *[(i,) for i in range(5)], (), (6,), (7,), (5, 8)]
    dag = Dag(parents)
    allowed, eligible = np.ones(10, bool), np.ones(10, bool)
    w = dag.weights(allowed)
    assert w.tolist() == [1, 2, 3, 4, 5, 6, 1, 2, 3, 10]
    assert best_probe(dag, allowed, eligible, np.ones(10)) == 4      # 5 of 10 ancestors: an exact half
    # after commit 5 failed, commit 8 (off the allowed set) can still not split; 2 halves 0..5
    state_allowed = dag.ancestors(5)
    assert best_probe(dag, state_allowed, eligible, np.ones(10)) == 2


def test_a_probe_outside_the_allowed_culprits_can_be_the_one_that_splits():
    # 0 and 1 are merged at 2; 3 merges 1 with a good-side commit 4... order: 0, 1, 2=(0,1),
    # 3=(), 4=(1,3), 5=(2,4). If 2 failed, culprits {0, 1, 2}; 1 is untestable; 4 (not an
    # ancestor of 2) fails iff the culprit is 1.
    parents = [(), (), (0, 1), (), (1, 3), (2, 4)]
    anc = ancestors(parents)
    result = dag_bisect(Dag(parents), deterministic(anc, 1, untestable={1}),
                        observations=[(2, F), (0, P)])
    assert result.culprit == 1 and 4 in [o.index for o in result.observations]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 100, 1000])
def test_a_chain_takes_log2_runs_as_plain_bisection_does(n):
    dag, chain = Dag.chain(n), [set(range(i + 1)) for i in range(n)]
    for culprit in range(0, n, max(1, n // 40)):
        calls: list[int] = []
        result = dag_bisect(dag, deterministic(chain, culprit, calls=calls))
        assert result.culprit == culprit and result.parents == ((culprit - 1,) if culprit else ())
        assert len(calls) == len(set(calls)) == result.runs <= math.ceil(math.log2(n))


@pytest.mark.parametrize("jobs", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("n", [2, 3, 10, 100, 1024])
def test_multisect_rounds_on_a_chain_within_log_k_plus_1(n, jobs):
    dag, chain = Dag.chain(n), [set(range(i + 1)) for i in range(n)]
    bound = math.ceil(math.log(n) / math.log(jobs + 1) - 1e-9) + 1
    for culprit in range(0, n, max(1, n // 37)):
        result = dag_multisect(dag, batch(deterministic(chain, culprit)), jobs=jobs)
        assert result.culprit == culprit and result.rounds <= bound


def test_multisect_rounds_on_branchy_histories():
    rng = random.Random(11)
    for _ in range(5):
        parents = history(1000, rng)
        anc, culprit = ancestors(parents), rng.randrange(1000)
        result = dag_multisect(Dag(parents), batch(deterministic(anc, culprit)), jobs=4)
        assert result.culprit == culprit and result.rounds <= math.ceil(math.log(1000, 5)) + 2


def test_split_probes_cut_a_chain_into_equal_parts():
    dag = Dag.chain(100)
    probes = split_probes(dag, np.ones(100, bool), np.ones(100, bool), np.ones(100), 4)
    assert probes == [19, 39, 59, 79]
    ones = np.ones(5, bool)
    assert split_probes(Dag.chain(5), ones, ones, np.ones(5), 8) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        split_probes(dag, np.ones(100, bool), np.ones(100, bool), np.ones(100), 0)


def test_skips_steer_probes_away_from_an_untestable_cluster():
    dag, chain = Dag.chain(1024), [set(range(i + 1)) for i in range(1024)]
    cluster = set(range(500, 530))
    for culprit in (3, 300, 499, 531, 900):
        calls: list[int] = []
        result = dag_bisect(dag, deterministic(chain, culprit, cluster, calls))
        assert result.culprit == culprit and result.runs <= 10 + 6
        first_skip = next((k for k, i in enumerate(calls) if i in cluster), None)
        if first_skip is not None and first_skip + 1 < len(calls):
            assert abs(calls[first_skip + 1] - calls[first_skip]) >= 2


@pytest.mark.parametrize("shape", ["chain", "dag"])
def test_untestable_commits_around_the_culprit_cost_no_more_runs_than_git(shape):
    """A broken stretch around the culprit (up to 4 commits on each side, the culprit itself
    untestable in half of the cases): the search runs no more often than git bisect's own rule
    (skip_away) on average, and answers the truth group every time."""
    ours, gits = [], []
    for seed in range(120):
        rng = random.Random(seed)
        parents = [()] + [(i - 1,) for i in range(1, rng.choice((16, 32, 64, 128)))] if shape == "chain" \
            else history(rng.randint(20, 80), rng)
        n, anc = len(parents), ancestors(parents)
        culprit = rng.randrange(n)
        near, radius = [j for j in range(n) if j in anc[culprit] or culprit in anc[j]], rng.randint(1, 4)
        untestable = {j for j in near if abs(j - culprit) <= radius} - {n - 1}
        if rng.random() < 0.5:
            untestable -= {culprit, *parents[culprit]}
        result = dag_bisect(Dag(parents), deterministic(anc, culprit, untestable))
        assert set(result.candidates) == truth_group(anc, culprit, untestable)
        ours.append(result.new_runs)
        oid = {i: rng.random() for i in range(n)}
        gits.append(git_bisect(parents, anc, deterministic(anc, culprit, untestable), oid)[0])
    assert sum(ours) <= sum(gits), (sum(ours) / len(ours), sum(gits) / len(gits))


def test_groups_merge_culprits_only_untestable_commits_separate():
    dag = Dag(TWICE_MERGED)
    assert len(set(groups(dag, []).tolist())) == 8
    labels = groups(dag, [2, 4])          # s2 and s3 untestable: s2 looks like... nothing else
    anc = ancestors(TWICE_MERGED)
    for c in range(8):
        assert {d for d in range(8) if labels[d] == labels[c]} == truth_group(anc, c, {2, 4})


@settings(max_examples=200, deadline=None)
@given(dags(30), st.data())
def test_groups_of_random_skips_are_the_truth_groups(parents, data):
    n = len(parents)
    anc = ancestors(parents)
    skipped = data.draw(st.sets(st.integers(0, n - 1), max_size=n))
    labels = groups(Dag(parents), skipped)
    for c in range(n):
        assert {d for d in range(n) if labels[d] == labels[c]} == truth_group(anc, c, skipped)


@settings(max_examples=150, deadline=None)
@given(dags(30), st.data())
def test_testable_odds_match_the_breadth_first_reference(parents, data):
    n = len(parents)
    assume(n >= 2)
    skipped = data.draw(st.sets(st.integers(0, n - 2), min_size=1, max_size=n // 2 + 1))
    tested = np.zeros(n, dtype=bool)
    tested[list(data.draw(st.sets(st.integers(0, n - 1), max_size=n // 2)) - skipped)] = True
    assert np.allclose(odds_of(Dag(parents), skipped, tested),
                       reference_odds(parents, skipped, tested), rtol=1e-12, atol=0)


@pytest.mark.parametrize("observations,names", [
    ([(3, F), (5, P)], (3, 5)),           # a good descendant of a bad commit
    ([(7, P)], (7,)),                     # the bad commit passed
    ([(1, F), (2, F)], (1, 2)),           # two failing branches with no common candidate
    ([(4, F), (4, P)], (4,)),             # flaky
])
def test_contradictions_are_reported_instead_of_an_answer(observations, names):
    parents = [(), (), (), (0,), (3,), (4,), (1, 2), (5, 6)]
    calls: list[int] = []
    result = dag_bisect(Dag(parents), deterministic(ancestors(parents), 0, calls=calls),
                        observations=observations)
    assert result.culprit is None and result.candidates == () and not result.complete
    assert result.contradiction and result.conflict == names and calls == []
    assert result.confidence == 0.0 and result.to_dict()["contradiction"] == result.contradiction


def test_a_contradiction_within_a_round_ends_the_search():
    """A sequential search never asks a commit whose outcome is implied, so only logs and the
    probes of one round can contradict each other: here 39 fails and its descendant 59 passes."""
    chain = [set(range(i + 1)) for i in range(100)]
    truth = deterministic(chain, 60)
    lying = batch(lambda i: F if i == 39 else truth(i))
    result = dag_multisect(Dag.chain(100), lying, jobs=4)
    assert [o.index for o in result.observations] == [19, 39, 59, 79]
    assert result.culprit is None and not result.complete and result.conflict == (39, 59)
    assert "39 failed but its descendant #59 passed" in result.contradiction


def test_resume_reruns_nothing_and_reaches_the_same_answer():
    parents = history(500, random.Random(3))
    anc, calls = ancestors(parents), []
    oracle = deterministic(anc, 321 % len(parents), calls=calls)

    def stopping(i):
        if len(calls) == 4:
            raise StopSearch
        return oracle(i)
    with pytest.raises(SearchStopped) as info:
        dag_bisect(Dag(parents), stopping)
    partial = info.value.result
    assert isinstance(partial, DagResult) and not partial.complete and partial.runs == 4
    assert info.value.reason == "stop" and not info.value.interrupted
    assert all(consistent(anc, c, partial.observations) for c in partial.candidates)
    done = list(calls)
    resumed = dag_bisect(Dag(parents), oracle, observations=partial.observations)
    full = dag_bisect(Dag(parents), deterministic(anc, 321 % len(parents)))
    assert not set(calls[len(done):]) & set(done)
    assert resumed.culprit == full.culprit == 321 % len(parents)
    assert resumed.observations == full.observations and resumed.new_runs == full.runs - 4


def test_interrupt_and_budget_raise_search_stopped_with_the_best_so_far():
    dag, chain = Dag.chain(256), [set(range(i + 1)) for i in range(256)]
    seen: list[Observation] = []

    def callback(obs):
        seen.append(obs)
        if len(seen) == 3:
            raise KeyboardInterrupt
    with pytest.raises(SearchStopped) as info:
        dag_bisect(dag, deterministic(chain, 77), on_observation=callback)
    assert info.value.interrupted and info.value.reason == "interrupt"
    assert list(info.value.result.observations) == seen and len(info.value.result.candidates) == 32
    with pytest.raises(SearchStopped) as info:
        dag_multisect(dag, batch(deterministic(chain, 77)), jobs=3, max_runs=5)
    best = info.value.result
    assert info.value.reason == "budget" and best.new_runs == 5 and 77 in best.candidates
    assert len(best.candidates) < 256 // 4 and not best.complete


def test_the_budget_counts_the_runs_the_oracle_reports_beyond_one_a_probe():
    """An oracle that runs each probe three times (a failure other than the one hunted, re-run
    before it is left unresolved) reports the extra runs: a budget of 6 runs is 2 probes, not 6,
    sequential or k-way, deterministic or flake-aware."""
    dag, chain = Dag.chain(256), [set(range(i + 1)) for i in range(256)]
    for flaky, jobs in ((False, 1), (False, 2), (True, 1), (True, 2)):
        more = [0]
        truth = deterministic(chain, 77)

        def thrice(i):
            more[0] += 2
            return truth(i)
        with pytest.raises(SearchStopped) as info:
            search_dag(dag, None if jobs > 1 else thrice, batch_oracle=batch(thrice) if jobs > 1 else None,
                       options=SearchOptions(flaky=flaky, jobs=jobs, max_runs=6, more_runs=lambda: more[0]))
        assert info.value.reason == "budget" and info.value.result.new_runs + more[0] <= 6 + 2 * (jobs - 1), \
            (flaky, jobs, info.value.result.new_runs, more[0])


def test_search_dag_dispatches_and_result_serialises():
    parents = history(300, random.Random(4))
    anc = ancestors(parents)
    oracle = deterministic(anc, 123)
    modes = {}
    for opts in (SearchOptions(), SearchOptions(jobs=3), SearchOptions(flaky=True),
                 SearchOptions(flaky=True, jobs=2)):
        result = search_dag(parents, oracle, options=opts)
        assert result.culprit == 123, opts
        modes[result.mode] = result
    assert set(modes) == {"dag-binary", "dag-multisect-3", "dag-bayes", "dag-bayes-multisect-2"}
    assert search_dag(Dag(parents), batch_oracle=batch(oracle)).mode == "dag-multisect-1"
    doc = modes["dag-binary"].to_dict()
    assert doc["culprit"] == 123 and doc["candidates"] == [123] and doc["found"]
    assert [p["index"] for p in doc["parents"]] == sorted(parents[123])
    assert all(set(p) == {"index", "pass", "fail", "unresolved"} for p in doc["parents"])
    with pytest.raises(ValueError):
        search_dag(parents)


@settings(max_examples=60, deadline=None)
@given(st.integers(20, 250), st.integers(0, 10**6), st.floats(0.0, 0.25))
def test_branchy_histories_with_skip_clusters(n, seed, skip_share):
    """Histories with branches merged twice, back-merges and octopus merges; untestable commits in
    runs along parent links; the culprit anywhere."""
    rng = random.Random(seed)
    parents = history(n, rng)
    anc, culprit = ancestors(parents), rng.randrange(n)
    untestable: set[int] = set()
    while len(untestable) < skip_share * n:
        i = rng.randrange(n - 1)
        for _ in range(rng.randint(1, 6)):
            untestable.add(i)
            if not parents[i]:
                break
            i = rng.choice(parents[i])
    untestable.discard(n - 1)
    for search in (lambda d, o: dag_bisect(d, o), lambda d, o: dag_multisect(d, batch(o), jobs=4)):
        result = search(Dag(parents), deterministic(anc, culprit, untestable))
        assert set(result.candidates) == truth_group(anc, culprit, untestable) and result.complete


def test_multisect_rounds_follow_the_workers_alive():
    """K = the workers alive: a round sends min(jobs, width()) probes, and the search still ends
    on the culprit when the width shrinks (an actor lost) and grows back."""
    dag, chain = Dag.chain(300), [set(range(i + 1)) for i in range(300)]
    widths = iter([4, 2, 2, 1, 4, 4, 4, 4, 4, 4, 4, 4])
    sizes: list[int] = []
    inner = batch(deterministic(chain, 201))

    def sized(points):
        sizes.append(len(points))
        return inner(points)
    result = dag_multisect(dag, sized, jobs=3, width=lambda: next(widths))
    assert result.culprit == 201 and result.complete
    assert sizes[:4] == [3, 2, 2, 1]          # never more than --jobs, never more than alive
    assert all(1 <= s <= 3 for s in sizes)


@settings(max_examples=40, deadline=None)
@given(problem=problems(max_n=30), k=st.integers(1, 4))
def test_first_round_is_the_round_a_multisection_sends_first_and_its_outcomes_give_the_same_answer(problem, k):
    """dag_bisect.first_round: the probes a k-way search sends after the bad endpoint's failure
    (what `bisect --jobs` starts beside the endpoints' runs); a search handed their outcomes as
    observations answers as one that ran them itself."""
    from bisectk.search.dag_bisect import first_round
    parents, culprit, untestable = problem
    dag = Dag(parents)
    anc = ancestors(parents)
    asked: list[list[int]] = []

    def oracle(points):
        asked.append(list(points))
        return [U if i in untestable else F if culprit in anc[i] else P for i in points]
    seed = [Observation(len(parents) - 1, F)]
    plain = dag_multisect(dag, oracle, jobs=k, observations=seed)
    probes = first_round(dag, seed, k)
    assert probes == (asked[0] if asked else [])
    given_first = seed + [Observation(i, o) for i, o in zip(probes, oracle(probes))]
    again = dag_multisect(dag, oracle, jobs=k, observations=given_first)
    assert (again.culprit, again.candidates) == (plain.culprit, plain.candidates)
