"""The environment a warm run's kept modules were imported under: a later run that sets a variable
they name otherwise is refused.

A warm worker (run/worker.py) drops the modules a run imported from its own tree, but keeps those
it imported from elsewhere (an installed package, an editable install, a PYTHONPATH directory):
dropped, one would be loaded a second time beside what stays (worker.own_modules). A module that
reads a variable at import (`MODE = os.environ.get("MYLIB_MODE", "fast")`) keeps the value of the
run that imported it. With that variable a factor (the spec's `env = {MYLIB_MODE = "{mode}"}`), a
fresh process of every later run reads its own value, and the warm worker served them all the
first run's: the bad endpoint passed 10/10 warm runs where every cold run failed.

Variables read when a preloaded package is imported (torch's, the CuTe DSL's) send a run cold
(pool.PROCESS_LEVEL_ENV); these are the others, met by the modules runs import.

Abstractions
------------
Imported -- per worker: the source files of the modules each run kept, with the environment
            values its request set (`record`). `stale(env)`, before a run: the kept modules whose
            source names a variable this run's request gives another value than theirs did (read
            for the name, a bounded heuristic: a module that reads it at call time, not at
            import, is refused too; a name built at run time is missed). The worker then refuses
            the run, and the pool gives it to a worker that has not imported them.
"""

from __future__ import annotations

import os
import sys

MAX_BYTES = 4_000_000    # a file larger than this is not read for names (a huge generated module)


class Imported:
    """The modules runs imported and kept, and the environment their requests set."""

    def __init__(self) -> None:
        self.groups: list[tuple[dict[str, str], list[str]]] = []   # (a request's env, the files it kept)
        self._names: dict[tuple[str, str], bool] = {}              # (file, variable) -> named there

    def record(self, kept: list[str], env: dict[str, str]) -> None:
        """The modules (names in sys.modules) a run imported and that stay loaded, under the
        environment its request set (`env`: the variables on top of the worker's own)."""
        files = sorted({f for f in (getattr(sys.modules.get(n), "__file__", None) for n in kept)
                        if isinstance(f, str) and f})
        if files:
            self.groups.append((dict(env), files))

    def stale(self, env: dict[str, str], base: dict[str, str] | None = None) -> list[tuple[str, str]]:
        """(file, variable) for each kept module whose source names a variable that this
        request (`env`, over the worker's own environment `base`) sets otherwise than the run
        that imported it did; [] when none."""
        base = dict(os.environ) if base is None else base
        out = []
        for then, files in self.groups:
            moved = sorted(k for k in set(then) | set(env) if then.get(k, base.get(k)) != env.get(k, base.get(k)))
            for k in moved:
                out += [(f, k) for f in files if self._named(f, k)]
        return out

    def _named(self, path: str, name: str) -> bool:
        key = (path, name)
        if key not in self._names:
            try:
                with open(path, "rb") as f:
                    data = f.read(MAX_BYTES)
            except OSError:
                data = b""
            self._names[key] = name.encode() in data
        return self._names[key]


def refusal(stale: list[tuple[str, str]]) -> str:
    """Why the worker refuses a run, in words."""
    f, k = stale[0]
    more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
    return (f"{os.path.basename(f)}, imported by an earlier run and kept loaded, names {k}, which this run "
            f"sets otherwise{more}: a fresh process would import it with this run's value")
