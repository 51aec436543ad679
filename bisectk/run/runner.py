"""The run adapter: configuration in, memoised classified verdict out.

Abstractions
------------
Runner        -- owns one subject (a Spec): for a Workload (a configuration, the directory and
                 environment it runs in, the revision that pins it) it builds when that directory
                 does not hold this build yet, runs the command under the watchdog, classifies,
                 stores every run in the ledger, and answers `observe(workload, i)` -- the i-th
                 run -- from the ledger when it was already made under the same memo key
                 (run/memokey.py: command, timeout policy, environment, the tree's content and
                 the source files the subject's runs were recorded importing). `verdict(workload,
                 repeat)` folds the first `repeat` runs. A plain configuration dict stands for a
                 Workload in the spec's own directory.
                 Each run goes to its Executor (run/executor.py: fresh processes, warm workers, or
                 Ray actors that build and run in their own copy) as one Job with its Watch: the
                 watchdog (the spec's `timeout` or --timeout: fixed; else calibrated from the good
                 runs: a deadline that follows each run's progress through the good run's
                 timeline, run/progress.py, with max(floor, k x slowest good run) for subjects that
                 print nothing; its TimeoutPolicy, bisectk/timeouts.py, says which). The raw run
                 that comes back is classified and stored here, beside the ledger -- unless it
                 never started (its program or build step could not be executed): what fixes
                 that (`chmod +x`, an interpreter installed, a directory made a file) changes no
                 input of the memo key, so such a run is kept for this command only.
                 `hold()` / `settle(passed)`: runs begun by other threads while the good endpoint
                 runs (engine/endpoints.py) get their watchdog once it has passed, or end unjudged
                 when it did not (run/pending.py); the good endpoint's run, then the bad
                 endpoint's, come first for a worker (Job.urgent).
                 A run is not stored once a file the memo key covers changed since the key was
                 made (`_inputs_moved`, and `last_check()` as the command ends), and the runs
                 stored before are taken back out.
                 `drop_under_way()`: the runs under way now (a stopped search's, made ahead) are
                 not stored nor counted when they end: the record made at the stop holds what
                 the ledger holds.

Constraint-violating configurations are never run: they are UNRESOLVED(INVALID) at once.

Parallel runs are safe: each carries its own directory and environment; the executor tracks
builds per place (directory, what it holds, configuration), and one directory runs one
configuration at a time when it has a build step or a `prepare` (the build and the run must see
the same files).
"""

from __future__ import annotations

import hashlib
import threading
import time
from contextlib import nullcontext
from pathlib import Path

from bisectk.events import BuildRunning, EventBus, Note, RunFinished, RunStarted
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome, Reason, Run, Verdict
from bisectk.run import imports as run_imports
from bisectk.run.classify import Judge, classify_build, classify_run
from bisectk.run.executor import Build, Executor, Job, LocalExecutor
from bisectk.run.memokey import StaticKey, policy_words, sources_digest
from bisectk.run.pending import ABANDONED, Pending, PendingWatch, RunAbandoned
from bisectk.run.progress import (COMPILE_FACTOR, DEFAULT_FACTOR as STRETCH_FACTOR, KERNEL_FACTOR, SLACK_S,
                                  FixedWatch, ProgressWatch, Timeline, past_last_point)
from bisectk.run.scratch import ledger_scratch
from bisectk.run.snapshot import LINEINFO_ENV, SnapshotPolicy, SnapshotRequest
from bisectk.run.workload import Workload
from bisectk.spec import Config, Spec, config_key, placeholders
from bisectk.timeouts import CALIBRATION_CAP_S, DEFAULT_FACTOR, DEFAULT_FLOOR_S, TimeoutPolicy, calibrated


# the subject's tree is compared (_inputs_moved) at most every MOVED_EVERY_S, and at most every
# MOVED_COST x the time one comparison takes (git runs three processes: a few % of a run at most)
MOVED_EVERY_S = 1.0
MOVED_COST = 20
# a run that ended by SIGTERM, SIGINT or SIGHUP not of the watchdog's sending: a CI job stopped (its
# runner signals every process of the job, the subject a little before bisectk) or a Ctrl-C in
# another terminal. bisectk waits this long for its own signal before storing the run: one that
# comes means the run ended with the command, and it is not stored as the configuration's crash,
# which every later command would answer from the ledger.
OUTSIDE_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
OUTSIDE_SIGNAL_GRACE_S = 1.0


class Runner:
    def __init__(self, spec: Spec, ledger: Ledger | None = None, *, events: EventBus | None = None,
                 session: int | None = None, cwd: Path | None = None, log_root: Path | None = None,
                 executor: Executor | None = None, floor: float = DEFAULT_FLOOR_S,
                 factor: float = DEFAULT_FACTOR, namespace: str = "", snapshots: SnapshotPolicy | None = None,
                 timeout: float | None = None, fresh: bool = False, gpus: tuple[str, ...] = ()):
        """`timeout`: --timeout, a fixed watchdog that overrides the spec's and calibration. `gpus`:
        --gpus, the GPUs the runs are pinned to (the memo key's). `fresh`: --fresh, no run is answered
        from the ledger, and each configuration's runs made take the place of those stored before."""
        self.spec = spec
        self.ledger = ledger
        self.events = events or EventBus()
        self.session = session
        self.cwd = cwd or spec.cwd
        self.log_root = log_root
        self.executor: Executor = executor or LocalExecutor()
        self.floor, self.factor = spec.timeout_floor or floor, factor
        self.start_s = 0.0   # under a watchdog that follows progress: the least time to a first point (stretch)
        self.end_s = 0.0     # and the least time past the good run's last point (stretch)
        # every input of a verdict but the timeout policy (which --timeout may still set) and the
        # sources the runs import (recorded as they run): run/memokey.py
        # in diff's scratch tree (rewritten by every run, pinned by each run's revision) the files
        # the command names change between runs by design: no edit of the user's. Only a directory
        # given for the runs (never the spec's own: a project named `scratch-x` is the user's)
        self.memo = StaticKey(spec, self.cwd, pinned=Path(self.cwd) != Path(spec.cwd)
                              and ledger_scratch(str(Path(self.cwd).resolve()), ledger), gpus=gpus)
        self._sources: dict[str, list[str]] = {}   # static key -> source files its runs imported
        self.imported_files: set[str] = set()      # every source file a run of this runner imported
                                                   # (engine/checkout_imports.py reads it)
        self.namespace = namespace  # e.g. '#clean-ignored': runs kept apart from other sessions'
        self.fresh = fresh   # --fresh: no run is answered from the ledger; those made replace the stored
        # a factor that reaches the run through the build alone (`make CFLAGS=-DW={w}`, `./k`): a
        # build that made nothing for a configuration left another's outputs (classify_build)
        self._build_alone = bool(spec.build) and not spec.literal and bool(
            set().union(*map(placeholders, spec.build))
            - set().union(*map(placeholders, [*spec.command, *spec.env.values()])))
        self.judge = Judge(spec.thresholds, spec.slow_factor, spec.slow_metric, protocol=spec.protocol,
                           higher=spec.slow_better == "higher")
        # a --run or --pytest subject's stand-in spec (`literal`) holds --timeout, which is no spec's
        self.timeout = (TimeoutPolicy(spec.timeout, "option", f"{spec.timeout:g} s from --timeout") if spec.literal
                        else TimeoutPolicy(spec.timeout, "spec", f"{spec.timeout:g} s from the spec")) if spec.timeout \
            else None
        if timeout:
            self.timeout = TimeoutPolicy(timeout, "option", f"{timeout:g} s from --timeout")
        self.good_timeline: Timeline | None = None   # the good run's progress (calibrate)
        self._memory: dict[tuple[str, str, int], Run] = {}
        self._preloaded: set[tuple[str, str, int]] = set()  # runs answered from an earlier session
        self._dir_locks: dict[Path, threading.Lock] = {}
        self._lock = threading.Lock()                        # guards the dicts above and `executed`
        self.executed = 0  # runs actually executed (not answered from the ledger)
        self.snapshots = snapshots      # which hangs are read before the kill (run/snapshot.py)
        self._pending: Pending | None = None    # runs begun beside the good endpoint's (hold)
        self._era = 0                   # runs begun before drop_under_way() ended another era
        self._stopped = threading.Event()       # stop(): a run that ends from now on is not stored
        self._moved_since: list[str] | None = None  # what changed under the memo key (_inputs_moved)
        self._tree_check_at = 0.0                   # when the tree is next compared (monotonic)
        self._time_alike()

    @property
    def fingerprint(self) -> str:
        return self.fingerprint_of("")

    def policy_key(self) -> str:
        """The timeout policy as part of the memo key: fixed seconds, or calibrated and its inputs."""
        t = self.timeout
        return policy_words(t.source if t else None, t.seconds if t else None, floor=self.floor,
                            factor=self.factor, slow_factor=self.spec.slow_factor,
                            kernel_factor=self.kernel_factor(), cap=CALIBRATION_CAP_S)

    def static_key(self, revision: str) -> str:
        """The memo key less the recorded sources (it names a subject's sources in the ledger)."""
        return self.memo.key(self.policy_key(), revision) + self.namespace

    def fingerprint_of(self, revision: str) -> str:
        return self._full_key(self.static_key(revision))

    def _sources_of(self, static: str) -> list[str]:
        with self._lock:
            if static in self._sources:
                return self._sources[static]
        found = self.ledger.sources(static) if self.ledger else []
        with self._lock:
            return self._sources.setdefault(static, found)

    def _full_key(self, static: str) -> str:
        digest = sources_digest(self._sources_of(static))
        return f"{static}~{digest}" if digest else static

    def _record_sources(self, static: str, w: Workload, imported) -> str:
        """Add what a run imported (outside its own tree and bisectk's scratch places) to the
        subject's recorded sources; returns the full key the run belongs under."""
        # the run's own tree is keyed by its content (or pinned by its revision), not file by file
        roots = [w.cwd, self.cwd]
        sites = run_imports.installed_dirs(imported)
        if len(self.imported_files) < run_imports.MAX_FILES:
            self.imported_files.update(set(imported) - set(sites))
        files = [f for f in run_imports.outside(imported, roots) if not ledger_scratch(f, self.ledger)]
        # the installed packages of a Python the key's programs do not stand for (`sh run.sh` that
        # runs python, `pytest` on PATH): their site directory, keyed by what it has installed
        files += [d for d in sites if d not in self.memo.sites]
        if not w.revision and not self.spec.build and Path(w.cwd) == Path(self.cwd):
            # a module of the user's tree that its digest leaves out (git-ignored, under build/ or a
            # hidden directory, a .so); with a build step such files are its outputs, made again for
            # each configuration
            files += self.memo.uncovered(imported)
        new = sorted(set(files) - set(self._sources_of(static)))
        if new:
            if self.ledger and not self.ledger.readonly:
                merged = self.ledger.add_sources(static, new)
            else:
                merged = sorted(set(self._sources_of(static)) | set(new))
            with self._lock:
                self._sources[static] = merged
        return self._full_key(static)

    def alive(self) -> int:
        """How many runs the executor takes at once now (a k-way round's width, at most --jobs)."""
        return self.executor.alive()

    def spares(self) -> int | None:
        """Workers ready to replace one a run would cost (a warm pool's spares: a hang or a crash
        retires its worker); None where a run costs no worker."""
        spares = getattr(self.executor, "spare_count", None)
        return spares() if spares is not None else None

    def ready(self) -> int:
        """How many runs would start at once now (a warm pool: its workers and spares ready;
        other executors: alive())."""
        ready = getattr(self.executor, "ready", None)
        return ready() if ready is not None else self.executor.alive()

    def workload(self, config: Config | Workload) -> Workload:
        return config if isinstance(config, Workload) else Workload(dict(config), self.cwd)

    # -- calibration ----------------------------------------------------------------------
    def calibrate(self, good_runs: list[Run]) -> TimeoutPolicy:
        """Set the watchdog from the good endpoint's runs, and the SLOW baseline."""
        passes = [r for r in good_runs if r.outcome is Outcome.PASS]
        if passes:
            elapsed = [self.judge.elapsed(r.metrics, r.duration_s) for r in passes]
            elapsed = [e for e in elapsed if e is not None]
            if elapsed:
                import statistics   # after the first run, not before it (with fractions, decimal: ~5 ms)
                self.judge.baseline = statistics.median(elapsed)
            if self.spec.timeout is None and (self.timeout is None or self.timeout.source != "option"):
                self.timeout = calibrated([r.duration_s for r in passes], self.floor, self._factor())
                timed = [(r.duration_s, Timeline.from_list(r.timeline)) for r in passes]
                timed = [(d, t) for d, t in timed if t is not None and t.points]
                if timed:
                    # the slowest good run's progress: a deadline that follows each run's own progress
                    self.good_timeline = max(timed, key=lambda x: x[0])[1]
                    self.timeout = TimeoutPolicy(self.timeout.seconds, "progress", (
                        f"follows progress through the good run's {len(self.good_timeline.points)} progress "
                        f"point(s) (compile x{COMPILE_FACTOR:g}, kernel x{self.kernel_factor():g}, other x"
                        f"{STRETCH_FACTOR:g}, + {SLACK_S:g} s); without progress output "
                        f"{self.timeout.detail}"))
        return self.policy()

    def stretch(self, seconds: float, timeline: list | None = None) -> TimeoutPolicy:
        """A silent run called a hang by the good run's duration alone finished after `seconds`
        once given longer (engine/endpoints.py): the calibrated watchdog is set from it as from
        a good run, if that is longer. A watchdog the user or the spec fixed is never changed.
        One that follows progress gives every run that long before its first progress point (a
        slow start, a first run's cost: what it follows nothing of), where it gave each the good
        run's start-up again, and stopped it again; its deadlines past that point stay the good run's,
        but for the time past the good run's last point: where the run's `timeline` reached that point,
        what it took from there to its end is given every run past it (a slow teardown, a cache
        written at exit), where each such run was stopped past the last point and run again."""
        if self.moving:
            self.start_s = max(self.start_s, calibrated([seconds], self.floor, self._factor()).seconds)
            past = past_last_point(timeline, self.good_timeline)
            if past is not None:
                self.end_s = max(self.end_s, calibrated([past], self.floor, self._factor()).seconds)
            return self.policy()
        if self.timeout is not None and self.timeout.source != "calibrated":
            return self.policy()
        base = calibrated([seconds], self.floor, self._factor())
        if self.timeout is None or base.seconds > self.timeout.seconds:
            self.timeout = TimeoutPolicy(base.seconds, "calibrated",
                                         f"{base.detail.replace('slowest good run', 'the bad endpoint')}")
        return self.policy()

    def _factor(self) -> float:
        """The calibrated watchdog's multiple of a run's time: a SLOW verdict needs room, so the
        watchdog must not fire before slowness shows."""
        return max(self.factor, 2 * (self.spec.slow_factor or 0))

    def kernel_factor(self) -> float:
        """How much longer than the good run's a kernel stretch may take: a SLOW oracle needs room."""
        return max(KERNEL_FACTOR, 2 * (self.spec.slow_factor or 0))

    @property
    def moving(self) -> bool:
        """Whether the watchdog follows each run's progress (calibrated from a good timeline)."""
        return self.good_timeline is not None and self.timeout is not None and self.timeout.source == "progress"

    def hold(self) -> Pending:
        """Runs begun from now on by threads other than this one get their watchdog when the good
        endpoint has passed (`settle`): the bad endpoint's run and the search's first runs, begun
        beside the good run's (engine/endpoints.py; run/pending.py)."""
        self._pending = Pending(threading.get_ident())
        return self._pending

    def settle(self, passed: bool) -> None:
        """The good endpoint's runs are done (`passed`: all of them passed, and the watchdog is
        calibrated from them): the runs begun beside them get the watchdog made now. Did not pass:
        runs made ahead are ended unjudged, kept ones go on under the watchdog as it is; the hold
        stays until `release`, so a run made ahead that begins later is ended too."""
        pending = self._pending
        if pending is None:
            return
        def make() -> FixedWatch | ProgressWatch:
            return self._watch(self.policy().seconds)
        if passed:
            pending.settle(make)
            self._pending = None
        else:
            pending.abandon(make)

    def release(self) -> None:
        self._pending = None

    def drop_under_way(self) -> None:
        """A search stopped (Ctrl-C, the run budget) with runs it made ahead still under way on
        other threads: they are left to end with the command, and the record is made now, so one
        that ends is neither stored nor counted as executed (RunAbandoned), where it was stored
        after the record and the ledger held a run the report did not count. Runs begun after
        this (a re-check of the good endpoint) are stored as ever."""
        with self._lock:
            self._era += 1

    def _dropped(self, era: int) -> bool:
        with self._lock:
            return era != self._era

    def _held(self) -> Pending | None:
        """The hold a run begun now on this thread falls under (None: its watchdog is known)."""
        pending = self._pending
        return pending if pending is not None and pending.owner != threading.get_ident() else None

    def _urgency(self) -> int:
        """A run's claim on the next free worker while runs are held: the good endpoint's first
        (every other run's watchdog waits for it), then the bad endpoint's (the search's first
        round waits for it), then the runs made ahead."""
        pending = self._pending
        if pending is None:
            return 0
        return 2 if pending.owner == threading.get_ident() else 1 if pending.kept() else 0

    def watch(self, seconds: float) -> FixedWatch | ProgressWatch | PendingWatch:
        """The watch of one run: a ProgressWatch (moving deadline) once a good timeline is known
        and the watchdog was not fixed by the user, else a FixedWatch of `seconds`; a PendingWatch
        for a run begun beside the good endpoint's before its watchdog is known (`hold`)."""
        pending = self._held()
        if pending is not None:
            return PendingWatch(pending, seconds, kept=pending.kept())
        return self._watch(seconds)

    def _watch(self, seconds: float) -> FixedWatch | ProgressWatch:
        if self.moving:
            return ProgressWatch(self.good_timeline, seconds, max(self.floor, self.start_s), self.kernel_factor(),
                                 end_s=self.end_s)
        return FixedWatch(seconds)

    def _grace(self, seconds: float, until: int | None) -> FixedWatch | ProgressWatch:
        """A second chance's watch: `seconds` fixed, or, with `until` and a watchdog that follows
        progress, `seconds` to reach point `until` and the good run's pace from there."""
        if until is None or not self.moving:
            return FixedWatch(seconds)
        return ProgressWatch(self.good_timeline, self.policy().seconds, max(self.floor, self.start_s),
                             self.kernel_factor(), grace_s=seconds, until=until, end_s=self.end_s)

    def policy(self) -> TimeoutPolicy:
        return self.timeout or TimeoutPolicy(CALIBRATION_CAP_S, "cap", "no passing good run to calibrate from")

    def stop(self) -> None:
        """The command is leaving (Ctrl-C, SIGTERM, a hangup) with runs still under way in other
        threads (a batch of --jobs): a run that ends from now on ends unjudged (RunAbandoned) and
        is never stored, whatever it ended with. Its end may be bisectk's doing -- its worktree
        removed, its warm worker killed, as the command cleans up -- and a subject failing for
        that would be stored as the commit's own failure, which --resume would then reuse."""
        self._stopped.set()

    def _unless_stopped(self, run: Run | None = None) -> None:
        """RunAbandoned when the command is leaving; `run` ended by a signal from outside the
        watchdog (OUTSIDE_SIGNALS): after waiting OUTSIDE_SIGNAL_GRACE_S for the command's own.
        On the main thread that signal is a KeyboardInterrupt in the wait (a run is `live`)."""
        if run is not None and run.signal in OUTSIDE_SIGNALS and not run.timed_out:
            self._stopped.wait(OUTSIDE_SIGNAL_GRACE_S)
        if self._stopped.is_set():
            raise RunAbandoned("the command was interrupted while this run was under way: ended unjudged")

    # -- running --------------------------------------------------------------------------
    def observe(self, config: Config | Workload, index: int = 0, label: str = "", *, snapshot: bool = False,
                longer: float | None = None, until: int | None = None) -> Run:
        """The index-th run of a workload: from the ledger if made already, else executed now.
        `snapshot`: if it hangs, read where it waits whatever the snapshot budget says (the
        engines force it for the culprit's confirmation). `longer`: a fixed watch of that many
        seconds for this run alone (a second chance for a run the calibrated watchdog stopped);
        with `until`, that long to reach the good run's progress point `until`, then the progress
        watch from there (ProgressWatch's grace)."""
        w = self.workload(config)
        key = _key(w)
        invalid = self.spec.violated(w.config)
        if invalid:
            return Run(Outcome.UNRESOLVED, reason=Reason.INVALID, signature=f"constraint: {invalid}")
        if w.unrunnable:   # its place cannot be made (a commit git cannot check out): skipped, as git does
            run = Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature=w.unrunnable)
            with self._lock:
                self.executed += 1      # tried now (a checkout), though nothing ran
            self.events.emit(RunFinished(label, w.config, index, run, cached=False))
            return run
        static = self.static_key(w.revision)
        stored = self._stored(static, key, index)
        if stored is not None:
            self.events.emit(RunFinished(label, w.config, index, stored, cached=True))
            return stored
        seconds = longer or self.policy().seconds
        # a run begun beside the good endpoint's has no watchdog yet: none is announced
        self.events.emit(RunStarted(label, w.config, index, None if self._held() else seconds,
                                    self.moving and not longer))
        grace = (longer, until) if longer is not None else None
        run, elsewhere = self._run_once(w, static, key, index, seconds, snapshot, grace, label)
        self.events.emit(RunFinished(label, w.config, index, run, cached=elsewhere))
        return run

    def verdict(self, config: Config | Workload, repeat: int | None = None, label: str = "",
                stop_on_fail: bool = False) -> Verdict:
        """Fold `repeat` runs (default: the spec's) of a workload into a verdict."""
        w = self.workload(config)
        repeat = repeat or self.spec.repeat
        runs = []
        for i in range(repeat):
            run = self.observe(w, i, label)
            runs.append(run)
            if run.outcome is Outcome.UNRESOLVED or (stop_on_fail and run.outcome is Outcome.FAIL):
                break  # an untestable configuration does not become testable by repeating it
        cached = all(self.was_cached(w, i) for i in range(len(runs)))
        v = Verdict.fold(runs)
        return Verdict(v.outcome, v.kind, v.reason, v.signature, v.metrics, v.runs, v.duration_s, cached)

    def has(self, config: Config | Workload, index: int = 0) -> bool:
        """Whether the index-th run of a workload is already known (no execution needed)."""
        w = self.workload(config)
        return (self.spec.violated(w.config) is not None
                or self._stored(self.static_key(w.revision), _key(w), index) is not None)

    def was_cached(self, config: Config | Workload, index: int) -> bool:
        w = self.workload(config)
        return (self.static_key(w.revision), _key(w), index) in self._preloaded

    def _dir_lock(self, cwd: Path) -> threading.Lock:
        with self._lock:
            return self._dir_locks.setdefault(Path(cwd), threading.Lock())

    def _stored(self, static: str, key: str, index: int) -> Run | None:
        """The run from this session's memory (by static key: within a session the sources do
        not change), else from the ledger under the full key (the sources as they are now)."""
        with self._lock:
            if (static, key, index) in self._memory:
                return self._memory[(static, key, index)]
        if self.ledger and not self.fresh:
            runs = self.ledger.runs(self._full_key(static), key)
            with self._lock:
                for i, r in enumerate(runs):
                    if (static, key, i) not in self._memory:
                        self._memory[(static, key, i)] = r
                        self._preloaded.add((static, key, i))
            return runs[index] if index < len(runs) else None
        return None

    def _run_once(self, w: Workload, static: str, key: str, index: int, seconds: float,
                  snapshot: bool = False, grace: tuple | None = None, label: str = "") -> tuple[Run, bool]:
        """Execute and store the index-th run of a workload -- unless another session sharing the
        ledger is making it right now: then wait for its result rather than repeat the work (the
        ledger's claim protocol; a claim whose process died is taken over). Returns the run and
        whether it came from that other session."""
        era = self._era
        if not self.ledger:
            run, imported, _ = self._execute(w, key, index, seconds, snapshot, grace, label)
            if self._dropped(era):
                raise RunAbandoned("the search stopped while this run was under way: not stored")
            self._unless_stopped(run)
            self._record_sources(static, w, imported)
            with self._lock:
                self.executed += 1
                self._memory[(static, key, index)] = run
            return run, False
        build_s = (self.spec.build_timeout or CALIBRATION_CAP_S * 2) if self.spec.build else 0.0
        fingerprint = self._full_key(static)
        def waiting(holder: str) -> None:
            self.events.emit(Note(f"another command sharing the ledger {self.ledger.path} is making "
                                  f"this run; waiting for {holder}"))
        # --fresh: the runs other sessions stored are no answer, and go when this one's is recorded
        # (never before: an interrupt during the run would leave the configuration with none)
        replacing = self.fresh and not self.ledger.readonly
        with self.ledger.claim(fingerprint, key, index, ttl=seconds + build_s + 60, on_wait=waiting,
                               replacing=replacing, session=self.session) as claim:
            if claim.run is not None:
                with self._lock:
                    self._memory[(static, key, index)] = claim.run
                    self._preloaded.add((static, key, index))
                return claim.run, True
            run, imported, started = self._execute(w, key, index, seconds, snapshot, grace, label)
            if self._dropped(era):     # the claim is released: the slot is left to the next command
                raise RunAbandoned("the search stopped while this run was under way: not stored")
            self._unless_stopped(run)   # the claim is given back (`with`): the next command makes it
            full = self._record_sources(static, w, imported)
            if not started or self._inputs_moved():
                pass    # not stored (see the module docstring): the claim is given back (`with`)
            elif full == fingerprint:
                claim.record(run, self.session)
            else:   # the run imported sources not recorded before: stored where the next session looks
                self.ledger.add_run(full, key, run, self.session, claim=claim, supersede=replacing)
                claim.held = False
            with self._lock:
                self.executed += 1
                self._memory[(static, key, index)] = run
            return run, False

    def _inputs_moved(self) -> bool:
        """Whether the subject's files changed since the memo key was made (StaticKey.moved): the
        named files at every run, the tree at most every MOVED_EVERY_S (or MOVED_COST x the time
        a comparison takes, if longer). At the first change the
        runs this session stored are taken back out of the ledger and no later run is stored: a
        run of the edited files filed under the old key would answer a later command once the
        files are put back. The command goes on, and says so."""
        with self._lock:
            if self._moved_since is not None:
                return True
            due = time.monotonic() >= self._tree_check_at
        t0 = time.monotonic()
        moved = self.memo.moved(tree=due)
        if due:
            with self._lock:
                self._tree_check_at = time.monotonic() + max(MOVED_EVERY_S, MOVED_COST * (time.monotonic() - t0))
        if not moved:
            return False
        with self._lock:
            if self._moved_since is not None:
                return True
            self._moved_since = moved
        dropped = (self.ledger.forget_session_runs(self.session)
                   if self.ledger and not self.ledger.readonly and self.session is not None else 0)
        shown = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
        self.events.emit(Note(f"{shown} changed while this command ran (edited, or written by its runs): its "
                              f"answer may rest on runs of either version, and none of its runs is kept for "
                              f"reuse ({dropped} taken back out of the ledger)"))
        return True

    def answered_logs(self) -> set[str]:
        """The log paths of the runs this runner answered from the ledger (an earlier session's,
        or another command's through a claim): Session.close keeps their sessions' logs."""
        with self._lock:
            return {r.log_path for k in self._preloaded if (r := self._memory.get(k)) is not None and r.log_path}

    def last_check(self) -> None:
        """`_inputs_moved` once more as the command ends (Session.close), the tree compared
        whatever the clock says: between runs it is compared at most every MOVED_EVERY_S, so an
        edit made during the last run, or in the command's last second, would leave that run filed
        under the old key. Free when this runner made no run; where no key held the tree (runs
        pinned by a commit or a hunk set) only the named files are compared."""
        with self._lock:
            if not self.executed or self._moved_since is not None:
                return
            self._tree_check_at = 0.0
        self._inputs_moved()

    def _log_dir(self, static: str, key: str, index: int, phase: str) -> Path | None:
        if not self.log_root:
            return None
        digest = hashlib.sha1(f"{static}|{key}".encode()).hexdigest()[:12]
        return self.log_root / digest / f"{index}-{phase}"

    def _environment(self, w: Workload) -> dict[str, str]:
        env = {**self.spec.environment(w.config), **w.env}
        # a Python subject's print() reaches a pipe block-buffered: its progress lines would arrive
        # only at exit, the good run's timeline would collapse onto its end, and a hang would be
        # called at 6 x the good run, "before its first progress point" (as a terminal shows them,
        # line by line, is how the watchdog must see them too); the spec's env may say otherwise
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.snapshots is not None and self.snapshots.enabled:
            # a CuTe DSL kernel compiled now carries source lines, so a hang found later can name them
            for k, v in LINEINFO_ENV.items():
                env.setdefault(k, v)
        return env

    def _time_alike(self) -> None:
        """SLOW judged on wall time by an executor whose runs may go warm or cold (a warm pool): it
        is given the configurations this subject may run -- both endpoints, and each with one
        differing factor flipped (a factor that sets a variable read when a process starts, or
        the program) -- so that it times them all one way."""
        alike = getattr(self.executor, "time_alike", None)
        if alike is None or not self.judge.slow_factor or self.judge.slow_metric:
            return
        good, bad = dict(self.spec.good), dict(self.spec.bad)
        # only what the program, the script or the environment names decides where a run goes
        decides = set().union(*map(placeholders, [*self.spec.command[:2], *self.spec.env.values()]))
        flips = [k for k in good if k in bad and good[k] != bad[k] and k in decides]
        configs = [good, bad, *({**good, k: bad[k]} for k in flips), *({**bad, k: good[k]} for k in flips)]
        jobs = []
        for config in configs:
            try:
                jobs.append((self.spec.argv(config), self._environment(Workload(config, self.cwd)), self.cwd))
            except Exception:   # a template this configuration cannot fill: its runs will say so
                continue
        alike(jobs)

    def _snapshot(self, forced: bool) -> SnapshotRequest | None:
        return self.snapshots.request(forced) if self.snapshots is not None else None

    def _execute(self, w: Workload, key: str, index: int, seconds: float,
                 snapshot: bool = False, grace: tuple | None = None, label: str = "") -> tuple[Run, tuple, bool]:
        """One run through the executor, classified. One directory runs one configuration at a
        time when it builds or is prepared: the build and the run must see the same files (an
        executor on another host stages them while the lock is held). Returns the run, the
        source files it imported (when the executor records them), and whether it started."""
        exclusive = self.spec.build is not None or w.prepare is not None
        with self._dir_lock(w.cwd) if exclusive else nullcontext():
            if w.prepare:
                w.prepare()
            job = self._job(w, key, index, snapshot, label)
            watch = self.watch(seconds) if grace is None else self._grace(*grace)
            raw = self.executor.run(job, watch)
        broke = w.damaged() if w.damaged is not None else None
        if broke:       # what it did may have been done elsewhere (git walking up): no verdict on it
            return Run(Outcome.UNRESOLVED, reason=Reason.INFRA,
                       signature=f"the run broke its worktree: {broke}"), (), True
        if raw.phase == "build":
            return classify_build(raw, _text(job.build.log_dir), job.build.carries_config, job.build.timeout), (), raw.started
        if self.snapshots is not None:
            self.snapshots.settle(raw.stuck, snapshot)
        if isinstance(watch, PendingWatch) and self.judge.slow_factor:
            # begun beside the good endpoint's runs and ended first: judged once they have given
            # the SLOW baseline (before, it passed unjudged: bad's first run "passed", and the
            # failure was called intermittent; a hybrid's pass cleared its factors)
            if watch.pending.decided() == ABANDONED and not watch.kept:
                raise RunAbandoned("the good endpoint did not pass: a run made ahead of the search is ended unjudged")
        return classify_run(raw, self.judge, _text(job.log_dir)), tuple(raw.imports or ()), raw.started

    def _job(self, w: Workload, key: str, index: int, snapshot: bool, label: str = "") -> Job:
        """The Job of the index-th run of a workload: its command, directory, environment, logs,
        the build it needs (keyed by what the directory holds, the revision, the configuration
        and the build command; a build still running after a few seconds is an event), and the
        snapshot to take should it hang."""
        static = self.static_key(w.revision)
        build = None
        if self.spec.build:
            argv = self.spec.argv(w.config, self.spec.build)
            limit = self.spec.build_timeout or CALIBRATION_CAP_S * 2
            build = Build(argv, limit, f"{w.state}|{w.revision}|{key}|{' '.join(argv)}",
                          self._log_dir(static, key, index, "build"), built=w.built, carries_config=self._build_alone,
                          running=lambda s: self.events.emit(BuildRunning(label, w.config, index, s, limit)))
        return Job(self.spec.argv(w.config), w.cwd, self._environment(w), self._log_dir(static, key, index, "run"),
                   record_imports=True, snapshot=self._snapshot(snapshot), build=build, origin=w.origin,
                   label=key[:80], urgent=self._urgency())


def _key(w: Workload) -> str:
    """The memo key of a workload's configuration (made by its space when it has it)."""
    return w.key if w.key is not None else config_key(w.config)


def _text(path: Path | None) -> str | None:
    return str(path) if path else None
