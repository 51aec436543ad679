"""End-to-end: the user's untracked (or modified) file that --run or --pytest names is copied into
each commit's worktree at its own path and run from there (spaces/yours.py), so that what lies
around it is the commit's, as under `git bisect run` in the checkout: a Python script's sibling
module, a shell script's `$(dirname "$0")/lib.sh`, pytest's conftest.py. Before, the user's file
ran by its absolute path in the checkout: Python imported the checkout's sibling (refused as
"keep the script outside the repository"), the shell sourced the checkout's lib.sh (a wrong
answer: "the good configuration fails too"), and pytest said "not found" at both ends.

History: `mod.py`/`lib.sh`/`tests/lim.py` (tracked) change at c4: LIMIT 9 -> 3.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import bisectk

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from gitrepo import git  # noqa: E402

CONFTEST = "import pytest\n@pytest.fixture\ndef lim():\n    from lim import LIMIT\n    return LIMIT\n"


def history(r: Path, n: int = 6, culprit: int = 4) -> list[str]:
    r.mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    (r / "tests").mkdir()
    shas = []
    for i in range(1, n + 1):
        limit = 3 if i >= culprit else 9
        (r / "mod.py").write_text(f"LIMIT = {limit}\n")
        (r / "lib.sh").write_text(f"LIMIT={limit}\n")
        (r / "tests" / "lim.py").write_text(f"LIMIT = {limit}\n")
        (r / "tests" / "conftest.py").write_text(CONFTEST)
        (r / "n").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    return shas


def state(r: Path) -> tuple:
    """What the user has: HEAD, index, status, and every file's bytes and mode outside .git."""
    files = {str(p.relative_to(r)): (p.read_bytes(), p.stat().st_mode) for p in sorted(r.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(r).parts}
    return (git(r, "rev-parse", "HEAD"), (r / ".git" / "index").read_bytes(),
            git(r, "status", "--porcelain", "--untracked-files=all", "--ignored"), files)


def git_bisect_run(r: Path, tmp: Path, good: str, cmd: list[str], mine: list[str]) -> str:
    """Real git's answer in a clone with the user's files copied in (untracked there too)."""
    g = tmp / "git-clone"
    git(tmp, "clone", "-q", "--no-local", str(r), str(g))
    for name in mine:
        (g / name).write_bytes((r / name).read_bytes())
        (g / name).chmod((r / name).stat().st_mode)
    subprocess.run(["git", "bisect", "start", "HEAD", good], cwd=g, check=True, capture_output=True)
    # no bytecode: a module rewritten within the second at the same size would be read from a stale .pyc
    p = subprocess.run(["git", "bisect", "run", *cmd], cwd=g, capture_output=True, text=True,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    line = next((x for x in p.stdout.splitlines() if "is the first bad commit" in x), "NO ANSWER " + p.stdout)
    return line.split()[0]


def worktree_files(r: Path, name: str) -> list[Path]:
    """`name` in the cached worktrees of `r` (none of another test's repository)."""
    from bisectk.spaces.cachedir import cache_dir_of
    return list(Path(cache_dir_of(r)).glob(f"wt-*/{name}"))


def run_json(r: Path, *args, cwd=None) -> dict:
    p = bisectk("bisect", "--json", *args, cwd=cwd or r, timeout=600)   # each run starts pytest: slow under load
    assert p.returncode in (0, 1), (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    return json.loads(p.stdout)


def test_an_untracked_python_script_imports_each_commits_sibling_module(tmp_path):
    r = tmp_path / "r"
    shas = history(r)
    (r / "t.py").write_text("import sys\nfrom mod import LIMIT\nsys.exit(0 if LIMIT > 4 else 1)\n")
    (r / "helper.txt").write_text("beside t.py\n")     # untracked, not ignored: copied with it
    before = state(r)
    d = run_json(r, "--good", shas[0], "--run", "python t.py")
    truth = git_bisect_run(r, tmp_path, shas[0], ["python", "t.py"], ["t.py"])
    assert d["first_bad"]["sha"] == shas[3] == truth, d["endpoints"]
    assert d["endpoints"]["problem"] in (None, ""), d["endpoints"]["problem"]
    assert {(f["word"], f["state"], f.get("copy")) for f in d["command_files"]} == {
        ("t.py", "untracked", "t.py"), ("helper.txt", "untracked, beside t.py", "helper.txt")}
    assert state(r) == before
    assert not worktree_files(r, "t.py") and not worktree_files(r, "helper.txt")   # removed when each lease ended
    # warm workers run the script by its path in each worktree, several at once
    d = run_json(r, "--good", shas[0], "--run", "python t.py", "--warm", "--jobs", "2", "--fresh")
    assert d["first_bad"]["sha"] == shas[3] and d["runs"] > 0, d["endpoints"]
    assert state(r) == before and not worktree_files(r, "t.py")


def test_an_untracked_shell_script_sources_each_commits_lib_beside_it(tmp_path):
    r = tmp_path / "r"
    shas = history(r)
    (r / "t.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/lib.sh"\n[ "$LIMIT" -gt 4 ]\n')
    (r / "t.sh").chmod(0o755)
    before = state(r)
    d = run_json(r, "--good", shas[0], "--run", "./t.sh")
    assert d["first_bad"]["sha"] == shas[3] == git_bisect_run(r, tmp_path, shas[0], ["./t.sh"], ["t.sh"])
    p = bisectk("bisect", "--good", shas[0], "--run", "./t.sh", cwd=r, timeout=180, check=0)
    assert (f"command: ./t.sh is your file {r / 't.sh'} (untracked), copied into each commit's worktree at t.sh "
            "and run there") in p.stdout
    assert state(r) == before


def test_an_untracked_pytest_file_runs_with_each_commits_conftest(tmp_path):
    r = tmp_path / "r"
    shas = history(r)
    (r / "tests" / "test_new.py").write_text("def test_lim(lim):\n    assert lim > 4\n")
    before = state(r)
    d = run_json(r, "--good", shas[0], "--pytest", "tests/test_new.py::test_lim")
    assert d["first_bad"]["sha"] == shas[3], d["endpoints"]
    assert [(f["word"], f.get("copy")) for f in d["command_files"]] == [("tests/test_new.py", "tests/test_new.py")]
    assert state(r) == before
    # an untracked conftest.py on the test's path goes with it, --pytest or pytest under --run
    (r / "tests" / "test_new.py").write_text("def test_lim(lim, bound):\n    assert lim > bound\n")
    (r / "conftest.py").write_text("import pytest\n@pytest.fixture\ndef bound():\n    return 4\n")
    truth = git_bisect_run(r, tmp_path, shas[0], ["python", "-m", "pytest", "-q", "tests/test_new.py"],
                           ["tests/test_new.py", "conftest.py"])
    for how in (["--pytest", "tests/test_new.py::test_lim"], ["--run", "python -m pytest -q tests/test_new.py"]):
        d = run_json(r, "--good", shas[0], *how)
        assert d["first_bad"]["sha"] == shas[3] == truth, (how, d["endpoints"])
        assert ("conftest.py", "untracked", "conftest.py") in {(f["word"], f["state"], f.get("copy"))
                                                               for f in d["command_files"]}, d["command_files"]


def test_an_edit_of_the_script_or_of_a_helper_beside_it_runs_again(tmp_path):
    """The memo key holds the user's copies: an edit between two commands is a new subject (the
    script by contents.named_files and the commit's revision, an untracked helper it imports,
    which no argv names, by the revision alone)."""
    r = tmp_path / "r"
    shas = history(r)
    (r / "t.py").write_text("import sys\nfrom mod import LIMIT\nfrom helper import BOUND\nsys.exit(0 if LIMIT > BOUND else 1)\n")
    (r / "helper.py").write_text("BOUND = 4\n")
    first = run_json(r, "--good", shas[0], "--run", "python t.py")
    assert first["first_bad"]["sha"] == shas[3] and first["runs"] > 0
    again = run_json(r, "--good", shas[0], "--run", "python t.py")
    assert again["runs"] == 0               # nothing changed: all from the ledger
    (r / "helper.py").write_text("BOUND = 2\n")      # now every commit passes: --bad passes
    p = bisectk("bisect", "--json", "--good", shas[0], "--run", "python t.py", cwd=r, timeout=180)
    assert json.loads(p.stdout)["endpoints"]["bad"]["outcome"] == "pass", p.stdout[-1500:]
    (r / "helper.py").write_text("BOUND = 4\n")
    (r / "t.py").write_text("import sys\nfrom mod import LIMIT\nsys.exit(0 if LIMIT > 5 else 1)\n")
    edited = run_json(r, "--good", shas[0], "--run", "python t.py")
    assert edited["first_bad"]["sha"] == shas[3] and edited["runs"] > 0


def test_a_deleted_script_never_runs_from_a_stale_copy(tmp_path):
    """The copy is bisectk's own write: a run that wrote nothing leaves the worktree's watch
    quiet but for the copy, and `git clean` leaves an ignored file. Removed when each lease ends,
    no copy outlives its command: the script deleted, the next command finds nothing to run."""
    r = tmp_path / "r"
    shas = history(r)
    (r / ".git" / "info" / "exclude").write_text("t.sh\n")
    (r / "t.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/lib.sh"\n[ "$LIMIT" -gt 4 ]\n')
    (r / "t.sh").chmod(0o755)
    assert run_json(r, "--good", shas[0], "--run", "./t.sh")["first_bad"]["sha"] == shas[3]
    assert not worktree_files(r, "t.sh")
    (r / "t.sh").unlink()
    p = bisectk("bisect", "--json", "--good", shas[0], "--run", "./t.sh", cwd=r, timeout=180)
    assert p.returncode == 2 and json.loads(p.stdout)["first_bad"] is None, p.stdout[-1500:]


def test_a_directory_link_of_the_users_leads_to_each_commits_script(tmp_path):
    """`mine -> tools` (the user's own link, untracked) and `--run ./mine/check.sh`, tools/check.sh
    tracked and failing from c4: git bisect run follows the link to each commit's script. The
    user's bytes of it (HEAD's) ran on every commit: "the good configuration fails too"."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "tools").mkdir()
    shas = []
    for i in range(1, 7):
        (r / "tools" / "check.sh").write_text(f"#!/bin/sh\nexit {int(i >= 4)}\n")
        (r / "tools" / "check.sh").chmod(0o755)
        (r / "n").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    (r / "mine").symlink_to("tools")
    before = state(r)
    d = run_json(r, "--good", shas[0], "--run", "./mine/check.sh")
    g = tmp_path / "git-clone"
    git(tmp_path, "clone", "-q", "--no-local", str(r), str(g))
    (g / "mine").symlink_to("tools")
    subprocess.run(["git", "bisect", "start", "HEAD", shas[0]], cwd=g, check=True, capture_output=True)
    out = subprocess.run(["git", "bisect", "run", "./mine/check.sh"], cwd=g, capture_output=True, text=True).stdout
    assert d["first_bad"]["sha"] == shas[3] and f"{shas[3]} is the first bad commit" in out, d["endpoints"]
    assert state(r) == before and not worktree_files(r, "mine")


def test_an_untracked_file_beside_the_script_never_replaces_a_file_the_commit_tracks(tmp_path):
    """helper.py is tracked from c3 on (its bug comes in at c5); the user's checkout is at c1, with an
    untracked copy of c5's helper.py beside the script. git bisect run's checkout of c3 refuses to
    overwrite it; copying it over each commit's own helper.py tested c3 and c4 with c5's bug and
    named c3 with confidence 1.0."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 7):
        if i >= 3:
            (r / "helper.py").write_text(f"OK = {i < 5}\n")
        (r / "main.py").write_text("import sys\nfrom helper import OK\nsys.exit(0 if OK else 1)\n" if i >= 3
                                   else "print('no helper yet')\n")
        (r / "n").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    git(r, "checkout", "-q", shas[0])
    (r / "helper.py").write_text("OK = False\n")            # the user's stray copy of the new helper
    (r / "t.sh").write_text("#!/bin/sh\nexec python main.py\n")
    (r / "t.sh").chmod(0o755)
    before = state(r)
    p = bisectk("bisect", "--good", shas[0], "--bad", "main", "--run", "./t.sh", "--json", cwd=r, timeout=180,
                check=None)
    d = json.loads(p.stdout) if p.stdout.strip() else {}
    assert (d.get("first_bad") or {}).get("sha") != shas[2], p.stdout + p.stderr
    assert p.returncode != 0 and "helper.py" in p.stdout + p.stderr, p.stdout + p.stderr
    assert state(r) == before



def test_an_edited_tracked_file_the_script_sources_is_named_as_not_in_the_worktrees(tmp_path):
    """An untracked t.sh sources lib.sh, tracked and the same at nearly every commit, which the
    user has edited (`git status`: M lib.sh). git bisect run's checkout carries that edit to each
    commit whose lib.sh it is made on, and says c5; bisectk runs each commit's committed lib.sh
    (the commit's content is what is under test; an uncommitted edit of the code would otherwise
    be bisected too) and says c3, at exit 0, with no line naming the edit. The first lines now
    say that the edit of the file the script sources does not run, and what to do. A tracked file
    beside the script that it does not name, edited too, is not said."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(1, 9):
        (r / "lib.sh").write_text("check() { [ $(cat n) -lt 3 ]; }\n" if i != 7 else "check() { exit 1; }\n")
        (r / "v").write_text("bad\n" if i >= 5 else "good\n")
        (r / "n").write_text(f"{i}\n")
        (r / "notes.md").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
    (r / "lib.sh").write_text("check() { grep -q good v; }\n")        # the user's edit of HEAD's lib.sh
    (r / "notes.md").write_text("wip\n")
    (r / "t.sh").write_text("#!/bin/sh\n. ./lib.sh\ncheck\n")
    (r / "t.sh").chmod(0o755)
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "./t.sh", cwd=r, check=0)
    said = [ln for ln in p.stdout.splitlines() if "is modified in your checkout" in ln]
    assert said == ["command: lib.sh, which ./t.sh names, is modified in your checkout: each commit's own lib.sh "
                    "runs, not your edit (git bisect run's checkout would carry the edit to each commit whose file "
                    "it is made on, and could answer otherwise); commit it, or copy it to an untracked file and "
                    "name that"], p.stdout
    assert (r / "lib.sh").read_text() == "check() { grep -q good v; }\n"    # the user's edit stays
    doc = json.loads(bisectk("bisect", "--good", "HEAD~7", "--run", "./t.sh", "--json", cwd=r, check=0).stdout)
    assert [(f["word"], f["use"]) for f in doc["command_files"] if f["use"] == "edited"] == [("lib.sh", "edited")], doc
