"""The ledger's tables, their migrations, and how a stored key and a stored row read.

SCHEMA_VERSION is what this bisectk writes; `_MIGRATIONS` bring an older ledger up to it in place.
The decoders (_run, _session, _event) are what every command and `bisectk ledger check` read rows
back with, so a row `check` calls readable is one no command finds damaged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bisectk.outcome import Run

SCHEMA_VERSION = 4
LONG_KEY = 512     # configuration keys longer than this are stored as their digest (stored_key)

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


def foreign_tables(tables: set[str]) -> set[str]:
    """The tables of a database that no bisectk ledger has (SQLite's own aside)."""
    return {t for t in tables if t not in _TABLES and not t.startswith("sqlite_")}


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


def _sources(text: str | None) -> list[str]:
    """A subject's recorded sources (a `meta` row, Runs.sources): the paths of a JSON list; any
    other value, or an item that is not text, reads as nothing (they are a hint, re-learnt)."""
    try:
        value = json.loads(text) if text is not None else []
    except ValueError:
        return []
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []
