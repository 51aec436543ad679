"""Warm workers, parent side: one fresh worker process, and the slot of the pool it serves.

Abstractions
------------
_Worker    -- one live worker process, started under a supervisor (so it dies with bisectk), its
              reply pipe and its request stream (run/forked.py has the forked one).
_Slot      -- a place in the pool (a GPU, or a CPU slot): the worker serving it, its hot spares and
              the starts in flight. How many spares it keeps: `default_spares`, and the pool
              (run/pool.py) says why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

from bisectk.procstat import psutil, stopped
from bisectk.run.forked import Replies, kill_alive
from bisectk.run.process import RUN_ID_ENV, SupervisorLost, death_words, kill_run, kill_tree, start_contained


def default_spares() -> tuple[int, int]:
    """(hot spares per slot, most spares after a retirement): (4, 5) where a GPU is visible (see
    _Slot), else (1, 1)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return 1, 1
    return (4, 5) if Path("/dev/nvidia0").exists() or Path("/dev/nvidiactl").exists() else (1, 1)


class _Worker(Replies):
    """One live worker process started fresh (parent-side handle); run/forked.py has the forked one."""

    def __init__(self, python: str, env: dict[str, str], preload: tuple[str, ...], log: Path | None):
        super().__init__()
        r, w = os.pipe()
        self.log = open(log, "ab") if log else subprocess.DEVNULL
        # the run id marks every process of this worker's tree, so one that escaped it (after its
        # supervisor was killed) is still found (process.kill_run)
        self.run_id = uuid.uuid4().hex
        try:  # under a supervisor: the worker's tree dies with bisectk, even on SIGKILL
            self.contained = start_contained(
                # -P: the current directory is not put on sys.path, so the worker imports the pool's
                # own bisectk (PYTHONPATH), never a checkout that happens to be the cwd
                [python, "-P", "-m", "bisectk.run.worker", "--serve", "--reply-fd", str(w),
                 "--preload", ",".join(preload)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log,
                env={**env, RUN_ID_ENV: self.run_id}, pass_fds=(w,), cwd=os.getcwd(), grace=0.5)
        finally:
            os.close(w)
        self.proc = self.contained.proc
        self.pid = self.contained.pid   # the worker itself (proc is its supervisor)
        self.tree_pid = self.proc.pid   # where a hang's snapshot reads the worker's tree
        self.reply_fd = r
        self._report: dict | None = None   # the supervisor's final report, once read (_reported)

    def send(self, req: dict) -> None:
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()

    def _reported(self) -> bool:
        """Whether the supervisor ended after its final report: then the worker itself ended (a run
        that crashed it, e.g. SIGSEGV) and the supervisor's exit only mirrors the worker's signal
        (run/supervise.py); one killed from outside ends without a report."""
        if self._report is None:
            try:
                self._report = self.contained.wait(time.monotonic() + 0.5) or {}
            except (TimeoutError, SupervisorLost, OSError, ValueError):   # no report, or the worker was closed
                self._report = {}
        return bool(self._report)

    def supervisor_lost(self) -> str:
        """Why this worker's containment is gone ('' while its supervisor is alive and running):
        a run may kill or stop the supervisor (it is the worker's parent)."""
        if self.proc.poll() is not None:
            if self._reported():
                return ""
            return f"the warm worker's supervisor {death_words(self.proc.returncode)}"
        return self.contained.stopped().replace("the run's supervisor", "the warm worker's supervisor")

    def usable(self) -> bool:
        """Alive, and it and its supervisor running (an idle spare may be killed too; an idle worker
        stopped from outside, a SIGSTOP or a debugger, would never answer: a run given to it was
        called a hang that never began)."""
        return self.proc.poll() is None and not self.contained.stopped() and not stopped(self.pid)

    def leftovers(self) -> int:
        """Kill what a run left running in the worker's tree (children of the worker, and orphans
        its supervisor adopted), as a fresh process's supervisor would after the run; how many."""
        try:
            sup = psutil.Process(self.proc.pid)
            return kill_alive([p for p in sup.children(recursive=True) if p.pid != self.pid])
        except psutil.Error:
            return 0

    def kill(self, grace_s: float = 0.5) -> None:
        """End the worker and everything of its tree now, whether its supervisor is alive or not."""
        try:
            os.kill(self.pid, signal.SIGCONT)
        except OSError:
            pass
        kill_tree(self.proc.pid, grace_s=grace_s)
        if self.proc.poll() is not None or self.contained.stopped():
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            kill_tree(self.pid, grace_s=0.0)
            kill_run(self.run_id)
        self.contained.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for closing in (lambda: self.proc.stdin.close(), self.close_reply):
            try:
                closing()
            except (OSError, ValueError):
                pass
        if self.log is not subprocess.DEVNULL:
            self.log.close()

    def _wait_exit(self, timeout: float) -> None:
        self.proc.wait(timeout=timeout)

    def returncode(self, timeout: float) -> int | None:
        """How the worker ended (its supervisor mirrors it); None if it has not within `timeout`."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


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
        self.want = 0                  # spares kept ready: the pool's base, raised by retirements
