"""CPU stand-in for a kernel that crashes the process, or poisons its (CUDA) context, for one setting.

The "kernel" is a blocked reduction over a buffer read through raw pointers (ctypes), like a kernel
reading global memory through a tensor descriptor. Real GPU failures it stands in for:

  --access in|oob     oob: the descriptor's base pointer is never set (null) -- like a TMA descriptor
                      or pointer argument that was not filled in -- and the first load through it hits
                      the unmapped null page: a real SIGSEGV (returncode -11), as an illegal address
                      kills a host process that dereferences device memory.
  --poison on|off     on: the "launch" fails with the text a poisoned CUDA context gives
                      ("CUDA error: an illegal memory access was encountered"); like a real poisoned
                      context every later call in the process fails too (../shared/gpu/README.md), and
                      the process ends with that RuntimeError and exit status 1.
  --abort on|off      on: a host-side assertion fails and the process calls abort(): SIGABRT (-6).
  --skip on|off       on: the configuration cannot be tested here (e.g. no device of that arch):
                      exit status 125, git bisect's "skip" -> UNRESOLVED.
  --n, --block, --dtype f32|f64, --seed, --arch, --mma
                      benign: problem size, "threads per block", element type, data, and the target
                      arch / MMA flavour (checked by build.py, ignored at run time).

Last line on success: `BISECTK_RESULT {json}` with rel_err (blocked sum vs math.fsum), blocks and
time_ms; exit status 0.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import random
import resource
import sys
import time

ILLEGAL_ADDRESS = "CUDA error: an illegal memory access was encountered"


class Context:
    """A device context that, like CUDA's, is unusable for the rest of the process once poisoned."""

    def __init__(self) -> None:
        self.sticky_error: str | None = None

    def check(self) -> None:
        if self.sticky_error:
            raise RuntimeError(self.sticky_error)


def on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on|off, got {value!r}")
    return value == "on"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--access", choices=("in", "oob"), default="in")
    p.add_argument("--poison", type=on_off, default=False, metavar="on|off")
    p.add_argument("--abort", type=on_off, default=False, metavar="on|off")
    p.add_argument("--skip", type=on_off, default=False, metavar="on|off")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--dtype", choices=("f32", "f64"), default="f32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="sm_90a", help="ignored at run time (see build.py)")
    p.add_argument("--mma", default="wgmma", help="ignored at run time (see build.py)")
    a = p.parse_args(argv)
    if a.n < 1 or a.block < 1:
        p.error("--n and --block must be >= 1")
    return a


def launch(a: argparse.Namespace, ctx: Context, buf, ctype) -> list[float]:
    """One "thread block" per `block` elements; each returns its partial sum."""
    ctx.check()
    if a.poison:
        # The kernel faults on the device; the error is sticky for the whole context.
        ctx.sticky_error = ILLEGAL_ADDRESS
        raise RuntimeError(ILLEGAL_ADDRESS)
    size = ctypes.sizeof(ctype)
    base = 0 if a.access == "oob" else ctypes.addressof(buf)  # oob: base pointer never set
    partials = []
    for start in range(0, a.n, a.block):
        acc = 0.0
        for i in range(start, min(a.n, start + a.block)):
            # A raw load at base + i * size: with a null base this is a real SIGSEGV.
            acc += ctype.from_buffer_copy(ctypes.string_at(base + i * size, size)).value
        partials.append(acc)
    return partials


def phase(name: str) -> None:
    """The subject protocol's progress line (bisectk's watchdog follows it)."""
    print(f"BISECTK_PHASE {name}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    if a.skip:
        print(f"skip: no device for {a.arch} here; this configuration cannot be tested", file=sys.stderr)
        return 125
    # A deliberate crash must not litter the working tree with core files (core_pattern "core").
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    ctype = ctypes.c_float if a.dtype == "f32" else ctypes.c_double
    rng = random.Random(a.seed)
    host = [ctype(rng.uniform(-1.0, 1.0)).value for _ in range(a.n)]  # values exact in dtype
    buf = (ctype * a.n)(*host)
    ctx = Context()

    if a.abort:
        # A host-side check in the launcher fails (CUTLASS/CuTe asserts end in abort()).
        print("python: crash.py: launch: Assertion `smem_size <= max_smem_per_block' failed.",
              file=sys.stderr, flush=True)
        os.abort()

    t0 = time.perf_counter()
    phase("launch")
    try:
        partials = launch(a, ctx, buf, ctype)
    except RuntimeError as e:
        # What torch prints for an asynchronous device fault; then, like real code, we carry on
        # and the next API call (the device-to-host copy) raises again from the poisoned context.
        print(f"{e}\nCUDA kernel errors might be asynchronously reported at some other API call, so "
              f"the stacktrace below might be incorrect.\nFor debugging consider passing "
              f"CUDA_LAUNCH_BLOCKING=1", file=sys.stderr, flush=True)
        partials = []
    ctx.check()  # the synchronising copy: raises the sticky error -> traceback, exit status 1
    dt = time.perf_counter() - t0
    phase("synchronized")

    total = math.fsum(partials)
    ref = math.fsum(host)
    m = {
        "rel_err": abs(total - ref) / max(abs(ref), 1e-30),
        "blocks": len(partials),
        "time_ms": round(dt * 1e3, 3),
    }
    print("BISECTK_RESULT " + json.dumps(m), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
