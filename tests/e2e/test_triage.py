"""End-to-end: `bisectk triage` finds the commit and the hunk, writes Markdown, JSON and JUnit."""
import json
import sys
import xml.etree.ElementTree as ET

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

RUN = ["--run", "python kernel.py", "--build", "python build.py"]


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
