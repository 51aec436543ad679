"""cuda-gdb output (captured on an H100 from the hang pairs of variants/gpu) read into warp groups."""
import json
from pathlib import Path

import pytest

from bisectk.run import cudagdb
from bisectk.stuck import Snapshot, same_place

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "cudagdb"
KERNELS = Path(__file__).resolve().parents[2] / "kernels" / "cutedsl"


def groups(name):
    """Parsed as on the GPU machine, where the kernel's source is where cuda-gdb says it is."""
    data = json.loads((CAPTURED / f"{name}.json").read_text())
    found, note = cudagdb.parse(data, resolve=lambda p: KERNELS / Path(p).name)
    return found, note


def test_producer_phase_hang_consumers_and_producer_on_mbarrier_try_wait():
    found, note = groups("gpu-ws-hang-phase")
    assert {(g.role, g.place, g.wait, g.instruction) for g in found} == {
        ("warps 0-3 (threads 0-127)", "ws_pipeline.py:183", "mbarrier try_wait", "SYNCS.PHASECHK.TRANS64"),
        ("warp 4 (threads 128-159)", "ws_pipeline.py:164", "mbarrier try_wait", "SYNCS.PHASECHK.TRANS64")}
    # every CTA read shows the same picture, so it is one entry
    assert len({g.scope for g in found}) == 1 and "alike" in found[0].scope
    assert found[0].scope.startswith("kernel RowSumWS, CTA (")
    assert note.startswith("cuda-gdb: warps of 8 of ")
    assert all(g.device for g in found)


def test_named_barrier_hang_names_the_barrier_and_its_thread_count():
    found, _ = groups("gpu-ws-hang-nbar")
    # the barrier's id and expected thread count come from BAR.SYNC's operands (0x1, 0xa0); the
    # DSL's line info points at the kernel's definition, so the one call of barrier 1 is named
    assert [(g.role, g.place, g.wait, g.instruction) for g in found] == [
        ("warps 0-3 (threads 0-127)", "ws_pipeline.py:200", "named barrier 1, 160 threads", "BAR.SYNC.DEFER_BLOCKING")]
    line = (KERNELS / "ws_pipeline.py").read_text().splitlines()[199]
    assert "barrier(barrier_id=1" in line



def test_a_named_barrier_hang_is_a_deadlock():
    """cuda-gdb's reading names a named barrier with its id and thread count ('named barrier 1,
    160 threads'), and `deadlocked` looked the wait up whole: the captured named-barrier hang was
    no deadlock, so a GPU subject without progress lines had its hang run again for longer
    (a silent hang) though the picture showed where it deadlocked. An arrive never blocks."""
    from bisectk.stuck import deadlocked
    found, _ = groups("gpu-ws-hang-nbar")
    assert deadlocked(Snapshot(groups=tuple(found)).to_dict())
    arrive = [g.__class__(**{**g.to_dict(), "stack": (), "wait": "named barrier arrive 3, 256 threads"}) for g in found]
    assert not deadlocked(Snapshot(groups=tuple(arrive)).to_dict())

def test_without_the_source_the_line_info_is_kept():
    data = json.loads((CAPTURED / "gpu-ws-hang-nbar.json").read_text())
    found, _ = cudagdb.parse(data, resolve=lambda p: "/nonexistent/" + Path(p).name)
    assert found[0].place == "ws_pipeline.py:93" and found[0].wait == "named barrier 1, 160 threads"


def test_deferred_blocking_barrier_a_few_instructions_back():
    found, _ = groups("gpu-fmha-hang-orderarrive")
    assert ("warps 8-11 (threads 256-383)", "named barrier 3, 256 threads") in {(g.role, g.wait) for g in found}


def test_setmaxnreg_hang_names_the_register_reallocation():
    found, _ = groups("gpu-fmha-hang-regs")
    waits = {g.wait for g in found}
    assert "setmaxnreg (register reallocation)" in waits
    regs = next(g for g in found if g.wait.startswith("setmaxnreg"))
    assert regs.place == "fmha_wgmma.py:275" and regs.instruction.startswith("USETMAXREG")


@pytest.mark.parametrize("name", ["gpu-ws-hang-arrive", "gpu-ws-hang-txbytes", "gpu-fmha-hang-orderarrive"])
def test_every_captured_hang_has_a_waiting_group(name):
    found, _ = groups(name)
    assert found and any(g.wait == "mbarrier try_wait" or g.wait.startswith("named barrier") for g in found)
    snap = Snapshot(groups=tuple(found))
    assert same_place(snap, Snapshot.from_dict(snap.to_dict())) is True


def test_two_different_hangs_are_told_apart():
    a = Snapshot(groups=tuple(groups("gpu-ws-hang-phase")[0]))
    b = Snapshot(groups=tuple(groups("gpu-ws-hang-nbar")[0]))
    assert same_place(a, b) is False


def test_kernel_names_are_shortened():
    assert cudagdb.short_kernel("kernel_cutlass_kernel___main__buildlocalsRowSumWS_object_at__CopyAtom_0") == "RowSumWS"
    assert cudagdb.short_kernel("my_kernel") == "my_kernel"


def test_missing_cuda_gdb_is_one_line(monkeypatch):
    found, problem = cudagdb.read(1, deadline_s=5, tool=None) if cudagdb_missing() else ([], "skip")
    if problem == "skip":
        pytest.skip("cuda-gdb is installed here")
    assert found == [] and problem == "GPU warps not read: cuda-gdb is not installed"


def cudagdb_missing():
    from bisectk.run.readers import which
    return which("cuda-gdb") is None


def test_a_tool_that_prints_nothing_useful(tmp_path):
    fake = tmp_path / "cuda-gdb"
    fake.write_text("#!/bin/sh\necho 'ptrace: Operation not permitted.' >&2\nexit 1\n")
    fake.chmod(0o755)
    found, problem = cudagdb.read(1, deadline_s=5, tool=str(fake))
    assert found == [] and problem == "GPU warps not read: cuda-gdb: ptrace: Operation not permitted."
