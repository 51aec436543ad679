"""Lines of GOOD and BAD paired up: the matcher a file's text hunks come from, and the finer pass.

Abstractions
------------
_matcher     -- difflib's opcodes over two line lists, within a budget of steps: past it, the file
                is cut at the lines found once on each side (patience diff's anchors), so no file
                takes more than a few seconds however its lines repeat.
split_lines  -- the finer pass: a text hunk -> one sub-hunk per deleted, inserted or replaced
                line, so a search can refine inside a culprit hunk.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
from dataclasses import replace

from bisectk.spaces.hunks import Hunk

_ALIGN_LIMIT = 4000     # old x new line pairs scored when aligning a hunk of unequal sides
_ALIGN_CHARS = 2_000_000  # characters those pairs may read in all (~0.7 s)
_MATCH_BUDGET = 25_000_000  # steps difflib may take on one file (~2.5 s) before anchors and its junk heuristic
_LINE_STEPS = 3            # what a line of a searched range costs, in line pairs looked at (_Budgeted)
_SIMILAR = 0.5          # a deleted and an inserted line pair up in split_lines at this ratio


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
