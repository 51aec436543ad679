"""RunPolicy: every setting of how a command's runs are made and judged -- the one validator.

Abstractions
------------
RunPolicy -- repeats per endpoint, flakiness (forced on, off, or decided by the endpoint runs),
             the cap on endpoint re-runs (`calibrate_runs`), how failures are compared
             (`same_failure`: check | kind | signature), how often a configuration that failed
             differently is re-run before it is left unresolved (`retry_different`), the run
             budget, the watchdog (`timeout`: --timeout, fixed; None: the spec's, else
             calibrated), the confidence a flaky bisection stops at, parallelism and GPUs, where
             runs are executed (`executor`: local processes, or actors on a Ray cluster at
             `ray_address`, a local Ray instance when None; `ray_repo`: the repository's path on
             every Ray host, when it is on a shared filesystem; `warm`: warm worker processes),
             whether the ledger's earlier runs count (`fresh`: they do not), and how many hangs
             are read before the kill beyond the first and the culprit's (`snapshots`,
             run/snapshot.py; 0: none). Made once by the CLI from its option groups; a setting
             that cannot hold is a one-line BisectkError here, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bisectk.errors import BisectkError
from bisectk.outcome import DEFAULT_SAME_FAILURE, SAME_FAILURE_MODES
from bisectk.timeouts import MAX_REPEAT, limit_problem

DEFAULT_CALIBRATE_RUNS = 10
DEFAULT_RETRY_DIFFERENT = 2
DEFAULT_SNAPSHOTS = 2
DEFAULT_CONFIDENCE = 0.99
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunPolicy:
    repeat: int | None = None            # runs per endpoint (None: the spec's)
    flaky: bool | None = None            # None: decided by the endpoint runs
    calibrate_runs: int = DEFAULT_CALIBRATE_RUNS
    same_failure: str = DEFAULT_SAME_FAILURE
    retry_different: int = DEFAULT_RETRY_DIFFERENT
    max_runs: int | None = None
    timeout: float | None = None         # watchdog seconds (None: spec, else calibrated)
    clean_ignored: bool = False          # bisect/triage: worktrees lose their ignored files too before each run
    jobs: int = 1
    gpus: tuple[str, ...] = ()
    confidence: float = DEFAULT_CONFIDENCE
    executor: str = "local"              # local | ray
    ray_address: str | None = None
    ray_repo: str | None = None
    warm: bool = False                   # warm worker processes (imports paid once)
    fresh: bool = False                  # runs stored in the ledger are not answers
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
        if not 1 <= self.calibrate_runs <= MAX_REPEAT:     # as --repeat: 10**8 runs is a typo, not a plan
            raise BisectkError(f"--calibrate-runs {self.calibrate_runs}: must be from 1 to {MAX_REPEAT}")
        for gpu in self.gpus:   # CUDA_VISIBLE_DEVICES: an index or a UUID; '' (from ',,') would hide every GPU
            if not (gpu.isdigit() or gpu.startswith(("GPU-", "MIG-"))):
                raise BisectkError(f"--gpus {','.join(self.gpus)!r}: {gpu!r} is no GPU; name each by its index "
                                   f"or its UUID (GPU-..., MIG-...), separated by commas: --gpus 0,1")
        if self.timeout is not None and (problem := limit_problem("--timeout", self.timeout)):
            raise BisectkError(problem)
        if self.repeat is not None and not 1 <= self.repeat <= MAX_REPEAT:
            raise BisectkError(f"--repeat {self.repeat}: must be from 1 to {MAX_REPEAT}")
        if self.jobs < 1:
            raise BisectkError(f"--jobs {self.jobs}: must be at least 1")
        if not 0.5 <= self.confidence < 1:      # NaN too: click's range check lets it through
            raise BisectkError(f"--confidence {self.confidence:g}: must be at least 0.5 and less than 1")

    def timed(self, spec) -> tuple[RunPolicy, str | None]:
        """This policy for a spec whose failure may be SLOW, and what was changed, in words. A
        SLOW verdict rests on each run's time, and runs side by side share the machine: on one
        GPU their kernels take turns (a hybrid measured 0.19-0.26 ms where it takes 0.14 ms
        alone, 1.4-1.9x a baseline of 0.14 under slow_factor 1.3: failures that were never
        there), on the CPUs their processes do. So they run one at a time, unless each job has a
        GPU of its own (--gpus with as many GPUs as --jobs) and the time is one the subject
        measures there (slow_metric: its own CUDA-event timing, not the wall clock)."""
        if self.jobs <= 1 or not getattr(spec, "slow_factor", None) or self.remote:
            return self, None
        if getattr(spec, "slow_metric", None) and len(set(self.gpus)) >= self.jobs:
            return self, None
        return replace(self, jobs=1), (
            f"--jobs {self.jobs}: the oracle judges SLOW by each run's "
            f"{spec.slow_metric or 'wall time'}, and runs side by side would share "
            f"{'the GPU and the CPUs' if not self.gpus else 'a GPU'}, timing each other; they run one at a time"
            + ("" if not spec.slow_metric else " (--gpus with a GPU per job times them side by side)"))

    @property
    def remote(self) -> bool:
        """Whether runs happen on other hosts (nothing is checked out here)."""
        return self.executor == "ray"
