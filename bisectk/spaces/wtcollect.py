"""Removing bisectk's cached worktrees: `bisectk ledger gc` (collect), a worktree made again
(discard), and the admin directories of those gone (prune_ours), never the user's own.

Abstractions
------------
collect    -- remove the repository's cached worktrees no process holds, the legacy ones, and
              the cache directories of repositories that are gone; the removed paths.
discard    -- remove one worktree and its admin directory.
prune_ours -- `git worktree prune` for bisectk's worktrees alone.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from bisectk.spaces.cachedir import LEGACY, cache_roots, git_common_dir, key_of, owner, remove_if_unused
from bisectk.spaces.commits import SpaceError, open_repo, run_git
from bisectk.spaces.wtdisk import ENTRY, lock_entry, pid_alive


_SESSION = re.compile(r"^(\d+)-[0-9a-f]+$")       # per-process sessions of bisectk before the cache


def discard(repo: Path, path: Path) -> None:
    try:
        run_git(repo, "worktree", "remove", "--force", "--force", str(path))
    except SpaceError:
        pass            # half-created or already gone: rmtree + prune settle it
    shutil.rmtree(path, onerror=_writable_then_remove)
    Path(f"{path}.shape").unlink(missing_ok=True)
    prune_ours(git_common_dir(repo))     # its admin directory, submodules' clones with it


def _writable_then_remove(func: Callable, name: str, _exc: object) -> None:
    """rmtree's second try at what it could not remove: a run may have made its worktree read-only
    (`chmod -R a-w .`); its directory is made writable again (ours: under the cache) and the
    removal retried once; what still resists is left to `git worktree add --force`'s error."""
    try:
        parent = os.path.dirname(name)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(name) and not os.path.islink(name):
            os.chmod(name, os.stat(name).st_mode | stat.S_IWUSR | stat.S_IXUSR | stat.S_IRUSR)
            shutil.rmtree(name, ignore_errors=True)
        else:
            func(name)
    except OSError:
        pass


_OURS = re.compile(r"/(bisectk|bisectk-\d+)/worktrees/[^/]+/wt-\d+/\.git$")


def prune_ours(common: Path) -> None:
    """`git worktree prune` for bisectk's worktrees alone: the admin directory (under
    <common>/worktrees/) of each worktree of a cache, or of the legacy <common>/bisectk-worktrees,
    whose directory is gone. `git worktree prune` would also delete the admin directory -- HEAD,
    index, per-worktree refs -- of a worktree of the user's own that is away for a while (on a
    disk not mounted now, or moved), leaving it "not a git repository" once it is back."""
    try:
        admins = [a for a in (common / "worktrees").iterdir() if a.is_dir()]
    except OSError:
        return
    legacy = os.path.join(os.fspath(common / LEGACY), "")
    for admin in admins:
        try:
            gitfile = (admin / "gitdir").read_text().strip()
        except OSError:
            continue                # not one git can name either: left to git's own prune
        if os.path.exists(gitfile) or (admin / "locked").exists():
            continue
        if _OURS.search(gitfile) or gitfile.startswith(legacy):
            shutil.rmtree(admin, ignore_errors=True)


def _sweep(repo: Path, cache: Path) -> list[Path]:
    """Remove the worktrees under `cache` that no process holds (and, in a legacy cache, the
    per-process sessions of dead processes); the removed paths."""
    removed = [d for d in cache.iterdir()
               if d.is_dir() and (m := _SESSION.match(d.name)) and not pid_alive(int(m.group(1)))]
    for d in removed:
        shutil.rmtree(d, ignore_errors=True)
    for d in sorted(cache.iterdir()):
        if not (ENTRY.match(d.name) and d.is_dir()):
            continue
        fd = lock_entry(d)
        if fd is None:
            continue                    # in use by a running command
        try:
            discard(repo, d)
            Path(f"{d}.lock").unlink(missing_ok=True)
            Path(f"{d}.carried").unlink(missing_ok=True)
            removed.append(d)
        finally:
            os.close(fd)
    for lock in cache.glob("wt-*.lock"):        # locks of entries gone
        if not lock.with_suffix("").exists():
            fd = lock_entry(lock.with_suffix(""))
            if fd is not None:
                lock.unlink(missing_ok=True)
                os.close(fd)
    return removed


def _orphans() -> list[Path]:
    """Remove the cache directories whose repository is gone (its recorded git dir no longer
    there) and that no process holds; the worktrees removed with them."""
    removed: list[Path] = []
    for root in cache_roots():
        try:
            caches = [d for d in root.iterdir() if d.is_dir()]
        except OSError:
            continue
        for cache in caches:
            recorded = owner(cache)
            if not recorded or os.path.isdir(recorded):
                continue
            fds = [lock_entry(lock.with_suffix("")) for lock in cache.glob("wt-*.lock")]
            try:
                if all(fd is not None for fd in fds):     # none in use by a running command
                    removed += sorted(d for d in cache.iterdir() if ENTRY.match(d.name) and d.is_dir())
                    shutil.rmtree(cache, ignore_errors=True)
            finally:
                for fd in fds:
                    if fd is not None:
                        os.close(fd)
    return removed


def collect(repo: Path | str) -> list[Path]:
    """Remove the repository's cached worktrees that no process holds (in each cache root, and in
    the legacy <git-common-dir>/bisectk-worktrees), the cache directories of repositories that
    are gone, and prune their admin directories (prune_ours); the removed worktree paths."""
    root = open_repo(repo)
    common = git_common_dir(root)
    removed: list[Path] = []
    key = key_of(common)
    for base in cache_roots():
        for cache in sorted(base.glob(f"{key}*")):
            if cache.is_dir() and owner(cache) == str(common):
                removed += _sweep(root, cache)
                remove_if_unused(cache)
    legacy = common / LEGACY
    if legacy.is_dir():
        removed += _sweep(root, legacy)
        try:
            legacy.rmdir()
        except OSError:
            pass                        # a worktree still held by a running (older) bisectk
    removed += _orphans()
    prune_ours(common)
    return removed
