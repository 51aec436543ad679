"""Time a run spent waiting for a CPU: no hang is called on a machine too busy to run the subject.

A watchdog counts wall time. On a loaded machine (CI with parallel jobs, a shared node, a build
beside the search) a run that needs 0.12 s of CPU can wait past a 1 s watchdog in the run queue,
and a good commit is then called a hang: the search goes wrong, confidently. Linux keeps, per
task, the nanoseconds it was runnable but not running (`/proc/PID/task/TID/schedstat`, second
field). When a run's deadline passes, the most such waiting by any task of its tree during the
run is owed to it as credit, and the deadline moves by that much (run/watchdog.py).

What is and is not credited:
- a task that sleeps (a deadlock on a lock or a barrier, a GPU hang whose host thread sleeps in
  the driver) waits on nothing the scheduler counts: a real hang is called at its deadline;
- a task that spins (a host thread polling a hung kernel) is credited only as long as the
  machine keeps it off a CPU, and never beyond CAP times the deadline;
- a task made before the run (a warm worker, a spare supervisor) counts from a reading taken
  when the run starts (`Starvation(pids)`), or not at all when none was taken.
Where the kernel keeps no such counts (not Linux, schedstats off) the credit is 0.

Abstractions
------------
Starvation -- made at a run's start (with the pids that existed before it); `owed(pid)`: the
              seconds the tree under `pid` waited for a CPU since then, at most CAP x deadline.
"""

from __future__ import annotations

import os
import time

from bisectk.procstat import psutil      # loaded at its first use (a hang), not at every start

CAP = 2.0           # at most this many deadlines more: a spinning hang on a loaded machine ends
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _waited(pid: int) -> dict[int, tuple[float, int]]:
    """{tid: (seconds waiting in the run queue, start time in clock ticks since boot)} of the
    threads of `pid`; {} when /proc has none (gone, not Linux)."""
    out = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat", "rb") as f:
                waited = int(f.read().split()[1]) / 1e9
            with open(f"{base}/{tid}/stat", "rb") as f:
                start = int(f.read().rpartition(b")")[2].split()[19])
        except (OSError, IndexError, ValueError):
            continue
        out[int(tid)] = (waited, start)
    return out


class Starvation:
    def __init__(self, pids: tuple[int, ...] = (), *, elapsed: float = 0.0):
        """`pids`: processes older than the run whose threads may run it (read now, as the
        baseline); `elapsed`: seconds since the run started (its start, in clock ticks since
        boot, tells a thread made for the run from an older one)."""
        boot = time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else elapsed
        self.start = (boot - elapsed) * _TICK
        self.before = {tid: w for pid in pids for tid, (w, _) in _waited(pid).items()}

    def owed(self, pid: int, deadline: float) -> float:
        """Seconds the tree under `pid` waited for a CPU since the run began (its most starved
        thread), at most CAP x `deadline`."""
        try:
            root = psutil.Process(pid)
            pids = [pid, *(p.pid for p in root.children(recursive=True))]
        except psutil.Error:
            return 0.0
        most = 0.0
        for p in pids:
            for tid, (waited, start) in _waited(p).items():
                if tid in self.before:
                    waited -= self.before[tid]
                elif start < self.start - 1:        # older than the run, and no reading of it then
                    continue
                most = max(most, waited)
        return min(most, CAP * deadline)
