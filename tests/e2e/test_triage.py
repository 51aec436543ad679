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
