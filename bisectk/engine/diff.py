"""`bisectk diff`: which hunks of the difference between two source trees cause the failure.

Abstractions
------------
run_diff -- verify (GOOD passes, BAD fails) through the hunk space's oracle, ablate over hunks,
            then over the line-level sub-hunks of the culprit hunks (the second, finer pass), and
            return a DiffRecord with the culprit hunks, lines and their unified diff.

A hybrid that does not build is UNRESOLVED(BUILD), never a failure: the search routes around it.
The subject runs with the scratch tree as its working directory (BISECTK_TREE names it too).
"""

from __future__ import annotations

import time

from bisectk.engine.ablate import attempt_records, different_failures, search_set, subject_record
from bisectk.engine.endpoints import verify
from bisectk.engine.hangs import hang_facts
from bisectk.engine.oracle import SpaceOracle
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import DiffRecord
from bisectk.events import PhaseStarted
from bisectk.spaces.hunks import Hunk, split_lines, unified_diff
from bisectk.spaces.hunkspace import HunkSpace


def _ids(ids, limit: int = 8) -> str:
    ids = list(ids)
    text = ", ".join(ids[:limit])
    return text + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "") if ids else "none"


def run_diff(oracle: SpaceOracle, *, strategy: str = "adaptive", refine: bool = True,
             policy: RunPolicy | None = None, environment: dict | None = None) -> DiffRecord:
    start = time.monotonic()
    policy = policy or oracle.policy
    runner, space = oracle.runner, oracle.space
    assert isinstance(space, HunkSpace)
    all_ids = space.differences()
    check = verify(oracle, frozenset(), frozenset(all_ids), repeat=policy.repeat or runner.spec.repeat,
                   calibrate_runs=policy.calibrate_runs, flaky=policy.flaky, same_failure=policy.same_failure)
    base = dict(command="diff", endpoints=check, subject=subject_record(runner.spec), good=str(space.good),
                bad=str(space.bad), hunks=len(space.hunks), environment=environment or {}, session=runner.session,
                hunk_index=tuple({k: v for k, v in h.to_dict().items() if k != "text"} for h in space.hunks))
    if not check.ok:
        return DiffRecord(ok=False, complete=False, interrupted=False, runs=runner.executed,
                          observations=len(oracle.observations), wall_s=time.monotonic() - start, **base)
    oracle.target = check.target
    from bisectk.engine.ablate import flakiness_rule
    rule = flakiness_rule(check, policy.flaky is True)
    runner.events.emit(PhaseStarted("hunks", f"{strategy} over {len(all_ids)} hunk{'s' if len(all_ids) != 1 else ''}"))
    found = search_set(oracle, all_ids, strategy=strategy, rule=rule, max_runs=policy.max_runs,
                       confidence=policy.confidence, endpoint=(check.bad_rate.fails, check.bad_rate.runs))
    res, stopped, reason = found.result, found.stopped, found.result.stop_reason
    culprit_hunks = [space.by_id[i] for i in (*res.culprits, *res.suspects)]
    lines = None
    line_oracle = None
    culprit_lines: list[Hunk] = []
    if refine and not stopped:
        units: list[Hunk] = []
        whole: list[str] = []
        for h in culprit_hunks:
            parts = split_lines(h)
            if len(parts) > 1:
                units += parts
            else:
                whole.append(h.id)
        if units:
            space.add(units)
            view = space.with_fixed(whole)
            line_oracle = SpaceOracle(runner, view, policy=policy, target=check.target)
            line_oracle.calls = oracle.calls            # one run index per configuration
            runner.events.emit(PhaseStarted("lines", f"{strategy} over {len(units)} line-level units "
                                                     "of the culprit hunks"))
            lfound = search_set(line_oracle, [u.id for u in units], strategy=strategy, rule=rule,
                                max_runs=policy.max_runs)
            lines, stopped = lfound.result, lfound.stopped
            reason = reason or lines.stop_reason
            culprit_lines = [space.by_id[i] for i in whole] + [space.by_id[i] for i in (*lines.culprits, *lines.suspects)]
        else:
            culprit_lines = list(culprit_hunks)
    order = space.order.__getitem__
    attempts = attempt_records(oracle, res, order, "hunks")
    if lines is not None:
        attempts += attempt_records(line_oracle, lines, order, "lines")
    seconds = different_failures(oracle, lambda p: _ids(sorted(p, key=order)))
    if line_oracle is not None:
        seconds += different_failures(line_oracle, lambda p: _ids(sorted(p, key=order)))
    steps = list(res.next_steps)
    if res.unresolved:
        steps.append(f"{len(res.unresolved)} hybrid(s) did not build or failed differently; hunks that only "
                     "build together are searched as a group, so check the culprit diff builds on its own.")
    if culprit_lines:
        steps.append("Apply only the culprit lines to GOOD and confirm the failure; then revert them in BAD "
                     "and confirm the fix.")
    line_runs = lines.runs if lines else 0
    found_set = res.complete and not stopped and res.culprits
    hangs = hang_facts(oracle, check, res.fail_config if found_set else None,
                       "the culprit hunks applied to GOOD (" + _ids(res.culprits) + ")")
    return DiffRecord(
        ok=True, complete=res.complete and not stopped, interrupted=stopped, runs=runner.executed,
        observations=len(oracle.observations) + (len(line_oracle.observations) if line_oracle else 0),
        wall_s=round(time.monotonic() - start, 3), next_steps=tuple(steps), stop_reason=reason if stopped else "",
        run_s=round(oracle.run_seconds() + (line_oracle.run_seconds() if line_oracle else 0.0), 3),
        culprit_hunks=tuple(h.to_dict() for h in culprit_hunks),
        culprit_lines=tuple(h.to_dict() for h in culprit_lines),
        interaction=res.interaction, line_interaction=lines.interaction if lines else None,
        attempts=tuple(attempts), unresolved=tuple(sorted(a.config, key=order) for a in res.unresolved),
        different_failures=tuple(seconds), diff=unified_diff(culprit_hunks),
        lines_diff=unified_diff(culprit_lines) if lines is not None else "",
        search_runs=res.runs + line_runs, hangs=hangs, **base)
