"""Renamed files: a file only GOOD has paired with one only BAD has where their contents are alike,
as git's rename detection pairs them (`git diff -M`: at least 50% alike).

A pair is one `rename` hunk (the path moves: treediff.rename_hunks) and the hunks of its content,
GOOD's lines against BAD's under GOOD's name, as for a file that stayed in place: a subset may take
the move without the content (the file moved, unchanged), the content without the move (the lines
changed where GOOD has the file), or both. Unpaired, a renamed file was a deletion and an addition,
each whole: a one-line change in a renamed file was answered as the whole new file.

Abstractions
------------
pairs      -- (GOOD's path, BAD's path) for each rename among the files only GOOD has (`gone`) and
              only BAD has (`new`): equal contents first, then the most alike text files, each
              file in one pair at most; a pair in one directory, or of one file name, is preferred
              among equals. Past MAX_COMPARED candidate pairs only equal contents are paired (git's
              diff.renameLimit plays that part). How alike two text files are is hunks.alike: the
              share of lines both hold (as a multiset), 0-100; two binary files are a move only
              when equal.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict

from bisectk.spaces.hunks import MIN_SIMILARITY, Entry, _text, alike, line_counts

MAX_COMPARED = 4096


def _lines(entry: Entry):
    """A text file's lines as a multiset (hunks.line_counts); None for a binary file, a link or an
    empty file."""
    lines = None if entry.link else _text(entry)
    return line_counts(lines) if lines else None


def pairs(gone: dict[str, Entry], new: dict[str, Entry]) -> list[tuple[str, str]]:
    """(GOOD's path, BAD's path) for each rename found; `gone`: the entries only GOOD has, `new`:
    only BAD's. Links are never paired (a link's move is its deletion and addition)."""
    gone = {r: e for r, e in gone.items() if e is not None and not e.link}
    new = {r: e for r, e in new.items() if e is not None and not e.link}
    found: list[tuple[str, str]] = []
    by_digest: dict[str, list[str]] = defaultdict(list)
    for rel in sorted(gone):
        by_digest[hashlib.sha1(gone[rel].data).hexdigest()].append(rel)
    for rel in sorted(new, key=lambda r: (r.count("/"), r)):
        same = by_digest.get(hashlib.sha1(new[rel].data).hexdigest())
        if same:
            old = min(same, key=lambda g: (not _near(g, rel), g))
            same.remove(old)
            found.append((old, rel))
    left_gone = sorted(set(gone) - {g for g, _ in found})
    left_new = sorted(set(new) - {b for _, b in found})
    if not left_gone or not left_new or len(left_gone) * len(left_new) > MAX_COMPARED:
        return found
    counted = {("g", r): _lines(gone[r]) for r in left_gone} | {("b", r): _lines(new[r]) for r in left_new}
    scored = []
    for g in left_gone:
        for b in left_new:
            score = alike(counted["g", g], counted["b", b])
            if score >= MIN_SIMILARITY:
                scored.append((-score, not _near(g, b), g, b))
    taken: set[str] = set()
    for _, _, g, b in sorted(scored):
        if g not in taken and b not in taken:
            taken.update((g, b))
            found.append((g, b))
    return found


def _near(a: str, b: str) -> bool:
    """One directory, or one file name: among equally alike candidates, the likelier move."""
    return os.path.dirname(a) == os.path.dirname(b) or os.path.basename(a) == os.path.basename(b)
