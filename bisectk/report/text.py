"""Plain terminal summaries (rich tables on stdout) for `check`, `run` and `replay`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bisectk.engine.records import CheckRecord, EndpointCheck, ReplayRecord, RunRecord
from bisectk.outcome import Failure, Outcome, Reason, Verdict
from bisectk.report.stuck import terminal_lines
from bisectk.report.terminal import TABLE_ROWS, fmt_config, print_table, shown_value
from bisectk.report.words import problem_lines, remaining, slow_line, watchdog_text


def print_run(out: Console, rec: RunRecord, brief: bool = False) -> None:
    """The configuration, its verdict (and the command, when the subject refused its arguments),
    and where a hang was stuck; `brief`: the verdict alone."""
    verdict = Verdict.from_dict(rec.verdict)
    if brief:
        out.print(f"{rec.subject.name}: verdict {verdict.describe()}", markup=False)
        return
    out.print(f"{rec.subject.name}: {fmt_config(rec.config, rec.subject.good)}", markup=False)
    out.print(f"verdict: {verdict.describe()}  ({verdict.duration_s:.2f} s"
              f"{', from the ledger' if verdict.cached else ''})", markup=False)
    if (line := runs_line(verdict)) is not None:
        out.print(line, markup=False)
    if verdict.reason is Reason.USAGE:
        out.print(f"command: {rec.ran}", markup=False)
    for line in terminal_lines(rec.hangs):
        out.print(line, markup=False, highlight=False)


def runs_line(verdict: Verdict) -> str | None:
    """How the repeated runs of one configuration ended, counted, where the verdict line alone
    would misread them: failures of more than one identity (the verdict names the first), or a
    run that could not test the configuration beside runs that did (it ends the repeats); else
    None."""
    groups: dict[str, int] = {}
    for r in verdict.runs:
        if r.outcome is Outcome.PASS:
            label = "pass"
        elif r.outcome is Outcome.FAIL and r.kind:
            label = (r.failure() or Failure(r.kind)).describe()
        else:
            label = " ".join(filter(None, [r.outcome.value, r.reason and r.reason.value, r.signature and f"({r.signature})"]))
        groups[label] = groups.get(label, 0) + 1
    unresolved = verdict.outcome is not Outcome.UNRESOLVED and any(r.outcome is Outcome.UNRESOLVED for r in verdict.runs)
    if not unresolved and len(set(groups) - {"pass"}) < 2:
        return None
    return ("runs: " + ", ".join(f"{n} {label}" for label, n in groups.items())
            + (" (a run that cannot test the configuration ends the repeats: no run was made after it)"
               if unresolved else ""))


def print_replay(out: Console, rec: ReplayRecord) -> None:
    if rec.contradiction:
        out.print(f"the log contradicts itself: {rec.contradiction}", markup=False)
    fb = rec.first_bad
    if not fb and rec.complete and not rec.next and len(rec.candidates) > 1:    # skips left them apart
        out.print(f"first {rec.terms[-1]} commit is one of {len(rec.candidates)} candidates:", markup=False)
        for c in rec.candidates:
            out.print(f"  {c['sha']} {c['subject']}", markup=False)
        return
    out.print(f"first {rec.terms[-1]} commit: {fb['sha']} {fb['subject']}" if fb and rec.complete else
              f"not determined yet; {remaining(len(rec.candidates))}", markup=False)
    if rec.next:
        out.print(f"next commit to test: {rec.next['sha']} {rec.next['subject']}"
                  + ("" if rec.next.get("index") is not None else " (a merge base: git tests it first)"), markup=False)


def print_check(out: Console, rec: CheckRecord) -> None:
    """The key differences, both endpoints' verdicts, and the warnings of the spec."""
    subj, result = rec.subject, rec.endpoints
    table = Table(title=f"{subj.name}: key differences", title_justify="left")
    header = ["factor", "good", "bad"]
    for h in header:
        table.add_column(h, overflow="fold")   # never cut to '…': the name is what the reader types next
    # (a value is, past VALUE_CHARS: a value of 20,000 characters was a table of 1,400 lines)
    # thousands of rows would bury the verdicts: the first TABLE_ROWS, then a count (as ablate's)
    rows = [[f, shown_value(subj.good[f]), shown_value(subj.bad[f])] for f in subj.differences[:TABLE_ROWS]]
    if len(subj.differences) > TABLE_ROWS:
        rows.append([f"... {len(subj.differences) - TABLE_ROWS} more", "", ""])
    for row in rows:
        table.add_row(*row)
    print_table(out, table, header, rows)
    print_endpoints(out, result)
    if (slow := slow_line(result, subj)) is not None:
        out.print(slow, markup=False)
    for line in rec.warnings:
        out.print(f"warning: {line}", markup=False)


def print_endpoints(out: Console, result: EndpointCheck) -> None:
    for side, v in (("good", result.good), ("bad", result.bad)):
        times = ", ".join(f"{r.duration_s:.2f}" for r in v.runs)
        out.print(f"{side:5} {v.describe()}   runs: {len(v.runs)}   wall s: {times}"
                  + ("   (from the ledger)" if v.cached else ""), markup=False)
    out.print(f"reproducibility: bad failed {result.bad_rate.describe()}{'  FLAKY' if result.flaky else ''}"
              if result.bad_rate.runs else "reproducibility: not measured (no run of bad was judged: each was unresolved)",
              markup=False)
    out.print(f"watchdog: {watchdog_text(result)}", markup=False)
    if result.target:
        out.print(f"target failure: {result.target.describe()} (--same-failure {result.target.mode})", markup=False)
    for note in result.notes:
        out.print(f"note: {note}", markup=False)
    for line in ["endpoints OK"] if result.ok else problem_lines(result):
        out.print(line, markup=False)
