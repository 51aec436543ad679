"""Every independent failing set: after the first one is settled, the search goes on until the
sets it found explain every failure of the bad configuration, or says why it could not.

Abstractions
------------
FailingSet      -- one 1-minimal failing set (its members in input order), with its interaction
                   proof and whether it is an interaction.
Sets            -- what the search showed about the sets: every set found (the first one is the
                   strategy's answer), the fixes shown (sets of differences whose reversal from bad
                   was seen to PASS), fixes that could not be judged, and whether the list is
                   known to be complete (`complete`, else `note` says why not).
hitting_sets    -- the minimal sets that meet every set of a family (Berge's algorithm).
find_other_sets -- the loop below.

Why a fix is a hitting set. A failing configuration of bad's differences contains a 1-minimal
failing set; the configuration stops failing only when one member of every such set is reverted.
So the candidate fixes of the sets found so far are their minimal hitting sets, and each one is
checked by running bad without it:

- it PASSES: that fix is shown;
- it FAILS: a failing set exists that misses the fix, so it is none of the sets found. It is found
  by the same strategy, searching only the differences bad keeps (the configuration just run FAILs
  and good PASSes: the preconditions of every strategy), and settled (1-minimal, its interaction
  proved). The family grows and its hitting sets are recomputed;
- it is UNRESOLVED: the fix cannot be judged, and the list may be incomplete.

A failure need not be monotone: a set that fails alone on good may pass with another difference
of bad beside it (b masks a). Then a reversal smaller than any hitting set fixes bad, and the
family's fixes are not the minimal ones. So when the loop ends, every configuration of bad's
differences seen to PASS with a set found inside it is read back as a fix (`observed`): the fixes
kept are the minimal ones of both kinds, and a set found inside a passing configuration is `masked` (with that fix), so
the report never says that bad passes only when every set loses a member.

When every minimal hitting set of the family has been shown to fix bad, no other failing set
exists (for a failing set S outside the family, no member of the family lies inside S, so one
element of each member outside S makes a hitting set disjoint from S; its minimal part h leaves S
in bad - h, which would then FAIL). Monotone failures are assumed, as by every strategy here.

The search is bounded by `max_sets` and by the run budget: a StopSearch (the budget spent, a stop
request) ends it with the sets shown so far and `complete` False; so does a KeyboardInterrupt, with
`interrupted` set for the caller to report the stop (the sets found were settled before it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.interaction import is_interaction, settle
from bisectk.search.tester import StopSearch, Tester

HITTING_SETS_MAX = 64   # candidate fixes checked at most; beyond, the list is called incomplete


@dataclass(frozen=True)
class FailingSet:
    members: tuple
    proof: dict = field(default_factory=dict)   # proper subsets -> Outcome
    interaction: bool = False


@dataclass
class Sets:
    found: list[FailingSet]
    fixes: list[frozenset] = field(default_factory=list)       # bad without it was seen to PASS
    unjudged: list[frozenset] = field(default_factory=list)    # bad without it was UNRESOLVED
    remaining: list[frozenset] = field(default_factory=list)   # bad without it FAILED, and the set
                                                               # behind that was not isolated
    masked: list[tuple[frozenset, frozenset]] = field(default_factory=list)  # (set found, a fix that
                                                               # leaves it in bad): bad masks that set
    complete: bool = True
    note: str = ""                                             # why the list may be incomplete
    interrupted: bool = False                                  # Ctrl-C ended it (the caller re-raises)


def hitting_sets(family: Sequence[frozenset], limit: int = HITTING_SETS_MAX) -> list[frozenset] | None:
    """The minimal sets meeting every set of `family`, smallest first (ties in a stable order);
    None when there are more than `limit` of them (Berge's algorithm: one set at a time)."""
    current: set[frozenset] = {frozenset()}
    for s in family:
        grown = {h for h in current if h & s}
        grown |= {h | {x} for h in current if not h & s for x in s}
        current = {h for h in grown if not any(other < h for other in grown)}
        if len(current) > limit:
            return None
    return sorted(current, key=lambda h: (len(h), sorted(map(repr, h))))


def find_other_sets(tester: Tester, items: Sequence[Hashable], first: FailingSet,
                    known: Sequence[frozenset], strategy: Callable[[Tester, Sequence[Hashable]], Any],
                    max_sets: int, measure_removal: bool = False) -> Sets:
    """Grow the family from `first` (plus `known`: sets the strategy already showed minimal, e.g.
    by exhaustive enumeration) until its fixes are all shown, a fix cannot be judged, `max_sets`
    sets are found, or the budget is spent (see the module docstring). With `measure_removal`,
    each member of the sets found after the first is then reverted alone from bad (the table's
    column; the first set's members were measured by the caller)."""
    everything = frozenset(items)
    sets = Sets([first])
    checked: set[frozenset] = set()
    try:
        for extra in known:
            if len(sets.found) < max_sets and all(frozenset(s.members) != extra for s in sets.found):
                sets.found.append(_settled(tester, items, sorted(extra, key=list(items).index)))
        while True:
            family = [frozenset(s.members) for s in sets.found]
            candidates = hitting_sets(family)
            if candidates is None:
                return _incomplete(sets, f"more than {HITTING_SETS_MAX} ways to fix bad to check")
            new_set = None
            for fix in candidates:
                if fix in checked:
                    continue
                outcome = tester.test(everything - fix, "fix-check")
                if outcome is Outcome.UNRESOLVED:
                    checked.add(fix)
                    if fix not in sets.unjudged:
                        sets.unjudged.append(fix)
                    continue
                if outcome is Outcome.PASS:
                    checked.add(fix)
                    if fix not in sets.fixes:
                        sets.fixes.append(fix)
                    continue
                # bad without `fix` still fails: another failing set, missing every member of fix
                sets.remaining.append(fix)
                if len(sets.found) >= max_sets:
                    return _incomplete(sets, f"bad without {_words(fix, items)} still fails, and "
                                             f"{max_sets} failing sets were found already")
                rest = [d for d in items if d not in fix]
                tester.stage = f"set {len(sets.found) + 1}"
                finding = strategy(tester, rest)   # dd's context is part of its failing set here
                new_set = _settled(tester, rest, [*finding.context, *finding.culprits])
                tester.stage = ""
                sets.remaining.remove(fix)
                break
            if new_set is None:
                if measure_removal:
                    for later in sets.found[1:]:
                        for member in later.members:
                            tester.test(everything - {member}, "confirm-removal")
                observed(tester, items, sets)
                if sets.unjudged:
                    return _incomplete(sets, "bad without " + " / ".join(_words(f, items) for f in sets.unjudged)
                                       + " could not be judged")
                return sets
            if not new_set.members:   # not monotone: the strategy found nothing to add
                sets.remaining.append(fix)
                return _incomplete(sets, f"bad without {_words(fix, items)} fails, but no failing set was "
                                         f"isolated in it")
            sets.found.append(new_set)
    except StopSearch as stop:
        tester.stage = ""
        return _incomplete(sets, str(stop) or "stopped")
    except KeyboardInterrupt:
        tester.stage = ""
        sets.interrupted = True
        return _incomplete(sets, "interrupted")


def observed(tester: Tester, items: Sequence[Hashable], sets: Sets) -> None:
    """Read back each configuration of bad's differences judged PASS that holds a set found whole:
    bad without the rest passed, so the rest is a fix that no hitting set of the family gives (one
    that meets every set holds a minimal hitting set, already checked), and that set is masked in
    bad. Keeps the minimal fixes of those and the family's, smallest first (see the module
    docstring). A fix read back so is whatever a run happened to leave out (bad without c and d,
    where reverting c alone fixes it), and once a set is seen masked the family's fixes are no
    longer minimal by reasoning either (a and c, where c alone does): so each fix is then shrunk,
    one member at a time, while bad without the rest still passes (`shrunk`). Runs nothing when
    no set is masked."""
    everything, order = frozenset(items), {d: i for i, d in enumerate(items)}
    found = [frozenset(f.members) for f in sets.found]

    def masking_runs() -> list[tuple[frozenset, frozenset]]:
        return [(key, everything - key) for key, outcome in tester.memo.items()
                if outcome is Outcome.PASS and isinstance(key, frozenset) and key < everything
                and any(members <= key for members in found)]
    masking = masking_runs()
    if not masking:
        return
    fixes = list(dict.fromkeys([*sets.fixes, *(fix for _, fix in masking)]))
    done: set[frozenset] = set()
    while todo := [f for f in _minimal(fixes, order) if f not in done]:
        for fix in todo:        # a shrinking run that passes may read back as a fix of its own
            done.add(fix)
            fixes.append(_shrunk(tester, everything, fix, order))
        masking = masking_runs()
        fixes = list(dict.fromkeys([*fixes, *(fix for _, fix in masking)]))
    sets.fixes = _minimal(fixes, order)
    for members in found:
        inside = [fix for key, fix in masking if members <= key]
        if inside:
            sets.masked.append((members, min(inside, key=len)))


def _minimal(fixes: Sequence[frozenset], order: dict) -> list[frozenset]:
    """The fixes no other one lies inside, smallest first (ties in input order)."""
    return sorted((f for f in fixes if not any(other < f for other in fixes)),
                  key=lambda f: (len(f), sorted(order[d] for d in f)))


def _shrunk(tester: Tester, everything: frozenset, fix: frozenset, order: dict) -> frozenset:
    """`fix` (bad without it PASSes) with each member dropped, in input order, while bad without
    what is left still PASSes: a 1-minimal fix. Each question is a fix-check run (memoised)."""
    for d in sorted(fix, key=order.__getitem__):
        if len(fix) > 1 and tester.test(everything - (fix - {d}), "fix-check") is Outcome.PASS:
            fix = fix - {d}
    return fix


def _settled(tester: Tester, items: Sequence[Hashable], culprits: Sequence[Hashable]) -> FailingSet:
    members, proof = settle(tester, list(culprits))
    order = {d: i for i, d in enumerate(items)}
    ordered = tuple(sorted(members, key=lambda d: order.get(d, len(order))))
    return FailingSet(ordered, proof, is_interaction(ordered, proof))


def _incomplete(sets: Sets, why: str) -> Sets:
    sets.complete, sets.note = False, why
    return sets


def _words(fix: frozenset, items: Sequence[Hashable]) -> str:
    return ", ".join(str(d) for d in items if d in fix)
