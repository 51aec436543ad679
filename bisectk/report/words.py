"""Shared wording for reports: what every command says about its endpoints and its stop.

Abstractions
------------
watchdog_text  -- the watchdog in words (the uncalibrated cap with its seconds).
endpoint_lines -- the watchdog, the failure hunted in plain words (and the --same-failure mode),
                  the bad endpoint's failure rate with its Wilson interval, notes from re-checks.
failure_line   -- one terminal line: the failure hunted and how often the bad endpoint showed it.
stopped_line   -- how a stopped search is announced (never as a verdict).
runs_words     -- runs executed now and answered from the ledger, so reused work never reads as
                  no work.
"""

from __future__ import annotations

from bisectk.engine.records import EndpointCheck
from bisectk.outcome import FailKind


def watchdog_text(check: EndpointCheck) -> str:
    """The watchdog in words; the uncalibrated cap names its seconds (its detail only says why)."""
    t = check.timeout
    return f"{t.seconds:g} s ({t.detail})" if t.source == "cap" else t.detail


def endpoint_lines(check: EndpointCheck) -> list[str]:
    lines = [f"Watchdog: {watchdog_text(check)}."]
    if check.target is not None:
        lines.append(f"Failure hunted: {check.target.describe()} (--same-failure {check.target.mode}); "
                     f"the bad endpoint showed it in {check.bad_rate.describe()}"
                     + (" -- intermittent" if check.flaky else "") + ".")
    lines += [f"Note: {n}." for n in check.notes]
    return lines


def stopped_line(reason: str, runs: int) -> str:
    return f"search stopped ({reason or 'interrupted'}) after {runs} search run(s): no verdict yet"


def failure_line(check: EndpointCheck, words=lambda t: t) -> str:
    what = check.target.describe() if check.target else check.bad.describe()
    if check.target and all(f.kind is FailKind.BAD for f in check.target.failures):
        what = check.bad.describe()   # git bisect run's protocol: the exit code is all there is to say
    return (f"failure: {words(what)}; the bad endpoint showed it in {check.bad_rate.describe()}"
            + (" (intermittent)" if check.flaky else ""))


# what a run answered from the ledger shares with one made now (run/memokey.py: the memo key)
SAME_INPUTS = "same command, timeout, environment and sources"


def runs_words(executed: int, observations: int) -> str:
    cached = observations - executed
    return (f"{executed} run{'s' if executed != 1 else ''} executed"
            + (f", {cached} answered from the ledger ({SAME_INPUTS})" if cached > 0 else ""))
