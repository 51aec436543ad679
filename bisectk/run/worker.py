"""Warm workers: run Python subject scripts in persistent processes that imported torch/cutlass once.

A cold process per configuration costs ~6 s on an H200, almost all of it `import torch` and
`import cutlass`; the kernel itself runs in microseconds.  A warm worker pays the imports once and
then runs each configuration's script in-process (`runpy.run_path` with a patched `sys.argv`).

Abstractions
------------
worker process  -- `python -m bisectk.run.worker --serve --reply-fd N`: started in its own process
                   session; preloads modules (torch, initialising CUDA, and cutlass); reads one JSON
                   request per line on stdin {argv, env, cwd, stdout_path, stderr_path}; runs the
                   script with fds 1 and 2 redirected into the request's files (so C-level output
                   such as device printf is captured too); replies one JSON line on the reply fd
                   {exit_code, duration_s, error, poisoned}.  `poisoned` is set when a CUDA
                   synchronize after the run fails (a sticky error the script swallowed).
WorkerPool      -- the parent side: one worker per GPU (CUDA_VISIBLE_DEVICES pinned), `run(argv,
                   cwd, env, timeout, log_dir) -> RawRun`, the same signature as
                   `bisectk.run.process.run_process`, so it plugs into `Runner(executor=...)`.
                   A request that cannot run in-process (not `python script.py ...`, or an env
                   override of a process-level variable such as CUDA_* / CUTE_DSL_*) falls back to a
                   fresh process.  After a timeout, a crash, a non-zero exit or a poisoned context
                   the worker's whole process tree is killed (psutil) and a fresh one is started in
                   the background: a poisoned CUDA context never serves another configuration.
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

try:  # the parent side; the worker process itself needs none of this
    from bisectk.run.process import RawRun, kill_tree, run_process, signal_name, start_contained
except Exception:  # pragma: no cover - worker started without bisectk's deps
    RawRun = None

# Environment variables read at import or CUDA-context creation: a request that changes one cannot
# be honoured by a warm process and runs cold instead.
PROCESS_LEVEL_ENV = ("CUDA_", "CUTE_DSL_", "CUTLASS_", "PYTHON", "LD_", "TORCH_", "NCCL_",
                     "NVIDIA_", "OMP_", "MKL_", "BISECTK_COMPILE_ONLY")
DEFAULT_PRELOAD = ("torch", "cutlass")
READY_TIMEOUT_S = 180.0
MAX_FAILED_STARTS = 3


# ---------------------------------------------------------------------------------------------
# worker process
# ---------------------------------------------------------------------------------------------

def _preload(names: list[str]) -> dict:
    info = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            __import__(name)
            if name == "torch":
                import torch
                if torch.cuda.is_available():
                    torch.cuda.init()
                    torch.zeros(1, device="cuda")  # create the context now, not in run 1
                    info["cuda"] = torch.cuda.get_device_name()
            if name == "cutlass":
                import cutlass.cute  # noqa: F401
            info[name] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # a missing package is the script's problem, not the worker's
            info[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
    return info


def _cuda_healthy() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return True
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception:
        return False
    return True


def _run_request(req: dict) -> dict:
    import gc
    import runpy
    import traceback

    argv = req["argv"]
    script = os.path.abspath(os.path.join(req.get("cwd") or os.getcwd(), argv[0]))
    saved = {"cwd": os.getcwd(), "argv": sys.argv[:], "path": sys.path[:],
             "env": dict(os.environ), "stdout": sys.stdout, "stderr": sys.stderr}
    fd_in, fd_out, fd_err = os.dup(0), os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    f_out = open(req["stdout_path"], "wb", buffering=0)
    f_err = open(req["stderr_path"], "wb", buffering=0)
    code, error = 0, ""
    t0 = time.perf_counter()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(devnull, 0)  # the script must not eat the worker's requests
        os.dup2(f_out.fileno(), 1)
        os.dup2(f_err.fileno(), 2)
        sys.stdout = open(1, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        if req.get("cwd"):
            os.chdir(req["cwd"])
        os.environ.update(req.get("env") or {})
        sys.argv = [script, *argv[1:]]
        sys.path.insert(0, os.path.dirname(script))
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            c = exc.code
            if c is None:
                code = 0
            elif isinstance(c, int):
                code = c
            else:
                print(c, file=sys.stderr)
                code = 1
        except BaseException as exc:  # what the interpreter would print before exiting 1
            traceback.print_exc()
            code, error = 1, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        try:  # C stdio buffers (device printf lands there)
            import ctypes
            ctypes.CDLL(None).fflush(None)
        except Exception:
            pass
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        for fd in (fd_in, fd_out, fd_err, devnull):
            os.close(fd)
        f_out.close()
        f_err.close()
        sys.stdout, sys.stderr = saved["stdout"], saved["stderr"]
        os.chdir(saved["cwd"])
        sys.argv = saved["argv"]
        sys.path[:] = saved["path"]
        os.environ.clear()
        os.environ.update(saved["env"])
    duration = time.perf_counter() - t0
    gc.collect()
    poisoned = not _cuda_healthy()
    return {"exit_code": code, "duration_s": duration, "error": error, "poisoned": poisoned}


def serve(reply_fd: int, preload: list[str]) -> int:
    reply = os.fdopen(reply_fd, "w", buffering=1)
    info = _preload(preload)
    reply.write(json.dumps({"ready": True, "pid": os.getpid(), "preload": info}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "exit":
            break
        try:
            rep = _run_request(req)
        except BaseException as exc:  # the worker's own machinery failed: report, then die
            rep = {"exit_code": None, "duration_s": 0.0, "error": f"worker: {exc!r}"[:500],
                   "poisoned": True}
        reply.write(json.dumps(rep) + "\n")
        if rep.get("poisoned"):
            break
    return 0


# ---------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------

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
        self.env = env
        self.runs = 0
        self.ready_info: dict | None = None
        self.started_at = time.monotonic()

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
        except EOFError:
            return False
        if msg and msg.get("ready"):
            self.ready_info = msg
            return True
        return False

    def send(self, req: dict) -> None:
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        kill_tree(self.proc.pid, grace_s=0.5)
        self.contained.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin,):
            try:
                f.close()
            except Exception:
                pass
        try:
            os.close(self.reply_fd)
        except OSError:
            pass
        if self.log is not subprocess.DEVNULL:
            self.log.close()

    def close(self) -> None:
        try:
            self.send({"op": "exit"})
            self.proc.wait(timeout=5)
        except Exception:
            pass
        self.kill()


class _Slot:
    """A GPU's place in the pool: its current worker (or one being started)."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.worker: _Worker | None = None
        self.starting: threading.Thread | None = None
        self.busy = False
        self.failed_starts = 0  # consecutive; after MAX_FAILED_STARTS the pool runs cold


class WorkerPool:
    """Warm workers, one per GPU; `run` has `run_process`'s signature and returns a RawRun.

        with WorkerPool(gpus=[0, 1]) as pool:
            raw = pool.run([sys.executable, "kernels/cutedsl/ws_pipeline.py", "--stages", "2"],
                           cwd=root, timeout=60)

    `gpus=None` (or []) makes one worker that inherits the environment as it is (CPU use, tests).
    """

    def __init__(self, gpus=None, *, python: str | None = None, env: dict[str, str] | None = None,
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, max_runs: int = 200,
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
        self.ready_timeout = ready_timeout
        self.log_dir = Path(log_dir) if log_dir else None
        self.slots = [_Slot(g) for g in (list(gpus) if gpus else [None])]
        self.cond = threading.Condition()
        self.stats = {"warm_runs": 0, "cold_runs": 0, "worker_starts": 0, "worker_discards": 0}
        self._closed = False
        if eager:
            for s in self.slots:
                self._start_async(s)

    # -- lifecycle -----------------------------------------------------------------------------
    def _worker_env(self, slot: _Slot) -> dict[str, str]:
        env = dict(self.base_env)
        if slot.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(slot.gpu)
        return env

    def _start_async(self, slot: _Slot) -> None:
        def start():
            log = None
            if self.log_dir:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                log = self.log_dir / f"worker-gpu{slot.gpu}.log"
            w = _Worker(self.python, self._worker_env(slot), self.preload, log)
            ok = w.wait_ready(self.ready_timeout)
            with self.cond:
                self.stats["worker_starts"] += 1
                if ok and not self._closed:
                    slot.worker = w
                    slot.failed_starts = 0
                else:
                    if not ok:
                        slot.failed_starts += 1
                        self.stats["failed_starts"] = self.stats.get("failed_starts", 0) + 1
                    w.kill()
                slot.starting = None
                self.cond.notify_all()

        t = threading.Thread(target=start, daemon=True)
        slot.starting = t
        t.start()

    def _discard(self, slot: _Slot) -> None:
        w, slot.worker = slot.worker, None
        self.stats["worker_discards"] += 1
        if w is not None:
            w.kill()
        if not self._closed:
            self._start_async(slot)  # replace it now, so the next request finds it warm

    def start(self, wait: bool = True) -> "WorkerPool":
        with self.cond:
            for s in self.slots:
                if s.worker is None and s.starting is None:
                    self._start_async(s)
            if wait:
                self.cond.wait_for(lambda: all(s.starting is None for s in self.slots),
                                   timeout=self.ready_timeout + 5)
        return self

    def close(self) -> None:
        with self.cond:
            self._closed = True
            slots = list(self.slots)
        for s in slots:
            if s.starting is not None:
                s.starting.join(timeout=self.ready_timeout + 5)
            if s.worker is not None:
                s.worker.close()
                s.worker = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

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
                for s in self.slots:  # a dead or missing worker: (re)start it and wait
                    if (not s.busy and s.worker is None and s.starting is None
                            and s.failed_starts < MAX_FAILED_STARTS):
                        self._start_async(s)
                self.cond.wait(timeout=1.0)

    def _release(self, slot: _Slot) -> None:
        with self.cond:
            slot.busy = False
            self.cond.notify_all()

    def run(self, argv: list[str], *, cwd: str | os.PathLike | None = None,
            env: dict[str, str] | None = None, timeout: float | None = None,
            log_dir: Path | None = None, tail_bytes: int = 64 * 1024,
            base_env: dict[str, str] | None = None) -> "RawRun":
        """Run `argv` in a warm worker (or cold when it cannot); never raises for the subject.
        A run that brings its own whole environment (`base_env`) always runs cold."""
        if base_env is not None or not self.warm_capable(argv, env):
            self.stats["cold_runs"] += 1
            return run_process(argv, cwd=cwd, env={**(base_env if base_env is not None else self.base_env),
                                                   **(env or {})}, timeout=timeout, log_dir=log_dir,
                               tail_bytes=tail_bytes)
        slot = self._acquire()
        if slot is None:  # workers cannot start here: behave like run_process
            self.stats["cold_runs"] += 1
            return run_process(argv, cwd=cwd, env={**self.base_env, **(env or {})}, timeout=timeout,
                               log_dir=log_dir, tail_bytes=tail_bytes)
        try:
            return self._run_on(slot, argv, cwd, env, timeout, log_dir, tail_bytes)
        finally:
            self._release(slot)

    __call__ = run

    def _run_on(self, slot, argv, cwd, env, timeout, log_dir, tail_bytes) -> "RawRun":
        w = slot.worker
        if log_dir:
            log_dir = Path(log_dir)
            log_dir.mkdir(parents=True, exist_ok=True)
            tmp = None
            out_p, err_p = log_dir / "stdout.log", log_dir / "stderr.log"
        else:
            tmp = tempfile.mkdtemp(prefix="bisectk-warm-")
            out_p, err_p = Path(tmp) / "stdout.log", Path(tmp) / "stderr.log"
        req = {"argv": list(argv[1:]), "env": dict(env or {}),
               "cwd": str(Path(cwd).resolve()) if cwd else os.getcwd(),
               "stdout_path": str(out_p), "stderr_path": str(err_p)}
        t0 = time.monotonic()
        died = False
        rep = None
        try:
            w.send(req)
            rep = w.read_line(timeout)
        except (BrokenPipeError, OSError, EOFError):
            died = True
        duration = time.monotonic() - t0
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
        if rep is None:
            if not died:  # no reply in time: a hang (or a worker stuck in its own machinery)
                self._discard(slot)
                return RawRun(started=True, timed_out=True, duration_s=duration,
                              stdout=stdout, stderr=stderr)
            try:
                rc = w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = -9
            self._discard(slot)  # the worker died under the script (segfault, os._exit, abort)
            return RawRun(started=True, exit_code=None if rc < 0 else rc, signal=signal_name(rc),
                          duration_s=duration, stdout=stdout, stderr=stderr,
                          error="" if rc < 0 else "the warm worker exited during the run")
        w.runs += 1
        code = rep.get("exit_code")
        if code != 0 or rep.get("poisoned") or w.runs >= self.max_runs:
            self._discard(slot)  # never let a possibly poisoned CUDA context serve again
        return RawRun(started=True, exit_code=code, signal=None, timed_out=False,
                      duration_s=duration, stdout=stdout, stderr=stderr,
                      error="CUDA context poisoned after the run" if rep.get("poisoned") else "")


def _tail(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bisectk.run.worker")
    ap.add_argument("--serve", action="store_true", required=True)
    ap.add_argument("--reply-fd", type=int, required=True)
    ap.add_argument("--preload", default=",".join(DEFAULT_PRELOAD))
    ns = ap.parse_args(argv)
    return serve(ns.reply_fd, [p for p in ns.preload.split(",") if p])


if __name__ == "__main__":
    sys.exit(main())
