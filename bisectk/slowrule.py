"""The SLOW rule in numbers and words, for every layer that states it (the runner's Judge, the
endpoint check's problems, the report's lines and figures); imports nothing.

Abstractions
------------
BASELINE_RUNS -- how many good runs the SLOW baseline is the median of, at least (wall time or a
                 metric).
value         -- the SLOW value of one run: its `slow_metric` where the rule names one (a number,
                 bools and strings aside), else its wall seconds.
threshold     -- the value past which one run is SLOW: slow_factor x the baseline, or for a
                 throughput (better higher) the baseline / slow_factor.
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


def threshold(baseline: float, factor: float, higher: bool) -> float:
    """The value one run is judged against: past it (above, or below for `higher`), SLOW."""
    return baseline / factor if higher else factor * baseline


def rule_words(baseline: float, factor: float, higher: bool) -> str:
    """'above 1.3 x 0.12 = 0.156' (a time), 'below 900 / 1.3 = 692' (a throughput)."""
    t = threshold(baseline, factor, higher)
    return (f"below {baseline:.3g} / {factor:g} = {t:.3g}" if higher
            else f"above {factor:g} x {baseline:.3g} = {t:.3g}")
