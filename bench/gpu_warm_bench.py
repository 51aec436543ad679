#!/usr/bin/env python3
"""Per-configuration wall time on a GPU: warm bisectk workers vs a fresh process per configuration.

    python bench/gpu_warm_bench.py [--configs 10] [--out DIR]

Runs N distinct, passing configurations of kernels/cutedsl/ws_pipeline.py (stages x consumer
warpgroups x tile width x ...) twice: once each in a fresh process (`run_process`, what a plain
bisect does: imports torch and cutlass, compiles, runs) and once each through a
`bisectk.run.pool.WorkerPool` (imports paid once at worker start; compile + run per config).
It then runs one hanging and one crashing configuration through the pool, followed by a passing
one, to time the recovery (kill + replace).  Prints and writes a JSON summary and a markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bisectk.run.process import run_process  # noqa: E402
from bisectk.run.executor import run_command  # noqa: E402
from bisectk.run.pool import WorkerPool  # noqa: E402

SCRIPT = "kernels/cutedsl/ws_pipeline.py"


def configs(n: int) -> list[list[str]]:
    grid = itertools.product([4, 2, 3, 1], [1, 2], [32, 64], ["iter"])
    out = []
    for stages, wgs, tile_n, _ in grid:
        out.append(["--stages", str(stages), "--consumer-wgs", str(wgs), "--tile-n", str(tile_n)])
        if len(out) == n:
            break
    return out


def result(stdout: str) -> dict | None:
    for line in stdout.splitlines():
        if line.startswith("BISECTK_RESULT "):
            return json.loads(line[len("BISECTK_RESULT "):])
    return None


def one(kind, fn, argv, timeout):
    t0 = time.perf_counter()
    raw = fn([sys.executable, SCRIPT, *argv], cwd=ROOT, timeout=timeout)
    wall = time.perf_counter() - t0
    res = result(raw.stdout) or {}
    return {"mode": kind, "argv": argv, "wall_s": round(wall, 3), "exit_code": raw.exit_code,
            "timed_out": raw.timed_out, "rel_err": res.get("rel_err"), "time_ms": res.get("time_ms")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--configs", type=int, default=10)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--hang-timeout", type=float, default=10)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfgs = configs(args.configs)
    rows = []

    # cold: a fresh process per configuration
    for argv in cfgs:
        rows.append(one("cold", run_process, argv, args.timeout))
        print(json.dumps(rows[-1]), flush=True)

    # warm: one worker on the GPU, started once
    t0 = time.perf_counter()
    pool = WorkerPool(gpus=[args.gpu]).start()
    start_s = time.perf_counter() - t0
    ready = pool.slots[0].worker.ready_info if pool.slots[0].worker else None
    print(json.dumps({"worker_start_s": round(start_s, 3), "ready": ready}), flush=True)
    for argv in cfgs:
        rows.append(one("warm", lambda *a, **k: run_command(pool, *a, **k), argv, args.timeout))
        print(json.dumps(rows[-1]), flush=True)

    # recovery: a hang and a launch failure through the pool, each followed by a passing config
    recovery = []
    for label, argv, to in (("hang", ["--producer-phase", "0"], args.hang_timeout),
                            ("after-hang", cfgs[0], args.timeout),
                            ("crash", ["--stages", "16"], args.timeout),
                            ("after-crash", cfgs[0], args.timeout)):
        r = one("warm", lambda *a, **k: run_command(pool, *a, **k), argv, to)
        r["label"] = label
        recovery.append(r)
        print(json.dumps(r), flush=True)
    stats = dict(pool.stats)
    pool.close()

    cold = [r["wall_s"] for r in rows if r["mode"] == "cold"]
    warm = [r["wall_s"] for r in rows if r["mode"] == "warm"]
    ok = all(r["exit_code"] == 0 and (r["rel_err"] or 1) < 1e-4 for r in rows)
    summary = {
        "configs": len(cfgs), "all_passed": ok,
        "cold_median_s": statistics.median(cold), "cold_mean_s": round(statistics.mean(cold), 3),
        "warm_median_s": statistics.median(warm), "warm_mean_s": round(statistics.mean(warm), 3),
        "speedup_median": round(statistics.median(cold) / statistics.median(warm), 1),
        "speedup_total": round(sum(cold) / sum(warm), 1),
        "speedup_total_incl_worker_start": round(sum(cold) / (sum(warm) + start_s), 1),
        "worker_start_s": round(start_s, 3), "pool_stats": stats, "recovery": recovery,
    }
    table = ["| mode | configs | median s/config | mean s/config | total s |", "|---|---:|---:|---:|---:|",
             f"| cold (fresh process) | {len(cold)} | {summary['cold_median_s']:.2f} | "
             f"{summary['cold_mean_s']:.2f} | {sum(cold):.1f} |",
             f"| warm (WorkerPool) | {len(warm)} | {summary['warm_median_s']:.2f} | "
             f"{summary['warm_mean_s']:.2f} | {sum(warm):.1f} (+{start_s:.1f} worker start) |"]
    print(json.dumps(summary, indent=1))
    print("\n".join(table))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "warm_bench.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
        (out / "warm_bench.md").write_text("\n".join(table) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
