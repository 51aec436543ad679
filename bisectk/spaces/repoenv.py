"""GIT_DIR in the caller's environment naming another repository than the one bisectk opens.

git follows GIT_DIR wherever it is typed: `GIT_DIR=~/clean/.git git bisect start` in ~/wip
bisects ~/clean's history. bisectk drops GIT_DIR & co (spaces/early.py drop_repo_env: each run's
own git must see its worktree) and opens the repository it is typed in. Where GIT_DIR names
that same repository (a hook's `GIT_DIR=.git`) nothing changes; where it names another, bisectk
searched a different history than git would, and could answer at exit 0 for the wrong
repository. That is refused, naming both and the --repo that gives git's.

Abstractions
------------
other_repository -- the words refusing a GIT_DIR that names another repository than `root`, when
                    the command was typed in place (no --repo elsewhere), or None.
given_git_dir    -- the caller's GIT_DIR, if any.
"""

from __future__ import annotations

import os
from pathlib import Path

from bisectk.names import shell_join


def other_repository(root: Path, typed: Path | str, git_dirs: set[str]) -> str | None:
    """The words refusing the caller's GIT_DIR (dropped at start, spaces/early.py) when it names a
    git directory other than `git_dirs` (`root`'s own and common git directories, real paths) and
    `typed` (the repository path given) is the current directory, where git would have followed
    GIT_DIR; else None."""
    from bisectk.spaces import early
    git_dir = given_git_dir()
    if not git_dir or os.path.abspath(os.fspath(typed)) != os.path.abspath(os.curdir):
        return None
    named = os.path.realpath(git_dir)
    if named in git_dirs:
        return None
    work = early.DROPPED.get("GIT_WORK_TREE") or os.environ.get("GIT_WORK_TREE")
    top = os.path.abspath(work) if work else (os.path.dirname(named) if os.path.basename(named) == ".git" else named)
    return (f"GIT_DIR={git_dir} in your environment names the repository {named}, not {root} where the command "
            f"was typed (git would bisect that one; bisectk does not follow GIT_DIR): unset GIT_DIR, or give "
            f"--repo {shell_join([top])}")


def given_git_dir() -> str | None:
    """The GIT_DIR the caller set (taken out of the environment at start, or still there)."""
    from bisectk.spaces import early
    return early.DROPPED.get("GIT_DIR") or os.environ.get("GIT_DIR")
