"""How a tree benchmark makes a repository cold again: its cached worktrees dropped between samples.

A "cold" bisection is a repository's first: no cached worktree, so the first run's worktree is a
full checkout (`git worktree add`, every file written). Between two cold samples the benchmark
must take the cached worktree away, and how it does that moves the next sample's wall:

- `gc`: `bisectk ledger gc`, the product's own path: the worktree's files are deleted now.
- `move` (the default): the cache directory is renamed into a trash directory and
  `git worktree prune` forgets it; the trash is deleted once the benchmark has ended.

Why `move`. On ext4, the inode allocator skips inodes freed in the last minutes (`recently_deleted`
in fs/ext4/ialloc.c: 60 s, 300 s while the inode table block is dirty). A benchmark that deletes
a 10,000-file worktree before every cold sample makes the next checkout scan past tens of thousands
of such inodes: on the 2-core development VM (perf: `recently_deleted` and `find_inode_bit` on top)
a file's creation then costs ~0.85 ms of system time instead of ~0.05 ms, and one
`git worktree add` of the 10,002 files took 1.4-9.3 s, growing with each delete-and-add cycle,
against 0.29-0.48 s after five quiet minutes. A user's first command on a repository follows no such
mass deletion; `move` measures that command, `gc` the one right after a `bisectk ledger gc`.
Both leave the product in the same state (no cached worktree, no admin entry in the git dir).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOWS = ("move", "gc")


def drop(repo: Path, trash: Path, how: str = "move", root: Path = ROOT) -> None:
    """Leave `repo` with no cached bisectk worktree, the way `how` says (module docstring)."""
    if how == "gc":
        subprocess.run([sys.executable, "-m", "bisectk", "ledger", "gc", "--repo", str(repo)], capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(root)}, check=True)
        return
    if how != "move":
        raise ValueError(f"unknown way to drop worktrees: {how!r} (one of {', '.join(HOWS)})")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bisectk.spaces.cachedir import LEGACY, git_common_dir
    from bisectk.spaces.worktrees import cache_dir_of     # where the product keeps them
    # and where a base tree older than the move out of the checkout kept them (<git dir>/bisectk-worktrees)
    for cache in (cache_dir_of(repo), git_common_dir(repo) / LEGACY):
        if cache.exists():
            trash.mkdir(parents=True, exist_ok=True)
            cache.rename(trash / f"worktrees-{len(list(trash.iterdir()))}")
    subprocess.run(["git", "worktree", "prune"], cwd=repo, check=True)


def empty(trash: Path) -> None:
    """Delete what `drop` moved aside (after the timed part)."""
    shutil.rmtree(trash, ignore_errors=True)
