"""bench/history_bench.py still runs bisectk's search on its generated chains (it ran the
chain-only search_history until issue 24 removed it): every bisectk method names the planted
culprit of a small repository, and the runs counted by test.sh include the endpoint checks."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import history_bench as hb  # noqa: E402


@pytest.mark.parametrize("flaky,jobs,confirm", [(False, 1, False), (False, 1, True), (False, 3, False),
                                                (True, 1, False), (True, 2, False)])
def test_every_bisectk_method_names_the_planted_culprit(tmp_path, flaky, jobs, confirm):
    n = 64
    culprit, broken = hb.plant(n, random.Random(5))
    repo = tmp_path / "repo"
    hb.make_repo(repo, n, culprit, broken, static_files=2)
    shas = hb.sh(repo, "git", "rev-list", "--reverse", "main").split()
    test = tmp_path / "test.sh"
    test.write_text(hb.TEST_SH)
    test.chmod(0o755)
    counter = tmp_path / "count"
    env = {**os.environ, "BENCH_COUNTER": str(counter), "BENCH_PPM": "1000000", "BENCH_TEST": str(test)}
    found, rounds = hb.run_bisectk(repo, env, tmp_path / "scratch", flaky, jobs, confirm)
    assert found == shas[culprit]
    runs = hb.count(counter)
    assert runs >= rounds + 2                       # both endpoints ran, and every round ran something
    if not flaky and not confirm:
        assert runs <= 2 + jobs * rounds and rounds <= 6 + 3     # log2(63) probes, a few skips
