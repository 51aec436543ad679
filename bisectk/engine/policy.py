"""RunPolicy: the options that decide how runs are made and judged, shared by every command.

Abstractions
------------
RunPolicy -- repeats per endpoint, flakiness (forced on, off, or decided by the endpoint runs),
             the cap on endpoint re-runs (`calibrate_runs`), how failures are compared
             (`same_failure`: check | kind | signature), how often a configuration that failed
             differently is re-run before it is left unresolved (`retry_different`), the run
             budget, a watchdog override, parallelism and GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from bisectk.errors import BisectkError
from bisectk.outcome import SAME_FAILURE_MODES

DEFAULT_CALIBRATE_RUNS = 10
DEFAULT_RETRY_DIFFERENT = 2


@dataclass(frozen=True)
class RunPolicy:
    repeat: int | None = None            # runs per endpoint (None: the spec's)
    flaky: bool | None = None            # None: decided by the endpoint runs
    calibrate_runs: int = DEFAULT_CALIBRATE_RUNS
    same_failure: str = "check"
    retry_different: int = DEFAULT_RETRY_DIFFERENT
    max_runs: int | None = None
    timeout: float | None = None         # watchdog seconds (None: spec, else calibrated)
    jobs: int = 1
    gpus: tuple[str, ...] = ()
    confidence: float = 0.99

    def __post_init__(self) -> None:
        if self.same_failure not in SAME_FAILURE_MODES:
            raise BisectkError(f"--same-failure {self.same_failure!r}: choose one of {', '.join(SAME_FAILURE_MODES)}")
        if self.calibrate_runs < 1:
            raise BisectkError(f"--calibrate-runs {self.calibrate_runs}: must be at least 1")
