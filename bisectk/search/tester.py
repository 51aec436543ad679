"""The one gateway between a search algorithm and its oracle.

Abstractions
------------
Attempt           -- one configuration judged: its key, outcome, phase label and the single-shot
                     observations (one per run) that produced the outcome.
Tester            -- wraps the oracle: memoises by key, counts runs, records attempts, emits each
                     attempt to `on_attempt`, applies the flakiness rule, honours stop requests and
                     a run budget (one run a question, plus the runs the oracle reports it made
                     beyond: `more_runs`). Every algorithm in this package talks to the oracle
                     through it.
                     It keeps every single-run outcome per key (`history`): a switch to another
                     rule (`switch`, after a contradiction) re-reads the verdicts from it, so a
                     search run again on the same Tester goes on from what was observed and only
                     tops up the runs the new rule asks for. `confirm` runs a verdict again;
                     with a `batch` oracle (runs several at once, side by side) and a `width`
                     above one, the passes a confirmation asks of one configuration are made
                     in rounds of that many (they are independent runs of the same thing).
                     With `submit` (starts one run, returns its Future) and `ahead` (ahead.py:
                     which runs the search will likely ask next), every run goes through a
                     Future, and the slots the search leaves idle (`width()` in all) run ahead
                     of it: each question is taken from the run started for it, in the order
                     it was started, so the answers are those of a one-at-a-time search.
                     `drain` ends what is still under way; `unused` counts the runs made
                     ahead that the search never took, `taken_ahead` those it took.
Rule              -- what a flakiness rule is to the Tester: `verdict(runs)` decides from the
                     single-run outcomes of one configuration so far, or says None (run again).
                     flaky.ConfidenceRule (one-sided) and rates.RateRule (two rates) are rules.
StopSearch        -- raise it from the oracle (or `should_stop`) to end a search early.
SearchStopped     -- what every search raises when it was stopped (StopSearch, KeyboardInterrupt or
                     the run budget): it carries the best result found so far, as picire does.

A key is any hashable: a frozenset of applied differences for factor searches, an int for the
ordinal threshold search. Known outcomes (the verified endpoints, a resumed session's ledger)
seed the memo and never count as runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from bisectk.outcome import Outcome

Oracle = Callable[[Any], Outcome]


class Rule(Protocol):
    fails: int          # the bad endpoint's failures and runs the rule was derived from
    runs: int
    repeats: int        # passes in a row that clear a configuration (at the rates measured)

    def verdict(self, runs: Sequence[Outcome]) -> Outcome | None: ...

    def to_dict(self) -> dict[str, Any]: ...


class StopSearch(Exception):
    """Raised by an oracle or a stop hook to end the search; the best result so far survives."""


class BudgetSpent(StopSearch):
    """What the Tester raises when the run budget (`max_runs`) is spent."""


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

    `test(key, phase)` returns the verdict for `key`. With a `rule`, runs are made until
    `rule.verdict` decides (ConfidenceRule: a PASS only after `rule.repeats` consecutive passes, a
    FAIL at once, as failures are never spurious under one rate), in rounds of up to `width()`
    side by side where a `batch` oracle is given; without one, one run decides.
    An UNRESOLVED run is taken as it is (invalid and build-broken configurations do not heal by
    repeating). Every oracle call counts as a run.
    """

    __test__ = False  # not a pytest test class, despite the name

    oracle: Oracle
    rule: Rule | None = None
    on_attempt: Callable[[Attempt], None] | None = None
    should_stop: Callable[[], bool] | None = None
    max_runs: int | None = None
    known: Mapping[Hashable, Outcome] | None = None
    runs: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    memo: dict[Hashable, Outcome] = field(default_factory=dict)
    stage: str = ""   # stamped on each attempt: which failing set the search is after (sets.py)
    history: dict[Hashable, list[Outcome]] = field(default_factory=dict)   # every run, per key
    batch: Callable[[Sequence[Hashable]], Sequence[Outcome]] | None = None   # several runs side by side
    width: Callable[[], int] | None = None      # how many runs a round may hold now (default 1)
    submit: Callable[[Hashable], Future] | None = None   # start one run side by side: its Future's Outcome
    ahead: Callable[..., list[Hashable]] | None = None   # ahead.plan, bound: (runs_of, slots, risky)
    risky: Callable[[], int | None] | None = None   # runs ahead that may fail, allowed now (None: any)
    expecting: Outcome | None = None   # what the run being asked is expected to give (a confirmation's)
    waiting: Callable[[], AbstractContextManager] | None = None   # held while waiting on runs (a Ctrl-C's place)
    unused: int = 0                    # runs made ahead of the search that it never took
    taken_ahead: int = 0               # runs made ahead of the search that it took (asked later)
    more_runs: Callable[[], int] | None = None   # runs the oracle made beyond one a question, as it
                                       # reports them (a re-run of a different failure), less those the
                                       # ledger answered (no cost; may be < 0): the budget's too

    def __post_init__(self) -> None:
        self._known = dict(self.known or {})
        self._pending: dict[Hashable, deque[Future]] = {}   # runs started and not yet taken, per key
        self._started_ahead: set[Future] = set()
        self._seeds: dict[Hashable, Outcome] = {}   # the verified endpoints, as `seed` was told

    def seed(self, key: Hashable, outcome: Outcome) -> None:
        """Record an outcome established outside the search (a verified endpoint)."""
        self.memo[key] = outcome
        self._seeds[key] = outcome

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
        runs = self.history.setdefault(key, [])
        before = len(runs)
        verdict = self.decide(runs)
        while verdict is None:
            runs.extend(self._run_round(key, self._needed(runs)))
            verdict = self.decide(runs)
        self._record(key, verdict, phase, tuple(runs[before:]), cached=False)
        return verdict

    def decide(self, runs: Sequence[Outcome]) -> Outcome | None:
        """The verdict the rule in force gives on these runs (without a rule: the first run)."""
        if not runs:
            return None
        return runs[0] if self.rule is None else self.rule.verdict(runs)

    def switch(self, rule: Rule) -> None:
        """Judge by `rule` from now on: every verdict made from runs is re-read from its runs, and
        one the new rule cannot give yet is forgotten (testing it again tops its runs up). A seeded
        endpoint keeps its verified outcome unless its runs here show a failure (the confirmation
        re-runs bad where the answer is every difference: a pass there is not a verdict on it)."""
        self.rule = rule
        for key, runs in self.history.items():
            verdict = self.decide(runs)
            if key in self._seeds and verdict is not Outcome.FAIL:
                verdict = self._seeds[key]
            if verdict is None:
                self.memo.pop(key, None)
            else:
                self.memo[key] = verdict

    def confirm(self, key: Hashable, expect: Outcome, passes: int, judge: Rule | None = None,
                given: Sequence[Outcome] = (),
                rejudge: Callable[[Sequence[Outcome]], Rule] | None = None) -> Outcome:
        """Run `key` again for its verdict `expect`; returns what the new runs say. A FAIL is
        confirmed by a failure within the runs the rule in force needs to decide afresh (one
        without a rule); a PASS by `passes` new passes in a row, with a rule too: its verdict was
        one of many the search made, each with its own small chance of clearing a failing
        configuration, and the answer rests on this one. The passes go in rounds of `width()`
        runs where a `batch` oracle is given (a round is whole: a failure in it ends the
        confirmation after the round, and the first failure is the answer). With a `judge` (a
        rule of this confirmation alone: a failure that is evidence, not proof), runs are made one
        by one until it decides on `given` (runs made before that it reads too) and the new runs;
        while it cannot, `rejudge(new runs)` (if given) may run other configurations through this
        Tester (measure a rate the judge rests on) and returns the judge to read them with now.
        The runs join the history; the verdict in the memo stays (the caller decides what a
        contradiction means)."""
        runs = self.history.setdefault(key, [])
        fresh: list[Outcome] = []
        want = passes if expect is Outcome.PASS else 1
        while True:
            n = min(self._round(), want - len(fresh)) if expect is Outcome.PASS and judge is None else 1
            self.expecting = expect
            try:
                outcomes = self._run_round(key, n)
            finally:
                self.expecting = None
            fresh.extend(outcomes)
            runs.extend(outcomes)
            if judge is not None:
                result = judge.verdict([*given, *fresh])
                if result is None and rejudge is not None:
                    judge = rejudge(fresh)
                    result = judge.verdict([*given, *fresh])
                if result is None:
                    continue
                break
            failed = next((o for o in outcomes if o is not Outcome.PASS), None)
            if failed is not None:
                result = failed
                break
            if expect is Outcome.PASS and len(fresh) >= want:
                result = Outcome.PASS
                break
            if expect is Outcome.FAIL and (self.rule is None or self.rule.verdict(fresh) is Outcome.PASS):
                result = Outcome.PASS
                break
        attempt = Attempt(len(self.attempts) + 1, key, result, "confirm", tuple(fresh), False, self.stage)
        self.attempts.append(attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)
        return result

    def _needed(self, runs: Sequence[Outcome]) -> int:
        """How many runs the next round of a verdict holds: one without a rule (one run decides)
        or without a `batch`; under a rule, the passes in a row it still asks for, up to the width
        (the rule reads the round as it reads runs made one by one: ConfidenceRule's verdict is
        the first run that did not pass, so runs after it in the round only join the history)."""
        if self.rule is None:
            return 1
        width = self._round()
        if width <= 1:
            return 1
        trailing = 0
        for outcome in reversed(runs):
            if outcome is not Outcome.PASS:
                break
            trailing += 1
        return max(1, min(width, int(getattr(self.rule, "repeats", 1)) - trailing))

    def _width(self) -> int:
        side = self.batch is not None or self.submit is not None
        return max(1, int(self.width())) if side and self.width is not None else 1

    def _round(self) -> int:
        """Runs one round asks of a configuration: one when runs go ahead of the search (the
        next ones are started ahead as the slots free), else the width."""
        return 1 if self.ahead is not None else self._width()

    def _run_round(self, key: Hashable, n: int) -> list[Outcome]:
        """`n` runs of `key`: one through the oracle, more side by side through `batch` (as many
        as the run budget allows; none left stops the search, as one run would); with `submit`,
        the next `n` runs of `key` started (ahead, or now), waited for."""
        if self.submit is not None:
            return self._take(key, n)
        if n <= 1:
            return [self._run_once(key)]
        n = self._spend(n)
        outcomes = list(self.batch([key] * n))
        if len(outcomes) != n or not all(isinstance(o, Outcome) for o in outcomes):
            raise TypeError(f"batch oracle returned {outcomes!r}, expected {n} Outcomes")
        return outcomes

    # -- runs side by side, and ahead of the search ---------------------------------------------
    def _take(self, key: Hashable, n: int) -> list[Outcome]:
        queue = self._pending.setdefault(key, deque())
        if len(queue) < n:
            for _ in range(self._spend(n - len(queue))):
                queue.append(self.submit(key))
        wanted = [queue[i] for i in range(min(n, len(queue)))]
        while not all(f.done() for f in wanted):
            self._fill()
            with self.waiting() if self.waiting is not None else nullcontext():
                wait(self._under_way(), return_when=FIRST_COMPLETED)
        for f in wanted:
            queue.popleft()
            if f in self._started_ahead:
                self._started_ahead.discard(f)
                self.taken_ahead += 1
        outcomes = [f.result() for f in wanted]
        if not all(isinstance(o, Outcome) for o in outcomes):
            raise TypeError(f"oracle returned {outcomes!r}, expected Outcomes")
        self._fill(reserve=1)   # the next questions start while the search takes this answer in,
        return outcomes         # leaving a slot for the one it asks (a guess may be wrong)

    def adopt(self, key: Hashable, future: Future) -> None:
        """Take a run of `key` begun before the search (its Future's Outcome) as one made ahead of
        it: the search's next run of `key` waits for it; never taken, it counts as unused."""
        self.runs += 1
        self._started_ahead.add(future)
        self._pending.setdefault(key, deque()).append(future)

    def runs_of(self, key: Hashable) -> list[Outcome | None]:
        """`key`'s runs in the order the search takes them: those taken, then those started
        (an Outcome once done, None while under way)."""
        started = [f.result() if f.done() and f.exception() is None else None for f in self._pending.get(key, ())]
        return [*self.history.get(key, ()), *started]

    def _fill(self, reserve: int = 0) -> None:
        """Start runs ahead in the slots free now (the width less the runs under way and
        `reserve`), as `ahead` orders them; the last `width()` runs of a budget are left to the
        search."""
        if self.ahead is None or self.submit is None:
            return
        width = self._width()
        free = width - reserve - len(self._under_way())
        if self.max_runs is not None:
            free = min(free, self.max_runs - self._spent() - width)
        if free <= 0 or (self.should_stop is not None and self.should_stop()):
            return
        risky = self.risky() if self.risky is not None else None
        for key in self.ahead(self.runs_of, free, risky)[:free]:
            self.runs += 1
            future = self.submit(key)
            self._started_ahead.add(future)
            self._pending.setdefault(key, deque()).append(future)

    def _under_way(self) -> list[Future]:
        return [f for q in self._pending.values() for f in q if not f.done()]

    def drain(self, block: bool = True) -> int:
        """End the runs started ahead and never taken: those not begun are cancelled, those under
        way are waited for (`block`; else, after a stop, left to end with the command, and neither
        is counted as a run); returns how many ran unused (also `unused`)."""
        futures = [f for q in self._pending.values() for f in q]
        self._pending.clear()
        self._started_ahead.clear()
        for f in futures:
            if f.cancel() or (not block and not f.done()):
                self.runs -= 1      # never begun, or abandoned to the stop: no run was made
            elif f.exception() is None:    # (waits) a run that raised (a stop) gave no outcome
                self.unused += 1
        return self.unused

    def failing(self) -> list[Hashable]:
        """Keys judged FAIL, in the order they were judged."""
        return [key for key, outcome in self.memo.items() if outcome is Outcome.FAIL]

    def _spend(self, n: int) -> int:
        """Take up to `n` runs from the budget (counted before they are made: an interrupted run
        was still started); StopSearch when a stop is asked for or nothing is left."""
        if self.should_stop is not None and self.should_stop():
            raise StopSearch("stop requested")
        if self.max_runs is not None:
            spent = self._spent()
            if spent >= self.max_runs:
                raise BudgetSpent(f"run budget of {self.max_runs} spent")
            n = min(n, self.max_runs - spent)
        self.runs += n
        return n

    def _spent(self) -> int:
        """The runs the budget has paid for: one a question asked, and those the oracle reports
        it made beyond (`more_runs`)."""
        return self.runs + (self.more_runs() if self.more_runs is not None else 0)

    def _run_once(self, key: Hashable) -> Outcome:
        self._spend(1)
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
