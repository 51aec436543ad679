"""Deterministic search on a commit DAG: git bisect's probe choice, and k-way multisection.

Abstractions
------------
best_probe()    -- the commit whose run best splits the allowed culprits. A FAIL of commit i keeps
                   the allowed culprits among i's ancestors (w of N: git's "weight"), a PASS the
                   other N - w, so the best i maximises the entropy h(w/N) of the split, which is
                   git's max min(w, N - w); once skips are known, times P(testable) per run not
                   lost (skip away from clusters of untestable commits far from the culprits,
                   split them once they are most of the culprits left). Any untested commit may be chosen, also
                   one outside the allowed set: after a FAIL a commit on another branch can still
                   split the culprits, and it may be the only testable one that does.
split_probes()  -- the K probes of one multisection round. Each allowed culprit falls in a cell
                   (which of the probes it makes bad); the probes maximise the expected entropy
                   of that partition: started at weight quantiles j/(K+1) (on a chain: K+1
                   near-equal segments), then improved one probe at a time while any swap helps.
first_round()   -- the probes a K-way round sends from the observations so far: the search's
                   likely first round, begun beside the endpoints' runs (engine/bisect.py).
dag_bisect()    -- the sequential search.
dag_multisect() -- K probes per round, for K parallel workers.

Both confirm a single answer before giving it (`confidence`, confirm.py): the culprit runs again
and must fail, each parent runs again `repeats` times and must pass. The result carries the
confirmation; a contradicted one leaves the contradiction in the result for the caller
(history.search_dag) to go on in the flake model. `confidence=None` skips the confirmation (the
plain search, as replay rebuilds it).

Both end when no testable, untested commit splits the allowed culprits. The allowed set is then the
answer: one commit (the culprit), or several that skips left indistinguishable (git's "only
skipped commits left to test"). It is consistent with every observation by construction; when no
culprit is (a good commit descending from a bad one, a flaky test), the result carries the
contradiction instead of an answer.

Runs. Without skips, a sequential search halves a chain (ceil(log2 N) runs) and a round of K
probes leaves at most ~N/(K+1) culprits of one, so ceil(log_{K+1} N) + 1 rounds. On a DAG an
exact halving may not exist: m independent branches joined by one octopus merge need up to m - 1
runs, for git too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from dataclasses import replace

from bisectk.outcome import Outcome
from bisectk.search.confirm import Costs, confirm_culprit, observed_sides
from bisectk.search.dag import Dag, DagResult, Narrowing, entr, narrowing_result
from bisectk.search.gateway import BatchOracle, Gateway, Observation, Oracle, round_width
from bisectk.search.rates import observed_rates

_LN2 = np.log(2.0)


def best_probe(dag: Dag, allowed: np.ndarray, eligible: np.ndarray, odds: np.ndarray,
               stretch: np.ndarray | None = None) -> int | None:
    """The commit to run next, or None when no testable commit splits the allowed culprits.

    Its split's entropy h times P(testable) p, per run that is not lost: a run that cannot test
    commit j is lost only when j would not have had to be run anyway, and it would have when the
    culprit lies in j's untestable stretch (dag.stretch: s commits, so about q = s/N of the time).
    So the score is p h / (p + (1 - p)(1 - q)): far from the culprit (q ~ 0) the search keeps away
    from untestable clusters (p h); once the allowed culprits are mostly that cluster (q ~ 1), it
    splits them as if all were testable (h), as it will have to run them in the end."""
    size = int(allowed.sum())
    if size <= 1:
        return None
    w = dag.weights(allowed)
    useful = eligible & (w > 0) & (w < size) & (odds > 0)
    if not useful.any():
        return None
    frac = w / size
    gain = odds * (entr(frac) + entr(1.0 - frac))
    if stretch is not None:
        lost = (1.0 - odds) * (1.0 - np.minimum(stretch / size, 1.0))
        gain = gain / np.maximum(odds + lost, 1e-12)
    score = np.where(useful, gain, -1.0)
    return int(np.argmax(score))    # ties: the earliest in topological order


class _Pool:
    """The commits a k-way round may probe, against the allowed culprits: which culprits make a
    pool commit bad (its ancestors among them), read from ancestor sets and ancestor sums, never
    from a pool x culprits matrix."""

    def __init__(self, dag: Dag, allowed: np.ndarray, pool: np.ndarray):
        self.dag, self.pool = dag, pool
        self.culprits = np.flatnonzero(allowed)
        self._rows: dict[int, np.ndarray] = {}

    def row(self, t: int) -> np.ndarray:
        """Which allowed culprits make pool commit t bad."""
        if t not in self._rows:
            self._rows[t] = self.dag.ancestors(int(self.pool[t]))[self.culprits]
        return self._rows[t]

    def cells(self, probes: Sequence[int]) -> np.ndarray:
        """The cell of every allowed culprit: which of `probes` (pool positions) it makes bad."""
        codes = np.zeros(self.culprits.size, dtype=np.int64)
        for t, j in enumerate(probes):
            codes |= self.row(j).astype(np.int64) << t
        return np.unique(codes, return_inverse=True)[1].reshape(-1)

    def inside(self, labels: np.ndarray) -> np.ndarray:
        """[j, cell]: how many culprits of the cell make pool commit j bad."""
        onehot = np.zeros((self.dag.n, int(labels.max()) + 1), dtype=np.int64)
        onehot[self.culprits, labels] = 1
        return self.dag.ancestor_sums(onehot)[self.pool].astype(np.float64)


def _entropy(hits: _Pool, probes: Sequence[int]) -> float:
    sizes = np.bincount(hits.cells(probes)) / hits.culprits.size
    return float(entr(sizes).sum())


def _entropy_adding(hits: _Pool, others: Sequence[int], p_ok: np.ndarray) -> np.ndarray:
    """For every pool commit j: the partition entropy expected from `others` plus j, where j's
    run is lost (untestable) with probability 1 - p_ok[j]."""
    labels = hits.cells(others)
    size = hits.culprits.size
    cells = np.bincount(labels).astype(np.float64)
    inside = hits.inside(labels)            # [j, cell]: culprits of the cell that make j bad
    base = float(entr(cells / size).sum())
    split = (entr(inside / size) + entr((cells - inside) / size)).sum(axis=1)
    return base + p_ok * (split - base)


def split_probes(dag: Dag, allowed: np.ndarray, eligible: np.ndarray, odds: np.ndarray,
                 k: int) -> list[int]:
    """Up to k commits to run together; [] when no testable commit splits the allowed culprits."""
    if k < 1:
        raise ValueError(f"jobs must be >= 1, got {k}")
    size = int(allowed.sum())
    if size <= 1:
        return []
    w = dag.weights(allowed)
    pool = np.flatnonzero(eligible & (w > 0) & (w < size) & (odds > 0))
    if pool.size <= k:
        return pool.tolist()
    hits = _Pool(dag, allowed, pool)
    p_ok = odds[pool]
    width = size / (k + 1)
    chosen: list[int] = []                  # positions in `pool`
    for t in range(1, k + 1):
        closeness = p_ok * np.clip(1.0 - ((w[pool] - t * width) / width) ** 2, 1e-6, None)
        closeness[chosen] = -1.0
        chosen.append(int(np.argmax(closeness)))
    for _ in range(10):                     # coordinate ascent; each sweep only raises the entropy
        improved = False
        for s in range(k):
            others = chosen[:s] + chosen[s + 1:]
            score = _entropy_adding(hits, others, p_ok)
            score[others] = -np.inf
            best = int(np.argmax(score))
            if score[best] > score[chosen[s]] + 1e-12:
                chosen[s], improved = best, True
        if not improved:
            break
    full = _entropy(hits, chosen)           # a probe that adds nothing is not worth a run
    for s in reversed(range(len(chosen))):
        if len(chosen) > 1 and _entropy(hits, chosen[:s] + chosen[s + 1:]) >= full - 1e-12:
            del chosen[s]
    return sorted(pool[chosen].tolist())


class _Confirming:
    """The confirmation step of a deterministic search, and the result it leads to."""

    def __init__(self, dag: Dag, gw: Gateway, state: Narrowing, confidence: float | None,
                 max_runs: int | None, width: Callable[[], int], costs: Costs | None = None,
                 steady: bool = False, fix: bool = False, base: tuple[int, int] = (0, 0)):
        self.dag, self.gw, self.state, self.confidence = dag, gw, state, confidence
        self.max_runs, self.width, self.costs, self.steady = max_runs, width, costs, steady
        self.fix, self.base = fix, base
        self.done = None

    def run(self) -> None:
        """Confirm the allowed culprit when confirmation was asked: the single one, or a group
        that untestable commits left (one answer as much as a single culprit: it is given at
        confidence 1.0 too), by its member that was run (the one that failed, where the
        narrowing stopped) with the parents outside the group."""
        allowed = np.flatnonzero(self.state.allowed).tolist()
        if self.confidence is None or not allowed:
            return
        members = allowed
        if len(allowed) > 1:
            ran = {o.index for o in self.gw.observations if o.outcome is not Outcome.UNRESOLVED}
            members = [i for i in allowed if i in ran] or allowed
        self.gw.repeat = True       # confirmation runs are repeats on purpose
        self.done = confirm_culprit(self.dag, self.gw, members[0], self.confidence,
                                    lambda k: self.gw.spend(self.max_runs, k), self.width(), self.costs,
                                    steady=self.steady, fix=self.fix, base=self.base,
                                    group=tuple(allowed) if len(allowed) > 1 else ())

    def result(self, finished: bool, mode: str) -> DagResult:
        """The narrowing's answer, complete only when its confirmation (if one was due) held."""
        held = self.done is None or self.done.ok
        res = narrowing_result(self.dag, self.gw, self.state, finished and held, mode)
        if res.culprit is not None:
            res = replace(res, rates=observed_rates(*observed_sides(self.dag, self.gw.observations, res.culprit)))
        return replace(res, confirmation=self.done)


def dag_bisect(dag: Dag, oracle: Oracle, *, observations: Iterable[Observation | Sequence[Any]] = (),
               on_observation: Callable[[Observation], None] | None = None,
               max_runs: int | None = None, confidence: float | None = None,
               costs: Costs | None = None, steady: bool = False,
               more_runs: Callable[[], int] | None = None, fix: bool = False,
               base: tuple[int, int] = (0, 0)) -> DagResult:
    """Sequential deterministic search, then the confirmation of its answer at `confidence`
    (planned at the least cost under `costs`, or once each when the failure is declared
    `steady`: confirm.py); raises SearchStopped (best result so far) when stopped. `more_runs()`:
    the runs the oracle made beyond one a probe, which `max_runs` counts too (Gateway). `fix`: a
    search for a fix, confirmed the other way round; `base`: the old end's (fails, passes)."""
    gw = Gateway(dag.n, oracle, observations=observations, on_observation=on_observation, min_n=1,
                 more_runs=more_runs)
    state = Narrowing(dag, gw.observations)
    gw.listeners.append(state.observe)
    confirming = _Confirming(dag, gw, state, confidence, max_runs, lambda: 1, costs, steady, fix, base)

    def loop() -> None:
        while state.allowed.any():
            probe = best_probe(dag, state.allowed, state.eligible, state.odds(), state.stretch())
            if probe is None:
                break
            gw.spend(max_runs)
            gw.test(probe)
        confirming.run()

    return gw.guarded(loop, lambda finished: confirming.result(finished, "dag-binary"))


def first_round(dag: Dag, observations: Iterable[Observation | Sequence[Any]], k: int) -> list[int]:
    """The K probes (`split_probes`) a multisection sends first after `observations` (the bad
    endpoint's failure): what can be run before the search is asked, its outcomes then handed to
    it as observations; [] when nothing is left to split."""
    state = Narrowing(dag, observations)
    return split_probes(dag, state.allowed, state.eligible, state.odds(), k) if k >= 1 else []


def dag_multisect(dag: Dag, batch_oracle: BatchOracle, *, jobs: int,
                  observations: Iterable[Observation | Sequence[Any]] = (),
                  on_observation: Callable[[Observation], None] | None = None,
                  max_runs: int | None = None, width: Callable[[], int] | None = None,
                  confidence: float | None = None, costs: Costs | None = None, steady: bool = False,
                  more_runs: Callable[[], int] | None = None, fix: bool = False,
                  base: tuple[int, int] = (0, 0)) -> DagResult:
    """Deterministic k-way search; `result.rounds` counts the batches sent to the oracle. With
    `width`, each round sends min(jobs, width()) probes (the workers alive then)."""
    gw = Gateway(dag.n, batch_oracle=batch_oracle, observations=observations,
                 on_observation=on_observation, min_n=1, more_runs=more_runs)
    state = Narrowing(dag, gw.observations)
    gw.listeners.append(state.observe)
    confirming = _Confirming(dag, gw, state, confidence, max_runs, lambda: round_width(jobs, width), costs, steady,
                             fix, base)

    def loop() -> None:
        while state.allowed.any():
            probes = split_probes(dag, state.allowed, state.eligible, state.odds(), round_width(jobs, width))
            if not probes:
                break
            gw.test_many(probes[:gw.spend(max_runs, len(probes))])
        confirming.run()

    return gw.guarded(loop, lambda finished: confirming.result(finished, f"dag-multisect-{jobs}"))
