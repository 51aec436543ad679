"""`bisectk ledger check` and `--salvage`: what is wrong with a ledger, and what can be saved of it.

Abstractions
------------
LedgerReport -- what `check` found: problems, schema, readable and unreadable rows per table,
                claims (and how many are stale), whether the file is writable.
check        -- inspect a ledger without changing it: its file header, SQLite's full integrity
                check, the schema version, and every row of every table read back exactly as the
                commands read it (ledger.schema's _run, _session, _event; a session's result as
                its record, engine.records' load_record, and its summary printed, as `report`
                reads it; a bisection as `bisectk log` prints it). At least as strict as opening
                it: a ledger some command would call damaged is never "ok" here.
salvage      -- copy every row that reads back into a new ledger (the damaged file is never written).
_open_for_reading -- either reads a file cut short (its header counting pages it no longer has,
                which SQLite refuses to read at all) through a copy of its whole pages.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from bisectk.engine.gitlog import LOGGED, log_lines
from bisectk.engine.records import load_record
from bisectk.errors import BisectkError, LedgerError
from bisectk.ledger import Ledger
from bisectk.ledger.runs import _holder_alive
from bisectk.ledger.schema import SCHEMA_VERSION, _event, _run, _session, foreign_tables, stored_key
from bisectk.ledger.sqlitefile import _connect_readonly
from bisectk.report import render

_COPY = {"sessions": ("id", "command", "fingerprint", "args_json", "created", "finished", "result_json"),
         "runs": ("id", "fingerprint", "config_key", "idx", "session", "created", "outcome", "kind", "signature",
                  "duration_s", "run_json"),
         "events": ("id", "session", "kind", "data_json", "created")}


@dataclass
class LedgerReport:
    path: Path
    ok: bool
    problems: list[str] = field(default_factory=list)
    schema: int | None = None
    rows: dict[str, int] = field(default_factory=dict)        # readable rows per table
    unreadable: dict[str, int] = field(default_factory=dict)  # rows that could not be read, per table
    claims: int = 0
    stale_claims: int = 0
    writable: bool = False
    size_bytes: int = 0
    not_ledger: str | None = None   # a readable SQLite file that is no ledger: what it is instead
    newer: bool = False             # written by a newer bisectk (a schema past SCHEMA_VERSION): no damage

    def lines(self) -> list[str]:
        if self.not_ledger:   # nothing damaged and nothing to salvage: say what the file is
            return [f"{self.path} ({self.size_bytes:,} bytes, {'writable' if self.writable else 'not writable'}): "
                    f"{self.not_ledger}"]
        state = ("ok" if self.ok else "DAMAGED" if self.problems
                 else "written by a newer bisectk" if self.newer else "not usable")
        head = f"{self.path}: {state}"
        out = [head + f" (schema {self.schema if self.schema is not None else '?'}, {self.size_bytes:,} bytes, "
                      f"{'writable' if self.writable else 'not writable'})"]
        if self.rows:
            out.append("readable rows: " + ", ".join(f"{t} {n}" for t, n in self.rows.items())
                       + (f"; claims {self.claims} ({self.stale_claims} stale)" if self.claims else ""))
        if any(self.unreadable.values()):
            out.append("unreadable rows: " + ", ".join(f"{t} {n}" for t, n in self.unreadable.items() if n))
        out += [f"problem: {p}" for p in self.problems[:10]]
        if len(self.problems) > 10:
            out.append(f"... and {len(self.problems) - 10} more problems")
        if self.newer:      # its rows are a newer bisectk's to read: a salvage here would lose what this one cannot
            out.append(f"what to do: upgrade bisectk (this one reads ledgers of schema 1 to {SCHEMA_VERSION}); "
                       "the file was not changed")
        elif not self.ok and self.rows:   # no rows read: SQLite could not open it, and its problem says so
            out.append(f"what to do: `bisectk ledger check {self.path} --salvage NEW.db` copies every readable "
                       f"row into a new ledger (this file is never changed); then run with --ledger NEW.db")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "ok": self.ok, "problems": self.problems, "schema": self.schema,
                "rows": self.rows, "unreadable": self.unreadable, "claims": self.claims,
                "stale_claims": self.stale_claims, "writable": self.writable, "size_bytes": self.size_bytes,
                "not_ledger": self.not_ledger, "newer": self.newer}


def check(path: str | Path) -> LedgerReport:
    """Inspect a ledger without changing it: the file header, SQLite's full integrity check
    (indexes included, which the quick check at open skips), the schema version, every row of
    every table read back exactly as a command reads it, claims (and how many are stale), whether
    it is writable. At least as strict as opening it: a ledger a command would call damaged is
    never "ok" here. Never raises for a bad file."""
    path = Path(path)
    report = LedgerReport(path, ok=False)
    if not path.is_file():
        report.problems.append("no such file" if not path.exists() else "not a regular file")
        return report
    report.size_bytes = path.stat().st_size
    report.writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    report.problems += _header_problems(path)
    try:
        db, cut = _open_for_reading(path)
    except LedgerError as exc:
        report.problems.append(str(exc))
        return report
    if cut:
        report.problems.append(cut)
    try:
        report.not_ledger = _not_a_ledger(db)
        if report.not_ledger:
            return report
        try:
            report.problems += [r[0] for r in db.execute("PRAGMA integrity_check(100)").fetchall() if r[0] != "ok"]
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            report.problems.append(f"integrity check: {exc}"[:200])
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            report.schema = int(row[0]) if row else None
            report.newer = report.schema is not None and report.schema > SCHEMA_VERSION
            if report.schema is not None and report.schema < 1:
                report.problems.append(f"schema version {report.schema} (this bisectk reads 1 to {SCHEMA_VERSION})")
        except (sqlite3.Error, ValueError, TypeError) as exc:   # UnicodeDecodeError is a ValueError
            report.problems.append(f"schema version unreadable: {exc}"[:200])
        logged: dict[int, tuple[dict, list, list]] = {}     # a bisection's session, observations, undos
        for table, cols in _COPY.items():
            rows, gaps = 0, 0
            for item in _readable_rows(db, table, cols, problems=report.problems):
                if item is None:
                    gaps += 1
                    continue
                rows += 1
                if table == "sessions" and item[1] in LOGGED:
                    logged[item[0]] = (_session(item), [], [])
                elif table == "events" and item[1] in logged and item[2] in ("observation", "undo"):
                    logged[item[1]][1 if item[2] == "observation" else 2].append(_event(item[2:4]))
            report.rows[table], report.unreadable[table] = rows, gaps
        report.problems += _unprintable_logs(logged)
        try:
            here = socket.gethostname()
            for host, pid, pid_start, expires in db.execute("SELECT host, pid, pid_start, expires FROM claims"):
                report.claims += 1
                report.stale_claims += not _holder_alive(host, pid, pid_start, expires, this_host=here)
        except sqlite3.Error as exc:
            if "no such table" not in str(exc):   # schema 1 has no claims table
                report.problems.append(f"claims: {exc}")
        except (TypeError, ValueError, OverflowError) as exc:   # UnicodeDecodeError included
            report.problems.append(f"claims: a row cannot be read ({exc})"[:200])
    finally:
        db.close()
    report.ok = (not report.problems and not any(report.unreadable.values()) and report.schema is not None
                 and not report.newer)
    return report


def _unprintable_logs(logged: dict[int, tuple[dict, list, list]]) -> list[str]:
    """The bisections (a bisect's or a triage's session, its observation and undo events) that
    `bisectk log` cannot print: a field it reads lost or retyped (an edited ledger)."""
    problems = []
    for sid, (session, observations, undos) in logged.items():
        try:
            log_lines(session, observations, undos)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            problems.append(f"session {sid}: its bisection cannot be printed by `bisectk log` "
                            f"({type(exc).__name__}: {exc})"[:200])
    return problems


def _not_a_ledger(db: sqlite3.Connection) -> str | None:
    """What a readable SQLite file that is no ledger is (as Ledger's opening decides:
    an empty one becomes a ledger, one with other tables is refused), or None for a ledger. Its
    rows are not probed: a missing table is no damage."""
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except (sqlite3.Error, UnicodeDecodeError):
        return None   # the integrity check says what is wrong
    if "meta" in tables:    # a ledger, unless another program's `meta`: no schema row, tables of its own
        try:
            if not foreign_tables(tables) or db.execute("SELECT 1 FROM meta WHERE key='schema'").fetchone():
                return None
        except sqlite3.OperationalError as exc:
            if "no such column" not in str(exc):
                return None     # the integrity check says what is wrong
    elif not tables:
        return "empty, not yet a bisectk ledger; a command given it as --ledger makes it one"
    return f"an SQLite database but not a bisectk ledger (tables: {', '.join(sorted(tables))[:120]})"


_MAGIC = b"SQLite format 3\0"


class _CopyReader(sqlite3.Connection):
    """A read-only connection to a repaired copy of a truncated ledger: closing it removes the copy."""
    scratch: str | None = None

    def close(self) -> None:
        super().close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _open_for_reading(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """A read-only connection to the ledger at `path`, and what was wrong with its length: a file
    cut short (a copy or a CI cache's restore stopped by a full disk, a transfer cut off) keeps
    its whole pages, but its header still counts the pages it had, and SQLite refuses every read
    of it ('database disk image is malformed'), so none of its rows could be checked or salvaged.
    Such a file is read through a copy of its whole pages whose header counts what is there (the
    file itself is never written); the pages lost are said, and the rows on them are not read."""
    try:
        return _connect_readonly(path, checking=True), None
    except LedgerError as exc:
        error = exc
    pages = _cut_short(path)
    if pages is None:
        raise error
    have, had, size = pages
    scratch = tempfile.mkdtemp(prefix="bisectk-check-")
    copy = Path(scratch) / "ledger.db"
    try:
        with open(path, "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read(have * size))
            dst.seek(28)
            dst.write(have.to_bytes(4, "big"))     # the in-header database size, in pages
        db = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True, isolation_level=None, factory=_CopyReader)
        db.scratch = scratch
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (OSError, sqlite3.Error):
        shutil.rmtree(scratch, ignore_errors=True)
        raise error from None
    return db, (f"the file is cut short: {have} of its {had} pages are there ({had - have} lost, with the rows "
                "they held); the rows read are from the pages left")


def _cut_short(path: Path) -> tuple[int, int, int] | None:
    """(whole pages in the file, pages its header counts, page size) for a database file shorter
    than its header says, with no write-ahead log holding later pages; else None. The header's
    count is SQLite's only where it is valid: non-zero, and written with the change counter."""
    wal = Path(f"{path}-wal")
    try:
        if wal.exists() and wal.stat().st_size:
            return None
        with open(path, "rb") as f:
            head = f.read(100)
        length = path.stat().st_size
    except OSError:
        return None
    if len(head) < 100 or not head.startswith(_MAGIC):
        return None
    size = int.from_bytes(head[16:18], "big")
    size = 65536 if size == 1 else size
    had = int.from_bytes(head[28:32], "big")
    if size < 512 or size & (size - 1) or not had or head[24:28] != head[92:96]:
        return None
    have = length // size
    return (have, had, size) if 0 < have < had else None


def _header_problems(path: Path) -> list[str]:
    """What is wrong with the database header (the first 100 bytes), per SQLite's file format:
    a damaged header can leave the file readable but refuse every write (a read or write version
    past 2), which a read-only check would otherwise miss. The header judged is the one SQLite
    reads: page 1 as last committed to the write-ahead log, where one is (a bisectk killed before
    a checkpoint leaves the main file's page 1 stale, or never written), else the main file's."""
    try:
        head = _wal_page_one(path)
        if head is None:
            with open(path, "rb") as f:
                head = f.read(100)
    except OSError as exc:
        return [f"header unreadable: {exc.strerror or exc}"]
    if len(head) < 100 or not head.startswith(_MAGIC):
        return ["not an SQLite 3 database (header)"] if head else []
    problems = []
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        problems.append(f"header: page size {page}")
    if head[18] not in (1, 2) or head[19] not in (1, 2):
        problems.append(f"header: file format versions {head[18]}/{head[19]} (1 or 2)")
    if tuple(head[21:24]) != (64, 32, 32):
        problems.append(f"header: payload fractions {tuple(head[21:24])}")
    if int.from_bytes(head[44:48], "big") not in (1, 2, 3, 4):
        problems.append(f"header: schema format {int.from_bytes(head[44:48], 'big')}")
    if int.from_bytes(head[56:60], "big") not in (0, 1, 2, 3):
        problems.append(f"header: text encoding {int.from_bytes(head[56:60], 'big')}")
    return problems


_WAL_MAGIC = (0x377F0682, 0x377F0683)   # the low bit: checksums over big-endian words


def _wal_page_one(path: Path) -> bytes | None:
    """The first 100 bytes of page 1 as SQLite reads it from `path`'s write-ahead log: the last
    copy of page 1 at or before the log's last valid commit, or None when the log holds none
    (no log, an empty or reset one). A frame is valid, as SQLite's recovery decides, while its
    salts match the log header's and the running checksum agrees; the first invalid frame ends
    the log, so frames left over from before a reset are never read."""
    import struct
    wal = path.with_name(path.name + "-wal")
    try:
        with open(wal, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    if len(data) < 32:
        return None
    magic, _version, page, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", data[:32])
    if magic not in _WAL_MAGIC or page < 512 or page > 65536 or page & (page - 1):
        return None
    words = ">" if magic & 1 else "<"

    def checksum(chunk: bytes, s1: int, s2: int) -> tuple[int, int]:
        ints = struct.unpack(f"{words}{len(chunk) // 4}I", chunk)
        for a, b in zip(ints[0::2], ints[1::2]):
            s1 = (s1 + a + s2) & 0xFFFFFFFF
            s2 = (s2 + b + s1) & 0xFFFFFFFF
        return s1, s2

    s = checksum(data[:24], 0, 0)
    if s != (c1, c2):
        return None
    page_one, committed = None, None
    at = 32
    while at + 24 + page <= len(data):
        number, commit, f1, f2, k1, k2 = struct.unpack(">6I", data[at:at + 24])
        if (f1, f2) != (salt1, salt2):
            break
        s = checksum(data[at + 24:at + 24 + page], *checksum(data[at:at + 8], *s))
        if s != (k1, k2):
            break
        if number == 1:
            page_one = data[at + 24:at + 124]
        if commit:
            committed = page_one
        at += 24 + page
    return committed


def _session_and_result(row) -> dict[str, Any]:
    """A session as the ledger decodes it, and its stored result read as `bisectk report` reads
    it: back as its record, and its summary printed (a result edited by hand, a field dropped
    or of another type, that report calls damaged is unreadable here too)."""
    session = _session(row)
    if session["result"] is not None:
        try:
            render.summary(Console(file=io.StringIO(), width=100), load_record(session["result"]))
        except BisectkError as exc:     # the record's own account of what is wrong
            raise ValueError(f"its result: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ValueError(f"its result: {type(exc).__name__}: {exc}") from None
    return session


# How `check` and `salvage` read a row back: each table's decoder, on the columns in _COPY order.
_DECODE = {"sessions": _session_and_result,
           "runs": lambda row: _run(row[10]),
           "events": lambda row: _event((row[2], row[3]))}


def _readable_rows(db: sqlite3.Connection, table: str, cols: tuple[str, ...], problems: list[str] | None = None):
    """Every row of `table` that can be read and decoded as a command decodes it, in id order,
    and None for each id that cannot (a damaged page, or a record that no longer decodes): the
    scan runs by range until it fails, then probes id by id past the damage. Rows that do not
    decode are described in `problems` (the first few)."""
    decode = _DECODE.get(table) if len(cols) == len(_COPY.get(table, ())) else None

    def readable(row) -> bool:
        if decode is None:
            return True
        try:
            decode(row)
            return True
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            if problems is not None and sum(p.startswith(f"{table} row") for p in problems) < 5:
                problems.append(f"{table} row {row[0]}: cannot be decoded ({type(exc).__name__}: {exc})"[:200])
            return False
    in_range = f"SELECT {', '.join(cols)} FROM {table} WHERE id > ? ORDER BY id"
    one = f"SELECT {', '.join(cols)} FROM {table} WHERE id = ?"
    try:
        (top,) = db.execute(f"SELECT MAX(id) FROM {table}").fetchone()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        top = _last_id(db, table)
        if "no such table" in str(exc):   # not damage to probe past: there are no rows to read
            if problems is not None:
                problems.append(f"table {table} is missing")
            return
    last = 0
    while True:
        try:
            for row in db.execute(in_range, (last,)):
                yield row if readable(row) else None
                last = row[0]
            return
        except sqlite3.Error:
            pass
        except UnicodeDecodeError:   # a text of the row after `last` is not UTF-8: probe it by id
            pass
        misses = 0  # ids in a row that are damaged or absent: give up after many (a lost root page)
        while True:
            last += 1
            if (top is not None and last > top) or misses >= 10_000:
                return
            try:
                row = db.execute(one, (last,)).fetchone()
            except (sqlite3.Error, UnicodeDecodeError):
                misses += 1
                yield None
                continue
            if row is None:
                misses += 1
                continue
            yield row if readable(row) else None
            break


def _last_id(db: sqlite3.Connection, table: str) -> int | None:
    """The largest id `table` ever gave, from SQLite's own record of it (`sqlite_sequence`: the
    ledger's tables are AUTOINCREMENT), where the table's pages cannot say: without it, every id
    probed past the damage counted as an unreadable row, 10,000 of them for a table of three."""
    try:
        row = db.execute("SELECT seq FROM sqlite_sequence WHERE name=?", (table,)).fetchone()
    except (sqlite3.Error, UnicodeDecodeError):
        return None
    return row[0] if row and isinstance(row[0], int) else None


def salvage(path: str | Path, dest: str | Path) -> dict[str, int]:
    """Copy every readable session, run and event of the ledger at `path` into a new ledger at
    `dest` (which must not exist); `path` is only read. Returns the rows copied per table."""
    path, dest = Path(path), Path(dest)
    if dest.exists():
        raise LedgerError(f"{dest} exists; salvage writes a new ledger and never overwrites one")
    if not dest.parent.is_dir():    # as --ledger: a typo's directories are not made
        raise LedgerError(f"--salvage {dest}: the directory {dest.parent} does not exist (salvage makes a ledger "
                          f"file, not the directories named above it: create {dest.parent} first, or check the path)")
    journal = next((j for j in ("-wal", "-shm", "-journal")
                    if Path(os.path.abspath(dest)).resolve() == Path(os.path.abspath(f"{path}{j}")).resolve()), None)
    if journal:     # a ledger there is no journal of `path`: SQLite resets it at `path`'s next write
        raise LedgerError(f"{dest} is where SQLite keeps {path}'s journal ({journal}); the salvaged ledger would be "
                          "lost at the next command on it: name another file")
    src, _cut = _open_for_reading(path)
    # written beside `dest` and given its name once whole: an interrupted salvage leaves no ledger
    # that looks like any other with half its rows, nor a `dest` that refuses the next salvage
    scratch = dest.with_name(f".{dest.name}.salvage-{os.getpid()}")
    try:
        new = Ledger(scratch)
    except BaseException:
        src.close()
        _remove_ledger(scratch)
        raise
    copied = {}
    whole = False
    try:
        for table, cols in _COPY.items():
            n = 0
            at = cols.index("config_key") if "config_key" in cols else None
            with new._write(f"copying {table}"):
                for row in _readable_rows(src, table, cols):
                    if row is not None:
                        if at is not None:   # an older ledger's long key: stored as the new one stores it
                            row = (*row[:at], stored_key(row[at]), *row[at + 1:])
                        new.db.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES "
                                       f"({', '.join('?' * len(cols))})", row)
                        n += 1
            copied[table] = n
        whole = True
    finally:
        src.close()
        new.close()
        if not whole:
            _remove_ledger(scratch)
    try:
        os.link(scratch, dest)      # never over a file that appeared meanwhile
    except FileExistsError:
        raise LedgerError(f"{dest} exists; salvage writes a new ledger and never overwrites one") from None
    except OSError:                 # a file system without hard links
        if os.path.lexists(dest):
            raise LedgerError(f"{dest} exists; salvage writes a new ledger and never overwrites one") from None
        os.replace(scratch, dest)
    finally:
        _remove_ledger(scratch)
    return copied


def _remove_ledger(path: Path) -> None:
    for p in (path, *(Path(f"{path}{j}") for j in ("-wal", "-shm", "-journal"))):
        try:
            p.unlink()
        except OSError:
            pass
