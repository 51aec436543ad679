"""A commit's run that imports Python from the user's checkout (an editable install, PYTHONPATH)
instead of the commit's worktree: git bisect run, working in the checkout, never meets it;
bisectk's worktrees would run the checkout's code for every commit. The runs' import records
show it; each worktree's own copy is put first on PYTHONPATH and the endpoints run again."""
import json
import os
import subprocess
import sys
from pathlib import Path

from bisectk.engine.checkout_imports import import_roots
from tests.conftest import bisectk


def _repo(root: Path, *, leak_in_test: bool = False) -> list[str]:
    """src/mypkg/sub/core.py sets LIMIT: 9 up to rev 2, 3 from rev 3 on; tests/run.py needs LIMIT > 4."""
    root.mkdir(parents=True)
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True, text=True).stdout  # noqa: E731
    git("init", "-q")
    (root / "src" / "mypkg" / "sub").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (root / "src" / "mypkg" / "sub" / "__init__.py").write_text("")
    pin = f"sys.path.insert(0, {str(root / 'src')!r})\n" if leak_in_test else ""
    (root / "tests" / "run.py").write_text(f"import sys\n{pin}from mypkg.sub.core import LIMIT\n"
                                           "sys.exit(0 if LIMIT > 4 else 1)\n")
    shas = []
    for i in range(10):
        (root / "src" / "mypkg" / "sub" / "core.py").write_text(f"LIMIT = {9 if i < 3 else 3}\n# rev {i}\n")
        git("add", "-A")
        git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", f"rev {i}")
        shas.append(git("rev-parse", "HEAD").strip())
    return shas


def _with_pythonpath_at_the_checkout(tmp_path, command: str):
    """`bisectk COMMAND --json` of _repo's history with the user's `export PYTHONPATH=$PWD/src`
    (ahead of whatever this suite's PYTHONPATH holds): (repo, shas, the JSON record)."""
    repo = tmp_path / "r"
    shas = _repo(repo)
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(repo / "src"), os.environ.get("PYTHONPATH")) if p)}
    p = bisectk(command, "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run",
                f"{sys.executable} tests/run.py", "--json", env=env, timeout=300)
    return repo, shas, json.loads(p.stdout)


def test_pythonpath_at_the_checkout_is_pointed_at_each_worktree(tmp_path):
    repo, shas, doc = _with_pythonpath_at_the_checkout(tmp_path, "bisect")
    assert doc["first_bad"]["sha"] == shas[3], doc["endpoints"]["problem"]
    assert any("imported your checkout's Python" in n and "src/mypkg/sub/core.py" in n
               for n in doc["endpoints"]["notes"]), doc["endpoints"]["notes"]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""


def test_a_test_that_pins_the_checkout_itself_is_refused_with_the_reason(tmp_path):
    repo = tmp_path / "r"
    shas = _repo(repo, leak_in_test=True)
    p = bisectk("bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run",
                f"{sys.executable} tests/run.py", "--json", timeout=300, check=None)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["first_bad"] is None
    assert "import Python from your checkout" in doc["endpoints"]["problem"], doc["endpoints"]["problem"]


def test_import_roots_are_above_the_top_package(tmp_path):
    root = tmp_path / "co"
    for d in ("src/pkg/sub", "flat", "tools"):
        (root / d).mkdir(parents=True)
    for f in ("src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/m.py", "flat/__init__.py",
              "flat/x.py", "tools/helper.py", "top.py"):
        (root / f).write_text("")
    files = [str(root / f) for f in ("src/pkg/sub/m.py", "src/pkg/__init__.py", "flat/x.py", "tools/helper.py",
                                     "top.py")]
    assert import_roots(files, root) == [".", "src", "tools"]


def test_an_untracked_helper_of_the_users_is_theirs_to_import(tmp_path):
    """A test script kept outside history (untracked in the checkout) that imports an untracked
    helper beside it: no commit has the helper, so importing it from the checkout is no leak."""
    repo = tmp_path / "r"
    shas = _repo(repo)
    (repo / "helper.py").write_text("WANT = 4\n")
    (repo / "check.py").write_text("import sys\nsys.path.insert(0, %r)\nimport helper\n"
                                   "sys.path.insert(0, 'src')\nfrom mypkg.sub.core import LIMIT\n"
                                   "sys.exit(0 if LIMIT > helper.WANT else 1)\n" % str(repo))
    p = bisectk("bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run",
                f"{sys.executable} {repo / 'check.py'}", "--json", timeout=300)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[3] and not doc["endpoints"]["notes"], doc["endpoints"]


def test_triage_isolates_the_hunk_in_the_commits_own_sources(tmp_path):
    """The hunk isolation runs in trees exported from the two commits: the same redirect holds
    there, or every hybrid would run the checkout's code and no hunk would matter."""
    _, shas, doc = _with_pythonpath_at_the_checkout(tmp_path, "triage")
    assert doc["bisect"]["first_bad"]["sha"] == shas[3], doc["bisect"]["endpoints"]
    assert [h["file"] for h in doc["diff"]["culprit_hunks"]] == ["src/mypkg/sub/core.py"], doc["diff"]


def test_a_conftest_that_pytest_loads_from_the_checkout_is_seen_and_said(tmp_path):
    """An untracked test file of the user's (`--run 'python -m pytest tests/test_new.py'`): run by
    its path in the checkout, pytest loaded tests/conftest.py beside it, from the checkout, and
    every commit ran HEAD's fixture ("the good configuration fails too"). The file is now copied
    into each commit's worktree and pytest loads each commit's conftest, as under git bisect run,
    typed in the checkout or named from outside it (`--repo r ... r/tests/test_new.py`, which ran
    by its path in the checkout and was refused until the word was read from the top level)."""
    repo = tmp_path / "r"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True, text=True).stdout  # noqa: E731
    git("init", "-q")
    (repo / "tests").mkdir()
    shas = []
    for i in range(4):
        (repo / "tests" / "conftest.py").write_text(f"import pytest\n@pytest.fixture\ndef val():\n    return {int(i >= 2)}\n# rev {i}\n")
        git("add", "-A")
        git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", f"rev {i}")
        shas.append(git("rev-parse", "HEAD").strip())
    (repo / "tests" / "test_new.py").write_text("def test_x(val):\n    assert val == 0\n")
    p = bisectk("bisect", "--good", shas[0], "--bad", shas[-1], "--run", "python -m pytest -q tests/test_new.py",
                "--json", cwd=repo, timeout=300, check=0)
    assert json.loads(p.stdout)["first_bad"]["sha"] == shas[2]
    p = bisectk("bisect", "--repo", "r", "--good", shas[0], "--bad", shas[-1], "--run",
                "python -m pytest -q r/tests/test_new.py", "--json", cwd=tmp_path, timeout=300, check=0)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[2] and doc["subject"]["command"][-1] == "tests/test_new.py", doc
