"""The ledger's memo across commands, end to end: what one command stores must answer the next
only when the inputs it keyed were the files its runs read."""
import os

from tests.conftest import bisectk

SUBJECT = '''import json, os, pathlib
stamps = pathlib.Path(os.environ["STAMPS"])
n = len(stamps.read_text().splitlines()) + 1 if stamps.exists() else 1
stamps.write_text("run\\n" * n)
edit = pathlib.Path(os.environ["STAMPS"] + ".edit")
if edit.exists() and n == int(edit.read_text()):
    pathlib.Path("helper.py").write_text("ERR = 1.00\\n")   # the kernel edited while this run goes on
import helper
print("BISECTK_RESULT " + json.dumps({"err": helper.ERR}))
'''


def test_an_edit_during_the_last_run_is_not_answered_from_the_ledger(tmp_path):
    """The tree is compared between runs at most once a second: an edit made during a command's
    last run (the runs a few tenths of a second apart) went unseen, the run of the edited kernel
    stayed filed under the key of the kernel as it was, and the next command, the kernel put
    back, was answered by it: FAIL, from the ledger, for a kernel that passes."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "helper.py").write_text("ERR = 0.0\n")
    (d / "s.py").write_text(SUBJECT)
    (d / "spec.toml").write_text('name = "self-edit"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    stamps = tmp_path / "stamps"
    (tmp_path / "stamps.edit").write_text("2")      # the second, and last, run edits helper.py
    env = {"STAMPS": str(stamps)}
    args = ("run", d / "spec.toml", "--config", "good", "--repeat", "2", "--ledger", tmp_path / "l.db")
    first = bisectk(*args, cwd=d, env=env, check=1)
    assert (d / "helper.py").read_text() == "ERR = 1.00\n"
    assert "changed while this command ran" in first.stderr, first.stderr
    assert "2 taken back out of the ledger" in first.stderr, first.stderr
    (d / "helper.py").write_text("ERR = 0.0\n")     # put back
    os.unlink(tmp_path / "stamps.edit")
    again = bisectk(*args, cwd=d, env=env, check=0)
    assert "from the ledger" not in again.stdout + again.stderr, again.stderr
    assert len(stamps.read_text().splitlines()) == 4
    third = bisectk(*args, cwd=d, env=env, check=0)   # nothing moved: answered from the ledger
    assert "from the ledger" in third.stdout and len(stamps.read_text().splitlines()) == 4


def test_a_diff_of_the_script_its_command_runs_is_answered_from_the_ledger_again(tmp_path):
    """diff's runs rewrite the script the command names (`--run "python run.py"`, run.py differs
    between GOOD and BAD) in its scratch tree at every run, by design: the in-run check took that
    for an edit, said 'run.py changed while this command ran', and kept none of the runs, so
    every later diff of the same pair ran everything again."""
    body = "A = {a}\nB = 2\n" + "\n" * 5 + "import sys\nsys.exit(1 if A == 5 else 0)\n"
    for side, a in (("good", 1), ("bad", 5)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.py").write_text(body.format(a=a))
    args = ("diff", "good", "bad", "--run", "python run.py", "--ledger", tmp_path / "l.db")
    first = bisectk(*args, cwd=tmp_path, check=0)
    assert "changed while this command ran" not in first.stderr, first.stderr
    again = bisectk(*args, cwd=tmp_path, check=0)
    assert "runs: 0 executed" in again.stdout, again.stdout


def test_the_runs_of_fresh_take_the_place_of_those_it_set_aside(tmp_path):
    """`--fresh` is the remedy for an answer the ledger gives wrongly (what changed is no input the
    key covers: here a data file the command passes by name). Its runs were filed under a key of
    their own (`#fresh-<session>`), which no later command computes: the next command without
    --fresh was answered again by the run --fresh had set aside (PASS, from the ledger, right
    after --fresh said FAIL), and a --resume of an interrupted --fresh search reused none of
    its runs. The runs --fresh makes now replace the stored ones of each configuration."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text('import json, sys\nerr = float(open(sys.argv[1]).read())\n'
                            'print("BISECTK_RESULT " + json.dumps({"err": err}))\n')
    (d / "limit.dat").write_text("0\n")
    (d / "spec.toml").write_text('name = "data"\n[subject]\ncommand = ["python", "s.py", "limit.dat"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    args = ("run", d / "spec.toml", "--config", "good", "--ledger", tmp_path / "l.db")
    assert "PASS" in bisectk(*args, cwd=d, check=0).stdout
    (d / "limit.dat").write_text("1\n")             # no input of the key: the stored PASS answers
    assert "from the ledger" in bisectk(*args, cwd=d, check=0).stdout
    fresh = bisectk(*args, "--fresh", cwd=d, check=1).stdout
    assert "FAIL" in fresh and "from the ledger" not in fresh, fresh
    again = bisectk(*args, cwd=d, check=1).stdout
    assert "FAIL" in again and "from the ledger" in again, again
    # three runs asked: the first is --fresh's, two are made now, and --fresh again replaces all three
    assert "[3/3 failed]" in bisectk(*args, "--repeat", "3", cwd=d, check=1).stdout
    (d / "limit.dat").write_text("0\n")
    assert "PASS" in bisectk(*args, "--repeat", "2", "--fresh", cwd=d, check=0).stdout
    last = bisectk(*args, "--repeat", "2", cwd=d, check=0).stdout
    assert "PASS" in last and "from the ledger" in last, last



SLOW_WHEN_MARKED = ('import json, os, time\nif os.path.exists("slow"):\n'
                    '    open("pid", "w").write(str(os.getpid()))\n    time.sleep(60)\n'
                    'print("BISECTK_RESULT " + json.dumps({"err": 0.0}))\n')


def _slow_when_marked(tmp_path, name: str):
    """A project whose subject passes at once, or sits 60 s once a file `slow` is there (its pid
    written to `pid` first); the spec's directory and a `bisectk run` of its good side."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text(SLOW_WHEN_MARKED)
    (d / "spec.toml").write_text(f'name = "{name}"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    return d, ("run", d / "spec.toml", "--config", "good", "--ledger", tmp_path / "l.db")


def _stopped_while_slow(d, args, stop):
    """`bisectk *args` started with `slow` marked; once its subject runs, `stop(process, subject pid)`
    signals what it will; the command's exit code, stdout and stderr (`slow` taken away after)."""
    import subprocess
    import sys
    import time
    (d / "slow").touch()
    p = subprocess.Popen([sys.executable, "-m", "bisectk", *map(str, args)], cwd=d, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (d / "pid").exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (d / "pid").exists(), p.poll()
        time.sleep(0.1)     # the pid written: the subject is in its sleep
        stop(p, int((d / "pid").read_text()))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    (d / "slow").unlink()
    return p.returncode, out, err


def test_an_interrupted_fresh_run_keeps_the_stored_run_it_was_to_replace(tmp_path):
    """`--fresh` deleted a configuration's stored runs before its own run began: a Ctrl-C (or a CI
    job's SIGTERM) during that run left the configuration with no observation at all. The stored
    runs now go only when the run that replaces them is recorded. (The signal comes from outside,
    once the run has begun: an injected one would need variables that are part of the key.)"""
    import signal
    d, args = _slow_when_marked(tmp_path, "keep")
    assert "PASS" in bisectk(*args, cwd=d, check=0).stdout
    code, out, err = _stopped_while_slow(d, (*args, "--fresh"), lambda p, _pid: p.send_signal(signal.SIGTERM))
    assert code == 130, (code, out[-800:], err[-800:])
    again = bisectk(*args, cwd=d, check=0).stdout
    assert "PASS" in again and "from the ledger" in again, again


def test_a_subject_the_ci_stopped_just_before_bisectk_is_not_stored_as_its_crash(tmp_path):
    """A CI job's end (or a container's stop) signals every process of the job: the subject died of
    SIGTERM a moment before bisectk got its own, and the run was stored as the configuration's
    crash, which every later command answered from the ledger. A run ended by SIGTERM, SIGINT or
    SIGHUP not of the watchdog's sending waits a moment for the command's own signal before it is
    stored; here it came, so the next command runs the configuration again."""
    import os
    import signal
    import time

    def ci_stop(p, pid):        # the job's processes, the subject first
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.1)     # a CI stop's signals come together: bisectk waits 1 s (OUTSIDE_SIGNAL_GRACE_S);
        p.send_signal(signal.SIGTERM)   # 0.3 s left a loaded machine's handler 0.7 s of room
    d, args = _slow_when_marked(tmp_path, "ci")
    code, out, err = _stopped_while_slow(d, args, ci_stop)
    assert code == 130, (code, out[-800:], err[-800:])
    again = bisectk(*args, cwd=d, check=0).stdout
    assert "PASS" in again and "from the ledger" not in again, again
