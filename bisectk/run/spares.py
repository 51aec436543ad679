"""Supervisors started ahead of their runs.

Every run starts under a supervisor of its own (run/supervise.py), a fresh `python -I -S`: about
20 ms before the subject can start, which was most of the gap between two runs of a cheap subject
(bench/scale_bench.py: a bisection's confirmation runs one configuration a dozen times). A spare is
that interpreter started while the previous run goes on: it has made itself a subreaper and waits
on its socket. The run that takes it passes its stdout and stderr pipes over the socket
(SCM_RIGHTS) and then the usual configuration, with the cwd the spare must change to; from there
on it is the same supervisor, watched the same way (process.Contained).

A spare serves again when its run ended by itself and left nothing running (supervise.py's
`reusable`; `give`): a quick subject run a dozen times pays one interpreter's start, not a dozen
(on this 2-core machine a run of `true` cost 24 ms, the spares' starts keeping pace with every
other run only). A run that hung, was interrupted, left a process behind or lost its supervisor
never hands it back: that supervisor exits as before.

Only `run_process` takes spares (stdin /dev/null, stdout and stderr to pipes, no other passed
descriptor); the warm workers and the Ray head start their supervisors directly. A spare that died
while it waited (a hostile subject may kill what it finds) is passed over, and a run whose spare
does not answer starts directly. Idle spares hold nothing of any run: bisectk's own output is not
theirs (they sit on /dev/null), so a caller reading bisectk's pipes never waits on them. They end
when bisectk closes their socket, at exit (`close`) or by dying: EOF, even after a SIGKILL.

Abstractions
------------
SUPERVISOR_ARGV -- how a supervisor starts: this directory's supervise.py imported, not run as a
                   script (a script is compiled afresh each time; a module's bytecode is cached).
Spares          -- the idle spares of this process: `take` one, `give` one back after its run,
                   `refill` to one more than the runs in flight, `pids` (tests), `close`.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from bisectk.procstat import stopped
from bisectk.run import supervise

SUPERVISOR = str(Path(supervise.__file__).resolve())
# the directory is appended, so the standard library still comes first
SUPERVISOR_ARGV = ("-I", "-S", "-c", "import sys; sys.path.append(%r); from supervise import main; main(sys.argv)"
                   % str(Path(SUPERVISOR).parent))
MAX_SPARES = 8


class Spares:
    """The idle spare supervisors of this process, each (Popen, bisectk's end of its socket)."""

    def __init__(self, limit: int = MAX_SPARES):
        self.limit = limit
        self._lock = threading.Lock()
        self._idle: list[tuple[subprocess.Popen, socket.socket]] = []
        self._owner = os.getpid()

    def take(self) -> tuple[subprocess.Popen, socket.socket] | None:
        """The oldest idle spare that is still alive (the likeliest to be ready), or None."""
        with self._lock:
            while self._idle:
                proc, sock = self._idle.pop()
                if proc.poll() is None and not stopped(proc.pid):
                    return proc, sock
                sock.close()
                proc.kill()         # a stopped one cannot take a run; SIGKILL ends it all the same
                proc.wait()
        return None

    def refill(self, running: int) -> None:
        """Keep one spare more than the runs in flight (at most the limit): called right after a
        run's subject has started, so a spare's own start (~30 ms on a 2-core machine) overlaps
        runs, and the one taken next has had two runs' time to get ready."""
        if os.getpid() != self._owner:
            return
        with self._lock:
            missing = min(running + 1, self.limit) - len(self._idle)
        for _ in range(min(missing, 2)):
            parent, child = socket.socketpair()
            try:
                proc = subprocess.Popen([sys.executable, *SUPERVISOR_ARGV, str(child.fileno()), "spare"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True,
                                        pass_fds=(child.fileno(),))
            except OSError:
                parent.close()
                return              # no spare: the next run starts its supervisor itself
            finally:
                child.close()
            with self._lock:
                self._idle.insert(0, (proc, parent))    # taken last: the oldest goes first

    def give(self, proc: subprocess.Popen, sock: socket.socket) -> None:
        """Take back a supervisor whose run ended by itself and left nothing (it said `reusable`):
        booted and idle, it is the readiest spare and is taken first. Past the limit, or in a
        process that does not own the spares (a fork), it is let go: EOF on its socket ends it."""
        with self._lock:
            if os.getpid() == self._owner and len(self._idle) < self.limit:
                self._idle.append((proc, sock))
                return
        sock.close()
        if os.getpid() == self._owner:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def pids(self) -> list[int]:
        with self._lock:
            return [proc.pid for proc, _ in self._idle]

    def close(self) -> None:
        """End every idle spare (EOF on its socket; killed if it does not go within a second)."""
        if os.getpid() != self._owner:
            return
        with self._lock:
            idle, self._idle = self._idle, []
        for proc, sock in idle:
            sock.close()
            if stopped(proc.pid):
                proc.kill()         # it cannot read its EOF
        for proc, _ in idle:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


SPARES = Spares()
atexit.register(SPARES.close)
