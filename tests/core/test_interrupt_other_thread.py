"""A signal the kernel gives a thread other than the main one (it gives a process's signal to any
thread that does not block it) sets Python's flag only; a main thread blocked in a lock, as
Future.result blocks, runs no handler until the lock is released. bisect --jobs 2 waits so on a
batch of runs: a Ctrl-C was acted on when the runs ended, 40 s later, in 2 commands of 12
(tests/e2e/test_interrupts.py). `interrupts.waited` waits in slices, so it is acted on at once."""
import signal
import threading
import time
from concurrent.futures import Future

import pytest

from bisectk.engine import interrupts


def _signal_from_another_thread(future: Future, then: float) -> None:
    def other():
        time.sleep(0.2)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)    # given to this thread, not main
        time.sleep(then)
        if not future.done():
            future.set_result("ended")
    threading.Thread(target=other, daemon=True).start()


def test_a_signal_given_to_another_thread_ends_a_wait_on_a_future_at_once():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        future: Future = Future()
        # the future ends 60 s after the signal: a wait that acted on it only then would return
        # "ended" (no KeyboardInterrupt) past the bound, which leaves a loaded machine's late
        # wake-ups room (1.5 s against an end at 3 s was a race on a busy 2-core CI machine)
        _signal_from_another_thread(future, then=60.0)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            interrupts.waited(future)
        assert time.monotonic() - t0 < 30
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_wait_gives_the_result_and_the_tasks_own_timeout_error():
    done: Future = Future()
    done.set_result(3)
    assert interrupts.waited(done) == 3
    failed: Future = Future()
    failed.set_exception(TimeoutError("the task's"))
    with pytest.raises(TimeoutError, match="the task's"):
        interrupts.waited(failed)
    later: Future = Future()
    threading.Timer(0.25, later.set_result, ("later",)).start()
    assert interrupts.waited(later) == "later"
