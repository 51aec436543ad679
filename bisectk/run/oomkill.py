"""Whether the kernel's OOM killer ended a run: evidence read around the run, never a guess.

A subject that the OOM killer ends dies of SIGKILL, as one that another process killed does, and
before this a run of either read "crash (SIGKILL)" alike. bisectk never sends the subject SIGKILL
by itself before it has called a hang (a hang is classified as one whatever ended it), so a
SIGKILL death is someone else's: the OOM killer, or another process. The machine can often say
which:

- the cgroup the run started in counts its OOM kills: cgroup v2 `memory.events` (`oom_kill N`),
  cgroup v1 `memory.oom_control` (the same line). Read before the run and after it, a count that
  rose is a kill in that cgroup during the run; one that did not rise is none (the counter counts
  every OOM kill of a task of the cgroup, the machine's OOM as well as the cgroup's limit);
- the kernel log (`/dev/kmsg`, readable by root or where `dmesg_restrict` is off) names the
  process it killed: `Killed process PID (...)`, `oom-kill:...,pid=PID,...`, among the records
  logged during the run.

Either one that says so is evidence; a count that is readable and did not rise says it was not
the OOM killer; otherwise it cannot be known (a cgroup path this process cannot see, as in some
containers, and no readable log) and the words say both possibilities. Limits: another process of
the same cgroup killed for memory at the same moment raises the counter too (with `--jobs`, a
sibling run); a run that moved itself to another cgroup is not followed there.

Abstractions
------------
OomWatch     -- begun before a run (the counter read, the log's end marked), asked once after it:
                `killed(pid)` True (evidence of an OOM kill), False (the counter did not rise),
                None (nothing to tell by). `counter` is the seam a test passes a file of its own.
counter_file -- the OOM-kill counter file of a process's cgroup (v2, else v1's memory
                controller), or None where this process cannot see it.
"""

from __future__ import annotations

import errno
import os
import re

KMSG = "/dev/kmsg"
MAX_RECORDS = 20000      # the kernel log records read after a run, at most (a chatty kernel)


def counter_file(pid: int, proc: str = "/proc") -> str | None:
    """The file holding `oom_kill N` for `pid`'s cgroup, or None (no cgroup file readable there)."""
    try:
        with open(f"{proc}/{pid}/cgroup") as f:
            lines = f.read().splitlines()
        with open(f"{proc}/self/mountinfo") as f:
            mounts = f.read().splitlines()
    except OSError:
        return None
    v2, v1 = None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    for path, fstype, name in ((v2, "cgroup2", "memory.events"), (v1, "cgroup", "memory.oom_control")):
        if path is None:
            continue
        for root, point in _mounts(mounts, fstype):
            if not (path == root or path.startswith(root.rstrip("/") + "/")):
                continue
            rel = path[len(root.rstrip("/")):].lstrip("/")
            candidate = os.path.join(point, rel, name)
            if _count(candidate) is not None:
                return candidate
    return None


def _mounts(mounts: list[str], fstype: str):
    """(root inside the hierarchy, mount point) of every mount of `fstype` (v1: the memory one)."""
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, more = left.split(), right.split()
        if len(fields) < 5 or not more or more[0] != fstype:
            continue
        if fstype == "cgroup" and "memory" not in (more[-1].split(",") if len(more) >= 3 else []):
            continue
        yield _unescape(fields[3]), _unescape(fields[4])


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _count(path: str | None) -> int | None:
    if not path:
        return None
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


class OomWatch:
    """Evidence of an OOM kill during one run: begun before it, asked once after it."""

    def __init__(self, pid: int | None = None, *, counter: str | None = None, kmsg: str | None = KMSG,
                 proc: str = "/proc"):
        # the run starts in this process's cgroup (its processes inherit it) unless told another
        self.counter = counter if counter is not None else counter_file(pid or os.getpid(), proc)
        self.before = _count(self.counter)
        self.log = _open_log(kmsg) if kmsg else None

    def killed(self, pid: int | None) -> bool | None:
        """True: the counter rose during the run, or the kernel log names `pid` as killed; False:
        the counter is readable and did not rise; None: nothing here can tell."""
        try:
            named = pid is not None and self._log_names(pid)
        finally:
            self.close()
        after = _count(self.counter)
        if named or (self.before is not None and after is not None and after > self.before):
            return True
        if self.before is not None and after is not None:
            return False
        return None

    def close(self) -> None:
        if self.log is not None:
            try:
                os.close(self.log)
            except OSError:
                pass
            self.log = None

    def _log_names(self, pid: int) -> bool:
        if self.log is None:
            return False
        said = re.compile(rf"Killed process {pid} \(|oom-kill:.*[,:]pid={pid},|reaped process {pid} \(")
        for _ in range(MAX_RECORDS):
            try:
                record = os.read(self.log, 8192)
            except BlockingIOError:
                return False
            except OSError as exc:
                if exc.errno == errno.EPIPE:    # records overwritten while we read: read on
                    continue
                return False
            if not record:
                return False
            if said.search(record.decode("utf-8", "replace")):
                return True
        return False


def _open_log(path: str) -> int | None:
    """The kernel log, positioned after its last record (only what the run's time logs is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_END)
    except OSError:
        os.close(fd)
        return None
    return fd
