"""The ledger: every observation bisectk makes, in SQLite, so nothing runs twice.

Abstractions
------------
Ledger   -- one database file (WAL mode; on a network file system, the rollback journal; safe to
            kill at any point: each run is committed, in a transaction of its own, as soon as it
            finishes); `Ledger(path, readonly=True)` reads
            one without writing anything (for `log`, or a ledger on read-only media), and leaves
            no -wal or -shm file behind that was not in use before (sqlitefile._Reader). Tables
            (schema.py):
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
Claim    -- the protocol for that sharing (runs.py). `Ledger.claim(...)` either finds the run stored, or
            takes the claim (the caller runs, then `record`s: the run is stored and the claim
            dropped in one transaction), or, while another live process holds it, waits for its
            result. A claim whose holder died (same host: its pid is gone or reused; another
            host: its time-to-live passed) is taken over.
`bisectk ledger check` and `--salvage` live in ledger_check.py; they read rows back with
schema.py's decoders (_run, _session, _event), the ones every command uses.
Memoisation is by (fingerprint, configuration key, run index): asking for the k-th run of a
configuration that already has k runs returns the stored one. Verdicts are derived, never
stored separately, so repeats and resumes agree by construction.

Failure modes are one line each (a `LedgerError`), never a traceback and never an overwrite: a
damaged file names `bisectk ledger check` and `--ledger`; a read-only file or directory is found
when the ledger is opened, before any subject runs; a full disk rolls the transaction back, so
nothing is recorded half-way.

The modules: schema.py (the tables, their migrations, how a stored key and a stored row read),
sqlitefile.py (the file under SQLite: WAL or not, busy retries, a read-only connection that
leaves nothing behind), store.py (`Store`: opening, the integrity check, transactions, errors in
one line, a ledger deleted while in use), runs.py (`Runs`: runs, claims and the sources a
subject's runs imported), sessions.py (`Sessions`: sessions, their events, the run logs' index).
`Ledger` is the three together.
"""

from __future__ import annotations

from bisectk.ledger.runs import Runs
from bisectk.ledger.sessions import Sessions
from bisectk.ledger.store import Store


class Ledger(Store, Runs, Sessions):
    """One ledger file: `Store` opens it and holds its connection; `Runs` and `Sessions` read and
    write its rows through `Store`'s transactions (`_read`, `_write`)."""
