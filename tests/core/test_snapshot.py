"""Hang snapshots (bisectk/run/snapshot.py, run/stacks.py, bisectk/stuck.py) on real hung processes."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisectk.procstat import psutil
from bisectk.run import readers, snapshot, stacks
from bisectk.stuck import ON_CPU, Group, Snapshot, same_place

HANGS = Path(__file__).resolve().parents[1] / "fixtures" / "hangs"


def _started(argv, marker="BISECTK_PHASE launch"):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()      # the subject says when both threads hold their first lock
    assert marker in line, line
    time.sleep(0.2)                 # and then they block on the second
    return p


def _snapshot_of(argv, budget_s: float = 20):
    """The snapshot of a subject started as `_started` starts it, which is then ended."""
    p = _started(argv)
    try:
        return snapshot.take(p.pid, budget_s=budget_s)
    finally:
        p.kill()
        p.wait()


@pytest.fixture
def hung_python():
    p = _started([sys.executable, str(HANGS / "lock_order.py")])
    yield p
    p.kill()
    p.wait()


@pytest.mark.skipif(readers.which("py-spy") is None, reason="py-spy is not installed")
def test_python_deadlock_names_both_waiting_lines(hung_python):
    snap = snapshot.take(hung_python.pid, budget_s=20)
    assert "py-spy" in snap.tools, snap.notes
    by_role = {g.role: g for g in snap.host}
    assert by_role["producer"].place == "lock_order.py:12 producer"
    assert by_role["consumer"].place == "lock_order.py:19 consumer"
    assert by_role["producer"].instruction.startswith("with second")
    assert by_role["producer"].wait == by_role["consumer"].wait == "lock"
    assert by_role["MainThread"].wait == "join"
    assert hung_python.poll() is None, "a snapshot must leave the process as it was"
    again = Snapshot.from_dict(snap.to_dict())
    assert again == snap
    assert same_place(snap, again) is True


@pytest.mark.skipif(readers.which("py-spy") is None, reason="py-spy is not installed")
def test_threads_at_the_same_place_are_one_group(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(
        "import threading\nev = threading.Event()\n"
        "def consumer():\n    ev.wait()\n"
        "ts = [threading.Thread(target=consumer, name=f'consumer-{i}') for i in range(3)]\n"
        "[t.start() for t in ts]\nprint('BISECTK_PHASE launch', flush=True)\n[t.join() for t in ts]\n")
    snap = _snapshot_of([sys.executable, str(script)])
    g = next(g for g in snap.host if g.place == "pool.py:4 consumer")
    assert g.count == 3 and g.wait == "event wait"
    assert g.role == "consumer-0, consumer-1, consumer-2"
    assert snap.headline() == "3 threads waiting at pool.py:4 consumer (event wait)"


def test_native_deadlock_is_native_stacks_or_one_line_why_not(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "deadlock"
    subprocess.run([cc, "-g", "-O0", "-pthread", str(HANGS / "deadlock.c"), "-o", str(exe)], check=True)
    snap = _snapshot_of([str(exe)])
    if readers.which("gdb") is None:
        assert snap.groups == () and len(snap.notes) == 1 and "gdb is not installed" in snap.notes[0]
        return
    places = {g.place: g for g in snap.host}
    assert "deadlock.c:9 producer" in places and "deadlock.c:15 consumer" in places, places
    assert places["deadlock.c:9 producer"].wait == "lock"
    assert any(g.wait == "join" and g.place.endswith(" main") for g in snap.host)


@pytest.mark.skipif(readers.which("py-spy") is None, reason="py-spy is not installed")
def test_processes_of_the_tree_left_unread_are_said(tmp_path):
    """A snapshot reads at most MAX_PROCESSES of the hung tree: a multiprocessing pool of eight
    children showed five of them and said nothing of the other three, as if they were not there."""
    script = tmp_path / "pool.py"
    script.write_text(
        "import multiprocessing as m\n"
        "if __name__ == '__main__':\n"
        "    ctx = m.get_context('fork'); ev = ctx.Event()\n"
        "    ps = [ctx.Process(target=ev.wait) for _ in range(8)]\n"
        "    [p.start() for p in ps]\n    print('BISECTK_PHASE launch', flush=True)\n    [p.join() for p in ps]\n")
    p = _started([sys.executable, str(script)])
    try:
        snap = snapshot.take(p.pid, budget_s=20)
    finally:
        for child in psutil.Process(p.pid).children(recursive=True):
            child.kill()
        p.kill()
        p.wait()
    assert len({g.scope for g in snap.host}) == snapshot.MAX_PROCESSES
    assert any("3 more processes" in n and "not read" in n for n in snap.notes), snap.notes


def test_a_snapshot_out_of_time_says_so_and_raises_nothing(hung_python):
    snap = snapshot.take(hung_python.pid, budget_s=0.0)
    assert snap.groups == ()
    assert snap.notes and "time" in snap.notes[0]
    assert hung_python.poll() is None


def test_a_process_already_gone():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    snap = snapshot.take(p.pid, budget_s=5)
    assert snap.groups == () and snap.notes == ("the hung process was already gone",)


def test_library_frames_are_not_the_subjects():
    assert stacks.python_own("/home/u/kernels/pipeline.py")
    assert not stacks.python_own("/usr/lib/python3.11/threading.py")
    assert not stacks.python_own("/venv/lib/python3.12/site-packages/torch/cuda/__init__.py")
    assert not stacks.python_own(stacks.BISECTK_DIR + "/run/worker.py")
    assert not stacks.python_own("<frozen runpy>")


def test_gdb_text_is_read_into_threads():
    text = """Thread 2 (Thread 0x7f (LWP 12) "kern"):
#0  futex_wait (private=0, expected=2, futex_word=0x5 <a>) at ../sysdeps/nptl/futex-internal.h:146
#1  0x00007f in ___pthread_mutex_lock (mutex=0x5 <a>) at ./nptl/pthread_mutex_lock.c:93
#2  0x0000556 in worker (x=0x0) at /src/k.c:5
#3  0x00007f in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
Thread 1 (Thread 0x7e (LWP 11) "kern"):
#0  0x00007f in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x0000556 in main () at /src/k.c:9
"""
    threads = stacks.native_threads(text)
    assert [t[0] for t in threads] == ["kern (LWP 12)", "kern (LWP 11)"]
    groups = stacks.group_threads(threads, "p")
    assert [(g.place, g.wait) for g in groups] == [("k.c:5 worker", "lock"), ("k.c:9 main", "sleep")]


def test_a_native_thread_blocked_in_glibcs_read_is_an_io_wait():
    """gdb names glibc's entry points by their internal names (`__GI___libc_read`, `__GI___wait4`):
    a C program blocked in read() on a pipe was shown with no kind of wait at all ('-')."""
    text = """Thread 1 (Thread 0x7e (LWP 11) "nat"):
#0  0x00007f in __GI___libc_read (fd=3, buf=0x7ffc, nbytes=8) at ../sysdeps/unix/sysv/linux/read.c:26
#1  0x0000556 in blockread () at /src/nat.c:7
#2  0x0000556 in main (argc=2, argv=0x7ffc) at /src/nat.c:11
Thread 1 (Thread 0x7d (LWP 12) "sh"):
#0  0x00007f in __GI___wait4 (pid=-1, stat_loc=0x7ffc, options=0, usage=0x0) at ../sysdeps/unix/sysv/linux/wait4.c:30
#1  0x0000556 in waitcmd () at /src/sh.c:3
"""
    groups = stacks.group_threads(stacks.native_threads(text), "p")
    assert [(g.place, g.wait) for g in groups] == [("nat.c:7 blockread", "I/O wait"), ("sh.c:3 waitcmd", "I/O wait")]


def test_same_place_tells_two_hangs_apart():
    a = Snapshot(groups=(Group("consumer", 2, "p.py:10 consumer", wait="lock"),))
    b = Snapshot(groups=(Group("consumer", 2, "p.py:31 drain", wait="lock"),))
    assert same_place(a, a) is True
    assert same_place(a, b) is False
    assert same_place(a, Snapshot(notes=("no gdb",))) is None


def test_a_busy_thread_read_on_and_off_the_cpu_is_one_place():
    """A hang that spins (a busy loop that prints) is read at one line, its thread on the CPU at one
    read and between time slices at the next: whether it held the CPU at that instant is no wait of
    its own. The bad endpoint and the culprit were called 'two different hangs' at the same line."""
    on = Snapshot(groups=(Group("MainThread", 1, "subj.py:56 <module>", wait="running (on CPU)"),))
    off = Snapshot(groups=(Group("MainThread", 1, "subj.py:56 <module>", wait=""),))
    assert same_place(on, off) is True
    assert same_place(on, Snapshot(groups=(Group("MainThread", 1, "subj.py:56 <module>", wait="lock"),))) is False


def test_a_thread_spinning_over_several_lines_is_one_place():
    """A spin loop of three lines (`while True:` / `n += 1` / `if n < 0:`) is read at whichever line
    it executes when the watchdog fires: the bad endpoint at one and the culprit at another were
    'two different hangs' on every ablation, and the culprit's own re-run was listed as one more
    hang. A thread that waits on nothing is at its function; one that waits is still at its line."""
    def at(place, wait):
        return Snapshot(groups=(Group("MainThread", 1, place, wait=wait),))
    assert same_place(at("subj.py:64 spin2", ON_CPU), at("subj.py:62 spin2", ON_CPU)) is True
    assert same_place(at("subj.py:64 spin2", ON_CPU), at("subj.py:63 spin2", "")) is True
    assert same_place(at("subj.py:64 spin2", ON_CPU), at("subj.py:20 other", ON_CPU)) is False
    assert same_place(at("subj.py:64 spin2", "lock"), at("subj.py:62 spin2", "lock")) is False
    assert same_place(at("subj.py:64 spin2", ON_CPU), at("subj.py:62 spin2", "lock")) is False


def test_a_wait_moved_by_lines_added_above_it_is_the_same_place():
    """`diff` and `bisect`: the bad endpoint's tree has changes above the hang that the culprit's
    does not (a line added at the top of the file), so the same `lk.acquire()` in the same
    function is line 8 in one and line 7 in the other: 'two different hangs' for one hang. A
    wait is at its function and its source text; the same text at another function still differs."""
    def at(place, code, wait="lock"):
        return Snapshot(groups=(Group("worker", 1, place, instruction=code, wait=wait),))
    assert same_place(at("k.py:8 f", "lk.acquire()"), at("k.py:7 f", "lk.acquire()")) is True
    assert same_place(at("k.py:8 f", "lk.acquire()"), at("k.py:8 f", "other.acquire()")) is False
    assert same_place(at("k.py:8 f", "lk.acquire()"), at("k.py:8 g", "lk.acquire()")) is False
    assert same_place(at("k.py:8 f", "lk.acquire()"), at("k.py:8 f", "lk.acquire()", "join")) is False
    assert same_place(at("k.py:8 f", ""), at("k.py:7 f", "")) is False   # no source text: the line says it


def test_under_yamas_ptrace_scope_1_runs_name_bisectk_as_their_reader(tmp_path, monkeypatch):
    """Ubuntu's default ptrace_scope 1 lets a process read only its descendants: py-spy and gdb are
    bisectk's children, not the hung run's parents, so as a non-root user every snapshot was
    refused. The run's environment names bisectk (BISECTK_TRACER) where that applies, and a
    Python subject's import hook lets it attach (prctl PR_SET_PTRACER)."""
    from bisectk.run.process import run_process
    from bisectk.run.snapshot import SnapshotRequest
    scope = tmp_path / "ptrace_scope"
    monkeypatch.setattr(snapshot, "YAMA_SCOPE", str(scope))
    status = tmp_path / "status"
    monkeypatch.setattr(snapshot, "PROC_STATUS", str(status))
    user, root = "CapEff:\t0000000000000000\n", "CapEff:\t000001ffffffffff\n"
    status.write_text(user)

    def env():      # Yama's setting is read once per process: read again for each case here
        snapshot._yama_restricts.cache_clear()
        return snapshot.tracer_env()

    try:
        assert env() == {}                                                  # no Yama
        scope.write_text("0\n")
        assert env() == {}
        scope.write_text("1\n")
        assert env() == {"BISECTK_TRACER": str(os.getpid())}
        status.write_text(root)                                             # root: CAP_SYS_PTRACE
        assert env() == {}
        # a container's root that was started without CAP_SYS_PTRACE (Docker's default) is bound
        # by Yama as any user is: it was taken for unrestricted, and every snapshot was refused
        status.write_text("CapEff:\t00000000a80425fb\n")
        assert env() == {"BISECTK_TRACER": str(os.getpid())}
        status.write_text(user)
        assert env() == {"BISECTK_TRACER": str(os.getpid())}
        probe = "import os; print('tracer', os.environ.get('BISECTK_TRACER'))"
        raw = run_process([sys.executable, "-c", probe], timeout=30, record_imports=True,
                          snapshot=SnapshotRequest(budget_s=1.0))
        assert raw.exit_code == 0 and f"tracer {os.getpid()}" in raw.stdout, raw.stdout + raw.stderr
        raw = run_process([sys.executable, "-c", probe], timeout=30, record_imports=True)   # no snapshot asked
        assert "tracer None" in raw.stdout
    finally:
        snapshot._yama_restricts.cache_clear()


def test_a_readers_failure_is_its_own_error_not_the_last_line_of_its_backtrace(tmp_path):
    """py-spy on a stopped process (or any it cannot read) prints its error, the causes, then a
    Rust backtrace: the report's 'stuck at' said only 'py-spy:    9: main'."""
    spy = tmp_path / "py-spy"
    spy.write_text("#!/bin/sh\ncat >&2 <<'EOF'\nError: Failed to get stack traces\n\nCaused by:\n"
                   "    0: Failed to suspend process\n    1: unexpected waitpid result PtraceEvent(Pid(17663), SIGSTOP, 128)\n\n"
                   "Stack backtrace:\n   0: <E as anyhow::context::ext::StdError>::ext_context\n   9: main\nEOF\nexit 1\n")
    spy.chmod(0o755)
    gdb = tmp_path / "gdb"
    gdb.write_text("#!/bin/sh\necho 'ptrace: Operation not permitted.' >&2\nexit 1\n")
    gdb.chmod(0o755)
    assert readers.call([str(spy), "dump"], 10) == ("", "py-spy: Failed to get stack traces: Failed to suspend process")
    assert readers.call([str(gdb), "-p", "1"], 10) == ("", "gdb: ptrace: Operation not permitted.")


FINALIZING = json.dumps([{"pid": 1, "thread_id": 7, "thread_name": "MainThread", "os_thread_id": 1,
                          "active": True, "owns_gil": True, "frames": []}])


@pytest.mark.parametrize("ends", [False, True], ids=["exiting", "ended"])
def test_a_thread_read_with_no_frame_is_said_not_placed_at_question_marks(monkeypatch, ends):
    """py-spy reads a Python process that is exiting (the watchdog fired as it finished: the
    interpreter frees its objects) as a MainThread with no frame at all: the report showed
    '1 thread waiting at ? ? (running (on CPU))', a place that is no place. Such a thread is
    said in a note, and a process that was gone once read is said to have ended while it was read."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    def spy(argv, timeout, env=None):
        if ends:
            p.kill()
            p.wait()
        return FINALIZING, ""

    monkeypatch.setattr(snapshot, "which", lambda tool: "/bin/py-spy")
    monkeypatch.setattr(snapshot, "call", spy)
    try:
        snap = snapshot.take(p.pid, budget_s=10)
    finally:
        p.kill()
        p.wait()
    assert not any("?" in g.place for g in snap.groups), snap.groups
    assert snap.groups == ()
    said = "ended while it was read" if ends else "MainThread had no frame"
    assert any(said in n for n in snap.notes), snap.notes
    assert "?" not in snap.headline()


ASYNC_HANG = """
import asyncio
async def waiter(ev):
    await ev.wait()
async def main():
    ev = asyncio.Event()
    print('BISECTK_PHASE launch', flush=True)
    await asyncio.gather(waiter(ev), waiter(ev))
asyncio.run(main())
"""


@pytest.mark.skipif(readers.which("py-spy") is None, reason="py-spy is not installed")
def test_a_hung_asyncio_subject_is_an_idle_event_loop_whose_tasks_are_not_read(tmp_path):
    """Two tasks await an Event never set: py-spy reads threads, and a suspended coroutine is on
    no thread's stack, so the only thread is the loop's, idle in its selector under
    `asyncio.run(main())`. The picture said '1 thread waiting at aio.py:9 <module>' with no kind of
    wait, as if asyncio.run itself were stuck. It says the loop is idle and its tasks were not read."""
    script = tmp_path / "aio.py"
    script.write_text(ASYNC_HANG)
    snap = _snapshot_of([sys.executable, str(script)])
    (g,) = snap.host
    assert g.place == "aio.py:9 <module>" and g.wait == stacks.EVENT_LOOP, g
    assert snap.headline() == f"1 thread waiting at aio.py:9 <module> ({stacks.EVENT_LOOP})"
    assert any("tasks" in n and "not read" in n for n in snap.notes), snap.notes


MAIN_LEFT = """
import ctypes, threading, time
a, b = threading.Lock(), threading.Lock()
def one():
    with a:
        time.sleep(0.3)
        with b: pass
def two():
    with b:
        time.sleep(0.3)
        with a: pass
threading.Thread(target=one, name="one").start()
threading.Thread(target=two, name="two").start()
print("BISECTK_PHASE launch", flush=True)
ctypes.CDLL(None).pthread_exit(None)    # the main thread leaves; the two others deadlock
"""


def test_a_process_whose_main_thread_left_while_its_threads_hang_is_not_said_to_have_ended(tmp_path):
    """The main thread exits (pthread_exit) and two threads deadlock: the kernel shows the thread
    group's leader as a zombie while the process lives on in them. The picture said 'had ended
    (its parent had not yet waited for it)' and read nothing, of a process hung in its threads."""
    script = tmp_path / "left.py"
    script.write_text(MAIN_LEFT)
    p = _started([sys.executable, str(script)])
    try:
        time.sleep(0.5)
        assert psutil.Process(p.pid).status() == psutil.STATUS_ZOMBIE   # the leader, as the kernel shows it
        snap = snapshot.take(p.pid, budget_s=20)
    finally:
        p.kill()
        p.wait()
    assert not any("ended" in n for n in snap.notes), snap.notes
