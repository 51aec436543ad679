"""bench/ablation_bench.py's `adaptive` as `bisectk ablate` runs it (issue 23): the answer is right
and confirmed, and the runs it reports hold the confirming ones, which the search alone lacks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import ablation_bench as ab  # noqa: E402


@pytest.mark.parametrize("problem", [ab.Problem("1 of 16", 16, 1), ab.Problem("2 of 16", 16, 2),
                                     ab.Problem("1 of 16, flaky 30%", 16, 1, flake=0.3)])
def test_the_cli_way_is_right_and_counts_its_confirming_runs(problem):
    for seed in range(3):
        alone, _ = ab.run_bisectk("adaptive")(ab.make_instance(problem, seed))
        runs, correct, confirming = ab.run_cli(ab.make_instance(problem, seed))
        assert correct
        assert 0 < confirming < runs
        if not problem.flake:       # the same deterministic oracle: the search's runs, then more
            assert runs - confirming >= alone
