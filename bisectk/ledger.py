"""The ledger: every observation bisectk makes, in SQLite, so nothing runs twice.

Abstractions
------------
Ledger   -- one database file (WAL mode; on a network file system, the rollback journal; safe to
            kill at any point: each run is committed, in a transaction of its own, as soon as it
            finishes); `Ledger(path, readonly=True)` reads
            one without writing anything (for `log`, or a ledger on read-only media), and leaves
            no -wal or -shm file behind that was not in use before (_Reader). Tables:
            `runs`     -- every classified run: (subject fingerprint, configuration key, index
                          among that configuration's runs, the Run as JSON, session, time);
            `sessions` -- one row per command invocation (kind, spec, arguments, result JSON),
                          so `--resume` finds the last session of the same kind;
            `events`   -- what a session observed, in order (e.g. each commit's outcome in a
                          bisection, also when answered from the ledger), for `log` and `replay`;
            `claims`   -- (schema 2) which process is running which (fingerprint, configuration,
                          index) right now, so sessions sharing a ledger share the work;
            `logs`     -- (schema 4) the run logs of each session: their bytes once it ended, the
                          process that writes them until then, when they were last used (opened,
                          or answered from by a later command: `created`) and when they were
                          pruned (the total cap on run logs, run/logcap.py, reads this index,
                          not the disk).
            A configuration key longer than LONG_KEY characters (thousands of factors, a listing
            of thousands of hunks) is stored as its SHA-256 (schema 3; `stored_key`): written and
            looked up several times a run, the whole text cost milliseconds per run in SQLite's
            overflow pages. Schema 2 ledgers are migrated in place.
Claim    -- the protocol for that sharing. `Ledger.claim(...)` either finds the run stored, or
            takes the claim (the caller runs, then `record`s: the run is stored and the claim
            dropped in one transaction), or, while another live process holds it, waits for its
            result. A claim whose holder died (same host: its pid is gone or reused; another
            host: its time-to-live passed) is taken over.
`bisectk ledger check` and `--salvage` live in ledger_check.py; they read rows back with this
module's decoders (_run, _session, _event), the ones every command uses.
Memoisation is by (fingerprint, configuration key, run index): asking for the k-th run of a
configuration that already has k runs returns the stored one. Verdicts are derived, never
stored separately, so repeats and resumes agree by construction.

Failure modes are one line each (a `LedgerError`), never a traceback and never an overwrite: a
damaged file names `bisectk ledger check` and `--ledger`; a read-only file or directory is found
when the ledger is opened, before any subject runs; a full disk rolls the transaction back, so
nothing is recorded half-way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisectk.errors import LedgerError
from bisectk.outcome import Run
from bisectk.procstat import give, owner_to_give, process_start, stopped

SCHEMA_VERSION = 4
LONG_KEY = 512     # configuration keys longer than this are stored as their digest (stored_key)
BUSY_TIMEOUT_S = 30.0

_TABLES = {
    "meta": "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "runs": """CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        fingerprint TEXT NOT NULL,
        config_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        session INTEGER,
        created REAL NOT NULL,
        outcome TEXT NOT NULL,
        kind TEXT,
        signature TEXT,
        duration_s REAL,
        run_json TEXT NOT NULL,
        UNIQUE (fingerprint, config_key, idx))""",
    "events": """CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data_json TEXT NOT NULL,
        created REAL NOT NULL)""",
    "sessions": """CREATE TABLE IF NOT EXISTS sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        command TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        args_json TEXT NOT NULL,
        created REAL NOT NULL,
        finished REAL,
        result_json TEXT)""",
    "claims": """CREATE TABLE IF NOT EXISTS claims (
        fingerprint TEXT NOT NULL,
        config_key TEXT NOT NULL,
        idx INTEGER NOT NULL,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        pid_start REAL,
        created REAL NOT NULL,
        expires REAL NOT NULL,
        PRIMARY KEY (fingerprint, config_key, idx))""",
    "logs": """CREATE TABLE IF NOT EXISTS logs (
        session INTEGER PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        pid_start REAL,
        created REAL NOT NULL,
        bytes INTEGER NOT NULL DEFAULT 0,
        settled REAL,
        pruned REAL)""",
}
# schema N -> N+1: what to run on a ledger written by an older bisectk (its data stays as it is)
_MIGRATIONS = {1: [_TABLES["claims"]],
               2: [f"UPDATE runs SET config_key = bisectk_key(config_key) WHERE length(config_key) > {LONG_KEY}",
                   f"UPDATE claims SET config_key = bisectk_key(config_key) WHERE length(config_key) > {LONG_KEY}"],
               3: [_TABLES["logs"]]}


def stored_key(key: str) -> str:
    """How a configuration key is stored: as it is, or its digest when longer than LONG_KEY."""
    if len(key) <= LONG_KEY:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Claim:
    """The right to run the idx-th run of a configuration, or the run itself when it was stored
    while we waited (`run` is then set, and there is nothing to execute)."""
    ledger: "Ledger"
    fingerprint: str
    config_key: str
    idx: int
    owner: str
    run: Run | None = None
    held: bool = True

    def record(self, run: Run, session: int | None = None) -> int:
        """Store the run and give up the claim, atomically; returns the index it was stored at."""
        index = self.ledger.add_run(self.fingerprint, self.config_key, run, session, claim=self)
        self.held = False
        return index

    def release(self) -> None:
        if self.held:
            self.held = False
            self.ledger._release(self)

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()  # an interrupted or failed run leaves the slot to whoever comes next


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


# SQLite's quick_check reads the whole file (~1.8 ms a MB on the development VM: 0.22 s at 120 MB,
# a ledger of 200,000 runs), so every command grew with its ledger. Past this size the check that
# opening makes runs once a day (its time kept in `meta`); `bisectk ledger check` always makes it,
# and damage met by any read or write is said as damage all the same (Ledger._error)
FULL_CHECK_BYTES = 32 << 20
CHECK_EVERY_S = 24 * 3600


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _quick_check(db: sqlite3.Connection) -> list:
    return [r[0] for r in _retry_busy(lambda: db.execute("PRAGMA quick_check(5)").fetchall())]


def _checked_lately(db: sqlite3.Connection) -> bool:
    """A ledger whose last whole check at opening passed within CHECK_EVERY_S (a clock set back
    counts as not lately)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key='checked'").fetchone()
        return row is not None and 0 <= time.time() - float(row[0]) < CHECK_EVERY_S
    except (sqlite3.Error, ValueError, TypeError):
        return False


class Ledger:
    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self.lock = threading.Lock()
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.pid_start = process_start(self.pid)
        self.notices: list[str] = []
        self.on_notice = None   # called with each notice (the session prints it)
        self._claimed: set[str] = set()     # owners of the claims this object holds (given back at close)
        if readonly:
            self.db = _connect_readonly(self.path)
        else:
            self._check_writable()
            try:
                self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                          timeout=BUSY_TIMEOUT_S)
            except sqlite3.Error as exc:
                raise self._error(exc, "opening") from None
        self.identity = _file_id(self.path)   # which file this connection writes (see _in_place)
        self.db.create_function("bisectk_key", 1, stored_key, deterministic=True)   # migration 2 -> 3
        with self._read("opening"):
            self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            if not readonly:
                _use_wal(self.db, self.path)
            big = _size(self.path) > FULL_CHECK_BYTES
            lately = big and _checked_lately(self.db)
            bad = ["ok"] if lately else _quick_check(self.db)
        if bad != ["ok"]:
            raise self._damaged("; ".join(map(str, bad)))
        self.schema = self._prepare() if not readonly else self._version()
        if not readonly and big and not lately:
            with self._write("noting when the ledger was checked"):
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('checked', ?)", (repr(time.time()),))

    # -- opening ------------------------------------------------------------------------
    def _check_writable(self) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"ledger {self.path}: cannot create {directory} ({exc.strerror or exc}); "
                              f"use --ledger with a writable place") from None
        if self.path.is_dir():
            raise LedgerError(f"ledger {self.path} is a directory; give --ledger a file name")
        if self.path.exists() and not self.path.is_file():
            raise LedgerError(f"ledger {self.path} is not a regular file (a device, a FIFO); give --ledger a file name")
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise LedgerError(f"ledger {self.path} is read-only; make it writable or use another --ledger "
                              f"(nothing has run)")
        if not os.access(directory, os.W_OK):
            raise LedgerError(f"ledger {self.path}: its directory {directory} is not writable (SQLite keeps "
                              f"its journal beside the file); use another --ledger (nothing has run)")

    def _version(self) -> int | None:
        with self._read("reading the schema version"):
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "meta" not in tables:
                if tables:
                    raise LedgerError(f"{self.path} is an SQLite database but not a bisectk ledger "
                                      f"(tables: {', '.join(sorted(tables))[:120]}); use another --ledger")
                return None
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        try:
            return int(row[0]) if row else None
        except ValueError:
            raise self._damaged(f"schema version {row[0]!r}") from None

    def _prepare(self) -> int:
        """Create the tables of a new ledger, or migrate an older one; a write either way, so a
        read-only file is found here, before anything runs."""
        with self._write("preparing"):
            version = self._version()
            if version is None:
                for ddl in _TABLES.values():
                    self.db.execute(ddl)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                return SCHEMA_VERSION
            if version > SCHEMA_VERSION:
                raise LedgerError(f"ledger {self.path}: schema version {version}, this bisectk reads up to "
                                  f"{SCHEMA_VERSION}; upgrade bisectk or use another --ledger")
            while version < SCHEMA_VERSION:
                for ddl in _MIGRATIONS[version]:
                    self.db.execute(ddl)
                version += 1
            self.db.execute("UPDATE meta SET value=? WHERE key='schema'", (str(version),))
            return version

    def close(self) -> None:
        if not self.readonly:
            self._give_back_claims()
        with self.lock:
            self.db.close()
        if not self.readonly:   # root in another user's directory: the ledger and its journals are theirs
            ours = self.path.parent.name in ("bisectk", ".bisectk")     # made for it: <git dir>/bisectk, .bisectk
            place = self.path.parent.parent if ours else self.path.parent
            give([self.path.parent] if ours else [f"{self.path}{s}" for s in ("", "-wal", "-shm", "-journal")],
                 owner_to_give(place))

    # -- a ledger deleted or replaced while in use ------------------------------------------
    def _in_place(self) -> None:
        """Before each write: is this connection's file still the one at `path`? A ledger deleted
        while a command runs (`rm -rf .bisectk`, `git clean -xdf`) is still open here, so SQLite
        would go on writing to a file nobody can reach, and every observation would be lost when
        the command ends. It is written back from the open copy instead (everything in it: earlier
        sessions too, since deleting a ledger is no way to start afresh: --fresh or another
        --ledger is), and said. A file put in its place by someone else is never overwritten: the
        open copy is saved beside it and this command goes on there."""
        if self.readonly or _file_id(self.path) == self.identity:
            return
        replaced = self.path.exists()
        target = (self.path.with_name(f"{self.path.stem}.saved-{os.getpid()}{self.path.suffix}") if replaced
                  else self.path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            scratch = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
            copy = sqlite3.connect(scratch)
            try:
                self.db.backup(copy)   # reads the open (unlinked) file and its journal
            finally:
                copy.close()
            self.db.close()            # before the new file exists: closing removes the old journal by name
            try:
                os.link(scratch, target)   # never over a file that appeared meanwhile
            except FileExistsError:
                target = target.with_name(f"{self.path.stem}.saved-{os.getpid()}{self.path.suffix}")
                os.replace(scratch, target)
            else:
                os.unlink(scratch)
            self.db = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
            self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            _use_wal(self.db, Path(target))
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"ledger {self.path} was {'replaced' if replaced else 'deleted'} while this command "
                              f"ran, and it could not be written again ({exc}); what this command observed is "
                              f"lost") from None
        (runs,) = self.db.execute("SELECT COUNT(*) FROM runs").fetchone()
        what = "deleted" if not replaced else "replaced by another file"
        text = (f"the ledger {self.path} was {what} while this command ran; "
                + (f"it was written again from the copy still open ({runs} runs kept)" if target == self.path else
                   f"the copy still open ({runs} runs) is saved as {target}, and this command goes on there")
                + "; no observation is lost")
        self.path, self.identity = target, _file_id(target)
        self.notices.append(text)
        if self.on_notice is not None:
            self.on_notice(text)

    # -- errors -------------------------------------------------------------------------
    def _damaged(self, detail: str) -> LedgerError:
        detail = " ".join(detail.split())     # quick_check's findings come as lines: the error is one
        return LedgerError(f"ledger {self.path} is damaged ({detail}); it was not changed. See what can be "
                           f"saved with `bisectk ledger check {self.path}`, or start afresh with another --ledger")

    def _error(self, exc: sqlite3.Error, doing: str) -> LedgerError:
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = " ".join(str(exc).split())
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
            return self._damaged(text[:200])
        if "Could not decode to UTF-8" in text:   # a stored text's bytes changed (sqlite3 quotes it: cut)
            return self._damaged("a stored text is not UTF-8: " + text.split(" with text")[0][:120])
        if name.startswith("SQLITE_FULL") or "disk is full" in text or (
                name.startswith("SQLITE_IOERR") and _nearly_full(self.path.parent)):
            return LedgerError(f"ledger {self.path}: the disk is full ({text}) while {doing}; nothing was "
                               f"recorded half-way. Free some space and run the command again")
        if name.startswith("SQLITE_READONLY"):
            return LedgerError(f"ledger {self.path} is read-only ({text}); make it writable or use another --ledger")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return LedgerError(f"ledger {self.path} stayed locked by another process for {BUSY_TIMEOUT_S:g} s "
                               f"while {doing}; try again, or use another --ledger")
        if name.startswith("SQLITE_CANTOPEN"):
            return LedgerError(f"ledger {self.path}: cannot open it ({text}); check the file and its directory "
                               f"are readable and writable, or use another --ledger")
        if name.startswith("SQLITE_IOERR"):
            return LedgerError(f"ledger {self.path}: I/O error while {doing} ({text}); is the disk full or "
                               f"failing? Nothing was recorded half-way")
        return LedgerError(f"ledger {self.path}: {text} (while {doing})")

    @contextmanager
    def _read(self, doing: str):
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc, doing) from None
        except UnicodeDecodeError as exc:   # a stored text's bytes changed: SQLite checks pages, not text
            raise self._damaged(f"a stored text is not UTF-8 ({exc.reason})") from None

    @contextmanager
    def _write(self, doing: str):
        """One transaction, holding SQLite's write lock from the start (BEGIN IMMEDIATE): what it
        reads cannot change under it, and on any error it is rolled back whole."""
        with self.lock:
            self._in_place()
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._error(exc, doing) from None
            try:
                yield
                self.db.execute("COMMIT")
            except BaseException as exc:
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite already rolled back (e.g. after SQLITE_FULL)
                if isinstance(exc, sqlite3.Error):
                    raise self._error(exc, doing) from None
                if isinstance(exc, UnicodeDecodeError):
                    raise self._damaged(f"a stored text is not UTF-8 ({exc.reason})") from None
                raise

    # -- what a subject's runs imported (the memo key's manifest, run/memokey.py) ---------
    def sources(self, key: str) -> list[str]:
        """The source files recorded as imported by the runs of a subject (`key`: its memo key
        without them); kept in `meta` as `sources:<key>`, so no schema change."""
        with self.lock, self._read("reading recorded sources"):
            row = self.db.execute("SELECT value FROM meta WHERE key=?", (f"sources:{key}",)).fetchone()
        try:
            value = json.loads(row[0]) if row else []
        except ValueError:
            return []
        return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []

    def add_sources(self, key: str, paths: list[str]) -> list[str]:
        """Add to a subject's recorded sources (merged with what other sessions added); returns all."""
        with self._write("recording sources"):
            row = self.db.execute("SELECT value FROM meta WHERE key=?", (f"sources:{key}",)).fetchone()
            try:
                have = set(json.loads(row[0])) if row else set()
            except (ValueError, TypeError):
                have = set()
            merged = sorted(have | set(paths))
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"sources:{key}", json.dumps(merged)))
        return merged

    # -- runs ---------------------------------------------------------------------------
    def _key(self, config_key: str) -> str:
        """A configuration key as this ledger stores it (a ledger read as it is, older than
        schema 3, holds long keys whole)."""
        return stored_key(config_key) if self.schema is None or self.schema >= 3 else config_key

    def runs(self, fingerprint: str, config_key: str) -> list[Run]:
        config_key = self._key(config_key)
        with self.lock, self._read("reading runs"):
            rows = self.db.execute(
                "SELECT run_json FROM runs WHERE fingerprint=? AND config_key=? ORDER BY idx",
                (fingerprint, config_key)).fetchall()
        return [self._run(r[0]) for r in rows]

    def run_at(self, fingerprint: str, config_key: str, idx: int) -> Run | None:
        config_key = self._key(config_key)
        with self.lock, self._read("reading a run"):
            row = self.db.execute("SELECT run_json FROM runs WHERE fingerprint=? AND config_key=? AND idx=?",
                                  (fingerprint, config_key, idx)).fetchone()
        return self._run(row[0]) if row else None

    def add_run(self, fingerprint: str, config_key: str, run: Run, session: int | None = None,
                claim: Claim | None = None) -> int:
        """Append a run as the next index of its configuration (and drop `claim`, in the same
        transaction); returns that index. Safe with concurrent writers: the index is chosen under
        the write lock, so two processes never collide on it."""
        config_key = self._key(config_key)
        with self._write("recording a run"):
            (n,) = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM runs WHERE fingerprint=? AND config_key=?",
                                   (fingerprint, config_key)).fetchone()
            self.db.execute(
                "INSERT INTO runs (fingerprint, config_key, idx, session, created, outcome, kind, signature,"
                " duration_s, run_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (fingerprint, config_key, n, session, time.time(), run.outcome.value,
                 run.kind.value if run.kind else None, run.signature, run.duration_s,
                 json.dumps(run.to_dict())))
            if claim is not None:
                self.db.execute("DELETE FROM claims WHERE fingerprint=? AND config_key=? AND idx=? AND owner=?",
                                (claim.fingerprint, claim.config_key, claim.idx, claim.owner))
        if claim is not None:
            self._claimed.discard(claim.owner)
        return n

    def forget_session_runs(self, session: int) -> int:
        """Remove the runs a session stored (their inputs changed under them); returns how many."""
        with self._write("removing runs"):
            return self.db.execute("DELETE FROM runs WHERE session=?", (session,)).rowcount

    # -- claims -------------------------------------------------------------------------
    def claim(self, fingerprint: str, config_key: str, idx: int, *, ttl: float = 3600.0,
              poll_s: float = 0.05, max_poll_s: float = 1.0, on_wait=None) -> Claim:
        """The idx-th run of a configuration, for this process to execute or to read.

        Returns a Claim with `run` set when the run is (or becomes, while we wait) stored; else a
        held claim: the caller executes, then `record`s (or `release`s, e.g. via `with`). While
        another live process holds the claim this waits, polling; `on_wait(holder)` is called with
        the holder's description, once, and again when it changes (a holder stopped by Ctrl-Z or
        SIGSTOP is alive, so the wait goes on, but the waiter is told why nothing moves). `ttl`
        bounds a claim held from another host, whose liveness cannot be checked."""
        config_key = self._key(config_key)
        owner = uuid.uuid4().hex
        told = None
        delay = poll_s
        while True:
            with self._write("claiming a run"):
                row = self.db.execute("SELECT run_json FROM runs WHERE fingerprint=? AND config_key=? AND idx=?",
                                      (fingerprint, config_key, idx)).fetchone()
                if row:
                    return Claim(self, fingerprint, config_key, idx, owner, self._run(row[0]), held=False)
                holder = self.db.execute(
                    "SELECT host, pid, pid_start, expires FROM claims WHERE fingerprint=? AND config_key=? AND idx=?",
                    (fingerprint, config_key, idx)).fetchone()
                if holder is None or not _holder_alive(*holder, this_host=self.host):
                    self.db.execute("INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?,?,?,?,?)",
                                    (fingerprint, config_key, idx, owner, self.host, self.pid, self.pid_start,
                                     time.time(), time.time() + ttl))
                    self._claimed.add(owner)
                    return Claim(self, fingerprint, config_key, idx, owner)
            if on_wait and (words := _holder_words(holder[0], holder[1], this_host=self.host)) != told:
                on_wait(words)
                told = words
            time.sleep(delay)
            delay = min(max_poll_s, delay * 1.5)

    def _release(self, claim: Claim) -> None:
        try:
            with self._write("releasing a claim"):
                self.db.execute("DELETE FROM claims WHERE fingerprint=? AND config_key=? AND idx=? AND owner=?",
                                (claim.fingerprint, claim.config_key, claim.idx, claim.owner))
            self._claimed.discard(claim.owner)
        except LedgerError:
            pass  # a claim left behind expires with its process

    def _give_back_claims(self) -> None:
        """At close: the claims still held are of runs this command leaves unrecorded (an interrupt
        with runs under way in other threads, which cannot record once the ledger is closed);
        they go, rather than stay as stale rows for another command to take over. Never raises."""
        owners = list(self._claimed)
        if not owners:
            return
        try:
            with self._write("giving back claims"):
                self.db.executemany("DELETE FROM claims WHERE owner=?", [(o,) for o in owners])
            self._claimed.clear()
        except (LedgerError, sqlite3.Error):
            pass

    # -- sessions -----------------------------------------------------------------------
    def open_session(self, command: str, fingerprint: str, args: dict[str, Any]) -> int:
        with self._write("opening a session"):
            cur = self.db.execute(
                "INSERT INTO sessions (command, fingerprint, args_json, created) VALUES (?,?,?,?)",
                (command, fingerprint, json.dumps(args, sort_keys=True, default=str), time.time()))
            # its logs are this process's until it settles them (a concurrent command's cap spares them)
            self.db.execute("INSERT OR REPLACE INTO logs (session, host, pid, pid_start, created) VALUES (?,?,?,?,?)",
                            (cur.lastrowid, self.host, self.pid, self.pid_start, time.time()))
        return cur.lastrowid

    def close_session(self, session: int, result: dict[str, Any]) -> None:
        with self._write("closing a session"):
            self.db.execute("UPDATE sessions SET finished=?, result_json=? WHERE id=?",
                            (time.time(), json.dumps(result, default=str), session))

    def drop_session_if_empty(self, session: int) -> None:
        """Remove a session that stored nothing (no result, run or event): one a command opened and
        then left before its first run (a refused `--resume`, a usage error found late, Ctrl-C),
        which would otherwise be the `--resume` a retry finds, and the bisection `log` prints."""
        with self._write("removing an empty session"):
            self.db.execute("DELETE FROM sessions WHERE id=? AND result_json IS NULL"
                            " AND NOT EXISTS (SELECT 1 FROM runs WHERE session=?)"
                            " AND NOT EXISTS (SELECT 1 FROM events WHERE session=?)", (session, session, session))
            self.db.execute("DELETE FROM logs WHERE session=? AND NOT EXISTS (SELECT 1 FROM sessions WHERE id=?)",
                            (session, session))

    def last_session(self, command: str, fingerprint: str | None = None,
                     before: int | None = None) -> dict[str, Any] | None:
        """The newest session of `command` (of that subject fingerprint; older than session `before`)."""
        q = "SELECT id, command, fingerprint, args_json, created, finished, result_json FROM sessions WHERE command=?"
        args: tuple = (command,)
        if fingerprint:
            q, args = q + " AND fingerprint=?", (*args, fingerprint)
        if before is not None:
            q, args = q + " AND id<?", (*args, before)
        with self.lock, self._read("reading sessions"):
            row = self.db.execute(q + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return self._decode(_session, row) if row else None

    def last_finished_session(self) -> dict[str, Any] | None:
        """The newest session that stored a result (any command)."""
        with self.lock, self._read("reading sessions"):
            row = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                  " FROM sessions WHERE result_json IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
        return self._decode(_session, row) if row else None

    def session(self, session_id: int) -> dict[str, Any] | None:
        with self.lock, self._read("reading a session"):
            row = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                  " FROM sessions WHERE id=?", (session_id,)).fetchone()
        return self._decode(_session, row) if row else None

    # -- the run logs' index (run/logcap.py keeps their total under a cap) -------------------
    def settle_logs(self, session: int, size: int) -> bool:
        """A session's logs are complete: `size` bytes, no longer its process's to write. False
        when the index holds no such session (one dropped as empty)."""
        with self._write("indexing run logs"):
            return self.db.execute("UPDATE logs SET bytes=?, settled=? WHERE session=?",
                                   (size, time.time(), session)).rowcount > 0

    def used_logs(self, sessions) -> None:
        """Sessions whose runs a command answered from: their logs count as used now (`created`
        is when they were opened or last so used; the cap prunes the least recently used first)."""
        now = time.time()
        with self._write("indexing run logs"):
            self.db.executemany("UPDATE logs SET created=? WHERE session=? AND pruned IS NULL",
                                [(now, s) for s in sorted(sessions)])

    def log_total(self) -> int:
        """The bytes of the settled, unpruned sessions' logs: one indexed sum, no walk of the disk."""
        with self.lock, self._read("reading the run logs' index"):
            return int(self.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM logs WHERE pruned IS NULL").fetchone()[0])

    def log_sessions(self, unsettled: bool = False) -> list[tuple[int, int, bool, bool]]:
        """(session, bytes, settled, writer alive) of every unpruned session's logs (`unsettled`:
        of those not settled yet), oldest first. A writer on another host is taken to be alive:
        its process cannot be looked at from here."""
        with self.lock, self._read("reading the run logs' index"):
            rows = self.db.execute("SELECT session, bytes, settled, host, pid, pid_start FROM logs WHERE pruned IS NULL"
                                   + (" AND settled IS NULL" if unsettled else "") + " ORDER BY created, session").fetchall()
        return [(s, b, settled is not None, settled is None and _holder_alive(h, p, st, float("inf"), this_host=self.host))
                for s, b, settled, h, p, st in rows]

    def indexed_logs(self) -> set[int]:
        """The sessions the index holds (pruned or not)."""
        with self.lock, self._read("reading the run logs' index"):
            return {r[0] for r in self.db.execute("SELECT session FROM logs")}

    def pruned_logs(self, session: int) -> None:
        with self._write("indexing run logs"):
            self.db.execute("UPDATE logs SET pruned=? WHERE session=?", (time.time(), session))

    def was_pruned(self, session: int) -> bool:
        with self.lock, self._read("reading the run logs' index"):
            row = self.db.execute("SELECT pruned FROM logs WHERE session=?", (session,)).fetchone()
        return bool(row and row[0] is not None)

    # -- events -------------------------------------------------------------------------
    def add_event(self, session: int, kind: str, data: dict[str, Any]) -> None:
        with self._write("recording an event"):
            self.db.execute("INSERT INTO events (session, kind, data_json, created) VALUES (?,?,?,?)",
                            (session, kind, json.dumps(data, default=str), time.time()))

    def events(self, session: int, kind: str | None = None) -> list[dict[str, Any]]:
        q, args = "SELECT kind, data_json FROM events WHERE session=?", (session,)
        if kind:
            q, args = q + " AND kind=?", (session, kind)
        with self.lock, self._read("reading events"):
            rows = self.db.execute(q + " ORDER BY id", args).fetchall()
        return [self._decode(_event, r) for r in rows]

    # -- decoding: SQLite checks its pages, not the JSON inside them ------------------------
    def _decode(self, fn, row):
        try:
            return fn(row)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self._damaged(f"a stored record cannot be read: {type(exc).__name__}: {exc}"[:200]) from None

    def _run(self, text: str) -> Run:
        return self._decode(_run, text)


# How each stored row is read back: what a command does with a row, and what `check` does with
# every row, so a row `check` calls readable is one no command finds damaged. Each raises
# ValueError, TypeError, KeyError or AttributeError for a row that cannot be read.
def _run(text: str) -> Run:
    return Run.from_dict(json.loads(text))


def _session(row) -> dict[str, Any]:
    args, result = json.loads(row[3]), json.loads(row[6]) if row[6] else None
    if not isinstance(args, dict) or not (result is None or isinstance(result, dict)):
        raise TypeError("a session's arguments or result is not a JSON object")
    if not isinstance(row[1], str) or not isinstance(row[2], str):
        raise TypeError("a session's command or fingerprint is not text")
    return {"id": row[0], "command": row[1], "fingerprint": row[2], "args": args,
            "created": row[4], "finished": row[5], "result": result}


def _event(row) -> dict[str, Any]:
    return {"kind": row[0], **json.loads(row[1])}


def _holder_words(host: str, pid: int, *, this_host: str) -> str:
    """A claim's holder in words, and, when it is stopped, how it can go on."""
    words = f"pid {pid} on {host}"
    if host == this_host and stopped(pid):
        words += (f", which is stopped (Ctrl-Z, SIGSTOP or a debugger): continue it (`fg`, "
                  f"`kill -CONT {pid}`) or end it, and this command goes on")
    return words


def _holder_alive(host: str, pid: int, pid_start: float | None, expires: float, *, this_host: str) -> bool:
    """Whether a claim's holder may still deliver: on this host, its process (the same one, not
    a reused pid) is alive; on another, its time-to-live has not passed."""
    if host != this_host:
        return time.time() < expires
    start = process_start(pid)
    if start is None:
        return False
    return pid_start is None or start == pid_start  # else the pid was reused


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


def _connect_readonly(path: Path, checking: bool = False) -> sqlite3.Connection:
    """Open without writing anything: `mode=ro`, or `immutable=1` where not even SQLite's shared
    memory file can be made (a read-only directory); closing it removes the -wal and -shm files it
    made (_Reader). `checking`: for `ledger check` itself, whose advice for a file SQLite cannot
    open is not to run `ledger check`."""
    if not path.is_file():
        raise LedgerError(f"no ledger at {path}")
    last = None
    for query in ("mode=ro", "immutable=1"):
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
