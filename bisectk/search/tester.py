"""The one gateway between a search algorithm and its oracle.

Abstractions
------------
Attempt           -- one configuration judged: its key, outcome, phase label and the single-shot
                     observations (one per run) that produced the outcome.
Tester            -- wraps the oracle: memoises by key, counts runs, records attempts, emits each
                     attempt to `on_attempt`, applies the flakiness rule, honours stop requests and
                     a run budget. Every algorithm in this package talks to the oracle through it.
StopSearch        -- raise it from the oracle (or `should_stop`) to end a search early.
SearchStopped     -- what every search raises when it was stopped (StopSearch, KeyboardInterrupt or
                     the run budget): it carries the best result found so far, as picire does.

A key is any hashable: a frozenset of applied differences for factor searches, an int for the
ordinal threshold search. Known outcomes (the verified endpoints, a resumed session's ledger)
seed the memo and never count as runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule

Oracle = Callable[[Any], Outcome]


class StopSearch(Exception):
    """Raised by an oracle or a stop hook to end the search; the best result so far survives."""


class SearchStopped(Exception):
    """The one "search stopped" exception of every search in this package: `result` holds the best
    answer found before the stop (never more than was shown), `cause` what stopped it, `reason`
    why in one word ("stop": StopSearch from the oracle or a hook, "interrupt": KeyboardInterrupt,
    "budget": the run budget was spent) and `interrupted` whether it was Ctrl-C."""

    def __init__(self, result: Any, cause: BaseException | None = None, reason: str | None = None):
        self.result = result
        self.cause = cause
        self.interrupted = isinstance(cause, KeyboardInterrupt)
        self.reason = reason or ("interrupt" if self.interrupted else "stop")
        super().__init__("search interrupted" if self.interrupted else
                         "search stopped: run budget spent" if self.reason == "budget" else "search stopped")


@dataclass(frozen=True)
class Attempt:
    """One configuration judged by the oracle (memo hits are not attempts)."""

    index: int                      # 1-based order of the attempt in this search
    config: Hashable                # frozenset of applied differences, or an ordinal index
    outcome: Outcome                # the verdict the search acted on
    phase: str                      # which step asked: 'split', 'ddmin', 'ofat-add', ...
    observations: tuple[Outcome, ...] = ()  # one per oracle run; () when known beforehand
    cached: bool = False            # True when the outcome came from `known`, not from a run
    stage: str = ""                 # which part of the search: '' (the first set), 'set 2', ...

    @property
    def runs(self) -> int:
        return len(self.observations)


@dataclass
class Tester:
    """Memoising, counting, recording gateway to the oracle.

    `test(key, phase)` returns the verdict for `key`. With a `rule`, a PASS is accepted only
    after `rule.repeats` consecutive single-shot passes; a FAIL observation is conclusive at
    once (failures are never spurious) and an UNRESOLVED one is taken as it is (invalid and
    build-broken configurations do not heal by repeating). Every oracle call counts as a run.
    """

    __test__ = False  # not a pytest test class, despite the name

    oracle: Oracle
    rule: ConfidenceRule | None = None
    on_attempt: Callable[[Attempt], None] | None = None
    should_stop: Callable[[], bool] | None = None
    max_runs: int | None = None
    known: Mapping[Hashable, Outcome] | None = None
    runs: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    memo: dict[Hashable, Outcome] = field(default_factory=dict)
    stage: str = ""   # stamped on each attempt: which failing set the search is after (sets.py)

    def __post_init__(self) -> None:
        self._known = dict(self.known or {})

    def seed(self, key: Hashable, outcome: Outcome) -> None:
        """Record an outcome established outside the search (a verified endpoint)."""
        self.memo[key] = outcome

    def outcome_of(self, key: Hashable) -> Outcome | None:
        """The verdict on `key` if it was judged already, else None (never runs anything)."""
        return self.memo.get(key)

    def test(self, key: Hashable, phase: str) -> Outcome:
        if key in self.memo:
            return self.memo[key]
        if key in self._known:
            outcome = self._known[key]
            self._record(key, outcome, phase, (), cached=True)
            return outcome
        observations: list[Outcome] = []
        for _ in range(self.rule.repeats if self.rule else 1):
            observation = self._run_once(key)
            observations.append(observation)
            if observation is not Outcome.PASS:
                break
        self._record(key, observations[-1], phase, tuple(observations), cached=False)
        return observations[-1]

    def failing(self) -> list[Hashable]:
        """Keys judged FAIL, in the order they were judged."""
        return [key for key, outcome in self.memo.items() if outcome is Outcome.FAIL]

    def _run_once(self, key: Hashable) -> Outcome:
        if self.should_stop is not None and self.should_stop():
            raise StopSearch("stop requested")
        if self.max_runs is not None and self.runs >= self.max_runs:
            raise StopSearch(f"run budget of {self.max_runs} spent")
        self.runs += 1  # counted before the call: an interrupted run was still started
        outcome = self.oracle(key)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"oracle returned {outcome!r}, expected an Outcome")
        return outcome

    def _record(self, key: Hashable, outcome: Outcome, phase: str,
                observations: tuple[Outcome, ...], cached: bool) -> None:
        self.memo[key] = outcome
        attempt = Attempt(len(self.attempts) + 1, key, outcome, phase, observations, cached, self.stage)
        self.attempts.append(attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)
