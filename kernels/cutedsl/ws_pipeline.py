#!/usr/bin/env python3
"""Warp-specialized TMA pipeline on Hopper (CuTe DSL): row sums of an M x N fp32 matrix.

One CTA owns 128 rows.  Warps 0 .. 4*C-1 are C consumer warpgroups, the last warp is the TMA
producer.  The producer streams (128 x TILE_N) tiles of the CTA's rows through a
``cutlass.pipeline.PipelineTmaAsync`` of ``--stages`` shared-memory slots; consumer warpgroup g sums
its share of the columns of every tile (thread t owns row t).  The warpgroups' partial sums meet in
shared memory behind a named barrier, and warpgroup 0 writes the row totals (the epilogue).

Factors (the defaults are the correct kernel):
  --stages N            pipeline depth (1: correct but slower; too many: the launch fails, smem)
  --consumer-wgs {1,2}  consumer warpgroups (CTA = 128*C + 32 threads)
  --arrive-unit         consumer arrive count of the empty barriers counted in warps (correct: one
                        lane per warp signals) or in threads (hang)
  --producer-phase      initial phase of the producer pipeline state: 1 (correct) or 0 (hang)
  --tx-delta BYTES      added to the transaction byte count of a stage (non-zero: hang)
  --tile-index          global tile chosen by the iteration count (correct) or the stage index (wrong)
  --release             consumer releases a stage after (correct) or before reading it: the
                        producer's refill races the reads (wrong, rel_err ~0.1 on an H200)
  --consumer-work N     per-tile math (a dependent FMA chain of N steps, value-neutral) done by the
                        consumer before it reads the tile (slower; widens the --release race)
  --nbar-threads N      thread count of the epilogue named barrier (0: 128*C, correct; more: hang)
  --stage-stride        shared-memory stride between stages: the tile size (correct) or missing
                        (all stages alias one slot)
  --lockstep {0,1}      producer waits (named barrier) until the consumers finished the previous
                        tile before loading the next one: leader-ahead protection
The last two hide each other and the depth: stages>=2 AND stride missing AND no lockstep corrupts.
"""



import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

TILE_M = 128


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--tile-n", type=int, default=32)
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--consumer-wgs", type=int, default=1, choices=[1, 2])
    p.add_argument("--arrive-unit", default="warp", choices=["warp", "thread"])
    p.add_argument("--producer-phase", type=int, default=1, choices=[0, 1])
    p.add_argument("--tx-delta", type=int, default=0)
    p.add_argument("--tile-index", default="iter", choices=["iter", "stage"])
    p.add_argument("--release", default="after", choices=["after", "before"])
    p.add_argument("--consumer-work", type=int, default=0)
    p.add_argument("--nbar-threads", type=int, default=0)
    p.add_argument("--stage-stride", default="tile", choices=["tile", "missing"])
    p.add_argument("--lockstep", type=int, default=0, choices=[0, 1])
    C.add_common_args(p)
    a = p.parse_args(argv)
    if a.m % TILE_M or a.n % a.tile_n or a.tile_n % (8 * a.consumer_wgs):
        p.error("m must be a multiple of 128, n of tile-n, tile-n of 8*consumer-wgs")
    return a


def build(args):
    """Return (kernel object); imports cutlass lazily so --help works without it."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import cutlass.pipeline as pipeline
    import cutlass.memory as cmem
    from cutlass.cute.nvgpu import cpasync

    class RowSumWS:
        def __init__(self, a):
            self.tile_n = a.tile_n
            self.stages = a.stages
            self.wgs = a.consumer_wgs
            self.consumer_threads = 128 * self.wgs
            self.consumer_warps = 4 * self.wgs
            self.threads = self.consumer_threads + 32
            self.producer_warp = self.consumer_warps
            self.arrive_unit = a.arrive_unit
            self.producer_phase = a.producer_phase
            self.tx_bytes = TILE_M * self.tile_n * 4 + a.tx_delta
            self.tile_by_stage = a.tile_index == "stage"
            self.release_before = a.release == "before"
            self.nbar_threads = a.nbar_threads or self.consumer_threads
            self.stage_stride = TILE_M * self.tile_n if a.stage_stride == "tile" else 0
            self.lockstep = bool(a.lockstep)
            self.cols_per_wg = self.tile_n // self.wgs

        @cute.jit
        def __call__(self, mX: cute.Tensor, mOut: cute.Tensor, work: cutlass.Int32,
                     fa: cutlass.Float32, fb: cutlass.Float32, stream: cuda.CUstream):
            tile_layout = cute.make_layout((TILE_M, self.tile_n), stride=(self.tile_n, 1))
            staged = cute.make_layout((TILE_M, self.tile_n, self.stages),
                                      stride=(self.tile_n, 1, self.stage_stride))
            tma_atom, tma_x = cpasync.make_tiled_tma_atom(
                cpasync.CopyBulkTensorTileG2SOp(), mX, tile_layout, (TILE_M, self.tile_n))

            @cute.struct
            class Storage:
                bars: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                part: cute.struct.MemRange[cutlass.Float32, self.consumer_threads]
                sx: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, cute.cosize(staged)], 128]

            self.storage = Storage
            self.smem_bytes = Storage.size_in_bytes()
            grid = (cute.size(mX, mode=[0]) // TILE_M, 1, 1)
            self.kernel(tma_atom, tma_x, mOut, staged, work, fa, fb).launch(
                grid=grid, block=[self.threads, 1, 1], stream=stream)

        @cute.kernel
        def kernel(self, tma_atom: cute.CopyAtom, mX: cute.Tensor, mOut: cute.Tensor,
                   staged: cute.Layout, work: cutlass.Int32, fa: cutlass.Float32,
                   fb: cutlass.Float32):
            tidx, _, _ = cute.arch.thread_idx()
            bidx, _, _ = cute.arch.block_idx()
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

            if warp == self.producer_warp:
                cpasync.prefetch_descriptor(tma_atom)

            smem = cmem.SmemAllocator()
            st = smem.allocate(self.storage)
            sX = st.sx.get_tensor(staged)
            sPart = st.part.get_tensor(cute.make_layout(self.consumer_threads))

            if cutlass.const_expr(self.arrive_unit == "warp"):
                consumer_arrivals = self.consumer_warps  # one signalling lane per consumer warp
            else:
                consumer_arrivals = self.consumer_threads
            pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=st.bars.data_ptr(),
                num_stages=self.stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arrivals),
                tx_count=self.tx_bytes,
            )

            # (128, TILE_N, k_tiles) view of this CTA's rows
            gX = cute.local_tile(mX, (TILE_M, self.tile_n), (bidx, None))
            tXsX, tXgX = cpasync.tma_partition(
                tma_atom, 0, cute.make_layout(1),
                cute.group_modes(sX, 0, 2), cute.group_modes(gX, 0, 2))
            k_tiles = cute.size(gX, mode=[2])

            if warp == self.producer_warp:
                # ---------------- producer warp ----------------
                pstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                if cutlass.const_expr(self.producer_phase == 0):
                    pstate = pipeline.PipelineState(self.stages, cutlass.Int32(0), cutlass.Int32(0),
                                                    cutlass.Int32(0))
                for k in cutlass.range(k_tiles, unroll=1):
                    if cutlass.const_expr(self.lockstep):
                        if k > 0:
                            # wait until the consumers are done with tile k-1
                            cute.arch.barrier(barrier_id=2,
                                              number_of_threads=32 + self.consumer_threads)
                    pipe.producer_acquire(pstate)
                    if cutlass.const_expr(self.tile_by_stage):
                        g = pstate.index
                    else:
                        g = pstate.count
                    cute.copy(tma_atom, tXgX[(None, g)], tXsX[(None, pstate.index)],
                              tma_bar_ptr=pipe.producer_get_barrier(pstate))
                    pipe.producer_commit(pstate)
                    pstate.advance()
                pipe.producer_tail(pstate)
            else:
                # ---------------- consumer warpgroups ----------------
                row = tidx % 128
                wg = tidx // 128
                col0 = wg * self.cols_per_wg
                cstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
                acc = cutlass.Float32(0.0)
                t = cutlass.Float32(0.0)
                for k in cutlass.range(k_tiles, unroll=1):
                    pipe.consumer_wait(cstate)
                    if cutlass.const_expr(self.release_before):
                        pipe.consumer_release(cstate)
                    # per-tile math before the reads (value neutral: fa == 1, fb == 0 at run time)
                    for _ in cutlass.range(work, unroll=1):
                        t = t * fa + fb
                    s = cstate.index
                    for j in cutlass.range_constexpr(self.cols_per_wg):
                        # rotated column order: conflict-free shared-memory reads
                        c = col0 + (row + j) % self.cols_per_wg
                        acc += sX[(row, c, s)]
                    if cutlass.const_expr(not self.release_before):
                        pipe.consumer_release(cstate)
                    if cutlass.const_expr(self.lockstep):
                        if k < k_tiles - 1:
                            cute.arch.barrier_arrive(barrier_id=2,
                                                     number_of_threads=32 + self.consumer_threads)
                    cstate.advance()
                sPart[tidx] = acc + t
                # epilogue: all consumer warpgroups' partials must be in shared memory
                cute.arch.barrier(barrier_id=1, number_of_threads=self.nbar_threads)
                if wg == 0:
                    total = cutlass.Float32(0.0)
                    for g2 in cutlass.range_constexpr(self.wgs):
                        total += sPart[g2 * 128 + row]
                    mOut[bidx * TILE_M + row] = total

    return RowSumWS(args)


def main(argv):
    args = parse(argv)
    compile_only = C.compile_only_requested(args)
    C.prepare_env(compile_only)
    timer = C.Timer()
    import torch
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream
    C.phase("imports")

    metrics = C.config_dict(args)
    metrics["kernel"] = "ws_pipeline"
    k = build(args)
    work = cutlass.Int32(args.consumer_work)
    fa, fb = cutlass.Float32(1.0), cutlass.Float32(0.0)

    if compile_only:
        fx = make_fake_compact_tensor(cutlass.Float32, (args.m, args.n), stride_order=(1, 0),
                                      assumed_align=16)
        fo = make_fake_compact_tensor(cutlass.Float32, (args.m,), assumed_align=16)
        compiled = cute.compile(k, fx, fo, work, fa, fb, make_fake_stream(), options=C.ptx_options())
        metrics.update({"compile_only": True, "ptx_chars": C.write_ptx(compiled, args.ptx_out),
                        "compile_ms": round(timer.ms(), 1),
                        "smem_bytes": getattr(k, "smem_bytes", None)})
        C.emit(metrics)
        return 0

    if not torch.cuda.is_available():
        return C.fail_no_gpu(metrics)
    import cuda.bindings.driver as cuda

    torch.manual_seed(args.seed)
    x = torch.randn(args.m, args.n, device="cuda", dtype=torch.float32)
    out = torch.full((args.m,), float("nan"), device="cuda", dtype=torch.float32)
    mx = from_dlpack(x, assumed_align=16)
    mo = from_dlpack(out, assumed_align=16)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    C.phase("compile")
    try:
        compiled = cute.compile(k, mx, mo, work, fa, fb, stream,
                                **({"options": C.ptx_options()} if args.ptx_out else {}))
    except Exception as e:  # a configuration that does not compile: skip it (125)
        metrics.update({"ok": False, "error": f"compile: {type(e).__name__}: {e}"[:800]})
        C.emit(metrics)
        return 125
    if args.ptx_out:
        C.write_ptx(compiled, args.ptx_out)
    C.phase("compiled")
    C.phase("launch")
    compiled(mx, mo, work, fa, fb, stream)
    torch.cuda.synchronize()
    C.phase("synchronized")
    ref = x.double().sum(dim=1)
    err = (out.double() - ref).norm() / ref.norm()
    rel_err = float(err)
    t_ms = C.time_cuda(lambda: compiled(mx, mo, work, fa, fb, stream), args.iters)
    metrics.update({"rel_err": rel_err, "time_ms": t_ms,
                    "device": torch.cuda.get_device_name(), "wall_ms": round(timer.ms(), 1),
                    "smem_bytes": getattr(k, "smem_bytes", None)})
    C.emit(metrics)
    return 0


if __name__ == "__main__":
    C.run_main(main)
