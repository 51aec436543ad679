"""The logging module's named loggers, read and put back for a warm worker's probes (run/isolation.py).

A fresh process starts with no logger a script made, and with every library's logger as the
library left it on import. In a warm worker the loggers lived on: a script that adds a handler to
`logging.getLogger(__name__)` had one more handler in each later run (every line logged once per
earlier run, into that run's output), and a level, `propagate = False` or `disabled` set on a
library's logger held for every later run. (The root logger is a probe of its own.)

Abstractions
------------
read    -- the manager's loggers (name -> logger or placeholder) and each one's state: level,
           handlers, filters, propagate, disabled, parent (a placeholder: the children it holds).
write   -- the loggers made since dropped from the manager, those there before given back their
           state, the level caches cleared. A logger named after a module that stays loaded (a
           package the run imported first, whose module holds its logger) is kept, as the
           package's namespace is (isolation.Baseline adopts both); the handlers a run added
           elsewhere are closed (they hold its output, gone now), as the interpreter's exit closes them.
same    -- the loggers of a reading are there, each the same object in the same state; any
           other is a kept package's.
"""

from __future__ import annotations

import sys

_PLACEHOLDER = "placeholder"


def _state(obj) -> tuple:
    if hasattr(obj, "loggerMap"):   # a PlaceHolder: the children waiting for their parent
        return (_PLACEHOLDER, dict(obj.loggerMap))
    return (obj.level, list(obj.handlers), list(obj.filters), obj.propagate, obj.disabled, obj.parent)


def read() -> dict:
    manager = sys.modules["logging"].root.manager
    return {name: (obj, _state(obj)) for name, obj in list(manager.loggerDict.items())}


def _package(name) -> bool:
    """A logger a loaded module's import made for itself (`getLogger(__name__)` in urllib3)."""
    if not isinstance(name, str) or name == "__main__":
        return False
    parts = name.split(".")
    return any(".".join(parts[:i]) in sys.modules for i in range(len(parts), 0, -1))


def _same_state(a: tuple, b: tuple) -> bool:
    if a[0] == _PLACEHOLDER or b[0] == _PLACEHOLDER:
        return a[0] == b[0] and all(a[1].get(k) is v for k, v in b[1].items())
    return (a[0] == b[0] and a[3:5] == b[3:5] and a[5] is b[5]
            and len(a[1]) == len(b[1]) and all(map(lambda x, y: x is y, a[1], b[1]))
            and len(a[2]) == len(b[2]) and all(map(lambda x, y: x is y, a[2], b[2])))


def same(now: dict, saved: dict) -> bool:
    if any(k not in now or now[k][0] is not v[0] or not _same_state(now[k][1], v[1]) for k, v in saved.items()):
        return False
    return all(_package(k) for k in now.keys() - saved.keys())


def write(saved: dict) -> None:
    logging = sys.modules["logging"]
    manager = logging.root.manager
    kept = {k: obj for k, obj in list(manager.loggerDict.items()) if k not in saved and _package(k)}
    in_use = {h for _, state in saved.values() if state[0] != _PLACEHOLDER for h in state[1]}
    in_use.update(logging.root.handlers)
    for obj in kept.values():
        in_use.update(getattr(obj, "handlers", ()))
    for obj in list(manager.loggerDict.values()):
        for h in list(getattr(obj, "handlers", ())):
            if h not in in_use:
                in_use.add(h)        # closed once
                try:
                    h.close()
                except Exception:
                    pass
    manager.loggerDict.clear()
    manager.loggerDict.update({name: obj for name, (obj, _) in saved.items()})
    manager.loggerDict.update(kept)
    for obj, state in saved.values():
        if state[0] == _PLACEHOLDER:
            children = {c: None for c in obj.loggerMap if c in kept.values()}
            obj.loggerMap.clear()
            obj.loggerMap.update(state[1])
            obj.loggerMap.update(children)
            continue
        obj.level, obj.propagate, obj.disabled, obj.parent = state[0], state[3], state[4], state[5]
        obj.handlers[:] = state[1]
        obj.filters[:] = state[2]
    manager._clear_cache()


def show(v: dict) -> str:
    return f"{len(v)} loggers"
