"""Warm pool: the spares of one GPU's slots serve each other (run/pool.py _discard and a
worker's start). Hangs come in bursts on one slot (runs made ahead of a search, a confirmation's
re-runs of a hang); a slot that loses its worker twice before its own spare is back must take
another slot's idle spare, not leave the pool a worker short for a whole preload."""

from __future__ import annotations

import sys
import time

import pytest

from bisectk.run.executor import Job
from bisectk.run.pool import WorkerPool
from bisectk.run.progress import FixedWatch


def _ready(pool: WorkerPool, spares: int, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with pool.cond:
            if all(s.worker is not None and len(s.spares) >= spares for s in pool.slots):
                return
        time.sleep(0.05)
    raise AssertionError("the pool's workers and spares never became ready")


def test_a_slot_that_loses_two_workers_in_a_row_takes_another_slots_spare(tmp_path):
    (tmp_path / "slowstart.py").write_text("import time\ntime.sleep(3)\n")   # a preload that takes a while
    (tmp_path / "segv.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with WorkerPool(gpus=None, slots=2, preload=("slowstart",), spares=1, max_spares=1,
                    env={"PYTHONPATH": str(tmp_path)}, ready_timeout=60) as pool:
        _ready(pool, 1)
        for _ in range(2):    # both on the first slot: it has a worker again each time
            raw = pool.run(Job([sys.executable, "segv.py"], cwd=tmp_path), FixedWatch(60))
            assert raw.signal == "SIGSEGV", raw
        with pool.cond:
            workers = [s.worker is not None for s in pool.slots]
        # both discards were served by a ready spare (the second by the other slot's), so no slot
        # waits for a start: before, the first slot had none for the 3 s of its spare's preload
        assert pool.stats["worker_discards"] == 2
        assert pool.stats["recovery_s"] == [0.0, 0.0] and workers == [True, True]
        # and the spares come back behind them
        _ready(pool, 1)
        assert pool.stats["worker_starts"] >= 6


def test_a_worker_killed_twice_closes_its_reply_pipe_once(tmp_path):
    """Pool.close kills a worker still starting, and so does the thread that started it. The second
    kill must not close the reply pipe's number again: by then it may be another thread's file
    (a psutil read of /proc failed with EBADF in a test run so)."""
    import os

    from bisectk.run.poolworker import _Worker
    w = _Worker(sys.executable, dict(os.environ), (), None)
    number = w.reply_fd
    w.kill(0.1)
    other = os.open(os.devnull, os.O_RDONLY)        # another thread's file, under the freed number
    if other != number:
        os.dup2(other, number)
        os.close(other)
    try:
        w.kill(0.1)
        os.fstat(number)                            # still open: the second kill left it alone
    finally:
        os.close(number)


def test_an_urgent_run_takes_the_first_worker_ready_before_runs_that_waited_longer(tmp_path):
    """The good endpoint's run (Job.urgent 2) begins with the bad endpoint's (1) and the search's
    first runs (0) beside it, before the pool's first worker has imported: that worker is the good
    run's, whoever asked first (every other run's watchdog waits for it), the next the bad
    endpoint's (the search's first round waits for it), then the rest."""
    import threading
    # a preload that ends when the test opens its gate: the worker is still importing while runs queue
    (tmp_path / "slowstart.py").write_text(
        f"import os, time\nwhile not os.path.exists({str(tmp_path / 'gate')!r}):\n    time.sleep(0.02)\n")
    (tmp_path / "mark.py").write_text("import sys\nopen('order.txt', 'a').write(sys.argv[1] + '\\n')\n")
    with WorkerPool(gpus=None, slots=1, preload=("slowstart",), spares=1, max_spares=1,
                    env={"PYTHONPATH": str(tmp_path)}, ready_timeout=60) as pool:
        def run(name: str, urgent: int) -> None:
            pool.run(Job([sys.executable, "mark.py", name], cwd=tmp_path, urgent=urgent), FixedWatch(60))
        waiting = [threading.Thread(target=run, args=(f"ahead{i}", 0)) for i in range(3)]
        waiting.append(threading.Thread(target=run, args=("bad", 1)))

        def asked(n: int) -> None:       # n runs wait for a worker (a state, not a time: under load
            end = time.monotonic() + 60  # a thread's start may take longer than any sleep)
            while time.monotonic() < end:
                with pool.cond:
                    if sum(pool._urgent.values()) == n:
                        return
                time.sleep(0.02)
            raise AssertionError(f"{n} runs never waited for a worker: {pool._urgent}")
        for t in waiting:
            t.start()
        asked(len(waiting))             # they asked first
        good = threading.Thread(target=run, args=("good", 2))
        good.start()
        asked(len(waiting) + 1)
        with pool.cond:
            assert pool.slots[0].worker is None     # still importing
        (tmp_path / "gate").touch()
        for t in [*waiting, good]:
            t.join()
    order = (tmp_path / "order.txt").read_text().split()
    assert order[:2] == ["good", "bad"] and sorted(order[2:]) == [f"ahead{i}" for i in range(3)], order


def test_runs_pinned_to_one_gpu_run_warm_and_side_by_side_in_that_gpus_workers(tmp_path):
    """--jobs 3 --gpus 0: every run is pinned to GPU 0 (its CUDA_VISIBLE_DEVICES, engine/slots.py).
    The pool keeps --jobs workers on it (slot k on gpus[k % len]) and takes the pinned runs there:
    three at once, warm. A pinned run used to be refused by every worker (a process-level
    variable the workers lacked) and ran cold; with one worker per GPU the three would queue."""
    from concurrent.futures import ThreadPoolExecutor
    # each run waits for the three to have begun (a run alone, or one after the other, gives up
    # after 60 s with exit 4): side by side is a state to reach, not a wall time under some bound
    (tmp_path / "nap.py").write_text(
        "import os, sys, time\nopen(f'began.{os.getpid()}', 'w').close()\nend = time.monotonic() + 60\n"
        "while len([n for n in os.listdir() if n.startswith('began.')]) < 3:\n"
        "    if time.monotonic() > end:\n        sys.exit(4)\n    time.sleep(0.02)\n"
        "sys.exit(0 if os.environ.get('CUDA_VISIBLE_DEVICES') == '0' else 3)\n")
    with WorkerPool(gpus=["0"], slots=3, preload=(), spares=0, fork=False, ready_timeout=60) as pool:
        _ready(pool, 0)
        assert [s.gpu for s in pool.slots] == ["0", "0", "0"]
        job = Job([sys.executable, "nap.py"], cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": "0"})
        with ThreadPoolExecutor(3) as ex:
            raws = list(ex.map(lambda _: pool.run(job, FixedWatch(120)), range(3)))
        assert [r.exit_code for r in raws] == [0, 0, 0], raws      # 4: not side by side
        assert pool.stats["warm_runs"] == 3 and pool.stats["cold_runs"] == 0, pool.stats


@pytest.mark.parametrize("forked", [False, True])
def test_a_worker_stopped_while_it_waited_is_passed_over_not_charged_with_a_hang(tmp_path, forked):
    """An idle worker stopped from outside (a debugger attached to it, a SIGSTOP) never answers:
    the next run given to it was called a hang ('python3 stopped by a signal ... never continued')
    though it never began, and the configuration was charged with it. A stopped worker is no
    usable one: it is retired and the run goes to the next."""
    import os
    import signal

    from bisectk import procstat
    (tmp_path / "ok.py").write_text("print('BISECTK_RESULT {}')\n")
    (tmp_path / "segv.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with WorkerPool(gpus=None, preload=("json",) if forked else (), spares=1, ready_timeout=60) as pool:
        _ready(pool, 1)
        # the pool's first worker starts fresh and the others are forked from the template; which
        # is ready first (the slot's worker) and which is its spare is a race under load (CI at
        # 9f82403: the forked one won, and its fresh spare took over after one crash)
        for _ in range(3 if forked else 0):
            with pool.cond:
                if type(pool.slots[0].worker).__name__ == "Forked":
                    break
            assert pool.run(Job([sys.executable, "segv.py"], cwd=tmp_path), FixedWatch(60)).signal == "SIGSEGV"
            _ready(pool, 1)
        discards = pool.stats["worker_discards"]
        with pool.cond:
            stopped = pool.slots[0].worker.pid
            assert type(pool.slots[0].worker).__name__ == ("Forked" if forked else "_Worker")
        os.kill(stopped, signal.SIGSTOP)
        end = time.monotonic() + 5
        while not procstat.stopped(stopped) and time.monotonic() < end:   # stopped once it is off a CPU
            time.sleep(0.01)
        try:
            raw = pool.run(Job([sys.executable, "ok.py"], cwd=tmp_path), FixedWatch(10))
        finally:
            try:
                os.kill(stopped, signal.SIGCONT)
            except OSError:
                pass
        assert not raw.timed_out and raw.exit_code == 0, raw
        assert pool.stats["worker_discards"] == discards + 1, pool.stats
