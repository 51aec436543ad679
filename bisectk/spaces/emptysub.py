"""A path a run could not open inside a submodule the user's checkout never cloned.

A worktree of bisectk's gets each submodule the user's checkout has cloned (spaces/submodules.py)
and leaves the others empty, as they are in the user's checkout (`git clone` without
`--recurse-submodules`). A test that reads `third_party/lib/v.txt` then fails on every commit,
both endpoints alike, and bisectk said "the good configuration fails too ... or the good side is
flaky"; `git bisect run` in that checkout fails the same everywhere and names the first commit
after good, at exit 0. The cause is the submodule: `uncloned` finds it, and engine/environment.py
says so ("uncloned-submodule"), with the command that clones it.

Abstractions
------------
uncloned -- for a path a run could not open (relative to the directory the command runs in): the
            submodule of the user's checkout it lies in, when that one was never cloned; else None.
"""

from __future__ import annotations

import os
from pathlib import Path


def uncloned(repo: Path, subdir: Path, path: str) -> str | None:
    """The submodule path (relative to the repository's top level) that `path` lies in, when the
    user's index records a gitlink there and the checkout has no clone of it (no `.git` in it)."""
    from bisectk.spaces.commits import SpaceError, run_git
    if os.path.isabs(path):
        return None
    rel = os.path.normpath(os.path.join(subdir, path))
    if rel.startswith("..") or rel == ".":
        return None
    parts = Path(rel).parts
    for depth in range(1, len(parts)):
        top = "/".join(parts[:depth])
        if (repo / top).is_file() or not (repo / top).is_dir():
            return None
        if (repo / top / ".git").exists():
            return None                     # cloned: its files are there, as in the worktrees
        try:
            staged = run_git(repo, "ls-files", "--stage", "-z", "--", f":(literal){top}")
        except SpaceError:
            return None
        for entry in staged.split("\0"):
            meta, _, name = entry.partition("\t")
            if name == top and meta.startswith("160000 "):
                return top
    return None
