import json
import os
import stat
import sys

import pytest

from bisectk.evidence import sanitize, script_of
from bisectk.outcome import FailKind
from bisectk.spec import load_spec
from tests.conftest import ROOT, bisectk, new_mark, own_processes, wait_until


def test_script_of(make_spec):
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}))
    script, args = script_of(spec, spec.good)
    assert script.name == "toy.py" and args == ["--mode", "ok"]


def test_sanitize_uses_the_tool_for_the_failure_and_keeps_error_lines(tmp_path, make_spec, monkeypatch):
    fake = tmp_path / "bin" / "compute-sanitizer"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    "echo '========= COMPUTE-SANITIZER'\n"
                    "echo \"========= Tool: $2\"\n"
                    "echo '========= Invalid __global__ read of size 4 bytes'\n"
                    "echo '=========     Host Frame: foo [0x1]'\n"
                    "echo '========= ERROR SUMMARY: 3 errors'\n"
                    "shift 4; exec \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "segv"}))
    rep = sanitize(spec, spec.bad, FailKind.CRASH, timeout=30)
    assert rep.available and rep.tool == "memcheck" and rep.errors == 3
    assert "Invalid __global__ read" in rep.excerpt and "Host Frame" not in rep.excerpt
    assert "Tool: memcheck" in rep.excerpt
    assert sanitize(spec, spec.bad, FailKind.HANG, timeout=30).tool == "synccheck"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not sanitize(spec, spec.bad, FailKind.CRASH, timeout=30).available


def test_ptx_command_shows_barrier_count_difference(tmp_path):
    pytest.importorskip("cutlass")
    p = bisectk("ptx", ROOT / "variants" / "gpu" / "gpu-ws-hang-arrive.toml", "--with", "arrive_unit", "--json",
                timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert set(doc["signatures"]) == {"good", "bad", "good+arrive_unit"}
    keys = {d["key"]: d for d in doc["differences"]}
    # the empty barriers are initialised with 4 (warps) on good and 128 (threads) with the culprit
    assert keys["mbarrier.init[count=4]"]["good"] > 0 and keys["mbarrier.init[count=4]"]["good+arrive_unit"] == 0
    assert keys["mbarrier.init[count=128]"]["good+arrive_unit"] > 0


def test_ptx_with_a_factor_good_and_bad_share_is_refused(make_spec):
    """`--with n` where good and bad both give n=1: 'good+n' compiled good itself again, and its
    column read as the PTX of n at its bad value, no different from good's: a culprit cleared
    by nothing. Refused in one line, naming the factors that differ."""
    spec = make_spec({"mode": "ok", "n": 1}, {"mode": "wrong", "n": 1})
    p = bisectk("ptx", spec, "--with", "n", timeout=120)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    assert p.stderr.strip().splitlines() == [
        "bisectk: --with n: good and bad give it the same value, so good with it is good itself; "
        "name a factor that differs (mode)"], p.stderr


def test_a_ptx_table_with_nothing_compiled_does_not_say_no_difference():
    """When neither side compiled (not a `python SCRIPT.py` command, a compile error), the table
    said "(no difference)" between signatures it never had."""
    from bisectk.evidence import PtxEvidence
    ev = PtxEvidence(errors={"good": "no PTX", "bad": "no PTX"})
    assert "(no difference)" not in ev.table() and "nothing compared" in ev.table()
    assert ev.table().startswith("| PTX signature |\n|---|\n")     # a header as wide as its table
    ev = PtxEvidence(signatures={"good": {"threads": 128}}, errors={"bad": "no PTX"})
    assert "(no difference)" not in ev.table()
    ev = PtxEvidence(signatures={"good": {"threads": 128}, "bad": {"threads": 128}})
    assert "| (no difference) | | |" in ev.table()


def test_warm_workers_isolate_the_same_culprit(tmp_path):
    mark = new_mark()
    p = bisectk("ablate", ROOT / "variants" / "cpu" / "pipeline-hang.toml", "--warm", "--json", "--ledger",
                tmp_path / "l.db", timeout=600, check=0, env=mark)
    assert json.loads(p.stdout)["culprits"] == ["producer_phase"]
    # this command's warm workers (and the hung one) are gone; another command's are not counted
    left = wait_until(lambda: not own_processes(mark), timeout=10) or own_processes(mark)
    assert left is True, [q.cmdline() for q in left]


KERNEL = '''import argparse, sys
p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--compile-only", action="store_true")
p.add_argument("--ptx-out")
a = p.parse_args()
if a.mode == "bad":
    raise ValueError("tile_n 48 is not a multiple of the warp's 32 lanes")
open(a.ptx_out, "w").write(".visible .entry k()\\n{\\n\\tbar.sync 0;\\n}\\n")
'''


def test_ptx_says_why_a_configuration_did_not_compile(tmp_path):
    """Before: a configuration whose compile-only run failed was 'compile-only run exited 1:
    python k.py ...' in the table and on stderr, its error (the traceback's last line, an argparse
    complaint) cut off with every line after the first. Now the reason is on that line."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(KERNEL)
    spec = tmp_path / "spec.toml"
    spec.write_text('[subject]\ncommand = ["python", "k.py", "--mode", "{mode}"]\n[oracle]\nmetric = "err"\nmax = 0\n'
                    '[good]\nmode = "good"\n[bad]\nmode = "bad"\n')
    p = bisectk("ptx", spec)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr)
    assert "ValueError: tile_n 48 is not a multiple of the warp's 32 lanes" in p.stderr, p.stderr
    assert "bad: compile-only run of k.py exited 1: ValueError: tile_n 48" in p.stdout, p.stdout


def test_a_compile_that_hangs_is_a_build_hang_within_ptx_timeout_and_leaves_nothing(tmp_path):
    """`bisectk ptx` had no --timeout: a compile-only run that hung (a JIT deadlocked, a compiler
    waiting on a lock) held the command 600 s per configuration, three of them. Now --timeout,
    bounded as every command's, ends it as a build hang, with its whole process tree."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(KERNEL.replace('if a.mode == "bad":', 'if a.mode == "bad":\n'
                                                  '    import subprocess, time\n'
                                                  '    subprocess.Popen(["sleep", "300"])\n'
                                                  '    time.sleep(300)\n'
                                                  'if False:'))
    spec = tmp_path / "spec.toml"
    spec.write_text('[subject]\ncommand = ["python", "k.py", "--mode", "{mode}"]\n[oracle]\nmetric = "err"\nmax = 0\n'
                    '[good]\nmode = "good"\n[bad]\nmode = "bad"\n')
    mark = new_mark()
    p = bisectk("ptx", spec, "--timeout", "2", env=mark, timeout=200)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr)
    assert "bad: build hang: the compile-only run of k.py was still running after 2 s (--timeout)" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    left = wait_until(lambda: not own_processes(mark), timeout=10) or own_processes(mark)
    assert left is True, [q.cmdline() for q in left]
    for bad in ("0", "nan", "inf", "1e9"):
        p = bisectk("ptx", spec, "--timeout", bad)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def test_ptx_compiles_with_the_interpreter_the_spec_names(tmp_path):
    """Before: `bisectk ptx` ran every compile-only run with bisectk's own interpreter, whatever
    the spec's command named (`.venv/bin/python k.py`): the runs used the project's environment,
    the PTX came from another one (another CuTe DSL, or none: 'missing Python module' with an
    install hint for bisectk's). Now the compile runs with the spec's interpreter, as the runs do."""
    (tmp_path / "pyproject.toml").touch()
    venv = tmp_path / "venv" / "bin" / "python"
    venv.parent.mkdir(parents=True)
    venv.write_text(f"#!/bin/sh\nTHIS_VENV=1 exec {sys.executable} \"$@\"\n")
    venv.chmod(0o755)
    (tmp_path / "k.py").write_text(KERNEL.replace("a = p.parse_args()\n", "a = p.parse_args()\n"
                                                  "import os\n"
                                                  "if not os.environ.get('THIS_VENV'):\n"
                                                  "    raise ModuleNotFoundError(\"No module named 'cutlass'\")\n")
                                   .replace('if a.mode == "bad":', "if False:"))
    spec = tmp_path / "spec.toml"
    spec.write_text('[subject]\ncommand = ["venv/bin/python", "k.py", "--mode", "{mode}"]\n'
                    '[good]\nmode = "good"\n[bad]\nmode = "bad"\n')
    p = bisectk("ptx", spec, "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert set(json.loads(p.stdout)["signatures"]) == {"good", "bad"}
