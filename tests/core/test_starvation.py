"""A busy machine slows a run; it does not hang it (run/starvation.py). Runs here share one CPU
with three busy processes: a run that needs 0.5 s of CPU takes ~2 s there."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisectk.run import starvation
from bisectk.run.process import run_process
from bisectk.run.progress import FixedWatch

pytestmark = pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/schedstat").exists(),
                                reason="no per-task scheduler statistics here (/proc/PID/schedstat)")
CPU = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
PIN = f"import os, time; os.sched_setaffinity(0, [{CPU}]); "
WORK = PIN + "t = time.process_time()\nwhile time.process_time() - t < {cpu}: pass\n{after}"


@pytest.fixture
def busy_cpu():
    # each in a session of its own, as the run is (run_process): where the kernel groups tasks by
    # session (autogroup), three hogs in the test's session would share one group's CPU time, and
    # the run, alone in its group, would get half the CPU instead of a quarter
    hogs = [subprocess.Popen([sys.executable, "-c", PIN + "\nwhile True: pass"], start_new_session=True)
            for _ in range(3)]
    time.sleep(0.3)
    yield
    for h in hogs:
        h.kill()
        h.wait()


def subject(cpu: float, after: str = "") -> list[str]:
    return [sys.executable, "-c", WORK.format(cpu=cpu, after=after)]


def test_a_run_kept_off_the_cpu_is_given_the_time_it_waited(busy_cpu, monkeypatch):
    # 0.5 s of CPU on a CPU shared four ways is ~2 s of wall, past the 1.5 s watchdog; the margin
    # (1 s) is for what is not a wait for the CPU and so not credited: the interpreter's start,
    # reading its files under a loaded machine's IO (0.2 s against 0.4 s failed in a full suite)
    monkeypatch.setattr(starvation, "CAP", 20.0)
    raw = run_process(subject(0.5), watch=FixedWatch(1.5))
    assert not raw.timed_out and raw.exit_code == 0, raw
    assert raw.duration_s > 1.5          # the premise: by the wall clock it outlived its watchdog


def test_a_sleeping_deadlock_on_a_busy_machine_is_called_a_hang_near_its_deadline(busy_cpu, monkeypatch):
    monkeypatch.setattr(starvation, "CAP", 20.0)
    raw = run_process(subject(0.0, "time.sleep(60)"), watch=FixedWatch(0.4))
    # credited only for its start (its interpreter waiting for the CPU), not for the sleep
    assert raw.timed_out and raw.duration_s < 0.4 + 0.8, raw.duration_s


def test_a_spinning_hang_on_a_busy_machine_ends_within_the_cap(busy_cpu):
    raw = run_process(subject(600.0), watch=FixedWatch(0.4))
    assert raw.timed_out and raw.duration_s <= 0.4 * (1 + starvation.CAP) + 0.3, raw.duration_s


def test_threads_older_than_the_run_count_from_the_runs_start(busy_cpu):
    """A warm worker's threads have waited before this run: only what they wait from its start
    (the baseline read then) is owed. Here the worker is a process spinning on the busy CPU."""
    worker = subprocess.Popen([sys.executable, "-c", PIN + "\nwhile True: pass"])
    try:
        time.sleep(0.5)
        s = starvation.Starvation((worker.pid,))
        before = sum(s.before.values())
        time.sleep(0.2)
        whole = starvation.Starvation(()).owed(worker.pid, 100.0)
        since = s.owed(worker.pid, 100.0)
        assert before > 0.1                             # the premise: it waited before the baseline
        assert since < whole - 0.1 and since > 0.0
    finally:
        worker.kill()
        worker.wait()
