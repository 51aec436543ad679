"""CPU stand-in for the compile step of a GPU kernel (nvcc/ptxas or the CuTe DSL JIT).

Used as a variant's `build` command: it exits 0 when the configuration "compiles" and non-zero with
a compiler-style error otherwise, so that bisectk classifies the configuration UNRESOLVED(BUILD)
instead of blaming the kernel. It writes nothing (parallel runs share the working tree).

Rules, modelled on what really fails to compile:
  --arch sm_90a|sm_90|sm_100a|...   sm_80 and older: no TMA / mbarrier transaction counts -> error.
  --mma wgmma|tcgen05|mma_sync      wgmma is sm_90a-only, tcgen05 is sm_100a-only (arch-specific
                                    "a" features), mma_sync compiles everywhere. So switching the
                                    arch without switching the MMA flavour (or vice versa) does not
                                    build: an arch/mma pair only builds together.
  --smem-kb K                       shared memory per CTA; more than 227 KB is a ptxas error.
"""
from __future__ import annotations

import argparse
import sys

MIN_ARCH = 90          # TMA + mbarrier expect_tx need Hopper
MAX_SMEM_KB = 227      # opt-in shared memory per block on sm_90 / sm_100
MMA_ARCH = {"wgmma": "sm_90a", "tcgen05": "sm_100a", "mma_sync": None}


def arch_number(arch: str) -> int | None:
    if not arch.startswith("sm_"):
        return None
    digits = arch[3:].rstrip("a")
    return int(digits) if digits.isdigit() else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--mma", default="wgmma")
    p.add_argument("--smem-kb", type=int, default=96)
    a = p.parse_args(argv)

    errors = []
    n = arch_number(a.arch)
    if n is None:
        errors.append(f"nvcc fatal   : Unsupported gpu architecture '{a.arch}'")
    elif n < MIN_ARCH:
        errors.append(f"ptxas error   : Feature 'cp.async.bulk.tensor' requires .target sm_90 or higher "
                      f"(target is {a.arch})")
    if a.mma not in MMA_ARCH:
        errors.append(f"error: unknown MMA flavour '{a.mma}' (expected one of {', '.join(MMA_ARCH)})")
    elif MMA_ARCH[a.mma] and a.arch != MMA_ARCH[a.mma]:
        errors.append(f"ptxas error   : Instruction '{a.mma}' not supported on .target '{a.arch}' "
                      f"(requires {MMA_ARCH[a.mma]})")
    if a.smem_kb > MAX_SMEM_KB:
        errors.append(f"ptxas error   : Entry function 'kernel' uses too much shared data "
                      f"({a.smem_kb * 1024:#x} bytes, {MAX_SMEM_KB * 1024:#x} max)")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    print(f"build: kernel for {a.arch} ({a.mma}, {a.smem_kb} KB smem) ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
