"""Process identity: when a pid started, so a pid reused by another process is told apart.

Below every layer that records processes (the ledger's claims, the run records reaped at start).

`psutil` here is psutil loaded at its first use: bisectk's modules take it from here. Only what
goes wrong needs it (a tree to kill after a hang, a snapshot, a lost supervisor), and importing it
is ~15-20 ms of every command's start on a 2-core machine.
"""

from __future__ import annotations

import importlib
import os


class _OnFirstUse:
    """A module imported when one of its attributes is first read (the import lock makes that
    safe from any thread)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


psutil = _OnFirstUse("psutil")


def process_start(pid: int) -> float | None:
    """When process `pid` started, as an identity that survives clock changes: clock ticks since
    boot from /proc (a wall-clock creation time can drift with the boot time the kernel reports);
    psutil's creation time where there is no /proc. None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return float(f.read().rsplit(b")", 1)[1].split()[19])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def _state(pid: int) -> bytes | None:
    """The state letter /proc gives process `pid` (R, S, T, Z...); None when there is no such
    process or no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped or traced (SIGSTOP, a debugger): it cannot act until it is
    continued. False when there is no such process or no /proc."""
    return _state(pid) in (b"T", b"t")


def tracer(pid: int) -> int:
    """The pid of the process that traces process `pid` (ptrace: a debugger, strace); 0 when none,
    no such process or no /proc."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"TracerPid:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


def gone(pid: int) -> bool:
    """Whether process `pid` has ended: no such process, or a zombie waiting to be reaped."""
    return _state(pid) in (None, b"Z", b"X")


def owner_to_give(directory) -> tuple[int, int] | None:
    """(uid, gid) of `directory` when this process is root and another user owns it: what root
    writes there must be theirs (a CI container's root in a checkout of another uid, allowed by
    git's safe.directory), or their own git (`gc`, `worktree add`) can no longer write it. None
    otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return (st.st_uid, st.st_gid) if st.st_uid != 0 else None


def give(paths, owner: tuple[int, int] | None) -> None:
    """chown each path, and what is under a directory (links not followed), to `owner`; what is
    gone or refused is skipped (owner None: nothing to do)."""
    if owner is None:
        return
    for top in map(os.fspath, paths):
        todo = [top]
        if os.path.isdir(top) and not os.path.islink(top):
            for root, dirs, files in os.walk(top):
                todo += [os.path.join(root, n) for n in dirs + files]
        for name in todo:
            try:
                os.chown(name, *owner, follow_symlinks=False)
            except OSError:
                pass
