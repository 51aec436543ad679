"""The ledger's runs, and the claims by which sessions sharing a ledger share the work.

Runs     -- the part of Ledger that stores and finds runs by (fingerprint, configuration key,
            index), claims a run for this process to execute or waits for another's, and keeps
            the sources a subject's runs imported.
Claim    -- the right to run one run, or the run itself when it was stored while we waited.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass

from bisectk.errors import LedgerError
from bisectk.ledger.schema import _sources, stored_key
from bisectk.outcome import Run
from bisectk.procstat import gone, process_start, stopped


@dataclass
class Claim:
    """The right to run the idx-th run of a configuration, or the run itself when it was stored
    while we waited (`run` is then set, and there is nothing to execute)."""
    ledger: Runs    # the Ledger it was claimed from
    fingerprint: str
    config_key: str
    idx: int
    owner: str
    run: Run | None = None
    held: bool = True
    replacing: bool = False     # --fresh: the runs other sessions stored go when this one is recorded

    def record(self, run: Run, session: int | None = None) -> int:
        """Store the run and give up the claim, atomically; returns the index it was stored at."""
        index = self.ledger.add_run(self.fingerprint, self.config_key, run, session, claim=self,
                                    supersede=self.replacing)
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



class Runs:
    """Runs, claims and recorded sources: the Ledger's, over Store's `_read` and `_write`."""

    # -- what a subject's runs imported (the memo key's manifest, run/memokey.py) ---------
    def sources(self, key: str) -> list[str]:
        """The source files recorded as imported by the runs of a subject (`key`: its memo key
        without them); kept in `meta` as `sources:<key>`, so no schema change."""
        with self.lock, self._read("reading recorded sources"):
            row = self.db.execute("SELECT value FROM meta WHERE key=?", (f"sources:{key}",)).fetchone()
        return _sources(row[0] if row else None)

    def add_sources(self, key: str, paths: list[str]) -> list[str]:
        """Add to a subject's recorded sources (merged with what other sessions added); returns all."""
        with self._write("recording sources"):
            row = self.db.execute("SELECT value FROM meta WHERE key=?", (f"sources:{key}",)).fetchone()
            merged = sorted(set(_sources(row[0] if row else None)) | set(paths))
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
                claim: Claim | None = None, supersede: bool = False) -> int:
        """Append a run as the next index of its configuration (and drop `claim`, in the same
        transaction); returns that index. Safe with concurrent writers: the index is chosen under
        the write lock, so two processes never collide on it. `supersede` (--fresh): the runs
        other sessions stored of the configuration go in the same transaction, so the runs this
        one makes take their place (a later command answers from them, never from the runs --fresh
        set aside), and an interrupt before the new run is recorded leaves the old ones."""
        config_key = self._key(config_key)
        with self._write("recording a run"):
            if supersede:
                self.db.execute("DELETE FROM runs WHERE fingerprint=? AND config_key=? AND session IS NOT ?",
                                (fingerprint, config_key, session))
            (n,) = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM runs WHERE fingerprint=? AND config_key=?",
                                   (fingerprint, config_key)).fetchone()
            self.db.execute(
                "INSERT INTO runs (fingerprint, config_key, idx, session, created, outcome, kind, signature,"
                " duration_s, run_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (fingerprint, config_key, n, session, time.time(), run.outcome.value,
                 run.kind.value if run.kind else None, run.signature, run.duration_s,
                 json.dumps(run.to_dict())))
            if claim is not None:
                self._drop_claim(claim)
        if claim is not None:
            self._claimed.discard(claim.owner)
        return n

    def forget_session_runs(self, session: int) -> int:
        """Remove the runs a session stored (their inputs changed under them); returns how many."""
        with self._write("removing runs"):
            return self.db.execute("DELETE FROM runs WHERE session=?", (session,)).rowcount

    # -- claims -------------------------------------------------------------------------
    def claim(self, fingerprint: str, config_key: str, idx: int, *, ttl: float = 3600.0,
              poll_s: float = 0.05, max_poll_s: float = 1.0, on_wait=None, replacing: bool = False,
              session: int | None = None) -> Claim:
        """The idx-th run of a configuration, for this process to execute or to read.

        Returns a Claim with `run` set when the run is (or becomes, while we wait) stored; else a
        held claim: the caller executes, then `record`s (or `release`s, e.g. via `with`). While
        another live process holds the claim this waits, polling; `on_wait(holder)` is called with
        the holder's description, once, and again when it changes (a holder stopped by Ctrl-Z or
        SIGSTOP is alive, so the wait goes on, but the waiter is told why nothing moves). `ttl`
        bounds a claim held from another host, whose liveness cannot be checked. `replacing`
        (--fresh): only the runs `session` stored count as stored; the
        claim's run, once recorded, replaces the others' (add_run's `supersede`)."""
        config_key = self._key(config_key)
        owner = uuid.uuid4().hex
        told = None
        delay = poll_s
        while True:
            with self._write("claiming a run"):
                row = self.db.execute("SELECT run_json FROM runs WHERE fingerprint=? AND config_key=? AND idx=?"
                                      + (" AND session IS ?" if replacing else ""),
                                      (fingerprint, config_key, idx) + ((session,) if replacing else ())).fetchone()
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
                    return Claim(self, fingerprint, config_key, idx, owner, replacing=replacing)
            if on_wait and (words := _holder_words(holder[0], holder[1], this_host=self.host)) != told:
                on_wait(words)
                told = words
            time.sleep(delay)
            delay = min(max_poll_s, delay * 1.5)

    def _release(self, claim: Claim) -> None:
        try:
            with self._write("releasing a claim"):
                self._drop_claim(claim)
            self._claimed.discard(claim.owner)
        except LedgerError:
            pass  # a claim left behind expires with its process

    def _drop_claim(self, claim: Claim) -> None:
        """Inside a write: the claim's row goes, while it is still this claim's (one taken over,
        its holder having been found dead, is another owner's row)."""
        self.db.execute("DELETE FROM claims WHERE fingerprint=? AND config_key=? AND idx=? AND owner=?",
                        (claim.fingerprint, claim.config_key, claim.idx, claim.owner))

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


def _holder_words(host: str, pid: int, *, this_host: str) -> str:
    """A claim's holder in words, and, when it is stopped, how it can go on."""
    words = f"pid {pid} on {host}"
    if host == this_host and stopped(pid):
        words += (f", which is stopped (Ctrl-Z, SIGSTOP or a debugger): continue it (`fg`, "
                  f"`kill -CONT {pid}`) or end it, and this command goes on")
    return words


def _holder_alive(host: str, pid: int, pid_start: float | None, expires: float, *, this_host: str) -> bool:
    """Whether a claim's holder may still deliver: on this host, its process (the same one, not
    a reused pid) is alive -- a zombie is not: killed, it lingers until its parent reaps it,
    which a harness or a container's init may not do for hours; on another, its time-to-live has
    not passed."""
    if host != this_host:
        return time.time() < expires
    start = process_start(pid)
    if start is None or gone(pid):
        return False
    return pid_start is None or start == pid_start  # else the pid was reused
