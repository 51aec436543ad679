"""User-facing errors: each carries one line the CLI prints before exiting non-zero.

`BisectkError` is the base; the CLI catches it (and only it, plus KeyboardInterrupt) and prints
`bisectk: <message>`. Anything else escaping is a bug in bisectk, and is shown as such.
`SpecError` (a spec file that cannot be loaded) and `LedgerError` (a ledger that cannot be used as
it is) are the two families with their own shape. `install_hint` words how to install a module
that bisectk's optional extras provide, as this install of bisectk takes it.
"""

from pathlib import Path

from bisectk.exitcodes import USAGE

# module -> the bisectk extra that installs it (tests/e2e/test_environment.py checks pyproject.toml)
MODULE_EXTRAS = {"torch": "kernels", "cutlass": "kernels", "cuda": "kernels", "ray": "ray",
                 "selenium": "browser", "picire": "bench", "pytest": "test", "hypothesis": "test"}


def install_hint(module: str) -> str:
    """The command that installs `module`: its bisectk extra, from the checkout this bisectk runs
    from when it is one (a clone has no package index entry to install from), else by name."""
    extra = MODULE_EXTRAS.get(module)
    if extra is None:
        return f"install the package that provides '{module}'"
    checkout = Path(__file__).resolve().parents[1]
    pyproject = checkout / "pyproject.toml"
    try:
        from_checkout = 'name = "bisectk"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        from_checkout = False
    return f"pip install -e '{checkout}[{extra}]'" if from_checkout else f"pip install 'bisectk[{extra}]'"


class BisectkError(Exception):
    """An error caused by the user's input or environment, explained in one line."""

    exit_code = USAGE


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
