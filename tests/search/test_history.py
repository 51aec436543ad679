"""Deterministic history search, the gateway, and k-way multisection, with in-memory oracles."""

from __future__ import annotations

import math

import pytest

from bisectk.outcome import Outcome
from bisectk.search.history import (Gateway, Observation, SearchOptions, SearchStopped, StopSearch,
                                    bisect, candidate_groups, search_history, skip_away)
from bisectk.search.multisect import multisect, multisect_probes

P, F, U = Outcome.PASS, Outcome.FAIL, Outcome.UNRESOLVED


def history(culprit: int, untestable=frozenset(), calls: list[int] | None = None):
    """A deterministic oracle: bad from `culprit` on, UNRESOLVED on `untestable`."""
    def oracle(i: int) -> Outcome:
        if calls is not None:
            calls.append(i)
        if i in untestable:
            return U
        return F if i >= culprit else P
    return oracle


def batch(oracle):
    return lambda idx: [oracle(i) for i in idx]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 17, 100])
def test_bisect_finds_every_culprit_in_log2_runs(n):
    for culprit in range(1, n):
        calls: list[int] = []
        result = bisect(n, history(culprit, calls=calls))
        assert (result.first_bad, result.last_good) == (culprit, culprit - 1)
        assert result.candidates == (culprit,) and not result.ambiguous and result.complete
        assert result.confidence == 1.0
        assert len(calls) == len(set(calls)) == result.runs <= math.ceil(math.log2(n - 1))


def test_bisect_avoids_a_skip_cluster_and_finds_culprits_around_it():
    cluster = frozenset(range(490, 512))
    for culprit in (3, 300, 489, 513, 900, 1023):
        result = bisect(1024, history(culprit, cluster))
        assert result.first_bad == culprit and result.candidates == (culprit,)
        assert set(result.skipped) <= cluster
        assert result.runs <= 10 + 6     # log2(1023) probes plus a few skips at the cluster


def test_skip_away_never_probes_next_to_a_fresh_skip():
    calls: list[int] = []
    bisect(1024, history(300, frozenset(range(505, 520)), calls=calls))
    assert calls[0] == (0 + 1023) // 2
    skipped = [i for i in calls if 505 <= i < 520]
    assert skipped, "the midpoint lies in the cluster"
    after = calls[calls.index(skipped[0]) + 1]
    assert abs(after - skipped[0]) >= 2


def test_skip_away_is_deterministic_and_seeded():
    assert skip_away(0, 100, [50], seed=1) == skip_away(0, 100, [50], seed=1)
    picks = {skip_away(0, 100, [50], seed=s) for s in range(20)}
    assert len(picks) == 2 and sum(picks) == 100    # symmetric: the seed picks the side
    assert all(2 <= abs(p - 50) <= 25 for p in picks)   # away from the skip, not past a quarter
    assert skip_away(0, 100, [], seed=3) == 50
    assert skip_away(4, 8, [5, 6, 7]) is None


def test_culprit_right_after_a_skip_cluster_is_ambiguous_with_it():
    result = bisect(1024, history(512, frozenset(range(490, 512))))
    assert result.candidates == tuple(range(490, 513)) and result.complete


def test_culprit_inside_a_skip_cluster_reports_the_remaining_range():
    cluster = frozenset(range(90, 110))
    result = bisect(200, history(100, cluster))
    assert result.ambiguous and result.complete
    assert (result.last_good, result.first_bad) == (89, 110)
    assert result.candidates == tuple(range(90, 111))
    assert 100 in result.candidates and set(result.skipped) <= cluster


def test_everything_untestable_leaves_the_whole_range():
    result = bisect(10, history(4, frozenset(range(1, 9))))
    assert result.candidates == tuple(range(1, 10)) and result.runs == 8 and result.complete


def test_candidate_groups_merge_across_untestable_commits():
    assert candidate_groups(6, []) == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    assert candidate_groups(6, [2, 3]) == [(1, 1), (2, 4), (5, 5)]
    assert candidate_groups(6, [4, 5]) == [(1, 1), (2, 2), (3, 3), (4, 5)]


def test_resume_from_observations_reruns_nothing():
    calls: list[int] = []
    with pytest.raises(SearchStopped):
        def stop_after_three(i):
            if len(calls) == 3:
                raise StopSearch
            return history(777, frozenset({511}), calls)(i)
        bisect(1024, stop_after_three)
    first = calls[:]
    log = [Observation(i, history(777, frozenset({511}))(i)) for i in first]
    calls.clear()
    resumed = bisect(1024, history(777, frozenset({511}), calls=calls), observations=log)
    full = bisect(1024, history(777, frozenset({511})))
    assert not set(calls) & set(first)
    assert resumed.first_bad == full.first_bad == 777
    assert resumed.observations == full.observations and resumed.new_runs == full.runs - 3


def test_stop_returns_best_so_far():
    def oracle(i, seen=[]):    # noqa: B006 - a counter local to this test
        seen.append(i)
        if len(seen) > 4:
            raise StopSearch
        return F if i >= 600 else P
    with pytest.raises(SearchStopped) as info:
        bisect(1024, oracle)
    best = info.value.result
    assert not best.complete and best.runs == 4 and not info.value.interrupted
    assert best.candidates[0] <= 600 <= best.first_bad and len(best.candidates) <= 1024 // 16


def test_keyboard_interrupt_and_callback_stop():
    seen: list[Observation] = []

    def callback(obs):
        seen.append(obs)
        if len(seen) == 2:
            raise KeyboardInterrupt
    with pytest.raises(SearchStopped) as info:
        bisect(64, history(10), on_observation=callback)
    assert info.value.interrupted and info.value.result.runs == 2
    assert list(info.value.result.observations) == seen


def test_gateway_memoises_and_checks_outcomes():
    calls: list[int] = []
    gw = Gateway(10, history(5, calls=calls))
    assert gw.test(7) is F and gw.test(7) is F and calls == [7]
    assert gw.test_many([7, 2, 3]) == [F, P, P] and calls == [7, 2, 3]
    with pytest.raises(TypeError):
        Gateway(10, lambda i: "bad").test(3)
    with pytest.raises(IndexError):
        gw.test(10)
    flaky = Gateway(10, history(5, frozenset({4}), calls=calls), repeat=True)
    flaky.test(7), flaky.test(7), flaky.test(4), flaky.test(4)
    assert calls[-3:] == [7, 7, 4]     # PASS/FAIL repeat when flaky; UNRESOLVED stays memoised


@pytest.mark.parametrize("jobs", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("n", [2, 3, 10, 100, 1024])
def test_multisect_rounds_within_log_k_plus_1(n, jobs):
    bound = math.ceil(math.log(n) / math.log(jobs + 1) - 1e-9) + 1
    for culprit in range(1, n, max(1, n // 97)):
        result = multisect(n, batch(history(culprit)), jobs=jobs)
        assert result.first_bad == culprit and result.candidates == (culprit,)
        assert result.rounds <= bound
        assert result.runs <= jobs * result.rounds


def test_multisect_with_skips_and_probes():
    untestable = frozenset(range(200, 230)) | {500, 501, 777}
    for culprit in (150, 231, 499, 502, 776, 778):
        result = multisect(1024, batch(history(culprit, untestable)), jobs=4)
        assert result.first_bad == culprit and result.rounds <= 7
    probes = multisect_probes(10, 40, {20, 21}, 4)
    assert len(probes) == 4 and all(10 < p < 40 and p not in {19, 20, 21, 22} for p in probes)
    assert multisect_probes(0, 100, (), 4) == [20, 40, 60, 80]
    assert multisect_probes(3, 7, {5}, 4) == [4, 6]


def test_search_history_dispatches():
    oracle = history(321)
    for opts in (SearchOptions(), SearchOptions(jobs=3), SearchOptions(flaky=True),
                 SearchOptions(flaky=True, jobs=2)):
        result = search_history(1000, oracle, options=opts)
        assert result.first_bad == 321, opts
    assert search_history(1000, batch_oracle=batch(oracle)).mode == "multisect-1"
    assert search_history(1000, oracle).to_dict()["first_bad"] == 321
