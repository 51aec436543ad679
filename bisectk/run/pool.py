"""Warm workers, parent side: a pool of worker processes (run/worker.py), each with hot spares.

Abstractions
------------
_Worker    -- one live worker process, started under a supervisor (so it dies with bisectk), its
              reply pipe and its request stream.
_Slot      -- a place in the pool (a GPU, or a CPU slot): the worker serving it and its hot spares,
              started and warmed in the background. A worker killed by a hang, a crash, a non-zero
              exit or a poisoned context is replaced by a spare at once (no imports to wait for),
              and a new spare is started behind it. Where a GPU is visible a slot keeps two spares:
              a replacement there costs the imports and a CUDA context (~6 s on an H100), longer
              than a hung kernel takes to be called, so hangs that follow each other closely (the
              bad endpoint, then a failing hybrid) would otherwise wait for one.
WorkerPool -- `run(argv, cwd, env, timeout, log_dir, watch) -> RawRun`, the signature of
              `run_process`, so it plugs into `Runner(executor=...)`. A request that cannot run
              in-process (not `python script.py ...`, or an env override of a process-level
              variable such as CUDA_* / CUTE_DSL_*) runs in a fresh process instead. The watchdog
              follows the run's progress: the run's output files are read as they grow and their
              lines fed to the `watch` (run/progress.py), whose moving deadline ends a hang.
              `stats` counts warm and cold runs, worker starts and discards, and how long each
              slot went without a ready worker after a discard (`recovery_s`).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bisectk.run.process import LineFeed, RawRun, kill_tree, run_process, signal_name, start_contained

# Environment variables read at import or CUDA-context creation: a request that changes one cannot
# be honoured by a warm process and runs cold instead.
PROCESS_LEVEL_ENV = ("CUDA_", "CUTE_DSL_", "CUTLASS_", "PYTHON", "LD_", "TORCH_", "NCCL_",
                     "NVIDIA_", "OMP_", "MKL_", "BISECTK_COMPILE_ONLY")
DEFAULT_PRELOAD = ("torch", "cutlass")
READY_TIMEOUT_S = 180.0
MAX_FAILED_STARTS = 3
POLL_S = 0.05


def default_spares() -> int:
    """Hot spares per slot: 2 where a GPU is visible (see _Slot), else 1."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return 1
    return 2 if Path("/dev/nvidia0").exists() or Path("/dev/nvidiactl").exists() else 1


class _Worker:
    """One live worker process (parent-side handle)."""

    def __init__(self, python: str, env: dict[str, str], preload: tuple[str, ...], log: Path | None):
        r, w = os.pipe()
        self.log = open(log, "ab") if log else subprocess.DEVNULL
        try:  # under a supervisor: the worker's tree dies with bisectk, even on SIGKILL
            self.contained = start_contained(
                [python, "-m", "bisectk.run.worker", "--serve", "--reply-fd", str(w),
                 "--preload", ",".join(preload)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log, env=env,
                pass_fds=(w,), cwd=os.getcwd(), grace=0.5)
        finally:
            os.close(w)
        self.proc = self.contained.proc
        self.reply_fd = r
        self.buf = b""
        self.runs = 0
        self.ready_info: dict | None = None
        self.exit_asked = False

    def read_line(self, timeout: float | None) -> dict | None:
        """The next JSON line from the reply pipe; None on timeout; EOFError when the worker died."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.reply_fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.reply_fd, 65536)
            if not chunk:
                raise EOFError("the worker closed its reply pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def wait_ready(self, timeout: float) -> bool:
        try:
            msg = self.read_line(timeout)
        except (EOFError, OSError, ValueError):   # died, or killed by close() while importing
            return False
        if msg and msg.get("ready"):
            self.ready_info = msg
            return True
        return False

    def send(self, req: dict) -> None:
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        kill_tree(self.proc.pid, grace_s=0.5)
        self.contained.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for closing in (lambda: self.proc.stdin.close(), lambda: os.close(self.reply_fd)):
            try:
                closing()
            except (OSError, ValueError):
                pass
        if self.log is not subprocess.DEVNULL:
            self.log.close()

    def ask_exit(self) -> None:
        """Ask the worker to exit (once: closing a pool asks all its workers before waiting)."""
        if self.exit_asked:
            return
        self.exit_asked = True
        try:
            self.send({"op": "exit"})
        except Exception:
            pass

    def close(self, deadline: float | None = None) -> None:
        """Ask the worker to exit, wait for it until `deadline` (default: 5 s from now), then
        kill whatever is left of its tree."""
        self.ask_exit()
        try:
            self.proc.wait(timeout=max(0.0, (deadline or time.monotonic() + 5) - time.monotonic()))
        except Exception:
            pass
        self.kill()


class _Slot:
    """A place in the pool: its worker, its hot spares, and the threads starting them."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.worker: _Worker | None = None
        self.spares: list[_Worker] = []   # ready, oldest first
        self.starting = 0              # starts in flight (worker or spare)
        self.pending: list[_Worker] = []   # started, not yet ready (closing kills them at once)
        self.busy = False
        self.failed_starts = 0         # consecutive; after MAX_FAILED_STARTS the slot runs cold
        self.lost_at: float | None = None   # when the slot lost its worker with no spare ready


class WorkerPool:
    """Warm workers, one per GPU (or per CPU slot), each with hot spares.

        with WorkerPool(gpus=[0, 1]) as pool:
            raw = pool.run([sys.executable, "kernels/cutedsl/ws_pipeline.py", "--stages", "2"],
                           cwd=root, timeout=60)

    `gpus=None` (or []) makes `slots` workers (default 1) that inherit the environment as it is
    (CPU use, tests). `spares`: hot spares per slot (True: the default, 2 where a GPU is
    visible, else 1; False or 0: none).
    """

    def __init__(self, gpus=None, *, slots: int = 1, python: str | None = None, env: dict[str, str] | None = None,
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, max_runs: int = 200, spares: bool | int = True,
                 ready_timeout: float = READY_TIMEOUT_S, log_dir: str | os.PathLike | None = None,
                 eager: bool = True):
        self.python = python or sys.executable
        self.base_env = {**os.environ, **(env or {})}
        root = str(Path(__file__).resolve().parents[2])
        pp = self.base_env.get("PYTHONPATH", "")
        if root not in pp.split(os.pathsep):  # the worker imports bisectk.run.worker
            self.base_env["PYTHONPATH"] = os.pathsep.join([root, pp]) if pp else root
        self.preload = tuple(preload)
        self.max_runs = max_runs
        self.spares = default_spares() if spares is True else int(spares)
        self.ready_timeout = ready_timeout
        self.log_dir = Path(log_dir) if log_dir else None
        self.slots = [_Slot(g) for g in (list(gpus) if gpus else [None] * max(1, slots))]
        self.cond = threading.Condition()
        self.stats = {"warm_runs": 0, "cold_runs": 0, "worker_starts": 0, "worker_discards": 0,
                      "spare_promotions": 0, "recovery_s": []}
        self._closed = False
        if eager:
            self.start(wait=False)

    # -- lifecycle -----------------------------------------------------------------------------
    def _worker_env(self, slot: _Slot) -> dict[str, str]:
        env = dict(self.base_env)
        if slot.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(slot.gpu)
        return env

    def _start_async(self, slot: _Slot) -> None:
        """Start one worker for `slot` in the background: it becomes the slot's worker if the slot
        has none when it is ready, else its spare. Called with self.cond held."""
        slot.starting += 1

        def start():
            log = None
            if self.log_dir:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                log = self.log_dir / f"worker-gpu{slot.gpu}.log"
            try:
                w = _Worker(self.python, self._worker_env(slot), self.preload, log)
            except (OSError, ValueError):
                w = None
            with self.cond:
                closed = self._closed
                if w is not None:
                    slot.pending.append(w)
            ok = w is not None and not closed and w.wait_ready(self.ready_timeout)
            with self.cond:
                if w in slot.pending:
                    slot.pending.remove(w)
                slot.starting -= 1
                self.stats["worker_starts"] += 1
                if ok and not self._closed and (slot.worker is None or len(slot.spares) < self.spares):
                    if slot.worker is None:
                        slot.worker = w
                        if slot.lost_at is not None:
                            self.stats["recovery_s"].append(round(time.monotonic() - slot.lost_at, 3))
                            slot.lost_at = None
                    else:
                        slot.spares.append(w)
                    slot.failed_starts = 0
                    w = None
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
        wanted = (slot.worker is None) + max(0, self.spares - len(slot.spares))
        while slot.starting < wanted:
            self._start_async(slot)

    def _discard(self, slot: _Slot) -> _Worker | None:
        """Retire the slot's worker; its spare takes over at once. Called with self.cond held; the
        caller kills the returned worker once the lock is released (before the next run starts:
        a hung kernel must not spin beside the next one on the same GPU)."""
        w, slot.worker = slot.worker, None
        self.stats["worker_discards"] += 1
        if slot.spares:
            slot.worker = slot.spares.pop(0)
            self.stats["spare_promotions"] += 1
            self.stats["recovery_s"].append(0.0)
        else:
            slot.lost_at = time.monotonic()
        self._fill(slot)
        return w

    def _retire(self, slot: _Slot) -> None:
        with self.cond:
            old = self._discard(slot)
        if old is not None:
            old.kill()

    def start(self, wait: bool = True) -> WorkerPool:
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
            workers = [w for s in self.slots for w in (s.worker, *s.spares) if w is not None]
            starting = [w for s in self.slots for w in s.pending]
            for s in self.slots:
                s.worker, s.spares = None, []
        for w in starting:
            w.kill()      # its start thread sees the pipe close and gives up
        for w in workers:  # all asked at once: each exit tears down a CUDA context
            w.ask_exit()
        deadline = time.monotonic() + 5
        for w in workers:
            w.close(deadline)
        with self.cond:
            self.cond.wait_for(lambda: all(s.starting == 0 for s in self.slots), timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- running -------------------------------------------------------------------------------
    def warm_capable(self, argv: list[str], env: dict[str, str] | None) -> bool:
        if len(argv) < 2 or not argv[1].endswith(".py"):
            return False
        exe = os.path.basename(argv[0])
        if not (exe.startswith("python") or os.path.realpath(argv[0]) == os.path.realpath(self.python)):
            return False
        for k, v in (env or {}).items():
            if k.startswith(PROCESS_LEVEL_ENV) and self.base_env.get(k) != v:
                return False
        return True

    def _acquire(self) -> _Slot | None:
        """A free slot with a live worker, or None when no worker can be started (run cold)."""
        with self.cond:
            while True:
                if all(s.failed_starts >= MAX_FAILED_STARTS for s in self.slots):
                    return None
                for s in self.slots:
                    if not s.busy and s.worker is not None:
                        s.busy = True
                        return s
                for s in self.slots:
                    if not s.busy:
                        self._fill(s)
                self.cond.wait(timeout=1.0)

    def _release(self, slot: _Slot) -> None:
        with self.cond:
            slot.busy = False
            self.cond.notify_all()

    def run(self, argv: list[str], *, cwd: str | os.PathLike | None = None,
            env: dict[str, str] | None = None, timeout: float | None = None,
            log_dir: Path | None = None, tail_bytes: int = 64 * 1024,
            base_env: dict[str, str] | None = None, watch=None, snapshot=None) -> RawRun:
        """Run `argv` in a warm worker (or cold when it cannot); never raises for the subject.
        A run that brings its own whole environment (`base_env`) always runs cold."""
        if base_env is None and self.warm_capable(argv, env):
            slot = self._acquire()
            if slot is not None:
                try:
                    return self._run_on(slot, argv, cwd, env, timeout, log_dir, tail_bytes, watch, snapshot)
                finally:
                    self._release(slot)
        self.stats["cold_runs"] += 1
        return run_process(argv, cwd=cwd, env={**(base_env if base_env is not None else self.base_env), **(env or {})},
                           timeout=timeout, log_dir=log_dir, tail_bytes=tail_bytes, watch=watch, snapshot=snapshot)

    __call__ = run

    def _run_on(self, slot: _Slot, argv, cwd, env, timeout, log_dir, tail_bytes, watch, snapshot=None) -> RawRun:
        w = slot.worker
        tmp = None
        if log_dir:
            log_dir = Path(log_dir)
            log_dir.mkdir(parents=True, exist_ok=True)
            out_p, err_p = log_dir / "stdout.log", log_dir / "stderr.log"
        else:
            tmp = tempfile.mkdtemp(prefix="bisectk-warm-")
            out_p, err_p = Path(tmp) / "stdout.log", Path(tmp) / "stderr.log"
        req = {"argv": list(argv[1:]), "env": dict(env or {}),
               "cwd": str(Path(cwd).resolve()) if cwd else os.getcwd(),
               "stdout_path": str(out_p), "stderr_path": str(err_p)}
        follow = _Follow([out_p, err_p], watch)
        t0 = time.monotonic()
        died, rep = False, None
        deadline = getattr(watch, "deadline", None)
        try:
            w.send(req)
            while rep is None:
                follow.poll(time.monotonic() - t0)
                due = deadline() if deadline else timeout
                left = None if due is None else due - (time.monotonic() - t0)
                if left is not None and left <= 0:
                    break
                rep = w.read_line(POLL_S if left is None else min(POLL_S, left))
        except (BrokenPipeError, OSError, EOFError):
            died = True
        duration = time.monotonic() - t0
        # a hang: read where the worker waits before it is retired (the watchdog's decision stands)
        stuck = taken(snapshot, w.proc.pid, duration) if rep is None and not died else None
        follow.poll(duration)
        self.stats["warm_runs"] += 1
        stdout, stderr = _tail(out_p, tail_bytes), _tail(err_p, tail_bytes)
        if tmp is not None:
            for p in (out_p, err_p):
                try:
                    p.unlink()
                except OSError:
                    pass
            try:
                os.rmdir(tmp)
            except OSError:
                pass
        timeline = watch.timeline(duration).to_list() if watch is not None else None
        if rep is None:
            if not died:  # no reply in time: a hang (or a worker stuck in its own machinery)
                self._retire(slot)
                return RawRun(started=True, timed_out=True, duration_s=duration, stdout=stdout, stderr=stderr,
                              timeline=timeline, stalled=watch.where(duration) if hasattr(watch, "where") else "",
                              stuck=stuck)
            try:
                rc = w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = -9
            self._retire(slot)  # the worker died under the script (segfault, os._exit, abort)
            return RawRun(started=True, exit_code=None if rc < 0 else rc, signal=signal_name(rc),
                          duration_s=duration, stdout=stdout, stderr=stderr, timeline=timeline,
                          error="" if rc < 0 else "the warm worker exited during the run")
        w.runs += 1
        code = rep.get("exit_code")
        poisoned = rep.get("poisoned") or ""
        if code != 0 or poisoned or rep.get("retire") or w.runs >= self.max_runs:
            self._retire(slot)  # never let a possibly poisoned CUDA context serve again
        return RawRun(started=True, exit_code=code, signal=None, timed_out=False, duration_s=duration,
                      stdout=stdout, stderr=stderr, poisoned=poisoned, timeline=timeline)


class _Follow:
    """Reads the run's output files as they grow and feeds complete lines to the watch."""

    def __init__(self, paths: list[Path], watch):
        self.paths, self.watch = paths, watch
        self.offsets = [0] * len(paths)
        self.lines = [LineFeed(watch.line) for _ in paths] if watch is not None else []

    def poll(self, t: float) -> None:
        if self.watch is None:
            return
        for i, p in enumerate(self.paths):
            try:
                with open(p, "rb") as f:
                    f.seek(self.offsets[i])
                    data = f.read(1 << 20)
            except OSError:
                continue
            if not data:
                continue
            self.offsets[i] += len(data)
            self.lines[i].feed(data, t)


def _tail(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
