"""The hunk space: the difference between two source trees (or files) as hunks to apply.

Abstractions
------------
HunkSpace -- the hunks between GOOD and BAD (`diff_trees`), and one scratch copy of GOOD that a
             point (a set of hunk ids) is materialised into just before its build and run. The
             point's configuration is the subject's base configuration plus the applied hunk
             ids (so the ledger memoises hybrids), its revision pins every input the trees give
             (the digest of every hunk, and the whole content of GOOD, what the hunks apply to,
             and of BAD, whose binary files a hunk only names: memokey.content_digest, every file
             whatever its name, as the scratch copy holds them all), and the subject runs in the
             scratch tree (`BISECTK_TREE` names it). `add` registers the line-level sub-hunks of the second, finer pass.
             For an executor on other hosts the Workload's origin packs the scratch tree as it
             is once `prepare` has applied the point's hunks.

GOOD and BAD are only ever read; the scratch tree is removed by `close`.

named_inside -- a word of the command that names a file inside GOOD or BAD from the command's
                directory (the user's, or a spec's `cwd`; `/home/me/bad/run.py`, `bad/run.py`),
                where the scratch tree has nothing at that place: every hybrid runs in the scratch
                tree, so such a word runs GOOD's or BAD's own file, or nothing, never the hybrid's.
built_files  -- the hunks' files that are compiled output on a side (an object file, an executable,
                a library or archive, by their magic bytes), then GOOD's other files named so
                (`.o`, `.a`, `.so`, ...): with a build step, the trees hold what a build made,
                those hunks are searched as if they were sources, and each hybrid is built over
                GOOD's outputs.
named_beside -- a relative word that names a file beside the trees from the user's own directory
                (`./check.sh`, git bisect run's habit) and nothing in GOOD: from the scratch tree it
                names nothing.
named_pair   -- for two files, a word that names GOOD or BAD itself by another word than GOOD's
                name (`kernel.py` for BAD, `/home/me/repro.py`): each hybrid is GOOD's name in a
                scratch directory, so such a word runs BAD's or GOOD's own file, or nothing.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bisectk.run.memokey import content_digest
from bisectk.run.remote import pack_tree
from bisectk.run.scratch import remove_tree
from bisectk.run.workload import NO_BYTECODE, Origin, Workload, python_first
from bisectk.spaces.bytecode import drop_bytecode
from bisectk.spaces.checkout import on_path, outside_tree, path_mark
from bisectk.spaces.hunks import Hunk
from bisectk.spaces.hybrid import Scratch
from bisectk.spaces.shellwords import shell_script_index
from bisectk.spaces.treediff import diff_trees
from bisectk.spec import Config, config_key

HUNKS_KEY = "__hunks__"
# how a hunk set becomes a tree (spaces/hybrid.py Scratch), in every revision: a change there is a new
# key, as runs of hybrids made the old way may answer wrongly (made2: a directory the hunks empty goes
# unless BAD has it; a link that climbs out of its tree names what it names from there; made3: a
# build step's outputs go when another hybrid is applied, where they stayed for an incremental build)
MADE = "made3"


class HunkSpace:
    kind = "hunks"

    def __init__(self, good: Path, bad: Path, scratch_root: Path, base: Config | None = None,
                 subdir: Path = Path("."), tag: str = "diff", keep_created: bool = True):
        self.good, self.bad = Path(good), Path(bad)
        self.hunks: list[Hunk]
        self.hunks, self.unbisected = diff_trees(good, bad)     # and the directories no hunk carries
        self.by_id: dict[str, Hunk] = {h.id: h for h in self.hunks}
        self.order: dict[str, int] = {h.id: i for i, h in enumerate(self.hunks)}
        self.base = dict(base or {})
        self.subdir = Path(subdir)
        # with a build step, what it made stays for the same hybrid's runs, never for another's
        self.scratch = Scratch(good, scratch_root, keep_created=keep_created, bad=bad, fresh_builds=keep_created)
        digest = hashlib.sha256()
        for h in self.hunks:
            digest.update(h.unified().encode("utf-8", "surrogateescape"))
        # the hybrids are GOOD plus hunks: a file changed in both trees alike changes no hunk, and a
        # data file (limit.txt) is no source, yet the runs read it from the scratch copy
        digest.update(content_digest(self.good).encode())
        digest.update(content_digest(self.bad).encode())
        self.digest = digest.hexdigest()[:16]
        # the directory the command runs from in the tree: another one is another run (only where
        # it is not the root, so the runs stored before it was read stay keyed as they were)
        where = "" if self.subdir == Path(".") else "-in-" + hashlib.sha256(self.subdir.as_posix().encode()).hexdigest()[:8]
        self.revision = f"{tag}-{MADE}-{self.digest}{where}"
        self.fixed: tuple[str, ...] = ()   # hunks applied in every point (the line pass's context)
        self.lines = False                 # a view of the line pass: its points are line units
        self.python_roots: tuple[str, ...] = ()   # put first on PYTHONPATH (engine/checkout_imports.py)
        # PATH's directories in the user's checkout (spaces/checkout.py path_dirs), replaced by the scratch tree's
        self.path_dirs: tuple[tuple[int, str], ...] = ()
        self.path = ""
        self._points: dict[tuple[tuple[str, ...], frozenset], tuple[tuple[str, ...], str, str]] = {}

    @property
    def workdir(self) -> Path:
        return self.scratch.root

    def differences(self) -> list[str]:
        return [h.id for h in self.hunks]

    def add(self, hunks: list[Hunk]) -> None:
        for h in hunks:
            self.by_id[h.id] = h
            self.order.setdefault(h.id, len(self.order))

    def with_fixed(self, ids: list[str]) -> HunkSpace:
        """A view of this space for the line pass: its points are line units, applied on top of
        `ids` (the culprit hunks that do not split; same scratch tree)."""
        view = object.__new__(HunkSpace)
        view.__dict__.update(self.__dict__)
        view.fixed, view.lines = tuple(ids), True
        return view

    def ids(self, point: Any) -> list[str]:
        return list(self._point(point)[0])

    def config(self, point: Any) -> Config:
        return {**self.base, HUNKS_KEY: self._point(point)[1]}

    def key(self, point: Any) -> str:
        return self._point(point)[2]

    def _point(self, point: Any) -> tuple[tuple[str, ...], str, str]:
        """(ids in diff order, their listing, the memo key) of a point, made once: a run asks
        for them several times, and each costs O(hunks in the point)."""
        memo = self._points
        p = frozenset(point)
        if (self.fixed, p) not in memo:
            ids = tuple(sorted({*self.fixed, *p}, key=self.order.__getitem__))
            listing = "\n".join(ids)
            memo[(self.fixed, p)] = (ids, listing, config_key({**self.base, HUNKS_KEY: listing}))
        return memo[(self.fixed, p)]

    def label(self, point: Any) -> str:
        n = len(set(point))
        return f"{n} line unit(s)" if self.lines else f"{n} of {len(self.hunks)} hunk(s)"

    def workload(self, point: Any) -> Workload:
        ids = self.ids(point)

        def prepare() -> None:
            self.scratch.apply([self.by_id[i] for i in ids])
            drop_bytecode(self.workdir)
        # on another host: the scratch tree as it is after `prepare`, packed whole
        origin = Origin("", lambda: pack_tree(self.workdir), str(self.subdir), root=self.workdir)
        env = {"BISECTK_TREE": str(self.workdir), **python_first(self.workdir, self.python_roots), **NO_BYTECODE}
        revision = self.revision
        if self.path_dirs:      # its programs on PATH are the hybrid's own (a commit's, in triage)
            env["PATH"] = on_path(self.path, self.path_dirs, self.workdir)
            revision += path_mark(self.path_dirs)
        return Workload(self.config(point), self.workdir / self.subdir, env,
                        revision=revision, prepare=prepare, origin=origin, key=self.key(point),
                        built=self.scratch.mark)

    def lease(self, point: Any):
        return nullcontext(self.workload(point))

    def outside(self, path: str) -> str | None:
        """`path`, as a run in the scratch tree named it, when it is relative, climbs out of the
        tree (`../shared/ref.bin`) and names something from GOOD: its path there
        (spaces/checkout.py outside_tree); else None."""
        good = self.good.resolve()
        return outside_tree(path, self.subdir, good if good.is_dir() else good.parent)

    def close(self) -> None:
        self.scratch.close()
        remove_tree(self.scratch.root)


def _paths(commands: list[list[str]]):
    """Each word of each command, each word of a `sh -c` script in it, each `--opt=PATH`'s value.
    Any other word is one word whatever it holds: a quoted pattern (`grep -q "b = 2"`) is no
    script, and splitting it found a tree's name (`b`) in it."""
    for argv in commands:
        script = shell_script_index(argv)
        try:
            tokens = [*argv, *(shlex.split(argv[script]) if script is not None else ())]
        except ValueError:                  # an unbalanced quote: the script as one word
            tokens = list(argv)
        for token in tokens:
            path = token.split("=", 1)[1] if token.startswith("-") and "=" in token else token
            if path and not path.startswith("-"):
                yield token, path


def _in_scratch(path: str, good: Path, sub: Path) -> bool:
    """Whether the relative `path` names something from the command's directory in the scratch
    tree: a place GOOD has under `sub` (two trees), or GOOD's own name, the one file the scratch
    directory holds (two files)."""
    if good.is_dir():
        return os.path.lexists(good / sub / path)
    return os.path.normpath(path) == good.name


def named_pair(commands: list[list[str]], good: Path, bad: Path, cwd: Path,
               sub: Path = Path(".")) -> tuple[str, str] | None:
    """(word, 'GOOD' or 'BAD') for the first word of a command that names GOOD or BAD, two files,
    as seen from `cwd`, where from the scratch directory it names something else or nothing: an
    absolute path, or another name than GOOD's. None when the trees are directories, or no word does."""
    files = [(name, os.path.realpath(t)) for name, t in (("GOOD", good), ("BAD", bad))]
    if any(os.path.isdir(t) for _, t in files):
        return None
    for token, path in _paths(commands):
        if not os.path.isabs(path) and _in_scratch(path, good, sub):
            continue
        full = os.path.realpath(cwd / path)
        for name, file in files:
            if full == file:
                return token, name
    return None


def named_beside(commands: list[list[str]], good: Path, bad: Path, cwd: Path,
                 sub: Path = Path(".")) -> tuple[str, str] | None:
    """(word, its absolute path) for the first relative word of a command that names an existing
    file or directory from `cwd`, outside GOOD and BAD, where GOOD has nothing: the scratch tree,
    each hybrid's working directory, has nothing there either (for two files: the word is not
    GOOD's name, the one file the scratch directory holds)."""
    trees = [Path(os.path.realpath(t)) for t in (good, bad)]
    for token, path in _paths(commands):
        if os.path.isabs(path) or _in_scratch(path, good, sub) or not os.path.lexists(cwd / path):
            continue
        full = Path(os.path.realpath(cwd / path))
        if not any(full.is_relative_to(t) or t.is_relative_to(full) for t in trees):
            return token, str(full)
    return None


def named_inside(commands: list[list[str]], good: Path, bad: Path, cwd: Path,
                 sub: Path = Path(".")) -> tuple[str, str, str] | None:
    """(word, 'GOOD' or 'BAD', the path relative to that tree) for the first word of a command (or
    of a `bash -c` script, or an `--opt=PATH`'s value) that names an existing file or directory
    inside GOOD or BAD as seen from `cwd`, where the same word from the scratch tree names something
    else or nothing: an absolute path, or a relative one GOOD does not have at that place. None
    when the trees are files, or no word does."""
    trees = [(name, Path(os.path.realpath(t))) for name, t in (("GOOD", good), ("BAD", bad))]
    if not all(t.is_dir() for _, t in trees):
        return None
    for token, path in _paths(commands):
        if not os.path.isabs(path) and _in_scratch(path, good, sub):
            continue
        full = Path(os.path.realpath(cwd / path))
        if not os.path.lexists(full):
            continue
        for name, tree in trees:
            if full.is_relative_to(tree):
                return token, name, Path(os.path.relpath(full, tree / sub)).as_posix()
    return None


# ELF (objects, executables, .so), ar archives (.a), Mach-O (32/64, both byte orders, universal),
# a CUDA fatbinary
_BUILT_MAGIC = (b"\x7fELF", b"!<arch>\n", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
                b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"\x50\xed\x55\xba")


_BUILT_SUFFIXES = {".o", ".obj", ".a", ".so", ".dylib", ".lib", ".cubin", ".fatbin"}


def built_files(hunks: list[Hunk], good_files=()) -> list[str]:
    """The files of `hunks` (in order, once) whose GOOD or BAD side is compiled output, then those
    of `good_files` (GOOD's, relative) named as compiled output."""
    found: dict[str, None] = {}
    for h in hunks:
        for e in (h.good_entry, h.bad_entry):
            if e is not None and not e.link and e.data.startswith(_BUILT_MAGIC):
                found[h.file] = None
    for rel in good_files:
        if os.path.splitext(rel)[1] in _BUILT_SUFFIXES:
            found[rel] = None
    return list(found)
