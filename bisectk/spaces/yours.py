"""The user's own files a command names, copied into each commit's tree, as `git bisect run` sees them.

`git bisect run ./test.sh` runs in the user's checkout: git checks each commit out around the
untracked (or modified) test script, which stays put among the commit's tracked files. So the
script's `$(dirname "$0")/lib.sh`, Python's sys.path[0] (the script's own directory) and pytest's
rootdir and conftest.py discovery all see the commit's files. bisectk runs each commit in a
worktree of its own; run from the checkout by its absolute path, the same script would see the
checkout's files around it instead (every commit would import the checkout's sibling module). So
each such file is copied into every commit's tree at its own path in the repository, permission
bits kept (a symlink as the link, its target made to lead where the user's leads: `_link_in_tree`), as it was at the command's start, before the commit's build and runs, and the command runs it from
there: the word typed (`./test.sh`) reads the same in the worktree's directory as in the user's.

What is copied (spaces/command.py and spaces/runfiles.py decide, once, before the search):
- every file of the user's inside the repository that the command names (`--run`, `--build`: the
  program, an interpreter's script, an argument; `--pytest`: the test file of each node id) and
  that the --bad commit does not provide as it is: untracked (ignored ones too: the user named
  them), modified, or deleted on the way; reached through a directory link of the user's own
  (`mine -> tools`, untracked, a relative target inside the tree), the link instead, which leads
  to each commit's files there, as git bisect run follows it;
- beside each file that runs (the program, the script, the pytest file), the untracked files of
  its own directory that git does not ignore (`git ls-files --others --exclude-standard`: what
  git bisect run would find there too, a helper.sh or helper.py the script sources or imports),
  at most MAX_BESIDE files and MAX_BESIDE_BYTES in all; more than that and none of them is copied,
  and the command says so. Never a subdirectory's files, and an ignored file only beside a script
  git ignores itself (one kept in an ignored `local/` with its helpers): elsewhere ignored files
  are build outputs, a virtual environment, data, not the script's, and each commit's tree keeps
  its own;
- for a pytest file or directory (`--pytest`'s node ids, or the files a `--run 'pytest ...'` or
  `--run 'python -m pytest ...'` names), tracked or not, the untracked conftest.py files on its
  path from the repository's top level (pytest loads them, and git bisect run would see them).
A file of the user's outside the repository, or in its .git directory, is not copied: it runs by
its absolute path, as git bisect run runs it. Nor is anything for an executor on other hosts.

The copies are bisectk's own writes: a worktree's copies are removed when its lease ends, and a
pool that finds copies another process left (killed) removes them before the next checkout
(spaces/worktrees.py `carry`), so that a stale copy never answers for a script the user has since
edited or deleted. What they hold is part of each commit's revision in the memo key (`digest`).

Abstractions
------------
Carried  -- one file to copy: its path relative to the repository's top level, the user's file,
            and what it held when `taken` (the command's start).
taken    -- the carried files' bytes, mode and link targets read once: what every lease copies.
beside   -- the untracked files beside the files that run, bounded (see above).
digest   -- the content of the carried files, for the memo key.
place    -- copy them into a tree (a worktree, an exported tree); the paths written and the
            directories made, or why a file cannot be placed there.
remove   -- undo a `place` (the files, then the directories it made, if empty).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_BESIDE = 32                 # untracked files beside a script copied with it, at most
MAX_BESIDE_BYTES = 8 << 20      # and at most this many bytes in all
MAX_TAKEN_BYTES = 16 << 20      # a larger file named by the command is copied from the user's at each lease


@dataclass(frozen=True)
class Carried:
    rel: str        # where it goes, relative to the repository's top level
    source: str     # the user's file, absolute
    # what it held when taken (`taken`): its bytes (None: larger than MAX_TAKEN_BYTES, copied from
    # `source` at each lease), its mode bits, a link's target instead
    data: bytes | None = field(default=None, repr=False, compare=False)
    mode: int = 0
    link: str | None = None
    # an untracked file beside a script (`beside`), not one the command names: it never replaces a
    # file the commit has, where git bisect run's checkout would refuse to overwrite it
    beside: bool = False


def taken(carried: Sequence[Carried]) -> tuple[Carried, ...]:
    """The carried files as they are now: every lease copies these bytes, the ones the memo key
    holds (`digest`), though the user edits the script while the search runs (the ledger would
    otherwise keep the edited script's verdicts under the first one's key). A file larger than
    MAX_TAKEN_BYTES is read from `source` at each lease. A file that cannot be read is left out
    (the command then finds it missing, as it would by hand)."""
    out = []
    for c in carried:
        try:
            st = os.lstat(c.source)
            if stat.S_ISLNK(st.st_mode):
                out.append(Carried(c.rel, c.source, link=_link_in_tree(c, os.readlink(c.source)), beside=c.beside))
            elif stat.S_ISREG(st.st_mode):
                data = Path(c.source).read_bytes() if st.st_size <= MAX_TAKEN_BYTES else None
                out.append(Carried(c.rel, c.source, data, st.st_mode & 0o777, beside=c.beside))   # no setuid, setgid, sticky
        except OSError:
            continue
    return tuple(out)


def _link_in_tree(c: Carried, target: str) -> str:
    """The target a copy of the user's link `c` (pointing at `target`) gets in a commit's tree, so
    that it leads where the user's leads under git bisect run, whose checkout moves to each commit:
    into the tree (`t -> /home/me/proj/check.sh`, by an absolute path; or `t -> check.sh`), to the
    same path of the commit's tree, by a relative target; out of it (`t -> ../tools/check.sh`, a
    sibling directory of the checkout), or into its .git directory, to that file of the user's, by
    its absolute path. Copied as written, an absolute target led every commit to the checkout's
    HEAD copy, and a relative one out of the tree to nothing beside the worktree."""
    root = Path(c.source).parents[len(Path(c.rel).parts) - 1]
    full = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(c.source)), target))
    for base in dict.fromkeys((os.path.normpath(root), os.path.realpath(root))):
        if full == base or full.startswith(base + os.sep):
            inside = os.path.relpath(full, base)
            if ".git" in Path(inside).parts:
                return full
            return os.path.relpath(os.path.join(base, inside), os.path.dirname(os.path.join(base, c.rel)))
    return full


def beside(root: Path, running: Sequence[str], named: Iterable[str] = ()) -> tuple[list[str], tuple[int, int] | None]:
    """The untracked files (relative to `root`) in the directories of `running` (the files that
    run, relative to `root`), less those `named` already: those git does not ignore, and, beside
    a running file git ignores itself (a script kept in an ignored `local/`), the ignored ones
    too; and, when they are more than MAX_BESIDE files or MAX_BESIDE_BYTES, no file and (how
    many, their bytes). Only a directory's own files are looked at (never a subdirectory)."""
    from bisectk.spaces.commits import git_ok
    skip = set(named) | set(running)
    found: set[str] = set()
    for d in sorted({os.path.dirname(r) for r in running}):
        try:
            entries = [f"{d}/{e.name}" if d else e.name for e in os.scandir(root / d)
                       if e.is_symlink() or e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        entries = [rel for rel in entries if rel not in skip]
        found.update(_others(root, entries))
        if any(os.path.dirname(r) == d and git_ok(root, "check-ignore", "-q", "--", r) for r in running):
            found.update(_others(root, entries, "--ignored"))
    size = sum(0 if os.path.islink(root / r) else os.path.getsize(root / r) for r in found)
    if len(found) > MAX_BESIDE or size > MAX_BESIDE_BYTES:
        return [], (len(found), size)
    return sorted(found), None


def edited_beside(root: Path, running: Sequence[str]) -> list[str]:
    """The tracked files the user has edited (`git ls-files --modified`) in the directories of
    `running` (relative to `root`), never a subdirectory's: not copied (see spaces/runfiles.py)."""
    from bisectk.spaces.commits import SpaceError, run_git
    out: set[str] = set()
    for d in sorted({os.path.dirname(r) for r in running}):
        try:
            listed = run_git(root, "ls-files", "-z", "--modified", "--", f":(literal){d or '.'}")
        except SpaceError:
            continue
        out.update(rel for rel in listed.split("\0") if rel and os.path.dirname(rel) == d
                   and os.path.isfile(root / rel) and rel not in running)
    return sorted(out)


ASKED = 500     # paths given to one `git ls-files` (its command line)


def _others(root: Path, paths: Sequence[str], *how: str) -> list[str]:
    """Those of `paths` that `git ls-files --others --exclude-standard` lists (with `how`:
    `--ignored`, the ignored ones)."""
    from bisectk.spaces.commits import SpaceError, run_git
    out: list[str] = []
    for k in range(0, len(paths), ASKED):
        try:
            listed = run_git(root, "ls-files", "-z", "--others", *how, "--exclude-standard", "--",
                             *(":(literal)" + p for p in paths[k:k + ASKED]))
        except SpaceError:
            continue
        out += [rel for rel in listed.split("\0") if rel]
    return out


def digest(carried: Sequence[Carried]) -> str:
    """What the carried files hold (path, mode, content; a link's target), 16 hex digits."""
    h = hashlib.sha256()
    for c in sorted(carried, key=lambda c: c.rel):
        if c.link is not None:
            what = f"link:{c.link}"
        elif c.data is not None:
            what = hashlib.sha256(c.data).hexdigest()
        else:
            try:
                st = os.stat(c.source)
                what = f"size{st.st_size}-mtime{st.st_mtime_ns}"     # too large to hold: as memokey does
            except OSError:
                what = "missing"
        # beside: such a copy no longer replaces the commit's own file (a run made before did)
        h.update(f"{c.rel}\0{c.mode:o}\0{what}{' beside' if c.beside else ''}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def place(tree: Path, carried: Sequence[Carried], dirs: Sequence[str] = ()) -> tuple[list[str], list[str], str | None]:
    """Copy each carried file into `tree` at its path (the commit's own file there, if any, is
    replaced, unless the carried file is one found `beside` a script: that is why it cannot be
    placed; checkout and clean put it back), after making each of `dirs` (relative, the user's
    own directory the command runs in, which git bisect run's checkout keeps) where the tree
    lacks it: (the paths written, the directories made, deepest last, and None) or, when one
    cannot be placed (the tree has a directory there, or a link on the way leads out of the tree,
    or the user's file is gone), what was placed so far and why."""
    top = os.path.realpath(tree)
    written: list[str] = []
    made: list[str] = []
    for d in dirs:
        why = _make_dirs(tree, top, os.path.join(tree, d), made)
        if why is not None:
            return written, made, why
    for c in carried:
        dest = os.path.join(tree, c.rel)
        why = _make_dirs(tree, top, os.path.dirname(dest), made)
        if why is not None:
            return written, made, why
        try:
            if os.path.isdir(dest) and not os.path.islink(dest):
                return written, made, f"the commit's tree has a directory at {c.rel}"
            if c.beside and os.path.lexists(dest):
                return written, made, (f"the commit has {c.rel}, which your untracked {c.rel} beside the script "
                                       f"would replace (git bisect's checkout refuses to overwrite it): "
                                       f"move your copy away")
            if os.path.lexists(dest):
                os.unlink(dest)
            written.append(c.rel)
            if c.link is not None:
                os.symlink(c.link, dest)
            elif c.data is not None:
                fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(c.data)
                os.chmod(dest, c.mode)      # as the user has it, whatever the umask
            else:
                shutil.copy2(c.source, dest, follow_symlinks=False)
                if not os.path.islink(dest):
                    os.chmod(dest, os.stat(dest).st_mode & 0o777)
        except OSError as exc:
            return written, made, f"{c.rel} could not be copied: {exc.strerror or exc}"
    return written, made, None


def _make_dirs(tree: Path, top: str, directory: str, made: list[str]) -> str | None:
    """Make `directory` and its missing parents in `tree`, noting each in `made`; None, or why not
    (a link on the way leads out of the tree, or the tree has a file there)."""
    missing = []
    at = directory
    while not os.path.lexists(at):
        missing.append(at)
        at = os.path.dirname(at)
    real = os.path.realpath(at)
    if real != top and not real.startswith(top + os.sep):
        return f"{os.path.relpath(directory, tree)}/ leads out of the commit's tree"
    try:
        for d in reversed(missing):
            os.mkdir(d)
            made.append(os.path.relpath(d, tree))
    except OSError as exc:
        return f"{os.path.relpath(directory, tree)}/ could not be made: {exc.strerror or exc}"
    return None


def remove(tree: Path, written: Iterable[str], made: Sequence[str]) -> None:
    """Undo `place`: the files written, then the directories it made (deepest first) where empty."""
    for rel in written:
        try:
            os.unlink(os.path.join(tree, rel))
        except OSError:
            pass
    for rel in reversed(made):
        try:
            os.rmdir(os.path.join(tree, rel))
        except OSError:
            pass
