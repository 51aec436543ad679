"""Reports for `bisectk ablate`, read from an AblationRecord: the terminal view and the debug log.

Abstractions
------------
to_debuglog   -- the record as a debug log: summary, key differences, one attempt per
                 configuration tried (hypothesis / what we did / result / conclusion), second
                 bugs, flakiness rule, thresholds, what to try next.
print_summary -- the end-of-run terminal view.

Every command printed is quoted for a POSIX shell (names.shell_join), so pasting it runs exactly it.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bisectk.engine.records import AblationRecord
from bisectk.report import stuck
from bisectk.report.advice import next_steps
from bisectk.report.debuglog import AttemptEntry, DebugLog, code_block, table
from bisectk.names import c_quoted, shell_join
from bisectk.report.safe import code_span, strong
from bisectk.report.terminal import TABLE_ROWS, cut_value, print_table
from bisectk.report.words import (warning_lines, endpoint_lines, failure_line, slow_line, phase_words, problem_lines, problem_text, runs_words,
                                  same_inputs, search_runs_of, stop_reason_of, stopped_line, title_words, wall_words)
from bisectk.specvalues import format_value, one_line

HEADER = ["factor", "good", "bad", "flipped alone on good", "removed from bad", "verdict"]


def effect_rows(rec: AblationRecord) -> list[list[str]]:
    return [[r["factor"], one_line(r["good"]), one_line(r["bad"]), r["alone"], r["removed"], r["verdict"]]
            for r in rec.differences]


def terminal_rows(rec: AblationRecord, limit: int = TABLE_ROWS) -> tuple[list[list[str]], int]:
    """The table's rows on the terminal, and how many cleared factors it leaves out: every factor up
    to `limit`; past it every factor that is not cleared (culprits, context, the unresolved) and
    cleared ones while the limit allows. 30,000 rows took 28 s to print and scrolled the answer
    away; the debug log and --json keep every row."""
    rows = [[f, cut_value(good), cut_value(bad), *rest] for f, good, bad, *rest in effect_rows(rec)]
    if len(rows) <= limit:
        return rows, 0
    room = limit - sum(r[5] != "cleared" for r in rows)      # what the cleared may still fill
    kept = []
    for r in rows:
        if r[5] != "cleared" or room > 0:
            kept.append(r)
            room -= r[5] == "cleared"
    return kept, len(rows) - len(kept)


def run_command(rec: AblationRecord, applied) -> str:
    """The `bisectk run` command that reproduces one attempt, quoted."""
    argv = ["bisectk", "run", rec.subject.path, "--config", "good"]
    for a in applied:
        argv += ["--set", f"{a}={format_value(rec.subject.bad.get(a))}"]
    return shell_join(argv)


def _reverted(applied: list, differences) -> list:
    applied = set(applied)      # a confirm-removal applies all but one of 30,000 factors: no list scan
    return [d for d in differences if d not in applied]


def _hypothesis(phase: str, applied: list, differences) -> str:
    what = ", ".join(map(str, applied)) or "nothing"
    if phase in ("confirm-removal", "ofat-remove", "fix-check"):
        reverted = _reverted(applied, differences)
        gone = ", ".join(map(str, reverted)) or "nothing"
        return (f"Reverting {gone} from bad fixes it (every failing set needs "
                f"{gone if len(reverted) == 1 else 'one of ' + gone}).")
    if phase.startswith("ofat-add") or len(applied) == 1:
        return f"{what} alone, flipped onto the good configuration, is enough to fail."
    if phase == "interaction-proof":
        return f"A proper subset of the culprit set ({what}) already fails; if not, the culprits act together."
    if phase == "minimality":
        return f"The failing set can shrink to {what}."
    return f"Applying these {len(applied)} of {len(differences)} differences to good is enough to fail: {what}."


def _conclusion(outcome: str, phase: str, applied: list, differences) -> str:
    """What the run showed, and no more: a failing configuration holds a failing set (there may be
    others elsewhere); bad minus some differences failing means a set without them exists."""
    if outcome == "unresolved":
        return ("Could not be judged (invalid hybrid, build failure, or a different failure on every "
                "re-run); searched around it.")
    if phase in ("confirm-removal", "ofat-remove", "fix-check"):
        gone = ", ".join(map(str, _reverted(applied, differences))) or "nothing"
        return (f"Bad passes without {gone}: reverting {gone} fixes it." if outcome == "pass" else
                f"Bad still fails without {gone}: a failing set that does not need {gone} exists.")
    what = ", ".join(map(str, applied)) or "no difference"
    return (f"The target failure reproduces with {what} applied: a failing set lies within these differences."
            if outcome == "fail" else f"Passes with {what} applied: this set alone does not cause the failure.")


def culprit_words(rec: AblationRecord) -> str:
    if len(rec.sets) > 1:
        return "; ".join(f"set {i} {{{', '.join(s['members'])}}}" for i, s in enumerate(rec.sets, 1))
    if rec.complete:
        return ", ".join(rec.culprits) or "(none isolated)"
    proven = ", ".join(rec.culprits) or "none yet"
    return f"shown necessary: {proven}; not yet resolved: {', '.join(rec.unresolved_factors) or 'none'}"


def fix_words(fix: list) -> str:
    """'fast', 'both n and block', 'all of a, b and c' (hunk ids C-quoted, as ids_text has them)."""
    fix = [c_quoted(f) for f in fix]
    if len(fix) == 1:
        return fix[0]
    return ("both " if len(fix) == 2 else "all of ") + ", ".join(fix[:-1]) + " and " + fix[-1]


def reverted_words(fixes) -> str:
    """What was run of the fixes: one fix of two differences is both reverted at once (each alone
    did not pass), which 'with each reverted' said otherwise."""
    if len(fixes) > 1:
        return "bad passed with each of these reverted"
    return "bad passed with " + ("it" if len(fixes[0]) == 1 else "both" if len(fixes[0]) == 2 else "all") + " reverted"


def sets_lines(rec: AblationRecord) -> list[str]:
    """The failing sets, the fixes shown, and what may remain, in sentences (terminal and log)."""
    lines = []
    if len(rec.sets) > 1:
        for i, s in enumerate(rec.sets, 1):
            lines.append(f"failing set {i}: {', '.join(map(c_quoted, s['members']))}"
                         + ("  (interaction: each proper subset passes)" if s.get("interaction") else ""))
        if rec.fixes:
            lines.append("fix: " + ", or ".join(fix_words(list(f)) for f in rec.fixes)
                         + f" ({reverted_words(rec.fixes)})")
    if rec.sets_complete is False and rec.complete:
        lines.append(f"another cause may remain: {rec.sets_note}")
    return lines


def status_words(rec: AblationRecord) -> str:
    if not rec.complete:
        return f"Open ({stop_reason_of(rec)}) -- {culprit_words(rec)}"
    if rec.sets_complete is False:
        return f"Partly resolved -- {culprit_words(rec)}; another cause may remain ({rec.sets_note})"
    if len(rec.sets) > 1:
        fixes = ", or ".join(fix_words(list(f)) for f in rec.fixes)
        return f"Resolved -- {len(rec.sets)} independent failing sets: {culprit_words(rec)}" + (
            f"; fix: {fixes}" if fixes else "")
    return f"Resolved -- culprit{'s' if len(rec.culprits) != 1 else ''}: {culprit_words(rec)}"


def to_debuglog(rec: AblationRecord) -> DebugLog:
    check, subj = rec.endpoints, rec.subject
    title = f"{subj.name}: {title_words(check)}"
    warned = warning_lines(rec.warnings)
    if not rec.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", problem_text(check), rec.environment,
                        summary=warned)
    log = DebugLog(title, status_words(rec), f"good passes, bad fails: {check.bad.describe()}", rec.environment,
                   related=[subj.path, *[a for a in subj.command if a.endswith(".py")]])
    one_set = len(rec.sets) <= 1
    log.summary = [
        *([f"Culprit{'s' if len(rec.culprits) != 1 else ''}: {strong(culprit_words(rec))}"
           + (" -- an interaction: each proper subset passes, only all together fail." if rec.interaction else "")]
          if one_set else []),
        *[line[0].upper() + line[1:] + "." for line in sets_lines(rec)],
        # with some answered from the ledger, the breakdown counts them all: "N in all" says so
        f"{runs_words(rec.runs, rec.observations, rec)}"
        f"{f', {rec.observations} in all' if 0 < rec.runs < rec.observations else ''} ({phase_words(rec)}; "
        f"strategy {rec.strategy}); "
        f"{wall_words(rec, 'wall time')}.",
        *endpoint_lines(check),
        *warned,
    ]
    if rec.flakiness_rule:
        log.summary.append(f"Flakiness rule: {rec.flakiness_rule['text']}.")
    for f, t in rec.thresholds.items():
        log.summary.append(f"Threshold: {f} {t['text']}.")
    log.differences_title = "Key Differences: good (works) vs bad (fails)"
    log.differences_header = HEADER
    log.differences = effect_rows(rec)
    for a in rec.attempts:
        log.attempts.append(AttemptEntry(
            title=f"{', '.join(a.applied) or 'good'} ({a.stage + ': ' if a.stage else ''}{a.phase})",
            hypothesis=_hypothesis(a.phase, list(a.applied), subj.differences),
            what=code_span(run_command(rec, a.applied)),
            result=f"{a.verdict} ({a.time_s:.2f} s, {a.runs} run{'s' if a.runs != 1 else ''}"
                   + (", from the ledger" if a.from_ledger else "") + ")",
            conclusion=_conclusion(a.outcome, a.phase, list(a.applied), subj.differences)))
    if rec.different_failures:
        log.sections.append(("Possible second bugs (different failures)",
                             table(["configuration", "failure", "verdict"],
                                   [[d["config"], d.get("failure") or "", d["verdict"]] for d in rec.different_failures])))
    if rec.hangs and stuck.markdown(rec.hangs):
        log.sections.append(("Where the hang is stuck", stuck.markdown(rec.hangs)))
    if len(rec.sets) > 1:
        for i, s in enumerate(rec.sets, 1):
            if s.get("proof"):
                log.sections.append((f"Interaction proof of set {i} ({', '.join(s['members'])})",
                                     table(["subset", "outcome"], [[", ".join(p["config"]) or "(none)", p["outcome"]]
                                                                  for p in s["proof"]])))
    elif rec.proof:
        log.sections.append(("Interaction proof", table(["subset", "outcome"],
                                                        [[", ".join(p["config"]) or "(none)", p["outcome"]] for p in rec.proof])))
    if rec.ptx:
        log.sections.append(("PTX evidence (signature differences)", rec.ptx.get("table", "")))
    if rec.sanitizer:
        body = rec.sanitizer.get("text", "") + ("\n\n" + code_block(rec.sanitizer["excerpt"])
                                               if rec.sanitizer.get("excerpt") else "")
        log.sections.append(("compute-sanitizer on the culprit configuration", body))
    log.next_steps = next_steps(rec)
    return log


def print_summary(out: Console, rec: AblationRecord) -> None:
    if not rec.ok:
        for line in problem_lines(rec.endpoints):
            out.print(line, markup=False)
        return
    t = Table(title=f"{rec.subject.name}: key differences", title_justify="left")
    for h in HEADER:
        # a narrow terminal folds a long factor name or value onto more lines, never cuts it to
        # 'release_befor…' (the name is what the reader types next)
        t.add_column(h, overflow="fold")
    rows, left_out = terminal_rows(rec)
    for row in rows:
        style = ("bold red" if row[5] == "CULPRIT" else "red" if row[5].startswith("culprit in")
                 else "yellow" if row[5].startswith("UNRESOLVED") else None)
        t.add_row(*row, style=style)
    if left_out:
        rows = [*rows, [f"... {left_out} more", "", "", "", "", "cleared"]]
        t.add_row(*rows[-1])
    print_table(out, t, HEADER, rows)
    if left_out:
        out.print(f"{left_out} more factors were cleared; every factor is in the debug log (--report FILE.md) "
                  "and in --json", markup=False)
    if rec.complete:
        if len(rec.sets) <= 1:
            label = "culprits" if len(rec.culprits) != 1 else "culprit"
            out.print(f"{label}: {culprit_words(rec)}"
                      + ("  (interaction: each proper subset passes)" if rec.interaction else ""), markup=False)
        for line in sets_lines(rec):
            out.print(line, markup=False)
    else:
        out.print(stopped_line(stop_reason_of(rec), search_runs_of(rec), rec.search_made) + f"; {culprit_words(rec)}", markup=False)
    out.print(failure_line(rec.endpoints), markup=False)
    if (slow := slow_line(rec.endpoints, getattr(rec, "subject", None))) is not None:
        out.print(slow, markup=False)
    for line in stuck.terminal_lines(rec.hangs):
        out.print(line, markup=False, highlight=False)
    for f, th in rec.thresholds.items():
        out.print(f"threshold: {f} {th['text']}", markup=False)
    if rec.flakiness_rule:
        out.print(f"flakiness: {rec.flakiness_rule['text']}", markup=False)
    for d in rec.different_failures:
        out.print(f"different failure (possible second bug): {d['config']} -> {d['verdict']}", markup=False)
    if rec.ptx and not rec.ptx.get("signatures"):
        errors = rec.ptx.get("errors") or {}
        why = next(iter(errors.values()), "no signature")
        out.print(f"ptx: nothing compared ({why})", markup=False)
    elif rec.ptx and not rec.ptx.get("differences"):
        out.print("ptx: the PTX signatures of good, bad and the culprit configuration do not differ", markup=False)
    if rec.ptx:
        for row in rec.ptx.get("differences", []):
            key = row.get("key")
            out.print(f"ptx {key}: " + ", ".join(f"{k}={v}" for k, v in row.items() if k != "key"), markup=False)
    if rec.sanitizer:
        out.print(rec.sanitizer.get("text", ""), markup=False)
    cached = rec.observations - rec.runs
    breakdown = phase_words(rec)
    # the breakdown counts every observation: inside the ledger's parentheses only when the
    # ledger answered them all, else `2 answered from the ledger (...; 27 by the search, ...)`
    # reads as 27 of the 2 coming from it
    if cached > 0 and rec.runs > 0:
        runs = f", {cached} answered from the ledger ({same_inputs(rec)}), {rec.observations} in all ({breakdown})"
    else:
        runs = f", {cached} answered from the ledger ({same_inputs(rec)}; {breakdown})" if cached > 0 else f" ({breakdown})"
    out.print(f"runs: {rec.runs} executed{runs}, {wall_words(rec)}", markup=False)
    for i, s in enumerate(next_steps(rec), 1):
        out.print(f"next {i}. {s}", markup=False)
