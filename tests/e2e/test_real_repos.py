"""End-to-end: repositories as users have them (a directory of their own, a partial clone, ...),
under `bisectk bisect` and `triage`, each compared with what `git bisect run` does there. Every
test also checks that the user's checkout is exactly as it was (spaces/worktrees.py)."""
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git  # noqa: E402

# the bug appears at c4 of six commits: v.txt holds the commit's number
TEST_SH = "#!/bin/sh\nv=$(cat \"$(dirname \"$0\")/v.txt\")\ntest \"$v\" -lt 4\n"


def history(r: Path, n: int = 6) -> list[str]:
    r.mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, n + 1):
        (r / "v.txt").write_text(f"{i}\n")
        git(r, "add", "v.txt")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    return shas


def snapshot(r: Path) -> dict:
    files = {str(p.relative_to(r)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(r.rglob("*")) if p.is_file() and ".git" not in p.relative_to(r).parts}
    dirs = sorted(str(p.relative_to(r)) for p in r.rglob("*") if p.is_dir() and ".git" not in p.relative_to(r).parts)
    g = r / ".git"
    return {"HEAD": (g / "HEAD").read_bytes(), "index": (g / "index").read_bytes(), "files": files, "dirs": dirs,
            "refs": git(r, "for-each-ref", "--format=%(refname) %(objectname)"), "stash": git(r, "stash", "list"),
            "worktrees": git(r, "worktree", "list", "--porcelain").split("\n\n")[0],
            "config": (g / "config").read_bytes()}


def git_bisect_answer(r: Path, good: str, bad: str, cmd: list[str], cwd: Path | None = None) -> str:
    """Real git's first bad commit, run in `cwd` of the checkout `r`, which is left as it was."""
    subprocess.run(["git", "bisect", "start", bad, good], cwd=r, check=True, capture_output=True)
    try:
        p = subprocess.run(["git", "bisect", "run", *cmd], cwd=cwd or r, capture_output=True, text=True)
        first = [line.split()[0] for line in p.stdout.splitlines() if "is the first bad commit" in line]
        return first[0] if first else "NO ANSWER: " + p.stdout + p.stderr
    finally:
        subprocess.run(["git", "bisect", "reset"], cwd=r, check=True, capture_output=True)


def test_a_command_typed_in_an_empty_directory_of_the_users_runs_there_in_every_commit(tmp_path):
    """`mkdir build && cd build && bisectk bisect --run ../test.sh`: the user's own directory is
    in no commit and holds nothing bisectk copies (the script lies above it), so no copy made it
    in the worktrees and every commit was skipped ('the directory build/ is not in this commit's
    tree', exit 2), where git bisect run keeps the directory in the checkout at every commit and
    finds c4. The directory is made in each worktree that lacks it, and removed after the run."""
    r = tmp_path / "r"
    shas = history(r)
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    (r / "build").mkdir()
    before = snapshot(r)
    p = bisectk("bisect", "--good", shas[0], "--bad", shas[-1], "--run", "../test.sh", cwd=r / "build",
                check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert "; 0 skipped;" in p.stdout
    assert snapshot(r) == before
    # git's answer, the command run in build/ (git 2.39 runs `git bisect` at the top level only)
    assert git_bisect_answer(r, shas[0], shas[-1], ["sh", "-c", "cd build && ../test.sh"]) == shas[3]
    # no worktree keeps the directory made for the runs
    trees = [Path(w.split()[1]) for w in git(r, "worktree", "list", "--porcelain").split("\n\n")[1:]]
    assert trees and not any((t / "build").exists() for t in trees)
    # nested, and the same under triage: each exported tree gets it too
    (r / "build" / "a" / "b").mkdir(parents=True)
    p = bisectk("triage", "--good", shas[0], "--bad", shas[-1], "--run", "../../../test.sh",
                cwd=r / "build" / "a" / "b", check=None, timeout=180)
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert "hunk" in p.stdout and "could not" not in p.stdout + p.stderr, p.stdout[-1500:] + p.stderr[-1500:]


def test_a_partial_clone_whose_remote_is_gone_says_which_remote_and_what_to_do(tmp_path):
    """A `git clone --filter=blob:none` fetches each commit's files from its remote at checkout.
    With the remote gone, git bisect stops at its first checkout ('could not fetch ... from
    promisor remote'); bisectk said the same of the good commit, then 'give --good a commit the
    test can run on', which no commit is. The reason now names the partial clone and its remote,
    and says what to do (make it reachable, or a full clone), without the --good advice; nothing
    of the user's changed. With the remote back, the same command finds the first bad commit."""
    origin = tmp_path / "origin"
    shas = history(origin)
    git(origin, "config", "uploadpack.allowfilter", "true")
    r = tmp_path / "r"
    git(tmp_path, "clone", "-q", "--filter=blob:none", origin.as_uri(), str(r))
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    before = snapshot(r)
    origin.rename(tmp_path / "gone")
    p = bisectk("bisect", "--good", shas[0], "--bad", "HEAD", "--run", "./test.sh", cwd=r, check=2, timeout=120)
    problem = [line for line in p.stdout.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1, p.stdout + p.stderr
    assert f"good commit {shas[0][:10]}" in problem[0] and "partial clone" in problem[0], problem[0]
    assert f"remote origin ({origin.as_uri()})" in problem[0] and "make that remote reachable" in problem[0]
    assert "give --good" not in problem[0]
    assert "Traceback" not in p.stderr
    assert snapshot(r) == before
    (tmp_path / "gone").rename(origin)
    p = bisectk("bisect", "--good", shas[0], "--bad", "HEAD", "--run", "./test.sh", cwd=r, check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert git_bisect_answer(r, shas[0], shas[-1], ["./test.sh"]) == shas[3]


def test_a_clone_whose_borrowed_objects_are_gone_says_so_not_that_the_tag_is_no_commit(tmp_path):
    """`git clone --shared` reads its objects from the repository it was cloned from (its
    objects/info/alternates). With that one deleted, git reads no commit (`git bisect start` dies:
    'missing object'), and bisectk said "--good 'v1' is not a commit", which it is: the user looks
    for a typo. It now says the objects are borrowed from a directory that is gone, and what to do."""
    origin = tmp_path / "origin"
    shas = history(origin)
    git(origin, "tag", "v1", shas[0])
    r = tmp_path / "r"
    git(tmp_path, "clone", "-q", "--shared", str(origin), str(r))
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    origin.rename(tmp_path / "gone")
    g = r / ".git"
    before = {p: (g / p).read_bytes() for p in ("HEAD", "index", "config", "packed-refs") if (g / p).exists()}
    for command in ("bisect", "triage"):
        p = bisectk(command, "--good", "v1", "--run", "./test.sh", cwd=r, check=2, timeout=120)
        assert [line for line in p.stderr.splitlines() if line.startswith("bisectk:")] == p.stderr.splitlines()[-1:]
        assert "'v1' cannot be read" in p.stderr and "is not a commit" not in p.stderr, p.stderr
        assert f"borrowed from {origin / '.git' / 'objects'}, which no longer exists" in p.stderr, p.stderr
        assert "put that repository back" in p.stderr and "Traceback" not in p.stderr
    assert {p: (g / p).read_bytes() for p in before} == before
    assert not (g / "worktrees").exists() or list((g / "worktrees").iterdir()) == []
    (tmp_path / "gone").rename(origin)
    p = bisectk("bisect", "--good", "v1", "--run", "./test.sh", cwd=r, check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout


def test_a_good_from_a_history_of_its_own_is_refused_naming_it(tmp_path):
    """`--good refs/notes/commits` (git notes' commits) or an orphan `pages` branch shares no
    commit with --bad. git bisect excludes nothing with it and bisects all of bad's history,
    never running it; bisectk ran it as the good endpoint, saw the test fail in a tree that is not
    the project's, and said 'the good configuration fails too ... the failure does not depend on
    these differences' (exit 2), sending the user after flakiness. Such a good is now refused
    before any run, saying it shares no commit with --bad, and a notes ref as what it is."""
    r = tmp_path / "r"
    shas = history(r)
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    git(r, "notes", "add", "-m", "reviewed", shas[2])
    git(r, "checkout", "-q", "--orphan", "pages")
    git(r, "rm", "-q", "-rf", "--cached", ".")
    (r / "index.html").write_text("page\n")
    git(r, "add", "index.html")
    git(r, "commit", "-q", "-m", "pages")
    (r / "index.html").unlink()
    git(r, "checkout", "-q", "-f", "main")
    before = snapshot(r)
    for good, what in (("refs/notes/commits", "git notes' own history"), ("pages", "a history of its own")):
        for args in (("bisect", "--good", good, "--good", shas[0]), ("triage", "--good", good)):
            p = bisectk(*args, "--run", "./test.sh", cwd=r, check=2, timeout=120)
            assert p.stderr.splitlines()[-1].startswith(f"bisectk: --good {good} ("), p.stderr
            assert f"shares no commit with --bad HEAD ({shas[-1][:10]})" in p.stderr and what in p.stderr, p.stderr
            assert "fails too" not in p.stdout and "Traceback" not in p.stderr
    assert snapshot(r) == before
    # a good that is no ancestor of bad but shares history (a sibling branch) is still taken, as git takes it
    git(r, "branch", "side", shas[1])
    p = bisectk("bisect", "--good", "side", "--run", "./test.sh", cwd=r, check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout


def test_lfs_files_with_git_lfs_configured_but_not_installed_say_what_to_install(tmp_path):
    """`git lfs install` set filter.lfs.* (a shared ~/.gitconfig), but this machine has no git-lfs:
    every checkout of a commit holding a `filter=lfs` file fails, git bisect's as bisectk's. bisectk
    said git's 'smudge filter lfs failed', then 'give --bad a commit the test can run on', which no
    such commit is. It now says git-lfs is not installed and what to do; with the filter no longer
    required (the advice), the pointer files are checked out as stored and the search runs."""
    r = tmp_path / "r"
    shas = history(r)
    (r / ".gitattributes").write_text("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    (r / "w.bin").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "4" * 64 + "\nsize 12\n")
    git(r, "add", ".gitattributes", "w.bin")
    git(r, "commit", "-q", "-m", "weights")
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    missing = "git-lfs-not-installed-here"
    git(r, "config", "filter.lfs.smudge", f"{missing} smudge -- %f")
    git(r, "config", "filter.lfs.required", "true")
    before = snapshot(r)
    p = bisectk("bisect", "--good", shas[0], "--run", "./test.sh", cwd=r, check=2, timeout=120)
    problem = [line for line in p.stdout.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1 and "bad commit" in problem[0], p.stdout + p.stderr
    assert f"{missing} is not installed" in problem[0] and f"install {missing}" in problem[0], problem[0]
    assert "give --bad" not in problem[0] and "Traceback" not in p.stderr
    assert snapshot(r) == before
    git(r, "config", "filter.lfs.required", "false")
    p = bisectk("bisect", "--good", shas[0], "--run", "./test.sh", cwd=r, check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]


def test_git_dir_naming_another_repository_is_refused_not_silently_ignored(tmp_path):
    """`GIT_DIR=~/clean/.git bisectk bisect ...` typed in ~/wip (a clone of the same project):
    git bisects ~/clean, bisectk dropped GIT_DIR and bisected ~/wip, another history than the one
    the user named (here it ran wip's HEAD, where the bug is fixed: 'the bad configuration does not
    reproduce'; where wip still fails, an answer at exit 0 from wip). A GIT_DIR naming another repository is now
    refused, saying which and the --repo to give; one naming the repository typed in (a hook's
    GIT_DIR=.git) runs as before."""
    clean = tmp_path / "clean"
    shas = history(clean)
    wip = tmp_path / "wip"
    git(tmp_path, "clone", "-q", str(clean), str(wip))
    (wip / "v.txt").write_text("1\n")            # wip's own history: the bug is fixed there
    git(wip, "commit", "-q", "-am", "fix")
    test = tmp_path / "test.sh"
    test.write_text("#!/bin/sh\ntest \"$(cat v.txt)\" -lt 4\n")
    test.chmod(0o755)
    before = snapshot(wip)
    p = bisectk("bisect", "--good", shas[0], "--run", str(test), cwd=wip, check=2, timeout=120,
                env={"GIT_DIR": str(clean / ".git")})
    said = p.stderr.splitlines()[-1]
    assert said.startswith(f"bisectk: GIT_DIR={clean / '.git'} in your environment names the repository"), p.stderr
    assert f"give --repo {clean}" in said and "Traceback" not in p.stderr
    assert snapshot(wip) == before
    p = bisectk("bisect", "--good", shas[0], "--bad", shas[-1], "--run", str(test), cwd=clean / "", check=0,
                timeout=120, env={"GIT_DIR": ".git"})
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("make"), reason="needs cc and make")
def test_the_check_from_scratch_runs_the_users_untracked_script_too(tmp_path):
    """A Makefile without header dependencies makes the search name a wrong commit from stale
    objects; bisectk checks the answer once more from scratch (`git clean -x` of the worktree).
    That clean ran after the user's untracked ./check.sh had been copied in, removing it: every run
    from scratch was 'cannot start ./check.sh' (UNRESOLVED), the check saw nothing, and the wrong
    commit was named at exit 0. The worktree is now cleaned before the copy: the named commit
    passes from scratch, so the answer is said to rest on stale outputs (exit 1), as with a
    tracked script (tests/e2e/test_bisect.py)."""
    from tests.e2e.test_bisect import SLOPPY_MAKEFILE, header_history
    r = tmp_path / "repo"
    shas = header_history(r, SLOPPY_MAKEFILE)
    (r / "check.sh").write_text("#!/bin/sh\nexec ./build/t\n")
    (r / "check.sh").chmod(0o755)
    before = snapshot(r)
    p = bisectk("bisect", "--json", "--good", shas[0], "--bad", shas[-1], "--build", "make", "--run", "./check.sh",
                cwd=r, timeout=180)
    out = json.loads(p.stdout)
    assert [pt["fresh"] for pt in out["fresh_build"]["points"]][:1] == ["pass"], out["fresh_build"]
    assert out["first_bad"]["sha"] != shas[4] and out["fresh_build"]["stale"] is True and p.returncode == 1
    assert snapshot(r) == before


def test_a_test_reading_a_submodule_the_checkout_never_cloned_names_the_submodule(tmp_path):
    """A clone made without --recurse-submodules: lib/ is empty in the checkout, and so in each
    worktree (bisectk gives a worktree the submodules the checkout has cloned). A test reading
    lib/v.txt fails on both endpoints, and bisectk said 'the good configuration fails too ... or
    the good side is flaky' (git bisect run there names the first commit after good, at exit 0).
    It now names the submodule and the command that clones it; once cloned, the search finds the
    commit that moved the submodule to the bad version."""
    lib = tmp_path / "lib"
    history(lib)
    sup = tmp_path / "super"
    sup.mkdir()
    git(sup, "init", "-q", "-b", "main")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(sup, "commit", "-q", "-m", "lib at c6")
    shas = [git(sup, "rev-parse", "HEAD")]
    for i in range(5, 0, -1):              # lib walks back: c5 ... c1 (v.txt 5 ... 1)
        git(sup / "lib", "checkout", "-q", "HEAD~1")
        git(sup, "commit", "-q", "-am", f"lib at c{i}")
        shas.append(git(sup, "rev-parse", "HEAD"))
    r = tmp_path / "r"
    git(tmp_path, "clone", "-q", str(sup), str(r))          # lib/ not cloned
    (r / "test.sh").write_text("#!/bin/sh\nv=$(cat lib/v.txt) || exit 9\ntest \"$v\" -gt 3\n")
    (r / "test.sh").chmod(0o755)
    before = snapshot(r)
    p = bisectk("bisect", "--good", shas[0], "--run", "./test.sh", cwd=r, check=2, timeout=120)
    problem = [line for line in p.stdout.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1 and "in the submodule lib/, which your checkout never cloned" in problem[0], p.stdout
    assert "git submodule update --init lib" in problem[0] and "fails too" not in problem[0]
    assert snapshot(r) == before
    git(r, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "lib")
    p = bisectk("bisect", "--good", shas[0], "--run", "./test.sh", cwd=r, check=0, timeout=120)
    assert f"first bad commit: {shas[3]}" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
