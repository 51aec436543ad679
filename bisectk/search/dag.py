"""The commit DAG of a history search, and the answer a DAG search gives. Pure: no git, no processes.

Semantics (git bisect's)
------------------------
The candidates are the commits reachable from the bad commit and not from the good one: merges and
side branches included (not only those on an ancestry path). The *culprit*, or first bad commit,
is one candidate, and a commit is bad iff the culprit is among its ancestors, itself included: a
merge is bad when either side brought the culprit in, and a commit on a side branch is bad only
if it descends from the culprit. The culprit's parents are good by construction (none descends
from it), so "last good" means the culprit's parents, not the commit before it in some list.

Index space
-----------
Candidates are 0..n-1 in a topological order (parents before children). `parents[i]` holds i's
parents among the candidates; a parent outside them is an ancestor of a good commit, so good. The
bad commit is n-1 and descends from every candidate (it may be the culprit itself). The good
commit is no candidate. A chain (`Dag.chain(n)`: the `--first-parent` mainline without its good
commit) is a DAG too: there a search is plain bisection over a list (git's `--first-parent`).

Abstractions
------------
Dag           -- (ancestry.py) parents, children, ancestor sets and ancestor sums in O(N) memory:
                 "c is an ancestor of i or i itself" is "commit i is bad if c is the culprit".
                 Searches read ancestor sets (what a run of i can tell), descendant sets (which
                 commits a culprit makes bad) and ancestor sums (git's weight; failure masses).
Narrowing     -- the deterministic state derived from observations: the culprits still allowed
                 (ancestors of every FAIL, ancestors of no PASS), tested and untestable commits.
explain       -- why observations admit no culprit, in words, with the commits involved.
groups        -- culprits that no testable commit tells apart (skips merge them): on a chain, a
                 culprit joins the next one whenever it is untestable.
testable_odds -- where untestable commits probably are: a two-state Markov chain along the
                 history, read from a commit's nearest known ancestor and descendant.
stretch       -- how far an untestable stretch around a commit may reach (to its nearest tested
                 commits): a run there that cannot test is lost only if the culprit is elsewhere.
Confirmation  -- the runs that confirmed (or contradicted) a deterministic answer: the culprit
                 failing again, its parents passing again (confirm.py makes them).
DagResult     -- the answer every DAG search returns (and SearchStopped carries).

Memory is O(N) (ancestry.py: O(N + X) with X the sizes of the merges' extra sets, about N).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bisectk.outcome import Outcome
from bisectk.search.ancestry import Dag
from bisectk.search.gateway import Gateway, Observation
from bisectk.search.rates import Rates

__all__ = ["Dag", "Narrowing", "DagResult", "Confirmation", "explain", "groups", "testable_odds",
           "stretch", "narrowing_result", "entr"]

# Untestable commits come in runs (a broken build lasts until its fix). A two-state Markov chain
# along the history models that: runs of untestable commits of mean length CLUSTER_LEN, one commit
# in UNTESTABLE_RATE untestable overall; testable_odds reads it along the DAG. It only steers
# probes; answers never depend on it.
CLUSTER_LEN, UNTESTABLE_RATE = 8.0, 0.1
_STAY = 1.0 - 1.0 / CLUSTER_LEN
_LAMBDA = _STAY - UNTESTABLE_RATE / (1.0 - UNTESTABLE_RATE) * (1.0 - _STAY)


def entr(x: np.ndarray | float) -> np.ndarray:
    """-x ln x elementwise, 0 at 0 (scipy.special.entr without importing scipy)."""
    x = np.asarray(x, dtype=float)
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, -x * np.log(safe), 0.0)


def _nearest_known(dag: Dag, known: dict[int, bool], down: bool) -> tuple[np.ndarray, np.ndarray]:
    """For every commit, the edges to its nearest known ancestor (down=True: walking from the
    known commits to their children) or descendant, and whether that one is testable; an
    untestable one wins a tie (the breadth-first walk starts from the skips)."""
    sources = np.full(dag.n, -1, dtype=np.int64)
    for i, ok in known.items():
        sources[i] = 1 if ok else 0
    dist, kind = dag.distances(sources, down)
    return dist, kind == 1


def testable_odds(dag: Dag, skipped: Iterable[int], tested: np.ndarray) -> np.ndarray:
    """P(testable) of every commit, given the known untestable (`skipped`) and testable ones.

    On a chain, a commit's probability follows from its nearest known neighbour on each side; on
    a DAG those become its nearest known ancestor (distance a, state s_a) and nearest known
    descendant (b, s_b), and

        P(ok) = T^a[s_a, ok] T^b[ok, s_b] / sum_z T^a[s_a, z] T^b[z, s_b],

    with T^n[x, y] = pi_y + lambda^n (1[x = y] - pi_y) the two-state chain; a side with no known
    commit drops out (pi in place of T^a, 1 in place of T^b).
    The bad commit counts as testable: the caller verified it. All ones while nothing is skipped.
    """
    skipped = list(skipped)
    if not skipped:
        return np.ones(dag.n)
    known = {int(i): True for i in np.flatnonzero(tested)}
    known.setdefault(dag.n - 1, True)
    known.update({int(s): False for s in skipped})
    a, sa = _nearest_known(dag, known, down=True)
    b, sb = _nearest_known(dag, known, down=False)
    weight = {}
    for z in (True, False):
        pz = 1.0 - UNTESTABLE_RATE if z else UNTESTABLE_RATE
        before = np.where(np.isfinite(a), _step(a, sa, z), pz)      # T^a[s_a, z]
        after = np.where(np.isfinite(b), _step(b, z, sb), 1.0)      # T^b[z, s_b]
        weight[z] = before * after
    return weight[True] / (weight[True] + weight[False])


def stretch(dag: Dag, tested: np.ndarray) -> np.ndarray:
    """How many commits an untestable stretch around each commit may span: its edges to the
    nearest tested ancestor and to the nearest tested descendant (the bad commit counts), each
    at most CLUSTER_LEN. A run that finds commit j untestable is not lost when the culprit lies in
    that stretch: the search would have had to run j anyway (it splits the culprit's group)."""
    sources = np.where(tested, 1, -1)
    sources[dag.n - 1] = 1
    ups, _ = dag.distances(sources, down=True, limit=int(CLUSTER_LEN))      # farther reads as inf: capped below
    downs, _ = dag.distances(sources, down=False, limit=int(CLUSTER_LEN))
    return np.minimum(ups, CLUSTER_LEN) + np.minimum(downs, CLUSTER_LEN)


def _step(n: np.ndarray, x: np.ndarray | bool, y: np.ndarray | bool) -> np.ndarray:
    """T^n[x, y] of the two-state chain (True = testable), elementwise; inf steps read as 0."""
    n = np.where(np.isfinite(n), n, 0.0)
    pi_y = np.where(y, 1.0 - UNTESTABLE_RATE, UNTESTABLE_RATE)
    return pi_y + np.power(_LAMBDA, n) * (np.equal(x, y) - pi_y)


def groups(dag: Dag, skipped: Iterable[int]) -> np.ndarray:
    """A label per culprit (the smallest index of its group); equal labels = no testable commit
    tells the two culprits apart.

    Culprits c and c' differ only through a testable commit j that is bad under one and good under
    the other. So a culprit's signature is the set of testable commits it makes bad, its testable
    descendants. A testable c is in its own signature and all of it descends from c, so two
    testable culprits never share one, and an untestable u can join only the testable commit
    min(signature of u), when that commit's signature is the same; otherwise u groups with the
    untestable commits of its signature. One descendant set per untestable commit: O(N) each.
    """
    labels = np.arange(dag.n)
    skip = sorted({int(s) for s in skipped})
    if not skip:
        return labels
    testable = np.ones(dag.n, dtype=bool)
    testable[skip] = False
    by_signature: dict[bytes, int] = {}
    for u in skip:
        sig = dag.descendants([u]) & testable
        key = np.packbits(sig).tobytes()
        if key in by_signature:
            labels[u] = labels[by_signature[key]]
            continue
        by_signature[key] = u
        hits = np.flatnonzero(sig)
        if hits.size and np.array_equal(dag.descendants([int(hits[0])]) & testable, sig):
            labels[u] = hits[0]
    return labels


class _AncestorCache:
    """Ancestor sets of the few commits that `explain` compares, computed once each."""

    def __init__(self, dag: Dag):
        self.dag, self.rows = dag, {}

    def __getitem__(self, i: int) -> np.ndarray:
        if i not in self.rows:
            self.rows[i] = self.dag.ancestors(i)
        return self.rows[i]


def explain(dag: Dag, observations: Sequence[Observation]) -> tuple[str, tuple[int, ...]]:
    """Why no culprit fits deterministic observations: a sentence and the commits it names."""
    passed = sorted({o.index for o in observations if o.outcome is Outcome.PASS})
    failed = sorted({o.index for o in observations if o.outcome is Outcome.FAIL})
    both = sorted(set(passed) & set(failed))
    if both:
        return (f"commit #{both[0]} both passed and failed: the test is intermittent "
                "(use the flake-aware search)", (both[0],))
    if dag.n - 1 in passed:
        return f"the bad commit #{dag.n - 1} passed", (dag.n - 1,)
    anc = _AncestorCache(dag)
    for f in failed:
        for p in passed:
            if f <= p and anc[p][f]:
                return (f"commit #{f} failed but its descendant #{p} passed: a good commit "
                        "cannot contain the first bad one", (f, p))
    for a in failed:
        for b in failed:
            if a < b and not (anc[a] & anc[b]).any():
                return (f"commits #{a} and #{b} failed but share no candidate ancestor: the "
                        "failure has more than one cause, or the good commit is not good", (a, b))
    return ("no candidate is an ancestor of every failing commit and of no passing one: the "
            "failure has more than one cause, or the good commit is not good",
            tuple(failed) + tuple(passed))


class Narrowing:
    """Deterministic evidence on a DAG: allowed culprits, tested and untestable commits."""

    def __init__(self, dag: Dag, observations: Iterable[Observation] = ()):
        self.dag = dag
        self.allowed = np.ones(dag.n, dtype=bool)
        self.tested = np.zeros(dag.n, dtype=bool)
        self.unresolved = np.zeros(dag.n, dtype=bool)
        self.observations: list[Observation] = []
        for obs in observations:
            self.observe(obs)

    def observe(self, obs: Observation) -> None:
        i, outcome = Observation.coerce(obs)
        self.observations.append(Observation(i, outcome))
        if outcome is Outcome.FAIL:         # the culprit is among i's ancestors
            self.allowed &= self.dag.ancestors(i)
            self.tested[i] = True
        elif outcome is Outcome.PASS:       # ... or among none of them
            self.allowed &= ~self.dag.ancestors(i)
            self.tested[i] = True
        else:
            self.unresolved[i] = True

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(np.flatnonzero(self.unresolved & ~self.tested).tolist())

    @property
    def eligible(self) -> np.ndarray:
        """Commits worth a run: neither tested nor known untestable."""
        return ~self.tested & ~self.unresolved

    def odds(self) -> np.ndarray:
        return testable_odds(self.dag, self.skipped, self.tested)

    def stretch(self) -> np.ndarray | None:
        """dag.stretch once anything is known untestable, else None (nothing to weigh)."""
        return stretch(self.dag, self.tested) if self.skipped else None

    def contradiction(self) -> tuple[str, tuple[int, ...]] | None:
        return None if self.allowed.any() else explain(self.dag, self.observations)


@dataclass(frozen=True)
class Confirmation:
    """Facts of the confirmation of a deterministic answer (confirm.py): how many passes each
    parent needed (`repeats`, from the observed failure rate and the asked confidence), every
    confirmation run as (index, outcome) in the order made, and the run that contradicted the
    answer, if one did."""

    culprit: int
    repeats: int
    runs: tuple[tuple[int, str], ...]
    contradicted: tuple[int, str] | None = None
    parents: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.contradicted is None

    def to_dict(self) -> dict[str, Any]:
        return {"culprit": self.culprit, "repeats": self.repeats, "parents": list(self.parents),
                "runs": [list(r) for r in self.runs], "ok": self.ok,
                "contradicted": list(self.contradicted) if self.contradicted else None}


@dataclass(frozen=True)
class DagResult:
    """The answer of a DAG search.

    `candidates` are the commits that may still be the culprit (topological order), `confidence`
    the probability that the culprit is among them (1.0 for a deterministic search). `culprit` is
    set only when one candidate is left; `parents` are its parents among the candidates (the
    "last good" commits; a culprit whose parents are all outside the candidates has ()).
    `contradiction` explains why observations fit no culprit (then `candidates` is empty and
    `conflict` names the commits involved). `rates` are both failure rates (the posterior's in a
    flake-aware search, counted for a deterministic one); `separable` is False when a flake-aware
    search ended short of its confidence (its budget spent: the rates could not be told apart),
    with `more_runs` the runs that would probably separate them. `confirmation` holds the runs
    that confirmed a deterministic answer; `switched` = (what, commit) when one contradicted it
    and the search went on in the flake model.
    """

    culprit: int | None
    candidates: tuple[int, ...]
    parents: tuple[int, ...]
    runs: int                   # observations in the log, replayed ones included
    new_runs: int               # oracle calls made by this search
    rounds: int                 # oracle rounds of this search: batches for multisection
    confidence: float
    skipped: tuple[int, ...]
    observations: tuple[Observation, ...]
    complete: bool              # False when stopped, out of budget or contradicted
    mode: str
    posterior: tuple[tuple[int, float], ...] = ()   # (index, P(culprit = index)), best first
    marginal: tuple[tuple[int, float], ...] = ()    # every (index, P) that rounds above 0, in index order
    fail_prob: float | None = None                  # posterior mean of q (flake-aware modes)
    contradiction: str | None = None
    conflict: tuple[int, ...] = ()
    rates: Rates | None = None
    separable: bool | None = None
    more_runs: int | None = None
    confirmation: Confirmation | None = None
    switched: tuple[str, int] | None = None

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1

    @property
    def found(self) -> bool:
        return self.culprit is not None and self.complete

    def evidence(self, i: int) -> dict[str, int]:
        """Runs of commit i in the log, by outcome."""
        counts = {o.value: 0 for o in Outcome}
        for obs in self.observations:
            if obs.index == i:
                counts[obs.outcome.value] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "culprit": self.culprit, "candidates": list(self.candidates),
            "ambiguous": self.ambiguous, "found": self.found,
            "parents": [{"index": p, **self.evidence(p)} for p in self.parents],
            "runs": self.runs, "new_runs": self.new_runs, "rounds": self.rounds,
            "confidence": round(self.confidence, 6), "skipped": list(self.skipped),
            "complete": self.complete, "mode": self.mode, "fail_prob": self.fail_prob,
            "posterior": [[i, round(p, 6)] for i, p in self.posterior],
            "contradiction": self.contradiction, "conflict": list(self.conflict),
            "rates": self.rates.to_dict() if self.rates else None, "separable": self.separable,
            "more_runs": self.more_runs,
            "confirmation": self.confirmation.to_dict() if self.confirmation else None,
            "switched": list(self.switched) if self.switched else None,
            "observations": [o.to_json() for o in self.observations],
        }


def narrowing_result(dag: Dag, gw: Gateway, state: Narrowing, complete: bool, mode: str) -> DagResult:
    """The deterministic answer: every allowed culprit, or the contradiction."""
    conflict = state.contradiction()
    candidates = tuple(np.flatnonzero(state.allowed).tolist())
    culprit = candidates[0] if len(candidates) == 1 else None
    return DagResult(
        culprit=culprit, candidates=candidates,
        parents=dag.parents_of(culprit) if culprit is not None else (),
        runs=len(gw.observations), new_runs=gw.new_runs, rounds=gw.rounds,
        confidence=0.0 if conflict else 1.0,
        skipped=state.skipped, observations=tuple(gw.observations),
        complete=complete and conflict is None, mode=mode,
        contradiction=conflict[0] if conflict else None, conflict=conflict[1] if conflict else ())
