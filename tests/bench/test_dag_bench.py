"""bench/dag_bench.py's bisectk-confirmed: the search with the confirmation the CLI makes before it
names a deterministic answer (issue 23) names the planted culprit of a small merge-heavy history,
and the runs test.sh counts hold the confirming ones beside the search's."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import dag_bench as db  # noqa: E402


def test_confirmed_names_the_culprit_in_more_runs_than_the_search_alone(tmp_path):
    rng = random.Random(3)
    parents = db.history(80, rng, 0.3)
    anc = db.ancestors(parents)
    culprit = len(parents) // 2
    good, shas = db.make_repo(tmp_path / "repo", parents, {i for i in range(len(parents)) if culprit in anc[i]}, set())
    test = tmp_path / "test.sh"
    test.write_text(db.TEST_SH)
    test.chmod(0o755)
    runs = {}
    for confirm in (False, True):
        counter = tmp_path / f"count-{confirm}"
        env = {**os.environ, "BENCH_COUNTER": str(counter), "BENCH_PPM": "1000000", "BENCH_TEST": str(test)}
        found, ends, _ = db.run_bisectk(tmp_path / "repo", good, shas[-1], env, tmp_path / f"scratch-{confirm}",
                                        False, 1, counter, confirm)
        assert found == shas[culprit] and ends == 2
        runs[confirm] = db.count(counter) - ends
    assert runs[True] > runs[False]
