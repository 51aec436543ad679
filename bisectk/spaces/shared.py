"""What a repository's worktrees share with the user's checkout, read before and after the runs.

Every commit runs in a worktree of its own, but a worktree shares the repository's refs (branches,
tags, `refs/stash`) and its config with the user's checkout. A test that runs `git stash`,
`git branch -f`, `git tag` or `git config` in its worktree changes the user's repository, as it
would under `git bisect run`. bisectk cannot stop it, but says so: the user's next `git stash pop`
would otherwise pop the test's stash. So does a test's `git worktree add` (a worktree registered
in the user's repository, listed by their `git worktree list` and kept from their branch) or
`git worktree prune` (one of theirs forgotten while its disk was away).

snapshot -- the refs (name -> object), the config files' content digests and the linked worktrees
            other than bisectk's own; None when git cannot list them (the command goes on without
            the check). The second is given the first's git directory.
changes  -- what moved between two snapshots, in words: a line per kind of change.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from bisectk.run.classify import WORKTREE_PATH
from bisectk.spaces.commits import SpaceError, git_common_dir, run_git_bytes

MAX_NAMED = 5       # refs named in a line; the rest are counted
POOL_ADMIN = re.compile(r"wt-\d+$")   # the admin directory git names after a pool's worktree (spaces/worktrees.py)


def snapshot(root: Path, common: Path | None = None) -> dict | None:
    """`common`: the git common directory when known (the first snapshot's), saving a git call."""
    try:
        listing = run_git_bytes(root, "for-each-ref", "--format=%(refname) %(objectname)")
        common = common or git_common_dir(root)
    except SpaceError:
        return None
    refs = dict(line.split(b" ", 1) for line in listing.splitlines() if b" " in line)
    config = {}
    for name in ("config", "config.worktree"):
        try:
            config[name] = hashlib.sha256((common / name).read_bytes()).hexdigest()
        except OSError:
            config[name] = None
    return {"refs": refs, "config": config, "git_dir": str(common), "worktrees": _worktrees(common)}


def _worktrees(common: Path) -> dict[str, str]:
    """The linked worktrees registered in the repository (admin directory name -> the worktree's
    path, as its `gitdir` file names it), less bisectk's own (spaces/worktrees.py: a pool's wt-N)."""
    found = {}
    try:
        admins = sorted((common / "worktrees").iterdir())
    except OSError:
        return found
    for admin in admins:
        try:
            gitdir = (admin / "gitdir").read_text(errors="replace").strip()
        except OSError:
            gitdir = "" if POOL_ADMIN.match(admin.name) else str(admin)
        if not gitdir:      # a `git worktree add` half way (a pool's, read as it adds): not yet anyone's
            continue
        if not WORKTREE_PATH.search(gitdir.removesuffix(".git")):
            found[admin.name] = gitdir.removesuffix("/.git")
    return found


def _names(refs: list[bytes]) -> str:
    shown = ", ".join(r.decode(errors="replace") for r in sorted(refs)[:MAX_NAMED])
    return shown + (f" and {len(refs) - MAX_NAMED} more" if len(refs) > MAX_NAMED else "")


def changes(before: dict | None, after: dict | None) -> list[str]:
    """What the runs changed in the shared refs and config (empty when nothing, or unknown)."""
    if before is None or after is None:
        return []
    old, new = before["refs"], after["refs"]
    said = []
    made = [r for r in new if r not in old]
    gone = [r for r in old if r not in new]
    moved = [r for r in new if r in old and new[r] != old[r]]
    for refs, what in ((made, "created"), (moved, "moved"), (gone, "deleted")):
        if refs:
            said.append(f"{what} {_names(refs)}")
    wts_old, wts_new = before.get("worktrees", {}), after.get("worktrees", {})
    for names, where, what in (([n for n in wts_new if n not in wts_old], wts_new, "added worktrees"),
                               ([n for n in wts_old if n not in wts_new], wts_old, "removed worktrees")):
        if names:
            paths = [where[n].encode() for n in names]
            said.append(f"{what} {_names(paths)} (git worktree list)")
    for name, digest in after["config"].items():
        if digest != before["config"].get(name):
            said.append(f"changed {Path(after['git_dir']) / name}")
    return said
