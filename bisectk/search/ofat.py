"""One-factor-at-a-time, in both directions, and the full factorial for small spaces.

Abstractions
------------
ofat       -- every difference flipped alone onto good ('ofat-add') and every difference
              reverted alone from bad ('ofat-remove'): 2n runs that fill the whole
              key-differences table, then a conclusion drawn from it.
exhaustive -- every one of the 2^n configurations (n <= EXHAUSTIVE_MAX), smallest first; the
              culprits are a smallest failing set none of whose subsets fails, and every other
              such set is reported as a possible independent cause.

How ofat concludes: the differences whose removal from bad makes it PASS are each necessary;
if together they FAIL they are the candidate set. Otherwise a difference that fails alone is a
sufficient cause. If neither holds (redundant causes, or unresolved hybrids hide them), ddmin
from the bad side finishes the job, so the answer is always a failing set.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations

from bisectk.outcome import Outcome
from bisectk.search.ddmin import ddmin
from bisectk.search.result import Finding
from bisectk.search.tester import Tester

EXHAUSTIVE_MAX = 8


def ofat(tester: Tester, items: Sequence[Hashable]) -> Finding:
    everything = frozenset(items)
    alone = {d: tester.test(frozenset({d}), "ofat-add") for d in items}
    removed = {d: tester.test(everything - {d}, "ofat-remove") for d in items}
    sufficient = [frozenset({d}) for d in items if alone[d] is Outcome.FAIL]
    necessary = [d for d in items if removed[d] is Outcome.PASS]
    if necessary and tester.test(frozenset(necessary), "ofat-confirm") is Outcome.FAIL:
        return Finding(necessary, also_failing=sufficient)
    if sufficient:
        return Finding(list(sufficient[0]), also_failing=sufficient)
    return Finding(ddmin(tester, items))


def exhaustive(tester: Tester, items: Sequence[Hashable]) -> Finding:
    if len(items) > EXHAUSTIVE_MAX:
        raise ValueError(f"exhaustive search is limited to {EXHAUSTIVE_MAX} differences "
                         f"({len(items)} given: 2^{len(items)} configurations)")
    # Smallest configurations first: if the search is stopped, the smallest failing set
    # seen so far is already the best answer.
    for size in range(1, len(items)):
        for combo in combinations(items, size):
            tester.test(frozenset(combo), "exhaustive")
    failing = [key for key in tester.failing() if isinstance(key, frozenset)]
    minimal = [s for s in failing if not any(other < s for other in failing)]
    order = {d: i for i, d in enumerate(items)}
    minimal.sort(key=lambda s: (len(s), sorted(order[d] for d in s)))
    return Finding([d for d in items if d in minimal[0]], also_failing=minimal[1:])
