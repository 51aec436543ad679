"""bisectk.ptx on real compiled PTX (compile-only, no GPU) and on hand-written PTX snippets."""

from __future__ import annotations

import pytest

from bisectk import ptx
from tests.gpu.conftest import ROOT, have_cutlass

WS = "kernels/cutedsl/ws_pipeline.py"
ATTN = "kernels/cutedsl/attention.py"
needs_dsl = pytest.mark.skipif(not have_cutlass(), reason="nvidia-cutlass-dsl is not installed")


@needs_dsl
def test_ws_pipeline_signature(compile_cache):
    s = ptx.signature(compile_cache.ptx(WS, []))
    f = s.flat()
    # 4 stages: 4 full barriers (1 producer arrival) + 4 empty barriers (4 consumer warps)
    assert f["mbarrier.init"] == 8
    assert f["mbarrier.init[count=1]"] == 4 and f["mbarrier.init[count=4]"] == 4
    assert f["expect_tx[bytes=16384]"] == 1          # one 128 x 32 fp32 tile per stage
    assert f["cp.async.bulk.tensor.g2s"] == 1 and f["cp.async.bulk.tensor.s2g"] == 0
    assert f["mbarrier.try_wait"] >= 2                # producer acquire, consumer wait (+ tail)
    assert f["mbarrier.arrive"] >= 2                  # expect_tx arrive + consumer release
    assert f["bar.sync[id=1,threads=128]"] == 1       # the named barrier before the epilogue
    assert f["threads"] == 160 and f["shared.dynamic"] is True
    assert f["wgmma.mma_async"] == 0 and f["setmaxnreg"] == 0


@needs_dsl
@pytest.mark.parametrize("argv,expect", [
    (["--arrive-unit", "thread"], {"mbarrier.init[count=4]": (4, 0), "mbarrier.init[count=128]": (0, 4)}),
    (["--tx-delta", "16"], {"expect_tx[bytes=16384]": (1, 0), "expect_tx[bytes=16400]": (0, 1)}),
    (["--nbar-threads", "160"], {"bar.sync[id=1,threads=128]": (1, 0), "bar.sync[id=1,threads=160]": (0, 1)}),
    (["--lockstep", "1"], {"bar.sync[id=2,threads=160]": (0, 1), "bar.arrive[id=2,threads=160]": (0, 1)}),
    (["--stages", "1"], {"mbarrier.init": (8, 2)}),
])
def test_ws_pipeline_diff_shows_the_planted_change(compile_cache, argv, expect):
    good = ptx.signature(compile_cache.ptx(WS, []))
    bad = ptx.signature(compile_cache.ptx(WS, argv))
    rows = {k: (a, b) for k, a, b in ptx.diff(good, bad)}
    for key, pair in expect.items():
        assert rows.get(key) == pair, (key, rows)
    table = ptx.format_diff(ptx.diff(good, bad))
    assert table.startswith("| PTX signature | good | bad |")


@needs_dsl
def test_identical_configs_have_no_diff(compile_cache):
    a = ptx.signature(compile_cache.ptx(WS, []))
    b = ptx.signature(compile_cache.ptx(WS, ["--stages", "4"]))
    assert ptx.diff(a, b) == []
    assert "identical" in ptx.format_diff([])


@needs_dsl
def test_attention_signature(compile_cache):
    f = ptx.signature(compile_cache.ptx(ATTN, [])).flat()
    assert f["cp.async.bulk.tensor.g2s"] == 3          # Q, K, V
    assert f["mbarrier.init"] == 2 + 2 * 2             # Q pipeline (1 stage) + K/V (2 stages)
    assert f["expect_tx"] == 2
    assert f["bar.sync[id=1,threads=128]"] == 1
    f2 = ptx.signature(compile_cache.ptx(ATTN, ["--consumer-wgs", "2", "--q-len", "256"])).flat()
    assert f2["bar.sync[id=1,threads=256]"] == 1 and f2["threads"] == 288


FMHA = "kernels/cutedsl/fmha_wgmma.py"


@needs_dsl
def test_fmha_wgmma_signature(compile_cache):
    f = ptx.signature(compile_cache.ptx(FMHA, [])).flat()
    assert f["threads"] == 384                           # producer + 2 consumer warpgroups
    assert f["setmaxnreg.dec[24]"] == 1 and f["setmaxnreg.inc[240]"] == 1
    # D = 64, BLOCK_N = 128: S = Q K^T is 4 x m64n128k16, O += P V is 8 x m64n64k16; the first KV
    # tile is peeled off the loop, so each appears twice
    assert f["wgmma.mma_async.m64n128k16"] == 2 * 4 and f["wgmma.mma_async.m64n64k16"] == 2 * 8
    assert f["wgmma.fence"] == 4 and f["wgmma.commit_group"] == 4
    assert f["wgmma.wait_group[0]"] == 5                 # after each of the 4 groups + the drain
    assert f["cp.async.bulk.tensor.g2s"] == 4            # Q (one per consumer warpgroup), K, V
    assert f["mbarrier.init[count=1]"] == 3 and f["mbarrier.init[count=8]"] == 3
    assert f["expect_tx[bytes=16384]"] == 1              # Q: 128 x 64 fp16
    assert f["expect_tx[bytes=32768]"] == 1              # K + V: 2 x 128 x 64 fp16
    assert f["bar.sync[id=1,threads=256]"] == 1          # epilogue, both consumer warpgroups
    assert f["bar.sync[id=2,threads=256]"] == 2 and f["bar.sync[id=3,threads=256]"] == 2
    assert f["bar.arrive[id=2,threads=256]"] == 3 and f["bar.arrive[id=3,threads=256]"] == 2


@needs_dsl
@pytest.mark.parametrize("argv,expect", [
    # register reallocation: the targets are in the PTX
    (["--consumer-regs", "256"], {"setmaxnreg.inc[240]": (1, 0), "setmaxnreg.inc[256]": (0, 1)}),
    # 8 warps instead of 12: other targets, no ordering barriers, a 128-thread epilogue barrier
    (["--consumer-wgs", "1"], {"threads": (384, 256), "setmaxnreg.dec[24]": (1, 0),
                               "setmaxnreg.dec[56]": (0, 1), "setmaxnreg.inc[256]": (0, 1),
                               "bar.sync[id=2,threads=256]": (2, 0),
                               "bar.sync[id=1,threads=128]": (0, 1)}),
    (["--qk-wait", "1"], {"wgmma.wait_group[0]": (5, 3), "wgmma.wait_group[1]": (0, 2)}),
    (["--pv-fence", "0"], {"wgmma.fence": (4, 2)}),
    # ordering barriers moved onto the epilogue barrier's id
    (["--order-bar-id", "1"], {"bar.sync[id=1,threads=256]": (1, 3),
                               "bar.sync[id=3,threads=256]": (2, 0)}),
    # D = 128: 8 k-blocks for S = Q K^T, O += P V becomes m64n128k16; a 128-wide fp16 row is two
    # 128-byte swizzle atoms, so every TMA tile is two copies
    (["--head-dim", "128"], {"wgmma.mma_async.m64n128k16": (8, 32),
                             "wgmma.mma_async.m64n64k16": (16, 0),
                             "cp.async.bulk.tensor.g2s": (4, 8),
                             "expect_tx[bytes=65536]": (0, 1)}),
    (["--order", "0"], {"bar.sync[id=2,threads=256]": (2, 0), "bar.arrive": (5, 0)}),
])
def test_fmha_wgmma_diff_shows_the_planted_change(compile_cache, argv, expect):
    good = ptx.signature(compile_cache.ptx(FMHA, []))
    bad = ptx.signature(compile_cache.ptx(FMHA, argv))
    rows = {k: (a, b) for k, a, b in ptx.diff(good, bad)}
    for key, pair in expect.items():
        assert rows.get(key) == pair, (key, rows)


@needs_dsl
def test_ptx_of_script_runs_compile_only(tmp_path):
    text, result = ptx.ptx_of_script(ROOT / WS, ["--stages", "2"], cwd=ROOT)
    assert ".target sm_90a" in text
    assert result["compile_only"] is True and result["stages"] == 2
    flat = ptx.signature_of_script(ROOT / WS, ["--stages", "2"], cwd=ROOT)
    assert flat["mbarrier.init"] == 4 and flat["smem_bytes"] == result["smem_bytes"]


@needs_dsl
def test_ptx_of_script_raises_on_compile_error():
    with pytest.raises(ptx.PtxError, match="exited"):
        ptx.ptx_of_script(ROOT / WS, ["--stages", "0"], cwd=ROOT)


SNIPPET = r"""
.version 8.8
.target sm_90a
.shared .align 8 .b64 bars[6];
.shared .align 16 .b8 smem_a[16384];
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k0(
)
.reqntid 384, 1, 1
{
	// mbarrier.init in a comment must not count
	mov.b32 	%r1, 256;
	mbarrier.init.shared::cta.b64 	[bars], %r1;
	mbarrier.init.shared::cta.b64 	[bars+8], 1;
	mov.u32 	%r2, 32768;
	mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [bars+8], %r2;
	mbarrier.arrive.shared::cta.b64 %rd2, [bars];
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [bars], %r3;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem_a], [%rd5, {%r4, %r5}], [bars+8];
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd6, {%r4, %r5}], [smem_a];
	setmaxnreg.dec.sync.aligned.u32 40;
	setmaxnreg.inc.sync.aligned.u32 232;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1}, %rd7, %rd8, 1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	bar.sync 	1, 256;
	barrier.sync 	0;
	bar.arrive 	2, 160;
	barrier.cta.arrive.aligned 3, %r1;
	bar.warp.sync 	-1;
	ret;
}
"""


def test_signature_on_snippet():
    f = ptx.signature(SNIPPET).flat()
    assert f["mbarrier.init"] == 2
    assert f["mbarrier.init[count=256]"] == 1 and f["mbarrier.init[count=1]"] == 1
    assert f["expect_tx"] == 1 and f["expect_tx[bytes=32768]"] == 1
    assert f["mbarrier.arrive"] == 2 and f["mbarrier.try_wait"] == 1
    assert f["cp.async.bulk.tensor"] == 2
    assert f["cp.async.bulk.tensor.g2s"] == 1 and f["cp.async.bulk.tensor.s2g"] == 1
    assert f["setmaxnreg"] == 2 and f["setmaxnreg.dec[40]"] == 1 and f["setmaxnreg.inc[232]"] == 1
    assert f["wgmma.mma_async"] == 1 and f["wgmma"] == 4
    assert f["wgmma.fence"] == 1 and f["wgmma.commit_group"] == 1
    assert f["wgmma.wait_group[0]"] == 1 and f["wgmma.mma_async.m64n128k16"] == 1
    assert f["bar.sync[id=1,threads=256]"] == 1 and f["bar.sync[id=0,threads=all]"] == 1
    assert f["bar.arrive[id=2,threads=160]"] == 1 and f["bar.arrive[id=3,threads=256]"] == 1
    assert f["bar.warp.sync"] == 1
    assert f["shared.static_bytes"] == 6 * 8 + 16384 and f["shared.dynamic"] is True
    assert f["threads"] == 384 and f["entries"] == 1


def test_diff_of_dicts_and_missing_keys():
    rows = ptx.diff({"a": 1, "b": 2}, {"b": 3, "c": 4})
    assert rows == [("a", 1, 0), ("b", 2, 3), ("c", 0, 4)]
    table = ptx.format_diff(rows, "x", "y")
    assert "| `b` | 2 | 3 |" in table


def test_register_reassigned_is_not_resolved():
    text = "mov.b32 %r1, 4;\nadd.s32 %r1, %r1, %r9;\nmbarrier.init.shared.b64 [%r2], %r1;\n"
    f = ptx.signature(text).flat()
    assert f["mbarrier.init[count=%r1]"] == 1


def test_barrier_ids_in_registers_and_immediates_sort_together():
    text = "bar.sync 1, 256;\nbar.sync %r18, 256;\nbar.arrive 2, 256;\n"
    f = ptx.signature(text).flat()
    assert f["bar.sync[id=1,threads=256]"] == 1 and f["bar.sync[id=%r18,threads=256]"] == 1


def test_the_ptx_diff_tool_says_in_one_line_what_is_wrong_with_a_file(tmp_path, capsys):
    """`python -m bisectk.ptx A.ptx B.ptx` ended with a traceback on a missing file, a directory
    or a binary (a cubin given for its PTX)."""
    good = tmp_path / "a.ptx"
    good.write_text("mbarrier.init.shared.b64 [bar], 128;\n")
    (tmp_path / "k.cubin").write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    for bad, says in ((tmp_path / "none.ptx", "no such file"), (tmp_path, "is a directory"),
                      (tmp_path / "k.cubin", "not a text file")):
        assert ptx.main([str(good), str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("bisectk: ") and says in err and len(err.strip().splitlines()) == 1, err
    assert ptx.main([str(good), str(good)]) == 0
