"""What a fresh interpreter's start and exit give a script, given to a run in a warm worker.

run/isolation.py puts back the state a run changed; this module gives each run what a new process
would have had and a warm one lacks (the worker, run/worker.py, calls each around `_exec_script`):

mapped_objects / foreign_native -- the shared objects mapped into the worker (/proc/self/maps),
             before and after a run. dlopen() of a path already loaded returns the loaded handle
             (ctypes never dlcloses), so a library the run loaded -- `ctypes.CDLL("libk.so")`
             rebuilt per commit at the same path -- would serve every later run as it was built
             for this one: the worker retires. Objects under the interpreter's installed prefixes
             (an installed package's extension and its libraries) are the same file whatever the
             commit, and do not retire it.
reseed     -- fresh entropy for `random`, numpy's legacy global RandomState and torch's default
             generators: a fresh process seeds them from the OS, and forked workers share the
             template's state (isolation.py puts the baseline back after each run), so without it
             every warm run draws the same numbers and an intermittent failure never shows as one.
"""

from __future__ import annotations

import os
import sys


# -- native libraries ---------------------------------------------------------------------------
def mapped_objects() -> set[str]:
    """Regular files mapped executable into this process (shared objects); empty off Linux."""
    out = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6 or "x" not in parts[1] or parts[4] == "0":
                    continue   # not executable, or anonymous (inode 0)
                path = parts[5].rstrip("\n")
                if path.endswith(" (deleted)"):
                    path = path[: -len(" (deleted)")]
                if path.startswith("/"):
                    out.add(path)
    except OSError:
        pass
    return out


def _installed() -> tuple[str, ...]:
    import site
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except Exception:
        pass
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


def foreign_native(before: set[str], after: set[str]) -> list[str]:
    """Shared objects mapped by the run that are not an installed package's (sorted)."""
    installed = _installed()
    return sorted(p for p in after - before if not os.path.realpath(p).startswith(installed))


# -- random number streams ----------------------------------------------------------------------
def reseed() -> None:
    """Seed the global random streams from the OS, as a fresh process does."""
    import random
    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(None)
        except Exception:
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.seed()
        except Exception:
            pass
