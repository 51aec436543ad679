"""Can a warm worker be forked from a process that imported torch and the CuTe DSL but made no CUDA
context? And what does it cost against a fresh process's preload? (issue 25: spares after hangs)

    python bench/fork_probe.py [--children 4] [--hang]

Prints the preload's parts, whether CUDA was initialised by the imports, the threads alive at the
fork, then for each child forked from the template: its CUDA context, its first kernel run (the
good ws_pipeline configuration, in-process as a warm worker runs it) and its wall from the fork.
With --hang, one child runs a hanging configuration and is killed, and the next child must still
run the good one (the GPU and the template unharmed).
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "kernels", "cutedsl", "ws_pipeline.py")
GOOD = ["--stages", "4", "--tile-n", "32", "--iters", "2"]
HANG = ["--stages", "4", "--tile-n", "32", "--producer-phase", "0", "--iters", "2"]


def child(tag: str, argv: list[str], t_fork: float, w: int) -> None:
    t0 = time.perf_counter()
    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    t1 = time.perf_counter()
    sys.argv = [SCRIPT, *argv]
    code = 0
    try:
        runpy.run_path(SCRIPT, run_name="__main__")
    except SystemExit as exc:
        code = exc.code or 0
    except BaseException as exc:   # noqa: BLE001
        code = f"{type(exc).__name__}: {exc}"[:200]
    t2 = time.perf_counter()
    os.write(w, f"{tag}: fork->child {t0 - t_fork:.3f} s, context {t1 - t0:.3f} s, run {t2 - t1:.3f} s, "
                f"fork->done {t2 - t_fork:.3f} s, exit {code}\n".encode())


def fork(tag: str, argv: list[str]):
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child(tag, argv, t, w)
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=4)
    ap.add_argument("--hang", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    import torch
    t1 = time.perf_counter()
    import cutlass.cute  # noqa: F401
    import cutlass.pipeline  # noqa: F401
    t2 = time.perf_counter()
    maps = open("/proc/self/maps").read()
    print(f"template: import torch {t1 - t0:.2f} s, cutlass.cute {t2 - t1:.2f} s; cuda initialised "
          f"{torch.cuda.is_initialized()}; libcuda mapped {'libcuda' in maps}; "
          f"threads {len(os.listdir('/proc/self/task'))}", flush=True)
    # one after another, then all at once
    for i in range(2):
        pid, r = fork(f"serial {i}", GOOD)
        os.waitpid(pid, 0)
        print(os.read(r, 4096).decode().strip(), flush=True)
    kids = [fork(f"together {i}", GOOD) for i in range(a.children)]
    for pid, r in kids:
        os.waitpid(pid, 0)
        print(os.read(r, 4096).decode().strip(), flush=True)
    if a.hang:
        pid, r = fork("hang", HANG)
        time.sleep(12)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("hang child killed after 12 s", flush=True)
        pid, r = fork("after the hang", GOOD)
        os.waitpid(pid, 0)
        print(os.read(r, 4096).decode().strip(), flush=True)
    print(f"template threads at the end {len(os.listdir('/proc/self/task'))}; cuda initialised "
          f"{torch.cuda.is_initialized()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
