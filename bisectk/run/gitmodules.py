"""Submodules as git records them, read from git's own output: pure, no process started here.

Both places that materialise a commit's submodules read them the same way: a cached worktree
(spaces/submodules.py) and a commit's archive for another host (run/remote.py). They ask git for
the names and paths a .gitmodules gives (`git config -z ... --get-regexp PATHS_KEY`) and for the
commits the tree records at those paths (`git ls-tree -z TREE -- pathspecs(names)`), and take
each submodule from the user's own clone of it (source_of).

Abstractions
------------
names_by_path -- {path: name} from the `config --get-regexp PATHS_KEY -z` listing.
pathspecs     -- the paths as literal pathspecs (a path may hold `*` or `?`).
recorded      -- (name, path, sha) of each gitlink an `ls-tree -z` listing shows at those paths.
source_of     -- the user's clone of a submodule: absorbed (<git dir>/modules/<name>) or in place
                 (<checkout>/<path>/.git); None if never cloned.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

PATHS_KEY = r"^submodule\..*\.path$"
GITLINK = "160000"


def names_by_path(listed: str) -> dict[str, str]:
    """{path: name} from `git config -z --get-regexp PATHS_KEY` (items `submodule.NAME.path\\nPATH`)."""
    names: dict[str, str] = {}
    for item in listed.split("\0"):
        key, _, path = item.partition("\n")
        if key.startswith("submodule.") and key.endswith(".path") and path:
            names[path.strip("/")] = key[len("submodule."):-len(".path")]
    return names


def pathspecs(paths: Iterable[str]) -> list[str]:
    return [":(literal)" + p for p in paths]


def recorded(listing: str, names: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, path, sha) of every gitlink in `git ls-tree -z` output (`MODE TYPE SHA\\tPATH`) at a
    path `names` knows, in listing order."""
    out = []
    for item in listing.split("\0"):
        meta, _, path = item.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == GITLINK and path in names:
            out.append((names[path], path, fields[2]))
    return out


def source_of(modules: Path, name: str, user_tree: Path | None, path: str) -> Path | None:
    """The user's clone of a submodule: its git dir under `modules` (where `git submodule update
    --init` keeps it), else a .git directory in the user's checkout of it (a repository added in
    place: "Adding existing repo at ..."); None if the user never cloned it."""
    for candidate in (modules / name, user_tree / path / ".git" if user_tree is not None else None):
        if candidate is not None and (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None
