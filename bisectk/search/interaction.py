"""Settling a candidate culprit set: 1-minimality (routed around UNRESOLVED) and the
interaction proof.

Abstractions
------------
minimize_removals -- shrink a failing set until removing any single member no longer fails
                     (ddmin's 1-minimality), trying pairs where a single removal is unresolved.
prove_interaction -- test the proper subsets of a multi-member culprit set; all PASS makes it an
                     interaction (the members cause the failure only together).
settle            -- both, repeated until stable: a failing proper subset found by the proof is a
                     smaller failing set, so minimisation resumes from it.

All sets are tested with a fixed `context` applied too (empty except after dd isolation, where
the context is the passing configuration the isolated difference is added to).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations

from bisectk.outcome import Outcome
from bisectk.search.tester import Tester

FULL_PROOF_MAX = 4  # up to 4 culprits every proper subset is tested (at most 14 configurations)


def minimize_removals(tester: Tester, culprits: Sequence[Hashable],
                      context: frozenset = frozenset()) -> list:
    """A failing subset of `culprits` from which no single removal FAILs (1-minimal).

    Precondition: context | culprits FAILs. Invariant: context | members FAILs, because members
    only ever shrink to a set that was just observed to FAIL. On return every single removal
    was tested and did not FAIL (it passed, or stayed UNRESOLVED even with a second removal).
    """
    members = list(culprits)
    shrunk = True
    while shrunk:
        shrunk = False
        for member in members:
            rest = [m for m in members if m != member]
            outcome = tester.test(context | frozenset(rest), "minimality")
            if outcome is Outcome.FAIL:
                members, shrunk = rest, True
                break
            if outcome is Outcome.UNRESOLVED:
                # The removal cannot be judged; an invalid hybrid often becomes valid when a
                # second member goes too, and a failure then shows both were unnecessary.
                smaller = _remove_pairs(tester, members, member, context)
                if smaller is not None:
                    members, shrunk = smaller, True
                    break
    return members


def _remove_pairs(tester: Tester, members: list, member: Hashable,
                  context: frozenset) -> list | None:
    for other in members:
        if other == member:
            continue
        rest = [m for m in members if m not in (member, other)]
        if rest and tester.test(context | frozenset(rest), "route-around") is Outcome.FAIL:
            return rest
    return None


def proper_subsets(members: Sequence[Hashable]) -> list[frozenset]:
    """The subsets the interaction proof tests: all proper non-empty ones for small sets
    (largest first), only the maximal ones beyond FULL_PROOF_MAX."""
    smallest = 1 if len(members) <= FULL_PROOF_MAX else len(members) - 1
    return [frozenset(combo) for size in range(len(members) - 1, smallest - 1, -1)
            for combo in combinations(members, size)]


def prove_interaction(tester: Tester, members: Sequence[Hashable],
                      context: frozenset = frozenset()) -> dict[frozenset, Outcome]:
    """Outcome of every proof subset (with context applied); stops at the first FAIL."""
    proof: dict[frozenset, Outcome] = {}
    if len(members) < 2:
        return proof
    for subset in proper_subsets(members):
        proof[subset] = tester.test(context | subset, "interaction-proof")
        if proof[subset] is Outcome.FAIL:
            break
    return proof


def settle(tester: Tester, culprits: Sequence[Hashable], context: frozenset = frozenset()
           ) -> tuple[list, dict[frozenset, Outcome]]:
    """Minimise, then prove; a failing proof subset restarts minimisation from that subset.

    Terminates: each restart begins from a strictly smaller failing set.
    Returns (members, proof) where `proof` belongs to the final members.
    """
    members = list(culprits)
    while True:
        members = minimize_removals(tester, members, context)
        proof = prove_interaction(tester, members, context)
        failing = [subset for subset, outcome in proof.items() if outcome is Outcome.FAIL]
        if not failing:
            return members, proof
        members = [m for m in members if m in failing[0]]


def is_interaction(members: Sequence[Hashable], proof: dict[frozenset, Outcome]) -> bool:
    """More than one member and every proof subset observed to PASS."""
    return (len(members) > 1 and len(proof) == len(proper_subsets(members))
            and all(outcome is Outcome.PASS for outcome in proof.values()))
