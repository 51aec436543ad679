"""The confidence rule that turns a single-shot noisy oracle into verdicts a search can trust.

Abstractions
------------
wilson         -- the Wilson score interval of k failures in n runs (Newcombe 1998, no continuity
                  correction; scipy.stats' method="wilson", in closed form without loading scipy).
ConfidenceRule -- derived from the bad endpoint's observed failures k out of n: the lower
                  confidence bound p_lo of the failure probability (Wilson score, or
                  Clopper-Pearson from scipy.stats), and the number of consecutive passes r
                  a configuration needs before it is cleared, chosen so that a configuration
                  failing at least as often as p_lo passes r times in a row with probability
                  (1 - p_lo)^r <= alpha.

Failures are taken to be never spurious (a wrong result, hang or crash observed once is real),
so one FAIL observation is conclusive and only PASS verdicts cost repeats; the Tester applies
the rule. The rule assumes the culprit configurations fail at least as often as the bad
endpoint does, which holds when the failure has one cause shared by every failing hybrid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from bisectk.outcome import Outcome

METHODS = {"wilson": "Wilson score", "clopper-pearson": "Clopper-Pearson"}


def wilson(fails: int, runs: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval of the failure probability; (0, 1) without runs."""
    if runs <= 0:
        return (0.0, 1.0)
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    p = fails / runs
    denom = 2 * (runs + z * z)
    center = (2 * runs * p + z * z) / denom
    delta = z / denom * math.sqrt(4 * runs * p * (1 - p) + z * z)
    return (0.0 if fails == 0 else center - delta, 1.0 if fails == runs else center + delta)


@dataclass(frozen=True)
class ConfidenceRule:
    """How many passes clear a configuration, and the numbers that justify it."""

    fails: int          # failures observed on the bad endpoint
    runs: int           # runs of the bad endpoint
    confidence: float   # two-sided confidence level of the interval on the failure rate
    alpha: float        # accepted probability of clearing a failing configuration
    method: str         # 'wilson' or 'clopper-pearson'
    p_lo: float         # lower end of the interval on the failure probability
    repeats: int        # consecutive passes needed for a PASS verdict
    basis: str = "bad endpoint"     # whose runs `fails` and `runs` count, as reports name them

    @classmethod
    def derive(cls, fails: int, runs: int, *, alpha: float = 0.01, confidence: float = 0.95,
               method: str = "wilson") -> ConfidenceRule:
        """The rule for a bad endpoint that failed `fails` times in `runs` runs."""
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
        if not 0 < fails <= runs:
            raise ValueError(f"the bad endpoint must fail at least once ({fails}/{runs})")
        if not (0 < alpha < 1 and 0 < confidence < 1):
            raise ValueError("alpha and confidence must lie strictly between 0 and 1")
        if method == "wilson":
            p_lo = wilson(fails, runs, confidence)[0]
        else:
            from scipy.stats import binomtest  # imported here: scipy is slow to load
            p_lo = float(binomtest(fails, runs).proportion_ci(confidence_level=confidence, method="exact").low)
        # p_lo > 0 whenever fails > 0, so the logarithm below is finite; a p_lo of 1 cannot
        # come out of either interval with finite runs, so 1 - p_lo > 0 too.
        repeats = max(1, math.ceil(math.log(alpha) / math.log(1.0 - p_lo)))
        return cls(fails, runs, confidence, alpha, method, p_lo, repeats)

    def verdict(self, runs: Sequence[Outcome]) -> Outcome | None:
        """The Tester's verdict on one configuration's runs: its first run that did not pass
        (a failure is conclusive under one rate; an unresolved run is taken as it is), PASS after
        `repeats` passes, else None (run again)."""
        for outcome in runs:
            if outcome is not Outcome.PASS:
                return outcome
        return Outcome.PASS if len(runs) >= self.repeats else None

    @property
    def miss_probability(self) -> float:
        """Bound on the chance that a failing configuration is cleared: (1 - p_lo)^r."""
        return (1.0 - self.p_lo) ** self.repeats

    def describe(self) -> str:
        """One line for reports: the observation, the bound, and the repeat count."""
        return (f"{self.basis} failed {self.fails}/{self.runs}; {METHODS[self.method]} "
                f"{self.confidence:.0%} lower bound p_lo={self.p_lo:.3f}; a configuration is "
                f"cleared after {self.repeats} consecutive passes, so P(a failing configuration "
                f"is cleared) <= (1-p_lo)^{self.repeats} = {self.miss_probability:.2g} "
                f"<= alpha={self.alpha:g}; one failure is conclusive")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "miss_probability": self.miss_probability,
                "text": self.describe()}
