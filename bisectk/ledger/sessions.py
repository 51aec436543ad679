"""The ledger's sessions, what each observed (events), and the index of their run logs.

Sessions -- the part of Ledger that opens and closes a session (a command invocation), finds the
            last one to resume, records its events in order, and keeps the run logs' index
            (run/logcap.py keeps their total under a cap).
"""

from __future__ import annotations

import json
import time
from typing import Any

from bisectk.ledger.runs import _holder_alive
from bisectk.ledger.schema import _event, _session


class Sessions:
    """Sessions, events and the run logs' index: the Ledger's, over Store's `_read` and `_write`."""

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

    def set_args(self, session: int, args: dict[str, Any]) -> None:
        """The arguments a session ran with, once the command settled them (an ablation resumed
        goes on with the strategy it was started with): the next `--resume` reads these."""
        with self._write("recording a session's arguments"):
            self.db.execute("UPDATE sessions SET args_json=? WHERE id=?",
                            (json.dumps(args, sort_keys=True, default=str), session))

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
                     before: int | None = None, accept=None) -> dict[str, Any] | None:
        """The newest session of `command` (of that subject fingerprint; older than session `before`;
        one `accept(session)` holds for: a --resume of these refs, behind sessions of others)."""
        q = "command=?"
        args: tuple = (command,)
        if fingerprint:
            q, args = q + " AND fingerprint=?", (*args, fingerprint)
        if before is not None:
            q, args = q + " AND id<?", (*args, before)
        if accept is None:
            return self._newest_session(q, args, "reading sessions")
        with self.lock, self._read("reading sessions"):
            rows = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                   f" FROM sessions WHERE {q} ORDER BY id DESC", args).fetchall()
        return next((s for s in (self._decode(_session, r) for r in rows) if accept(s)), None)

    def last_finished_session(self) -> dict[str, Any] | None:
        """The newest session that stored a result (any command)."""
        return self._newest_session("result_json IS NOT NULL", (), "reading sessions")

    def session(self, session_id: int) -> dict[str, Any] | None:
        return self._newest_session("id=?", (session_id,), "reading a session")

    def _newest_session(self, where: str, args: tuple, doing: str) -> dict[str, Any] | None:
        """The newest session row `where` holds, read as every command reads one (_session)."""
        with self.lock, self._read(doing):
            row = self.db.execute("SELECT id, command, fingerprint, args_json, created, finished, result_json"
                                  f" FROM sessions WHERE {where} ORDER BY id DESC LIMIT 1", args).fetchone()
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
