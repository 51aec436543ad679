"""Ordinal threshold search: the value of an ordered factor at which the failure appears.

Abstractions
------------
Threshold      -- the answer: the last passing and first failing index (adjacent unless the
                  indices between them are all UNRESOLVED), those unresolved indices, and the
                  attempts and runs it took.
find_threshold -- binary search over value indices 0..count-1, where index 0 (the good value)
                  passes and index count-1 (the bad value) fails, as verified endpoints. It is
                  LLVM's opt-bisect-limit / PyTorch's CompilerBisector applied to one factor,
                  with git bisect's skip-away around UNRESOLVED indices.

The oracle takes an index (the caller maps it to a value such as stages=3). If the failure is
not monotone in the value, the answer is still a true boundary: a passing index directly
followed by a failing one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.tester import Attempt, SearchStopped, StopSearch, Tester


@dataclass(frozen=True)
class Threshold:
    values: tuple
    last_pass: int                       # highest index known to PASS below first_fail
    first_fail: int                      # lowest index known to FAIL above last_pass
    unresolved: tuple[int, ...]          # indices between them that were UNRESOLVED
    attempts: tuple[Attempt, ...] = field(default=(), repr=False)
    runs: int = 0
    complete: bool = True

    @property
    def exact(self) -> bool:
        """The threshold is pinned: the last passing and first failing values are adjacent."""
        return self.first_fail == self.last_pass + 1

    @property
    def value(self) -> Any:
        """The first failing value."""
        return self.values[self.first_fail]

    def describe(self) -> str:
        good, bad = self.values[self.last_pass], self.values[self.first_fail]
        if self.exact:
            return f"fails from {bad} on ({good} passes)"
        between = ", ".join(str(self.values[i]) for i in self.unresolved)
        return f"fails at {bad}, passes at {good}; {between} could not be judged"


def find_threshold(values: Sequence[Hashable], oracle: Callable[[int], Outcome], *,
                   rule: ConfidenceRule | None = None,
                   on_attempt: Callable[[Attempt], None] | None = None,
                   should_stop: Callable[[], bool] | None = None,
                   max_runs: int | None = None,
                   known: Mapping[int, Outcome] | None = None) -> Threshold:
    """Bisect `values` (ordered, good value first, bad value last) to the failure threshold.

    Invariant: lo PASSes, hi FAILs, lo < hi. Each probe between them moves one end onto an
    index just observed with that outcome; UNRESOLVED probes are skipped (nearest to the
    midpoint first), so the loop ends when lo and hi are adjacent or only unresolved indices
    lie between them. Raises SearchStopped carrying the bracket so far when stopped.
    """
    if len(values) < 2:
        raise ValueError("an ordinal factor needs at least the good and the bad value")
    tester = Tester(oracle, rule=rule, on_attempt=on_attempt, should_stop=should_stop,
                    max_runs=max_runs, known=known)
    lo, hi = 0, len(values) - 1
    tester.seed(lo, Outcome.PASS)
    tester.seed(hi, Outcome.FAIL)
    try:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            probes = [m for m in sorted(range(lo + 1, hi), key=lambda m: (abs(m - mid), m))
                      if tester.outcome_of(m) is not Outcome.UNRESOLVED]
            if not probes:
                break
            outcome = tester.test(probes[0], "threshold")
            if outcome is Outcome.FAIL:
                hi = probes[0]
            elif outcome is Outcome.PASS:
                lo = probes[0]
    except (StopSearch, KeyboardInterrupt) as stop:
        raise SearchStopped(_answer(values, tester, lo, hi, complete=False), stop) from stop
    return _answer(values, tester, lo, hi, complete=True)


def _answer(values: Sequence[Hashable], tester: Tester, lo: int, hi: int,
            complete: bool) -> Threshold:
    unresolved = tuple(i for i in range(lo + 1, hi) if tester.outcome_of(i) is Outcome.UNRESOLVED)
    return Threshold(tuple(values), lo, hi, unresolved, tuple(tester.attempts), tester.runs,
                     complete)
