"""Process containment (issue 12): a subject's whole tree dies with its run and with bisectk.

Every leak is counted the way a user would see it: processes anywhere on the machine whose command
line carries a marker unique to the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from bisectk.run import process
from bisectk.run.process import RUN_ID_ENV, run_process

SLEEPER = "import time; time.sleep(300)"

# double fork + setsid: the daemon is reparented away from the subject at once
DAEMON = f"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {SLEEPER!r}, sys.argv[1]])
    os._exit(0)
time.sleep(0.05)
print("parent done")
"""

# a child in a session of its own, still running when the subject exits (with the code in argv[2])
CHILD_LEFT = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, sys.argv[1]], start_new_session=True)
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, sys.argv[1]])
print("bye")
sys.exit(int(sys.argv[2]))
"""

# a hang with every kind of descendant: same group, own session, a shell's background job, a daemon
HANG_TREE = f"""
import os, subprocess, sys, time
m = sys.argv[1]
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, m])
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, m], start_new_session=True)
subprocess.Popen(["sh", "-c", sys.executable + " -c 'import time; time.sleep(300)' " + m + " & wait"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {SLEEPER!r}, m])
    os._exit(0)
print("tree up", flush=True)
time.sleep(300)
"""


def marker() -> str:
    return f"bisectk-leak-{uuid.uuid4().hex[:12]}"


def with_marker(m: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and m in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return found


def describe(procs: list[psutil.Process]) -> list:
    out = []
    for p in procs:
        try:
            out.append((p.pid, p.ppid(), p.status(), p.cmdline()[-2:]))
        except psutil.Error:
            out.append((p.pid, "gone"))
    return out


def wait_count(m: str, n: int, timeout: float = 10.0) -> int:
    """Poll until `n` processes carry the marker (or the timeout); returns the last count."""
    deadline = time.monotonic() + timeout
    while True:
        count = len(with_marker(m))
        if count == n or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def kill_marked(m: str) -> None:
    for p in with_marker(m):
        try:
            p.kill()
        except psutil.Error:
            pass


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_double_forked_daemon_dies_with_its_run():
    m = marker()
    try:
        for _ in range(5):
            raw = run_process([sys.executable, "-c", DAEMON, m], timeout=30)
            assert raw.exit_code == 0 and raw.stdout == "parent done\n"
            assert raw.leftovers >= 1, raw  # the daemon (and, on a busy machine, its parent), killed
            assert describe(with_marker(m)) == [], raw
    finally:
        kill_marked(m)


@pytest.mark.parametrize("code", [0, 3])
def test_children_left_after_a_normal_exit_die(code):
    m = marker()
    try:
        raw = run_process([sys.executable, "-c", CHILD_LEFT, m, str(code)], timeout=30)
        assert raw.started and raw.exit_code == code and raw.stdout == "bye\n" and not raw.timed_out
        assert raw.leftovers == 2, raw
        assert describe(with_marker(m)) == [], raw
        # the clean exit is not slowed by the cleanup's grace period (children die on SIGTERM)
        assert raw.duration_s < 5
    finally:
        kill_marked(m)


def test_timeout_ends_every_kind_of_descendant():
    m = marker()
    try:
        raw = run_process([sys.executable, "-c", HANG_TREE, m], timeout=3)
        assert raw.timed_out and raw.stdout == "tree up\n", raw
        assert describe(with_marker(m)) == [], raw
    finally:
        kill_marked(m)


def test_exit_status_and_output_survive_the_supervisor():
    raw = run_process([sys.executable, "-c", "import os, signal, sys; print('o'); sys.stdout.flush();"
                       " os.kill(os.getpid(), signal.SIGABRT)"])
    assert raw.exit_code == -signal.SIGABRT and raw.signal == "SIGABRT" and raw.stdout == "o\n"
    raw = run_process([sys.executable, "-c", "import os; print(os.environ['FLAVOUR'], os.getcwd())"],
                      env={"FLAVOUR": "tart"}, cwd="/")
    assert raw.stdout == "tart /\n"


def test_subject_sees_default_signal_dispositions():
    # the supervisor ignores SIGINT itself; the subject must not inherit that
    raw = run_process([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGINT); "
                       "import time; time.sleep(5)"], timeout=10)
    assert raw.exit_code != 0 and not raw.timed_out  # KeyboardInterrupt (exit 1), not a 5 s sleep


def test_program_path_search_uses_the_subjects_path(tmp_path):
    tool = tmp_path / "bin" / "bisectk-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    raw = run_process(["bisectk-tool"], env={"PATH": str(tool.parent)})
    assert raw.stdout == "found\n"


@pytest.mark.parametrize("argv, cwd, env, words", [
    (["tr\0ue"], None, None, "NUL"),
    (["true", "a\0b"], None, None, "NUL"),
    (["true"], "/tm\0p", None, "NUL"),
    (["true"], None, {"A=B": "x"}, "environment variable name"),
    (["true"], None, {"": "x"}, "environment variable name"),
    (["true"], None, {"A": "x\0y"}, "NUL"),
    (["/nonexistent/bisectk-subject"], None, None, "No such file"),
    (["true"], "/nonexistent/bisectk-dir", None, "/nonexistent/bisectk-dir"),
    ([], None, None, "empty command"),
])
def test_commands_the_kernel_refuses_are_one_line_not_started(argv, cwd, env, words):
    raw = run_process(argv, cwd=cwd, env=env)
    assert not raw.started and words in raw.error and "\n" not in raw.error


def test_full_disk_while_writing_logs_keeps_the_tail_and_raises_nothing(tmp_path, monkeypatch):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full to simulate a full disk")
    errors = []
    monkeypatch.setattr("threading.excepthook", lambda args: errors.append(args))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "stdout.log").symlink_to("/dev/full")  # every write: ENOSPC
    raw = run_process([sys.executable, "-c", "print('x' * 200_000); print('end')"], log_dir=logs,
                      tail_bytes=1000)
    assert raw.exit_code == 0 and raw.stdout.endswith("end\n")
    assert "No space left on device" in raw.error
    assert errors == []


def test_sigkill_of_bisectk_mid_hang_leaves_nothing(tmp_path):
    m = marker()
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "hang.py").write_text(HANG_TREE)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[subject]\ncommand = ["python", "hang.py", "{m}"]\ntimeout = 120\n'
                    '[good]\nx = 1\n[bad]\nx = 2\n')
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp)}
    bk = subprocess.Popen([sys.executable, "-m", "bisectk", "run", str(spec), "--config", "bad"],
                          cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_count(m, 6, timeout=30) == 6  # hang.py and its five descendants
        bk.send_signal(signal.SIGKILL)
        bk.wait()
        assert wait_count(m, 0, timeout=5) == 0
    finally:
        bk.kill()
        kill_marked(m)
    # no cleanup ran in the killed bisectk: its run's import record is still there, and the next
    # bisectk removes it (run/tmpfiles.py)
    left = [x.name for x in tmp.iterdir()]
    assert left and all(n.startswith(f"bisectk-imports-{bk.pid}.") for n in left), left
    quick = tmp_path / "quick.toml"
    quick.write_text('[subject]\ncommand = ["python", "-c", "pass"]\n[good]\nx = 1\n[bad]\nx = 2\n')
    p = subprocess.run([sys.executable, "-m", "bisectk", "run", str(quick), "--config", "good"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert list(tmp.iterdir()) == []


DRIVER = """
import sys
from bisectk.run.process import run_process
run_process([sys.executable, "-c", sys.argv[1], sys.argv[2]], timeout=120)
"""


def test_last_resort_reaps_runs_whose_bisectk_and_supervisor_both_died(tmp_path, cache_dir):
    m = marker()
    root = str(Path(process.__file__).resolve().parents[2])
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_dir), "PYTHONPATH": root}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, HANG_TREE, m], env=env)
    try:
        assert wait_count(m, 7, timeout=30) == 7  # the driver, the subject and its five descendants
        records = list((cache_dir / "bisectk" / "live").glob("*.json"))
        assert len(records) == 1
        rec = json.loads(records[0].read_text())
        os.kill(rec["supervisor"], signal.SIGKILL)  # as an OOM killer might
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        time.sleep(0.5)
        assert len(with_marker(m)) == 6  # orphaned to init: only the record can find them now
        assert process.reap_stale(cache_dir / "bisectk" / "live", force=True) == 6
        assert wait_count(m, 0, timeout=5) == 0
        assert not records[0].exists()
    finally:
        driver.kill()
        kill_marked(m)


def test_last_resort_leaves_live_sessions_alone(tmp_path, cache_dir):
    live = cache_dir / "bisectk" / "live"
    live.mkdir(parents=True)
    record = live / "abc.json"
    record.write_text(json.dumps({"run_id": "abc", "owner": os.getpid(), "owner_start": process.process_start(os.getpid()),
                                  "supervisor": 1, "subject": 1}))
    env = {**os.environ, RUN_ID_ENV: "abc"}
    p = subprocess.Popen([sys.executable, "-c", SLEEPER], env=env)
    try:
        assert process.reap_stale(live, force=True) == 0
        assert p.poll() is None and record.exists()
    finally:
        p.kill()
        p.wait()


def test_last_resort_leaves_the_records_of_another_host_alone(tmp_path, cache_dir, monkeypatch):
    """Cluster nodes sharing a home share ~/.cache/bisectk/live: a bisectk starting on one node
    took a live one's records on another for a dead one's (its pid names no process here),
    and deleted them, so that node's own next start could no longer reap what a SIGKILL left."""
    import socket
    from types import SimpleNamespace
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    other = socket.gethostname() + "-node-a"
    with monkeypatch.context() as there:        # written by the bisectk of another node
        there.setattr(process.socket, "gethostname", lambda: other)
        there.setattr(process.os, "getpid", lambda: dead.pid)     # a pid that names nothing here
        record = process._write_record("abc", SimpleNamespace(proc=SimpleNamespace(pid=1), pid=1))
    assert record is not None and json.loads(record.read_text())["owner"] == dead.pid
    assert process.reap_stale(record.parent, force=True) == 0
    assert record.exists()


WARM_DRIVER = """
import sys, time
from bisectk.run.executor import run_command
from bisectk.run.pool import WorkerPool
pool = WorkerPool(preload=()).start()
run_command(pool, [sys.executable, sys.argv[1], sys.argv[2]], timeout=120)
"""


def test_warm_worker_dies_with_bisectk(tmp_path, cache_dir):
    m = marker()
    script = tmp_path / "hang.py"
    script.write_text(HANG_TREE)
    root = str(Path(process.__file__).resolve().parents[2])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_dir), "PYTHONPATH": root, "TMPDIR": str(tmp)}
    driver = subprocess.Popen([sys.executable, "-c", WARM_DRIVER, str(script), m], env=env)
    try:
        # the worker runs hang.py in-process (its argv is the worker's), so count its 4 children
        assert wait_count(m, 6, timeout=60) == 6  # the driver itself carries the marker too
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        assert wait_count(m, 0, timeout=5) == 0
    finally:
        driver.kill()
        kill_marked(m)
    # the run's FIFO directory outlived the killed driver; the next pool's start removes it
    left = [x.name for x in tmp.iterdir()]
    assert left and all(n.startswith(f"bisectk-warm-{driver.pid}.") for n in left), left
    subprocess.run([sys.executable, "-c", "from bisectk.run.pool import WorkerPool; WorkerPool(preload=()).start().close()"],
                   env=env, check=True, timeout=120)
    assert list(tmp.iterdir()) == []


def test_temp_entries_of_a_dead_or_reused_owner_are_swept_and_no_others(tmp_path, monkeypatch):
    import tempfile

    from bisectk.run import tmpfiles
    dead = subprocess.Popen(["true"])
    dead.wait()
    me, start = os.getpid(), int(process.process_start(os.getpid()))
    keep = [f"bisectk-warm-{me}.{start}-a", f"bisectk-imports-{me}.{start}-b",   # alive: its maker's
            "bisectk-warm-x7q", "bisectk-imports-12-c", "bisectk-scratch-1.2-d", "other"]  # not ours
    gone = [f"bisectk-warm-{dead.pid}.5-e", f"bisectk-imports-{me}.{start + 1}-f"]  # dead; pid reused
    for name in keep + gone:
        if "warm" in name:
            (tmp_path / name).mkdir()
            (tmp_path / name / "stdout").write_text("")
        else:
            (tmp_path / name).write_text("")
    assert tmpfiles.sweep(str(tmp_path), force=True) == 2
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(keep)
    own = tmp_path / "own"
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own))
    made = Path(tmpfiles.make_dir("warm"))
    assert made.parent == own and tmpfiles.owner(made.name) == (me, start)
    assert tmpfiles.sweep(force=True) == 0 and made.is_dir()
