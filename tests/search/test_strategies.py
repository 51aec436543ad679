"""ddmin, dd isolation, one-factor-at-a-time and the full factorial, plus the properties every
registered strategy must keep on arbitrary (non-monotone, partly unresolved) oracles."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search import STRATEGIES, ablate
from bisectk.search.dd import isolate
from bisectk.search.ddmin import ddmin, split
from bisectk.search.ofat import EXHAUSTIVE_MAX
from bisectk.search.tester import Tester

from .oracles import Counting, planted, said, truth_table

FAST = settings(max_examples=40, deadline=None, database=None)


def endpoint_tester(oracle, items):
    tester = Tester(oracle)
    tester.seed(frozenset(), Outcome.PASS)
    tester.seed(frozenset(items), Outcome.FAIL)
    return tester


def test_split_is_zellers():
    assert split(list(range(7)), 3) == [[0, 1], [2, 3], [4, 5, 6]]
    assert split(list(range(4)), 4) == [[0], [1], [2], [3]]


def test_ddmin_finds_a_pair_and_never_tests_endpoints():
    items = list(range(16))
    oracle = Counting(planted({3, 12}))
    assert sorted(ddmin(endpoint_tester(oracle, items), items)) == [3, 12]
    assert frozenset() not in oracle.calls and frozenset(items) not in oracle.calls
    assert len(oracle.calls) == len(set(oracle.calls))


def test_ddmin_treats_unresolved_as_not_failing():
    items = list(range(8))
    def oracle(config):  # the half holding the culprit alone is invalid
        if config == frozenset(range(4)):
            return Outcome.UNRESOLVED
        return Outcome.FAIL if 1 in config else Outcome.PASS
    assert ddmin(endpoint_tester(oracle, items), items) == [1]


def test_dd_isolates_one_difference_between_a_pass_and_a_fail():
    items = list(range(16))
    oracle = planted({5})
    found = isolate(endpoint_tester(oracle, items), items)
    assert found.difference == (5,)
    assert oracle(found.passing) is Outcome.PASS and oracle(found.failing) is Outcome.FAIL


def test_dd_reports_an_interaction_as_a_difference_in_context():
    result = ablate(list(range(16)), planted({2, 9}), strategy="dd")
    assert len(result.culprits) == 1 and result.culprits[0] in (2, 9)
    assert {2, 9} <= result.fail_config and result.context
    assert result.context.isdisjoint(result.culprits)
    assert any("also applied" in step for step in said(result))


@FAST
@given(n=st.integers(2, 24), seed=st.integers(0, 10**6), unresolved=st.sampled_from([0, 0.3]))
def test_dd_difference_is_one_minimal(n, seed, unresolved):
    items = list(range(n))
    oracle = truth_table(items, seed, unresolved)
    found = isolate(endpoint_tester(oracle, items), items)
    assert found.passing < found.failing
    assert oracle(found.passing) is Outcome.PASS and oracle(found.failing) is Outcome.FAIL
    if len(found.difference) > 1:  # with one element these are the pair itself
        for d in found.difference:
            assert oracle(found.passing | {d}) is not Outcome.FAIL
            assert oracle(found.failing - {d}) is not Outcome.PASS


def test_ofat_fills_the_key_differences_table():
    items = ["ctas", "mma_warp", "idle_warps", "dtype"]
    result = ablate(items, planted({"mma_warp", "idle_warps"}), strategy="ofat")
    assert result.culprits == ("mma_warp", "idle_warps") and result.interaction
    assert all(e.alone is Outcome.PASS for e in result.effects.values())
    assert {d: e.removed for d, e in result.effects.items()} == {
        "ctas": Outcome.FAIL, "mma_warp": Outcome.PASS, "idle_warps": Outcome.PASS,
        "dtype": Outcome.FAIL}
    assert {d: e.role for d, e in result.effects.items()} == {
        "ctas": "cleared", "mma_warp": "culprit", "idle_warps": "culprit", "dtype": "cleared"}
    assert result.runs == 2 * len(items) + 1  # both directions, then the necessary set


def test_ofat_with_two_independent_causes_names_one_and_lists_the_other():
    result = ablate(list(range(6)), planted({1}, {4}), strategy="ofat")
    assert result.culprits == (1,)
    assert result.also_failing == [frozenset({4})]


def test_exhaustive_runs_every_configuration_and_lists_every_minimal_cause():
    items = list(range(5))
    result = ablate(items, planted({1, 3}, {4}), strategy="exhaustive")
    assert result.runs == 2 ** 5 - 2
    assert result.culprits == (4,)
    assert result.also_failing == [frozenset({1, 3})]
    assert all(e.alone is not None and e.removed is not None for e in result.effects.values())


def test_exhaustive_refuses_large_spaces():
    with pytest.raises(ValueError):
        ablate(list(range(EXHAUSTIVE_MAX + 1)), planted({0}), strategy="exhaustive")


@FAST
@given(strategy=st.sampled_from(sorted(STRATEGIES)), n=st.integers(1, 12),
       seed=st.integers(0, 10**6), unresolved=st.sampled_from([0, 0.25]))
def test_every_strategy_returns_a_one_minimal_failing_set(strategy, n, seed, unresolved):
    items = [f"x{i}" for i in range(n)]
    if strategy == "exhaustive":
        items = items[:EXHAUSTIVE_MAX]
    oracle = truth_table(items, seed, unresolved)
    result = ablate(items, oracle, strategy=strategy)
    context = result.context
    assert oracle(result.fail_config) is Outcome.FAIL
    for culprit in result.culprits:
        assert oracle(context | (frozenset(result.culprits) - {culprit})) is not Outcome.FAIL
    proven = all(oracle(context | s) is Outcome.PASS for s in result.proof)
    assert result.interaction == (len(result.culprits) > 1 and proven)
    assert result.runs == sum(a.runs for a in result.attempts)


@FAST
@given(strategy=st.sampled_from(sorted(STRATEGIES)), n=st.integers(2, 8), data=st.data())
def test_every_strategy_finds_a_planted_set_exactly(strategy, n, data):
    k = data.draw(st.integers(1, min(3, n)))
    members = frozenset(data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k,
                                           unique=True)))
    result = ablate(list(range(n)), planted(members), strategy=strategy)
    if strategy == "dd":  # isolation: one difference, with the rest of the cause as context
        assert set(result.culprits) <= members <= result.fail_config
    else:
        assert set(result.culprits) == members and result.interaction == (k > 1)


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin", "ofat"])
def test_an_answer_that_is_the_empty_set_is_never_complete(strategy):
    """Good is seeded PASS (the endpoints were verified), but every run fails from then on, good's
    too (state a run leaves for the next one): the search's answer is the empty set, which names
    no difference. It is not a culprit found, however the confirmation went."""
    from bisectk.search.result import GOOD_FAILED
    res = ablate(["a", "b", "c"], lambda key: Outcome.FAIL, strategy=strategy, confidence=0.99, endpoint=(1, 1),
                 measure_removal=True, more_sets=4)     # as ablate's and diff's engines call it
    assert not res.culprits
    assert res.complete is False and res.stop_reason == GOOD_FAILED
    assert res.advice[0]["step"] == "good_failed"
