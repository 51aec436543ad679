"""Whether one run tells good from bad under a SLOW rule: the two endpoints' metric samples
against the one threshold every run is judged by alone.

Abstractions
------------
Separation -- the answer: `clear` (one run is judged right nearly always), else `shifted` (the
              samples differ as distributions, Mann-Whitney) with the factor that would split
              single runs, if any (over good's median: halfway to bad's); the numbers it rests on.
separate   -- good's and bad's values, the threshold and which way is worse -> Separation.

Why across runs. SLOW judges each run alone: value > slow_factor x baseline (a throughput: below
baseline / slow_factor). When the threshold sits within the metric's run-to-run noise of good's
values (or of bad's), hybrids without the culprit fail now and then and hybrids with it pass now
and then; the search then goes through the flake machinery (~150 runs) and ends "good fails
intermittently". Measured on a seeded subject (3% noise): +10% under slow_factor 1.05 ended so
after 115 runs. Here the spread is measured before the search: in log space (noise on a time is
multiplicative), the pooled standard deviation of both samples around their medians gives how many
standard deviations the threshold lies from each side's median (`margin`). Below MIN_MARGIN on
either side, or a run of either endpoint already on the wrong side of the threshold, single runs
are not separable; 2 standard deviations is a 2% chance per run of a wrong verdict, one in a
search's first 20 runs more often than not.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_MARGIN = 2.0        # standard deviations between the threshold and either side's median
CLEAR_EARLY = 4.0       # on the first few runs a side, this margin (or no spread at all) settles it
SHIFT_ALPHA = 0.01      # Mann-Whitney one-sided: bad worse than good


@dataclass(frozen=True)
class Separation:
    clear: bool
    margin: float           # min over both sides, in pooled standard deviations (inf: no spread)
    crossed: tuple[int, int]  # good runs judged SLOW, bad runs that passed
    p_shift: float | None   # Mann-Whitney p (bad worse than good); None where not computed
    factor: float | None    # a slow_factor (over good's median) with MIN_MARGIN to both sides, if any
    n: tuple[int, int]


def _sd(good: Sequence[float], bad: Sequence[float]) -> float:
    """The pooled spread of the finite values around their side's median, in log space. An
    infinity (the slowest time, a throughput of none: slowrule) is past every threshold, not
    noise: its deviation is inf, or NaN from a median that is inf too ('nan standard deviations')."""
    logs = [[math.log(v) for v in side if math.isfinite(v)] for side in (good, bad)]
    dev = [x - statistics.median(side) for side in logs for x in side]
    dof = max(1, len(dev) - 2)
    return math.sqrt(sum(d * d for d in dev) / dof)


def separate(good: Sequence[float], bad: Sequence[float], baseline: float, factor: float, higher: bool,
             early: bool = False) -> Separation:
    """Good's and bad's values (all positive) against the threshold factor x baseline (higher:
    baseline / factor). `early`: the first few runs a side, settled only by CLEAR_EARLY; else the
    full test, Mann-Whitney included (scipy loaded here, only then)."""
    sign = -1.0 if higher else 1.0      # worse is higher for a time, lower for a throughput
    g = [sign * math.log(v) for v in good]
    b = [sign * math.log(v) for v in bad]
    thr = sign * math.log(baseline / factor if higher else factor * baseline)
    crossed = (sum(x > thr for x in g), sum(x <= thr for x in b))
    sd = _sd(good, bad)
    gm, bm = statistics.median(g), statistics.median(b)
    margin = math.inf if sd == 0 else min(thr - gm, bm - thr) / sd
    split = None
    if sd > 0 and math.isfinite(bm - gm) and bm - gm > 2 * MIN_MARGIN * sd:   # the midpoint has MIN_MARGIN to both medians
        split = math.exp((bm - gm) / 2)         # over good's median: halfway to bad's, in log space
    if early:
        return Separation(crossed == (0, 0) and margin >= CLEAR_EARLY, margin, crossed, None, split,
                          (len(good), len(bad)))
    from scipy.stats import mannwhitneyu
    p = float(mannwhitneyu(b, g, alternative="greater").pvalue) if sd > 0 else (0.0 if bm > gm else 1.0)
    return Separation(crossed == (0, 0) and margin >= MIN_MARGIN, margin, crossed, p, split,
                      (len(good), len(bad)))
