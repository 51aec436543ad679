"""What an ablation concludes, in the shape the report needs.

Abstractions
------------
Finding        -- a strategy's raw answer: a failing set of culprits (with an optional context
                  applied on both sides, from dd isolation) and other failing sets it noticed.
Effect         -- one row of the key-differences table: the outcome when the difference is
                  flipped alone onto good, when it is removed from bad, and its role.
AblationResult -- the settled answer: 1-minimal culprits, the interaction verdict and its
                  proof, effects, every attempt, runs executed, unresolved configurations, the
                  flakiness rule, and next steps in words.

Everything here is derived from the Tester's memo and attempts, so a result can be rebuilt
from a replayed session.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.tester import Attempt, Tester


@dataclass
class Finding:
    """A strategy's answer before settling: context | culprits FAILs (observed)."""

    culprits: list
    context: frozenset = frozenset()
    also_failing: list[frozenset] = field(default_factory=list)


@dataclass(frozen=True)
class Effect:
    """A key-differences row; outcomes are None where that configuration was never run."""

    alone: Outcome | None    # good endpoint with only this difference applied
    removed: Outcome | None  # bad endpoint with only this difference reverted
    role: str                # 'culprit', 'context', 'unknown', 'unresolved' (in the smallest
                             # failing set of a stopped search, necessity not yet shown), or
                             # 'cleared': a failing configuration without it was observed


@dataclass
class AblationResult:
    strategy: str
    differences: tuple
    culprits: tuple                      # 1-minimal failure-inducing set, in input order; in a
                                         # stopped search only the members shown necessary
    interaction: bool                    # >1 culprit and every proof subset PASSed
    context: frozenset                   # applied on both sides (dd isolation); else empty
    proof: dict[frozenset, Outcome]      # proper subsets of the culprits -> outcome
    effects: dict[Hashable, Effect]
    attempts: list[Attempt]
    runs: int                            # oracle runs executed, repeats included
    unresolved: list[Attempt]            # invalid, broken or differently failing configurations
    also_failing: list[frozenset]        # other failing sets seen (possible independent causes)
    rule: ConfidenceRule | None
    complete: bool                       # False when the search was stopped early
    next_steps: list[str]
    suspects: tuple = ()                 # stopped search: members of the smallest failing set
                                         # not yet shown necessary (unknown, never culprits)
    stop_reason: str = ""

    @property
    def fail_config(self) -> frozenset:
        """The smallest failing configuration: context plus culprits (plus, in a stopped search,
        the members not yet resolved)."""
        return self.context | frozenset(self.culprits) | frozenset(self.suspects)

    def to_dict(self) -> dict[str, Any]:
        order = {d: i for i, d in enumerate(self.differences)}

        def names(items) -> list:
            return [_jsonable(x) for x in sorted(items, key=order.__getitem__)]

        return {
            "strategy": self.strategy,
            "culprits": names(self.culprits),
            "unresolved_factors": names(self.suspects),
            "interaction": self.interaction,
            "context": names(self.context),
            "complete": self.complete,
            "runs": self.runs,
            "proof": [{"config": names(s), "outcome": o.value} for s, o in self.proof.items()],
            "effects": [{"difference": _jsonable(d), "alone": _value(e.alone),
                         "removed": _value(e.removed), "role": e.role}
                        for d, e in self.effects.items()],
            "attempts": [{"index": a.index, "config": _config(a.config, names), "phase": a.phase,
                          "outcome": a.outcome.value, "runs": a.runs, "cached": a.cached,
                          "observations": [o.value for o in a.observations]}
                         for a in self.attempts],
            "unresolved": [_config(a.config, names) for a in self.unresolved],
            "also_failing": [names(s) for s in self.also_failing],
            "flakiness_rule": self.rule.to_dict() if self.rule else None,
            "next_steps": list(self.next_steps),
        }


def build_result(strategy: str, differences: Sequence[Hashable], tester: Tester,
                 culprits: Sequence[Hashable], context: frozenset,
                 proof: dict[frozenset, Outcome], interaction: bool,
                 also_failing: Sequence[frozenset] = (), complete: bool = True,
                 suspects: Sequence[Hashable] = (), stop_reason: str = "") -> AblationResult:
    everything, chosen, unsure = frozenset(differences), set(culprits), set(suspects)
    ordered = tuple(d for d in differences if d in chosen)
    cleared = set().union(*(everything - key for key in tester.failing()
                            if isinstance(key, frozenset)))
    effects = {}
    for d in differences:
        role = ("culprit" if d in ordered else "unresolved" if d in unsure else "context" if d in context
                else "cleared" if d in cleared else "unknown")
        effects[d] = Effect(tester.outcome_of(frozenset({d})),
                            tester.outcome_of(everything - {d}), role)
    unresolved = [a for a in tester.attempts if a.outcome is Outcome.UNRESOLVED]
    result = AblationResult(strategy, tuple(differences), ordered, interaction, frozenset(context),
                            dict(proof), effects, list(tester.attempts), tester.runs, unresolved,
                            [s for s in also_failing if s != frozenset(ordered)], tester.rule,
                            complete, [], tuple(d for d in differences if d in unsure), stop_reason)
    result.next_steps = suggest_next_steps(result)
    return result


def suggest_next_steps(result: AblationResult) -> list[str]:
    """A short, concrete list of what to try next, in the voice of a debug log."""
    names = ", ".join(str(c) for c in result.culprits)
    steps: list[str] = []
    if not result.complete:
        unsure = ", ".join(str(c) for c in result.suspects)
        steps.append(f"The search stopped after {result.runs} runs ({result.stop_reason or 'interrupted'}); "
                     f"the smallest failing configuration so far has "
                     f"{len(result.culprits) + len(result.suspects)} of {len(result.differences)} "
                     f"differences" + (f", of which {names} shown necessary" if names else "")
                     + (f"; not yet resolved: {unsure}" if unsure else "") + ". Resume to finish.")
    elif len(result.culprits) == 1 and not result.context:
        steps.append(f"{names} alone on the good configuration reproduces the failure: "
                     f"start from the code paths it changes.")
    elif result.interaction:
        steps.append(f"{names} fail only together (every proper subset passes): look for the "
                     f"state or assumption they share; fixing any one of them may suffice.")
    elif len(result.culprits) > 1:
        missing = [s for s, o in result.proof.items() if o is not Outcome.PASS]
        steps.append(f"{names} form a 1-minimal failing set, but the interaction proof is "
                     f"incomplete: {len(missing)} proper subset(s) stayed unresolved after their "
                     f"re-runs (they do not build, are invalid, or fail differently every time).")
    if result.context:
        steps.append(f"The isolated difference fails with "
                     f"{', '.join(str(c) for c in result.context)} also applied; run the "
                     f"'adaptive' strategy to learn which of those it needs.")
    if result.complete and any(result.effects[c].removed is None for c in result.culprits):
        steps.append("Confirm the fix: run the bad configuration with the culprits reverted "
                     "one at a time ('ofat' measures this for every difference).")
    if result.also_failing:
        steps.append(f"{len(result.also_failing)} other failing set(s) were seen: there may be "
                     f"more than one cause.")
    if result.unresolved:
        steps.append(f"{len(result.unresolved)} configuration(s) were UNRESOLVED (invalid, "
                     f"build failure or a different failure): a different failure may be a "
                     f"second bug worth its own ablation.")
    if result.rule is not None:
        steps.append(f"The failure is intermittent: {result.rule.describe()}.")
    return steps


def _value(outcome: Outcome | None) -> str | None:
    return outcome.value if outcome is not None else None


def _jsonable(item: Hashable) -> Any:
    return item if isinstance(item, (str, int, float, bool)) or item is None else repr(item)


def _config(key: Hashable, names) -> Any:
    return names(key) if isinstance(key, frozenset) else _jsonable(key)
