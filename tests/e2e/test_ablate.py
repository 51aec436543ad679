"""End-to-end: `bisectk ablate` on the CPU stand-in variants finds the planted culprits."""
import json
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, bisectk

VARIANTS = ROOT / "variants" / "cpu"


def ablate_json(spec, tmp_path, *extra, code=0):
    p = bisectk("ablate", spec, "--json", "--ledger", tmp_path / "ledger.db", *extra, timeout=600)
    assert p.returncode == code, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    return json.loads(p.stdout)


@pytest.mark.parametrize("variant,culprits,kind", [
    ("pipeline-hang", ["producer_phase"], "hang"),
    ("pipeline-corrupt", ["leader_sync"], "wrong"),
    ("crash-oob", ["access"], "crash"),
])
def test_single_culprits(tmp_path, variant, culprits, kind):
    doc = ablate_json(VARIANTS / f"{variant}.toml", tmp_path)
    assert doc["culprits"] == culprits and doc["interaction"] is False
    assert doc["endpoints"]["bad"]["kind"] == kind
    assert doc["runs"] >= 3 and doc["attempts"]
    rows = {r["factor"]: r for r in doc["differences"]}
    assert rows[culprits[0]]["verdict"] == "CULPRIT" and rows[culprits[0]]["alone"] == "FAILS"


def test_two_factor_interaction(tmp_path):
    doc = ablate_json(VARIANTS / "attention-warps.toml", tmp_path)
    assert sorted(doc["culprits"]) == ["mma_warp", "warps"] and doc["interaction"] is True
    assert all(p["outcome"] == "pass" for p in doc["proof"])


def test_ordinal_threshold_and_report(tmp_path):
    report = tmp_path / "log.md"
    p = bisectk("ablate", VARIANTS / "attention-threshold.toml", "--ledger", tmp_path / "l.db", "--report", report, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "threshold: kv_len fails from 512 on (256 passes)" in p.stdout
    md = report.read_text()
    for heading in ("**Status:** Resolved", "#### Key Differences", "#### Attempt 1:", "**Hypothesis:**",
                    "**Conclusion:**", "#### What to Try Next", "#### Environment (captured)"):
        assert heading in md


def toy(tmp_path, counter):
    """Five factors; `mode` plants a hang, `err` is benign, `echo` crashes the program if 'boom'."""
    from tests.conftest import toy_spec
    return toy_spec(tmp_path, {"mode": "ok", "err": 0.0, "sleep": 0.0, "echo": "a"},
                    {"mode": "hang", "err": 1e-6, "sleep": 0.01, "echo": "b"}, args=["--counter", str(counter)])


def test_resume_reruns_nothing(tmp_path):
    counter = tmp_path / "n.txt"
    spec = toy(tmp_path, counter)
    first = ablate_json(spec, tmp_path, "--max-runs", "1", code=1)
    assert first["complete"] is False
    done = len(counter.read_text().splitlines())
    second = ablate_json(spec, tmp_path, "--resume")
    assert second["culprits"] == ["mode"] and second["complete"]
    total = len(counter.read_text().splitlines())
    fresh_counter = tmp_path / "fresh" / "n.txt"
    fresh_counter.parent.mkdir()
    reference = ablate_json(toy(fresh_counter.parent, fresh_counter), fresh_counter.parent)
    # the interrupted + resumed pair made exactly the runs one uninterrupted ablation makes
    assert total == len(fresh_counter.read_text().splitlines()) == reference["runs"]
    assert second["runs"] == total - done


def test_different_failure_is_not_the_target(tmp_path):
    """b hangs (the target); a without b crashes: a second bug, reported, never blamed."""
    code = ("import os, sys, time, json\n"
            "a, b = int(sys.argv[1]), int(sys.argv[2])\n"
            "if b:\n    time.sleep(300)\n"
            "if a:\n    os.kill(os.getpid(), 11)\n"
            "print('BISECTK_RESULT ' + json.dumps({'rel_err': 0.0}))\n")
    (tmp_path / "pyproject.toml").touch()
    spec = tmp_path / "s.toml"
    spec.write_text(f"[subject]\ncommand = {json.dumps(['python', '-c', code, '{a}', '{b}', '{c}'])}\n"
                    "[good]\na = 0\nb = 0\nc = 0\n[bad]\na = 1\nb = 1\nc = 1\n")
    doc = ablate_json(spec, tmp_path, "--strategy", "ofat")
    assert doc["culprits"] == ["b"]
    assert doc["endpoints"]["bad"]["kind"] == "hang"
    seconds = [d["verdict"] for d in doc["different_failures"]]
    assert seconds and all("SIGSEGV" in v for v in seconds)
    assert {r["factor"]: r["alone"] for r in doc["differences"]}["a"] == "unresolved"


def held_ablation(tmp_path, *extra):
    """An ablation of the toy (`mode` plants a wrong result) stopped at its third run, the
    search's first (runs 1 and 2 are the endpoints): that run waits while the hold file exists,
    under a fixed 120 s watchdog, so the interrupt lands in the search however loaded the
    machine is. Returns the process, once the held run is waiting."""
    from tests.conftest import toy_spec, wait_until
    counter, hold = tmp_path / "n.txt", tmp_path / "hold"
    hold.touch()
    spec = toy_spec(tmp_path, {"mode": "ok", "err": 0.0, "sleep": 0.0, "echo": "a"},
                    {"mode": "wrong", "err": 1e-6, "sleep": 0.01, "echo": "b"}, extra_subject="timeout = 120",
                    args=["--counter", str(counter), "--hold", str(hold), "--hold-from", "3"])
    proc = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), *extra, "--ledger",
                             str(tmp_path / "l.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait_until(lambda: (tmp_path / "hold.held").exists() or proc.poll() is not None, timeout=120) \
            or proc.poll() is not None:
        proc.kill()
        raise AssertionError(("the search never reached its first run", proc.communicate()))
    return proc


def test_sigint_prints_best_so_far(tmp_path):
    proc = held_ablation(tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, (out, err)
    assert "search stopped (interrupted)" in out and "no verdict yet" in out
    assert "Traceback" not in err


def test_interrupted_ofat_never_calls_unproven_factors_culprits(tmp_path):
    """Bug: an interrupted ofat marked every factor CULPRIT. What is not shown must read as unknown."""
    proc = held_ablation(tmp_path, "--strategy", "ofat", "--json")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    doc = json.loads(out)
    assert proc.returncode == 1 and doc["interrupted"] and not doc["complete"], err
    verdicts = {r["factor"]: r["verdict"] for r in doc["differences"]}
    # the only factor that could be shown necessary is the planted one ('mode'); nothing else is a culprit
    assert set(doc["culprits"]) <= {"mode"}
    assert all(v != "CULPRIT" for f, v in verdicts.items() if f != "mode")
    assert set(doc["unresolved_factors"]) | set(doc["culprits"]) | {f for f, v in verdicts.items() if v == "cleared"} \
        == set(verdicts)
