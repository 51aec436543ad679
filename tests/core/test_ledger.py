"""The ledger under sharing and damage (issue 12): concurrent writers, shared work through claims,
a damaged, read-only or full ledger as one line, schema migration, check and salvage."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from bisectk.errors import LedgerError
from bisectk.ledger import Ledger, schema, sqlitefile, store
from bisectk.ledger.schema import LONG_KEY, SCHEMA_VERSION
from bisectk.ledger_check import check, salvage
from bisectk.outcome import FailKind, Outcome, Run
from bisectk.procstat import process_start
from tests.conftest import bisectk, err_spec, wait_until

FP, KEY = "fp", '{"a":1}'

# appends its argv to $EXEC_LOG, so a test counts what really ran
SUBJECT = """
import json, os, sys, time
with open(os.environ["EXEC_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
time.sleep(float(os.environ.get("SUBJECT_SLEEP", "0.1")))
cfg = dict(zip(sys.argv[1::2], sys.argv[2::2]))
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if cfg["a"] == "1" and cfg["c"] == "1" else 0.0}))
"""


def a_run(i: int = 0, size: int = 10) -> Run:
    return Run(Outcome.FAIL, FailKind.WRONG, signature=f"run {i}", duration_s=0.1, stdout_tail="x" * size)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A spec with factors a..d (failure: a and c together) whose subject logs every execution."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "subj.py").write_text(SUBJECT)
    names = "abcd"
    argv = ["python", "subj.py"] + [x for n in names for x in (n, "{" + n + "}")]
    (tmp_path / "spec.toml").write_text(
        f"[subject]\ncommand = {json.dumps(argv)}\ntimeout = 60\n[oracle]\nmetric = \"err\"\nmax = 0.5\n"
        "[good]\n" + "".join(f"{n} = 0\n" for n in names) + "[bad]\n" + "".join(f"{n} = 1\n" for n in names))
    monkeypatch.setenv("EXEC_LOG", str(tmp_path / "exec.log"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def executions(project: Path) -> Counter:
    log = project / "exec.log"
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def populated(path: Path, n: int = 300) -> Path:
    db = Ledger(path)
    s = db.open_session("run", FP, {"spec": "x"})
    for i in range(n):
        db.add_run(FP, f'{{"a":{i}}}', a_run(i, size=2000), s)
        db.add_event(s, "observation", {"i": i})
    db.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return path


def corrupt_middle(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2 - (size // 2) % 4096)
        f.write(os.urandom(3 * 4096))


# -- concurrent writers -----------------------------------------------------------------------
WRITER = """
import sys
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome, Run
db = Ledger(sys.argv[1])
for i in range(int(sys.argv[2])):
    db.add_run("fp", '{"a":1}', Run(Outcome.PASS, signature=sys.argv[3] + f"/{i}"))
"""


def test_concurrent_writers_append_without_collisions(tmp_path):
    path = tmp_path / "l.db"
    Ledger(path).close()
    root = str(Path(store.__file__).resolve().parents[2])
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "40", f"w{w}"], stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": root}) for w in range(6)]
    errors = [p.communicate()[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    runs = Ledger(path).runs("fp", '{"a":1}')
    assert len(runs) == 240 and len({r.signature for r in runs}) == 240


# -- claims -----------------------------------------------------------------------------------
def test_a_claimed_run_is_waited_for_not_repeated(tmp_path):
    a, b = Ledger(tmp_path / "l.db"), Ledger(tmp_path / "l.db")
    first = a.claim(FP, KEY, 0)
    assert first.run is None and first.held
    got, waited = [], []
    t = threading.Thread(target=lambda: got.append(b.claim(FP, KEY, 0, on_wait=waited.append)))
    t.start()
    assert wait_until(lambda: waited, timeout=30)   # B said it waits (an event, not a guessed time)
    assert not got and f"pid {os.getpid()}" in waited[0]  # B waits on A
    assert first.record(a_run(7)) == 0
    t.join(5)
    assert got[0].run is not None and got[0].run.signature == "run 7" and not got[0].held
    assert b.db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_a_stopped_holder_is_named_as_stopped_with_how_to_go_on(tmp_path):
    """A command sharing the ledger with one stopped by Ctrl-Z waited for it silently, forever:
    the stopped process is alive, so its claim stands, but the waiter now says why nothing moves,
    and says it again when the holder is stopped after the wait began."""
    import signal
    db = Ledger(tmp_path / "l.db")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        db.db.execute("INSERT INTO claims VALUES (?,?,?,?,?,?,?,?,?)",
                      (FP, KEY, 0, "x", db.host, holder.pid, process_start(holder.pid),
                       time.time(), time.time() + 3600))
        got, waited = [], []
        t = threading.Thread(target=lambda: got.append(db.claim(FP, KEY, 0, on_wait=waited.append,
                                                                max_poll_s=0.1)))
        t.start()
        assert wait_until(lambda: waited, timeout=30)
        assert waited[0] == f"pid {holder.pid} on {db.host}"
        holder.send_signal(signal.SIGSTOP)
        assert wait_until(lambda: len(waited) > 1, timeout=30), waited
        assert "stopped" in waited[1] and f"kill -CONT {holder.pid}" in waited[1]
        assert not got
    finally:
        holder.kill()
        holder.wait()
    t.join(10)
    assert got and got[0].held      # its holder gone, the claim is taken over


def test_a_dead_processs_claim_is_taken_over(tmp_path):
    db = Ledger(tmp_path / "l.db")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    db.db.execute("INSERT INTO claims VALUES (?,?,?,?,?,?,?,?,?)",
                  (FP, KEY, 0, "x", db.host, dead.pid, 1.0, time.time(), time.time() + 3600))
    t = time.monotonic()
    c = db.claim(FP, KEY, 0)
    # at once, not when the claim expires (an hour); 30 s leaves a loaded CI machine its pauses
    assert c.held and c.run is None and time.monotonic() - t < 30


CLAIMER = """
import sys, time
sys.path.insert(0, {root!r})
from bisectk.ledger import Ledger
claim = Ledger({path!r}).claim("fp", '{{"a":1}}', 0)
print("held" if claim.held else "not held", flush=True)
time.sleep(600)
"""


def test_the_claim_of_a_killed_command_its_parent_has_not_reaped_yet_is_taken_over(tmp_path):
    """A command SIGKILLed (a CI job's timeout, `kill -9`) under a parent that does not wait for it
    at once (a harness, an agent, a container's init) lingers as a zombie: its /proc entry, start
    time and all, stays until it is reaped. It runs nothing and will record nothing: the command
    sharing the ledger takes its claim over, rather than wait on it for as long as the parent waits."""
    import signal
    from bisectk.procstat import gone
    root = str(Path(__file__).resolve().parents[2])
    holder = subprocess.Popen([sys.executable, "-c", CLAIMER.format(root=root, path=str(tmp_path / "l.db"))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.send_signal(signal.SIGKILL)             # and not reaped: a zombie
        assert wait_until(lambda: gone(holder.pid), timeout=30)
        db = Ledger(tmp_path / "l.db")
        got: list = []
        t = threading.Thread(target=lambda: got.append(db.claim(FP, KEY, 0, max_poll_s=0.2)), daemon=True)
        t.start()
        assert wait_until(lambda: got, timeout=60), "waited on a dead command's claim"
        assert got[0].held and got[0].run is None
    finally:
        holder.kill()
        holder.wait()


def test_a_claim_from_another_host_expires(tmp_path):
    db = Ledger(tmp_path / "l.db")
    t = time.monotonic()        # before the expiry is set: a pause between the two (a loaded machine's)
    db.db.execute("INSERT INTO claims VALUES (?,?,?,?,?,?,?,?,?)",   # was counted out of the wait
                  (FP, KEY, 0, "x", "elsewhere", 1, 1.0, time.time(), time.time() + 0.5))
    c = db.claim(FP, KEY, 0)
    # waited for the expiry (0.5 s, polled at most 1 s apart) and no longer; the upper bound was 3 s,
    # 30 s leaves a loaded CI machine its pauses
    assert c.held and 0.4 < time.monotonic() - t < 30


def test_an_interrupted_run_gives_its_claim_back(tmp_path):
    db = Ledger(tmp_path / "l.db")
    with pytest.raises(KeyboardInterrupt):
        with db.claim(FP, KEY, 0):
            raise KeyboardInterrupt
    assert db.db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_two_concurrent_ablations_run_each_configuration_once(project):
    cmd = [sys.executable, "-m", "bisectk", "ablate", "spec.toml", "--strategy", "exhaustive",
           "--ledger", str(project / "l.db"), "--json"]
    procs = [subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [json.loads(o)["culprits"] for o, _ in outs] == [["a", "c"], ["a", "c"]]
    runs = executions(project)
    # 2^4 configurations, each run as often as one ablation alone runs it: once, or the repeats its
    # confirmation asks (search/confirm.py), never twice that because two commands shared the work
    (project / "exec.log").unlink()
    alone = subprocess.run([*cmd[:-2], str(project / "alone.db"), "--json"], cwd=project, capture_output=True,
                           text=True, timeout=300)
    assert alone.returncode == 0, alone.stderr
    assert len(runs) == 16 and runs == executions(project), (runs, executions(project))


def test_six_concurrent_runs_share_one_ledger(project):
    cmd = [sys.executable, "-m", "bisectk", "run", "spec.toml", "--repeat", "2", "--ledger", str(project / "l.db")]
    procs = [subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [1] * 6, outs  # every one: the bad endpoint fails
    assert not any("internal error" in e or "Traceback" in e for _, e in outs)
    runs = executions(project)
    # the bad endpoint twice (--repeat 2), each run made once and shared by all six
    assert list(runs.values()) == [2] and "a\", \"1" in next(iter(runs)), runs


# -- damage -----------------------------------------------------------------------------------
def test_a_corrupt_ledger_is_one_line_and_never_written(project):
    path = populated(project / "l.db")
    corrupt_middle(path)
    before = sha(path)
    p = bisectk("run", project / "spec.toml", "--ledger", path, cwd=project)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: ") and "damaged" in lines[0]
    assert str(path) in lines[0] and "bisectk ledger check" in lines[0] and "--ledger" in lines[0]
    assert not executions(project)  # found before anything ran
    assert sha(path) == before


def test_a_file_that_is_not_a_ledger_is_left_alone(project):
    spec = project / "spec.toml"
    before = sha(spec)
    p = bisectk("run", spec, "--ledger", spec, cwd=project)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "damaged" in p.stderr
    assert sha(spec) == before
    other = project / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE photos (x)")
    con.commit()
    con.close()
    p = bisectk("run", spec, "--ledger", other, cwd=project)
    assert p.returncode == 2 and "not a bisectk ledger" in p.stderr
    assert sqlite3.connect(other).execute("SELECT name FROM sqlite_master").fetchall() == [("photos",)]


def test_a_ledger_in_a_directory_that_does_not_exist_is_refused_not_made(project):
    """`--ledger /nonexist/dir/l.db` made /nonexist/dir/ (a typo in the path made directories, and
    a new ledger there that no --resume of the intended one finds), ran, and said nothing. A named
    ledger's directory must exist now (its file is made, as before); the default places are
    bisectk's own and are still made (.bisectk/ beside the spec, <git dir>/bisectk/, the cache)."""
    spec = project / "spec.toml"
    (project / "afile").write_text("x\n")
    for path, said in ((project / "nonexist" / "dir" / "l.db", f"the directory {project / 'nonexist' / 'dir'} does not exist"),
                       (project / "afile" / "l.db", f"{project / 'afile'} is not a directory")):
        p = bisectk("run", spec, "--ledger", path, cwd=project, check=2)
        assert p.stderr == f"bisectk: --ledger {path}: {said}" + p.stderr.split(said, 1)[1], p.stderr
        assert p.stderr.count("\n") == 1 and p.stderr.strip().endswith("nothing has run"), p.stderr
    assert not (project / "nonexist").exists() and (project / "afile").read_text() == "x\n"
    assert not executions(project)
    bisectk("run", spec, "--ledger", "new.db", cwd=project, check=None)     # a new file in a directory there
    assert (project / "new.db").is_file()
    assert not (project / ".bisectk").exists()     # the default place beside the spec, named: bisectk's, made
    bisectk("run", spec, "--ledger", ".bisectk/ledger.db", cwd=project, check=None)
    assert (project / ".bisectk" / "ledger.db").is_file()


@pytest.mark.parametrize("tables", [["meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "users (name TEXT)"],
                                    ["meta (k TEXT, v TEXT)", "users (name TEXT)"], ["photos (x)"]])
def test_another_programs_database_is_refused_unchanged_even_with_a_meta_table(project, tables):
    """Another program's SQLite database with a `meta` table (a common name) but no bisectk schema
    row was taken for an empty ledger: `run --ledger app.db` created bisectk's six tables in it
    and wrote its runs there, `report` called it an empty file; and any database refused was
    first put in WAL mode (its header rewritten, -wal and -shm files left beside it)."""
    app = project / "app.db"
    con = sqlite3.connect(app)
    for table in tables:
        con.execute(f"CREATE TABLE {table}")
    con.commit()
    con.close()
    before = sha(app)
    said = f"not a bisectk ledger (tables: {', '.join(sorted(t.split()[0] for t in tables))})"
    for args in (["run", project / "spec.toml", "--ledger", app], ["report", app], ["ledger", "gc", "--ledger", app]):
        p = bisectk(*args, cwd=project, check=2)
        assert p.stderr.count("\n") == 1 and said in p.stderr, p.stderr
    assert said in bisectk("ledger", "check", app, cwd=project, check=2).stdout
    with pytest.raises(LedgerError, match="not a bisectk ledger"):
        Ledger(app)
    assert sha(app) == before and sorted(q.name for q in project.glob("app.db*")) == ["app.db"]
    assert not executions(project)


def test_check_reports_damage_and_salvage_copies_what_can_be_read(tmp_path):
    good = populated(tmp_path / "good.db")
    report = check(good)
    assert report.ok and report.schema == SCHEMA_VERSION and report.rows == {"sessions": 1, "runs": 300, "events": 300}
    path = populated(tmp_path / "l.db")
    corrupt_middle(path)
    before = sha(path)
    report = check(path)
    assert not report.ok and report.problems
    assert any("--salvage" in line for line in report.lines())
    copied = salvage(path, tmp_path / "new.db")
    assert sha(path) == before  # only read
    assert copied["sessions"] == 1 and 200 < copied["runs"] < 300 and copied["events"] > 0
    assert check(tmp_path / "new.db").ok
    assert len(Ledger(tmp_path / "new.db").runs(FP, '{"a":0}')) == 1
    with pytest.raises(LedgerError, match="never overwrites"):
        salvage(path, tmp_path / "new.db")


def test_a_ledger_sqlite_cannot_open_is_not_sent_round_in_a_circle(tmp_path):
    """A ledger cut inside its first page: SQLite cannot open it at all. Before: `ledger check` said
    "what to do: ... --salvage NEW.db", and the salvage failed with "see `bisectk ledger check`"
    -- each command sending the user to the other, nothing saved. (It was cut to half its size
    here, which SQLite cannot open either; its whole pages are read since: the test below.)"""
    path = populated(tmp_path / "l.db")
    data = path.read_bytes()
    path.write_bytes(data[:2000])
    text = "\n".join(check(path).lines())
    assert "--salvage" not in text and "another --ledger" in text, text
    with pytest.raises(LedgerError) as err:
        salvage(path, tmp_path / "new.db")
    assert "ledger check" not in str(err.value) and "another --ledger" in str(err.value)
    assert not (tmp_path / "new.db").exists()



def test_a_ledger_cut_short_gives_up_the_rows_on_its_whole_pages(tmp_path):
    """A ledger cut to half its size (a copy or a CI cache's restore stopped by a full disk): its
    header still counts the pages it had, so SQLite refused every read of it, and `ledger check`
    said nothing could be salvaged, where most of the runs (hours of GPU time) lay on the pages
    left. They are read through a repaired copy; the file itself is never written."""
    path = populated(tmp_path / "l.db")
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2 + 1000])      # not even on a page boundary
    before = sha(path)
    report = check(path)
    assert not report.ok and any("cut short" in p for p in report.problems), report.problems
    assert report.rows["runs"] > 50 and any("--salvage" in line for line in report.lines())
    had = {"sessions": 1, "runs": 300, "events": 300}   # not 10,000 ids probed past the lost pages
    assert all(report.rows[t] + report.unreadable[t] <= n for t, n in had.items()), (report.rows, report.unreadable)
    copied = salvage(path, tmp_path / "new.db")
    assert sha(path) == before and sorted(os.listdir(tmp_path)) == ["l.db", "new.db"]
    assert copied["runs"] == report.rows["runs"] and check(tmp_path / "new.db").ok
    assert len(Ledger(tmp_path / "new.db").runs(FP, '{"a":0}')) == 1

KILLED = """
import os, sys
from bisectk.ledger import Ledger
from bisectk.outcome import FailKind, Outcome, Run
db = Ledger(sys.argv[1])
s = db.open_session("run", "fp", {"spec": "x"})
for i in range(20):
    db.add_run("fp", '{"a":%d}' % i, Run(Outcome.FAIL, FailKind.WRONG, signature="r", duration_s=0.1), s)
os._exit(0)   # as a SIGKILL leaves it: nothing checkpointed, the write-ahead log left beside the file
"""


def test_check_reads_the_header_through_the_write_ahead_log(tmp_path):
    """Before: a ledger whose writer was killed before its first checkpoint (page 1 only in the
    -wal file) was called DAMAGED ("header: schema format 0") and sent to --salvage, although
    SQLite and every command read it intact."""
    path = tmp_path / "l.db"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    subprocess.run([sys.executable, "-c", KILLED, str(path)], check=True, env=env, timeout=60)
    assert path.with_name("l.db-wal").stat().st_size > 0
    assert int.from_bytes(path.read_bytes()[44:48], "big") == 0   # the main file's page 1 is stale
    report = check(path)
    assert report.ok, report.lines()
    assert report.rows["runs"] == 20


def test_check_still_reads_a_damaged_header_of_the_main_file(tmp_path):
    path = populated(tmp_path / "l.db", n=5)   # checkpointed: the main file's header is the one read
    with open(path, "r+b") as f:
        f.seek(19)
        f.write(b"\x03")   # write version 3: readable, but every write refused
    report = check(path)
    assert not report.ok and any(p.startswith("header: file format versions") for p in report.problems), \
        report.lines()


def test_check_says_plainly_an_empty_or_foreign_file_is_no_ledger(tmp_path):
    """Before: "unreadable rows: sessions 10000, runs 10000, events 10000" and advice to salvage,
    from an id probe that ran 10,000 misses on each missing table."""
    empty = tmp_path / "empty.db"
    empty.touch()
    other = tmp_path / "photos.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE photos (x)")
    con.commit()
    con.close()
    for path, said in ((empty, "empty, not yet a bisectk ledger"), (other, "not a bisectk ledger (tables: photos)")):
        report = check(path)
        text = "\n".join(report.lines())
        assert not report.ok and said in text, text
        assert "10000" not in text and "--salvage" not in text and "DAMAGED" not in text, text
    assert salvage(other, tmp_path / "new.db") == {"sessions": 0, "runs": 0, "events": 0}


# -- read-only ----------------------------------------------------------------------------------
def read_only_place(tmp_path: Path, whole_dir: bool) -> Path:
    """A ledger that cannot be written: by permissions, or (as root, whom permissions do not stop)
    on a read-only mount."""
    d = tmp_path / "ro"
    d.mkdir()
    path = populated(d / "l.db", n=3)
    if os.geteuid() != 0:
        (d if whole_dir else path).chmod(0o555 if whole_dir else 0o444)
        return path
    r = subprocess.run(["mount", "--bind", str(d), str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("root, and no read-only mount possible here")
    subprocess.run(["mount", "-o", "remount,bind,ro", str(d)], check=True)
    return path


@pytest.fixture
def unmount(tmp_path):
    yield
    if os.geteuid() == 0 and subprocess.run(["umount", str(tmp_path / "ro")], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(tmp_path / "ro")], capture_output=True)


@pytest.mark.parametrize("whole_dir", [False, True])
def test_a_read_only_ledger_is_refused_before_anything_runs(project, unmount, whole_dir):
    path = read_only_place(project, whole_dir)
    before = sha(path)
    p = bisectk("run", project / "spec.toml", "--ledger", path, cwd=project)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"bisectk: ledger {path}")
    assert "read-only" in p.stderr or whole_dir and "directory" in p.stderr and "not writable" in p.stderr
    assert "nothing has run" in p.stderr
    assert not executions(project)
    assert sha(path) == before


def test_a_read_only_ledger_can_still_be_read(project, unmount):
    path = read_only_place(project, True)
    db = Ledger(path, readonly=True)
    assert len(db.runs(FP, '{"a":1}')) == 1
    db.close()
    assert check(path).rows["runs"] == 3


# -- full disk ----------------------------------------------------------------------------------
def test_a_full_ledger_records_nothing_half_way(tmp_path):
    db = Ledger(tmp_path / "l.db")
    db.add_run(FP, KEY, a_run(0))
    (pages,) = db.db.execute("PRAGMA page_count").fetchone()
    db.db.execute(f"PRAGMA max_page_count={pages}")  # SQLite's own "disk full" (SQLITE_FULL)
    with pytest.raises(LedgerError, match="disk is full.*nothing was recorded half-way"):
        db.add_run(FP, KEY, a_run(1, size=200_000))
    assert [r.signature for r in db.runs(FP, KEY)] == ["run 0"]
    db.db.execute("PRAGMA max_page_count=1000000")
    assert db.add_run(FP, KEY, a_run(1, size=200_000)) == 1
    db.close()
    assert check(tmp_path / "l.db").ok


@pytest.fixture
def tiny_disk(tmp_path):
    d = tmp_path / "disk"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield d
    if subprocess.run(["umount", str(d)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_full_disk_is_one_line_and_the_ledger_stays_whole(project, tiny_disk):
    path = tiny_disk / "l.db"
    populated(path, n=3)
    filler = tiny_disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # fill the disk to the last block
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    p = bisectk("run", project / "spec.toml", "--config", "good", "--ledger", path, cwd=project)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: ledger") and "Traceback" not in p.stderr
    assert "disk is full" in lines[0] and "nothing was recorded half-way" in lines[0]
    filler.unlink()
    assert check(path).ok and check(path).rows["runs"] == 3
    p = bisectk("run", project / "spec.toml", "--config", "good", "--ledger", path, cwd=project)
    assert p.returncode == 0, p.stderr


# -- schema ---------------------------------------------------------------------------------------
V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, config_key TEXT NOT NULL,
    idx INTEGER NOT NULL, session INTEGER, created REAL NOT NULL, outcome TEXT NOT NULL, kind TEXT, signature TEXT,
    duration_s REAL, run_json TEXT NOT NULL, UNIQUE (fingerprint, config_key, idx));
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, session INTEGER NOT NULL, kind TEXT NOT NULL,
    data_json TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE sessions (id INTEGER PRIMARY KEY AUTOINCREMENT, command TEXT NOT NULL, fingerprint TEXT NOT NULL,
    args_json TEXT NOT NULL, created REAL NOT NULL, finished REAL, result_json TEXT);
INSERT INTO meta VALUES ('schema', '1');
"""


def test_a_schema_1_ledger_is_migrated_and_keeps_its_runs(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(V1)
    con.execute("INSERT INTO runs (fingerprint, config_key, idx, created, outcome, run_json) VALUES (?,?,?,?,?,?)",
                (FP, KEY, 0, 1.0, "fail", json.dumps(a_run(5).to_dict())))
    con.commit()
    con.close()
    assert Ledger(path, readonly=True).runs(FP, KEY)[0].signature == "run 5"  # readable as it is
    db = Ledger(path)
    assert db.schema == SCHEMA_VERSION and db.runs(FP, KEY)[0].signature == "run 5"
    assert db.claim(FP, KEY, 0).run.signature == "run 5"


LONG = json.dumps({f"f{k}": k % 2 for k in range(LONG_KEY)}, sort_keys=True)   # thousands of factors


def test_a_long_configuration_key_is_stored_as_its_digest_and_found_again(tmp_path):
    db = Ledger(tmp_path / "l.db")
    with db.claim(FP, LONG, 0) as claim:
        claim.record(a_run(1))
    db.add_run(FP, LONG, a_run(2))
    db.add_run(FP, LONG[:-2] + "0}", a_run(3))     # another configuration of the same length
    stored = [r[0] for r in db.db.execute("SELECT config_key FROM runs ORDER BY id")]
    assert all(k.startswith("sha256:") and len(k) < 80 for k in stored) and len(set(stored)) == 2
    assert [r.signature for r in db.runs(FP, LONG)] == ["run 1", "run 2"]
    assert db.run_at(FP, LONG, 1).signature == "run 2" and db.claim(FP, LONG, 1).run.signature == "run 2"
    db.add_run(FP, KEY, a_run(4))       # a short key stays readable as it is
    assert db.db.execute("SELECT config_key FROM runs WHERE idx=0 ORDER BY id DESC").fetchone()[0] == KEY


def test_a_schema_2_ledger_keeps_its_runs_of_long_keys(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(V1.replace("'schema', '1'", "'schema', '2'"))
    con.execute(schema._TABLES["claims"])
    for idx, key in enumerate((LONG, KEY)):
        con.execute("INSERT INTO runs (fingerprint, config_key, idx, created, outcome, run_json) VALUES (?,?,?,?,?,?)",
                    (FP, key, 0, 1.0, "fail", json.dumps(a_run(idx).to_dict())))
    con.commit()
    con.close()
    assert Ledger(path, readonly=True).runs(FP, LONG)[0].signature == "run 0"   # read as it is
    salvage(path, tmp_path / "copy.db")
    db = Ledger(path)
    assert db.schema == SCHEMA_VERSION
    for ledger in (db, Ledger(tmp_path / "copy.db")):
        assert ledger.runs(FP, LONG)[0].signature == "run 0" and ledger.runs(FP, KEY)[0].signature == "run 1"
        assert ledger.claim(FP, LONG, 0).run.signature == "run 0"
        assert max(len(r[0]) for r in ledger.db.execute("SELECT config_key FROM runs")) < 80


def test_a_newer_schema_is_refused(tmp_path):
    db = Ledger(tmp_path / "l.db")
    db.db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.close()
    with pytest.raises(LedgerError, match="schema version 99"):
        Ledger(tmp_path / "l.db")


def test_check_calls_a_newer_bisectks_ledger_newer_not_damaged(tmp_path):
    """`ledger check` of a ledger a newer bisectk wrote said DAMAGED and advised a salvage, which
    copies its rows into this bisectk's older schema, where opening it says to upgrade bisectk."""
    path = populated(tmp_path / "l.db", n=3)
    con = sqlite3.connect(path)
    con.execute(f"UPDATE meta SET value='{SCHEMA_VERSION + 1}' WHERE key='schema'")
    con.commit()
    con.close()
    before = sha(path)
    report = check(path)
    text = "\n".join(report.lines())
    assert not report.ok and report.newer and not report.problems, text
    assert "written by a newer bisectk" in text and "upgrade bisectk" in text, text
    assert "DAMAGED" not in text and "--salvage" not in text and sha(path) == before


@pytest.mark.parametrize("where", [0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99])
def test_damage_anywhere_is_a_ledger_error_never_a_crash(tmp_path, where):
    path = populated(tmp_path / "l.db", n=100)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(int(size * where))
        f.write(os.urandom(1024))
    before = sha(path)
    try:
        db = Ledger(path)
        for i in range(100):
            db.runs(FP, f'{{"a":{i}}}')
        db.events(1)
        db.last_session("run")
    except LedgerError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
    else:  # the damage missed everything that was read: then nothing may have changed either
        pass
    report = check(path)
    assert isinstance(report.ok, bool) and report.lines()
    assert sha(path) == before or report.ok


# -- ledger check is at least as strict as opening and reading (issue 22) ----------------------------
def read_like_the_commands(path: Path, n: int) -> None:
    """Open the ledger for writing and read back every row the way commands do (ablate's and run's
    memo lookups, --resume's last session, report's sessions, log's events); LedgerError if any
    of it calls the ledger damaged."""
    db = Ledger(path)
    try:
        for i in range(n):
            db.runs(FP, f'{{"a":{i}}}')
            db.run_at(FP, f'{{"a":{i}}}', 0)
        db.last_session("run", FP)
        db.last_finished_session()
        for sid in (1, 2):
            db.session(sid)
            db.events(sid)
    finally:
        db.close()


def flipped(src: Path, dest: Path, seed: int) -> Path:
    """A copy with a few seeded bit flips: half anywhere in the file, half inside a stored text
    (where SQLite's page checks cannot see them)."""
    import random
    rng = random.Random(seed)
    data = bytearray(src.read_bytes())
    if seed % 2:
        for _ in range(rng.choice([1, 4, 16])):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    else:
        con = sqlite3.connect(src)
        texts = [r[0] for r in con.execute("SELECT run_json FROM runs UNION ALL SELECT data_json FROM events "
                                           "UNION ALL SELECT args_json FROM sessions UNION ALL SELECT result_json "
                                           "FROM sessions WHERE result_json IS NOT NULL")]
        con.close()
        spans = [(at, at + len(t.encode())) for t in texts if (at := data.find(t.encode())) >= 0]
        lo, hi = rng.choice(spans)
        i = rng.randrange(lo, hi)
        data[i] ^= 1 << rng.randrange(8)
    dest.write_bytes(bytes(data))
    return dest


@pytest.mark.parametrize("seed", range(40))
def test_ledger_check_and_opening_agree_on_bit_flipped_ledgers(tmp_path, seed):
    """Before issue 22, `ledger check` said ok on ledgers whose records no longer decode (or whose
    text is not UTF-8), which every command then rejected as damaged, pointing at `ledger check`."""
    n = 12
    src = tmp_path / "src.db"
    db = Ledger(src)
    s = db.open_session("ablate", FP, {"spec": "x", "strategy": "adaptive"})
    for i in range(n):
        db.add_run(FP, f'{{"a":{i}}}', a_run(i, size=50), s)
        db.add_event(s, "observation", {"i": i, "label": f"hybrid a={i}"})
    db.close_session(s, {"command": "run", "ok": True})
    db.close()
    con = sqlite3.connect(src)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    path = flipped(src, tmp_path / "l.db", seed)
    report = check(path)        # read-only: first, while the file is as flipped
    try:
        read_like_the_commands(path, n)
        commands_ok = True
    except LedgerError as exc:
        assert "\n" not in str(exc) and "ledger check" in str(exc) or "damaged" in str(exc), exc
        commands_ok = False
    if not commands_ok:
        assert not report.ok, (seed, report.lines())
    if report.ok:
        assert commands_ok


# -- deleted or replaced while in use (issue 22) -----------------------------------------------------
DELETER = """
import json, os, shutil, sys
a = dict(x.split("=") for x in sys.argv[1:])
if a["b"] == "1" and a["c"] == "0":      # the subject itself removes the ledger's directory mid-run
    shutil.rmtree(os.environ["DELETE_AT"], ignore_errors=True)
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if a["a"] == "1" else 0.0}))
"""


def test_a_ledger_deleted_mid_run_keeps_every_observation(tmp_path):
    """Before: the command ended 0 and the ledger was gone with every run in it."""
    spec = err_spec(tmp_path, "del", DELETER, "abcd")
    led = tmp_path / "led" / "l.db"
    led.parent.mkdir()      # the subject deletes it mid-run; a --ledger's directory must be there at the start
    env = dict(os.environ, DELETE_AT=str(led.parent))
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(spec), "--exhaustive", "--json",
                        "--ledger", str(led)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["culprits"] == ["a"]
    assert "was deleted while this command ran" in p.stderr and "no observation is lost" in p.stderr
    con = sqlite3.connect(led)
    (runs,) = con.execute("SELECT COUNT(*) FROM runs").fetchone()
    (result,) = con.execute("SELECT result_json FROM sessions ORDER BY id DESC LIMIT 1").fetchone()
    con.close()
    # every observation kept: the 16 configurations and the confirmation runs (search/confirm.py)
    assert runs == doc["observations"] >= 16 and json.loads(result)["culprits"] == ["a"]
    again = subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(spec), "--exhaustive", "--json",
                            "--ledger", str(led)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    # all answered from the ledger it kept (the same environment: DELETE_AT is part of the memo key)
    assert json.loads(again.stdout)["runs"] == 0


def test_a_ledger_replaced_mid_run_is_not_overwritten(tmp_path):
    path = tmp_path / "l.db"
    db = Ledger(path)
    db.add_run(FP, KEY, a_run(0))
    os.unlink(path)
    other = populated(tmp_path / "other.db", n=2)
    os.replace(other, path)                 # someone else's ledger now sits at the path
    before = sha(path)
    notices = []
    db.on_notice = notices.append
    db.add_run(FP, KEY, a_run(1))
    assert sha(path) == before              # theirs untouched
    assert db.path != path and db.path.name.startswith("l.saved-") and notices and "replaced" in notices[0]
    db.close()
    assert len(Ledger(db.path).runs(FP, KEY)) == 2


def test_a_ledger_writes_ahead_and_does_not_sync_every_commit(tmp_path):
    """WAL with synchronous=NORMAL: a commit is not an fsync; what a killed process committed is
    still read by the next one."""
    db = tmp_path / "l.db"
    ledger = Ledger(db)
    assert ledger.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ledger.db.execute("PRAGMA synchronous").fetchone()[0] == 1      # NORMAL
    ledger.close()
    code = ("import os, sys; from bisectk.ledger import Ledger\n"
            "l = Ledger(sys.argv[1]); s = l.open_session('run', 'f', {}); l.add_event(s, 'x', {'n': 1})\n"
            "os.kill(os.getpid(), 9)")
    subprocess.run([sys.executable, "-c", code, str(db)], env={**os.environ, "PYTHONPATH": os.getcwd()})
    again = Ledger(db)
    assert again.db.execute("SELECT count(*) FROM events").fetchone()[0] >= 1
    again.close()


def test_a_ledger_on_a_network_file_system_keeps_the_rollback_journal(tmp_path, monkeypatch):
    """A cluster's home directory is NFS, Lustre or GPFS: SQLite's WAL keeps its index in shared
    memory, which two hosts (a login node and a GPU node, or Ray actors) never share. There the
    ledger keeps the rollback journal; elsewhere, WAL."""
    net = tmp_path / "net dir"
    net.mkdir()
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/root / ext4 rw 0 0\nserver:/home {str(net).replace(' ', chr(92) + '040')} nfs4 rw 0 0\n")
    monkeypatch.setattr(sqlitefile, "MOUNTS", str(mounts))
    assert sqlitefile.network_fs(net / "l.db") == "nfs4" and sqlitefile.network_fs(tmp_path / "l.db") is None
    for where, mode in ((net, "delete"), (tmp_path, "wal")):
        led = Ledger(where / "l.db")
        assert led.db.execute("PRAGMA journal_mode").fetchone()[0].lower() == mode
        led.close()


def test_a_spec_this_user_cannot_write_beside_keeps_its_ledger_in_the_users_cache(tmp_path, monkeypatch):
    """`bisectk ablate` with the embedded default, bisectk installed system-wide: its variants'
    directory is not the user's to write, and the newcomer's first command stopped at "cannot
    create .../variants/cpu/.bisectk". The ledger then goes to the user's cache, as without a spec."""
    import bisectk.engine.session as session_mod
    from bisectk.spec import load_spec
    from tests.conftest import toy_spec
    spec = load_spec(toy_spec(tmp_path, {"mode": "ok"}, {"mode": "wrong"}))
    assert session_mod.ledger_location(spec=spec) == tmp_path / ".bisectk" / "ledger.db"
    monkeypatch.setattr(session_mod.os, "access", lambda path, mode: False)
    assert session_mod.ledger_location(spec=spec) == session_mod.cache_dir() / "ledger.db"


def test_ledger_check_of_a_directory_or_a_device_says_it_is_no_ledger_file(tmp_path):
    """`ledger check /dev/null` and `ledger check DIR` said DAMAGED and offered --salvage: there is
    no file there to check or salvage, and one line says so."""
    from tests.conftest import bisectk
    for path, what in ((tmp_path, "is a directory"), (Path("/dev/null"), "is not a regular file")):
        p = bisectk("ledger", "check", path)
        assert p.returncode == 2 and f"{what}, not a ledger file" in p.stderr, (p.stdout, p.stderr)
        assert "DAMAGED" not in p.stdout + p.stderr and "salvage" not in p.stdout + p.stderr


def test_a_ledger_path_that_is_a_device_or_a_fifo_is_named_as_such(tmp_path):
    """`--ledger /dev/null` (or a FIFO) said "I/O error while opening (disk I/O error); is the disk
    full or failing?": nothing is wrong with the disk, the path is no regular file."""
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    for path in (Path("/dev/null"), fifo):
        with pytest.raises(LedgerError) as err:
            Ledger(path)
        assert "not a regular file" in str(err.value) and "disk" not in str(err.value), str(err.value)


def test_report_of_an_empty_file_says_nothing_was_recorded(tmp_path):
    """`bisectk report EMPTY.db` said "no such table: sessions (while reading sessions)", where
    `ledger check` says the file is empty, not yet a ledger."""
    from tests.conftest import bisectk
    empty = tmp_path / "empty.db"
    empty.touch()
    p = bisectk("report", empty)
    assert p.returncode == 2 and p.stderr.strip() == f"bisectk: no ledger at {empty}: an empty file, nothing has " \
                                                     "been recorded there", p.stderr
    assert empty.read_bytes() == b""


def test_reading_a_ledger_leaves_its_directory_as_it_found_it(tmp_path):
    """`bisectk report`, `log`, `ledger check`: SQLite made -wal and -shm beside the file for the
    reader and left them (only a read-write connection's close removes them); the file itself is
    never written."""
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    ledger.add_run(FP, KEY, a_run(1), ledger.open_session("run", FP, {}))
    ledger.close()
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    reader = Ledger(path, readonly=True)
    assert reader.runs(FP, KEY)[0].signature == "run 1"
    reader.close()
    assert check(path).ok
    assert "Traceback" not in bisectk("report", str(path)).stderr    # no result stored: said in one line
    assert sorted(os.listdir(tmp_path)) == ["l.db"]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before



def test_reading_another_users_ledger_leaves_no_files_that_would_lock_its_owner_out(tmp_path, monkeypatch):
    """`bisectk report` (or `log`, `ledger check`) on a ledger this user cannot write, in a directory
    it can (a team's shared directory, a CI cache): SQLite made -wal and -shm beside it for the
    reader, owned by the reader, and the reader's close could not remove them (that takes a
    read-write connection). The owner's next command then failed: SQLite opens another user's
    -wal read-only, 'attempt to write a readonly database', said as 'ledger ... is read-only'."""
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    ledger.add_run(FP, KEY, a_run(1), ledger.open_session("run", FP, {}))
    ledger.close()
    access = os.access
    monkeypatch.setattr(sqlitefile.os, "access", lambda p, mode: access(p, mode) and not (
        mode & os.W_OK and os.path.realpath(p) == os.path.realpath(path)))
    reader = Ledger(path, readonly=True)
    assert reader.runs(FP, KEY)[0].signature == "run 1"
    reader.close()
    assert check(path).ok
    assert sorted(os.listdir(tmp_path)) == ["l.db"]

def test_a_reader_leaves_the_write_ahead_log_to_a_writer_that_has_the_ledger_open(tmp_path):
    """A report while a command writes the ledger: the reader's close keeps the writer's -wal and
    -shm (SQLite removes them only for the last connection), the writer goes on, and its own
    close removes them."""
    path = tmp_path / "l.db"
    writer = Ledger(path)
    session = writer.open_session("run", FP, {})
    writer.add_run(FP, KEY, a_run(1), session)
    reader = Ledger(path, readonly=True)
    assert len(reader.runs(FP, KEY)) == 1
    reader.close()
    assert {"l.db-wal", "l.db-shm"} <= set(os.listdir(tmp_path))
    writer.add_run(FP, KEY, a_run(2), session)
    reader = Ledger(path, readonly=True)
    assert [r.signature for r in reader.runs(FP, KEY)] == ["run 1", "run 2"]
    reader.close()
    writer.close()
    assert sorted(os.listdir(tmp_path)) == ["l.db"]
    assert len(Ledger(path, readonly=True).runs(FP, KEY)) == 2


def test_a_reader_keeps_what_a_killed_writer_left_in_the_write_ahead_log(tmp_path):
    """Frames a killed writer left in -wal are the next writer's to checkpoint: a reader (and
    `ledger check`, which never writes the file) leaves them as they are."""
    path = tmp_path / "l.db"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    subprocess.run([sys.executable, "-c", KILLED, str(path)], check=True, env=env, timeout=60)
    wal = path.with_name("l.db-wal").read_bytes()
    assert wal and check(path).ok
    reader = Ledger(path, readonly=True)
    reader.close()
    assert path.with_name("l.db-wal").read_bytes() == wal


def test_claims_still_held_at_close_are_given_back(tmp_path):
    """A command interrupted with runs under way in other threads closes its ledger while they
    still hold their claims: those go with it, rather than stay as stale rows (`ledger check`:
    "3 stale") for another command to take over; a claim recorded or released is untouched."""
    path = tmp_path / "l.db"
    first = Ledger(path)
    held = first.claim(FP, KEY, 0)
    done = first.claim(FP, KEY, 1)
    done.record(a_run(1))
    assert held.held and first.db.execute("SELECT count(*) FROM claims").fetchone()[0] == 1
    other = Ledger(path)
    other_claim = other.claim(FP, '{"b":1}', 0)
    first.close()
    assert [r[0] for r in other.db.execute("SELECT owner FROM claims")] == [other_claim.owner]
    other.close()
    assert check(path).stale_claims == 0 and len(Ledger(path, readonly=True).runs(FP, KEY)) == 1


def test_a_big_ledger_is_checked_whole_at_opening_once_a_day_not_at_every_command(tmp_path, monkeypatch):
    """SQLite's quick_check reads the whole file: 0.22 s a command at 120 MB, so every command
    grew with its ledger. Past FULL_CHECK_BYTES (0 here) it runs at the first opening, and again
    only once its day is over; a small ledger is checked at every opening, as before."""
    checks = []
    real = store._quick_check
    monkeypatch.setattr(store, "_quick_check", lambda db: checks.append(1) or real(db))
    path = tmp_path / "l.db"
    Ledger(path).close()
    assert len(checks) == 1
    monkeypatch.setattr(store, "FULL_CHECK_BYTES", 0)
    Ledger(path).close()            # not checked lately: checked, and the time kept
    Ledger(path).close()
    Ledger(path, readonly=True).close()
    assert len(checks) == 2
    monkeypatch.setattr(store, "CHECK_EVERY_S", 0)
    Ledger(path).close()            # its day is over
    assert len(checks) == 3
    monkeypatch.setattr(store, "FULL_CHECK_BYTES", 1 << 40)
    monkeypatch.setattr(store, "CHECK_EVERY_S", 24 * 3600)
    Ledger(path).close()            # small again: every opening
    assert len(checks) == 4


def test_damage_found_by_the_opening_check_is_one_line(tmp_path, monkeypatch):
    """quick_check reports a damaged page as lines ('*** in database main ***\\nOn tree page ...'):
    the error printed for it is one line all the same."""
    path = populated(tmp_path / "l.db", n=3)
    monkeypatch.setattr(store, "_quick_check", lambda db: ["*** in database main ***\nOn tree page 45 cell 0: "
                                                                "Rowid 61 out of order"])
    with pytest.raises(LedgerError) as err:
        Ledger(path)
    assert "\n" not in str(err.value) and "Rowid 61 out of order" in str(err.value)


@pytest.mark.parametrize("stored, read", [('["a.py", 1, null, {"x": 1}]', ["a.py"]), ('"a.py"', []),
                                          ('{"a.py": 1}', []), ("not json", [])])
def test_recorded_sources_are_read_one_way_when_reading_and_when_adding(tmp_path, stored, read):
    """A subject's recorded sources (a `meta` row, its JSON not checked by SQLite) were read twice:
    `sources` kept a list's paths only, `add_sources` took any JSON it could make a set of. A list
    holding a number or null stopped the run with a TypeError (sorting str against int), a dict
    in it lost every path, a string became its characters ('a', '.', 'p', 'y' recorded as
    sources), a dict its keys. Both now read the row as `sources` did."""
    db = Ledger(tmp_path / "l.db")
    db.db.execute("INSERT INTO meta VALUES ('sources:k', ?)", (stored,))
    assert db.sources("k") == read
    assert db.add_sources("k", ["b.py"]) == sorted({*read, "b.py"})
    assert db.sources("k") == sorted({*read, "b.py"})
    db.close()


def test_an_interrupt_while_the_ledger_is_prepared_closes_its_connection(tmp_path, monkeypatch):
    """Ctrl-C (a CI job's SIGTERM) in the second a command opens its ledger: the connection, made
    and put in WAL mode, was never closed, so a brand-new ledger was left with -wal and -shm files
    beside it, its tables in the log alone."""
    made = []
    prepare = store.Store._prepare

    def interrupted(self):
        made.append(prepare(self))
        raise KeyboardInterrupt
    monkeypatch.setattr(store.Store, "_prepare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Ledger(tmp_path / "l.db")
    assert made and not (tmp_path / "l.db-wal").exists() and not (tmp_path / "l.db-shm").exists()
    monkeypatch.undo()
    Ledger(tmp_path / "l.db").close()


def test_salvage_into_a_directory_that_does_not_exist_is_refused_not_made(tmp_path):
    """`ledger check --salvage ~/bakup/l.db` (a typo): the directories were made and the rows
    copied there, where --ledger refuses a directory that does not exist (a typo's ledger is one no
    later command finds); said in one line, nothing made."""
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    ledger.add_run(FP, KEY, a_run(1), ledger.open_session("run", FP, {}))
    ledger.close()
    p = bisectk("ledger", "check", path, "--salvage", tmp_path / "bakup" / "sub" / "s.db")
    assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and len(p.stderr.splitlines()) == 1, p.stderr
    assert "does not exist" in p.stderr and not (tmp_path / "bakup").exists()


def test_an_interrupted_salvage_leaves_no_ledger_that_looks_whole(tmp_path, monkeypatch):
    """Ctrl-C while `ledger check --salvage NEW.db` copied a large ledger: NEW.db was left with the
    sessions copied and none of the runs, a ledger like any other to the `--ledger NEW.db` the
    check advised, and a second salvage was refused ('NEW.db exists')."""
    import bisectk.ledger_check as LC
    path = populated(tmp_path / "l.db")
    rows = LC._readable_rows

    def interrupted(db, table, cols, problems=None):
        if table == "runs":
            raise KeyboardInterrupt
        return rows(db, table, cols, problems)
    monkeypatch.setattr(LC, "_readable_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        salvage(path, tmp_path / "new.db")
    assert sorted(os.listdir(tmp_path)) == ["l.db"]
    monkeypatch.undo()
    assert salvage(path, tmp_path / "new.db")["runs"] == 300
