"""ddmin (Zeller & Hildebrandt, 2002): a 1-minimal failure-inducing subset, from the bad side.

Abstractions
------------
split -- cut a list into n contiguous, nearly equal parts (Zeller's split, as picire does).
ddmin -- the minimising delta debugging algorithm over the tri-state outcome: a subset or
         complement is kept only when it FAILs, so UNRESOLVED counts as "not failing" and the
         search routes around it by trying the other parts and finer granularity.

The order of tests follows picire's DD with its defaults (subsets first, then complements,
forward), so run counts are comparable; the Tester's memo stands in for picire's cache.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from bisectk.outcome import Outcome
from bisectk.search.result import Finding
from bisectk.search.tester import Tester


def split(items: Sequence[Hashable], n: int) -> list[list]:
    """n contiguous parts; each later part gets the remainder of the integer division."""
    parts, start = [], 0
    for i in range(n):
        stop = start + (len(items) - start) // (n - i)
        parts.append(list(items[start:stop]))
        start = stop
    return parts


def ddmin(tester: Tester, items: Sequence[Hashable], phase: str = "ddmin") -> list:
    """A 1-minimal subset of `items` that FAILs. Precondition: `items` FAILs.

    Invariant: the concatenated `parts` FAIL. On return the parts are single elements and
    neither any one of them nor any single-element complement FAILed: 1-minimality.
    After a complement is removed the remaining parts are kept and the next complement scan
    starts where the removed one was (picire's complement offset), so no part is retried
    needlessly.
    """
    parts = split(items, 2)
    offset = 0.0
    while sum(map(len, parts)) >= 2:
        failing = _first_failing(tester, parts, phase)
        if failing is not None:
            parts, offset = split(failing, 2), 0.0
            continue
        if len(parts) > 2:  # with two parts each complement is the other part, just tested
            removed = _first_failing_complement(tester, parts, offset, phase)
            if removed is not None:
                parts, offset = parts[:removed] + parts[removed + 1:], float(removed)
                continue
        config = [x for part in parts for x in part]
        if len(parts) >= len(config):
            break
        finer = split(config, min(len(config), 2 * len(parts)))
        offset = offset * len(finer) / len(parts)
        parts = finer
    return [x for part in parts for x in part]


def _first_failing(tester: Tester, candidates: list[list], phase: str) -> list | None:
    for candidate in candidates:
        if tester.test(frozenset(candidate), phase) is Outcome.FAIL:
            return candidate
    return None


def _first_failing_complement(tester: Tester, parts: list[list], offset: float,
                              phase: str) -> int | None:
    """Index of the first part whose removal still FAILs, scanning from `offset` round."""
    for step in range(len(parts)):
        index = int((step + offset) % len(parts))
        rest = [x for i, part in enumerate(parts) if i != index for x in part]
        if tester.test(frozenset(rest), phase) is Outcome.FAIL:
            return index
    return None


def ddmin_strategy(tester: Tester, items: Sequence[Hashable]) -> Finding:
    return Finding(ddmin(tester, items))
