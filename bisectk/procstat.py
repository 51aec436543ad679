"""Process identity: when a pid started, so a pid reused by another process is told apart.

Below every layer that records processes (the ledger's claims, the run records reaped at start)."""

from __future__ import annotations

import psutil


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


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped or traced (SIGSTOP, a debugger): it cannot act until it is
    continued. False when there is no such process or no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False
