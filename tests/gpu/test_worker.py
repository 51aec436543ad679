"""bisectk.run.worker on CPU with plain Python scripts: warm reuse, hang/crash replacement."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from bisectk.run.executor import run_command
from bisectk.run.pool import WorkerPool
from tests.conftest import wait_until

SCRIPTS = {
    "echo.py": """
        import json, os, sys
        print("BISECTK_RESULT " + json.dumps({"pid": os.getpid(), "argv": sys.argv[1:],
              "cwd": os.getcwd(), "flavour": os.environ.get("FLAVOUR")}))
        os.write(1, b"raw fd write\\n")
        print("to stderr", file=sys.stderr)
    """,
    "hang.py": """
        import time
        time.sleep(600)
    """,
    "boom.py": """
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    """,
    "exit3.py": """
        import sys
        print("partial")
        sys.exit(3)
    """,
    "abort.py": """
        import os
        os.abort()
    """,
}


@pytest.fixture()
def scripts(tmp_path):
    for name, body in SCRIPTS.items():
        (tmp_path / name).write_text(textwrap.dedent(body))
    return tmp_path


@pytest.fixture()
def pool():
    p = WorkerPool(gpus=None, preload=(), ready_timeout=60)
    p.start()
    yield p
    p.close()


def result(raw):
    for line in raw.stdout.splitlines():
        if line.startswith("BISECTK_RESULT "):
            return json.loads(line[len("BISECTK_RESULT "):])
    return None


def test_two_requests_share_one_warm_process(pool, scripts):
    a = run_command(pool, [sys.executable, "echo.py", "--x", "1"], cwd=scripts, timeout=30)
    b = run_command(pool, [sys.executable, "echo.py", "--x", "2"], cwd=scripts, timeout=30,
                 env={"FLAVOUR": "b"})
    ra, rb = result(a), result(b)
    assert a.exit_code == 0 and b.exit_code == 0 and not a.timed_out
    assert ra["pid"] == rb["pid"] != os.getpid()
    assert ra["argv"] == ["--x", "1"] and rb["argv"] == ["--x", "2"]
    assert ra["cwd"] == str(scripts) and ra["flavour"] is None and rb["flavour"] == "b"
    assert "raw fd write" in a.stdout and "to stderr" in a.stderr
    c = run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=30)
    assert result(c)["flavour"] is None  # env overrides do not leak into the next run
    assert pool.stats["warm_runs"] == 3 and pool.stats["worker_discards"] == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        import psutil
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:
        return False


def test_hang_is_killed_and_replaced(pool, scripts):
    first = result(run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=30))["pid"]
    raw = run_command(pool, [sys.executable, "hang.py"], cwd=scripts, timeout=1.0)
    assert raw.timed_out and raw.exit_code is None and raw.duration_s < 10
    assert wait_until(lambda: not _alive(first), timeout=10)   # the hung worker is gone (ended, not waited for)
    after = result(run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=60))["pid"]
    assert after != first
    assert pool.stats["worker_discards"] == 1


def test_crash_is_reported_and_replaced(pool, scripts):
    first = result(run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=30))["pid"]
    raw = run_command(pool, [sys.executable, "boom.py"], cwd=scripts, timeout=30)
    assert raw.exit_code == 1 and not raw.timed_out
    assert "RuntimeError: CUDA error: an illegal memory access" in raw.stderr
    second = result(run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=60))["pid"]
    assert second != first  # a failed run never leaves its context to the next configuration
    raw = run_command(pool, [sys.executable, "exit3.py"], cwd=scripts, timeout=30)
    assert raw.exit_code == 3 and "partial" in raw.stdout
    raw = run_command(pool, [sys.executable, "abort.py"], cwd=scripts, timeout=30)
    assert raw.exit_code is None and raw.signal == "SIGABRT"
    third = result(run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=60))["pid"]
    assert third not in (first, second)
    # the CUDA error and the abort retired their workers; the ordinary exit 3 kept its own (issue 25:
    # a failing exit is no reason to pay a worker's start again)
    assert pool.stats["worker_discards"] == 2


def test_non_python_or_process_level_env_runs_cold(pool, scripts):
    raw = run_command(pool, ["sh", "-c", "echo cold; exit 4"], cwd=scripts, timeout=30)
    assert raw.exit_code == 4 and "cold" in raw.stdout
    raw = run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=30,
                   env={"CUDA_VISIBLE_DEVICES": "7"})
    assert raw.exit_code == 0 and result(raw)["pid"] != pool.slots[0].worker.pid
    assert pool.stats["cold_runs"] == 2


def test_the_runners_own_environment_keeps_runs_warm(scripts, monkeypatch, tmp_path):
    """The runner gives every subject PYTHONUNBUFFERED=1. On a machine whose shell does not set it
    (this suite's may: it is taken away here), that is a PYTHON* variable the warm worker was not
    started with, and each run would go cold; a worker's output is line-buffered already."""
    from bisectk.run.runner import Runner
    from bisectk.spec import load_spec
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    (scripts / "pyproject.toml").touch()
    (scripts / "s.toml").write_text('name = "w"\n[subject]\ncommand = ["python", "echo.py", "{x}"]\n'
                                    '[good]\nx = "1"\n[bad]\nx = "2"\n')
    with WorkerPool(gpus=None, preload=(), ready_timeout=60) as p:
        p.start()
        runner = Runner(load_spec(scripts / "s.toml"), executor=p)
        pids = {runner.observe({"x": x}).metrics["pid"] for x in ("1", "2")}
        assert p.stats["cold_runs"] == 0 and pids == {p.slots[0].worker.pid}, (p.stats, pids)


def test_log_dir_keeps_full_output(pool, scripts, tmp_path):
    logs = tmp_path / "logs"
    raw = run_command(pool, [sys.executable, "echo.py"], cwd=scripts, timeout=30, log_dir=logs)
    assert raw.exit_code == 0
    assert "BISECTK_RESULT" in (logs / "stdout.log").read_text()
    assert "to stderr" in (logs / "stderr.log").read_text()


def test_pool_keeps_the_executor_protocol():
    """The runner hands every executor the same thing (run/executor.py): the pool's run, alive and
    close take what the fresh-process executor's take, so either plugs in where the other did."""
    import inspect

    from bisectk.run.executor import Executor, LocalExecutor

    for name in ("run", "alive", "close"):
        want = list(inspect.signature(getattr(Executor, name)).parameters)
        assert list(inspect.signature(getattr(WorkerPool, name)).parameters) == want, name
        assert list(inspect.signature(getattr(LocalExecutor, name)).parameters) == want, name


def test_pool_runs_cold_when_workers_cannot_start(scripts):
    # an interpreter that runs a script but cannot start a worker (`-m bisectk.run.worker`): the
    # command names the workers' own Python, so only the failed starts can send it cold
    python = scripts / "python"
    python.write_text(f'#!/bin/sh\ncase "$1" in -P|-m|-c) exit 1;; esac\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    with WorkerPool(gpus=None, python=str(python), preload=(), ready_timeout=10) as p:
        raw = run_command(p, [str(python), "echo.py"], cwd=scripts, timeout=30)
        assert raw.exit_code == 0 and result(raw) is not None
        assert p.stats["cold_runs"] == 1 and p.stats.get("failed_starts", 0) >= 3


def test_hot_spare_takes_over_a_killed_worker(scripts):
    with WorkerPool(gpus=None, preload=(), ready_timeout=60) as p:
        p.start()
        import time
        deadline = time.monotonic() + 60
        while not p.slots[0].spares and time.monotonic() < deadline:
            time.sleep(0.05)
        spare_pid = p.slots[0].spares[0].pid
        first = result(run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30))["pid"]
        raw = run_command(p, [sys.executable, "hang.py"], cwd=scripts, timeout=0.5)
        assert raw.timed_out
        t = time.monotonic()
        after = result(run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30))["pid"]
        assert after != first and time.monotonic() - t < 2.0   # no imports to wait for
        assert p.slots[0].worker.pid == spare_pid
        assert p.stats["spare_promotions"] == 1 and p.stats["recovery_s"] == [0.0]


def _recoveries(scripts, spares: int, fork: bool) -> list[float]:
    """Two hangs in a row on one slot whose workers import for 1.5 s, then a run: the slot's
    recovery after each hang (0.0: a spare was ready), and how long the run after them took."""
    import time

    (scripts / "slow_import.py").write_text("import time\ntime.sleep(1.5)\n")   # a worker's imports
    with WorkerPool(gpus=None, preload=("slow_import",), ready_timeout=60, spares=spares,
                    env={"PYTHONPATH": str(scripts)}, fork=fork) as p:
        p.start()
        deadline = time.monotonic() + 60
        while len(p.slots[0].spares) < spares and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(p.slots[0].spares) == spares
        for _ in range(2):
            assert run_command(p, [sys.executable, "hang.py"], cwd=scripts, timeout=0.3).timed_out
        t = time.monotonic()
        assert result(run_command(p, [sys.executable, "echo.py"], cwd=scripts, timeout=30))
        assert (p.stats["forked_starts"] > 0) == fork
        return [*p.stats["recovery_s"], round(time.monotonic() - t, 3)]


def test_two_spares_cover_two_hangs_in_a_row(scripts):
    """Workers started fresh (each imports for itself): with two spares a second hang right after
    the first finds a started worker too; with one, the slot waits for a new one to import."""
    two = _recoveries(scripts, 2, fork=False)
    assert two[:2] == [0.0, 0.0] and two[2] < 1.0          # both hangs met a spare
    one = _recoveries(scripts, 1, fork=False)
    assert one[0] == 0.0 and one[1] > 0.5                  # the second waited for a start


def test_workers_forked_from_the_template_replace_a_hang_without_the_imports(scripts):
    """Forked from a template that imported once (run/template.py), a replacement is ready within
    the time a hang takes to be called: one spare covers two hangs in a row, where a fresh start
    made the slot wait for the whole import (the test above)."""
    one = _recoveries(scripts, 1, fork=True)
    assert one[0] == 0.0 and one[1] < 0.5 and one[2] < 1.0, one


def test_default_spares_follow_gpu_visibility(monkeypatch):
    from bisectk.run import poolworker as poolmod
    monkeypatch.setattr(poolmod.Path, "exists", lambda self: str(self).startswith("/dev/nvidia"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert poolmod.default_spares() == (4, 5)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert poolmod.default_spares() == (1, 1)
    monkeypatch.setattr(poolmod.Path, "exists", lambda self: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert poolmod.default_spares() == (1, 1)


def test_a_retirement_raises_the_spares_kept(scripts):
    """A slot whose worker hung keeps one more spare behind it (up to max_spares): the hangs of a
    hang pair's ablation come in bursts, and each replacement costs the imports."""
    import time

    with WorkerPool(gpus=None, preload=(), ready_timeout=60, spares=1, max_spares=2) as p:
        p.start()
        slot = p.slots[0]
        deadline = time.monotonic() + 60
        while len(slot.spares) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(slot.spares) == 1 and slot.want == 1
        for _ in range(2):
            assert run_command(p, [sys.executable, "hang.py"], cwd=scripts, timeout=0.3).timed_out
            assert slot.want == 2                          # raised once, then held at max_spares
        deadline = time.monotonic() + 60
        while len(slot.spares) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(slot.spares) == 2 and slot.worker is not None


def test_each_run_imports_its_own_tree_fresh(tmp_path):
    """Nothing of one hybrid or commit leaks into the next: modules, sys.path, cwd, environment."""
    main = ("import json, os, sys, helper\n"
            "print('BISECTK_RESULT ' + json.dumps({'value': helper.VALUE, 'cwd': os.getcwd(),"
            " 'path0': sys.path[0], 'leak': os.environ.get('LEAK'), 'mods': sorted(m for m in sys.modules"
            " if m.startswith('helper'))}))\n"
            "os.environ['LEAK'] = 'set by the run'\n")
    trees = []
    for name, value in (("a", 111), ("b", 222)):
        d = tmp_path / name
        d.mkdir()
        (d / "main.py").write_text(main)
        (d / "helper.py").write_text(f"VALUE = {value}\n")
        trees.append(d)
    with WorkerPool(gpus=None, preload=(), ready_timeout=60) as p:
        seen = [result(run_command(p, [sys.executable, "main.py"], cwd=d, timeout=30)) for d in (*trees, trees[0])]
        assert [s["value"] for s in seen] == [111, 222, 111]
        assert [s["cwd"] for s in seen] == [str(trees[0]), str(trees[1]), str(trees[0])]
        assert all(s["leak"] is None for s in seen) and all(s["mods"] == ["helper"] for s in seen)
        # the same path rewritten with a source of the same size, within the same second
        (trees[0] / "helper.py").write_text("VALUE = 999\n")
        assert result(run_command(p, [sys.executable, "main.py"], cwd=trees[0], timeout=30))["value"] == 999
        assert len({s["path0"] for s in seen}) == 2 and p.stats["worker_discards"] == 0


def test_warm_runs_follow_progress(tmp_path):
    from bisectk.run.progress import FixedWatch, ProgressWatch, Timeline
    from tests.conftest import ROOT
    jit = str(ROOT / "tests" / "fixtures" / "jit.py")
    with WorkerPool(gpus=None, preload=(), ready_timeout=60) as p:
        rec = FixedWatch(60)
        good = run_command(p, [sys.executable, jit, "--startup", "0.2"], cwd=tmp_path, timeout=60, watch=rec)
        tl = Timeline.from_list(good.timeline)
        assert good.exit_code == 0 and [k for k, _ in tl.points][-1] == "phase:synchronized"
        hung = run_command(p, [sys.executable, jit, "--startup", "0.2", "--hang", "1"], cwd=tmp_path, timeout=60,
                     watch=ProgressWatch(tl, 60.0, 1.0))
        assert hung.timed_out and hung.duration_s - good.duration_s <= 1.5
        assert "hung after 'launch'" in hung.stalled
