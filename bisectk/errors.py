"""User-facing errors: each carries one line the CLI prints before exiting non-zero.

`BisectkError` is the base; the CLI catches it (and only it, plus KeyboardInterrupt) and prints
`bisectk: <message>`. Anything else escaping is a bug in bisectk, and is shown as such.
"""


class BisectkError(Exception):
    """An error caused by the user's input or environment, explained in one line."""

    exit_code = 2


class SpecError(BisectkError):
    """A spec file that cannot be loaded: names the file, the key, and what is wrong."""

    def __init__(self, path, key: str | None, problem: str):
        where = f"{path}" + (f": [{key}]" if key else "")
        super().__init__(f"{where}: {problem}")
        self.path, self.key, self.problem = path, key, problem
