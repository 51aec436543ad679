"""Flake-aware search on a commit DAG: probes by expected information until the posterior over the
culprit (posterior.py, under the two-rate model of rates.py) holds the asked confidence.

Stopping. The search ends when one group of indistinguishable culprits holds `confidence` of the
posterior and, when the group is one commit, that commit's own runs include a failure and each of
its parents' own runs a pass (CulpritPosterior.unconfirmed): no confidence without confirmation.
Those runs are what the posterior weighs; under a calibrated posterior they are nearly always
there already, and where they are not, they are made before the answer is given. The reported
confidence is the posterior probability of the answer.

Not separable. When the budget is spent first, the result says so (`separable` False) with both
rates and their intervals, and `more_runs`: how many more runs would probably gather the bits the
posterior still lacks at the rates measured (rates.runs_to_confirm). The budget ends the search
by raising SearchStopped (reason "budget"), carrying that result.

Abstractions
------------
CulpritPosterior      -- (posterior.py) the joint posterior over the culprit and both rates.
default_budget()      -- the run budget when none is given.
guarded_mass()        -- the mass an answer may claim: under two rates, the smaller of the model's
                         and its guard's (the same runs under the prior without the mass at
                         p_old = 0: an answer must not rest on the guess that good never fails).
posterior_result()    -- a DagResult from the posterior: the best group, its mass, both rates, and
                         whether the rates were told apart.
dag_bayes_bisect()    -- run the commit of highest expected information gain (times P(testable))
                         until the answer holds `confidence` and is confirmed. A repeat is the same
                         commit winning again; no repeat count is fixed.
dag_bayes_multisect() -- rounds of K probes chosen greedily by their joint information (up to
                         MAX_JOINT = 10 distinct choices; more workers repeat them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from bisectk.search.dag import Dag, DagResult, testable_odds
from bisectk.search.gateway import BatchOracle, Gateway, Observation, Oracle, round_width
from bisectk.search.posterior import MAX_JOINT, CulpritPosterior, make_prior
from bisectk.search.rates import RatePrior, runs_to_confirm

__all__ = ["CulpritPosterior", "MAX_JOINT", "default_budget", "posterior_result", "dag_bayes_bisect",
           "dag_bayes_multisect"]


def default_budget(n: int) -> int:
    """A run budget generous for q down to ~0.2 (each run then carries < 0.1 bit)."""
    return 50 + 40 * math.ceil(math.log2(max(n, 2)))


def guarded_mass(model: CulpritPosterior, guard: CulpritPosterior | None) -> tuple[tuple[int, ...], float]:
    """The best group and the mass an answer may claim: the model's, or where a guard is kept
    (two rates), the smaller of the model's and the guard's mass on that group."""
    members, mass = model.best_group()
    if guard is not None and guard.contradiction() is None:
        mass = min(mass, float(guard.marginal()[list(members)].sum()))
    return members, mass


def posterior_result(dag: Dag, gw: Gateway, model: CulpritPosterior, confidence: float,
                     finished: bool, mode: str, stuck: bool = False,
                     guard: CulpritPosterior | None = None) -> DagResult:
    conflict = model.contradiction()
    if conflict is not None:
        return DagResult(None, (), (), len(gw.observations), gw.new_runs, gw.rounds, 0.0,
                         model.skipped, tuple(gw.observations), False, mode,
                         contradiction=conflict[0], conflict=conflict[1])
    members, mass = guarded_mass(model, guard)
    culprit = members[0] if len(members) == 1 else None
    rates = model.rates()
    confident = mass >= confidence and (culprit is None or not model.unconfirmed(culprit))
    more = None
    if not confident and not stuck:
        more = runs_to_confirm(model.marginal(), confidence, rates.old, rates.new)
    return DagResult(
        culprit=culprit, candidates=members, parents=dag.parents_of(culprit) if culprit is not None else (),
        runs=len(gw.observations), new_runs=gw.new_runs, rounds=gw.rounds, confidence=mass,
        skipped=model.skipped, observations=tuple(gw.observations),
        complete=finished and (confident or stuck), mode=mode,
        posterior=tuple((i, round(p, 6)) for i, p in model.top(5)),
        marginal=_rounded(model.marginal()),
        fail_prob=round(model.fail_prob(), 4), rates=rates,
        separable=True if confident else None if stuck else False, more_runs=more)


def _rounded(marginal: np.ndarray) -> tuple[tuple[int, float], ...]:
    """(index, P) for every P that rounds above 0 at 6 decimals; below 4e-7 none does, so only
    the few above are rounded one by one."""
    out = []
    for i in np.flatnonzero(marginal > 4e-7).tolist():
        p = round(float(marginal[i]), 6)
        if p > 0:
            out.append((i, p))
    return tuple(out)


def _setup(dag: Dag, gw: Gateway, confidence: float, kwargs: dict[str, Any]
           ) -> tuple[CulpritPosterior, CulpritPosterior | None]:
    """The model, and under two rates its guard: the same observations under the prior without
    the mass at p_old = 0. That mass is the prior's guess that the good side might never fail; an
    answer must not rest on it (a p_old = 0.1 history whose old-side probes happened to pass reads
    as "p_old = 0, the change is here" under the mixture: bench/calibration_bench.py found 6 wrong
    answers in 271 at 0.99 with the mixture alone)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    model = CulpritPosterior.from_observations(dag, gw.observations, **kwargs)
    gw.listeners.append(model.observe)
    guard = None
    if 0.0 < model.prior.old_zero < 1.0 and model.prior.known_new is None:
        guard = CulpritPosterior.from_observations(dag, gw.observations,
                                                   **{**kwargs, "prior": replace(model.prior, old_zero=0.0)})
        gw.listeners.append(guard.observe)
    return model, guard


def _wanted(model: CulpritPosterior, confidence: float,
            guard: CulpritPosterior | None = None) -> tuple[bool, list[int]]:
    """(done, confirmation runs still needed): done when the best group holds `confidence` (in
    the guard too) and, when it is one commit, that commit failed and its parents passed in their
    own runs."""
    members, mass = guarded_mass(model, guard)
    if mass < confidence:
        return False, []
    need = model.unconfirmed(members[0]) if len(members) == 1 else []
    return not need, need


def dag_bayes_bisect(dag: Dag, oracle: Oracle, *, confidence: float = 0.99,
                     observations: Iterable[Observation | Sequence[Any]] = (),
                     on_observation: Callable[[Observation], None] | None = None,
                     max_runs: int | None = None, fail_prob: float | None = None,
                     more_runs: Callable[[], int] | None = None,
                     q_prior: tuple[float, float] | None = None, grid: int | None = None,
                     prior: RatePrior | None = None, base: tuple[int, int] = (0, 0)) -> DagResult:
    """Sequential flake-aware search. Ends at `confidence` (confirmed), when no run is
    informative, or on a contradiction; the run budget (default default_budget(n)) raises
    SearchStopped; `more_runs()`: the runs the oracle made beyond one a probe, which the budget
    counts too (Gateway). `base`: fails and passes of the good endpoint (old-side runs whatever
    the culprit: they measure p_old)."""
    gw = Gateway(dag.n, oracle, observations=observations, repeat=True,
                 on_observation=on_observation, min_n=1, more_runs=more_runs)
    model, guard = _setup(dag, gw, confidence, dict(prior=make_prior(prior, fail_prob, q_prior, grid), base=base))
    budget = default_budget(dag.n) if max_runs is None else max_runs
    stuck = False

    def loop() -> None:
        nonlocal stuck
        while model.contradiction() is None:
            done, need = _wanted(model, confidence, guard)
            if done:
                return
            probe = need[0] if need else model.next_probe(testable_odds(dag, model.skipped, model.tested))
            if probe is None:
                stuck = True
                return
            gw.spend(budget)
            gw.test(probe)

    return gw.guarded(loop, lambda finished: posterior_result(dag, gw, model, confidence, finished,
                                                              "dag-bayes", stuck, guard))


def dag_bayes_multisect(dag: Dag, batch_oracle: BatchOracle, *, jobs: int, confidence: float = 0.99,
                        observations: Iterable[Observation | Sequence[Any]] = (),
                        on_observation: Callable[[Observation], None] | None = None,
                        max_runs: int | None = None, fail_prob: float | None = None,
                        more_runs: Callable[[], int] | None = None,
                        q_prior: tuple[float, float] | None = None, grid: int | None = None,
                        width: Callable[[], int] | None = None, prior: RatePrior | None = None,
                        base: tuple[int, int] = (0, 0)) -> DagResult:
    """Flaky k-way search: rounds of up to `jobs` probes of greatest joint information (with
    `width`: up to min(jobs, width()), the workers alive)."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    gw = Gateway(dag.n, batch_oracle=batch_oracle, observations=observations, repeat=True,
                 on_observation=on_observation, min_n=1, more_runs=more_runs)
    model, guard = _setup(dag, gw, confidence, dict(prior=make_prior(prior, fail_prob, q_prior, grid), base=base))
    budget = default_budget(dag.n) if max_runs is None else max_runs
    stuck = False

    def loop() -> None:
        nonlocal stuck
        while model.contradiction() is None:
            done, need = _wanted(model, confidence, guard)
            if done:
                return
            k = round_width(jobs, width)
            probes = need[:k] if need else model.next_batch(k, testable_odds(dag, model.skipped, model.tested))
            if not probes:
                stuck = True
                return
            gw.test_many(probes[:gw.spend(budget, len(probes))])

    return gw.guarded(loop, lambda finished: posterior_result(dag, gw, model, confidence, finished,
                                                              f"dag-bayes-multisect-{jobs}", stuck, guard))
