"""A signal that lands inside importlib's own code is acted on 20 ms later, not there
(engine/interrupts.py `_in_import`): a KeyboardInterrupt raised in a module lock's weakref callback
left the import lock held, and the next import of another thread waited for good (CI saw a start
hang so once, 'Exception ignored in: <function _get_module_lock.<locals>.cb>')."""
import importlib._bootstrap as bootstrap
import signal
import sys
import time
from types import SimpleNamespace

import pytest

from bisectk.engine import interrupts


def _frame(code):
    return SimpleNamespace(f_code=code)


def test_importlibs_own_frames_are_told_from_the_module_being_imported():
    assert interrupts._in_import(_frame(bootstrap._find_and_load.__code__))
    assert interrupts._in_import(_frame(bootstrap._ModuleLock.release.__code__))
    assert not interrupts._in_import(_frame(test_importlibs_own_frames_are_told_from_the_module_being_imported.__code__))
    assert not interrupts._in_import(None)


@pytest.mark.parametrize("where", ["handler", "held"])
def test_a_signal_inside_importlib_is_sent_again_and_raised_outside_it(where):
    """The handler returns where it landed in importlib; the same signal comes back within moments
    and raises KeyboardInterrupt where the main thread is then (here: the sleep below)."""
    got = []
    previous = signal.getsignal(signal.SIGUSR1)
    state = interrupts._State()
    state.live = 1
    handler = interrupts._stop if where == "handler" else state.handler
    def recording(signum, frame):
        got.append(signum)
        handler(signum, frame)
    signal.signal(signal.SIGUSR1, recording)
    try:
        handler(signal.SIGUSR1, _frame(bootstrap._find_and_load.__code__))    # nothing raised
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.005)
        assert got == [signal.SIGUSR1]
        with pytest.raises(KeyboardInterrupt):      # anywhere else: at once, as before
            handler(signal.SIGUSR1, sys._getframe())
    finally:
        signal.signal(signal.SIGUSR1, previous)
