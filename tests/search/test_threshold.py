"""Ordinal threshold search (stages=[1, 2, 3, 4] and the like)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bisectk.outcome import Outcome
from bisectk.search import ConfidenceRule, SearchStopped, StopSearch, find_threshold


@settings(max_examples=60, deadline=None, database=None)
@given(count=st.integers(2, 300), data=st.data())
def test_finds_the_first_failing_value_in_log2_runs(count, data):
    first = data.draw(st.integers(1, count - 1))
    calls = []

    def oracle(index):
        calls.append(index)
        return Outcome.FAIL if index >= first else Outcome.PASS

    found = find_threshold(list(range(count)), oracle)
    assert (found.last_pass, found.first_fail) == (first - 1, first) and found.exact
    assert found.runs == len(calls) <= math.ceil(math.log2(count - 1))
    assert 0 not in calls and count - 1 not in calls


def test_skips_unresolved_values():
    stages = [1, 2, 3, 4, 5, 6, 7, 8]
    def oracle(index):  # stages 4 and 5 do not build
        if stages[index] in (4, 5):
            return Outcome.UNRESOLVED
        return Outcome.FAIL if stages[index] >= 6 else Outcome.PASS
    found = find_threshold(stages, oracle)
    assert (found.values[found.last_pass], found.value) == (3, 6)
    assert not found.exact and found.unresolved == (3, 4)
    assert "4, 5 could not be judged" in found.describe()


def test_exact_description_and_flaky_rule():
    rule = ConfidenceRule.derive(6, 10)
    found = find_threshold([128, 256, 512, 1024], lambda i: [Outcome.PASS, Outcome.PASS,
                           Outcome.FAIL, Outcome.FAIL][i], rule=rule)
    assert found.describe() == "fails from 512 on (256 passes)"
    assert found.runs == 1 + rule.repeats  # 512 fails at once, 256 must pass r times


def test_stop_keeps_the_bracket_so_far():
    def oracle(index):
        if index < 50:
            raise StopSearch()
        return Outcome.FAIL
    with pytest.raises(SearchStopped) as caught:
        find_threshold(list(range(200)), oracle)
    partial = caught.value.result
    assert not partial.complete and partial.first_fail < 199 and partial.last_pass == 0


def test_needs_two_values():
    with pytest.raises(ValueError):
        find_threshold([1], lambda i: Outcome.FAIL)
