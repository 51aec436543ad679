"""When each `BISECTK_PHASE` line of a subject arrives, run by run: where a run's seconds go.

    python bench/phase_times.py SPEC [--side good|bad] [-n RUNS] [--timeout S]

Runs the spec's command for one endpoint RUNS times in a row, each a fresh process in the spec's
cwd with its environment, and prints the seconds from the start to each phase line and to the
exit. Issue 25 asks why an FMHA pass costs ~1.6 s: the import, the trace of the kernel into IR,
the compile (which CuTe DSL's file cache may skip on a repeat) or the launch. Prints only; no
ledger, no watchdog beyond --timeout.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bisectk.spec import load_spec, substitute  # noqa: E402

TAG = "BISECTK_PHASE"


def one_run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[list[tuple[str, float]], int, float]:
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    marks: list[tuple[str, float]] = []

    def read() -> None:
        for line in proc.stderr:
            if line.startswith(TAG):
                marks.append((line[len(TAG):].strip(), time.monotonic() - t0))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    wall = time.monotonic() - t0
    reader.join(timeout=5)
    return marks, rc, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--side", choices=("good", "bad"), default="good")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    config = spec.endpoint(args.side)
    argv = [substitute(word, config) for word in spec.command]
    env = {**os.environ, **spec.environment(config)}
    print(f"# {spec.name} {args.side}: {' '.join(argv)[:160]}")
    for k in range(args.n):
        marks, rc, wall = one_run(argv, spec.cwd, env, args.timeout)
        said = "  ".join(f"{name} {t:.2f}" for name, t in marks)
        print(f"run {k + 1}: {said}  exit {rc} at {wall:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
