"""The run adapter: configuration in, memoised classified verdict out.

Abstractions
------------
TimeoutPolicy -- the watchdog's limit and where it came from (the spec, or calibration from the
                 slowest good run: max(floor, k x slowest)), stated so reports can print it.
Runner        -- owns one subject (a Spec, optionally pinned to a working directory such as a git
                 worktree and a revision): builds when the configuration changes, runs the command
                 under the watchdog, classifies, stores every run in the ledger, and answers
                 `observe(config, i)` -- the i-th run of a configuration -- from the ledger when it
                 was already made. `verdict(config, repeat)` folds the first `repeat` runs.
Executor      -- how a command is executed (default: a fresh process via run_process; warm GPU
                 workers plug in here with the same signature).

Constraint-violating configurations are never run: they are UNRESOLVED(INVALID) at once.
"""

from __future__ import annotations

import hashlib
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bisectk.events import EventBus, RunFinished, RunStarted
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome, Reason, Run, Verdict
from bisectk.run.classify import Judge, classify_build, classify_run
from bisectk.run.process import RawRun, run_process
from bisectk.spec import Config, Spec, config_key

Executor = Callable[..., RawRun]

DEFAULT_FLOOR_S = 1.0
DEFAULT_FACTOR = 5.0
CALIBRATION_CAP_S = 120.0  # the first good run has no baseline yet; --timeout overrides


@dataclass(frozen=True)
class TimeoutPolicy:
    seconds: float
    source: str   # "spec" | "calibrated" | "cap"
    detail: str

    def to_dict(self) -> dict:
        return {"seconds": round(self.seconds, 3), "source": self.source, "detail": self.detail}


def calibrated(good_durations: list[float], floor: float = DEFAULT_FLOOR_S,
               factor: float = DEFAULT_FACTOR) -> TimeoutPolicy:
    slowest = max(good_durations)
    seconds = max(floor, factor * slowest)
    return TimeoutPolicy(seconds, "calibrated",
                         f"max({floor:g} s, {factor:g} x slowest good run {slowest:.2f} s) = {seconds:.2f} s")


class Runner:
    def __init__(self, spec: Spec, ledger: Ledger | None = None, *, events: EventBus | None = None,
                 session: int | None = None, cwd: Path | None = None, revision: str = "",
                 log_root: Path | None = None, executor: Executor | None = None,
                 floor: float = DEFAULT_FLOOR_S, factor: float = DEFAULT_FACTOR,
                 extra_env: dict[str, str] | None = None,
                 prepare: Callable[[Config], None] | None = None):
        self.spec = spec
        self.ledger = ledger
        self.events = events or EventBus()
        self.session = session
        self.cwd = cwd or spec.cwd
        self.revision = revision
        self.log_root = log_root
        self.executor = executor or run_process
        self.floor, self.factor = spec.timeout_floor or floor, factor
        self.extra_env = extra_env or {}
        self.prepare = prepare  # makes the configuration's sources exist (e.g. applies diff hunks)
        self.fingerprint = spec.fingerprint(self.cwd) + (f"@{revision}" if revision else "")
        self.judge = Judge(spec.thresholds, spec.slow_factor, spec.slow_metric, protocol=spec.protocol)
        self.timeout = TimeoutPolicy(spec.timeout, "spec", f"{spec.timeout:g} s from the spec") if spec.timeout \
            else None
        self._memory: dict[tuple[str, int], Run] = {}
        self._preloaded: set[tuple[str, int]] = set()  # runs answered from an earlier session
        self._last_built: str | None = None
        self._lock = threading.Lock()
        self.executed = 0  # runs actually executed (not answered from the ledger)

    # -- calibration ----------------------------------------------------------------------
    def calibrate(self, good_runs: list[Run]) -> TimeoutPolicy:
        """Set the watchdog from the good endpoint's runs, and the SLOW baseline."""
        passes = [r for r in good_runs if r.outcome is Outcome.PASS]
        if passes:
            elapsed = [self.judge.elapsed(r.metrics, r.duration_s) for r in passes]
            elapsed = [e for e in elapsed if e is not None]
            if elapsed:
                self.judge.baseline = statistics.median(elapsed)
            if self.spec.timeout is None:
                # a SLOW verdict needs room: the watchdog must not fire before slowness shows
                factor = max(self.factor, 2 * (self.spec.slow_factor or 0))
                self.timeout = calibrated([r.duration_s for r in passes], self.floor, factor)
        return self.timeout or TimeoutPolicy(CALIBRATION_CAP_S, "cap", "no passing good run to calibrate from")

    # -- running --------------------------------------------------------------------------
    def observe(self, config: Config, index: int = 0, label: str = "") -> Run:
        """The index-th run of `config`: from the ledger if made already, else executed now."""
        key = config_key(config)
        invalid = self.spec.violated(config)
        if invalid:
            return Run(Outcome.UNRESOLVED, reason=Reason.INVALID, signature=f"constraint: {invalid}")
        stored = self._stored(key, index)
        if stored is not None:
            self.events.emit(RunFinished(label, config, index, stored, cached=True))
            return stored
        seconds = self.timeout.seconds if self.timeout else (self.spec.timeout or CALIBRATION_CAP_S)
        self.events.emit(RunStarted(label, config, index, seconds))
        with self._lock:  # builds share the working directory: one configuration at a time
            run, elsewhere = self._run_once(config, key, index, seconds)
        self.events.emit(RunFinished(label, config, index, run, cached=elsewhere))
        return run

    def verdict(self, config: Config, repeat: int | None = None, label: str = "",
                stop_on_fail: bool = False) -> Verdict:
        """Fold `repeat` runs (default: the spec's) of `config` into a verdict."""
        repeat = repeat or self.spec.repeat
        runs = []
        for i in range(repeat):
            run = self.observe(config, i, label)
            runs.append(run)
            if run.outcome is Outcome.UNRESOLVED or (stop_on_fail and run.outcome is Outcome.FAIL):
                break  # an untestable configuration does not become testable by repeating it
        cached = all(self._was_cached(config, i) for i in range(len(runs)))
        v = Verdict.fold(runs)
        return Verdict(v.outcome, v.kind, v.reason, v.signature, v.metrics, v.runs, v.duration_s, cached)

    def has(self, config: Config, index: int = 0) -> bool:
        """Whether the index-th run of `config` is already known (no execution needed)."""
        return self.spec.violated(config) is not None or self._stored(config_key(config), index) is not None

    def invalidate_build(self) -> None:
        """The working directory changed under us (e.g. a worktree switched commits): build again."""
        self._last_built = None

    def _was_cached(self, config: Config, index: int) -> bool:
        return (config_key(config), index) in self._preloaded

    def _stored(self, key: str, index: int) -> Run | None:
        if (key, index) in self._memory:
            return self._memory[(key, index)]
        if self.ledger:
            runs = self.ledger.runs(self.fingerprint, key)
            for i, r in enumerate(runs):
                self._memory[(key, i)] = r
                self._preloaded.add((key, i))
            return runs[index] if index < len(runs) else None
        return None

    def _run_once(self, config: Config, key: str, index: int, seconds: float) -> tuple[Run, bool]:
        """Execute and store the index-th run of `config` -- unless another session sharing the
        ledger is making it right now: then wait for its result rather than repeat the work (the
        ledger's claim protocol; a claim whose process died is taken over). Returns the run and
        whether it came from that other session."""
        if not self.ledger:
            run = self._execute(config, key, index, seconds)
            self.executed += 1
            self._memory[(key, index)] = run
            return run, False
        build_s = (self.spec.build_timeout or CALIBRATION_CAP_S * 2) if self.spec.build else 0.0
        with self.ledger.claim(self.fingerprint, key, index, ttl=seconds + build_s + 60) as claim:
            if claim.run is not None:
                self._memory[(key, index)] = claim.run
                self._preloaded.add((key, index))
                return claim.run, True
            run = self._execute(config, key, index, seconds)
            self.executed += 1
            self._memory[(key, claim.record(run, self.session))] = run
            return run, False

    def _log_dir(self, key: str, index: int, phase: str) -> Path | None:
        if not self.log_root:
            return None
        digest = hashlib.sha1(f"{self.fingerprint}|{key}".encode()).hexdigest()[:12]
        return self.log_root / digest / f"{index}-{phase}"

    def _execute(self, config: Config, key: str, index: int, seconds: float) -> Run:
        if self.prepare:
            self.prepare(config)
        env = {**self.spec.environment(config), **self.extra_env}
        if self.spec.build and self._last_built != key:
            log_dir = self._log_dir(key, index, "build")
            raw = self.executor(self.spec.argv(config, self.spec.build), cwd=self.cwd, env=env,
                                timeout=self.spec.build_timeout or CALIBRATION_CAP_S * 2, log_dir=log_dir)
            failed = classify_build(raw, str(log_dir) if log_dir else None)
            if failed:
                self._last_built = None
                return failed
            self._last_built = key
        log_dir = self._log_dir(key, index, "run")
        raw = self.executor(self.spec.argv(config), cwd=self.cwd, env=env, timeout=seconds, log_dir=log_dir)
        return classify_run(raw, self.judge, str(log_dir) if log_dir else None)
