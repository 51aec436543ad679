"""History search: the dispatcher that picks an algorithm, and the names callers import.

Candidates are 0..n-1 (the good commit is none of them) in topological order with their parents;
a commit is bad iff the culprit is among its ancestors, git bisect's semantics (ancestry.py,
dag.py, dag_bisect.py, dag_bayes.py; all pure: no git, no processes). A chain is a DAG
(`Dag.chain`), so the same searches serve `--first-parent`.

Abstractions
------------
SearchOptions  -- what the CLI chooses: flaky, jobs, confidence, run budget, q, the
                  flake model, confirmation.
search_dag     -- the dispatcher: dag_bisect(), dag_bayes_bisect(), dag_multisect() or
                  dag_bayes_multisect(); returns a dag.DagResult. A deterministic answer is
                  confirmed (confirm.py); when its confirmation, or any observation, contradicts
                  it, the search goes on in the flake model (`options.switch_prior`) from every
                  observation made so far: it never starts again.

It raises gateway.SearchStopped (carrying the best result so far) when stopped or out of budget.

This module imports the algorithms and none of them imports it, so there is no import circle;
it re-exports the names that callers have always imported from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bisectk.search.dag import Dag, DagResult
from bisectk.search.dag_bayes import dag_bayes_bisect, dag_bayes_multisect
from bisectk.search.dag_bisect import dag_bisect, dag_multisect
from bisectk.search.gateway import (BatchOracle, Gateway, InconsistentObservations, Observation, Oracle,
                                    SearchStopped, StopSearch)
from bisectk.search.rates import SWITCHED, RatePrior

__all__ = [
    "SearchOptions", "search_dag", "Dag", "DagResult", "Observation", "Oracle", "BatchOracle",
    "Gateway", "StopSearch", "SearchStopped", "InconsistentObservations",
]


@dataclass
class SearchOptions:
    """What the CLI chooses; passed through to the algorithm that a dispatcher picks."""

    flaky: bool = False
    jobs: int = 1
    confidence: float = 0.99
    max_runs: int | None = None
    fail_prob: float | None = None      # known q; else estimated (Beta prior over a grid)
    q_prior: tuple[float, float] | None = None   # the Beta of p_new (None: the prior's own)
    width: Callable[[], int] | None = None   # probes per round now (workers alive), at most jobs
    prior: RatePrior | None = None      # the flake model (None: ONE_SIDED); the CLI's: rates.flake_model
    base: tuple[int, int] = (0, 0)      # fails and passes of the good endpoint (old-side runs)
    confirm: bool = True                # deterministic answers are confirmed (confirm.py)
    switch_prior: RatePrior | None = None   # the flake model a contradicted deterministic search
                                            # goes on in (None: rates.SWITCHED)
    costs: Callable[[], tuple[float, float]] | None = None   # seconds of a failing and of a passing
                                            # run: the confirmation's plan costs least time (confirm.py)
    steady: bool = False                # the failure declared deterministic (--no-flaky): the
                                        # confirmation runs each claim once (confirm.py)
    more_runs: Callable[[], int] | None = None   # runs the oracle made beyond one a probe (it re-runs
                                        # a different failure), as it reports them: max_runs counts them
    fix: bool = False                   # a search for a fix (--find-fix): FAIL is a pass of the subject,
                                        # which a broken commit may give by luck; confirmed the other way (confirm.py)


def _batched(oracle: Oracle | None, batch_oracle: BatchOracle | None) -> BatchOracle:
    if batch_oracle is not None:
        return batch_oracle
    single = oracle
    return lambda idx: [single(i) for i in idx]  # type: ignore[misc]


def search_dag(dag: Dag | Sequence[Iterable[int]], oracle: Oracle | None = None, *,
               batch_oracle: BatchOracle | None = None, options: SearchOptions | None = None,
               observations: Iterable[Observation | Sequence[Any]] = (),
               on_observation: Callable[[Observation], None] | None = None) -> DagResult:
    """DAG search (`dag` or the parents lists it is built from): binary (default), Bayesian
    (`flaky`), k-way (`jobs` > 1, or only a batch oracle given). A deterministic search whose
    answer is contradicted goes on in the flake model (see the module docstring)."""
    opt = options or SearchOptions()
    if oracle is None and batch_oracle is None:
        raise ValueError("search_dag needs an oracle or a batch oracle")
    graph = dag if isinstance(dag, Dag) else Dag(dag)
    common: dict[str, Any] = dict(on_observation=on_observation, max_runs=opt.max_runs, more_runs=opt.more_runs)
    # a fix's old end (`base`) is counted by its confirmation, not by the flake model: the old end's
    # runs are the search's passes there, and the model's priors are a regression's (the old side
    # rarely FAILs), so they read a broken commit's lucky passes as the new side the more surely
    # (11 wrong in 130 switched answers where the old end's one run was given)
    flaky = dict(confidence=opt.confidence, fail_prob=opt.fail_prob, q_prior=opt.q_prior,
                 prior=opt.prior, base=(0, 0) if opt.fix else opt.base)
    parallel = opt.jobs > 1 or oracle is None
    batch = _batched(oracle, batch_oracle) if parallel else None

    def flake_search(log, **extra: Any) -> DagResult:
        kw = {**common, **flaky, **extra}
        if parallel:
            return dag_bayes_multisect(graph, batch, jobs=opt.jobs, width=opt.width, observations=log, **kw)
        return dag_bayes_bisect(graph, oracle, observations=log, **kw)

    if opt.flaky:
        return flake_search(observations)
    confidence = opt.confidence if opt.confirm else None
    if parallel:
        first = dag_multisect(graph, batch, jobs=opt.jobs, width=opt.width, observations=observations,
                              confidence=confidence, costs=opt.costs, steady=opt.steady, fix=opt.fix,
                              base=opt.base, **common)
    else:
        first = dag_bisect(graph, oracle, observations=observations, confidence=confidence, costs=opt.costs,
                           steady=opt.steady, fix=opt.fix, base=opt.base, **common)
    why = _contradicted(first)
    if why is None or not opt.confirm:
        return first
    budget = None if opt.max_runs is None else max(opt.max_runs - first.new_runs, 0)
    prior = opt.switch_prior or SWITCHED

    def joined(result: DagResult) -> DagResult:
        return replace(result, new_runs=result.new_runs + first.new_runs, rounds=result.rounds + first.rounds,
                       switched=why, confirmation=first.confirmation,
                       mode=f"{first.mode}, then {result.mode}")
    try:
        if budget == 0:
            raise SearchStopped(joined(replace(first, complete=False)), reason="budget")
        return joined(flake_search(first.observations, max_runs=budget, prior=prior))
    except SearchStopped as stop:
        if stop.result is not None and stop.result.switched is None:
            stop.result = joined(stop.result)
        raise


def _contradicted(result: DagResult) -> tuple[str, int] | None:
    """(what, commit) when observations contradict a deterministic answer: its confirmation
    (the culprit passed, a parent failed or could not be run), or observations that fit no
    culprit at all (a replayed log with an intermittent failure in it)."""
    c = result.confirmation
    if c is not None and not c.ok:
        i, outcome = c.contradicted
        what = ("culprit-passed" if i == c.culprit and outcome == "pass" else
                "parent-failed" if outcome == "fail" else "unconfirmable")
        return what, i
    if result.contradiction:
        return "contradiction", result.conflict[0] if result.conflict else -1
    return None
