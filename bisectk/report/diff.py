"""Reports for `bisectk diff`: the culprit hunks as a unified diff, JSON, and the debug log.

Abstractions
------------
to_json       -- culprit_hunks (file, line ranges in both versions, text), culprit_lines (the
                 finer pass), interaction, runs, attempts, endpoints, environment.
to_debuglog   -- summary, the culprit diff, a table of hunks by verdict, one attempt per
                 configuration, build-broken hybrids, what to try next.
print_summary -- the end-of-run terminal view.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from bisectk.commands.diffiso import DiffRun
from bisectk.report.debuglog import AttemptEntry, DebugLog, code_block, table
from bisectk.spaces.hunks import unified_diff


def _ids(ids, limit: int = 8) -> str:
    ids = list(ids)
    text = ", ".join(ids[:limit])
    return text + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "") if ids else "none"


def attempt_rows(run: DiffRun) -> list[dict[str, Any]]:
    rows = []
    for res in (run.result, run.lines):
        if res is None:
            continue
        for a in res.attempts:
            rows.append({"pass": "lines" if res is run.lines else "hunks", "index": a.index, "phase": a.phase,
                         "applied": sorted(a.config, key=run.space.order.__getitem__), "outcome": a.outcome.value,
                         "runs": a.runs})
    return rows


def next_steps(run: DiffRun) -> list[str]:
    steps = list(run.result.next_steps) if run.result else []
    unresolved = len(run.result.unresolved) if run.result else 0
    if unresolved:
        steps.append(f"{unresolved} hybrid(s) did not build or failed differently; hunks that only "
                     "build together are searched as a group, so check the culprit diff builds on its own.")
    if run.culprit_lines:
        steps.append("Apply only the culprit lines to GOOD and confirm the failure; then revert them in BAD "
                     "and confirm the fix.")
    return steps


def to_json(run: DiffRun, environment: dict | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"endpoints": run.check.to_dict(), "ok": run.ok, "runs": run.executed,
                           "wall_s": round(run.wall_s, 3), "hunks": len(run.space.hunks),
                           "interrupted": run.interrupted}
    if environment is not None:
        doc["environment"] = environment
    if run.result is None:
        return doc
    doc.update({
        "culprit_hunks": [h.to_dict() for h in run.culprit_hunks],
        "culprit_lines": [h.to_dict() for h in run.culprit_lines],
        "interaction": run.result.interaction,
        "line_interaction": run.lines.interaction if run.lines else None,
        "complete": run.result.complete and not run.interrupted,
        "search_runs": run.result.runs + (run.lines.runs if run.lines else 0),
        "attempts": attempt_rows(run),
        "unresolved": [sorted(a.config, key=run.space.order.__getitem__) for a in run.result.unresolved],
        "diff": unified_diff(run.culprit_hunks),
        "next_steps": next_steps(run),
    })
    return doc


def to_debuglog(run: DiffRun, environment: dict | None = None) -> DebugLog:
    sp = run.space
    title = f"diff {sp.good} vs {sp.bad}: {run.check.bad.describe()}"
    if not run.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", run.check.problem or "", environment or {})
    res = run.result
    ids = [h.id for h in run.culprit_hunks]
    status = ("Resolved" if res.complete and not run.interrupted else "Open (interrupted)") + f" -- culprit hunk(s): {_ids(ids)}"
    log = DebugLog(title, status, f"GOOD passes, BAD fails: {run.check.bad.describe()}", environment or {},
                   related=sorted({h.file for h in run.culprit_hunks}))
    log.summary = [
        f"{len(sp.hunks)} hunks between GOOD and BAD; culprit{'s' if len(ids) != 1 else ''}: **{_ids(ids)}**"
        + (" -- they fail only together (each proper subset passes)." if res.interaction else "."),
        f"Line-level pass: {len(run.culprit_lines)} culprit line unit(s)" + (" (an interaction)" if run.lines and run.lines.interaction else "") + ".",
        f"{run.executed} runs executed, wall time {run.wall_s:.1f} s; watchdog {run.check.timeout.detail}.",
        f"{len(res.unresolved)} hybrid(s) were UNRESOLVED (build failures, or a different failure).",
    ]
    log.differences_title = "Key Differences: culprit hunks"
    log.differences_header = ["hunk", "kind", "GOOD lines", "BAD lines", "verdict"]
    log.differences = [[h.id, h.kind, f"{h.good_lines[0]}-{h.good_lines[1]}", f"{h.bad_lines[0]}-{h.bad_lines[1]}",
                        "CULPRIT"] for h in run.culprit_hunks]
    for row in attempt_rows(run):
        n = len(row["applied"])
        log.attempts.append(AttemptEntry(
            title=f"{row['pass']}: {n} unit(s) applied ({row['phase']})",
            hypothesis=f"Applying these {n} {row['pass']} to GOOD is enough to reproduce the failure: {_ids(row['applied'])}.",
            what="materialised GOOD with those units applied in the scratch tree and ran the subject",
            result=row["outcome"].upper() + f" ({row['runs']} run{'s' if row['runs'] != 1 else ''})",
            conclusion={"fail": "The cause is within these units.", "pass": "These units alone do not cause it.",
                        "unresolved": "Did not build or failed differently; searched around it."}[row["outcome"]]))
    log.sections.append(("Culprit diff (hunks)", code_block(unified_diff(run.culprit_hunks), "diff")))
    if run.culprit_lines and run.lines is not None:
        log.sections.append(("Culprit lines (finer pass)", code_block(unified_diff(run.culprit_lines), "diff")))
    if res.unresolved:
        log.sections.append(("Unresolved hybrids", table(["applied units"], [[_ids(sorted(a.config, key=sp.order.__getitem__))] for a in res.unresolved])))
    log.next_steps = next_steps(run)
    return log


def print_summary(out: Console, run: DiffRun) -> None:
    if not run.ok:
        out.print(f"problem: {run.check.problem}", markup=False)
        return
    res = run.result
    out.print(f"{len(run.space.hunks)} hunks; culprit hunk(s): {_ids([h.id for h in run.culprit_hunks])}"
              + ("  (interaction: each proper subset passes)" if res.interaction else ""), markup=False)
    out.print(unified_diff(run.culprit_lines or run.culprit_hunks).rstrip(), markup=False, highlight=False)
    out.print(f"runs: {run.executed} executed, wall {run.wall_s:.1f} s; "
              f"{len(res.unresolved)} unresolved hybrid(s)"
              + ("  [INTERRUPTED: best result so far]" if run.interrupted or not res.complete else ""), markup=False)
