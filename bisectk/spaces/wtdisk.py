"""A cached worktree as it lies on disk, read and mended without git: the pool's (worktrees.py) and
`collect`'s (wtcollect.py) view of an entry between commands.

Abstractions
------------
ENTRY / lock_entry -- the name of a cache's entries (wt-0, wt-1, ...) and the exclusive flock of
                      wt-N.lock that holds one (None when another process holds it).
new_place        -- the first wt-N free to be made, locked.
admin_of / head_of / index_of -- a worktree's admin directory as its .git file names it, the
                      commit its HEAD names, its index file's stat.
damage           -- what a run broke of a worktree's link to its git directory, in words.
under_way / end_under_way -- a git operation a run began there and left (a bisect, a rebase).
drop_locks       -- git's lock files a killed run left in the admin directory.
coarse_mtimes / survey / moved_since -- the directory stamps a switch is cleaned by (worktrees.py's
                      docstring, "Coarse timestamps", says why RACY_NS).
"""

from __future__ import annotations

import fcntl
import itertools
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from bisectk.spaces.bytecode import drop_bytecode


ENTRY = re.compile(r"^wt-(\d+)$")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def head_of(path: Path) -> str | None:
    """The commit a worktree has checked out (detached), read from its admin dir; None if the
    worktree is not intact (its .git file or admin dir gone, e.g. pruned)."""
    admin = admin_of(path)
    if admin is None:
        return None
    try:
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        return None
    return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else None


def admin_of(path: Path) -> Path | None:
    """A worktree's admin directory, as its .git file names it: absolute, or relative to the
    worktree (git's worktree.useRelativePaths), read as git reads it; None without such a file."""
    try:
        line = (path / ".git").read_text().strip()
    except OSError:
        return None
    return path / line[len("gitdir: "):] if line.startswith("gitdir: ") else None


def damage(path: Path, common: Path) -> str | None:
    """What a run broke of a worktree's link to its git directory, in words; None when intact: a
    .git file (no link, no directory) naming an admin directory under <common>/worktrees/ whose
    `gitdir` names this .git file back, with a commit or a branch in its HEAD. Asked before any git command
    runs in a cached worktree: with the link gone, git there walks up to whatever repository
    encloses the cache (a home directory kept in git); with the file rewritten (`gitdir:
    ~/repo/.git`) it reaches another repository, the user's own among them, where a `checkout
    --force`, a `clean` and the removal of a git operation under way would all write."""
    dotgit = path / ".git"
    if not os.path.lexists(dotgit):
        return "its .git file was removed"
    if dotgit.is_symlink() or not dotgit.is_file():
        return "its .git file was replaced by a " + ("link" if dotgit.is_symlink() else "directory")
    admin = admin_of(path)
    if admin is None:
        return "its .git file no longer names a git directory"
    if not os.path.lexists(admin):
        return f"its git directory {admin} was removed"
    try:
        back = (admin / "gitdir").read_text().strip()
        ours = (admin.resolve().parent == (common / "worktrees").resolve()
                and (admin / back).resolve() == dotgit.resolve())
    except OSError:
        ours = False
    if not ours:
        return f"its .git file names {admin}, not the git directory bisectk made for it"
    try:        # a commit, or a branch a run checked out (`git checkout -b`: the next switch resets it)
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        head = ""
    # git takes a directory whose HEAD is neither for no repository, and walks up from there
    valid = re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) or head.startswith("ref: refs/")
    return None if valid else "its HEAD names no commit"


# what a git operation left under way keeps in a worktree's admin directory: a `git bisect`, a
# merge, rebase, cherry-pick or revert that stopped (a conflict, a failing test in `rebase -x`)
_UNDER_WAY = ("BISECT_START", "BISECT_LOG", "BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK",
              "BISECT_NAMES", "BISECT_HEAD", "BISECT_FIRST_PARENT", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
              "MERGE_RR", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply",
              "sequencer", "refs/bisect")


def under_way(path: Path) -> bool:
    """Whether a run left a git operation under way in the worktree (a stat each)."""
    admin = admin_of(path)
    return admin is not None and any((admin / name).exists() for name in _UNDER_WAY)


def end_under_way(path: Path) -> None:
    """Forget a git operation a run began in the worktree and did not finish: a `git bisect` it
    did not reset, a merge, rebase, cherry-pick or revert stopped at a conflict. Its state is the
    worktree's own (in its admin directory) and a checkout keeps it, so every later run, of any
    commit or command, would find itself inside it (`git status` says "rebase in progress", a `git
    bisect start` there first goes back to the commit that bisection began at)."""
    admin = admin_of(path)
    if admin is None:
        return
    for name in _UNDER_WAY:
        leftover = admin / name
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    (admin / "ORIG_HEAD").unlink(missing_ok=True)


def index_of(path: Path) -> tuple | None:
    """The stat of a worktree's index file (None if it has none): git rewrites it by a rename, so
    any command that wrote it (add, stash, checkout, a refreshing status) gives a new one."""
    admin = admin_of(path)
    try:
        st = os.stat(admin / "index") if admin is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def drop_locks(path: Path) -> None:
    """git's lock files left in a worktree's own admin directory (`index.lock`, `HEAD.lock`, a
    per-worktree ref's): the git that made them was a run's (killed by the watchdog mid-commit, or
    a test that made one), and every process of a run has ended when its lease is over, so none is
    held. Left, every later checkout of the worktree fails ("Unable to create .../index.lock: File
    exists"), in this command and the next. Called once `damage` has found the admin directory ours."""
    admin = admin_of(path)
    if admin is None:
        return
    for lock in [*admin.glob("*.lock"), *(admin / "refs").rglob("*.lock")]:
        try:
            lock.unlink()
        except OSError:
            pass


def lock_entry(path: Path) -> int | None:
    """An fd holding the exclusive flock of wt-N.lock; None if another process holds it. The lock
    is of the file at that name when it is had: a holder unlinks the file before it lets go
    (`ledger gc`, a pool closed without keeping its worktrees), and a lock got on the unlinked
    file is one the next command, which makes the name anew, never meets."""
    while True:
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            there = os.stat(f"{path}.lock")
        except FileNotFoundError:
            there = None
        held = os.fstat(fd)
        if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)        # unlinked (or replaced) since it was opened: the name's file is the lock


def new_place(cache: Path, listing: list[Path]) -> tuple[Path, int]:
    """The first wt-N with no directory whose lock no process holds, locked (`listing`: the
    cache's entries). A held lock with no directory yet is another command's `git worktree add`
    under way (seconds on a big tree): that N is its, and the next is taken; a directory that
    appeared before the lock was had is an entry another command made meanwhile, left alone."""
    taken = {int(m.group(1)) for d in listing if (m := ENTRY.match(d.name))}
    for k in itertools.count():
        path = cache / f"wt-{k}"
        if k in taken or (fd := lock_entry(path)) is None:
            continue
        if not os.path.lexists(path):
            return path, fd
        os.close(fd)


RACY_NS = 50_000_000     # a stamp this close to its directory's last change cannot vouch for it (coarse clocks)


RACY = -1                # the stamp of such a directory: never equal to an mtime, so always "changed"


def coarse_mtimes(where: Path) -> bool:
    """Whether a directory under `where` can gain an entry without its mtime moving: two entries
    made microseconds apart fall in one tick of a coarse clock. A fine-grained one (multigrain
    timestamps) moves it every time. A probe that cannot be made says coarse: the safe answer."""
    try:
        probe = tempfile.mkdtemp(prefix=".mtime-probe-", dir=where)
    except OSError:
        return True
    try:
        for i in range(4):
            before = os.stat(probe).st_mtime_ns
            os.close(os.open(os.path.join(probe, str(i)), os.O_CREAT | os.O_WRONLY, 0o644))
            if os.stat(probe).st_mtime_ns == before:
                return True
        return False
    except OSError:
        return True
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def survey(root: Path, previous: dict[str, int] | None = None, coarse: bool = False,
           skip: frozenset[str] = frozenset()) -> dict[str, int]:
    """Drop the __pycache__ directories of a just-switched worktree (spaces/bytecode.py says why),
    and return the mtime of every directory left, for `moved_since`.

    With `previous` (what the last survey of this worktree returned), only the directories whose
    mtime moved since are read again: a directory gains an entry (a __pycache__, a subdirectory,
    a file) only by changing its mtime, so one that kept it holds nothing new. A 10,000-file tree
    of 102 directories: 11-20 ms for the whole walk, ~1 ms for the stat of each. `coarse`: the
    file system's clock is coarse, and a directory changed within RACY_NS is stamped RACY. `skip`:
    directories not entered (submodules: each is checked out and cleaned on its own)."""
    if previous is None:
        kept = drop_bytecode(root, known=skip)
    else:
        kept = []
        for d, mtime in previous.items():
            try:
                st = os.lstat(d)
            except OSError:
                continue            # gone: a switch or a clean removed it
            if not stat.S_ISDIR(st.st_mode):
                continue
            # moved: its entries again, and every directory new in it (each known one is looked
            # at by this loop itself)
            kept += [d] if st.st_mtime_ns == mtime else drop_bytecode(d, known=previous.keys() | skip)
    stamps: dict[str, int] = {}
    for d in kept:
        try:
            stamps[d] = os.stat(d).st_mtime_ns
        except OSError:
            pass
    if coarse:
        recent = time.time_ns() - RACY_NS
        stamps = {d: RACY if mtime >= recent else mtime for d, mtime in stamps.items()}
    return stamps


def moved_since(stamps: dict[str, int]) -> list[str] | None:
    """The directories whose mtime moved since `stamps` (or stamped RACY); None if one is gone
    (a run removed a directory: the whole worktree is cleaned)."""
    moved = []
    for d, mtime in stamps.items():
        try:
            if os.stat(d).st_mtime_ns != mtime:
                moved.append(d)
        except OSError:
            return None
    return moved
