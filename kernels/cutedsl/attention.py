#!/usr/bin/env python3
"""Attention forward with online softmax on Hopper (CuTe DSL): TMA + mbarrier pipelines, SIMT math.

out = softmax(Q K^T / sqrt(D)) V for Q, K, V of shape (BH, S, D), fp32, D = 64.

A CTA owns TILE_M = 128*C query rows of one (batch, head); warps 0 .. 4C-1 are C consumer
warpgroups (thread t owns query row t), the last warp is the TMA producer.  The Q tile is loaded
once by TMA and stays resident (each thread keeps its row in registers); K and V tiles of 64 keys
are streamed through one ``PipelineTmaAsync`` (K and V of a tile share a stage and its barrier).
The consumers run the online softmax in the log2 domain: per KV tile, the tile's row maximum,
the correction exp2(m_old - m_new) applied to the row sum and to the O accumulator, then
p = exp2(s*scale_log2 - m_new) and O += p V.  The epilogue writes the unnormalised O rows and the
row sums to shared memory, a named barrier joins the consumer warpgroups, and all consumer threads
then normalise and store O with a coalesced mapping (element e -> row e // D, column e % D).

This is the simpler genuine Hopper version of the brief: the streaming (TMA, mbarrier pipeline,
warp specialisation) and the softmax structure are real; the dot products are SIMT FMAs, not wgmma.

Factors (defaults are the correct kernel):
  --kv-len N            keys per head (multiple of 64): 64 = one KV tile, more = several
  --kv-stages N         depth of the K/V pipeline
  --consumer-wgs {1,2}  consumer warpgroups (CTA = 5 or 9 warps: the 6-vs-10-warp analogue)
  --o-rescale {1,0}     rescale the O accumulator by the correction factor (0: wrong, multi-tile only)
  --scale-mode          correction exp2(m_old - m_new) with m already in the log2 domain ("log2",
                        correct) or scaled a second time ("twice": wrong, multi-tile only)
  --kv-index            KV tile chosen by the iteration count ("iter") or the stage index ("stage":
                        wrong once there are more KV tiles than stages)
  --rowsum-map          epilogue divides element (r, c) by the row sum of row r ("row") or by the
                        row sum of the thread's own softmax row ("thread": wrong)
  --stat-index          where a thread files its row statistics: the CTA tile row ("row") or its
                        thread index within its warpgroup ("wg_thread": right for one consumer
                        warpgroup only; a latent single-warpgroup assumption)
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

D = 64
BLOCK_N = 64


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bh", type=int, default=4, help="batch * heads")
    p.add_argument("--q-len", type=int, default=256)
    p.add_argument("--kv-len", type=int, default=512)
    p.add_argument("--kv-stages", type=int, default=2)
    p.add_argument("--consumer-wgs", type=int, default=1, choices=[1, 2])
    p.add_argument("--o-rescale", type=int, default=1, choices=[0, 1])
    p.add_argument("--scale-mode", default="log2", choices=["log2", "twice"])
    p.add_argument("--kv-index", default="iter", choices=["iter", "stage"])
    p.add_argument("--rowsum-map", default="row", choices=["row", "thread"])
    p.add_argument("--stat-index", default="row", choices=["row", "wg_thread"])
    p.add_argument("--q-scale", type=float, default=2.0, help="inputs: Q ~ q_scale * N(0,1)")
    C.add_common_args(p)
    a = p.parse_args(argv)
    if a.kv_len % BLOCK_N or a.q_len % (128 * a.consumer_wgs):
        p.error("kv-len must be a multiple of 64 and q-len of 128*consumer-wgs")
    return a


def build(args):
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import cutlass.memory as cmem
    import cutlass.pipeline as pipeline
    from cutlass.cute.nvgpu import cpasync

    class AttentionFwd:
        def __init__(self, a):
            self.wgs = a.consumer_wgs
            self.tile_m = 128 * self.wgs
            self.consumer_threads = 128 * self.wgs
            self.consumer_warps = 4 * self.wgs
            self.producer_warp = self.consumer_warps
            self.threads = self.consumer_threads + 32
            self.stages = a.kv_stages
            self.n_kv_tiles = a.kv_len // BLOCK_N
            self.q_tiles_per_head = a.q_len // self.tile_m
            self.o_rescale = bool(a.o_rescale)
            self.scale_twice = a.scale_mode == "twice"
            self.kv_by_stage = a.kv_index == "stage"
            self.rowsum_by_thread = a.rowsum_map == "thread"
            self.stat_wg_local = a.stat_index == "wg_thread"

        @cute.jit
        def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                     scale_log2: cutlass.Float32, stream: cuda.CUstream):
            q_layout = cute.make_layout((self.tile_m, D), stride=(D, 1))
            kv_layout = cute.make_layout((BLOCK_N, D), stride=(D, 1))
            kv_staged = cute.make_layout((BLOCK_N, D, self.stages),
                                         stride=(D, 1, BLOCK_N * D))
            o_layout = cute.make_layout((self.tile_m, D), stride=(D + 1, 1))  # padded
            g2s = cpasync.CopyBulkTensorTileG2SOp()
            tma_q, tq = cpasync.make_tiled_tma_atom(g2s, mQ, q_layout, (self.tile_m, D))
            tma_k, tk = cpasync.make_tiled_tma_atom(g2s, mK, kv_layout, (BLOCK_N, D))
            tma_v, tv = cpasync.make_tiled_tma_atom(g2s, mV, kv_layout, (BLOCK_N, D))

            @cute.struct
            class Storage:
                qbar: cute.struct.MemRange[cutlass.Int64, 2]
                kvbar: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                sl: cute.struct.MemRange[cutlass.Float32, self.tile_m]
                sq: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, cute.cosize(q_layout)], 128]
                sk: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, cute.cosize(kv_staged)], 128]
                sv: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, cute.cosize(kv_staged)], 128]
                so: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, cute.cosize(o_layout)], 128]

            self.storage = Storage
            self.smem_bytes = Storage.size_in_bytes()
            grid = (self.q_tiles_per_head, cute.size(mQ, mode=[0]) // (self.q_tiles_per_head * self.tile_m), 1)
            self.kernel(tma_q, tq, tma_k, tk, tma_v, tv, mO, q_layout, kv_staged, o_layout,
                        scale_log2).launch(grid=grid, block=[self.threads, 1, 1], stream=stream)

        @cute.kernel
        def kernel(self, tma_q: cute.CopyAtom, mQ: cute.Tensor, tma_k: cute.CopyAtom,
                   mK: cute.Tensor, tma_v: cute.CopyAtom, mV: cute.Tensor, mO: cute.Tensor,
                   q_layout: cute.Layout, kv_staged: cute.Layout, o_layout: cute.Layout,
                   scale_log2: cutlass.Float32):
            tidx, _, _ = cute.arch.thread_idx()
            m_blk, bh, _ = cute.arch.block_idx()
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            if warp == self.producer_warp:
                cpasync.prefetch_descriptor(tma_q)
                cpasync.prefetch_descriptor(tma_k)
                cpasync.prefetch_descriptor(tma_v)

            st = cmem.SmemAllocator().allocate(self.storage)
            sQ = st.sq.get_tensor(q_layout)
            sK = st.sk.get_tensor(kv_staged)
            sV = st.sv.get_tensor(kv_staged)
            sO = st.so.get_tensor(o_layout)
            sL = st.sl.get_tensor(cute.make_layout(self.tile_m))

            producer = pipeline.CooperativeGroup(pipeline.Agent.Thread)
            consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_warps)
            q_pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=st.qbar.data_ptr(), num_stages=1, producer_group=producer,
                consumer_group=consumers, tx_count=self.tile_m * D * 4, defer_sync=True)
            kv_pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=st.kvbar.data_ptr(), num_stages=self.stages,
                producer_group=producer, consumer_group=consumers,
                tx_count=2 * BLOCK_N * D * 4)

            q_tile = bh * self.q_tiles_per_head + m_blk
            gQ = cute.local_tile(mQ, (self.tile_m, D), (None, 0))
            gK = cute.local_tile(mK, (BLOCK_N, D), (None, 0))
            gV = cute.local_tile(mV, (BLOCK_N, D), (None, 0))
            tQs, tQg = cpasync.tma_partition(
                tma_q, 0, cute.make_layout(1),
                cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))
            tKs, tKg = cpasync.tma_partition(
                tma_k, 0, cute.make_layout(1),
                cute.group_modes(sK, 0, 2), cute.group_modes(gK, 0, 2))
            tVs, tVg = cpasync.tma_partition(
                tma_v, 0, cute.make_layout(1),
                cute.group_modes(sV, 0, 2), cute.group_modes(gV, 0, 2))

            if warp == self.producer_warp:
                # ---------------- producer warp: Q once, then K/V tiles ----------------
                qs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
                q_pipe.producer_acquire(qs)
                cute.copy(tma_q, tQg[(None, q_tile)], tQs, tma_bar_ptr=q_pipe.producer_get_barrier(qs))
                ps = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                for j in cutlass.range(self.n_kv_tiles, unroll=1):
                    kv_pipe.producer_acquire(ps)
                    if cutlass.const_expr(self.kv_by_stage):
                        jj = ps.index
                    else:
                        jj = ps.count
                    g = bh * self.n_kv_tiles + jj
                    bar = kv_pipe.producer_get_barrier(ps)
                    cute.copy(tma_k, tKg[(None, g)], tKs[(None, ps.index)], tma_bar_ptr=bar)
                    cute.copy(tma_v, tVg[(None, g)], tVs[(None, ps.index)], tma_bar_ptr=bar)
                    kv_pipe.producer_commit(ps)
                    ps.advance()
                kv_pipe.producer_tail(ps)
            else:
                # ---------------- consumer warpgroups: online softmax ----------------
                row = tidx
                qs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
                q_pipe.consumer_wait(qs)
                q = cute.make_rmem_tensor((D,), cutlass.Float32)
                o = cute.make_rmem_tensor((D,), cutlass.Float32)
                for d in cutlass.range_constexpr(D):
                    q[d] = sQ[(row, d)]
                    o[d] = cutlass.Float32(0.0)
                m_run = -cutlass.Float32.inf
                l_run = cutlass.Float32(0.0)
                cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
                for j in cutlass.range(self.n_kv_tiles, unroll=1):
                    kv_pipe.consumer_wait(cs)
                    sidx = cs.index
                    # pass 1: row maximum of this tile, log2 domain
                    m_tile = -cutlass.Float32.inf
                    for n in cutlass.range(BLOCK_N, unroll=1):
                        acc = cutlass.Float32(0.0)
                        for d in cutlass.range_constexpr(D):
                            acc += q[d] * sK[(n, d, sidx)]
                        m_tile = cute.arch.fmax(m_tile, acc * scale_log2)
                    m_new = cute.arch.fmax(m_run, m_tile)
                    if cutlass.const_expr(self.scale_twice):
                        corr = cute.arch.exp2((m_run - m_new) * scale_log2)
                    else:
                        corr = cute.arch.exp2(m_run - m_new)
                    l_run = l_run * corr
                    if cutlass.const_expr(self.o_rescale):
                        for d in cutlass.range_constexpr(D):
                            o[d] = o[d] * corr
                    # pass 2: probabilities, row sum, O += P V
                    for n in cutlass.range(BLOCK_N, unroll=1):
                        acc = cutlass.Float32(0.0)
                        for d in cutlass.range_constexpr(D):
                            acc += q[d] * sK[(n, d, sidx)]
                        p = cute.arch.exp2(acc * scale_log2 - m_new)
                        l_run = l_run + p
                        for d in cutlass.range_constexpr(D):
                            o[d] = o[d] + p * sV[(n, d, sidx)]
                    kv_pipe.consumer_release(cs)
                    cs.advance()
                    m_run = m_new
                # epilogue: unnormalised O and row sums to shared memory
                for d in cutlass.range_constexpr(D):
                    sO[(row, d)] = o[d]
                if cutlass.const_expr(self.stat_wg_local):
                    sL[tidx % 128] = l_run
                else:
                    sL[row] = l_run
                cute.arch.barrier(barrier_id=1, number_of_threads=self.consumer_threads)
                out_row0 = q_tile * self.tile_m
                for i in cutlass.range_constexpr(self.tile_m * D // self.consumer_threads):
                    e = tidx + i * self.consumer_threads
                    r = e // D
                    c = e % D
                    if cutlass.const_expr(self.rowsum_by_thread):
                        lr = sL[row]
                    else:
                        lr = sL[r]
                    mO[(out_row0 + r, c)] = sO[(r, c)] / lr

    return AttentionFwd(args)


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
    metrics["kernel"] = "attention"
    k = build(args)
    scale_log2 = cutlass.Float32(math.log2(math.e) / math.sqrt(D))
    rows_q, rows_kv = args.bh * args.q_len, args.bh * args.kv_len

    if compile_only:
        def fake(rows):
            return make_fake_compact_tensor(cutlass.Float32, (rows, D), stride_order=(1, 0),
                                            assumed_align=16)
        compiled = cute.compile(k, fake(rows_q), fake(rows_kv), fake(rows_kv), fake(rows_q),
                                scale_log2, make_fake_stream(), options=C.ptx_options())
        metrics.update({"compile_only": True, "ptx_chars": C.write_ptx(compiled, args.ptx_out),
                        "compile_ms": round(timer.ms(), 1),
                        "smem_bytes": getattr(k, "smem_bytes", None)})
        C.emit(metrics)
        return 0

    if not torch.cuda.is_available():
        return C.fail_no_gpu(metrics)
    import cuda.bindings.driver as cuda

    torch.manual_seed(args.seed)
    q = args.q_scale * torch.randn(rows_q, D, device="cuda", dtype=torch.float32)
    kk = torch.randn(rows_kv, D, device="cuda", dtype=torch.float32)
    v = torch.randn(rows_kv, D, device="cuda", dtype=torch.float32)
    out = torch.full((rows_q, D), float("nan"), device="cuda", dtype=torch.float32)
    mq, mk, mv, mo = (from_dlpack(t, assumed_align=16) for t in (q, kk, v, out))
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    C.phase("compile")
    try:
        compiled = cute.compile(k, mq, mk, mv, mo, scale_log2, stream,
                                **({"options": C.ptx_options()} if args.ptx_out else {}))
    except Exception as e:  # a configuration that does not compile: skip it (125)
        metrics.update({"ok": False, "error": f"compile: {type(e).__name__}: {e}"[:800]})
        C.emit(metrics)
        return 125
    if args.ptx_out:
        C.write_ptx(compiled, args.ptx_out)
    C.phase("compiled")
    C.phase("launch")
    compiled(mq, mk, mv, mo, scale_log2, stream)
    torch.cuda.synchronize()
    C.phase("synchronized")

    qd = q.double().view(args.bh, args.q_len, D)
    kd = kk.double().view(args.bh, args.kv_len, D)
    vd = v.double().view(args.bh, args.kv_len, D)
    ref = torch.softmax(qd @ kd.transpose(1, 2) / math.sqrt(D), dim=-1) @ vd
    ref = ref.reshape(rows_q, D)
    od = out.double()
    rel_err = float((od - ref).norm() / ref.norm())
    cos = float(torch.nn.functional.cosine_similarity(od.flatten(), ref.flatten(), dim=0))
    t_ms = C.time_cuda(lambda: compiled(mq, mk, mv, mo, scale_log2, stream), args.iters)
    metrics.update({"rel_err": rel_err, "cos": cos, "time_ms": t_ms,
                    "device": torch.cuda.get_device_name(), "wall_ms": round(timer.ms(), 1),
                    "smem_bytes": getattr(k, "smem_bytes", None)})
    C.emit(metrics)
    return 0


if __name__ == "__main__":
    C.run_main(main)
