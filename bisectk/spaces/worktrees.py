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
damage, collect -- what a run broke of a worktree's link to its git directory (asked before a
                lease runs git in it, and after each run: run/runner.py), and `bisectk ledger gc`'s
                removal of the cached worktrees: in spaces/wtdisk.py and spaces/wtcollect.py, with
                the entry's other state on disk (wtdisk) and the checkout's shape (wtshape).

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

import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.procstat import give, owner_to_give
from bisectk.spaces import submodules
from bisectk.spaces.cachedir import (LEGACY, cache_dir_of, cache_roots, claim, git_common_dir, owner,
                                     remove_if_unused, slot, writable)
from bisectk.spaces.dirwatch import DirWatch
from bisectk.spaces.commits import SpaceError, git_ok, open_repo, run_git
from bisectk.spaces.wtcollect import discard
from bisectk.spaces.wtdisk import (ENTRY, admin_of, coarse_mtimes, damage, drop_locks, end_under_way, head_of,
                                   index_of, lock_entry, moved_since, new_place, survey, under_way)
from bisectk.spaces.wtshape import attributes_differ, checkout_shape, has_attributes, record_shape, shape_of, trust

# A worktree's first checkout writes the whole tree (10,002 files: 7.3-10.7 s on the 2-core VM in
# one sitting, 3.1-4.1 s with parallel checkout). 0 = one worker per core; git's own threshold
# (100 files) keeps a small switch serial; a git before 2.32 ignores the key.
PARALLEL_CHECKOUT = ("-c", "checkout.workers=0")
SCOPED_MAX = 64          # more changed directories than this: one `clean` of the whole worktree
_ASK = object()         # _switch: find the moved directories itself


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
            self._removed([*self._held, *self._free])       # before any is switched, or another locked
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
                drop_locks(entry.path)
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

    def carry(self, entry: _Entry, carried, dirs=()) -> str | None:
        """Copy the user's files (spaces/yours.py Carried) into a leased worktree (and make `dirs`,
        the user's own directory the command runs in, where the commit lacks it), noting them
        first beside its lock: `release` removes them, and so does the next lease of the worktree
        after a command was killed (`git clean` would leave an ignored one, and a stale copy would
        run for a script the user has since deleted). None, or why one could not be placed."""
        from bisectk.spaces.yours import place
        entry.note.write_text(json.dumps({"files": [c.rel for c in carried], "dirs": list(dirs)}))
        # replacing none of the commit's files, the copies' removal leaves the tree as it was
        alone = not any(os.path.lexists(entry.path / c.rel) for c in carried)
        written, made, why = place(entry.path, carried, dirs)
        entry.note.write_text(json.dumps({"files": written, "dirs": made, "alone": alone}))
        if entry.watch is not None:
            entry.watch.quiet()     # the copies' own writes, forgotten: what the watch sees from now is the run's
        return why

    def release(self, entry: _Entry, sha: str | None) -> None:
        _drop_carried(entry)
        self._off_branch(entry)
        if self._owner is not None:     # root in another user's repository: git's admin files are theirs
            give([self._common / "worktrees", admin_of(entry.path) or entry.path], self._owner)
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
        admin = admin_of(entry.path)
        try:
            head = (admin / "HEAD").read_text().strip() if admin is not None else ""
        except OSError:
            return
        if not head.startswith("ref: refs/") or self.damage(entry.path) is not None:
            return
        try:
            at = run_git(self.repo, "rev-parse", "--verify", "--quiet", f"{head[5:]}^{{commit}}")
        except SpaceError:
            return      # unborn: head_of reads no commit there, and the next lease makes it again
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
        for d in sorted(self._listing(), key=lambda p: p.name):
            if ENTRY.match(d.name) and d.is_dir() and d not in mine:
                found.append((d, head_of(d)))
        found.sort(key=lambda item: item[1] != sha)
        for path, head in found:
            fd = self._lock(path)
            if fd is None:
                continue
            if head is None or damage(path, self._common) is not None or shape_of(path) != self.shape:
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
            path, fd = new_place(self.cache_dir, self._listing())
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

    def _listing(self) -> list[Path]:
        """The cache directory's entries. Until this pool holds a worktree nothing of it is in the
        directory, and `ledger gc` (another terminal's, a CI job's beside this one) removes a cache
        that holds only its owner record: it is claimed again, as the pool's opening claimed it."""
        try:
            return list(self.cache_dir.iterdir())
        except FileNotFoundError:
            if not claim(self.cache_dir, self._common):
                raise SpaceError(f"{self.cache_dir} keeps the worktrees of {owner(self.cache_dir)}, "
                                 f"not of {self._common}") from None
            return list(self.cache_dir.iterdir())

    def _made(self, entry: _Entry) -> None:
        """A worktree `git worktree add` has just written: its shape, submodules and survey."""
        record_shape(entry.path, self.shape)
        self._submodules(entry)
        entry.stamps = survey(entry.path, coarse=self.coarse, skip=entry.subs)
        entry.index = index_of(entry.path)
        _arm(entry)

    def damage(self, path: Path) -> str | None:
        """What a run broke of this pool's worktree at `path` (module function `damage`), or None."""
        return damage(path, self._common)

    def damage_of(self, entry: _Entry) -> str | None:
        """`damage` of a leased worktree, asked after its run; SpaceError when the cache was
        removed meanwhile (`_removed`), or the git directory's worktrees/ with every worktree's
        admin directory in it: not by the run (a run breaks its own link), which is given no verdict."""
        self._removed([entry])
        records = self._common / "worktrees"
        if not records.is_dir():    # every worktree's admin directory at once: the git dir's cleanup
            raise SpaceError(f"{records} was removed while this command ran (a cleanup of the git directory beside "
                             f"the command, not by the run, which is given no verdict); run the command again "
                             f"(the runs made so far are in the ledger)")
        return self.damage(entry.path)

    def _removed(self, entries) -> None:
        """SpaceError when the lock file this pool holds one of `entries` by is gone or replaced:
        the cache directory was removed by another hand (an `rm -rf ~/.cache`) while the command
        ran. Its worktrees are no longer this command's alone (another command's lock would be a
        new file), so the command stops rather than make them again."""
        for entry in entries:
            try:
                held = os.fstat(entry.lock)
                there = os.stat(f"{entry.path}.lock")
                if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
                    continue
            except OSError:
                pass
            raise SpaceError(f"the worktree cache {self.cache_dir} was removed while this command ran (its worktree "
                             f"{entry.path.name}'s lock went with it); run the command again (the runs made so far "
                             f"are in the ledger)")

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
        return lock_entry(path)

    def _switch(self, entry: _Entry, sha: str, checkout: bool = True, moved=_ASK) -> None:
        """`checkout` False: HEAD and the tracked files are as the checkout left them (`_tidy`
        found them so). `moved`: the directories changed since the last survey, when the caller
        has already asked (`moved_since`)."""
        if entry.fresh:         # another process's leftovers: a killed git's lock, a killed build
            admin = admin_of(entry.path)
            if admin is not None:
                (admin / "index.lock").unlink(missing_ok=True)
            # the submodules the last command checked out here: one the new commit no longer
            # records goes (_submodules), not its `.git` file left among vendored files
            entry.subs = frozenset(os.fspath(p) for p in submodules.present(entry.path))
        # -q: a checkout that leaves a detached HEAD otherwise walks the history to warn about
        # commits left behind (a second per switch on 300,000 commits)
        # Untracked files can only have appeared where a directory's mtime moved since the last
        # switch left the worktree clean: creating or deleting an entry updates its directory.
        # None: not known (another process's worktree, -x asked, a directory gone): all of it.
        end_under_way(entry.path)
        if moved is _ASK:
            moved = None if entry.fresh or self.clean_ignored or entry.stamps is None else moved_since(entry.stamps)
        stamps_before, entry.stamps = entry.stamps, None    # unknown until the switch is done
        if checkout:        # False: `_tidy` found the tracked files and HEAD as the checkout left them
            before = head_of(entry.path)
            # a file whose blob a switch keeps lies in a directory there before it (the last survey
            # knows them all); the .gitattributes that apply to it lie there or above: none in any
            # of them, before the switch or after, and no tree diff is asked (a process a switch)
            dirs = list(stamps_before) if stamps_before else None
            had = dirs is None or has_attributes(dirs)
            run_git(entry.path, *PARALLEL_CHECKOUT, "checkout", "-q", "--force", "--detach", sha)
            if (before is not None and before != sha and (had or has_attributes(dirs))
                    and attributes_differ(entry.path, before, sha)):
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
        entry.index = index_of(entry.path)
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
        if (head_of(entry.path) != sha or entry.index is None or index_of(entry.path) != entry.index
                or under_way(entry.path)):
            self._switch(entry, sha)
            return
        if not self.clean_ignored and entry.watch is not None and entry.watch.quiet():
            return          # nothing written in it since: no stat of every file
        moved = None if self.clean_ignored or entry.stamps is None else moved_since(entry.stamps)
        edited = not git_ok(entry.path, "diff-files", "--quiet")
        if moved != [] or edited:
            self._switch(entry, sha, checkout=edited, moved=moved)

    def holds_ignored(self, beyond_caches: bool = False) -> bool:
        """Whether a worktree of this pool holds ignored files now (a `build/` kept between
        commits for incremental builds): what one commit's build left that another's run saw.
        `beyond_caches`: other than Python's own caches (__pycache__, .pytest_cache, ...), which
        Python checks against their sources, as a build with incomplete dependencies does not."""
        with self._cond:
            paths = [e.path for e in (*self._free, *self._held)]
        for path in paths:
            try:
                listed = run_git(path, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z")
            except SpaceError:
                continue        # a worktree gone or broken: it holds nothing a run will see
            if any(name and not (beyond_caches and _python_cache(name)) for name in listed.split("\0")):
                return True
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
            admin = admin_of(entry.path)
            if admin is None:
                raise SpaceError(f"worktree {entry.path} has no git directory")
            made = frozenset(os.fspath(p) for p in submodules.sync(entry.path, admin, self._modules,
                                                                   self.clean_ignored, Path(self.repo)))
        for gone in entry.subs - made:      # its clone stays in the admin directory, for later
            if os.path.isfile(os.path.join(gone, ".git")):
                shutil.rmtree(gone, ignore_errors=True)
                # a directory the commit tracks again (a submodule vendored back): the checkout
                # wrote its files into the submodule's, removed with it above: written again
                where = ":(literal)" + os.path.relpath(gone, entry.path)
                if run_git(entry.path, "ls-files", "--", where):
                    run_git(entry.path, "checkout", "-q", "--force", "--", where)
        entry.subs = made

    def _discard(self, path: Path) -> None:
        discard(self.repo, path)

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
        # a lock file goes while it is held, never after (lock_entry: a lock had on an unlinked file is no lock)
        for path, fd in emptied:        # removed and not made again: nothing is left of them but the lock
            if not self.keep:
                Path(f"{path}.lock").unlink(missing_ok=True)
            os.close(fd)
        for entry in held:
            if entry.watch is not None:
                entry.watch.close()
            if not self.keep:
                self._discard(entry.path)
                Path(f"{entry.path}.lock").unlink(missing_ok=True)
            os.close(entry.lock)
        if not self.keep:
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


_PY_CACHES = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis")


def _python_cache(name: str) -> bool:
    """An ignored path git lists that is Python's (or its tools') own cache, checked against its
    sources on every use: a run left it, and no other commit's run is misled by it."""
    parts = name.rstrip("/").split("/")
    return parts[-1].endswith((".pyc", ".pyo")) or any(p in _PY_CACHES for p in parts)
