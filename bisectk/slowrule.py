"""The SLOW rule in numbers and words, for every layer that states it (the runner's Judge, the
endpoint check's problems, the report's lines and figures); imports nothing.

Abstractions
------------
BASELINE_RUNS -- how many good runs the SLOW baseline is the median of, at least (wall time or a
                 metric).
unreadable    -- why a reported SLOW metric is no value to judge (a string, a bool or null, NaN, a
                 value below zero).
unjudged      -- the signature of a run whose SLOW metric is no value: what it was, and what to print.
value         -- the SLOW value of one run: its `slow_metric` where the rule names one (a number,
                 bools and strings aside), else its wall seconds.
threshold     -- the value past which one run is SLOW: slow_factor x the baseline, or for a
                 throughput (better higher) the baseline / slow_factor.
halfway       -- the mark halfway (in log space) between the baseline and the threshold: a pass
                 past it, where bad was SLOW every run, is run again (engine/slowvotes.py).
rule_words    -- that threshold in words ("above 1.3 x 0.12 = 0.156"), the one phrase every
                 message and report line uses.

Why one home: the phrase was written four times (three endpoint problems and the report's slow
line) and the value three ways, each with its own filter; report may not import run (LAYERS.md),
so the rule's words live below both.
"""

from __future__ import annotations

BASELINE_RUNS = 3   # good runs a SLOW baseline is the median of, at least (wall time or a metric)


def value(metrics: dict, duration_s: float, metric: str | None) -> float | None:
    """The run's SLOW value: `metric` when named (None where it is missing or not a number), else
    the wall seconds."""
    if not metric:
        return duration_s
    v = metrics.get(metric)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def unreadable(v: object) -> str | None:
    """Why a reported SLOW metric is no value to judge (None: it is one): a string (quoted
    "130" as much as "fast"), a bool or null, NaN, or a value below zero. Each was read as no
    value and the run passed, or judged and passed: a hybrid holding the culprit that printed its
    time in quotes cleared it, and the culprit came out as an interaction of every factor; -1, a
    subject's "not measured", passed every threshold of a time. No time and no throughput is
    below zero, so such a value is no measurement, as NaN is (its run unresolved, the same for a
    time and a throughput). An infinity is a value (the slowest time, or a throughput of none),
    and so is zero (a baseline of zero is said at the endpoint check)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"the string {v[:40]!r}" if isinstance(v, str) else ("null" if v is None else f"{type(v).__name__} {v!r}"[:60])
    if v != v:
        return "NaN"
    return f"{v:g}, below zero (no time or throughput is: a subject's \"not measured\")" if v < 0 else None


def unjudged(metric: str, v: object) -> str | None:
    """The signature of a run whose `metric`, SLOW's, is no value to judge (None: it is one)."""
    bad = unreadable(v)
    if bad is None:
        return None
    what = ("print the value measured, or exit 125 where nothing was (a run that cannot be measured)"
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0 else "print it as a number, without quotes")
    return f"slow_metric {metric} is {bad}, not a value SLOW can judge: {what}"


def threshold(baseline: float, factor: float, higher: bool) -> float:
    """The value one run is judged against: past it (above, or below for `higher`), SLOW."""
    return baseline / factor if higher else factor * baseline


def halfway(baseline: float, factor: float, higher: bool) -> float:
    """The value halfway between the baseline and the threshold, in log space (noise on a time is
    multiplicative): baseline x sqrt(factor), or / for a throughput."""
    return baseline / factor ** 0.5 if higher else baseline * factor ** 0.5


def rule_words(baseline: float, factor: float, higher: bool) -> str:
    """'above 1.3 x 0.12 = 0.156' (a time), 'below 900 / 1.3 = 692' (a throughput)."""
    t = threshold(baseline, factor, higher)
    return (f"below {baseline:.3g} / {factor:g} = {t:.3g}" if higher
            else f"above {factor:g} x {baseline:.3g} = {t:.3g}")
