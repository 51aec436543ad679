"""In-memory oracles for the search tests: planted culprits, invalid hybrids, noise, arbitrary
truth tables. Nothing here runs a process."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Hashable, Iterable

from bisectk.outcome import Outcome

Oracle = Callable[[frozenset], Outcome]


def planted(*causes: Iterable[Hashable]) -> Oracle:
    """FAIL when any one cause is wholly applied (each cause is a set acting together)."""
    sets = [frozenset(cause) for cause in causes]
    return lambda config: Outcome.FAIL if any(s <= config for s in sets) else Outcome.PASS


def with_invalid(oracle: Oracle, rate: float, seed: int, keep_valid: Callable[[frozenset], bool]
                 ) -> Oracle:
    """UNRESOLVED for a deterministic `rate` share of configurations, except where
    `keep_valid(config)` says the configuration must stay runnable."""
    def judge(config: frozenset) -> Outcome:
        if not keep_valid(config):
            digest = hashlib.blake2b(f"{seed}:{sorted(map(str, config))}".encode(), digest_size=4)
            if int.from_bytes(digest.digest()) < rate * 2**32:
                return Outcome.UNRESOLVED
        return oracle(config)
    return judge


def flaky(oracle: Oracle, pass_rate: float, seed: int) -> Oracle:
    """A failing configuration passes anyway with probability `pass_rate`."""
    rng = random.Random(seed)

    def judge(config: frozenset) -> Outcome:
        outcome = oracle(config)
        if outcome is Outcome.FAIL and rng.random() < pass_rate:
            return Outcome.PASS
        return outcome
    return judge


def truth_table(items: list, seed: int, unresolved: float = 0.0) -> Oracle:
    """An arbitrary (non-monotone) function of the applied set, with the endpoints fixed:
    nothing applied PASSes, everything applied FAILs."""
    everything = frozenset(items)

    def judge(config: frozenset) -> Outcome:
        if not config:
            return Outcome.PASS
        if config == everything:
            return Outcome.FAIL
        draw = random.Random(f"{seed}:{sorted(map(str, config))}").random()
        if draw < unresolved:
            return Outcome.UNRESOLVED
        return Outcome.FAIL if draw < unresolved + (1 - unresolved) / 2 else Outcome.PASS
    return judge


class Counting:
    """Wraps an oracle and records every call, to check what the search really ran."""

    def __init__(self, oracle: Oracle):
        self.oracle, self.calls = oracle, []

    def __call__(self, config: frozenset) -> Outcome:
        self.calls.append(config)
        return self.oracle(config)


def said(result) -> list[str]:
    """A result's next steps as the reports word them (the search gives facts: search/result.py
    `advise`; report/advice.py puts them into words)."""
    from bisectk.report.advice import step_words
    return [step_words(s) for s in result.advice]
