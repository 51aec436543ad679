"""Source-diff benchmark (the pure part): how fast a 200-hunk difference is split and applied.

Abstractions
------------
Problem      -- a generated pair of CPU stand-in kernel trees (tests/fixtures/diffsrc) that
                differ in `hunks` scattered hunks, one of which makes the result wrong.
measure      -- diff time, the first full copy of GOOD, and the per-configuration cost of
                applying a subset on a reused scratch directory (what every run of `bisectk diff`
                pays before the subject starts), for the subset shapes a search asks for:
                halves and complements (ddmin), prefixes (binary splitting), single hunks.
run_subject  -- one run of the stand-in kernel on a materialised subset: True when it fails.
                The oracle for the ablation-vs-picire comparison that extends this file.

Usage: python bench/diff_bench.py [--hunks 200] [--configs 200] [--seed 0] [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bisectk.spaces.hunks import Hunk  # noqa: E402
from bisectk.spaces.hybrid import Scratch  # noqa: E402
from bisectk.spaces.linediff import split_lines  # noqa: E402
from bisectk.spaces.treediff import diff_paths  # noqa: E402


def _kernelpair():
    spec = importlib.util.spec_from_file_location(
        "kernelpair", ROOT / "tests" / "fixtures" / "diffsrc" / "kernelpair.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernelpair"] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Problem:
    workdir: Path
    pair: object            # kernelpair.Pair
    hunks: list[Hunk]
    culprit: Hunk
    diff_ms: float
    lines: int

    @classmethod
    def make(cls, hunks: int = 200, seed: int = 0) -> Problem:
        workdir = Path(tempfile.mkdtemp(prefix="bisectk-diffbench-"))
        pair = _kernelpair().make_pair(workdir, hunks=hunks, culprit="one", breakers=0,
                                       extras=False, seed=seed)
        t = time.perf_counter()
        found = diff_paths(pair.good, pair.bad)
        diff_ms = (time.perf_counter() - t) * 1e3
        culprit = next(h for h in found if any(line in h.new for line in pair.culprit_lines))
        lines = sum(p.read_text().count("\n") for p in pair.good.rglob("*.py"))
        return cls(workdir, pair, found, culprit, diff_ms, lines)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_subject(target: Path, timeout: float = 30.0) -> bool:
    """Run the stand-in kernel in a materialised tree: True if it fails (wrong or crashed)."""
    proc = subprocess.run([sys.executable, "run.py"], cwd=target, capture_output=True, text=True,
                          timeout=timeout)
    lines = [s for s in proc.stdout.splitlines() if s.startswith("BISECTK_RESULT ")]
    return proc.returncode != 0 or not lines or json.loads(lines[-1].split(" ", 1)[1])["err"] != 0


def _subsets(hunks: list[Hunk], n: int, rng: random.Random) -> dict[str, list[list[Hunk]]]:
    k = len(hunks)
    shapes = {
        "half/complement": lambda: rng.sample(hunks, k // 2) if rng.random() < 0.5 else rng.sample(hunks, k - k // 8),
        "prefix": lambda: hunks[:rng.randint(1, k)],
        "single hunk": lambda: [rng.choice(hunks)],
    }
    return {name: [make() for _ in range(n)] for name, make in shapes.items()}


def _stats(ms: list[float]) -> str:
    ms = sorted(ms)
    return (f"mean {statistics.fmean(ms):6.2f}  median {statistics.median(ms):6.2f}  "
            f"p95 {ms[int(0.95 * (len(ms) - 1))]:6.2f}  max {ms[-1]:6.2f}")


def measure(problem: Problem, configs: int = 200, seed: int = 0) -> dict[str, object]:
    rng = random.Random(seed)
    t = time.perf_counter()
    scratch = Scratch(problem.pair.good)
    first_ms = (time.perf_counter() - t) * 1e3
    per_shape = {}
    for name, subsets in _subsets(problem.hunks, configs, rng).items():
        ms = []
        for subset in subsets:
            t = time.perf_counter()
            scratch.apply(subset)
            ms.append((time.perf_counter() - t) * 1e3)
        per_shape[name] = ms
    t = time.perf_counter()
    fresh = Scratch(problem.pair.good).apply(problem.hunks)
    fresh_ms = (time.perf_counter() - t) * 1e3
    shutil.rmtree(fresh, ignore_errors=True)
    t = time.perf_counter()
    subs = split_lines(problem.culprit)
    split_ms = (time.perf_counter() - t) * 1e3
    shutil.rmtree(scratch.root, ignore_errors=True)
    return {"first_copy_ms": first_ms, "fresh_all_ms": fresh_ms, "per_shape": per_shape,
            "split_ms": split_ms, "sub_hunks": len(subs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hunks", type=int, default=200)
    ap.add_argument("--configs", type=int, default=200, help="configurations per subset shape")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="also run the kernel on GOOD, BAD and the culprit alone")
    args = ap.parse_args(argv)
    problem = Problem.make(args.hunks, args.seed)
    try:
        files = len(list(problem.pair.good.rglob("*.py")))
        print(f"difference: {len(problem.hunks)} hunks over {files} files, {problem.lines} lines of Python; "
              f"culprit {problem.culprit.id}")
        print(f"diff_paths            {problem.diff_ms:8.2f} ms")
        r = measure(problem, args.configs, args.seed)
        print(f"first copy of GOOD    {r['first_copy_ms']:8.2f} ms")
        print(f"fresh dir, all hunks  {r['fresh_all_ms']:8.2f} ms")
        print(f"materialise per configuration on a reused scratch dir (ms, {args.configs} each):")
        for name, ms in r["per_shape"].items():
            print(f"  {name:16s}  {_stats(ms)}")
        print(f"split_lines(culprit)  {r['split_ms']:8.3f} ms -> {r['sub_hunks']} sub-hunks")
        if args.check:
            scratch = Scratch(problem.pair.good)
            for label, subset in (("GOOD", []), ("BAD", problem.hunks), ("culprit alone", [problem.culprit])):
                t = time.perf_counter()
                failed = run_subject(scratch.apply(subset))
                print(f"run {label:14s} {'FAIL' if failed else 'PASS'}  ({(time.perf_counter() - t) * 1e3:.0f} ms)")
            shutil.rmtree(scratch.root, ignore_errors=True)
    finally:
        problem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
