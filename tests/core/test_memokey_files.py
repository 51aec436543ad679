"""The memo key holds what a verdict reads beyond the sources: the program and an interpreter's
script whatever their suffix, what a script sources, the spec's directory and build timeout, and
for `diff` every file of both trees. Each case: a rerun after the edit is a new observation with
the new verdict, and a rerun with nothing changed is still answered from the ledger."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisectk.contents import named_files
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome
from bisectk.run.runner import Runner
from bisectk.spec import adhoc_spec, load_spec
from tests.conftest import bisectk


def verdict(spec, ledger_path: Path, config: dict):
    """(outcome, answered from the ledger) of one run in a fresh Runner, as a new command makes it."""
    ledger = Ledger(ledger_path)
    try:
        v = Runner(spec, ledger).verdict(config)
        return v.outcome, v.cached
    finally:
        ledger.close()


def spec_run(d: Path, ledger: Path):
    spec = load_spec(d / "s.toml")
    return verdict(spec, ledger, spec.endpoint("bad"))


@pytest.mark.parametrize("command, script", [
    (["bash", "check.bash", "{a}"], "check.bash"),
    (["sh", "run", "{a}"], "run"),
    (["env", "X=1", "bash", "-x", "-o", "pipefail", "check.bash"], "check.bash"),
    (["./run", "{a}"], "run"),
    (["perl", "-w", "t.pl", "{a}"], "t.pl"),
])
def test_the_program_and_an_interpreters_script_count_whatever_their_suffix(tmp_path, command, script):
    d = tmp_path
    (d / "pyproject.toml").touch()
    body = "exit 0;\n" if script.endswith(".pl") else "exit 0\n"
    (d / script).write_text(("#!/bin/sh\n" if script == "run" else "") + body)
    (d / script).chmod(0o755)
    (d / "s.toml").write_text(f'[subject]\ncommand = {json.dumps(command)}\n[good]\na = 1\n[bad]\na = 2\n')
    assert spec_run(d, d / "l.db") == (Outcome.PASS, False)
    assert spec_run(d, d / "l.db") == (Outcome.PASS, True)
    (d / script).write_text(("#!/bin/sh\n" if script == "run" else "") + body.replace("0", "1"))
    assert spec_run(d, d / "l.db") == (Outcome.FAIL, False)
    assert spec_run(d, d / "l.db") == (Outcome.FAIL, True)


def test_a_program_that_lost_its_execute_bit_is_run_again_not_answered_from_the_ledger(tmp_path):
    """`chmod -x ./t.sh` after a pass changes no byte of it, yet the run no longer starts: the
    stored pass answered it. An executable program's key is what it was, so stored runs still
    answer (the first two lines), and the run that cannot start is never stored."""
    d = tmp_path
    (d / "pyproject.toml").touch()
    (d / "t.sh").write_text("#!/bin/sh\nexit 0\n")
    (d / "t.sh").chmod(0o755)
    (d / "s.toml").write_text('[subject]\ncommand = ["./t.sh", "{a}"]\n[good]\na = 1\n[bad]\na = 2\n')
    assert spec_run(d, d / "l.db") == (Outcome.PASS, False)
    assert spec_run(d, d / "l.db") == (Outcome.PASS, True)
    (d / "t.sh").chmod(0o644)
    assert spec_run(d, d / "l.db") == (Outcome.UNRESOLVED, False)
    assert spec_run(d, d / "l.db") == (Outcome.UNRESOLVED, False)
    (d / "t.sh").chmod(0o755)
    assert spec_run(d, d / "l.db") == (Outcome.PASS, True)


def test_a_helper_the_script_sources_is_in_the_key(tmp_path):
    """The script and its helper live outside the directory the command runs in (whose tree is
    keyed anyway): only following what the script sources finds the helper."""
    tools, work = tmp_path / "tools", tmp_path / "work"
    tools.mkdir()
    work.mkdir()
    (tools / "test.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/helper.sh"\n[ "$LIMIT" -lt 5 ]\n')
    (tools / "test.sh").chmod(0o755)
    (tools / "helper.sh").write_text("LIMIT=3\n")
    spec = adhoc_spec([str(tools / "test.sh")], name="t", cwd=work, protocol="git")
    db = tmp_path / "l.db"
    assert verdict(spec, db, {}) == (Outcome.PASS, False)
    assert verdict(spec, db, {}) == (Outcome.PASS, True)
    (tools / "helper.sh").write_text("LIMIT=7\n")
    assert verdict(spec, db, {}) == (Outcome.FAIL, False)
    assert verdict(spec, db, {}) == (Outcome.FAIL, True)


def test_bisect_after_editing_a_sourced_helper_finds_the_new_culprit_and_says_what_it_compared(tmp_path):
    """The finding: `--run ./test.sh` sourcing helper.sh; editing the helper moved the culprit."""
    r = tmp_path / "repo"
    r.mkdir()

    def git(*a):
        subprocess.run(["git", *a], cwd=r, check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    for i in range(1, 11):
        (r / "counter").write_text(f"{i}\n")
        git("add", "-A")
        git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", f"commit {i}")
    (r / "test.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/helper.sh"\n[ $(cat counter) -lt $LIMIT ]\n')
    (r / "test.sh").chmod(0o755)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}

    def first_bad():
        p = bisectk("bisect", "--good", "HEAD~9", "--run", "./test.sh", cwd=r, env=env, check=0)
        out = p.stdout + p.stderr
        return [ln for ln in out.splitlines() if ln.startswith("first bad commit")][0].split()[-1], out
    (r / "helper.sh").write_text("LIMIT=4\n")
    assert first_bad()[0] == "4"
    again, out = first_bad()
    assert again == "4" and "0 executed" in out and "the 3 files it names or sources" in out, out
    (r / "helper.sh").write_text("LIMIT=8\n")
    moved, out = first_bad()
    assert moved == "8" and "from the ledger" not in out, out


def test_the_specs_directory_is_in_the_key(tmp_path):
    """Two directories with the same script; what differs is a file it names by a computed word."""
    d = tmp_path
    (d / "pyproject.toml").touch()
    for sub, code in (("d1", "0"), ("d2", "1")):
        (d / sub).mkdir()
        (d / sub / "run").write_text("exit $(cat code)\n")
        (d / sub / "code").write_text(code + "\n")
    spec = '[subject]\ncommand = ["sh", "run", "{a}"]\ncwd = "CWD"\n[good]\na = 1\n[bad]\na = 2\n'
    (d / "s.toml").write_text(spec.replace("CWD", "d1"))
    assert spec_run(d, d / "l.db") == (Outcome.PASS, False)
    (d / "s.toml").write_text(spec.replace("CWD", "d2"))
    assert spec_run(d, d / "l.db") == (Outcome.FAIL, False)
    assert spec_run(d, d / "l.db") == (Outcome.FAIL, True)


def test_the_build_timeout_is_in_the_key(tmp_path):
    d = tmp_path
    (d / "pyproject.toml").touch()
    (d / "build.sh").write_text("sleep 1.5\n")
    (d / "run.sh").write_text("exit 0\n")
    spec = ('[subject]\ncommand = ["sh", "run.sh", "{a}"]\nbuild = ["sh", "build.sh"]\nbuild_timeout = LIMIT\n'
            '[good]\na = 1\n[bad]\na = 2\n')
    (d / "s.toml").write_text(spec.replace("LIMIT", "0.5"))
    assert spec_run(d, d / "l.db") == (Outcome.UNRESOLVED, False)
    (d / "s.toml").write_text(spec.replace("LIMIT", "30"))
    assert spec_run(d, d / "l.db") == (Outcome.PASS, False)
    assert spec_run(d, d / "l.db") == (Outcome.PASS, True)


def test_diff_keys_every_file_of_both_trees_not_only_sources(tmp_path):
    """A data file present alike in GOOD and BAD, read by a computed name (no script names it),
    is edited so that GOOD fails too: diff must run again and say the endpoints are unusable."""
    d = tmp_path
    for side, a in (("G", "1"), ("B", "2")):
        (d / side).mkdir()
        (d / side / "a.py").write_text(f"A = {a}\n")
        (d / side / "lim.dat").write_text("5\n")
    (d / "t.py").write_text('import sys, os\nsys.path.insert(0, os.getcwd())\nimport a\n'
                            'sys.exit(1 if a.A > int(open("lim" + ".dat").read()) - 4 else 0)\n')
    args = ("diff", "G", "B", "--run", f"python3 {d / 't.py'}", "--ledger", d / "l.db", "--json")

    def diff(code):
        p = bisectk(*args, cwd=d, check=code)
        return json.loads(p.stdout)
    first = diff(0)
    assert first["runs"] > 0 and [h["file"] for h in first["culprit_hunks"]] == ["a.py"]
    again = diff(0)
    assert again["runs"] == 0 and again["observations"] > 0
    for side in ("G", "B"):
        (d / side / "lim.dat").write_text("1\n")     # now GOOD itself fails
    moved = diff(2)
    assert moved["runs"] > 0 and moved["ok"] is False


# -- which files a command names (bisectk/contents.py) ----------------------------------------
def test_named_files_follow_scripts_boundedly_and_skip_outputs_modules_and_binaries(tmp_path):
    d = tmp_path
    (d / "lib").mkdir()
    (d / "t.py").write_text('import subprocess\nsubprocess.run(["sh", "lib/a.sh"])\nopen("in.txt")\n')
    (d / "lib" / "a.sh").write_text('. "$(dirname "$0")/b.sh"\necho x > out.txt\n')
    (d / "lib" / "b.sh").write_text(". ./c.sh\n")
    (d / "lib" / "c.sh").write_text(". ./d.sh\n")      # depth 3: c.sh is counted, d.sh is not followed
    (d / "lib" / "d.sh").write_text("true\n")
    (d / "in.txt").write_text("data\n")
    (d / "out.txt").write_text("written by the run\n")
    (d / "blob.bin").write_bytes(b"\0ELF names in.txt")
    (d / "data.json").write_text("{}")
    found = named_files([["python3", "-u", "t.py", "data.json", "blob.bin"]], d)
    assert set(found) == {"t.py", "in.txt", "lib/a.sh", "lib/b.sh", "lib/c.sh"}, found
    assert named_files([["python3", "-m", "t", "data.json"]], d) == {}      # a module, and a data argument
    assert set(named_files([["./blob.bin"]], d)) == {"blob.bin"}           # the program, never scanned
    assert set(named_files([["sh", "-c", "sh lib/c.sh"]], d)) == {"lib/c.sh", "lib/d.sh"}   # inline code too
    assert set(named_files([["bash", "-xc", "cat in.txt"]], d)) == {"in.txt"}


def test_a_file_the_script_writes_by_name_is_no_input_and_the_next_command_is_answered(tmp_path):
    """A subject that appends each run to a log it names (`open("runs.log", "a")`) or writes its
    last result (`Path("last.json").write_text`): both files change with every run, and keyed as
    named data files every later command ran everything again. A file it only reads still counts."""
    d = tmp_path
    (d / "pyproject.toml").touch()
    (d / "limit.txt").write_text("0.5\n")
    (d / "t.py").write_text(
        "import json, sys\nfrom pathlib import Path\n"
        "err = float(sys.argv[1])\nlimit = float(open('limit.txt').read())\n"
        "with open('runs.log', 'a') as f:\n    f.write(sys.argv[1] + '\\n')\n"
        "Path('last.json').write_text(json.dumps({'err': err}))\n"
        "print('BISECTK_RESULT ' + json.dumps({'ok': err <= limit}))\n")
    (d / "s.toml").write_text('[subject]\ncommand = ["python", "t.py", "{e}"]\n[good]\ne = 0\n[bad]\ne = 1\n')
    spec = load_spec(d / "s.toml")
    assert verdict(spec, d / "l.db", spec.endpoint("good")) == (Outcome.PASS, False)
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.FAIL, False)
    assert set(named_files([["python", "t.py", "1"]], d)) == {"t.py", "limit.txt"}
    spec = load_spec(d / "s.toml")      # the next command: runs.log and last.json have moved
    assert verdict(spec, d / "l.db", spec.endpoint("good")) == (Outcome.PASS, True)
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.FAIL, True)
    (d / "limit.txt").write_text("2\n")
    spec = load_spec(d / "s.toml")
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.PASS, False)


def test_a_log_the_script_appends_to_and_reads_back_is_no_input_and_the_next_command_is_answered(tmp_path):
    """A run script that appends its output to a log (`python3 t.py "$1" >> run.log`) and then
    reads it back (`tail -1 run.log`), and a Python subject that logs to a file through logging
    (`basicConfig(filename="py.log")`, `FileHandler("more.log")`). Before: the redirect's target
    was left out only where it was written, so the later read keyed run.log (and logging's
    files were keyed as named data): each run changed them, the runs were said "changed while
    this command ran" and none was ever reused. A file the script writes is its output wherever
    the script names it; one it only reads (`< limit.txt`) still counts."""
    d = tmp_path
    (d / "pyproject.toml").touch()
    (d / "limit.txt").write_text("0.5\n")
    (d / "t.py").write_text(
        "import json, logging, sys\nlogging.basicConfig(filename='py.log', level=logging.INFO)\n"
        "logging.getLogger('x').addHandler(logging.FileHandler('more.log'))\n"
        "err = float(sys.argv[1])\nlimit = float(sys.stdin.read())\nlogging.info('err %s', err)\n"
        "print('BISECTK_RESULT ' + json.dumps({'ok': err <= limit}))\n")
    (d / "run.sh").write_text('python3 t.py "$1" < limit.txt >> run.log\ntail -1 run.log\n')
    for log in ("run.log", "py.log", "more.log"):
        (d / log).write_text("from an earlier run\n")
    (d / "s.toml").write_text('[subject]\ncommand = ["sh", "run.sh", "{e}"]\n[good]\ne = 0\n[bad]\ne = 1\n')
    assert set(named_files([["sh", "run.sh", "1"]], d)) == {"run.sh", "t.py", "limit.txt"}
    spec = load_spec(d / "s.toml")
    assert verdict(spec, d / "l.db", spec.endpoint("good")) == (Outcome.PASS, False)
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.FAIL, False)
    spec = load_spec(d / "s.toml")      # the next command: the logs have grown
    assert verdict(spec, d / "l.db", spec.endpoint("good")) == (Outcome.PASS, True)
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.FAIL, True)
    (d / "limit.txt").write_text("2\n")
    spec = load_spec(d / "s.toml")
    assert verdict(spec, d / "l.db", spec.endpoint("bad")) == (Outcome.PASS, False)
