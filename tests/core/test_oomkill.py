"""A subject the OOM killer ended is told from one another process SIGKILLed, where the machine can
tell (run/oomkill.py): the cgroup's `oom_kill` counter read before and after the run, the kernel
log's records of the run's time. Before, both read `crash (SIGKILL)`, and a kernel that ran the
host out of memory sent its user looking for a bug in the kernel's code.

A real OOM kill needs a cgroup with a memory limit, which a test cannot make: the counter is a file
of the test's own (`oom_counter`, the seam), which the subject itself moves before it kills itself;
a real SIGKILL subject, with the machine's own counter, gives the words of a kill that was not
shown to be the OOM killer's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bisectk.run.classify import Judge, classify_run, recognise
from bisectk.run.executor import LocalExecutor, run_command
from bisectk.run.oomkill import OomWatch, counter_file
from bisectk.run.pool import WorkerPool
from bisectk.run.process import RawRun, run_process

OOM = "killed: out of memory (the OOM killer)"
NOT_KNOWN = "killed by SIGKILL (not by bisectk: out of memory? another process?)"
NOT_OOM = "killed by SIGKILL (not by bisectk, nor by the OOM killer: another process?)"

# moves the (fake) cgroup counter as the kernel's OOM killer would, then dies as its victim does
OOM_SUBJECT = ("import os, signal, sys\n"
               "open(sys.argv[1], 'w').write('oom 1\\noom_kill 1\\n')\n"
               "os.kill(os.getpid(), signal.SIGKILL)\n")
KILLED_SUBJECT = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


def _counter(tmp_path: Path) -> Path:
    path = tmp_path / "memory.events"
    path.write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    return path


def test_the_counter_says_killed_not_killed_or_nothing(tmp_path):
    counter = _counter(tmp_path)
    watch = OomWatch(counter=str(counter), kmsg=None)
    counter.write_text("oom 2\noom_kill 1\n")
    assert watch.killed(12345) is True
    assert OomWatch(counter=str(counter), kmsg=None).killed(12345) is False    # did not move
    assert OomWatch(counter=str(tmp_path / "none"), kmsg=None).killed(12345) is None


@pytest.mark.parametrize("version", ["v2", "v1", "v1-in-container", "unseen"])
def test_the_counter_is_found_from_the_processs_cgroup(tmp_path, version):
    proc, cg = tmp_path / "proc", tmp_path / "cg"
    (proc / "42").mkdir(parents=True)
    (proc / "self").mkdir()
    line = {"v2": "0::/user.slice/run.scope", "v1": "4:memory:/user.slice/run.scope",
            "v1-in-container": "4:memory:/docker/abc", "unseen": "4:memory:/elsewhere"}[version]
    (proc / "42" / "cgroup").write_text(f"9:name=systemd:/\n{line}\n")
    fstype, opts, name = (("cgroup2", "rw", "memory.events") if version == "v2"
                          else ("cgroup", "rw,memory", "memory.oom_control"))
    root = "/docker/abc" if version == "v1-in-container" else "/"
    (proc / "self" / "mountinfo").write_text(
        f"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw\n"
        f"35 31 0:32 {root} {cg} rw,relatime - {fstype} {fstype} {opts}\n")
    where = cg if version == "v1-in-container" else cg / "user.slice" / "run.scope"
    where.mkdir(parents=True)
    (where / name).write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    found = counter_file(42, str(proc))
    assert found == (None if version == "unseen" else str(where / name))


def test_the_words_claim_the_oom_killer_only_with_evidence():
    judge = Judge([])
    for oom, words in ((True, OOM), (False, NOT_OOM), (None, NOT_KNOWN)):
        run = classify_run(RawRun(started=True, signal="SIGKILL", oom=oom), judge)
        assert (run.signature, run.failed) == (words, ("SIGKILL",))
        assert recognise(run.signature) is None     # the host's memory, not `CUDA: out of memory`
    shell = classify_run(RawRun(started=True, exit_code=137, oom=True), judge)
    assert shell.signature == f"exit 137 = 128+SIGKILL: {OOM}" and shell.failed == ("exit 137 = 128+SIGKILL",)
    assert classify_run(RawRun(started=True, exit_code=137), judge).signature == "exit 137 = 128+SIGKILL"


def test_a_cpp_allocation_that_failed_is_named_in_the_crash():
    """ulimit -v / RLIMIT_AS: a C++ `new` throws std::bad_alloc, uncaught, and the process aborts."""
    text = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
    run = classify_run(RawRun(started=True, signal="SIGABRT", stderr=text), Judge([]))
    assert run.signature == "SIGABRT: std::bad_alloc (a C++ allocation failed)" and run.failed == ("SIGABRT",)


def _signature(executor, tmp_path, script, *args):
    (tmp_path / "s.py").write_text(script)
    raw = run_command(executor, [sys.executable, "s.py", *args], cwd=tmp_path, timeout=60)
    return classify_run(raw, Judge([])).signature


def test_a_run_the_oom_killer_ended_says_so_cold_and_warm(tmp_path):
    counter = _counter(tmp_path)
    raw = run_process([sys.executable, "-c", OOM_SUBJECT, str(counter)], timeout=60, oom_counter=str(counter))
    assert classify_run(raw, Judge([])).signature == OOM
    cold_killed = _signature(LocalExecutor(), tmp_path, KILLED_SUBJECT)
    assert cold_killed in (NOT_KNOWN, NOT_OOM)      # this machine's counter: unseen, or seen unmoved
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as pool:
        pool.oom_counter = str(_counter(tmp_path))
        assert _signature(pool, tmp_path, OOM_SUBJECT, str(counter)) == OOM
        pool.oom_counter = None
        assert _signature(pool, tmp_path, KILLED_SUBJECT) == cold_killed
        assert pool.stats["cold_runs"] == 0, pool.stats


def test_a_ctrl_c_during_the_start_leaves_no_kernel_log_descriptor_open(tmp_path, monkeypatch):
    """The watch opens the kernel log before the subject starts; a KeyboardInterrupt raised by the
    start itself went past the `except (OSError, ValueError)` that closes it, and every such
    Ctrl-C (in a long-lived caller: a warm worker's parent, a test run) left one descriptor open."""
    import os

    import bisectk.run.process as P
    log = tmp_path / "kmsg"
    log.write_text("")
    real = P.OomWatch
    monkeypatch.setattr(P, "OomWatch", lambda counter=None: real(counter=counter, kmsg=str(log)))
    monkeypatch.setattr(P, "_start_on_spare", lambda *a, **k: None)

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(P, "start_contained", interrupted)
    def open_on_log() -> int:
        """This process's descriptors open on the stand-in kernel log (not a count of all of them:
        other threads of the test process open and close their own meanwhile)."""
        n = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                n += os.readlink(f"/proc/self/fd/{fd}") == str(log)
            except OSError:     # closed since the listing
                pass
        return n
    for _ in range(3):
        with pytest.raises(KeyboardInterrupt):
            run_process([sys.executable, "-c", "pass"], cwd=tmp_path, timeout=10)
    assert open_on_log() == 0
