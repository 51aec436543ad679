"""Worktrees to build commits in, cached per repository across runs and commands.

A big tree costs one full checkout: the first lease of a repository adds a worktree
(`git worktree add`, every file written); every later lease, in this command or the next one,
switches a cached worktree (`git checkout --force --detach`, only the files that differ) or
finds it at the commit already (its build outputs kept; what the last run added or edited is
undone first, as a switch undoes it, so that every run of a commit starts from the same tree).

Abstractions
------------
WorktreePool -- a context manager lending detached worktrees, one per concurrent lease, from the
                repository's cache directory (entries wt-0, wt-1, ...; cachedir.cache_dir_of).
                A process holds an entry by an exclusive flock on wt-N.lock, so two commands on
                one repository never share one, and the kernel drops the lock of a killed run:
                its worktrees are taken over by the next run, never left in use. On exit
                (however it is left) the locks are released and the worktrees stay for the next
                command; `keep=False` removes them as well.
prepare      -- start a lease's checkout in the background, so that the first run's worktree is
                written while the rest of the set-up (listing the history, imports) goes on;
                `bisect` begins it before its CLI is even imported (spaces/early.py).
carry        -- copy the user's files a command names into a leased worktree (spaces/yours.py),
                noted beside its lock (wt-N.carried): `release` removes them, and so does the
                next lease after a killed command (an ignored copy survives `git clean`).
damage       -- what a run broke of a worktree's link to its git directory (its .git file removed,
                replaced, or naming another repository's): asked before a lease runs git in it,
                which then makes it again instead, and after each run (the run is UNRESOLVED
                INFRA, run/runner.py), since git run there would reach another repository.
collect      -- remove the cached worktrees no process holds, those older bisectk versions kept in
                <git-common-dir>/bisectk-worktrees/, and the cache directories of repositories
                that are gone; and prune their admin directories (never the user's own
                worktrees'): `bisectk ledger gc`.

Where: outside every checkout, in $XDG_CACHE_HOME/bisectk/worktrees/<key>/ (spaces/cachedir.py
says why, and how <key> and the fallback are chosen).

Why the user's checkout stays byte-identical: every git command here runs inside a worktree this
module created, or is `git worktree add/remove`, whose one write to the shared .git is the
worktree's admin directory (.git/worktrees/<name>), removed with it by prune_ours (not `git
worktree prune`, which would remove that of a worktree of the user's that is away). Hooks are off
and the caller's GIT_DIR / GIT_INDEX_FILE / GIT_WORK_TREE are dropped (commits.run_git). A worktree taken over from another
process is reset before use (`checkout --force` of its commit and `clean`; a stale index.lock of
a killed git removed first), because a killed build may have left it half-written. After every
switch the __pycache__ directories go too (as spaces/bytecode.py does), and `clean` runs only
when some directory changed since the last switch left the worktree clean, and then only in the
directories that changed. Submodules are checked out after each add and switch, and cleaned there,
by spaces/submodules.py (the survey and `clean` above leave their directories to it). A `git
bisect`, merge, rebase, cherry-pick or revert a run began there and left under way (its state is
the worktree's own, in its admin directory) is forgotten before the next run, as a `git checkout`
would not.

Coarse timestamps. A directory gains an entry only by changing its mtime -- to the kernel's clock
at that moment. Where that clock is coarse (one tick, 1-10 ms: Linux before 6.13's multigrain
timestamps, and many other file systems), an entry made within the tick of the checkout's last
write leaves the mtime as the survey stamped it. A pool probes its file system at its first
checkout (`coarse_mtimes`); where it is coarse, a directory stamped within RACY_NS of its last
change is treated as changed at the next switch (cleaned there, as git treats a racily clean file
as modified).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.procstat import give, owner_to_give
from bisectk.spaces import submodules
from bisectk.spaces.cachedir import (LEGACY, cache_dir_of, cache_roots, claim, git_common_dir, key_of, owner,
                                     remove_if_unused, slot, writable)
from bisectk.spaces.bytecode import drop_bytecode
from bisectk.spaces.dirwatch import DirWatch
from bisectk.spaces.commits import SpaceError, git_ok, open_repo, run_git

# A worktree's first checkout writes the whole tree (10,002 files: 7.3-10.7 s on the 2-core VM in
# one sitting, 3.1-4.1 s with parallel checkout). 0 = one worker per core; git's own threshold
# (100 files) keeps a small switch serial; a git before 2.32 ignores the key.
PARALLEL_CHECKOUT = ("-c", "checkout.workers=0")
_ENTRY = re.compile(r"^wt-(\d+)$")
RACY_NS = 50_000_000     # a stamp this close to its directory's last change cannot vouch for it (coarse clocks)
RACY = -1                # the stamp of such a directory: never equal to an mtime, so always "changed"
SCOPED_MAX = 64          # more changed directories than this: one `clean` of the whole worktree
_SESSION = re.compile(r"^(\d+)-[0-9a-f]+$")       # per-process sessions of bisectk before the cache
_ASK = object()         # _switch: find the moved directories itself


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _head_of(path: Path) -> str | None:
    """The commit a worktree has checked out (detached), read from its admin dir; None if the
    worktree is not intact (its .git file or admin dir gone, e.g. pruned)."""
    admin = _admin_of(path)
    if admin is None:
        return None
    try:
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        return None
    return head if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else None


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
    and return the mtime of every directory left, for `_moved`.

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


def _moved(stamps: dict[str, int]) -> list[str] | None:
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


def _admin_of(path: Path) -> Path | None:
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
    admin = _admin_of(path)
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


# what decides the bytes a checkout writes besides the commit: filters (git-lfs's smudge among them)
# and line endings; and the repository's own attributes file. Not core.filemode or core.symlinks:
# `git init` writes them for its file system, and they change no file's content. Whether git reads
# its replace refs (core.useReplaceRefs) decides which tree a commit's sha checks out. A sparse
# checkout: `git worktree add` gives each worktree the patterns of the checkout it is run from
_SHAPING = (r"^(filter\..*\.(smudge|process|required)|core\.(autocrlf|eol|checkroundtripencoding|usereplacerefs"
            r"|sparsecheckout|sparsecheckoutcone)|lfs\.)")


def _sparse_patterns(repo: Path, said: str) -> str:
    """The patterns of the user's sparse checkout ('' when it is not sparse): a worktree made
    under others (`git sparse-checkout set` or `disable` since) has other files."""
    if not re.search(r"^core\.sparsecheckout true$", said, re.M | re.I):
        return ""
    try:
        return Path(repo, run_git(repo, "rev-parse", "--git-path", "info/sparse-checkout")).read_text(errors="replace")
    except (OSError, SpaceError):
        return ""


def _replacements(repo: Path, common: Path) -> str:
    """The replace refs (`git replace`): each makes a sha check out another object's content, so
    a commit's sha no longer pins its tree. '' without any (one stat when refs/replace/ is absent
    and nothing is packed) or when git is told to ignore them (GIT_NO_REPLACE_OBJECTS)."""
    if os.environ.get("GIT_NO_REPLACE_OBJECTS"):
        return ""
    base = os.environ.get("GIT_REPLACE_REF_BASE") or "refs/replace/"
    if base == "refs/replace/" and not (common / "refs" / "replace").is_dir():
        try:
            packed = (common / "packed-refs").read_bytes()
        except OSError:
            return ""
        if b" refs/replace/" not in packed:
            return ""
    return run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)", base)


def _has_attributes(dirs: list[str]) -> bool:
    """Whether any of these directories holds a .gitattributes (a stat each)."""
    return any(os.path.lexists(os.path.join(d, ".gitattributes")) for d in dirs)


def _attributes_differ(path: Path, old: str, new: str) -> bool:
    """Whether any .gitattributes differs between commits `old` and `new` (a tree diff: unchanged
    directories are not walked)."""
    return not git_ok(path, "diff-tree", "-r", "--quiet", old, new, "--", ":(glob)**/.gitattributes")


def checkout_shape(repo: Path, common: Path) -> str:
    """A digest of what, besides the commit, decides the files a checkout writes ('' when none of
    it is set, so that a plain repository's keys are what they were): the shaping config
    (_SHAPING), <git dir>/info/attributes, GIT_LFS_SKIP_SMUDGE, the replace refs and the sparse
    checkout's patterns."""
    try:
        said = run_git(repo, "config", "--get-regexp", _SHAPING)
    except SpaceError:              # exit 1: no such key
        said = ""
    try:
        attributes = (common / "info" / "attributes").read_text(errors="replace")
    except OSError:
        attributes = ""
    skip = os.environ.get("GIT_LFS_SKIP_SMUDGE", "")
    replaced = _replacements(repo, common)
    if not (said or attributes or skip or replaced):
        return ""
    sparse = _sparse_patterns(repo, said)
    parts = (said, attributes, skip) + tuple(p for p in (replaced, sparse) if p)   # keys made before stay
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def _shape_of(path: Path) -> str:
    try:
        return Path(f"{path}.shape").read_text().strip()
    except OSError:
        return ""


def _record_shape(path: Path, shape: str) -> None:
    shaped = Path(f"{path}.shape")
    if shape:
        shaped.write_text(shape + "\n")
    else:
        shaped.unlink(missing_ok=True)


def trust(path: Path) -> None:
    """Root in a repository another user owns (a CI container's checkout, which the user declared
    safe to git): the worktree's admin directory is given to that user (release), so git run by
    root, ours and the runs', must be told the worktree is safe too (`safe.directory` through
    GIT_CONFIG_COUNT, which this process and every run inherit), once per worktree."""
    n = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    if any(os.environ.get(f"GIT_CONFIG_KEY_{i}") == "safe.directory"
           and os.environ.get(f"GIT_CONFIG_VALUE_{i}") == str(path) for i in range(n)):
        return
    os.environ.update({f"GIT_CONFIG_KEY_{n}": "safe.directory", f"GIT_CONFIG_VALUE_{n}": str(path),
                       "GIT_CONFIG_COUNT": str(n + 1)})


def _arm(entry: _Entry) -> None:
    """Watch a worktree just left clean (dirwatch.py), where its survey's directories are all of
    it: not with submodules, whose own directories the survey leaves to them."""
    if entry.subs or entry.stamps is None:
        if entry.watch is not None:
            entry.watch.close()
            entry.watch = None
        return
    if entry.watch is None:
        entry.watch = DirWatch()
    entry.watch.arm(entry.stamps)


# what a git operation left under way keeps in a worktree's admin directory: a `git bisect`, a
# merge, rebase, cherry-pick or revert that stopped (a conflict, a failing test in `rebase -x`)
_UNDER_WAY = ("BISECT_START", "BISECT_LOG", "BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK",
              "BISECT_NAMES", "BISECT_HEAD", "BISECT_FIRST_PARENT", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
              "MERGE_RR", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply",
              "sequencer", "refs/bisect")


def _under_way(path: Path) -> bool:
    """Whether a run left a git operation under way in the worktree (a stat each)."""
    admin = _admin_of(path)
    return admin is not None and any((admin / name).exists() for name in _UNDER_WAY)


def _end_under_way(path: Path) -> None:
    """Forget a git operation a run began in the worktree and did not finish: a `git bisect` it
    did not reset, a merge, rebase, cherry-pick or revert stopped at a conflict. Its state is the
    worktree's own (in its admin directory) and a checkout keeps it, so every later run, of any
    commit or command, would find itself inside it (`git status` says "rebase in progress", a `git
    bisect start` there first goes back to the commit that bisection began at)."""
    admin = _admin_of(path)
    if admin is None:
        return
    for name in _UNDER_WAY:
        leftover = admin / name
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    (admin / "ORIG_HEAD").unlink(missing_ok=True)


def _index_of(path: Path) -> tuple | None:
    """The stat of a worktree's index file (None if it has none): git rewrites it by a rename, so
    any command that wrote it (add, stash, checkout, a refreshing status) gives a new one."""
    admin = _admin_of(path)
    try:
        st = os.stat(admin / "index") if admin is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass
class _Entry:
    path: Path
    lock: int                   # the open fd holding the flock
    sha: str | None             # what is checked out; None: unknown or not yet reset
    fresh: bool = True          # taken over from the cache: reset before first use
    stamps: dict[str, int] | None = None    # directory mtimes when last left clean (survey)
    subs: frozenset[str] = frozenset()      # submodule directories checked out in it (submodules.py)
    index: tuple | None = None  # its index file's stat when last left clean: a run's git command moves it
    watch: DirWatch | None = None   # its directories, watched since it was last left clean (dirwatch.py)
    generation: int = 0         # bumped when a lease wrote in it: a build made there before may be gone

    @property
    def note(self) -> Path:
        """Beside its lock: the user's files copied into it (`carry`), until they are removed."""
        return Path(f"{self.path}.carried")


@dataclass
class WorktreePool:
    """Detached worktrees from the repository's cache, one per concurrent lease (see module doc).

    A lease of a commit that a free worktree of this pool holds reuses it, tidied as a switch would
    leave it (`_tidy`; ignored build outputs stay); otherwise a held free worktree is switched, or
    another cached one is taken over, or one is added, while fewer than `size` are held; else the
    lease waits. A switch runs
    `checkout --force --detach` and `clean` (`-x` too when `clean_ignored`, which also wipes
    ignored build outputs). `while_preparing()` is called when a lease must wait for a checkout
    begun by `prepare` (the caller's idle time: a big tree's first checkout takes seconds).
    """

    repo: Path | str
    cache_dir: Path | str | None = None
    size: int = 4
    clean_ignored: bool = False
    keep: bool = True
    _held: list[_Entry] = field(default_factory=list)
    _free: list[_Entry] = field(default_factory=list)      # least recently used first
    _pending: set[str] = field(default_factory=set)        # shas being prepared in the background
    while_preparing: Callable[[], object] | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _open: bool = False
    # entries removed to be made again, their locks still held (_take_cached): the next add's places
    _emptied: list[tuple[Path, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.repo = open_repo(self.repo)
        self._common = git_common_dir(self.repo)
        ours = [*cache_roots(), self._common / LEGACY]
        if any(Path(self.repo).resolve().is_relative_to(d.resolve()) for d in ours):
            # its next switch would `checkout --force` and `clean` what the user put there
            raise SpaceError(f"{self.repo} is one of bisectk's own cached worktrees (of the repository at "
                             f"{self._common}): run bisectk from your checkout, or --repo it")
        self._chosen = not self.cache_dir           # ours to choose: another key if one is taken
        self.cache_dir = Path(self.cache_dir) if self.cache_dir else cache_dir_of(self.repo, self._common)
        self.size = max(1, self.size)
        self._cond = threading.Condition()
        self._owner = owner_to_give(self._common)

    def __enter__(self) -> WorktreePool:
        admin = self._common / "worktrees"
        # a checkout of another user's, a read-only mount: git worktree add writes its admin dir there
        if not os.access(admin if admin.is_dir() else self._common, os.W_OK | os.X_OK):
            raise SpaceError(f"cannot write in {self._common}: bisect checks each commit out in a worktree "
                             f"of its own, which git records there; run as the repository's owner, or bisect a clone "
                             f"of your own (git clone --shared {self.repo} DIR, then --repo DIR)")
        try:
            # a repository that claimed the chosen key meanwhile: the next one
            while not claim(self.cache_dir, self._common):
                if not self._chosen:
                    raise SpaceError(f"{self.cache_dir} keeps the worktrees of {owner(self.cache_dir)}, "
                                     f"not of {self._common}")
                self.cache_dir = slot(self.cache_dir.parent, self._common)
            writable(self.cache_dir)
        except OSError as exc:
            raise SpaceError(f"cannot write in {self.cache_dir}, where bisect keeps its worktrees: "
                             f"{exc.strerror or exc}") from None
        self._open = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @functools.cached_property
    def coarse(self) -> bool:
        """Whether this file system's clock is coarse: probed at the pool's first checkout, not by
        a pool that checks nothing out (`collect`, an early pool nobody took)."""
        return coarse_mtimes(self.cache_dir)

    # -- leases -------------------------------------------------------------------------------------
    @contextmanager
    def lease(self, sha: str) -> Iterator[Path]:
        """A worktree with `sha` checked out (detached); it is this lease's alone until exit."""
        entry = self.acquire(sha)
        try:
            yield entry.path
        finally:
            self.release(entry, sha)

    def prepare(self, sha: str) -> None:
        """Check `sha` out in the background; a lease of it waits for this and then finds it."""
        def work() -> None:
            try:
                self.release(self.acquire(sha, preparing=True), sha)
            except BaseException:       # the real lease tries again and reports the error
                pass
            finally:
                with self._cond:
                    self._pending.discard(sha)
                    self._cond.notify_all()
        with self._cond:     # started under the lock: `close` joins every thread it lists
            if not self._open:
                return              # closed meanwhile (a pool begun early that nobody took)
            self._pending.add(sha)
            t = threading.Thread(target=work, name=f"bisectk-prepare-{sha[:10]}", daemon=True)
            self._threads.append(t)
            t.start()

    def acquire(self, sha: str, preparing: bool = False) -> _Entry:
        if not self._open:
            raise RuntimeError("WorktreePool used outside its `with` block")
        with self._cond:
            while True:
                if not preparing and sha in self._pending:
                    if self.while_preparing is not None:
                        self.while_preparing()
                    self._cond.wait()
                    continue
                warm = next((e for e in self._free if e.sha == sha and not e.fresh), None)
                if warm is not None:
                    self._free.remove(warm)
                    entry = warm
                    break
                if len(self._held) < self.size:
                    entry = self._take_cached(sha)
                    if entry is None:
                        entry = self._add(sha)      # under the lock: two adds never race
                        return entry
                    break
                if self._free:
                    entry = self._free.pop(0)
                    break
                self._cond.wait()
        if self._owner is not None:
            trust(entry.path)
        # Switching a worktree touches only that worktree's own index and files: no lock needed.
        try:
            _drop_carried(entry)        # a killed command's copies (an ignored one survives `clean`)
            if self.damage(entry.path) is not None:
                self._remake(entry, sha)    # a run broke its link to git: no git command runs there
            else:
                _drop_locks(entry.path)
                try:
                    if entry.sha == sha and not entry.fresh:
                        self._tidy(entry, sha)
                    else:
                        self._switch(entry, sha)
                except submodules.SubmoduleMissing:
                    raise               # the commit's, not the worktree's: a new one lacks it too
                except SpaceError as exc:
                    self._remake_or_raise(entry, sha, exc)
        except BaseException:
            entry.stamps = None     # a checkout that failed half-way (a damaged commit) may have left files
            self.release(entry, None)
            raise
        return entry

    def _remake_or_raise(self, entry: _Entry, sha: str, failed: SpaceError) -> None:
        """After a switch of `entry` to `sha` failed: what a run left in the worktree (a tree it
        made read-only, a `git init` or `git worktree remove` of its own) is no reason to stop the
        command, so the worktree is made again; if that fails too, the commit (a missing object,
        a failing filter) or the disk is the reason, and the switch's own error is raised, in
        git's words, for the caller to judge (CommitSpace.lease: skipped, or the command stops)."""
        try:
            self._remake(entry, sha)
        except SpaceError:
            raise failed from None

    def carry(self, entry: _Entry, carried) -> str | None:
        """Copy the user's files (spaces/yours.py Carried) into a leased worktree, noting them
        first beside its lock: `release` removes them, and so does the next lease of the worktree
        after a command was killed (`git clean` would leave an ignored one, and a stale copy would
        run for a script the user has since deleted). None, or why one could not be placed."""
        from bisectk.spaces.yours import place
        entry.note.write_text(json.dumps({"files": [c.rel for c in carried], "dirs": []}))
        # replacing none of the commit's files, the copies' removal leaves the tree as it was
        alone = not any(os.path.lexists(entry.path / c.rel) for c in carried)
        written, made, why = place(entry.path, carried)
        entry.note.write_text(json.dumps({"files": written, "dirs": made, "alone": alone}))
        if entry.watch is not None:
            entry.watch.quiet()     # the copies' own writes, forgotten: what the watch sees from now is the run's
        return why

    def release(self, entry: _Entry, sha: str | None) -> None:
        _drop_carried(entry)
        self._off_branch(entry)
        if self._owner is not None:     # root in another user's repository: git's admin files are theirs
            give([self._common / "worktrees", _admin_of(entry.path) or entry.path], self._owner)
        with self._cond:
            entry.sha = sha
            self._free.append(entry)
            self._cond.notify_all()

    def _off_branch(self, entry: _Entry) -> None:
        """A run that checked a branch out in its worktree (`git checkout side`, `git switch -c x`)
        left the worktree on it: git refuses the user `git checkout side`, `git branch -f/-D side`
        ('already checked out at' the cached worktree) for as long as it stays so, between commands
        too. HEAD is detached at the commit the branch is at (written as git writes it, never by a
        git command run through a worktree whose link a run may have broken); the branch is not
        moved. An unborn one (`checkout --orphan`) leaves HEAD naming no commit: made again."""
        admin = _admin_of(entry.path)
        try:
            head = (admin / "HEAD").read_text().strip() if admin is not None else ""
        except OSError:
            return
        if not head.startswith("ref: refs/") or self.damage(entry.path) is not None:
            return
        try:
            at = run_git(self.repo, "rev-parse", "--verify", "--quiet", f"{head[5:]}^{{commit}}")
        except SpaceError:
            return      # unborn: _head_of reads no commit there, and the next lease makes it again
        lock = admin / "HEAD.lock"
        try:
            lock.write_text(at + "\n")
            os.replace(lock, admin / "HEAD")
        except OSError:
            lock.unlink(missing_ok=True)

    def _take_cached(self, sha: str) -> _Entry | None:
        """Lock a cached worktree no process holds, preferring one at `sha`; None if none is free."""
        mine = {e.path for e in self._held}
        found: list[tuple[Path, str | None]] = []
        for d in sorted(self.cache_dir.iterdir(), key=lambda p: p.name):
            if _ENTRY.match(d.name) and d.is_dir() and d not in mine:
                found.append((d, _head_of(d)))
        found.sort(key=lambda item: item[1] != sha)
        for path, head in found:
            fd = self._lock(path)
            if fd is None:
                continue
            if head is None or damage(path, self._common) is not None or _shape_of(path) != self.shape:
                # not intact (pruned, half-made), or its files were written under other checkout
                # settings (git-lfs installed since, a filter or eol setting changed): made again,
                # by the next add, under the lock held now. Let go and taken again, the lock could
                # be found held: a child that another thread forked meanwhile (any git command)
                # holds a copy of this descriptor until it execs
                self._discard(path)
                self._emptied.append((path, fd))
                continue
            entry = _Entry(path, fd, head)
            self._held.append(entry)
            return entry
        return None

    def _add(self, sha: str) -> _Entry:
        if self._emptied:       # an entry removed to be made again, still locked
            path, fd = self._emptied.pop(0)
        else:
            taken = {int(m.group(1)) for d in self.cache_dir.iterdir() if (m := _ENTRY.match(d.name))}
            k = next(k for k in range(len(taken) + 1) if k not in taken)
            path = self.cache_dir / f"wt-{k}"
            fd = self._lock(path)
            if fd is None:          # another process is making the same one
                raise SpaceError(f"worktree {path} is being created by another bisectk; try again")
        try:
            run_git(self.repo, *PARALLEL_CHECKOUT, "worktree", "add", "--detach", "--force", str(path), sha)
        except BaseException:
            self._discard(path)
            os.close(fd)
            raise
        entry = _Entry(path, fd, sha, fresh=False)
        self._held.append(entry)
        try:
            self._made(entry)
        except BaseException:
            self.release(entry, None)       # held, at no commit: the next lease switches it
            raise
        return entry

    def _made(self, entry: _Entry) -> None:
        """A worktree `git worktree add` has just written: its shape, submodules and survey."""
        _record_shape(entry.path, self.shape)
        self._submodules(entry)
        entry.stamps = survey(entry.path, coarse=self.coarse, skip=entry.subs)
        entry.index = _index_of(entry.path)
        _arm(entry)

    def damage(self, path: Path) -> str | None:
        """What a run broke of this pool's worktree at `path` (module function `damage`), or None."""
        return damage(path, self._common)

    def _remake(self, entry: _Entry, sha: str) -> None:
        """A held worktree whose link to its git directory a run broke (`damage`): removed (its
        directory and admin directory, never through git run inside it) and added again at `sha`,
        under the same lock."""
        if entry.watch is not None:
            entry.watch.close()
            entry.watch = None
        entry.sha, entry.stamps, entry.index, entry.subs = None, None, None, frozenset()
        entry.generation += 1           # a build made in it is gone with it
        self._discard(entry.path)
        run_git(self.repo, *PARALLEL_CHECKOUT, "worktree", "add", "--detach", "--force", str(entry.path), sha)
        entry.sha, entry.fresh = sha, False
        self._made(entry)

    def _lock(self, path: Path) -> int | None:
        return _lock(path)

    def _switch(self, entry: _Entry, sha: str, checkout: bool = True, moved=_ASK) -> None:
        """`checkout` False: HEAD and the tracked files are as the checkout left them (`_tidy`
        found them so). `moved`: the directories changed since the last survey, when the caller
        has already asked (`_moved`)."""
        if entry.fresh:         # another process's leftovers: a killed git's lock, a killed build
            admin = _admin_of(entry.path)
            if admin is not None:
                (admin / "index.lock").unlink(missing_ok=True)
        # -q: a checkout that leaves a detached HEAD otherwise walks the history to warn about
        # commits left behind (a second per switch on 300,000 commits)
        # Untracked files can only have appeared where a directory's mtime moved since the last
        # switch left the worktree clean: creating or deleting an entry updates its directory.
        # None: not known (another process's worktree, -x asked, a directory gone): all of it.
        _end_under_way(entry.path)
        if moved is _ASK:
            moved = None if entry.fresh or self.clean_ignored or entry.stamps is None else _moved(entry.stamps)
        stamps_before, entry.stamps = entry.stamps, None    # unknown until the switch is done
        if checkout:        # False: `_tidy` found the tracked files and HEAD as the checkout left them
            before = _head_of(entry.path)
            # a file whose blob a switch keeps lies in a directory there before it (the last survey
            # knows them all); the .gitattributes that apply to it lie there or above: none in any
            # of them, before the switch or after, and no tree diff is asked (a process a switch)
            dirs = list(stamps_before) if stamps_before else None
            had = dirs is None or _has_attributes(dirs)
            run_git(entry.path, *PARALLEL_CHECKOUT, "checkout", "-q", "--force", "--detach", sha)
            if (before is not None and before != sha and (had or _has_attributes(dirs))
                    and _attributes_differ(entry.path, before, sha)):
                # a switch rewrites only the files whose blob changed: one whose line endings or
                # filter the new .gitattributes changes would keep the old commit's bytes, where a
                # fresh checkout of this commit (the user's clone) writes others. A checkout of
                # the same commit from an empty index writes every file (not a switch's: it
                # keeps them); the untracked ones are left to `clean`, below
                run_git(entry.path, "read-tree", "--empty")
                run_git(entry.path, *PARALLEL_CHECKOUT, "checkout", "-q", "--force", "--detach", sha)
        removed = ""        # git clean's "Removing PATH" lines
        if moved is None or len(moved) > SCOPED_MAX:
            removed = run_git(entry.path, "clean", "-ffd" + ("x" if self.clean_ignored else ""))
        elif moved:         # each recursively: a new subdirectory moved its parent's mtime
            scope = [":(literal)" + os.path.relpath(d, entry.path) for d in moved]
            removed = run_git(entry.path, "clean", "-ffd", "--", *scope)
        if checkout or removed:
            entry.generation += 1       # a build made in it before is gone or stale
        previous = None if entry.fresh else stamps_before
        self._submodules(entry)
        # another process's leftovers are walked whole; our own worktree only where it changed
        entry.stamps = survey(entry.path, previous, coarse=self.coarse, skip=entry.subs)
        entry.index = _index_of(entry.path)
        entry.fresh = False
        _arm(entry)

    def _tidy(self, entry: _Entry, sha: str) -> None:
        """Make a worktree already at `sha` what its checkout left, for another run of the same
        commit: the last run's untracked files removed and its edits to tracked files undone, as a
        switch would (ignored build outputs stay, as they do across a switch). A test that is not
        idempotent (`mkdir out`) otherwise fails at its second run and is taken for a flake.

        Nothing is written when nothing changed: the directories' mtimes say whether an entry was
        made or removed, git's index whether a tracked file was edited (`diff-files`: a stat of
        each, no write), and HEAD and the index file's stat whether the run moved either (a test
        that ran `git checkout`, `git add` or `git stash` in its worktree): then it is switched."""
        if (_head_of(entry.path) != sha or entry.index is None or _index_of(entry.path) != entry.index
                or _under_way(entry.path)):
            self._switch(entry, sha)
            return
        if not self.clean_ignored and entry.watch is not None and entry.watch.quiet():
            return          # nothing written in it since: no stat of every file
        moved = None if self.clean_ignored or entry.stamps is None else _moved(entry.stamps)
        edited = not git_ok(entry.path, "diff-files", "--quiet")
        if moved != [] or edited:
            self._switch(entry, sha, checkout=edited, moved=moved)

    def holds_ignored(self) -> bool:
        """Whether a worktree of this pool holds ignored files now (a `build/` kept between
        commits for incremental builds): what one commit's build left that another's run saw."""
        with self._cond:
            paths = [e.path for e in (*self._free, *self._held)]
        for path in paths:
            try:
                if run_git(path, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory"):
                    return True
            except SpaceError:
                continue        # a worktree gone or broken: it holds nothing a run will see
        return False

    @property
    def _modules(self) -> Path:
        """Where the user's clones of the submodules are: <git-common-dir>/modules."""
        return self._common / "modules"

    def _submodules(self, entry: _Entry) -> None:
        """The worktree's submodules at the commit's recorded commits (spaces/submodules.py); one
        the new commit no longer records is removed whole."""
        made = frozenset()
        if (entry.path / ".gitmodules").is_file():
            admin = _admin_of(entry.path)
            if admin is None:
                raise SpaceError(f"worktree {entry.path} has no git directory")
            made = frozenset(os.fspath(p) for p in submodules.sync(entry.path, admin, self._modules,
                                                                   self.clean_ignored, Path(self.repo)))
        for gone in entry.subs - made:      # its clone stays in the admin directory, for later
            if os.path.isfile(os.path.join(gone, ".git")):
                shutil.rmtree(gone, ignore_errors=True)
        entry.subs = made

    def _discard(self, path: Path) -> None:
        _discard(self.repo, path)

    @functools.cached_property
    def shape(self) -> str:
        """git's settings that decide what a checkout writes (checkout_shape): a cached worktree
        made under others is made again, and the runs' memo key holds them."""
        return checkout_shape(self.repo, self._common)

    def close(self) -> None:
        """Release every worktree (removed too unless `keep`); safe to call twice."""
        with self._cond:
            if not self._open:
                return
            self._open = False
            threads = list(self._threads)
        for t in threads:
            t.join()
        with self._cond:
            held, self._held, self._free = self._held, [], []
            emptied, self._emptied = self._emptied, []
        for path, fd in emptied:        # removed and not made again: nothing is left of them but the lock
            os.close(fd)
            if not self.keep:
                Path(f"{path}.lock").unlink(missing_ok=True)
        for entry in held:
            if entry.watch is not None:
                entry.watch.close()
            if not self.keep:
                self._discard(entry.path)
            os.close(entry.lock)
        if not self.keep:
            for entry in held:
                Path(f"{entry.path}.lock").unlink(missing_ok=True)
            remove_if_unused(self.cache_dir)


def _drop_carried(entry: _Entry) -> None:
    """Remove the user's files `carry` copied into a worktree, as its note lists them (a stat
    when there are none). When the run wrote nothing (the watch quiet since the copies were
    made) and the copies replaced none of the commit's files, their removal leaves the tree as
    its checkout left it: the watch forgets it, and the next lease of the commit skips `git
    clean` as it would without copies. Otherwise the watch is doubted, and the next lease's
    `_tidy` checks the tree the slow way (a tracked file a copy replaced is checked out again)."""
    try:
        listed = json.loads(entry.note.read_text())
    except (OSError, ValueError):
        return
    from bisectk.spaces.yours import remove
    untouched = entry.watch is not None and entry.watch.quiet()
    remove(entry.path, listed.get("files", ()), listed.get("dirs", ()))
    entry.note.unlink(missing_ok=True)
    if entry.watch is not None:
        entry.watch.quiet()                 # the removals' own writes
        if not (untouched and listed.get("alone")):
            entry.watch.doubt()             # what the run wrote was read above: the slow way must find it


def _lock(path: Path) -> int | None:
    """An fd holding the exclusive flock of wt-N.lock; None if another process holds it."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _discard(repo: Path, path: Path) -> None:
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


def _drop_locks(path: Path) -> None:
    """git's lock files left in a worktree's own admin directory (`index.lock`, `HEAD.lock`, a
    per-worktree ref's): the git that made them was a run's (killed by the watchdog mid-commit, or
    a test that made one), and every process of a run has ended when its lease is over, so none is
    held. Left, every later checkout of the worktree fails ("Unable to create .../index.lock: File
    exists"), in this command and the next. Called once `damage` has found the admin directory ours."""
    admin = _admin_of(path)
    if admin is None:
        return
    for lock in [*admin.glob("*.lock"), *(admin / "refs").rglob("*.lock")]:
        try:
            lock.unlink()
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
               if d.is_dir() and (m := _SESSION.match(d.name)) and not _pid_alive(int(m.group(1)))]
    for d in removed:
        shutil.rmtree(d, ignore_errors=True)
    for d in sorted(cache.iterdir()):
        if not (_ENTRY.match(d.name) and d.is_dir()):
            continue
        fd = _lock(d)
        if fd is None:
            continue                    # in use by a running command
        try:
            _discard(repo, d)
            Path(f"{d}.lock").unlink(missing_ok=True)
            Path(f"{d}.carried").unlink(missing_ok=True)
            removed.append(d)
        finally:
            os.close(fd)
    for lock in cache.glob("wt-*.lock"):        # locks of entries gone
        if not lock.with_suffix("").exists():
            fd = _lock(lock.with_suffix(""))
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
            fds = [_lock(lock.with_suffix("")) for lock in cache.glob("wt-*.lock")]
            try:
                if all(fd is not None for fd in fds):     # none in use by a running command
                    removed += sorted(d for d in cache.iterdir() if _ENTRY.match(d.name) and d.is_dir())
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
