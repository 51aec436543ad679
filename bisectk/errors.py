"""User-facing errors: each carries one line the CLI prints before exiting non-zero.

`BisectkError` is the base; the CLI catches it (and only it, plus KeyboardInterrupt) and prints
`bisectk: <message>`. Anything else escaping is a bug in bisectk, and is shown as such.
`SpecError` (a spec file that cannot be loaded) and `LedgerError` (a ledger that cannot be used as
it is) are the two families with their own shape.
"""


class BisectkError(Exception):
    """An error caused by the user's input or environment, explained in one line."""

    exit_code = 2


class SpecError(BisectkError):
    """A spec file that cannot be loaded: names the file, the key, and what is wrong."""

    def __init__(self, path, key: str | None, problem: str):
        where = f"{path}" + (f": [{_clip(key, 100)}]" if key else "")
        super().__init__(f"{where}: {_clip(problem, 400)}")
        self.path, self.key, self.problem = path, key, problem


def _clip(text: str, n: int) -> str:
    """User input quoted in a message (a key, a value, an expression) must not make it a page long."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."


class LedgerError(BisectkError):
    """A ledger that cannot be used as it is: damaged, read-only, full, locked. Names the file and
    what to do (`bisectk ledger check`, or another `--ledger`); the file itself is never rewritten."""
