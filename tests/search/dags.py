"""Commit DAGs for the DAG search tests, and their truth by brute force.

The truth never uses bisectk's ancestry: `ancestors` walks parents with plain sets, and a
commit is bad iff the culprit is in its ancestor set (itself included). `dense_best_probe` and
`dense_split_probes` are the probe rules of bisectk.search.dag_bisect written over a dense
ancestry matrix (the N x N form bisectk no longer builds): the reference the O(N) code must match. Index space as in
bisectk.search.dag: candidates 0..n-1 in topological order, parents among the candidates, the bad
commit n-1 a descendant of every candidate. Nothing here runs a process.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from hypothesis import strategies as st

from bisectk.outcome import Outcome

Parents = list[tuple[int, ...]]


def ancestors(parents: Sequence[Sequence[int]]) -> list[set[int]]:
    """Ancestor set of every candidate, itself included, by walking parents."""
    out = []
    for i in range(len(parents)):
        seen, stack = {i}, [i]
        while stack:
            for p in parents[stack.pop()]:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        out.append(seen)
    return out


def truth_group(anc: list[set[int]], culprit: int, untestable: Iterable[int] = ()) -> set[int]:
    """Every culprit that no testable commit tells apart from `culprit`."""
    skip = set(untestable)
    testable = [j for j in range(len(anc)) if j not in skip]
    sig = [culprit in anc[j] for j in testable]
    return {c for c in range(len(anc)) if [c in anc[j] for j in testable] == sig}


def deterministic(anc: list[set[int]], culprit: int, untestable: Iterable[int] = (),
                  calls: list[int] | None = None) -> Callable[[int], Outcome]:
    skip = set(untestable)

    def oracle(i: int) -> Outcome:
        if calls is not None:
            calls.append(i)
        if i in skip:
            return Outcome.UNRESOLVED
        return Outcome.FAIL if culprit in anc[i] else Outcome.PASS
    return oracle


def flaky(anc: list[set[int]], culprit: int, q: float, rng: random.Random,
          untestable: Iterable[int] = ()) -> Callable[[int], Outcome]:
    """A bad commit fails each run with probability q; a good one never fails."""
    skip = set(untestable)

    def oracle(i: int) -> Outcome:
        if i in skip:
            return Outcome.UNRESOLVED
        return Outcome.FAIL if culprit in anc[i] and rng.random() < q else Outcome.PASS
    return oracle


# -- git bisect's own probe rule (bisect.c), over index space --------------------------------------
def _sqrti(val: int) -> int:
    if not val:
        return 0
    x = float(val)
    while True:
        y = (x + val / x) / 2
        d, x = abs(y - x), y
        if d < 0.5:
            return int(x)


def _prn(count: int) -> int:
    return ((count * 1103515245 + 12345) & 0xFFFFFFFF) // 65536 % 32768


def git_bisect(parents, anc, oracle, oid) -> tuple[int, set[int]]:
    """git bisect run's rule: (runs, answer). The candidates are the ancestors of the last bad
    commit that no good one reaches, skipped ones counted in the weights; without skips the one of
    max min(w, N - w) (ties: the oldest); once one is known, all sorted by that distance (ties:
    `oid`, a stand-in object id per commit), and when the best is skipped, skip_away's pick among
    the others. It ends on the bad commit: {bad}, or it and the skipped candidates left."""
    n = len(parents)
    bad, goods, skipped, runs = n - 1, [], set(), 0
    while True:
        cand = set(anc[bad]).difference(*(anc[g] for g in goods))
        size = len(cand)
        dist = {c: min(len(anc[c] & cand), size - len(anc[c] & cand)) for c in cand}
        ranked = sorted(cand, key=lambda c: (-dist[c], oid[c] if skipped else c))
        if ranked[0] in skipped:
            rest = [c for c in ranked if c not in skipped]
            prn = _prn(len(rest))
            index = (len(rest) * prn // 32768) * _sqrti(prn) // _sqrti(32768)
            pick = rest[0]
            for i, c in enumerate(rest):
                if i == index:
                    pick = c if c != bad else (rest[i - 1] if i else rest[0])
                    break
        else:
            pick = ranked[0]
        if pick == bad:
            return runs, {bad} | (cand & skipped)
        runs += 1
        outcome = oracle(pick).value
        if outcome == "fail":
            bad = pick
        elif outcome == "pass":
            goods.append(pick)
        else:
            skipped.add(pick)


def batch(oracle: Callable[[int], Outcome]) -> Callable[[list[int]], list[Outcome]]:
    return lambda idx: [oracle(i) for i in idx]


def close(parents: Parents) -> Parents:
    """Append the bad commit: a merge of every commit that has no child yet (an octopus when
    there are several), so that it descends from every candidate."""
    has_child = {p for ps in parents for p in ps}
    return [*parents, tuple(i for i in range(len(parents)) if i not in has_child)]


@st.composite
def dags(draw, max_n: int = 40) -> Parents:
    """Random DAGs: plain commits, new roots (branches forked on the good side), merges of two
    and octopus merges of three or four, criss-crosses by chance; the bad commit merges the rest."""
    n = draw(st.integers(1, max_n))
    parents: Parents = []
    for i in range(n - 1):
        k = draw(st.sampled_from((0, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4))) if i else 0
        if k == 0:
            ps: tuple[int, ...] = ()
        elif k == 1:   # mostly extend a recent commit, as a branch does
            ps = (draw(st.integers(max(0, i - 4), i - 1)),)
        else:
            ps = tuple(sorted(draw(st.sets(st.integers(0, i - 1), min_size=min(k, i), max_size=min(k, i)))))
        parents.append(ps)
    return close(parents)


def history(n: int, rng: random.Random, merge_rate: float = 0.25) -> Parents:
    """A branchy history of n candidates: a mainline, feature branches (some forked on the good
    side), merges into the mainline (some branches merged twice), back-merges of the mainline into
    a branch, octopus merges; the bad commit merges whatever is still open."""
    parents: Parents = [()]
    main, branches = 0, [0] if rng.random() < 0.5 else []
    while len(parents) < n - 1:
        i, r = len(parents), rng.random()
        if branches and r < merge_rate:
            b = rng.randrange(len(branches))
            if len(branches) > 2 and rng.random() < 0.1:            # octopus
                picked = rng.sample(range(len(branches)), 3)
                parents.append((main, *sorted({branches[o] for o in picked} - {main})))
                branches = [t for o, t in enumerate(branches) if o not in picked]
                main = i
            elif rng.random() < 0.15:                              # back-merge into the branch
                parents.append(tuple(sorted({branches[b], main})))
                branches[b] = i
            else:
                parents.append(tuple(sorted({main, branches[b]})))
                main = i
                if rng.random() < 0.7:
                    branches.pop(b)                                # else: merged again later
        elif r < merge_rate + 0.08:
            parents.append(() if rng.random() < 0.1 else (rng.choice([main, *branches]),))
            branches.append(i)
        elif branches and rng.random() < 0.6:
            b = rng.randrange(len(branches))
            parents.append((branches[b],))
            branches[b] = i
        else:
            parents.append((main,))
            main = i
    return close(parents)


# Named shapes: indices in topological order, parents in git's order (first parent first), ()
# = forked on the good side (commit 0 from --good itself, the others from before it).
# Octopus: mainline 0, 3; branches 1 and 2 forked before good; 4 merges 3, 1 and 2 at once.
OCTOPUS: Parents = [(), (), (), (0,), (3, 1, 2), (4,), (5,)]
# Criss-cross: branches A (1) and B (2); 3 merges B into A while 4 merges A into B; 7 joins them.
CRISS_CROSS: Parents = [(), (0,), (0,), (1, 2), (2, 1), (3,), (4,), (5, 6)]
# Side branch merged twice: s1 (1) and s2 (2) forked before good; the mainline (0) merges s2 at
# 3; the branch goes on with s3 (4), merged again at 6.
TWICE_MERGED: Parents = [(), (), (1,), (0, 2), (2,), (3,), (5, 4), (6,)]


# -- the dense reference of the probe rules ---------------------------------------------------------
def _entr(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def dense_matrix(anc: list[set[int]]) -> np.ndarray:
    """m[i, c] = c is an ancestor of i (or i itself)."""
    m = np.zeros((len(anc), len(anc)), dtype=bool)
    for i, a in enumerate(anc):
        m[i, sorted(a)] = True
    return m


def dense_best_probe(anc, allowed, eligible, odds):
    m = dense_matrix(anc)
    size = int(allowed.sum())
    if size <= 1:
        return None
    w = m.astype(float) @ allowed.astype(float)
    useful = eligible & (w > 0) & (w < size) & (odds > 0)
    if not useful.any():
        return None
    frac = w / size
    return int(np.argmax(np.where(useful, odds * (_entr(frac) + _entr(1.0 - frac)), -1.0)))


def dense_split_probes(anc, allowed, eligible, odds, k):
    m = dense_matrix(anc)
    size = int(allowed.sum())
    if size <= 1:
        return []
    w = np.rint(m.astype(float) @ allowed.astype(float))
    pool = np.flatnonzero(eligible & (w > 0) & (w < size) & (odds > 0))
    if pool.size <= k:
        return pool.tolist()
    hits = m[np.ix_(pool, np.flatnonzero(allowed))].astype(float)

    def cells(probes):
        codes = np.zeros(hits.shape[1], dtype=np.int64)
        for t, j in enumerate(probes):
            codes |= hits[j].astype(np.int64) << t
        return np.unique(codes, return_inverse=True)[1].reshape(-1)

    def entropy(probes):
        return float(_entr(np.bincount(cells(probes)) / hits.shape[1]).sum())

    def adding(others):
        labels = cells(others)
        onehot = np.zeros((size, labels.max() + 1))
        onehot[np.arange(size), labels] = 1.0
        n_cell = onehot.sum(axis=0)
        inside = hits @ onehot
        base = float(_entr(n_cell / size).sum())
        split = (_entr(inside / size) + _entr((n_cell - inside) / size)).sum(axis=1)
        return base + odds[pool] * (split - base)

    p_ok, width, chosen = odds[pool], size / (k + 1), []
    for t in range(1, k + 1):
        closeness = p_ok * np.clip(1.0 - ((w[pool] - t * width) / width) ** 2, 1e-6, None)
        closeness[chosen] = -1.0
        chosen.append(int(np.argmax(closeness)))
    for _ in range(10):
        improved = False
        for s in range(k):
            others = chosen[:s] + chosen[s + 1:]
            score = adding(others)
            score[others] = -np.inf
            best = int(np.argmax(score))
            if score[best] > score[chosen[s]] + 1e-12:
                chosen[s], improved = best, True
        if not improved:
            break
    full = entropy(chosen)
    for s in reversed(range(len(chosen))):
        if len(chosen) > 1 and entropy(chosen[:s] + chosen[s + 1:]) >= full - 1e-12:
            del chosen[s]
    return sorted(pool[chosen].tolist())


def reference_odds(parents, skipped, tested) -> np.ndarray:
    """dag.testable_odds by plain breadth-first walks (the skips walk first and win ties)."""
    from bisectk.search.dag import UNTESTABLE_RATE, _LAMBDA
    from collections import deque
    n = len(parents)
    children = [[] for _ in range(n)]
    for i, ps in enumerate(parents):
        for p in ps:
            children[p].append(i)
    known = {int(i): True for i in np.flatnonzero(tested)}
    known.setdefault(n - 1, True)
    known.update({int(s): False for s in skipped})

    def walk(step):
        dist, state = [None] * n, [None] * n
        queue = deque()
        for i in sorted(known, key=known.__getitem__):
            dist[i], state[i] = 0, known[i]
            queue.append(i)
        while queue:
            i = queue.popleft()
            for j in step[i]:
                if dist[j] is None:
                    dist[j], state[j] = dist[i] + 1, state[i]
                    queue.append(j)
        return dist, state

    def t(steps, x, y):
        pi_y = 1.0 - UNTESTABLE_RATE if y else UNTESTABLE_RATE
        return pi_y + _LAMBDA ** steps * ((x == y) - pi_y)

    a, sa = walk(children)
    b, sb = walk(parents)
    out = []
    for i in range(n):
        w = {}
        for z in (True, False):
            before = t(a[i], sa[i], z) if a[i] is not None else (1.0 - UNTESTABLE_RATE if z else UNTESTABLE_RATE)
            after = t(b[i], z, sb[i]) if b[i] is not None else 1.0
            w[z] = before * after
        out.append(w[True] / (w[True] + w[False]))
    return np.array(out)
