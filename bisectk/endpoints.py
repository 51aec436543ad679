"""Endpoint verification: before any search, the good side must pass and the bad side must fail.

Abstractions
------------
EndpointCheck  -- both endpoint verdicts, the calibrated watchdog, the target failure family
                  (the bad endpoint's kind + signature family), the bad side's failure rate with
                  a Wilson 95% interval, and a one-line diagnosis when the pair is unusable.
verify         -- runs good (calibrating the watchdog from it) and then bad, `repeat` times each.

As mozregression and Pinpoint do, endpoints are re-tested rather than trusted: a "broken"
configuration that does not fail, or a "working" one that does, makes every later answer wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from bisectk.events import PhaseStarted
from bisectk.outcome import Outcome, Verdict
from bisectk.run.runner import Runner, TimeoutPolicy


@dataclass
class EndpointCheck:
    good: Verdict
    bad: Verdict
    timeout: TimeoutPolicy
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def target(self) -> str | None:
        return self.bad.family if self.bad.outcome is Outcome.FAIL else None

    @property
    def flaky(self) -> bool:
        return self.bad.outcome is Outcome.FAIL and self.bad.n_pass > 0

    def fail_interval(self) -> tuple[float, float]:
        n = self.bad.n_fail + self.bad.n_pass
        if n == 0:
            return (0.0, 1.0)
        from scipy.stats import binomtest  # imported here: scipy.stats takes ~0.8 s to load

        ci = binomtest(self.bad.n_fail, n).proportion_ci(confidence_level=0.95, method="wilson")
        return (float(ci.low), float(ci.high))

    def to_dict(self) -> dict:
        lo, hi = self.fail_interval()
        return {
            "ok": self.ok, "problem": self.problem, "target": self.target, "flaky": self.flaky,
            "timeout": self.timeout.to_dict(),
            "bad_fail_rate": self.bad.fail_rate, "bad_fail_rate_ci95": [round(lo, 4), round(hi, 4)],
            "good": self.good.to_dict(), "bad": self.bad.to_dict(),
        }


def diagnose(good: Verdict, bad: Verdict) -> str | None:
    if good.outcome is Outcome.UNRESOLVED:
        return f"the good configuration cannot be tested: {good.describe()}"
    if bad.outcome is Outcome.UNRESOLVED:
        return f"the bad configuration cannot be tested: {bad.describe()}"
    if good.outcome is Outcome.FAIL and bad.outcome is Outcome.PASS:
        return ("endpoints are inverted: good fails and bad passes "
                f"(good: {good.describe()}); swap [good] and [bad] or check the oracle thresholds")
    if good.outcome is Outcome.FAIL:
        rate = f"{good.n_fail}/{good.n_fail + good.n_pass} runs"
        return (f"the good configuration fails too ({rate}: {good.describe()}); "
                "the failure does not depend on these differences, or the good side is flaky")
    if bad.outcome is Outcome.PASS:
        return (f"the bad configuration does not reproduce: it passed {bad.n_pass}/{bad.n_pass} runs; "
                "raise --repeat if the failure is intermittent, or check the oracle thresholds")
    return None


def verify(runner: Runner, repeat: int | None = None, good_config=None, bad_config=None) -> EndpointCheck:
    """Run good (calibrating the watchdog from it), then bad. The configurations default to the
    spec's endpoints; other spaces (diff hunks, commits) pass their own."""
    spec = runner.spec
    repeat = repeat or spec.repeat
    runner.events.emit(PhaseStarted("endpoints", f"verifying good and bad, {repeat} run(s) each"))
    good = runner.verdict(good_config if good_config is not None else spec.endpoint("good"), repeat, label="good")
    policy = runner.calibrate(list(good.runs))
    bad = runner.verdict(bad_config if bad_config is not None else spec.endpoint("bad"), repeat, label="bad")
    return EndpointCheck(good, bad, policy, diagnose(good, bad))
