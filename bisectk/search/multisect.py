"""k-way multisection: K probes per round, for K workers that run in parallel.

Abstractions
------------
multisect_probes() -- the K probes of one deterministic round: they cut the untested candidates
                      inside (last PASS, first FAIL) into K+1 near-equal parts.
multisect()        -- the deterministic search. A round leaves one part, so H hypotheses become at
                      most ceil(H / (K+1)), and a search without skips takes at most
                      ceil(log_{K+1} N) + 1 rounds (the +1 covers the ceilings of uneven parts).
bayes_multisect()  -- the flaky search: each round's K probes are chosen greedily by their *joint*
                      expected information (FirstBadPosterior.next_batch), repeats allowed.

Both take a batch oracle `Callable[[list[int]], list[Outcome]]`; the caller runs a batch in
parallel and returns the outcomes in the order asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bisectk.search.bayes import FirstBadPosterior, default_budget, posterior_result
from bisectk.search.gateway import BatchOracle, Gateway, Observation
from bisectk.search.linear import HistoryResult, bounds, interval_result, testability


def multisect_probes(lo: int, hi: int, skipped: Iterable[int], k: int) -> list[int]:
    """Up to k indices strictly inside (lo, hi), none skipped; [] when only skips remain.

    Without known skips inside, probe j sits after j/(k+1) of the candidates, so the k+1 parts
    differ in size by at most one. With skips, each probe is the candidate near its target that
    is most likely testable (P(testable) x closeness), since untestable commits cluster.
    """
    if k < 1:
        raise ValueError(f"jobs must be >= 1, got {k}")
    skip = {s for s in skipped if lo < s < hi}
    cands = [i for i in range(lo + 1, hi) if i not in skip]
    if len(cands) <= k:
        return cands
    if not skip:
        return [cands[(j * (len(cands) + 1)) // (k + 1) - 1] for j in range(1, k + 1)]
    odds = testability(lo, hi, skip)
    width = (hi - lo) / (k + 1)
    probes: list[int] = []
    for j in range(1, k + 1):
        target = lo + j * width

        def score(item: tuple[int, float]) -> float:
            i, p = item
            return p * max(1.0 - ((i - target) / width) ** 2, 1e-6)
        best = max((item for item in odds if item[0] not in probes), key=score)
        probes.append(best[0])
    return sorted(probes)


def multisect(n: int, batch_oracle: BatchOracle, *, jobs: int,
              observations: Iterable[Observation | Sequence[Any]] = (),
              on_observation: Callable[[Observation], None] | None = None,
              max_runs: int | None = None) -> HistoryResult:
    """Deterministic k-way search; `result.rounds` counts the batches sent to the oracle."""
    gw = Gateway(n, batch_oracle=batch_oracle, observations=observations, on_observation=on_observation)

    def loop() -> None:
        while max_runs is None or gw.new_runs < max_runs:
            lo, hi = bounds(n, gw.observations)
            probes = multisect_probes(lo, hi, gw.skipped, jobs)
            if not probes:
                return
            if max_runs is not None:
                probes = probes[:max(max_runs - gw.new_runs, 1)]
            gw.test_many(probes)

    def summarise(finished: bool) -> HistoryResult:
        lo, hi = bounds(n, gw.observations)
        done = finished and not multisect_probes(lo, hi, gw.skipped, jobs)
        return interval_result(gw, done, f"multisect-{jobs}")

    return gw.guarded(loop, summarise)


def bayes_multisect(n: int, batch_oracle: BatchOracle, *, jobs: int, confidence: float = 0.99,
                    observations: Iterable[Observation | Sequence[Any]] = (),
                    on_observation: Callable[[Observation], None] | None = None,
                    max_runs: int | None = None, fail_prob: float | None = None,
                    q_prior: tuple[float, float] = (1.0, 2.0), grid: int = 100) -> HistoryResult:
    """Flaky k-way search: rounds of `jobs` probes of greatest joint information."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    gw = Gateway(n, batch_oracle=batch_oracle, observations=observations, repeat=True,
                 on_observation=on_observation)
    model = FirstBadPosterior.from_observations(n, gw.observations, fail_prob=fail_prob,
                                                q_prior=q_prior, grid=grid)
    gw.listeners.append(model.observe)
    budget = default_budget(n) if max_runs is None else max_runs

    def loop() -> None:
        while gw.new_runs < budget and model.best_group()[2] < confidence:
            probes = model.next_batch(max(1, min(jobs, budget - gw.new_runs)))
            if not probes or model.batch_information(probes) <= 1e-9:
                return
            gw.test_many(probes)

    return gw.guarded(loop, lambda finished: posterior_result(gw, model, confidence, finished,
                                                              f"bayes-multisect-{jobs}"))
