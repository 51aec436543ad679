"""Warm workers forked from a template (run/template.py, run/forked.py): as contained as fresh
ones, as fresh at each run, and what a run does to the template is caught.

The preload here is a module of the test's own that takes a while to import (as torch does), so a
worker that imported for itself and one forked from the template are told apart by time, and by
the pool's counts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bisectk.run.executor import Job, run_command
from bisectk.run.pool import WorkerPool
from bisectk.run.progress import FixedWatch
from tests.conftest import wait_until
from tests.core.test_containment import HANG_TREE, kill_marked, marker, wait_count, with_marker

ROOT = str(Path(__file__).resolve().parents[2])

HOSTILE = """import os, signal, sys, time
# a daemon that outlives everything, then the run's parent (the template) is dealt with
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", sys.argv[2]])
    os._exit(0)
time.sleep(0.2)
os.kill(os.getppid(), signal.SIGKILL if sys.argv[1] == "kill" else signal.SIGSTOP)
time.sleep(0.5)
print("BISECTK_RESULT {}")
"""

ECHO = "import json, os\nprint('BISECTK_RESULT ' + json.dumps({'pid': os.getpid(), 'ppid': os.getppid()}))\n"


@pytest.fixture
def scripts(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "heavy.py").write_text("import time\ntime.sleep(1.0)\nLOADED = True\n")
    (tmp_path / "echo.py").write_text(ECHO)
    (tmp_path / "hostile.py").write_text(HOSTILE)
    (tmp_path / "tree.py").write_text(HANG_TREE)
    return tmp_path


def _pool(scripts: Path, **kw) -> WorkerPool:
    return WorkerPool(gpus=None, preload=("heavy",), ready_timeout=60, env={"PYTHONPATH": f"{scripts}:{ROOT}"}, **kw)


def _forked_serving(p: WorkerPool, scripts: Path) -> None:
    """Retire the pool's one fresh worker (its first), so the runs after are made in forked ones:
    a run that crashes its worker, until every worker and spare is a forked one."""
    from bisectk.run.forked import Forked
    (scripts / "segv.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    end = time.monotonic() + 60
    while time.monotonic() < end:
        with p.cond:
            ready = all(s.worker is not None and len(s.spares) >= s.want for s in p.slots)
            kinds = [isinstance(w, Forked) for s in p.slots for w in (s.worker, *s.spares) if w]
        if ready and all(kinds):
            return
        if ready:
            assert p.run(Job([sys.executable, "segv.py"], cwd=scripts), FixedWatch(60)).signal == "SIGSEGV"
        time.sleep(0.05)
    raise AssertionError("the pool never served from forked workers alone")


def _result(raw) -> dict:
    return json.loads(raw.result.split(" ", 1)[1])


def test_workers_are_forked_children_of_one_template_that_imported_once(scripts):
    """The pool's first worker starts fresh beside the template (the first run never waits for a
    template that might refuse); every other worker is forked from the template."""
    with _pool(scripts, slots=2, spares=1) as p:
        p.start()
        end = time.monotonic() + 60
        while time.monotonic() < end:
            with p.cond:
                if all(s.worker is not None and s.spares for s in p.slots):
                    break
            time.sleep(0.05)
        template = p.templates[None]
        with p.cond:
            workers = [w for s in p.slots for w in (s.worker, *s.spares)]
        parents = [psutil.Process(w.pid).ppid() == template.pid for w in workers]
        assert len(parents) == 4 and parents.count(False) <= 1, parents   # at most the first is fresh
        assert p.stats["forked_starts"] >= 3 and p.stats["cold_runs"] == 0
        assert template.ready_info["preload"]["heavy"] >= 1.0   # the one import, in the template
        raws = [run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30) for _ in range(3)]
        assert all(r.exit_code == 0 for r in raws)


@pytest.mark.parametrize("mode, words", [("kill", "was killed"), ("stop", "was stopped")])
def test_a_run_that_kills_or_stops_the_template_is_unresolved_leaves_nothing_and_the_pool_goes_on(scripts, mode, words):
    m = marker()
    with _pool(scripts, spares=1) as p:
        p.start()
        _forked_serving(p, scripts)
        first = p.templates[None]
        raw = p.run(Job([sys.executable, "hostile.py", mode, m], cwd=scripts), FixedWatch(60))
        assert not raw.started and "supervisor (the template it was forked from)" in raw.error, raw
        assert words in raw.error and "cannot be judged" in raw.error, raw.error
        assert wait_count(m, 0, timeout=5) == 0
        # the template is ended, with its tree, by the refill that follows (a thread of the pool's):
        # within seconds, not necessarily before the run is reported (a loaded machine lags)
        assert first.contained.proc.wait(timeout=15) is not None
        after = run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=60)
        assert after.exit_code == 0 and _result(after)["ppid"] != first.pid   # a new template serves
    kill_marked(m)


def test_a_hung_forked_run_and_every_kind_of_descendant_end_with_it(scripts):
    m = marker()
    with _pool(scripts, spares=1) as p:
        p.start()
        _forked_serving(p, scripts)
        raw = run_command(p, [sys.executable, "tree.py", m], cwd=scripts, timeout=2)
        assert raw.timed_out
        assert wait_count(m, 0, timeout=5) == 0
        assert run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30).exit_code == 0
    kill_marked(m)


DRIVER = """
import sys
from bisectk.run.executor import run_command
from bisectk.run.pool import WorkerPool
pool = WorkerPool(preload=("heavy",)).start()
run_command(pool, [sys.executable, sys.argv[1], sys.argv[2]], timeout=120)
"""


def test_the_template_and_its_workers_die_with_bisectk(scripts):
    m = marker()
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(scripts / "tree.py"), m],
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{scripts}:{ROOT}",
                                   "XDG_CACHE_HOME": str(scripts / "cache")})
    try:
        # the driver, the worker (tree.py runs in it) and tree.py's four children carry the marker
        assert wait_count(m, 6, timeout=60) == 6
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        assert wait_count(m, 0, timeout=5) == 0
        assert [q for q in with_marker("bisectk.run.template") if str(scripts) in q.cwd()] == []
    finally:
        driver.kill()
        kill_marked(m)


def test_closing_the_pool_ends_the_template_and_every_worker(scripts):
    with _pool(scripts, slots=2, spares=1) as p:
        p.start()
        assert run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30).exit_code == 0
        template = p.templates[None]
        pids = [template.pid, template.contained.proc.pid] + [w.pid for s in p.slots for w in (s.worker, *s.spares) if w]
    # a spare still importing is killed in the background, not waited for: the test waits for
    # them to be gone (it slept 0.2 s, which a loaded machine's kill and exit may outlast)
    def alive():
        found = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
                        found.append(pid)
            except OSError:
                pass
        return found
    wait_until(lambda: not alive(), timeout=30)
    assert alive() == []


def test_a_template_whose_preload_left_a_thread_running_is_not_forked(scripts):
    """A forked worker would lack the thread a fresh worker has: the pool starts fresh ones."""
    (scripts / "threaded.py").write_text("import threading, time\n"
                                         "threading.Thread(target=time.sleep, args=(300,), daemon=True).start()\n")
    notes = []
    with WorkerPool(gpus=None, preload=("threaded",), ready_timeout=60, spares=1, on_note=notes.append,
                    env={"PYTHONPATH": f"{scripts}:{ROOT}"}) as p:
        p.start()
        raw = run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30)
        end = time.monotonic() + 60     # the first worker is fresh anyway: wait for the spare's turn
        while not any("thread(s) running" in n for n in notes) and time.monotonic() < end:
            time.sleep(0.1)
        assert raw.exit_code == 0 and p.stats["forked_starts"] == 0
        assert _result(raw)["ppid"] != p.templates[None].pid
    assert any("thread(s) running" in n for n in notes), notes


def test_a_template_that_initialised_the_cuda_driver_is_not_forked(monkeypatch, tmp_path):
    """Any CUDA call initialises the driver (torch.cuda.is_available() does), and a forked worker
    of such a process never makes its context: the template refuses, naming the device file it
    holds. (No GPU here: the driver's files are played by /dev/null.)"""
    from bisectk.run import template
    from bisectk.run.isolation import Baseline

    baseline = Baseline()
    assert template.unfit(baseline) == ""
    monkeypatch.setattr(template, "DRIVER_FILES", ("/dev/null",))
    with open("/dev/null", "rb"):
        assert "the CUDA driver was initialised in the template (it holds /dev/null open)" in template.unfit(baseline)


def test_the_baseline_never_asks_the_cuda_driver_in_a_process_without_a_context(monkeypatch):
    """The template reads the same baseline as a worker; asking torch.cuda.is_available() there
    initialised the driver on an H200 and no forked worker came up."""
    import types

    from bisectk.run import torchstate

    def driver():
        raise AssertionError("the CUDA driver was asked")
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: False, is_available=driver))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert torchstate.cuda_ready() is False


def test_workers_that_a_template_forks_but_never_come_up_are_replaced_by_fresh_ones(scripts):
    """The backstop: whatever the checks miss, a forked worker not ready within fork_ready_s stops
    the forking, and the slot gets a worker that imported for itself."""
    (scripts / "forkstall.py").write_text("import os, time\nos.register_at_fork(after_in_child=lambda: time.sleep(300))\n")
    notes = []
    with WorkerPool(gpus=None, preload=("forkstall",), ready_timeout=60, spares=1, fork_ready_s=2, on_note=notes.append,
                    env={"PYTHONPATH": f"{scripts}:{ROOT}"}) as p:
        t = time.monotonic()
        raw = run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=60)
        assert raw.exit_code == 0 and p.stats["cold_runs"] == 0, raw
        assert time.monotonic() - t < 20
        assert _result(raw)["ppid"] != p.templates[None].pid
        while not any("was not ready within 2 s" in n for n in notes) and time.monotonic() - t < 30:
            time.sleep(0.1)          # the spare's fork is given up after 2 s
        for _ in range(2):           # a hang: the spare (a fresh worker now) takes over
            assert run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=60).exit_code == 0
    assert any("was not ready within 2 s" in n for n in notes), notes
