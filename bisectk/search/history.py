"""History search: find the first bad commit among candidates 0..N-1. Pure: no git, no processes.

Candidates are indices in topological order; index 0 is the known good commit and N-1 the known
bad one (the caller verified both before searching). The *hypothesis* "b is the first bad commit"
means every index >= b is bad and every index < b is good, so b ranges over 1..N-1.

Abstractions
------------
Observation    -- one run of one candidate, (index, Outcome). The only thing a search persists;
                  bounds, posterior and result are all derived from a list of them, which is why
                  every search accepts `observations=` to resume or replay a log.
Gateway        -- the one door to the oracle: memoises, counts runs, records observations,
                  calls `on_observation`, and lets a stop (StopSearch or KeyboardInterrupt raised
                  by the oracle or the callback) surface as SearchStopped carrying the best result.
HistoryResult  -- the answer: first bad / last good index, runs, confidence, skipped indices,
                  remaining candidates when skips leave it ambiguous, observations, posterior.
bisect()       -- deterministic binary search that skips away from clusters of untestable commits.
search_history() -- the dispatcher the CLI calls: bisect(), bayes_bisect() (bayes.py) or the k-way
                  multisect()/bayes_multisect() (multisect.py).

Skips make hypotheses indistinguishable: telling "b is first bad" from "b+1 is first bad" needs a
run of commit b itself. `candidate_groups` merges b with b+1 whenever commit b is untestable; a
search ends when one group is certain (or, when flaky, holds `confidence` of the posterior), and a
group of more than one index is reported as ambiguous, like git's "only skipped commits left".
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from bisectk.outcome import Outcome

Oracle = Callable[[int], Outcome]
BatchOracle = Callable[[list[int]], list[Outcome]]


class Observation(NamedTuple):
    index: int
    outcome: Outcome

    def to_json(self) -> list[Any]:
        return [self.index, self.outcome.value]

    @classmethod
    def coerce(cls, item: Observation | Sequence[Any]) -> Observation:
        """Accept an Observation, an (index, Outcome) pair or a logged [index, "pass"] pair."""
        index, outcome = item
        return cls(int(index), Outcome(outcome))


class StopSearch(Exception):
    """Raise from the oracle or `on_observation` to end a search early with its best answer."""


class SearchStopped(Exception):
    """A search ended early; `result` is the best answer so far (`result.complete` is False)."""

    def __init__(self, result: HistoryResult, interrupted: bool):
        super().__init__("search interrupted" if interrupted else "search stopped")
        self.result, self.interrupted = result, interrupted


class InconsistentObservations(ValueError):
    """The observations contradict the model, e.g. the known good commit failed."""


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


class Gateway:
    """The single path to the oracle.

    Memoisation: a deterministic search never re-runs an index. A flaky one (`repeat=True`)
    re-runs PASS and FAIL on purpose (repeats are its evidence), but an UNRESOLVED commit stays
    untestable: a build failure does not go away by trying again.
    """

    def __init__(self, n: int, oracle: Oracle | None = None, *, batch_oracle: BatchOracle | None = None,
                 observations: Iterable[Observation | Sequence[Any]] = (), repeat: bool = False,
                 on_observation: Callable[[Observation], None] | None = None):
        if n < 2:
            raise ValueError(f"need at least 2 candidates (good and bad), got {n}")
        self.n, self.oracle, self.batch_oracle, self.repeat = n, oracle, batch_oracle, repeat
        self.observations: list[Observation] = [Observation.coerce(o) for o in observations]
        for obs in self.observations:
            self._check_index(obs.index)
        self.listeners: list[Callable[[Observation], None]] = []
        self.on_observation = on_observation
        self.new_runs = 0
        self.rounds = 0

    def _check_index(self, i: int) -> None:
        if not 0 <= i < self.n:
            raise IndexError(f"candidate index {i} outside 0..{self.n - 1}")

    @property
    def skipped(self) -> tuple[int, ...]:
        """Untestable indices: UNRESOLVED and never a PASS or FAIL (a replayed log may hold both)."""
        tested = {o.index for o in self.observations if o.outcome is not Outcome.UNRESOLVED}
        return tuple(sorted({o.index for o in self.observations
                             if o.outcome is Outcome.UNRESOLVED and o.index not in tested}))

    def known(self, i: int) -> Outcome | None:
        """The memoised outcome of `i`, or None when it must (or may) be run."""
        for obs in self.observations:
            if obs.index == i and (not self.repeat or obs.outcome is Outcome.UNRESOLVED):
                return obs.outcome
        return None

    def _record(self, i: int, outcome: Any) -> Outcome:
        if not isinstance(outcome, Outcome):
            raise TypeError(f"oracle returned {outcome!r} for {i}, expected an Outcome")
        obs = Observation(i, outcome)
        self.observations.append(obs)
        self.new_runs += 1
        for listener in self.listeners:     # the model first, so the callback sees a consistent state
            listener(obs)
        if self.on_observation is not None:
            self.on_observation(obs)
        return outcome

    def test(self, i: int) -> Outcome:
        self._check_index(i)
        memo = self.known(i)
        if memo is not None:
            return memo
        if self.oracle is None:
            return self.test_many([i])[0]
        self.rounds += 1
        return self._record(i, self.oracle(i))

    def test_many(self, indices: Sequence[int]) -> list[Outcome]:
        """One round: the indices not memoised go to the batch oracle together, in order."""
        for i in indices:
            self._check_index(i)
        memo = [self.known(i) for i in indices]
        todo = [i for i, m in zip(indices, memo) if m is None]
        fresh: list[Outcome] = []
        if todo:
            self.rounds += 1
            if self.batch_oracle is not None:
                outcomes = list(self.batch_oracle(list(todo)))
                if len(outcomes) != len(todo):
                    raise ValueError(f"batch oracle returned {len(outcomes)} outcomes for {len(todo)}")
            else:
                outcomes = [self.oracle(i) for i in todo]  # type: ignore[misc]
            fresh = [self._record(i, o) for i, o in zip(todo, outcomes)]
        # `todo` kept the order of `indices`, so fresh outcomes fill the gaps in that order.
        it = iter(fresh)
        return [m if m is not None else next(it) for m in memo]

    def guarded(self, loop: Callable[[], None], summarise: Callable[[bool], HistoryResult]) -> HistoryResult:
        """Run a search loop; a stop from inside the oracle becomes SearchStopped(best so far)."""
        try:
            loop()
        except (StopSearch, KeyboardInterrupt) as exc:
            raise SearchStopped(summarise(False), isinstance(exc, KeyboardInterrupt)) from exc
        return summarise(True)


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


@dataclass
class SearchOptions:
    """What the CLI chooses; passed through to the algorithm that search_history picks."""

    flaky: bool = False
    jobs: int = 1
    confidence: float = 0.99
    max_runs: int | None = None
    fail_prob: float | None = None      # known q; else estimated (Beta prior over a grid)
    q_prior: tuple[float, float] = (1.0, 2.0)
    seed: int = 0


def search_history(n: int, oracle: Oracle | None = None, *, batch_oracle: BatchOracle | None = None,
                   options: SearchOptions | None = None,
                   observations: Iterable[Observation | Sequence[Any]] = (),
                   on_observation: Callable[[Observation], None] | None = None) -> HistoryResult:
    """Pick the algorithm: binary (default), Bayesian (`flaky`), k-way (`jobs` > 1)."""
    # Imported here: bayes.py and multisect.py import this module's types.
    from bisectk.search.bayes import bayes_bisect
    from bisectk.search.multisect import bayes_multisect, multisect

    opt = options or SearchOptions()
    if oracle is None and batch_oracle is None:
        raise ValueError("search_history needs an oracle or a batch oracle")
    if opt.jobs > 1 or oracle is None:
        if batch_oracle is None:
            single = oracle
            batch_oracle = lambda idx: [single(i) for i in idx]  # noqa: E731
        if opt.flaky:
            return bayes_multisect(n, batch_oracle, jobs=opt.jobs, confidence=opt.confidence,
                                   observations=observations, on_observation=on_observation,
                                   max_runs=opt.max_runs, fail_prob=opt.fail_prob, q_prior=opt.q_prior)
        return multisect(n, batch_oracle, jobs=opt.jobs, observations=observations,
                         on_observation=on_observation, max_runs=opt.max_runs)
    if opt.flaky:
        return bayes_bisect(n, oracle, confidence=opt.confidence, observations=observations,
                            on_observation=on_observation, max_runs=opt.max_runs,
                            fail_prob=opt.fail_prob, q_prior=opt.q_prior)
    return bisect(n, oracle, observations=observations, on_observation=on_observation,
                  max_runs=opt.max_runs, seed=opt.seed)
