"""End-to-end: `bisectk triage` finds the commit and the hunk, writes Markdown, JSON and JUnit."""
import json
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git, make_repo  # noqa: E402

RUN = ["--run", "python kernel.py", "--build", "python build.py"]


def linear(r, n: int, adds: dict[int, str]) -> list[str]:
    """A linear history c0..c{n-1} of `v` edits; commit i also adds the file adds[i]; the shas."""
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (r / "v").write_text(f"{i}\n")
        if i in adds:
            (r / adds[i]).write_text("bug\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    return shas


def test_triage_finds_commit_and_hunk(tmp_path):
    shas = make_repo(tmp_path / "r", n=20, culprit=11, broken=(4, 15))
    md, js, xml = tmp_path / "t.md", tmp_path / "t.json", tmp_path / "t.xml"
    p = bisectk("triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], *RUN,
                "--report", md, "--json-out", js, "--junit", xml, timeout=600)
    assert p.returncode == 1, (p.stdout[-2000:], p.stderr[-2000:])
    doc = json.loads(js.read_text())
    assert doc["verdict"] == "culprit found" and doc["failure"]["kind"] == "hang"
    assert doc["first_bad"]["sha"] == shas[11]
    assert len(doc["culprit_hunks"]) == 1
    hunk = doc["culprit_hunks"][0]
    assert hunk["file"] == "kernel.py" and "+BUG = True" in hunk["text"] and doc["diff"]["hunks"] == 3
    text = md.read_text()
    for part in ("**Status:** Resolved", "#### Attempt 1:", "#### Culprit diff", "#### What to Try Next",
                 "Environment"):
        assert part in text
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("failures") == "1" and int(suite.get("tests")) == 4
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert len(failed) == 1 and shas[11][:10] in failed[0].find("failure").get("message")


def test_nothing_to_triage_exits_zero(tmp_path):
    shas = make_repo(tmp_path / "r", n=8, culprit=100, broken=())
    xml = tmp_path / "t.xml"
    p = bisectk("triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], *RUN, "--junit", xml,
                "--json", timeout=300)
    assert p.returncode == 0 and json.loads(p.stdout)["verdict"] == "nothing to triage"
    assert ET.parse(xml).getroot().find("testsuite").get("failures") == "0"


def test_inconclusive_exits_two(tmp_path):
    shas = make_repo(tmp_path / "r", n=8, culprit=0, broken=())  # good fails too
    p = bisectk("triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], *RUN, "--json", "--timeout", "2",
                timeout=300)
    assert p.returncode == 2 and json.loads(p.stdout)["verdict"] == "inconclusive"


def test_a_culprit_commit_that_turns_a_file_into_a_directory_is_isolated_to_its_hunk(tmp_path):
    """The culprit commit also makes `docs` (a file) a directory: its hunks are still isolated
    (that path is one hunk), not "hunk isolation could not start"."""
    import subprocess
    r = tmp_path / "r"
    r.mkdir()

    def commit(msg):
        subprocess.run(["git", "add", "-A"], cwd=r, check=True)
        subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", msg], cwd=r, check=True)
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    (r / "m.py").write_text("v = 1\n")
    (r / "docs").write_text("notes\n")
    commit("c0")
    (r / "m.py").write_text("v = 2\n")
    (r / "docs").unlink()
    (r / "docs").mkdir()
    (r / "docs" / "index.md").write_text("# notes\n")
    commit("c1")
    (r / "other.py").write_text("w = 0\n")
    commit("c2")
    p = bisectk("triage", "--repo", r, "--good", "HEAD~2", "--bad", "HEAD", "--run",
                'python -c "import m, sys; sys.exit(m.v - 1)"', "--json", "--ledger", tmp_path / "l.db", timeout=300)
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "culprit found" and doc["diff"]["hunks"] == 2, (p.stdout[-2000:], p.stderr[-2000:])
    assert [h["file"] for h in doc["culprit_hunks"]] == ["m.py"]


def test_an_untracked_script_of_the_user_runs_in_triage_as_in_bisect(tmp_path):
    """`triage --run ./test.sh` with the user's untracked script, typed in a subdirectory: it is
    copied into each commit's worktree (and each hunk tree) at pkg/test.sh and runs in the same
    subdirectory, as bisect's does. Before, every run failed to start it, and triage was
    "inconclusive"."""
    r = tmp_path / "r"
    (r / "pkg").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 7):
        (r / "pkg" / "a.py").write_text(f"x = {i}\ny = 1\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    (r / "pkg" / "test.sh").write_text('#!/bin/sh\npython3 -c "import a; assert a.x < 4"\n')   # untracked
    (r / "pkg" / "test.sh").chmod(0o755)
    p = bisectk("triage", "--good", shas[0], "--run", "./test.sh", "--json", cwd=r / "pkg", timeout=300)   # --bad: HEAD
    assert p.returncode == 1, (p.stdout[-2000:], p.stderr[-2000:])
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "culprit found" and doc["first_bad"]["sha"] == shas[3]
    assert [h["file"] for h in doc["culprit_hunks"]] == ["pkg/a.py"]
    assert doc["bisect"]["command_files"] == [{"word": "./test.sh", "use": "yours", "path": str(r / "pkg" / "test.sh"),
                                               "state": "untracked", "copy": "pkg/test.sh"}]
    assert git(r, "status", "--porcelain").split() == ["??", "pkg/test.sh"]


def test_a_hostile_commit_subject_author_and_file_name_reach_no_report_raw(tmp_path):
    """The first bad commit's subject and author hold control characters (OSC retitle, clear, DEL),
    <script> and |, and it adds a file whose name holds markup: the Markdown and HTML reports show
    them as text (no raw control byte, no HTML of their own, tables as wide as their headers)."""
    import subprocess
    from tests.report.inert import inert_html, inert_markdown
    r = tmp_path / "r"
    r.mkdir()
    hostile = "\x01\x1b]0;pwn\x07\x1b[2J\x7f <script>alert(1)</script> a|b"

    def commit(msg, author="a"):
        subprocess.run(["git", "add", "-A"], cwd=r, check=True)
        subprocess.run(["git", "-c", "user.email=a@b", "-c", f"user.name={author}", "commit", "-qm", msg], cwd=r,
                       check=True)
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    (r / "m.py").write_text("v = 1\n")
    commit("c0")
    (r / "m.py").write_text("v = 2\n")
    (r / "notes <b>x|.txt").write_text("n\n")
    commit(f"tune{hostile}", author=f"A{hostile}")
    (r / "other.py").write_text("w = 0\n")
    commit("c2")
    md, page = tmp_path / "t.md", tmp_path / "t.html"
    p = bisectk("triage", "--repo", r, "--good", "HEAD~2", "--bad", "HEAD", "--run",
                'python -c "import m, sys; sys.exit(m.v - 1)"', "--report", md, "--html", page,
                "--ledger", tmp_path / "l.db", timeout=300)
    assert p.returncode == 1, (p.stdout[-2000:], p.stderr[-2000:])
    assert "Glyph" not in p.stderr, p.stderr[-2000:]
    text = md.read_bytes().decode("utf-8")
    inert_markdown(text)
    assert "\\x01\\x1b]0;pwn\\x07\\x1b[2J\\x7f &lt;script&gt;alert(1)&lt;/script&gt; a|b" in text
    assert "&lt;b&gt;x" in text
    shown = inert_html(page.read_text(encoding="utf-8"))
    assert "\\x01\\x1b]0;pwn\\x07\\x1b[2J\\x7f <script>alert(1)</script> a|b" in shown


def test_a_root_commit_as_the_first_bad_is_the_culprit_without_hunks(tmp_path):
    """A vendored history merged in (--allow-unrelated-histories) whose root commit brings the bug:
    triage names it and writes its reports (it ended in an internal error on the missing parent)."""
    r = tmp_path / "r"
    good = linear(r, 1, {})[0]
    git(r, "checkout", "-q", "--orphan", "vendor")
    git(r, "rm", "-q", "-rf", ".")
    (r / "bug").write_text("bug\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "vendor root")
    root = git(r, "rev-parse", "HEAD")
    git(r, "checkout", "-q", "main")
    git(r, "merge", "-q", "--allow-unrelated-histories", "--no-edit", "vendor")
    (tmp_path / "t.sh").write_text("#!/bin/sh\n! test -f bug\n")
    (tmp_path / "t.sh").chmod(0o755)
    js, xml = tmp_path / "t.json", tmp_path / "t.xml"
    p = bisectk("triage", "--repo", r, "--good", good, "--run", tmp_path / "t.sh", "--json-out", js, "--junit", xml,
                timeout=300)
    assert p.returncode == 1 and "internal error" not in p.stderr, p.stderr
    doc = json.loads(js.read_text())
    assert doc["first_bad"]["sha"] == root and "root commit" in doc["diff_error"]
    assert ET.parse(xml).getroot().find("testsuite") is not None


def test_a_stopped_triage_names_no_first_bad_commit_as_a_verdict(tmp_path):
    """--max-runs spent before the answer is confirmed: inconclusive (exit 2), its best candidate
    said as unconfirmed, and the JUnit failure names no commit it is 'since'."""
    r = tmp_path / "r"
    shas = linear(r, 20, {13: "bug"})
    (tmp_path / "t.sh").write_text("#!/bin/sh\n! test -f bug\n")
    (tmp_path / "t.sh").chmod(0o755)
    xml = tmp_path / "t.xml"
    p = bisectk("triage", "--repo", r, "--good", shas[0], "--run", tmp_path / "t.sh", "--max-runs", "6",
                "--junit", xml, timeout=300)
    assert p.returncode == 2, p.stderr
    assert not any(line.startswith("first bad commit:") for line in p.stdout.splitlines()), p.stdout
    failed = [c.find("failure") for c in ET.parse(xml).getroot().iter("testcase") if c.find("failure") is not None]
    assert failed and all("since" not in f.get("message") for f in failed)


def test_independent_failing_sets_of_a_commit_are_said_as_sets_not_one_culprit(tmp_path):
    """A commit whose three hunks each fail alone: triage says three failing sets, as diff does,
    in its terminal view and its JUnit message (it printed them as one three-hunk culprit)."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for name in "abc":
        (r / f"{name}.txt").write_text("ok\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    good = git(r, "rev-parse", "HEAD")
    for name in "abc":
        (r / f"{name}.txt").write_text("bad\n")
    git(r, "commit", "-q", "-am", "three at once")
    (tmp_path / "t.sh").write_text("#!/bin/sh\n! grep -q bad a.txt b.txt c.txt\n")
    (tmp_path / "t.sh").chmod(0o755)
    xml = tmp_path / "t.xml"
    p = bisectk("triage", "--repo", r, "--good", good, "--run", tmp_path / "t.sh", "--junit", xml, timeout=300)
    assert p.returncode == 1, p.stderr
    assert "3 independent failing sets" in p.stdout and "culprit hunk(s) of" not in p.stdout
    failed = [c.find("failure") for c in ET.parse(xml).getroot().iter("testcase") if c.find("failure") is not None]
    assert "3 independent failing sets" in failed[0].get("message")


def test_log_writes_a_triages_bisection_not_an_older_bisect(tmp_path):
    """Before: after a `bisect` (test A, culprit c3) and a `triage` (test B, culprit c9), `bisectk
    log` printed the bisect's session with exit 0 and `log --session 2` said "no bisection
    recorded": a replay of the log gave the other test's culprit."""
    r = tmp_path / "r"
    shas = linear(r, 13, {3: "bugA", 9: "bugB"})
    for name in ("A", "B"):
        (tmp_path / f"test{name}.sh").write_text(f"#!/bin/sh\ntest -f bug{name} && exit 1; exit 0\n")
        (tmp_path / f"test{name}.sh").chmod(0o755)
    bisectk("bisect", "--good", shas[0], "--run", tmp_path / "testA.sh", cwd=r, check=0, timeout=300)
    bisectk("triage", "--good", shas[0], "--run", tmp_path / "testB.sh", cwd=r, check=1, timeout=300)
    for args in ((), ("--session", "2")):
        p = bisectk("log", *args, cwd=r, check=0)
        assert p.stdout.startswith("# bisectk log of session 2 (the bisection of a triage)"), p.stdout
        assert f"# first bad commit: {shas[9]}" in p.stdout and "hunk" not in p.stdout
        (tmp_path / "t.log").write_text(p.stdout)
        assert f"first bad commit: {shas[9]}" in bisectk("replay", tmp_path / "t.log", check=0).stdout
    p = bisectk("log", "--session", "1", cwd=r, check=0)
    assert f"# first bad commit: {shas[3]}" in p.stdout


def test_ends_the_wrong_way_round_point_to_the_command_that_finds_the_fix(tmp_path):
    """--good newer than --bad: the failure was fixed between them. The hint said "run with
    --find-fix", which triage has no option for ("No such option: --find-fix"); it names the
    command that has it."""
    shas = linear(tmp_path / "r", 5, {})
    p = bisectk("triage", "--repo", tmp_path / "r", "--good", shas[-1], "--bad", shas[1], "--run", "true", check=2)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: ") and "bisectk bisect --find-fix" in lines[0], p.stderr


def test_a_hunk_isolation_stopped_early_names_no_culprit_hunks(tmp_path):
    """Ctrl-C during the isolation of the first bad commit's hunks: the commit is found (exit 1),
    but the hunks are a search's best so far. They were printed "culprit hunk(s) of X: <every
    hunk>" and put in the JSON's culprit_hunks, as a verdict; now said as `diff` says them, and
    the JSON's culprit_hunks (what CI reads) is empty, as first_bad is for a stopped bisection."""
    import os
    import subprocess
    r = tmp_path / "r"
    shas = linear(r, 6, {})
    for i in range(8):
        (r / f"f{i}.py").write_text("v = 0\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "files")
    for i in range(8):
        (r / f"f{i}.py").write_text("v = 1\n")
    (r / "bug").write_text("bug\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "culprit")
    js = tmp_path / "t.json"
    env = dict(os.environ, INJECT_AT="bisectk.search.tester:Tester._record", INJECT_CALL="2",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "inject_sigint.py"), "triage", "--repo", str(r),
                        "--good", shas[0], "--bad", "HEAD", "--run", "sh -c '! test -f bug'", "--json-out", str(js)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 1, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    doc = json.loads(js.read_text())
    assert doc["first_bad"]["subject"] == "culprit" and doc["diff"]["interrupted"]
    assert doc["culprit_hunks"] == [], [h["where"] for h in doc["culprit_hunks"]]
    assert not any(line.startswith("culprit hunk(s)") for line in p.stdout.splitlines()), p.stdout
    assert "smallest failing hunk set so far" in p.stdout, p.stdout


def test_under_a_pathspec_the_culprits_hunks_are_its_own_diff_not_the_ones_since_the_last_candidate(tmp_path):
    """`-- a`: the bug comes from c2, which does not touch `a`, so git's answer is c3, the next
    commit that does. Its hunks were isolated against the previous candidate c1 (the parent git's
    pathspec rewrites it to), and triage said "culprit hunk(s) of c3: bug:1", a file c3 never
    touches; now against c3's own parent, which fails already: no hunk of c3 is named."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i, name in enumerate(["a", "a", "bug", "a", "a"]):
        (r / name).write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    p = bisectk("triage", "--repo", r, "--good", shas[0], "--bad", shas[-1], "--run", "sh -c '! test -f bug'",
                "--json", "--ledger", tmp_path / "l.db", "--", "a", timeout=300)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[3], (p.stdout[-2000:], p.stderr[-2000:])
    assert doc["culprit_hunks"] == [], [h["where"] for h in doc["culprit_hunks"]]
    assert doc["diff"]["good"] != doc["diff"]["bad"] and not doc["diff"]["ok"]


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("make"), reason="needs cc and make")
def test_a_bad_commit_that_passes_only_over_the_good_commits_objects_is_not_nothing_to_triage(tmp_path):
    """A header-only regression under a Makefile without header dependencies: the good commit's
    build, run first in the same cached worktree, left build/b.o (N = 42), make at --bad rebuilt
    nothing, and triage said "nothing to triage -- the bad revision passed" with exit 0 (CI reads
    it as no regression), though --bad built from scratch fails. Inconclusive now (exit 2), saying
    so."""
    from tests.e2e.test_bisect import SLOPPY_MAKEFILE, header_history
    r = tmp_path / "repo"
    shas = header_history(r, SLOPPY_MAKEFILE)
    p = bisectk("triage", "--repo", r, "--good", shas[0], "--bad", shas[7], "--build", "make", "--run", "./build/t",
                cwd=r, check=None)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "nothing to triage" not in p.stdout, p.stdout
    assert "built from scratch (its worktree's ignored files removed), the bad commit fails" in p.stdout, p.stdout
