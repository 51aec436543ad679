"""Which source files a run imported, so a memo key can tell when they changed.

Abstractions
------------
Recording     -- set up on a subject's environment before it starts: BISECTK_IMPORTS names a
                 file, and PYTHONPATH gains a directory holding bisectk's `sitecustomize`
                 (run/_hook/), which records each module's file as it is imported (it takes itself
                 off `sys.path` and chains to any `sitecustomize` it shadows). `read_and_close()`
                 returns the files recorded and removes the file. Every Python process of the run
                 records (children inherit the environment); `python -I`, `-E` or `-S` record nothing.
loaded_files  -- the same record taken inside a warm worker: the files of the modules loaded now.
outside       -- what counts: files neither in the standard library, nor in an installed package
                 (site-packages), nor under the given roots (the run's own tree, whose content the
                 memo key covers by itself).
installed_dirs -- the site-packages directories a run imported installed packages from (the
                 record names the directory, not the files): keyed by what they have installed.

The record is made by the run, after the fact: the memo key (run/memokey.py) keeps the files
recorded for a subject and checks their content before it reuses a run.
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

from bisectk.run import tmpfiles

ENV = "BISECTK_IMPORTS"
SKIP_ENV = "BISECTK_IMPORTS_SKIP"   # prefixes the hook does not record (so it needs no sysconfig)
HOOK_DIR = str(Path(__file__).resolve().parent / "_hook")
MAX_FILES = 5000


def _skip_prefixes() -> tuple[str, ...]:
    # the standard library (os's directory; lib-dynload is below it) and the site-packages
    # directories: what sysconfig.get_paths() names as stdlib / platstdlib / purelib / platlib,
    # without loading sysconfig's data (3-13 ms of a command's start on a 2-core machine)
    sites = site.getsitepackages()
    roots = {os.path.dirname(os.__file__), *sites, *map(os.path.dirname, sites)}   # a venv's lib/pythonX.Y too
    roots.add(str(Path(__file__).resolve().parents[1]))   # bisectk itself
    return tuple(sorted({os.path.join(os.path.realpath(p), "") for p in roots if p}))


_SKIP = _skip_prefixes()


def outside(paths, roots=()) -> list[str]:
    """The files of `paths` that are the subject's own sources outside `roots`: not the standard
    library, not an installed package, not bisectk."""
    skip = _SKIP + tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)
    out = set()
    for p in paths:
        real = os.path.realpath(p)
        if real.startswith(skip) or "/site-packages/" in real or "/dist-packages/" in real:
            continue
        if real.endswith((".pyc", ".pyo")) or not os.path.isfile(real):
            continue
        out.add(real)
        if len(out) >= MAX_FILES:
            break
    return sorted(out)


def installed_dirs(paths) -> list[str]:
    """The site-packages (or dist-packages) directories among `paths`: a run's record names the
    one each installed package it imported came from (the hook notes the directory, not the
    files), so that whichever Python imported it (`sh run.sh` running `python`, a `pytest` on
    PATH), what is installed there keys the run (memokey.sources_digest)."""
    out = set()
    for p in paths:
        real = os.path.realpath(p)
        if os.path.basename(real) in ("site-packages", "dist-packages") and os.path.isdir(real):
            out.add(real)
    return sorted(out)


def loaded_files() -> list[str]:
    """The files of the modules loaded in this process (a warm worker, after a run)."""
    files = []
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and f:
            files.append(f)
    return outside(files)


class Recording:
    """The import record of one cold run (see the module docstring). `env` is the run's full
    environment, changed in place."""

    def __init__(self, env: dict[str, str]):
        fd, self.path = tmpfiles.make_file("imports")
        os.close(fd)
        env[ENV] = self.path
        env[SKIP_ENV] = os.pathsep.join(_SKIP)
        pp = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join([HOOK_DIR, pp]) if pp else HOOK_DIR

    def read_and_close(self) -> tuple[str, ...]:
        try:
            with open(self.path, "rb") as f:
                data = f.read(16 << 20)
        except OSError:
            data = b""
        self.close()
        lines = {ln.decode("utf-8", "surrogateescape") for ln in data.splitlines() if ln}
        return tuple(outside(lines)) + tuple(installed_dirs(lines))

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass
