"""On-GPU checks of the planted behaviours (skipped without an NVIDIA GPU).

The full evidence (every variant, isolation subsets) is tests/gpu/evidence.py; these are the
quick ones a developer runs on a Hopper machine with `pytest -m gpu tests/gpu`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.gpu.conftest import ROOT, have_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not have_gpu(), reason="no CUDA GPU")]


def run(script, *argv, timeout=120):
    try:
        p = subprocess.run([sys.executable, script, *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("BISECTK_RESULT "):
            res = json.loads(line[len("BISECTK_RESULT "):])
    return p.returncode, res


def test_ws_pipeline_good():
    rc, res = run("kernels/cutedsl/ws_pipeline.py")
    assert rc == 0 and res["rel_err"] < 1e-5 and res["time_ms"] > 0


def test_ws_pipeline_wrong_tile_index():
    rc, res = run("kernels/cutedsl/ws_pipeline.py", "--tile-index", "stage")
    assert rc == 0 and res["rel_err"] > 0.1


def test_ws_pipeline_hang_is_killed():
    rc, res = run("kernels/cutedsl/ws_pipeline.py", "--producer-phase", "0", timeout=25)
    assert rc is None  # timed out: a deadlocked mbarrier wait


def test_ws_pipeline_launch_fails_on_smem():
    rc, res = run("kernels/cutedsl/ws_pipeline.py", "--stages", "16")
    assert rc not in (0, None, 125)


def test_attention_good_and_multitile_rescale():
    rc, res = run("kernels/cutedsl/attention.py")
    assert rc == 0 and res["rel_err"] < 1e-4 and res["cos"] > 0.9999
    rc, res = run("kernels/cutedsl/attention.py", "--o-rescale", "0", "--kv-len", "64")
    assert rc == 0 and res["rel_err"] < 1e-4
    rc, res = run("kernels/cutedsl/attention.py", "--o-rescale", "0", "--kv-len", "512")
    assert rc == 0 and res["cos"] < 0.99


FMHA = "kernels/cutedsl/fmha_wgmma.py"


def test_fmha_wgmma_good_and_multitile_correction():
    rc, res = run(FMHA)
    assert rc == 0 and res["rel_err"] < 2e-3 and res["cos"] > 0.9999
    # a reversed correction exponent is invisible with one KV tile, wrong with four
    rc, res = run(FMHA, "--corr-sign", "new-old", "--kv-len", "128")
    assert rc == 0 and res["rel_err"] < 2e-3
    rc, res = run(FMHA, "--corr-sign", "new-old", "--kv-len", "512")
    assert rc == 0 and res["cos"] < 0.99


def test_fmha_wgmma_register_overcommit_hangs():
    rc, res = run(FMHA, "--consumer-regs", "256", timeout=25)
    assert rc is None  # setmaxnreg.inc never completes: the process is killed
