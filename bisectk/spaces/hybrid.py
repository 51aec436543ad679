"""Hybrids: scratch copies of GOOD with a subset of the hunks applied.

Abstractions
------------
Scratch      -- a working copy of GOOD; `apply(hunks)` resets it and applies a subset, rewriting
                only the files whose content must change; given BAD, a directory a deletion empties
                goes unless BAD has it too (`old/` renamed `new/`). `materialise` is the one-call form.

Errors (overlapping hunks, a non-empty directory that is not a scratch copy) raise SpaceError with
one line naming the path. GOOD and BAD are only ever read.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from bisectk.run.scratch import remove_tree
from bisectk.spaces.commits import SpaceError  # one error type for every space
from bisectk.spaces.dirwatch import DirWatch
from bisectk.spaces.hunks import WHOLE, Entry, Hunk, _by_file, apply_lines, encode_text, join_lines
from bisectk.spaces.treediff import _read, _scan, _skipped


def _result(good: Entry | None, hunks: list[Hunk]) -> Entry | None:
    """The entry of one file with `hunks` (all of that file) applied to GOOD's entry."""
    whole = [h for h in hunks if h.kind in WHOLE]
    if whole:
        if len(hunks) > 1:
            raise SpaceError(f"hunks overlap in {hunks[0].file}: {', '.join(h.id for h in hunks)}")
        return whole[0].bad_entry
    if good is None:
        raise SpaceError(f"{hunks[0].file}: not in GOOD (hunks from another diff?)")
    mode, texts = good.mode, []
    for h in hunks:
        if h.kind == "mode":
            mode = h.modes[1]
        elif h.kind == "text":
            texts.append(h)         # a rename moves the result (Scratch.apply), not its bytes
    data = encode_text(join_lines(apply_lines(texts[0].base, texts))) if texts else good.data
    return Entry(data, mode, good.link)


def _stat(path: Path) -> tuple[int, int, int] | None:
    """A file's (size, mtime, mode); None where there is no file (nothing, or a directory: a
    retyped path's directory side holds no file of its own name)."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):     # gone, or a file now where a directory was
        return None
    return None if stat.S_ISDIR(st.st_mode) else (st.st_size, st.st_mtime_ns, st.st_mode)


def _mtime(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return None


class Scratch:
    """A reusable copy of GOOD at `root` (a fresh temporary directory when none is given).

    `apply(hunks)` makes the copy equal GOOD with exactly `hunks` applied and returns `target`
    (the copied tree, or the copied file for a file pair). It rewrites only files that the
    previous and the new subset touch, plus any copied file whose size, mtime or mode changed
    since it was written (the subject edited it). What the subject created is removed before the
    next configuration is applied, so each run starts from GOOD and its hunks as a fresh copy
    would (a test that runs `mkdir out` passes every time). With `keep_created` (a build step, for
    an incremental build) what the build made stays: `mark()`, called once the build has run,
    takes what the tree then holds beyond GOOD and the hunks as the build's, and only what appears
    after it (the run's) is removed; before the first mark nothing is. Only the directories whose
    mtime moved since the last apply (or mark) are read (`_sweep`, `mark`). Either way, a directory whose
    mode a run changed (`chmod 555 src`, `chmod 000 kernel`) gets back the mode it was left with
    before anything is written: a fresh copy has GOOD's, and as any user but root nothing could be
    removed or written there. `.git` is not copied. With `fresh_builds` too, what the builds made
    stays only while the same hunks are applied again (their build is not run again): an apply of
    another set removes it first, so each hybrid's build starts from GOOD and its hunks alone, as
    in a fresh copy (make with a Makefile without header dependencies rebuilt nothing for a
    changed header, and BAD ran GOOD's objects); what a build that failed left (it was never
    marked) goes at the next apply, before the first mark too.
    """

    MARKER = ".bisectk/scratch"

    def __init__(self, good: str | Path, root: str | Path | None = None, keep_created: bool = True,
                 bad: str | Path | None = None, fresh_builds: bool = False):
        self.keep_created = keep_created
        self.fresh_builds = fresh_builds
        self._made_dirs: set[str] = set()   # the directories a build made (`mark`)
        self._set: frozenset[str] | None = None     # the ids of the hunks the last apply applied
        self.bad = Path(bad).resolve() if bad is not None else None     # its directories outlive a deletion
        # rel -> (mtime, mode) as the last apply left it ('' the root), parents before children
        self._dirs: dict[str, tuple[int, int]] = {}
        self._kept: set[str] = set()        # what a build made (`mark`): never swept
        self._marked = False                # keep_created: a build has run since the copy was made
        self.good = Path(good).resolve()
        if not self.good.exists():
            raise SpaceError(f"GOOD {good}: no such file or directory")
        self.is_file = not self.good.is_dir()
        self.name = Path(good).name             # a file pair's hunks name GOOD as given
        self.root = Path(root or tempfile.mkdtemp(prefix="bisectk-scratch-")).resolve()
        if self.root.is_relative_to(self.good) or self.good.is_relative_to(self.root):
            raise SpaceError(f"scratch directory {self.root} and GOOD {self.good} overlap")
        self._stats: dict[str, tuple[int, int, int]] = {}   # rel -> stat as we left it
        self._dirty: dict[str, Entry | None] = {}          # rel -> what we wrote, where != GOOD
        self._goods: dict[str, Entry | None] = {}
        self._applied: dict[str, frozenset[str]] = {}    # rel -> ids of the hunks it holds now
        self._watch = DirWatch() if not self.is_file else None   # what a run wrote, by name (dirwatch.py)
        self._reset()

    @property
    def target(self) -> Path:
        return self.root / self.name if self.is_file else self.root

    def copied(self) -> list[str]:
        """The files the copy holds now as placed (GOOD's and the hunks'), relative."""
        return list(self._stats)

    def _reset(self) -> None:
        marker = self.root / self.MARKER
        if self.root.exists() and any(self.root.iterdir()) and not marker.exists():
            raise SpaceError(f"{self.root} is not empty and is not a bisectk scratch directory")
        self.root.mkdir(parents=True, exist_ok=True)
        for child in self.root.iterdir():
            if child.name == ".bisectk":
                continue
            if child.is_dir() and not child.is_symlink():
                remove_tree(child)
            else:
                child.unlink()
        if self.is_file:
            shutil.copy2(self.good, self.target, follow_symlinks=False)
        else:
            shutil.copytree(self.good, self.root, symlinks=True, dirs_exist_ok=True, ignore=_skipped)
        marker.parent.mkdir(exist_ok=True)
        marker.write_text(f"{self.good}\n")
        self._dirs = {}     # the one walk finds the directories too (top-down: parents first)
        found = _scan(self.root, self._dirs)
        # a link that climbs out of GOOD names, from here, what it does from GOOD; one that names a
        # place inside GOOD by its absolute path names that place in this copy (treediff._into_tree)
        for rel, p in found.items():
            if p.is_symlink() and (entry := self._good_entry(rel)) is not None and entry.link \
                    and (entry.outside or os.readlink(p) != os.fsdecode(entry.data)):
                p.unlink()
                os.symlink(entry.outside or os.fsdecode(entry.data), p)
        self._stats = {rel: _stat(p) for rel, p in found.items()}
        self._dirty.clear()
        self._applied.clear()
        self._kept.clear()
        self._made_dirs.clear()
        self._set = None
        self._marked = False
        self._stamp()
        self._arm()

    def _arm(self) -> None:
        """Watch the known directories from here: the next apply stats only the files a run wrote."""
        if self._watch is not None:
            self._watch.arm([self.root / rel for rel in self._dirs], tags=list(self._dirs))

    def _written(self) -> Iterable[str]:
        """The copied files a run may have edited since the last apply: those the watch saw
        written, or, where it cannot say, every one (a stat each: 0.13 s a run at 20,000 files)."""
        seen = self._watch.written() if self._watch is not None else None
        if seen is None:
            return list(self._stats)
        return [rel for tag, name in seen if (rel := f"{tag}/{name}" if tag else name) in self._stats]

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    def _good_entry(self, rel: str) -> Entry | None:
        if rel not in self._goods:
            path = self.good if self.is_file else self.good / rel
            there = path.is_symlink() or (path.exists() and not path.is_dir())   # a directory: no file of GOOD's
            self._goods[rel] = _read(path, None if self.is_file else self.good) if there else None
        return self._goods[rel]

    def _stamp(self) -> None:
        """Each known directory's mtime and mode as this apply leaves it (one gone, or a retyped
        path's file now, is forgotten)."""
        for rel in list(self._dirs):
            try:
                st = os.lstat(self.root / rel)
            except OSError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                self._dirs[rel] = (st.st_mtime_ns, st.st_mode)
            else:
                del self._dirs[rel]

    def _sweep(self) -> None:
        """Put back each known directory as the last apply left it (parents first, so the children
        can be reached): one a run removed, or replaced by a file or a link (which is never
        written through: it may name anything), is made again, empty, and one whose mode a run
        changed gets it back; and remove what a run created since the last apply (with
        `keep_created`, only once a build has been marked, and never what the build made): in each
        directory whose mtime moved, the entries that are neither a file placed here, a known
        directory, nor a build's output. The files of GOOD under a directory made again are put back by
        their stat."""
        for rel, (mtime, mode) in list(self._dirs.items()):
            d = self.root / rel
            try:
                st = os.lstat(d)
            except FileNotFoundError:
                st = None
            except OSError:
                continue
            try:
                if st is None or not stat.S_ISDIR(st.st_mode):
                    if st is not None:
                        os.unlink(d)
                    os.mkdir(d)
                    os.chmod(d, stat.S_IMODE(mode))
                    continue
                if st.st_mode != mode:
                    os.chmod(d, stat.S_IMODE(mode))
                # before the first mark nothing is swept, unless each hybrid builds afresh: what a
                # build that failed left (no mark) would reach the next hybrid's build
                if (self.keep_created and not self._marked and not self.fresh_builds) or st.st_mtime_ns == mtime:
                    continue
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                sub = f"{rel}/{e.name}" if rel else e.name
                if (sub in self._stats or sub in self._dirs or sub in self._kept
                        or (not rel and e.name == ".bisectk")):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        remove_tree(e.path)
                    else:
                        os.unlink(e.path)
                except OSError:
                    pass        # what cannot be removed stays; the run after it will say so

    def mark(self) -> None:
        """The build step has run: what the tree holds now beyond GOOD and the hunks is its output,
        kept from here on; what appears after this is swept at the next apply. The first mark
        reads every directory (what a build made before it is the build's too), later ones only
        those whose mtime moved."""
        if not self.keep_created or self.is_file:
            return
        moved = [rel for rel, (mtime, _) in self._dirs.items()
                 if not self._marked or _mtime(self.root / rel) != mtime]
        self._marked = True
        while moved:
            rel = moved.pop()
            try:
                entries = list(os.scandir(self.root / rel))
            except OSError:
                continue
            for e in entries:
                sub = f"{rel}/{e.name}" if rel else e.name
                if sub in self._stats or (not rel and e.name == ".bisectk"):
                    continue
                if e.is_dir(follow_symlinks=False):
                    if sub not in self._dirs:
                        self._dirs[sub] = (0, 0)        # after its parent: parents first
                        self._made_dirs.add(sub)
                        moved.append(sub)
                else:
                    self._kept.add(sub)
        self._stamp()

    def _drop_builds(self) -> None:
        """Remove what the builds made (`mark`): their files, then their directories that are
        empty then, the deepest first (one that holds a hunk's file stays, as does what cannot be
        removed: the build after it will say so). The next build starts from GOOD and the hunks."""
        for rel in self._kept:
            try:
                os.unlink(self.root / rel)
            except OSError:
                pass
        for rel in sorted(self._made_dirs, key=lambda r: r.count("/"), reverse=True):
            try:
                os.rmdir(self.root / rel)
            except OSError:
                pass
        self._kept.clear()
        self._made_dirs.clear()     # the apply's stamp forgets the directories now gone

    def apply(self, hunks: Iterable[Hunk]) -> Path:
        hunks = list(hunks)
        written = self._written()
        self._sweep()
        ids = frozenset(h.id for h in hunks)
        if self.fresh_builds and self._set is not None and ids != self._set:
            self._drop_builds()
        self._set = ids
        groups = _by_file(hunks)
        applied: dict[str, frozenset[str]] = {}     # rel -> the ids of the hunks it holds in this subset
        retyped: dict[str, Entry | None] = {}       # rel under a retype hunk -> BAD's entry there
        moved: dict[str, str] = {}                  # a renamed file: GOOD's path <-> BAD's, both ways
        for rel, hs in groups.items():
            if hs[0].kind == "retype":
                for sub, _, bad in hs[0].tree:
                    applied[sub], retyped[sub] = frozenset({hs[0].id}), bad
            else:
                applied[rel] = frozenset(h.id for h in hs)
                to = next((h.to for h in hs if h.kind == "rename"), None)
                if to:      # GOOD's path goes, BAD's holds GOOD's file with the file's other hunks
                    applied[to], moved[rel], moved[to] = applied[rel], to, rel
        want = {}
        for rel, ids in applied.items():
            # a file that holds exactly these hunks and is as we left it costs no rewrite (and no
            # re-rendering: a run's cost follows what changed since the last run, not the subset)
            if self._applied.get(rel) != ids or _stat(self.root / rel) != self._stats.get(rel):
                if rel in retyped:
                    want[rel] = retyped[rel]
                elif rel in moved and rel in groups:
                    want[rel] = None
                elif rel in moved:
                    want[rel] = _result(self._good_entry(moved[rel]), groups[moved[rel]])
                else:
                    want[rel] = _result(self._good_entry(rel), groups[rel])
        for rel in self._dirty:                     # touched last time, not now: back to GOOD
            if rel not in applied:
                want.setdefault(rel, self._good_entry(rel))
        for rel in written:                         # edited by the subject: back to GOOD
            if rel not in applied and rel not in want and _stat(self.root / rel) != self._stats.get(rel):
                want[rel] = self._good_entry(rel)
        # removals first, the deepest first, then writes, the shallowest first: a retyped path's
        # file and the directory of the same name are never there at once
        removals = sorted((r for r in want if want[r] is None), key=lambda r: r.count("/"), reverse=True)
        writes = sorted((r for r in want if want[r] is not None), key=lambda r: r.count("/"))
        for rel in removals + writes:
            self._place(rel, want[rel])
            self._applied[rel] = applied.get(rel, frozenset())
        for rel in writes:              # a hunk's new file may bring new directories: known from now
            new, parent = [], Path(rel).parent
            while parent != Path(".") and parent.as_posix() not in self._dirs:
                new.append(parent.as_posix())
                parent = parent.parent
            self._dirs.update((d, (0, 0)) for d in reversed(new))      # parents first
        self._stamp()
        self._arm()
        return self.target

    def _place(self, rel: str, entry: Entry | None) -> None:
        path = self.root / rel
        now = self._dirty[rel] if rel in self._dirty else self._good_entry(rel)
        if now == entry and _stat(path) == self._stats.get(rel):
            return                                  # already there, untouched since we wrote it
        if path.is_dir() and not path.is_symlink():
            if entry is not None:               # a retyped path's file: the directory, and what a run left in it, goes
                remove_tree(path)
        elif path.is_symlink() or path.exists():
            path.unlink()                           # never write through a link copied from GOOD
        if entry is None:
            self._stats.pop(rel, None)
            self._prune(path.parent)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            if entry.link:
                os.symlink(entry.outside or os.fsdecode(entry.data), path)
            else:
                path.write_bytes(entry.data)
                os.chmod(path, entry.mode)
            self._stats[rel] = _stat(path)
        if path.suffix == ".py":
            # Bytecode is keyed on (mtime in whole seconds, size): an edit within the same second
            # that keeps the size would otherwise run the stale .pyc.
            for pyc in glob.glob(str(path.parent / "__pycache__" / f"{glob.escape(path.stem)}.*.pyc")):
                os.unlink(pyc)
        if entry == self._good_entry(rel):
            self._dirty.pop(rel, None)
        else:
            self._dirty[rel] = entry

    def _prune(self, d: Path) -> None:
        """Remove directories left empty by a deletion, unless GOOD has them and BAD (when known)
        does too: `old/` renamed `new/` goes with its last file, as it is gone from BAD."""
        def kept(rel: Path) -> bool:
            return all((tree / rel).is_dir() and not (tree / rel).is_symlink()
                       for tree in (self.good, self.bad) if tree is not None)
        while d != self.root and not any(d.iterdir()) and not kept(d.relative_to(self.root)):
            d.rmdir()
            d = d.parent


_SCRATCHES: dict[tuple[Path, Path], Scratch] = {}


def materialise(good_root: str | Path, hunks: Iterable[Hunk], dest: str | Path | None = None) -> Path:
    """GOOD with exactly `hunks` applied, in `dest` (or a fresh temporary directory, which the
    caller removes).

    Returns the tree, or for a file pair the file inside `dest`. Repeated calls with the same
    GOOD and dest reuse one Scratch in this process, so only changed files are rewritten; a
    first call on a non-empty dest requires it to be a scratch directory made by bisectk.
    """
    if dest is None:
        return Scratch(good_root).apply(hunks)
    key = (Path(good_root).resolve(), Path(dest).resolve())
    if key not in _SCRATCHES:
        _SCRATCHES[key] = Scratch(good_root, dest)
    return _SCRATCHES[key].apply(hunks)
