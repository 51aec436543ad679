"""The gateway every history search goes through: memoised runs, checked outcomes and indices,
repeats in flake-aware mode (moved from the deleted chain-search tests, test_history.py)."""

from __future__ import annotations

import pytest

from bisectk.outcome import Outcome
from bisectk.search.gateway import Gateway

P, F, U = Outcome.PASS, Outcome.FAIL, Outcome.UNRESOLVED


def chain(culprit: int, untestable=frozenset(), calls: list[int] | None = None):
    """A deterministic oracle on a chain: bad from `culprit` on, UNRESOLVED on `untestable`."""
    def oracle(i: int) -> Outcome:
        if calls is not None:
            calls.append(i)
        if i in untestable:
            return U
        return F if i >= culprit else P
    return oracle


def test_gateway_memoises_and_checks_outcomes():
    calls: list[int] = []
    gw = Gateway(10, chain(5, calls=calls))
    assert gw.test(7) is F and gw.test(7) is F and calls == [7]
    assert gw.test_many([7, 2, 3]) == [F, P, P] and calls == [7, 2, 3]
    assert gw.new_runs == 3 and [o.index for o in gw.observations] == [7, 2, 3]
    with pytest.raises(TypeError):
        Gateway(10, lambda i: "bad").test(3)
    with pytest.raises(IndexError):
        gw.test(10)
    flaky = Gateway(10, chain(5, frozenset({4}), calls=calls), repeat=True)
    flaky.test(7), flaky.test(7), flaky.test(4), flaky.test(4)
    assert calls[-3:] == [7, 7, 4]     # PASS/FAIL repeat when flaky; UNRESOLVED stays memoised
    assert flaky.skipped == (4,)
