"""The engine: the one path every command takes from its options to a result record.

    command -> engine -> oracle -> runner -> executor -> watch -> outcome -> record -> report

Modules
-------
policy     -- RunPolicy: every run setting (repeats, flakiness, --same-failure, budget, watchdog,
              executor, warm, fresh), validated once.
session    -- Session: the ledger (its location decided here, once), the session record, the
              events and the terminal reporter, the one executor (make_executor), the runner.
oracle     -- Trials (every run of a space, in order, memoised through the runner) and Oracle
              (what a search calls, made complete with the target that `verify` found).
endpoints  -- verify: the one endpoint confirmation every command runs before it searches.
records    -- frozen result records; reports read these and nothing else, and every record is
              stored in the ledger, so any command's result can be printed again from it.
ablate, diff, bisect, triage, replay, single -- one engine per command, each returning a record.

Plumbing (this package) computes; porcelain (cli.py, report/) talks.
"""
