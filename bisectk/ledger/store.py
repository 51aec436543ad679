"""The ledger's connection: opening (and migrating), transactions, and errors said in one line.

Store    -- the base of Ledger: opens the file (writable, or read-only), checks it (SQLite's quick
            check, once a day past FULL_CHECK_BYTES), creates or migrates its tables, and gives
            the rest of the ledger `_read` and `_write` (one transaction, rolled back whole on any
            error). Before each write, a ledger deleted or replaced while in use is written back
            (`_in_place`). Its `close` gives back the claims still held (runs.py).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from bisectk.errors import LedgerError
from bisectk.ledger.schema import _MIGRATIONS, _TABLES, SCHEMA_VERSION, _run, foreign_tables, stored_key
from bisectk.ledger.sqlitefile import (BUSY_TIMEOUT_S, _connect_readonly, _connect_writer, _file_id, _nearly_full,
                                       _retry_busy)
from bisectk.outcome import Run
from bisectk.procstat import give, owner_to_give, process_start

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


def _schema_row(db: sqlite3.Connection) -> tuple | None:
    """The `meta` table's schema row; None where it has none, or has no such columns."""
    try:
        return db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    except sqlite3.OperationalError as exc:     # no such column: a `meta` of another shape
        if "no such column" in str(exc):
            return None
        raise


def _not_a_ledger(tables: set[str], schema_row: tuple | None) -> bool:
    """Whether a database of these tables is another program's: tables but no `meta`, or (another
    program's database may well have a `meta` table) no schema row and tables no ledger has. Such
    a database was taken for an empty ledger: bisectk's tables created in it, its rows written."""
    return bool(tables) and ("meta" not in tables or (schema_row is None and bool(foreign_tables(tables))))


class Store:
    """A ledger file opened: the connection, its lock, and the transactions the rest of Ledger uses."""

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
            with self._read("opening"):
                self.db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        else:
            self._check_writable()
            self._refuse_another_programs()
            with self._read("opening"):
                self.db = _connect_writer(self.path)
        try:    # an interrupt or an error while it is checked and prepared: the connection is closed
            self._ready()
        except BaseException:
            self.db.close()
            raise

    def _ready(self) -> None:
        """The opened file checked (quick_check), its tables made or migrated."""
        readonly = self.readonly
        self.identity = _file_id(self.path)   # which file this connection writes (see _in_place)
        self.db.create_function("bisectk_key", 1, stored_key, deterministic=True)   # migration 2 -> 3
        with self._read("opening"):
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
            row = _schema_row(self.db) if "meta" in tables else None
            if _not_a_ledger(tables, row):
                raise self._not_ledger(tables)
            if row is None:
                return None
        try:
            return int(row[0]) if row else None
        except ValueError:
            raise self._damaged(f"schema version {row[0]!r}") from None

    def _not_ledger(self, tables: set[str]) -> LedgerError:
        return LedgerError(f"{self.path} is an SQLite database but not a bisectk ledger "
                           f"(tables: {', '.join(sorted(tables))[:120]}); use another --ledger")

    def _refuse_another_programs(self) -> None:
        """Another program's database is refused before the writer's connection opens it: that
        one puts the file in WAL mode (its header rewritten, -wal and -shm files beside it). Any
        other trouble is left to the writer's opening to say, as it always has."""
        if _size(self.path) == 0:
            return
        try:
            probe = _connect_readonly(self.path)
        except LedgerError:
            return
        try:
            tables = {r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row = _schema_row(probe) if "meta" in tables else None
        except (sqlite3.Error, UnicodeDecodeError):
            return
        finally:
            probe.close()
        if _not_a_ledger(tables, row):
            raise self._not_ledger(tables)

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
            self.db = _connect_writer(Path(target))
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"ledger {self.path} was {'replaced' if replaced else 'deleted'} while this command "
                              f"ran, and it could not be written again ({exc}); what this command observed is "
                              f"lost") from None
        (runs,) = self.db.execute("SELECT COUNT(*) FROM runs").fetchone()
        what = "deleted" if not replaced else "replaced by another file"
        text = (f"the ledger {self.path} was {what} while this command ran; "
                + (f"it was written again from the copy still open ({runs} run{'' if runs == 1 else 's'} kept)" if target == self.path else
                   f"the copy still open ({runs} run{'' if runs == 1 else 's'}) is saved as {target}, and this command goes on there")
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
        reads cannot change under it, and on any error it is rolled back whole, then said as a read's
        is (`_read`)."""
        with self.lock:
            self._in_place()
            with self._read(doing):
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    self.db.execute("COMMIT")
                except BaseException:
                    try:
                        self.db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # SQLite already rolled back (e.g. after SQLITE_FULL)
                    raise

    # -- decoding: SQLite checks its pages, not the JSON inside them ------------------------
    def _decode(self, fn, row):
        try:
            return fn(row)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self._damaged(f"a stored record cannot be read: {type(exc).__name__}: {exc}"[:200]) from None

    def _run(self, text: str) -> Run:
        return self._decode(_run, text)
