"""Calibration bench (issue 23): is the confidence bisectk reports the probability that it is right?

Generated histories, simulated at the search level (the search code `bisectk bisect --flaky`
runs, fed by a random oracle: no git, no processes): every cell of q (the failure rate from the
culprit on) in {0.3, 0.5, 0.7, 0.9} x p_old (the rate before it) in {0, 0.05, 0.1, 0.2}, on a
chain and on a branchy history with merges (tests/search/dags.history), `--seeds` histories each
(default 10: 320 histories). The endpoints are handled as run_bisect does: the bad endpoint is
run until it fails (at most 10 runs), the good one once and, when that run fails, 9 more times;
their runs seed the search (bad) and measure p_old (good). The two-rate model (TWO_RATE), the
default budget, confidence 0.99.

Two measures:
- the answers: each search ends with a commit given at >= 0.99 (exit 0), or "not separable"
  (the budget spent: exit 2), or stuck. Answers given must be right >= 99% of the time.
- the reliability diagram: along every search, every 3rd observation, the posterior's top
  group and the confidence the search would claim if it stopped there (the smaller of the
  model's and its guard's mass: dag_bayes.guarded_mass);
  binned by claimed probability, the share of those top candidates that are the culprit.
  Calibrated means the points lie on the diagonal. bench/results/calibration.png.

Usage: python bench/calibration_bench.py [--seeds 10] [--commits 100]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search.history import Dag, Observation, SearchOptions, SearchStopped, search_dag  # noqa: E402
from bisectk.search.dag_bayes import guarded_mass  # noqa: E402
from bisectk.search.posterior import CulpritPosterior  # noqa: E402
from bisectk.search.rates import TWO_RATE  # noqa: E402
from tests.search.dags import ancestors, history  # noqa: E402

F, P = Outcome.FAIL, Outcome.PASS
QS, OLDS = (0.3, 0.5, 0.7, 0.9), (0.0, 0.05, 0.1, 0.2)


def one(parents, culprit: int, q: float, p_old: float, seed: int, every: int = 3):
    rng = random.Random(seed)
    anc = ancestors(parents)
    n = len(parents)

    def oracle(i: int) -> Outcome:
        return F if rng.random() < (q if culprit in anc[i] else p_old) else P
    bad = [Observation(n - 1, oracle(n - 1))]
    while bad[-1].outcome is P and len(bad) < 10:
        bad.append(Observation(n - 1, oracle(n - 1)))
    if bad[-1].outcome is P:
        return {"outcome": "bad does not reproduce"}, []
    good = [rng.random() < p_old]
    if good[0]:
        good += [rng.random() < p_old for _ in range(9)]
    base = (sum(good), len(good) - sum(good))
    dag = Dag(parents)
    # what the search would claim if it stopped here: its best group's mass, in the model and
    # in its guard (the prior without the mass at p_old = 0), the smaller (dag_bayes.guarded_mass)
    shadow = CulpritPosterior(dag, prior=TWO_RATE, base=base)
    guard = CulpritPosterior(dag, prior=replace(TWO_RATE, old_zero=0.0), base=base)
    points = []

    def watch(o: Observation) -> None:
        shadow.observe(o)
        guard.observe(o)
        if len(shadow.observations) % every == 0 and shadow.contradiction() is None:
            members, mass = guarded_mass(shadow, guard)
            points.append((mass, culprit in members))
    for o in bad:
        shadow.observe(o)
        guard.observe(o)
    opt = SearchOptions(flaky=True, prior=TWO_RATE, base=base)
    try:
        r = search_dag(dag, oracle, options=opt, observations=bad, on_observation=watch)
        stopped = None
    except SearchStopped as stop:
        r, stopped = stop.result, stop.reason
    runs = r.new_runs + len(bad) + len(good)
    if r.complete and stopped is None:
        outcome = "right" if culprit in r.candidates else "wrong"
        return {"outcome": outcome, "confidence": r.confidence, "runs": runs, "group": len(r.candidates)}, points
    return {"outcome": "not separable" if r.separable is False else f"stopped ({stopped})", "runs": runs,
            "confidence": r.confidence}, points


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--commits", type=int, default=100)
    args = ap.parse_args()
    t0 = time.time()
    cells, points = {}, []
    for q in QS:
        for p_old in OLDS:
            for shape in ("linear", "merges"):
                rows = []
                for s in range(args.seeds):
                    rng = random.Random(f"{q}:{p_old}:{shape}:{s}")
                    n = args.commits
                    parents = [()] + [(i - 1,) for i in range(1, n)] if shape == "linear" else history(n, rng)
                    culprit = rng.randrange(len(parents))
                    row, pts = one(parents, culprit, q, p_old, s)
                    rows.append(row)
                    points += pts
                cells[f"q={q} p_old={p_old} {shape}"] = rows
                summary = {k: sum(r["outcome"] == k for r in rows) for k in {r["outcome"] for r in rows}}
                runs = [r["runs"] for r in rows if "runs" in r]
                print(f"q={q} p_old={p_old} {shape}: {summary}, mean runs {np.mean(runs):.0f}", flush=True)
    answers = [r for rows in cells.values() for r in rows]
    given = [r for r in answers if r["outcome"] in ("right", "wrong")]
    right = sum(r["outcome"] == "right" for r in given)
    notsep = sum(r["outcome"] == "not separable" for r in answers)
    print(f"\n{len(answers)} histories of {args.commits} commits, {time.time() - t0:.0f} s")
    print(f"answers given (exit 0, confidence >= 0.99): {len(given)}, right {right} "
          f"({right / max(len(given), 1):.4f}); not separable (exit 2): {notsep}; other: "
          f"{len(answers) - len(given) - notsep}")
    edges = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.99, 1.0001]
    claimed = np.array([p for p, _ in points])
    hit = np.array([h for _, h in points], dtype=float)
    bins = []
    print("\nreliability (posterior's top candidate along the searches):")
    print("| claimed P | points | mean claimed | observed right |")
    print("|---|---|---|---|")
    for lo, hi in zip(edges, edges[1:]):
        sel = (claimed >= lo) & (claimed < hi)
        if sel.sum():
            bins.append((lo, hi, int(sel.sum()), float(claimed[sel].mean()), float(hit[sel].mean())))
            print(f"| [{lo:.2f}, {min(hi, 1):.2f}) | {int(sel.sum())} | {claimed[sel].mean():.3f} | {hit[sel].mean():.3f} |")
    res = ROOT / "bench" / "results"
    res.mkdir(exist_ok=True)
    (res / "calibration.json").write_text(json.dumps({"commits": args.commits, "seeds": args.seeds, "cells": cells,
                                                      "bins": bins, "given": len(given), "right": right,
                                                      "not_separable": notsep}, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], ls="--", c="grey", label="calibrated")
    ax.plot([b[3] for b in bins], [b[4] for b in bins], "o-", label="bisectk --flaky (two rates)")
    for b in bins:
        ax.annotate(str(b[2]), (b[3], b[4]), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xlabel("claimed P(top candidate is the culprit)")
    ax.set_ylabel("observed share right")
    ax.set_title(f"Reliability, {len(answers)} histories\nanswers at >= 0.99: {right}/{len(given)} right")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(res / "calibration.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
