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


def test_first_parent_says_the_merge_is_one_and_how_to_see_and_bisect_what_it_brought_in(tmp_path):
    """--first-parent names the merge whose branch brought the change in; its next step was
    `git show MERGE`, which shows nothing of a clean merge, and nothing said that the change
    lies inside the merged branch. Now: `git diff PARENT MERGE`, and the bisect inside the branch."""
    parents = [(), (), (1,), (0, 2), (3,)]
    names = ["m0", "side-a", "side-b", "merge", "tip"]
    repo = tmp_path / "r"
    good, shas = make_dag_repo(repo, parents, culprit=2, names=names)
    args = ["bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run", TEST, "--first-parent"]
    doc = json.loads(bisectk(*args, "--json", timeout=300, check=0).stdout)
    merge, parent = doc["first_bad"]["sha"], shas[0]
    steps = {s["step"]: s for s in doc["advice"]}
    assert steps["inspect"]["parent"] == parent[:10]
    assert steps["inside_merge"]["parent"] == parent[:10] and steps["inside_merge"]["merge"] == merge[:10]
    shown = subprocess.run(["git", "show", "--format=", merge], cwd=repo, capture_output=True, text=True).stdout
    brought = subprocess.run(["git", "diff", parent[:10], merge[:10]], cwd=repo, capture_output=True, text=True).stdout
    assert "BUG" not in shown and "BUG" in brought     # what the old advice showed, and what the new one shows
    text = bisectk(*args, "--ledger", tmp_path / "l2.db", timeout=300, check=0).stdout
    assert "is a merge on the first-parent chain" in text
    assert f"bisectk bisect --good {parent[:10]} --bad {merge[:10]} ... (without --first-parent)" in text
    inside = json.loads(bisectk("bisect", "--repo", repo, "--good", parent, "--bad", merge, "--run", TEST, "--json",
                                "--ledger", tmp_path / "l3.db", timeout=300, check=0).stdout)
    assert inside["first_bad"]["subject"] == "side-b"
    plain = json.loads(bisectk("bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run", TEST,
                               "--json", "--ledger", tmp_path / "l4.db", timeout=300, check=0).stdout)
    assert "inside_merge" not in {s["step"] for s in plain["advice"]} and "parent" not in plain["advice"][0]


def test_max_runs_counts_the_first_round_begun_beside_the_endpoints(tmp_path):
    """--jobs 5 begins 3 probes beside the endpoints' runs; the search took their outcomes as
    given and spent its whole budget after them: `--max-runs 5` made 8 search runs ('run budget
    of 5 spent after 8 search run(s)'). They are the search's runs, and the budget counts them."""
    good, shas = make_dag_repo(tmp_path / "r", [(i - 1,) if i else () for i in range(60)], culprit=37)
    args = ("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], "--run", TEST, "--json")
    for jobs in ("3", "5"):
        doc = json.loads(bisectk(*args, "--jobs", jobs, "--max-runs", "5", "--fresh", timeout=300, check=1).stdout)
        assert doc["stop_reason"] == "run budget of 5 spent", doc["stop_reason"]
        assert doc["phase_runs"]["search"] <= 5 and doc["search_made"] <= 5, (jobs, doc["phase_runs"], doc["search_made"])
    # the same command again goes on from the ledger: its runs made count, those it answered do not
    again = json.loads(bisectk(*args, "--jobs", "5", "--max-runs", "5", timeout=300, check=1).stdout)
    assert again["search_made"] <= 5 and again["phase_runs"]["search"] > 5, (again["phase_runs"], again["search_made"])
