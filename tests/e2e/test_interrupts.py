"""Ctrl-C late in an ablation (issue 22, item 8): once the search has results, an interrupt prints
the best result so far (exit 1, the README's table), never exit 130 with nothing. The signal is sent
when the code reaches a named point (tests/fixtures/inject_sigint.py), not after a sleep."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, err_spec

SUBJECT = """
import json, sys
a = dict(x.split("=") for x in sys.argv[1:])
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if a["a"] == "1" and a["c"] == "1" else 0.0}))
"""


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return err_spec(tmp_path_factory.mktemp("sigint"), "sigint", SUBJECT, "abcde")


def ablate_interrupted(spec, tmp_path, at: str, call: int = 1, *extra):
    env = dict(os.environ, INJECT_AT=at, INJECT_CALL=str(call), PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "ablate", str(spec),
                           "--ledger", str(tmp_path / "l.db"), *extra], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)


# (where the signal arrives, which call) -> what the search had when it came
LATE = [
    ("bisectk.search.tester:Tester._record", 3),          # between runs, mid-search
    ("bisectk.search.group:next_member", 2),              # in the search's own bookkeeping
    ("bisectk.search.interaction:minimize_removals", 1),  # settling the set found
    ("bisectk.search.sets:hitting_sets", 1),              # looking for other sets
    ("bisectk.search.ablation:build_result", 1),          # building the search's result
    ("bisectk.engine.ablate:attempt_records", 1),         # building the record
    ("bisectk.engine.ablate:different_failures", 1),
    ("bisectk.engine.records:AblationRecord.to_dict", 1),  # storing it
    ("bisectk.engine.session:Session.record", 1),
    ("bisectk.report.ablation:print_summary", 1),          # printing it
]


@pytest.mark.parametrize("at,call", LATE, ids=[f"{a.split(':')[1]}#{c}" for a, c in LATE])
def test_an_interrupt_after_results_exist_prints_the_result(spec, tmp_path, at, call):
    p = ablate_interrupted(spec, tmp_path, at, call)
    assert p.returncode == 1, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert "key differences" in p.stdout, p.stdout
    assert "culprit" in p.stdout or "shown necessary" in p.stdout
    assert "interrupted before the endpoints" not in p.stderr and "Traceback" not in p.stderr


def test_the_json_document_is_whole_when_interrupted_while_writing_it(spec, tmp_path):
    p = ablate_interrupted(spec, tmp_path, "bisectk.engine.records:AblationRecord.to_dict", 1, "--json")
    assert p.returncode == 1, p.stderr[-1500:]
    doc = json.loads(p.stdout)
    assert doc["culprits"] == ["a", "c"]


def test_an_interrupt_during_the_first_run_is_130_with_nothing_to_report(spec, tmp_path):
    """... and the --json-out and --json documents asked for say so (a CI job's timeout), as
    bisect's and triage's do: ablate wrote neither."""
    doc = tmp_path / "a.json"
    p = ablate_interrupted(spec, tmp_path, "bisectk.engine.oracle:Trials.observe", 1, "--json-out", str(doc), "--json")
    assert p.returncode == 130 and "interrupted before the endpoints were verified" in p.stderr, p.stderr
    for data in (json.loads(doc.read_text()), json.loads(p.stdout)):
        assert data["command"] == "ablate" and data["interrupted"] is True and data["exit_code"] == 130, data
        assert data["complete"] is False and data["culprits"] == [], data


def test_a_diff_interrupted_before_any_result_writes_the_documents_asked_for(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 0), (bad, 1)):
        side.mkdir()
        (side / "v.txt").write_text(f"a\nb\n{v}\n")
    doc = tmp_path / "d.json"
    env = dict(os.environ, INJECT_AT="bisectk.engine.oracle:Trials.observe", INJECT_CALL="1", INJECT_SIGNAL="TERM",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "diff", str(good), str(bad),
                        "--run", "grep -q 0 v.txt", "--ledger", str(tmp_path / "l.db"), "--json-out", str(doc)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 130, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    data = json.loads(doc.read_text())
    assert data["command"] == "diff" and data["interrupted"] is True and data["culprit_hunks"] == [], data


def test_an_interrupted_search_counts_the_runs_the_ledger_holds(spec, tmp_path):
    """Ctrl-C during the search's second run: that run was never made (no ledger row), so the
    search made 1 run and the endpoints 2. The search counts a run as it asks it, so the report
    said 2 by the search and 1 endpoint run, and 'stopped after 2 runs'."""
    import sqlite3
    p = ablate_interrupted(spec, tmp_path, "bisectk.run.runner:Runner._execute", 4, "--json")
    assert p.returncode == 1, (p.returncode, p.stderr[-1500:])
    doc = json.loads(p.stdout)
    (rows,) = sqlite3.connect(tmp_path / "l.db").execute("SELECT COUNT(*) FROM runs").fetchone()
    assert doc["observations"] == doc["runs"] == rows == 3, (doc["runs"], rows)
    stopped = next(s for s in doc["advice"] if s["step"] == "stopped")
    assert doc["search_runs"] == stopped["runs"] == 1, (doc["search_runs"], stopped)
    assert doc["phase_runs"] == {"endpoints": 2, "search": 1}, doc.get("phase_runs")
    p = subprocess.run([sys.executable, "-m", "bisectk", "report", str(tmp_path / "l.db")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "search stopped (interrupted) after 1 search run(s)" in p.stdout, (p.stdout[-1500:], p.stderr[-800:])
    assert "runs: 3 executed (1 by the search, 2 endpoint runs)" in p.stdout, p.stdout[-800:]


def _counting_repo(tmp_path, commits: int):
    """A repository whose file `v` holds the commit's number (c1, c2, ...)."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(1, commits + 1):
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "v")
        git(r, "commit", "-q", "-m", f"c{i}")
    return r


def test_started_with_its_output_closed_the_command_still_runs_to_its_exit_code(tmp_path):
    """`bisectk ... >&- 2>&-` (a launcher that closes them), or fd 2 left on a read-only file (a
    pyenv shim's script, when the shell ran it with stderr closed): the answer's exit code, not
    an internal error at the first print (AttributeError on a None sys.stdout, EBADF)."""
    import subprocess
    r = _counting_repo(tmp_path, 8)
    cmd = [sys.executable, "-m", "bisectk", "bisect", "--repo", str(r), "--good", "HEAD~7", "--bad", "HEAD",
           "--run", "sh -c '[ $(cat v) -lt 5 ]'"]
    ro = tmp_path / "ro.txt"
    ro.write_text("a read-only file\n")

    def closed():
        os.close(1)
        os.close(2)

    def read_only_stderr():
        os.dup2(os.open(ro, os.O_RDONLY), 2)

    for how, extra in ((closed, []), (closed, ["--json", "--fresh"]), (read_only_stderr, ["--fresh"])):
        p = subprocess.run(cmd + extra, preexec_fn=how, stdin=subprocess.DEVNULL, timeout=300,
                           stdout=subprocess.PIPE if how is read_only_stderr else None)
        assert p.returncode == 0, (how.__name__, extra, p.returncode)
    assert ro.read_text() == "a read-only file\n"


def test_a_reader_that_goes_away_ends_the_command_as_sigpipe_would(tmp_path):
    """`bisectk bisect ... | head -1` (stdout's reader leaves) or `2>&1 >log | head -1` (stderr's):
    the command stops with 141, as git does, never 1 (bisect's "ambiguous", triage's "culprit
    found"), with no traceback, and its runs ended; `log | head -1` the same."""
    import subprocess
    import time

    import psutil

    from tests.fixtures.gitrepo import git
    r = _counting_repo(tmp_path, 12)
    marker = f"bisectk-pipe-{os.getpid()}"
    base = [sys.executable, "-m", "bisectk", "bisect", "--repo", str(r), "--good", "HEAD~11", "--bad", "HEAD",
            "--run", f"sh -c ': {marker}; sleep 0.3; [ $(cat v) -lt 5 ]'", "--fresh"]
    head = git(r, "rev-parse", "HEAD")

    def first_line_then_leave(cmd, which, read=True):
        other = subprocess.DEVNULL
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if which == "stdout" else other,
                             stderr=subprocess.PIPE if which == "stderr" else other)
        stream = p.stdout if which == "stdout" else p.stderr
        first = stream.readline() if read else b"(not read)"
        stream.close()
        return first, p.wait(timeout=120)

    for which in ("stdout", "stderr"):
        first, code = first_line_then_leave(base, which)
        assert first and code == 141, (which, first, code)
        deadline = time.monotonic() + 10
        while any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])):
            assert time.monotonic() < deadline, f"a run outlived the command ({which})"
            time.sleep(0.1)
    for cmd in ([sys.executable, "-m", "bisectk", "log", "--repo", str(r)],
                [sys.executable, "-m", "bisectk", "triage", "--repo", str(r), "--good", "HEAD~11",
                 "--run", f"sh -c ': {marker}; sleep 0.3; [ $(cat v) -lt 5 ]'", "--fresh"]):
        # `log` prints a few lines at once: read one, and the rest may already sit in the pipe's
        # buffer when the reader leaves (exit 0, as for git); a reader gone before it prints is
        # the case that must end as SIGPIPE would
        first, code = first_line_then_leave(cmd, "stdout" if cmd[3] == "log" else "stderr", read=cmd[3] != "log")
        assert first and code == 141, (cmd[3], first, code)
    assert git(r, "rev-parse", "HEAD") == head and not git(r, "status", "--porcelain")


def _triage_interrupted_at(tmp_path, r, at: str) -> subprocess.CompletedProcess:
    """`bisectk triage` of the counting repository `r` (c1..c8, bad from c5), a SIGINT injected at
    the first call of `at` (tests/fixtures/inject_sigint.py)."""
    env = dict(os.environ, INJECT_AT=at, INJECT_CALL="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "triage", "--repo",
                           str(r), "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_a_triage_interrupted_during_its_first_run_says_so(tmp_path):
    """Ctrl-C while triage verifies its endpoints: exit 130, as bisect, with the line bisect
    prints (click turned the interrupt into a silent Abort: exit 130 and nothing said)."""
    r = _counting_repo(tmp_path, 8)
    p = _triage_interrupted_at(tmp_path, r, "bisectk.engine.oracle:Trials.observe")
    assert p.returncode == 130, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    said = [line for line in p.stderr.splitlines() if line.strip()]
    assert said and said[-1].startswith("bisectk: interrupted") and "ledger" in said[-1], p.stderr


def test_an_interrupt_while_the_bad_endpoint_runs_beside_the_good_one_stops_it_at_once(tmp_path):
    """--jobs 2: the bad endpoint's first run is begun beside the good endpoint's, in a thread, and
    the endpoint check waits for it. A Ctrl-C then stops the run at once, as it does at --jobs 1
    (exit 130), not after the run's whole watchdog (here 120 s) and then as an interrupted search."""
    import time
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text("import sys, time\nif sys.argv[1] == 'bad':\n    time.sleep(600)\n"
                                   "print('BISECTK_RESULT {\"err\": 0}')\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "beside"\n[subject]\ncommand = ["python", "s.py", "{m}", "{x}"]\ntimeout = 120\n'
                    '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\nm = "good"\nx = 0\n[bad]\nm = "bad"\nx = 1\n')
    t0 = time.monotonic()
    p = ablate_interrupted(spec, tmp_path, "bisectk.engine.endpoints:_reproduced", 1, "--jobs", "2")
    assert p.returncode == 130 and "interrupted before the endpoints were verified" in p.stderr, p.stderr[-1500:]
    assert time.monotonic() - t0 < 60, p.stderr[-1500:]


def test_an_interrupt_that_leaves_runs_under_way_leaves_no_temporary_file(tmp_path, monkeypatch):
    """--jobs 3: a Ctrl-C in the search leaves by the report without waiting for the runs made
    ahead (daemon threads; their supervisors end the subjects once bisectk is gone). Their
    temporary files (a cold run's import record) are bisectk's own: removed as it exits, not left
    in /tmp for some later bisectk to sweep."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text("import sys, time\nif sys.argv[1] == 'bad':\n    time.sleep(600)\n"
                                   "print('BISECTK_RESULT {\"err\": 0}')\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "ahead"\n[subject]\ncommand = ["python", "s.py", "{m}", "{x}", "{y}"]\ntimeout = 120\n'
                    '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\nm = "good"\nx = 0\ny = 0\n'
                    '[bad]\nm = "bad"\nx = 1\ny = 1\n')
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    p = ablate_interrupted(spec, tmp_path, "bisectk.engine.endpoints:_reproduced", 1, "--jobs", "3")
    assert p.returncode == 130, p.stderr[-1500:]
    assert not [e.name for e in tmp.iterdir() if e.name.startswith("bisectk-")], p.stderr[-1500:]



def test_runs_under_way_in_warm_workers_at_an_interrupt_are_not_stored_as_crashes(tmp_path):
    """--jobs 3 --warm: a Ctrl-C while runs made ahead go on in their threads closes the warm
    pool, which kills their workers. Those runs were ended by bisectk, not by the subject: none
    is stored (a `crash (SIGTERM)` in the ledger would answer a later --resume wrongly)."""
    import signal
    import sqlite3
    import time
    (tmp_path / "pyproject.toml").touch()
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "s.py").write_text(
        "import json, os, sys, time\na = [int(x) for x in sys.argv[1:]]\n"
        "if 0 < sum(a) < len(a):\n"        # a hybrid: under way when the interrupt comes
        f"    open(os.path.join({str(marks)!r}, str(os.getpid())), 'w').close()\n    time.sleep(30)\n"
        "print('BISECTK_RESULT ' + json.dumps({'err': float(a[0] and a[2])}))\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "warm"\n[subject]\ncommand = ["python", "s.py", "{a}", "{b}", "{c}", "{d}"]\ntimeout = 60\n'
                    '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\na = 0\nb = 0\nc = 0\nd = 0\n'
                    '[bad]\na = 1\nb = 1\nc = 1\nd = 1\n')
    p = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), "--ledger", str(tmp_path / "l.db"),
                          "--jobs", "3", "--warm"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.monotonic() + 120
    while len(os.listdir(marks)) < 2:
        assert time.monotonic() < deadline and p.poll() is None, "the runs made ahead never began"
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode in (1, 130), err[-1500:]
    assert "crash" not in err, err[-1500:]
    db = sqlite3.connect(tmp_path / "l.db")
    try:
        kinds = db.execute("SELECT outcome, kind, signature FROM runs").fetchall()
    finally:
        db.close()
    assert kinds and not [k for k in kinds if k[1] == "crash"], kinds


@pytest.mark.parametrize("at", ["bisectk.engine.session:Session.record", "bisectk.report.history:print_summary"])
def test_a_bisection_interrupted_while_its_answer_is_written_still_gives_it(tmp_path, at):
    """bisect (and triage) hold a Ctrl-C back outside runs, as ablate and diff do: one that comes
    while the answer is stored or printed lets it out whole (exit 1, said), where before it ended
    the command with 130 and no answer, although the search had found it."""
    r = _counting_repo(tmp_path, 8)
    env = dict(os.environ, INJECT_AT=at, INJECT_CALL="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "bisect", "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 1, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert "first bad commit" in p.stdout and "c5" in p.stdout, p.stdout
    assert "interrupted after the search had finished" in p.stderr


def _stored_runs(ledger: Path) -> list:
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT * FROM runs").fetchall()
        finally:
            db.close()
    except sqlite3.OperationalError:        # not made yet, or being made
        return []


@pytest.mark.parametrize("jobs", [2, 3])
def test_an_interrupt_during_a_batch_of_runs_leaves_at_once_and_stores_none_of_them(tmp_path, jobs):
    """bisect --jobs K: a Ctrl-C while the search's runs go on leaves at once, not once every run
    under way has ended (a hang's whole watchdog), and none of those runs is stored: they end as
    bisectk cleans up (their worktrees, their processes), which says nothing of their commits.
    At --jobs 2 the first such runs are a round's, begun once the endpoints have ended; at
    --jobs 3 one commit begins beside the endpoints (engine/bisect.py FirstProbes, Runner.stop
    as its own), and the search waits for it: the Ctrl-C comes once it has begun and the
    endpoints' runs (fast) are stored."""
    import signal
    import time
    r = _counting_repo(tmp_path, 12)
    ledger = r / ".git" / "bisectk" / "ledger.db"
    marks = tmp_path / "marks"
    marks.mkdir()
    run = f"sh -c 'n=$(cat v); if [ $n -ne 1 ] && [ $n -ne 12 ]; then : > {marks}/$n; sleep 40; fi; [ $n -lt 5 ]'"
    p = subprocess.Popen([sys.executable, "-m", "bisectk", "bisect", "--repo", str(r), "--good", "HEAD~11", "--bad", "HEAD",
                          "--run", run, "--jobs", str(jobs), "--timeout", "120"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.monotonic() + 120
    while len(os.listdir(marks)) < (2 if jobs == 2 else 1) or len(_stored_runs(ledger)) < 2:
        assert time.monotonic() < deadline and p.poll() is None, "the search's runs never began"
        time.sleep(0.05)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert time.monotonic() - t0 < 20, err[-1500:]
    assert p.returncode == 1, (p.returncode, err[-1500:])
    stored = _stored_runs(ledger)
    assert len(stored) == 2, (stored, err[-1500:])   # the endpoints' runs alone (an interrupted run is never stored)
    assert len(os.listdir(marks)) == (2 if jobs == 2 else 1), os.listdir(marks)


def test_a_triage_interrupted_as_its_hunk_isolation_begins_keeps_the_first_bad_commit(tmp_path):
    """Ctrl-C once the bisection has its answer, while the hunk isolation verifies its endpoints:
    the triage says the culprit commit it found (exit 1, culprit found) and that the isolation
    stopped, where before it ended with 130 and "interrupted while verifying the endpoints"."""
    r = _counting_repo(tmp_path, 8)
    p = _triage_interrupted_at(tmp_path, r, "bisectk.engine.triage:isolate")
    assert p.returncode == 1, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert "first bad commit" in p.stdout and "c5" in p.stdout and "hunk isolation stopped" in p.stdout, p.stdout


def test_an_interrupt_during_the_confirmation_says_no_run_was_made_ahead(spec, tmp_path):
    """Ctrl-C inside the confirmation's passes (one run at a time, no --jobs): the passes already
    made belong to no attempt, and the report counted them as '12 made ahead and not needed' --
    runs made ahead of a search that made none ahead."""
    (tmp_path / "whole").mkdir()
    whole = ablate_interrupted(spec, tmp_path / "whole", "bisectk.search.tester:Tester.confirm", 999, "--json")
    doc = json.loads(whole.stdout)
    runs = [a["runs"] for a in doc["attempts"]]
    confirm = next(i for i, a in enumerate(doc["attempts"]) if a["phase"] == "confirm" and a["runs"] > 2)
    at = 2 + sum(runs[:confirm]) + 2     # the endpoints, the attempts before, two of its passes
    p = ablate_interrupted(spec, tmp_path, "bisectk.run.runner:Runner._execute", at + 1, "--json")
    assert p.returncode == 1, (p.returncode, p.stderr[-1500:])
    doc = json.loads(p.stdout)
    assert doc["ahead_runs"] == doc["unused_runs"] == 0, (doc["unused_runs"], doc["search_runs"])


@pytest.mark.parametrize("command,signal_name,code", [("triage", "TERM", 130), ("bisect", "TERM", 130),
                                                      ("triage", "HUP", 129)])
def test_a_ci_timeout_during_the_endpoints_still_writes_the_documents_asked_for(tmp_path, command, signal_name, code):
    """SIGTERM (a CI job's timeout) while the endpoints are verified: exit 130, as before, but the
    JUnit file (triage) and the --json-out document are written, marked interrupted. They were
    not written at all, and the CI system showed no test report."""
    r = _counting_repo(tmp_path, 8)
    junit, doc = tmp_path / "t.xml", tmp_path / "t.json"
    env = dict(os.environ, INJECT_AT="bisectk.engine.oracle:Trials.observe", INJECT_CALL="1", INJECT_SIGNAL=signal_name,
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    extra = ["--junit", str(junit)] if command == "triage" else []
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), command, "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'",
                        "--json-out", str(doc), *extra], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == code, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    said = [line for line in p.stderr.splitlines() if line.strip()]
    assert said and said[-1].startswith("bisectk: interrupted") and "ledger" in said[-1], p.stderr
    data = json.loads(doc.read_text())
    assert data["command"] == command and data["interrupted"] is True and data["complete"] is False, data
    assert data["exit_code"] == code and "interrupted" in data["error"] and data["first_bad"] is None, data
    if command == "triage":
        import xml.etree.ElementTree as ET
        suite = ET.parse(junit).getroot().find("testsuite")
        errors = [c.find("error") for c in suite.iter("testcase") if c.find("error") is not None]
        assert errors and all("interrupted" in e.get("message") for e in errors), ET.tostring(suite)
        assert int(suite.get("errors")) == len(errors) and suite.get("failures") == "0", ET.tostring(suite)


@pytest.mark.parametrize("command", ["triage", "bisect"])
def test_json_on_stdout_says_the_interrupt_before_any_result(tmp_path, command):
    """`--json` with a CI job's SIGTERM while the endpoints are verified: stdout was empty, and a
    script reading it (`bisectk bisect --json > r.json; jq ...`) failed on no document at all; it
    now gets the same document --json-out gets, marked interrupted."""
    r = _counting_repo(tmp_path, 8)
    env = dict(os.environ, INJECT_AT="bisectk.engine.oracle:Trials.observe", INJECT_CALL="1", INJECT_SIGNAL="TERM",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), command, "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--json"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 130, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    data = json.loads(p.stdout)
    assert data["command"] == command and data["interrupted"] is True and data["exit_code"] == 130, data


def _terminated_at(at: str, tmp_path, *args):
    """`bisectk *args` (from tmp_path) with a SIGTERM sent to it at its first call of `at`
    (module:function), as a CI job's timeout would come."""
    env = dict(os.environ, INJECT_AT=at, INJECT_CALL="1", INJECT_SIGNAL="TERM",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("command", ["triage", "bisect"])
def test_a_ci_timeout_as_the_command_sets_up_its_runs_still_writes_its_documents(tmp_path, command):
    """SIGTERM after bisect or triage opened its session but before its first run (while it looked at
    PATH and snapshotted the refs): the interrupt went past the step that writes the JUnit file
    (only the worktrees' making was held back), and the CI had no test report."""
    r = _counting_repo(tmp_path, 8)
    junit, doc = tmp_path / "t.xml", tmp_path / "t.json"
    extra = ["--junit", junit] if command == "triage" else []
    p = _terminated_at("bisectk.cli_history:checkout_path", tmp_path, command, "--repo", r, "--good", "HEAD~7",
                       "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--json-out", doc, *extra)
    assert p.returncode == 130, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert json.loads(doc.read_text())["interrupted"] is True, p.stderr[-800:]
    assert command != "triage" or (junit.is_file() and "interrupted" in junit.read_text()), p.stderr[-800:]


@pytest.mark.parametrize("at", ["bisectk.engine.oracle:Trials.observe",     # the first run
                                "bisectk.engine.session:Session.__init__"])  # before the session opens
def test_an_interrupt_before_any_result_writes_every_report_asked_for_saying_so(spec, tmp_path, at):
    """A CI job's timeout before any result: --json-out got a document saying `interrupted`, but
    --report and --html were not written at all (a CI job that publishes the HTML found none);
    and before the session opened no document was written, --json-out's neither."""
    doc, md, page = tmp_path / "a.json", tmp_path / "r.md", tmp_path / "p.html"
    p = ablate_interrupted(spec, tmp_path, at, 1, "--json-out", str(doc), "--report", str(md), "--html", str(page))
    assert p.returncode == 130 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-1500:])
    said = [line for line in p.stderr.splitlines() if line.strip()]
    assert said[-1].startswith("bisectk: interrupted"), p.stderr
    data = json.loads(doc.read_text(encoding="utf-8"))
    assert data["interrupted"] is True and data["exit_code"] == 130 and data["complete"] is False, data
    for path in (md, page):
        text = path.read_text(encoding="utf-8")
        assert "ablate" in text and "interrupted" in text and data["error"] in text, text
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_triage_interrupted_as_its_session_opens_writes_its_junit_and_says_inconclusive(tmp_path):
    """SIGTERM while triage opened its session (before its own handler): no JUnit file and no
    --json-out were written, and the CI showed no test report."""
    r = _counting_repo(tmp_path, 8)
    junit, doc = tmp_path / "t.xml", tmp_path / "t.json"
    env = dict(os.environ, INJECT_AT="bisectk.engine.session:Session.__init__", INJECT_CALL="1", INJECT_SIGNAL="TERM",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "triage", "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--json-out", str(doc),
                        "--junit", str(junit)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 130 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-1500:])
    data = json.loads(doc.read_text(encoding="utf-8"))
    assert data["interrupted"] is True and data["verdict"] == "inconclusive" and data["first_bad"] is None, data
    import xml.etree.ElementTree as ET
    suite = ET.parse(junit).getroot().find("testsuite")
    errors = [c.find("error") for c in suite.iter("testcase") if c.find("error") is not None]
    assert errors and all("interrupted" in e.get("message") for e in errors), ET.tostring(suite)


@pytest.mark.parametrize("command", ["triage", "bisect"])
def test_a_ci_timeout_while_the_history_is_listed_still_writes_its_documents(tmp_path, command):
    """SIGTERM (a CI job's timeout) while git lists a big history, before the command had checked
    its output paths: exit 130 with no --json-out and no JUnit file at all, so the CI job had no
    test report. The paths do not depend on what is listed: they are checked before it."""
    r = _counting_repo(tmp_path, 8)
    junit, doc = tmp_path / "t.xml", tmp_path / "t.json"
    extra = ["--junit", junit] if command == "triage" else []
    p = _terminated_at("bisectk.spaces.commits:list_graph", tmp_path, command, "--repo", r, "--good", "HEAD~7",
                       "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--json-out", doc, *extra)
    assert p.returncode == 130 and "Traceback" not in p.stderr, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert json.loads(doc.read_text())["interrupted"] is True, p.stderr[-800:]
    assert command != "triage" or (junit.is_file() and "interrupted" in junit.read_text()), p.stderr[-800:]


def test_a_ci_timeout_while_the_history_is_listed_never_writes_over_the_run_script(tmp_path):
    """The paths checked before the history is listed include the files --run names: a --json-out
    that is the user's script is refused there, never written over by the interrupt's document."""
    r = _counting_repo(tmp_path, 8)
    script = tmp_path / "t.sh"
    script.write_text("[ $(cat v) -lt 5 ]\n")
    p = _terminated_at("bisectk.spaces.commits:list_graph", tmp_path, "triage", "--repo", r, "--good", "HEAD~7",
                       "--bad", "HEAD", "--run", f"sh {script}", "--json-out", script)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-1500:])
    assert script.read_text() == "[ $(cat v) -lt 5 ]\n"


def test_a_ci_timeout_while_the_history_is_listed_never_writes_over_a_file_the_specs_command_names(tmp_path):
    """As above for a SPEC: the files its command names are read from it before the history is
    listed, so a --json-out that is the spec's script is refused there; it was accepted (the spec's
    file alone was known), and the interrupt's document was written over the script."""
    r = _counting_repo(tmp_path, 8)
    script = tmp_path / "t.sh"
    script.write_text("[ $(cat v) -lt 5 ]\n")
    spec = tmp_path / "s.toml"
    spec.write_text(f'[subject]\ncommand = ["sh", "{script}"]\n')
    p = _terminated_at("bisectk.spaces.commits:list_graph", tmp_path, "bisect", spec, "--repo", r, "--good", "HEAD~7",
                       "--bad", "HEAD", "--json-out", script)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-1500:])
    assert script.read_text() == "[ $(cat v) -lt 5 ]\n"
