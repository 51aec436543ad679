"""The total cap on run logs (run/logcap.py): the oldest finished commands' logs pruned past it,
a running command's never, the ledger's rows kept, and a report that says a log was pruned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.errors import BisectkError
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome, Run
from bisectk.run import logcap
from tests.conftest import bisectk, err_spec

MIB = 1 << 20


def _logs(db: Ledger, session: int, size: int) -> Path:
    """A session's run log of `size` bytes, where the runner puts it."""
    d = logcap.session_dir(db.path, session) / "0123456789ab" / "0-run"
    d.mkdir(parents=True)
    (d / "stdout.log").write_bytes(b"x" * size)
    (d / "stderr.log").write_bytes(b"")
    return d


def _finished(db: Ledger, size: int) -> tuple[int, Path]:
    s = db.open_session("run", "fp", {})
    log = _logs(db, s, size)
    db.add_run("fp", f"k{s}", Run(Outcome.PASS, log_path=str(log)), s)
    db.close_session(s, {"command": "run"})
    db.settle_logs(s, logcap.dir_size(logcap.session_dir(db.path, s)))
    return s, log


def test_over_the_cap_the_oldest_commands_logs_go_and_their_runs_stay(tmp_path):
    db = Ledger(tmp_path / "ledger.db")
    (s1, log1), (s2, log2) = _finished(db, MIB), _finished(db, MIB)
    s3 = db.open_session("run", "fp", {})
    log3 = _logs(db, s3, MIB)
    assert logcap.settle(db, s3, 2 * MIB) == [logcap.session_dir(db.path, s1)]
    assert not log1.exists() and log2.exists() and log3.exists()
    assert db.log_total() == 2 * MIB
    assert db.runs("fp", f"k{s1}")[0].log_path == str(log1)        # the observation stays
    assert logcap.gone(db, str(log1)) == "pruned" and logcap.gone(db, str(log2)) is None
    assert logcap.settle(db, s3, 0) == [logcap.session_dir(db.path, s2)]   # its own are kept
    assert log3.exists()


def test_under_the_cap_nothing_is_walked_but_the_commands_own_logs(tmp_path, monkeypatch):
    db = Ledger(tmp_path / "ledger.db")
    for _ in range(3):
        _finished(db, 1000)
    s = db.open_session("run", "fp", {})
    _logs(db, s, 10)
    walked = []
    real = logcap.dir_size
    monkeypatch.setattr(logcap, "dir_size", lambda p: walked.append(Path(p)) or real(p))
    assert logcap.settle(db, s, MIB) == []
    assert walked == [logcap.session_dir(db.path, s)]


def test_a_session_dropped_as_empty_leaves_no_log_directory(tmp_path):
    db = Ledger(tmp_path / "ledger.db")
    s = db.open_session("run", "fp", {})
    log = _logs(db, s, 0)       # a run that never started: no row is stored for it
    db.drop_session_if_empty(s)
    assert logcap.settle(db, s, MIB) == [] and not logcap.session_dir(db.path, s).exists() and not log.exists()


HOLD = """
import sys
from bisectk.ledger import Ledger
db = Ledger(sys.argv[1])
print(db.open_session("ablate", "fp", {}), flush=True)
sys.stdin.read()
"""


def test_a_running_commands_logs_are_never_pruned_and_a_killed_ones_are(tmp_path):
    """Another command sharing the ledger (a live process that has not ended) keeps its logs
    however old; one killed before it settled is measured and pruned like a finished one."""
    path = tmp_path / "ledger.db"
    Ledger(path).close()
    live = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    killed = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        s_live, s_killed = int(live.stdout.readline()), int(killed.stdout.readline())
        killed.kill()
        killed.wait(30)
        db = Ledger(path)
        live_log, killed_log = _logs(db, s_live, MIB), _logs(db, s_killed, MIB)
        s = db.open_session("run", "fp", {})
        _logs(db, s, MIB)
        removed = logcap.settle(db, s, MIB)
        assert removed == [logcap.session_dir(path, s_killed)] and not killed_log.exists()
        assert live_log.exists()
        assert logcap.prune(db, 0, keep=s) == [] and live_log.exists()
    finally:
        live.stdin.close()
        live.wait(30)
        killed.wait(30)


def test_the_cap_is_read_from_the_environment_and_a_bad_value_is_one_line():
    assert logcap.cap_bytes({}) == logcap.DEFAULT_CAP_MB * MIB
    assert logcap.cap_bytes({logcap.CAP_VAR: "3"}) == 3 * MIB
    for bad in ("-1", "1.5", "lots"):
        with pytest.raises(BisectkError, match="BISECTK_LOG_CAP_MB"):
            logcap.cap_bytes({logcap.CAP_VAR: bad})


NOISY = "import sys\nprint('x' * 700_000)\nprint('BISECTK_RESULT {\"err\": %d}' % int(sys.argv[1][2:]))\n"


def test_commands_past_the_cap_prune_the_oldest_and_its_report_says_so(tmp_path):
    spec = err_spec(tmp_path, "noisy", NOISY, factors="a")
    env = {logcap.CAP_VAR: "1"}
    for _ in range(3):
        bisectk("run", spec, "--config", "bad", "--fresh", cwd=tmp_path, env=env, check=1)
    logs = tmp_path / ".bisectk" / "logs"
    assert sorted(p.name for p in logs.iterdir()) == ["ledger-3"]   # 0.7 MB each, 1 MiB cap: the last kept
    ledger = tmp_path / ".bisectk" / "ledger.db"
    p = bisectk("report", ledger, "--session", "1", "--json", check=0)
    (run,) = json.loads(p.stdout)["verdict"]["runs"]
    assert run["log_path"] is None and run["log_gone"].startswith("pruned: ") and "ledger-1" in run["log_gone"]
    assert run["stdout_tail"]                                            # what was kept of it stays
    p = bisectk("report", ledger, "--session", "1", check=0)
    assert "FAIL" in p.stdout and not p.stderr
    p = bisectk("report", ledger, "--session", "3", "--json", check=0)
    assert Path(json.loads(p.stdout)["verdict"]["runs"][0]["log_path"]).is_dir()
    p = bisectk("run", spec, "--config", "bad", cwd=tmp_path, env={logcap.CAP_VAR: "x"})
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "BISECTK_LOG_CAP_MB" in p.stderr


def test_ledger_gc_prunes_to_the_cap_and_removes_the_older_layout(tmp_path):
    db = Ledger(tmp_path / "ledger.db")
    (s1, log1), (s2, log2) = _finished(db, MIB), _finished(db, MIB)
    db.close()
    legacy = tmp_path / "logs" / "0123456789ab" / "0-run"
    legacy.mkdir(parents=True)
    unindexed = tmp_path / "logs" / "ledger-77" / "0123456789ab" / "0-run"      # e.g. a salvaged ledger's
    unindexed.mkdir(parents=True)
    other = tmp_path / "logs" / "other-1"       # another ledger's in the same directory: not this one's to judge
    other.mkdir()
    p = bisectk("ledger", "gc", "--ledger", tmp_path / "ledger.db", env={logcap.CAP_VAR: "1"}, check=0)
    assert "pruned the run logs of 1 command" in p.stdout and "2 directories no session of it holds" in p.stdout
    assert not log1.exists() and log2.exists() and not legacy.parent.exists() and not (tmp_path / "logs" / "ledger-77").exists()
    assert other.exists()
    p = bisectk("ledger", "gc", "--ledger", tmp_path / "nothing.db")
    assert p.returncode == 2 and "no ledger file" in p.stderr


def test_ledger_gc_and_the_cap_leave_the_users_files_in_a_logs_folder_beside_the_ledger(tmp_path):
    """--ledger bisect.db in a project puts the run logs in its `logs/`, often a folder of the
    user's own: `ledger gc` removed `logs/3f2a9c1b7d4e/` (a commit's short sha, the older layout's
    shape) and `logs/bisect-3/` (a session's shape, none indexed) whole, the user's files with them.
    Only run logs in bisectk's layout go; a file of anyone else's stays, with its directories."""
    db = Ledger(tmp_path / "bisect.db")
    (s1, log1), (s2, log2) = _finished(db, MIB), _finished(db, MIB)
    db.close()
    sha = tmp_path / "logs" / "3f2a9c1b7d4e"
    sha.mkdir(parents=True)
    (sha / "results.csv").write_text("mine\n")
    (tmp_path / "logs" / "bisect-3").mkdir()
    (tmp_path / "logs" / "bisect-3" / "notes.txt").write_text("mine\n")
    (log1.parent.parent / "mine.txt").write_text("mine too\n")          # beside the oldest session's logs
    legacy = tmp_path / "logs" / "0123456789ab" / "0-run"                 # bisectk's own older layout
    legacy.mkdir(parents=True)
    (legacy / "stdout.log").write_text("out\n")
    p = bisectk("ledger", "gc", "--ledger", tmp_path / "bisect.db", env={logcap.CAP_VAR: "1"}, check=0)
    assert "pruned the run logs of 1 command" in p.stdout
    assert (sha / "results.csv").read_text() == "mine\n"
    assert (tmp_path / "logs" / "bisect-3" / "notes.txt").read_text() == "mine\n"
    assert (log1.parent.parent / "mine.txt").read_text() == "mine too\n" and not log1.exists()
    assert not legacy.parent.exists() and log2.exists()


def test_a_relative_ledger_stores_absolute_log_paths_and_an_old_relative_one_is_found(tmp_path):
    spec = err_spec(tmp_path, "noisy", NOISY, factors="a")
    (tmp_path / "sub").mkdir()      # a --ledger's directory is not made (engine/session.py)
    bisectk("run", spec, "--config", "bad", "--ledger", "sub/l.db", cwd=tmp_path, check=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = bisectk("report", tmp_path / "sub" / "l.db", "--json", cwd=elsewhere, check=0)
    (run,) = json.loads(p.stdout)["verdict"]["runs"]
    assert Path(run["log_path"]).is_absolute() and (Path(run["log_path"]) / "stdout.log").is_file()
    db = Ledger(tmp_path / "sub" / "l.db")       # as a record stored before: relative to its command's directory
    relative = str(Path("sub") / Path(run["log_path"]).relative_to(tmp_path / "sub"))
    assert logcap.gone(db, relative) is None
    assert logcap.gone(db, relative.replace("0-run", "9-run")) == "missing"


QUIET = "import sys\nprint('x' * 400_000)\nprint('BISECTK_RESULT {\"err\": %d}' % int(sys.argv[1][2:]))\n"


def test_a_command_keeps_the_logs_of_the_runs_it_answered_from_the_ledger(tmp_path):
    """A run answered from the ledger keeps its old session's log path, and the cap pruned by age
    alone: a command whose new runs went past the cap removed, as it ended, the log its first run
    (from the ledger) had just been printed with."""
    spec = err_spec(tmp_path, "noisy", QUIET, factors="a")
    env = {logcap.CAP_VAR: "1"}
    one = ("run", spec, "--set", "a=2", "--timeout", "30")     # a fixed watchdog: one run, 0.4 MB of log
    bisectk(*one, cwd=tmp_path, env=env, check=1)                                               # ledger-1
    p = bisectk(*one, "--repeat", "3", "--json", cwd=tmp_path, env=env, check=1)                # 2: two more runs
    first, *made = json.loads(p.stdout)["runs"]
    assert "ledger-1" in first["log_path"] and all("ledger-2" in r["log_path"] for r in made), p.stdout
    assert Path(first["log_path"]).is_dir()         # 1.2 MB in all, past the 1 MiB cap: kept all the same


def test_the_cap_prunes_the_least_recently_used_commands_logs_first(tmp_path):
    """A command answered from an old session's runs counts as using its logs: a later command over
    the cap prunes a session used longer ago first, though it was opened after."""
    spec = err_spec(tmp_path, "noisy", QUIET, factors="a")
    env = {logcap.CAP_VAR: "1"}
    for a in (2, 3, 2, 4):      # 0.4 MB each, but the third, answered from the first's run
        bisectk("run", spec, "--set", f"a={a}", "--timeout", "30", cwd=tmp_path, env=env, check=1)
    logs = tmp_path / ".bisectk" / "logs"
    assert sorted(x.name for x in logs.iterdir()) == ["ledger-1", "ledger-4"]   # 1.2 MB: ledger-2 went
