"""Compile-only tests (no GPU): every kernel and every GPU variant endpoint compiles for sm_90a,
and a configuration that does not compile is a non-zero exit (UNRESOLVED(BUILD) in a build step)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.gpu.conftest import KERNEL_SCRIPTS, ROOT, have_cutlass, have_gpu, variant_jobs

pytestmark = pytest.mark.skipif(not have_cutlass(), reason="nvidia-cutlass-dsl is not installed")

JOBS = variant_jobs()


@pytest.mark.parametrize("script", KERNEL_SCRIPTS)
def test_kernel_default_compiles(compile_cache, script):
    rec = compile_cache.get(script, [])
    assert rec["exit_code"] == 0, rec
    assert rec["result"]["compile_only"] is True
    assert rec["result"]["ptx_chars"] > 1000
    assert ".target sm_90a" in compile_cache.ptx(script, [])


@pytest.mark.parametrize("name,side,script,argv", JOBS, ids=[f"{n}-{s}" for n, s, _, _ in JOBS])
def test_variant_endpoint_compiles(compile_cache, name, side, script, argv):
    rec = compile_cache.get(script, argv)
    assert rec["exit_code"] == 0, f"{name} {side}: {rec}"
    res = rec["result"]
    assert res and res["compile_only"] is True and res["smem_bytes"] > 0


def test_every_variant_names_its_culprits():
    from bisectk.spec import load_spec
    from tests.gpu.evidence import culprits_of

    for path in sorted((ROOT / "variants" / "gpu").glob("*.toml")):
        spec = load_spec(path)
        cul = culprits_of(spec.description)
        assert cul, f"{path.name}: no 'culprit:' in the description"
        assert set(cul) <= set(spec.differences()), (path.name, cul, spec.differences())


def test_failure_kinds_covered():
    from bisectk.spec import load_spec
    from tests.gpu.evidence import culprits_of

    names = [load_spec(p).name for p in (ROOT / "variants" / "gpu").glob("*.toml")]
    for kind in ("hang", "wrong", "crash", "slow"):
        assert any(f"-{kind}-" in n for n in names), kind
    sizes = [len(culprits_of(load_spec(p).description)) for p in (ROOT / "variants" / "gpu").glob("*.toml")]
    assert 2 in sizes and 3 in sizes


def test_compile_error_is_nonzero_exit():
    """A configuration the DSL rejects at compile time exits non-zero in compile-only mode."""
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a")
    p = subprocess.run([sys.executable, "kernels/cutedsl/ws_pipeline.py", "--compile-only",
                        "--stages", "0"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0
    assert "BISECTK_RESULT" not in p.stdout
    assert "Error" in p.stderr


def test_compile_error_in_batch_is_exit_1(compile_cache):
    rec = compile_cache.get("kernels/cutedsl/ws_pipeline.py", ["--stages", "0"])
    assert rec["exit_code"] == 1 and "ValueError" in rec["error"]


@pytest.mark.skipif(have_gpu(), reason="checks the GPU-less path")
def test_run_without_gpu_is_unresolved():
    """Without a GPU the subject cannot run: exit 125 (UNRESOLVED), with a result line saying why."""
    p = subprocess.run([sys.executable, "kernels/cutedsl/ws_pipeline.py"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 125
    assert '"ok": false' in p.stdout


@pytest.mark.parametrize("side", ["good", "bad"])
def test_fmha_diff_trees_compile(compile_cache, side):
    """Both source trees of the `bisectk diff` pair (variants/gpu/fmha-diff) compile for sm_90a."""
    rec = compile_cache.get(f"variants/gpu/fmha-diff/{side}/fmha_wgmma.py", [])
    assert rec["exit_code"] == 0, rec
    assert rec["result"]["kernel"] == ("fmha_wgmma" if side == "good" else "fmha_wgmma_v2")


def test_fmha_diff_trees_match_regen():
    """good/ and bad/ are what regen.py makes from the current kernel: ten hunks."""
    import importlib.util
    import tempfile
    from pathlib import Path

    from bisectk.spaces.treediff import diff_paths

    here = ROOT / "variants" / "gpu" / "fmha-diff"
    spec = importlib.util.spec_from_file_location("fmha_diff_regen", here / "regen.py")
    regen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regen)
    with tempfile.TemporaryDirectory() as tmp:
        regen.HERE = Path(tmp)
        regen.main()
        for side in ("good", "bad"):
            for name in ("fmha_wgmma.py", "_common.py"):
                assert (Path(tmp) / side / name).read_text() == (here / side / name).read_text(), \
                    f"{side}/{name} is stale: run python variants/gpu/fmha-diff/regen.py"
    hunks = diff_paths(here / "good", here / "bad")
    assert len(hunks) == len(regen.EDITS) == 10
    assert "fmha_wgmma.py:94" in [h.id for h in hunks]


def test_barrier_count_in_warps_is_a_build_error(compile_cache):
    """A named-barrier count of 8 (warps, not threads) is refused by ptxas: a compile error (exit 1
    in compile-only mode; the subject's run path turns it into exit 125, UNRESOLVED)."""
    rec = compile_cache.get("kernels/cutedsl/fmha_wgmma.py", ["--order-bar-threads", "8"])
    assert rec["exit_code"] == 1
    assert "multiple of warp size" in rec["error"]


def test_a_compile_under_a_temporary_directory_with_a_space_keeps_its_ptx(tmp_path):
    """The PTX dump directory is made in TMPDIR and handed to cute.compile in its options string,
    which cute.compile splits as a shell does: under a TMPDIR with a space every compile failed
    ('Compiler options string is malformed'), and `bisectk ptx` with it."""
    tmp = tmp_path / "temp dir"
    tmp.mkdir()
    ptx = tmp_path / "k.ptx"
    p = subprocess.run([sys.executable, str(ROOT / "kernels" / "cutedsl" / "ws_pipeline.py"), "--compile-only",
                        "--ptx-out", str(ptx)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "TMPDIR": str(tmp), "CUTE_DSL_ARCH": "sm_90a"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert ".target sm_90a" in ptx.read_text()
    assert not list(tmp.glob("bisectk-ptx-*"))   # its dump directory there, removed at exit
