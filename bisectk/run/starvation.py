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
- a task made before the run (a warm worker and its supervisor) counts from a reading taken
  when the run starts (`Starvation(pids)`); every other task of the tree is the run's own (a cold
  run's tree is its subject) and counts whole. (A task's start time cannot tell: a cold run's
  clock starts once its subject is spawned, which on a loaded machine is later than the fork.)
Where the kernel keeps no such counts (not Linux, schedstats off) the credit is 0.

Abstractions
------------
Starvation -- made at a run's start (with the pids that existed before it); `owed(pid)`: the
              seconds the tree under `pid` waited for a CPU since then, at most CAP x deadline.
"""

from __future__ import annotations

import os

from bisectk.procstat import psutil      # loaded at its first use (a hang), not at every start

CAP = 2.0           # at most this many deadlines more: a spinning hang on a loaded machine ends


def _waited(pid: int) -> dict[int, float]:
    """{tid: seconds waiting in the run queue} of the threads of `pid`; {} when /proc has none
    (gone, not Linux)."""
    out = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat", "rb") as f:
                out[int(tid)] = int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return out


class Starvation:
    def __init__(self, pids: tuple[int, ...] = ()):
        """`pids`: the processes of the tree older than the run (read now, as the baseline)."""
        self.before = {tid: w for pid in pids for tid, w in _waited(pid).items()}

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
            for tid, waited in _waited(p).items():
                most = max(most, waited - self.before.get(tid, 0.0))
        return min(most, CAP * deadline)
