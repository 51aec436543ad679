"""Private directories outside the user's tree, registered so a SIGKILL cannot leak them.

`diff` copies GOOD into a scratch tree (`scratch-<session>-<pid>` beside its ledger) and `triage`
exports two commits into a temporary directory (`bisectk-triage-*` in TMPDIR). Both are removed
when the command ends, but a SIGKILL ends it before that: each such directory is a full copy of a
source tree, leaked every time.

Abstractions
------------
remove_tree    -- rmtree that also removes what a run made unwritable or unreadable (`chmod 555
                  src`, `chmod 000 out`), which rmtree alone leaves to any user but root.
register       -- record a directory with its owner (host, pid and the pid's start time) before it
                  is created: one small JSON file in `$XDG_CACHE_HOME/bisectk/scratch/`.
Registration   -- the handle: `remove()` deletes the directory and its record (the normal end).
temporary_dir  -- a registered `tempfile.mkdtemp`, removed on exit.
remove_stale   -- called when a command starts: the directories of records whose owner is gone
                  (or whose pid now names another process) are deleted, and their records; a
                  record of another host (a home shared by a cluster's nodes) is that host's to
                  judge, as a pid says nothing here. Only a
                  directory whose name has one of bisectk's own prefixes is ever deleted, so a
                  damaged or forged record cannot point it at the user's files.
ledger_scratch -- whether a file lies in one of bisectk's own scratch places (a pool's worktree,
                  an exported tree, a scratch tree beside the ledger): what the runner leaves out
                  of a run's recorded imports (run/runner.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

from bisectk.procstat import process_start

PREFIXES = ("scratch-", "triage-", "bisectk-triage-", "bisectk-scratch-")


def registry_dir() -> Path:
    from bisectk.run.process import cache_home
    return cache_home() / "bisectk" / "scratch"


def remove_tree(path: str | os.PathLike) -> None:
    """Remove the directory `path` and everything under it, as far as it can (never raises). What
    rmtree left (a directory without write or search permission for its owner) is retried after
    every directory under `path` is given u+rwx; links are never followed, so only the tree's own
    directories change mode."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path) or os.path.islink(path):
        return
    stack = [os.fspath(path)]
    while stack:
        d = stack.pop()
        try:
            mode = os.lstat(d).st_mode
            if not stat.S_ISDIR(mode):
                continue
            if mode & stat.S_IRWXU != stat.S_IRWXU:
                os.chmod(d, mode | stat.S_IRWXU)
            with os.scandir(d) as entries:
                stack += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
    shutil.rmtree(path, ignore_errors=True)


class Registration:
    def __init__(self, path: Path, record: Path | None):
        self.path, self.record = Path(path), record

    def remove(self) -> None:
        remove_tree(self.path)
        if self.record is not None:
            try:
                self.record.unlink()
            except OSError:
                pass
            self.record = None


def register(path: str | os.PathLike) -> Registration:
    """Record `path` as this process's scratch directory (best effort: a registry that cannot be
    written leaves the directory to the normal clean-up alone)."""
    path = Path(path).resolve()
    if not path.name.startswith(PREFIXES):
        raise ValueError(f"{path}: not a bisectk scratch directory name")
    try:
        d = registry_dir()
        d.mkdir(parents=True, exist_ok=True)
        record = d / f"{uuid.uuid4().hex}.json"
        record.write_text(json.dumps({"path": str(path), "host": socket.gethostname(), "owner": os.getpid(),
                                      "owner_start": process_start(os.getpid())}))
    except OSError:
        record = None
    return Registration(path, record)


@contextmanager
def temporary_dir(prefix: str = "bisectk-triage-"):
    """A registered temporary directory (in TMPDIR), removed with its record on exit."""
    reg = register(Path(tempfile.gettempdir()) / f"{prefix}{uuid.uuid4().hex[:10]}")
    reg.path.mkdir(mode=0o700)
    try:
        yield str(reg.path)
    finally:
        reg.remove()


def remove_stale(directory: Path | None = None) -> list[Path]:
    """Delete the registered directories whose owner is gone; returns them."""
    d = directory or registry_dir()
    try:
        records = list(d.glob("*.json"))
    except OSError:
        return []
    removed = []
    host = socket.gethostname()
    for record in records:
        try:
            rec = json.loads(record.read_text())
            path, owner, owner_start = Path(rec["path"]), int(rec["owner"]), rec.get("owner_start")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if rec.get("host", host) != host:
            continue   # another node's (a shared home): its pid names nothing, or another process, here
        start = process_start(owner)
        if start is not None and (owner_start is None or start == owner_start):
            continue   # its owner is alive: another session's
        if path.is_absolute() and path.name.startswith(PREFIXES) and not path.is_symlink():
            remove_tree(path)
            removed.append(path)
        try:
            record.unlink()
        except OSError:
            pass
    return removed


_SCRATCH_MARKS = ("/bisectk-triage-", "/bisectk-scratch-", "/bisectk-warm-")


def ledger_scratch(path: str, ledger) -> bool:
    """A file in one of bisectk's own scratch places (a worktree of the pool, an exported tree, a
    diff's scratch tree beside `ledger`, a Ledger or None): it is gone by the next session, and the
    revision that made it pins its content anyway."""
    from bisectk.run.classify import WORKTREE_PATH
    if WORKTREE_PATH.search(path) or any(mark in path for mark in _SCRATCH_MARKS):
        return True
    if ledger is not None:
        try:
            first = Path(path).relative_to(ledger.path.parent.resolve()).parts[0]
        except (ValueError, IndexError):
            return False
        return first.startswith(PREFIXES)
    return False
