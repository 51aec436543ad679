"""Hostile subjects under `--warm` (issue 22, item 5): a subject that kills or stops the warm
worker's supervisor is UNRESOLVED (infra) and leaves no process behind; Ctrl-C ends a warm session
within a second."""
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import ROOT
from tests.core.test_containment import kill_marked, with_marker

SPEC = """name = "hostile"
[subject]
command = ["python", "subject.py", "--mode", "{mode}", "--marker", "{marker}"]
timeout = 60
[oracle]
metric = "err"
max = 0
[good]
mode = "ok"
marker = "{m}"
[bad]
mode = "{bad}"
marker = "{m}"
"""

SUBJECT = """import argparse, json, os, signal, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--mode")
ap.add_argument("--marker")
a = ap.parse_args()
if a.mode == "ok":
    print("BISECTK_RESULT " + json.dumps({"err": 0}))
    sys.exit(0)
if a.mode == "hang":
    open("hanging", "w").close()
    time.sleep(300)
# a daemon that outlives everything, then the supervisor of whatever runs us is dealt with
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", a.marker])
    os._exit(0)
time.sleep(0.2)
os.kill(os.getppid(), signal.SIGKILL if a.mode == "killsup" else signal.SIGSTOP)
time.sleep(0.5)
print("BISECTK_RESULT " + json.dumps({"err": 1}))
"""


def _cwd(q) -> str | None:
    """A process's working directory; None once it is gone (found while it was still exiting: a
    killed process that held torch takes a moment to be torn down on a loaded machine)."""
    try:
        return q.cwd()
    except psutil.NoSuchProcess:
        return None


def setup(tmp_path, bad: str, heavy: str = ""):
    m = f"bisectk-hostile-{os.urandom(6).hex()}"
    (tmp_path / "subject.py").write_text(heavy + SUBJECT)
    (tmp_path / "spec.toml").write_text(SPEC.replace("{m}", m).replace("{bad}", bad))
    (tmp_path / "pyproject.toml").touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return m, env


@pytest.mark.parametrize("bad", ["killsup", "stopsup"])
def test_a_subject_that_kills_or_stops_the_warm_workers_supervisor_is_unresolved_and_leaves_nothing(tmp_path, bad):
    m, env = setup(tmp_path, bad)
    try:
        p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", "spec.toml", "--warm", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        doc = json.loads(p.stdout)
        bad_run = doc["endpoints"]["bad"]
        assert bad_run["outcome"] == "unresolved" and bad_run["reason"] == "infra", bad_run
        assert "supervisor" in bad_run["signature"] and "cannot be judged" in bad_run["signature"]
        assert p.returncode != 0
        time.sleep(0.5)
        assert with_marker(m) == []
        assert [q for q in with_marker(str(tmp_path)) if "bisectk.run.worker" in " ".join(q.cmdline())
                or "bisectk.run.template" in " ".join(q.cmdline())] == []
    finally:
        kill_marked(m)


@pytest.mark.parametrize("heavy", ["", "import torch\n"], ids=["fresh-workers", "forked-workers"])
def test_ctrl_c_ends_a_warm_session_within_a_second(tmp_path, heavy):
    """Without a heavy import the workers start fresh; with torch they are forked from a template
    that imported it (run/template.py), which must end with them."""
    if heavy:
        pytest.importorskip("torch")
    m, env = setup(tmp_path, "hang", heavy)
    proc = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", "spec.toml", "--warm"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "hanging").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "hanging").exists()
        time.sleep(0.3)
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        took = time.monotonic() - t
        assert proc.returncode == 130 and took < 1.0, (proc.returncode, took)
        time.sleep(0.3)
        workers = [q for q in with_marker("bisectk.run.worker") + with_marker("bisectk.run.template")
                   if _cwd(q) == str(tmp_path)]
        assert workers == []
    finally:
        proc.kill()


@pytest.mark.parametrize("body", ["sys.exit(256)", "sys.exit(381)", "sys.exit(-1)", "sys.exit(True)", "sys.exit(0)",
                                  "raise KeyboardInterrupt", "sys.exit('said')"])
def test_a_warm_run_ends_with_the_status_a_cold_interpreter_gives(tmp_path, body):
    """sys.exit(256) is 0 for a process, -1 is 255, an uncaught KeyboardInterrupt is SIGINT: a warm
    run says the same, or a cold endpoint and a warm hybrid of one failure were two failures."""
    from bisectk.run.executor import run_command
    from bisectk.run.pool import WorkerPool
    script = tmp_path / "s.py"
    script.write_text(f"import sys\n{body}\n")
    cold = subprocess.run([sys.executable, str(script)], capture_output=True)
    with WorkerPool(gpus=None, preload=(), ready_timeout=60) as pool:
        raw = run_command(pool, [sys.executable, str(script)], timeout=60)
    expected = (None, "SIGINT") if cold.returncode == -signal.SIGINT else (cold.returncode, None)
    assert (raw.exit_code, raw.signal) == expected


def test_a_command_a_warm_worker_cannot_run_is_said_once_and_runs_cold(tmp_path):
    """`--warm --pytest ID` (python -m pytest) or a shell command: its runs go cold, and the user
    who asked for --warm is told so once (it ran cold in silence)."""
    from bisectk.run.executor import run_command
    from bisectk.run.pool import WorkerPool
    notes = []
    with WorkerPool(gpus=None, preload=(), ready_timeout=60, on_note=notes.append) as pool:
        for _ in range(2):
            raw = run_command(pool, [sys.executable, "-m", "this"], timeout=60)
            assert raw.exit_code == 0
        assert pool.stats["cold_runs"] == 2
    said = [n for n in notes if "is not `python SCRIPT.py`" in str(n)]
    assert len(said) == 1


def test_a_build_step_that_is_not_python_is_not_said_to_send_the_runs_cold(tmp_path):
    """`--warm --build make --run 'python run.py'`: the build runs in a fresh process, as it always
    does, and the subject warm. The note that said `make is not python SCRIPT.py, so its runs go
    cold` told the user the opposite of what happened."""
    from bisectk.run.executor import Build, Job
    from bisectk.run.pool import WorkerPool
    from bisectk.run.progress import FixedWatch
    (tmp_path / "s.py").write_text("print('BISECTK_RESULT {\"ok\": true}')\n")
    notes = []
    with WorkerPool(gpus=None, preload=(), ready_timeout=60, on_note=notes.append) as pool:
        job = Job([sys.executable, "s.py"], tmp_path, build=Build(["sh", "-c", "true"], 60, "k"))
        raw = pool.run(job, FixedWatch(60))
        assert raw.exit_code == 0 and pool.stats["warm_runs"] == 1
    assert not [n for n in notes if "SCRIPT.py" in str(n)], notes


def test_the_cold_note_names_a_one_word_command_as_typed(tmp_path):
    """`--warm --run ./k` (a native binary): the note names `k`, not `k ` with a stray space."""
    from bisectk.run.executor import run_command
    from bisectk.run.pool import WorkerPool
    notes = []
    with WorkerPool(gpus=None, preload=(), ready_timeout=60, on_note=notes.append) as pool:
        assert run_command(pool, ["true"], timeout=60).exit_code == 0
    assert [str(n) for n in notes if "SCRIPT.py" in str(n)][0].startswith("--warm: true is not "), notes


def _passes_warm(tmp_path, code: str):
    """One run, in a warm pool, of a script that runs `code` and then prints a passing result; it
    must pass (exit 0, its result read) however the worker fared. (The pool's stats, its notes.)"""
    from bisectk.run.executor import run_command
    from bisectk.run.pool import WorkerPool
    script = tmp_path / "s.py"
    script.write_text(code + "print('BISECTK_RESULT {\"ok\": true}')\n")
    notes = []
    with WorkerPool(gpus=None, preload=(), ready_timeout=60, on_note=notes.append) as pool:
        raw = run_command(pool, [sys.executable, str(script)], cwd=tmp_path, timeout=60)
        assert raw.exit_code == 0 and raw.result.startswith("BISECTK_RESULT"), (raw.exit_code, raw.stderr[-500:])
        return dict(pool.stats), notes


def test_a_run_that_closes_the_workers_own_descriptors_is_done_again_cold(tmp_path):
    """os.closerange(3, 1024), as daemonising or sandboxing code does, closes the warm worker's
    reply pipe and saved stdio: the worker's own death is not the subject's crash; the run is done
    again cold, whose verdict stands, with a note."""
    stats, notes = _passes_warm(tmp_path, "import os\nos.closerange(3, 1024)\n")
    assert stats.get("broken") == 1 and stats["cold_runs"] == 1
    assert any("closed the warm worker's own descriptors" in str(n) for n in notes)


def test_a_run_that_breaks_the_workers_own_machinery_is_done_again_cold(tmp_path):
    """A run that rebinds what the worker calls to put the process back (os.chdir = None) passes
    in a fresh process: the worker's failure after it is not the subject's crash ('exit None');
    the run is done again cold, whose verdict stands, with a note."""
    stats, notes = _passes_warm(tmp_path, "import os\nos.chdir = None\n")
    assert stats["cold_runs"] == 1
    assert any("machinery failed" in str(n) for n in notes), notes
