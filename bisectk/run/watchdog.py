"""How a hang is decided: one wait loop, shared by every executor.

Abstractions
------------
Watch    -- the protocol of a run's watchdog (run/progress.py: FixedWatch, ProgressWatch):
            `deadline()` seconds from the run's start after which it is a hang (None: never; it
            may move as the run shows progress), `feed(line, t)` one output line `t` seconds in,
            `where(t)` a hang in words, `timeline(end)` the progress it saw, `to_dict()` the
            watch as data (a run on another host keeps its watchdog beside it).
Hung     -- the wait's verdict on a run that outlived its deadline: when it was called, where it
            stopped (in words), and its snapshot (where every thread and warp waits), read
            before the caller kills it.
wait_run -- wait for a run to end, step by step, looking at the watch's deadline between steps;
            the one place a hang is decided, for a fresh process (run/process.py) and a warm
            worker (run/pool.py) alike, and so for a Ray actor too, which runs one of those
            beside its subject (run/remote.py). The hang snapshot (run/snapshot.py) is taken
            here, once, at the moment the deadline passes and before anything is killed.
            A deadline that passes while the run's tree was kept off a CPU moves by the time
            it waited (run/starvation.py): a busy machine slows a run, it does not hang it.
stopped_in -- the processes of a hung tree found stopped (SIGSTOP, SIGTSTP), in words: said with
            the hang, whose words then say where it stands (a stopped run is no slow one).

Why steps: a ProgressWatch's deadline moves while the run prints, so it is looked at again every
STEP_S; a step is also when an executor checks what it must (a warm worker's supervisor).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bisectk.procstat import psutil, stopped, tracer
from bisectk.run.progress import Timeline
from bisectk.run.snapshot import SnapshotRequest, taken
from bisectk.run.starvation import Starvation

STEP_S = 0.05


class Watch(Protocol):
    def deadline(self) -> float | None: ...

    def feed(self, text: str, t: float) -> None: ...

    def where(self, now: float) -> str: ...

    def timeline(self, end: float) -> Timeline: ...

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class Hung:
    at_s: float            # seconds from the run's start when the watchdog called it
    stalled: str           # where it stopped, in words ('' without a good timeline)
    stuck: dict | None     # where it waited (run/snapshot.py), when a snapshot was asked


def wait_run(step: Callable[[float], bool], watch: Watch, t0: float, *, pid: int,
             snapshot: SnapshotRequest | None = None, older: tuple[int, ...] = ()) -> Hung | None:
    """`step(seconds)` waits at most that long for the run's end, keeps what it read there (a
    report, a reply) and says whether the run ended; it may raise to say the run was lost.
    Returns None once a step says so, or Hung when `watch.deadline()` (seconds from `t0`,
    time.monotonic), moved by the time the tree under `pid` waited for a CPU, passes first: the
    tree is read (`snapshot`) before this returns, so before any kill. `older`: the processes
    of the tree made before the run (a warm worker's), read now as the starvation's baseline."""
    starved, credit = Starvation(older), 0.0
    while True:
        due = watch.deadline()
        left = None if due is None else t0 + due + credit - time.monotonic()
        if left is not None and left <= 0:
            owed = starved.owed(pid, due)
            if owed > credit + STEP_S:      # kept off a CPU: the deadline moves, and is looked at again
                credit = owed
                continue
            at = time.monotonic() - t0
            where = "; ".join(w for w in (watch.where(at), stopped_in(pid)) if w)
            return Hung(at, where, taken(snapshot, pid, at))
        if step(STEP_S if left is None else min(STEP_S, left)):
            return None


def stopped_in(pid: int) -> str:
    """The processes of the tree under `pid` found stopped (SIGSTOP, SIGTSTP, a debugger), in
    words; '' when none is. Such a run is no slow one that a longer watch would see end: it goes
    on only once another process continues it, so its hang says so (and, saying where it stands,
    gets no second, longer run: engine/endpoints.py, engine/oracle.py)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return ""
    names, tree = [], {p.pid for p in procs}
    for p in procs:
        try:
            # a tracee whose tracer is of the run (`strace -f`, `gdb -batch -ex run`) is in a tracing
            # stop at each syscall or signal, and goes on as its tracer lets it: not stopped for good
            if stopped(p.pid) and tracer(p.pid) not in tree:
                names.append(p.name())
        except psutil.Error:
            pass
    if not names:
        return ""
    who = names[0] if len(names) == 1 else f"{len(names)} processes ({', '.join(sorted(set(names))[:3])})"
    return f"{who} stopped by a signal (SIGSTOP or SIGTSTP) or a debugger, and never continued"
