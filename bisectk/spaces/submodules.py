"""Submodules in a cached worktree: each at the commit its superproject's commit records, from
the user's own clone of it, with no network.

A worktree made by `git worktree add` has every submodule as an empty directory, and a test
script's `git submodule update --init` there clones it again from its URL (no network on a GPU
node; a file:// URL refused since git 2.38.1): a repository whose build needs its submodules
(flash-attention's csrc/cutlass, PyTorch's third_party/) could not be tested in one, though `git
bisect run` in the user's checkout, where they are cloned already, could.

Here each submodule the user's checkout has cloned (its git directory under
<git-common-dir>/modules/<name>, where `git submodule update --init` keeps it, or a .git directory
in the user's checkout of it, for a repository added in place) is cloned locally
(objects hard-linked, nothing fetched) to where git itself keeps a linked worktree's submodules,
<git-common-dir>/worktrees/<wt>/modules/<name>, and checked out at the recorded commit. A test
script's own `git submodule update --init --recursive` then finds it there and only checks out;
whatever git writes to a submodule's config goes to that clone, never to the user's (a worktree
of the user's clone instead would have let it point the user's core.worktree into the cache). The
clones live in the worktree's admin directory and go with it (`bisectk ledger gc`). After each
switch of the superproject every submodule is checked out again (`checkout --force`) and cleaned,
so a run's outputs inside one are gone too; nested submodules the same way.

A submodule the user never cloned stays an empty directory, as it is in the user's checkout. One
the user cloned but whose recorded commit the clone lacks (a history older than the clone's
fetch) cannot be made: SubmoduleMissing, and the commit is skipped with that reason.

Abstractions
------------
gitlinks  -- (name, path, sha) of each submodule the checked-out commit records (run/gitmodules.py
             reads git's listings, and finds the user's clone of each: absorbed or in place).
sync      -- bring a worktree's submodules (recursively) to the recorded commits; the paths made.
present   -- the submodule directories a worktree holds a checkout in now (a `.git` file), nested
             ones too: what a pool that takes a cached worktree over did not make itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bisectk.run import gitmodules
from bisectk.spaces.commits import SpaceError, run_git


class SubmoduleMissing(SpaceError):
    """A submodule's recorded commit is not in the user's clone of it."""


def gitlinks(tree: Path) -> list[tuple[str, str, str]]:
    """(name, path, sha) of every submodule recorded in the commit checked out at `tree` and
    named in its .gitmodules; [] without a .gitmodules (one stat: the common case)."""
    if not (tree / ".gitmodules").is_file():
        return []
    try:
        names = gitmodules.names_by_path(run_git(tree, "config", "-z", "-f", ".gitmodules", "--get-regexp",
                                                 gitmodules.PATHS_KEY))
    except SpaceError:      # no submodule.*.path (exit 1), or a .gitmodules git cannot read
        return []
    if not names:
        return []
    return gitmodules.recorded(run_git(tree, "ls-tree", "-z", "HEAD", "--", *gitmodules.pathspecs(names)), names)


def present(tree: Path) -> list[Path]:
    """The directories of the submodules the commit checked out at `tree` records that hold a
    checkout (a `.git` file, as `sync` leaves it), recursively; [] without a .gitmodules."""
    found: list[Path] = []
    for _name, path, _sha in gitlinks(tree):
        target = tree / path
        if (target / ".git").is_file():
            found.append(target)
            found += present(target)
    return found


def _has_commit(git_dir: Path, sha: str) -> bool:
    """Whether the user's clone `git_dir` has commit `sha`. Its core.worktree may name a directory
    that is gone (a submodule `git rm`-ed since: its clone stays under .git/modules), where git
    dies before reading an object ("cannot chdir"): the work tree is given, and never read."""
    try:
        run_git(git_dir, "--git-dir", str(git_dir), "--work-tree", str(git_dir), "cat-file", "-e",
                f"{sha}^{{commit}}")
        return True
    except SpaceError:
        return False


def _checked_out(own: Path, target: Path, sha: str) -> bool:
    """Check `sha` out in our clone `own` of a submodule, at `target`: False when there is no
    clone yet or it lacks the commit (the user fetched it since ours was made)."""
    if not (own / "HEAD").is_file():
        return False
    if not (target / ".git").is_file():             # emptied meanwhile (a commit without it, a clean)
        target.mkdir(parents=True, exist_ok=True)
        (target / ".git").write_text(f"gitdir: {os.path.relpath(own, target)}\n")
    try:
        run_git(target, "checkout", "-q", "--force", "--detach", sha)
        return True
    except SpaceError:
        return False


def sync(tree: Path, gitdir: Path, modules: Path, clean_ignored: bool = False,
         user_tree: Path | None = None) -> list[Path]:
    """Check every submodule of `tree` (a worktree whose git dir is `gitdir`) out at its recorded
    commit, cloned from the user's clone (gitmodules.source_of: under `modules`, <their git
    dir>/modules, or in place in `user_tree`, their checkout of the same superproject),
    recursively; return the submodule directories checked out. SubmoduleMissing when a user's
    clone lacks its recorded commit."""
    made: list[Path] = []
    for name, path, sha in gitlinks(tree):
        source = gitmodules.source_of(modules, name, user_tree, path)
        own, target = gitdir / "modules" / name, tree / path
        if source is None:
            continue            # never cloned by the user: empty, as in the user's checkout
        if not _checked_out(own, target, sha):      # no clone of ours yet, or it lacks the commit
            if not _has_commit(source, sha):
                raise SubmoduleMissing(f"submodule {path} at {sha[:10]} is not in your clone of it ({source}); "
                                       f"`git -C {path} fetch` in your checkout brings it")
            shutil.rmtree(own, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)   # the empty directory the checkout left
            own.parent.mkdir(parents=True, exist_ok=True)
            run_git(tree, "clone", "-q", "--no-checkout", "--separate-git-dir", str(own), str(source), str(target))
            run_git(own, "--git-dir", str(own), "config", "core.worktree", os.path.relpath(target, own))
            run_git(target, "checkout", "-q", "--force", "--detach", sha)
        run_git(target, "clean", "-ffdq" + ("x" if clean_ignored else ""))
        made.append(target)
        made += sync(target, own, source / "modules", clean_ignored,
                     user_tree / path if user_tree is not None else None)
    return made
