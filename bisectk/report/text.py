"""Plain terminal summaries (rich tables on stdout) for finished commands."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bisectk.endpoints import EndpointCheck
from bisectk.spec import Spec


def print_check(out: Console, spec: Spec, result: EndpointCheck) -> None:
    table = Table(title=f"{spec.name}: key differences", title_justify="left")
    table.add_column("factor")
    table.add_column("good")
    table.add_column("bad")
    for f in spec.differences():
        table.add_row(f, str(spec.good[f]), str(spec.bad[f]))
    out.print(table)
    for side, v in (("good", result.good), ("bad", result.bad)):
        times = ", ".join(f"{r.duration_s:.2f}" for r in v.runs)
        out.print(f"{side:5} {v.describe()}   runs: {len(v.runs)}   wall s: {times}", markup=False)
    lo, hi = result.fail_interval()
    n = result.bad.n_fail + result.bad.n_pass
    out.print(f"reproducibility: bad failed {result.bad.n_fail}/{n} runs "
              f"(95% Wilson interval {lo:.2f}-{hi:.2f}){'  FLAKY' if result.flaky else ''}", markup=False)
    out.print(f"watchdog: {result.timeout.detail}", markup=False)
    if result.target:
        out.print(f"target failure: {result.target}", markup=False)
    out.print("endpoints OK" if result.ok else f"problem: {result.problem}", markup=False)
