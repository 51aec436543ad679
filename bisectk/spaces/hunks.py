"""Source differences as hunks, and scratch copies of GOOD with a subset of them applied.

Abstractions
------------
Hunk         -- one unit of difference between GOOD and BAD in one file. `kind` is "text" (a run
                of lines replaced, deleted or inserted: one difflib opcode), "add" / "delete"
                (a file present on one side only), "replace" (a binary file or symlink that
                differs: replaced whole; text means UTF-8 without NUL bytes), "mode" (the
                permission bits changed) or "retype" (a path that is a file on one side and a
                directory on the other: the file and every file under the directory, replaced
                together, as no subset of them can be written). Line ranges are 1-based and
                half-open: `good_lines = (s, e)` covers GOOD's lines s..e-1, and s == e is an
                insertion before GOOD's line s. An added or deleted text file spans (1, n+1) on
                its side; an absent side, a binary side and a mode change have (0, 0). Its `id`
                and `where` name the place closed, as people write it: 'a.py:7', 'a.py:3-5',
                'a.py:before 4'.
diff_paths   -- GOOD and BAD, two files or two trees -> hunks (ignoring .git, __pycache__,
                .bisectk, and special files: a FIFO, a socket or a device node in a tree has no
                content to diff or copy, and reading a FIFO would wait forever), sorted by file
                and position. `diff_trees` gives them with `unbisected` from the same walk.
unbisected   -- what of two trees no hunk carries: an empty directory on one side, a directory's mode.
split_lines  -- the finer pass: a text hunk -> one sub-hunk per deleted, inserted or replaced
                line, so a search can refine inside a culprit hunk.
Scratch      -- a working copy of GOOD; `apply(hunks)` resets it and applies a subset, rewriting
                only the files whose content must change; given BAD, a directory a deletion empties
                goes unless BAD has it too (`old/` renamed `new/`). `materialise` is the one-call form.
unified_diff -- a set of hunks as one git-style unified diff that `patch -p1` applies to GOOD.

Errors (a missing path, a file given against a directory, identical inputs, overlapping hunks, a
non-empty directory that is not a scratch copy) raise SpaceError with one line naming the path.

Why any subset applies: difflib's opcodes are separated by at least one equal line, so hunks of
one file never overlap or touch, and every hunk is addressed in GOOD's coordinates only; a subset
is applied in one forward pass over GOOD's lines. Applying all hunks gives BAD byte for byte,
none gives GOOD, but for a relative symlink that climbs out of its tree: the copy names what it
names from its own tree, by its absolute path (Entry.outside). GOOD and BAD are only ever read.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import glob
import itertools
import os
import shutil
import stat
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bisectk.run.scratch import remove_tree
from bisectk.spaces.dirwatch import DirWatch
from bisectk.spaces.bytecode import drop_bytecode  # noqa: F401  (re-exported)
from bisectk.spaces.commits import SpaceError  # one error type for every space

IGNORED = frozenset({".git", "__pycache__", ".bisectk"})
WHOLE = frozenset({"add", "delete", "replace", "retype"})
_ALIGN_LIMIT = 4000     # old x new line pairs scored when aligning a hunk of unequal sides
_ALIGN_CHARS = 2_000_000  # characters those pairs may read in all (~0.7 s)
_MATCH_BUDGET = 25_000_000  # steps difflib may take on one file (~2.5 s) before anchors and its junk heuristic
_LINE_STEPS = 3            # what a line of a searched range costs, in line pairs looked at (_Budgeted)
_SIMILAR = 0.5          # a deleted and an inserted line pair up in split_lines at this ratio


@dataclass(frozen=True)
class Entry:
    """One side of a file: its bytes (a symlink's target when `link`) and permission bits.
    `outside`: for a relative link whose target climbs out of its tree (`logs -> ../logs`), the
    absolute path it names from there, which the scratch copy writes instead (from a copy
    elsewhere the same `..` names something else: bisectk's cache); not part of equality."""

    data: bytes
    mode: int
    link: bool = False
    outside: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Hunk:
    """One unit of difference; hashable, so a search can use hunks as its items."""

    file: str                                  # relative posix path (GOOD's name for a file pair)
    kind: str                                  # text | add | delete | replace | mode
    good_lines: tuple[int, int] = (0, 0)
    bad_lines: tuple[int, int] = (0, 0)
    old: tuple[str, ...] = ()                  # GOOD's lines, each with its line ending
    new: tuple[str, ...] = ()                  # BAD's lines
    parent: str | None = None                  # the hunk split_lines made this one from
    sub: int = 0                               # position among the parent's sub-hunks
    modes: tuple[int, int] | None = None       # (good, bad) permission bits, for "mode"
    good_entry: Entry | None = field(default=None, repr=False)
    bad_entry: Entry | None = field(default=None, repr=False)
    # "retype": (path, GOOD's entry, BAD's entry) for the path and every file under it
    tree: tuple[tuple[str, Entry | None, Entry | None], ...] = field(default=(), repr=False)
    # GOOD's whole text, shared by the text hunks of one file (context for rendering and the
    # lines a subset is applied to); not part of equality.
    base: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @functools.cached_property
    def id(self) -> str:
        """Stable and unique within one diff, and where the hunk is in GOOD, as people write it:
        'a.py:7' (line 7 replaced or deleted), 'a.py:3-5' (lines 3 to 5), 'a.py:before 4' (an
        insertion; 'after 9' past GOOD's last line 9), 'a.py:add', and 'a.py:3-5#1' for the second
        line of a split hunk. Unique because two text hunks of one file never touch."""
        if self.parent:
            return f"{self.parent}#{self.sub}"
        return self.where

    @property
    def good_place(self) -> str:
        """GOOD's lines as a closed range: '7', '3-5', 'before 4' / 'after 9' for an insertion."""
        start, end = self.good_lines
        if end == start:
            return f"after {start - 1}" if self.base and start > len(self.base) else f"before {start}"
        return str(start) if end - start == 1 else f"{start}-{end - 1}"

    @functools.cached_property
    def where(self) -> str:
        """'file:place' in GOOD for any hunk (a split line: the line itself). The lines a split
        insertion adds all sit before one line of GOOD, so each is told apart by its line in BAD:
        'a.py:before 4 (BAD line 6)'."""
        if self.kind != "text":
            return f"{self.file}:{self.kind}"
        if self.parent and self.good_lines[0] == self.good_lines[1]:
            return f"{self.file}:{self.good_place} (BAD line {self.bad_lines[0]})"
        return f"{self.file}:{self.good_place}"

    def summary(self) -> str:
        """One line for tables: 'kernel.py:10-12 -2 +3'."""
        if self.kind in ("text", "add", "delete") and (self.old or self.new):
            return f"{self.id} -{len(self.old)} +{len(self.new)}"
        if self.kind == "mode":
            return f"{self.id} {_git_mode(self.modes[0])} -> {_git_mode(self.modes[1])}"
        return self.id

    def unified(self, context: int = 3) -> str:
        """This hunk alone as a git-style patch against GOOD (BAD's line numbers on the + side)."""
        if self.kind == "retype":       # as git shows it: the file deleted, the directory's files added
            return "".join(Hunk(rel, "add" if g is None else "delete" if b is None else "replace",
                                good_entry=g, bad_entry=b).unified(context) for rel, g, b in self.tree if g != b)
        head = f"diff --git a/{self.file} b/{self.file}\n"
        if self.kind == "mode":
            return head + f"old mode {_git_mode(self.modes[0])}\nnew mode {_git_mode(self.modes[1])}\n"
        if self.kind in WHOLE:
            return head + _render_whole(self)
        gs, ge = self.good_lines
        before = self.base[max(0, gs - 1 - context):gs - 1]
        after = self.base[ge - 1:ge - 1 + context]
        n = len(before)
        old, new = list(self.old), list(self.new)
        if before and not before[-1].endswith("\n") and new:
            # lines added after GOOD's last line, which has no newline: applied, the join gives it
            # one (apply_lines), so the patch changes it too; as context it would read `B = 2Z = 9`
            before, old, new = before[:-1], [before[-1], *old], [before[-1] + "\n", *new]
        body = [f"--- a/{self.file}\n+++ b/{self.file}\n",
                f"@@ -{_range(gs - n, n + len(self.old) + len(after))} "
                f"+{_range(self.bad_lines[0] - n, n + len(self.new) + len(after))} @@\n"]
        body += [_line(" ", s) for s in before] + [_line("-", s) for s in old]
        body += [_line("+", s) for s in new] + [_line(" ", s) for s in after]
        return head + "".join(body)

    def to_dict(self) -> dict:
        d = {"id": self.id, "file": self.file, "kind": self.kind, "where": self.where,
             "good_lines": list(self.good_lines), "bad_lines": list(self.bad_lines),
             "text": self.unified()}
        if self.parent:
            d["parent"] = self.parent
        return d


# -- computing the difference ------------------------------------------------------------------

def diff_paths(good: str | Path, bad: str | Path) -> list[Hunk]:
    """The hunks that turn GOOD into BAD: two files, or two directory trees."""
    return diff_trees(good, bad)[0]


def diff_trees(good: str | Path, bad: str | Path) -> tuple[list[Hunk], list[str]]:
    """The hunks that turn GOOD into BAD, and what of two trees no hunk carries (`unbisected`),
    from one walk of each."""
    good, bad = Path(good), Path(bad)
    for side, p in (("GOOD", good), ("BAD", bad)):
        if not (p.exists() or p.is_symlink()):
            raise SpaceError(f"{side} {p}: no such file or directory")
    if good.is_dir() != bad.is_dir():
        which = (good, bad) if good.is_dir() else (bad, good)
        raise SpaceError(f"{which[0]} is a directory but {which[1]} is not: "
                         "give two files or two directories")
    hunks, other = [], []
    if good.is_dir():
        gdirs: dict = {}
        bdirs: dict = {}
        goods, bads = _scan(good, gdirs), _scan(bad, bdirs)
        other = _unbisected(good, bad, (gdirs, goods), (bdirs, bads))     # before a retype takes files out
        for p in _retyped(goods, bads):
            under = sorted(r for r in goods.keys() | bads.keys() if r == p or r.startswith(p + "/"))
            hunks.append(Hunk(p, "retype", tree=tuple((r, _read(goods.pop(r, None), good), _read(bads.pop(r, None), bad))
                                                      for r in under)))
    else:
        # A file pair follows symlinks: the user named the files, not links to keep.
        goods, bads = {good.name: good.resolve()}, {good.name: bad.resolve()}
        for side, p in (("GOOD", good), ("BAD", bad)):
            if _special(p.resolve(), devices=False):   # /dev/null reads as an empty file
                raise SpaceError(f"{side} {p} is a FIFO or a socket, not a file: give two files or two directories")
    roots = (good, bad) if good.is_dir() else (None, None)
    for rel in sorted(goods.keys() | bads.keys()):
        hunks += _file_hunks(rel, goods.get(rel), bads.get(rel), roots)
    hunks.sort(key=lambda h: h.file)            # by file, each file's hunks in order (the sort is stable)
    if not hunks and other:
        raise SpaceError(f"{good} and {bad} differ only in directories, which no hunk carries (every hybrid has "
                         f"GOOD's): {listed(other)}")
    if not hunks:
        raise SpaceError(f"{good} and {bad} are identical (ignoring {', '.join(sorted(IGNORED))}): "
                         "nothing to bisect")
    return hunks, other


def unbisected(good: str | Path, bad: str | Path) -> list[str]:
    """What of two trees no hunk carries, as 'out/ (GOOD only, empty)' and 'd/ (mode 755 -> 700)':
    a directory one side has with no file under it there (a hunk is a file's; one with files comes
    and goes with them), and a directory whose mode differs. Every hybrid has GOOD's."""
    good, bad = Path(good), Path(bad)
    if not (good.is_dir() and bad.is_dir()):
        return []
    return _unbisected(good, bad, *[(dirs, _scan(root, dirs)) for root, dirs in ((good, {}), (bad, {}))])


def _unbisected(good: Path, bad: Path, goods: tuple[dict, dict], bads: tuple[dict, dict]) -> list[str]:
    """`unbisected` from each tree's walk: (its directories, its files)."""
    (gdirs, gfiles), (bdirs, bfiles) = goods, bads
    out, reported = [], []
    for rel in sorted((gdirs.keys() | bdirs.keys()) - {""}):
        if any(rel.startswith(r + "/") for r in reported):
            continue
        if rel in gdirs and rel in bdirs:
            modes = [stat.S_IMODE(os.lstat(root / rel).st_mode) for root in (good, bad)]
            if modes[0] != modes[1]:
                out.append(f"{rel}/ (mode {modes[0]:o} -> {modes[1]:o})")
            continue
        name, files, other = ("GOOD", gfiles, bfiles) if rel in gdirs else ("BAD", bfiles, gfiles)
        if rel not in other and not any(f.startswith(rel + "/") for f in files):
            out.append(f"{rel}/ ({name} only, empty)")
            reported.append(rel)
    return out


def listed(items: list[str], limit: int = 5) -> str:
    """The first `limit` items, and how many more."""
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _special(path: Path, devices: bool = True) -> bool:
    """A FIFO, a socket or (`devices`) a device node: no content to diff or copy (a FIFO's read
    would wait)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
            or (devices and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode))))


def _skipped(directory: str, names: list[str]) -> list[str]:
    """What a copy of GOOD leaves out of `directory` (copytree's `ignore`): IGNORED, special files."""
    return [n for n in names if n in IGNORED or _special(Path(directory) / n)]


def _scan(root: Path, dirs: dict[str, tuple[int, int]] | None = None) -> dict[str, Path]:
    """Relative posix path -> path, for every file and symlink under root, pruning IGNORED and
    special files; `dirs`: every directory walked is added to it (relative, '' the root)."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, onerror=_unreadable):
        here = Path(dirpath)
        if dirs is not None:
            rel = here.relative_to(root).as_posix()
            dirs["" if rel == "." else rel] = (0, 0)
        # A symlinked directory is one entry (its target); walking into it could leave the tree.
        links = [d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED and d not in links)
        for name in filenames + links:
            if name not in IGNORED and not _special(here / name):
                found[(here / name).relative_to(root).as_posix()] = here / name
    return found


def _retyped(goods: dict[str, Path], bads: dict[str, Path]) -> list[str]:
    """The paths that are a file (or a link) on one side and a directory on the other. They never
    nest: under such a path only the directory's side has entries."""
    def dirs(paths):
        return {p.rsplit("/", k)[0] for p in paths for k in range(1, p.count("/") + 1)}
    return sorted((goods.keys() & dirs(bads)) | (bads.keys() & dirs(goods)))


def _unreadable(err: OSError) -> None:
    """A file or directory of GOOD or BAD that cannot be read (mode 000, another user's): bad input,
    never skipped (a directory walked past would read as its files deleted)."""
    raise SpaceError(f"{err.filename}: cannot read it ({err.strerror}): GOOD and BAD are read whole")


def _read(path: Path | None, root: Path | None = None) -> Entry | None:
    """The entry at `path`; a link's `outside` is found when `root`, the tree it is in, is given."""
    if path is None:
        return None
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(path)
            return Entry(os.fsencode(target), 0o777, link=True,
                         outside=_climbs_out(path.relative_to(root).as_posix(), target, root) if root else None)
        return Entry(path.read_bytes(), stat.S_IMODE(st.st_mode))
    except OSError as e:
        _unreadable(e)


def _climbs_out(rel: str, target: str, root: Path) -> str | None:
    """What the link at `rel` under `root` names by its absolute path, when its relative `target`
    climbs out of the tree (read as written: `sub/../..` never follows a link inside); else None."""
    if os.path.isabs(target):
        return None
    inside = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if inside != ".." and not inside.startswith(".." + os.sep):
        return None
    return os.path.normpath(os.path.join(os.path.realpath(root), inside))


def _text(entry: Entry | None) -> tuple[str, ...] | None:
    """The lines of a UTF-8 text file (None for binary files and symlinks)."""
    if entry is None or entry.link or b"\0" in entry.data[:8192]:
        return None
    try:
        return tuple(split_text(entry.data.decode("utf-8")))
    except UnicodeDecodeError:
        return None


def split_text(text: str) -> list[str]:
    """Lines split on '\\n' only, each keeping its ending; ''.join() inverts it exactly."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _span(lines: tuple[str, ...] | None) -> tuple[int, int]:
    return (1, len(lines) + 1) if lines is not None else (0, 0)


def _file_hunks(rel: str, good: Path | None, bad: Path | None,
                roots: tuple[Path | None, Path | None] = (None, None)) -> list[Hunk]:
    ge, be = _read(good, roots[0]), _read(bad, roots[1])
    if ge == be:
        return []
    a, b = _text(ge), _text(be)
    if ge is not None and be is not None and a is not None and b is not None:
        hunks = _text_hunks(rel, a, b) if a != b else []
        if ge.mode != be.mode:
            hunks.append(Hunk(rel, "mode", modes=(ge.mode, be.mode)))
        return hunks
    if ge is not None and be is not None and ge.data == be.data and ge.link == be.link:
        return [Hunk(rel, "mode", modes=(ge.mode, be.mode))]
    kind = "add" if ge is None else "delete" if be is None else "replace"
    return [Hunk(rel, kind, _span(a), _span(b), a or (), b or (), good_entry=ge, bad_entry=be)]


def _text_hunks(rel: str, a: tuple[str, ...], b: tuple[str, ...]) -> list[Hunk]:
    # Trim the common prefix and suffix first: cheap, and most edits leave most of a file alone.
    lo = 0
    while lo < min(len(a), len(b)) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < min(len(a), len(b)) - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    sm = _matcher(a[lo:len(a) - hi], b[lo:len(b) - hi])
    return [Hunk(rel, "text", (lo + i1 + 1, lo + i2 + 1), (lo + j1 + 1, lo + j2 + 1),
                 a[lo + i1:lo + i2], b[lo + j1:lo + j2], base=a)
            for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


class _Costly(Exception):
    pass


class _Budgeted(difflib.SequenceMatcher):
    """difflib's matcher with autojunk off, which gives up (_Costly) once its longest-match
    searches would have cost more than _MATCH_BUDGET steps: a line pair looked at is one step, a
    line of the searched range LINE_STEPS (it costs that much more: a file whose lines all
    differ but for one copy each spends its time on lines). Where the only lines the two sides
    share are one line repeated all over (`}`, a blank line: every statement changed), each
    search scans every pair of its copies and splits off one pair: cubic (2,000 lines in 46 s,
    4,000 in 4 minutes). A search's charge is read off running sums (`upto`), so charging costs
    nothing per line: summed line by line, it cost as much as the search itself."""

    def __init__(self, a, b):
        self.budget = _MATCH_BUDGET
        super().__init__(None, a, b, autojunk=False)
        b2j = self.b2j
        self.upto = list(itertools.accumulate((len(b2j.get(x, ())) + _LINE_STEPS for x in self.a), initial=0))

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        hi = len(self.a) if ahi is None else ahi
        self.budget -= self.upto[hi] - self.upto[alo]     # at most this many pairs, and the lines
        if self.budget < 0:
            raise _Costly
        return super().find_longest_match(alo, ahi, blo, bhi)


def _matcher(a, b) -> difflib.SequenceMatcher:
    """A matcher of two line lists with its opcodes computed. Autojunk is off: on files over 200
    lines it treats frequent lines ('}', blanks) as junk and makes coarser, stranger hunks; but
    past the budget (_Budgeted) the file is cut at its anchors (_anchored) and that heuristic is
    what keeps the time linear between them."""
    sm = _Budgeted(a, b)
    try:
        sm.get_opcodes()            # kept by the matcher (get_grouped_opcodes reads them)
        return sm
    except _Costly:
        return _anchored(a, b)


def _anchors(a, b) -> list[tuple[int, int]]:
    """(i, j) pairs of lines found once in `a` and once in `b`, the longest run of them in the same
    order on both sides (patience diff's anchors), by patience sorting: O(n log n)."""
    once_a, once_b = _once(a), _once(b)
    pairs = [(i, once_b[line]) for line, i in once_a.items() if line in once_b]
    pairs.sort()
    tails: list[int] = []            # tails[k]: the smallest j ending an increasing run of length k + 1
    ends: list[int] = []             # the pair index holding tails[k]
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        back[n] = ends[k - 1] if k else -1
        if k == len(tails):
            tails.append(j)
            ends.append(n)
        else:
            tails[k], ends[k] = j, n
    out, n = [], ends[-1] if ends else -1
    while n >= 0:
        out.append(pairs[n])
        n = back[n]
    return out[::-1]


def _once(lines) -> dict[str, int]:
    """Each line found exactly once, with its index."""
    seen: dict[str, int] = {}
    twice: set[str] = set()
    for i, line in enumerate(lines):
        if line in seen:
            twice.add(line)
        else:
            seen[line] = i
    return {line: i for line, i in seen.items() if line not in twice}


def _anchored(a, b) -> difflib.SequenceMatcher:
    """The matcher of a file past the budget: its lines found once on each side, in order, are
    matched first, and each stretch between two of them is diffed by difflib with its junk
    heuristic. difflib alone, on a file whose matches are all one line long (every other line
    edited: thousands of tiny hunks), splits one line off the whole range per search, scanning
    it each time: quadratic (8,000 hunks in 23 s, 50,000 in hours). Without such lines (every
    statement changed, the same `}` shared), the whole file is one stretch, as before."""
    blocks = []
    i0 = j0 = 0
    for i, j in [*_anchors(a, b), (len(a), len(b))]:
        if i > i0 and j > j0:
            gap = difflib.SequenceMatcher(None, a[i0:i], b[j0:j])
            blocks += [(i0 + x, j0 + y, n) for x, y, n in gap.get_matching_blocks() if n]
        if i < len(a):
            blocks.append((i, j, 1))
        i0, j0 = i + 1, j + 1
    sm = difflib.SequenceMatcher(None, a, b)
    merged: list[difflib.Match] = []
    for i, j, n in blocks:          # adjacent blocks are one, as get_matching_blocks gives them
        if merged and merged[-1].a + merged[-1].size == i and merged[-1].b + merged[-1].size == j:
            merged[-1] = difflib.Match(merged[-1].a, merged[-1].b, merged[-1].size + n)
        else:
            merged.append(difflib.Match(i, j, n))
    sm.matching_blocks = [*merged, difflib.Match(len(a), len(b), 0)]
    sm.get_opcodes()
    return sm


# -- the finer pass ----------------------------------------------------------------------------

def split_lines(hunk: Hunk) -> list[Hunk]:
    """Line-level sub-hunks of a text hunk: one per deleted, inserted or replaced line.

    Replaced lines stay paired with their counterpart: positionally when both sides have the
    same length, else by similarity (an alignment maximising the summed difflib ratio). Each
    sub-hunk is addressed in GOOD's coordinates like any hunk, so any subset of them (with the
    other hunks of the diff) applies. Other kinds, and single-line hunks, come back unchanged.
    """
    if hunk.kind != "text" or max(len(hunk.old), len(hunk.new)) <= 1:
        return [hunk]
    g, b = hunk.good_lines[0], hunk.bad_lines[0]
    subs = []
    for i, j in _align(hunk.old, hunk.new):
        old = (hunk.old[i],) if i is not None else ()
        new = (hunk.new[j],) if j is not None else ()
        subs.append(replace(hunk, good_lines=(g, g + len(old)), bad_lines=(b, b + len(new)),
                            old=old, new=new, parent=hunk.id, sub=len(subs)))
        g, b = g + len(old), b + len(new)
    return subs


def _align(old: tuple[str, ...], new: tuple[str, ...]) -> list[tuple[int | None, int | None]]:
    """Pairs (i, j) in order; (i, None) deletes old[i], (None, j) inserts new[j]."""
    m, n = len(old), len(new)
    # scoring a pair reads both lines whole: bounded by characters too, or three 1 MB lines
    # against four (an embedded table, minified code) took 6 s
    if m == n or not m or not n or m * n > _ALIGN_LIMIT or \
            n * sum(map(len, old)) + m * sum(map(len, new)) > _ALIGN_CHARS:
        k = min(m, n)   # positional pairs, then the longer side's remainder
        return ([(i, i) for i in range(k)] + [(i, None) for i in range(k, m)]
                + [(None, j) for j in range(k, n)])

    def sim(i: int, j: int) -> float:
        sm = difflib.SequenceMatcher(None, old[i], new[j])
        return sm.ratio() if sm.real_quick_ratio() >= _SIMILAR and sm.quick_ratio() >= _SIMILAR else 0.0

    sims = [[sim(i, j) for j in range(n)] for i in range(m)]
    best = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            pair = best[i + 1][j + 1] + sims[i][j] if sims[i][j] >= _SIMILAR else -1.0
            best[i][j] = max(pair, best[i + 1][j], best[i][j + 1])
    out, i, j = [], 0, 0
    while i < m or j < n:
        if i < m and j < n and sims[i][j] >= _SIMILAR and best[i][j] == best[i + 1][j + 1] + sims[i][j]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif i < m and (j == n or best[i][j] == best[i + 1][j]):
            out.append((i, None))
            i += 1
        else:
            out.append((None, j))
            j += 1
    return out


# -- applying a subset -------------------------------------------------------------------------

def _by_file(hunks: Iterable[Hunk]) -> dict[str, list[Hunk]]:
    unique = {h.id: h for h in hunks}
    for h in unique.values():
        if h.parent in unique:
            raise SpaceError(f"hunk {h.id} is part of {h.parent}: apply one or the other")
    groups: dict[str, list[Hunk]] = defaultdict(list)
    for h in unique.values():
        groups[h.file].append(h)
    return groups


def apply_lines(base: tuple[str, ...] | list[str], hunks: Iterable[Hunk]) -> list[str]:
    """GOOD's lines with the given text hunks of one file applied, in one forward pass.

    Sorting by (good start, good end, bad start) puts insertions at a position before a hunk
    that starts there, and keeps split insertions in BAD's order.
    """
    out: list[str] = []
    cursor = 1
    for h in sorted(hunks, key=lambda h: (h.good_lines[0], h.good_lines[1], h.bad_lines[0])):
        start, end = h.good_lines
        if start < cursor:
            raise SpaceError(f"hunks overlap in {h.file}: {h.id}")
        out += base[cursor - 1:start - 1]
        out += h.new
        cursor = end
    out += base[cursor - 1:]
    return out


def join_lines(lines: list[str]) -> str:
    """Lines to text. A line without its newline (only ever the last line of GOOD or BAD) gets
    one when split hunks put another line after it, so every subset stays a valid text."""
    return "".join(s if s.endswith("\n") or k == len(lines) - 1 else s + "\n"
                   for k, s in enumerate(lines))


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
        else:
            texts.append(h)
    data = join_lines(apply_lines(texts[0].base, texts)).encode("utf-8") if texts else good.data
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
        for rel, p in found.items():    # a link that climbs out of GOOD names, from here, what it does from GOOD
            if p.is_symlink() and (entry := self._good_entry(rel)) is not None and entry.outside:
                p.unlink()
                os.symlink(entry.outside, p)
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
        for rel, hs in groups.items():
            if hs[0].kind == "retype":
                for sub, _, bad in hs[0].tree:
                    applied[sub], retyped[sub] = frozenset({hs[0].id}), bad
            else:
                applied[rel] = frozenset(h.id for h in hs)
        want = {}
        for rel, ids in applied.items():
            # a file that holds exactly these hunks and is as we left it costs no rewrite (and no
            # re-rendering: a run's cost follows what changed since the last run, not the subset)
            if self._applied.get(rel) != ids or _stat(self.root / rel) != self._stats.get(rel):
                want[rel] = retyped[rel] if rel in retyped else _result(self._good_entry(rel), groups[rel])
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


# -- rendering ---------------------------------------------------------------------------------

def _git_mode(mode: int, link: bool = False) -> str:
    return "120000" if link else "100755" if mode & 0o111 else "100644"


def _range(start: int, length: int) -> str:
    """A unified-diff range: 'start,length', 'start' for one line, 'start-1,0' when empty."""
    if length == 1:
        return str(start)
    return f"{start - 1 if length == 0 else start},{length}"


def _line(prefix: str, s: str) -> str:
    return prefix + s if s.endswith("\n") else f"{prefix}{s}\n\\ No newline at end of file\n"


def _entry_lines(e: Entry | None) -> tuple[str, ...] | None:
    return (os.fsdecode(e.data),) if e is not None and e.link else _text(e)


def _render_whole(h: Hunk) -> str:
    g, b = h.good_entry, h.bad_entry
    a_name = "/dev/null" if g is None else f"a/{h.file}"
    b_name = "/dev/null" if b is None else f"b/{h.file}"
    if g is None:
        head = f"new file mode {_git_mode(b.mode, b.link)}\n"
    elif b is None:
        head = f"deleted file mode {_git_mode(g.mode, g.link)}\n"
    elif _git_mode(g.mode, g.link) != _git_mode(b.mode, b.link):
        head = f"old mode {_git_mode(g.mode, g.link)}\nnew mode {_git_mode(b.mode, b.link)}\n"
    else:
        head = ""
    old, new = _entry_lines(g), _entry_lines(b)
    if (g is not None and old is None) or (b is not None and new is None):
        return head + f"Binary files {a_name} and {b_name} differ\n"
    old, new = old or (), new or ()
    if not old and not new:
        return head
    return (head + f"--- {a_name}\n+++ {b_name}\n@@ -{_range(1, len(old))} +{_range(1, len(new))} @@\n"
            + "".join(_line("-", s) for s in old) + "".join(_line("+", s) for s in new))


def _hunk_opcodes(base: tuple[str, ...], hunks: list[Hunk], result: list[str]) -> list[tuple]:
    """difflib opcodes over (GOOD's lines, the lines `hunks` give) that put each change where its
    hunk is: a re-diff of the two could put it elsewhere among repeated lines (`y y y` -> `y z y`,
    the hunk 'f:2', came out as `+z` after line 1 and `-y` at line 3). GOOD's last line is a change
    too where the join gave it a newline (a line now follows it); adjacent changes are one."""
    ops, i, j = [], 0, 0
    for h in sorted(hunks, key=lambda h: (h.good_lines[0], h.good_lines[1], h.bad_lines[0])):
        i1, i2 = h.good_lines[0] - 1, h.good_lines[1] - 1
        ops += [("equal", i, i1, j, j + i1 - i), ("change", i1, i2, j + i1 - i, j + i1 - i + len(h.new))]
        i, j = i2, j + i1 - i + len(h.new)
    ops.append(("equal", i, len(base), j, len(result)))
    merged: list[list] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 == i1:
            continue
        if tag == "equal" and base[i2 - 1] != result[j2 - 1]:     # the joined last line
            merged.append(["equal", i1, i2 - 1, j1, j2 - 1])
            tag, i1, j1 = "change", i2 - 1, j2 - 1
        if merged and merged[-1][0] == tag == "change":
            merged[-1][2], merged[-1][4] = i2, j2
        else:
            merged.append([tag, i1, i2, j1, j2])
    return [("equal" if tag == "equal" else "replace" if i2 > i1 and j2 > j1 else "delete" if i2 > i1 else "insert",
             i1, i2, j1, j2) for tag, i1, i2, j1, j2 in merged if i2 > i1 or j2 > j1]


class _Given(difflib.SequenceMatcher):
    """A matcher whose opcodes are given: difflib groups them with their context."""

    def __init__(self, a, b, opcodes: list[tuple]):
        super().__init__(None, a, b, autojunk=False)
        self.given = opcodes

    def get_opcodes(self):
        return list(self.given)


def _render_text(a: list[str] | tuple[str, ...], b: list[str], opcodes: list[tuple], context: int) -> str:
    out = []
    for group in _Given(a, b, opcodes).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", s) for s in a[a1:a2]]
                continue
            out += [_line("-", s) for s in a[a1:a2]] + [_line("+", s) for s in b[b1:b2]]
    return "".join(out)


def unified_diff(hunks: Iterable[Hunk], context: int = 3) -> str:
    """The subset as one git-style patch against GOOD; `patch -p1` applied to GOOD gives what
    `materialise` gives (binary files are only named, as `diff` does)."""
    out = []
    for rel, hs in sorted(_by_file(hunks).items()):
        whole = [h for h in hs if h.kind in WHOLE]
        if whole:
            out.append(whole[0].unified(context))
            continue
        text = [h for h in hs if h.kind == "text"]
        mode = [h for h in hs if h.kind == "mode"]
        part = f"diff --git a/{rel} b/{rel}\n"
        if mode:
            part += f"old mode {_git_mode(mode[0].modes[0])}\nnew mode {_git_mode(mode[0].modes[1])}\n"
        if text:
            base = text[0].base
            result = split_text(join_lines(apply_lines(base, text)))
            part += f"--- a/{rel}\n+++ b/{rel}\n" + _render_text(base, result, _hunk_opcodes(base, text, result), context)
        out.append(part)
    return "".join(out)
