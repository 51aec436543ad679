"""Factor ablation: the strategy registry and the one entry point the CLI calls.

Abstractions
------------
Strategy   -- a named search: a function (Tester, differences) -> Finding, a one-line summary
              for `--help`, and an optional limit on the number of differences.
STRATEGIES -- the registry, by name; the CLI's `--strategy` choices come from it, the default
              ('adaptive') first.
ablate     -- run one strategy over the differences and an oracle, settle its answer
              (1-minimality, interaction proof), confirm it (confirm.py: a contradiction
              switches a deterministic search to the flake rule, which goes on from every run
              made) and build the AblationResult. When the oracle or the stop hook raises
              StopSearch or KeyboardInterrupt, or the run budget is spent, it raises
              SearchStopped carrying the best result so far. An answer that is the empty set
              (good itself was seen to fail: state a run leaves for the next, a good side that
              fails sometimes) is never complete: its stop reason is GOOD_FAILED.
first_runs -- the configurations a search would most likely run first (ahead.plan over no
              runs): begun before it, beside the bad endpoint's run, and handed to `ablate`.

A configuration is the good endpoint with a subset of the differences applied, passed to the
oracle as a frozenset. The empty set (good) PASSes and the full set (bad) FAILs: the caller has
verified both, and they are never run again here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass

from bisectk.outcome import Outcome
from bisectk.search.ahead import plan
from bisectk.search.dd import dd_strategy
from bisectk.search.ddmin import ddmin_strategy
from bisectk.search.confirm import confirm_sets, set_claims, switched_rule
from bisectk.search.group import adaptive
from bisectk.search.interaction import is_interaction, settle
from bisectk.search.names import DEFAULT_STRATEGY, NAMES, strategy_names  # noqa: F401  (re-exported)
from bisectk.search.ofat import EXHAUSTIVE_MAX, exhaustive, ofat
from bisectk.search.result import GOOD_FAILED, UNDECIDED, AblationResult, Finding, advise, build_result
from bisectk.search.sets import FailingSet, find_other_sets
from bisectk.search.tester import Attempt, Rule, SearchStopped, StopSearch, Tester


@dataclass(frozen=True)
class Strategy:
    name: str
    run: Callable[[Tester, Sequence[Hashable]], Finding]
    summary: str
    max_n: int | None = None


STRATEGIES: dict[str, Strategy] = {}


def register(name: str, run: Callable[[Tester, Sequence[Hashable]], Finding], summary: str,
             max_n: int | None = None) -> Strategy:
    if name in STRATEGIES:
        raise ValueError(f"strategy {name!r} is already registered")
    if name not in NAMES:
        raise ValueError(f"strategy {name!r} is not in bisectk/search/names.py (the CLI's choices)")
    STRATEGIES[name] = Strategy(name, run, summary, max_n)
    return STRATEGIES[name]


register("adaptive", adaptive,
         "binary splitting: one culprit in ~log2 n runs, interactions member by member (default)")
register("ddmin", ddmin_strategy,
         "Zeller's ddmin from the bad side: a 1-minimal failing subset")
register("dd", dd_strategy,
         "Zeller & Hildebrandt's dd isolation: a 1-minimal difference between a passing and "
         "a failing configuration")
register("ofat", ofat,
         "one factor at a time, both directions: 2n runs, the full key-differences table")
register("exhaustive", exhaustive,
         f"full factorial: every combination (n <= {EXHAUSTIVE_MAX})", max_n=EXHAUSTIVE_MAX)


def ablate(differences: Sequence[Hashable], oracle: Callable[[frozenset], Outcome], *,
           strategy: str = DEFAULT_STRATEGY,
           rule: Rule | None = None,
           on_attempt: Callable[[Attempt], None] | None = None,
           should_stop: Callable[[], bool] | None = None,
           max_runs: int | None = None,
           known: Mapping[frozenset, Outcome] | None = None,
           measure_removal: bool = False,
           more_sets: int = 0,
           confidence: float | None = None,
           endpoint: tuple[int, int] = (0, 0),
           costs: Callable[[], tuple[float, float]] | None = None,
           batch: Callable[[Sequence[frozenset]], Sequence[Outcome]] | None = None,
           width: Callable[[], int] | None = None,
           submit: Callable[[frozenset], Future] | None = None,
           waiting: Callable[[], AbstractContextManager] | None = None,
           risky: Callable[[], int | None] | None = None,
           started: Mapping[frozenset, Sequence[Future]] | None = None,
           steady: bool = False,
           more_runs: Callable[[], int] | None = None,
           good: tuple[int, int] | None = None) -> AblationResult:
    """Find the 1-minimal set of differences that causes the failure.

    `rule` turns single-shot noisy verdicts into confident ones (ConfidenceRule.derive, or
    rates.RateRule under two rates); `known` replays outcomes from an earlier session without
    running them; with `measure_removal` each culprit is also reverted alone from bad, for the
    table. With `more_sets` > 0 the search goes on after the first set, while bad without a fix of
    the sets found still fails, for up to that many other independent failing sets (sets.py); a
    stop in that part keeps the first set.

    With `confidence`, the answer is confirmed before it is given (confirm.py): the culprit sets
    fail again, bad without each fix passes again, an interaction's proper subsets pass again.
    A contradiction of a search without a rule means the failure is intermittent: the Tester
    switches to the one-sided flake rule (from the runs so far and the bad endpoint's
    `endpoint` = (fails, runs)) and the search goes on from every run made, then is confirmed
    again. A contradiction under a rule leaves the answer unconfirmed (incomplete). `costs()`:
    (seconds of a failing run, of a passing one), so the confirmation costs least time (confirm.py).
    `batch` / `width()`: an oracle that runs several configurations side by side, and how many a
    round may hold: the confirmation's passes of one configuration go in such rounds (Tester).
    `submit` (with `width`): an oracle that starts one run and returns its Future; the runs the
    search will likely ask next then run ahead of it in the idle slots (ahead.py), with the
    answers of a one-at-a-time search; `result.unused` counts those it never took. `waiting()`
    is held while the search waits on runs (the engine's: a Ctrl-C stops it there); `risky()`:
    how many runs not expected to pass may go ahead now (a warm pool's spares; None: any).
    `started`: runs begun before the search (first_runs, while the bad endpoint ran), per
    configuration, taken like runs made ahead (with `submit`). `steady`: the failure was declared
    deterministic (--no-flaky), and the confirmation runs each claim once (confirm.py).
    `good`: the good endpoint's (fails, runs) where nothing declared how the good side fails
    (no --flaky): an answer reached under the one-sided rule (an intermittent start, or after a
    contradiction) has each FAIL claim confirmed as evidence under two rates (confirm.claim_rule),
    not taken as proven by one more failure. `more_runs()`: the runs the oracle made beyond one a question (it re-runs a different
    failure), which `max_runs` counts too (Tester).
    """
    items = list(differences)
    if not items:
        raise ValueError("no differences between the good and the bad configuration")
    if len(set(items)) != len(items):
        raise ValueError("differences must be distinct")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {strategy_names()}")
    chosen = STRATEGIES[strategy]
    if chosen.max_n is not None and len(items) > chosen.max_n:
        raise ValueError(f"strategy {strategy!r} handles at most {chosen.max_n} differences")

    def whole(t: Tester) -> tuple[AblationResult, bool, tuple | None]:
        return _whole(t, chosen, items, measure_removal, more_sets, confidence, endpoint, costs, steady, good)

    ahead = None
    if submit is not None:
        replayed = _replayer(whole, items, rule, known)

        def ahead(runs_of: Callable, slots: int, risky: int | None = None) -> list:
            return plan(replayed, runs_of, slots, risky)
    tester = Tester(oracle, rule=rule, on_attempt=on_attempt, should_stop=should_stop,
                    max_runs=max_runs, known=known, batch=batch, width=width, submit=submit, ahead=ahead,
                    waiting=waiting, risky=risky, more_runs=more_runs)
    tester.seed(frozenset(), Outcome.PASS)
    tester.seed(frozenset(items), Outcome.FAIL)
    if started and submit is None:
        raise ValueError("runs started before the search need `submit` (the search takes them as runs made ahead)")
    for key, futures in (started or {}).items():
        for future in futures:
            tester.adopt(key, future)
    try:
        result, interrupted, _ = whole(tester)
    except (StopSearch, KeyboardInterrupt) as stop:
        reason = "interrupted" if isinstance(stop, KeyboardInterrupt) else (str(stop) or "stopped")
        tester.drain(block=False)
        partial = best_so_far(strategy, items, tester, reason)
        partial.switched = getattr(stop, "switched", None)
        partial.unused, partial.taken_ahead = tester.unused, tester.taken_ahead
        raise SearchStopped(partial, stop) from stop
    except BaseException:
        tester.drain(block=False)
        raise
    tester.drain()
    result.unused, result.taken_ahead = tester.unused, tester.taken_ahead
    if interrupted:   # Ctrl-C while looking for other sets: the first set stands
        raise SearchStopped(result, KeyboardInterrupt())
    # every run this search made: the confirmation's, and those made ahead of it (taken or not)
    result.attempts, result.runs = list(tester.attempts), tester.runs
    if result.complete and not result.culprits and not result.context:
        # good, seeded PASS, was judged FAIL: the answer says nothing about the differences
        result.complete, result.stop_reason = False, GOOD_FAILED
    elif result.complete and undecided(tester, result):
        # a set kept a member because the rule could not judge the set without it: not shown
        # necessary, so what is known is what a stopped search shows (best_so_far), never more
        kept = result
        result = best_so_far(strategy, items, tester, UNDECIDED)
        result.confirmation, result.switched = kept.confirmation, kept.switched
        result.unused, result.taken_ahead = kept.unused, kept.taken_ahead
    if not result.complete:     # its advice says how many runs it took: all of them, the confirmation's too
        result.advice = advise(result)
    return result


def _replayer(whole: Callable[[Tester], object], items: list, rule: Rule | None,
              known: Mapping[frozenset, Outcome] | None) -> Callable:
    """The search as ahead.plan replays it: a shadow Tester over supposed runs, the endpoints seeded."""
    def replayed(ask: Callable[[frozenset], Outcome], expecting: Callable) -> None:
        shadow = Tester(ask, rule=rule, known=known)
        expecting(lambda: shadow.expecting)
        shadow.seed(frozenset(), Outcome.PASS)
        shadow.seed(frozenset(items), Outcome.FAIL)
        whole(shadow)
    return replayed


def first_runs(differences: Sequence[Hashable], slots: int, risky: int | None = None, *,
               strategy: str = DEFAULT_STRATEGY, rule: Rule | None = None, measure_removal: bool = False,
               more_sets: int = 0, confidence: float | None = None, endpoint: tuple[int, int] = (1, 1),
               costs: Callable[[], tuple[float, float]] | None = None, steady: bool = False,
               good: tuple[int, int] | None = None) -> list[frozenset]:
    """The configurations `ablate` with these arguments would most likely run first, at most
    `slots` (ahead.plan over no runs): started while the bad endpoint's run is still under way
    (its failure supposed), they are taken by the search through `ablate(started=...)` when it
    asks. An unknown strategy or no differences: none (ablate itself says why)."""
    items = list(differences)
    if strategy not in STRATEGIES or not items or slots <= 0:
        return []

    def whole(t: Tester) -> object:
        return _whole(t, STRATEGIES[strategy], items, measure_removal, more_sets, confidence, endpoint, costs,
                      steady, good)
    return plan(_replayer(whole, items, rule, None), lambda key: (), slots, risky)


def _whole(tester: Tester, chosen: Strategy, items: list, measure_removal: bool, more_sets: int,
           confidence: float | None, endpoint: tuple[int, int],
           costs: Callable[[], tuple[float, float]] | None,
           steady: bool = False, good: tuple[int, int] | None = None) -> tuple[AblationResult, bool, tuple | None]:
    """The search, settled and confirmed (ablate's docstring): (result, whether a Ctrl-C ended its
    sets part, the contradiction that switched it to the flake rule). A stop raised in the switched
    part carries the switch (`switched` on the exception)."""
    switched = None
    try:
        result, interrupted = _search(tester, chosen, items, measure_removal, more_sets)
        while confidence is not None and result.complete and not interrupted:
            must_fail, must_pass = set_claims(frozenset(items), result.sets or [FailingSet(result.culprits, result.proof,
                                                                                          result.interaction)],
                                              result.fixes, result.context)
            check = confirm_sets(tester, must_fail, must_pass, confidence, endpoint, costs, steady, good,
                                 result.context)
            result.confirmation, result.switched = check, switched
            if check.ok:
                break
            if tester.rule is not None or switched is not None:
                # the answer did not hold, and no other model is left: it is not given as found
                result.complete, result.stop_reason = False, "unconfirmed"
                result.advice = advise(result)
                break
            switched = check.contradicted
            tester.switch(switched_rule(tester, endpoint))
            result, interrupted = _search(tester, chosen, items, measure_removal, more_sets)
            result.switched = switched
    except (StopSearch, KeyboardInterrupt) as stop:
        stop.switched = switched
        raise
    return result, interrupted, switched


def _search(tester: Tester, chosen: Strategy, items: list, measure_removal: bool,
            more_sets: int) -> tuple[AblationResult, bool]:
    """The strategy's answer settled (1-minimal, interaction proved), every other failing set,
    and whether a Ctrl-C ended the sets part (the first set stands)."""
    everything = frozenset(items)
    finding = chosen.run(tester, items)
    culprits, proof = settle(tester, finding.culprits, finding.context)
    if measure_removal:
        for culprit in culprits:
            tester.test(everything - {culprit}, "confirm-removal")
    interaction = is_interaction(culprits, proof)
    if not more_sets or finding.context:   # dd's answer with a context is a difference, not a set
        return build_result(chosen.name, items, tester, culprits, finding.context, proof, interaction,
                            finding.also_failing), False
    first = FailingSet(tuple(d for d in items if d in culprits), proof, interaction)
    known_sets = [s for s in finding.also_failing if s != frozenset(culprits)]
    sets = find_other_sets(tester, items, first, known_sets, chosen.run, 1 + more_sets, measure_removal)
    return build_result(chosen.name, items, tester, culprits, finding.context, proof, interaction,
                        finding.also_failing, sets=sets), sets.interrupted


def undecided(tester: Tester, result: AblationResult) -> bool:
    """Whether a set of the answer holds a member that was never shown necessary because the rule
    could not judge the set without it: every run of that configuration was judged, yet the
    rule gave no verdict (rates.RateRule's UNRESOLVED after its most runs: a rate between the
    two). Minimisation keeps a member whose removal did not FAIL, as a build failure does; here
    the configuration without it may well fail (the lone true culprit, failing at the bad
    endpoint's rate, measured against endpoints whose rates were known only roughly). Before,
    such a set was answered at exit 0 as 1-minimal (over 100 seeded races 10% -> 40% under
    --flaky, 7 of 15 answers named an innocent factor with the culprit)."""
    if tester.rule is None or result.context:
        return False
    for found in result.sets or [FailingSet(result.culprits, result.proof, result.interaction)]:
        members = frozenset(found.members)
        for member in members if len(members) > 1 else ():
            key = members - {member}
            runs = tester.history.get(key, ())
            if (tester.outcome_of(key) is Outcome.UNRESOLVED and runs
                    and all(o is not Outcome.UNRESOLVED for o in runs)):
                return True
    return False


def best_so_far(strategy: str, items: Sequence[Hashable], tester: Tester,
                reason: str = "") -> AblationResult:
    """What a stopped search has shown, never more: the smallest failing configuration observed,
    split into members shown necessary (that set without the member was seen to PASS) and members
    not yet resolved (reported as unknown, never as culprits)."""
    failing = [key for key in tester.failing() if isinstance(key, frozenset)]
    smallest = min(failing, key=len)  # the bad endpoint is seeded FAIL, so never empty
    proven = [d for d in items if d in smallest and tester.outcome_of(smallest - {d}) is Outcome.PASS]
    unsure = [d for d in items if d in smallest and d not in proven]
    return build_result(strategy, items, tester, proven, frozenset(), {}, False, complete=False,
                        suspects=unsure, stop_reason=reason)
