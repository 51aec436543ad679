"""The posterior over the culprit and both failure rates on a commit DAG. Pure; O(N) memory.

Model (rates.py). Hypothesis c (the culprit, any candidate) and a pair of rates (p_old, p_new)
from the RateGrid. Commit i is on the new side iff c is an ancestor of i (or i itself), so

    P(a run of i fails | c, p_old, p_new) = p_new   if anc[i, c],   p_old   otherwise.

With F_c and P_c the fails and passes observed at descendants of c (c included), F and P all
fails and passes, and F_g, P_g the runs of the good endpoint (on the old side whatever c is):

    log p(c, pair | obs) = const + F_c log p_new + P_c log(1 - p_new)
                                 + (F - F_c + F_g) log p_old + (P - P_c + P_g) log(1 - p_old)
                                 + log prior(pair).

The old side's counts follow from (F_c, P_c) and the totals, so commits with equal (F_c, P_c)
share one row of likelihoods over the grid (a *class*: U classes, at most one per distinct count
pair, in practice a few dozen): memory is O(N + U x K) for K pairs, never N x N, and the mass of
a run failing at i is an ancestor sum of the Dag (ancestry.py). Under ONE_SIDED (p_old = 0) a
failure at i makes every culprit outside i's ancestors impossible: that is the deterministic
"failure is proof" of the flake-aware search before issue 23, recovered as a special case. The
posterior is a pure function of per-commit counts: `from_observations` replays a log into exactly
the posterior the search had.

Abstractions
------------
CulpritPosterior -- the joint posterior over (c, pair), its culprit marginal, both rates
                    (`rates()`: means and 95% intervals), the groups that skips make
                    indistinguishable (dag.groups) and their masses, and the information of
                    probes: `information_gain()` = I(C; Y_i) for every commit i at once (two
                    ancestor sums), `batch_information(S)` = I(C; Y_S) for probes run together
                    (repeats allowed), `next_probe()` and `next_batch()`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from bisectk.outcome import Outcome
from bisectk.search.dag import Dag, entr, explain, groups
from bisectk.search.gateway import InconsistentObservations, Observation
from bisectk.search.rates import ONE_SIDED, RatePrior, Rates, rates_of

_LN2 = math.log(2.0)
MAX_JOINT = 10      # probes weighed jointly (2^10 outcome patterns); more are repeats
_POPCOUNT = np.array([bin(i).count("1") for i in range(1 << MAX_JOINT)])


def make_prior(prior: RatePrior | None = None, fail_prob: float | None = None,
               q_prior: tuple[float, float] | None = None, grid: int | None = None) -> RatePrior:
    """The prior a search asked for: `prior`, or ONE_SIDED with a given p_new (`fail_prob`), its
    Beta (`q_prior`) or grid size: the keywords the searches always took."""
    base = prior or ONE_SIDED
    changes: dict[str, Any] = {}
    if fail_prob is not None:
        changes["known_new"] = fail_prob
    if q_prior is not None:
        changes["new"] = tuple(q_prior)
    if grid is not None:
        changes["grid"] = grid
    return RatePrior(**{**base.__dict__, **changes}) if changes else base


class CulpritPosterior:
    """Posterior over (culprit, p_old, p_new) on a DAG, rebuilt from pass/fail counts."""

    def __init__(self, dag: Dag, *, prior: RatePrior | None = None, fail_prob: float | None = None,
                 q_prior: tuple[float, float] | None = None, grid: int | None = None,
                 base: tuple[int, int] = (0, 0)):
        self.dag, n = dag, dag.n
        self.prior = make_prior(prior, fail_prob, q_prior, grid)
        self.grid = self.prior.build()
        self.q = self.grid.new                  # p_new of every pair (the one rate of ONE_SIDED)
        self.p_old = self.grid.old
        self.base = (int(base[0]), int(base[1]))   # (fails, passes) of the good endpoint
        self.fails_below = np.zeros(n, dtype=np.int64)      # F_c: fails observed at c and its descendants
        self.passes_below = np.zeros(n, dtype=np.int64)     # P_c
        self.total = [0, 0]                                 # F, P
        self.allowed = np.ones(n, dtype=bool)               # ancestors of every failing run
        self.tested = np.zeros(n, dtype=bool)
        self.own = np.zeros((n, 2), dtype=np.int64)         # fails and passes of commit i itself
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

    @property
    def one_sided(self) -> bool:
        """p_old = 0 in every pair: a failure proves the culprit is among its ancestors."""
        return not bool((self.p_old > 0).any())

    def observe(self, obs: Observation | Sequence[Any]) -> None:
        i, outcome = Observation.coerce(obs)
        self.observations.append(Observation(i, outcome))
        if outcome is Outcome.FAIL:
            row = self._ancestors(i)
            self.fails_below += row
            self.allowed &= row
            self.tested[i] = True
            self.total[0] += 1
            self.own[i, 0] += 1
        elif outcome is Outcome.PASS:
            self.passes_below += self._ancestors(i)
            self.tested[i] = True
            self.total[1] += 1
            self.own[i, 1] += 1
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
    def _live(self) -> np.ndarray:
        """Culprits with a chance: every commit, or under ONE_SIDED the ancestors of every failure."""
        return self.allowed if self.one_sided else np.ones(self.dag.n, dtype=bool)

    def _classes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(class of every commit, -1 where impossible; commits per class; log p(class, pair) up
        to a constant, U x K). Commits with equal (F_c, P_c) have equal likelihoods."""
        if "classes" not in self._cache:
            live = np.flatnonzero(self._live())
            f, p = self.fails_below[live], self.passes_below[live]
            keys, inverse, counts = np.unique(f * (int(p.max(initial=0)) + 1) + p, return_inverse=True,
                                              return_counts=True)
            first = np.zeros(keys.size, dtype=np.int64)
            first[inverse.reshape(-1)[::-1]] = np.arange(live.size)[::-1]   # a member of each class
            fu, pu = f[first], p[first]
            (big_f, big_p), (gf, gp) = self.total, self.base
            log = self.grid.loglik(fu, pu, big_f - fu + gf, big_p - pu + gp)
            cls = np.full(self.dag.n, -1, dtype=np.int64)
            cls[live] = inverse.reshape(-1)
            self._cache["classes"] = (cls, counts, log)
        return self._cache["classes"]

    def contradiction(self) -> tuple[str, tuple[int, ...]] | None:
        """Why no culprit fits (a failing run outside every allowed culprit's descendants, the good
        endpoint failing when p_old = 0, or a pass where p_new = 1 was given); None while the
        posterior is proper."""
        _, _, log = self._classes()
        if log.size and np.isfinite(log.max()):
            return None
        if self.base[0] and self.one_sided:
            return "the good endpoint failed, and this model has good never fail", ()
        if self.q.min() < 1.0:      # passes are only evidence: failures alone contradict
            return explain(self.dag, [o for o in self.observations if o.outcome is Outcome.FAIL])
        return explain(self.dag, self.observations)

    def _class_joint(self) -> np.ndarray:
        """p(c, pair | obs) for one commit c of each class (U x K); it sums to 1 over commits."""
        if "class_joint" not in self._cache:
            conflict = self.contradiction()
            if conflict is not None:
                raise InconsistentObservations(f"observations fit no culprit: {conflict[0]}")
            _, counts, log = self._classes()
            weights = np.exp(log - log.max())
            self._cache["class_joint"] = weights / (counts @ weights).sum()
        return self._cache["class_joint"]

    def _per_commit(self, per_class: np.ndarray) -> np.ndarray:
        """A class quantity spread over commits (0 where impossible)."""
        cls = self._classes()[0]
        out = np.zeros((self.dag.n,) + per_class.shape[1:])
        out[cls >= 0] = per_class[cls[cls >= 0]]
        return out

    @property
    def joint(self) -> np.ndarray:
        """p(c, pair | obs) as an n x K array (materialised for inspection: O(n x K))."""
        return self._per_commit(self._class_joint())

    def marginal(self) -> np.ndarray:
        if "marginal" not in self._cache:
            self._cache["marginal"] = self._per_commit(self._class_joint().sum(axis=1))
        return self._cache["marginal"]

    def pair_weights(self) -> np.ndarray:
        """p(pair | obs): the rates' posterior, the culprit summed out."""
        return self._classes()[1] @ self._class_joint()

    def fail_prob(self) -> float:
        """Posterior mean of p_new."""
        return float(self.pair_weights() @ self.q)

    def rates(self) -> Rates:
        """Both rates, with the runs on each side of the most probable culprit."""
        c = int(np.argmax(self.marginal()))
        new = int(self.fails_below[c] + self.passes_below[c])
        old = sum(self.total) - new + sum(self.base)
        return rates_of(self.grid, self.pair_weights(), old, new)

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

    def unconfirmed(self, culprit: int) -> list[int]:
        """Runs the named culprit still lacks before it is given: a failure of the culprit itself,
        and a pass of each of its parents (no confidence without confirmation)."""
        skipped = set(self.skipped)     # an untestable commit cannot be run for it
        need = [] if self.own[culprit, 0] or culprit in skipped else [culprit]
        return need + [p for p in self.dag.parents_of(culprit) if not self.own[p, 1] and p not in skipped]

    # -- information -------------------------------------------------------------------------------
    def information_gain(self) -> np.ndarray:
        """I(C; Y_i) in bits for one run of every commit i.

        With V1(c) = E[p_new; c], V0(c) = E[1 - p_new; c] and W1, W0 the same of p_old, a run of i
        fails with probability sum over all c of W1 + sum over i's ancestors of (V1 - W1), and
        H(Y_i | C) = sum over all c of h_old + sum over i's ancestors of (h_new - h_old), with
        h_new = entr(V1) + entr(V0) - entr(V1 + V0): one ancestor sum of two columns gives both.
        """
        if "gain" not in self._cache:
            joint = self._class_joint()
            counts = self._classes()[1]
            v1, v0 = joint @ self.q, joint @ (1.0 - self.q)
            w1, w0 = joint @ self.p_old, joint @ (1.0 - self.p_old)
            h_new = entr(v1) + entr(v0) - entr(v1 + v0)
            h_old = entr(w1) + entr(w0) - entr(w1 + w0)
            both = self.dag.ancestor_sums(self._per_commit(np.stack([v1 - w1, h_new - h_old], axis=1)))
            pf = np.clip(counts @ w1 + both[:, 0], 0.0, 1.0)
            h_cond = counts @ h_old + both[:, 1]
            self._cache["gain"] = np.maximum((entr(pf) + entr(1.0 - pf) - h_cond) / _LN2, 0.0)
        return self._cache["gain"]

    def next_probe(self, odds: np.ndarray | None = None, min_gain: float = 1e-9) -> int | None:
        """The commit of highest gain x P(testable), or None when no run is worth making."""
        gain = self.information_gain().copy()
        gain[list(self.skipped)] = -1.0
        score = gain * (odds if odds is not None else 1.0)
        i = int(np.argmax(score))
        return i if gain[i] > min_gain else None

    def _moments(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Per class, for m probes of which k are on the new side: V[u, k, a, b] = E[p_new^a
        (1-p_new)^(k-a) p_old^b (1-p_old)^(m-k-b); c] (0 beyond k and m-k) and H[u, k], the
        entropy of those m runs given c, times p(c). Runs on one side are exchangeable, so the
        C(k, a) C(m-k, b) patterns with a new-side and b old-side failures share one probability."""
        key = ("moments", m)
        if key not in self._cache:
            joint = self._class_joint()
            p = joint.sum(axis=1)
            powers = np.arange(m + 1)
            # A[k, j, a] = x^a (1-x)^(j-a) for a <= j, of x = p_new (A) and p_old (B), per pair
            def table(x: np.ndarray) -> np.ndarray:
                with np.errstate(invalid="ignore"):
                    up = x[:, None] ** powers[None, :]
                    down = (1.0 - x)[:, None] ** powers[None, :]
                out = np.zeros((x.size, m + 1, m + 1))
                for j in range(m + 1):
                    out[:, j, :j + 1] = up[:, :j + 1] * down[:, j::-1][:, :j + 1]
                return out
            a_tab, b_tab = table(self.q), table(self.p_old)
            v = np.zeros((joint.shape[0], m + 1, m + 1, m + 1))
            h = np.zeros((joint.shape[0], m + 1))
            for k in range(m + 1):
                v[:, k] = np.einsum("uk,ka,kb->uab", joint, a_tab[:, k, :], b_tab[:, m - k, :], optimize=True)
                weights = np.array([[math.comb(k, a) * math.comb(m - k, b) if a <= k and b <= m - k else 0
                                     for b in range(m + 1)] for a in range(m + 1)], dtype=float)
                h[:, k] = (entr(v[:, k]) * weights[None]).sum(axis=(1, 2)) - entr(p)
            self._cache[key] = (v, h)
        return self._cache[key]

    def batch_information(self, probes: Sequence[int]) -> float:
        """I(C; Y_S) in bits for the probes S run together (repeats of one commit allowed).

        Culprit c puts the probes in its cell D(c) on the new side (a bitmask). An outcome pattern
        y (the set of probes that failed) has probability sum over cells d of sum_{c in d}
        V[c, |d|, |y & d|, |y \\ d|]; H(Y | C) sums H[c, |D(c)|]. The patterns number 2^|S|,
        hence the cap MAX_JOINT on |S|.
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
        per_cell = np.zeros((cells.size, m + 1, m + 1))
        np.add.at(per_cell, inverse.reshape(-1), v[cls, sizes])
        patterns = np.arange(1 << m)
        full = (1 << m) - 1
        p_out = np.zeros(1 << m)
        for d, w in zip(cells.tolist(), per_cell):
            p_out += w[_POPCOUNT[patterns & d], _POPCOUNT[patterns & (full ^ d)]]
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
