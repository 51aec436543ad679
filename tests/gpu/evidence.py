#!/usr/bin/env python3
"""GPU evidence for the planted failures of variants/gpu/*.toml (run on a Hopper machine).

For every spec: the good and the bad endpoint, and with --isolation also the planted culprit set
applied alone to the good side (must fail like the bad side), the bad side with the culprits
reverted (must pass) and, for a culprit set of two or more factors, every proper non-empty subset
of it applied to the good side (must pass: the failure needs all of them).  Each run is a fresh
process (``timeout``-style kill of its whole process group), judged with the spec's oracle:
HANG (timeout), CRASH (non-zero exit), UNRESOLVED (exit 125), WRONG (metric outside its range or
NaN), SLOW (time metric above slow_factor x the good endpoint's), else PASS.

    python tests/gpu/evidence.py --isolation --jobs 4 --out $OUT/evidence variants/gpu/*.toml

Race- and timing-sensitive specs (interaction or slow ones) run one at a time after the others.
Writes evidence.jsonl (one record per run) and evidence.md (a table) into --out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bisectk.spec import load_spec  # noqa: E402

TAG = "BISECTK_RESULT "
_LOCK = threading.Lock()
_SINK = None  # evidence.jsonl, written as runs finish


def culprits_of(description: str) -> list[str]:
    m = re.search(r"culprit:\s*([A-Za-z0-9_,\s]+?)\s*(?:\(|\n|$)", description)
    return [c.strip() for c in m.group(1).split(",") if c.strip()] if m else []


def run_one(argv: list[str], env: dict, cwd: Path, timeout: float) -> dict:
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    wall = time.perf_counter() - t0
    metrics = None
    for line in (out or "").splitlines():
        if line.startswith(TAG):
            try:
                metrics = json.loads(line[len(TAG):])
            except json.JSONDecodeError:
                pass
    return {"rc": None if timed_out else p.returncode, "timed_out": timed_out,
            "wall_s": round(wall, 2), "metrics": metrics,
            "stderr_tail": (err or "")[-600:], "stdout_tail": (out or "")[-300:]}


_POOL = None  # a bisectk.run.worker.WorkerPool with --warm


def run_warm(argv: list[str], env: dict, cwd: Path, timeout: float) -> dict:
    raw = _POOL.run(argv, cwd=cwd, env=env, timeout=timeout)
    metrics = None
    for line in raw.stdout.splitlines():
        if line.startswith(TAG):
            try:
                metrics = json.loads(line[len(TAG):])
            except json.JSONDecodeError:
                pass
    rc = None if raw.timed_out else (raw.exit_code if raw.exit_code is not None else -1)
    return {"rc": rc, "timed_out": raw.timed_out, "wall_s": round(raw.duration_s, 2),
            "metrics": metrics, "signal": raw.signal, "stderr_tail": raw.stderr[-600:],
            "stdout_tail": raw.stdout[-300:]}


def judge(spec, res: dict, good_time: float | None) -> str:
    if res["timed_out"]:
        return "HANG"
    if res["rc"] == 125:
        return "UNRESOLVED"
    if res["rc"] != 0:
        return "CRASH"
    m = res["metrics"]
    if m is None:
        return "CRASH"  # exit 0 without a result line
    if m.get("ok") is False:
        return "WRONG"
    for t in spec.thresholds:
        v = m.get(t.metric)
        if isinstance(v, str) and v.lower() == "nan":
            v = math.nan
        if t.violation(v) is not None:
            return "WRONG"
    if spec.slow_factor and good_time:
        v = m.get(spec.slow_metric or "time_ms")
        if isinstance(v, (int, float)) and v > spec.slow_factor * good_time:
            return "SLOW"
    return "PASS"


def plan(spec, isolation: bool) -> list[tuple[str, frozenset, str]]:
    """(label, applied factors, expected: 'PASS' or 'FAIL')."""
    diffs = spec.differences()
    runs = [("good", frozenset(), "PASS"), ("bad", frozenset(diffs), "FAIL")]
    cul = [c for c in culprits_of(spec.description) if c in diffs]
    if isolation and cul:
        runs.append(("culprits-only", frozenset(cul), "FAIL"))
        rest = frozenset(diffs) - frozenset(cul)
        if rest:
            runs.append(("bad-without-culprits", rest, "PASS"))
        if len(cul) > 1:
            for r in range(1, len(cul)):
                for sub in itertools.combinations(cul, r):
                    runs.append(("subset:" + "+".join(sub), frozenset(sub), "PASS"))
    return runs


def run_spec(spec, args) -> list[dict]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    records = []
    good_time = None
    for label, applied, expected in plan(spec, args.isolation):
        cfg = spec.hybrid(applied)
        argv = spec.argv(cfg)
        t = args.timeout or spec.timeout or 60
        if _POOL is not None:
            res = run_warm(argv, spec.environment(cfg), spec.cwd, t)
        else:
            e = dict(env)
            e.update(spec.environment(cfg))
            res = run_one(argv, e, spec.cwd, t)
        outcome = judge(spec, res, good_time)
        if label == "good" and res["metrics"]:
            good_time = res["metrics"].get(spec.slow_metric or "time_ms")
        ok = (outcome == "PASS") if expected == "PASS" else (outcome not in ("PASS", "UNRESOLVED"))
        rec = {"spec": spec.name, "label": label, "applied": sorted(applied),
               "argv": argv[1:], "expected": expected, "outcome": outcome, "as_expected": ok, **res}
        records.append(rec)
        if _SINK is not None:
            with _LOCK:
                _SINK.write(json.dumps(rec) + "\n")
                _SINK.flush()
        m = res["metrics"] or {}
        print(f"[{spec.name}] {label:28s} {outcome:10s} {'ok ' if ok else 'UNEXPECTED'} "
              f"rc={res['rc']} wall={res['wall_s']}s rel_err={m.get('rel_err')} "
              f"cos={m.get('cos')} time_ms={m.get('time_ms')}", flush=True)
    return records


def fmt(v):
    if isinstance(v, float):
        return f"{v:.3g}"
    return "" if v is None else str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--isolation", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None, help="override the specs' timeouts")
    ap.add_argument("--out", default="evidence-out")
    ap.add_argument("--warm", action="store_true",
                    help="run through a warm bisectk WorkerPool (one worker on GPU 0; --jobs is ignored)")
    args = ap.parse_args(argv)
    specs = [load_spec(p) for p in args.specs]
    global _POOL
    if args.warm:
        from bisectk.run.pool import WorkerPool
        _POOL = WorkerPool(gpus=[0]).start()
        args.jobs = 1
    serial = [s for s in specs if s.slow_factor or "interact" in s.name]
    parallel = [s for s in specs if s not in serial]
    t0 = time.perf_counter()
    records = []
    global _SINK
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _SINK = open(out / "evidence.jsonl", "w")
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        for recs in ex.map(lambda s: run_spec(s, args), parallel):
            records.extend(recs)
    for s in serial:
        records.extend(run_spec(s, args))
    _SINK.close()
    if _POOL is not None:
        print(f"warm pool: {_POOL.stats}")
        _POOL.close()
    lines = ["| spec | run | applied (bad values) | outcome | expected | rc | wall s | rel_err | cos | time_ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        m = r["metrics"] or {}
        lines.append(f"| {r['spec']} | {r['label']} | {', '.join(r['applied']) or '-'} | "
                     f"{r['outcome']} | {r['expected']}{'' if r['as_expected'] else ' (MISMATCH)'} | "
                     f"{fmt(r['rc'])} | {r['wall_s']} | {fmt(m.get('rel_err'))} | {fmt(m.get('cos'))} | "
                     f"{fmt(m.get('time_ms'))} |")
    bad = [r for r in records if not r["as_expected"]]
    lines.append("")
    lines.append(f"{len(records)} runs, {len(bad)} not as expected, {time.perf_counter() - t0:.0f} s")
    (out / "evidence.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
