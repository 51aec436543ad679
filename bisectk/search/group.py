"""Adaptive binary splitting (group testing): the default strategy, fewest runs on the benchmark.

Abstractions
------------
adaptive     -- find the members of a minimal failure-inducing set one at a time. Each member is
                found by binary search over prefix lengths of the remaining candidates, with the
                members already found applied; after each member, one run asks whether the
                members found so far fail on their own (the single-culprit case ends there).
next_member  -- one such binary search, with git-bisect-style skipping of UNRESOLVED prefixes
                and, when every prefix in the window is unresolved, complement and add-one probes
                that route around invalid hybrids.

Cost without UNRESOLVED: ceil(log2 n) runs for the first member plus one run to see it fail
alone, so ceil(log2 n) + 1 for a single culprit; a pair among 32 costs about 13 runs. ddmin
needs about 1.5 log2 n for one culprit and twice that or more for interactions.

The algorithm's result is a failing set; `interaction.settle` then checks 1-minimality and
proves the interaction (most of those configurations were already tested here).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.result import Finding
from bisectk.search.tester import Tester


def adaptive(tester: Tester, items: Sequence[Hashable]) -> Finding:
    """A failing set whose members were each shown necessary when they were found.

    Invariant: found | pool FAILs (observed). It holds initially (all items: the bad endpoint)
    and `next_member` preserves it; the pool shrinks by at least one each round, so the loop
    ends, at the latest when the pool is empty and found alone is the failing set.
    """
    found: list[Hashable] = []
    pool = list(items)
    while pool:
        if found and tester.test(frozenset(found), "split-check") is Outcome.FAIL:
            break
        member, pool = next_member(tester, frozenset(found), pool)
        found.append(member)
    return Finding(found)


def next_member(tester: Tester, base: frozenset, pool: list) -> tuple[Hashable, list]:
    """(member, new pool): a pool element needed, with `base` applied, for the failure.

    Preconditions: base | pool FAILs; base alone did not FAIL. Postcondition:
    base | {member} | new_pool FAILs, and member is not in new_pool.
    Binary search keeps `lo` (a prefix length whose set did not FAIL: PASS, or base alone) and
    `hi` (a prefix length whose set FAILs); adjacent lo and hi name the member pool[lo].
    """
    lo, hi = 0, len(pool)
    while True:
        lo, hi = _narrow(tester, base, pool, lo, hi)
        if hi - lo == 1:
            return pool[lo], pool[:lo]
        # Every prefix length strictly between lo and hi was UNRESOLVED: probe the window's
        # elements another way.
        window = pool[lo:hi]
        failing = base | frozenset(pool[:hi])
        for element in reversed(window):
            outcome = tester.test(failing - {element}, "route-around")
            if outcome is Outcome.FAIL:
                # Not needed: drop it; the shorter pool's prefix hi-1 is that failing set.
                pool = [x for x in pool if x != element]
                hi -= 1
                break
            if outcome is Outcome.PASS:
                return element, [x for x in pool[:hi] if x != element]
        else:
            passing = base | frozenset(pool[:lo])
            added = {}
            for element in window:
                added[element] = tester.test(passing | {element}, "route-around")
                if added[element] is Outcome.FAIL:
                    return element, pool[:lo]
            for element in window:
                # Without the prefix: a different hybrid, often valid where the others were
                # not. If it fails, the element completes the failure with `base` alone.
                if tester.test(base | {element}, "route-around") is Outcome.FAIL:
                    return element, []
            # No removal could be judged and no single addition fails. An element whose
            # addition PASSed is not enough on its own, so prefer one whose addition was
            # UNRESOLVED. It is kept as ddmin would keep it: the failing set without it is
            # UNRESOLVED, not known to fail. The rest of the window stays in the pool.
            element = next((e for e in window if added[e] is not Outcome.PASS), window[-1])
            return element, [x for x in pool[:hi] if x != element]


def split_fraction(rule: ConfidenceRule | None) -> float:
    """Where between lo and hi to probe, as a share of the window.

    Without noise every verdict costs one run and halving is optimal. Under a flakiness rule a
    PASS costs `repeats` runs while a FAIL costs about 1/p (the observed fail rate), so probing
    a longer prefix, which FAILs more often, buys more information per run: the share that
    maximises bits per expected run (binary entropy over expected cost) is chosen.
    """
    if rule is None or rule.repeats == 1:
        return 0.5
    p_fail = rule.fails / rule.runs
    fail_cost = sum((1 - p_fail) ** i for i in range(rule.repeats))  # runs until the first FAIL
    pass_cost = rule.repeats

    def bits_per_run(share: float) -> float:
        entropy = -share * math.log2(share) - (1 - share) * math.log2(1 - share)
        return entropy / (share * fail_cost + (1 - share) * pass_cost)

    return max((percent / 100 for percent in range(50, 96)), key=bits_per_run)


def _narrow(tester: Tester, base: frozenset, pool: list, lo: int, hi: int) -> tuple[int, int]:
    """Binary search between lo and hi, skipping prefix lengths that are UNRESOLVED.

    Returns when lo and hi are adjacent or every length between them is UNRESOLVED. The
    probe nearest the split point is tried first, then its neighbours (git bisect's
    skip-away).
    """
    share = split_fraction(tester.rule)
    while hi - lo > 1:
        probe = _pick(tester, base, pool, lo, hi, share)
        if probe is None:
            break
        outcome = tester.test(base | frozenset(pool[:probe]), "split")
        if outcome is Outcome.FAIL:
            hi = probe
        elif outcome is Outcome.PASS:
            lo = probe
    return lo, hi


def _pick(tester: Tester, base: frozenset, pool: list, lo: int, hi: int,
          share: float) -> int | None:
    target = lo + int(share * (hi - lo))  # share 0.5 gives the midpoint (lo + hi) // 2
    for probe in sorted(range(lo + 1, hi), key=lambda m: (abs(m - target), m)):
        if tester.outcome_of(base | frozenset(pool[:probe])) is not Outcome.UNRESOLVED:
            return probe
    return None
