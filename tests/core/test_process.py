import os
import re
import sys
import time
import uuid

import psutil

from bisectk.run.process import run_process
from bisectk.run.spares import SPARES

# A shell that starts python that starts another sleeper: the tree the watchdog must end. Every
# process of it carries this test's own marker, so a sleeper of another test or another session on
# the same machine is never counted.
MARK = f"bisectk-tree-{uuid.uuid4().hex[:12]}"
TREE = [sys.executable, "-c",
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {MARK!r}])\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 300 & sleep 300', {MARK!r}])\n"
        "time.sleep(300)\n", MARK]


def descendants_of_me() -> list[psutil.Process]:
    """Live processes below this one, bar the idle spare supervisors (run/spares.py): they are
    bisectk's own, wait for the next run, and hold nothing of any run."""
    spares = set(SPARES.pids())
    return [p for p in psutil.Process(os.getpid()).children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE and p.pid not in spares]


def test_captures_output_and_exit_code():
    raw = run_process([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert raw.started and raw.exit_code == 3 and raw.signal is None and not raw.timed_out
    assert raw.stdout == "out\n" and raw.stderr == "err\n"


def test_signal_is_named():
    raw = run_process([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert raw.exit_code == -11 and raw.signal == "SIGSEGV"


def test_missing_command_is_not_started():
    raw = run_process(["/nonexistent/bisectk-subject"])
    assert not raw.started and "cannot start" in raw.error and "/nonexistent/bisectk-subject" in raw.error


def test_a_program_on_no_path_directory_is_said_so(tmp_path):
    """Not the last PATH directory execvpe tried, which the OSError names."""
    raw = run_process(["bisectk-no-such-program", "x"], env={"PATH": f"{tmp_path}:/usr/bin"})
    assert not raw.started and raw.error == "cannot start 'bisectk-no-such-program': not found on the run's PATH"
    raw = run_process(["true"], cwd=tmp_path / "gone")      # a missing directory is not a missing program
    assert not raw.started and "PATH" not in raw.error, raw.error


def test_a_working_directory_that_is_missing_or_a_file_is_named_as_such(tmp_path):
    """A spec's `cwd = "buld"`: the run said `cannot start '.../python': No such file or directory:
    .../buld`, which reads as a missing interpreter."""
    raw = run_process([sys.executable, "-c", "pass"], cwd=tmp_path / "gone")
    assert not raw.started and raw.error.endswith(f"its working directory {tmp_path / 'gone'} does not exist"), raw.error
    (tmp_path / "f").write_text("")
    raw = run_process([sys.executable, "-c", "pass"], cwd=tmp_path / "f")
    assert not raw.started and raw.error.endswith(f"its working directory {tmp_path / 'f'} is not a directory"), raw.error


def test_fifty_hangs_leave_no_process_behind():
    before = {p.pid for p in descendants_of_me()}
    start = time.monotonic()
    for _ in range(50):
        raw = run_process(TREE, timeout=0.15)
        assert raw.timed_out
    left = [p for p in descendants_of_me() if p.pid not in before]
    assert left == [], [p.cmdline() for p in left]
    # nothing reparented to init either: no sleeper with our marker survives anywhere
    stray = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] and MARK in " ".join(p.info["cmdline"])
             and p.pid != os.getpid()]
    assert stray == []
    assert time.monotonic() - start < 50 * 1.5


def test_sigterm_ignoring_subject_is_killed():
    raw = run_process(["sh", "-c", "trap '' TERM; sleep 300"], timeout=0.2)
    assert raw.timed_out and raw.duration_s < 1.0


def test_output_is_bounded(tmp_path):
    raw = run_process([sys.executable, "-c", "print('x' * 1_000_000)"], tail_bytes=1000, log_dir=tmp_path)
    assert len(raw.stdout) <= 1000
    assert (tmp_path / "stdout.log").stat().st_size == 1_000_001


def test_literal_arguments_reach_the_program():
    evil = "$(touch /tmp/bisectk-pwned); `id` | & ; 'q' \"d\""
    raw = run_process([sys.executable, "-c", "import sys; print(sys.argv[1])", evil])
    assert raw.stdout.strip() == evil
    assert not os.path.exists("/tmp/bisectk-pwned")


def test_a_supervisors_exit_status_mirrors_its_subjects_signal_sigkill_included():
    """The warm pool reads a template's or worker's death from its supervisor's Popen: a subject
    killed by SIGKILL must read as killed, not as `exit 137` (SIGKILL's disposition cannot be set)."""
    import signal

    from bisectk.run.process import start_contained
    for sig in (signal.SIGKILL, signal.SIGTERM):
        c = start_contained([sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(sig)})"])
        report = c.wait(time.monotonic() + 30)
        c.proc.wait(timeout=30)
        c.close()
        assert os.WIFSIGNALED(report["status"]) and os.WTERMSIG(report["status"]) == sig
        assert c.proc.returncode == -sig, (sig, c.proc.returncode)


def test_a_script_whose_interpreter_is_missing_says_so_not_no_such_file(tmp_path):
    """The kernel answers ENOENT naming the script when its `#!` interpreter is missing; "No such
    file or directory: t.sh" about a file that is there sent users looking in the wrong place.
    The usual cause is a script saved with Windows line endings (`#!/bin/sh\\r`)."""
    from bisectk.run.process import run_process
    script = tmp_path / "t.sh"
    script.write_bytes(b"#!/bin/sh\r\nexit 0\r\n")
    script.chmod(0o755)
    raw = run_process(["./t.sh"], cwd=tmp_path, timeout=10)
    assert not raw.started and "ends in a carriage return (Windows line endings)" in raw.error, raw.error
    script.write_text("#!/no/such/interpreter -x\nexit 0\n")
    raw = run_process(["./t.sh"], cwd=tmp_path, timeout=10)
    assert "its interpreter (#!/no/such/interpreter) does not exist" in raw.error, raw.error
    raw = run_process(["./absent.sh"], cwd=tmp_path, timeout=10)         # no file at all: as before
    assert "No such file or directory" in raw.error, raw.error


def test_a_program_that_is_a_directory_or_not_executable_says_which(tmp_path):
    """The kernel's EACCES, "Permission denied: ./t.sh", says neither that the file lacks its
    execute bit nor that the path is a directory."""
    from bisectk.run.process import run_process
    script = tmp_path / "t.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    raw = run_process(["./t.sh"], cwd=tmp_path, timeout=10)
    assert not raw.started and "it is not executable (chmod +x ./t.sh)" in raw.error, raw.error
    (tmp_path / "kernel").mkdir()
    raw = run_process(["./kernel"], cwd=tmp_path, timeout=10)
    assert not raw.started and "it is a directory, not a program" in raw.error, raw.error


def test_a_variable_over_the_kernels_limit_on_one_string_is_named(tmp_path):
    """A 200 KB environment value (a factor carried by `[subject] env`) made the kernel's E2BIG,
    "Argument list too long: .../python", which points at the arguments, not at the variable."""
    from bisectk.run.process import run_process
    raw = run_process(["/bin/sh", "-c", "exit 0"], cwd=tmp_path, env={"BIG_VAR": "y" * 200_000}, timeout=10)
    assert not raw.started and "the environment variable 'BIG_VAR' holds 200000 bytes" in raw.error, raw.error
    raw = run_process(["/bin/sh", "-c", "exit 0", "x" * 200_000], cwd=tmp_path, timeout=10)
    assert not raw.started and "argument 3 holds 200000 bytes" in raw.error, raw.error


def test_a_script_without_a_shebang_runs_with_sh_as_a_shell_would(tmp_path):
    """`git bisect run ./t.sh` goes through the shell, which runs a script without `#!` with sh
    (POSIX's rule for ENOEXEC). bisectk executes the command itself: it stopped at "Exec format
    error", and the endpoints could not be tested. An ELF file the kernel refuses is not retried."""
    from bisectk.run.process import run_process
    script = tmp_path / "t.sh"
    script.write_text('echo "ran with $0 $1"\nexit 3\n')
    script.chmod(0o755)
    raw = run_process(["./t.sh", "arg"], cwd=tmp_path, timeout=10)
    assert raw.started and raw.exit_code == 3 and "ran with ./t.sh arg" in raw.stdout, (raw.error, raw.stdout)
    fake = tmp_path / "bin"
    fake.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 60)       # an ELF header the kernel rejects
    fake.chmod(0o755)
    raw = run_process(["./bin"], cwd=tmp_path, timeout=10)
    assert not raw.started and "Exec format error" in raw.error, raw.error


def test_a_subject_that_stops_itself_is_a_hang_that_says_it_was_stopped_cold_and_warm(tmp_path):
    """A subject stopped by SIGSTOP (its own, a `kill -STOP`, a shell's job control) goes on only
    once another process continues it: it was called a silent hang, given a second run of 10 s
    that could not end either, and the report's 'stuck at' read 'py-spy: 9: main'. Now its hang
    says it was stopped, cold and warm alike (and the engine gives it no second, longer run)."""
    from bisectk.run.executor import LocalExecutor, run_command
    from bisectk.run.pool import WorkerPool
    (tmp_path / "stop.py").write_text("import os, signal\nprint('launch', flush=True)\n"
                                      "os.kill(os.getpid(), signal.SIGSTOP)\n")
    cold = run_command(LocalExecutor(), [sys.executable, "stop.py"], cwd=tmp_path, timeout=1.0)
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=60) as pool:
        warm = run_command(pool, [sys.executable, "stop.py"], cwd=tmp_path, timeout=1.0)
        assert pool.stats["cold_runs"] == 0, pool.stats
    for raw in (cold, warm):
        # the process's own name: 'python', 'python3' or 'python3.11', as the interpreter was named
        assert raw.timed_out and re.fullmatch(r"python[0-9.]* stopped by a signal \(SIGSTOP or SIGTSTP\) or a "
                                              r"debugger, and never continued", raw.stalled), raw


# a subject that traces its own child (as `strace -f`, `gdb -batch -ex run` do): the child spends
# most of its time in a tracing stop ('t'), continued by its tracer each time it has looked
SELF_TRACED = """
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_TRACEME, PTRACE_CONT = 0, 7
pid = os.fork()
if pid == 0:
    libc.ptrace(PTRACE_TRACEME, 0, None, None)
    while True:
        os.kill(os.getpid(), signal.SIGUSR1)     # a signal stops a tracee for its tracer
        time.sleep(0.01)
print("launch", flush=True)
while True:
    os.waitpid(pid, 0)
    time.sleep(0.3)                              # the tracer takes its time
    libc.ptrace(PTRACE_CONT, pid, None, None)    # and continues it, the signal dropped
"""


def test_a_process_its_own_tracer_in_the_run_holds_is_not_said_stopped_and_never_continued(tmp_path):
    """`strace -f python k.py` running slower than its watchdog: its python was read in a tracing
    stop at the deadline, and the hang said 'python stopped by a signal (SIGSTOP or SIGTSTP) or a
    debugger, and never continued' (1 run in 3) -- false, and such a hang gets no second, longer
    run. A tracee whose tracer is a process of the run goes on as its tracer lets it."""
    (tmp_path / "tracer.py").write_text(SELF_TRACED)
    raw = run_process([sys.executable, "tracer.py"], cwd=tmp_path, timeout=1.0)
    assert raw.timed_out, raw
    assert "stopped" not in raw.stalled, raw.stalled


def test_a_relative_xdg_cache_home_is_ignored_as_the_spec_says(tmp_path, monkeypatch):
    """XDG_CACHE_HOME=.cache (a relative path; the XDG spec calls it invalid, to be ignored): the
    worktrees were kept in ~/.cache (spaces/cachedir.py), but the live-run records, the scratch
    registry and the cache ledger went under the current directory, and a bisect typed in a checkout left
    .cache/bisectk/live there, in the user's working tree (and the next command, typed elsewhere,
    never found the records it reaps after a SIGKILL)."""
    from bisectk.engine import session
    from bisectk.run.process import live_dir
    from bisectk.run.scratch import registry_dir
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for value in (".cache", "rel/cache", ""):
        monkeypatch.setenv("XDG_CACHE_HOME", value)
        assert live_dir() == tmp_path / "home" / ".cache" / "bisectk" / "live", value
        assert session.cache_dir() == tmp_path / "home" / ".cache" / "bisectk", value
        assert registry_dir() == tmp_path / "home" / ".cache" / "bisectk" / "scratch", value
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert live_dir() == tmp_path / "xdg" / "bisectk" / "live" and session.cache_dir() == tmp_path / "xdg" / "bisectk"
