"""Reports for `bisectk bisect`: the first bad commit, JSON, the debug log, and the replayable log.

Abstractions
------------
to_json       -- first_bad (sha, subject, author, date, files), last_good, runs, confidence,
                 skipped, candidates when skips leave it ambiguous, the posterior when flaky.
to_debuglog   -- the same as a debug log: one attempt per tested commit.
log_lines     -- `bisectk log`: a header naming the command and one `observe SHA OUTCOME` line
                 per observation, which `bisectk replay` reads back (like `git bisect log`).
print_summary -- the end-of-run terminal view.
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.console import Console

from bisectk.commands.bisect import BisectRun
from bisectk.report.debuglog import AttemptEntry, DebugLog, table


def _commit(run: BisectRun, i: int, full: bool = False) -> dict[str, Any]:
    info = run.commits.describe(i) if full else run.commits[i]
    return {"index": i, **info.to_dict()}


def to_json(run: BisectRun, environment: dict | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"ok": run.ok, "endpoints": run.check.to_dict(), "commits": len(run.commits),
                           "wall_s": round(run.wall_s, 3), "interrupted": run.interrupted,
                           "flaky": run.flaky, "runs": run.oracle.executed if run.oracle else 0}
    if environment is not None:
        doc["environment"] = environment
    res = run.result
    if res is None:
        return doc
    doc.update({
        "first_bad": _commit(run, res.first_bad, full=True),
        "last_good": _commit(run, res.last_good),
        "confidence": round(res.confidence, 6),
        "complete": res.complete and not run.interrupted,
        "observations": res.runs,
        "skipped": [_commit(run, i) for i in res.skipped],
        "candidates": [_commit(run, i) for i in res.candidates] if res.ambiguous else [],
        "ambiguous": res.ambiguous,
        "mode": res.mode,
        "fail_prob": res.fail_prob,
        "posterior": [{"sha": run.commits[i].sha, "p": round(p, 6)} for i, p in res.posterior],
        "tested": [{"sha": run.commits[i].sha, "verdict": v.describe()} for i, v in sorted(run.oracle.verdicts.items())],
    })
    return doc


def to_debuglog(run: BisectRun, environment: dict | None = None) -> DebugLog:
    c = run.commits
    title = f"bisect {c[0].short}..{c[len(c) - 1].short}: {run.check.bad.describe()}"
    if not run.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", run.check.problem or "", environment or {})
    res = run.result
    fb = c.describe(res.first_bad)
    status = (f"Resolved -- first bad commit {fb.short}" if res.complete and not res.ambiguous
              else f"Open -- {len(res.candidates)} candidate(s) remain")
    log = DebugLog(title, status, f"--good passes, --bad fails: {run.check.bad.describe()}", environment or {},
                   related=list(fb.files or ()))
    log.summary = [
        f"First bad commit: **{fb.short}** {fb.subject} ({fb.author}, {fb.date}); last good: {c[res.last_good].short}.",
        f"{len(c)} commits in range; {res.runs} observations ({run.oracle.executed} executed); confidence {res.confidence:.4f}"
        + (f" (flake-aware: estimated P(bad commit fails) = {res.fail_prob:.2f})" if run.flaky and res.fail_prob else "") + ".",
        f"Watchdog: {run.check.timeout.detail}; target failure `{run.check.target}`.",
    ]
    if res.skipped:
        log.summary.append(f"Skipped (untestable): {', '.join(c[i].short for i in res.skipped)}.")
    if res.ambiguous:
        log.summary.append("Ambiguous because of skips; the first bad commit is one of: "
                           + ", ".join(c[i].short for i in res.candidates) + ".")
    log.differences_title = "Key Differences: last good vs first bad"
    log.differences_header = ["", "commit", "subject", "files changed"]
    log.differences = [["last good", c[res.last_good].short, c[res.last_good].subject, ""],
                       ["first bad", fb.short, fb.subject, ", ".join(fb.files or ())]]
    for i, v in sorted(run.oracle.verdicts.items()):
        outcome = run.oracle.judge(v)
        log.attempts.append(AttemptEntry(
            title=f"{c[i].short} {c[i].subject}",
            hypothesis=f"The failure was introduced at or before commit {i} of {len(c) - 1}.",
            what=f"checked out {c[i].short} in a worktree, built and ran the subject ({len(v.runs)} run(s))",
            result=v.describe(),
            conclusion={"fail": "Bad: the first bad commit is this one or earlier.",
                        "pass": "Good: the first bad commit is later.",
                        "unresolved": "Untestable (build failure or a different failure): skipped."}[outcome.value]))
    if res.posterior:
        log.sections.append(("Posterior over the first bad commit",
                             table(["commit", "P(first bad)"], [[c[i].short, f"{p:.4f}"] for i, p in res.posterior])))
    log.next_steps = [f"Inspect the diff of the first bad commit: git show {fb.short}",
                      f"Isolate the culprit lines inside it: bisectk triage ... --good {c[res.last_good].short} --bad {fb.short}"]
    if res.ambiguous:
        log.next_steps.insert(0, "Make the skipped commits testable (fix their build) to resolve the ambiguity.")
    return log


def log_lines(session: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    args = session["args"]
    cmd = ["bisectk", "bisect", "--repo", args["repo"], "--good", args["good"], "--bad", args["bad"]]
    for flag in ("first_parent", "flaky", "any_failure"):
        if args.get(flag):
            cmd.append("--" + flag.replace("_", "-"))
    lines = [f"# bisectk log of session {session['id']}", "# " + shlex.join(cmd)]
    for e in events:
        lines.append(f"observe {e['sha']} {e['outcome']}  # {e.get('verdict', '')}")
    result = session.get("result") or {}
    if result.get("first_bad"):
        lines.append(f"# first bad commit: {result['first_bad']} (confidence {result.get('confidence')})")
    return lines


def print_summary(out: Console, run: BisectRun) -> None:
    if not run.ok:
        out.print(f"problem: {run.check.problem}", markup=False)
        return
    res, c = run.result, run.commits
    fb = c.describe(res.first_bad)
    head = "first bad commit" if not res.ambiguous else "first bad commit is one of"
    out.print(f"{head}: {fb.sha} {fb.subject}" if not res.ambiguous else
              f"{head}: " + ", ".join(f"{c[i].short} {c[i].subject}" for i in res.candidates), markup=False)
    out.print(f"  author {fb.author}, date {fb.date}; files: {', '.join(fb.files or ()) or '-'}", markup=False)
    out.print(f"last good: {c[res.last_good].sha} {c[res.last_good].subject}", markup=False)
    out.print(f"confidence {res.confidence:.4f}; {res.runs} observations, {run.oracle.executed} executed; "
              f"{len(res.skipped)} skipped; wall {run.wall_s:.1f} s"
              + ("  [INTERRUPTED: best so far]" if run.interrupted or not res.complete else ""), markup=False)
