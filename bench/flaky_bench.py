"""Flaky bisection benchmark (issue 10): the real `bisectk bisect --flaky` CLI against `git bisect run`.

Histories of N commits (default 256, no unbuildable commits) are generated with `git fast-import`
(see bench/history_bench.py, whose generator and test script this reuses): from the culprit on, a
commit's test fails each run with probability q (bash's $SRANDOM); good commits never fail. Every run
of the test appends a byte to a counter file, so runs are counted the same way for every method.

Methods, on the same repositories:
- `bisectk`: `bisectk bisect --repo R --good FIRST --bad main --run TEST --flaky --repeat 1 --json`
  (real worktrees, real endpoint checks: a bad endpoint that passes is re-run, its failure rate is
  measured over --calibrate-runs runs and feeds the posterior). Runs include the endpoint checks.
  An exit 2 ("the bad configuration does not reproduce") is counted as an abort.
- `git-rR`: `git bisect run` with a wrapper that runs the test up to R times and says bad if any
  failed; R = ceil(log 0.01 / log(1-q)) makes one step's miss probability <= 1% (git's own view
  needs R = 1: `git-r1`).

The information bound (bench/history_bench.py: Fano + the Z-channel's capacity) is the fewest
expected runs any method needs for 99% accuracy over the N-1 hypotheses; bisectk's mean runs are
compared with it, both with and without its endpoint runs.

Usage: python bench/flaky_bench.py [--commits 256] [--seeds 40] [--qs 0.9,0.7,0.5,0.3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from history_bench import (REPEAT_SH, TEST_SH, count, first_sha, make_repo, run_git_bisect,  # noqa: E402
                           z_channel_bound)


def git_repeats(q: float, miss: float = 0.01) -> int:
    return 1 if q >= 1 else max(1, math.ceil(math.log(miss) / math.log(1 - q)))


def one(task: tuple[float, int, int, int]) -> list[dict]:
    q, seed, n, calibrate = task
    rng = random.Random(seed * 7919 + int(q * 1000))
    culprit = rng.randrange(1, n)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fbench-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, n, culprit, set(), static_files=20)
        shas = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=repo, capture_output=True,
                              text=True, check=True).stdout.split()
        test, rep = root / "test.sh", root / "repeat.sh"
        test.write_text(TEST_SH)
        rep.write_text(REPEAT_SH)
        test.chmod(0o755)
        rep.chmod(0o755)
        env = {**os.environ, "BENCH_PPM": str(int(q * 1_000_000)), "BENCH_TEST": str(test)}
        # bisectk, the real CLI
        counter = root / "bk.count"
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", first_sha(repo),
                            "--bad", "main", "--run", str(test), "--flaky", "--repeat", "1",
                            "--calibrate-runs", str(calibrate), "--json", "--ledger", str(root / "l.db")],
                           env={**env, "BENCH_COUNTER": str(counter)}, capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t0
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError:
            doc = {}
        found = (doc.get("first_bad") or {}).get("sha")
        endpoint_runs = sum(1 for a in doc.get("attempts", []) if a["phase"].startswith("endpoint"))
        rows.append({"q": q, "seed": seed, "method": "bisectk", "correct": found == shas[culprit],
                     "runs": count(counter), "endpoint_runs": endpoint_runs, "exit": p.returncode,
                     "aborted": p.returncode == 2, "wall_s": round(wall, 2),
                     "error": p.stderr.strip().splitlines()[-1] if p.returncode not in (0, 1) and p.stderr.strip() else ""})
        # git bisect run, with and without repeats
        for r in sorted({1, git_repeats(q)}):
            counter = root / f"git{r}.count"
            found = run_git_bisect(repo, shas[0], shas[-1], {**env, "BENCH_COUNTER": str(counter),
                                                             "BENCH_REPEATS": str(r)}, rep)
            rows.append({"q": q, "seed": seed, "method": f"git-r{r}", "correct": found == shas[culprit],
                         "runs": count(counter), "endpoint_runs": 0, "exit": 0, "aborted": False, "wall_s": 0.0,
                         "error": ""})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=256)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--qs", default="0.9,0.7,0.5,0.3")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--calibrate-runs", type=int, default=10)
    ap.add_argument("--out", default=str(HERE / "results" / "flaky_bench.txt"))
    args = ap.parse_args()
    qs = [float(x) for x in args.qs.split(",")]
    tasks = [(q, s, args.commits, args.calibrate_runs) for q in qs for s in range(args.seeds)]
    t0 = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(args.workers) as ex:
        for part in ex.map(one, tasks):
            rows += part
    lines = [f"# bench/flaky_bench.py --commits {args.commits} --seeds {args.seeds} --qs {args.qs} "
             f"--calibrate-runs {args.calibrate_runs}  ({time.perf_counter() - t0:.0f} s)",
             "| q | method | correct | mean runs | (search only) | bound (99%) | runs / bound | aborts |",
             "|---|---|---|---|---|---|---|---|"]
    ok = True
    for q in qs:
        bound = z_channel_bound(q, args.commits)
        for method in sorted({r["method"] for r in rows if r["q"] == q}, key=lambda m: (m != "bisectk", m)):
            sel = [r for r in rows if r["q"] == q and r["method"] == method]
            right = sum(r["correct"] for r in sel)
            mean = statistics.mean(r["runs"] for r in sel)
            search = statistics.mean(r["runs"] - r["endpoint_runs"] for r in sel)
            aborts = sum(r["aborted"] for r in sel)
            lines.append(f"| {q} | {method} | {right}/{len(sel)} ({100 * right / len(sel):.0f}%) | {mean:.1f} | "
                         f"{search:.1f} | {bound:.1f} | {mean / bound:.2f} | {aborts} |")
            if method == "bisectk" and q == 0.5:
                ok &= right >= 0.95 * len(sel) and aborts == 0
    errors = sorted({r["error"] for r in rows if r["error"]})
    if errors:
        lines.append("errors: " + "; ".join(errors[:5]))
    lines.append(f"goal at q=0.5 (>= 95% right, no abort): {'PASS' if ok else 'FAIL'}")
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
