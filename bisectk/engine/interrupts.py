"""Ctrl-C, SIGTERM and SIGHUP during a command: they stop runs at once, never the writing of a result.

Abstractions
------------
defer    -- from the process's first line (__main__) until `install`: a signal is noted and raised
            at `install`, never inside the start's imports (see there); a third leaves at once.
install  -- at the start of every command (cli.py): SIGTERM and SIGHUP (the terminal closed, the
            ssh session dropped) raise KeyboardInterrupt, as Ctrl-C does, so that each ends the
            subjects, removes temporary files and worktrees and keeps the ledger as Ctrl-C leaves
            it, instead of killing bisectk where it stands. Never inside importlib's own code,
            where it would leave the import lock held (`_in_import`): the signal is sent again
            20 ms later. A signal the command was started with
            ignored (`nohup` ignores SIGHUP; a shell ignores SIGINT and SIGQUIT in a background
            job) stays ignored, here and in `held`, as POSIX asks of programs that catch them.
hung_up  -- whether a SIGHUP arrived: the command then exits HANGUP (129, 128 + SIGHUP, what a
            shell reports for a process it killed, and git's), whatever it printed. On its arrival
            stdout and stderr, where they are a terminal that hung up, are pointed at /dev/null:
            what is printed on the way out is dropped instead of failing (EIO).
held     -- a context (the command's search and its reporting) in which SIGINT, SIGTERM and SIGHUP are
            held back everywhere except inside a run: one that arrives while bisectk builds a
            record, stores it or prints it is kept pending instead of tearing the half-written
            result away. A second signal while one is pending is obeyed at once (the way out of
            anything that hangs), unless it is a SIGHUP: a hangup may be said twice (the kernel's
            and the shell's) and is nobody insisting.
live     -- the part that stays interruptible: a run (Trials.observe, engine/oracle.py). A signal during it is a
            KeyboardInterrupt there, as without `held`; one held back is raised on entering the
            next run, where the search turns it into its best result so far (SearchStopped).
waited   -- a Future's result waited for in slices on the main thread, so that a signal the kernel
            gave another thread is acted on within 0.1 s.
late     -- whether a signal is still pending: it arrived after the last run, while the result
            was being built or written; the caller prints that result and exits as interrupted.
leaving  -- from the command's last word to the process's end (the exit handlers: subjects and
            spares ended, the early walk's git waited for, temporary files removed): a signal is
            noted, not raised, so a Ctrl-C pressed twice (the second landing after "bisectk:
            interrupted") no longer tore an exit handler away half-done, with "Exception ignored
            in atexit callback" and a traceback; a second one there ends the process at once.

Why: a KeyboardInterrupt raised at an arbitrary bytecode of the bookkeeping between runs, or of
the record building after the search, escapes every `except SearchStopped` and ends the command
with exit 130 and no result, although a result existed (issue 22). Outside `held` (other
commands, tests, threads other than the main one) `live` does nothing and signals behave as
Python's defaults.
"""

from __future__ import annotations

import os
import select
import signal
import stat
import threading
from contextlib import contextmanager

from bisectk.exitcodes import HANGUP, INTERRUPTED

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_hung_up = [False]


def _arrived(signum: int) -> None:
    """What every handler does first: note a hangup, and stop writing to a terminal that is gone."""
    if signum == signal.SIGHUP:
        _hung_up[0] = True
        _quiet_dead_terminal()


def _quiet_dead_terminal() -> None:
    """stdout and stderr, where each is a terminal that hung up (poll says POLLHUP), onto /dev/null
    (a character device: isatty is already false on a terminal that hung up, its ioctls fail).
    Imports nothing: a handler may run in the middle of an import (see `defer`)."""
    for fd in (1, 2):
        try:
            if not stat.S_ISCHR(os.fstat(fd).st_mode):
                continue
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if not any(events & select.POLLHUP for _, events in poller.poll(0)):
                continue
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except OSError:
            pass


def _in_import(frame) -> bool:
    """Whether the main thread was stopped inside importlib's own code (a module lock taken, the
    global import lock held, a lock's weakref callback). A KeyboardInterrupt raised there leaves
    the import lock held or a module lock half-released: the next import of another thread (the
    early walk's, the checkouts', an exit handler's) waits for good, and the command hangs (CI
    saw it once: "Exception ignored in: <function _get_module_lock.<locals>.cb>", then nothing
    for 60 s). Raised in the module being imported it is an ordinary exception importlib unwinds."""
    name = frame.f_code.co_filename if frame is not None else ""
    return name.startswith("<frozen importlib") or "importlib/_bootstrap" in name.replace("\\", "/")


def _again_soon(signum: int) -> None:
    """The signal sent to this process once more in 20 ms, for a handler that must not raise where
    it landed (`_in_import`): it is acted on then, wherever the main thread is (a daemon timer:
    a command that ends before it fires is not held up)."""
    timer = threading.Timer(0.02, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _stop(signum, frame) -> None:
    _arrived(signum)
    if _in_import(frame):
        _again_soon(signum)
        return
    raise KeyboardInterrupt  # cleans up as Ctrl-C does: subjects ended, worktrees removed


_deferred: list[int] = []     # signals that arrived while deferred (defer)


def _note(signum, frame) -> None:
    _arrived(signum)
    if signum != signal.SIGHUP and sum(s != signal.SIGHUP for s in _deferred) >= 2:
        _leave_now()        # the user insists (a hangup said twice does not)
    _deferred.append(signum)


def _leave_now() -> None:
    """The way out of a start that hangs (a third signal while deferred): one line, and exit at
    once, from inside whatever import the handler interrupted (nothing is raised there)."""
    try:
        os.write(2, b"bisectk: interrupted\n")
    except OSError:
        pass
    os._exit(HANGUP if _hung_up[0] else INTERRUPTED)


def defer(early: list[int] | None = None) -> None:
    """From the process's first line (__main__) to `install`: a signal is noted, not raised. The
    CLI's modules load then, while the early history walk's thread imports its own (spaces/
    early.py), and a KeyboardInterrupt raised inside one import's module lock broke importlib's
    locks: the command hung for good, both threads waiting on them (1 start in 9 with a Ctrl-C
    at 0.13 s), or died with a traceback. A second one is noted too: the start takes a fraction
    of a second, and raised at once it came out of the import it landed in as a traceback (or
    as "Exception ignored in" importlib's module-lock callback, and was lost). A third leaves
    at once (`_leave_now`): the way out of a start that hangs. `early`: the signals __main__'s
    first handler noted before this module had loaded, counted as if noted here."""
    for s in _SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _note)
    for signum in early or ():
        _note(signum, None)


def install() -> None:
    """SIGTERM and SIGHUP end the command as Ctrl-C does (main thread; a signal ignored at the
    start stays ignored); Ctrl-C raises KeyboardInterrupt again. A signal noted since `defer`
    is raised here, where the command's `except KeyboardInterrupt` says so."""
    for s in _SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _stop)     # Ctrl-C too: a KeyboardInterrupt, but never inside importlib
    if _deferred:
        _deferred.clear()
        raise KeyboardInterrupt


def leaving(status: int) -> None:
    """The exit handlers are about to run, and the process then exits `status` (see the module
    docstring). A signal ignored at the start stays ignored; a hangup notes itself as everywhere.
    A second signal while they run (a cleanup that hangs) leaves at once with `status`, or
    HANGUP after a hangup: os._exit, since the handler may run inside any exit handler."""
    def note(signum, frame) -> None:
        _arrived(signum)
        if noted and signum != signal.SIGHUP:
            os._exit(HANGUP if _hung_up[0] else status)
        noted.append(signum)
    noted: list[int] = []
    for s in _SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, note)


def hung_up() -> bool:
    """A SIGHUP arrived (the command exits HANGUP)."""
    return _hung_up[0]


class _State:
    def __init__(self) -> None:
        self.live = 0             # runs in progress
        self.pending: int | None = None

    def handler(self, signum, frame) -> None:
        _arrived(signum)
        if self.pending is not None and not self.live and signum == signal.SIGHUP:
            return      # a hangup said twice (the kernel's, the shell's) is not the user insisting
        if (self.live or self.pending is not None) and _in_import(frame):
            _again_soon(signum)     # a run's lazy import (psutil, a snapshot tool's module)
            return
        if self.live or self.pending is not None:   # a run to stop, or the user insists
            self.pending = None
            raise KeyboardInterrupt
        self.pending = signum


_state: _State | None = None


@contextmanager
def held():
    """Hold SIGINT/SIGTERM/SIGHUP back outside runs for the duration (main thread only; else
    nothing); one ignored when the command started stays ignored."""
    global _state
    if threading.current_thread() is not threading.main_thread() or _state is not None:
        yield
        return
    state = _State()
    previous = {s: signal.getsignal(s) for s in _SIGNALS}
    _state = state
    for s, h in previous.items():
        if h is not signal.SIG_IGN:
            signal.signal(s, state.handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _state = None


@contextmanager
def live():
    """A run: interruptible at once; a signal held back since the last run is raised here."""
    state = _state
    if state is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    if state.pending is not None:
        state.pending = None
        raise KeyboardInterrupt
    state.live += 1
    try:
        yield
    finally:
        state.live -= 1


def waited(future):
    """`future.result()`, waited for in slices on the main thread. The kernel gives a signal sent
    to the process to any thread that does not block it; one given to a run's thread only sets
    Python's flag, and a main thread blocked in a lock (Future.result) runs no handler until the
    lock is released: a Ctrl-C in a batch of --jobs runs was acted on when the runs ended (a hang's
    whole watchdog), 2 commands in 12. Each slice's end runs the handlers that are due."""
    if threading.current_thread() is not threading.main_thread():
        return future.result()
    while True:
        try:
            return future.result(timeout=0.1)
        except TimeoutError:
            if future.done():       # the task's own TimeoutError
                raise


def late() -> bool:
    """A signal arrived after the last run and is still pending (see the module docstring)."""
    return _state is not None and _state.pending is not None
