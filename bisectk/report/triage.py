"""Reports for `bisectk triage`, read from a TriageRecord: one debug log and JUnit test cases.

Abstractions
------------
to_debuglog -- the bisection's and the isolation's debug logs merged: summary, environment,
               key differences (the culprit hunks), every attempt, the culprit diff, next steps.
to_cases    -- JUnit test cases: one per step, and one named after the subject that fails with
               the classified failure and the culprit, so CI shows it next to its own tests.
interrupted_cases -- the cases of a triage stopped before it had any result (a CI job's timeout while
               the endpoints were verified): the endpoints and the subject, each an error saying so.
print_summary -- the end-of-run terminal view: the verdict, the first bad commit, the culprit
               hunks and their diff, the failure, the runs. Short: the debug log goes to
               --report (or `bisectk report`), never to the terminal.
"""

from __future__ import annotations

from rich.console import Console

from bisectk.engine.records import TriageRecord
from bisectk.exitcodes import TRIAGE_NOTHING
from bisectk.outcome import Outcome
from bisectk.report import diff as diff_report
from bisectk.report import history as history_report
from bisectk.report.debuglog import DebugLog
from bisectk.report.junit import Case
from bisectk.report.words import (warning_lines, confidence_words, problem_lines, remaining, same_inputs, search_runs_of, stop_reason_of,
                                  stopped_line, title_words, wall_words)


def _not_started(t: TriageRecord) -> str:
    """Why no hunk isolation ran: it was interrupted before it had a result, or it could not start."""
    return "stopped" if t.interrupted and t.diff is None else "could not start"


def to_debuglog(t: TriageRecord) -> DebugLog:
    bis = t.bisect_record()
    log = history_report.to_debuglog(bis)
    log.title = f"triage: {title_words(bis.endpoints, lambda t: history_report.verdict_words(bis, t))}"
    if t.exit_code == TRIAGE_NOTHING:
        log.status = f"Nothing to triage: {nothing_words(t)}"
        return log
    d = t.diff_record()
    if d is not None and d.ok:
        dl = diff_report.to_debuglog(d)
        log.status += ("; culprit hunk(s): " if d.complete else f"; hunk isolation {stop_reason_of(d)}, smallest "
                       "failing hunk set so far: ") + diff_report.ids_text(diff_report.hunk_place(h) for h in d.culprit_hunks)
        log.summary += [s for s in dl.summary if not s.startswith(("Watchdog:", "Failure hunted:"))
                        and " wall time " not in s]
        log.differences_title, log.differences_header, log.differences = (
            "Key Differences: culprit hunks of the first bad commit", dl.differences_header, dl.differences)
        log.attempts += dl.attempts
        log.sections = [("Culprit diff", dl.sections[0][1]), *log.sections, *dl.sections[1:]]
        log.next_steps = dl.next_steps + log.next_steps[:1]
    elif d is not None:
        log.summary.append(f"Hunk isolation inside the first bad commit was inconclusive: {d.endpoints.problem}")
    if t.diff_error:
        log.summary.append(f"Hunk isolation {_not_started(t)}: {t.diff_error}")
    log.summary = [s for s in log.summary if " wall time " not in s] + [
        f"Triage {runs_line(t)}; {wall_words(t, 'wall time')}."] + [
        w for w in warning_lines(t.warnings) if w not in log.summary]
    return log


def runs_line(t: TriageRecord) -> str:
    """Every run of the triage, counted once: executed (by step) and answered from the ledger."""
    bis, d = t.bisect_record(), t.diff_record()
    steps = f" ({bis.runs} bisecting, {d.runs} isolating hunks)" if d is not None and t.runs else ""
    cached = t.observations - t.runs
    return f"runs: {t.runs} executed{steps}" + (f", {cached} answered from the ledger ({same_inputs(bis)})" if cached > 0 else "")


def nothing_words(t: TriageRecord) -> str:
    """Why there is nothing to triage: the bad ref passed, in its own words."""
    bis = t.bisect_record()
    runs = bis.endpoints.bad.runs if bis.endpoints else ()
    return (f"the bad revision {bis.bad[:10]} passed ({len(runs)} run{'s' if len(runs) != 1 else ''}), "
            "so there is no failure to bisect")


def print_summary(out: Console, t: TriageRecord, report=None) -> None:
    bis = t.bisect_record()
    if t.exit_code == TRIAGE_NOTHING:
        out.print(f"triage: nothing to triage -- {nothing_words(t)}", markup=False)
        return
    out.print(f"triage: {t.verdict}", markup=False)
    if not bis.ok:
        for line in problem_lines(bis.endpoints):
            out.print(line, markup=False)
    else:
        history_report.print_summary(out, bis, runs=False, brief=True)
    d = t.diff_record()
    if d is not None and d.ok:
        places = diff_report.ids_text(diff_report.hunk_place(h) for h in d.culprit_hunks)
        if d.complete and len(d.sets) > 1:      # as `diff` says it: each set fails alone, not all together
            out.print(f"{len(d.sets)} independent failing sets of hunks of {bis.first_bad['sha'][:10]}, each fails "
                      "applied to its parent alone:", markup=False)
            for line in diff_report.sets_lines(d):
                out.print(line, markup=False)
        elif d.complete:
            out.print(f"culprit hunk(s) of {bis.first_bad['sha'][:10]}: {places}"
                      + ("  (interaction: each proper subset passes)" if d.interaction else ""), markup=False)
        else:   # a stopped isolation: its best so far, as `diff` says it, never as a verdict
            out.print(f"hunk isolation of {bis.first_bad['sha'][:10]}: "
                      + stopped_line(stop_reason_of(d), search_runs_of(d), d.search_made) + f"; smallest failing hunk set so far: {places}",
                      markup=False)
        diff_report.print_patch(out, d)
    elif d is not None:
        for line in problem_lines(d.endpoints, "hunk isolation inconclusive"):
            out.print(line, markup=False)
    if t.diff_error:
        out.print(f"hunk isolation {_not_started(t)}: {t.diff_error}", markup=False)
    out.print(f"{runs_line(t)}; {wall_words(t)}", markup=False)
    if report is None:
        out.print("the debug log (every attempt, the environment): add --report FILE.md", markup=False)


def _open_words(bis) -> str:
    """Why the bisection gave no verdict, as the terminal says it: stopped (Ctrl-C, --max-runs),
    rates not separable, or several candidates left (skips)."""
    if bis.interrupted:
        return stopped_line(stop_reason_of(bis), search_runs_of(bis), bis.search_made)
    if bis.separable is False:
        return history_report.separation_line(bis)
    return f"ambiguous: the first bad commit is one of {len(bis.candidates)} candidates"


def interrupted_cases(subject: str, message: str) -> list[Case]:
    """No record: the CI still gets a report, whose errors say the triage was interrupted (never
    a failure, which would name a culprit that nobody found)."""
    return [Case("endpoints", "error", message=message, classname="bisectk.triage"),
            Case(subject, "error", message=f"triage inconclusive: {message}", classname="bisectk.triage")]


def to_cases(t: TriageRecord, subject: str) -> list[Case]:
    bis = t.bisect_record()
    check, code = bis.endpoints, t.exit_code
    # the endpoints' runs are the first of the bisection's: its case takes the rest of its wall time,
    # so the cases add up to the triage's (the suite's time read as the sum of its cases'); runs
    # answered from the ledger took their time in the command that made them, none in this one
    endpoints_s = sum(r.duration_s for v in (check.good, check.bad) if not v.cached for r in v.runs)
    cases = [Case("endpoints", "passed" if check.ok or code == TRIAGE_NOTHING else "error",
                  message="" if check.ok else (check.problem or ""),
                  time_s=endpoints_s,
                  details=f"good: {check.good.describe()}\nbad: {check.bad.describe()}", classname="bisectk.triage")]
    if code == TRIAGE_NOTHING:
        cases.append(Case(subject, "passed", details=nothing_words(t), classname="bisectk.triage"))
        return cases
    fb = bis.first_bad
    if bis.ok:
        cases.append(Case("bisect", "passed" if fb and bis.complete else "error",
                          message="" if fb and bis.complete else _open_words(bis),
                          details=(f"first bad commit {fb['sha']} {fb['subject']}; {confidence_words(bis)}"
                                   if fb else remaining(len(bis.candidates))),
                          time_s=max(0.0, bis.wall_s - endpoints_s), classname="bisectk.triage"))
    d = t.diff_record()
    if d is not None:
        # a stopped isolation (Ctrl-C, --max-runs) is no verdict, as a stopped bisection is not
        stopped = d.ok and not d.complete
        cases.append(Case("isolate hunks", "passed" if d.ok and d.complete else "error",
                          message=stopped_line(stop_reason_of(d), search_runs_of(d), d.search_made) if stopped
                          else "" if d.ok else (d.endpoints.problem or ""),
                          details=d.diff if d.ok else "", time_s=d.wall_s, classname="bisectk.triage"))
    elif t.diff_error:      # stopped before it had a result, or could not start: a step all the same
        cases.append(Case("isolate hunks", "error", message=f"hunk isolation {_not_started(t)}: {t.diff_error}",
                          classname="bisectk.triage"))
    culprit = f" since {fb['sha'][:10]} {fb['subject']}" if fb and bis.complete else ""   # no guess as a verdict
    if d is not None and d.ok and d.complete and len(d.sets) > 1:
        culprit += f" ({len(d.sets)} independent failing sets: " + "; ".join(diff_report.sets_lines(d)) + ")"
    elif d is not None and d.ok and d.complete:
        culprit += " (" + diff_report.ids_text((diff_report.hunk_place(h) for h in d.culprit_hunks), limit=10**9) + ")"
    # a bad endpoint that passed (swapped refs) is no failure to name: the problem is
    what = (history_report.verdict_words(bis, check.bad.describe()) if check.bad.outcome is not Outcome.PASS
            else f"{t.verdict}: {check.problem}")
    cases.append(Case(subject, "failed",
                      message=f"{what}{culprit}",
                      details=to_debuglog(t).to_markdown(entities=False), classname="bisectk.triage"))
    return cases
