"""The user's checkout and each commit's worktree: which directory or path of one is which of the other.

bisectk runs each commit in a worktree of its own, where `git bisect run` moves the user's checkout.
A command typed in a subdirectory runs in that subdirectory of each worktree (run_dir); a pathspec
typed there is read from there (pathspec_of), as git reads it; a relative path that climbs out of a
worktree (`../cutlass`) names from the worktree what it named from the checkout only if the user's
tree has it (outside_tree); and a command that builds in a CMake build directory configured on the
checkout would build the checkout for every commit, so it is refused (checkout_build).

Abstractions
------------
run_dir        -- where in each worktree the command runs: the user's directory, relative to the
                  repository root ('.' at the top level or outside the repository).
pathspec_of    -- git's pathspec as typed in the user's directory, made relative to the root.
outside_tree   -- what a relative path a run named, climbing out of its tree (`../cutlass`),
                  names from the user's own tree (CommitSpace.outside, HunkSpace.outside).
checkout_build -- refuses a command that builds the user's checkout (a CMake build directory
                  configured on it) instead of each commit.
post_checkout_hook -- the user's post-checkout hook, which `git bisect` runs at every checkout and
                  bisectk's checkouts never run.
path_dirs      -- the directories of PATH that lie in the user's checkout and that git tracks
                  (`PATH_add scripts`): each commit's own takes its place on the runs' PATH
                  (on_path), as `git bisect run` finds each commit's programs there.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from bisectk.errors import BisectkError


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def checkout_build(text: str, option: str, *, user_cwd: Path, root: Path) -> None:
    """Refuse a command that builds the user's checkout instead of each commit: a CMake build
    directory configured on the checkout (its CMakeCache.txt's CMAKE_HOME_DIRECTORY is inside the
    repository), named by the command or by a file in it (`cmake --build ../build && ../build/t`,
    also inside `sh -c '...'`). `git bisect run` builds it right, in the checkout it moves;
    bisectk's commits are in worktrees of their own, so every run would build and test the same
    code (or miss the directory, relative to a worktree). BisectkError, saying what to write."""
    try:
        words = shlex.split(text)
    except ValueError:
        return
    for w in list(words):               # `sh -c 'cmake --build ../b && ../b/t'`: its words too
        if " " in w:
            try:
                words += shlex.split(w)
            except ValueError:
                pass
    checkout = os.path.realpath(root)
    for word in words:
        if not word or word.startswith("-") or len(word) > 1024 or "\n" in word:
            continue
        path = os.path.realpath(os.path.join(os.path.abspath(user_cwd), word))
        if _within(path, checkout) and not os.path.isabs(word):
            continue    # `build/t` inside the repository: each worktree reads its own build/ there
        for candidate in [path, *list(Path(path).parents)[:4]]:
            home = _cmake_home(os.fspath(candidate))
            if home is None:
                continue
            home = os.path.realpath(home)
            if _within(home, checkout):
                raise BisectkError(
                    f"{option} names {candidate}, a CMake build directory of your checkout (its CMakeCache.txt: "
                    f"CMAKE_HOME_DIRECTORY={home}): each commit runs in a worktree of its own, so every run would "
                    f"build your checkout (or not find the directory), not the commit; build in each commit's "
                    f"worktree instead, e.g. --build 'cmake -S . -B build' --run \"sh -c 'cmake --build build && "
                    f"build/YOUR_TEST'\" (a build directory your .gitignore names is kept between commits)")
            break                       # the nearest build directory decides


def _cmake_home(directory: str) -> str | None:
    """The source directory a CMake build directory was configured for, or None."""
    try:
        with open(os.path.join(directory, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.partition("=")[2].strip() or None
    except OSError:
        return None
    return None


def outside_tree(path: str, subdir: str | os.PathLike, base: str | os.PathLike) -> str | None:
    """`path`, as a run named it from `subdir` of a tree of its own (a worktree, a scratch copy),
    when it is relative and climbs out of that tree (`../cutlass/include`, a sibling checkout):
    what it names from `base`, the user's own tree, if anything is there; else None. From the
    run's tree the same `..` leads elsewhere (engine/environment.py, "outside-path")."""
    if os.path.isabs(path):
        return None
    rel = os.path.normpath(os.path.join(subdir, path))
    if not rel.startswith(".." + os.sep) and rel != "..":
        return None
    mine = os.path.normpath(os.path.join(base, rel))
    return mine if os.path.lexists(mine) else None


def run_dir(user_cwd: Path, root: Path) -> Path:
    """The directory of each worktree the command runs in: `user_cwd` relative to `root` when it
    is inside the repository (never its .git), else the worktree's root."""
    try:
        inside = Path(os.path.abspath(user_cwd)).relative_to(root)
    except ValueError:
        return Path(".")
    return Path(".") if inside.parts[:1] == (".git",) else inside


def pathspec_of(paths: list[str], user_cwd: Path, root: Path) -> list[str]:
    """git's pathspec as typed in the user's directory, made relative to the repository root (git
    reads a pathspec relative to where it is typed; bisectk runs git at the root). Magic
    pathspecs (':(top)dir', ':!dir') are left to git; a path outside the repository is refused."""
    user_cwd = Path(os.path.abspath(user_cwd))
    try:
        inside = user_cwd.relative_to(root)
    except ValueError:
        inside = Path(".")      # typed elsewhere (--repo PATH): read from the repository root
    out = []
    for p in paths:
        if not p or p.startswith(":"):
            out.append(p)
            continue
        rel = os.path.normpath(os.path.join(str(inside), p))
        if rel == ".." or rel.startswith(".." + os.sep):     # not a name like `..data`
            raise BisectkError(f"pathspec {p!r} is outside the repository {root}")
        # a trailing slash keeps git's meaning (a directory only), which normpath would drop
        out.append(rel + "/" if p.endswith("/") and rel != "." else rel)
    return [p for p in out if p]


def post_checkout_hook(root: Path) -> Path | None:
    """The user's post-checkout hook, when git would run one (an executable file where
    core.hooksPath or the git directory puts it): `git bisect` checks each commit out with hooks
    on, so what the hook makes (generated code, a fetched tool) is there for each run; every git
    command of bisectk's runs with hooks off (spaces/early.py GIT_CONFIG), so the worktrees lack it."""
    from bisectk.run.process import run_tool
    from bisectk.spaces import early
    from bisectk.spaces.commits import SpaceError, git_common_dir
    try:        # the user's own setting: run_git's config turns hooks off with this very key
        where = run_tool(["git", "config", "--get", "core.hooksPath"], cwd=root, env=early.git_env()).stdout.strip()
        where = where or os.path.join(git_common_dir(root), "hooks")
    except (OSError, SpaceError):
        return None
    hook = Path(os.path.expanduser(where))
    hook = (hook if hook.is_absolute() else Path(root) / hook) / "post-checkout"
    return hook if hook.is_file() and os.access(hook, os.X_OK) else None


def path_dirs(root: Path, revs: Sequence[str], path: str | None) -> tuple[tuple[int, str], ...]:
    """The entries of `path` (a PATH) that name a directory of the user's work tree (its links
    resolved; never in .git) that git tracks at one of `revs` (HEAD, the --bad commit): (the
    entry's index, the directory relative to the root). `git bisect run check.sh` with
    `$PWD/scripts` on PATH (direnv's `PATH_add scripts`) finds each commit's own check.sh, as git
    moves the checkout under it; the runs in bisectk's worktrees would find the checkout's copy at
    every commit. A directory git never tracked (a .venv/bin, an ignored build/bin) stays the
    user's, as the checkout keeps it under git bisect run too. Relative entries are read from
    where each run starts, in its worktree, already."""
    from bisectk.spaces.commits import git_ok
    if not path:
        return ()
    top = os.path.realpath(root)
    found: list[tuple[int, str]] = []
    for i, entry in enumerate(path.split(os.pathsep)):
        if not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if not _within(real, top):
            continue
        rel = os.path.relpath(real, top)
        if rel == ".":
            found.append((i, "."))
        elif ".git" not in Path(rel).parts and any(
                git_ok(root, "cat-file", "-e", f"{rev}:{Path(rel).as_posix()}") for rev in revs):
            found.append((i, Path(rel).as_posix()))
    return tuple(found)


def path_mark(dirs: Sequence[tuple[int, str]]) -> str:
    """What a run's revision adds where `dirs` (path_dirs) are replaced on its PATH: its runs are
    not those of a PATH that led to the checkout's copies (CommitSpace's and HunkSpace's keys)."""
    return "+path-" + ":".join(rel for _, rel in dirs)


def on_path(path: str, dirs: Sequence[tuple[int, str]], tree: Path) -> str:
    """`path` (a PATH) with each entry `path_dirs` found replaced by the same directory of `tree`
    (a commit's worktree)."""
    entries = path.split(os.pathsep)
    for i, rel in dirs:
        entries[i] = os.path.normpath(os.path.join(tree, rel))
    return os.pathsep.join(entries)
