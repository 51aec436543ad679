"""Linear history search: the first bad commit among candidates 0..N-1 of a chain. Pure: no git,
no processes.

Candidates are indices of a chain (the `--first-parent` mainline, or any history read as a list);
index 0 is the known good commit and N-1 the known bad one (the caller verified both before
searching). The *hypothesis* "b is the first bad commit" means every index >= b is bad and every
index < b is good, so b ranges over 1..N-1. On a history with merges that hypothesis is wrong (a
commit after b in a topological list need not contain b): search the DAG with `dag.py` instead.

Abstractions
------------
HistoryResult  -- the answer: first bad / last good index, runs, confidence, skipped indices,
                  remaining candidates when skips leave it ambiguous, observations, posterior.
candidate_groups -- hypotheses merged across untestable commits (only a run of b tells "b is
                  first bad" from "b+1 is first bad").
bisect()       -- deterministic binary search that skips away from clusters of untestable commits.

The Bayesian search is in bayes.py, k-way multisection in multisect.py, the dispatcher that picks
one in history.py. Observation, Gateway and the stop exceptions live in gateway.py.

Skips make hypotheses indistinguishable: `candidate_groups` merges b with b+1 whenever commit b is
untestable; a search ends when one group is certain (or, when flaky, holds `confidence` of the
posterior), and a group of more than one index is reported as ambiguous, like git's "only skipped
commits left".
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bisectk.outcome import Outcome
from bisectk.search.gateway import Gateway, Observation, Oracle

@dataclass(frozen=True)
class HistoryResult:
    """The answer of a history search.

    `candidates` are the indices that may still be the first bad commit; `confidence` is the
    probability that the true first bad commit is among them (1.0 for a deterministic search).
    `first_bad` is the last of them (the earliest commit known or believed to be bad) and
    `last_good` the index just before the first of them.
    """

    first_bad: int
    last_good: int
    runs: int                 # observations in the log, replayed ones and endpoint checks included
    confidence: float
    candidates: tuple[int, ...]
    skipped: tuple[int, ...] = ()
    observations: tuple[Observation, ...] = ()
    new_runs: int = 0         # oracle calls made by this search (not replayed)
    rounds: int = 0           # oracle rounds of this search: batches for multisection
    complete: bool = True     # False when stopped or out of budget before reaching confidence
    mode: str = "binary"
    fail_prob: float | None = None   # posterior mean of q, the failure probability of a bad commit
    posterior: tuple[tuple[int, float], ...] = ()   # (index, P(first bad = index)), best first

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_bad": self.first_bad, "last_good": self.last_good, "runs": self.runs,
            "new_runs": self.new_runs, "rounds": self.rounds,
            "confidence": round(self.confidence, 6), "candidates": list(self.candidates),
            "ambiguous": self.ambiguous, "skipped": list(self.skipped),
            "complete": self.complete, "mode": self.mode, "fail_prob": self.fail_prob,
            "posterior": [[i, round(p, 6)] for i, p in self.posterior],
            "observations": [o.to_json() for o in self.observations],
        }


def candidate_groups(n: int, skipped: Iterable[int]) -> list[tuple[int, int]]:
    """Hypotheses 1..n-1 merged into indistinguishable runs [start, end] (inclusive).

    b joins b+1 when commit b is untestable: only a run of b separates the two hypotheses.
    """
    skip = set(skipped)
    groups, start = [], 1
    for b in range(1, n):
        if b not in skip or b == n - 1:
            groups.append((start, b))
            start = b + 1
    return groups


def bounds(n: int, observations: Iterable[Observation]) -> tuple[int, int]:
    """(lo, hi): the highest PASS below the lowest FAIL, defaulting to the verified endpoints."""
    obs = list(observations)
    hi = min((o.index for o in obs if o.outcome is Outcome.FAIL), default=n - 1)
    lo = max((o.index for o in obs if o.outcome is Outcome.PASS and o.index < hi), default=0)
    return lo, hi


# Untestable commits come in runs (a broken build lasts until its fix). A two-state Markov chain
# along the history models that: runs of untestable commits of mean length CLUSTER_LEN, one commit
# in UNTESTABLE_RATE untestable overall. It only steers where to probe; answers never depend on it.
CLUSTER_LEN, UNTESTABLE_RATE = 8.0, 0.1


def testability(lo: int, hi: int, skipped: Iterable[int]) -> list[tuple[int, float]]:
    """(index, P(testable)) for each candidate strictly inside (lo, hi) not known untestable.

    lo and hi are known testable (they have results); the known skips inside are untestable. A
    candidate's probability follows from its nearest known neighbour on each side:
    P(ok at i | s_a, s_b) = T^(i-a)[s_a, ok] T^(b-i)[ok, s_b] / T^(b-a)[s_a, s_b], with
    T^n[x, y] = pi_y + lam^n (1[x = y] - pi_y) for the two-state chain.
    """
    inside = sorted({s for s in skipped if lo < s < hi})
    stay_bad = 1.0 - 1.0 / CLUSTER_LEN
    leave_ok = UNTESTABLE_RATE / (1.0 - UNTESTABLE_RATE) * (1.0 - stay_bad)
    lam = stay_bad - leave_ok                       # second eigenvalue of the chain
    pi = {True: 1.0 - UNTESTABLE_RATE, False: UNTESTABLE_RATE}   # True = testable

    def t(n: int, x: bool, y: bool) -> float:
        return pi[y] + lam ** n * ((1.0 if x == y else 0.0) - pi[y])

    known = [(lo, True), *[(s, False) for s in inside], (hi, True)]
    out: list[tuple[int, float]] = []
    for (a, sa), (b, sb) in zip(known, known[1:]):
        whole = t(b - a, sa, sb)
        out.extend((i, t(i - a, sa, True) * t(b - i, True, sb) / whole) for i in range(a + 1, b))
    return out


def _split_entropy(frac: float) -> float:
    return 0.0 if frac <= 0.0 or frac >= 1.0 else -(frac * math.log2(frac) + (1 - frac) * math.log2(1 - frac))


def skip_away(lo: int, hi: int, skipped: Sequence[int], seed: int = 0) -> int | None:
    """The next index to test strictly between lo and hi, or None when only skipped ones remain.

    With no known skip inside (lo, hi) it is the midpoint, as in git. Otherwise it is the
    candidate of greatest expected information per run, P(testable) x H(split): a commit next to
    a known skip is probably in the same broken run, so the probe moves away from clusters of
    untestable commits, further the longer the cluster looks, while staying near the middle.
    A seeded coin breaks ties, so a replay repeats the choice.
    """
    if hi - lo <= 1:
        return None
    if not any(lo < s < hi for s in skipped):
        return (lo + hi) // 2
    scored = [(p * _split_entropy((i - lo) / (hi - lo)), i) for i, p in testability(lo, hi, skipped)]
    if not scored:
        return None
    best = max(score for score, _ in scored)
    ties = [i for score, i in scored if score >= best * (1 - 1e-9)]
    return random.Random(seed * 1_000_003 + lo * 7919 + hi * 104_729 + len(skipped)).choice(ties)


def interval_result(gw: Gateway, complete: bool, mode: str) -> HistoryResult:
    lo, hi = bounds(gw.n, gw.observations)
    return HistoryResult(
        first_bad=hi, last_good=lo, runs=len(gw.observations), confidence=1.0,
        candidates=tuple(range(lo + 1, hi + 1)), skipped=gw.skipped,
        observations=tuple(gw.observations), new_runs=gw.new_runs, rounds=gw.rounds,
        complete=complete, mode=mode)


def bisect(n: int, oracle: Oracle, *, observations: Iterable[Observation | Sequence[Any]] = (),
           on_observation: Callable[[Observation], None] | None = None,
           max_runs: int | None = None, seed: int = 0) -> HistoryResult:
    """Deterministic binary search for the first bad index, skipping UNRESOLVED commits.

    Every probe lies strictly inside (last PASS, first FAIL), so each observation shrinks the
    interval or adds a skip; the loop ends in at most n-2 runs even if everything is skipped.
    """
    gw = Gateway(n, oracle, observations=observations, on_observation=on_observation)

    def loop() -> None:
        while max_runs is None or gw.new_runs < max_runs:
            lo, hi = bounds(n, gw.observations)
            probe = skip_away(lo, hi, gw.skipped, seed)
            if probe is None:
                return
            gw.test(probe)

    def summarise(finished: bool) -> HistoryResult:
        lo, hi = bounds(n, gw.observations)
        done = finished and skip_away(lo, hi, gw.skipped, seed) is None
        return interval_result(gw, done, "binary")

    return gw.guarded(loop, summarise)
