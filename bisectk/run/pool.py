"""Warm workers, parent side: a pool of worker processes (run/worker.py), each with hot spares.

Abstractions
------------
_Slot      -- (run/poolworker.py, with _Worker: one live worker process) a place in the pool (a GPU, or a CPU slot): the worker serving it and its hot spares,
              started and warmed in the background. A worker killed by a hang, a crash, a non-zero
              exit or a poisoned context is replaced by a spare at once (no imports to wait for),
              and a new spare is started behind it. Where a GPU is visible a slot keeps four
              spares, and one more (five) once a worker has been retired: a replacement there
              costs the imports (9-10 s on an H100: `import torch` 5 s, the CuTe DSL 3.5 s, the
              CUDA context 0.2 s), far longer than a hung kernel takes to be called, and the
              hangs of a hang pair's ablation come in bursts (the bad endpoint, the failing
              halves, the confirmation's re-runs: six hangs in 15 s), which waited 4.6 s and
              5.0 s for a start with two spares, and 2.6-3.9 s with three. Starting four at once
              costs the first one 0.2-0.6 s of its 9.3 s (bench/preload_contention.py).
WorkerPool -- an Executor (run/executor.py): `run(job, watch) -> RawRun`, `alive()`, `close()`.
              A job that cannot run in-process (not `python script.py ...`, or an env override of a process-level
              variable such as CUDA_* / CUTE_DSL_* / PYTHON*, or of a locale variable the interpreter reads at
              its start: LC_ALL, LC_CTYPE, LANG) runs in a fresh process instead. The run's
              output comes through two FIFOs read exactly as a cold run's pipes are
              (run/output.py: capped logs, the result line wherever it is); its lines feed the
              `watch`, and the one wait loop (run/watchdog.py) decides a hang. After each run the
              processes it left in the worker's tree are killed (a fresh process's supervisor would
              have), and the worker's supervisor is looked at: a run that killed or stopped it is
              UNRESOLVED (infra) and the worker's whole tree is ended by hand. What the run changed
              in the interpreter (run/isolation.py) is said once through `on_note`; a worker that
              cannot be put back, or that refuses a run because it is not fresh, is retired.
              `stats` counts warm and cold runs, worker starts and discards, state restored
              (`leaks_restored`) or retired for (`leaks_retired`), and how long each slot went
              without a ready worker after a discard (`recovery_s`). `close` kills a worker that is
              mid-run at once (Ctrl-C must not wait for the run). One run in a slot's worker, from
              its request to its RawRun, is run/warmrun.py's (WarmRun, which WorkerPool is too).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from bisectk.run import tmpfiles
from bisectk.run.interpreter import same_python
from bisectk.run.executor import Builds, Job, build_then_run
from bisectk.run.forked import FORK_READY_S, Forked, Template
from bisectk.run.poolworker import _Slot, _Worker, default_spares
from bisectk.run.process import RawRun, run_process
from bisectk.run.warmrun import _COLD, WarmRun
from bisectk.run.watchdog import Watch

# Environment variables read at import or CUDA-context creation: a request that changes one cannot
# be honoured by a warm process and runs cold instead. Every family `bisectk env --diff` offers as
# a factor (spaces/env.py ENV_PREFIXES) is here: PYTORCH_JIT is read when torch is imported,
# XLA_FLAGS and JAX_PLATFORMS when the backend starts, CUBLAS_WORKSPACE_CONFIG when a handle is
# made, TRITON_* by the compiler's cache; set in a worker that preloaded them, they change nothing.
PROCESS_LEVEL_ENV = ("CUDA_", "CUTE_DSL_", "CUTLASS_", "PYTHON", "LD_", "TORCH_", "PYTORCH_", "NCCL_",
                     "NVIDIA_", "OMP_", "MKL_", "TRITON_", "CUBLAS_", "CUDNN_", "NVCC_", "TVM_", "XLA_",
                     "JAX_", "CUPY_", "BISECTK_COMPILE_ONLY")
# ... except what a warm worker does itself for every run (run/worker.py): its stdout and stderr
# are line-buffered, which is what the runner's PYTHONUNBUFFERED=1 asks of a fresh interpreter,
# and it writes no bytecode (the commit and hunk spaces' PYTHONDONTWRITEBYTECODE=1)
WARM_HONOURS_ENV = frozenset({"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"})
# The locale variables the interpreter reads at its start, by name (the other LC_* categories are
# read only when a script calls setlocale, from the run's environment: a worker honours them):
# they set LC_CTYPE, and under the C or POSIX locale UTF-8 mode, which fixes open()'s default
# encoding, the preferred and filesystem encodings and the streams' errors for the process's life
STARTUP_LOCALE_ENV = frozenset({"LC_ALL", "LC_CTYPE", "LANG"})
DEFAULT_PRELOAD = ("torch", "cutlass")
READY_TIMEOUT_S = 180.0
MAX_FAILED_STARTS = 3
POLL_S = 0.05
CLOSE_WAIT_S = 0.2  # closing: how long idle workers get to exit by themselves before they are killed
MAX_REFUSALS = 3   # workers that refuse one run (not fresh) before it runs cold


def _trace(event: str, **facts) -> None:
    """One timestamped line of the pool's life (a worker asked for, ready, promoted, retired; a run
    waiting for a worker) to the file BISECTK_POOL_TRACE names, when it is set: where a warm
    command's wall goes that its runs do not account for (bench/gpu_hang_ab.sh)."""
    path = os.environ.get("BISECTK_POOL_TRACE")
    if not path:
        return
    try:
        with open(path, "a") as f:
            f.write(json.dumps({"t": round(time.time(), 4), "event": event, **facts}) + "\n")
    except OSError:
        pass


ALL_COLD_NOTE = ("--warm: SLOW is judged on wall time, and some of this command's configurations go cold "
                 "(a fresh process: its start and imports in its time), others warm: every run goes cold, "
                 "so that their times compare (a slow_metric the subject times itself keeps them warm)")


def _python_script(argv: list[str]) -> bool:
    """`PROGRAM SCRIPT.py ...`: the only shape a warm worker runs (which program: WorkerPool._ours)."""
    return len(argv) >= 2 and argv[1].endswith(".py")


class WorkerPool(WarmRun):
    """Warm workers, one per slot (`slots`; with `gpus`, slot k on GPU gpus[k % len(gpus)], and
    at least one per GPU), each with hot spares.

        with WorkerPool(gpus=[0, 1]) as pool:
            raw = pool.run(Job([sys.executable, "kernels/cutedsl/ws_pipeline.py", "--stages", "2"], cwd=root),
                           FixedWatch(60))

    `gpus=None` (or []) makes `slots` workers (default 1) that inherit the environment as it is
    (CPU use, tests; `ablate --jobs N --warm`: N workers side by side on the one visible GPU).
    `spares`: hot spares per slot (True: the default, 4 where a GPU is visible, else 1, shared
    out among the slots when there are several; False or 0: none); `max_spares`: how far
    retirements raise it (default: 5 where a GPU is visible with the default spares, shared out
    the same way, else `spares`).
    """

    watches_here = True     # the Watch is read in this process (LocalExecutor's)

    def __init__(self, gpus=None, *, slots: int = 1, python: str | None = None, env: dict[str, str] | None = None,
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, max_runs: int = 200, spares: bool | int = True,
                 max_spares: int | None = None,
                 ready_timeout: float = READY_TIMEOUT_S, log_dir: str | os.PathLike | None = None,
                 eager: bool = True, on_note=None, fork: bool = True, fork_ready_s: float = FORK_READY_S):
        self.python = python or sys.executable
        self.all_cold = False   # every run in a fresh process (time_alike)
        from bisectk.run.snapshot import tracer_env
        # tracer_env: a hang's readers (this process's children) may attach to the workers (Yama)
        self.base_env = {**os.environ, **(env or {}), **tracer_env()}
        root = str(Path(__file__).resolve().parents[2])
        pp = self.base_env.get("PYTHONPATH", "")
        if root not in pp.split(os.pathsep):  # the worker imports bisectk.run.worker
            self.base_env["PYTHONPATH"] = os.pathsep.join([root, pp]) if pp else root
        self.preload = tuple(preload)
        # workers are forked from a template that imported the preload once (run/template.py);
        # with nothing to preload there is nothing to share, and each worker starts fresh
        self.fork = bool(fork and self.preload and hasattr(os, "fork") and hasattr(socket, "send_fds"))
        self.fork_ready_s = fork_ready_s
        # the pool's first worker starts fresh, beside the template: the first run never waits longer
        # than it would without one (a template that refuses to fork costs the others its import)
        self._first_fresh = self.fork
        self.templates: dict = {}           # gpu -> Template (one environment each)
        self.template_starts: dict = {}     # gpu -> templates started (MAX_FAILED_STARTS at most)
        self._templates_lock = threading.Lock()
        self.max_runs = max_runs
        # slot k runs on gpus[k % len(gpus)], as a run pinned to slot k's GPU is (engine/slots.py):
        # --jobs 4 --gpus 0,1 keeps two workers on each GPU, never fewer workers than --jobs
        gpus = list(gpus) if gpus else []
        self.slots = ([_Slot(gpus[k % len(gpus)]) for k in range(max(len(gpus), slots))] if gpus
                      else [_Slot(None) for _ in range(max(1, slots))])
        base, most = default_spares() if spares is True else (int(spares), int(spares))
        if spares is True and len(self.slots) > 1:
            # several slots serve one another: a hang's worker is replaced by its slot's spare
            # while the other slots' workers stay ready, so the default is shared out among them
            base, most = -(-base // len(self.slots)), -(-most // len(self.slots))
        self.spares, self.max_spares = base, max(base, most if max_spares is None else int(max_spares))
        self.ready_timeout = ready_timeout
        self.log_dir = Path(log_dir) if log_dir else None
        for slot in self.slots:
            slot.want = self.spares
        # runs handed to it at once (a k-way round): `slots`, even pinned to fewer GPUs (those
        # beyond a GPU's worker wait for it)
        self.width = max(len(self.slots), slots)
        self.builds = Builds()
        self.cond = threading.Condition()
        self._urgent: Counter = Counter()      # runs waiting for a worker, by (GPU asked, urgency) (_acquire)
        self.stats = {"warm_runs": 0, "cold_runs": 0, "worker_starts": 0, "worker_discards": 0,
                      "spare_promotions": 0, "recovery_s": [], "forked_starts": 0}
        self._closed = False
        self.on_note = on_note
        self._said: set[str] = set()
        if eager:
            self.start(wait=False)

    # -- lifecycle -----------------------------------------------------------------------------
    def _worker_env(self, slot: _Slot) -> dict[str, str]:
        env = dict(self.base_env)
        if slot.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(slot.gpu)
        return env

    def _template(self, slot: _Slot, log: Path | None) -> Template | None:
        """The template that forks this slot's workers (started at the first call), or None: no
        forking, the pool is closing, or its GPU's templates failed MAX_FAILED_STARTS times."""
        if not self.fork:
            return None
        with self._templates_lock:
            t = self.templates.get(slot.gpu)
            if t is not None and not t.failed and not t.lost():
                return t
            if self._closed or self.template_starts.get(slot.gpu, 0) >= MAX_FAILED_STARTS:
                return None
            if t is not None and t.refused:     # its state would refuse again: workers start fresh
                return None
            if t is not None:
                self._note(f"warm workers: their template can fork no more ({t.failed or t.lost()}); a new one "
                           "is started")
                threading.Thread(target=t.kill, daemon=True).start()
            self.template_starts[slot.gpu] = self.template_starts.get(slot.gpu, 0) + 1
            try:
                t = Template(self.python, self._worker_env(slot), self.preload,
                             log.with_name(f"template-gpu{slot.gpu}.log") if log else None)
            except (OSError, ValueError) as exc:
                self._note(f"warm workers: their template could not start ({exc}); workers start fresh")
                t = None
            self.templates[slot.gpu] = t
            _trace("template", gpu=slot.gpu)
            return t

    def _new_worker(self, slot: _Slot, log: Path | None, fresh: bool = False):
        """A worker for `slot` that has not said it is ready yet: forked from the slot's template
        once that has imported the preload, else (or `fresh`) started fresh (the imports its own)."""
        t = None if fresh else self._template(slot, log)
        if t is not None and t.wait_ready(self.ready_timeout):
            w = t.fork({}, log)
            if w is not None:
                self.stats["forked_starts"] += 1
                return w
            if t.refused:
                self._note(f"warm workers start fresh: {t.failed}")
        if self._closed:
            return None
        return _Worker(self.python, self._worker_env(slot), self.preload, log)

    def _bring_up(self, slot: _Slot, log: Path | None, fresh: bool = False):
        """(a worker for `slot`, whether it said it is ready): forked where the template can, else
        fresh. A forked worker not ready within fork_ready_s stops the template's forking (what
        it forks does not work here), and a fresh worker is started in its place."""
        for _ in range(2):
            try:
                w = self._new_worker(slot, log, fresh)
            except (OSError, ValueError):
                return None, False
            if w is None:
                return None, False
            with self.cond:
                closed = self._closed
                slot.pending.append(w)
            forked = isinstance(w, Forked)
            ok = not closed and w.wait_ready(self.fork_ready_s if forked else self.ready_timeout)
            with self.cond:
                if w in slot.pending:
                    slot.pending.remove(w)
            if ok or not forked or self._closed:
                return w, ok
            w.template.refuse(f"a worker forked from it was not ready within {self.fork_ready_s:g} s")
            self._note(f"warm workers start fresh: {w.template.failed}")
            threading.Thread(target=w.kill, args=(0.1,), daemon=True).start()
        return None, False

    def _start_async(self, slot: _Slot) -> None:
        """Start one worker for `slot` in the background: it becomes the slot's worker if the slot
        has none when it is ready, else its spare. Called with self.cond held."""
        slot.starting += 1
        fresh, self._first_fresh = self._first_fresh, False
        _trace("start", slot=self.slots.index(slot), fresh=fresh)

        def start():
            log = None
            if self.log_dir:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                log = self.log_dir / f"worker-gpu{slot.gpu}.log"
            w, ok = self._bring_up(slot, log, fresh)
            _trace("ready" if ok else "start failed", slot=self.slots.index(slot),
                   preload=(w.ready_info or {}).get("preload") if ok else None)
            with self.cond:
                slot.starting -= 1
                self.stats["worker_starts"] += 1
                # a slot of the same GPU left without a worker takes it first (its own start
                # is still on its way: it will be a spare)
                home = slot if slot.worker is None else next(
                    (s for s in self.slots if s.worker is None and s.gpu == slot.gpu and s.failed_starts < MAX_FAILED_STARTS),
                    slot)
                if ok and not self._closed and (home.worker is None or len(slot.spares) < slot.want):
                    if home.worker is None:
                        home.worker = w
                        if home.lost_at is not None:
                            self.stats["recovery_s"].append(round(time.monotonic() - home.lost_at, 3))
                            home.lost_at = None
                    else:
                        slot.spares.append(w)
                    slot.failed_starts = 0
                    w = None
                    if home is not slot:
                        self._fill(slot)
                elif not ok:
                    slot.failed_starts += 1
                    self.stats["failed_starts"] = self.stats.get("failed_starts", 0) + 1
                self.cond.notify_all()
            if w is not None:
                w.kill()

        threading.Thread(target=start, daemon=True).start()

    def _fill(self, slot: _Slot) -> None:
        """Keep the slot's worker and spare started (called with self.cond held)."""
        if self._closed or slot.failed_starts >= MAX_FAILED_STARTS:
            return
        wanted = (slot.worker is None) + max(0, slot.want - len(slot.spares))
        while slot.starting < wanted:
            self._start_async(slot)

    def _discard(self, slot: _Slot) -> _Worker | None:
        """Retire the slot's worker; its spare takes over at once. Called with self.cond held; the
        caller kills the returned worker once the lock is released (before the next run starts:
        a hung kernel must not spin beside the next one on the same GPU)."""
        w, slot.worker = slot.worker, None
        self.stats["worker_discards"] += 1
        self._drop_unusable()
        _trace("retire", slot=self.slots.index(slot), spares=[len(s.spares) for s in self.slots])
        slot.want = min(slot.want + 1, self.max_spares)   # a subject that hung once hangs again
        # a slot's spares serve the slots of its GPU too: hangs come in bursts on one slot (runs
        # made ahead of a search, a confirmation's re-runs) while another slot's spare sits idle
        donor = slot if slot.spares else next((s for s in self.slots if s.spares and s.gpu == slot.gpu), None)
        if donor is not None:
            slot.worker = donor.spares.pop(0)
            self.stats["spare_promotions"] += 1
            self.stats["recovery_s"].append(0.0)
            if donor is not slot:
                self._fill(donor)
        else:
            slot.lost_at = time.monotonic()
        self._fill(slot)
        return w

    def _drop_unusable(self) -> None:
        """Take the spares that died while they waited (their template was killed, say) out of
        every slot, and end them in the background. Called with self.cond held."""
        dead = []
        for s in self.slots:
            dead += [w for w in s.spares if not w.usable()]
            s.spares = [w for w in s.spares if w not in dead]
        if dead:
            threading.Thread(target=lambda: [w.kill(0.1) for w in dead], daemon=True).start()

    def _retire(self, slot: _Slot, grace_s: float = 0.5) -> None:
        with self.cond:
            old = self._discard(slot)
        if old is not None:
            old.kill(grace_s)

    def start(self, wait: bool = True) -> WorkerPool:
        tmpfiles.sweep()    # what a SIGKILLed bisectk left in the temp directory (once per process)
        with self.cond:
            for s in self.slots:
                self._fill(s)
            if wait:
                self.cond.wait_for(lambda: all(s.worker is not None or s.failed_starts >= MAX_FAILED_STARTS
                                               for s in self.slots), timeout=self.ready_timeout + 5)
        return self

    def close(self) -> None:
        """Close the workers; a spare still importing is killed, not waited for."""
        with self.cond:
            self._closed = True
            busy = [s.worker for s in self.slots if s.busy and s.worker is not None]
            workers = [w for s in self.slots for w in (s.worker, *s.spares) if w is not None and w not in busy]
            starting = [w for s in self.slots for w in s.pending]
            for s in self.slots:
                s.worker, s.spares = None, []
        for w in busy + starting:
            w.kill(0.1)   # mid-run (Ctrl-C) or still importing: not waited for
        for w in workers:  # all asked at once: each exit tears down a CUDA context
            w.ask_exit()
        # a worker's own exit (torch's teardown) takes most of a second: a short wait, then the kill
        # (Ctrl-C must come back within a second, and there is nothing a worker must save)
        deadline = time.monotonic() + CLOSE_WAIT_S
        for w in workers:
            w.close(deadline, grace_s=0.1)
        with self._templates_lock:
            templates = [t for t in self.templates.values() if t is not None]
            self.templates = {}
        for t in templates:     # a start waiting for one's imports gives up
            t.kill()
        with self.cond:
            self.cond.wait_for(lambda: all(s.starting == 0 for s in self.slots), timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- running -------------------------------------------------------------------------------
    def warm_capable(self, argv: list[str], env, cwd=None) -> bool:
        return _python_script(argv) and self._ours(argv[0], env, cwd) and self._env_allows(env)

    def time_alike(self, jobs) -> None:
        """SLOW is judged on wall time: a run that goes cold is timed with its interpreter's start and
        imports, a warm one without them. Where `jobs` ((argv, env, cwd): the configurations the
        command may run) would go both ways, every run goes cold, so that all are timed as the
        baseline is; said once."""
        if self.goes_both_ways(jobs):
            self.all_cold = True
            self._note(ALL_COLD_NOTE)

    def goes_both_ways(self, jobs) -> bool:
        """Whether some of `jobs` ((argv, env, cwd)) would run warm here and others cold."""
        return {self.warm_capable(list(argv), env, cwd) for argv, env, cwd in jobs} == {True, False}

    def _ours(self, program: str, env, cwd) -> bool:
        """Whether `program` is the workers' own Python (run/interpreter.py) in the run's environment."""
        return same_python(program, {**self.base_env, **(env or {})}, self.python, cwd)

    def _env_allows(self, env) -> bool:
        """Whether the run's environment leaves nothing a worker cannot give it."""
        return self._env_blocker(env) is None

    def _env_blocker(self, env) -> str | None:
        """The first variable of the run's environment a worker cannot give it (a process-level
        one set otherwise than the workers have it, but for a GPU pin of theirs), or None."""
        pinned = self._pinned(env)
        for k, v in (env or {}).items():
            if ((k.startswith(PROCESS_LEVEL_ENV) or k in STARTUP_LOCALE_ENV) and k not in WARM_HONOURS_ENV
                    and self.base_env.get(k) != v
                    and not (k == "CUDA_VISIBLE_DEVICES" and pinned is not None)):
                return k
        return None

    def _pinned(self, env) -> str | None:
        """The GPU a run is pinned to (its CUDA_VISIBLE_DEVICES, --gpus: engine/slots.py) when
        this pool has workers on it; their own CUDA_VISIBLE_DEVICES is that value (_worker_env),
        so the run is theirs to take. None: not pinned, or to a GPU no worker here has."""
        want = (env or {}).get("CUDA_VISIBLE_DEVICES")
        if want is None or not any(s.gpu is not None for s in self.slots):
            return None
        return want if any(str(s.gpu) == want for s in self.slots) else None

    def _acquire(self, urgent: int = 0, gpu: str | None = None) -> _Slot | None:
        """A free slot with a live worker, or None when no worker can be started (run cold).
        `urgent`: the good endpoint's run (2) and the bad endpoint's (1), begun with the search's
        first runs beside them before the pool's first workers are ready (Runner.hold): while
        one waits, the less urgent do not take a worker. `gpu`: only a worker on that GPU."""
        t0 = time.monotonic()
        slots = [s for s in self.slots if gpu is None or str(s.gpu) == gpu]
        with self.cond:
            self._urgent[gpu, urgent] += 1
            try:
                while True:
                    if all(s.failed_starts >= MAX_FAILED_STARTS for s in slots):
                        return None
                    for s in self.slots:
                        if not s.busy and s.worker is not None and not s.worker.usable():
                            old = self._discard(s)      # died while idle: its spare takes over
                            threading.Thread(target=old.kill, args=(0.1,), daemon=True).start()
                    # a more urgent run waiting for a worker this one could take goes first
                    first = max(k for (g, k), n in self._urgent.items()
                                if n and (g is None or gpu is None or g == gpu)) <= urgent
                    for s in slots:
                        if first and not s.busy and s.worker is not None:
                            s.busy = True
                            _trace("acquired", slot=self.slots.index(s), waited=round(time.monotonic() - t0, 3))
                            return s
                    for s in self.slots:
                        if not s.busy:
                            self._fill(s)
                    self.cond.wait(timeout=1.0)
            finally:
                self._urgent[gpu, urgent] -= 1
                if urgent:
                    self.cond.notify_all()

    def _release(self, slot: _Slot) -> None:
        with self.cond:
            slot.busy = False
            self.cond.notify_all()

    def run(self, job: Job, watch: Watch) -> RawRun:
        """Executor.run: the job's build first where its directory does not hold it, then the job
        in a warm worker (or cold when it cannot); never raises for the subject. A worker that
        refuses the run (not as fresh as after its preload) is retired and the next one asked."""
        return build_then_run(job, watch, self.builds, self._run_one)

    def alive(self) -> int:
        return self.width

    def spare_count(self) -> int:
        """Spares ready now, over every slot."""
        with self.cond:
            return sum(len(s.spares) for s in self.slots)

    def ready(self) -> int:
        """Runs that would find a worker now or at the next turn: the slots with a worker, and
        the spares that could replace one (a hang's worker is gone until a spare's preload is
        done: runs made ahead of a search should not queue for it)."""
        with self.cond:
            have = sum(s.worker is not None for s in self.slots) + sum(len(s.spares) for s in self.slots)
        return max(1, min(self.width, have))

    def _run_one(self, job: Job, watch: Watch) -> RawRun:
        # said once, of the subject, for which --warm was asked (a build step that is not a Python
        # script runs in a fresh process as it would without --warm: nothing to say)
        script = _python_script(job.argv)
        ours = script and self._ours(job.argv[0], job.env, job.cwd)      # asked once a run: a PATH search
        if job.argv and not job.building and script and not ours:
            self._note(f"--warm: {job.argv[0]} is not the Python the warm workers run ({self.python}), so its runs "
                       "go cold (a fresh process each): a worker would run the script in its own interpreter")
        elif job.argv and not job.building and not script:
            self._note(f"--warm: {' '.join([os.path.basename(job.argv[0]), *job.argv[1:2]])} is not `python SCRIPT.py`, "
                       "so its runs go cold (a fresh process each): a warm worker runs a Python script only")
        blocker = self._env_blocker(job.env) if ours else None
        if blocker and not job.building:
            self._note(f"--warm: runs that set {blocker} otherwise than the warm workers have it go cold (a fresh "
                       "process each): it is read when a process starts or a library is imported, before a run")
        if ours and blocker is None and not self.all_cold:
            for _ in range(MAX_REFUSALS):
                slot = self._acquire(job.urgent, self._pinned(job.env))
                if slot is None:
                    break
                try:
                    raw = self._run_on(slot, job, watch)
                finally:
                    self._release(slot)
                if raw is _COLD:
                    break           # no warm worker can run it: another would break the same way
                if raw is not None:
                    return raw
        self.stats["cold_runs"] += 1
        return run_process(job.argv, cwd=job.cwd, env={**self.base_env, **job.env}, log_dir=job.log_dir,
                           watch=watch, record_imports=job.record_imports, snapshot=job.snapshot)

    def _note(self, text: str) -> None:
        """Say something once (the same words are not repeated) to `on_note` (the session's events)."""
        with self.cond:
            if text in self._said:
                return
            self._said.add(text)
        if self.on_note is not None:
            try:
                self.on_note(text)
            except Exception:
                pass
