"""Where runs happen: one protocol, one implementation per place.

Abstractions
------------
Job           -- one run as an executor is handed it: argv, working directory, environment,
                 where its logs go, whether its Python processes record the files they import,
                 the hang snapshot to take (run/snapshot.py), the build it needs first, and the
                 origin of its files (an executor on another host stages them from there).
Build         -- that build step: argv, its own time limit, the key of what it builds (the
                 directory's state, the revision, the configuration, the command) and its logs.
Executor      -- the protocol every place keeps: `run(job, watch) -> RawRun` (never raises for the
                 subject; the Watch of run/watchdog.py decides a hang), `alive()` how many runs
                 to hand it at once now (k-way multisection's round; a Ray cluster that lost an
                 actor says fewer), `close()`. Implemented by LocalExecutor (a fresh process per
                 run), run/pool.py WorkerPool (warm workers) and run/remote.py RemoteExecutor
                 (Ray actors in run/cluster.py; a Site in this process for tests). One that reads
                 the Watch in this process says so (`watches_here`): a run may then begin before
                 its deadline is known (run/pending.py); a remote one takes its watch as data.
Builds        -- which build each place (a directory, a remote site's copy of the sources) holds.
build_then_run -- what every executor does with a job: its build first, when the place it runs
                 in does not hold that build yet; a build that fails is returned in place of the
                 run (`RawRun.phase == "build"`), and the run never starts. A build still running
                 after BUILD_NOTE_S is told to its `running` (then every BUILD_NOTE_EVERY_S): a
                 hung build is minutes of its limit, never silent ones.
LocalExecutor -- a fresh contained process per run (run/process.py).

The runner (run/runner.py) calls nothing else: which executor serves a command is decided once,
where the session is opened (engine/session.py), from the run policy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from bisectk.run.classify import classify_build
from bisectk.run.process import RawRun, run_process
from bisectk.run.progress import FixedWatch
from bisectk.run.snapshot import SnapshotRequest
from bisectk.run.watchdog import Watch
from bisectk.run.workload import Origin


@dataclass(frozen=True)
class Build:
    argv: list[str]
    timeout: float
    key: str                       # what it builds: a place holding this key needs no new build
    log_dir: Path | None = None
    built: Callable[[], None] | None = field(default=None, compare=False)   # the place holds it now
    carries_config: bool = False   # a factor reaches the run through this build alone (classify_build)
    running: Callable[[float], None] | None = field(default=None, compare=False)   # still building after s


@dataclass(frozen=True)
class Job:
    argv: list[str]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    record_imports: bool = False
    snapshot: SnapshotRequest | None = None
    build: Build | None = None
    origin: Origin | None = field(default=None, compare=False)
    label: str = ""
    urgent: int = field(default=0, compare=False)     # runs beside others that the rest wait on: the
                                                      # good endpoint's 2, the bad endpoint's 1 (Runner.hold)
    building: bool = field(default=False, compare=False)   # a build step (build_then_run's), not the subject


class Executor(Protocol):
    def run(self, job: Job, watch: Watch) -> RawRun: ...

    def alive(self) -> int: ...

    def close(self) -> None: ...


class Builds:
    """Which build each place holds (thread-safe: parallel runs build in their own places)."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}
        self._lock = threading.Lock()
        self.count = 0      # builds that succeeded (a place rebuilt counts again)

    def holds(self, place: str, key: str) -> bool:
        with self._lock:
            return self._held.get(place) == key

    def made(self, place: str, key: str | None) -> None:
        with self._lock:
            if key is None:
                self._held.pop(place, None)
            else:
                self._held[place] = key
                self.count += 1


BUILD_NOTE_S = 5.0          # a build running this long is told (Build.running) ...
BUILD_NOTE_EVERY_S = 30.0   # ... and again this often while it runs


@contextmanager
def _told_while_long(tell: Callable[[float], None] | None) -> Iterator[None]:
    """Call `tell(seconds so far)` from a thread once the body has run BUILD_NOTE_S, then every
    BUILD_NOTE_EVERY_S, until it ends; never after it has ended."""
    if tell is None:
        yield
        return
    done, lock, start = threading.Event(), threading.Lock(), time.monotonic()

    def watch() -> None:
        wait = BUILD_NOTE_S
        while not done.wait(wait):
            with lock:
                if not done.is_set():
                    tell(time.monotonic() - start)
            wait = BUILD_NOTE_EVERY_S
    threading.Thread(target=watch, name="bisectk-build-note", daemon=True).start()
    try:
        yield
    finally:
        with lock:      # a note being told is finished first: none follows the build's end
            done.set()


def build_then_run(job: Job, watch: Watch, builds: Builds, run_one: Callable[[Job, Watch], RawRun]) -> RawRun:
    """The job's build when its place does not hold it yet (run as `run_one` runs anything, under
    a fixed watchdog of the build's own limit), then the job. The place is the job's directory:
    the build and the run must see the same files, which the runner's directory lock ensures.
    `built()` is told when the place holds the build, before the run."""
    b, place = job.build, str(job.cwd)
    if b is not None and not builds.holds(place, b.key):
        with _told_while_long(b.running):
            raw = run_one(Job(b.argv, job.cwd, job.env, b.log_dir, label=job.label, building=True), FixedWatch(b.timeout))
        if classify_build(raw, carries_config=b.carries_config) is not None:
            builds.made(place, None)
            return replace(raw, phase="build")
        builds.made(place, b.key)
    if b is not None and b.built is not None:
        b.built()
    return run_one(job, watch)


def run_fresh(job: Job, watch: Watch) -> RawRun:
    """One job in a fresh contained process (the build step, if any, is the caller's)."""
    return run_process(job.argv, cwd=job.cwd, env=dict(job.env), log_dir=job.log_dir, watch=watch,
                       record_imports=job.record_imports, snapshot=job.snapshot)


class LocalExecutor:
    """A fresh contained process per run; `slots` runs at once (--jobs)."""

    watches_here = True     # the Watch is read in this process: a run may begin before its deadline is known

    def __init__(self, slots: int = 1):
        self.slots = max(1, slots)
        self.builds = Builds()

    def run(self, job: Job, watch: Watch) -> RawRun:
        return build_then_run(job, watch, self.builds, run_fresh)

    def alive(self) -> int:
        return self.slots

    def close(self) -> None:
        pass


def run_command(executor: Executor, argv: list[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                timeout: float | None = None, log_dir: Path | None = None, watch: Watch | None = None) -> RawRun:
    """One command through any executor, as a plain call: a Job of it under `watch`, or a
    FixedWatch of `timeout` seconds (benchmarks, tests, and evidence reruns use it)."""
    return executor.run(Job(list(argv), cwd, dict(env or {}), log_dir), watch if watch is not None else FixedWatch(timeout))
