"""Reports for `bisectk ablate`: terminal tables, the JSON document, the Markdown debug log.

Abstractions
------------
effect_rows   -- the key-differences table: factor, good value, bad value, effect when flipped
                 alone onto good, effect when removed from bad, and the verdict on the factor.
to_json       -- the machine-readable result (culprits, interaction, runs, attempts, ...).
to_debuglog   -- the same result as a debug log: summary, key differences, one attempt per
                 configuration tried (hypothesis / what we did / result / conclusion), second
                 bugs, flakiness rule, thresholds, what to try next.
print_summary -- the end-of-run terminal view.
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.console import Console
from rich.table import Table

from bisectk.commands.ablate import AblationRun
from bisectk.outcome import Outcome, Verdict
from bisectk.report.debuglog import AttemptEntry, DebugLog, code_block, table
from bisectk.spec import config_key

ROLE_TEXT = {"culprit": "CULPRIT", "context": "context", "cleared": "cleared", "unknown": "not isolated"}


def _outcome(o: Outcome | None) -> str:
    return "-" if o is None else {"pass": "passes", "fail": "FAILS", "unresolved": "unresolved"}[o.value]


def effect_rows(run: AblationRun) -> list[list[str]]:
    spec = run.oracle.runner.spec
    rows = []
    for f in spec.differences():
        e = run.result.effects.get(f)
        rows.append([f, str(spec.good[f]), str(spec.bad[f]),
                     _outcome(e.alone if e else None), _outcome(e.removed if e else None),
                     ROLE_TEXT.get(e.role, e.role) if e else "-"])
    return rows


HEADER = ["factor", "good", "bad", "flipped alone on good", "removed from bad", "verdict"]


def _verdict_for(run: AblationRun, applied) -> Verdict | None:
    return run.oracle.verdicts.get(config_key(run.oracle.config(applied)))


def attempt_rows(run: AblationRun) -> list[dict[str, Any]]:
    rows = []
    for a in run.result.attempts:
        if not isinstance(a.config, frozenset):
            continue
        v = _verdict_for(run, a.config)
        rows.append({"index": a.index, "phase": a.phase, "applied": sorted(a.config, key=run.result.differences.index),
                     "outcome": a.outcome.value, "runs": a.runs,
                     "verdict": v.describe() if v else a.outcome.value.upper(),
                     "signature": v.signature if v else "", "time_s": round(v.duration_s, 3) if v else 0.0})
    return rows


def to_json(run: AblationRun, environment: dict | None = None) -> dict[str, Any]:
    spec = run.oracle.runner.spec if run.oracle else None
    doc: dict[str, Any] = {"endpoints": run.check.to_dict(), "ok": run.ok, "wall_s": round(run.wall_s, 3),
                           "runs": run.executed, "interrupted": run.interrupted}
    if environment is not None:
        doc["environment"] = environment
    if run.result is None:
        return doc
    res = run.result.to_dict()
    doc.update({
        "culprits": res["culprits"], "interaction": res["interaction"], "strategy": res["strategy"],
        "complete": res["complete"] and not run.interrupted, "search_runs": res["runs"],
        "differences": [{"factor": r[0], "good": spec.good[r[0]], "bad": spec.bad[r[0]], "alone": r[3],
                         "removed": r[4], "verdict": r[5]} for r in effect_rows(run)],
        "attempts": attempt_rows(run),
        "proof": res["proof"],
        "different_failures": [{"config": k, "verdict": v.describe()} for k, v in run.oracle.different_failures()],
        "unresolved": res["unresolved"],
        "flakiness_rule": run.rule.to_dict() if run.rule else None,
        "thresholds": {f: {"first_fail": t.value, "last_pass": t.values[t.last_pass], "exact": t.exact,
                           "text": t.describe()} for f, t in run.thresholds.items()},
        "next_steps": next_steps(run),
        "ptx": run.ptx.to_dict() if run.ptx else None,
        "sanitizer": run.sanitizer.to_dict() if run.sanitizer else None,
    })
    return doc


def next_steps(run: AblationRun) -> list[str]:
    steps = list(run.result.next_steps) if run.result else []
    spec = run.oracle.runner.spec if run.oracle else None
    if run.result and run.result.culprits and spec:
        sets = " ".join(f"--set {shlex.quote(f'{c}={spec.good[c]}')}" for c in run.result.culprits)
        steps.append(f"Verify the fix candidate on the bad configuration: "
                     f"bisectk run {shlex.quote(str(spec.path))} --config bad {sets} --repeat 5")
    for f, t in run.thresholds.items():
        steps.append(f"{f}: {t.describe()}; inspect what changes between those two values.")
    if run.oracle and run.oracle.different_failures():
        steps.append("A different failure appeared in some hybrids (listed above): ablate it separately.")
    return steps


def _hypothesis(phase: str, applied: list, n_total: int) -> str:
    what = ", ".join(map(str, applied)) or "nothing"
    if phase.startswith("ofat-add") or (len(applied) == 1 and phase not in ("confirm-removal", "ofat-remove")):
        return f"{what} alone, flipped onto the good configuration, is enough to fail."
    if phase in ("confirm-removal", "ofat-remove"):
        return "The failure needs every difference except the one reverted (bad minus one)."
    if phase == "interaction-proof":
        return f"A proper subset of the culprit set ({what}) already fails; if not, the culprits act together."
    if phase == "minimality":
        return f"The failing set can shrink to {what}."
    return f"Applying these {len(applied)} of {n_total} differences to good is enough to fail: {what}."


def _conclusion(outcome: str, applied: list) -> str:
    what = ", ".join(map(str, applied)) or "no difference"
    return {"fail": f"The target failure reproduces with {what} applied: the cause is within this set.",
            "pass": f"Passes with {what} applied: this set alone does not cause the failure.",
            "unresolved": "Could not be judged (invalid hybrid, build failure or a different failure); searched around it."}[outcome]


def to_debuglog(run: AblationRun, environment: dict | None = None) -> DebugLog:
    spec = run.oracle.runner.spec if run.oracle else None
    check = run.check
    title = f"{spec.name if spec else 'ablation'}: {check.bad.describe()}" if spec else "ablation"
    if not run.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", check.problem or "", environment or {})
    res = run.result
    culprits = ", ".join(res.culprits) or "(none isolated)"
    status = ("Resolved" if res.complete and not run.interrupted else "Open (interrupted)") + f" -- culprit: {culprits}"
    log = DebugLog(title, status, f"good passes, bad fails: {check.bad.describe()}", environment or {},
                   related=[str(spec.path), *[a for a in spec.command if a.endswith(".py")]])
    log.summary = [
        f"Culprit{'s' if len(res.culprits) != 1 else ''}: **{culprits}**"
        + (" -- an interaction: each proper subset passes, only all together fail." if res.interaction else ""),
        f"{run.executed} runs executed (endpoints included), {res.runs} by the search ({res.strategy}); wall time {run.wall_s:.1f} s.",
        f"Watchdog: {check.timeout.detail}.",
        f"Target failure family: `{check.target}`; bad endpoint failed {check.bad.n_fail}/{len(check.bad.runs)} runs.",
    ]
    if run.rule:
        log.summary.append(f"Flakiness rule: {run.rule.describe()}.")
    for f, t in run.thresholds.items():
        log.summary.append(f"Threshold: {f} {t.describe()}.")
    log.differences_title = "Key Differences: good (works) vs bad (fails)"
    log.differences_header = HEADER
    log.differences = effect_rows(run)
    for row in attempt_rows(run):
        sets = " ".join(f"--set {a}={spec.bad[a]}" for a in row["applied"])
        log.attempts.append(AttemptEntry(
            title=f"{', '.join(row['applied']) or 'good'} ({row['phase']})",
            hypothesis=_hypothesis(row["phase"], row["applied"], len(res.differences)),
            what=f"`bisectk run {spec.path} --config good {sets}`".replace("  ", " "),
            result=f"{row['verdict']} ({row['time_s']:.2f} s, {row['runs']} run{'s' if row['runs'] != 1 else ''})",
            conclusion=_conclusion(row["outcome"], row["applied"])))
    others = run.oracle.different_failures()
    if others:
        log.sections.append(("Possible second bugs (different failures)",
                             table(["configuration", "verdict"], [[k, v.describe()] for k, v in others])))
    if res.proof:
        log.sections.append(("Interaction proof", table(["subset", "outcome"],
                                                        [[", ".join(sorted(s)) or "(none)", o.value] for s, o in res.proof.items()])))
    if run.ptx:
        log.sections.append(("PTX evidence (signature differences)", run.ptx.table()))
    if run.sanitizer:
        body = run.sanitizer.describe() + ("\n\n" + code_block(run.sanitizer.excerpt) if run.sanitizer.excerpt else "")
        log.sections.append(("compute-sanitizer on the culprit configuration", body))
    log.next_steps = next_steps(run)
    return log


def print_summary(out: Console, run: AblationRun) -> None:
    if not run.ok:
        out.print(f"problem: {run.check.problem}", markup=False)
        return
    spec = run.oracle.runner.spec
    t = Table(title=f"{spec.name}: key differences", title_justify="left")
    for h in HEADER:
        t.add_column(h)
    for row in effect_rows(run):
        style = "bold red" if row[5] == "CULPRIT" else None
        t.add_row(*row, style=style)
    out.print(t)
    res = run.result
    label = "culprits" if len(res.culprits) != 1 else "culprit"
    out.print(f"{label}: {', '.join(res.culprits) or '(none isolated)'}"
              + ("  (interaction: each proper subset passes)" if res.interaction else ""), markup=False)
    for f, th in run.thresholds.items():
        out.print(f"threshold: {f} {th.describe()}", markup=False)
    if run.rule:
        out.print(f"flakiness: {run.rule.describe()}", markup=False)
    for k, v in run.oracle.different_failures():
        out.print(f"different failure (possible second bug): {k} -> {v.describe()}", markup=False)
    if run.ptx:
        for key, values in run.ptx.rows:
            out.print(f"ptx {key}: " + ", ".join(f"{lab}={v}" for lab, v in zip(run.ptx.signatures, values)), markup=False)
    if run.sanitizer:
        out.print(run.sanitizer.describe(), markup=False)
    out.print(f"runs: {run.executed} executed ({res.runs} in the search), wall {run.wall_s:.1f} s"
              + ("  [INTERRUPTED: best result so far]" if run.interrupted or not res.complete else ""), markup=False)
    for i, s in enumerate(next_steps(run), 1):
        out.print(f"next {i}. {s}", markup=False)
