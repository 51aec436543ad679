"""SIGHUP (the terminal closed, the ssh session dropped) ends a command as Ctrl-C does -- subjects
ended, temporary files removed, the user's repository untouched, the ledger closed and resumable
-- and its exit status says "hangup" (129); a signal ignored when bisectk started stays ignored
(engine/interrupts.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT, err_spec
from tests.e2e.test_interrupts import _counting_repo

SUBJECT = """
import json, os, sys, time
open(os.environ["MARK"], "a").write("x")
time.sleep(float(os.environ.get("NAP", "0.2")))
a = dict(x.split("=") for x in sys.argv[1:])
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if a["a"] == "1" and a["c"] == "1" else 0.0}))
"""


def _spec(d):
    return err_spec(d, "hup", SUBJECT, "abcd")


def _env(tmp_path, **more):
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures")]),
                XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"), MARK=str(tmp_path / "mark"),
                **more)


def _ours_left(tmp_path) -> list[str]:
    """bisectk's temporary files, and the processes that still carry this test's MARK."""
    mark = str(tmp_path / "mark").encode()
    left = [e.name for e in (tmp_path / "tmp").iterdir() if e.name.startswith("bisectk-")]
    deadline = time.monotonic() + 5      # a supervisor ends its subject within its grace
    while True:
        procs = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mark in f.read():
                        procs.append(pid)
            except OSError:
                pass
        if not procs or time.monotonic() > deadline:
            return left + [f"process {p}" for p in procs]
        time.sleep(0.1)


def _injected_env(tmp_path, at, call, sig="HUP"):
    """The environment of an injected command (a resume uses it too: it is part of the memo key)."""
    return _env(tmp_path, INJECT_AT=at, INJECT_CALL=str(call), INJECT_SIGNAL=sig)


def _injected(args, tmp_path, at, call, sig="HUP"):
    env = _injected_env(tmp_path, at, call, sig)
    return subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_a_hangup_in_the_search_cleans_up_and_exits_129(tmp_path):
    spec = _spec(tmp_path)
    args = ["ablate", spec, "--ledger", tmp_path / "l.db", "--jobs", "3"]
    p = _injected(args, tmp_path, "bisectk.engine.oracle:Trials.observe", 4)
    assert p.returncode == 129, (p.returncode, p.stderr[-1500:])
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    assert not _ours_left(tmp_path)
    assert sorted(f.name for f in tmp_path.iterdir() if f.name.startswith("l.db")) == ["l.db"]   # closed
    q = subprocess.run([sys.executable, "-m", "bisectk", *map(str, args), "--resume"], capture_output=True, text=True,
                       env=_injected_env(tmp_path, "bisectk.engine.oracle:Trials.observe", 4), timeout=300,
                       cwd=tmp_path)
    assert q.returncode == 0 and "answered from the ledger" in q.stdout, q.stdout[-1500:]


def test_a_hangup_of_a_bisection_leaves_the_repository_as_it_was(tmp_path):
    from tests.fixtures.gitrepo import git
    r = _counting_repo(tmp_path, 12)
    (r / "v").write_text("edited, not committed\n")
    before = [git(r, *a) for a in (("rev-parse", "HEAD"), ("status", "--porcelain"), ("stash", "list"))]
    p = _injected(["bisect", "--repo", r, "--good", "HEAD~11", "--bad", "HEAD",
                   "--run", f"sh -c ': > {tmp_path / 'mark'}; sleep 0.2; [ $(cat v) -lt 5 ]'"],
                  tmp_path, "bisectk.engine.oracle:Trials.observe", 3)
    assert p.returncode == 129, (p.returncode, p.stderr[-1500:])
    assert [git(r, *a) for a in (("rev-parse", "HEAD"), ("status", "--porcelain"), ("stash", "list"))] == before
    assert not [e.name for e in (tmp_path / "tmp").iterdir() if e.name.startswith("bisectk-")]


def test_a_terminal_that_hung_up_takes_what_is_printed_without_an_error(tmp_path):
    """The terminal closes (its master side), then SIGHUP comes: the best result so far is printed
    to nowhere, not an internal error for the EIO of a write to a terminal that hung up."""
    spec = _spec(tmp_path)
    master, slave = os.openpty()
    with open(tmp_path / "stderr.txt", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), "--ledger", str(tmp_path / "l.db")],
                             cwd=tmp_path, env=_env(tmp_path), stdin=subprocess.DEVNULL, stdout=slave, stderr=err,
                             start_new_session=True)
    os.close(slave)
    deadline = time.monotonic() + 120
    try:
        while not ((tmp_path / "mark").exists() and len((tmp_path / "mark").read_text()) >= 4):
            assert time.monotonic() < deadline and p.poll() is None, "the search never began"
            if select.select([master], [], [], 0.05)[0]:
                os.read(master, 65536)
    finally:
        os.close(master)
        p.send_signal(signal.SIGHUP)
    assert p.wait(120) == 129
    said = (tmp_path / "stderr.txt").read_text()
    assert "internal error" not in said and "Traceback" not in said, said[-1500:]
    assert not _ours_left(tmp_path)


def test_signals_ignored_at_the_start_stay_ignored(tmp_path):
    """`nohup bisectk ...` (SIGHUP ignored) or a shell's background job (SIGINT ignored): the
    command goes on to its answer, every command alike (ablate's and diff's own handlers too)."""
    spec = _spec(tmp_path)

    def ignoring():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    p = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), "--ledger", str(tmp_path / "l.db")],
                         cwd=tmp_path, env=_env(tmp_path, NAP="0.4"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=ignoring)
    deadline = time.monotonic() + 120
    while not ((tmp_path / "mark").exists() and len((tmp_path / "mark").read_text()) >= 3):
        assert time.monotonic() < deadline and p.poll() is None, "the search never began"
        time.sleep(0.05)
    for sig in (signal.SIGHUP, signal.SIGINT):
        p.send_signal(sig)
        time.sleep(0.2)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0 and "culprit" in out, (p.returncode, err[-1500:])


def test_a_signal_while_bisectk_starts_ends_it_cleanly(tmp_path):
    """Ctrl-C, SIGTERM or SIGHUP in the first fraction of a second, while the CLI's modules load
    beside the early history walk's thread: exit 130 (129 for a hangup) and one line, where
    before a Ctrl-C gave a traceback (or hung the command for good: importlib's module locks
    broken by the KeyboardInterrupt, both threads waiting on them) and SIGTERM or SIGHUP killed
    bisectk where it stood."""
    from tests.fixtures.gitrepo import git
    r = _counting_repo(tmp_path, 8)
    head = git(r, "rev-parse", "HEAD")
    # the delay counts from bisectk's first handler (interrupts.defer, __main__'s first step): before
    # it, the interpreter's own start and the import of that module take Python's default action
    start = ("import os, sys, threading\nfrom bisectk.__main__ import main\nfrom bisectk.engine import interrupts\n"
             "defer, delay, sig = getattr(interrupts, 'defer', lambda: None), float(sys.argv[1]), int(sys.argv[2])\n"
             "def timed(*early):\n    defer(*early)\n"
             "    threading.Timer(delay, os.kill, (os.getpid(), sig)).start()\n"
             "if hasattr(interrupts, 'defer'):\n    interrupts.defer = timed\nelse:\n    timed()\n"
             "sys.argv = ['bisectk', *sys.argv[3:]]\nmain()\n")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGHUP, 129), (signal.SIGTERM, 130)):
        for delay in (0.0, 0.03, 0.08, 0.15):
            p = subprocess.Popen([sys.executable, "-c", start, str(delay), str(int(sig)), "bisect", "--repo", str(r),
                                  "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--fresh"],
                                 cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            _, err = p.communicate(timeout=60)
            assert p.returncode == code and "Traceback" not in err, (sig, delay, p.returncode, err[-1500:])
    assert git(r, "rev-parse", "HEAD") == head and not git(r, "status", "--porcelain")
    assert not _ours_left(tmp_path)


def test_a_hangup_said_twice_still_lets_the_answer_out(tmp_path):
    """A hangup may come twice (the kernel's to the shell, the shell's to its jobs, a second
    from a launcher): the second is not the user insisting, as a second Ctrl-C is. The answer
    the search found is stored and printed (exit 129), where the second SIGHUP tore it away."""
    r = _counting_repo(tmp_path, 8)
    env = dict(_injected_env(tmp_path, "bisectk.engine.session:Session.record", 1), INJECT_TIMES="2")
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "bisect", "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 129, (p.returncode, p.stderr[-1500:])
    assert "first bad commit" in p.stdout and "c5" in p.stdout, p.stdout[-1500:]
