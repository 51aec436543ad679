"""dd isolation (Zeller & Hildebrandt, 2002): a 1-minimal difference between a passing and a
failing configuration.

Abstractions
------------
Isolation -- the pair found: `passing` and `failing` configurations (sets of applied
             differences) and `difference`, failing minus passing, in input order.
isolate   -- the general dd algorithm. Both ends move: the passing side grows, the failing side
             shrinks, so it usually needs fewer runs than ddmin, and an UNRESOLVED test simply
             leaves both ends where they are while other parts are tried (that is how dd routes
             around invalid hybrids, build failures and different failures).

The answer differs from ddmin's: an interaction {a, b} is typically isolated as "b, with a
already applied", i.e. difference {b} and passing side {a, ...}. The strategy reports the
passing side as the result's context.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from bisectk.outcome import Outcome
from bisectk.search.ddmin import split
from bisectk.search.result import Finding
from bisectk.search.tester import Tester


@dataclass(frozen=True)
class Isolation:
    passing: frozenset
    failing: frozenset
    difference: tuple


def isolate(tester: Tester, items: Sequence[Hashable], phase: str = "dd") -> Isolation:
    """Preconditions: the empty set PASSes and all `items` FAIL (the verified endpoints).

    Invariant: `passing` PASSes, `failing` FAILs, and passing is a subset of failing; every
    step keeps it because an end only moves onto a set just observed with that outcome.
    On return, for every element d of the difference, passing + {d} does not FAIL and
    failing - {d} does not PASS (the difference is 1-minimal).
    """
    passing, failing = frozenset(), frozenset(items)
    n = 2
    while True:
        delta = [x for x in items if x in failing and x not in passing]
        if len(delta) <= 1:
            break
        n = min(n, len(delta))
        parts = [frozenset(p) for p in split(delta, n)]
        # Zeller's four cases in order; each case stops at its first match, and the later
        # cases re-read outcomes of the earlier ones from the memo, so no set runs twice.
        grown = [passing | p for p in parts]
        shrunk = [failing - p for p in parts]
        step = _first(tester, grown, Outcome.FAIL, phase)
        if step is not None:                       # passing + part fails: shrink the failing end
            failing, n = grown[step], 2
            continue
        step = _first(tester, shrunk, Outcome.PASS, phase)
        if step is not None:                       # failing - part passes: grow the passing end
            passing, n = shrunk[step], 2
            continue
        step = _first(tester, grown, Outcome.PASS, phase)
        if step is not None:                       # passing + part passes: grow, keep granularity
            passing, n = grown[step], max(n - 1, 2)
            continue
        step = _first(tester, shrunk, Outcome.FAIL, phase)
        if step is not None:                       # failing - part fails: shrink, keep granularity
            failing, n = shrunk[step], max(n - 1, 2)
            continue
        if n >= len(delta):                        # finest split and nothing moved: done
            break
        n = min(2 * n, len(delta))
    return Isolation(passing, failing, tuple(x for x in items if x in failing - passing))


def _first(tester: Tester, configs: list[frozenset], wanted: Outcome, phase: str) -> int | None:
    for i, config in enumerate(configs):
        if tester.test(config, phase) is wanted:
            return i
    return None


def dd_strategy(tester: Tester, items: Sequence[Hashable]) -> Finding:
    found = isolate(tester, items)
    return Finding(list(found.difference), context=found.passing)
