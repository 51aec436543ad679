"""Fixtures for the GPU-kernel tests: a compile-only cache shared by the whole session (and by every
xdist worker of it: the batch is compiled once, by whichever worker asks first).

Compile-only tests run everywhere (CUTE_DSL_ARCH=sm_90a, no GPU needed).  Tests marked
``@pytest.mark.gpu`` need an NVIDIA GPU and skip cleanly without one.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels" / "cutedsl"
VARIANTS = ROOT / "variants" / "gpu"
COMPILE_MANY = Path(__file__).resolve().parent / "_compile_many.py"
KERNEL_SCRIPTS = ["kernels/cutedsl/ws_pipeline.py", "kernels/cutedsl/attention.py",
                  "kernels/cutedsl/fmha_wgmma.py"]
# single-factor changes of fmha_wgmma.py that test_ptx.py diffs against the default
FMHA_PTX_CONFIGS = [("kernels/cutedsl/fmha_wgmma.py", argv) for argv in (
    ["--consumer-regs", "256"], ["--consumer-wgs", "1"], ["--qk-wait", "1"], ["--pv-fence", "0"],
    ["--order-bar-id", "1"], ["--head-dim", "128"], ["--order", "0"],
    ["--order-bar-threads", "8"])]
# the other configurations test_ptx.py compiles: in the batch, each costs its compile, not a
# process of its own with the DSL's imports (~5 s more each)
PTX_CONFIGS = [("kernels/cutedsl/ws_pipeline.py", argv) for argv in (
    ["--arrive-unit", "thread"], ["--tx-delta", "16"], ["--nbar-threads", "160"], ["--lockstep", "1"],
    ["--stages", "1"], ["--stages", "4"])] + [("kernels/cutedsl/attention.py", ["--consumer-wgs", "2", "--q-len", "256"])]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped where none is present)")


def have_cutlass() -> bool:
    try:
        import cutlass  # noqa: F401
        return True
    except Exception:
        return False


def have_gpu() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def variant_jobs() -> list[tuple[str, str, str, list[str]]]:
    """(spec name, 'good'/'bad', script, argv) for every GPU variant endpoint."""
    from bisectk.spec import load_spec

    jobs = []
    for path in sorted(VARIANTS.glob("*.toml")):
        spec = load_spec(path)
        for side in ("good", "bad"):
            argv = spec.argv(spec.endpoint(side))
            jobs.append((spec.name, side, argv[1], argv[2:]))
    return jobs


def _key(script: str, argv) -> str:
    return json.dumps([str(Path(script).resolve().relative_to(ROOT)) if Path(script).is_absolute()
                       else script, list(argv)])


class CompileCache:
    """Compile each distinct (script, argv) once, in two warm subprocesses (imports paid once)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.results: dict[str, dict] = {}

    def load(self) -> None:
        """What an earlier worker of this session compiled into the same directory."""
        saved = self.tmp / "results.json"
        if saved.exists():
            self.results.update(json.loads(saved.read_text()))

    def save(self) -> None:
        (self.tmp / "results.json").write_text(json.dumps(self.results))

    def ptx_path(self, key: str) -> Path:
        import hashlib
        return self.tmp / (hashlib.sha1(key.encode()).hexdigest()[:16] + ".ptx")

    def ensure(self, configs) -> None:
        todo = []
        for script, argv in configs:
            k = _key(script, argv)
            if k not in self.results and k not in [t[0] for t in todo]:
                todo.append((k, script, list(argv)))
        if not todo:
            return
        shards = [todo[i::2] for i in range(2)]

        def run(shard):
            if not shard:
                return []
            jobs = [{"script": str(ROOT / s), "argv": a, "ptx_out": str(self.ptx_path(k))}
                    for k, s, a in shard]
            env = dict(os.environ, CUTE_DSL_ARCH=os.environ.get("CUTE_DSL_ARCH", "sm_90a"))
            p = subprocess.run([sys.executable, str(COMPILE_MANY)], input=json.dumps(jobs),
                               capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
            recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
            if len(recs) != len(shard):
                raise RuntimeError(f"compile batch died (exit {p.returncode}): {p.stderr[-2000:]}")
            return [(k, r) for (k, _, _), r in zip(shard, recs)]

        with ThreadPoolExecutor(2) as ex:
            for pairs in ex.map(run, shards):
                for k, r in pairs:
                    self.results[k] = r

    def get(self, script: str, argv) -> dict:
        k = _key(script, argv)
        self.ensure([(script, argv)])
        return self.results[k]

    def ptx(self, script: str, argv) -> str:
        rec = self.get(script, argv)
        assert rec["exit_code"] == 0, rec
        return self.ptx_path(_key(script, argv)).read_text()


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory):
    if not have_cutlass():
        pytest.skip("nvidia-cutlass-dsl is not installed")
    # every variant endpoint and the kernels' defaults, in one batch
    configs = [(script, argv) for _, _, script, argv in variant_jobs()]
    configs += [(script, []) for script in KERNEL_SCRIPTS]
    configs += [(script, argv) for script, argv in FMHA_PTX_CONFIGS + PTX_CONFIGS]
    configs += [(f"variants/gpu/fmha-diff/{side}/fmha_wgmma.py", []) for side in ("good", "bad")]
    # under xdist each worker has a session of its own: the batch (~130 s of two compilers on two
    # cores) is made once in the directory the workers share, under a lock, and read by the others
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    cache = CompileCache(shared / "ptx-cache")
    with open(shared / "ptx-cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cache.load()
        cache.ensure(configs)
        cache.save()
    return cache
