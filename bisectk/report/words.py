"""Shared wording for reports: what every command says about its endpoints and its stop.

Abstractions
------------
watchdog_text  -- the watchdog in words (the uncalibrated cap with its seconds).
endpoint_lines -- the watchdog, the failure hunted in plain words (and the --same-failure mode),
                  the bad endpoint's failure rate with its Wilson interval, notes from re-checks.
failure_line   -- one terminal line: the failure hunted and how often the bad endpoint showed it.
slow_line      -- a SLOW rule's numbers: the threshold, what its baseline rests on, what bad measured.
problem_lines  -- unusable endpoints: one line (`problem: ...`), then the facts it rests on;
                  problem_text the same as one paragraph.
stopped_line   -- how a stopped search is announced (never as a verdict).
warning_lines  -- the warnings said on stderr, as debug-log summary lines.
runs_words     -- runs executed now and answered from the ledger, so reused work never reads as
                  no work; same_inputs, what a reuse compared (the memo key, run/memokey.py).
ahead_words    -- the runs made ahead of the search (--jobs): taken when asked, and never taken.
phase_words    -- a command's runs by the phase that made them (the search's, the endpoints', a
                  threshold's...), each run once: they add up to its observations; search_runs_of,
                  the search's alone (what a stopped search says it made).
log_gone_words -- a run whose stored log path names nothing: pruned by the cap on run logs, or
                  removed some other way (what `--json` says in place of the path).
confidence_words -- a bisection's confidence, said of what it is the probability of: the first bad
                  commit, the set of candidates left, or a stopped search's unconfirmed best one.
"""

from __future__ import annotations

import math

from bisectk.engine.records import EndpointCheck, confidence_of
from bisectk.engine.records import stop_reason_of as _reason
from bisectk import slowrule
from bisectk.names import counted
from bisectk.outcome import FailKind, Outcome


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


def problem_lines(check: EndpointCheck, label: str = "problem") -> list[str]:
    """One line that says why the endpoints cannot be used, then its details, indented."""
    return [f"{label}: {check.problem}", *(f"  {d}" for d in check.details)]


def problem_text(check: EndpointCheck) -> str:
    """The problem and its details as one paragraph (a debug log's symptom)."""
    return " ".join([check.problem or "", *(f"{d}." if not d.endswith(".") else d for d in check.details)]).strip()


def stopped_line(reason: str, runs: int, made: int | None = None) -> str:
    """`made`: of the `runs`, those made by the command (the rest the ledger answered): what
    --max-runs counts (None: a record stored before it was kept)."""
    return f"search stopped ({reason or 'interrupted'}) after {runs} search run(s){made_words(runs, made)}: no verdict yet"


def warning_lines(warnings) -> list[str]:
    """The debug log's summary lines for the warnings the command said on stderr when it ran."""
    return [f"Warning: {w}" for w in warnings]


def made_words(runs: int, made: int | None) -> str:
    """' (2 made now, 4 answered from the ledger)' where the ledger answered some of `runs`."""
    return f" ({made} made now, {runs - made} answered from the ledger)" if made is not None and made < runs else ""


def stop_reason_of(rec) -> str:
    """Why an incomplete search stopped (records.stop_reason_of, from the record)."""
    return _reason(rec.stop_reason, getattr(rec, "advice", ()), getattr(rec, "interrupted", False))


def title_words(check: EndpointCheck, words=lambda t: t) -> str:
    """What a debug log's title says of the failure: the bad endpoint's verdict, or, where bad
    passed (swapped endpoints, a failure that did not show), that nothing was found, not 'PASS'."""
    bad = check.bad.describe()
    return f"inconclusive (bad: {bad})" if check.bad.outcome is Outcome.PASS else words(bad)


def failure_line(check: EndpointCheck, words=lambda t: t) -> str:
    what = check.target.describe() if check.target else check.bad.describe()
    if check.target and all(f.kind is FailKind.BAD for f in check.target.failures):
        # git bisect run's protocol: the exit code is all there is to say, worded as every command words it
        what = check.bad.describe().removeprefix("FAIL ")
    return (f"failure: {words(what)}; the bad endpoint showed it in {check.bad_rate.describe()}"
            + (" (intermittent)" if check.flaky else ""))


def slow_line(check: EndpointCheck | None, subject) -> str | None:
    """The SLOW rule in numbers, where the failure hunted is slow: the metric's threshold, the
    baseline and the good runs it rests on, and what bad measured; each run is judged alone
    against the threshold (no test across runs), so a noisy metric shows as an intermittent
    failure. None elsewhere."""
    if (check is None or check.target is None or check.baseline is None or subject is None
            or not getattr(subject, "slow_factor", None)
            or not any(f.kind is FailKind.SLOW for f in check.target.failures)):
        return None
    import statistics
    metric, f, base = subject.slow_metric, subject.slow_factor, check.baseline
    higher = getattr(subject, "slow_better", "lower") == "higher"

    def values(runs) -> list[float]:
        return [v for r in runs if (v := slowrule.value(r.metrics, r.duration_s, metric)) is not None]
    good = values([r for r in check.good.runs if r.outcome is Outcome.PASS])
    bad = values([r for r in check.bad.runs if r.kind is FailKind.SLOW])
    unit = metric or "wall s"
    line = (f"slow: {unit} {slowrule.rule_words(base, f, higher)}, each run judged alone against it (the baseline: the median of good's "
            f"calibrating run(s); good passed with {', '.join(f'{v:.3g}' for v in good[:10])}"
            f"{', ...' if len(good) > 10 else ''})")
    if bad:
        mid = statistics.median(bad)
        line += (f"; bad's slow runs {', '.join(f'{v:.3g}' for v in bad[:10])}{', ...' if len(bad) > 10 else ''} "
                 f"(median {mid:.3g}" + (f", {mid / base:.2f}x the baseline)" if math.isfinite(mid / base) else ")"))
    return line


def remaining(n: int) -> str:
    """'1 candidate remains', '3 candidates remain'."""
    return f"{counted(n, 'candidate')} {'remains' if n == 1 else 'remain'}"


def wall_words(rec, label: str = "wall") -> str:
    """A command's wall time; when answers came from the ledger (a run that took minutes then
    takes nothing now), also what its runs took when they ran."""
    text = f"{label} {rec.wall_s:.1f} s"
    if rec.observations > rec.runs and rec.run_s:
        text += f" (its {rec.observations} runs took {rec.run_s:.1f} s, the ledger's included)"
    return text
# what a run answered from the ledger shares with one made now (run/memokey.py: the memo key)
def same_inputs(rec) -> str:
    """What the memo key compared, in words that claim no more than it holds: the named files are
    counted (a bounded heuristic, bisectk/contents.py), and a record without the count says none."""
    n = getattr(getattr(rec, "subject", None), "named_files", None)
    base = "same command, timeout, environment and tree content"
    if n is None:
        return base
    return base.replace(" and", ",") + (f" and the {counted(n, 'file')} it names or sources" if n
                                        else ", and it names no file")


def ahead_words(rec) -> str:
    """`, N of them under way before the search asked, M made ahead and not needed` (a record's
    `ahead_runs`, `unused_runs`), or nothing when no run went ahead."""
    taken, unused = getattr(rec, "ahead_runs", 0), getattr(rec, "unused_runs", 0)
    if not taken and not unused:
        return ""
    return f", {taken} of them under way before the search asked, {unused} made ahead and not needed"


# a phase's runs in words (engine/oracle.py PHASES); the search's come first, with the runs made ahead
PHASE_WORDS = {"endpoints": "endpoint", "merge bases": "merge-base", "threshold": "threshold"}


def search_runs_of(rec) -> int:
    """The runs the search made (its confirmation's and those made ahead included): counted by
    phase where the record has the count, else its `search_runs` (a record stored before), else
    what is not an endpoint's run."""
    phases = getattr(rec, "phase_runs", None) or {}
    if phases:
        return phases.get("search", 0)
    if hasattr(rec, "search_runs"):
        return rec.search_runs
    e = rec.endpoints
    return rec.observations - (len(e.good.runs) + len(e.bad.runs) if e else 0)


def phase_words(rec) -> str:
    """`24 by the search, 2 endpoint runs, 3 threshold runs, 1 run to read where the culprit
    hangs`: every observation once, in the phase it ran in. A record stored before the phases
    were counted says it as it did (the search's, and the rest)."""
    phases = dict(getattr(rec, "phase_runs", None) or {})
    if not phases:
        search = search_runs_of(rec)
        return f"{search} by the search{ahead_words(rec)}, {rec.observations - search} endpoint and threshold runs"
    parts = [f"{phases.pop('search', 0)} by the search{ahead_words(rec)}"]
    picture = phases.pop("hang picture", 0)
    parts += [counted(n, f"{PHASE_WORDS.get(p, p)} run") for p, n in phases.items()]
    if picture:
        parts.append(f"{counted(picture, 'run')} to read where the culprit hangs")
    return ", ".join(parts)


def runs_words(executed: int, observations: int, rec=None) -> str:
    cached = observations - executed
    return (f"{executed} run{'s' if executed != 1 else ''} executed"
            + (f", {cached} answered from the ledger ({same_inputs(rec)})" if cached > 0 else ""))


def confidence_words(rec) -> str:
    """`confidence 0.9990`, with what it is of when that is not the first bad commit named."""
    said = f"confidence {rec.confidence:.4f}"
    of = confidence_of(rec.first_bad, len(getattr(rec, "candidates", ()) or ()), getattr(rec, "complete", True))
    if of == "candidates":
        return f"{said} that it is one of the {len(rec.candidates)} candidates"
    if of == "unconfirmed":
        model = "the flake model's posterior" if getattr(rec, "flaky", False) else "if every run told the truth"
        if (getattr(rec, "fresh_build", None) or {}).get("stale"):
            return f"{said} ({model}; not confirmed: built from scratch, the answer did not hold)"
        return f"{said} ({model}; not confirmed: the search stopped)"
    return said


def log_gone_words(why: str, path: str) -> str:
    """What a report says in place of a run's log that is gone (`why`: run/logcap.py `gone`)."""
    if why == "pruned":
        return (f"pruned: {path} was removed to keep run logs under their total cap (BISECTK_LOG_CAP_MB, "
                "oldest commands' first); the run's verdict and output tails are kept")
    return f"missing: {path} was removed since the run (its verdict and output tails are kept)"
