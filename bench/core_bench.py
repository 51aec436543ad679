"""Core benchmarks (issue 2): per-run framework overhead, and hang-detection latency.

1. Overhead: the same 1 s command run N times bare (`subprocess.run`) and through bisectk's
   Runner (process session, watchdog, output capture, classification, ledger write), interleaved
   so machine noise hits both alike. Goal: <= 5 % more wall time per run.
2. Hang latency: a subject whose good endpoint takes B seconds and whose bad endpoint hangs.
   `verify` calibrates the watchdog from good, then we time how long the hang takes to be
   classified. Goal: <= max(1 s, 5 x B) + 0.5 s.

Usage: python bench/core_bench.py [--n 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisectk.ledger import Ledger  # noqa: E402
from bisectk.outcome import FailKind  # noqa: E402
from bisectk.run.runner import Runner  # noqa: E402
from bisectk.spec import load_spec  # noqa: E402

SLEEPER = "import sys, time, json; time.sleep(float(sys.argv[1])); print('BISECTK_RESULT ' + json.dumps({'i': int(sys.argv[2])}))"
HANGER = "import sys, time\nif sys.argv[2] == 'hang':\n    while True: time.sleep(1)\ntime.sleep(float(sys.argv[1]))"


def write_spec(root: Path, code: str, good: dict, bad: dict) -> Path:
    (root / "pyproject.toml").touch()
    spec = root / "s.toml"
    lines = ["[subject]", f"command = {json.dumps(['python', '-c', code, '{secs}', '{i}'])}",
             "[good]", *[f"{k} = {json.dumps(v)}" for k, v in good.items()],
             "[bad]", *[f"{k} = {json.dumps(v)}" for k, v in bad.items()]]
    spec.write_text("\n".join(lines) + "\n")
    return spec


def overhead(n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        spec = load_spec(write_spec(root, SLEEPER, {"secs": 1.0, "i": 0}, {"secs": 1.0, "i": 1}))
        runner = Runner(spec, Ledger(root / "ledger.db"), log_root=root / "logs")
        runner.timeout = None
        bare, framed = [], []
        for i in range(n):
            cfg = {"secs": 1.0, "i": i + 10}  # a fresh configuration each time: no memo hits
            argv = spec.argv(cfg)
            t = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            run = runner.observe(cfg)
            framed.append(time.perf_counter() - t)
            assert run.outcome.value == "pass", run
        b, f = statistics.mean(bare), statistics.mean(framed)
        print(f"overhead: bare subprocess.run mean {b:.4f} s (min {min(bare):.4f}), "
              f"bisectk Runner.observe mean {f:.4f} s (min {min(framed):.4f}) over {n} runs of a 1 s command")
        pct = 100 * (f - b) / b
        print(f"overhead per run: {f - b:+.4f} s = {pct:+.2f} %  (goal <= 5 %: {'PASS' if pct <= 5 else 'FAIL'})")


def hang_latency() -> None:
    for base in (0.05, 0.5, 1.0):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            spec = load_spec(write_spec(root, HANGER, {"secs": base, "i": "ok"}, {"secs": base, "i": "hang"}))
            runner = Runner(spec, Ledger(root / "ledger.db"))
            t = time.perf_counter()
            good = runner.verdict(spec.endpoint("good"), 3, label="good")
            runner.calibrate(list(good.runs))
            slowest = max(r.duration_s for r in good.runs)
            t = time.perf_counter()
            bad = runner.verdict(spec.endpoint("bad"), 1)
            latency = time.perf_counter() - t
            assert bad.kind is FailKind.HANG
            goal = max(1.0, 5 * slowest) + 0.5
            print(f"hang latency: good baseline {slowest:.3f} s (slowest of 3), watchdog {runner.timeout.seconds:.2f} s, "
                  f"hang classified after {latency:.3f} s; goal <= {goal:.2f} s: {'PASS' if latency <= goal else 'FAIL'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    args = ap.parse_args()
    overhead(args.n)
    hang_latency()


if __name__ == "__main__":
    main()
