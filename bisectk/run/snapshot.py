"""Take the snapshot of a hung run, before the watchdog kills it: where every thread and warp waits.

Abstractions
------------
take       -- read the hung process tree rooted at a pid, within `budget_s`: every Python
              process with py-spy (`dump --json`: each thread's frames), every other process with
              gdb (`thread apply all bt`: native stacks), and, where a process holds a CUDA context
              and `gpu` is asked, the device with cuda-gdb (every warp's PC, grouped; run/cudagdb.py).
              Returns a Snapshot (bisectk/stuck.py); never raises for what the tools do: a missing
              tool, a refused attach (ptrace permission), a tool that runs past its share of the
              budget, each becomes one line in `notes`. The processes are left as they were
              (the tools detach), so the watchdog ends them as usual.
tools      -- which readers this machine has, in words (`bisectk env` shows it).
SnapshotRequest, taken -- what an executor is handed with a run, and calls at the moment its
              watchdog decides the run hung (before the kill): local processes, warm workers and
              Ray actors alike (the request travels as a dict).
SnapshotPolicy -- which hangs of a command are read (`--snapshots N`).

Cost: py-spy reads a Python process in about 0.1 s, gdb a native one in about 0.3 s; cuda-gdb
attaches to a hung kernel in 12-13 s (an H100), which is why the engines ask for the GPU read only
where it informs (the first hang of the bad endpoint, the culprit, at most --snapshots others).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass

from bisectk.procstat import psutil
from bisectk.run import stacks
from bisectk.run.readers import call, which
from bisectk.stuck import Group, Snapshot

MAX_PROCESSES = 6
HOST_TOOL_S = 10.0       # a host stack read that takes longer is given up
LINEINFO_ENV = {"CUTE_DSL_LINEINFO": "1"}   # CuTe DSL kernels then carry source lines


PR_SET_PTRACER = 0x59616D61     # Yama's prctl: "this process may be read by that one and its descendants"
TRACER_ENV = "BISECTK_TRACER"
YAMA_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"


def tracer_env() -> dict[str, str]:
    """What a run's environment needs so that the readers may attach to it: under Yama's
    ptrace_scope 1 (Ubuntu's default) a process may only read its own descendants, and py-spy,
    gdb and cuda-gdb are this process's children, not the run's parents. A Python subject (the
    import hook, run/_hook/sitecustomize.py) and a warm worker (run/worker.py) then name this
    process as their reader (prctl PR_SET_PTRACER). Nothing where no Yama restricts it, or for
    root (CAP_SYS_PTRACE)."""
    return {TRACER_ENV: str(os.getpid())} if _yama_restricts() else {}


@functools.lru_cache(maxsize=1)
def _yama_restricts() -> bool:
    """Whether Yama lets this user read only descendants (scope 1, not root); read once: asked for
    every run a snapshot may be taken of."""
    try:
        with open(YAMA_SCOPE) as f:
            scope = f.read().strip()
    except OSError:
        return False
    return scope == "1" and not _may_trace_any()


PROC_STATUS = "/proc/self/status"
CAP_SYS_PTRACE = 19


def _may_trace_any() -> bool:
    """Whether this process holds CAP_SYS_PTRACE, which Yama's scope 1 does not bind: root's by
    default, but not a container's root started without it (Docker drops it), which is as
    restricted as any user. Where the status cannot be read, root is taken to hold it."""
    try:
        with open(PROC_STATUS) as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0


def allow_reader() -> bool:
    """In a run's own process: let the process named by BISECTK_TRACER (and its children, the
    readers) attach, when it is set (tracer_env). Whether it was done."""
    tracer = os.environ.get(TRACER_ENV, "")
    if not tracer.isdigit():
        return False
    from bisectk.run.supervise import prctl
    return prctl(PR_SET_PTRACER, int(tracer))


def tools() -> dict[str, str]:
    """Each reader and where it is, or why it is not there."""
    out = {}
    for tool, use in (("py-spy", "Python stacks"), ("gdb", "native stacks"), ("cuda-gdb", "GPU warps")):
        path = which(tool)
        out[tool] = f"{path} ({use})" if path else f"not found ({use} are not read)"
    return out


def _tree(pid: int) -> tuple[list[psutil.Process], int]:
    """The first MAX_PROCESSES processes of the tree, and how many more it has."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return [], 0
    return procs[:MAX_PROCESSES], max(0, len(procs) - MAX_PROCESSES)


def _is_python(p: psutil.Process) -> bool:
    try:
        exe = os.path.basename(p.exe())
    except psutil.Error:
        return False
    if exe.startswith("python"):
        return True
    try:
        return any("libpython3" in m.path for m in p.memory_maps(grouped=True))
    except psutil.Error:
        return False


def uses_cuda(p: psutil.Process) -> bool:
    try:
        return any(os.path.basename(m.path).startswith("libcuda.so") for m in p.memory_maps(grouped=True))
    except psutil.Error:
        return False


def _host(p: psutil.Process, deadline: float, notes: list[str], used: set[str]) -> list[Group]:
    try:
        scope = f"process {p.pid} ({p.name()})"
    except psutil.Error:
        return []
    if not _alive(p):
        notes.append(f"{scope}: had ended (its parent had not yet waited for it)")
        return []
    left = min(HOST_TOOL_S, deadline - time.monotonic())
    if _is_python(p):
        spy = which("py-spy")
        if spy is None:
            notes.append("Python stacks not read: py-spy is not installed (pip install py-spy)")
            return []
        out, problem = call([spy, "dump", "--pid", str(p.pid), "--json"], left)
        if problem:
            notes.append(f"{scope}: {ENDED if not _alive(p) else problem}")
            return []
        used.add("py-spy")
        try:
            threads = stacks.python_threads(out)
        except ValueError:
            notes.append(f"{scope}: py-spy's output could not be read")
            return []
        return _grouped(p, threads, scope, notes)
    gdb = which("gdb")
    if gdb is None:
        notes.append(f"{scope}: native stacks not read: gdb is not installed")
        return []
    out, problem = call([gdb, "-p", str(p.pid), "-batch", "-nx", "-ex", "set pagination off",
                          "-ex", "thread apply all bt"], left)
    threads = stacks.native_threads(out)
    if not threads:
        notes.append(f"{scope}: {ENDED}" if not _alive(p) else
                     f"{scope}: native stacks not read: {problem or 'gdb printed no thread'}")
        return []
    used.add("gdb")
    return _grouped(p, threads, scope, notes)


ENDED = "ended while it was read (what was read is its exit, not where it hung)"


def _alive(p: psutil.Process) -> bool:
    """Not ended: a zombie only when no thread is left (a leader whose main thread left by
    pthread_exit shows as a zombie while its other threads, hung or not, run on)."""
    try:
        return p.is_running() and (p.status() != psutil.STATUS_ZOMBIE or p.num_threads() > 1)
    except psutil.Error:
        return False


def _grouped(p: psutil.Process, threads: list, scope: str, notes: list[str]) -> list[Group]:
    """The groups of one process's threads as read; a thread read with no frame (starting or
    ending, an interpreter exiting) has no place to show and is said in a note, as is a process
    that ended while it was read."""
    blank = stacks.frameless(threads)
    if not _alive(p):
        notes.append(f"{scope}: {ENDED}")
    elif blank:
        names = ", ".join(blank[:4]) + (f" (+{len(blank) - 4} more)" if len(blank) > 4 else "")
        notes.append(f"{scope}: {names} had no frame when read (a thread starting or ending, "
                     f"or the interpreter exiting)")
    groups = stacks.group_threads(threads, scope)
    if any(g.wait == stacks.EVENT_LOOP for g in groups):
        notes.append(f"{scope}: an asyncio event loop waits for its tasks, and what they await was not read "
                     f"(a suspended task is on no thread's stack)")
    return groups


def take(pid: int, *, gpu: bool = False, budget_s: float = 30.0) -> Snapshot:
    """The snapshot of the hung tree under `pid` (see the module docstring)."""
    t0 = time.monotonic()
    deadline = t0 + budget_s
    notes: list[str] = []
    used: set[str] = set()
    groups: list[Group] = []
    procs, unread = _tree(pid)
    if not procs:
        return Snapshot(notes=("the hung process was already gone",), took_s=time.monotonic() - t0)
    if unread:
        notes.append(f"{unread} more process{'es' if unread != 1 else ''} of the hung tree not read "
                     f"(a snapshot reads the first {MAX_PROCESSES})")
    cuda = [p for p in procs if uses_cuda(p)] if gpu else []
    if cuda:
        from bisectk.run import cudagdb
        found, problem = cudagdb.read(cuda[0].pid, deadline_s=deadline - time.monotonic() - min(HOST_TOOL_S, budget_s / 4))
        groups.extend(found)
        if problem:
            notes.append(problem)
        if found:
            used.add("cuda-gdb")
    for p in procs:
        if time.monotonic() >= deadline:
            notes.append("the snapshot's time ran out before every process was read")
            break
        groups.extend(_host(p, deadline, notes, used))
    # The subject's own places first: GPU warps, then host threads that show own frames.
    groups.sort(key=lambda g: (not g.device, not g.stack and not g.device))
    return Snapshot(groups=tuple(groups), tools=tuple(sorted(used)), took_s=round(time.monotonic() - t0, 3),
                    notes=tuple(dict.fromkeys(notes)))


# -- when to take one -----------------------------------------------------------------------------
DEFAULT_OTHERS = 2       # --snapshots: hangs read beyond the first and the culprit's
DEFAULT_BUDGET_S = 45.0  # one snapshot's own limit (cuda-gdb takes 12-15 s on an H100)


@dataclass(frozen=True)
class SnapshotRequest:
    """What an executor does when its watchdog calls a hang: read the tree for at most `budget_s`
    (GPU warps too when `gpu`), then end it as usual. Travels to remote sites as a dict."""
    budget_s: float = DEFAULT_BUDGET_S
    gpu: bool = True

    def take(self, pid: int, at_s: float | None = None) -> dict:
        snap = take(pid, gpu=self.gpu, budget_s=self.budget_s)
        return {**snap.to_dict(), "at_s": None if at_s is None else round(at_s, 3)}

    def to_dict(self) -> dict:
        return {"budget_s": self.budget_s, "gpu": self.gpu}

    @classmethod
    def from_dict(cls, d: dict | None) -> SnapshotRequest | None:
        return cls(float(d.get("budget_s", DEFAULT_BUDGET_S)), bool(d.get("gpu", True))) if isinstance(d, dict) else None


def taken(request: SnapshotRequest | None, pid: int, at_s: float) -> dict | None:
    """The snapshot an executor records for a hung run, or None when none was asked; never raises
    (a reader's own failure is a note, and the verdict stays a hang)."""
    if request is None:
        return None
    try:
        return request.take(pid, at_s)
    except Exception as exc:   # a bug in a reader must not lose the run
        return Snapshot(notes=(f"the snapshot failed: {type(exc).__name__}: {exc}"[:200],)).to_dict()


class SnapshotPolicy:
    """Which hangs a command reads (`--snapshots N`): the first hang of the command (the endpoints
    run first, so it is the bad endpoint's), N others as they come, and every run the engine
    forces (the culprit's confirmation). N = 0 turns snapshots off altogether. Thread-safe: parallel
    runs may each be offered one; the count is settled when they come back."""

    def __init__(self, others: int = DEFAULT_OTHERS, budget_s: float = DEFAULT_BUDGET_S, gpu: bool = True):
        self.enabled = others > 0
        self.left = 1 + max(0, others)
        self.request_ = SnapshotRequest(budget_s, gpu)
        self.taken = 0
        self._lock = threading.Lock()

    def request(self, forced: bool = False) -> SnapshotRequest | None:
        if not self.enabled:
            return None
        with self._lock:
            return self.request_ if forced or self.left > 0 else None

    def settle(self, stuck: dict | None, forced: bool = False) -> None:
        if stuck is None:
            return
        with self._lock:
            self.taken += 1
            if not forced:
                self.left -= 1
