"""The ledger's file under SQLite: its journal mode, busy retries, and a read-only connection.

network_fs       -- the network file system a path is on (WAL's shared memory is never shared
                    between hosts there, so the ledger keeps the rollback journal).
_retry_busy      -- one statement retried while another process holds a lock it cannot wait for.
_connect_readonly -- open without writing anything; its close leaves no -wal or -shm file (_Reader;
                    `_hands_off`: none is made beside a ledger of another user's).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import time
from pathlib import Path

from bisectk.errors import LedgerError

BUSY_TIMEOUT_S = 30.0


MOUNTS = "/proc/self/mounts"
# file systems where several hosts may open one file: SQLite's WAL keeps its index in shared memory
# (an mmap of the -shm file), which two hosts never share ("WAL does not work over a network
# filesystem", SQLite's documentation): a cluster's home or project directory
NETWORK_FS = ("nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "smbfs", "ceph", "beegfs", "glusterfs",
              "fuse.glusterfs", "fuse.sshfs", "fuse.cephfs", "fuse.beegfs", "afs", "9p", "virtiofs", "panfs",
              "wekafs", "fuse.weka")


def network_fs(path: Path) -> str | None:
    """The type of the network file system `path` is on (its longest mount point in /proc), or None."""
    try:
        with open(MOUNTS) as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = "", None
    for point, fstype in mounts:
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)   # \040: a space
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    return kind if kind in NETWORK_FS else None


def _use_wal(db: sqlite3.Connection, path: Path | None = None) -> None:
    """Write-ahead logging, and with it synchronous=NORMAL: a commit is no longer an fsync (1.7 ms
    of a run's six writes each on the development VM, against 0.05 ms). What a killed bisectk
    committed stays (it is in the operating system's hands); only a power loss or a kernel crash
    can take back the last commits, never corrupt the file, and a resumed command runs those again.
    A file system without WAL keeps the rollback journal and its full syncs, and so does a network
    file system (`network_fs`), where WAL's shared memory would not be shared between hosts."""
    if path is not None and network_fs(path.parent):
        return
    mode = _retry_busy(lambda: db.execute("PRAGMA journal_mode=WAL").fetchone())
    if mode and str(mode[0]).lower() == "wal":
        db.execute("PRAGMA synchronous=NORMAL")


def _connect_writer(path: Path) -> sqlite3.Connection:
    """A read-write connection to the ledger at `path`, as opening makes it and as a ledger
    written again from its open copy (store.py _in_place) is reopened: SQLite's busy wait, and
    WAL where the file system allows it (_use_wal)."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    _use_wal(db, path)
    return db


def _retry_busy(step, limit_s: float | None = None):
    """Run one statement, retrying while another process holds a lock it cannot wait for: switching
    a new file to WAL, or reading it while another connection does, can answer SQLITE_BUSY at once
    without calling the busy handler (SQLite's deadlock avoidance), e.g. two sessions opening one
    new ledger together."""
    deadline = time.monotonic() + (BUSY_TIMEOUT_S if limit_s is None else limit_s)
    pause = 0.02
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            busy = (getattr(exc, "sqlite_errorname", "") or "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) \
                or "locked" in str(exc)
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)



def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _nearly_full(directory: Path) -> bool:
    """An I/O error where under 1 MiB is free is a full disk (SQLite reports some as IOERR)."""
    try:
        return shutil.disk_usage(directory).free < 1 << 20
    except OSError:
        return False


class _Reader(sqlite3.Connection):
    """A read-only connection that leaves the ledger's directory as it found it. SQLite makes a
    WAL ledger's -wal and -shm files for any reader, and only the last read-write connection to
    close removes them (a read-only one cannot checkpoint), so `bisectk report`, `log` or `ledger
    check` left both beside the file. Once closed, `_tidy` has SQLite do what a writer's close
    does, and nothing more: see there."""
    ledger: Path | None = None      # set once open in mode=ro (immutable=1 makes no such file)

    def close(self) -> None:
        super().close()
        if self.ledger is not None:
            _tidy(self.ledger)
            self.ledger = None


def _tidy(path: Path) -> None:
    """Remove the -wal and -shm files a reader's connection left, through SQLite: a read-write
    connection is opened, reads the schema's version (which opens the log) and is closed. SQLite
    removes both on that close only if it is the last connection of any process (it must take the
    file's exclusive lock), so a command writing the ledger meanwhile keeps them, and no new
    connection can open the log while they go. Only where the -wal file is empty (a writer killed
    before its checkpoint left frames: they stay for the next writer, and `ledger check` never
    writes the file) and the file and its directory are writable. Never raises."""
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    try:
        if not (wal.exists() or shm.exists()) or (wal.exists() and wal.stat().st_size) \
                or not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            return
        db = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            db.execute("PRAGMA schema_version").fetchone()
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        pass


def _hands_off(path: Path) -> bool:
    """Whether a reader must make no -wal or -shm file beside a ledger: one in WAL mode (its
    header's read version 2) that this process cannot write, none of whose connections is open
    (no -wal file: SQLite removes it with the last one). `mode=ro` would make both, owned by this
    user, and no close of ours could remove them (`_tidy` needs a read-write connection): the
    owner's next command then opens that -wal read-only and fails, 'attempt to write a readonly
    database'. Read as `immutable=1` instead, as a ledger in a read-only directory is."""
    if os.access(path, os.W_OK) or Path(f"{path}-wal").exists() or Path(f"{path}-shm").exists():
        return False
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2


def _connect_readonly(path: Path, checking: bool = False) -> sqlite3.Connection:
    """Open without writing anything: `mode=ro`, or `immutable=1` where not even SQLite's shared
    memory file can be made (a read-only directory); closing it removes the -wal and -shm files it
    made (_Reader). `checking`: for `ledger check` itself, whose advice for a file SQLite cannot
    open is not to run `ledger check`."""
    if not path.is_file():
        raise LedgerError(f"no ledger at {path}")
    last = None
    for query in (("immutable=1",) if _hands_off(path) else ("mode=ro", "immutable=1")):
        db = None
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, check_same_thread=False,
                                 isolation_level=None, timeout=BUSY_TIMEOUT_S, factory=_Reader)
            if query == "mode=ro":
                db.ledger = path.resolve()
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error as exc:
            last = exc
            if db is not None:
                db.close()
            if "malformed" in str(exc) or "not a database" in str(exc):
                break
        except UnicodeDecodeError:   # SQLite's own message quotes a damaged schema's bytes
            raise LedgerError(f"ledger {path} is damaged (its schema is not readable text); it was not "
                              f"changed") from None
    if checking:
        raise LedgerError(f"ledger {path}: SQLite cannot open it ({last}), so none of its rows can be read or "
                          f"salvaged; start afresh with another --ledger (this file is never changed)")
    raise LedgerError(f"ledger {path}: cannot read it ({last}); see `bisectk ledger check {path}`")
