"""`bisectk diff`: which hunks of the difference between two source trees cause the failure.

Abstractions
------------
run_diff -- verify (GOOD passes, BAD fails) through the hunk space's oracle, ablate over hunks
            (every independent failing set, as ablate does: two hunks that each break the build
            the same way are two sets, not a flake), then over the line-level sub-hunks of each
            set's hunks (the second, finer pass), and return a DiffRecord with the culprit hunks,
            lines and their unified diff.

A hybrid that does not build is UNRESOLVED(BUILD), never a failure: the search routes around it.
An answer that is the empty set (GOOD itself failed in the search: a run left state in the scratch
tree that the next one sees, or GOOD fails sometimes) sends GOOD back for more runs, as ablate
does (endpoints.recheck_good): one that fails makes the endpoints unusable.
The subject runs with the scratch tree as its working directory (BISECTK_TREE names it too).
"""

from __future__ import annotations

import time
from dataclasses import replace
from collections import Counter
from collections.abc import Callable

from bisectk.engine.ablate import (MORE_SETS, SetSearch, attempt_records, counted, different_failures,
                                   flakiness_rule, good_runs, recheck_after, rule_doc, search_set,
                                   unused_runs)
from bisectk.engine.endpoints import hang_checks, unusable_record, verify
from bisectk.engine.hangs import hang_facts
from bisectk.engine.oracle import PHASES, SEARCH, Oracle, Trials
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import AttemptRecord, DiffRecord, SubjectRecord, captured, stop_reason_of
from bisectk.events import EventBus, PhaseStarted
from bisectk.names import ids_text
from bisectk.outcome import Outcome
from bisectk.run.runner import Runner
from bisectk.search import ConfidenceRule
from bisectk.search.result import GOOD_FAILED, AblationResult
from bisectk.spaces.hunks import Hunk, unified_diff
from bisectk.spaces.linediff import split_lines
from bisectk.spaces.hunkspace import HunkSpace


def run_diff(runner: Runner, space: HunkSpace, policy: RunPolicy, *, strategy: str = "adaptive",
             refine: bool = True, environment: dict | Callable[[], dict] | None = None) -> DiffRecord:
    start = time.monotonic()
    trials = Trials(runner, space, policy)
    all_ids = space.differences()
    check = verify(trials, frozenset(), frozenset(all_ids), repeat=policy.repeat or runner.spec.repeat)
    base = dict(command="diff", endpoints=check, subject=SubjectRecord.of(runner.spec, len(runner.memo.files)), good=str(space.good),
                bad=str(space.bad), hunks=len(space.hunks), environment=captured(environment), session=runner.session,
                hunk_index=tuple({k: v for k, v in h.to_dict().items() if k != "text"} for h in space.hunks))
    if not check.ok:
        return unusable_record(DiffRecord, trials, start, **base)
    oracle = Oracle(trials, check.target, **hang_checks(check, runner))
    rule = flakiness_rule(check, policy.flaky is True)
    runner.events.emit(PhaseStarted("hunks", f"{strategy} over {len(all_ids)} hunk{'s' if len(all_ids) != 1 else ''}"))
    found = search_set(oracle, all_ids, strategy=strategy, rule=rule, max_runs=policy.max_runs,
                       more_sets=MORE_SETS, confidence=policy.confidence,
                       endpoint=(check.bad_rate.fails, check.bad_rate.runs), good=good_runs(check, policy))
    res, stopped, reason = found.result, found.stopped, found.result.stop_reason
    if res.stop_reason == GOOD_FAILED:     # GOOD itself failed in the search: it is run again (ablate's re-check)
        check, halted = recheck_after(trials, all_ids, check, res, policy, GOOD_FAILED)
        if halted:
            stopped, reason = True, halted
        base["endpoints"] = check
        if not check.ok:
            return unusable_record(DiffRecord, trials, start, search_runs=trials.phase_runs().get(SEARCH, 0), **base)
    doc = res.to_dict()
    # each failing set's hunks (the first is res.culprits, or a stopped search's smallest failing set)
    groups = [list(res.culprits) + list(res.suspects)] + [sorted(s.members, key=space.order.__getitem__)
                                                          for s in res.sets[1:]]
    culprit_hunks = [space.by_id[i] for i in dict.fromkeys(i for g in groups for i in g)]   # two sets may share one
    oracles, passes = [oracle], [(res, "hunks")]
    judged: dict[frozenset, frozenset] = {}     # a line-pass point -> the hunks the hunk pass ran it as
    lines, culprit_lines, line_results = None, [], []
    for group in groups if refine and not stopped else ():
        line_pass = refine_lines(oracle, space, [space.by_id[i] for i in group], strategy, rule, policy, runner.events,
                                 res)
        if line_pass is None:
            culprit_lines += [space.by_id[i] for i in group]
            continue
        line_oracle, whole, lfound, same = line_pass
        judged.update(same)
        lines, stopped = lfound.result, lfound.stopped
        line_results.append(lines)
        reason = reason or lines.stop_reason
        culprit_lines += [space.by_id[i] for i in (*whole, *lines.culprits, *lines.suspects)]
        oracles.append(line_oracle)
        passes.append((lines, "lines"))
        if stopped:
            break
    culprit_lines = list({h.id: h for h in culprit_lines}.values())     # each once, as culprit_hunks
    order = space.order.__getitem__
    attempts = [as_judged(a, oracle, judged) for o, (r, name) in zip(oracles, passes)
                for a in attempt_records(o, r, order, name)]
    seconds = [d for o in oracles for d in different_failures(o, lambda p: ids_text(sorted(p, key=order)))]
    found_set = res.complete and not stopped and res.culprits
    hangs = hang_facts(oracle, check, res.fail_config if found_set else None,
                       "the culprit hunks applied to GOOD (" + ids_text(res.culprits) + ")")
    phases: Counter[str] = Counter()   # after the hang's picture: its run counts too
    for o in oracles:       # the line pass's trials are a view: its runs are its own list
        phases.update(o.trials.phase_runs())
    made = trials.made(SEARCH)
    advice = counted(list(res.advice), trials.phase_runs().get(SEARCH, 0), made) \
        + ([{"step": "unbuilt_hybrids", "count": len(res.unresolved)}] if res.unresolved else []) \
        + ([{"step": "confirm_lines"}] if culprit_lines else []) + [s for o in oracles for s in o.stretches][:1]
    return DiffRecord(
        ok=True, complete=res.complete and not stopped, interrupted=stopped, runs=runner.executed,
        observations=sum(len(o.trials.trials) for o in oracles), wall_s=round(time.monotonic() - start, 3),
        advice=tuple(advice), phase_runs={p: phases[p] for p in PHASES if phases[p]}, search_made=made,
        stop_reason=reason if stopped else "" if res.complete else stop_reason_of("", advice, False),
        run_s=round(sum(o.trials.run_seconds() for o in oracles), 3),
        culprit_hunks=tuple(h.to_dict() for h in culprit_hunks),
        culprit_lines=tuple(h.to_dict() for h in culprit_lines),
        interaction=res.interaction, line_interaction=any(r.interaction for r in line_results) if line_results else None,
        attempts=tuple(attempts), unresolved=tuple(sorted(a.config, key=order) for a in res.unresolved),
        different_failures=tuple(seconds), diff=unified_diff(culprit_hunks),
        lines_diff=unified_diff(culprit_lines) if lines is not None else "",
        search_runs=phases[SEARCH],
        unused_runs=unused_runs(phases, attempts, res.unused + sum(r.unused for r in line_results)),
        ahead_runs=res.taken_ahead + sum(r.taken_ahead for r in line_results), hangs=hangs,
        flakiness_rule=rule_doc(rule, policy, res),
        sets=tuple(doc["sets"]), fixes=tuple(doc["fixes"]), open_fixes=tuple(doc["open_fixes"]),
        sets_complete=doc["sets_complete"], sets_note=doc["sets_note"], **base)


def refine_lines(oracle: Oracle, space: HunkSpace, culprit_hunks: list[Hunk], strategy: str,
                 rule: ConfidenceRule | None, policy: RunPolicy, events: EventBus,
                 hunk_pass: AblationResult | None = None
                 ) -> tuple[Oracle, list[str], SetSearch, dict[frozenset, frozenset]] | None:
    """The second, finer pass: the culprit hunks split into line-level units, searched with the
    hunks that do not split applied on both sides (the same target, and one run index per
    configuration: the line oracle's trials share the hunk oracle's counts). The trees the hunk
    pass judged already (`hunk_pass`'s attempts: every line of a hunk is that hunk) are known to it,
    not run again (same_trees: each such point and its hunks, the fourth item). None when no
    culprit hunk splits."""
    units: list[Hunk] = []
    whole: list[str] = []
    split: dict[str, frozenset[str]] = {}
    for h in culprit_hunks:
        parts = split_lines(h)
        if len(parts) > 1:
            units += parts
            split[h.id] = frozenset(u.id for u in parts)
        else:
            whole.append(h.id)
    if not units:
        return None
    space.add(units)
    line_oracle = Oracle(oracle.trials.view(space.with_fixed(whole)), oracle.target, recheck=oracle.recheck, reach=oracle.reach,
                         steady_slow=oracle.steady_slow)
    events.emit(PhaseStarted("lines", f"{strategy} over {len(units)} line-level units of the culprit hunks"))
    same = same_trees(hunk_pass, split, frozenset(whole)) if hunk_pass is not None else {}
    found = search_set(line_oracle, [u.id for u in units], strategy=strategy, rule=rule, max_runs=policy.max_runs,
                       known={point: outcome for point, (outcome, _) in same.items()})
    return line_oracle, whole, found, {point: hunks for point, (_, hunks) in same.items()}


def same_trees(hunk_pass: AblationResult, split: dict[str, frozenset[str]], whole: frozenset[str]
               ) -> dict[frozenset, tuple[Outcome, frozenset]]:
    """The hunk pass's verdicts, keyed as the line pass names the same trees. A line-pass point is
    its units on top of `whole` (the culprit hunks that do not split) over GOOD, and every unit of
    a hunk applied is that hunk applied, line for line (split_lines partitions it): a set of hunks
    the hunk pass ran that holds all of `whole` and otherwise only hunks that split (`split`: a
    hunk's id -> its units' ids) is the same files, built and run by the same command, as those
    hunks' units. A set the hunk pass judged two ways (a confirmation that contradicted it) is
    left out: the line pass runs it for itself. Each point: (the verdict, the hunks)."""
    seen: dict[frozenset, tuple[set[Outcome], frozenset]] = {}
    for a in hunk_pass.attempts:
        hunks = frozenset(a.config)
        if not whole <= hunks or not hunks - whole <= split.keys():
            continue
        point = frozenset().union(*(split[h] for h in hunks - whole))
        seen.setdefault(point, (set(), hunks))[0].add(a.outcome)
    return {point: (outcomes.pop(), hunks) for point, (outcomes, hunks) in seen.items() if len(outcomes) == 1}


def as_judged(record: AttemptRecord, oracle: Oracle, judged: dict[frozenset, frozenset]) -> AttemptRecord:
    """A line-pass attempt the hunk pass's verdict answered (no run of its own) with that verdict's
    words, said as the hunk pass's: the line pass's trials never saw the point."""
    hunks = judged.get(frozenset(record.applied)) if record.pass_name == "lines" and not record.runs else None
    v = oracle.trials.verdict(hunks) if hunks is not None else None
    if v is None:
        return record
    failure = v.failure(oracle.mode)
    return replace(record, verdict=f"{v.describe()} (the hunk pass's, as {ids_text(sorted(hunks, key=oracle.space.order.__getitem__))})",
                   failure=failure.describe() if failure else None, metrics=dict(v.metrics),
                   from_ledger=oracle.trials.from_ledger(hunks))
