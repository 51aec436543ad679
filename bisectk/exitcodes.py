"""Exit codes, in one place: part of the contract (README, "Outcomes and exit codes").

git bisect's protocol is kept where it applies: a subject's 125 means "cannot test".

exit_code -- the one function that maps a command's result record to its exit code (it reads the
             record's facts by name: this module imports nothing). Errors have theirs below
             (errors.BisectkError: USAGE; Ctrl-C before a result: INTERRUPTED; a hangup: HANGUP; a bug: INTERNAL).
"""

OK = 0
FAILED = 1              # run: the configuration failed
INCOMPLETE = 1          # ablate/diff/bisect: interrupted, budget spent, or ambiguous; replay: log stops early
USAGE = 2               # bad input, or endpoints unusable (one `bisectk:` line on stderr)
INTERNAL = 3            # a bug in bisectk (never expected: report it)
UNRESOLVED = 125        # run: the configuration could not be tested (git bisect's skip)
INTERRUPTED = 130       # Ctrl-C / SIGTERM before any result existed
HANGUP = 129            # SIGHUP (the terminal closed, the ssh session dropped), at any point: 128 +
                        # SIGHUP, what a shell reports for a process a hangup killed, and git's; the
                        # command cleaned up as for Ctrl-C first (its result, if any, is in the ledger)
OUTPUT_CLOSED = 141     # stdout or stderr closed under the command (`| head`, `less` quit): what a
                        # process killed by SIGPIPE reports, as git does; never 1, which says
                        # "ambiguous" for bisect and "culprit found" for triage

TRIAGE_NOTHING = 0      # the bad ref does not fail
TRIAGE_CULPRIT = 1      # culprit found
TRIAGE_INCONCLUSIVE = 2
# a triage's verdict (its record's `verdict`) and its code
TRIAGE_VERDICTS = {"nothing to triage": TRIAGE_NOTHING, "culprit found": TRIAGE_CULPRIT,
                   "inconclusive": TRIAGE_INCONCLUSIVE}

ENV_EQUAL, ENV_DIFFER = 0, 1

RUN_OUTCOMES = {"pass": OK, "fail": FAILED, "unresolved": UNRESOLVED}


def search_code(ok: bool, complete: bool, interrupted: bool, ambiguous: bool = False,
                not_separable: bool = False) -> int:
    """ablate, diff, bisect: 0 found, 1 interrupted/incomplete/ambiguous, 2 endpoints unusable or
    (--flaky) the two failure rates not separable within the run budget."""
    if not ok or not_separable:
        return USAGE
    return INCOMPLETE if interrupted or not complete or ambiguous else OK


def exit_code(record, *, interrupted_late: bool = False) -> int:
    """A result record's exit code. `interrupted_late`: Ctrl-C came after the last run, while the
    result was written: a result that would say 0 says 1 (it is complete, but the user stopped it).
    A triage's code is its verdict, interrupted or not: its 1 says "culprit found", so a stop can
    make it no code of its own (an interrupt before the first bad commit is known leaves the verdict
    inconclusive, 2; after it, the commit stands, 1; once the triage is over, its verdict stands)."""
    command = record.command
    if command == "run":
        code = RUN_OUTCOMES[record.verdict["outcome"]]
    elif command == "check":
        code = OK if record.ok else USAGE
    elif command == "triage":
        return TRIAGE_VERDICTS[record.verdict]
    elif command == "replay":
        code = OK if record.first_bad and record.complete else INCOMPLETE
    elif command == "bisect":
        code = search_code(record.ok, record.complete, record.interrupted, record.ambiguous,
                           record.separable is False)
    else:   # ablate, diff
        code = search_code(record.ok, record.complete, record.interrupted)
    return INCOMPLETE if interrupted_late and code == OK else code
