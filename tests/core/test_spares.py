"""Spare supervisors (run/spares.py): started while a run goes on, taken by the next run."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil

from bisectk.run.process import run_process
from bisectk.run.spares import SPARES

PARENT = [sys.executable, "-c", "import os, sys; print(os.getppid()); print(os.getcwd()); print('e', file=sys.stderr); sys.exit(4)"]


def _ready_spares() -> list[int]:
    run_process(["true"])           # a run tops the spares up
    time.sleep(0.3)                 # and they have started
    pids = SPARES.pids()
    assert pids, "a run leaves a spare supervisor for the next one"
    return pids


def test_the_next_run_starts_on_a_spare_with_its_own_output_cwd_and_status(tmp_path):
    spares = _ready_spares()
    raw = run_process(PARENT, cwd=tmp_path)
    assert raw.started and raw.exit_code == 4
    parent, cwd = raw.stdout.split()
    assert int(parent) in spares            # its supervisor was one of the spares
    assert os.path.realpath(cwd) == os.path.realpath(tmp_path)
    assert raw.stderr == "e\n"
    assert int(parent) in SPARES.pids()     # its run ended by itself, leaving nothing: it serves again


ENV_AND_PLACE = [sys.executable, "-c", "import os; print(os.getppid()); print(os.getcwd()); print(os.environ.get('ONLY_FIRST', '-'))"]


def test_a_spare_serves_the_next_run_with_that_runs_cwd_environment_and_output(tmp_path):
    _ready_spares()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_process(ENV_AND_PLACE, cwd=tmp_path / "a", env={"ONLY_FIRST": "1"})
    second = run_process(ENV_AND_PLACE, cwd=tmp_path / "b")
    (p1, cwd1, env1), (p2, cwd2, env2) = first.stdout.split(), second.stdout.split()
    assert p1 == p2                         # one supervisor, two runs
    assert (os.path.basename(cwd1), env1) == ("a", "1")
    assert (os.path.basename(cwd2), env2) == ("b", "-")     # nothing of the first run carried over
    assert psutil.Process(int(p1)).cwd() == "/"             # idle, it holds no run's directory


def _served_again(argv, **kw) -> tuple[object, bool]:
    """(the run, whether its supervisor went back to the spares)."""
    _ready_spares()
    # the supervisor's pid is printed (one flushed line) before the subject does anything: a subject that
    # signals its supervisor may itself be ended before it could print afterwards
    raw = run_process([*argv[:-1], "import os; print('SUP', os.getppid(), flush=True); " + argv[-1]], **kw)
    sup = next((int(ln.split()[1]) for ln in raw.stdout.splitlines() if ln.startswith("SUP ")), None)
    time.sleep(0.3)
    return raw, sup is not None and sup in SPARES.pids() and _alive(sup)


def test_a_spare_whose_run_left_a_process_or_hung_or_was_signalled_is_not_served_again():
    ok, again = _served_again([sys.executable, "-c", "pass"])
    assert ok.exit_code == 0 and again          # the control: a clean run is served again
    left, again = _served_again([sys.executable, "-c", "import subprocess; subprocess.Popen(['sleep', '30'])"])
    assert left.leftovers == 1 and not again
    sigterm, again = _served_again([sys.executable, "-c", "import os, signal; os.kill(os.getppid(), signal.SIGTERM)"])
    assert not again
    for pid in SPARES.pids():                   # told to end while idle: the next run starts elsewhere
        os.kill(pid, signal.SIGTERM)
    after = run_process(PARENT)
    assert after.started and after.exit_code == 4 and after.stderr == "e\n"
    hung = run_process([sys.executable, "-c", "import os, time; print('SUP', os.getppid(), flush=True); time.sleep(30)"],
                       timeout=0.5)
    sup = int(hung.stdout.split()[1])
    time.sleep(0.3)
    assert hung.timed_out and sup not in SPARES.pids() and not _alive(sup)


def test_a_hang_on_a_spare_is_ended_with_its_tree():
    import uuid

    from tests.conftest import wait_until
    _ready_spares()
    # a duration of this test's own: another test's (or session's) `sleep 300` orphaned to init
    # for a moment is not this run's tree
    nap = f"300.{uuid.uuid4().int % 10**9:09d}"
    raw = run_process(["sh", "-c", f"sleep {nap} & sleep {nap}"], timeout=0.3)
    assert raw.timed_out and raw.duration_s < 2.0

    def left():     # killed ones are gone once the kernel has ended them (a wait, not a sleep(0.2))
        return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", nap]]
    assert wait_until(lambda: not left(), timeout=30), left()


def test_a_spare_that_died_while_it_waited_is_passed_over():
    for pid in _ready_spares():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    raw = run_process(PARENT)
    assert raw.started and raw.exit_code == 4 and raw.stderr == "e\n"


def test_a_subject_that_cannot_start_on_a_spare_is_reported(tmp_path):
    _ready_spares()
    raw = run_process(["true"], cwd=tmp_path / "missing")
    assert not raw.started and f"its working directory {tmp_path / 'missing'} does not exist" in raw.error, raw.error
    _ready_spares()
    raw = run_process([str(tmp_path / "no-such-program")])
    assert not raw.started and "No such file or directory" in raw.error, raw.error


def test_spares_end_with_the_process_that_made_them_even_when_it_is_killed():
    script = textwrap.dedent("""
        import sys, time
        from bisectk.run.process import run_process
        from bisectk.run.spares import SPARES
        run_process(["true"]); run_process(["true"])
        time.sleep(0.3)
        print(" ".join(map(str, SPARES.pids())), flush=True)
        if sys.argv[1] == "kill":
            time.sleep(60)
    """)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    for how in ("exit", "kill"):
        proc = subprocess.Popen([sys.executable, "-c", script, how], stdout=subprocess.PIPE, text=True, env=env)
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids
        if how == "kill":
            proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids), how


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_spare_stopped_while_it_waited_is_passed_over():
    spares = _ready_spares()
    for pid in spares:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(0.1)
    raw = run_process(PARENT)
    assert raw.started and raw.exit_code == 4 and int(raw.stdout.split()[0]) not in spares
    SPARES.close()      # what is still idle ends, a stopped one too (killed), as at exit
    assert not any(_alive(p) for p in spares)


def test_a_relative_cwd_is_the_callers_on_every_run_whichever_supervisor_serves_it(tmp_path, monkeypatch):
    """A relative cwd is read from the caller's directory, as subprocess reads it. A spare that
    served a run waits in / for the next, and a relative cwd handed to it was read from there:
    every other run of `run_process(argv, cwd="sub")` failed 'its working directory sub does not
    exist' (the runs on a fresh spare or supervisor, started in the caller's directory, ran)."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    runs = [run_process(ENV_AND_PLACE, cwd="sub") for _ in range(4)]
    assert [(r.started, r.error) for r in runs] == [(True, "")] * 4
    assert {os.path.realpath(r.stdout.split()[1]) for r in runs} == {os.path.realpath(tmp_path / "sub")}
    assert len({r.stdout.split()[0] for r in runs}) < 4      # some ran on a spare served again
