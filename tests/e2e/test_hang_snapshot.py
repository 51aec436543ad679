"""A hang is read before it is killed: which threads waited where (issue 25), through the whole CLI."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.run.process import run_process
from bisectk.run.readers import which
from bisectk.run.snapshot import SnapshotRequest
from bisectk.stuck import Snapshot
from tests.conftest import bisectk

SUBJECT = Path(__file__).resolve().parents[1] / "fixtures" / "hangs" / "lockpair.py"
needs_pyspy = pytest.mark.skipif(which("py-spy") is None, reason="py-spy is not installed")


def spec(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").touch()
    p = tmp_path / "spec.toml"
    p.write_text(f'name = "lock-order"\n[subject]\ncommand = ["python", {json.dumps(str(SUBJECT))}, "--order", '
                 '"{order}", "--n", "{n}", "--seed", "{seed}"]\n'
                 '[good]\norder = "same"\nn = 1\nseed = 0\n[bad]\norder = "reversed"\nn = 2\nseed = 1\n')
    return p


def places(entry: dict) -> dict[str, str]:
    snap = Snapshot.from_dict(entry["snapshot"])
    return {g.role: g.place for g in snap.host}


@needs_pyspy
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_an_ablation_shows_both_waiting_lines_beside_the_culprit(tmp_path, warm):
    args = ["ablate", spec(tmp_path), "--json", "--ledger", tmp_path / "l.db"] + (["--warm"] if warm else [])
    proc = bisectk(*args, timeout=180, check=0)
    rec = json.loads(proc.stdout)
    assert rec["culprits"] == ["order"]
    hangs = rec["hangs"]
    bad = places(hangs["bad"])
    assert bad["producer"] == "lockpair.py:12 producer" and bad["consumer"] == "lockpair.py:18 consumer", bad
    # the culprit configuration was read too, and waits at the same places: one hang, not two
    assert places(hangs["culprit"]) == bad and hangs["same"] is True
    assert not any("worker.py" in p for p in bad.values())   # bisectk's own frames are not the subject's
    text = bisectk("report", tmp_path / "l.db", "--session", str(rec["session"]), check=0).stdout
    assert "stuck at -- the bad endpoint" in text
    assert "lockpair.py:12 producer" in text and "lockpair.py:18 consumer" in text
    assert "the culprit configuration (order): the same places as the bad endpoint" in text


def test_snapshots_zero_reads_nothing(tmp_path):
    proc = bisectk("ablate", spec(tmp_path), "--json", "--snapshots", "0", "--ledger", tmp_path / "l.db",
                   timeout=180, check=0)
    rec = json.loads(proc.stdout)
    assert rec["culprits"] == ["order"]
    assert rec["hangs"]["bad"] is None and rec["hangs"]["culprit"] is None
    assert all(a.get("stuck") is None for a in rec["endpoints"]["bad"]["runs"])


def test_a_snapshot_that_times_out_leaves_the_verdict_a_hang(tmp_path):
    slow = tmp_path / "bin"
    slow.mkdir()
    for tool in ("py-spy", "gdb"):
        (slow / tool).write_text("#!/bin/sh\nsleep 30\n")
        (slow / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{slow}{os.pathsep}{os.environ['PATH']}"}
    old = os.environ["PATH"]
    os.environ["PATH"] = env["PATH"]
    try:
        raw = run_process([sys.executable, str(SUBJECT), "--order", "reversed", "--n", "1", "--seed", "0"],
                          timeout=1.0, snapshot=SnapshotRequest(budget_s=1.5, gpu=False))
    finally:
        os.environ["PATH"] = old
    assert raw.timed_out and raw.exit_code is None
    snap = Snapshot.from_dict(raw.stuck)
    assert snap.groups == () and any("timed out" in n or "time ran out" in n for n in snap.notes), snap.notes
    assert snap.took_s < 5


TWO_PLACES = """
import json, sys, threading
a = dict(x.split("=", 1) for x in sys.argv[1:])
def place_a():
    threading.Event().wait()
def place_b():
    threading.Event().wait()
if a["a"] == "1":
    place_a() if a["b"] == "1" else place_b()
print("BISECTK_RESULT " + json.dumps({"err": 0.0}))
"""


@needs_pyspy
def test_the_culprits_own_re_run_is_not_listed_as_another_hang(tmp_path):
    """`a` alone hangs at place_b, bad (a and b) at place_a. The culprit's confirmation re-run
    hung where its first run did; it was listed as one more hang, named 'hybrid' (the README's
    pipeline-hang said '1 more hang(s) read (hybrid)': producer_phase again). Another hang that
    is listed is named by what it applied."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(TWO_PLACES)
    p = tmp_path / "spec.toml"
    p.write_text('name = "two-places"\n[subject]\ncommand = ["python", "k.py", "a={a}", "b={b}", "z={z}"]\n'
                 '[good]\na = 0\nb = 0\nz = 0\n[bad]\na = 1\nb = 1\nz = 1\n')
    rec = json.loads(bisectk("ablate", p, "--json", "--ledger", tmp_path / "l.db", timeout=180, check=0).stdout)
    assert rec["culprits"] == ["a"] and rec["hangs"]["same"] is False, rec["hangs"]
    assert places(rec["hangs"]["culprit"]) == {"MainThread": "k.py:7 place_b"}, rec["hangs"]["culprit"]
    assert [o["label"] for o in rec["hangs"]["others"]] == [], rec["hangs"]["others"]


SLOW_CHILD = """
import json, subprocess, sys
p = subprocess.Popen(["sleep", sys.argv[1]])
p.wait()
print("BISECTK_RESULT " + json.dumps({"err": 0.0}))
"""


def test_a_refused_attach_does_not_make_a_slow_run_a_hang(tmp_path):
    """The README: a refused attach is one line in the report and never changes the verdict. A
    subject waiting on a slow native child (`sleep 2.5`) whose stacks gdb may not read (Yama's
    ptrace_scope 1 for a user) was pictured as its parent's wait alone, taken for a deadlock, and
    the bad endpoint was called a hang, with a culprit; read whole (or not read at all) it is
    given a longer run, which it passes: the bad configuration does not reproduce."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(SLOW_CHILD)
    p = tmp_path / "spec.toml"
    p.write_text('name = "slow-child"\n[subject]\ncommand = ["python", "k.py", "{s}", "{z}"]\n'
                 '[good]\ns = 0.01\nz = 0\n[bad]\ns = 2.5\nz = 1\n')
    refusing = tmp_path / "bin"
    refusing.mkdir()
    (refusing / "gdb").write_text("#!/bin/sh\necho 'ptrace: Operation not permitted.' >&2\nexit 1\n")
    (refusing / "gdb").chmod(0o755)
    verdicts = []
    for snapshots, path in (("0", None), ("2", f"{refusing}{os.pathsep}{os.environ['PATH']}")):
        proc = bisectk("ablate", p, "--json", "--snapshots", snapshots, "--ledger", tmp_path / f"l{snapshots}.db",
                       timeout=180, env={"PATH": path} if path else None)
        verdicts.append((proc.returncode, json.loads(proc.stdout).get("culprits")))
    assert verdicts[1] == verdicts[0], verdicts
