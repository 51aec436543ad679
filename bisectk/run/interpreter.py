"""Which Python a command names, and whether it is the warm workers' own.

A warm worker runs `python k.py` in bisectk's interpreter, so only a command that names that very
interpreter, in the same environment, may go warm (run/pool.py `warm_capable`): a wrapper script
called `python` (that sets a variable, or picks a build), a `python3` that is another installation,
another virtual environment's `bin/python` (a link to the same binary with its own site-packages)
run cold.

A pyenv shim is a wrapper too, but one that only picks an interpreter: the one `pyenv which`
names for the run's directory (its `.python-version`) and environment (`PYENV_VERSION`). Taken for
a wrapper, every run of a pyenv user's `python k.py` went cold under --warm; it is resolved
through pyenv, and is the workers' own where pyenv picks bisectk's interpreter.

Abstractions
------------
same_python -- whether `program`, found on the run's PATH (a pyenv shim resolved for its
               directory), is the interpreter `python` in the same virtual environment.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

_SHIM_EXEC = re.compile(rb'exec "([^"]+/pyenv)" exec "\$program"')


def same_python(program: str, env: dict[str, str] | None, python: str, cwd=None) -> bool:
    """Whether `program` (as a command names it, found on env's PATH) is the interpreter `python`
    of the warm workers, in the same environment (module docstring). `cwd`: the run's directory,
    where a pyenv shim looks for its `.python-version`."""
    env = env or {}
    path = env.get("PATH")
    found = program if os.sep in program else shutil.which(program, path=path if path is not None else os.defpath)
    if found:
        shim = _pyenv_of_shim(found)
        if shim:
            found = _pyenv_which(shim, os.path.basename(found), str(cwd or os.getcwd()),
                                 tuple((k, env[k]) for k in _PYENV_VARS if k in env))
    if not found or os.path.realpath(found) != os.path.realpath(python):
        return False
    return _venv(found) == _venv(python)


def _venv(executable: str) -> str | None:
    """The virtual environment an interpreter's path is in (its pyvenv.cfg), None outside one."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(executable)))
    return os.path.realpath(root) if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else None


@functools.lru_cache(maxsize=64)
def _pyenv_of_shim(path: str) -> str | None:
    """The pyenv program a pyenv shim execs (`exec ".../libexec/pyenv" exec "$program"`), or None
    for anything else (an interpreter, another wrapper)."""
    if os.path.basename(os.path.dirname(path)) != "shims":
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    found = _SHIM_EXEC.search(head)
    return os.fsdecode(found.group(1)) if found else None


# what pyenv reads to pick an interpreter: the version asked for (empty: none), where to look for a
# .python-version (else the directory it runs in), its root
_PYENV_VARS = ("PYENV_VERSION", "PYENV_DIR", "PYENV_ROOT")


@functools.lru_cache(maxsize=64)
def _pyenv_which(pyenv: str, program: str, cwd: str, given: tuple[tuple[str, str], ...]) -> str | None:
    """The interpreter pyenv picks for `program` in `cwd` under the run's pyenv variables (`given`),
    as the run's shim will; None where pyenv cannot say (no such version installed, pyenv gone).
    Asked once per directory and variables (~50 ms a call)."""
    env = {k: v for k, v in os.environ.items() if k not in _PYENV_VARS}
    env.update(given)
    try:
        out = subprocess.run([pyenv, "which", program], cwd=cwd, env=env, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    said = out.stdout.strip()
    return said if out.returncode == 0 and os.path.isabs(said) else None
