"""Objects a repository borrows from another (its alternates file): why none of its commits reads.

`git clone --shared` (or `--reference`, or `git worktree`-like setups made by CI caches) writes
`objects/info/alternates`, naming object directories of another repository that this one reads
instead of holding the objects itself. When that directory is gone (the repository it named was
deleted or moved), git reads no commit, tag or tree those objects held: `git rev-parse v1` fails,
and `git bisect start` dies with "missing object". bisectk said "--good 'v1' is not a commit",
which it is; `gone_note` says which borrowed directory is missing and what to do.

Abstractions
------------
gone_note -- for a repository whose alternates file names a directory that no longer exists: the
             words that say so and what to do; "" otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path


def gone_note(listing: Path) -> str:
    """'its objects are borrowed from DIR, which no longer exists: ...' when the alternates file
    `listing` (`git rev-parse --git-path objects/info/alternates`) names a directory that is gone;
    "" otherwise (no such file, or every directory it names is there)."""
    try:
        lines = listing.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    objects = listing.parent.parent     # relative entries are read from the objects directory
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(objects, line))
        if not os.path.isdir(path):
            return (f"its objects are borrowed from {path}, which no longer exists ({listing} names it, "
                    f"as `git clone --shared` or `--reference` writes it): put that repository back, or clone again "
                    f"without --shared")
    return ""
