"""RunPolicy: the options that decide how runs are made and judged, shared by every command.

Abstractions
------------
RunPolicy -- repeats per endpoint, flakiness (forced on, off, or decided by the endpoint runs),
             the cap on endpoint re-runs (`calibrate_runs`), how failures are compared
             (`same_failure`: check | kind | signature), how often a configuration that failed
             differently is re-run before it is left unresolved (`retry_different`), the run
             budget, a watchdog override, parallelism and GPUs, and where runs are executed
             (`executor`: local processes, or actors on a Ray cluster at `ray_address`, a
             local Ray instance when None; `ray_repo`: the repository's path on every Ray host,
             when it is on a shared filesystem); how many hangs are read before the kill
             beyond the first and the culprit's (`snapshots`, run/snapshot.py; 0: none).
"""

from __future__ import annotations

from dataclasses import dataclass

from bisectk.errors import BisectkError
from bisectk.outcome import SAME_FAILURE_MODES

DEFAULT_CALIBRATE_RUNS = 10
DEFAULT_RETRY_DIFFERENT = 2
DEFAULT_SNAPSHOTS = 2
EXECUTORS = ("local", "ray")


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
    executor: str = "local"              # local | ray
    ray_address: str | None = None
    ray_repo: str | None = None
    snapshots: int = DEFAULT_SNAPSHOTS   # hangs read beyond the bad endpoint's first and the culprit's; 0: none

    def __post_init__(self) -> None:
        if self.same_failure not in SAME_FAILURE_MODES:
            raise BisectkError(f"--same-failure {self.same_failure!r}: choose one of {', '.join(SAME_FAILURE_MODES)}")
        if self.executor not in EXECUTORS:
            raise BisectkError(f"--executor {self.executor!r}: choose one of {', '.join(EXECUTORS)}")
        if self.executor != "ray" and (self.ray_address or self.ray_repo):
            raise BisectkError(f"{'--ray-address' if self.ray_address else '--ray-repo'} needs --executor ray")
        if self.executor == "ray" and self.gpus:
            raise BisectkError("--gpus: with --executor ray, Ray gives each actor its own GPU (num_gpus=1); "
                               "leave --gpus out (bisect and triage take the number of actors from --jobs)")
        if self.snapshots < 0:
            raise BisectkError(f"--snapshots {self.snapshots}: must be 0 (no snapshots) or more")
        if self.calibrate_runs < 1:
            raise BisectkError(f"--calibrate-runs {self.calibrate_runs}: must be at least 1")
