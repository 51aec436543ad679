"""Warm runs judged as cold ones when a run leaves process state that a later run's verdict reads:
each case a pair of subjects, run cold and then in one warm worker (the first run the worker's
first, as in a search's first configuration), whose verdicts must agree.

Before stop 55, a run that loaded `gc` or `signal` first (the worker had not imported them) had
its changes adopted as the worker's baseline, and three kinds of state had no probe at all."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bisectk.run.classify import Judge, classify_run
from bisectk.run.executor import LocalExecutor, run_command
from bisectk.run.pool import WorkerPool
from tests.conftest import wait_until

# a leak check (as a test harness installs one): any later full collection with LEAKCHECK set exits 3
LEAK_CHECK = ("import gc, os\n"
              "def check(phase, info, _exit=os._exit, env=os.environ):\n"
              "    if phase == 'stop' and info['generation'] == 2 and env.get('LEAKCHECK'):\n"
              "        _exit(3)\n"
              "gc.callbacks.append(check)\nprint('BISECTK_RESULT {}')\n")
COLLECTS = "import gc, os\nos.environ['LEAKCHECK'] = '1'\ngc.collect()\nprint('BISECTK_RESULT {}')\n"
# a wakeup fd left set on a descriptor the run closed: the number is the next open()'s
WAKEUP = ("import os, signal\nr, w = os.pipe()\nos.set_blocking(w, False)\nsignal.set_wakeup_fd(w)\n"
          "os.close(r)\nos.close(w)\nprint('BISECTK_RESULT {}')\n")
WRITES = ("import json, os, signal\nsignal.signal(signal.SIGUSR1, lambda *a: None)\n"
          "fds = [os.open(f'out{i}', os.O_RDWR | os.O_CREAT | os.O_TRUNC) for i in range(4)]\n"
          "os.kill(os.getpid(), signal.SIGUSR1)\n"
          "print('BISECTK_RESULT ' + json.dumps({'stray_bytes': sum(os.fstat(fd).st_size for fd in fds)}))\n")
JUDGE = Judge([])


def _verdicts(executor, d: Path, scripts: list[str]) -> list[tuple]:
    out = []
    for name in scripts:
        run = classify_run(run_command(executor, [sys.executable, name], cwd=d, timeout=120), JUDGE)
        out.append((name, run.outcome.name, run.signature, json.dumps(run.metrics, sort_keys=True)))
    return out


def _cold_and_warm(d: Path, files: dict[str, str]) -> tuple[list, list]:
    for name, code in files.items():
        (d / name).write_text(code)
    cold = _verdicts(LocalExecutor(), d, list(files))
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = _verdicts(pool, d, list(files))
        assert pool.stats["cold_runs"] == 0, pool.stats
    return cold, warm


def test_a_gc_callback_a_first_run_left_does_not_end_a_later_run(tmp_path):
    cold, warm = _cold_and_warm(tmp_path, {"leakcheck.py": LEAK_CHECK, "collects.py": COLLECTS})
    assert [v[1] for v in cold] == ["PASS", "PASS"]
    assert warm == cold


def test_a_wakeup_fd_a_first_run_left_writes_nothing_into_a_later_runs_files(tmp_path):
    cold, warm = _cold_and_warm(tmp_path, {"wakeup.py": WAKEUP, "writes.py": WRITES})
    assert cold[1][3] == json.dumps({"stray_bytes": 0})
    assert warm == cold


def test_an_uncaught_exception_goes_through_the_scripts_own_excepthook_warm_as_cold(tmp_path):
    """The worker printed an uncaught exception's traceback itself, past the script's
    sys.excepthook: a script whose hook prints its own line crashed `exit 1` cold and `ValueError`
    warm (two failures to a search), and one whose hook raised printed none of its words."""
    hooked = ("import sys\ndef hook(kind, value, tb):\n    print('custom hook:', kind.__name__, file=sys.stderr)\n"
              "sys.excepthook = hook\nraise ValueError('boom')\n")
    broken = "import sys\ndef hook(*a):\n    raise RuntimeError('hook broke')\nsys.excepthook = hook\nraise KeyError('k')\n"
    plain = "def f():\n    raise ValueError('boom')\nf()\n"
    cold, warm = _cold_and_warm(tmp_path, {"hooked.py": hooked, "broken.py": broken, "plain.py": plain})
    assert [v[2] for v in cold] == ["exit 1", "KeyError: 'k'", "ValueError: boom"]
    assert warm == cold
    (tmp_path / "s.py").write_text(broken)
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        raw = run_command(pool, [sys.executable, "s.py"], cwd=tmp_path, timeout=120)
    cold_raw = run_command(LocalExecutor(), [sys.executable, "s.py"], cwd=tmp_path, timeout=120)
    said = [ln for ln in cold_raw.stderr.splitlines() if not ln.startswith(" ")]
    assert [ln for ln in raw.stderr.splitlines() if not ln.startswith(" ")] == said, (raw.stderr, cold_raw.stderr)


def test_a_command_naming_another_python_runs_in_that_python_warm_as_cold(tmp_path):
    """Any program whose name began `python` was run by a warm worker in bisectk's own
    interpreter: a `python` on PATH that wraps it (here setting a variable the script reads;
    elsewhere a module path, another build), `python3` being another installation, another virtual
    environment's `bin/python` (a link to the same binary, with its own site-packages) all went
    warm as if they were bisectk's, and the script's verdict was the one of an interpreter its
    command never named. They run cold now; bisectk's own interpreter still runs warm."""
    from bisectk.run.interpreter import same_python
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "python").write_text(f"#!/bin/sh\nexport KERNEL_MODE=wrapped\nexec {sys.executable} \"$@\"\n")
    (bin_ / "python").chmod(0o755)
    (tmp_path / "k.py").write_text("import json, os, sys\nmode = os.environ.get('KERNEL_MODE', 'plain')\n"
                                   "print('BISECTK_RESULT ' + json.dumps({'ok': mode == 'wrapped', 'mode': mode}))\n")
    env = {"PATH": f"{bin_}{os.pathsep}{os.environ.get('PATH', '')}"}
    cold = run_command(LocalExecutor(), ["python", "k.py"], cwd=tmp_path, env=env, timeout=120)
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = run_command(pool, ["python", "k.py"], cwd=tmp_path, env=env, timeout=120)
        assert pool.stats["cold_runs"] == 1, pool.stats
        assert run_command(pool, [sys.executable, "k.py"], cwd=tmp_path, timeout=120).exit_code == 0
        assert pool.stats["warm_runs"] == 1, pool.stats
    assert classify_run(cold, JUDGE).outcome.name == "PASS", cold.stdout
    assert (classify_run(warm, JUDGE).outcome, warm.result) == (classify_run(cold, JUDGE).outcome, cold.result)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    assert same_python(sys.executable, None, sys.executable)
    assert not same_python(str(venv / "bin" / "python"), None, sys.executable)


def test_a_pyenv_shim_is_the_interpreter_pyenv_picks_there_and_runs_warm_where_that_is_the_workers(tmp_path):
    """A pyenv user's `python` is a shim: a bash script that asks pyenv which interpreter the run's
    directory uses (`.python-version`, PYENV_VERSION) and execs it. Taken for a wrapper, every
    `python k.py` of a pyenv user went cold under --warm. The shim is resolved through pyenv: warm
    where pyenv picks the workers' own interpreter, cold where it picks another."""
    from bisectk.run.interpreter import same_python
    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    (root / "libexec").mkdir()
    pyenv = root / "libexec" / "pyenv"
    # a stand-in for pyenv: `which` and `exec` pick bisectk's interpreter for version 'mine' (the
    # directory's .python-version, or PYENV_VERSION), /bin/false's for any other
    pyenv.write_text("#!/bin/sh\ncmd=$1; shift; prog=$1; shift\n"
                     "v=${PYENV_VERSION:-$(cat .python-version 2>/dev/null)}\n"
                     f"if [ \"$v\" = mine ]; then py={sys.executable}; else py=/bin/false; fi\n"
                     "if [ \"$cmd\" = which ]; then echo \"$py\"; else exec \"$py\" \"$@\"; fi\n")
    shim = root / "shims" / "python"
    shim.write_text('#!/usr/bin/env bash\nset -e\nprogram="${0##*/}"\n'
                    f'exec "{pyenv}" exec "$program" "$@"\n')
    for f in (pyenv, shim):
        f.chmod(0o755)
    mine, other = tmp_path / "mine", tmp_path / "other"
    for d, v in ((mine, "mine"), (other, "3.9.1")):
        d.mkdir()
        (d / ".python-version").write_text(v + "\n")
        (d / "k.py").write_text("import sys\nprint('BISECTK_RESULT {\"ok\": true}')\n")
    # no version asked for (a pyenv-started bisectk has PYENV_VERSION set: the runs inherit it)
    env = {"PATH": f"{root / 'shims'}{os.pathsep}{os.environ.get('PATH', '')}", "PYENV_VERSION": ""}
    assert same_python("python", env, sys.executable, mine)
    assert not same_python("python", env, sys.executable, other)
    assert same_python("python", {**env, "PYENV_VERSION": "mine"}, sys.executable, other)
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = run_command(pool, ["python", "k.py"], cwd=mine, env=env, timeout=120)
        assert warm.exit_code == 0 and pool.stats["warm_runs"] == 1 and pool.stats["cold_runs"] == 0, pool.stats
        cold = run_command(pool, ["python", "k.py"], cwd=other, env=env, timeout=120)
        assert cold.exit_code == 1 and pool.stats["cold_runs"] == 1, pool.stats     # /bin/false, as pyenv picked


def test_a_script_that_starts_itself_again_from_sys_orig_argv_starts_itself_warm_as_cold(tmp_path):
    """sys.orig_argv in a warm run was the worker's own command line (`-m bisectk.run.worker
    --serve --reply-fd 4 ...`): a script that re-executes itself with it (a reloader, a re-run
    under other variables) started a worker, which failed on a descriptor it was never given, and
    the run crashed warm where it passed cold. A warm run now has a fresh `python k.py`'s."""
    again = ("import json, os, subprocess, sys\n"
             "if os.environ.get('CHILD'):\n    print('child ran')\n    sys.exit(0)\n"
             "r = subprocess.run(sys.orig_argv, env={**os.environ, 'CHILD': '1'}, capture_output=True, text=True,"
             " timeout=60)\n"
             "print('BISECTK_RESULT ' + json.dumps({'ok': 'child ran' in r.stdout, 'orig': sys.orig_argv[1:]}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"again.py": again})
    assert cold[0][1] == "PASS" and warm == cold


def test_a_script_that_makes_its_own_process_group_runs_as_from_a_terminal_warm_as_cold(tmp_path):
    """A subject started as the leader of a session of its own could not `os.setpgrp()` (EPERM: a
    session leader cannot move its group), which a job runner does to end its own group later, and
    which works in a terminal (a shell starts `python k.py` as a group leader in its session): the
    run crashed with PermissionError under bisectk, cold and warm, and passed by hand. Subjects
    (and warm workers) now lead a group of their own in their supervisor's session, as a terminal's
    jobs do; os.setsid() is refused there as it is in a terminal."""
    own = ("import json, os, subprocess, sys\nos.setpgrp()\n"
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
           "open('children', 'a').write(f'{child.pid}\\n')\n"
           "try:\n    os.setsid()\n    sid = 'made'\nexcept PermissionError:\n    sid = 'refused'\n"
           "print('BISECTK_RESULT ' + json.dumps({'group_leader': os.getpgrp() == os.getpid(), 'setsid': sid}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"own.py": own})
    assert cold[0][1:] == ("PASS", "", json.dumps({"group_leader": True, "setsid": "refused"})), cold
    assert warm == cold
    children = [int(pid) for pid in (tmp_path / "children").read_text().split()]
    assert wait_until(lambda: not [p for p in children if _alive(p)], timeout=10), children   # ended


def _alive(pid: int) -> bool:
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_a_script_that_ptraces_itself_runs_on_warm_as_cold(tmp_path):
    """PTRACE_TRACEME (an anti-debugging check) makes the parent, the run's supervisor, the
    script's tracer: each signal then stops it for the tracer, and waitpid reports the stop. The
    supervisor read it as the subject's end, killed it and reported 'killed by SIGKILL (not by
    bisectk ...)'. It now lets go of such a child, which goes on as an untraced process would."""
    traced = ("import ctypes, json, os, signal, subprocess\nlibc = ctypes.CDLL(None)\n"
              "libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)\n"
              "seen = []\nsignal.signal(signal.SIGUSR1, lambda *a: seen.append(1))\n"
              "traceme = libc.ptrace(0, 0, None, None)\nos.kill(os.getpid(), signal.SIGUSR1)\n"
              "print('BISECTK_RESULT ' + json.dumps({'traceme': traceme, 'handled': len(seen)}))\n")
    execs = ("import ctypes, os\nlibc = ctypes.CDLL(None)\n"
             "libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)\n"
             "libc.ptrace(0, 0, None, None)\nprint('BISECTK_RESULT {}', flush=True)\n"
             "os.execv('/bin/sh', ['sh', '-c', 'exit 0'])\n")
    cold, warm = _cold_and_warm(tmp_path, {"traced.py": traced, "execs.py": execs})
    assert [v[1:] for v in cold] == [("PASS", "", json.dumps({"handled": 1, "traceme": 0})), ("PASS", "", "{}")], cold
    assert warm == cold


def test_a_faulthandler_timer_a_first_run_armed_does_not_end_a_later_run(tmp_path):
    """faulthandler.dump_traceback_later(N, exit=True) (a script's own watchdog) arms a C timer
    that no probe could read: a fresh process's ends with it, a warm worker's went on ticking, and
    a later run still going N seconds after the first run armed it was ended by it (`exit 1` warm,
    a pass cold). The worker cancels it after every run."""
    arms = "import faulthandler\nfaulthandler.dump_traceback_later(2, exit=True)\nprint('BISECTK_RESULT {}')\n"
    slow = "import time\ntime.sleep(4)\nprint('BISECTK_RESULT {}')\n"
    cold, warm = _cold_and_warm(tmp_path, {"arms.py": arms, "slow.py": slow})
    assert [v[1] for v in cold] == ["PASS", "PASS"]
    assert warm == cold


def test_a_faulthandler_signal_handler_a_first_run_registered_is_gone_in_a_later_run(tmp_path):
    """faulthandler.register(SIGUSR1) installs a C handler that signal.getsignal does not show: a
    later run that sent itself SIGUSR1 died of it cold and dumped a traceback and went on warm
    (PASS where cold was `SIGUSR1`). The worker unregisters what a run registered, and says so."""
    registers = ("import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1)\n"
                 "print('BISECTK_RESULT {}')\n")
    signals = ("import os, signal, time\nos.kill(os.getpid(), signal.SIGUSR1)\ntime.sleep(0.5)\n"
               "print('BISECTK_RESULT {}')\n")
    cold, warm = _cold_and_warm(tmp_path, {"registers.py": registers, "signals.py": signals})
    assert [v[1:3] for v in cold] == [("PASS", ""), ("FAIL", "SIGUSR1")]
    assert warm == cold
    (tmp_path / "r.py").write_text(registers)
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        raw = run_command(pool, [sys.executable, "r.py"], cwd=tmp_path, timeout=120)
    assert "faulthandler.register(SIGUSR1)" in (raw.isolation or ""), raw.isolation


def test_a_standard_stream_that_cannot_be_flushed_at_exit_ends_a_warm_run_as_it_ends_a_cold_one(tmp_path):
    """An interpreter's exit flushes sys.stdout and sys.stderr as the script left them, and one
    that fails (a Tee without a flush method, a detached stream, a flush that raises) is said as
    'Exception ignored in: ...' and makes the status 120, whatever the script's own. The worker
    swallowed it: the run passed warm where it crashed cold, a sys.exit(4) said 'exit 4', and a
    forked child's status was 0 instead of 120."""
    tee = ("import sys\nclass Tee:\n    def __init__(self, f):\n        self.f = f\n"
           "    def write(self, x):\n        return self.f.write(x)\nsys.stdout = Tee(sys.stdout)\n"
           "print('BISECTK_RESULT {}')\n")
    detached = "import sys\nb = sys.stdout.detach()\nb.write(b'BISECTK_RESULT {}\\n')\nb.flush()\n"
    raises = ("import sys\nclass W:\n    def write(self, x):\n        return len(x)\n"
              "    def flush(self):\n        raise RuntimeError('flush broke')\nsys.stderr = W()\nsys.exit(4)\n")
    forked = ("import os, sys\nclass W:\n    def write(self, x):\n        return len(x)\n"
              "if os.fork() == 0:\n    sys.stdout = W()\n    sys.exit(0)\n_, st = os.wait()\n"
              "print('BISECTK_RESULT {\"child\": %d}' % os.waitstatus_to_exitcode(st))\n")
    closed = "import sys\nprint('BISECTK_RESULT {}')\nsys.stdout.close()\n"
    cold, warm = _cold_and_warm(tmp_path, {"tee.py": tee, "detached.py": detached, "raises.py": raises,
                                           "forked.py": forked, "closed.py": closed})
    assert [v[1:3] for v in cold] == [("FAIL", "AttributeError: 'Tee' object has no attribute 'flush'"),
                                      ("FAIL", "ValueError: underlying buffer has been detached"),
                                      ("FAIL", "exit 120"), ("PASS", ""), ("PASS", "")], cold
    assert cold[3][3] == json.dumps({"child": 120})
    assert warm == cold


def test_sys_dunder_streams_are_the_runs_own_warm_as_cold(tmp_path):
    """sys.__stdout__ (and __stderr__, __stdin__) in a warm run were the worker's own streams: a
    script that reconfigured it (`sys.__stdout__.reconfigure(errors='replace')`) crashed warm
    ('Illegal seek') where it passed cold, and its errors handler was every later run's
    sys.stdout's; `sys.stdout is sys.__stdout__` was False. A run's dunder streams are its own."""
    reconf = "import sys\nsys.__stdout__.reconfigure(errors='replace')\nprint('BISECTK_RESULT {}')\n"
    reads = ("import json, sys\nprint('BISECTK_RESULT ' + json.dumps({'errors': sys.stdout.errors, "
             "'same': [sys.stdin is sys.__stdin__, sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__]}))\n")
    # what it writes there after replacing sys.stdout, with no newline, reaches its output all the same
    partial = "import io, sys\nsys.stdout = io.StringIO()\nsys.__stdout__.write('BISECTK_RESULT {\"n\": 1}')\n"
    cold, warm = _cold_and_warm(tmp_path, {"reconf.py": reconf, "reads.py": reads, "partial.py": partial})
    assert [v[1] for v in cold] == ["PASS"] * 3 and json.loads(cold[1][3])["same"] == [True, True, True]
    assert cold[2][3] == json.dumps({"n": 1})
    assert warm == cold


def test_a_scripts_main_module_globals_are_a_fresh_interpreters_warm_as_cold(tmp_path):
    """runpy.run_path gave a warm run's `__main__` other globals than `python k.py` gives: a dict
    for `__builtins__` (the module, cold), no `__loader__` (a SourceFileLoader, cold), `__package__`
    '' (None) and no `__annotations__`. `__builtins__.profile = ...` (the kernprof fallback) crashed
    warm with AttributeError where it passed cold, and so did `__loader__.get_data(__file__)`."""
    profile = ("try:\n    profile\nexcept NameError:\n    __builtins__.profile = lambda f: f\n"
               "@profile\ndef f():\n    return 1\nprint('BISECTK_RESULT {\"f\": %d}' % f())\n")
    names = ("import json, sys\nprint('BISECTK_RESULT ' + json.dumps({'builtins': type(__builtins__).__name__, "
             "'loader': type(__loader__).__name__, 'data': len(__loader__.get_data(__file__)), "
             "'package': __package__, 'annotations': __annotations__, 'spec': __spec__, "
             "'main': sys.modules['__main__'].__dict__ is globals()}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"profile.py": profile, "names.py": names})
    assert [v[1] for v in cold] == ["PASS", "PASS"], cold
    assert json.loads(cold[1][3])["builtins"] == "module"
    assert warm == cold


def test_a_script_recurses_as_deep_warm_as_cold(tmp_path):
    """The recursion limit is raised for a warm run by how deep its script starts; that was read by
    walking the worker's frames, which missed the calls made from C that the limit counts too: a
    script recursed three frames less deep warm than cold (995 against 998), so one that recursed
    to within three frames of the limit crashed warm only. The depth is now measured."""
    deep = ("import json, sys\nif len(sys.argv) > 1:\n    sys.setrecursionlimit(int(sys.argv[1]))\n"
            "def down(n):\n    try:\n        return down(n + 1)\n    except RecursionError:\n        return n\n"
            "print('BISECTK_RESULT ' + json.dumps({'depth': down(0), 'limit': sys.getrecursionlimit()}))\n")
    (tmp_path / "deep.py").write_text(deep)

    def depths(executor):
        return [run_command(executor, [sys.executable, "deep.py", *arg], cwd=tmp_path, timeout=120).result
                for arg in ([], ["120"], [])]
    cold = depths(LocalExecutor())
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = depths(pool)
        assert pool.stats["cold_runs"] == 0, pool.stats
    assert all(r.startswith("BISECTK_RESULT") for r in cold), cold
    assert warm == cold


def test_a_linked_script_imports_beside_its_target_warm_as_cold(tmp_path):
    """`python k.py` where k.py is a symbolic link puts the directory of the file it leads to
    first on sys.path (the interpreter resolves the script's path): a linked script imports the
    modules beside its target. The worker put the link's own directory there: the same script
    failed ModuleNotFoundError warm where it passed cold, or imported a same-named module from
    beside the link. The module it imports is the run's own, not kept for the next run."""
    real, link = tmp_path / "tools", tmp_path / "kernel"
    real.mkdir()
    link.mkdir()
    (real / "k.py").write_text("import json, helper\nprint('BISECTK_RESULT ' + json.dumps({'from': helper.WHERE}))\n")
    (real / "helper.py").write_text("WHERE = 'tools'\n")
    (link / "k.py").symlink_to(real / "k.py")

    def results(executor):
        return [run_command(executor, [sys.executable, "k.py"], cwd=link, timeout=120).result for _ in range(2)]
    cold = results(LocalExecutor())
    assert cold == ['BISECTK_RESULT {"from": "tools"}'] * 2, cold
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        first = results(pool)
        (real / "helper.py").write_text("WHERE = 'edited'\n")
        second = results(pool)
        assert pool.stats["cold_runs"] == 0, pool.stats
    assert first == cold
    assert second == ['BISECTK_RESULT {"from": "edited"}'] * 2


def test_a_child_a_run_never_waited_for_is_not_the_next_runs_child(tmp_path):
    """A child a run forked and never waited for (or one the pool ended after it) stayed the warm
    worker's zombie child: a later run's os.wait() collected it, where a fresh process has no
    child to wait for (ChildProcessError), and psutil counted it among the run's children."""
    forks = "import os\nif os.fork() == 0:\n    os._exit(0)\nprint('BISECTK_RESULT {}')\n"
    spawns = "import subprocess\nsubprocess.Popen(['sleep', '0.1'])\nprint('BISECTK_RESULT {}')\n"
    waits = ("import json, os, time\ntime.sleep(0.3)\ntry:\n    os.wait()\n    w = 'a child'\n"
             "except ChildProcessError:\n    w = 'none'\nprint('BISECTK_RESULT ' + json.dumps({'waited': w}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"forks.py": forks, "waits.py": waits, "spawns.py": spawns,
                                           "waits_again.py": waits})
    assert [v[3] for v in cold] == ["{}", json.dumps({"waited": "none"}), "{}", json.dumps({"waited": "none"})]
    assert warm == cold


def test_loggers_a_run_made_or_configured_are_a_fresh_processs_in_the_next_run(tmp_path):
    """Only the root logger was put back: a named logger lived on in the worker with what a run
    gave it. A script that adds a handler to logging.getLogger(__name__) had two handlers in the
    second warm run and three in the third (each line logged once per earlier run, into that
    run's output), and a level or `propagate = False` set on a library's logger held for every
    later run."""
    logs = ("import json, logging, sys\nlog = logging.getLogger(__name__)\n"
            "log.addHandler(logging.StreamHandler(sys.stderr))\nlog.setLevel(logging.INFO)\nlog.info('hello')\n"
            "print('BISECTK_RESULT ' + json.dumps({'handlers': len(log.handlers), 'level': log.level}))\n")
    quiets = ("import logging\nlib = logging.getLogger('kernels.lib')\nlib.setLevel(logging.ERROR)\n"
              "lib.propagate = False\nlib.addHandler(logging.NullHandler())\nprint('BISECTK_RESULT {}')\n")
    reads = ("import json, logging\nlib = logging.getLogger('kernels.lib')\n"
             "print('BISECTK_RESULT ' + json.dumps({'handlers': len(lib.handlers), 'level': lib.level, "
             "'propagate': lib.propagate, 'disabled': lib.disabled}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"logs.py": logs, "logs2.py": logs, "logs3.py": logs,
                                           "quiets.py": quiets, "reads.py": reads})
    assert {v[3] for v in cold[:3]} == {json.dumps({"handlers": 1, "level": 20})}, cold
    assert json.loads(cold[4][3])["propagate"] is True
    assert warm == cold
    assert [v[2] for v in warm] == [""] * 5


def test_sys_argv0_is_the_script_as_typed_warm_as_cold(tmp_path):
    """A warm run's sys.argv[0] was the script's absolute path where `python k.py` gives it as
    typed ('k.py', './sub/k.py'): a subject that prints it, names an output after it or compares it
    with a relative path read another value warm. `__file__` stays absolute, as the interpreter makes it."""
    (tmp_path / "sub").mkdir()
    shows = ("import json, os, sys\nprint('BISECTK_RESULT ' + json.dumps({'argv0': sys.argv[0], "
             "'file': os.path.relpath(__file__), 'abs': os.path.isabs(__file__)}))\n")
    (tmp_path / "sub" / "k.py").write_text(shows)
    (tmp_path / "k.py").write_text(shows)
    argvs = ([sys.executable, "k.py"], [sys.executable, "./sub/k.py", "x"], [sys.executable, str(tmp_path / "k.py")])

    def results(executor):
        return [run_command(executor, a, cwd=tmp_path, timeout=120).result for a in argvs]
    cold = results(LocalExecutor())
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = results(pool)
        assert pool.stats["cold_runs"] == 0, pool.stats
    assert [json.loads(r.split(" ", 1)[1])["argv0"] for r in cold] == ["k.py", "./sub/k.py", str(tmp_path / "k.py")]
    assert warm == cold


def test_sys_orig_argv0_is_the_program_as_typed_warm_as_cold(tmp_path):
    """A warm run's sys.orig_argv[0] was the worker's sys.executable (an absolute path) where a
    fresh `python3 k.py` has 'python3', the program as the command names it."""
    (tmp_path / "k.py").write_text("import json, sys\nprint('BISECTK_RESULT ' + json.dumps({'orig': sys.orig_argv}))\n")
    program = os.path.basename(sys.executable)
    env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    cold = run_command(LocalExecutor(), [program, "k.py", "x"], cwd=tmp_path, env=env, timeout=120).result
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as pool:
        warm = run_command(pool, [program, "k.py", "x"], cwd=tmp_path, env=env, timeout=120).result
        assert pool.stats["cold_runs"] == 0, pool.stats
    assert json.loads(cold.split(" ", 1)[1])["orig"] == [program, "k.py", "x"]
    assert warm == cold


def test_a_multiprocessing_child_sends_its_queue_data_in_every_warm_run_as_cold(tmp_path):
    """multiprocessing's exit function runs once a process (`util._exiting`): imported by a warm
    run, it ran as that run's atexit handler and stayed loaded, so in every later run of the worker
    a forked Process skipped its own at its end, its Queue's feeder thread never sent, and the
    parent waited on `q.get()`: a subject passing cold hung in every second warm run."""
    code = ("import json, multiprocessing as mp\n"
            "def work(q):\n    q.put(42)\n"
            "if __name__ == '__main__':\n"
            "    ctx = mp.get_context('fork')\n    q = ctx.Queue()\n"
            "    p = ctx.Process(target=work, args=(q,))\n    p.start()\n"
            "    v = q.get(timeout=20)\n    p.join()\n"
            "    print('BISECTK_RESULT ' + json.dumps({'v': v, 'exit': p.exitcode}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"first.py": code, "second.py": code})
    assert [v[3] for v in cold] == [json.dumps({"exit": 0, "v": 42})] * 2, cold
    assert warm == cold


def test_a_weakref_finalizer_fires_in_every_warm_run_as_cold(tmp_path):
    """weakref.finalize registers its exit function on the first finalizer a process makes, and
    that function marks the class shut down (`finalize._shutdown`): made first by a warm run, it
    ran as that run's atexit handler, and no finalizer of a later run of the worker ever fired
    (a TemporaryDirectory left to the garbage collector was never removed)."""
    code = ("import json, weakref\nclass A:\n    pass\nfired = []\na = A()\nweakref.finalize(a, fired.append, 1)\n"
            "del a\nprint('BISECTK_RESULT ' + json.dumps({'fired': len(fired)}))\n")
    cold, warm = _cold_and_warm(tmp_path, {"first.py": code, "second.py": code})
    assert [v[3] for v in cold] == [json.dumps({"fired": 1})] * 2, cold
    assert warm == cold
