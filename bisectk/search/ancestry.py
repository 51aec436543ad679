"""Ancestry on a commit DAG in O(N) memory: ancestor sums, ancestor and descendant sets. Pure.

A history search asks three things of the DAG, over and over:
- for every commit i, the sum of a vector over i's ancestors (itself included): git's weight
  (how many allowed culprits a FAIL of i keeps) and the failure mass of the flaky search;
- the ancestor set of one commit (what a run of it tells);
- the descendant set of a few commits (which commits a culprit makes bad).
A dense N x N ancestry matrix answers all three and costs N^2 bytes; this module answers them in
O(N + X) memory and time per question, X defined below, and never holds an N x N anything.

The decomposition
-----------------
Pick one parent of every commit, its *tree parent* (the first parent among the candidates): the
tree parents form a forest, and for a merge m the other parents bring in its *extra* set

    extra(m) = ancestors(other parents of m) \\ ancestors(tree parent of m).

Then, because ancestors(i) = {i} + ancestors(tree parent) + extra(i) and the three are disjoint,

    ancestors(i) = union over the tree path x = i, tree(i), tree(tree(i)), ... of {x} + extra(x)
    sum of v over ancestors(i) = path sum over that tree path of c,  c(x) = v(x) + sum of v over extra(x).

Extra sets are computed once, each by painting down from the merge's parents in decreasing
index order (git's paint_down_to_common): a node is popped only after every descendant that could
paint it, so a node reached from the other parents and never from the tree parent is in the extra
set, and the walk ends as soon as no such node is left to pop. For histories where each commit is
merged into the mainline once, X = sum of |extra(m)| is at most N; a commit counts once more for
every further line of history it is merged into separately (e.g. into each of several long-lived
branches).

Path sums along the forest use its *segments*: maximal runs of consecutive indices k whose tree
parent is k - 1. Within a segment a path sum is a cumulative sum; across segments it is a sum
over the tree of segments, done by pointer doubling (log2 of the segment depth vector steps, no
Python loop per commit). A chain (--first-parent) is one segment: every question is one numpy
cumsum or slice.

Abstractions
------------
Dag -- candidates 0..n-1 in topological order (parents first) with their parents among the
       candidates: `ancestor_sums(v)`, `weights(allowed)`, `ancestors(i)`, `descendants(set)`,
       `is_bad(i, c)`, `parents_of(i)`, `children_of(i)`, `distances(sources)`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

import numpy as np

# Breadth-first distances (for testable_odds) stop here: the two-state chain they feed forgets
# its start at lambda^d < 1e-17 beyond about 270 edges, so a farther commit changes nothing a
# float can hold.
MAX_DISTANCE = 300


def _gather(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR neighbours of `nodes`, and for each the position in `nodes` it came from."""
    starts, ends = ptr[nodes], ptr[nodes + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=idx.dtype), np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(nodes.size), lengths)
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return idx[starts[owner] + offsets], owner


class Dag:
    """Candidates 0..n-1 in topological order and their parents among the candidates."""

    def __init__(self, parents: Sequence[Iterable[int]]):
        lists = [list(dict.fromkeys(int(p) for p in ps)) for ps in parents]   # order kept, duplicates dropped
        ptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(ps) for ps in lists], out=ptr[1:])
        idx = np.fromiter((p for ps in lists for p in ps), dtype=np.int64, count=int(ptr[-1]))
        self._build(ptr, idx)

    @classmethod
    def from_csr(cls, ptr: np.ndarray, idx: np.ndarray) -> Dag:
        """From CSR arrays: the parents of i are idx[ptr[i]:ptr[i+1]], first parent first, no
        duplicates (what bisectk.spaces.commits lists)."""
        dag = cls.__new__(cls)
        dag._build(np.asarray(ptr, dtype=np.int64), np.asarray(idx, dtype=np.int64))
        return dag

    @classmethod
    def chain(cls, n: int) -> Dag:
        """A linear history of n candidates: i's only parent is i-1."""
        if n < 1:
            raise ValueError("a DAG search needs at least one candidate (the bad commit)")
        ptr = np.concatenate([[0], np.arange(n, dtype=np.int64)])
        return cls.from_csr(ptr, np.arange(n - 1, dtype=np.int64))

    # -- construction --------------------------------------------------------------------------
    def _build(self, ptr: np.ndarray, idx: np.ndarray) -> None:
        n = ptr.size - 1
        if n < 1:
            raise ValueError("a DAG search needs at least one candidate (the bad commit)")
        self.n = n
        child = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        bad = np.flatnonzero((idx < 0) | (idx >= child))
        if bad.size:
            p, i = int(idx[bad[0]]), int(child[bad[0]])
            raise ValueError(f"parent {p} of candidate {i} is not an earlier candidate: "
                             "candidates must be in topological order, parents first")
        self._ptr, self._idx = ptr, idx
        counts = np.diff(ptr)
        self.tree = np.full(n, -1, dtype=np.int64)     # the tree parent: first parent, or -1
        self.tree[counts > 0] = idx[ptr[:-1][counts > 0]]
        self._cptr: np.ndarray | None = None        # children, built on demand
        self._cidx: np.ndarray | None = None
        self._segments()
        self._extras(np.flatnonzero(counts > 1))
        if self.is_chain:
            return
        lost = np.flatnonzero(~self.ancestors(n - 1))
        if lost.size:
            raise ValueError(f"the bad commit (index {n - 1}) must descend from every candidate; "
                             f"{lost[:5].tolist()} do not")

    def _segments(self) -> None:
        n, tree = self.n, self.tree
        starts = np.flatnonzero(tree != np.arange(n) - 1)
        if starts.size == 0 or starts[0] != 0:      # node 0 (tree -1 = 0 - 1) starts one too
            starts = np.concatenate([[0], starts])
        self._seg_start = starts
        self._seg = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))
        entry = tree[starts]                        # the node a segment hangs from, -1 for a root
        self._seg_entry = entry
        parent = np.where(entry >= 0, self._seg[np.maximum(entry, 0)], -1)
        self._seg_parent = parent
        # pointer-doubling tables over segments, with a sentinel segment S (sum 0, its own parent)
        s = starts.size
        jump = np.where(parent >= 0, parent, s)
        jump = np.append(jump, s)
        self._jumps: list[np.ndarray] = []
        while (jump[:s] != s).any():
            self._jumps.append(jump)
            jump = jump[jump]
        # an Euler tour of the segment tree: u is an ancestor-or-self of v iff tin[u] <= tin[v] < tout[u]
        self._tin = np.zeros(s, dtype=np.int64)
        self._tout = np.zeros(s, dtype=np.int64)
        if s == 1:
            self._tout[0] = 1
            return
        order = np.argsort(parent, kind="stable")
        kids_ptr = np.searchsorted(parent[order], np.arange(-1, s + 1) - 0.5)   # children of -1..s-1
        kids = order.tolist()
        kp = kids_ptr.tolist()
        clock, tin, tout = 0, [0] * s, [0] * s
        stack = [(u, False) for u in reversed(kids[kp[0]:kp[1]])]
        while stack:
            u, done = stack.pop()
            if done:
                tout[u] = clock
                continue
            tin[u] = clock
            clock += 1
            stack.append((u, True))
            stack.extend((v, False) for v in reversed(kids[kp[u + 1]:kp[u + 2]]))
        self._tin, self._tout = np.array(tin), np.array(tout)

    def _extras(self, merges: np.ndarray) -> None:
        """extra(m) of every merge m, as CSR over the merges whose extra set is not empty."""
        owners: list[int] = []
        sizes: list[int] = []
        flat: list[int] = []
        if merges.size:
            ptr, idx = self._ptr.tolist(), self._idx.tolist()
            for m in merges.tolist():
                ps = idx[ptr[m]:ptr[m + 1]]
                got = _paint(ptr, idx, ps[0], ps[1:])
                if got:
                    owners.append(m)
                    sizes.append(len(got))
                    flat.extend(got)
        self._x_owner = np.array(owners, dtype=np.int64)
        self._x_ptr = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self._x_idx = np.array(flat, dtype=np.int64)
        self._x_rep = np.repeat(self._x_owner, sizes)      # the owner of every entry of _x_idx

    # -- queries -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n

    @property
    def is_chain(self) -> bool:
        """One segment and no merge: every question is a prefix."""
        return self._seg_start.size == 1 and self._x_owner.size == 0

    @property
    def extra_size(self) -> int:
        """X: the entries of all extra sets (memory and time per question are O(N + X))."""
        return int(self._x_idx.size)

    def parents_of(self, i: int) -> tuple[int, ...]:
        return tuple(self._idx[self._ptr[i]:self._ptr[i + 1]].tolist())

    def _children(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cptr is None:
            child = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._ptr))
            order = np.argsort(self._idx, kind="stable")
            self._cidx = child[order]
            self._cptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self._idx, minlength=self.n), out=self._cptr[1:])
        return self._cptr, self._cidx   # type: ignore[return-value]

    def children_of(self, i: int) -> tuple[int, ...]:
        cptr, cidx = self._children()
        return tuple(cidx[cptr[i]:cptr[i + 1]].tolist())

    def merges(self) -> int:
        return int((np.diff(self._ptr) > 1).sum())

    def ancestor_sums(self, values: np.ndarray) -> np.ndarray:
        """For every commit i, `values` summed over i's ancestors (i included). `values` has
        shape (n,) or (n, k); integer sums are exact."""
        v = np.asarray(values)
        if v.dtype == bool:
            v = v.astype(np.int64)
        c = v.copy()
        if self._x_owner.size:
            c[self._x_owner] += np.add.reduceat(v[self._x_idx], self._x_ptr[:-1], axis=0)
        cs = np.cumsum(c, axis=0)
        if self._seg_start.size == 1:
            return cs
        starts, entry = self._seg_start, self._seg_entry
        zero = np.zeros((1,) + cs.shape[1:], dtype=cs.dtype)
        before = np.concatenate([zero, cs[:-1]])[starts]                 # cs just before each start
        d = np.where((entry >= 0).reshape((-1,) + (1,) * (cs.ndim - 1)), cs[np.maximum(entry, 0)], 0) - before
        off = np.concatenate([d, zero])                                  # + the sentinel
        for jump in self._jumps:                                         # off[s] += off[parent(s)] ...
            off = off + off[jump]
        return off[self._seg] + cs

    def weights(self, allowed: np.ndarray) -> np.ndarray:
        """For every commit i, how many allowed culprits a FAIL of i would keep (git's weight)."""
        return self.ancestor_sums(np.asarray(allowed, dtype=np.int64))

    def ancestors(self, i: int) -> np.ndarray:
        """Boolean mask of i's ancestors, i included: the culprits that make commit i bad."""
        n = self.n
        if not 0 <= i < n:
            raise IndexError(f"commit {i} is not a candidate (0..{n - 1})")
        if self._seg_start.size == 1:
            mask = np.zeros(n, dtype=bool)
            mask[:i + 1] = True
        else:
            s = self._seg[i]
            on = (self._tin <= self._tin[s]) & (self._tout > self._tin[s])   # segments on i's tree path
            limit = np.full(self._seg_start.size, -1, dtype=np.int64)
            path = np.flatnonzero(on)
            up = self._seg_parent[path]
            has = up >= 0
            limit[up[has]] = self._seg_entry[path[has]]     # each is left where the path came in
            limit[s] = i
            mask = on[self._seg] & (np.arange(n) <= limit[self._seg])
        if self._x_owner.size:
            mask[self._x_idx[mask[self._x_rep]]] = True
        return mask

    def descendants(self, nodes: Iterable[int] | np.ndarray) -> np.ndarray:
        """Boolean mask of the commits that descend from any of `nodes` (them included)."""
        seed = np.zeros(self.n, dtype=np.int64)
        seed[np.asarray(list(nodes) if not isinstance(nodes, np.ndarray) else nodes, dtype=np.int64)] = 1
        return self.ancestor_sums(seed) > 0

    def is_bad(self, i: int, culprit: int) -> bool:
        """Whether commit i is bad when `culprit` is the first bad commit (it is i's ancestor)."""
        return culprit <= i and bool(self.ancestors(i)[culprit])

    def distances(self, sources: np.ndarray, down: bool, limit: int = MAX_DISTANCE) -> tuple[np.ndarray, np.ndarray]:
        """Breadth-first distance of every commit from the nearest source (down: walking from the
        sources to their children, so from its nearest source ancestor; else to parents), and
        which kind of source that is: `sources` is -1 (no source), 0 or 1 per commit; 0 wins
        ties. Commits farther than `limit` (MAX_DISTANCE) read as unreached (inf, kind -1)."""
        ptr, idx = self._children() if down else (self._ptr, self._idx)
        dist = np.full(self.n, np.inf)
        kind = np.asarray(sources, dtype=np.int64).copy()
        frontier = np.flatnonzero(kind >= 0)
        dist[frontier] = 0
        for d in range(1, limit + 1):
            if frontier.size == 0:
                break
            nxt, owner = _gather(ptr, idx, frontier)
            fresh = np.isinf(dist[nxt])
            nxt, owner = nxt[fresh], owner[fresh]
            if nxt.size == 0:
                break
            zero = nxt[kind[frontier][owner] == 0]          # reached from a kind-0 commit: 0 wins
            frontier = np.unique(nxt)
            dist[frontier] = d
            kind[frontier] = 1
            kind[zero] = 0
        return dist, kind


def _paint(ptr: list[int], idx: list[int], first: int, others: list[int]) -> list[int]:
    """extra(m): the ancestors of `others` that are not ancestors of `first`, by painting down in
    decreasing index order. Colour 1: reached from `first`; 2: from `others`; 3: both. A node's
    colour is final when it is popped, because every node that can reach it has a larger index
    and was popped before; the walk stops when no node of colour 2 alone is waiting."""
    colour: dict[int, int] = {first: 1}
    heap = [-first]
    for p in others:
        if p not in colour:
            heap.append(-p)
        colour[p] = colour.get(p, 0) | 2
    heapq.heapify(heap)
    alone = sum(1 for p in set(others) if colour[p] == 2)       # colour 2 alone, still waiting
    out: list[int] = []
    push, pop = heapq.heappush, heapq.heappop
    while alone:
        x = -pop(heap)
        c = colour[x]
        if c == 2:
            alone -= 1
            out.append(x)
        for p in idx[ptr[x]:ptr[x + 1]]:
            old = colour.get(p, 0)
            new = old | c
            if new == old:
                continue
            colour[p] = new
            if old == 0:
                push(heap, -p)
                alone += new == 2
            elif old == 2:                      # waiting alone, now reached from `first` too
                alone -= 1
    out.sort()
    return out
