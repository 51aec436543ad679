"""CPU stand-in for a tiled flash-attention forward kernel (online softmax), in torch on the CPU.

It runs the same loop a FlashAttention-2/FMHA kernel runs -- S = Q K^T per KV tile, running row max
m, running row sum l, O rescaled by exp2(m_old - m_new) when the max grows, O / l at the end -- in
float32, and compares against softmax(Q K^T * scale) V in float64. The factors are the bugs of a real
CuTe DSL FMHA debugging session (seed 001) and of ../shared/gpu/README.md:

  --o-rescale on|off      off: O is not multiplied by exp2(m_old - m_new) when the row max grows
                          ("O rescale re-enabled for kt > 0"). Invisible with one KV tile (there is
                          no earlier O to rescale); WRONG as soon as --kv-len spans >= 2 tiles.
  --scale-domain log2|twice
                          twice: the row max is stored already scaled by scale*log2(e) and the
                          correction multiplies by that scale again ("the double-scaling bug that
                          broke multi-tile O rescaling"). Also only visible with >= 2 tiles.
  --kv-index iter|stage   stage: the KV tile is picked by the pipeline stage (iteration % stages)
                          instead of the iteration ("global tile picked by the stage index",
                          "TMA always loaded tile 0"). Invisible while the tile count <= --stages;
                          WRONG beyond (so with --stages 4 --tile 64 it breaks from --kv-len 320 on).
  --rowsum-map row|quad   quad: the row sums are published in the QK fragment's thread->row mapping
                          (thread t owns row t//4 + 32*(t%4)) and read back in the PV mapping (thread
                          t owns row t): rows get each other's normaliser ("QK->PV row mismatch").
                          WRONG even with one tile.
  --warps 6|10, --mma-warp packed|last
                          CTA topology: warps 0-3 are softmax warps, then the MMA warp and the load
                          warp; other warps idle. packed: MMA warp = 4 (idle warps at the end);
                          last: MMA warp = warps - 2 (idle warps 4..warps-3, seed 001's 10-warp layout).
                          The row-statistics exchange buffer has 8 per-warp slots indexed by
                          warp_id % 8 (sized for the 6-warp kernel), and the MMA warp posts its PV
                          commit count into its own slot. Only warps=10 together with mma-warp=last
                          puts the MMA warp at 8, whose slot aliases softmax warp 0's row sums: rows
                          0-31 of every 128-row tile are normalised by the commit count -> WRONG.
                          Each factor alone is harmless: a two-factor interaction.
  --init-max neg-inf|zero, --logit-bias B
                          zero: the running max starts at 0 instead of -inf. Harmless unless every
                          logit is far below 0 (e.g. --logit-bias -1000, itself harmless because
                          softmax is shift-invariant): then every exp2 underflows, l = 0 and O = 0/0
                          -> NaN. A second two-factor interaction, and the one NaN-producing setting.
  --consumer-wgs 1|2      consumer warpgroups per CTA: 2 doubles the CTA to 256 query rows, but the
                          row-statistics exchange keeps one warpgroup's slots (stat index = thread
                          index within the warpgroup, the latent assumption of seed 001's 6-vs-10-warp
                          port), so rows 128..255 of every 256-row CTA are normalised by a slot nobody
                          wrote: stale shared memory. What it holds differs from run to run (as on a
                          GPU, where a warm process and a fresh one read different leftovers): NaN,
                          +-inf, 0, 2.5e+33 or a tiny denormal, drawn from the OS's randomness, never
                          from --seed. WRONG with garbage whose form changes every run -- as long as
                          there are rows past 128 (--seq-q >= 256); with --seq-q 128 it is harmless.
  --kv-len, --tile, --stages, --heads, --head-dim, --seq-q, --seed
                          shape and data; correct for any values (partial last tiles are handled).

Last line on success: `BISECTK_RESULT {json}` with rel_err (Frobenius, vs float64), cos, max_abs,
nan_count, tiles and time_ms; exit status 0. NaN output adds "ok": false.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

WARP_SLOTS = 8        # per-warp slots of the row-statistics exchange buffer (see --warps)
SOFTMAX_WARPS = 4     # 4 softmax warps x 32 rows = 128 query rows per CTA
ROWS_PER_CTA = 32 * SOFTMAX_WARPS


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kv-len", type=int, default=256)
    p.add_argument("--tile", type=int, default=64, help="KV tile (tokens per iteration)")
    p.add_argument("--stages", type=int, default=2, help="KV pipeline stages")
    p.add_argument("--warps", type=int, default=6, help="warps per CTA (>= 6)")
    p.add_argument("--mma-warp", choices=("packed", "last"), default="packed")
    p.add_argument("--o-rescale", choices=("on", "off"), default="on")
    p.add_argument("--scale-domain", choices=("log2", "twice"), default="log2")
    p.add_argument("--kv-index", choices=("iter", "stage"), default="iter")
    p.add_argument("--rowsum-map", choices=("row", "quad"), default="row")
    p.add_argument("--init-max", choices=("neg-inf", "zero"), default="neg-inf")
    p.add_argument("--logit-bias", type=float, default=0.0)
    p.add_argument("--consumer-wgs", type=int, choices=(1, 2), default=1)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--seq-q", type=int, default=128, help="query rows (a multiple of 128)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.kv_len < 1 or a.tile < 1 or a.stages < 1 or a.heads < 1 or a.head_dim < 1:
        p.error("kv-len, tile, stages, heads and head-dim must be >= 1")
    if a.warps < 6:
        p.error("--warps must be >= 6 (4 softmax warps, an MMA warp and a load warp)")
    if a.seq_q < ROWS_PER_CTA or a.seq_q % ROWS_PER_CTA:
        p.error(f"--seq-q must be a positive multiple of {ROWS_PER_CTA}")
    return a


def kernel(a: argparse.Namespace, q, k, v):
    """The tiled forward pass in float32. q: [H, M, D], k/v: [H, N, D]."""
    import torch

    H, M, D = q.shape
    N = k.shape[1]
    scale_log2 = (1.0 / math.sqrt(D)) * math.log2(math.e)
    n_tiles = -(-N // a.tile)

    m = torch.full((H, M), -math.inf if a.init_max == "neg-inf" else 0.0)
    l = torch.zeros(H, M)
    o = torch.zeros(H, M, D)
    for it in range(n_tiles):
        # Which global KV tile this iteration loads: the iteration, or (bug) the stage slot.
        j = it if a.kv_index == "iter" else it % a.stages
        kt = k[:, j * a.tile:(j + 1) * a.tile]
        vt = v[:, j * a.tile:(j + 1) * a.tile]
        s = q @ kt.transpose(1, 2)
        if a.logit_bias:
            s = s + a.logit_bias
        if a.scale_domain == "log2":
            # Row max kept in the raw domain; the scale is applied once, inside every exp2.
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp2((s - m_new[..., None]) * scale_log2)
            alpha = torch.exp2((m - m_new) * scale_log2)
        else:
            # Bug: the row max is stored pre-scaled, and the correction scales it a second time.
            m_new = torch.maximum(m, s.amax(-1) * scale_log2)
            p = torch.exp2(s * scale_log2 - m_new[..., None])
            alpha = torch.exp2((m - m_new) * scale_log2)
        l = alpha * l + p.sum(-1)
        if a.o_rescale == "on":
            o = o * alpha[..., None]
        o = o + p @ vt
        m = m_new

    # Epilogue: softmax warps publish their rows' sums through the per-warp exchange buffer, the
    # MMA warp posts its PV commit count in its own slot, then the rows are normalised.
    ctas = M // ROWS_PER_CTA
    mma_warp = SOFTMAX_WARPS if a.mma_warp == "packed" else a.warps - 2
    table = torch.zeros(H, ctas, WARP_SLOTS, 32)
    lc = l.reshape(H, ctas, ROWS_PER_CTA)
    if a.rowsum_map == "quad":
        # QK C-fragment: thread t holds the sum of row t//4 + 32*(t%4); PV reads lane r for row r.
        t = torch.arange(ROWS_PER_CTA)
        lc = lc[..., t // 4 + 32 * (t % 4)]
    for w in range(SOFTMAX_WARPS):
        table[:, :, w % WARP_SLOTS] = lc[..., 32 * w:32 * (w + 1)]
    table[:, :, mma_warp % WARP_SLOTS] = float(n_tiles)
    l_read = torch.cat([table[:, :, w % WARP_SLOTS] for w in range(SOFTMAX_WARPS)], dim=-1).reshape(H, M)
    if a.consumer_wgs == 2:
        # The second warpgroup's rows read exchange slots nobody wrote: leftovers, different every run.
        rows = torch.arange(M) % (2 * ROWS_PER_CTA) >= ROWS_PER_CTA
        l_read = torch.where(rows, torch.tensor(stale_value()), l_read)
    o = o / l_read[..., None]
    return o, n_tiles


STALE = (float("nan"), float("inf"), float("-inf"), 0.0, 2.5e33, 1e-38)


def stale_value() -> float:
    """What an unwritten shared-memory slot happens to hold this run (not reproducible by --seed)."""
    import random
    return random.SystemRandom().choice(STALE)


def run(a: argparse.Namespace) -> dict:
    import torch

    phase("imports")
    torch.set_num_threads(1)  # small matmuls; one thread keeps timings stable on a shared machine
    g = torch.Generator().manual_seed(a.seed)
    H, M, N, D = a.heads, a.seq_q, a.kv_len, a.head_dim
    # Logits with a spread of a few units so that the running max really moves between tiles.
    q = torch.randn(H, M, D, generator=g, dtype=torch.float64) * 2.0
    k = torch.randn(H, N, D, generator=g, dtype=torch.float64)
    v = torch.randn(H, N, D, generator=g, dtype=torch.float64)

    ref = torch.softmax((q @ k.transpose(1, 2)) / math.sqrt(D), dim=-1) @ v

    t0 = time.perf_counter()
    phase("launch")
    o, n_tiles = kernel(a, q.float(), k.float(), v.float())
    phase("synchronized")
    dt = time.perf_counter() - t0

    o64 = o.double()
    nan_count = int(torch.isnan(o64).sum())
    diff = o64 - ref
    rel_err = float(diff.norm() / ref.norm())
    cos = float(torch.nn.functional.cosine_similarity(o64.flatten(), ref.flatten(), dim=0))
    max_abs = float(diff.abs().max())
    m = {
        "rel_err": rel_err,
        "cos": cos,
        "max_abs": max_abs,
        "nan_count": nan_count,
        "tiles": n_tiles,
        "time_ms": round(dt * 1e3, 3),
    }
    if nan_count:
        m["ok"] = False
        m["error"] = f"NaN in output ({nan_count} elements)"
    return m


def phase(name: str) -> None:
    """The subject protocol's progress line (bisectk's watchdog follows it)."""
    print(f"BISECTK_PHASE {name}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    m = run(a)
    # allow_nan: a NaN metric is printed as NaN (Python's json reads it back); "ok" says it anyway.
    print("BISECTK_RESULT " + json.dumps(m), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
