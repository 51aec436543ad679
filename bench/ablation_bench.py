"""Factor-ablation benchmark: synthetic factor spaces with planted culprits, run in-process.

Abstractions
------------
Problem  -- a family of synthetic spaces: n differences, k planted culprits that fail only
            together, a share of invalid hybrids, and a flake rate (how often a failing
            configuration passes anyway).
Instance -- one seed of a problem: the planted set and the single-shot oracle.
METHODS  -- what is compared on the same oracle: bisectk's strategies (through `ablate`, the
            code the CLI runs), picire's DD (PyPI) and plain one-factor-at-a-time.

Runs are counted after the endpoint checks (the empty and the full set are never charged) and
include every repeat the flakiness rule asks for. picire and ofat go through the same gateway
(memo plus the same confidence rule) so they are charged the same way; 'picire-1shot' shows
picire without repeats on the noisy problems.

The table counts the search alone. After it, `adaptive` again as `bisectk ablate` runs it: each
culprit also reverted alone from bad, other failing sets looked for, and the answer confirmed
before it is given (issue 23: the culprit set fails again, bad without each fix passes again, an
interaction's subsets pass again, at --confidence 0.99), with how many of its runs confirm;
picire confirms nothing.

Usage: python bench/ablation_bench.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from picire_import import import_picire  # noqa: E402  (bench/picire_import.py)
from bisectk.outcome import Outcome  # noqa: E402
from bisectk.search import ConfidenceRule, ablate  # noqa: E402
from bisectk.search.tester import Tester  # noqa: E402

ENDPOINT_REPEATS = 10  # runs of the bad endpoint used to estimate its failure rate
CONFIDENCE = 0.99     # the CLI's --confidence
MORE_SETS = 7         # engine/ablate.py: other failing sets the CLI looks for


picire = import_picire()


@dataclass(frozen=True)
class Problem:
    name: str
    n: int
    k: int                  # planted culprits, failing only together
    invalid: float = 0.0    # share of hybrids that are UNRESOLVED (invalid)
    flake: float = 0.0      # probability that a failing configuration passes anyway


@dataclass
class Instance:
    items: list[str]
    planted: frozenset
    oracle: Callable[[frozenset], Outcome]
    rule: ConfidenceRule | None
    endpoint: tuple[int, int] = (1, 1)   # the bad endpoint's (fails, runs)


def make_instance(problem: Problem, seed: int) -> Instance:
    rng = random.Random(f"{problem.name}/{seed}")
    items = [f"f{i:02d}" for i in range(problem.n)]
    planted = frozenset(rng.sample(items, problem.k))
    everything = frozenset(items)
    noise = random.Random(f"{problem.name}/{seed}/noise")

    def invalid(config: frozenset) -> bool:
        # Deterministic per configuration. The endpoints, the planted set and its subsets
        # stay valid: otherwise no method could observe the planted set failing or prove
        # that its members act together, and "correct" would be undefined.
        if config == everything or config <= planted:
            return False
        digest = hashlib.blake2b(f"{seed}:{','.join(sorted(config))}".encode(), digest_size=4)
        return int.from_bytes(digest.digest()) < problem.invalid * 2**32

    def oracle(config: frozenset) -> Outcome:
        if problem.invalid and invalid(config):
            return Outcome.UNRESOLVED
        if not planted <= config:
            return Outcome.PASS
        return Outcome.PASS if noise.random() < problem.flake else Outcome.FAIL

    rule, endpoint = None, (1, 1)
    if problem.flake:
        # The endpoint check: run bad ENDPOINT_REPEATS times (more if it never failed, as the
        # CLI would before giving up) and derive the rule from what was seen.
        observed = [oracle(everything) for _ in range(ENDPOINT_REPEATS)]
        while Outcome.FAIL not in observed:
            observed.append(oracle(everything))
        rule = ConfidenceRule.derive(observed.count(Outcome.FAIL), len(observed))
        endpoint = (observed.count(Outcome.FAIL), len(observed))
    return Instance(items, planted, oracle, rule, endpoint)


def gateway(inst: Instance, rule: ConfidenceRule | None) -> Tester:
    tester = Tester(inst.oracle, rule=rule)
    tester.seed(frozenset(), Outcome.PASS)
    tester.seed(frozenset(inst.items), Outcome.FAIL)
    return tester


def run_bisectk(strategy: str) -> Callable[[Instance], tuple[int, bool]]:
    def run(inst: Instance) -> tuple[int, bool]:
        result = ablate(inst.items, inst.oracle, strategy=strategy, rule=inst.rule)
        correct = set(result.culprits) == inst.planted and (
            len(inst.planted) == 1 or result.interaction)
        return result.runs, correct
    return run


def run_cli(inst: Instance) -> tuple[int, bool, int]:
    """adaptive as `bisectk ablate` calls it (engine/ablate.py): (runs, correct, confirming runs)."""
    result = ablate(inst.items, inst.oracle, rule=inst.rule, measure_removal=True, more_sets=MORE_SETS,
                    confidence=CONFIDENCE, endpoint=inst.endpoint)
    correct = result.complete and set(result.culprits) == inst.planted and (
        len(inst.planted) == 1 or result.interaction)
    return result.runs, correct, sum(a.runs for a in result.attempts if a.phase == "confirm")


def run_picire(with_rule: bool) -> Callable[[Instance], tuple[int, bool]]:
    def run(inst: Instance) -> tuple[int, bool]:
        tester = gateway(inst, inst.rule if with_rule else None)

        def test(config, config_id):
            # picire knows PASS and FAIL only; like ddmin, it reads UNRESOLVED as "not failing".
            outcome = tester.test(frozenset(config), "picire")
            return picire.Outcome.FAIL if outcome is Outcome.FAIL else picire.Outcome.PASS

        found = picire.DD(test)(list(inst.items))
        return tester.runs, set(found) == inst.planted
    return run


METHODS: dict[str, Callable[[Instance], tuple[int, bool]]] = {
    "adaptive": run_bisectk("adaptive"),
    "ddmin": run_bisectk("ddmin"),
    "picire": run_picire(with_rule=True),
    "ofat": run_bisectk("ofat"),
}
NOISY_ONLY = {"picire-1shot": run_picire(with_rule=False)}

PROBLEMS = [
    Problem("1 of 8", 8, 1), Problem("1 of 16", 16, 1), Problem("1 of 32", 32, 1),
    Problem("1 of 64", 64, 1),
    Problem("2 of 16", 16, 2), Problem("2 of 32", 32, 2),
    Problem("3 of 16", 16, 3), Problem("3 of 32", 32, 3),
    Problem("1 of 32, 10% invalid", 32, 1, invalid=0.1),
    Problem("2 of 32, 10% invalid", 32, 2, invalid=0.1),
    Problem("3 of 32, 10% invalid", 32, 3, invalid=0.1),
    Problem("1 of 32, flaky 10%", 32, 1, flake=0.1),
    Problem("1 of 32, flaky 30%", 32, 1, flake=0.3),
    Problem("2 of 32, flaky 10%", 32, 2, flake=0.1),
    Problem("2 of 32, flaky 30%", 32, 2, flake=0.3),
]


def bench(seeds: int) -> dict[tuple[str, str], tuple[list[int], list[bool]]]:
    table = {}
    for problem in PROBLEMS:
        methods = dict(METHODS, **(NOISY_ONLY if problem.flake else {}))
        for method, run in methods.items():
            outcomes = [run(make_instance(problem, seed)) for seed in range(seeds)]
            table[problem.name, method] = ([r for r, _ in outcomes], [c for _, c in outcomes])
    return table


def bench_cli(seeds: int) -> dict[str, list[tuple[int, bool, int]]]:
    return {p.name: [run_cli(make_instance(p, seed)) for seed in range(seeds)] for p in PROBLEMS}


def report_cli(cli, table) -> bool:
    """The CLI's way against picire (which confirms nothing), with and without the confirming runs."""
    print(f"\nadaptive as `bisectk ablate` runs it (each culprit reverted alone from bad, other failing sets "
          f"looked for, the answer confirmed at {CONFIDENCE}), against picire:")
    print(f"{'problem':<24} {'mean runs':>9} {'max':>5} {'confirming':>10} {'correct':>8} {'picire':>7} "
          f"{'ratio':>6} {'w/o conf':>8} {'ratio':>6}")
    ok = True
    for problem, rows in cli.items():
        runs, conf = statistics.mean(r for r, _, _ in rows), statistics.mean(c for _, _, c in rows)
        theirs = statistics.mean(table[problem, "picire"][0])
        share = sum(c for _, c, _ in rows) / len(rows)
        ok &= share == 1.0
        print(f"{problem:<24} {runs:>9.1f} {max(r for r, _, _ in rows):>5} {conf:>10.1f} {100 * share:>7.1f}% "
              f"{theirs:>7.1f} {runs / theirs:>6.2f} {runs - conf:>8.1f} {(runs - conf) / theirs:>6.2f}")
    print(f"  {'PASS' if ok else 'FAIL'}  every answer right and confirmed")
    return ok


def report(table, seeds: int, elapsed: float) -> bool:
    print(f"{'problem':<24} {'method':<13} {'mean runs':>9} {'max':>5} {'correct':>8}")
    previous = None
    for (problem, method), (runs, correct) in table.items():
        label = problem if problem != previous else ""
        previous = problem
        print(f"{label:<24} {method:<13} {statistics.mean(runs):>9.1f} {max(runs):>5} "
              f"{100 * sum(correct) / len(correct):>7.1f}%")
    rules = [make_instance(p, s).rule for p in PROBLEMS if p.flake for s in range(seeds)]
    repeats = sorted(r.repeats for r in rules)
    print(f"\nflakiness rule: Wilson 95% lower bound of the bad endpoint's fail rate over "
          f"{ENDPOINT_REPEATS} runs, alpha=0.01; repeats r from {repeats[0]} to {repeats[-1]} "
          f"(median {statistics.median(repeats):g})")
    print(f"{seeds} seeds per problem, {elapsed:.0f} s\n\ngoals (adaptive, the default):")
    return check_goals(table)


def check_goals(table) -> bool:
    results = []
    for problem in PROBLEMS:
        if problem.k == 1 and not problem.invalid and not problem.flake:
            bound = math.ceil(math.log2(problem.n)) + 3
            worst = max(table[problem.name, "adaptive"][0])
            results.append((f"1 culprit among {problem.n}: max {worst} runs <= "
                            f"ceil(log2 {problem.n})+3 = {bound}", worst <= bound))
    worst = max(table["2 of 32", "adaptive"][0])
    results.append((f"2-factor interaction among 32: max {worst} runs <= 20", worst <= 20))
    more = 0
    for problem in PROBLEMS:
        ours, theirs = table[problem.name, "adaptive"][0], table[problem.name, "picire"][0]
        mean_ours, mean_theirs = statistics.mean(ours), statistics.mean(theirs)
        results.append((f"{problem.name}: runs mean {mean_ours:.1f} <= picire's "
                        f"{mean_theirs:.1f}, max {max(ours)} <= {max(theirs)}",
                        mean_ours <= mean_theirs and max(ours) <= max(theirs)))
        more += sum(a > b for a, b in zip(ours, theirs))
    quiet = [p for p in PROBLEMS if not p.flake]
    share = _share(table, quiet)
    results.append((f"correct without noise (incl. invalid hybrids): {share:.1%} == 100%",
                    share == 1.0))
    for rate in (0.1, 0.3):
        share = _share(table, [p for p in PROBLEMS if p.flake == rate])
        results.append((f"correct at {rate:.0%} flakiness: {share:.1%} >= 99%", share >= 0.99))
    for text, ok in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    seeds = len(PROBLEMS) * len(table[PROBLEMS[0].name, "adaptive"][0])
    print(f"  (per seed, adaptive used more runs than picire on {more} of {seeds} instances: "
          f"picire's fixed halving order is sometimes luckier on one instance)")
    return all(ok for _, ok in results)


def _share(table, problems) -> float:
    flags = [c for p in problems for c in table[p.name, "adaptive"][1]]
    return sum(flags) / len(flags)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    table = bench(args.seeds)
    ok = report(table, args.seeds, time.perf_counter() - start)
    start = time.perf_counter()
    ok &= report_cli(bench_cli(args.seeds), table)
    print(f"{args.seeds} seeds per problem, {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
