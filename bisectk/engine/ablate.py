"""`bisectk ablate` (and the search half of `diff`): which differences, alone or together, cause the
failure -- over any set space (factors, hunks, environment variables).

Abstractions
------------
SetSearch        -- one search over a set space: its result (search.AblationResult) and whether it
                    was stopped.
search_set       -- run a strategy over a space's differences through its oracle, with the
                    flakiness rule; a stop (Ctrl-C, the run budget) keeps the best result so far.
FirstRuns        -- with --jobs above one, the search's likely first runs, begun beside the good
                    and bad endpoints' first runs (a GPU hang holds a slot a second or more) and
                    taken by the search when it asks.
attempt_records  -- the search's attempts as AttemptRecords, with each configuration's verdict and
                    the runs each attempt took (as the oracle made them).
good_runs        -- the good endpoint's runs, for a confirmation that weighs a failure as evidence
                    unless the two-rate rule (--flaky, good failing in its runs) is the model.
counted          -- the search's steps with the runs it made, as the trials count them.
good_suspect     -- what in a search's answer says the good side may fail too (more than one
                    failing set, or unconfirmed, under the one-sided flake rule; an empty answer,
                    under any rule): the cue for endpoints.recheck_good, which recheck_after runs
                    (diff's search too).
rule_doc         -- the record's flakiness rule: --flaky's, or --no-flaky's declaration (STEADY).
run_ablation     -- the whole command: verify the endpoints, make the judging oracle with the
                    failure they showed, derive the flakiness rule from the endpoint runs when the
                    failure is intermittent, search, re-check good when the answer says it may
                    fail too (good_suspect), find thresholds of ordinal culprits, add
                    evidence (PTX, sanitizer), and return an AblationRecord whose next steps are
                    facts (report/advice.py words them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass

from bisectk.engine.endpoints import hang_checks, recheck_good, side_by_side, unusable_record, verify
from bisectk.engine.hangs import hang_facts
from bisectk.names import counted as nouns, shell_join
from bisectk.engine.interrupts import live
from bisectk.engine.oracle import SEARCH, THRESHOLD, Oracle, Trials
from bisectk.engine.policy import RunPolicy
from bisectk.engine.shared_dir import Listing, collision_words
from bisectk.engine.records import AblationRecord, AttemptRecord, EndpointCheck, SubjectRecord, captured, stop_reason_of
from bisectk.events import Note, PhaseStarted
from bisectk.names import c_quoted
from bisectk.outcome import Outcome
from bisectk.run.runner import Runner
from bisectk.search.rates import RateRule
from bisectk.search.result import GOOD_FAILED
from bisectk.search import (AblationResult, ConfidenceRule, SearchStopped, Threshold, ablate,
                            find_threshold, first_runs)
from bisectk.spaces.factors import FactorSpace
from bisectk.spec import Spec
from bisectk.specvalues import format_value, same_value

OUTCOME_WORDS = {None: "-", Outcome.PASS: "passes", Outcome.FAIL: "FAILS", Outcome.UNRESOLVED: "unresolved"}
ROLE_TEXT = {"culprit": "CULPRIT", "context": "context", "cleared": "cleared", "unknown": "not isolated",
             "unresolved": "UNRESOLVED (search stopped)"}
MORE_SETS = 7   # independent failing sets looked for after the first (8 in all), within --max-runs
# --no-flaky: no rule, and what the confirmation rests on instead (search/confirm.py, `steady`)
STEADY = {"kind": "steady", "text": "none: --no-flaky declared the failure deterministic, so the answer was confirmed "
                                    "by one more run of each configuration it rests on (an intermittent failure could "
                                    "slip through)"}


def rule_doc(rule, policy: RunPolicy, res: AblationResult) -> dict | None:
    """The record's `flakiness_rule`: --flaky's rule (or the endpoints'), the one a contradiction
    switched the search to (a failure nobody declared intermittent), or --no-flaky's declaration
    while no contradiction switched it."""
    if res.switched and res.rule is not None:
        return res.rule.to_dict()
    if rule is not None:
        return rule.to_dict()
    return STEADY if policy.flaky is False and not res.switched else None


@dataclass
class SetSearch:
    result: AblationResult
    stopped: bool


def flakiness_rule(check: EndpointCheck, two_rate: bool = False) -> ConfidenceRule | RateRule | None:
    """The rule that clears a configuration only after enough passes, from the endpoint runs;
    under --flaky with a good endpoint that fails too (a race that got more frequent), the
    two-rate rule (rates.RateRule) from both endpoints' runs."""
    if two_rate and check.good_rate.fails and check.bad_rate.fails:
        return RateRule(check.good_rate.fails, check.good_rate.runs, check.bad_rate.fails, check.bad_rate.runs)
    if not check.flaky or check.bad_rate.fails == 0:
        return None
    return ConfidenceRule.derive(check.bad_rate.fails, check.bad_rate.runs)


def good_runs(check: EndpointCheck, policy: RunPolicy) -> tuple[int, int] | None:
    """The good endpoint's (fails, runs) for the search's confirmation, unless the two-rate rule
    is the model already (--flaky, and good showed the failure in its runs: flakiness_rule).
    Without --flaky nothing says the good side never fails; with --flaky the user said it may
    fail, less often, and its runs passing every time (a 2% race over 10 runs) left the search
    under the one-sided rule all the same. Either way an answer reached under the one-sided rule
    has its FAIL claims confirmed under two rates (search.confirm.claim_rule): before, under
    --flaky, one spurious failure of a hybrid on good's side was proof, and named a wrong set
    at exit 0."""
    if policy.flaky is True and check.good_rate.fails and check.bad_rate.fails:
        return None
    return (check.good_rate.fails, check.good_rate.runs)


def good_suspect(res: AblationResult, stopped: bool) -> str | None:
    """What, in a search's answer, says the good side may fail too (engine/endpoints.py, 6.), in
    words; None when nothing does. Only under the one-sided flake rule, whose every failure is
    proof (no rule: a deterministic search whose confirmation held; two rates: good's failures
    are in the model): more than one independent failing set, or an answer its confirmation
    contradicted. Not after a Ctrl-C: the user asked to stop. Under any rule, or none: an answer
    that is the empty set (good was seen to fail in the search, search.result.GOOD_FAILED)."""
    if res.stop_reason == GOOD_FAILED:
        return "the good configuration failed in the search"
    if not isinstance(res.rule, ConfidenceRule) or (stopped and res.stop_reason == "interrupted"):
        return None
    sets = [s.members for s in res.sets if s.members]
    if len(sets) > 1:
        return (f"the search found {len(sets)} independent failing sets ("
                + "; ".join("{" + ", ".join(map(str, m)) + "}" for m in sets) + ")")
    if res.stop_reason == "unconfirmed":
        return "the confirmation of the search's answer contradicted it under the flake rule"
    return None


def search_set(oracle: Oracle, differences: list, *, strategy: str, rule: ConfidenceRule | RateRule | None,
               max_runs: int | None, measure_removal: bool = False, more_sets: int = 0,
               confidence: float | None = None, endpoint: tuple[int, int] = (0, 0),
               started: dict | None = None, good: tuple[int, int] | None = None,
               known: dict | None = None) -> SetSearch:
    """`confidence`: the answer is confirmed before it is given (search.confirm: no confidence
    without confirmation), at the least cost in time from what this command's failing and passing
    runs took; `endpoint`: the bad endpoint's (fails, runs). With --jobs above one, that many
    runs go side by side: those the search asks, and in the slots it leaves idle those it will
    likely ask next (search/ahead.py; Oracle.submit); `started`: the runs FirstRuns began beside
    the bad endpoint's. `good`: the good endpoint's (fails, runs) where no --flaky declared how
    good fails (good_runs): a FAIL claim the search took on one failure is confirmed as evidence.
    `known`: verdicts judged before, not run again (diff's line pass: the hunk pass's, on the same
    trees)."""
    side = oracle.policy.jobs > 1
    try:
        return SetSearch(ablate(differences, oracle, strategy=strategy, rule=rule, max_runs=max_runs,
                                measure_removal=measure_removal, more_sets=more_sets, confidence=confidence,
                                endpoint=endpoint, costs=oracle.trials.costs, width=oracle.ready_width if side else None,
                                submit=oracle.submit if side else None, waiting=live,
                                risky=oracle.trials.runner.spares, started=started if side else None,
                                steady=oracle.policy.flaky is False, more_runs=oracle.more_runs, good=good,
                                known=known), False)
    except SearchStopped as stop:
        # runs made ahead and still under way end with the command, after the record is made:
        # they are not stored, so the ledger holds the runs the record counts
        oracle.trials.runner.drop_under_way()
        return SetSearch(stop.result, True)
    finally:
        oracle.close()


def recheck_after(trials: Trials, differences, check: EndpointCheck, res: AblationResult, policy: RunPolicy,
                  why: str) -> tuple[EndpointCheck, str]:
    """The good endpoint run again after a search whose answer asks for it (`why`, in words:
    good_suspect), as often as the search's rule asks of a configuration it clears: the check that
    gives, and why it was cut short ('' when it was not: a Ctrl-C leaves the search's answer as it
    was, stopped)."""
    try:
        return recheck_good(trials, frozenset(), frozenset(differences), check,
                            max(getattr(res.rule, "repeats", 1), policy.calibrate_runs), why,
                            one_sided=res.stop_reason != GOOD_FAILED), ""
    except KeyboardInterrupt:
        return check, "interrupted while re-checking the good endpoint"


class FirstRuns:
    """The search's likely first runs, begun before the endpoints are known (--jobs above one;
    verify's `meanwhile`): on a GPU the bad endpoint's run is often a hang, a second or more of
    the watchdog with the other slots idle. Each is a real run of its configuration, submitted to
    the search's oracle before its target failure is known (Oracle.unaimed) and judged once it
    is; the search takes them when it asks (ablate's `started`), and one it never asks counts
    as made ahead and not needed. Not under --flaky, whose rule comes from the endpoint runs.

    Where the executor allows (endpoints._beside_good), they begin with the bad
    endpoint's run beside the good endpoint's, their watchdog set once it passed: `early` starts
    all but one slot's (good and bad hold one each), `then` the last once good has passed, and
    `drop` ends them unjudged when it did not. Else `__call__` starts them beside the bad
    endpoint's run, once good has passed."""

    def __init__(self, oracle: Oracle, differences: list, *, strategy: str, repeat: int):
        self.oracle, self.differences, self.strategy, self.repeat = oracle, differences, strategy, repeat
        self.started: dict[frozenset, list[Future]] = {}
        self._later: list[frozenset] = []

    def wanted(self) -> bool:
        """Side-by-side slots (--jobs above one), and no --flaky."""
        return side_by_side(self.oracle.policy)

    def _keys(self, early: bool = False) -> list[frozenset]:
        policy, runner = self.oracle.policy, self.oracle.trials.runner
        slots = policy.jobs - 1     # the bad endpoint's run holds one
        if policy.max_runs is not None:
            slots = min(slots, policy.max_runs - policy.jobs)
        risky = runner.spares()
        if early and risky is not None:     # a warm pool still importing has no spare yet: it will
            risky = max(risky, slots)
        return first_runs(self.differences, slots, risky, strategy=self.strategy,
                          measure_removal=True, more_sets=MORE_SETS, confidence=policy.confidence,
                          endpoint=(self.repeat, self.repeat), costs=self.oracle.trials.costs,
                          steady=policy.flaky is False)

    def _submit(self, keys: list[frozenset]) -> None:
        for key in keys:
            self.started.setdefault(key, []).append(self.oracle.submit(key))

    def __call__(self) -> None:
        if not self.wanted():
            return
        keys = self._keys()
        self._submit(keys)
        if keys:
            self.oracle.trials.runner.events.emit(
                Note(f"{len(keys)} of the search's likely first runs start beside the bad endpoint's"))

    def early(self) -> None:
        keys = self._keys(early=True)
        now = min(len(keys), self.oracle.policy.jobs - 2)      # the good and bad endpoints' runs hold two
        self._submit(keys[:now])
        self._later = keys[now:]
        also = f" and {now} of the search's likely first runs" if now else ""
        self.oracle.trials.runner.events.emit(Note(
            f"the bad endpoint's run{also} start beside the good endpoint's; their watchdog is set once it has passed"))

    def then(self) -> None:
        """The good endpoint passed: the slot its run held takes the last of the first runs."""
        self._submit(self._later)
        self._later = []

    def drop(self) -> None:
        """The good endpoint did not pass: the first runs end unjudged (the runner's hold ends
        those begun; those not begun are cancelled), and none is left for the search to take."""
        futures = [f for fs in self.started.values() for f in fs]
        for f in futures:
            f.cancel()
        futures_wait(futures)
        self.started.clear()
        self._later = []

    def wait(self) -> None:
        """Let the runs begun end (the endpoints proved unusable: no search takes them)."""
        futures_wait([f for fs in self.started.values() for f in fs])


def attempt_records(oracle: Oracle, result: AblationResult, order: Callable, pass_name: str = "") -> list[AttemptRecord]:
    """Each attempt with its configuration's verdict (every run of it this command saw, folded),
    and the runs it took itself, with their time: the search counts one run a question, and each
    attempt takes the next of its configuration's questions, in the order asked
    (Oracle.questions), whose runs the oracle made (one, more when it re-ran a different failure
    or gave a second chance, none when a Ctrl-C cut it short)."""
    rows = []
    asked: dict[str, Iterator[list]] = {}
    for a in result.attempts:   # a set search's points are sets of differences
        v = oracle.trials.verdict(a.config)
        applied = tuple(str(x) for x in sorted(a.config, key=order))
        failure = v.failure(oracle.mode) if v else None
        questions = asked.setdefault(oracle.space.key(a.config), iter(oracle.questions(a.config)))
        own = [r for _ in range(a.runs) for r in next(questions, ())]
        rows.append(AttemptRecord(a.index, a.phase, applied, oracle.space.label(a.config), a.outcome.value,
                                  v.describe() if v else a.outcome.value.upper(),
                                  failure.describe() if failure else None, len(own),
                                  round(sum(r.duration_s for r in own), 3), oracle.trials.from_ledger(a.config),
                                  pass_name, dict(v.metrics) if v else {}, a.stage))
    return rows


def different_failures(oracle: Oracle, describe_point: Callable) -> list[dict]:
    out = []
    for point, v in oracle.different_failures():
        failure = v.failure(oracle.mode)
        out.append({"config": describe_point(point), "verdict": v.describe(),
                    "failure": failure.describe() if failure else None})
    return out


def _names(items) -> str:
    return ", ".join(c_quoted(str(i)) for i in items) if items else "-"


def role_text(effect, n_sets: int) -> str:
    """The table's verdict for one difference: a member of some sets only, or one bad still fails
    without, is named with its sets, never CULPRIT on its own."""
    if effect.role != "member":
        return ROLE_TEXT.get(effect.role, effect.role)
    if n_sets <= 1:
        return "in the failing set (bad still fails without it)"
    return f"culprit in set{'s' if len(effect.sets) > 1 else ''} {', '.join(map(str, effect.sets))}"


def fix_command(spec: Spec, fix) -> str:
    """`bisectk run` of the bad configuration with `fix` reverted to good, five times."""
    argv = ["bisectk", "run", str(spec.path), "--config", "bad"]
    for c in fix:
        argv += ["--set", f"{c}={format_value(spec.good[c])}"]
    return shell_join([*argv, "--repeat", "5"])


NAMED = 12      # differences the search's progress line names (3,000 made it one 20 kB line), as the differences line does


def run_ablation(runner: Runner, space: FactorSpace, policy: RunPolicy, *, strategy: str = "adaptive",
                 thresholds: bool = True, ptx: bool = False, sanitize: bool = False,
                 environment: dict | Callable[[], dict] | None = None,
                 warnings: tuple[str, ...] | list[str] = ()) -> AblationRecord:
    """`warnings`: what the command warned of before it began (cli: the spec's factors, the
    runs made one at a time), kept in the record with those said here (a shared directory), so a
    reader of --json or the debug log sees what the terminal's stderr said."""
    start = time.monotonic()
    spec: Spec = runner.spec
    trials = Trials(runner, space, policy)
    diffs = space.differences()
    repeat = policy.repeat or spec.repeat
    oracle = Oracle.unaimed(trials)
    first = FirstRuns(oracle, diffs, strategy=strategy, repeat=repeat)
    shared = Listing(space.cwd, runner.ledger and runner.ledger.path) if policy.jobs > 1 and not policy.remote else None
    check = verify(trials, frozenset(), frozenset(diffs), repeat=repeat,
                   meanwhile=first if first.wanted() else None)
    oracle.aim(check.target, **hang_checks(check, runner))
    said = list(warnings)
    base = dict(command="ablate", endpoints=check, subject=SubjectRecord.of(spec, len(runner.memo.files)), strategy=strategy,
                environment=captured(environment), session=runner.session, warnings=tuple(said))
    if not check.ok:
        first.wait()
        oracle.close()
        return unusable_record(AblationRecord, trials, start, **base)
    if shared is not None and (written := shared.written()):
        collision = collision_words(policy.jobs, shared.root, written)
        runner.events.emit(Note(collision))
        base["warnings"] = (*said, collision.removeprefix("warning: "))
    rule = flakiness_rule(check, policy.flaky is True)
    shown = ", ".join(diffs[:NAMED]) + (f", +{len(diffs) - NAMED} more" if len(diffs) > NAMED else "")
    runner.events.emit(PhaseStarted("search", f"{strategy} over {nouns(len(diffs), 'difference')}: {shown}"
                                    + (f"; {rule.describe()}" if rule else "")))
    found = search_set(oracle, diffs, strategy=strategy, rule=rule, max_runs=policy.max_runs,
                       measure_removal=True, more_sets=MORE_SETS, confidence=policy.confidence,
                       endpoint=(check.bad_rate.fails, check.bad_rate.runs), started=first.started,
                       good=good_runs(check, policy))
    res, stopped, reason = found.result, found.stopped, found.result.stop_reason
    why = good_suspect(res, stopped)
    if why:     # the answer is what a good side that fails sometimes produces: good is run again
        check, halted = recheck_after(trials, diffs, check, res, policy, why)
        if halted:
            stopped, reason = True, halted
        base["endpoints"] = check
        if not check.ok:
            return unusable_record(AblationRecord, trials, start, search_runs=trials.phase_runs().get(SEARCH, 0),
                                   **base)
    found_thresholds: dict[str, Threshold] = {}
    if thresholds and not stopped:
        try:
            # the search's rule as it ended: a contradiction may have switched it to the flake rule
            # filled as each is found: those finished before a stop are kept
            find_thresholds(oracle, res, res.rule, policy, (check.bad_rate.fails, check.bad_rate.runs),
                            good_runs(check, policy), found=found_thresholds)
        except SearchStopped as stop:
            stopped, reason = True, (f"run budget of {policy.max_runs} spent while finding thresholds"
                                     if stop.reason == "budget" else "interrupted while finding thresholds")
    ptx_doc = sanitizer_doc = None
    if not stopped and (ptx or sanitize):
        try:
            with live():   # compiles and sanitizer runs: interruptible like runs
                ptx_doc, sanitizer_doc = evidence(oracle, check, res, ptx=ptx, sanitize=sanitize)
        except KeyboardInterrupt:
            stopped, reason = True, "interrupted while gathering evidence"
    order = {d: i for i, d in enumerate(diffs)}
    seconds = different_failures(oracle, lambda p: _names(sorted(p, key=order.__getitem__))
                                 if isinstance(p, frozenset) else str(p))
    culprit = res.fail_config if res.complete and not stopped and res.culprits else None
    hangs = hang_facts(oracle, check, culprit, "the culprit configuration (" + _names(res.culprits) + ")")
    doc = res.to_dict()
    phases = trials.phase_runs()
    attempts = tuple(attempt_records(oracle, res, order.__getitem__))
    made = trials.made(SEARCH)
    rows = (*counted(advice(res, spec, policy, order, stopped, found_thresholds, bool(seconds)), phases.get(SEARCH, 0),
                     made), *oracle.stretches[:1])
    return AblationRecord(
        ok=True, complete=res.complete and not stopped, interrupted=stopped, runs=runner.executed,
        observations=len(trials.trials), wall_s=round(time.monotonic() - start, 3), run_s=trials.run_seconds(),
        advice=rows, phase_runs=phases, search_made=made,
        stop_reason=reason if stopped else "" if res.complete else stop_reason_of("", rows, False),
        culprits=tuple(map(str, res.culprits)), unresolved_factors=tuple(map(str, res.suspects)),
        interaction=res.interaction, differences=tuple(table(res, spec, diffs)),
        attempts=attempts,
        proof=tuple(doc["proof"]), different_failures=tuple(seconds),
        sets=tuple(doc["sets"]), fixes=tuple(doc["fixes"]), open_fixes=tuple(doc["open_fixes"]),
        sets_complete=doc["sets_complete"], sets_note=doc["sets_note"],
        unresolved=tuple(doc["unresolved"]),
        flakiness_rule=rule_doc(rule, policy, res),
        thresholds={f: {"first_fail": t.value, "last_pass": t.values[t.last_pass], "exact": t.exact,
                        "monotone": t.monotone, "confirmed": t.confirmed, "failing": list(t.failing),
                        "not_run": list(t.not_run_values), "assumed": t.assumed, "text": t.describe()}
                    for f, t in found_thresholds.items()},
        search_runs=phases.get(SEARCH, 0), unused_runs=unused_runs(phases, attempts, res.unused), ahead_runs=res.taken_ahead, ptx=ptx_doc, sanitizer=sanitizer_doc, hangs=hangs, **base)


def unused_runs(phases: dict[str, int], attempts, untaken: int) -> int:
    """The search's runs no attempt took: those made ahead of it (--jobs) and never asked for,
    counted as runs (a question made ahead may have been run more than once). `untaken`: the
    questions made ahead and never taken, as the search counts them (AblationResult.unused);
    none, and no run was made ahead: the runs of a question a Ctrl-C cut short (a confirmation's
    passes so far) belong to no attempt, and are not runs made ahead."""
    return max(0, phases.get(SEARCH, 0) - sum(a.runs for a in attempts)) if untaken else 0


def counted(steps: list[dict], search_runs: int, made: int | None = None) -> list[dict]:
    """The search's steps with the runs they name ("stopped", "good_failed") as the search made
    them: the search counts the questions it asked (one each, a run cut short by a Ctrl-C
    included), the oracle may run one several times (a different failure re-run, a second
    chance); `search_runs` counts the runs themselves (Trials.phase_runs), `made` those of them
    made now, not answered from the ledger (what --max-runs counts; Trials.made)."""
    return [{**s, "runs": search_runs, **({"made": made} if made is not None else {})}
            if s.get("step") in ("stopped", "good_failed") and "runs" in s else s for s in steps]


def table(res: AblationResult, spec: Spec, diffs: list[str]) -> list[dict]:
    """The key-differences table: each difference's values, its outcome alone on good and removed
    from bad, and its role."""
    n_sets = max(1, len(res.sets))
    return [{"factor": f, "good": spec.good.get(f), "bad": spec.bad.get(f),
             "alone": OUTCOME_WORDS[res.effects[f].alone], "removed": OUTCOME_WORDS[res.effects[f].removed],
             "verdict": role_text(res.effects[f], n_sets), "sets": list(res.effects[f].sets)} for f in diffs]


def advice(res: AblationResult, spec: Spec, policy: RunPolicy, order: dict, stopped: bool,
           found_thresholds: dict[str, Threshold], different: bool) -> list[dict]:
    """The search's next steps, then the commands that verify a fix or isolate what remains, the
    thresholds, and a different failure: facts for report/advice.py."""
    steps = list(res.advice)

    def ordered(items) -> list:
        return sorted(items, key=order.__getitem__)
    if res.complete and len(res.sets) > 1 and res.fixes:
        steps.append({"step": "verify_fixes", "commands": [fix_command(spec, ordered(f)) for f in res.fixes]})
    elif res.complete and not stopped and res.culprits:
        steps.append({"step": "verify_fix", "command": fix_command(spec, res.culprits)})
    if res.complete and res.open_fixes:
        steps.append({"step": "isolate_rest", "budget": bool(policy.max_runs),
                      "commands": [fix_command(spec, ordered(f)).removesuffix(" --repeat 5") for f in res.open_fixes],
                      "without": [[str(x) for x in ordered(f)] for f in res.open_fixes]})
    for f, t in found_thresholds.items():
        steps.append({"step": "threshold", "factor": f, "text": t.describe(), "monotone": t.monotone,
                      "confirmed": t.confirmed})
    if different:
        steps.append({"step": "different_failure"})
    return steps


def find_thresholds(oracle: Oracle, result: AblationResult, rule: ConfidenceRule | RateRule | None,
                    policy: RunPolicy, endpoint: tuple[int, int] = (0, 0),
                    good: tuple[int, int] | None = None,
                    found: dict[str, Threshold] | None = None) -> dict[str, Threshold]:
    """For each culprit declared ordinal (of every failing set), the value at which the failure
    appears, with the other culprits of its set (and any context) held at their bad values, its boundary confirmed as the
    search's answer was (search/threshold.py), from the failures seen so far: the bad endpoint's
    (`endpoint` = (fails, runs)) and those of the configurations the search judged failing;
    `good`: the good endpoint's (fails, runs), as the search's confirmation takes it (good_runs).
    Their runs spend what --max-runs left after the search (the runs made now, as it counts them:
    Trials.made, and the runs the oracle makes beyond one a question). `found`: the dict filled
    (and returned) as each threshold is found, so that those finished before a stop (SearchStopped:
    the budget, Ctrl-C) stay with the caller."""
    runner, space = oracle.trials.runner, oracle.space
    spec = runner.spec
    found = {} if found is None else found
    for factor, failing in _culprits_in_place(result):
        values = spec.ordinal.get(factor)
        if not values:
            continue
        # where the endpoints' values are, by the text the subject receives (spec._ordinal: 4 and "4" are one)
        lo, hi = (next(i for i, v in enumerate(values) if same_value(v, side[factor])) for side in (spec.good, spec.bad))
        path = values[lo:hi + 1] if lo <= hi else values[hi:lo + 1][::-1]
        # the declared values past good and past bad, in the path's direction: never run
        before, beyond = (values[:lo], values[hi + 1:]) if lo <= hi else (values[lo + 1:][::-1], values[:hi][::-1])
        if len(path) < 3:
            continue  # good and bad are neighbours: nothing between them to bisect
        others = space.config(failing - {factor})
        runner.events.emit(PhaseStarted("threshold", f"{factor}: {' -> '.join(map(str, path))}"))

        def judge(i: int, factor=factor, others=others, path=path) -> Outcome:
            return oracle({**others, factor: path[i]})
        budget = None if policy.max_runs is None else \
            max(policy.max_runs - oracle.trials.made(SEARCH) - oracle.trials.made(THRESHOLD), 0)
        beyond_one = oracle.more_runs()     # runs the oracle made beyond one a question so far, less the ledger's

        with oracle.asking(THRESHOLD):
            found[factor] = find_threshold(path, judge, rule=rule, descending=_runs_down(path, lo > hi),
                                           before=before, beyond=beyond,
                                           confidence=policy.confidence, evidence=failing_runs(result, endpoint),
                                           costs=oracle.trials.costs, steady=policy.flaky is False, good=good,
                                           max_runs=budget, more_runs=lambda: oracle.more_runs() - beyond_one)
        runner.events.emit(Note(f"threshold of {factor}: {found[factor].describe()}"))
    return found


def _runs_down(path: list, down_the_list: bool) -> bool:
    """Whether a threshold's `path` (good value first) is said to run down: numbers as numbers run,
    whatever the order they are listed in (`[12, 10, 8]` from 8 to 12 runs up: "fails from 10 on",
    not "down", which read as 8 failing too); other values, and numbers listed out of numeric
    order (an order of the user's own), as listed (`down_the_list`)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in path):
        up = all(b > a for a, b in zip(path, path[1:]))
        down = all(b < a for a, b in zip(path, path[1:]))
        if up or down:          # monotone: else the list is an order of its own
            return down
    return down_the_list


def _culprits_in_place(result: AblationResult) -> list[tuple[str, frozenset]]:
    """Each culprit of every failing set, once, with the configuration its set fails in: the
    first set's is the search's failing configuration; another set's is that set on good, with
    the context (as the sets' confirmation runs it: search/confirm.set_claims)."""
    found, seen = [], set()
    for i, members in enumerate([result.culprits, *(s.members for s in result.sets[1:])]):
        failing = result.fail_config if i == 0 else result.context | frozenset(members)
        for factor in members:
            if factor not in seen:
                seen.add(factor)
                found.append((factor, failing))
    return found


def failing_runs(result: AblationResult, endpoint: tuple[int, int]) -> tuple[int, int]:
    """(fails, runs): `endpoint`'s and every run of each configuration the search judged FAIL (its
    confirmation's re-runs included), as confirm.confirm_sets counts them."""
    failing = {a.config for a in result.attempts if a.outcome is Outcome.FAIL and a.phase != "confirm"}
    fails, runs = endpoint
    for a in result.attempts:
        if a.config in failing:
            judged = [o for o in a.observations if o is not Outcome.UNRESOLVED]
            fails, runs = fails + judged.count(Outcome.FAIL), runs + len(judged)
    return fails, runs


def evidence(oracle: Oracle, check: EndpointCheck, result: AblationResult, *, ptx: bool,
             sanitize: bool) -> tuple[dict | None, dict | None]:
    """PTX signatures of good / bad / culprit, and a compute-sanitizer rerun of the culprit."""
    from bisectk import evidence as ev
    runner, space = oracle.trials.runner, oracle.space
    spec = runner.spec
    culprit_cfg = space.config(result.fail_config)
    ptx_doc = sanitizer_doc = None
    if ptx:
        runner.events.emit(PhaseStarted("ptx", "compiling good, bad and the culprit configuration to PTX"))
        found = ev.ptx_evidence(spec, {"good": spec.good, "bad": spec.bad, "culprit": culprit_cfg})
        ptx_doc = {**found.to_dict(), "table": found.table()}
    if sanitize:
        runner.events.emit(PhaseStarted("sanitize", "rerunning the culprit configuration under compute-sanitizer"))
        seconds = max(60.0, 20 * runner.policy().seconds)
        found_s = ev.sanitize(spec, culprit_cfg, check.bad.kind, seconds, runner.cwd)
        sanitizer_doc = {**found_s.to_dict(), "text": found_s.describe()}
    return ptx_doc, sanitizer_doc
