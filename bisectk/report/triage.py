"""Reports for `bisectk triage`: one debug log, one JSON document, one JUnit XML file.

Abstractions
------------
to_json     -- the failure (kind, signature), the first bad commit, the culprit hunks, the exit
               verdict, and both steps' full JSON.
to_debuglog -- the bisection's and the isolation's debug logs merged: summary, environment,
               key differences (the culprit hunks), every attempt, the culprit diff, next steps.
to_cases    -- JUnit test cases: one per step, and one named after the subject that fails with
               the classified failure and the culprit, so CI shows it next to its own tests.
"""

from __future__ import annotations

from typing import Any

from bisectk.commands.triage import TriageRun, verdict_code
from bisectk.report import diff as diff_report
from bisectk.report import history as history_report
from bisectk.report.debuglog import DebugLog
from bisectk.report.junit import Case
from bisectk.spaces.hunks import unified_diff

VERDICTS = {0: "nothing to triage", 1: "culprit found", 2: "inconclusive"}


def to_json(t: TriageRun, environment: dict | None = None) -> dict[str, Any]:
    code = verdict_code(t)
    bis = history_report.to_json(t.bisect)
    doc: dict[str, Any] = {"verdict": VERDICTS[code], "exit_code": code, "environment": environment,
                           "failure": {"kind": t.bisect.check.bad.kind.value if t.bisect.check.bad.kind else None,
                                       "signature": t.bisect.check.bad.signature,
                                       "family": t.bisect.check.target},
                           "first_bad": bis.get("first_bad"), "last_good": bis.get("last_good"),
                           "bisect": bis}
    if t.diff is not None:
        d = diff_report.to_json(t.diff)
        doc["culprit_hunks"] = d.get("culprit_hunks", [])
        doc["interaction"] = d.get("interaction")
        doc["diff"] = d
    if t.diff_error:
        doc["diff_error"] = t.diff_error
    return doc


def to_debuglog(t: TriageRun, environment: dict | None = None) -> DebugLog:
    code = verdict_code(t)
    log = history_report.to_debuglog(t.bisect, environment)
    log.title = f"triage: {t.bisect.check.bad.describe()}"
    if code == 0:
        log.status = "Nothing to triage: the bad revision does not fail"
        return log
    if t.diff is not None and t.diff.ok:
        dl = diff_report.to_debuglog(t.diff)
        ids = ", ".join(h.id for h in t.diff.culprit_hunks)
        log.status += f"; culprit hunk(s): {ids}"
        log.summary += [s for s in dl.summary]
        log.differences_title, log.differences_header, log.differences = (
            "Key Differences: culprit hunks of the first bad commit", dl.differences_header, dl.differences)
        log.attempts += dl.attempts
        log.sections = [("Culprit diff", dl.sections[0][1]), *log.sections, *dl.sections[1:]]
        log.next_steps = dl.next_steps + log.next_steps[:1]
    elif t.diff is not None:
        log.summary.append(f"Hunk isolation inside the first bad commit was inconclusive: {t.diff.check.problem}")
    if t.diff_error:
        log.summary.append(f"Hunk isolation could not start: {t.diff_error}")
    return log


def to_cases(t: TriageRun, subject: str) -> list[Case]:
    check, code = t.bisect.check, verdict_code(t)
    cases = [Case("endpoints", "passed" if check.ok or code == 0 else "error",
                  message="" if check.ok else (check.problem or ""), time_s=sum(r.duration_s for r in check.good.runs + check.bad.runs),
                  details=f"good: {check.good.describe()}\nbad: {check.bad.describe()}", classname="bisectk.triage")]
    if code == 0:
        cases.append(Case(subject, "passed", details="the bad revision does not fail", classname="bisectk.triage"))
        return cases
    res = t.bisect.result
    if res is not None:
        fb = t.bisect.commits[res.first_bad]
        cases.append(Case("bisect", "passed" if t.found else "error",
                          message="" if t.found else "ambiguous or interrupted",
                          details=f"first bad commit {fb.sha} {fb.subject}; confidence {res.confidence:.4f}",
                          time_s=t.bisect.wall_s, classname="bisectk.triage"))
    if t.diff is not None:
        cases.append(Case("isolate hunks", "passed" if t.diff.ok else "error",
                          message="" if t.diff.ok else (t.diff.check.problem or ""),
                          details=unified_diff(t.diff.culprit_hunks) if t.diff.ok else "",
                          time_s=t.diff.wall_s, classname="bisectk.triage"))
    culprit = ""
    if res is not None:
        culprit = f" since {t.bisect.commits[res.first_bad].short} {t.bisect.commits[res.first_bad].subject}"
    if t.diff is not None and t.diff.ok:
        culprit += " (" + ", ".join(h.id for h in t.diff.culprit_hunks) + ")"
    cases.append(Case(subject, "failed", message=f"{check.bad.describe()}{culprit}",
                      details=to_debuglog(t).to_markdown(), classname="bisectk.triage"))
    return cases
