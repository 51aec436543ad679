"""A warm worker honours an environment variable only when a library reads it at run time: one
read at import (PYTORCH_JIT, XLA_FLAGS, TRITON_*) was read by the worker's preload, before the
run set it. A run that changes such a variable runs cold (pool.PROCESS_LEVEL_ENV); every
variable `bisectk env --diff` offers as a factor is one of them."""

from __future__ import annotations

import sys

import pytest

from bisectk.run.pool import PROCESS_LEVEL_ENV, WARM_HONOURS_ENV, WorkerPool
from bisectk.spaces.env import ENV_NAMES, ENV_PREFIXES


@pytest.fixture
def pool():
    p = WorkerPool(gpus=None, preload=(), eager=False)
    try:
        yield p
    finally:
        p.close()


@pytest.mark.parametrize("var", sorted({p + "X" for p in ENV_PREFIXES} | set(ENV_NAMES)))
def test_every_variable_env_diff_offers_as_a_factor_runs_cold_when_a_run_changes_it(pool, var):
    assert var.startswith(PROCESS_LEVEL_ENV) and var not in WARM_HONOURS_ENV
    argv = [sys.executable, "sub.py"]
    assert pool.warm_capable(argv, {}) and pool.warm_capable(argv, {"MY_FLAG": "1"})
    assert not pool.warm_capable(argv, {var: "changed-by-the-run"})


def test_pytorch_jit_read_at_torch_import_is_not_given_to_a_worker_that_imported_torch(pool):
    """The case found: PYTORCH_JIT=0 as a factor, a worker that preloaded torch, and the bad
    endpoint passing 10/10 warm runs (cold: it fails every time)."""
    assert not pool.warm_capable([sys.executable, "sub.py"], {"PYTORCH_JIT": "0"})
