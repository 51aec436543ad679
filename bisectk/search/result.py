"""What an ablation concludes, in the shape the report needs.

Abstractions
------------
Finding        -- a strategy's raw answer: a failing set of culprits (with an optional context
                  applied on both sides, from dd isolation) and other failing sets it noticed.
Effect         -- one row of the key-differences table: the outcome when the difference is
                  flipped alone onto good, when it is removed from bad, and its role.
AblationResult -- the settled answer: 1-minimal culprits, the interaction verdict and its
                  proof, effects, every attempt, runs executed, unresolved configurations, the
                  flakiness rule, and what to try next as facts (`advice`: report/advice.py
                  words each step; nothing here is prose).

Everything here is derived from the Tester's memo and attempts, so a result can be rebuilt
from a replayed session.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bisectk.outcome import Outcome
from bisectk.search.tester import Attempt, Rule, Tester

if TYPE_CHECKING:
    from bisectk.search.sets import FailingSet, Sets


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
    role: str                # 'culprit': in every failing set found, and bad without it was not
                             # seen to FAIL; 'member': in some failing set(s) only, or bad
                             # without it still FAILS (`sets` says which); 'context';
                             # 'unresolved' (in the smallest failing set of a stopped search,
                             # necessity not yet shown); 'cleared': in no failing set found, and a
                             # failing configuration without it was observed; 'unknown' else
    sets: tuple[int, ...] = ()   # the failing sets (1-based) it belongs to


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
    rule: Rule | None
    complete: bool                       # False when the search was stopped early
    advice: list[dict]                   # what to try next, as facts (advise)
    suspects: tuple = ()                 # stopped search: members of the smallest failing set
                                         # not yet shown necessary (unknown, never culprits)
    stop_reason: str = ""
    sets: list[FailingSet] = field(default_factory=list)   # every failing set found; [0] is culprits
    fixes: list[frozenset] = field(default_factory=list)   # reverting it from bad was seen to PASS
    open_fixes: list[frozenset] = field(default_factory=list)  # bad without it FAILED or was
                                         # UNRESOLVED, and no set behind that was isolated
    sets_complete: bool | None = None    # the sets explain every failure (None: not searched)
    sets_note: str = ""                  # why they may not
    masked: list[tuple[frozenset, frozenset]] = field(default_factory=list)  # (a set, a fix that
                                         # leaves it in bad): a set another difference of bad masks
    confirmation: Any = None             # confirm.SetConfirmation: the runs that confirmed the answer
    switched: tuple | None = None        # (configuration, outcome) whose re-run contradicted a
                                         # deterministic answer: the search went on under the flake rule
    unused: int = 0                      # runs made ahead of the search (ahead.py) that it never took
    taken_ahead: int = 0                 # runs made ahead of the search that it took when it asked

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
            "unused_runs": self.unused,
            "taken_ahead": self.taken_ahead,
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
            "sets": [{"members": names(s.members), "interaction": s.interaction,
                      "proof": [{"config": names(p), "outcome": o.value} for p, o in s.proof.items()]}
                     for s in self.sets],
            "fixes": [names(f) for f in self.fixes],
            "open_fixes": [names(f) for f in self.open_fixes],
            "sets_complete": self.sets_complete,
            "sets_note": self.sets_note,
            "flakiness_rule": self.rule.to_dict() if self.rule else None,
            "confirmation": None if self.confirmation is None else {
                "repeats": self.confirmation.repeats, "ok": self.confirmation.ok,
                "checks": [{"config": names(k), "expected": e, "got": g} for k, e, g in self.confirmation.checks],
                "contradicted": (None if self.confirmation.contradicted is None else
                                 {"config": names(self.confirmation.contradicted[0]),
                                  "got": self.confirmation.contradicted[1]})},
            "switched": None if self.switched is None else {"config": names(self.switched[0]),
                                                            "got": self.switched[1]},
            "advice": list(self.advice),
        }


def build_result(strategy: str, differences: Sequence[Hashable], tester: Tester,
                 culprits: Sequence[Hashable], context: frozenset,
                 proof: dict[frozenset, Outcome], interaction: bool,
                 also_failing: Sequence[frozenset] = (), complete: bool = True,
                 suspects: Sequence[Hashable] = (), stop_reason: str = "",
                 sets: Sets | None = None) -> AblationResult:
    everything, chosen, unsure = frozenset(differences), set(culprits), set(suspects)
    ordered = tuple(d for d in differences if d in chosen)
    found = [tuple(s.members) for s in sets.found] if sets is not None else ([ordered] if ordered else [])
    cleared = set().union(*(everything - key for key in tester.failing()
                            if isinstance(key, frozenset)))
    # bad without one difference, by the difference: read from the judged keys once (building
    # `everything - {d}` per difference is quadratic: 1.5 s at 8,192 factors)
    n = len(everything)
    without = {next(iter(everything - key)): outcome for key, outcome in tester.memo.items()
               if isinstance(key, frozenset) and len(key) == n - 1 and key <= everything}
    effects = {d: _effect(d, tester, without.get(d), found, unsure, context, cleared) for d in differences}
    unresolved = [a for a in tester.attempts if a.outcome is Outcome.UNRESOLVED]
    others = ([frozenset(s) for s in found[1:]] if sets is not None
              else [s for s in also_failing if s != frozenset(ordered)])
    result = AblationResult(strategy, tuple(differences), ordered, interaction, frozenset(context),
                            dict(proof), effects, list(tester.attempts), tester.runs, unresolved,
                            others, tester.rule, complete, [], tuple(d for d in differences if d in unsure),
                            stop_reason)
    if sets is not None:
        result.sets, result.fixes = list(sets.found), list(sets.fixes)
        result.open_fixes = [*sets.remaining, *sets.unjudged]
        result.sets_complete, result.sets_note = sets.complete, sets.note
        result.masked = list(sets.masked)
    result.advice = advise(result)
    return result


def _effect(d: Hashable, tester: Tester, removed: Outcome | None, found: list[tuple], unsure: set,
            context: frozenset, cleared: set) -> Effect:
    """One row of the table (`removed`: the verdict on bad without `d`, if judged); its role
    follows from its cells and the sets, never against them: a difference bad still FAILS
    without is never a culprit on its own, and one bad PASSES without is never cleared."""
    alone = tester.outcome_of(frozenset({d}))
    member_of = tuple(i for i, s in enumerate(found, 1) if d in s)
    if member_of:
        role = "culprit" if len(member_of) == len(found) and removed is not Outcome.FAIL else "member"
    elif d in unsure:
        role = "unresolved"
    elif d in context:
        role = "context"
    elif d in cleared and removed is not Outcome.PASS:
        role = "cleared"
    else:
        role = "unknown"
    return Effect(alone, removed, role, member_of)


GOOD_FAILED = "the good configuration failed in the search"   # ablate's stop reason for an empty answer
UNDECIDED = ("the flake rule could not tell whether a configuration without a member fails at the bad or "
             "the good rate")   # ablate's stop reason for a set kept by a verdict the rule never gave


def advise(result: AblationResult) -> list[dict]:
    """What to try next, as facts ({"step": kind, ...}); each claim follows from a configuration
    that was run (a fix is offered as shown only when bad without it passed). report/advice.py
    puts each step into words."""
    names = [str(c) for c in result.culprits]
    steps: list[dict] = []
    several = len(result.sets) > 1
    if not result.complete and result.stop_reason == GOOD_FAILED:
        steps.append({"step": "good_failed", "runs": result.runs})
    elif not result.complete:
        step = {"step": "stopped", "runs": result.runs, "reason": result.stop_reason, "shown": names,
                "unsure": [str(c) for c in result.suspects], "of": len(result.differences)}
        if result.stop_reason == UNDECIDED:     # a resume would roll the same verdicts again
            step["undecided"] = True
        against = getattr(result.confirmation, "contradicted", None)
        if result.stop_reason == "unconfirmed" and against is not None:
            # a resume would run the same confirmation again: the contradiction is the news
            step["contradicted"] = {"config": [str(d) for d in result.differences if d in against[0]],
                                    "got": against[1],
                                    "two_rate": (result.rule.to_dict().get("kind") == "two-rate"
                                                 if result.rule is not None else False)}
        steps.append(step)
    elif several:
        ordered = [d for d in result.differences]
        steps.append({"step": "sets", "sets": [[str(m) for m in s.members] for s in result.sets],
                      "masked": [[[str(d) for d in ordered if d in m], [str(d) for d in ordered if d in f]]
                                 for m, f in result.masked]})
    elif len(result.culprits) == 1 and not result.context:
        steps.append({"step": "alone", "culprit": names[0]})
    elif result.interaction:
        removed = [result.effects[c].removed for c in result.culprits]
        steps.append({"step": "together", "culprits": names,
                      "each_revert_fixes": all(o is Outcome.PASS for o in removed)})
    elif len(result.culprits) > 1:
        steps.append({"step": "proof_incomplete", "culprits": names,
                      "unresolved": sum(1 for o in result.proof.values() if o is not Outcome.PASS)})
    if result.complete and several and result.fixes:
        steps.append({"step": "fixes", "fixes": [[str(d) for d in result.differences if d in f] for f in result.fixes]})
        still = [str(d) for d in result.differences if result.effects[d].role == "member"
                 and result.effects[d].removed is Outcome.FAIL]
        if still:
            steps.append({"step": "not_enough", "members": still})
    if result.complete and result.sets_complete is False:
        steps.append({"step": "another_cause", "note": result.sets_note})
    if result.context:
        steps.append({"step": "context", "context": [str(c) for c in result.context]})
    if result.complete and any(result.effects[c].removed is None for c in result.culprits):
        steps.append({"step": "confirm_fix"})
    if result.also_failing and not result.sets:
        steps.append({"step": "other_sets", "sets": [[str(d) for d in sorted(s, key=result.differences.index)]
                                                     for s in result.also_failing]})
    if result.unresolved:
        steps.append({"step": "unresolved", "count": len(result.unresolved)})
    if result.rule is not None and hasattr(result.rule, "describe"):   # a two-rate rule is worded by report/
        steps.append({"step": "intermittent", "rule": result.rule.describe()})
    return steps


def _value(outcome: Outcome | None) -> str | None:
    return outcome.value if outcome is not None else None


def _jsonable(item: Hashable) -> Any:
    return item if isinstance(item, (str, int, float, bool)) or item is None else repr(item)


def _config(key: Hashable, names) -> Any:
    return names(key) if isinstance(key, frozenset) else _jsonable(key)
