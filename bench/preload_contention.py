"""How long a warm worker takes to be ready when N start at once (run it on the GPU machine).

A pool starts its worker and the slot's hot spares together; if their imports and CUDA contexts
slow each other, the first run waits longer. This starts N workers (`python -m bisectk.run.worker
--serve`) at the same moment with the given preload and prints, for each, the seconds to ready and
its own timing of each preloaded name.

    python bench/preload_contention.py --n 1 --n 4 --preload torch,cutlass,cutlass.cute,cutlass.pipeline
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def start_many(n: int, preload: str, root: Path = ROOT) -> list[tuple[float, dict]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    procs = []
    t0 = time.perf_counter()
    for _ in range(n):
        r, w = os.pipe()
        p = subprocess.Popen([sys.executable, "-m", "bisectk.run.worker", "--serve", "--reply-fd", str(w),
                              "--preload", preload], stdin=subprocess.PIPE, pass_fds=(w,), env=env,
                             stdout=subprocess.DEVNULL)
        os.close(w)
        procs.append((p, os.fdopen(r)))
    out = []
    for p, reply in procs:
        ready = json.loads(reply.readline())
        info = ready.get("preload", {})
        try:   # the worker's own memory (USS: not shared with the others), once ready
            info["uss_mb"] = round(psutil.Process(ready["pid"]).memory_full_info().uss / 2**20)
        except (psutil.Error, KeyError):
            pass
        out.append((time.perf_counter() - t0, info))
    for p, reply in procs:
        p.stdin.close()
        p.wait(timeout=60)
        reply.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", required=True)
    ap.add_argument("--preload", default="torch,cutlass")
    ap.add_argument("--root", type=Path, default=ROOT, help="the tree whose bisectk.run.worker is started")
    a = ap.parse_args()
    for n in a.n:
        for i, (ready_s, info) in enumerate(start_many(n, a.preload, a.root.resolve())):
            top = {k: v for k, v in info.items() if "." not in k and k != "cuda"}
            print(f"n={n} worker {i}: ready after {ready_s:.2f} s; {top}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
