"""Exit codes, in one place: part of the contract (README, "Outcomes and exit codes").

git bisect's protocol is kept where it applies: a subject's 125 means "cannot test".
"""

OK = 0
FAILED = 1              # run: the configuration failed
INCOMPLETE = 1          # ablate/diff/bisect: interrupted, budget spent, or ambiguous; replay: log stops early
USAGE = 2               # bad input, or endpoints unusable (one `bisectk:` line on stderr)
INTERNAL = 3            # a bug in bisectk (never expected: report it)
UNRESOLVED = 125        # run: the configuration could not be tested (git bisect's skip)
INTERRUPTED = 130       # Ctrl-C / SIGTERM before any result existed

TRIAGE_NOTHING = 0      # the bad ref does not fail
TRIAGE_CULPRIT = 1      # culprit found
TRIAGE_INCONCLUSIVE = 2

ENV_EQUAL, ENV_DIFFER = 0, 1


def search_code(ok: bool, complete: bool, interrupted: bool, ambiguous: bool = False,
                not_separable: bool = False) -> int:
    """ablate, diff, bisect: 0 found, 1 interrupted/incomplete/ambiguous, 2 endpoints unusable or
    (--flaky) the two failure rates not separable within the run budget."""
    if not ok or not_separable:
        return USAGE
    return INCOMPLETE if interrupted or not complete or ambiguous else OK
