"""End-to-end: `bisectk bisect` on merge histories answers what git bisect answers (issue 11): the
commit inside a merged side branch, never the merge; last good = the culprit's parents; ambiguous
answers list every candidate; `--run` failures read as 'bad (exit N)'."""
import json
import subprocess
import sys

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_dag_repo  # noqa: E402

TEST = "sh -c 'test ! -f BUG'"


def git_bisect(repo, good, bad) -> str:
    subprocess.run(["git", "bisect", "start", bad, good], cwd=repo, check=True, capture_output=True)
    out = subprocess.run(["git", "bisect", "run", "sh", "-c", "test ! -f BUG"], cwd=repo, capture_output=True,
                         text=True).stdout
    subprocess.run(["git", "bisect", "reset"], cwd=repo, check=True, capture_output=True)
    return next(line.split()[0] for line in out.splitlines() if line.endswith("is the first bad commit"))


def test_culprit_inside_a_merged_side_branch(tmp_path):
    # mainline 0 -> 3 (merge of side branch 1 -> 2, forked before --good) -> 4 -> 5 (merge of 6) ...
    parents = [(), (), (1,), (0, 2), (3,), (), (4, 5), (6,)]
    names = ["m0", "side-a", "side-b", "merge-1", "m4", "side-c", "merge-2", "tip"]
    good, shas = make_dag_repo(tmp_path / "r", parents, culprit=2, names=names)
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], "--run", TEST, "--json",
                timeout=300)
    doc = json.loads(p.stdout)
    assert p.returncode == 0, p.stderr
    assert doc["first_bad"]["subject"] == "side-b" == git_subject(tmp_path / "r", git_bisect(tmp_path / "r", good, shas[-1]))
    assert [c["subject"] for c in doc["last_good"]] == ["side-a"]
    assert doc["confidence"] == 1.0
    text = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], "--run", TEST,
                   "--ledger", tmp_path / "l2.db", timeout=300).stdout
    assert "bad (exit 1)" in text and "crash" not in text


def git_subject(repo, sha) -> str:
    return subprocess.run(["git", "log", "-1", "--format=%s", sha], cwd=repo, capture_output=True, text=True).stdout.strip()


def test_merge_culprit_has_every_parent_as_last_good(tmp_path):
    # the failure appears only when both branches meet: the merge itself is the first bad commit
    parents = [(), (), (0, 1), (2,)]
    names = ["m0", "side", "merge", "tip"]
    good, shas = make_dag_repo(tmp_path / "r", parents, culprit=2, names=names)
    doc = json.loads(bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], "--run", TEST,
                             "--json", timeout=300, check=0).stdout)
    assert doc["first_bad"]["subject"] == "merge"
    assert sorted(c["subject"] for c in doc["last_good"]) == ["m0", "side"]


def test_first_parent_names_the_merge(tmp_path):
    parents = [(), (), (1,), (0, 2), (3,)]
    names = ["m0", "side-a", "side-b", "merge", "tip"]
    good, shas = make_dag_repo(tmp_path / "r", parents, culprit=2, names=names)
    doc = json.loads(bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run", TEST,
                             "--first-parent", "--json", timeout=300, check=0).stdout)
    assert doc["first_bad"]["subject"] == "merge" and doc["first_parent"]
