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
not monotone in the value, the bracket is still a true boundary (a passing index directly
followed by a failing one), but "fails from X on" would claim more than was run: a value below
X that the bisection skipped may fail too (stages 3 and 8 fail, 1-2 and 4-7 pass). So, once
bracketed, up to SPOT_CHECKS of the values below the bracket that were not run are run
(spread evenly over them): the claim a user acts on is "below X it passes". A spot check that
fails (and, with `confidence`, fails again: below) makes the answer say the failure is not
monotone and list what failed and passed; values
still not run are named in the answer with the outcome they were assumed to have.

No confidence without confirmation (confirm.py): the bisection takes each run at its word, and one
lucky pass of a failing value (an intermittent failure nobody declared) moves the bracket up:
`fails from 12 on (11 passes)` where 9 fails 90% of the time, at full confidence (55 of 1000
seeded searches, bench/flaky_calibration.py threshold). With `confidence`, the boundary is run
again before it is given: the first failing value fails again, the last passing one passes as
often as a sets search's PASS claim (confirm.repeats_for, over the failures seen at values judged
failing and the search's `evidence`; without a rule the cheapest split of re-runs of the failing
value and passes, confirm.plan_confirmation; once each under `steady`). A contradiction of a
search without a rule goes on in the flake rule (confirm.switched_rule) from every run made, and
is confirmed again; one under a rule, or a confirmation run that cannot be judged, leaves the
threshold unconfirmed, and the answer says so in place of stating it. The endpoints (the good and
the bad value, verified, and confirmed by the search that named the culprit) are no claims of this
search: a boundary on one of them is not confirmed there (the bad value may be run again, to
measure the failure rate the passes are planned from).

Under the one-sided flake rule (an intermittent start, or after a switch) one failure is proof, and
a good side that fails now and then (undeclared: `good`, its runs, is given) fails at some value
below the threshold: that value was the answer, its one more failure its confirmation (`fails from
4 on` where 9 fails and every value fails 5% of the time: 29 of 323 answers). The failing value is
then confirmed as a sets search's FAIL claim is (confirm.claim_rule): as evidence under two rates,
the old side measured by good's runs and those of the values below it, good's value run too while
the old side has fewer runs than the claim.

A value below the bracket that failed (a spot check's, or one a switch re-read) is a claim too:
that the failure is not monotone. Without confirmation it rested on one failure: a good side that
fails 5% of the time made the answer `not monotone, so no single threshold` in 81 of 300 seeded
searches (tests/search/test_threshold.py). It is run again as the first failing value is (under
two rates where that value is); without a rule a pass is a contradiction (the flake rule takes
over), under one a value that does not fail again as evidence requires is no claim: its re-run's
verdict stands for it, and the answer says what it saw (`3 failed in 1 of 6 runs, not confirmed
when run again`). Now 1 of the 300.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.confirm import (Costs, SetConfirmation, _unselected, failing_evidence, measuring, old_side_rule,
                                    plan_confirmation, repeats_for, switched_rule)
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.tester import Attempt, BudgetSpent, SearchStopped, StopSearch, Tester

SPOT_CHECKS = 4     # values below the bracket run after the bisection, at most
_AGAIN = {"fail": "failed", "pass": "passed"}   # what a confirmation's re-run did, in the answer's words



@dataclass(frozen=True)
class Threshold:
    values: tuple
    last_pass: int                       # highest index known to PASS below first_fail
    first_fail: int                      # lowest index known to FAIL above last_pass
    unresolved: tuple[int, ...]          # indices between them that were UNRESOLVED
    attempts: tuple[Attempt, ...] = field(default=(), repr=False)
    runs: int = 0
    complete: bool = True
    outcomes: tuple[Outcome | None, ...] = ()   # per index: what its runs said, None if not run
    descending: bool = False             # `values` run down (numbers as numbers run, else the declared order)
    before: tuple = ()                   # declared values past the good end of `values`, never run: the
    beyond: tuple = ()                   # search runs between good and bad only; these past the bad end
    confirmation: SetConfirmation | None = None   # the boundary run again (keys: indices); None: not asked
    switched: tuple | None = None        # (index, outcome) whose re-run contradicted a deterministic bisection
    doubtful: tuple[int, ...] = ()       # indices below the bracket that failed and, run again, did not
                                         # fail as the confirmation asks: their outcome is the re-run's
    seen: Mapping[int, tuple[Outcome, ...]] = field(default_factory=dict, repr=False)   # a doubtful index's runs

    @property
    def confirmed(self) -> bool:
        """The boundary held when run again (or no confirmation was asked)."""
        return self.confirmation is None or self.confirmation.ok

    def _indices(self, outcome: Outcome | None) -> list[int]:
        return [i for i, o in enumerate(self.outcomes) if o is outcome]

    @property
    def monotone(self) -> bool:
        """No value was seen to fail below a value seen to pass (always so without `outcomes`): what
        the runs show, not a claim on the values no run judged (`assumed` names those)."""
        fails, passes = self._indices(Outcome.FAIL), self._indices(Outcome.PASS)
        return not fails or not passes or min(fails) > max(passes)

    @property
    def assumed(self) -> dict[str, list]:
        """The outcomes the answer assumes for values no run judged, as describe() names them:
        {"pass": those below the boundary and past the good end, "fail": those above it and past
        the bad end}. `monotone` says only that no run contradicts the boundary; these values are
        what it rests on besides the runs. Nothing is assumed where the runs show no threshold."""
        if not self.monotone:
            return {"pass": [], "fail": []}
        return {"pass": [*self.before, *(self.values[i] for i in self.not_run if i < self.last_pass)],
                "fail": [*(self.values[i] for i in self.not_run if i > self.first_fail), *self.beyond]}

    @property
    def not_run(self) -> tuple[int, ...]:
        """Indices no run judged (neither run nor among the endpoints): their outcome is assumed."""
        return tuple(self._indices(None))

    @property
    def not_run_values(self) -> tuple:
        """Every declared value no run judged, in the order `values` runs: those past the good
        end, those between good and bad not run, those past the bad end."""
        return (*self.before, *(self.values[i] for i in self.not_run), *self.beyond)

    @property
    def failing(self) -> tuple:
        """Every value seen to fail."""
        return tuple(self.values[i] for i in self._indices(Outcome.FAIL))

    @property
    def exact(self) -> bool:
        """The threshold is pinned: the last passing and first failing values are adjacent."""
        return self.first_fail == self.last_pass + 1

    @property
    def value(self) -> Any:
        """The first failing value."""
        return self.values[self.first_fail]

    def describe(self) -> str:
        """The boundary in words, and what it rests on: values not run are named with the outcome
        assumed for them; a failure below a pass is said to be one (no threshold then)."""
        def names(indices, before=(), beyond=()) -> str:
            return ", ".join([*map(str, before), *(str(self.values[i]) for i in indices), *map(str, beyond)])
        good, bad = self.values[self.last_pass], self.values[self.first_fail]
        if not self.monotone:
            # unconfirmed (a failing value passed when run again), the runs may be flakes: they
            # are said as run, with no claim that the failure has no single threshold
            text = (f"fails at {names(self._indices(Outcome.FAIL))} and passes at {names(self._indices(Outcome.PASS))}: "
                    + ("not monotone, so no single threshold" if self.confirmed else "not monotone as run"))
        elif self.exact and self.confirmed:
            # `values` run from good to bad: "on" is up the declared order, unless they run down it
            text = f"fails from {bad} {'down' if self.descending else 'on'} ({good} passes)"
        else:
            text = f"fails at {bad}, passes at {good}"
        if self.switched is not None and self.confirmed:   # the runs since were judged by the flake rule
            index, got = self.switched
            text += f"; intermittent: {self.values[index]} {_AGAIN[got]} when run again"
        if not self.confirmed:
            index, got = self.confirmation.contradicted
            text += f"; not confirmed: {self.values[index]} {_AGAIN.get(got, 'could not be judged')} when run again"
        # every value run that could not be judged, not only those between the bracket: one the
        # bisection met before the bracket narrowed past it, or a spot check below it
        for index in self.doubtful:     # what was seen of a failure below the bracket that did not hold
            runs = [o for o in self.seen.get(index, ()) if o is not Outcome.UNRESOLVED]
            text += f"; {self.values[index]} failed in {runs.count(Outcome.FAIL)} of {len(runs)} runs, not confirmed when run again"
        if unjudged := self._indices(Outcome.UNRESOLVED):
            text += f"; {names(unjudged)} could not be judged"
        # the declared values past the good and the bad value are never run: "fails from X on"
        # speaks of them too, so they are named with the outcome it assumes for them
        below = [i for i in self.not_run if i < self.last_pass]
        above = [i for i in self.not_run if i > self.first_fail]
        n_below, n_above = len(below) + len(self.before), len(above) + len(self.beyond)
        if self.monotone and (n_below or n_above):
            assumed = ([f"{names(below, before=self.before)} pass{'es' if n_below == 1 else ''}"] if n_below else []) + \
                      ([f"{names(above, beyond=self.beyond)} fail{'s' if n_above == 1 else ''}"] if n_above else [])
            text += f"; not run, assumed: {' and '.join(assumed)}"
        elif self.not_run_values:
            text += f"; not run: {names(self.not_run, self.before, self.beyond)}"
        return text


def find_threshold(values: Sequence[Hashable], oracle: Callable[[int], Outcome], *,
                   rule: ConfidenceRule | None = None,
                   on_attempt: Callable[[Attempt], None] | None = None,
                   should_stop: Callable[[], bool] | None = None,
                   max_runs: int | None = None,
                   known: Mapping[int, Outcome] | None = None,
                   spot_checks: int = SPOT_CHECKS, descending: bool = False,
                   before: Sequence[Hashable] = (), beyond: Sequence[Hashable] = (),
                   confidence: float | None = None, evidence: tuple[int, int] = (0, 0),
                   costs: Costs | None = None, steady: bool = False,
                   good: tuple[int, int] | None = None,
                   more_runs: Callable[[], int] | None = None) -> Threshold:
    """Bisect `values` (ordered, good value first, bad value last) to the failure threshold,
    then run up to `spot_checks` of the values below the bracket it skipped (module docstring).
    `descending`: `values` run down (the caller's reading: numbers as numbers run, other values
    the declared order reversed), so the answer says the failure goes down from the threshold,
    not on from it. `before` and
    `beyond`: the declared values past the good and the bad end (in the order `values` runs),
    never run; the answer names them with the outcome it assumes. `confidence`: confirm the
    boundary before it is given (module docstring); `evidence`: (fails, runs) seen before this
    search at configurations called failing (the bad endpoint's, the culprit search's), `costs()`:
    (seconds of a failing run, of a passing one), `steady`: the failure was declared deterministic,
    `good`: the good endpoint's (fails, runs) where nothing declared how the good side fails.
    `max_runs`, `more_runs`: the run budget, as Tester takes them (every run counts: the
    bisection's, the spot checks', the confirmation's).

    Invariant: lo PASSes, hi FAILs, lo < hi. Each probe between them moves one end onto an
    index just observed with that outcome; UNRESOLVED probes are skipped (nearest to the
    midpoint first), so the loop ends when lo and hi are adjacent or only unresolved indices
    lie between them. Raises SearchStopped carrying the bracket so far when stopped.
    """
    if len(values) < 2:
        raise ValueError("an ordinal factor needs at least the good and the bad value")
    tester = Tester(oracle, rule=rule, on_attempt=on_attempt, should_stop=should_stop,
                    max_runs=max_runs, known=known, more_runs=more_runs)
    last = len(values) - 1
    tester.seed(0, Outcome.PASS)
    tester.seed(last, Outcome.FAIL)
    lo, hi, check, switched = 0, last, None, None
    try:
        while True:
            lo, hi = 0, last
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
            for index in spread([i for i in range(1, lo) if tester.outcome_of(i) is None], spot_checks):
                tester.test(index, "spot-check")
            if confidence is None:
                break
            check = _confirm(tester, lo, hi, last, confidence, evidence, costs, steady, good)
            if (check.ok or tester.rule is not None or switched is not None
                    or check.contradicted[1] == Outcome.UNRESOLVED.value):
                break
            # a deterministic bisection contradicted: the failure is intermittent; on in the flake
            # rule from every run made (verdicts re-read from their runs), and confirmed again
            switched = check.contradicted
            tester.switch(switched_rule(tester, evidence, confidence))
    except (StopSearch, KeyboardInterrupt) as stop:
        raise SearchStopped(_answer(values, tester, lo, hi, complete=False, descending=descending,
                                    before=tuple(before), beyond=tuple(beyond), switched=switched), stop,
                            "budget" if isinstance(stop, BudgetSpent) else None) from stop
    return _answer(values, tester, lo, hi, complete=True, descending=descending,
                   before=tuple(before), beyond=tuple(beyond), confirmation=check, switched=switched)


def _confirm(tester: Tester, lo: int, hi: int, last: int, confidence: float, evidence: tuple[int, int],
             costs: Costs | None, steady: bool, good: tuple[int, int] | None = None) -> SetConfirmation:
    """Run the boundary again, as confirm.confirm_sets runs a sets answer's claims: `hi` must fail
    again (under the one-sided rule with `good` given, as evidence under two rates: module
    docstring), then `lo` pass `repeats` times in a row, from the failure rate seen at values
    judged failing and `evidence`; stops at the first contradiction. Index 0 and `last` are the
    verified endpoints: not claims of this search. Then each value below `lo` judged failing (a
    claim that the failure is not monotone) must fail again as `hi` must: without a rule, one
    that passes is a contradiction (the failure is intermittent); under one, or where the re-run
    cannot be judged, it is no claim, and its check (expected "fail", got "pass" or "unresolved")
    says so to _answer."""
    checks: list[tuple[int, str, str]] = []

    def again(index: int, expect: Outcome, passes: int = 1, *judged) -> bool:
        got = tester.confirm(index, expect, passes, *judged)
        checks.append((index, expect.value, got.value))
        return got is expect

    def old_side(claim: int) -> tuple[int, int]:    # good's runs, and those of the other values below `hi`
        fails, runs = good
        for key, history in tester.history.items():
            judged = [o for o in history if o is not Outcome.UNRESOLVED]
            if key < hi and key != claim:
                fails, runs = fails + judged.count(Outcome.FAIL), runs + len(judged)
        return fails, runs

    two_rate = good is not None and isinstance(tester.rule, ConfidenceRule)

    def fail_again(index: int) -> bool:
        if not two_rate:
            return again(index, Outcome.FAIL)
        given = _unselected(tester.history.get(index, ()))
        judge = old_side_rule(tester, old_side(index), confidence)
        return again(index, Outcome.FAIL, 1, judge, given,   # good's value (index 0) measured too
                     measuring(tester, lambda: old_side(index), confidence, 0, len(given), [], judge))
    def boundary() -> tuple[int, tuple | None]:     # (repeats, the contradiction or None)
        made = repeats = 0
        if hi < last:
            made = 1
            if not fail_again(hi):
                return 0, (hi, checks[-1][2])
        if lo == 0:
            return 0, None
        fails, runs = failing_evidence(tester, evidence)
        repeats = 1 if steady and tester.rule is None else repeats_for(fails, runs, confidence)
        if tester.rule is not None:     # fresh passes, at least as many as the rule's verdicts needed
            repeats = max(repeats, getattr(tester.rule, "repeats", 1))
        elif not steady:    # each more failure of `hi` lowers the passes `lo` needs: the cheapest split
            more, repeats = plan_confirmation(fails - made, runs - made, 1, confidence,
                                              costs() if costs else (1.0, 1.0))
            for _ in range(more - made):
                if not again(hi, Outcome.FAIL):
                    return 0, (hi, checks[-1][2])
        if not again(lo, Outcome.PASS, repeats):
            return repeats, (lo, checks[-1][2])
        return repeats, None
    repeats, contradicted = boundary()
    if contradicted is not None and tester.rule is None and contradicted[1] != Outcome.UNRESOLVED.value:
        return SetConfirmation(repeats, tuple(checks), contradicted)    # the caller goes on under the flake rule
    # the answer is final (confirmed or not): a value below the bracket that failed would make it
    # say the failure is not monotone, so it is run again first, as `hi` was
    for index in [i for i in range(1, lo) if tester.outcome_of(i) is Outcome.FAIL]:
        if (not fail_again(index) and contradicted is None and tester.rule is None
                and checks[-1][2] == Outcome.PASS.value):
            return SetConfirmation(repeats, tuple(checks), (index, checks[-1][2]))  # intermittent: as above
    return SetConfirmation(repeats, tuple(checks), contradicted)


def spread(indices: Sequence[int], k: int) -> list[int]:
    """At most `k` of `indices`, evenly spread over them (all of them when there are no more)."""
    if len(indices) <= k:
        return list(indices)
    if k <= 0:
        return []
    if k == 1:
        return [indices[len(indices) // 2]]
    return [indices[round(j * (len(indices) - 1) / (k - 1))] for j in range(k)]


def _answer(values: Sequence[Hashable], tester: Tester, lo: int, hi: int,
            complete: bool, descending: bool = False, before: tuple = (), beyond: tuple = (),
            confirmation: SetConfirmation | None = None, switched: tuple | None = None) -> Threshold:
    unresolved = tuple(i for i in range(lo + 1, hi) if tester.outcome_of(i) is Outcome.UNRESOLVED)
    outcomes = [tester.outcome_of(i) for i in range(len(values))]
    # a failure below the bracket that did not fail again as the confirmation asked: what its re-run
    # said stands for it (it is no claim that the failure is not monotone), and the answer says it failed
    doubtful = {index: Outcome(got) for index, expect, got in (confirmation.checks if confirmation else ())
                if index < lo and expect == Outcome.FAIL.value and got != expect}
    for index, got in doubtful.items():
        outcomes[index] = got
    return Threshold(tuple(values), lo, hi, unresolved, tuple(tester.attempts), tester.runs,
                     complete, tuple(outcomes), descending, before, beyond, confirmation, switched,
                     tuple(sorted(doubtful)), {i: tuple(tester.history.get(i, ())) for i in doubtful})
