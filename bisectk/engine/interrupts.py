"""Ctrl-C and SIGTERM during a search: they stop runs at once, never the writing of a result.

Abstractions
------------
held     -- a context (the command's search and its reporting) in which SIGINT and SIGTERM are
            held back everywhere except inside a run: one that arrives while bisectk builds a
            record, stores it or prints it is kept pending instead of tearing the half-written
            result away. A second signal while one is pending is obeyed at once (the way out of
            anything that hangs).
live     -- the part that stays interruptible: a run (Trials.observe, engine/oracle.py). A signal during it is a
            KeyboardInterrupt there, as without `held`; one held back is raised on entering the
            next run, where the search turns it into its best result so far (SearchStopped).
late     -- whether a signal is still pending: it arrived after the last run, while the result
            was being built or written; the caller prints that result and exits as interrupted.

Why: a KeyboardInterrupt raised at an arbitrary bytecode of the bookkeeping between runs, or of
the record building after the search, escapes every `except SearchStopped` and ends the command
with exit 130 and no result, although a result existed (issue 22). Outside `held` (other
commands, tests, threads other than the main one) `live` does nothing and signals behave as
Python's defaults.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _State:
    def __init__(self) -> None:
        self.live = 0             # runs in progress
        self.pending: int | None = None

    def handler(self, signum, frame) -> None:
        if self.live or self.pending is not None:   # a run to stop, or the user insists
            self.pending = None
            raise KeyboardInterrupt
        self.pending = signum


_state: _State | None = None


@contextmanager
def held():
    """Hold SIGINT/SIGTERM back outside runs for the duration (main thread only; else nothing)."""
    global _state
    if threading.current_thread() is not threading.main_thread() or _state is not None:
        yield
        return
    state = _State()
    previous = {s: signal.getsignal(s) for s in _SIGNALS}
    _state = state
    for s in _SIGNALS:
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


def late() -> bool:
    """A signal arrived after the last run and is still pending (see the module docstring)."""
    return _state is not None and _state.pending is not None
