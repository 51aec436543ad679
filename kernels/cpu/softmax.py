"""CPU stand-in for a blocked (online) softmax kernel with a fast path, in numpy.

Each row of an (rows x n) matrix is reduced in column blocks of `--block` elements, the way a
kernel assigns one block of threads per tile: a running max and a running sum rescaled when a later
block raises the max, then a second pass normalises. Real GPU bug it stands in for:

  --fast on|off   on: the vectorised fast path views the row as (n // block) full blocks, as a
                  kernel that drops the bounds check of its last tile does: when n is not a
                  multiple of the block the tail is never reduced, so the normaliser misses the
                  tail's mass (and its max). The output is wrong exactly when
                  `fast and n % block != 0`: a change to n alone, or to block alone, is enough to
                  expose it once the fast path is on -- two independent ways to fail.
  --n, --block    problem size and block width (the bug needs both the fast path and a tail).
  --rows, --seed  benign: matrix height and data.

Last line on success: `BISECTK_RESULT {json}` with max_err (against a float64 reference), rows, n,
block and time_ms; exit status 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on|off, got {value!r}")
    return value == "on"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", type=on_off, default=False, metavar="on|off")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--block", type=int, default=256)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.n < 1 or args.block < 1 or args.rows < 1:
        p.error("--n, --block and --rows must be positive")
    return args


def blocks_checked(row: np.ndarray, block: int):
    """Every block of the row, the last one partial: the bounds-checked path."""
    for start in range(0, row.shape[0], block):
        yield row[start:start + block]


def blocks_fast(row: np.ndarray, block: int):
    """Full blocks only, as one reshape: no bounds check on the last tile."""
    full = row.shape[0] // block
    yield from row[:full * block].reshape(full, block)


def softmax(x: np.ndarray, block: int, fast: bool) -> np.ndarray:
    out = np.empty_like(x)
    blocks = blocks_fast if fast else blocks_checked
    for r, row in enumerate(x):
        m, s = -np.inf, 0.0
        for tile in blocks(row, block):
            m_new = max(m, float(tile.max()))
            s = s * np.exp(m - m_new) + float(np.exp(tile - m_new).sum())
            m = m_new
        out[r] = np.exp(row - m) / s
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((args.rows, args.n)).astype(np.float32) * 4
    print("BISECTK_PHASE launch", flush=True)
    t0 = time.perf_counter()
    y = softmax(x, args.block, args.fast)
    ms = (time.perf_counter() - t0) * 1e3
    print("BISECTK_PHASE synchronized", flush=True)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    err = float(np.abs(y.astype(np.float64) - ref).max())
    print("BISECTK_RESULT " + json.dumps({"max_err": err, "rows": args.rows, "n": args.n, "block": args.block,
                                          "time_ms": round(ms, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
