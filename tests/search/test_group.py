"""Adaptive binary splitting (the default strategy), through `ablate` as the CLI calls it."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search import ablate
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.group import split_fraction

from .oracles import Counting, planted, with_invalid

FAST = settings(max_examples=60, deadline=None, database=None)


@FAST
@given(n=st.integers(1, 64), data=st.data())
def test_one_culprit_anywhere_in_at_most_log2_n_plus_1_runs(n, data):
    position = data.draw(st.integers(0, n - 1))
    items = [f"f{i}" for i in range(n)]
    oracle = Counting(planted({items[position]}))
    result = ablate(items, oracle)
    assert result.culprits == (items[position],)
    assert not result.interaction
    assert result.runs == len(oracle.calls) <= math.ceil(math.log2(n)) + 1
    assert frozenset() not in oracle.calls and frozenset(items) not in oracle.calls


@FAST
@given(n=st.integers(2, 40), k=st.integers(2, 3), data=st.data())
def test_interactions_of_two_and_three_are_found_and_proven(n, k, data):
    k = min(k, n)
    members = data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
    culprits = {f"f{i}" for i in members}
    oracle = planted(culprits)
    result = ablate([f"f{i}" for i in range(n)], oracle)
    assert set(result.culprits) == culprits
    assert result.interaction
    # the proof covers every proper non-empty subset, and each of them passed
    assert len(result.proof) == 2 ** k - 2
    assert all(oracle(s) is Outcome.PASS for s in result.proof)


def test_pair_among_32_within_20_runs_wherever_it_sits():
    items = list(range(32))
    worst = max(ablate(items, planted({a, b})).runs
                for a in range(0, 32, 3) for b in range(1, 32, 5) if a != b)
    assert worst <= 20


@FAST
@given(n=st.integers(4, 40), k=st.integers(1, 3), seed=st.integers(0, 10**6), data=st.data())
def test_routes_around_invalid_hybrids(n, k, seed, data):
    members = frozenset(data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k,
                                           unique=True)))
    items = list(range(n))
    # The planted set and its subsets stay runnable, or no search could observe or prove it.
    oracle = with_invalid(planted(members), 0.2, seed,
                          keep_valid=lambda c: c <= members or c == frozenset(items))
    result = ablate(items, oracle)
    assert set(result.culprits) == members
    assert result.interaction == (k > 1)


def test_a_wall_of_invalid_prefixes_is_walked_around():
    items = list(range(16))

    # Applying 3 without all of 4, 5 and 6 is invalid (a constraint), so the prefixes of
    # lengths 4 to 6 are all unresolved: bisection alone cannot tell which of 3..6 matters.
    def oracle(config):
        if 3 in config and not {4, 5, 6} <= config and config != frozenset({3}):
            return Outcome.UNRESOLVED
        return Outcome.FAIL if 3 in config else Outcome.PASS

    result = ablate(items, oracle)
    assert result.culprits == (3,)
    assert any(a.phase == "route-around" for a in result.attempts)
    assert {a.config for a in result.unresolved} >= {frozenset(range(m)) for m in (4, 5, 6)}


def test_redundant_causes_give_one_minimal_cause():
    result = ablate(list(range(20)), planted({2}, {15, 17}))
    assert result.culprits in ((2,), (15, 17))
    assert result.interaction == (len(result.culprits) == 2)


def test_single_difference_needs_no_run():
    result = ablate(["only"], planted({"only"}))
    assert result.culprits == ("only",) and result.runs == 0


def test_split_fraction_leans_towards_failing_probes_only_under_noise():
    assert split_fraction(None) == 0.5
    steady = split_fraction(ConfidenceRule.derive(10, 10))
    shaky = split_fraction(ConfidenceRule.derive(5, 10))
    assert 0.5 < steady < shaky < 0.96
