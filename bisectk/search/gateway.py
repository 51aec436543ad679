"""What every history search shares: observations, the oracle gateway, and how a search stops.

Abstractions
------------
Observation     -- one run of one candidate, (index, Outcome). The only thing a history search
                   persists; bounds, posteriors and results are all derived from a list of them,
                   which is why every search accepts `observations=` to resume or replay a log.
Gateway         -- the one door to the oracle: memoises, counts runs and rounds (and, against the
                   budget, the runs the oracle reports it made beyond one a probe), records
                   observations, feeds listeners (the search's model) and then `on_observation`,
                   and turns a stop into SearchStopped carrying the best result so far.
StopSearch      -- raise it from the oracle or `on_observation` to end a search early. It is the
                   same class as `bisectk.search.tester.StopSearch`: one stop request for every
                   search in the package.
SearchStopped   -- the one "search stopped" exception (tester.py), shared with the factor searches:
                   its `result` is the best answer so far, with `interrupted` (Ctrl-C) and `reason`
                   ("stop", "interrupt" or "budget").
InconsistentObservations -- the observations contradict the model (the good endpoint failed).
round_width     -- how many probes a k-way round sends: --jobs, or the workers alive if fewer.

This module sits below the algorithms (dag_bisect.py, dag_bayes.py, confirm.py) and imports
none of them, so they can share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from bisectk.outcome import Outcome
from bisectk.search.tester import SearchStopped, StopSearch

Oracle = Callable[[int], Outcome]
BatchOracle = Callable[[list[int]], list[Outcome]]
R = TypeVar("R")

__all__ = ["Oracle", "BatchOracle", "Observation", "StopSearch", "BudgetSpent", "SearchStopped",
           "InconsistentObservations", "Gateway"]


class Observation(NamedTuple):
    index: int
    outcome: Outcome

    def to_json(self) -> list[Any]:
        return [self.index, self.outcome.value]

    @classmethod
    def coerce(cls, item: Observation | Sequence[Any]) -> Observation:
        """Accept an Observation, an (index, Outcome) pair or a logged [index, "pass"] pair."""
        index, outcome = item
        return cls(int(index), Outcome(outcome))


def round_width(jobs: int, width: Callable[[], int] | None) -> int:
    """Probes for one k-way round: `jobs`, or fewer when `width()` says fewer workers are alive
    now (never below 1)."""
    return jobs if width is None else max(1, min(jobs, int(width())))


class BudgetSpent(StopSearch):
    """The run budget is spent: a stop like any other, told apart only for `SearchStopped.reason`."""


class InconsistentObservations(ValueError):
    """The observations contradict the model, e.g. the known good commit failed."""


class Gateway:
    """The single path to the oracle, over candidate indices 0..n-1.

    Memoisation: a deterministic search never re-runs an index. A flaky one (`repeat=True`)
    re-runs PASS and FAIL on purpose (repeats are its evidence), but an UNRESOLVED commit stays
    untestable: a build failure does not go away by trying again.
    """

    def __init__(self, n: int, oracle: Oracle | None = None, *, batch_oracle: BatchOracle | None = None,
                 observations: Iterable[Observation | Sequence[Any]] = (), repeat: bool = False,
                 on_observation: Callable[[Observation], None] | None = None, min_n: int = 2,
                 more_runs: Callable[[], int] | None = None):
        if n < min_n:
            raise ValueError(f"need at least {min_n} candidates, got {n}")
        self.n, self.oracle, self.batch_oracle, self.repeat = n, oracle, batch_oracle, repeat
        self.observations: list[Observation] = [Observation.coerce(o) for o in observations]
        for obs in self.observations:
            self._check_index(obs.index)
        self.listeners: list[Callable[[Observation], None]] = []
        self.on_observation = on_observation
        self.new_runs = 0
        self.rounds = 0
        self.more_runs = more_runs      # runs the oracle made beyond one a probe, as it reports them

    def _check_index(self, i: int) -> None:
        if not 0 <= i < self.n:
            raise IndexError(f"candidate index {i} outside 0..{self.n - 1}")

    @property
    def skipped(self) -> tuple[int, ...]:
        """Untestable indices: UNRESOLVED and never a PASS or FAIL (a replayed log may hold both)."""
        tested = {o.index for o in self.observations if o.outcome is not Outcome.UNRESOLVED}
        return tuple(sorted({o.index for o in self.observations
                             if o.outcome is Outcome.UNRESOLVED and o.index not in tested}))

    def known(self, i: int) -> Outcome | None:
        """The memoised outcome of `i`, or None when it must (or may) be run."""
        for obs in self.observations:
            if obs.index == i and (not self.repeat or obs.outcome is Outcome.UNRESOLVED):
                return obs.outcome
        return None

    def _record(self, i: int, outcome: Any) -> Outcome:
        if not isinstance(outcome, Outcome):
            raise TypeError(f"oracle returned {outcome!r} for {i}, expected an Outcome")
        obs = Observation(i, outcome)
        self.observations.append(obs)
        self.new_runs += 1
        for listener in self.listeners:     # the model first, so the callback sees a consistent state
            listener(obs)
        if self.on_observation is not None:
            self.on_observation(obs)
        return outcome

    def test(self, i: int) -> Outcome:
        self._check_index(i)
        memo = self.known(i)
        if memo is not None:
            return memo
        if self.oracle is None:
            return self.test_many([i])[0]
        self.rounds += 1
        return self._record(i, self.oracle(i))

    def test_many(self, indices: Sequence[int]) -> list[Outcome]:
        """One round: the indices not memoised go to the batch oracle together, in order."""
        for i in indices:
            self._check_index(i)
        memo = [self.known(i) for i in indices]
        todo = [i for i, m in zip(indices, memo) if m is None]
        fresh: list[Outcome] = []
        if todo:
            self.rounds += 1
            if self.batch_oracle is not None:
                outcomes = list(self.batch_oracle(list(todo)))
                if len(outcomes) != len(todo):
                    raise ValueError(f"batch oracle returned {len(outcomes)} outcomes for {len(todo)}")
            else:
                outcomes = [self.oracle(i) for i in todo]  # type: ignore[misc]
            fresh = [self._record(i, o) for i, o in zip(todo, outcomes)]
        # `todo` kept the order of `indices`, so fresh outcomes fill the gaps in that order.
        it = iter(fresh)
        return [m if m is not None else next(it) for m in memo]

    def spend(self, max_runs: int | None, wanted: int = 1) -> int:
        """How many of `wanted` runs the budget still allows; BudgetSpent when none is left.

        Only a search that treats the budget as a stop (the DAG searches) calls this.
        """
        if max_runs is None:
            return wanted
        left = max_runs - self.new_runs - (self.more_runs() if self.more_runs is not None else 0)
        if left <= 0:
            raise BudgetSpent(f"run budget of {max_runs} spent")
        return min(wanted, left)

    def guarded(self, loop: Callable[[], None], summarise: Callable[[bool], R]) -> R:
        """Run a search loop; a stop from inside it becomes SearchStopped(best so far)."""
        try:
            loop()
        except (StopSearch, KeyboardInterrupt) as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            reason = "interrupt" if interrupted else "budget" if isinstance(exc, BudgetSpent) else "stop"
            raise SearchStopped(summarise(False), exc, reason) from exc
        return summarise(True)
