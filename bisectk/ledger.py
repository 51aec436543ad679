"""The ledger: every observation bisectk makes, in SQLite, so nothing runs twice.

Abstractions
------------
Ledger   -- one database file (WAL mode; safe to kill at any point: each run is committed as
            soon as it finishes). Tables:
            `runs`     -- every classified run: (subject fingerprint, configuration key, index
                          among that configuration's runs, the Run as JSON, session, time);
            `sessions` -- one row per command invocation (kind, spec, arguments, result JSON),
                          so `--resume` finds the last session of the same kind;
            `events`   -- what a session observed, in order (e.g. each commit's outcome in a
                          bisection, also when answered from the ledger), for `log` and `replay`.
Memoisation is by (fingerprint, configuration key, run index): asking for the k-th run of a
configuration that already has k runs returns the stored one. Verdicts are derived, never
stored separately, so repeats and resumes agree by construction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from bisectk.errors import BisectkError
from bisectk.outcome import Run

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
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
    UNIQUE (fingerprint, config_key, idx)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data_json TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    command TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    args_json TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    result_json TEXT
);
"""


class Ledger:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.executescript(_SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except (sqlite3.DatabaseError, OSError) as exc:
            raise BisectkError(f"ledger {self.path}: cannot open ({exc})") from None
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise BisectkError(f"ledger {self.path}: schema version {row[0]}, this bisectk reads {SCHEMA_VERSION}")
        self.lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    # -- runs ---------------------------------------------------------------------------
    def runs(self, fingerprint: str, config_key: str) -> list[Run]:
        with self.lock:
            rows = self.db.execute(
                "SELECT run_json FROM runs WHERE fingerprint=? AND config_key=? ORDER BY idx",
                (fingerprint, config_key)).fetchall()
        return [Run.from_dict(json.loads(r[0])) for r in rows]

    def add_run(self, fingerprint: str, config_key: str, run: Run, session: int | None = None) -> int:
        """Append a run as the next index of its configuration; returns that index."""
        with self.lock:
            (n,) = self.db.execute("SELECT COUNT(*) FROM runs WHERE fingerprint=? AND config_key=?",
                                   (fingerprint, config_key)).fetchone()
            self.db.execute(
                "INSERT INTO runs (fingerprint, config_key, idx, session, created, outcome, kind, signature,"
                " duration_s, run_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (fingerprint, config_key, n, session, time.time(), run.outcome.value,
                 run.kind.value if run.kind else None, run.signature, run.duration_s,
                 json.dumps(run.to_dict())))
        return n

    # -- sessions -----------------------------------------------------------------------
    def open_session(self, command: str, fingerprint: str, args: dict[str, Any]) -> int:
        with self.lock:
            cur = self.db.execute(
                "INSERT INTO sessions (command, fingerprint, args_json, created) VALUES (?,?,?,?)",
                (command, fingerprint, json.dumps(args, sort_keys=True, default=str), time.time()))
        return cur.lastrowid

    def close_session(self, session: int, result: dict[str, Any]) -> None:
        with self.lock:
            self.db.execute("UPDATE sessions SET finished=?, result_json=? WHERE id=?",
                            (time.time(), json.dumps(result, default=str), session))

    def last_session(self, command: str, fingerprint: str | None = None) -> dict[str, Any] | None:
        q = "SELECT id, command, fingerprint, args_json, created, finished, result_json FROM sessions WHERE command=?"
        args: tuple = (command,)
        if fingerprint:
            q, args = q + " AND fingerprint=?", (command, fingerprint)
        with self.lock:
            row = self.db.execute(q + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return _session(row) if row else None

    def last_finished_session(self) -> dict[str, Any] | None:
        """The newest session that stored a result (any command)."""
        with self.lock:
            row = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                  " FROM sessions WHERE result_json IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
        return _session(row) if row else None

    def session(self, session_id: int) -> dict[str, Any] | None:
        with self.lock:
            row = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                  " FROM sessions WHERE id=?", (session_id,)).fetchone()
        return _session(row) if row else None

    # -- events -------------------------------------------------------------------------
    def add_event(self, session: int, kind: str, data: dict[str, Any]) -> None:
        with self.lock:
            self.db.execute("INSERT INTO events (session, kind, data_json, created) VALUES (?,?,?,?)",
                            (session, kind, json.dumps(data, default=str), time.time()))

    def events(self, session: int, kind: str | None = None) -> list[dict[str, Any]]:
        q, args = "SELECT kind, data_json FROM events WHERE session=?", (session,)
        if kind:
            q, args = q + " AND kind=?", (session, kind)
        with self.lock:
            rows = self.db.execute(q + " ORDER BY id", args).fetchall()
        return [{"kind": k, **json.loads(d)} for k, d in rows]


def _session(row) -> dict[str, Any]:
    return {"id": row[0], "command": row[1], "fingerprint": row[2], "args": json.loads(row[3]),
            "created": row[4], "finished": row[5], "result": json.loads(row[6]) if row[6] else None}
