"""Flake-aware search on a commit DAG: a Bayesian posterior over the culprit that reads ancestry.

Model. Hypothesis c (the culprit, any candidate) and q (the probability that one run of a bad
commit fails). Commit i is bad iff c is an ancestor of i (or i itself), so

    P(a run of i fails | c, q) = q   if anc[i, c],   0 otherwise.

A failure proves badness (c is among i's ancestors); a pass is only evidence. q is unknown and
marginalised over a grid under a Beta(a, b) prior (default Beta(1, 2), as bayes.py explains).
With F_c and P_c the fails and passes observed at descendants of c (c included),

    log p(c, q | obs) = const + F_c log q + P_c log(1 - q) + log prior(q)   if c is an ancestor
                                                                           of every failing run,
                      = -inf                                               otherwise,

so F_c counts the failing runs of c's descendants (a run of i adds 1 to every ancestor of i) and
P_c the passing ones: the posterior is a pure function of per-commit counts, and
`from_observations` replays a log into exactly the posterior the search had. On a chain this is
bayes.FirstBadPosterior (list order and ancestry agree there).

Memory is O(N + U x grid): commits with the same counts (F_c, P_c) share one row of the q grid
(a *class*; U classes, at most (fails + 1) x (passes + 1) and in practice far fewer), and the mass
of a run failing at i, a sum over i's ancestors, is an ancestor sum of the Dag (ancestry.py). A
second rate (issue 23) adds a column to the class key, not a dimension over commits.

Abstractions
------------
CulpritPosterior     -- the joint posterior over (c, q), its culprit marginal, the groups that
                        skips make indistinguishable (dag.groups) and their masses, and the
                        information of probes: `information_gain()` = I(C; Y_i) for every commit
                        i at once (one ancestor sum of two columns), `batch_information(S)`
                        = I(C; Y_S) for probes run together (repeats allowed).
dag_bayes_bisect()   -- run the commit of highest expected information gain (times P(testable))
                        until one group holds `confidence`. A repeat is the same commit winning
                        again; no repeat count is fixed.
dag_bayes_multisect() -- rounds of K probes chosen greedily by their joint information (up to
                        MAX_JOINT = 10 distinct choices; more workers repeat them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from bisectk.outcome import Outcome
from bisectk.search.dag import Dag, DagResult, entr, explain, groups, testable_odds
from bisectk.search.gateway import (BatchOracle, Gateway, InconsistentObservations, Observation, Oracle,
                                    round_width)

_LN2 = math.log(2.0)
MAX_JOINT = 10      # probes weighed jointly (2^10 outcome patterns); more are repeats
_POPCOUNT = np.array([bin(i).count("1") for i in range(1 << MAX_JOINT)])


def default_budget(n: int) -> int:
    """A run budget generous for q down to ~0.2 (each run then carries < 0.1 bit)."""
    return 50 + 40 * math.ceil(math.log2(max(n, 2)))


def _xlogy(x: np.ndarray, logy: np.ndarray) -> np.ndarray:
    """x * log y as an outer product, 0 where x = 0 (even when log y = -inf)."""
    with np.errstate(invalid="ignore"):
        out = x[:, None] * logy[None, :]
    return np.where(x[:, None] > 0, out, 0.0)


class CulpritPosterior:
    """Posterior over (culprit, failure probability q) on a DAG, rebuilt from pass/fail counts."""

    def __init__(self, dag: Dag, *, fail_prob: float | None = None,
                 q_prior: tuple[float, float] = (1.0, 2.0), grid: int = 100):
        self.dag, n = dag, dag.n
        if fail_prob is not None:
            if not 0.0 < fail_prob <= 1.0:
                raise ValueError(f"fail_prob must be in (0, 1], got {fail_prob}")
            self.q = np.array([float(fail_prob)])
            self._log_prior_q = np.zeros(1)
        else:
            a, b = q_prior          # Beta's log density up to a constant, which cancels
            self.q = (np.arange(grid) + 0.5) / grid
            self._log_prior_q = (a - 1.0) * np.log(self.q) + (b - 1.0) * np.log1p(-self.q)
        with np.errstate(divide="ignore"):
            self._log_q, self._log_1mq = np.log(self.q), np.log1p(-self.q)
        self.fails_below = np.zeros(n, dtype=np.int64)      # F_c: fails observed at c and its descendants
        self.passes_below = np.zeros(n, dtype=np.int64)     # P_c
        self.allowed = np.ones(n, dtype=bool)
        self.tested = np.zeros(n, dtype=bool)
        self._unresolved: set[int] = set()
        self.observations: list[Observation] = []
        self._cache: dict[Any, Any] = {}        # cleared by every observation
        self._groups: dict[tuple[int, ...], np.ndarray] = {}   # by skip set: kept

    @classmethod
    def from_observations(cls, dag: Dag, observations: Iterable[Observation | Sequence[Any]],
                          **kwargs: Any) -> CulpritPosterior:
        model = cls(dag, **kwargs)
        for obs in observations:
            model.observe(obs)
        return model

    def observe(self, obs: Observation | Sequence[Any]) -> None:
        i, outcome = Observation.coerce(obs)
        self.observations.append(Observation(i, outcome))
        if outcome is Outcome.FAIL:
            row = self._ancestors(i)
            self.fails_below += row
            self.allowed &= row
            self.tested[i] = True
        elif outcome is Outcome.PASS:
            self.passes_below += self._ancestors(i)
            self.tested[i] = True
        else:
            self._unresolved.add(i)
        self._cache.clear()

    def _ancestors(self, i: int) -> np.ndarray:
        """i's ancestor set, kept until the next observation (probes are weighed repeatedly)."""
        key = ("anc", i)
        if key not in self._cache:
            self._cache[key] = self.dag.ancestors(i)
        return self._cache[key]

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(sorted(i for i in self._unresolved if not self.tested[i]))

    # -- the posterior ------------------------------------------------------------------------------
    def _classes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(class of every commit, -1 where not allowed; commits per class; log p(class, q) up to
        a constant, U x len(q)). Commits with equal (F_c, P_c) have equal likelihoods."""
        if "classes" not in self._cache:
            live = np.flatnonzero(self.allowed)
            f, p = self.fails_below[live], self.passes_below[live]
            keys, inverse, counts = np.unique(f * (int(p.max(initial=0)) + 1) + p, return_inverse=True,
                                              return_counts=True)
            first = np.zeros(keys.size, dtype=np.int64)
            first[inverse.reshape(-1)[::-1]] = np.arange(live.size)[::-1]   # a member of each class
            fu, pu = f[first].astype(float), p[first].astype(float)
            log = _xlogy(fu, self._log_q) + _xlogy(pu, self._log_1mq) + self._log_prior_q[None, :]
            cls = np.full(self.dag.n, -1, dtype=np.int64)
            cls[live] = inverse.reshape(-1)
            self._cache["classes"] = (cls, counts, log)
        return self._cache["classes"]

    def contradiction(self) -> tuple[str, tuple[int, ...]] | None:
        """Why no culprit fits (a failing run outside every allowed culprit's descendants, or a
        pass where q = 1 was given); None while the posterior is proper."""
        _, _, log = self._classes()
        if log.size and np.isfinite(log.max()):
            return None
        if self.q.min() < 1.0:      # passes are only evidence: failures alone contradict
            return explain(self.dag, [o for o in self.observations if o.outcome is Outcome.FAIL])
        return explain(self.dag, self.observations)

    def _class_joint(self) -> np.ndarray:
        """p(c, q | obs) for one commit c of each class (U x len(q)); it sums to 1 over commits."""
        if "class_joint" not in self._cache:
            conflict = self.contradiction()
            if conflict is not None:
                raise InconsistentObservations(f"observations fit no culprit: {conflict[0]}")
            _, counts, log = self._classes()
            weights = np.exp(log - log.max())
            self._cache["class_joint"] = weights / (counts @ weights).sum()
        return self._cache["class_joint"]

    def _per_commit(self, per_class: np.ndarray) -> np.ndarray:
        """A class quantity spread over commits (0 where not allowed)."""
        cls = self._classes()[0]
        out = np.zeros((self.dag.n,) + per_class.shape[1:])
        out[cls >= 0] = per_class[cls[cls >= 0]]
        return out

    @property
    def joint(self) -> np.ndarray:
        """p(c, q | obs) as an n x len(q) array (materialised for inspection: O(n x grid))."""
        return self._per_commit(self._class_joint())

    def marginal(self) -> np.ndarray:
        if "marginal" not in self._cache:
            self._cache["marginal"] = self._per_commit(self._class_joint().sum(axis=1))
        return self._cache["marginal"]

    def fail_prob(self) -> float:
        """Posterior mean of q."""
        counts = self._classes()[1]
        return float((counts @ self._class_joint()) @ self.q)

    def top(self, k: int = 5) -> list[tuple[int, float]]:
        m = self.marginal()
        order = np.argsort(-m, kind="stable")[:k]
        return [(int(i), float(m[i])) for i in order if m[i] > 0]

    def best_group(self) -> tuple[tuple[int, ...], float]:
        """The most probable group of indistinguishable culprits (with P > 0), and its mass."""
        skipped = self.skipped
        if skipped not in self._groups:
            self._groups[skipped] = groups(self.dag, skipped)
        labels, m = self._groups[skipped], self.marginal()
        mass = np.bincount(labels, weights=m)
        best = int(np.argmax(mass))
        members = np.flatnonzero((labels == best) & (m > 0))
        return tuple(members.tolist()), float(mass[best])

    # -- information -------------------------------------------------------------------------------
    def information_gain(self) -> np.ndarray:
        """I(C; Y_i) in bits for one run of every commit i.

        With V1(c) = E[q; c] and V0(c) = E[1 - q; c], a run of i fails with probability
        sum over i's ancestors of V1, and H(Y_i | C) = sum over i's ancestors of
        entr(V1) + entr(V0) - entr(V1 + V0): one ancestor sum of the two columns gives both.
        """
        if "gain" not in self._cache:
            joint = self._class_joint()
            v1, v0 = joint @ self.q, joint @ (1.0 - self.q)
            both = self.dag.ancestor_sums(self._per_commit(np.stack([v1, entr(v1) + entr(v0) - entr(v1 + v0)], axis=1)))
            pf = np.clip(both[:, 0], 0.0, 1.0)
            self._cache["gain"] = np.maximum((entr(pf) + entr(1.0 - pf) - both[:, 1]) / _LN2, 0.0)
        return self._cache["gain"]

    def next_probe(self, odds: np.ndarray | None = None, min_gain: float = 1e-9) -> int | None:
        """The commit of highest gain x P(testable), or None when no run is worth making."""
        gain = self.information_gain().copy()
        gain[list(self.skipped)] = -1.0
        score = gain * (odds if odds is not None else 1.0)
        i = int(np.argmax(score))
        return i if gain[i] > min_gain else None

    def _moments(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Per class: V[u, f, k] = E[q^f (1-q)^(k-f); c] (0 for f > k) and H[u, k], the entropy of
        k runs of bad commits given c times p(c), for k <= m and c any commit of class u; the k runs
        are exchangeable, so the C(k, f) patterns with f fails share one probability."""
        key = ("moments", m)
        if key not in self._cache:
            joint = self._class_joint()
            p = joint.sum(axis=1)
            v = np.zeros((joint.shape[0], m + 1, m + 1))
            h = np.zeros((joint.shape[0], m + 1))
            for k in range(m + 1):
                h[:, k] = -entr(p)
                for f in range(k + 1):
                    v[:, f, k] = joint @ (self.q ** f * (1.0 - self.q) ** (k - f))
                    h[:, k] += math.comb(k, f) * entr(v[:, f, k])
            self._cache[key] = (v, h)
        return self._cache[key]

    def batch_information(self, probes: Sequence[int]) -> float:
        """I(C; Y_S) in bits for the probes S run together (repeats of one commit allowed).

        Culprit c makes the probes in its cell D(c) bad (a bitmask). An outcome pattern y (the set
        of probes that failed) has probability sum over cells d containing y of
        sum_{c in d} V[c, |y|, |d|]; H(Y | C) sums H[c, |D(c)|]. The patterns number 2^|S|, hence
        the cap MAX_JOINT on |S|.
        """
        m = len(probes)
        if m > MAX_JOINT:
            raise ValueError(f"joint information of {m} probes: at most {MAX_JOINT}")
        v, h = self._moments(m)
        live = np.flatnonzero(self.marginal() > 0)
        cls = self._classes()[0][live]
        codes = np.zeros(live.size, dtype=np.int64)
        for t, j in enumerate(probes):
            codes |= self._ancestors(j)[live].astype(np.int64) << t
        sizes = _POPCOUNT[codes]
        h_cond = float(h[cls, sizes].sum())
        cells, inverse = np.unique(codes, return_inverse=True)
        inverse = inverse.reshape(-1)
        share = v[cls, :, sizes]
        per_cell = np.stack([np.bincount(inverse, weights=share[:, f], minlength=cells.size)
                             for f in range(m + 1)], axis=1)
        p_out = np.zeros(1 << m)
        for d, w in zip(cells.tolist(), per_cell):
            bits = [t for t in range(m) if d >> t & 1]
            subsets = np.arange(1 << len(bits))
            y = np.zeros_like(subsets)          # subset s of d's bits, deposited onto them
            for k, t in enumerate(bits):
                y |= (subsets >> k & 1) << t
            p_out[y] += w[_POPCOUNT[subsets]]
        return max((float(entr(p_out).sum()) - h_cond) / _LN2, 0.0)

    def next_batch(self, k: int, odds: np.ndarray | None = None, pool_size: int = 32) -> list[int]:
        """k probes: up to MAX_JOINT chosen greedily, each maximising the joint information with
        those chosen (its own share discounted by P(testable)); repeats of one commit are allowed.
        Past MAX_JOINT the chosen ones are repeated, best first: with a flaky failure a repeat is
        new evidence, and the patterns of more probes are too many to weigh."""
        score = self.information_gain() * (odds if odds is not None else 1.0)
        score[list(self.skipped)] = -1.0
        pool = [int(i) for i in np.argsort(-score, kind="stable")[:pool_size] if score[i] > 1e-9]
        if not pool:
            return []
        p_ok = odds if odds is not None else np.ones(self.dag.n)
        chosen: list[int] = []
        info = 0.0
        while len(chosen) < min(k, MAX_JOINT):
            gains = [(info + p_ok[c] * (self.batch_information([*chosen, c]) - info), c) for c in pool]
            best, c = max(gains)
            if best <= info + 1e-9:
                break
            chosen.append(c)
            info = self.batch_information(chosen)
        repeats = [chosen[i % len(chosen)] for i in range(k - len(chosen))] if len(chosen) == MAX_JOINT else []
        return sorted(chosen + repeats)


def posterior_result(dag: Dag, gw: Gateway, model: CulpritPosterior, confidence: float,
                     finished: bool, mode: str, stuck: bool = False) -> DagResult:
    conflict = model.contradiction()
    if conflict is not None:
        return DagResult(None, (), (), len(gw.observations), gw.new_runs, gw.rounds, 0.0,
                         model.skipped, tuple(gw.observations), False, mode,
                         contradiction=conflict[0], conflict=conflict[1])
    members, mass = model.best_group()
    culprit = members[0] if len(members) == 1 else None
    return DagResult(
        culprit=culprit, candidates=members, parents=dag.parents_of(culprit) if culprit is not None else (),
        runs=len(gw.observations), new_runs=gw.new_runs, rounds=gw.rounds, confidence=mass,
        skipped=model.skipped, observations=tuple(gw.observations),
        complete=finished and (mass >= confidence or stuck), mode=mode,
        posterior=tuple((i, round(p, 6)) for i, p in model.top(5)),
        marginal=_rounded(model.marginal()),
        fail_prob=round(model.fail_prob(), 4))


def _rounded(marginal: np.ndarray) -> tuple[tuple[int, float], ...]:
    """(index, P) for every P that rounds above 0 at 6 decimals; below 4e-7 none does, so only
    the few above are rounded one by one."""
    out = []
    for i in np.flatnonzero(marginal > 4e-7).tolist():
        p = round(float(marginal[i]), 6)
        if p > 0:
            out.append((i, p))
    return tuple(out)


def _setup(dag: Dag, gw: Gateway, confidence: float, kwargs: dict[str, Any]) -> CulpritPosterior:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    model = CulpritPosterior.from_observations(dag, gw.observations, **kwargs)
    gw.listeners.append(model.observe)
    return model


def dag_bayes_bisect(dag: Dag, oracle: Oracle, *, confidence: float = 0.99,
                     observations: Iterable[Observation | Sequence[Any]] = (),
                     on_observation: Callable[[Observation], None] | None = None,
                     max_runs: int | None = None, fail_prob: float | None = None,
                     q_prior: tuple[float, float] = (1.0, 2.0), grid: int = 100) -> DagResult:
    """Sequential flake-aware search. Ends at `confidence`, when no run is informative, or on a
    contradiction; the run budget (default default_budget(n)) raises SearchStopped."""
    gw = Gateway(dag.n, oracle, observations=observations, repeat=True,
                 on_observation=on_observation, min_n=1)
    model = _setup(dag, gw, confidence, dict(fail_prob=fail_prob, q_prior=q_prior, grid=grid))
    budget = default_budget(dag.n) if max_runs is None else max_runs
    stuck = False

    def loop() -> None:
        nonlocal stuck
        while model.contradiction() is None and model.best_group()[1] < confidence:
            probe = model.next_probe(testable_odds(dag, model.skipped, model.tested))
            if probe is None:
                stuck = True
                return
            gw.spend(budget)
            gw.test(probe)

    return gw.guarded(loop, lambda finished: posterior_result(dag, gw, model, confidence, finished,
                                                              "dag-bayes", stuck))


def dag_bayes_multisect(dag: Dag, batch_oracle: BatchOracle, *, jobs: int, confidence: float = 0.99,
                        observations: Iterable[Observation | Sequence[Any]] = (),
                        on_observation: Callable[[Observation], None] | None = None,
                        max_runs: int | None = None, fail_prob: float | None = None,
                        q_prior: tuple[float, float] = (1.0, 2.0), grid: int = 100,
                        width: Callable[[], int] | None = None) -> DagResult:
    """Flaky k-way search: rounds of up to `jobs` probes of greatest joint information (with
    `width`: up to min(jobs, width()), the workers alive)."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    gw = Gateway(dag.n, batch_oracle=batch_oracle, observations=observations, repeat=True,
                 on_observation=on_observation, min_n=1)
    model = _setup(dag, gw, confidence, dict(fail_prob=fail_prob, q_prior=q_prior, grid=grid))
    budget = default_budget(dag.n) if max_runs is None else max_runs
    stuck = False

    def loop() -> None:
        nonlocal stuck
        while model.contradiction() is None and model.best_group()[1] < confidence:
            probes = model.next_batch(round_width(jobs, width), testable_odds(dag, model.skipped, model.tested))
            if not probes:
                stuck = True
                return
            gw.test_many(probes[:gw.spend(budget, len(probes))])

    return gw.guarded(loop, lambda finished: posterior_result(dag, gw, model, confidence, finished,
                                                              f"dag-bayes-multisect-{jobs}", stuck))
