"""drop_bytecode: remove the __pycache__ directories under a tree.

A source rewritten with the same size in the same second would otherwise run from a stale .pyc
(CPython checks only mtime and size). Every space that rewrites sources in place (a worktree
switched to another commit, a scratch tree given another set of hunks) calls it. One walk with
os.scandir that never enters .git: a 10,000-file tree costs a few milliseconds.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Container
from pathlib import Path

_SKIP = {".git"}


def drop_bytecode(root: Path | str, known: Container[str] = ()) -> list[str]:
    """Remove every __pycache__ below `root`; return the directories kept (the walk's order).
    `known`: directories below `root` not to enter (a caller that looks at each of them itself)."""
    kept: list[str] = []
    stack = [os.fspath(root)]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        kept.append(d)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name == "__pycache__":
                    shutil.rmtree(e.path, ignore_errors=True)
                elif e.name not in _SKIP and e.path not in known:
                    stack.append(e.path)
    return kept
