"""Reports for `bisectk diff`, read from a DiffRecord: the terminal view and the debug log.

Abstractions
------------
to_debuglog   -- summary, the culprit diff, a table of culprit hunks, one attempt per
                 configuration (with the failure it showed), build-broken hybrids, what to try next.
print_summary -- the end-of-run terminal view, ending with the numbered next steps (as ablate's).
git_apply_only -- the line that says a culprit patch is one for `git apply`, not `patch -p1`.
culprit_patch -- the patch to apply; where it holds bytes that are not UTF-8 (shown `\\xNN`) the
                 terminal says where its bytes are (--report's FILE-culprit.patch: report/html.py
                 write_markdown; --json's base64: report/advice.py).
"""

from __future__ import annotations

from rich.console import Console

from bisectk.engine.records import DiffRecord
from bisectk.report import stuck
from bisectk.report.ablation import sets_lines
from bisectk.report.advice import next_steps
from bisectk.report.debuglog import AttemptEntry, DebugLog, code_block, table
from bisectk.report.safe import Verbatim, strong, undecoded_bytes
from bisectk.names import c_quoted, ids_text
from bisectk.report.words import (warning_lines, ahead_words, counted, endpoint_lines, failure_line, slow_line, problem_lines, problem_text,
                                  runs_words, same_inputs, search_runs_of, stop_reason_of, stopped_line, title_words, wall_words)


def lines_text(span) -> str:
    """A closed 1-based line range: '12' for one line, '12-14', 'before 12' for an insertion."""
    start, end = span
    if start == end == 0:
        return "-"
    if end <= start:
        return f"before {start}"
    return str(start) if end - start == 1 else f"{start}-{end - 1}"


def hunk_place(h: dict) -> str:
    """Where a hunk is in GOOD ('kernel.py:19'); records from before `where` existed computed."""
    return h.get("where") or f"{h['file']}:{lines_text(h['good_lines'])}"


def git_apply_only(rec: DiffRecord) -> str | None:
    """A line for a culprit patch that `patch -p1` cannot apply, whatever its form: one that puts
    a directory where a file was, or the reverse (a retype hunk; GNU patch refuses git's own
    patch of it), or a binary file's change (git's binary patch), which `git apply` takes. None
    for every other patch: both apply it."""
    retyped = [h["id"] for h in rec.culprit_hunks if h.get("kind") == "retype"]
    why = [f"{ids_text(retyped)} replaces a file by a directory or the reverse"] if retyped else []
    if "\nGIT binary patch\n" in "\n" + (rec.lines_diff or rec.diff):
        why.append("it changes a binary file (a GIT binary patch)")
    if not why:
        return None
    return f"apply this patch with `git apply`: {' and '.join(why)}, which `patch -p1` cannot apply"


def line_endings_only(patch: str) -> bool:
    """Whether a text patch changes nothing but line endings (`exit 0` to `exit 0\\r`): its removed
    and added lines are the same lines once their CR is dropped. A terminal shows such lines alike,
    since the CR is printed as it is, for the patch to apply (safe.Verbatim)."""
    removed, added = [], []
    for line in patch.split("\n"):
        if line.startswith(("---", "+++")):
            continue
        if line[:1] in "-+" and line:
            (removed if line[0] == "-" else added).append(line[1:])
    if not removed or sorted(removed) == sorted(added):
        return False
    return sorted(x.rstrip("\r") for x in removed) == sorted(x.rstrip("\r") for x in added)


def patch_text(patch: str) -> str:
    """A patch as shown: without its trailing newlines, but for the empty line that closes git's
    binary patch when one ends it (without that line `git apply` calls the patch corrupt)."""
    text = patch.rstrip("\n")
    last = text.rsplit("\ndiff --git ", 1)[-1]
    return text + "\n" if "\nGIT binary patch\n" in "\n" + last else text


def to_debuglog(rec: DiffRecord) -> DebugLog:
    title = f"diff {rec.good} vs {rec.bad}: {title_words(rec.endpoints)}"
    warned = warning_lines(rec.warnings)
    if not rec.ok:
        return DebugLog(title, "Inconclusive: endpoints unusable", problem_text(rec.endpoints), rec.environment,
                        summary=warned)
    ids = [h["id"] for h in rec.culprit_hunks]
    status = (("Resolved" if rec.complete else f"Open ({stop_reason_of(rec)})")
              + f" -- culprit hunk(s): {ids_text(hunk_place(h) for h in rec.culprit_hunks)}")
    log = DebugLog(title, status, f"GOOD passes, BAD fails: {rec.endpoints.bad.describe()}", rec.environment,
                   related=sorted({h["file"] for h in rec.culprit_hunks}))
    log.summary = [
        f"{counted(rec.hunks, 'hunk')} between GOOD and BAD; culprit{'s' if len(ids) != 1 else ''}: {strong(ids_text(ids))}"
        + (" -- they fail only together (each proper subset passes)." if rec.interaction else "."),
        f"Line-level pass: {len(rec.culprit_lines)} culprit line unit(s)"
        + (" (an interaction)" if rec.line_interaction else "") + ".",
        f"{runs_words(rec.runs, rec.observations, rec)}; {wall_words(rec, 'wall time')}.",
        *endpoint_lines(rec.endpoints),
        f"{len(rec.unresolved)} hybrid(s) were UNRESOLVED (build failures, or a different failure).",
        *([f"Flakiness rule: {rec.flakiness_rule['text']}."] if rec.flakiness_rule else []),
        *[line[0].upper() + line[1:] + "." for line in sets_lines(rec)],
        *warned,
    ]
    log.differences_title = "Key Differences: culprit hunks"
    log.differences_header = ["hunk", "kind", "GOOD lines", "BAD lines", "verdict"]
    log.differences = [[c_quoted(h["id"]), h["kind"], lines_text(h["good_lines"]), lines_text(h["bad_lines"]), "CULPRIT"]
                       for h in rec.culprit_hunks]
    for a in rec.attempts:
        n = len(a.applied)
        log.attempts.append(AttemptEntry(
            title=f"{a.pass_name}: {n} unit(s) applied ({a.phase})",
            hypothesis=f"Applying these {n} {a.pass_name} to GOOD is enough to reproduce the failure: "
                       f"{ids_text(a.applied)}.",
            what="materialised GOOD with those units applied in the scratch tree and ran the subject",
            result=f"{a.verdict} ({a.runs} run{'s' if a.runs != 1 else ''}"
                   + (", from the ledger" if a.from_ledger else "") + ")",
            conclusion={"fail": "The cause is within these units.", "pass": "These units alone do not cause it.",
                        "unresolved": "Did not build or failed differently; searched around it."}[a.outcome]))
    note = git_apply_only(rec)
    log.sections.append(("Culprit diff (hunks)", code_block(patch_text(rec.diff), "diff", as_is=True)
                         + (f"\n\n{note}." if note else "")))
    if rec.lines_diff:
        log.sections.append(("Culprit lines (finer pass)", code_block(patch_text(rec.lines_diff), "diff", as_is=True)))
    if rec.hangs and stuck.markdown(rec.hangs):
        log.sections.append(("Where the hang is stuck", stuck.markdown(rec.hangs)))
    if rec.unresolved:
        log.sections.append(("Unresolved hybrids", table(["applied units"], [[ids_text(u)] for u in rec.unresolved])))
    if rec.different_failures:
        log.sections.append(("Possible second bugs (different failures)",
                             table(["hybrid", "failure", "verdict"],
                                   [[d["config"], d.get("failure") or "", d["verdict"]] for d in rec.different_failures])))
    log.next_steps = next_steps(rec)
    return log


def print_summary(out: Console, rec: DiffRecord) -> None:
    if not rec.ok:
        for line in problem_lines(rec.endpoints):
            out.print(line, markup=False)
        return
    where = ids_text(hunk_place(h) for h in rec.culprit_hunks)
    if rec.complete and len(rec.sets) > 1:
        out.print(f"{counted(rec.hunks, 'hunk')}; {len(rec.sets)} independent failing sets, each fails applied "
                  "to GOOD alone:", markup=False)
    elif rec.complete:
        out.print(f"{counted(rec.hunks, 'hunk')}; culprit hunk(s): {where}"
                  + ("  (interaction: each proper subset passes)" if rec.interaction else ""), markup=False)
    else:
        out.print(stopped_line(stop_reason_of(rec), search_runs_of(rec), rec.search_made) + f"; smallest failing hunk set so far: {where}",
                  markup=False)
    for line in sets_lines(rec):
        out.print(line, markup=False)
    print_patch(out, rec)
    out.print(failure_line(rec.endpoints), markup=False)
    if (slow := slow_line(rec.endpoints, getattr(rec, "subject", None))) is not None:
        out.print(slow, markup=False)
    if rec.flakiness_rule:
        out.print(f"flakiness: {rec.flakiness_rule['text']}", markup=False)
    for line in stuck.terminal_lines(rec.hangs):
        out.print(line, markup=False, highlight=False)
    cached = rec.observations - rec.runs
    out.print(f"runs: {rec.runs} executed{ahead_words(rec)}"
              + (f", {cached} answered from the ledger ({same_inputs(rec)})" if cached > 0 else "")
              + f", {wall_words(rec)}; {len(rec.unresolved)} unresolved hybrid(s)", markup=False)
    for i, s in enumerate(next_steps(rec, one_line=True), 1):     # as ablate's terminal ends, and the report's list
        out.print(f"next {i}. {s}", markup=False)


def culprit_patch(rec: DiffRecord) -> str:
    """The patch to apply: the culprit lines' (the hunks' without a line pass)."""
    return rec.lines_diff or rec.diff


def print_patch(out: Console, rec: DiffRecord) -> None:
    """The culprit lines' patch (the hunks' without a line pass), as it is: it applies, but where
    it holds bytes that are not UTF-8 (shown as `\\xNN`): then a line says where its bytes are."""
    out.print(Verbatim(patch_text(culprit_patch(rec))), soft_wrap=True)
    if undecoded_bytes(culprit_patch(rec)) is not None:
        key = "lines_diff_base64" if rec.lines_diff else "diff_base64"
        out.print("this patch holds bytes that are not UTF-8, shown as \\xNN, so as printed it does not apply: "
                  f"--report FILE.md (or --html FILE.html) writes it as it is to FILE-culprit.patch, and --json holds "
                  f"it in base64 ({key})",
                  markup=False)
    if line_endings_only(rec.lines_diff or rec.diff):
        out.print("these lines differ only in their line endings (a CR before the newline, CRLF, on one side)",
                  markup=False)
    if (note := git_apply_only(rec)) is not None:
        out.print(note, markup=False)
