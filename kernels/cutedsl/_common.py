"""Shared plumbing for the CuTe DSL subject scripts (no kernel code here).

Every kernel script is a bisectk subject: it prints one ``BISECTK_RESULT {json}`` line and exits 0
when the kernel ran (a wrong result is a metric, not an exit code).  With ``--compile-only`` (or
``BISECTK_COMPILE_ONLY=1``) it only compiles with ``cute.compile`` against fake tensors, which works
on a machine without a GPU (``CUTE_DSL_ARCH`` defaults to ``sm_90a`` then), and writes the PTX to
``--ptx-out`` when given.  A compile error is a non-zero exit (a Python traceback, exit 1), which
bisectk classifies as UNRESOLVED(BUILD) when the spec runs the compile as its ``build`` step.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

RESULT_TAG = "BISECTK_RESULT"
PHASE_TAG = "BISECTK_PHASE"


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compile-only", action="store_true",
                   help="compile (cute.compile on fake tensors) and dump PTX; never launch")
    p.add_argument("--ptx-out", default=None, help="write the kernel PTX to this path")
    p.add_argument("--iters", type=int, default=20, help="timed launches after the checked one")
    p.add_argument("--seed", type=int, default=0)


def compile_only_requested(args: argparse.Namespace) -> bool:
    return bool(args.compile_only) or os.environ.get("BISECTK_COMPILE_ONLY", "") not in ("", "0")


def prepare_env(compile_only: bool) -> None:
    """Must run before ``import cutlass``."""
    if compile_only:
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def emit(metrics: dict) -> None:
    clean = {}
    for k, v in metrics.items():
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            clean[k] = str(v)  # JSON has no NaN; bisectk reads "nan" as a failed metric
        else:
            clean[k] = v
    print(f"{RESULT_TAG} {json.dumps(clean, sort_keys=True)}", flush=True)


def phase(name: str) -> None:
    """Progress line for a watchdog that follows the subject (stderr, flushed at once): one of
    ``imports``, ``compile``, ``compiled``, ``launch``, ``synchronized``.  A hang after
    ``launch`` and before ``synchronized`` is a kernel that never finished."""
    print(f"{PHASE_TAG} {name}", file=sys.stderr, flush=True)


_DUMP_DIR = None


def ptx_options() -> str:
    """cute.compile options that keep the PTX (dumped into a private temp dir, not the cwd). The
    options are one string that cute.compile splits as a shell does: the directory is quoted (a
    TMPDIR with a space made the options 'malformed' and every compile fail)."""
    global _DUMP_DIR
    import atexit
    import shlex
    import shutil
    import tempfile

    if _DUMP_DIR is None:
        _DUMP_DIR = tempfile.mkdtemp(prefix="bisectk-ptx-")
        atexit.register(shutil.rmtree, _DUMP_DIR, True)
    return f"--keep-ptx --dump-dir {shlex.quote(_DUMP_DIR)}"


def write_ptx(compiled, path: str | None) -> int:
    """Write the PTX of a compiled CuTe function; returns its length (0 when unavailable)."""
    ptx = getattr(compiled, "__ptx__", None)
    if ptx is None:
        return 0
    if path:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w") as f:
            f.write(ptx)
    return len(ptx)


def config_dict(args: argparse.Namespace) -> dict:
    skip = {"compile_only", "ptx_out", "iters", "seed"}
    return {k: v for k, v in vars(args).items() if k not in skip}


class Timer:
    def __init__(self):
        self.t0 = time.perf_counter()

    def ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1e3


def time_cuda(fn, iters: int, batches: int = 5) -> float:
    """Milliseconds per call of ``fn``: the best of ``batches`` batch means (CUDA events) of
    ``iters`` back-to-back launches each, after two warm-up launches.  The minimum over batches
    keeps the number steady when other processes share the GPU."""
    import torch

    if iters <= 0:
        return float("nan")
    for _ in range(2):
        fn()
    best = float("inf")
    for _ in range(max(1, batches)):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / iters)
    return best


def fail_no_gpu(metrics: dict) -> int:
    metrics.update({"ok": False,
                    "error": "no CUDA device: this kernel needs a GPU (without one, `bisectk ptx SPEC` compiles it)"})
    emit(metrics)
    return 125  # UNRESOLVED: this machine cannot run the subject


def run_main(main) -> None:
    sys.exit(main(sys.argv[1:]))
