"""GOOD and BAD read, and the hunks that turn one into the other.

Abstractions
------------
diff_paths   -- GOOD and BAD, two files or two trees -> hunks (ignoring .git, __pycache__,
                .bisectk, and special files: a FIFO, a socket or a device node in a tree has no
                content to diff or copy, and reading a FIFO would wait forever), sorted by file
                and position. `diff_trees` gives them with `unbisected` from the same walk.
unbisected   -- what of two trees no hunk carries: an empty directory on one side, a directory's mode.
rename_hunks -- a file moved (renames.py pairs them): the move, then its content's hunks.

A text file's hunks are difflib's opcodes over its lines (linediff.py's matcher, which bounds
the time one file may take). Errors (a missing path, a file given against a directory,
identical inputs, an unreadable file) raise SpaceError with one line naming the path. GOOD and
BAD are only ever read.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from bisectk.contents import NOT_COPIED
from bisectk.spaces import renames
from bisectk.spaces.commits import SpaceError  # one error type for every space
from bisectk.spaces.hunks import Entry, Hunk, _text, whole_kind
from bisectk.spaces.linediff import _matcher

IGNORED = NOT_COPIED    # .git, __pycache__, .bisectk: the tree's content digest skips them too (contents.py)


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
    read: dict[str, tuple[Entry | None, Entry | None]] = {}    # a file one side has, read for the pairing
    if good.is_dir():       # a file only GOOD has and one only BAD has, alike: a move (renames.py)
        gone = {r: _read(goods[r], good) for r in goods.keys() - bads.keys()}
        new = {r: _read(bads[r], bad) for r in bads.keys() - goods.keys()}
        for old, moved in renames.pairs(gone, new):
            hunks += rename_hunks(old, moved, gone.pop(old), new.pop(moved))
            del goods[old], bads[moved]
        read = {**{r: (e, None) for r, e in gone.items()}, **{r: (None, e) for r, e in new.items()}}
    for rel in sorted(goods.keys() | bads.keys()):
        ge, be = read[rel] if rel in read else (_read(goods.get(rel), roots[0]), _read(bads.get(rel), roots[1]))
        hunks += _entry_hunks(rel, ge, be)
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
    try:
        _walk(root, found, dirs)
    except RecursionError:      # os.walk recurses (Python 3.11), and so do the copy and removal of a tree
        raise SpaceError(f"{root}: directories nested too deeply to walk and copy (past Python's recursion "
                         f"limit of {sys.getrecursionlimit():,} calls): give GOOD and BAD without them") from None
    return found


def _walk(root: Path, found: dict[str, Path], dirs: dict[str, tuple[int, int]] | None) -> None:
    """_scan's walk: `found` and `dirs` filled."""
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
            rel = path.relative_to(root).as_posix() if root else ""
            target = (_into_tree(rel, target, root) if root else None) or target
            return Entry(os.fsencode(target), 0o777, link=True,
                         outside=_climbs_out(rel, target, root) if root else None)
        return Entry(path.read_bytes(), stat.S_IMODE(st.st_mode))
    except OSError as e:
        _unreadable(e)


def _into_tree(rel: str, target: str, root: Path) -> str | None:
    """An absolute `target` of the link at `rel` that names a place inside its own tree
    (`inc -> /home/me/good/real`), as the relative path that names it from the link; else None.
    Copied as it is written, GOOD's link in the scratch copy read GOOD's own files (and a run
    wrote through it into GOOD), and BAD's another tree's: the search blamed the link for what
    differs in the files it names."""
    if not os.path.isabs(target):
        return None
    named = os.path.normpath(target)
    for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        if named == base or named.startswith(os.path.join(base, "")):
            return os.path.relpath(os.path.join(os.path.realpath(root), os.path.relpath(named, base)),
                                   os.path.join(os.path.realpath(root), os.path.dirname(rel)))
    return None


def _climbs_out(rel: str, target: str, root: Path) -> str | None:
    """What the link at `rel` under `root` names by its absolute path, when its relative `target`
    climbs out of the tree (read as written: `sub/../..` never follows a link inside); else None."""
    if os.path.isabs(target):
        return None
    inside = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if inside != ".." and not inside.startswith(".." + os.sep):
        return None
    return os.path.normpath(os.path.join(os.path.realpath(root), inside))


def _span(lines: tuple[str, ...] | None) -> tuple[int, int]:
    return (1, len(lines) + 1) if lines is not None else (0, 0)


def _entry_hunks(rel: str, ge: Entry | None, be: Entry | None) -> list[Hunk]:
    """The hunks of one path, from GOOD's and BAD's entries there (None: that side has none)."""
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
    return [Hunk(rel, whole_kind(ge, be), _span(a), _span(b), a or (), b or (), good_entry=ge, bad_entry=be)]


def rename_hunks(old: str, new: str, ge: Entry, be: Entry) -> list[Hunk]:
    """A file moved from `old` (GOOD's path) to `new` (BAD's): the move, then its content's hunks
    under GOOD's name (its lines, its mode), each apart from the move (renames.py)."""
    hunks = [Hunk(old, "rename", to=new, good_entry=ge, bad_entry=be)]
    a, b = _text(ge), _text(be)
    if a is not None and b is not None and a != b:
        hunks += _text_hunks(old, a, b)
    if ge.mode != be.mode:
        hunks.append(Hunk(old, "mode", modes=(ge.mode, be.mode)))
    return hunks


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
