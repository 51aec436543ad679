"""Untestable commits around the culprit: bisectk's deterministic DAG search against git bisect's
own probe rule, run counts and answers, in process (pure: no git, no processes).

Histories: chains of 16-256 candidates (the `--first-parent` mainline) and small branchy DAGs
(tests/search/dags.history, 20-120 candidates). A culprit anywhere; the bad commit always builds.
Skip patterns:
- `none`: every commit testable;
- `cluster`: a run of untestable commits around the culprit (up to 4 ancestors and 4 descendants
  along parent links, the culprit itself untestable in half of the cases);
- `cluster-near`: the same run beside the culprit, the culprit and its parents testable;
- `far`: a broken stretch elsewhere, 5-30 commits along parent links from a random commit, the
  culprit and its parents testable (a search should keep away from it);
- `scattered`: each commit untestable with probability 0.15.

`git` is git's rule (bisect.c), simulated over the same DAG (tests/search/dags.git_bisect): the candidates are the ancestors of
the last bad commit that no good commit reaches, skipped ones included in the weights; without
skips the commit of max min(w, N - w) (ties: the oldest); once a skip is known, every candidate
sorted by that distance (ties: a fixed pseudo-random object id), and when the best is skipped
`skip_away` picks the entry at (count * prn / 32768) * sqrti(prn) / sqrti(32768) of the
non-skipped ones (get_prn(count), git's own LCG). It ends on the bad commit: "X is the first bad
commit", or with skipped candidates left "only 'skipped' commits left to test" and those plus the
bad one as the answer. `bisectk` is `dag_bisect` without its confirmation (git has none).

Correct: bisectk's candidates equal the brute-force truth group (tests/search/dags.truth_group);
git's answer contains it. Usage: python bench/skip_bench.py [--seeds 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisectk.search.dag import Dag  # noqa: E402
from bisectk.search.dag_bisect import dag_bisect  # noqa: E402
from tests.search.dags import ancestors, deterministic, git_bisect, history, truth_group  # noqa: E402

PATTERNS = ("none", "cluster", "cluster-near", "far", "scattered")


def _around(parents, culprit: int, up: int, down: int) -> set[int]:
    children = [[] for _ in parents]
    for i, ps in enumerate(parents):
        for p in ps:
            children[p].append(i)
    out = {culprit}
    for steps, links in ((up, parents), (down, children)):
        edge = {culprit}
        for _ in range(steps):
            edge = {j for i in edge for j in links[i]}
            out |= edge
    return out


def skips(pattern: str, parents, culprit: int, rng: random.Random) -> set[int]:
    n = len(parents)
    if pattern == "none":
        return set()
    if pattern == "scattered":
        out = {i for i in range(n) if rng.random() < 0.15}
    elif pattern == "far":
        span = rng.randint(5, 30)
        out = _around(parents, rng.randrange(n), span // 2, span - span // 2) - {culprit, *parents[culprit]}
    else:
        out = _around(parents, culprit, rng.randint(0, 4), rng.randint(0, 4))
        if pattern == "cluster-near" or rng.random() < 0.5:
            out -= {culprit, *parents[culprit]}
    return out - {n - 1}


def case(seed: int, shape: str, pattern: str):
    rng = random.Random(f"{seed}-{shape}-{pattern}")
    if shape == "chain":
        n = rng.choice((16, 32, 64, 128, 256))
        parents = [()] + [(i - 1,) for i in range(1, n)]
    else:
        parents = history(rng.randint(20, 120), rng)
    anc = ancestors(parents)
    culprit = rng.randrange(len(parents))
    return parents, anc, culprit, skips(pattern, parents, culprit, rng), rng


def run(seeds: int) -> dict:
    rows = {}
    for shape in ("chain", "dag"):
        for pattern in PATTERNS:
            ours, gits, wrong = [], [], 0
            for seed in range(seeds):
                parents, anc, culprit, untestable, rng = case(seed, shape, pattern)
                truth = truth_group(anc, culprit, untestable)
                res = dag_bisect(Dag(parents), deterministic(anc, culprit, untestable))
                ours.append(res.new_runs)
                wrong += set(res.candidates) != truth
                oid = {i: rng.random() for i in range(len(parents))}
                g_runs, g_answer = git_bisect(parents, anc, deterministic(anc, culprit, untestable), oid)
                gits.append(g_runs)
                wrong += not truth <= g_answer
            rows[shape, pattern] = (ours, gits, wrong)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=300)
    args = ap.parse_args()
    rows = run(args.seeds)
    print(f"{'shape':6} {'skips':13} {'bisectk mean':>12} {'max':>4} {'git mean':>9} {'max':>4} "
          f"{'worse':>6} {'better':>6} wrong")
    for (shape, pattern), (ours, gits, wrong) in rows.items():
        worse = sum(o > g for o, g in zip(ours, gits))
        better = sum(o < g for o, g in zip(ours, gits))
        print(f"{shape:6} {pattern:13} {statistics.mean(ours):12.2f} {max(ours):4} "
              f"{statistics.mean(gits):9.2f} {max(gits):4} {worse:6} {better:6} {wrong}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
