"""Where a hang is stuck: the snapshot a watchdog takes of a hung run before it kills it. Pure data.

Abstractions
------------
Group     -- threads (host) or warps (GPU) that wait at the same place: who (`role`: thread names,
             or warps with their thread range), how many, the place as `file:line function` (the
             subject's own innermost frame, or the kernel's source line), the instruction or source
             text there, what kind of wait it is (`lock`, `join`, `mbarrier try_wait`, `named
             barrier`, ...), where it lives (`scope`: a process, or a kernel and its CTAs), and the
             subject's own frames beneath it, innermost first.
Snapshot  -- every group of one hung run, the tools that read them, the seconds it took, and one
             line per thing that could not be read (no cuda-gdb, no permission to attach, a tool
             that timed out). A snapshot never decides a verdict: a run is a hang because its
             watchdog fired, whatever its snapshot says or fails to say.
deadlocked -- whether every group of a snapshot waits on a synchronization primitive (a lock, a
             join, a barrier, an mbarrier): a hang, not a slow run (engine/endpoints.py and
             engine/oracle.py give a silent hang without one a second, longer run).
same_place -- whether two snapshots show the same hang (the same set of places where threads and
             warps wait), which the reports use to tell "two different hangs" apart.

Serialised as plain dicts (`to_dict`/`from_dict`) inside a Run, so the ledger stores it with the run.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

SNAPSHOT_VERSION = 1
ON_CPU = "running (on CPU)"   # the wait of a thread that waits on nothing, read while on the CPU
_LINE = re.compile(r":\d+(?= \S+$)")    # 'subj.py:63 spin2' -> 'subj.py spin2'


@dataclass(frozen=True)
class Group:
    role: str                       # "producer, consumer" or "warps 0-3 (threads 0-127)"
    count: int                      # threads, or warps
    place: str                      # "pipeline.py:194 consumer", "ws_pipeline.py:183"
    instruction: str = ""           # the source text (host) or the SASS instruction (GPU)
    wait: str = ""                  # lock | join | sleep | mbarrier try_wait | named barrier | ...
    scope: str = ""                 # "process 1234 (python)" or "kernel K, CTA (0,0,0) (+131 alike)"
    stack: tuple[str, ...] = ()     # the subject's own frames, innermost first
    device: bool = False            # a GPU group

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stack"] = list(self.stack)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Group:
        known = cls.__dataclass_fields__
        d = {k: v for k, v in d.items() if k in known}
        d["stack"] = tuple(d.get("stack") or ())
        return cls(**d)


@dataclass(frozen=True)
class Snapshot:
    groups: tuple[Group, ...] = ()
    tools: tuple[str, ...] = ()     # what read it: "py-spy 0.4.3", "gdb", "cuda-gdb"
    took_s: float = 0.0
    notes: tuple[str, ...] = field(default=())   # one line each: what could not be read, and why
    at_s: float | None = None       # seconds into the run when it was taken

    @property
    def host(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if not g.device)

    @property
    def device(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if g.device)

    def places(self) -> frozenset[str]:
        return frozenset(_place_key(g) for g in self.groups)

    def headline(self) -> str:
        """One line: where most of it waits (the GPU's groups first: a hung kernel's host thread
        only waits for the kernel)."""
        if not self.groups:
            return self.notes[0] if self.notes else "nothing could be read"
        g = (self.device or self.host)[0]
        who = f"{g.count} {'warp' if g.device else 'thread'}{'s' if g.count != 1 else ''}"
        what = f" ({g.wait})" if g.wait else ""
        return f"{who} waiting at {g.place}{what}"

    def to_dict(self) -> dict[str, Any]:
        return {"version": SNAPSHOT_VERSION, "groups": [g.to_dict() for g in self.groups],
                "tools": list(self.tools), "took_s": round(self.took_s, 3), "notes": list(self.notes),
                "at_s": self.at_s}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Snapshot | None:
        if not isinstance(d, dict):
            return None
        try:
            return cls(groups=tuple(Group.from_dict(g) for g in d.get("groups") or ()),
                       tools=tuple(d.get("tools") or ()), took_s=float(d.get("took_s") or 0.0),
                       notes=tuple(str(n) for n in d.get("notes") or ()), at_s=d.get("at_s"))
        except (TypeError, ValueError):
            return None


def _place_key(g: Group) -> str:
    """Where a group waits, for comparing two hangs. A thread that waits on nothing is at its place
    whether or not it held the CPU when read, and that place is its function: a loop that spins is
    read at whichever of its lines runs. A thread that waits is at its function and its source
    text: lines added above it (another commit's, another hunk's) move its line, not its wait."""
    if g.device:
        return f"gpu:{g.place}:{g.wait}"
    if g.wait in ("", ON_CPU):
        return f"host:{_LINE.sub('', g.place)}:"
    return f"host:{_LINE.sub('', g.place)}:{g.instruction}:{g.wait}" if g.instruction else f"host:{g.place}:{g.wait}"


def same_place(a: Snapshot | None, b: Snapshot | None) -> bool | None:
    """True when both show waits at the same places, False when they differ, None when either
    has nothing to compare (no snapshot, or nothing read)."""
    if a is None or b is None or not a.groups or not b.groups:
        return None
    # Compare like with like: GPU places where both read the GPU, else host places.
    if a.device and b.device:
        return {p for p in a.places() if p.startswith("gpu:")} == {p for p in b.places() if p.startswith("gpu:")}
    return {p for p in a.places() if p.startswith("host:")} == {p for p in b.places() if p.startswith("host:")}


def ranges(numbers: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> '0-3, 5'."""
    out: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


# waits that end only when another thread, warp or process acts: with every group in one of them,
# nothing the run does on its own can end it (a sleep, a computation, I/O or a GPU sync may end)
DEADLOCK_WAITS = {"join", "condition wait", "event wait", "barrier wait", "semaphore", "queue", "lock", "wait",
                  "mbarrier try_wait", "named barrier"}


def deadlocked(stuck: dict | None) -> bool:
    """Where the run was stopped (a snapshot's dict), every group waits on a synchronization
    primitive (on a GPU, every warp group read: the host thread then only waits for the kernel):
    a hang, not a slow run. A host picture with a note (a process not read) shows no deadlock."""
    snap = Snapshot.from_dict(stuck)
    groups = [g for g in snap.groups if g.device] or list(snap.groups) if snap else []
    if snap and snap.notes and not snap.device:
        return False    # a process the host reading missed (refused, timed out) may be the one at work
    # the kind of wait without its details: 'named barrier 1, 160 threads' is a 'named barrier'
    return bool(groups) and all(re.sub(r" \d.*$", "", g.wait) in DEADLOCK_WAITS for g in groups)
