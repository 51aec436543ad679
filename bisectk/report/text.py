"""Plain terminal summaries (rich tables on stdout) for `check` and `run`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bisectk.engine.records import CheckRecord, EndpointCheck
from bisectk.report.words import problem_lines, watchdog_text
from bisectk.spec import render


def print_check(out: Console, rec: CheckRecord) -> None:
    subj, result = rec.subject, rec.endpoints
    table = Table(title=f"{subj.name}: key differences", title_justify="left")
    table.add_column("factor")
    table.add_column("good")
    table.add_column("bad")
    for f in subj.differences:
        table.add_row(f, render(subj.good[f]), render(subj.bad[f]))
    out.print(table)
    print_endpoints(out, result)


def print_endpoints(out: Console, result: EndpointCheck) -> None:
    for side, v in (("good", result.good), ("bad", result.bad)):
        times = ", ".join(f"{r.duration_s:.2f}" for r in v.runs)
        out.print(f"{side:5} {v.describe()}   runs: {len(v.runs)}   wall s: {times}"
                  + ("   (from the ledger)" if v.cached else ""), markup=False)
    out.print(f"reproducibility: bad failed {result.bad_rate.describe()}{'  FLAKY' if result.flaky else ''}",
              markup=False)
    out.print(f"watchdog: {watchdog_text(result)}", markup=False)
    if result.target:
        out.print(f"target failure: {result.target.describe()} (--same-failure {result.target.mode})", markup=False)
    for note in result.notes:
        out.print(f"note: {note}", markup=False)
    for line in ["endpoints OK"] if result.ok else problem_lines(result):
        out.print(line, markup=False)
