"""What a warm worker preloads: the heavy packages the subject really imports, read from its source.

A warm worker pays its imports once (run/pool.py); every worker, and every hot spare that replaces a
worker retired by a hang, pays them again. Preloading torch and the CuTe DSL for a subject that
imports neither made `--warm` slower than cold runs on a short CPU subject (issue 25: each worker
spent seconds importing what no run used, and spares booting beside the runs took their CPU).

So the preload is what the subject's source asks for. The script a warm run executes (`python
script.py ...`, the only shape a worker serves) is parsed, not run: its imports, anywhere in the
file (an import inside a function is paid by every run all the same), and those of the project
modules it imports in turn (files beside the script or under the working directory), are the
packages it needs. An installed package the subject imports (not a project file, not the standard
library) is looked into one level: its `__init__` may import torch for it.

The submodules of those packages that the source names (`import cutlass.pipeline`, `from
cutlass.cute.nvgpu import cpasync`) are preloaded too: a package's `__init__` does not import
them all, and a worker that met them in its first run paid them there, after every hang (on the
H100 a promoted spare's first pass took 0.80-0.82 s, the passes after it 0.47-0.72 s). A name that
is not a module (`from torch import float32`) is skipped by the worker.

Abstractions
------------
subject_preload -- the preload candidates (e.g. torch, cutlass) the subject imports, in the
                   candidates' order, then the submodules of them it names (sorted); None when
                   the source cannot be read (a template path, a missing file, a syntax error):
                   the caller keeps its default.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

MAX_FILES = 400          # project files read at most: a huge tree costs a bounded scan
MAX_BYTES = 2_000_000    # a file larger than this is not source worth parsing
MAX_SUBMODULES = 32      # submodules of the candidates named by the source, preloaded at most


def _names(path: Path) -> tuple[set[str], list[tuple[str, int]]] | None:
    """(top-level names imported absolutely, (module, level) of relative imports); None if the
    file cannot be parsed."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return set(), []
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    absolute: set[str] = set()
    relative: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            absolute.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.append((node.module or "", node.level))
                relative.extend((f"{node.module}.{a.name}" if node.module else a.name, node.level)
                                for a in node.names)
            elif node.module:
                absolute.add(node.module)
                absolute.update(f"{node.module}.{a.name}" for a in node.names)
    return absolute, relative


def _local_file(dotted: str, roots: list[Path]) -> Path | None:
    """The project file of a dotted module name under one of `roots`, if there is one."""
    parts = dotted.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _installed_init(top: str) -> Path | None:
    """The `__init__.py` (or module file) of an installed top-level package, found without
    importing it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


def subject_preload(argv: list[str], cwd: str | os.PathLike | None,
                    candidates: tuple[str, ...]) -> tuple[str, ...] | None:
    if len(argv) < 2 or not argv[1].endswith(".py"):
        return None
    here = Path(cwd or os.getcwd())
    script = Path(argv[1]) if os.path.isabs(argv[1]) else here / argv[1]
    if not script.is_file():
        return None
    roots = list(dict.fromkeys([script.resolve().parent, here.resolve()]))
    wanted: set[str] = set()
    subs: set[str] = set()
    seen: set[Path] = set()
    todo = [script.resolve()]
    installed: set[str] = set()
    while todo and len(seen) < MAX_FILES:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        found = _names(path)
        if found is None:
            if path == script.resolve():
                return None
            continue
        absolute, relative = found
        for dotted in absolute:
            top = dotted.split(".")[0]
            if top in candidates:
                wanted.add(top)
                if dotted != top:
                    subs.add(dotted)
            elif (local := _local_file(dotted, roots)) is not None:
                todo.append(local.resolve())
            elif top not in sys.stdlib_module_names and _local_file(top, roots) is None:
                installed.add(top)
        package = path.parent
        for dotted, level in relative:
            base = package
            for _ in range(level - 1):
                base = base.parent
            if dotted and (local := _local_file(dotted, [base])) is not None:
                todo.append(local.resolve())
    for top in sorted(installed):          # an installed package may import a candidate for the subject
        init = _installed_init(top)
        found = _names(init) if init is not None else None
        if found is not None:
            wanted.update(d.split(".")[0] for d in found[0] if d.split(".")[0] in candidates)
    return (tuple(c for c in candidates if c in wanted)
            + tuple(sorted(subs, key=lambda d: (d.count("."), d))[:MAX_SUBMODULES]))
