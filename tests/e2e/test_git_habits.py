"""End-to-end: the habits of `git bisect` users (issue 26), each from a scenario of git's
t6030-bisect-porcelain rebuilt here (a small history of `hello` edits, a side branch, a release
branch that fixes the bug, a directory for pathspecs), with real `git bisect` run in a clone of
the same history for the expected answer where practical. Every test also checks that the
user's repository is exactly as it was: HEAD, index, working tree, stash, refs and their own
`git bisect` in progress (refs/bisect, BISECT_LOG).

History (oldest first), `bug` appears at c5, so `./test.sh` (untracked: `! test -f bug`) fails
from c5 on:

    c1 - c2 - c3 - c4 - c5 - c6 - c7 - c8          main
          \\                   \\
           side1               fixbug               side (from c2), rel (from c6: removes bug)
                                                   fixline: c8 - f1 - f2 (removes bug) - f3
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git  # noqa: E402

TEST_SH = "#!/bin/sh\n! test -f bug\n"


def commit(r: Path, msg: str, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        p = r / name
        if text is None:
            git(r, "rm", "-q", name)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        git(r, "add", name)
    git(r, "commit", "-q", "-m", msg)
    return git(r, "rev-parse", "HEAD")


def build(r: Path) -> dict[str, str]:
    r.mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    c = {}
    for i in range(1, 9):
        files = {"hello": f"Hello {i}\n", f"d/f{i % 2}": f"{i}\n"}
        if i == 5:
            files["bug"] = "BUG\n"
        c[f"c{i}"] = commit(r, f"c{i}", files)
    git(r, "checkout", "-q", "-b", "side", c["c2"])
    c["side1"] = commit(r, "side1", {"sidefile": "s\n"})
    git(r, "checkout", "-q", "-b", "rel", c["c6"])
    c["fixbug"] = commit(r, "fixbug", {"bug": None})
    git(r, "checkout", "-q", "-b", "fixline", c["c8"])
    c["f1"] = commit(r, "f1", {"hello": "f1\n"})
    c["f2"] = commit(r, "f2", {"bug": None})
    c["f3"] = commit(r, "f3", {"hello": "f3\n"})
    git(r, "checkout", "-q", "main")
    return c


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    """The pristine history (module-wide), cloned per test so that ledgers never carry over."""
    base = tmp_path_factory.mktemp("hist") / "origin"
    return base, build(base)


@pytest.fixture
def user(hist, tmp_path):
    """The user's checkout: a clone on main, an untracked ./test.sh, an uncommitted edit, a staged
    file, a stash, and their own `git bisect` in progress."""
    base, c = hist
    r = tmp_path / "user"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    for b in ("side", "rel", "fixline"):
        git(r, "branch", "-q", b, f"origin/{b}")
    (r / "hello").write_text("stashed\n")
    git(r, "stash", "push", "-q", "-m", "mine")
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    (r / "notes.txt").write_text("my notes\n")
    (r / "staged.txt").write_text("staged\n")
    git(r, "add", "staged.txt")
    git(r, "bisect", "start", "--no-checkout", c["c8"], c["c1"])     # their own bisection, left as it was
    return r, c


def snapshot(r: Path) -> dict:
    files = {str(p.relative_to(r)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(r.rglob("*")) if p.is_file() and ".git" not in p.relative_to(r).parts}
    g = r / ".git"
    return {"HEAD": (g / "HEAD").read_bytes(), "index": (g / "index").read_bytes(), "files": files,
            "refs": git(r, "for-each-ref", "--format=%(refname) %(objectname)"), "stash": git(r, "stash", "list"),
            "bisect_log": (g / "BISECT_LOG").read_bytes() if (g / "BISECT_LOG").exists() else None,
            "bisect_head": git(r, "rev-parse", "BISECT_HEAD") if (g / "BISECT_HEAD").exists() else None}


def run(r: Path, *args, check=None, env=None):
    return bisectk("bisect", *args, cwd=r, check=check, env=env, timeout=120)


def jrun(r: Path, *args, check=0) -> dict:
    p = run(r, "--json", *args, check=check)     # before a `-- PATHSPEC`
    return json.loads(p.stdout)


def git_bisect(hist, tmp_path, start: list[str], cmd: list[str], bare=False) -> str:
    """Real git's answer: `git bisect start START...; git bisect run CMD` in a fresh clone."""
    base, _ = hist
    g = tmp_path / ("git-bare.git" if bare else "git-clone")
    git(tmp_path, "clone", "-q", "--no-local", *(["--bare"] if bare else []), str(base), str(g))
    if not bare:
        for b in ("side", "rel", "fixline"):
            git(g, "branch", "-q", b, f"origin/{b}")
        (g / "test.sh").write_text(TEST_SH)
        (g / "test.sh").chmod(0o755)
    p = subprocess.run(["git", "bisect", "start", *start], cwd=g, capture_output=True, text=True)
    if p.returncode:
        return "START FAILED: " + p.stdout + p.stderr
    p = subprocess.run(["git", "bisect", "run", *cmd], cwd=g, capture_output=True, text=True)
    out = p.stdout + p.stderr
    for line in out.splitlines():
        if "is the first" in line:
            return line.split()[0]
    return "NO ANSWER: " + out


# --- 1. `--run ./test.sh` ----------------------------------------------------------------------

def test_untracked_script_in_cwd_is_copied_into_each_commits_worktree(user, hist, tmp_path):
    """The user's untracked ./test.sh runs from each commit's worktree, where it is copied at its
    own path, and with it the untracked files beside it (notes.txt; not staged.txt, which git
    tracks in the index), as git bisect run finds them in the checkout (spaces/yours.py)."""
    r, c = user
    before = snapshot(r)
    d = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh")
    assert d["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, [c["c8"], c["c1"]], ["./test.sh"])
    assert d["command_files"] == [
        {"word": "./test.sh", "use": "yours", "path": str(r / "test.sh"), "state": "untracked", "copy": "test.sh"},
        {"word": "notes.txt", "use": "yours", "path": str(r / "notes.txt"), "state": "untracked, beside ./test.sh",
         "copy": "notes.txt"}]
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh", "--fresh", check=0)
    assert (f"command: ./test.sh is your file {r / 'test.sh'} (untracked), copied into each commit's worktree at "
            "test.sh and run there, as git bisect run sees it in your checkout") in p.stdout
    assert "command: 1 untracked file beside ./test.sh copied with it, as git bisect run would see it: notes.txt" \
        in p.stdout
    assert snapshot(r) == before


def test_a_file_only_the_users_checkout_has_is_named_not_called_good_fails_too(user, hist, tmp_path):
    """A script reading a file git does not track (an ignored data file, an untracked local
    config) works with `git bisect run` in the checkout; every commit's worktree lacks it. Both
    endpoints fail opening it, and bisectk says which file and why, not "the good configuration
    fails too". By its absolute path, it works."""
    r, c = user
    (r / ".git" / "info" / "exclude").write_text("weights.bin\n")
    (r / "weights.bin").write_text("w\n")
    (r / "data-test.sh").write_text("#!/bin/sh\npython3 -c \"open('weights.bin')\" || exit 1\n! test -f bug\n")
    (r / "data-test.sh").chmod(0o755)
    before = snapshot(r)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./data-test.sh", "--json", check=2)
    problem = json.loads(p.stdout)["endpoints"]
    assert problem["environment_problem"]["kind"] == "untracked-file"
    assert problem["environment_problem"]["subject"] == str(r / "weights.bin")
    assert "which your checkout has but git does not track" in problem["problem"]
    (r / "data-test.sh").write_text(f"#!/bin/sh\ntest -f {r / 'weights.bin'} || exit 1\n! test -f bug\n")
    assert jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./data-test.sh")["first_bad"]["sha"] == c["c5"]
    (r / "data-test.sh").write_text("#!/bin/sh\ncat hello.txt-nowhere || exit 1\n")   # missing everywhere: not it
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./data-test.sh", "--json", "--fresh", check=2)
    assert json.loads(p.stdout)["endpoints"]["environment_problem"] is None
    for name in ("weights.bin", "data-test.sh"):
        (r / name).unlink()
    (r / ".git" / "info" / "exclude").write_text("")


def test_shell_syntax_around_the_users_script_is_refused_and_its_sh_c_form_runs_it(user, hist, tmp_path):
    """`--run './test.sh && false'`: resolving ./test.sh to the user's file once rewrote the line
    with `&&` quoted into an argument, so every commit ran test.sh alone and c5 was called the
    first bad commit of a command that fails everywhere. It is refused as shell syntax, as without
    the script; the `sh -c` form the refusal asks for runs the user's untracked script (resolved
    inside the shell script too) with the shell's meaning: `&& false` fails on every commit."""
    r, c = user
    before = snapshot(r)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh && false", "--json", check=2)
    assert p.stdout == "" and "'&&' is shell syntax" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    d = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", "sh -c './test.sh && true'")
    assert d["first_bad"]["sha"] == c["c5"]
    assert d["command_files"][0] == {"word": "./test.sh", "use": "yours", "path": str(r / "test.sh"),
                                     "state": "untracked", "copy": "test.sh"}
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "sh -c './test.sh && false'", "--json", check=2)
    assert "the good configuration fails too" in json.loads(p.stdout)["endpoints"]["problem"]
    assert snapshot(r) == before


def test_braces_in_the_command_arrive_as_typed_as_git_bisect_run_passes_them(user, hist, tmp_path):
    """`--run "sh -c 'test -f {bug}'"` (or awk's `'{print}'`, a `--build` with `{x}`): a word in
    braces was read as a spec's factor placeholder, and the first run ended the command in an
    internal error (KeyError, exit 3); `{{` was halved. A command typed on the command line has no
    factors: git bisect run passes each word as it is, and so does bisectk."""
    r, c = user
    (tmp_path / "t.sh").write_text('#!/bin/sh\n[ "$1" = "{bug}" ] && [ "$2" = "{{x}}" ] && ! test -f bug\n')
    (tmp_path / "t.sh").chmod(0o755)
    d = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", f"{tmp_path / 't.sh'} {{bug}} {{{{x}}}}",
             "--build", "sh -c 'test {x} = {x}'")
    assert d["first_bad"]["sha"] == c["c5"], d
    assert d["subject"]["command"][1:] == ["{bug}", "{{x}}"], d["subject"]


def test_a_path_that_climbs_out_of_the_repository_is_named_not_called_good_fails_too(tmp_path):
    """A test reading a sibling checkout by a relative path (`../sibling/h.h`, as a build names
    `../cutlass/include`) works with `git bisect run` in the checkout; from a worktree under the git
    directory the same `..` names nothing. Both endpoints fail, and the problem says which path,
    what it is from the checkout, and what to write, not "the good configuration fails too"."""
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "h.h").write_text("#define X 1\n")
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(1, 7):
        commit(r, f"c{i}", {"t.py": f"open('../sibling/h.h')\nV = {i}\nraise SystemExit(V >= 4)\n"})
    assert subprocess.run([sys.executable, "t.py"], cwd=r).returncode == 1      # by hand: the bad commit fails
    p = run(r, "--good", "HEAD~5", "--run", "python3 t.py", "--json", check=2)
    problem = json.loads(p.stdout)["endpoints"]
    assert problem["environment_problem"]["kind"] == "outside-path"
    assert problem["environment_problem"]["subject"] == str(tmp_path / "sibling" / "h.h")
    assert "the runs cannot open ../sibling/h.h, which from your own tree is" in problem["problem"]


def test_from_a_subdirectory_paths_read_as_typed_there(user, hist, tmp_path):
    """Typed in d/: `../up-test.sh` is the user's script at the root, the pathspec `f0` is d/f0,
    as git reads a pathspec relative to where it is typed, and the command runs in each commit's
    d/, where the user tried it by hand (the script reads `../bug` from there)."""
    r, c = user
    seen = tmp_path / "cwd.txt"
    (r / "up-test.sh").write_text(f'#!/bin/sh\necho "$PWD" >> {seen}\n! test -f ../bug\n')
    (r / "up-test.sh").chmod(0o755)
    before = snapshot(r)
    p = bisectk("bisect", "--good", c["c1"], "--bad", "main", "--run", "../up-test.sh", "--", "f0", cwd=r / "d", check=0)
    assert f"command: ../up-test.sh is your file {r / 'up-test.sh'} (untracked)" in p.stdout
    assert "runs in each commit's d/, where the command was typed" in p.stdout
    assert "touching d/f0" in p.stdout
    assert f"first bad commit: {c['c6']}" in p.stdout
    cwds = seen.read_text().split()
    assert cwds and all(Path(d).name == "d" and "/bisectk/worktrees/" in d and not Path(d).is_relative_to(r) for d in cwds)
    assert snapshot(r) == before


def test_a_command_typed_in_a_subdirectory_runs_there(tmp_path):
    """`cd kern && ./check.sh` works by hand: the tracked script reads `params.txt` beside it.
    bisectk runs it in each commit's kern/ (before: at the worktree's root, where every run
    failed reading params.txt, and the endpoints were refused as "good fails too"); a commit
    without kern/ is skipped, saying why; `--pytest` takes a node id typed there too."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    check = "#!/bin/sh\nv=$(cut -d= -f2 params.txt)\n[ \"$v\" -lt 6 ]\n"
    test_py = "def test_v():\n    assert int(open('params.txt').read().split('=')[1]) < 6\n"
    shas = []
    for i in range(1, 9):
        if i == 3:      # kern/ leaves for one commit (moved away and back)
            files = {"kern/params.txt": None, "kern/check.sh": None, "kern/test_k.py": None, "top": f"{i}\n"}
        else:
            files = {"kern/params.txt": f"v={i}\n", "kern/check.sh": check, "kern/test_k.py": test_py,
                     "top": f"{i}\n"}
        shas.append(commit(r, f"c{i}", files))
        if i != 3:
            (r / "kern" / "check.sh").chmod(0o755)
            git(r, "add", "kern/check.sh")
            git(r, "commit", "-q", "--amend", "--no-edit")
            shas[-1] = git(r, "rev-parse", "HEAD")
    before = snapshot(r)
    d = json.loads(bisectk("bisect", "--json", "--good", shas[0], "--bad", "main", "--run", "./check.sh",
                           cwd=r / "kern", check=0, timeout=120).stdout)
    assert d["first_bad"]["sha"] == shas[5]
    d = json.loads(bisectk("bisect", "--json", "--good", shas[0], "--bad", shas[2], "--run", "./check.sh",
                           cwd=r / "kern", check=2, timeout=120).stdout)
    assert d["endpoints"]["problem"].startswith(f"the bad commit {shas[2][:10]} c3 cannot be tested")
    assert "the directory kern/ is not in this commit's tree" in d["endpoints"]["problem"]
    d = json.loads(bisectk("bisect", "--json", "--good", shas[0], "--bad", "main", "--pytest", "test_k.py",
                           "--no-flaky", cwd=r / "kern", check=0, timeout=120).stdout)
    assert d["first_bad"]["sha"] == shas[5]
    assert snapshot(r) == before


def test_one_command_typed_in_two_directories_is_two_subjects(tmp_path):
    """`sh check.sh` in a/ and in b/ of the same commits runs two different scripts: the second
    bisection must not be answered from the first one's ledger (the run's directory is in the
    memo key)."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 9):
        files = {"a/v": f"{i}\n", "b/v": f"{i}\n", "a/check.sh": "[ $(cat v) -lt 3 ]\n",
                 "b/check.sh": "[ $(cat v) -lt 6 ]\n"}
        shas.append(commit(r, f"c{i}", files))
    answers = [json.loads(bisectk("bisect", "--json", "--good", shas[0], "--run", "sh check.sh", cwd=r / d,
                                  check=0, timeout=120).stdout) for d in ("a", "b")]
    assert [d["first_bad"]["sha"] for d in answers] == [shas[2], shas[5]]
    assert answers[1]["runs"] > 0


def test_script_with_space_and_arguments_cwd_is_worktree_root(user, tmp_path):
    r, c = user
    (r / "my check.sh").write_text('#!/bin/sh\necho "$PWD|$1|$2" >> "$3"\n! test -f "$1"\n')
    (r / "my check.sh").chmod(0o755)
    before = snapshot(r)
    seen = tmp_path / "seen.txt"
    d = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", f"'./my check.sh' bug 'two words' {seen}")
    assert d["first_bad"]["sha"] == c["c5"]
    rows = [line.split("|") for line in seen.read_text().splitlines()]
    assert rows and all(w == "two words" and a == "bug" for _, a, w in rows)
    # cwd = the root of each commit's worktree (git's cwd is the checkout's root), never the user's tree
    assert all("/bisectk/worktrees/" in cwd and not Path(cwd).is_relative_to(r) for cwd, _, _ in rows)
    assert snapshot(r) == before


def test_tracked_script_runs_from_each_commits_tree(hist, tmp_path):
    base, c = hist
    r = tmp_path / "tracked"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    log = tmp_path / "argv0.txt"
    # a tracked checker that logs how it was called; the user's copy is the tree's, so each
    # commit's own copy runs (by a relative path from the worktree root), never the user's file
    git(r, "checkout", "-q", "-b", "work", c["c4"])
    (r / "check.sh").write_text(f'#!/bin/sh\necho "$0" >> {log}\n! test -f bug\n')
    (r / "check.sh").chmod(0o755)
    good = commit(r, "add check", {"check.sh": (r / "check.sh").read_text()})
    for i, extra in enumerate(({"x": "1"}, {"bug": "BUG\n"}, {"y": "2"}, {"z": "3"})):
        commit(r, f"w{i}", extra)
    bad = git(r, "rev-parse", "HEAD")
    culprit = git(r, "rev-parse", "HEAD~2")
    before = snapshot(r)
    p = run(r, "--good", good, "--bad", bad, "--run", "./check.sh", check=0)
    assert "command: ./check.sh is tracked: each commit's own check.sh runs" in p.stdout
    # a tracked file the command only names (an argument, here inside `sh -c`) is not said to run
    p = run(r, "--good", good, "--bad", bad, "--run", "sh -c '! test -f bug'", check=0)
    assert "command: bug is tracked: each commit's own bug is named" in p.stdout, p.stdout
    assert f"first bad commit: {culprit}" in p.stdout
    assert f"first bad commit: {culprit}" in p.stdout
    ran = log.read_text().splitlines()
    assert ran and all(not os.path.isabs(x) for x in ran)     # never the user's file by absolute path
    assert snapshot(r) == before


def test_a_test_that_is_not_idempotent_is_not_taken_for_a_flake(user, hist, tmp_path):
    """`mkdir out` fails when the last run's `out` is still there: every run of a commit, the
    confirmation's re-runs included, starts from the tree its checkout left, so the answer is
    git's and deterministic. A build's untracked output that the run needs is made again when
    the tree was tidied under it."""
    r, c = user
    (tmp_path / "t.sh").write_text("#!/bin/sh\nmkdir out || exit 3\necho x > out/log\n! test -f bug\n")
    (tmp_path / "t.sh").chmod(0o755)
    before = snapshot(r)
    doc = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--run", str(tmp_path / "t.sh"))
    assert doc["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, [c["c8"], c["c1"]], ["sh", "-c", "! test -f bug"])
    assert "intermittent" not in json.dumps(doc)
    (tmp_path / "u.sh").write_text("#!/bin/sh\ntest -f made.txt || exit 3\nmkdir out || exit 3\n! test -f bug\n")
    (tmp_path / "u.sh").chmod(0o755)
    doc = jrun(r, "--good", c["c1"], "--bad", c["c8"], "--build", "touch made.txt", "--run", str(tmp_path / "u.sh"))
    assert doc["first_bad"]["sha"] == c["c5"] and "intermittent" not in json.dumps(doc)
    assert snapshot(r) == before


# --- 2. merge bases, several goods --------------------------------------------------------------

def test_good_on_a_side_branch_tests_the_merge_base_first(user, hist, tmp_path):
    """t6030 'bisect start with one good on a side branch': git checks the merge base c2 first."""
    r, c = user
    before = snapshot(r)
    d = jrun(r, "--good", "side", "--bad", "main", "--run", "./test.sh")
    assert [m["sha"] for m in d["merge_bases"]] == [c["c2"]] and d["merge_bases"][0]["side"] == "good"
    # git's order: the endpoints, then the merge base, then the search
    assert [a["applied"][0] for a in d["attempts"]][2] == c["c2"] and d["attempts"][2]["phase"] == "merge base"
    assert d["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, ["main", "side"], ["./test.sh"])
    assert snapshot(r) == before


def test_bad_merge_base_is_one_line_exit_2_suggesting_find_fix(user, hist, tmp_path):
    """t6030 'bisect fails if the merge base is bad': the bug was fixed between c6 and rel."""
    r, c = user
    before = snapshot(r)
    p = run(r, "--good", "rel", "--bad", "main", "--run", "./test.sh")
    assert p.returncode == 2, (p.stdout, p.stderr)
    problem = [line for line in p.stdout.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1 and c["c6"][:10] in problem[0] and "--find-fix" in problem[0]
    assert "Traceback" not in p.stderr
    out = git_bisect(hist, tmp_path, ["main", "rel"], ["./test.sh"])
    assert "merge base" in out and c["c6"] in out          # git names the same merge base as bad
    assert snapshot(r) == before


def test_first_parent_with_a_good_on_a_side_branch_tests_the_merge_base_first(user, hist, tmp_path):
    """`git bisect start --first-parent main side`: git checks the merge base c2 first and bisects
    the mainline, as without --first-parent. bisectk refused it ("not an ancestor ... swap them",
    though swapping cannot help)."""
    r, c = user
    before = snapshot(r)
    d = jrun(r, "--first-parent", "--good", "side", "--bad", "main", "--run", "./test.sh")
    assert [m["sha"] for m in d["merge_bases"]] == [c["c2"]] and d["merge_bases"][0]["side"] == "good"
    assert d["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, ["--first-parent", "main", "side"],
                                                          ["./test.sh"])
    p = run(r, "--first-parent", "--good", "rel", "--bad", "main", "--run", "./test.sh")
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.stdout, p.stderr)
    problem = [line for line in p.stdout.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1 and c["c6"][:10] in problem[0] and "--find-fix" in problem[0]
    assert snapshot(r) == before


def test_a_test_whose_git_commands_reach_the_shared_refs_and_config_is_said(user, tmp_path):
    """Worktrees share refs, the stash and the config with the user's checkout: a test that runs
    `git stash`, `git branch -f` or `git config` changes the user's repository (as under git bisect
    run). The answer stands, and a warning names what moved; a test that does not is silent."""
    r, c = user
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh", check=0)
    assert "changed your repository" not in p.stderr
    (tmp_path / "t.sh").write_text("#!/bin/sh\necho x >> hello\ngit -c user.name=t -c user.email=t@t stash -q\n"
                                   "git branch -f from-test\ngit config test.key 1\n! test -f bug\n")
    (tmp_path / "t.sh").chmod(0o755)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", str(tmp_path / "t.sh"), check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    warned = [line for line in p.stderr.splitlines() if "changed your repository" in line]
    assert len(warned) == 1 and "created refs/heads/from-test" in warned[0] and "moved refs/stash" in warned[0]
    assert "config" in warned[0].split("refs/stash", 1)[1]


def _plugins_repo(tmp_path):
    """Ten commits whose build copies p/*.sh into an ignored build/; c7 adds a broken plugin. The
    test script (tmp_path/t.sh) runs every plugin in build/. Returns (repo, shas)."""
    r = tmp_path / "plugins"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = [commit(r, "c1", {".gitignore": "build/\n", "build.sh": "#!/bin/sh\nmkdir -p build && cp p/*.sh build/\n",
                             "p/p1.sh": "exit 0\n"})]
    (r / "build.sh").chmod(0o755)
    git(r, "add", "build.sh")
    git(r, "commit", "-q", "--amend", "--no-edit")
    shas = [git(r, "rev-parse", "HEAD")]
    for i in range(2, 11):
        shas.append(commit(r, f"c{i}", {f"p/p{i}.sh": "exit 0\n", **({"p/broken.sh": "exit 1\n"} if i == 7 else {})}))
    (tmp_path / "t.sh").write_text("#!/bin/sh\nfor p in build/*.sh; do sh \"$p\" || exit 1; done\n")
    (tmp_path / "t.sh").chmod(0o755)
    return r, shas


def test_clean_ignored_keeps_one_commits_ignored_build_outputs_from_anothers_run(tmp_path):
    """A build that copies plugins into an ignored build/ leaves c7's broken plugin there when an
    older commit is built next: its run fails, and the answer is too early (as under git bisect
    run). --clean-ignored removes ignored files before each run: the right commit."""
    r, shas = _plugins_repo(tmp_path)
    args = ("--good", shas[0], "--build", "./build.sh", "--run", str(tmp_path / "t.sh"), "--fresh")
    assert jrun(r, *args, "--clean-ignored")["first_bad"]["sha"] == shas[6]


def test_clean_ignored_after_a_bisection_without_it_runs_again_not_from_the_ledger(tmp_path):
    """The remedy the README gives for a wrong answer from stale ignored build outputs is
    --clean-ignored; run after the bisection that answered wrong (as a user, or a second CI job
    on the same ledger, would), every commit was answered from that bisection's runs, made with
    the stale outputs: the same wrong commit again, "from the ledger". Runs made with ignored
    files removed are kept apart from those made with them kept."""
    r, shas = _plugins_repo(tmp_path)
    args = ("--good", shas[0], "--build", "./build.sh", "--run", str(tmp_path / "t.sh"))
    # the premise: the stale outputs mislead the search; its answer, built again from scratch, does
    # not hold, and the command says so (exit 1) rather than name the commit
    stale = jrun(r, *args, check=1)
    assert stale["first_bad"]["sha"] != shas[6] and stale["fresh_build"]["stale"], stale.get("fresh_build")
    cleaned = jrun(r, *args, "--clean-ignored")
    assert cleaned["first_bad"]["sha"] == shas[6] and cleaned["runs"] > 0, cleaned["first_bad"]


def test_a_filter_configured_since_the_last_command_checks_out_and_runs_again(tmp_path):
    """git-lfs installed after a first bisection (its files were pointers then): the cached
    worktree was written under the old settings and the ledger's verdicts judged pointers; both
    are made again, with no --fresh and no `ledger gc`."""
    r = tmp_path / "lfsish"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = [commit(r, f"c{i}", {".gitattributes": "*.dat filter=lfsish\n", "model.dat": f"pointer {i}\n",
                                "counter": f"{i}\n"}) for i in range(1, 11)]
    (r / "test.sh").write_text('#!/bin/sh\ngrep -q "^real" model.dat || exit 2\n[ $(cat counter) -lt 7 ]\n')
    (r / "test.sh").chmod(0o755)
    p = run(r, "--good", shas[0], "--run", "./test.sh", check=2)        # pointers: the good endpoint fails
    assert "good" in p.stderr + p.stdout
    git(r, "config", "filter.lfsish.smudge", "sed s/pointer/real/")
    git(r, "config", "filter.lfsish.clean", "sed s/real/pointer/")
    d = jrun(r, "--good", shas[0], "--run", "./test.sh")
    assert d["first_bad"]["sha"] == shas[6]


def test_a_replace_ref_added_or_removed_since_the_last_command_runs_again(tmp_path):
    """`git replace` makes a commit's sha check out another tree: the ledger's verdicts and the
    cached worktrees made under one set of replace refs do not answer for another."""
    r = tmp_path / "replaced"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = [commit(r, f"c{i}", {"counter": f"{i}\n"}) for i in range(12)]
    (r / "test.sh").write_text("#!/bin/sh\n[ $(cat counter) -lt 7 ]\n")
    (r / "test.sh").chmod(0o755)
    tree6 = git(r, "rev-parse", f"{shas[6]}^{{tree}}")
    fake7 = git(r, "commit-tree", "-p", shas[6], "-m", "c7 as c6", tree6)
    git(r, "replace", shas[7], fake7)
    assert jrun(r, "--good", shas[0], "--run", "./test.sh")["first_bad"]["sha"] == shas[8]
    git(r, "replace", "-d", shas[7])
    assert jrun(r, "--good", shas[0], "--run", "./test.sh")["first_bad"]["sha"] == shas[7]
    git(r, "replace", shas[7], fake7)
    assert jrun(r, "--good", shas[0], "--run", "./test.sh")["first_bad"]["sha"] == shas[8]


def test_a_sparse_checkout_changed_since_the_last_command_is_checked_out_again(tmp_path):
    """`git worktree add` copies the sparse checkout's patterns of the user's checkout, as `git
    bisect run` there would see them; after `git sparse-checkout disable` (or another `set`) the
    cached worktrees and the ledger's verdicts made under the old patterns answer nothing."""
    r = tmp_path / "sparse"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = [commit(r, f"c{i}", {"a/v": f"{i}\n", "b/w": f"{i}\n"}) for i in range(10)]
    test = tmp_path / "test.sh"
    test.write_text("#!/bin/sh\n[ $(cat b/w) -lt 6 ]\n")
    test.chmod(0o755)
    git(r, "sparse-checkout", "set", "a")
    run(r, "--good", shas[0], "--run", str(test), check=2)         # b/ is not checked out: good fails
    git(r, "sparse-checkout", "set", "b")
    assert jrun(r, "--good", shas[0], "--run", str(test))["first_bad"]["sha"] == shas[6]
    git(r, "sparse-checkout", "set", "a")
    run(r, "--good", shas[0], "--run", str(test), check=2)
    git(r, "sparse-checkout", "disable")
    assert jrun(r, "--good", shas[0], "--run", str(test))["first_bad"]["sha"] == shas[6]


def test_a_global_attributes_file_changed_since_the_last_command_checks_out_and_runs_again(tmp_path):
    """The user's own attributes file (`core.attributesFile`, git's default ~/.config/git/attributes)
    decides line endings as .git/info/attributes does: a fresh checkout under `* eol=crlf` writes
    CRLF, so the cached worktrees and the ledger's verdicts made without it answer nothing."""
    r = tmp_path / "crlf"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = [commit(r, f"c{i}", {"counter": f"{i}\n"}) for i in range(10)]
    test = tmp_path / "test.sh"
    test.write_text("#!/bin/sh\n! grep -q \"$(printf '\\r')\" counter || exit 3\n[ $(cat counter) -lt 6 ]\n")
    test.chmod(0o755)
    assert jrun(r, "--good", shas[0], "--run", str(test))["first_bad"]["sha"] == shas[6]
    attributes = tmp_path / "attributes"
    attributes.write_text("* eol=crlf\n")
    git(r, "config", "core.attributesFile", str(attributes))
    run(r, "--good", shas[0], "--run", str(test), check=2)         # every file CRLF: good fails
    attributes.write_text("")
    assert jrun(r, "--good", shas[0], "--run", str(test))["first_bad"]["sha"] == shas[6]
    attributes.write_text("* eol=crlf\n")
    run(r, "--good", shas[0], "--run", str(test), check=2)


def test_a_commit_named_by_its_message_as_git_bisect_takes_it(user):
    """`:/regex` (the youngest commit whose message matches): `^{commit}` appended to it would be
    read as part of the pattern."""
    r, c = user
    d = jrun(r, "--good", ":/^c2", "--bad", ":/^c7", "--run", "./test.sh")
    assert d["first_bad"]["sha"] == c["c5"]


def test_repeated_good_all_count(user, hist, tmp_path):
    r, c = user
    before = snapshot(r)
    d = jrun(r, "--good", c["c3"], "--good", "side", "--bad", "main", "--run", "./test.sh")
    assert sorted(d["goods"]) == sorted([c["c3"], c["side1"]])
    assert d["commits"] == 5                  # c4..c8: reachable from main and from neither good
    assert d["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, ["main", c["c3"], "side"], ["./test.sh"])
    assert snapshot(r) == before


# --- 3. --find-fix, terms -------------------------------------------------------------------------

def test_find_fix_names_the_first_fixed_commit_like_git_terms(user, hist, tmp_path):
    r, c = user
    before = snapshot(r)
    p = run(r, "--find-fix", "--bad", "main", "--good", "fixline", "--run", "./test.sh", check=0)
    assert f"first fixed commit: {c['f2']}" in p.stdout and "last broken:" in p.stdout
    # git: old = still broken (the script must exit 0 there, so the user inverts it), new = fixed
    theirs = git_bisect(hist, tmp_path, ["--term-old", "broken", "--term-new", "fixed", "fixline", "main"],
                        ["sh", "-c", "test -f bug"])
    assert theirs == c["f2"]
    d = jrun(r, "--find-fix", "--bad", "main", "--good", "fixline", "--run", "./test.sh")
    assert d["find_fix"] and d["terms"] == ["broken", "fixed"] and d["first_bad"]["sha"] == c["f2"]
    (tmp_path / "fix.log").write_text(bisectk("log", cwd=r, check=0).stdout)
    assert f"first fixed commit: {c['f2']}" in bisectk("replay", tmp_path / "fix.log", check=0).stdout
    assert snapshot(r) == before


INTERMITTENT = """#!/usr/bin/env python3
import os, pathlib, subprocess, sys
sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
count = pathlib.Path(sys.argv[1]) / sha
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
sys.exit(1 if os.path.exists("bug") and n % 3 == 1 else 0)   # a broken commit passes its first run
"""


def test_find_fix_with_an_intermittent_failure_confirms_passes(user, tmp_path):
    """A broken commit that passes its first run must not be called fixed: each pass is
    confirmed by repeated runs (a failure proves the commit still broken)."""
    r, c = user
    (r / "flaky.py").write_text(INTERMITTENT)
    (r / "flaky.py").chmod(0o755)
    counts = tmp_path / "counts"
    counts.mkdir()
    before = snapshot(r)
    d = jrun(r, "--find-fix", "--flaky", "--repeat", "4", "--bad", "main", "--good", "fixline",
             "--run", f"./flaky.py {counts}")
    assert d["first_bad"]["sha"] == c["f2"] and d["repeats"] > 1
    f1 = [a["outcome"] for a in d["attempts"] if a["applied"][0] == c["f1"]]
    assert f1[:2] == ["pass", "fail"]           # its first pass was not taken as fixed
    assert snapshot(r) == before


def test_find_fix_max_runs_counts_every_repeat_of_a_probe(user, tmp_path):
    """--max-runs counts the runs a search makes; under --find-fix with an intermittent failure
    each probe is run up to `repeats` times (direction.FixOracle), and the budget counted one run
    a probe: --max-runs 2 made 15 search runs (a broken commit's pass and failure, then a fixed
    commit's 13 passes). The budget is checked between probes: once f1's two runs spent it, the
    search stops."""
    r, c = user
    (r / "flaky.py").write_text(INTERMITTENT)
    (r / "flaky.py").chmod(0o755)
    counts = tmp_path / "counts"
    counts.mkdir()
    d = jrun(r, "--find-fix", "--flaky", "--repeat", "4", "--bad", "main", "--good", "fixline",
             "--max-runs", "2", "--run", f"./flaky.py {counts}", check=1)
    assert d["repeats"] > 2 and "run budget of 2 spent" in d["stop_reason"]
    assert d["phase_runs"]["search"] == 2, d["phase_runs"]


def test_find_fix_from_a_release_branch_after_a_bad_merge_base(user):
    r, c = user
    d = jrun(r, "--find-fix", "--bad", "main", "--good", "rel", "--run", "./test.sh")
    assert d["first_bad"]["sha"] == c["fixbug"]
    assert [m["sha"] for m in d["merge_bases"]] == [c["c6"]] and d["merge_bases"][0]["side"] == "broken"


def test_terms_name_the_answer_and_git_meanings_are_kept(user, tmp_path):
    r, c = user
    p = run(r, "--term-old", "fast", "--term-new", "slow", "--good", c["c1"], "--bad", "main", "--run", "./test.sh",
            check=0)
    assert f"first slow commit: {c['c5']}" in p.stdout
    log = tmp_path / "terms.log"            # bisectk's log keeps the terms, and replay reads them
    log.write_text(bisectk("log", cwd=r, check=0).stdout)
    assert f"first slow commit: {c['c5']}" in bisectk("replay", log, check=0).stdout
    p = run(r, "--term-old", "old", "--term-new", "new", "--good", c["c1"], "--bad", "main", "--run", "./test.sh",
            check=0)
    assert f"first new commit: {c['c5']}" in p.stdout
    for bad_terms in (("new", "x"), ("x", "good"), ("run", "x"), ("a b", "x"), ("same", "same")):
        p = run(r, "--term-old", bad_terms[0], "--term-new", bad_terms[1], "--good", c["c1"], "--bad", "main",
                "--run", "./test.sh", check=2)
        assert p.stderr.startswith("bisectk: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr


# --- 4. pathspec --------------------------------------------------------------------------------

def test_pathspec_candidates_and_answer_match_git(user, hist, tmp_path):
    """t6030 'bisect run & skip: find first bad' with a pathspec: candidates touch the paths."""
    r, c = user
    before = snapshot(r)
    full = jrun(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--fresh")
    # the culprit c5 touches bug: same answer, fewer runs
    d = jrun(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--fresh", "--", "bug")
    assert d["paths"] == ["bug"] and d["first_bad"]["sha"] == c["c5"]
    assert d["runs"] < full["runs"]
    # the culprit does not touch d/f0: git names the first commit after it that does (c6)
    d = jrun(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--", "d/f0")
    theirs = git_bisect(hist, tmp_path, ["main", c["c1"], "--", "d/f0"], ["./test.sh"])
    assert d["first_bad"]["sha"] == theirs == c["c6"]
    assert d["commits"] == 4                 # c2, c4, c6, c8 touch d/f0
    p = run(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--", "nowhere/")
    assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and "nowhere/" in p.stderr
    assert snapshot(r) == before


# --- 5. damaged and bare repositories, git's log ------------------------------------------------

def test_unreadable_tree_is_skipped_with_gits_reason(hist, tmp_path):
    base, c = hist
    r = tmp_path / "damaged"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    for pack in (r / ".git" / "objects" / "pack").glob("*.pack"):      # loose objects, to remove one
        data = pack.read_bytes()
        for f in pack.parent.glob(pack.stem + ".*"):
            f.unlink()
        subprocess.run(["git", "unpack-objects", "-q"], cwd=r, input=data, check=True)
    blob = git(r, "rev-parse", f"{c['c6']}:hello")                    # only c6 has this hello
    (r / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    before = snapshot(r)
    d = jrun(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh")
    assert d["first_bad"]["sha"] == c["c5"]
    skipped = [a for a in d["attempts"] if a["applied"][0] == c["c6"]]
    assert skipped and skipped[0]["outcome"] == "unresolved" and "checkout failed" in skipped[0]["verdict"]
    assert blob in skipped[0]["verdict"]          # git's own words name the missing object
    assert snapshot(r) == before


def test_a_commit_whose_filter_fails_is_skipped_with_gits_reason(tmp_path):
    """A required smudge filter that fails on some commits' files (an LFS object the server lost):
    those commits are skipped, as git's 125, and the search still answers, not the command."""
    r = tmp_path / "filtered"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 13):
        files = {"counter": f"{i}\n", ".gitattributes": "*.req filter=req\n"}
        if i == 6:
            files["a.req"] = "x\n"
        shas.append(commit(r, f"c{i}", files))
        if i == 8:
            git(r, "rm", "-q", "a.req")
            shas.append(commit(r, "drop a.req", {}))
    git(r, "config", "filter.req.required", "true")
    git(r, "config", "filter.req.smudge", "false")
    (r / "test.sh").write_text("#!/bin/sh\n[ $(cat counter) -lt 4 ]\n")
    (r / "test.sh").chmod(0o755)
    before = snapshot(r)
    d = jrun(r, "--good", shas[0], "--run", "./test.sh")
    assert d["first_bad"]["sha"] == shas[3]         # c4: before the commits that cannot be made
    filtered = [a for a in d["attempts"] if a["applied"][0] in shas[5:8]]
    assert filtered and all(a["outcome"] == "unresolved" and "smudge filter req failed" in a["verdict"] for a in filtered), d["attempts"]
    assert snapshot(r) == before


def test_bare_repository_like_git_no_checkout(hist, tmp_path):
    base, c = hist
    bare = tmp_path / "b.git"
    git(tmp_path, "clone", "-q", "--bare", "--no-local", str(base), str(bare))
    refs = git(bare, "for-each-ref")
    d = jrun(tmp_path, "--repo", bare, "--good", c["c1"], "--bad", "main", "--run", "sh -c '! test -f bug'")
    theirs = git_bisect(hist, tmp_path, ["--no-checkout", "main", c["c1"]],
                        ["sh", "-c", "! git cat-file -e BISECT_HEAD:bug"], bare=True)
    assert d["first_bad"]["sha"] == theirs == c["c5"]
    assert git(bare, "for-each-ref") == refs


def test_replays_git_bisect_log(user, hist, tmp_path):
    r, c = user
    base, _ = hist
    g = tmp_path / "g"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(g))
    (g / "test.sh").write_text(TEST_SH)
    (g / "test.sh").chmod(0o755)
    subprocess.run(["git", "bisect", "start", "main", c["c1"]], cwd=g, check=True, capture_output=True)
    subprocess.run(["git", "bisect", "run", "./test.sh"], cwd=g, check=True, capture_output=True)
    text = subprocess.run(["git", "bisect", "log"], cwd=g, check=True, capture_output=True, text=True).stdout
    full, part = tmp_path / "full.log", tmp_path / "part.log"
    full.write_text(text)
    lines = text.splitlines()
    part.write_text("\n".join(lines[:lines.index(next(x for x in lines if x.startswith("git bisect start"))) + 1]) + "\n")
    before = snapshot(r)
    p = bisectk("replay", full, "--repo", r, check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    p = bisectk("replay", part, cwd=r, check=1)             # git's replay reads the current repository
    assert "not determined yet" in p.stdout and "next commit to test:" in p.stdout
    # git's own terms: a fix looked for with --term-old broken --term-new fixed
    g2 = tmp_path / "g2"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(g2))
    subprocess.run(["git", "bisect", "start", "--term-old", "broken", "--term-new", "fixed", "origin/fixline", "main"],
                   cwd=g2, check=True, capture_output=True)
    subprocess.run(["git", "bisect", "run", "sh", "-c", "test -f bug"], cwd=g2, check=True, capture_output=True)
    (tmp_path / "terms.log").write_text(subprocess.run(["git", "bisect", "log"], cwd=g2, check=True, capture_output=True,
                                                       text=True).stdout)
    p = bisectk("replay", tmp_path / "terms.log", "--repo", r, check=0)
    assert f"first fixed commit: {c['f2']}" in p.stdout
    bad = tmp_path / "bad.log"
    bad.write_text("git bisect start 'main' 'c1'\ngit bisect frobnicate abc\n")
    p = bisectk("replay", bad, cwd=r)
    assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and len(p.stderr.strip().splitlines()) == 1
    assert snapshot(r) == before


def test_replay_resolves_ref_names_and_ignores_skips_outside_the_range_as_git_does(hist, tmp_path):
    """Before: a skip of a commit outside the range was refused (and called a good mark), and a
    bad or skip line naming a tag was refused as "not between the log's ends"."""
    base, c = hist
    g = tmp_path / "g"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(g))
    for i in (1, 4, 5, 7):
        git(g, "tag", f"t{i}", c[f"c{i}"])
    logs = {"whole.log": f"git bisect start main t1\ngit bisect skip {c['side1']}\ngit bisect good t4\n"
                         "git bisect skip t1\ngit bisect bad t5\n",
            "open.log": f"git bisect start {c['c8']} {c['c1']}\ngit bisect skip {c['side1']}\ngit bisect bad t7\n"
                        "git bisect skip t4\n"}
    for name, text in logs.items():
        (tmp_path / name).write_text(text)
    p = subprocess.run(["git", "bisect", "replay", str(tmp_path / "whole.log")], cwd=g, capture_output=True, text=True)
    assert p.returncode == 0 and f"{c['c5']} is the first bad commit" in p.stdout, p.stdout + p.stderr
    git(g, "bisect", "reset")
    p = subprocess.run(["git", "bisect", "replay", str(tmp_path / "open.log")], cwd=g, capture_output=True, text=True)
    assert p.returncode == 0 and "is the first bad commit" not in p.stdout, p.stdout + p.stderr
    git(g, "bisect", "reset")
    p = bisectk("replay", tmp_path / "whole.log", "--repo", g, check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    p = bisectk("replay", tmp_path / "open.log", "--repo", g, check=1)
    assert "not determined yet" in p.stdout and "next commit to test:" in p.stdout
    (tmp_path / "contra.log").write_text("git bisect start main t4\ngit bisect bad t1\n")
    p = bisectk("replay", tmp_path / "contra.log", "--repo", g)
    assert p.returncode == 2 and "marks t1 bad" in p.stderr, p.stderr


# --- 6. manual mode -----------------------------------------------------------------------------

def manual(r: Path, args: list[str], answer, stop_after: int | None = None) -> tuple[int, str]:
    """`bisect --manual` with scripted stdin: `answer(worktree)` is the person looking at the
    printed worktree; after `stop_after` verdicts stdin ends (the person walks away)."""
    p = subprocess.Popen([sys.executable, "-m", "bisectk", "bisect", "--manual", *args], cwd=r, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
    out, given = [], 0
    for line in p.stdout:
        out.append(line)
        if "checked out at " in line:
            if stop_after is not None and given >= stop_after:
                p.stdin.close()
                continue
            p.stdin.write(answer(Path(line.split("checked out at ", 1)[1].strip())) + "\n")
            p.stdin.flush()
            given += 1
    return p.wait(timeout=60), "".join(out)


def test_manual_verdicts_resume_undo_log_replay(user, tmp_path):
    r, c = user
    before = snapshot(r)
    look = lambda wt: "bad" if (wt / "bug").exists() else "good"   # noqa: E731
    rc, text = manual(r, ["--good", c["c1"], "--bad", "main"], look, stop_after=1)
    assert rc == 1 and "the same command resumes" in text
    # resumed: the first verdict is carried over; a wrong answer is taken back with undo
    script = iter(["wrong", "undo"])

    def person(wt):
        step = next(script, "right")
        return {"bad": "good", "good": "bad"}[look(wt)] if step == "wrong" else "undo" if step == "undo" else look(wt)
    rc, text = manual(r, ["--good", c["c1"], "--bad", "main"], person)
    assert rc == 0 and f"first bad commit: {c['c5']}" in text and "undone:" in text
    log = bisectk("log", cwd=r, check=0).stdout
    assert "--manual" in log and log.count("observe ") >= 2
    (tmp_path / "m.log").write_text(log)
    p = bisectk("replay", tmp_path / "m.log", check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    assert snapshot(r) == before


def test_manual_candidates_left_by_skips_name_their_files(user):
    """Every commit skipped: the candidates are listed with the files they change, as --run lists
    them (each read 'files: -', as if the commits changed nothing)."""
    r, c = user
    rc, text = manual(r, ["--good", c["c3"], "--bad", c["c6"]], lambda wt: "skip")
    listed = [line for line in text.splitlines() if line.startswith("  ") and "files:" in line]
    assert rc == 1 and listed and all("files: -" not in line for line in listed), text


def test_manual_conflicting_verdicts_go_flake_aware(user):
    """Verdicts that admit no single first bad commit (c6 judged good, its ancestor c5 bad: resumed
    from an earlier session) make the dialogue flake-aware, and it asks again until one holds."""
    from bisectk.engine.direction import Terms
    from bisectk.engine.manual import Manual
    from bisectk.outcome import Outcome
    from bisectk.spaces.commits import list_graph
    from bisectk.spaces.worktrees import WorktreePool
    r, c = user
    before = snapshot(r)
    graph = list_graph(r, [c["c1"]], c["c8"])
    said, events = [], []
    with WorktreePool(r, size=1) as pool:
        pending: list[Path] = []

        def lease(sha):
            cm = pool.lease(sha)

            class Spy:
                def __enter__(self):
                    path = cm.__enter__()
                    pending.append(path)
                    return path

                def __exit__(self, *exc):
                    return cm.__exit__(*exc)
            return Spy()

        def ask(prompt):
            return "bad" if (pending[-1] / "bug").exists() else "good"
        m = Manual(graph, Terms(), ask=ask, say=said.append, lease=lease,
                   record=lambda kind, data: events.append((kind, data)),
                   verdicts=[(c["c5"], Outcome.FAIL), (c["c6"], Outcome.PASS)], confidence=0.9)
        found = m.run()
    assert found.flaky and any("conflict" in line for line in said)
    assert graph.sha(found.result.culprit) == c["c5"] and found.result.confidence >= 0.9
    assert all(kind == "observation" for kind, _ in events) and len(events) > 2
    assert snapshot(r) == before


def test_manual_refuses_a_command(user):
    r, c = user
    p = run(r, "--manual", "--good", c["c1"], "--bad", "main", "--run", "./test.sh")
    assert p.returncode == 2 and p.stderr.startswith("bisectk: --manual")


def test_manual_asks_the_merge_base_first_and_stops_on_a_bad_one(user):
    r, c = user
    before = snapshot(r)
    asked = []

    def look(wt: Path) -> str:
        asked.append(git(wt, "rev-parse", "HEAD"))
        return "bad" if (wt / "bug").exists() else "good"
    rc, text = manual(r, ["--good", "rel", "--bad", "main"], look)
    assert rc == 2 and asked == [c["c6"]]
    assert f"problem: the merge base {c['c6'][:10]} is bad" in text and "--find-fix" in text
    asked.clear()
    rc, text = manual(r, ["--find-fix", "--bad", "main", "--good", "rel"],
                      lambda wt: "broken" if (wt / "bug").exists() else "fixed")
    assert rc == 0 and f"first fixed commit: {c['fixbug']}" in text
    assert snapshot(r) == before


def test_manual_undo_of_the_merge_base_verdict_asks_the_merge_base_again(user):
    """A wrong verdict on the merge base taken back with `undo` at the next question: the merge
    base is asked again (as the same command resumed would), not left out of the search, whose
    answer then rested on a verdict the person withdrew (c7 'first bad', where c6 is bad)."""
    r, c = user
    asked, script = [], iter(["good", "undo"])

    def look(wt: Path) -> str:
        asked.append(git(wt, "rev-parse", "HEAD"))
        return next(script, None) or ("bad" if (wt / "bug").exists() else "good")
    rc, text = manual(r, ["--good", "rel", "--bad", "main"], look)
    assert asked[0] == c["c6"] and asked[2] == c["c6"], text
    assert rc == 2 and f"problem: the merge base {c['c6'][:10]} is bad" in text, text


def test_manual_stop_on_a_bad_merge_base_says_how_to_judge_it_again(user):
    """The same command resumes the stored 'bad' on the merge base and stops again without a
    question, so no `undo` can take it back: the stop line names --fresh, and --fresh asks again."""
    r, c = user
    asked = []

    def look(wt: Path) -> str:
        asked.append(git(wt, "rev-parse", "HEAD"))
        return "bad" if len(asked) == 1 else ("bad" if (wt / "bug").exists() else "good")
    rc, text = manual(r, ["--good", "rel", "--bad", "main"], look)
    assert rc == 2 and "--fresh" in text, text
    rc, text = manual(r, ["--good", "rel", "--bad", "main"], look)
    assert rc == 2 and len(asked) == 1 and "--fresh" in text, text
    rc, text = manual(r, ["--good", "rel", "--bad", "main", "--fresh"], look)
    assert rc == 2 and asked == [c["c6"], c["c6"]], text   # asked again (c6 is bad in this history)


def test_bad_defaults_to_head_as_git_bisect_bad(user, hist, tmp_path):
    """`git bisect start; git bisect bad; git bisect good c1` marks HEAD bad: --bad may be left
    out the same way (and with --find-fix, --good, the newer end)."""
    r, c = user
    before = snapshot(r)
    p = run(r, "--good", c["c1"], "--run", "./test.sh", check=0)
    assert "--bad not given: HEAD, as `git bisect bad` marks it" in p.stdout
    assert f"first bad commit: {c['c5']}" in p.stdout
    assert c["c5"] == git_bisect(hist, tmp_path, [c["c8"], c["c1"]], ["./test.sh"])
    p = run(r, "--run", "./test.sh", check=2)
    assert "give --good REF (and --bad REF, which defaults to HEAD)" in p.stderr and "Traceback" not in p.stderr
    assert snapshot(r) == before


def test_a_tool_the_script_calls_that_is_missing_is_named(user, tmp_path):
    """`./test.sh` calls a program that is not installed (exit 127 on every commit): the tool is
    named, not "the good configuration fails too"; one that only the user's checkout has
    (untracked `./gen.sh`) is named as such."""
    r, c = user
    (r / "t127.sh").write_text("#!/bin/sh\nno_such_tool_xyz --check\n")
    (r / "t127.sh").chmod(0o755)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./t127.sh", check=2)
    assert "runs 'no_such_tool_xyz', which the shell did not find (exit 127)" in p.stdout + p.stderr
    (r / "tools").mkdir()
    (r / "tools" / "gen.sh").write_text("#!/bin/sh\nexit 0\n")
    (r / "tools" / "gen.sh").chmod(0o755)
    (r / "t127.sh").write_text("#!/bin/sh\ntools/gen.sh || exit 1\n! test -f bug\n")
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./t127.sh", check=2)
    assert f"the runs cannot open {r / 'tools' / 'gen.sh'}, which your checkout has but git does not track" \
        in p.stdout + p.stderr
    (r / "gen.sh").write_text("#!/bin/sh\nexit 0\n")      # beside the script: copied with it, as git would see it
    (r / "gen.sh").chmod(0o755)
    (r / "t127.sh").write_text("#!/bin/sh\n./gen.sh || exit 1\n! test -f bug\n")
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./t127.sh", check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout


def test_a_commit_without_the_tracked_test_the_command_names_is_skipped_not_bad(tmp_path):
    """`--run 'python tests/t.py'` where tests/t.py is tracked (each commit's own copy runs) but
    some commits lack it: python's "can't open file" (exit 2) is no failure of the code. Before,
    such a commit was bad, and a good endpoint without it was "good fails too"."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    t = "import sys\nsys.exit(0 if int(open('v').read()) < 6 else 1)\n"
    shas = []
    for i in range(1, 10):     # tests/t.py from c3 on, but c4 removes it (c5 brings it back)
        files = {"v": f"{i}\n"}
        if i >= 3:
            files["tests/t.py"] = None if i == 4 else t
        shas.append(commit(r, f"c{i}", files))
    p = bisectk("bisect", "--good", shas[0], "--run", "python tests/t.py", cwd=r, check=2, timeout=120)
    assert f"the good commit {shas[0][:10]} c1 cannot be tested" in p.stdout
    assert "tests/t.py, which the command names, is not in this commit's tree" in p.stdout
    d = json.loads(bisectk("bisect", "--json", "--good", shas[2], "--run", "python tests/t.py", cwd=r,
                           check=0, timeout=120).stdout)
    assert d["first_bad"]["sha"] == shas[5]
    assert all(s["sha"] == shas[3] for s in d["skipped"])   # c4 (no tests/t.py) is skipped, never bad


def test_a_git_hooks_git_dir_does_not_point_the_runs_at_the_checkout(user, tmp_path):
    """Run from a git hook or `git rebase -x`, bisectk inherits GIT_DIR, GIT_WORK_TREE and
    GIT_INDEX_FILE naming the user's checkout. A subject's own git (a build's `git describe`, a
    test calling git) then read the checkout's HEAD in every run, not its commit's."""
    r, c = user
    seen = tmp_path / "heads.txt"
    (r / "head.sh").write_text(f'#!/bin/sh\necho "$(git rev-parse HEAD) $(cat hello)" >> {seen}\n! test -f bug\n')
    (r / "head.sh").chmod(0o755)
    before = snapshot(r)
    env = {"GIT_DIR": str(r / ".git"), "GIT_WORK_TREE": str(r), "GIT_INDEX_FILE": str(r / ".git" / "index")}
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./head.sh", env=env, check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    rows = [line.split(" ", 1) for line in seen.read_text().splitlines()]
    assert rows and all(sha in c.values() and text == f"Hello {list(c.values()).index(sha) + 1}"
                        for sha, text in rows), rows
    assert {sha for sha, _ in rows} != {git(r, "rev-parse", "HEAD")}
    assert snapshot(r) == before


@pytest.mark.parametrize("work_tree", [False, True])
def test_a_git_dir_set_outside_the_repository_names_the_repo_to_give(user, tmp_path, work_tree):
    """`GIT_DIR=~/r/.git git bisect ...` typed in another directory works for git, which follows
    GIT_DIR. bisectk drops it (its runs' git must see their worktrees), and said only ". is not
    inside a git repository": the line now says GIT_DIR was set and not followed, with the --repo
    to give; that --repo finds git's answer."""
    r, c = user
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(r / ".git"), **({"GIT_WORK_TREE": str(r)} if work_tree else {})}
    p = bisectk("bisect", "--good", c["c1"], "--bad", "main", "--run", str(r / "test.sh"), cwd=elsewhere, env=env,
                timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"GIT_DIR={r / '.git'} in your environment is not followed" in p.stderr
    assert p.stderr.rstrip().endswith(f"give --repo {r}"), p.stderr
    d = json.loads(bisectk("bisect", "--json", "--repo", str(r), "--good", c["c1"], "--bad", "main", "--run",
                           str(r / "test.sh"), cwd=elsewhere, env=env, check=0, timeout=120).stdout)
    assert d["first_bad"]["sha"] == c["c5"]


@pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("cc")), reason="cmake and a C compiler are needed")
def test_a_cmake_build_of_the_checkout_in_the_command_is_refused_with_what_to_write(tmp_path):
    """`git bisect run sh -c 'cmake --build ../build && ../build/t'` works: git moves the checkout
    the build directory was configured on. Each bisectk commit is a worktree of its own, so the
    same command built the user's checkout every time (or missed ../build) and the endpoints were
    "good fails too". It is refused, naming the directory; the per-worktree build it suggests finds
    the commit."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 9):
        main = f'#include <stdio.h>\nint main(void) {{ int v = {i}; printf("v=%d\\n", v); return v < 5 ? 0 : 1; }}\n'
        shas.append(commit(r, f"c{i}", {"main.c": main, ".gitignore": "build/\n",
                                        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(t C)\n"
                                                          "add_executable(t main.c)\n"}))
    subprocess.run(["cmake", "-S", str(r), "-B", str(tmp_path / "build")], check=True, capture_output=True)
    before = snapshot(r)
    for cmd in ("sh -c 'cmake --build ../build && ../build/t'", str(tmp_path / "build" / "t")):
        p = run(r, "--good", shas[0], "--run", cmd, check=2)
        assert f"names {tmp_path / 'build'}, a CMake build directory of your checkout" in p.stderr, p.stderr
    d = jrun(r, "--good", shas[0], "--build", "cmake -S . -B build", "--run", "sh -c 'cmake --build build && build/t'")
    assert d["first_bad"]["sha"] == shas[4]
    assert snapshot(r) == before
    # the user's own build/ inside the checkout, configured on it (ignored): the same relative
    # command reads each worktree's build/, and is not refused
    subprocess.run(["cmake", "-S", str(r), "-B", str(r / "build")], check=True, capture_output=True)
    d = jrun(r, "--good", shas[0], "--build", "cmake -S . -B build", "--run", "sh -c 'cmake --build build && build/t'",
             "--fresh")
    assert d["first_bad"]["sha"] == shas[4]
    p = run(r, "--good", shas[0], "--run", str(r / "build" / "t"), check=2)     # by its absolute path: the checkout's
    assert f"names {r / 'build'}, a CMake build directory of your checkout" in p.stderr, p.stderr


def test_first_parent_with_a_good_on_a_merged_branch_answers_as_git(hist, tmp_path):
    """`git bisect start --first-parent BAD GOOD` where GOOD is a commit of a branch merged into
    the mainline: git bisects the chain's commits GOOD does not reach. bisectk refused it ("not
    on the first-parent chain")."""
    base, c = hist
    r = tmp_path / "r"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    git(r, "checkout", "-q", "-b", "feat", c["c3"])
    feat = [commit(r, f"feat{i}", {f"feat{i}.txt": f"{i}\n"}) for i in (1, 2)]
    git(r, "checkout", "-q", "main")
    git(r, "-c", "user.name=K", "-c", "user.email=k@example.com", "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    bad = commit(r, "after merge", {"later.txt": "x\n"})
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    before = snapshot(r)
    d = jrun(r, "--first-parent", "--good", feat[0], "--bad", bad, "--run", "./test.sh")
    expected = git(r, "rev-list", "--first-parent", "--reverse", bad, f"^{feat[0]}").split()
    assert d["first_bad"]["sha"] == c["c5"] and c["c5"] in expected and c["c3"] not in expected
    assert snapshot(r) == before
    subprocess.run(["git", "bisect", "start", "--first-parent", bad, feat[0]], cwd=r, capture_output=True, check=True)
    out = subprocess.run(["git", "bisect", "run", "./test.sh"], cwd=r, capture_output=True, text=True).stdout
    subprocess.run(["git", "bisect", "reset"], cwd=r, capture_output=True)
    assert f"{c['c5']} is the first bad commit" in out, out[-1500:]      # real git, after bisectk


@pytest.mark.skipif(os.geteuid() != 0, reason="root in another user's repository")
def test_root_in_another_users_repository_leaves_nothing_of_roots_in_its_git_dir(hist, tmp_path):
    """A CI container's root bisecting a checkout of another uid (declared safe to git): what it
    writes in that .git (the worktree's admin directory, the ledger) is given to the owner, whose
    own `git gc` could no longer write there; a second command still reads it as root."""
    base, c = hist
    r = tmp_path / "theirs"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    subprocess.run(["chown", "-R", "54321:54321", str(r)], check=True)
    (tmp_path / "gitconfig").write_text(f"[safe]\n\tdirectory = {r}\n")
    env = {"GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}
    for _ in range(2):
        p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh", "--fresh", check=0, env=env)
        assert f"first bad commit: {c['c5']}" in p.stdout
        mine = [str(p) for p in (r / ".git").rglob("*") if p.lstat().st_uid == 0]
        assert mine == []


def test_a_script_that_breaks_its_worktrees_git_link_is_unresolved_there_and_the_search_goes_on(user, hist, tmp_path):
    """A test script that removes its worktree's .git file, or rewrites it to name the user's
    .git, on some commits (c3, c6): those runs are UNRESOLVED (infra) and skipped around, each
    worktree is made again, and the answer is git's; no git command of bisectk's reaches the
    user's HEAD, index or their own bisection through the rewritten file."""
    r, c = user
    script = tmp_path / "breaks.sh"
    script.write_text("#!/bin/sh\ncase \"$(cat hello)\" in\n"
                      "  'Hello 3') rm -f .git ;;\n"
                      f"  'Hello 6') echo 'gitdir: {r / '.git'}' > .git ;;\nesac\n! test -f bug\n")
    script.chmod(0o755)
    before = snapshot(r)
    d = jrun(r, "--good", c["c1"], "--bad", "main", "--run", str(script), "--fresh")
    assert d["first_bad"]["sha"] == c["c5"] == git_bisect(hist, tmp_path, ["main", c["c1"]], ["./test.sh"])
    broken = [t for t in d["tested"] if t["sha"] in (c["c3"], c["c6"])]
    assert broken and all(t["unresolved"] and not t["pass"] and not t["fail"] for t in broken), d["tested"]
    assert snapshot(r) == before
    # the next command finds the worktrees intact
    assert jrun(r, "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--fresh")["first_bad"]["sha"] == c["c5"]
    assert snapshot(r) == before


def test_triage_takes_the_pathspec_as_bisect_does(user, hist, tmp_path):
    """`triage ... -- PATHS`: the bisection's candidates are the commits touching the paths, as
    `git bisect start BAD GOOD -- PATHS` has them (d/f0: c2, c4, c6, c8; git names c6), read from
    where it is typed; the culprit's hunks are that commit's; the user's checkout is untouched."""
    r, c = user
    before = snapshot(r)
    p = bisectk("triage", "--json", "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--", "d/f0",
                cwd=r, check=1, timeout=120)
    d = json.loads(p.stdout)
    theirs = git_bisect(hist, tmp_path, ["main", c["c1"], "--", "d/f0"], ["./test.sh"])
    assert d["first_bad"]["sha"] == theirs == c["c6"]
    assert d["bisect"]["paths"] == ["d/f0"] and d["bisect"]["commits"] == 4
    p = bisectk("triage", "--json", "--good", c["c1"], "--bad", "main", "--run", "sh -c '! test -f ../bug'", "--", "f0",
                cwd=r / "d", check=1, timeout=120)          # typed in d/: f0 is d/f0
    assert json.loads(p.stdout)["first_bad"]["sha"] == c["c6"]
    log = bisectk("log", "--repo", str(r), cwd=r, check=0).stdout
    assert log.splitlines()[1].endswith(" -- d/f0")         # the log replays the same range
    p = bisectk("triage", "--good", c["c1"], "--bad", "main", "--run", "./test.sh", "--", "nowhere/", cwd=r)
    assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and "nowhere/" in p.stderr
    assert snapshot(r) == before


def test_make_test_skips_a_commit_without_the_makefile_as_a_missing_script_is(tmp_path):
    """`--run 'make test'` where the Makefile was gone for a while: make exits 2 there ("No rule to
    make target"), which the git protocol reads as bad, so the answer was that commit. The makefile
    is a file the command runs: a commit without it is skipped, as git's 125."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    make = "test:\n\t! test -f bug\n"
    shas = [commit(r, "c1", {"Makefile": make, "a": "1\n"})]
    shas.append(commit(r, "c2 drops the Makefile", {"Makefile": None}))
    shas += [commit(r, f"c{i}", {"a": f"{i}\n"}) for i in (3, 4, 5)]
    shas.append(commit(r, "c6 brings it back", {"Makefile": make}))
    shas.append(commit(r, "c7 the bug", {"bug": "x\n"}))
    shas += [commit(r, f"c{i}", {"a": f"{i}\n"}) for i in (8, 9)]
    p = bisectk("bisect", "--repo", r, "--good", shas[0], "--bad", shas[-1], "--run", "make test", "--json",
                cwd=r, timeout=300, check=None)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["first_bad"]["sha"] == shas[6], (p.returncode, doc.get("first_bad"), p.stderr[-1500:])
    without = set(shas[1:5])
    assert {c["sha"] for c in doc["skipped"]} and {c["sha"] for c in doc["skipped"]} <= without, doc["skipped"]
    assert git(r, "status", "--porcelain") == "" and git(r, "rev-parse", "HEAD") == shas[-1]


def test_an_ambiguous_ref_is_read_as_git_reads_it_and_said(user, hist, tmp_path):
    """A tag and a branch of one name (`amb`), or a branch named like an abbreviated sha: git
    reads the tag (the ref before the sha) and warns `refname 'amb' is ambiguous`; bisectk read it
    the same way without a word, so a user who meant the branch got an answer for another range at
    exit 0. It is read as git reads it, and a warning names what was taken and what was not."""
    r, c = user
    git(r, "tag", "amb", c["c2"])
    git(r, "branch", "amb", c["c4"])
    short = c["c8"][:7]
    git(r, "branch", short, c["c6"])
    before = snapshot(r)
    p = run(r, "--good", "amb", "--bad", c["c8"], "--run", "./test.sh", check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    assert "2 candidate" not in p.stdout and "6 candidate commits" in p.stdout    # c2's range, as git reads it
    warned = [line for line in p.stderr.splitlines() if "ambiguous" in line]
    assert len(warned) == 1 and warned[0].startswith("bisectk: warning: --good amb is ambiguous"), p.stderr
    assert f"refs/tags/amb ({c['c2'][:10]})" in warned[0] and f"refs/heads/amb ({c['c4'][:10]})" in warned[0]
    # a branch named like the abbreviated sha the user typed: git takes the branch
    p = run(r, "--good", c["c1"], "--bad", short, "--run", "./test.sh", check=0)
    warned = [line for line in p.stderr.splitlines() if "ambiguous" in line]
    assert len(warned) == 1 and f"--bad {short} is ambiguous" in warned[0], p.stderr
    assert f"refs/heads/{short} ({c['c6'][:10]})" in warned[0] and f"the commit {c['c8'][:10]}" in warned[0]
    assert "5 candidate commits" in p.stdout       # c1..c6: the branch, as git reads it
    # plain names say nothing
    p = run(r, "--good", c["c1"][:8], "--bad", "main", "--run", "./test.sh", check=0)
    assert "ambiguous" not in p.stderr
    assert snapshot(r) == before
    # a branch named HEAD (git branch refuses the name; update-ref makes it): --bad's default
    git(r, "update-ref", "refs/heads/HEAD", c["c2"])
    p = run(r, "--good", c["c1"], "--run", "./test.sh", check=0)
    warned = [line for line in p.stderr.splitlines() if "ambiguous" in line]
    assert len(warned) == 1 and f"git reads it as HEAD ({c['c8'][:10]})" in warned[0], p.stderr
    assert f"refs/heads/HEAD ({c['c2'][:10]})" in warned[0]


def test_a_script_in_an_untracked_directory_of_the_users_runs_there_in_every_commit(user, tmp_path):
    """`mkdir mine && cd mine && git bisect run ./t.sh`: the user's own directory, in no commit,
    stays in the checkout at every commit git checks out, so the script runs there. bisectk copied
    the script into each worktree at mine/t.sh, but first skipped every commit whose tree lacks
    mine/ -- every commit: 'the good configuration cannot be tested' (exit 2). A directory the
    --bad commit lacks is the user's own; the copy makes it in each worktree. A tracked directory
    that an older commit lacks is still skipped there (test_a_command_typed_in_a_subdirectory...)."""
    r, c = user
    (r / "mine").mkdir()
    (r / "mine" / "t.sh").write_text("#!/bin/sh\n! test -f ../bug\n")
    (r / "mine" / "t.sh").chmod(0o755)
    before = snapshot(r)
    p = bisectk("bisect", "--good", c["c1"], "--bad", c["c8"], "--run", "./t.sh", cwd=r / "mine", check=0, timeout=120)
    assert f"first bad commit: {c['c5']}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert "; 0 skipped;" in p.stdout
    assert snapshot(r) == before


def test_a_test_that_checks_out_a_branch_leaves_no_worktree_holding_it(user, tmp_path):
    """A test that runs `git checkout side` in its worktree (a script that looks at another
    branch) left bisectk's cached worktree on the user's branch when the command ended: git then
    refused the user `git checkout side`, `git branch -f side` and `git branch -D side` ('already
    checked out at .../bisectk/worktrees/...') until the worktree was next used, where under git
    bisect run `git bisect reset` gives the branch back. A worktree let go by a run is detached at
    the commit the branch is at; the branch is not moved."""
    r, c = user
    (tmp_path / "t.sh").write_text("#!/bin/sh\n! test -f bug; ok=$?\ngit checkout -q side 2>/dev/null\nexit $ok\n")
    (tmp_path / "t.sh").chmod(0o755)
    before = snapshot(r)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", str(tmp_path / "t.sh"), check=0)
    assert f"first bad commit: {c['c5']}" in p.stdout
    held = [w for w in git(r, "worktree", "list", "--porcelain").split("\n\n") if "branch refs/heads/side" in w]
    assert held == [], held
    assert snapshot(r) == before
    git(r, "branch", "-f", "side", c["side1"])      # git lets the user move it: no worktree holds it


def test_a_post_checkout_hook_that_git_bisect_would_run_is_said(user, tmp_path):
    """`git bisect` checks each commit out with the user's hooks on, so a post-checkout hook
    (generated code, a vendored tool, hooks that core.hooksPath names) runs at every commit it
    tests; bisectk's checkouts run no hook. A test that needed what the hook makes failed on both
    endpoints ('the good configuration fails too') with no word of the hook. The first lines say
    that the hook does not run in the worktrees, and what to do instead."""
    r, c = user
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh", check=0)
    assert "post-checkout" not in p.stdout + p.stderr
    hooks = tmp_path / "myhooks"
    hooks.mkdir()
    (hooks / "post-checkout").write_text("#!/bin/sh\ntouch generated.h\n")
    (hooks / "post-checkout").chmod(0o755)
    git(r, "config", "core.hooksPath", str(hooks))
    before = snapshot(r)
    p = run(r, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh", check=0)
    said = [line for line in p.stdout.splitlines() if "post-checkout" in line]
    assert len(said) == 1 and str(hooks / "post-checkout") in said[0] and "--build" in said[0], p.stdout
    assert f"first bad commit: {c['c5']}" in p.stdout
    assert snapshot(r) == before
    assert not list(r.glob("generated.h"))


def test_the_repo_to_give_under_a_latin1_name_pastes_into_sh(tmp_path):
    """GIT_DIR set outside a repository whose directory's name is not UTF-8 (b'r\\xe9po'): the line
    said `give --repo '/.../r\\xe9po'`, which pasted names no directory. The suggested words, run in
    sh, are the directory's real bytes."""
    r = Path(os.fsdecode(bytes(tmp_path) + b"/r\xe9po"))
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    commit(r, "c1", {"v": "1\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--good", "HEAD", "--bad", "HEAD", "--run", "true"],
                       cwd=elsewhere, env={**os.environ, "GIT_DIR": os.fsencode(r / ".git")}, capture_output=True,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    given = p.stderr.decode().rstrip().split("give --repo ", 1)[1]
    words = subprocess.run(["sh", "-c", f"set -- {given}\nprintf '%s' \"$1\""], capture_output=True, check=True).stdout
    assert words == os.fsencode(r), (p.stderr, words)
