#!/usr/bin/env python3
"""Attention forward on Hopper with wgmma, a TMA producer warpgroup and register reallocation (CuTe DSL).

out = softmax(Q K^T / sqrt(D)) V for Q, K, V of shape (BH, S, D), fp16 or bf16, fp32 accumulation.

CTA = 1 producer warpgroup + C consumer warpgroups (C = 1 or 2: 8 or 12 warps).  Consumer warpgroup
g owns 64 query rows, so a CTA covers 64*C rows of one (batch, head).
  producer  (warpgroup 0) lowers its register budget (setmaxnreg.dec); its first warp loads the
            CTA's Q rows once (one TMA copy per consumer warpgroup, one mbarrier) and then streams
            K and V tiles of BLOCK_N keys through a ``PipelineTmaAsync`` of ``--kv-stages`` slots
            (K and V of a tile share a slot and its barrier).
  consumers (warpgroups 1..C) raise their budget (setmaxnreg.inc) and, per KV tile:
            S = Q K^T with wgmma, both operands from shared memory (swizzled, K-major);
            online softmax on the S accumulator in registers (running row max, correction
            exp2((m_old - m_new) * scale_log2) of the row sum and of O, P = exp2(S*scale_log2 - m));
            O += P V with wgmma, P from registers (converted to the input type in place of the
            accumulator layout), V from shared memory (MN-major).
            With two consumer warpgroups a pair of named barriers orders their S = Q K^T issue
            (warpgroup 0 first, then 1, alternating), as FlashAttention-3 does.
  epilogue  every consumer warpgroup normalises its O rows, writes them to shared memory over its
            own (no longer read) Q slot, a named barrier joins the consumer warpgroups, and all
            consumer threads store the CTA's O tile to global memory (coalesced).

Factors (the defaults are the correct kernel):
  --consumer-wgs {1,2}   consumer warpgroups (CTA of 8 or 12 warps: the 6-vs-10-warp analogue)
  --head-dim, --block-n  tile shapes: D in {64, 128}, keys per KV tile in {64, 128}
  --kv-stages N          depth of the K/V pipeline (too deep for D=128/BLOCK_N=128: launch fails)
  --dtype {fp16,bf16}
  --producer-regs N      setmaxnreg.dec target of the producer warpgroup (default 24 or 56)
  --consumer-regs N      setmaxnreg.inc target of the consumer warpgroups (default 240 or 256);
                         more than the registers the producer gave back: hang at the increase
  --qk-wait N            wgmma.wait_group depth before the softmax reads S (1: ptxas serializes)
  --pv-wait N            wait depth before the K/V slot is released (1: a race, unseen on H100)
  --pv-fence {1,0}       wgmma.fence before O += P V on softmax-written registers (0: ptxas adds it)
  --order {1,0}          named barriers ordering the two consumer warpgroups' Q K^T (1) or none
  --order-bar-id N       first named-barrier id of that ordering pair (2: ids 2, 3; the epilogue
                         barrier is id 1, so 1 makes the two share an id: hang)
  --order-bar-threads N  thread count of the ordering barriers (0: 256 = both consumer warpgroups;
                         a count that is not a multiple of 32, e.g. 8 warps, is rejected by ptxas)
  --order-arrive {wg,warp}  who signals "your turn": the whole warpgroup (wg: 128 arrivals, with the
                         waiting warpgroup's 128 the count of 256 threads is met) or one warp of it
                         (warp: a signal counted in warps; 160 of 256 arrive: hang)
  --corr-sign {old-new,new-old}  exponent of the correction: exp2(m_old - m_new) is right;
                         reversed is wrong from the second KV tile on
  --q-slot {wg,zero}     shared-memory Q slot a consumer warpgroup reads: its own (wg) or slot 0
                         (zero: a latent single-warpgroup assumption, wrong with two)
  --bh, --q-len, --kv-len, --seed   problem size and inputs
  --sdpa                 also time torch.nn.functional.scaled_dot_product_attention on the same
                         shapes and dtype (metric sdpa_ms)
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

WG_ROWS = 64          # query rows per consumer warpgroup (one m64 wgmma)
EPI_BAR_ID = 1        # named barrier joining the consumer warpgroups before the O store


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bh", type=int, default=4, help="batch * heads")
    p.add_argument("--q-len", type=int, default=512)
    p.add_argument("--kv-len", type=int, default=512)
    p.add_argument("--head-dim", type=int, default=64, choices=[64, 128])
    p.add_argument("--block-n", type=int, default=128, choices=[64, 128])
    p.add_argument("--kv-stages", type=int, default=2)
    p.add_argument("--consumer-wgs", type=int, default=2, choices=[1, 2])
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    p.add_argument("--producer-regs", type=int, default=0, help="0: 24 (12 warps) or 56 (8 warps)")
    p.add_argument("--consumer-regs", type=int, default=0, help="0: 240 (12 warps) or 256 (8 warps)")
    p.add_argument("--qk-wait", type=int, default=0)
    p.add_argument("--pv-wait", type=int, default=0)
    p.add_argument("--pv-fence", type=int, default=1, choices=[0, 1])
    p.add_argument("--order", type=int, default=1, choices=[0, 1])
    p.add_argument("--order-bar-id", type=int, default=2)
    p.add_argument("--order-bar-threads", type=int, default=0)
    p.add_argument("--order-arrive", default="wg", choices=["wg", "warp"])
    p.add_argument("--corr-sign", default="old-new", choices=["old-new", "new-old"])
    p.add_argument("--q-slot", default="wg", choices=["wg", "zero"])
    p.add_argument("--q-scale", type=float, default=1.0, help="inputs: Q ~ q_scale * N(0,1)")
    p.add_argument("--sdpa", action="store_true")
    C.add_common_args(p)
    a = p.parse_args(argv)
    if a.q_len % (WG_ROWS * a.consumer_wgs) or a.kv_len % a.block_n:
        p.error("q-len must be a multiple of 64*consumer-wgs and kv-len of block-n")
    if not a.producer_regs:
        a.producer_regs = 24 if a.consumer_wgs == 2 else 56
    if not a.consumer_regs:
        a.consumer_regs = 240 if a.consumer_wgs == 2 else 256
    return a


def build(args):
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import cutlass.memory as cmem
    import cutlass.pipeline as pipeline
    import cutlass.utils.hopper_helpers as sm90
    from cutlass.cute.nvgpu import cpasync, warpgroup

    dtype = cutlass.Float16 if args.dtype == "fp16" else cutlass.BFloat16
    K_MAJOR = cute.nvgpu.OperandMajorMode.K
    MN_MAJOR = cute.nvgpu.OperandMajorMode.MN

    def smem_layout(kind, dt, shape, stages, order):
        """Swizzled shared-memory layout of `stages` tiles of `shape` for a wgmma operand."""
        atom = warpgroup.make_smem_layout_atom(kind, dt)
        return cute.tile_to_shape(atom, (*shape, stages), order=order)

    class FmhaWgmma:
        def __init__(self, a):
            self.wgs = a.consumer_wgs
            self.cta_m = WG_ROWS * self.wgs
            self.threads = 128 * (self.wgs + 1)
            self.d = a.head_dim
            self.bn = a.block_n
            self.stages = a.kv_stages
            self.n_kv = a.kv_len // self.bn
            self.q_tiles = a.q_len // self.cta_m        # CTA tiles per head
            self.producer_regs = a.producer_regs
            self.consumer_regs = a.consumer_regs
            self.qk_wait = a.qk_wait
            self.pv_wait = a.pv_wait
            self.pv_fence = bool(a.pv_fence)
            self.order = bool(a.order) and self.wgs == 2
            self.order_id = a.order_bar_id
            self.order_threads = a.order_bar_threads or 256
            self.order_by_warp = a.order_arrive == "warp"
            self.corr_reversed = a.corr_sign == "new-old"
            self.q_slot_zero = a.q_slot == "zero"

        # The ordering barriers carry literal ids (one branch per warpgroup) so that the PTX
        # names them: `bar.sync 2, 256` rather than `bar.sync %r18, 256`.
        @cute.jit
        def order_wait(self, cw: cutlass.Int32):
            """Block consumer warpgroup `cw` until the other one has issued its S = Q K^T."""
            if cw == 0:
                cute.arch.barrier(barrier_id=self.order_id, number_of_threads=self.order_threads)
            else:
                cute.arch.barrier(barrier_id=self.order_id + 1,
                                  number_of_threads=self.order_threads)

        @cute.jit
        def order_signal(self, target: cutlass.Int32):
            """Let consumer warpgroup `target` issue its S = Q K^T (non-blocking arrive)."""
            if cutlass.const_expr(self.order_by_warp):
                if cute.arch.make_warp_uniform(cute.arch.warp_idx()) % 4 == 0:
                    self.order_arrive(target)
            else:
                self.order_arrive(target)

        @cute.jit
        def order_arrive(self, target: cutlass.Int32):
            if target == 0:
                cute.arch.barrier_arrive(barrier_id=self.order_id,
                                         number_of_threads=self.order_threads)
            else:
                cute.arch.barrier_arrive(barrier_id=self.order_id + 1,
                                         number_of_threads=self.order_threads)

        @cute.jit
        def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor,
                     scale_log2: cutlass.Float32, stream: cuda.CUstream):
            d, bn = self.d, self.bn
            # V as the B operand of O = P V: (N = D, K = keys), D contiguous (MN-major)
            mVt = cute.make_tensor(mV.iterator,
                                   cute.make_layout((d, cute.size(mV, mode=[0])), stride=(1, d)))
            qk_mma = sm90.make_trivial_tiled_mma(dtype, dtype, K_MAJOR, K_MAJOR, cutlass.Float32,
                                                 (1, 1, 1), (WG_ROWS, bn))
            pv_mma = sm90.make_trivial_tiled_mma(dtype, dtype, K_MAJOR, MN_MAJOR, cutlass.Float32,
                                                 (1, 1, 1), (WG_ROWS, d), warpgroup.OperandSource.RMEM)
            Kind = warpgroup.SmemLayoutAtomKind
            q_staged = smem_layout(Kind.K_SW128, dtype, (WG_ROWS, d), self.wgs, (0, 1, 2))
            k_staged = smem_layout(Kind.K_SW128, dtype, (bn, d), self.stages, (0, 1, 2))
            v_staged = smem_layout(Kind.MN_SW128, dtype, (d, bn), self.stages, (1, 0, 2))
            g2s = cpasync.CopyBulkTensorTileG2SOp()
            tma_q, tq = cpasync.make_tiled_tma_atom(
                g2s, mQ, cute.slice_(q_staged, (None, None, 0)), (WG_ROWS, d))
            tma_k, tk = cpasync.make_tiled_tma_atom(
                g2s, mK, cute.slice_(k_staged, (None, None, 0)), (bn, d))
            tma_v, tv = cpasync.make_tiled_tma_atom(
                g2s, mVt, cute.slice_(v_staged, (None, None, 0)), (d, bn))

            @cute.struct
            class Storage:
                qbar: cute.struct.MemRange[cutlass.Int64, 2]
                kvbar: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
                sq: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(q_staged)], 1024]
                sk: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(k_staged)], 1024]
                sv: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(v_staged)], 1024]

            self.storage = Storage
            self.smem_bytes = Storage.size_in_bytes()
            grid = (self.q_tiles, cute.size(mQ, mode=[0]) // (self.q_tiles * self.cta_m), 1)
            self.kernel(qk_mma, pv_mma, tma_q, tq, tma_k, tk, tma_v, tv, mO,
                        q_staged, k_staged, v_staged, scale_log2).launch(
                grid=grid, block=[self.threads, 1, 1], smem=self.smem_bytes, stream=stream,
                min_blocks_per_mp=1)

        @cute.kernel
        def kernel(self, qk_mma: cute.TiledMma, pv_mma: cute.TiledMma,
                   tma_q: cute.CopyAtom, mQ: cute.Tensor, tma_k: cute.CopyAtom, mK: cute.Tensor,
                   tma_v: cute.CopyAtom, mVt: cute.Tensor, mO: cute.Tensor,
                   q_staged: cute.ComposedLayout, k_staged: cute.ComposedLayout,
                   v_staged: cute.ComposedLayout, scale_log2: cutlass.Float32):
            d, bn = self.d, self.bn
            tidx, _, _ = cute.arch.thread_idx()
            m_blk, bh, _ = cute.arch.block_idx()
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            wg = cute.arch.make_warp_uniform(tidx // 128)

            st = cmem.SmemAllocator().allocate(self.storage)
            sQ = st.sq.get_tensor(q_staged.outer, swizzle=q_staged.inner)
            sK = st.sk.get_tensor(k_staged.outer, swizzle=k_staged.inner)
            sV = st.sv.get_tensor(v_staged.outer, swizzle=v_staged.inner)

            producer = pipeline.CooperativeGroup(pipeline.Agent.Thread)
            consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, 4 * self.wgs)
            q_pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=st.qbar.data_ptr(), num_stages=1, producer_group=producer,
                consumer_group=consumers, tx_count=self.cta_m * d * dtype.width // 8,
                defer_sync=True)
            kv_pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=st.kvbar.data_ptr(), num_stages=self.stages,
                producer_group=producer, consumer_group=consumers,
                tx_count=2 * bn * d * dtype.width // 8, defer_sync=True)
            pipeline.pipeline_init_arrive()
            pipeline.pipeline_init_wait()

            cta_tile = bh * self.q_tiles + m_blk          # in units of cta_m query rows

            if wg == 0:
                # ---------------- producer warpgroup ----------------
                cute.arch.setmaxregister_decrease(self.producer_regs)
                if warp == 0:
                    cpasync.prefetch_descriptor(tma_q)
                    cpasync.prefetch_descriptor(tma_k)
                    cpasync.prefetch_descriptor(tma_v)
                    gQ = cute.local_tile(mQ, (WG_ROWS, d), (None, 0))
                    gK = cute.local_tile(mK, (bn, d), (None, 0))
                    gV = cute.local_tile(mVt, (d, bn), (0, None))
                    tQs, tQg = cpasync.tma_partition(tma_q, 0, cute.make_layout(1),
                                                     cute.group_modes(sQ, 0, 2),
                                                     cute.group_modes(gQ, 0, 2))
                    tKs, tKg = cpasync.tma_partition(tma_k, 0, cute.make_layout(1),
                                                     cute.group_modes(sK, 0, 2),
                                                     cute.group_modes(gK, 0, 2))
                    tVs, tVg = cpasync.tma_partition(tma_v, 0, cute.make_layout(1),
                                                     cute.group_modes(sV, 0, 2),
                                                     cute.group_modes(gV, 0, 2))
                    qs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
                    q_pipe.producer_acquire(qs)
                    for g in cutlass.range_constexpr(self.wgs):
                        cute.copy(tma_q, tQg[(None, cta_tile * self.wgs + g)], tQs[(None, g)],
                                  tma_bar_ptr=q_pipe.producer_get_barrier(qs))
                    ps = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                      self.stages)
                    for j in cutlass.range(self.n_kv, unroll=1):
                        kv_pipe.producer_acquire(ps)
                        g = bh * self.n_kv + j
                        bar = kv_pipe.producer_get_barrier(ps)
                        cute.copy(tma_k, tKg[(None, g)], tKs[(None, ps.index)], tma_bar_ptr=bar)
                        cute.copy(tma_v, tVg[(None, g)], tVs[(None, ps.index)], tma_bar_ptr=bar)
                        kv_pipe.producer_commit(ps)
                        ps.advance()
                    kv_pipe.producer_tail(ps)
            else:
                # ---------------- consumer warpgroups ----------------
                cute.arch.setmaxregister_increase(self.consumer_regs)
                cw = wg - 1
                ltid = tidx - 128 * wg
                q_slot = cw
                if cutlass.const_expr(self.q_slot_zero):
                    q_slot = 0
                qk_thr = qk_mma.get_slice(ltid)
                pv_thr = pv_mma.get_slice(ltid)
                tSrQ = qk_thr.make_fragment_A(qk_thr.partition_A(sQ))
                tSrK = qk_thr.make_fragment_B(qk_thr.partition_B(sK))
                tOrV = pv_thr.make_fragment_B(pv_thr.partition_B(sV))
                acc_s = qk_thr.make_fragment_C(qk_thr.partition_shape_C((WG_ROWS, bn)))
                acc_o = pv_thr.make_fragment_C(pv_thr.partition_shape_C((WG_ROWS, d)))
                tOrP = pv_thr.make_fragment_A(pv_thr.partition_shape_A((WG_ROWS, bn)))
                p_as_s = cute.make_tensor(tOrP.iterator, acc_s.layout)
                acc_o.fill(0.0)
                row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
                row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
                # Accumulator fragment of an m64nN wgmma, value v of a thread: column pair
                # element v % 2, row half (v // 2) % 2 (rows r and r + 8), column block v // 4.
                # The four lanes 4q..4q+3 of a warp hold the same two rows.
                ns = bn // 8
                no = d // 8

                if cutlass.const_expr(self.order):
                    if cw == 1:
                        self.order_signal(0)  # consumer warpgroup 0 goes first

                qs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
                q_pipe.consumer_wait(qs)
                cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
                for it in cutlass.range_constexpr(2):
                    first = it == 0
                    lo = 0 if first else 1
                    hi = 1 if first else self.n_kv
                    for j in cutlass.range(lo, hi, unroll=1):
                        kv_pipe.consumer_wait(cs)
                        stage = cs.index
                        # S = Q K^T
                        if cutlass.const_expr(self.order):
                            self.order_wait(cw)
                        warpgroup.fence()
                        for kb in cutlass.range_constexpr(d // 16):
                            qk_mma.set(warpgroup.Field.ACCUMULATE, kb != 0)
                            cute.gemm(qk_mma, acc_s, tSrQ[(None, None, kb, q_slot)],
                                      tSrK[(None, None, kb, stage)], acc_s)
                        warpgroup.commit_group()
                        if cutlass.const_expr(self.order):
                            self.order_signal(1 - cw)
                        warpgroup.wait_group(self.qk_wait)
                        # online softmax, two rows per thread
                        for i in cutlass.range_constexpr(2):
                            m_tile = acc_s[2 * i]
                            for jb in cutlass.range_constexpr(ns):
                                for c in cutlass.range_constexpr(2):
                                    m_tile = cute.arch.fmax(m_tile, acc_s[c + 2 * i + 4 * jb])
                            m_tile = cute.arch.warp_reduction_max(m_tile, threads_in_group=4)
                            if cutlass.const_expr(first):
                                m_new = m_tile
                            else:
                                m_old = row_max[i]
                                m_new = cute.arch.fmax(m_old, m_tile)
                                if cutlass.const_expr(self.corr_reversed):
                                    corr = cute.arch.exp2((m_new - m_old) * scale_log2)
                                else:
                                    corr = cute.arch.exp2((m_old - m_new) * scale_log2)
                                row_sum[i] = row_sum[i] * corr
                                for jb in cutlass.range_constexpr(no):
                                    for c in cutlass.range_constexpr(2):
                                        acc_o[c + 2 * i + 4 * jb] = acc_o[c + 2 * i + 4 * jb] * corr
                            row_max[i] = m_new
                            m_scaled = m_new * scale_log2
                            s = cutlass.Float32(0.0)
                            for jb in cutlass.range_constexpr(ns):
                                for c in cutlass.range_constexpr(2):
                                    v = c + 2 * i + 4 * jb
                                    p = cute.arch.exp2(acc_s[v] * scale_log2 - m_scaled)
                                    acc_s[v] = p
                                    s = s + p
                            if cutlass.const_expr(first):
                                row_sum[i] = s
                            else:
                                row_sum[i] = row_sum[i] + s
                        # P in the input type, in the A-operand register layout
                        p_as_s.store(acc_s.load().to(dtype))
                        # O += P V
                        if cutlass.const_expr(self.pv_fence):
                            warpgroup.fence()
                        pv_mma.set(warpgroup.Field.ACCUMULATE, True)
                        for kb in cutlass.range_constexpr(bn // 16):
                            cute.gemm(pv_mma, acc_o, tOrP[(None, None, kb)],
                                      tOrV[(None, None, kb, stage)], acc_o)
                        warpgroup.commit_group()
                        warpgroup.wait_group(self.pv_wait)
                        kv_pipe.consumer_release(cs)
                        cs.advance()
                warpgroup.wait_group(0)

                # ---------------- epilogue ----------------
                for i in cutlass.range_constexpr(2):
                    total = cute.arch.warp_reduction_sum(row_sum[i], threads_in_group=4)
                    inv = cutlass.Float32(1.0) / total
                    for jb in cutlass.range_constexpr(no):
                        for c in cutlass.range_constexpr(2):
                            acc_o[c + 2 * i + 4 * jb] = acc_o[c + 2 * i + 4 * jb] * inv
                # this warpgroup's 64 x D rows of O over its own Q slot (its wgmmas are done)
                sO = st.sq.get_tensor(cute.make_layout((self.cta_m, d), stride=(d, 1)))
                sO_wg = cute.local_tile(sO, (WG_ROWS, d), (cw, 0))
                tOsO = pv_thr.partition_C(sO_wg)
                tOsO.store(acc_o.load().to(dtype))
                cute.arch.barrier(barrier_id=EPI_BAR_ID, number_of_threads=128 * self.wgs)
                ctid = tidx - 128
                row0 = cta_tile * self.cta_m
                for e0 in cutlass.range_constexpr(self.cta_m * d // (128 * self.wgs)):
                    e = ctid + e0 * 128 * self.wgs
                    r = e // d
                    c = e % d
                    mO[(row0 + r, c)] = sO[(r, c)]

    return FmhaWgmma(args)


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
    metrics["kernel"] = "fmha_wgmma"
    k = build(args)
    D = args.head_dim
    scale_log2 = cutlass.Float32(math.log2(math.e) / math.sqrt(D))
    rows_q, rows_kv = args.bh * args.q_len, args.bh * args.kv_len
    cdt = cutlass.Float16 if args.dtype == "fp16" else cutlass.BFloat16

    if compile_only:
        def fake(rows):
            return make_fake_compact_tensor(cdt, (rows, D), stride_order=(1, 0), assumed_align=16)
        C.phase("compile")
        compiled = cute.compile(k, fake(rows_q), fake(rows_kv), fake(rows_kv), fake(rows_q),
                                scale_log2, make_fake_stream(), options=C.ptx_options())
        C.phase("compiled")
        metrics.update({"compile_only": True, "ptx_chars": C.write_ptx(compiled, args.ptx_out),
                        "compile_ms": round(timer.ms(), 1),
                        "smem_bytes": getattr(k, "smem_bytes", None)})
        C.emit(metrics)
        return 0

    if not torch.cuda.is_available():
        return C.fail_no_gpu(metrics)
    import cuda.bindings.driver as cuda

    tdt = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    torch.manual_seed(args.seed)
    q = (args.q_scale * torch.randn(rows_q, D, device="cuda")).to(tdt)
    kk = torch.randn(rows_kv, D, device="cuda").to(tdt)
    v = torch.randn(rows_kv, D, device="cuda").to(tdt)
    out = torch.full((rows_q, D), float("nan"), device="cuda", dtype=tdt)
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
    C.phase("compiled")
    if args.ptx_out:
        C.write_ptx(compiled, args.ptx_out)
    C.phase("launch")
    compiled(mq, mk, mv, mo, scale_log2, stream)
    torch.cuda.synchronize()
    C.phase("synchronized")

    shape = (args.bh, args.q_len, D)
    qf = q.float().view(shape)
    kf = kk.float().view(args.bh, args.kv_len, D)
    vf = v.float().view(args.bh, args.kv_len, D)
    ref = torch.softmax((qf @ kf.transpose(1, 2)) / math.sqrt(D), dim=-1) @ vf
    ref = ref.reshape(rows_q, D).double()
    od = out.double()
    rel_err = float((od - ref).norm() / ref.norm())
    cos = float(torch.nn.functional.cosine_similarity(od.flatten(), ref.flatten(), dim=0))
    t_ms = C.time_cuda(lambda: compiled(mq, mk, mv, mo, scale_log2, stream), args.iters)
    metrics.update({"rel_err": rel_err, "cos": cos, "time_ms": t_ms,
                    "device": torch.cuda.get_device_name(), "wall_ms": round(timer.ms(), 1),
                    "smem_bytes": getattr(k, "smem_bytes", None)})
    if args.sdpa:
        q4 = q.view(1, args.bh, args.q_len, D)
        k4 = kk.view(1, args.bh, args.kv_len, D)
        v4 = v.view(1, args.bh, args.kv_len, D)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        metrics["sdpa_ms"] = C.time_cuda(lambda: sdpa(q4, k4, v4), args.iters)
        flops = 4.0 * args.bh * args.q_len * args.kv_len * D
        metrics["tflops"] = flops / (t_ms * 1e-3) / 1e12
        metrics["sdpa_tflops"] = flops / (metrics["sdpa_ms"] * 1e-3) / 1e12
    C.emit(metrics)
    return 0


if __name__ == "__main__":
    C.run_main(main)
