"""Run one command in an isolated process session with a watchdog.

Abstractions
------------
RawRun       -- what happened to one process: exit code or signal, timed out or not, captured
                output tails, wall time. No judgement: classification is `run/classify.py`'s job.
run_process  -- start argv (never through a shell) in a new session, feed nothing on stdin,
                capture stdout/stderr into bounded buffers (and optionally full logs on disk),
                and on timeout end the whole process tree: SIGTERM, a grace period, SIGKILL.

Why a new session plus a psutil walk: a subject is often `sh -> python -> compiler`; killing only
the direct child leaves the grandchildren spinning on a GPU. The process group catches the tree
while it stays in the group; psutil catches children that made their own group or session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import psutil

TAIL_BYTES = 64 * 1024
GRACE_S = 1.0


@dataclass
class RawRun:
    started: bool
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    error: str = ""


class _Tail:
    """Keeps the last `limit` bytes of a stream, and optionally writes everything to a file."""

    def __init__(self, limit: int, sink: Path | None):
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.limit = limit
        self.sink = open(sink, "wb") if sink else None

    def feed(self, stream) -> None:
        try:
            for chunk in iter(lambda: stream.read1(65536), b""):
                if self.sink:
                    self.sink.write(chunk)
                self.chunks.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.chunks[0]) >= self.limit and len(self.chunks) > 1:
                    self.size -= len(self.chunks.popleft())
        finally:
            if self.sink:
                self.sink.close()

    def text(self) -> str:
        data = b"".join(self.chunks)[-self.limit:]
        return data.decode("utf-8", errors="replace")


def kill_tree(pid: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM the process tree rooted at `pid` (and its process group), then SIGKILL survivors."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)  # the session leader's pid is its group id
        except (ProcessLookupError, PermissionError):
            pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        procs = _wait_gone(procs, grace_s if sig == signal.SIGTERM else 2.0)
        if not procs:
            break


def _alive(p: psutil.Process) -> bool:
    # A zombie has finished; whether its parent (or init) has reaped it yet is not our business.
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while True:
        procs = [p for p in procs if _alive(p)]
        if not procs or time.monotonic() >= deadline:
            return procs
        time.sleep(0.01)


def signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_process(argv: list[str], *, cwd: str | os.PathLike | None = None,
                env: dict[str, str] | None = None, timeout: float | None = None,
                log_dir: Path | None = None, tail_bytes: int = TAIL_BYTES,
                base_env: dict[str, str] | None = None) -> RawRun:
    """Run argv to completion or timeout. Never raises for the subject's behaviour.

    The child's environment is `base_env` (default: this process's) updated with `env`."""
    full_env = {**(os.environ if base_env is None else base_env), **(env or {})}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except (OSError, ValueError) as exc:
        return RawRun(started=False, error=f"cannot start {argv[0]!r}: {exc.strerror or exc}")
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    tails = [_Tail(tail_bytes, log_dir / name if log_dir else None) for name in ("stdout.log", "stderr.log")]
    readers = [threading.Thread(target=t.feed, args=(s,), daemon=True)
               for t, s in zip(tails, (proc.stdout, proc.stderr))]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        # Ctrl-C or an error in bisectk itself: never leave the subject behind.
        kill_tree(proc.pid)
        proc.wait()
        raise
    duration = time.monotonic() - start
    # Even after a clean exit, grandchildren may linger in the group holding the pipes open.
    kill_tree(proc.pid, grace_s=0.2 if not timed_out else GRACE_S)
    proc.wait()
    for r in readers:
        r.join(timeout=5)
    return RawRun(started=True, exit_code=None if timed_out else proc.returncode,
                  signal=None if timed_out else signal_name(proc.returncode),
                  timed_out=timed_out, duration_s=duration,
                  stdout=tails[0].text(), stderr=tails[1].text())
