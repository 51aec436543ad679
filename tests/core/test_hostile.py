"""Hostile subjects (issue 22, items 4, 5 and 7): the result line is never lost, logs are capped,
and a subject that kills or stops its supervisor, or leaves a daemon holding its pipes, neither
hangs bisectk nor leaves a process behind; Ctrl-C ends a run at once.

Each hostile run is driven from a child Python process with a time limit, so a regression shows
as a failed test rather than a test run that never ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bisectk.run.executor import run_command
from bisectk.outcome import Outcome, Reason
from bisectk.run.classify import Judge, classify_run
from bisectk.run.process import run_process
from bisectk.specvalues import Threshold
from tests.conftest import ROOT
from tests.core.test_containment import kill_marked, marker, with_marker

JUDGE = Judge([Threshold("rel_err", max=1e-3)])


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def test_the_result_line_is_found_with_megabytes_of_output_after_it():
    code = ("import sys\nprint('BISECTK_RESULT {\"rel_err\": 1e-6}')\n"
            "for i in range(40000): print(f'teardown: freeing buffer {i} of 40000 ' + 'x' * 40)\n")
    raw = run_process(py(code), timeout=60)
    assert len(raw.stdout) < 70_000           # the tail alone no longer holds it
    run = classify_run(raw, JUDGE)
    assert run.outcome is Outcome.PASS and run.metrics["rel_err"] == 1e-6, run.signature


def test_a_result_line_longer_than_the_tails_is_read_whole():
    code = ("import json\nprint('noise')\n"
            "print('BISECTK_RESULT ' + json.dumps({'rel_err': 2e-4, 'samples': list(range(60000))}))\n"
            "print('bye')\n")
    raw = run_process(py(code), timeout=60)
    run = classify_run(raw, JUDGE)
    assert run.outcome is Outcome.PASS and len(run.metrics["samples"]) == 60000


def test_the_log_on_disk_is_capped_and_says_where_it_was_cut(tmp_path):
    from bisectk.run.output import LOG_HEAD_BYTES, LOG_TAIL_BYTES
    code = ("import sys\nw = sys.stdout.write\nw('FIRST LINE\\n')\n"
            "for i in range(3000): w(('%06d ' % i) + 'y' * 10000 + '\\n')\nw('LAST LINE\\n')\n"
            "print('BISECTK_RESULT {\"rel_err\": 0.0}')\n")
    raw = run_process(py(code), timeout=120, log_dir=tmp_path)
    log = tmp_path / "stdout.log"
    size = log.stat().st_size
    assert size <= LOG_HEAD_BYTES + LOG_TAIL_BYTES + 200, size   # 30 MB printed
    with open(log, "rb") as f:
        head = f.read(20)
        f.seek(-200, os.SEEK_END)
        tail = f.read()
        f.seek(LOG_HEAD_BYTES)
        middle = f.read(200)
    assert head.startswith(b"FIRST LINE") and b"LAST LINE" in tail and b"BISECTK_RESULT" in tail
    assert b"bytes of output cut here" in middle
    assert classify_run(raw, JUDGE).outcome is Outcome.PASS


# The subject kills (or stops) the process that contains it, and leaves a daemon holding its pipes.
KILL_SUPERVISOR = """
import os, signal, sys, time
m, how = sys.argv[1], sys.argv[2]
if os.fork() == 0:                      # a daemon that keeps stdout and stderr open
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", m])
    os._exit(0)
time.sleep(0.2)
print("about to deal with the supervisor", flush=True)
os.kill(os.getppid(), signal.SIGKILL if how == "kill" else signal.SIGSTOP)
time.sleep(300)
"""

DRIVER = """
import json, sys, time
from bisectk.run.process import run_process
t = time.monotonic()
raw = run_process([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]], timeout=float(sys.argv[4]))
print(json.dumps({"started": raw.started, "error": raw.error, "timed_out": raw.timed_out,
                  "s": time.monotonic() - t, "stdout": raw.stdout}))
"""


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_subject_that_kills_or_stops_its_supervisor_is_unresolved_and_leaves_nothing(how):
    m = marker()
    try:
        p = subprocess.run(py(DRIVER, KILL_SUPERVISOR, m, how, "30"), capture_output=True, text=True, timeout=25,
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        doc = json.loads(p.stdout)
        assert not doc["started"] and doc["s"] < 5, doc
        word = "killed by SIGKILL" if how == "kill" else "stopped"
        assert f"supervisor was {word}" in doc["error"] and "cannot be judged" in doc["error"], doc["error"]
        # what it printed before is kept, though a daemon still holds the pipe
        assert "about to deal with the supervisor" in doc["stdout"]
        from bisectk.run.process import RawRun
        run = classify_run(RawRun(started=False, error=doc["error"]), JUDGE)
        assert run.outcome is Outcome.UNRESOLVED and run.reason is Reason.INFRA
        time.sleep(0.3)
        assert with_marker(m) == []
    finally:
        kill_marked(m)


def test_ctrl_c_ends_a_run_whose_subject_ignores_sigterm_within_a_second(tmp_path):
    m = marker()
    subject = tmp_path / "stubborn.py"
    ready = tmp_path / "ignoring"
    subject.write_text("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       f"open({str(ready)!r}, 'w').close()\ntime.sleep(300)\n")
    # the driver takes SIGINT as a terminal's Ctrl-C does, whatever it inherited: started from a
    # background job (`cmd &` in a script) a process begins with SIGINT ignored, and never sees it
    driver = ("import signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "from bisectk.run.process import run_process\n"
              "try:\n    run_process([sys.executable, sys.argv[1], sys.argv[2]], timeout=300)\n"
              "except KeyboardInterrupt:\n    print('interrupted', flush=True)\n")
    proc = subprocess.Popen(py(driver, str(subject), m), stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:   # the subject has set its handler
            time.sleep(0.05)
        assert ready.exists() and len(with_marker(m)) >= 2          # the driver and the subject
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        took = time.monotonic() - t
        # ended by the kill after the grace, not by the subject (300 s) nor the timeout; the figure
        # (0.5 s on an idle box) comes from bench/adversary.py, this bound only leaves room for load
        assert "interrupted" in out and took < 5.0, took
        assert with_marker(m) == []
    finally:
        proc.kill()
        kill_marked(m)


def test_ctrl_c_while_the_supervisor_starts_the_subject_leaves_nothing(tmp_path, monkeypatch):
    """A Ctrl-C that lands after the subject started but before bisectk read the supervisor's
    reply (the subject runs in a session of its own): the tree is ended all the same; killing the
    supervisor alone left the subject running, holding the caller's pipes."""
    from bisectk.run import process as proc_mod
    m = marker()
    subject = tmp_path / "stubborn.py"
    ready = tmp_path / "ignoring"
    subject.write_text("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       f"open({str(ready)!r}, 'w').close()\ntime.sleep(300)\n")
    real_wait = proc_mod.Contained.wait

    def interrupted(self, deadline):
        reply = real_wait(self, deadline)       # the subject runs now
        assert reply and reply.get("pid")
        raise KeyboardInterrupt
    monkeypatch.setattr(proc_mod.Contained, "wait", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_process([sys.executable, str(subject), m], timeout=300)
        assert with_marker(m) == []             # the stubborn subject is gone, not waited for
    finally:
        kill_marked(m)


def test_warm_runs_read_their_output_as_cold_runs_do(tmp_path):
    """The same reader under --warm: the result line after 2 MB of teardown, and a capped log."""
    from bisectk.run.output import LOG_HEAD_BYTES, LOG_TAIL_BYTES
    from bisectk.run.executor import Job
    from bisectk.run.pool import WorkerPool
    from bisectk.run.progress import FixedWatch
    (tmp_path / "loud.py").write_text(
        "import sys\nprint('BISECTK_RESULT {\"rel_err\": 1e-6}', flush=True)\n"
        "for i in range(1100): sys.stdout.write(('%05d ' % i) + 'z' * 10000 + '\\n')\n")
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=60) as pool:
        raw = run_command(pool, [sys.executable, "loud.py"], cwd=tmp_path, timeout=60, log_dir=tmp_path / "logs")
        assert pool.stats["warm_runs"] == 1
    assert classify_run(raw, JUDGE).outcome is Outcome.PASS
    size = (tmp_path / "logs" / "stdout.log").stat().st_size
    assert size <= LOG_HEAD_BYTES + LOG_TAIL_BYTES + 200 and len(raw.stdout) < 70_000


def test_a_run_that_crashes_its_warm_worker_is_a_crash_not_a_lost_supervisor(tmp_path):
    """The worker's supervisor reports the worker's end and then exits with the same signal
    (run/supervise.py): after a SIGSEGV in a warm run it is found dead by SIGSEGV. That is the
    run's crash, not containment lost (it was read as UNRESOLVED infra in about 1 ablation of 5)."""
    from bisectk.run.executor import Job
    from bisectk.run.pool import WorkerPool
    from bisectk.run.progress import FixedWatch
    (tmp_path / "segv.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=60) as pool:
        for _ in range(8):   # the supervisor's exit races the worker's EOF: several runs
            raw = pool.run(Job([sys.executable, "segv.py"], cwd=tmp_path), FixedWatch(60))
            assert raw.started and raw.signal == "SIGSEGV" and "supervisor" not in raw.error, raw
        assert pool.stats.get("worker_lost", 0) == 0
