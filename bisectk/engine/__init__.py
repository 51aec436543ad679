"""The engine: the one path every command takes from its options to a result record.

    command -> space -> oracle -> runner -> verdict -> search -> result record -> report

Modules
-------
policy     -- RunPolicy: how runs are made and judged (repeats, flakiness, --same-failure, budget).
session    -- Session: the ledger (its location decided here, once), the session record, the
              events and the terminal reporter, the runner (one factory), warm workers.
oracle     -- SpaceOracle: the one adapter between a pure search and the runner, over any space
              (factors, hunks, commits, environments).
endpoints  -- verify: the one endpoint confirmation every command runs before it searches.
records    -- frozen result records; reports read these and nothing else, and every record is
              stored in the ledger, so any command's result can be printed again from it.
ablate, diff, bisect, triage, replay, single -- one engine per command, each returning a record.

Plumbing (this package) computes; porcelain (cli.py, report/) talks.
"""
