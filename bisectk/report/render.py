"""Any result record to what the porcelain prints: its JSON, its terminal view, its debug log.

Abstractions
------------
stored     -- the record's document as the ledger keeps it (what `bisectk report --json` prints):
              its facts, with its next steps in words (report/advice.py).
document   -- the record's `--json` (and `--json-out`) document: `stored`, except for `run`,
              `check` and `replay`, whose documents are shaped for a script (a verdict, the
              endpoints, the answer of a log).
debuglog   -- the Markdown debug log of a record, whichever command made it.
interrupted -- the document of a command stopped before it had any result (a CI job's timeout
              while the endpoints were verified): no record exists, but a --json-out asked for
              is written, saying so, rather than left missing.
summary    -- the end-of-run terminal view of a record (`brief`: the short one `bisectk report`
              prints for a single run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bisectk.engine.records import Record
from bisectk.report.advice import document as stored
from bisectk.report.debuglog import DebugLog
from bisectk.report.words import problem_text

if TYPE_CHECKING:
    from rich.console import Console

# The views are imported where they are used: a --json command's document needs none of them, nor
# rich, which they print with.


def _run_doc(rec) -> dict[str, Any]:
    return {"spec": rec.subject.path, "config": rec.config, **rec.verdict, "timeout": rec.timeout,
            "environment": rec.environment}


def _check_doc(rec) -> dict[str, Any]:
    return {"spec": rec.subject.path, "differences": list(rec.subject.differences), **rec.endpoints.to_dict(),
            "warnings": list(rec.warnings), "environment": rec.environment}


def _commit(c: dict) -> dict:
    return {k: v for k, v in c.items() if k != "index"}


def _replay_doc(rec) -> dict[str, Any]:
    return {"first_bad": _commit(rec.first_bad) if rec.first_bad else None,
            "last_good": [_commit(c) for c in rec.last_good if c.get("index") is not None],
            "confidence": rec.confidence, "complete": rec.complete,
            "candidates": [c["sha"] for c in rec.candidates], "contradiction": rec.contradiction,
            "next": rec.next["sha"] if rec.next else None, "terms": list(rec.terms), "find_fix": rec.find_fix}


DOCUMENTS = {"run": _run_doc, "check": _check_doc, "replay": _replay_doc}


def document(rec: Record) -> dict[str, Any]:
    shape = DOCUMENTS.get(rec.command)
    return shape(rec) if shape else stored(rec)


def interrupted(command: str, message: str, code: int, session: int | None = None, verdict: str = "") -> dict[str, Any]:
    """No result: the command was stopped (exit `code`: 130, 129 after a hangup) before it had
    one. `verdict`: triage's."""
    doc: dict[str, Any] = {"command": command, "ok": False, "complete": False, "interrupted": True,
                           "exit_code": code, "error": message, "session": session, "first_bad": None}
    if command == "ablate":
        doc["culprits"] = []
    elif command == "diff":
        doc["culprit_hunks"] = []
    return {**doc, "verdict": verdict, "culprit_hunks": []} if verdict else doc


def interrupted_log(command: str, message: str, session: int | None = None) -> DebugLog:
    """The debug log of `interrupted`'s document: no record, only the words of the interrupt (a CI
    job that publishes --report or --html finds them, as its --json-out says the same)."""
    where = f" (session {session})" if session is not None else ""
    return DebugLog(f"{command}: interrupted", f"Interrupted{where}: no result", message)


def debuglog(rec: Record) -> DebugLog:
    from bisectk.report import ablation, diff, history, replay, triage
    made = {"ablate": ablation.to_debuglog, "diff": diff.to_debuglog, "bisect": history.to_debuglog,
            "triage": triage.to_debuglog, "replay": replay.to_debuglog}.get(rec.command)
    if made:
        return made(rec)
    check = rec.endpoints
    subject = getattr(rec, "subject", None)
    return DebugLog(f"{rec.command}: {subject.name if subject else ''}",
                    "endpoints OK" if check is None or check.ok else "endpoints unusable",
                    problem_text(check) if check else "", rec.environment)


def summary(out: Console, rec: Record, *, brief: bool = False, report: str = "(bisectk report --report)") -> None:
    """`report`: where triage says its debug log is."""
    from bisectk.report import ablation, diff, history, triage
    from bisectk.report.text import print_check, print_replay, print_run
    views = {"ablate": ablation.print_summary, "diff": diff.print_summary, "bisect": history.print_summary,
             "triage": lambda o, r: triage.print_summary(o, r, report), "check": print_check,
             "replay": print_replay, "run": lambda o, r: print_run(o, r, brief=brief)}
    views[rec.command](out, rec)
