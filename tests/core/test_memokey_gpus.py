"""The memo key's GPU facts with --gpus: a run pinned to a GPU (its CUDA_VISIBLE_DEVICES, engine/
oracle.py) is an observation of that GPU, not of the machine. The key listed every GPU of the
machine and not the pin, so on a host with GPUs of two models a run made with `--gpus 1` answered
a later `--gpus 0`. The driver is stubbed (memokey.NVIDIA_PROC), as test_memokey.py's is."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisectk.ledger import Ledger
from bisectk.run import memokey
from bisectk.run.runner import Runner
from bisectk.spec import load_spec
from tests.core.test_memokey import env, project  # noqa: F401 (env: a fixture)

DRIVER = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.10  Tue Jan 1 2026"
UUID0, UUID1 = "GPU-5b1e2f0a-0000-1111-2222-333344445555", "GPU-9c7d4e11-6666-7777-8888-999900001111"


def _driver(root: Path, gpus: list[tuple[str, str, str]]) -> None:
    """A /proc/driver/nvidia of `gpus`: (bus id, model, UUID), in the driver's own layout."""
    (root / "gpus").mkdir(parents=True, exist_ok=True)
    (root / "version").write_text(f"{DRIVER}\nGCC version:  gcc version 12.3.0\n")
    for bus, model, uuid in gpus:
        (root / "gpus" / bus).mkdir(exist_ok=True)
        (root / "gpus" / bus / "information").write_text(
            f"Model: \t\t {model}\nIRQ:   \t\t 42\nGPU UUID: \t {uuid}\nVideo BIOS: \t 96.00.99.00.01\n"
            f"Bus Type: \t PCIe\nBus Location: \t {bus}\nDevice Minor: \t 0\n")


MIXED = [("0000:18:00.0", "NVIDIA H100 80GB HBM3", UUID0), ("0000:3b:00.0", "NVIDIA A100-SXM4-80GB", UUID1)]
ALIKE = [("0000:18:00.0", "NVIDIA H100 80GB HBM3", UUID0), ("0000:3b:00.0", "NVIDIA H100 80GB HBM3", UUID1)]


@pytest.fixture
def proc(tmp_path, monkeypatch):
    root = tmp_path / "proc-nvidia"
    monkeypatch.setattr(memokey, "NVIDIA_PROC", str(root))
    return root


def test_the_key_of_runs_not_pinned_is_the_machines_as_before(proc):
    _driver(proc, MIXED)
    assert memokey.gpu_facts() == (f"{DRIVER}; 0000:18:00.0=NVIDIA H100 80GB HBM3; "
                                   "0000:3b:00.0=NVIDIA A100-SXM4-80GB")


def test_a_pin_keys_the_model_of_the_gpu_it_leaves_the_run(proc):
    _driver(proc, MIXED)
    facts = memokey.gpu_facts
    a100 = f"{DRIVER}; pinned to NVIDIA A100-SXM4-80GB"
    # a UUID, or a unique prefix of one (CUDA takes either): the GPU /proc lists with it
    assert facts((UUID1,)) == facts((UUID1[:12],)) == a100
    # an index in bus order where CUDA counts so
    assert facts(("1",), "PCI_BUS_ID") == a100 and facts(("0",), "PCI_BUS_ID") != a100
    # CUDA's default order (fastest first) on GPUs of two models: which GPU an index is cannot be
    # read here, so the index is keyed beside the whole machine, apart from every other pin
    keys = {facts(("0",)), facts(("1",)), facts((UUID0,)), facts((UUID1,)), facts(("0", "1")), facts(("MIG-abc",)),
            facts(("7",), "PCI_BUS_ID"), facts()}
    assert len(keys) == 8
    assert "0000:3b:00.0=NVIDIA A100-SXM4-80GB" in facts(("1",))
    # a run under --gpus 0,1 sees one of them: the set, whatever the order
    assert facts(("0", "1"), "PCI_BUS_ID") == facts(("1", "0"), "PCI_BUS_ID") == facts((UUID1, UUID0))


def test_gpus_of_one_model_answer_for_one_another(proc):
    _driver(proc, ALIKE)
    facts = memokey.gpu_facts
    assert facts(("0",)) == facts(("1",)) == facts((UUID1,)) == facts(("0", "1")) == \
        f"{DRIVER}; pinned to NVIDIA H100 80GB HBM3"


def _verdict(d: Path, ledger_path: Path, gpus: tuple[str, ...] = ()):
    spec = load_spec(d / "spec.toml")
    ledger = Ledger(ledger_path)
    try:
        runner = Runner(spec, ledger, gpus=gpus)
        return runner.verdict(spec.endpoint("good")), runner.executed
    finally:
        ledger.close()


def test_a_run_on_one_gpu_does_not_answer_for_a_gpu_of_another_model(env, proc):  # noqa: F811
    """The finding: `--gpus 1` (an A100) stored a PASS that answered `--gpus 0` (an H100)."""
    _driver(proc, MIXED)
    d = project(env)
    ledger = env / "l.db"
    _, on_a100 = _verdict(d, ledger, (UUID1,))
    again, on_a100_again = _verdict(d, ledger, (UUID1,))
    _, on_h100 = _verdict(d, ledger, (UUID0,))
    _, unpinned = _verdict(d, ledger)
    assert (on_a100, on_a100_again, on_h100, unpinned) == (1, 0, 1, 1) and again.cached


def test_a_sessions_runner_keys_the_gpus_of_its_policy(env, proc):  # noqa: F811
    """--gpus reaches the runs through the oracle and the key through the session's runner."""
    from bisectk.engine.policy import RunPolicy
    from bisectk.engine.session import Session
    _driver(proc, MIXED)
    spec = load_spec(project(env) / "spec.toml")
    keys = []
    for n, gpus in enumerate([(), ("0",), ("1",), ("1",)]):
        s = Session("ablate", spec, env / f"l{n}.db", policy=RunPolicy(gpus=gpus))
        try:
            keys.append(s.runner().static_key(""))
        finally:
            s.close()
    assert keys[0] == Runner(spec).static_key("")     # nothing pinned: the key it had
    assert len({*keys[:3]}) == 3 and keys[2] == keys[3]
