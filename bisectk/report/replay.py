"""The report of `bisectk replay`, read from a ReplayRecord: a debug log of a bisection rebuilt from
its log, nothing run.

Abstractions
------------
to_debuglog -- status (determined or not), the first bad commit or the candidates, the commit to
               test next when the log stops early, and the command that tests it.
"""

from __future__ import annotations


from bisectk.engine.records import ReplayRecord
from bisectk.report.debuglog import DebugLog
from bisectk.report.safe import code_span
from bisectk.names import counted, shell_join
from bisectk.report.words import confidence_words


def _commit(c: dict) -> str:
    return f"{c['sha'][:10]} {c.get('subject', '')}".strip()


def to_debuglog(rec: ReplayRecord) -> DebugLog:
    title = f"replay of {rec.log}: {rec.good[:10]}..{rec.bad[:10]}"
    if rec.complete and rec.first_bad:
        status = f"Resolved -- first bad commit {_commit(rec.first_bad)}"
    else:
        status = f"Open -- {len(rec.candidates)} candidate(s) remain"
    log = DebugLog(title, status, f"rebuilt from {rec.observations} logged observation(s); nothing was run")
    log.summary = [f"{counted(rec.commits, 'commit')} in range ({'flake-aware' if rec.flaky else 'binary'} search); "
                   f"{confidence_words(rec)}."]
    if rec.contradiction:
        log.summary.append(f"The log contradicts itself: {rec.contradiction}.")
    if rec.last_good:
        log.summary.append("Last good (the culprit's parents): " + ", ".join(_commit(c) for c in rec.last_good) + ".")
    if rec.skipped:
        log.summary.append("Skipped (untestable): " + ", ".join(c["sha"][:10] for c in rec.skipped) + ".")
    if not rec.first_bad and rec.candidates:
        log.summary.append("The first bad commit is one of: " + ", ".join(_commit(c) for c in rec.candidates) + ".")
    if rec.next:
        observe = code_span(f"observe {rec.next['sha']} pass|fail|unresolved")
        log.next_steps.append(f"Test {_commit(rec.next)} next, record it in the log ({observe}) and replay again: "
                              + shell_join(["bisectk", "replay", rec.log]))
    return log
