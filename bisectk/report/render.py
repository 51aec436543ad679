"""Any result record to its debug log or terminal summary (what `bisectk report` prints).

Abstractions
------------
debuglog -- the Markdown debug log of a record, whichever command made it.
summary  -- the end-of-run terminal view of a record.
"""

from __future__ import annotations

from rich.console import Console

from bisectk.engine.records import (AblationRecord, BisectRecord, CheckRecord, DiffRecord, Record, ReplayRecord,
                                    RunRecord, TriageRecord)
from bisectk.report import ablation, diff, history, replay, triage
from bisectk.report.debuglog import DebugLog
from bisectk.report.text import print_check
from bisectk.report.words import problem_text


def debuglog(rec: Record) -> DebugLog:
    if isinstance(rec, AblationRecord):
        return ablation.to_debuglog(rec)
    if isinstance(rec, DiffRecord):
        return diff.to_debuglog(rec)
    if isinstance(rec, BisectRecord):
        return history.to_debuglog(rec)
    if isinstance(rec, TriageRecord):
        return triage.to_debuglog(rec)
    if isinstance(rec, ReplayRecord):
        return replay.to_debuglog(rec)
    check = rec.endpoints
    title = f"{rec.command}: {rec.subject.name if getattr(rec, 'subject', None) else ''}"
    return DebugLog(title, "endpoints OK" if check is None or check.ok else "endpoints unusable",
                    problem_text(check) if check else "", rec.environment)


def summary(out: Console, rec: Record) -> None:
    if isinstance(rec, AblationRecord):
        ablation.print_summary(out, rec)
    elif isinstance(rec, DiffRecord):
        diff.print_summary(out, rec)
    elif isinstance(rec, BisectRecord):
        history.print_summary(out, rec)
    elif isinstance(rec, TriageRecord):
        triage.print_summary(out, rec, report="(bisectk report --report)")
    elif isinstance(rec, CheckRecord):
        print_check(out, rec)
    elif isinstance(rec, RunRecord):
        from bisectk.outcome import Verdict
        out.print(f"{rec.subject.name}: verdict {Verdict.from_dict(rec.verdict).describe()}", markup=False)
