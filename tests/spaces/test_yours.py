"""spaces/yours.py and WorktreePool.carry: the user's files copied into a commit's worktree at
their paths (mode kept), removed when the lease ends and after a killed command, never written
outside the worktree; the untracked files beside a script, bounded."""

from __future__ import annotations

from bisectk.spaces import yours
from bisectk.spaces.runfiles import resolve_commands
from bisectk.spaces.worktrees import WorktreePool
from bisectk.spaces.yours import Carried, beside, digest, place, taken
from tests.spaces.test_commits import fingerprint, git, repo  # noqa: F401  (repo: a fixture)
from tests.spaces.test_worktrees import chain


def test_a_lease_carries_the_users_file_and_its_end_removes_it(repo):
    rng = chain(repo)
    (repo / "t.sh").write_text("#!/bin/sh\nexit 0\n")
    (repo / "t.sh").chmod(0o750)
    (repo / ".git" / "info" / "exclude").write_text("t.sh\n")     # ignored: `git clean` would leave it
    before = fingerprint(repo)
    mine = [Carried("t.sh", str(repo / "t.sh")), Carried("sub/dir/x.py", str(repo / "t.sh")),
            Carried("state.txt", str(repo / "t.sh"))]                # replaces a tracked file
    with WorktreePool(repo, size=1) as pool:
        entry = pool.acquire(rng[2])
        assert pool.carry(entry, mine) is None
        wt = entry.path
        assert (wt / "t.sh").read_text() == "#!/bin/sh\nexit 0\n" and (wt / "t.sh").stat().st_mode & 0o777 == 0o750
        assert (wt / "sub" / "dir" / "x.py").exists() and (wt / "state.txt").read_text().startswith("#!")
        pool.release(entry, rng[2])
        assert not (wt / "t.sh").exists() and not (wt / "sub").exists() and not entry.note.exists()
        with pool.lease(rng[2]) as again:           # the same commit: its tracked file checked out again
            assert again == wt and (wt / "state.txt").read_text() == "2\n"
        # a killed command's copies: its note names them, and the next lease removes them
        entry = pool.acquire(rng[2])
        assert pool.carry(entry, mine[:1]) is None
        left = entry.note.read_text()
        pool.release(entry, rng[2])
        (wt / "t.sh").write_text("stale\n")
        entry.note.write_text(left)
        with pool.lease(rng[2]) as again:
            assert not (again / "t.sh").exists() and not entry.note.exists()
    assert fingerprint(repo) == before


def test_a_copy_is_never_written_through_a_link_out_of_the_tree(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "out").symlink_to(outside)
    (tree / "d").mkdir()
    (tree / "d" / "x.py").mkdir()                  # the commit has a directory where the file goes
    src = tmp_path / "t.py"
    src.write_text("print(1)\n")
    written, made, why = place(tree, [Carried("out/t.py", str(src))])
    assert written == [] and "leads out of the commit's tree" in why and not (outside / "t.py").exists()
    written, made, why = place(tree, [Carried("d/x.py", str(src))])
    assert "a directory at d/x.py" in why and (tree / "d" / "x.py").is_dir()


def test_the_untracked_files_beside_a_script_are_bounded_and_ignored_ones_never_go(repo, monkeypatch):
    rng = chain(repo)
    (repo / "tools").mkdir()
    for name in ("t.sh", "helper.sh", "lib.py"):
        (repo / "tools" / name).write_text(f"# {name}\n")
    (repo / "tools" / "deeper").mkdir()
    (repo / "tools" / "deeper" / "no.sh").write_text("\n")          # a subdirectory's: not copied
    (repo / "tools" / "build.o").write_text("\n")
    (repo / ".gitignore").write_text("*.o\n")                        # ignored: a build output, not copied
    _, _, files = resolve_commands("./tools/t.sh", None, user_cwd=repo, root=repo, commit=rng[-1])
    assert [(f.word, f.state, f.copy) for f in files] == [
        ("./tools/t.sh", "untracked", "tools/t.sh"),
        ("tools/helper.sh", "untracked, beside ./tools/t.sh", "tools/helper.sh"),
        ("tools/lib.py", "untracked, beside ./tools/t.sh", "tools/lib.py")]
    monkeypatch.setattr(yours, "MAX_BESIDE", 1)
    _, _, files = resolve_commands("./tools/t.sh", None, user_cwd=repo, root=repo, commit=rng[-1])
    assert [(f.use, f.copy) for f in files] == [("yours", "tools/t.sh"), ("left", "")]
    assert files[1].state.startswith("2 untracked files beside it") and "none is copied" in files[1].state
    assert beside(repo, ["tools/t.sh"])[1] == (2, len("# helper.sh\n") + len("# lib.py\n"))


def test_the_copies_are_taken_once_and_their_digest_changes_with_content_and_mode(tmp_path):
    """The bytes are read at the command's start: a script edited while the search runs does not
    reach the later leases (the memo key holds the first content), and the digest moves with an
    edit or a chmod."""
    f = tmp_path / "t.sh"
    f.write_text("a\n")
    one = taken([Carried("t.sh", str(f))])
    f.chmod(0o755)
    two = taken([Carried("t.sh", str(f))])
    f.write_text("b\n")
    assert len({digest(one), digest(two), digest(taken([Carried("t.sh", str(f))]))}) == 3
    tree = tmp_path / "tree"
    tree.mkdir()
    assert place(tree, two) == (["t.sh"], [], None)
    assert (tree / "t.sh").read_text() == "a\n" and (tree / "t.sh").stat().st_mode & 0o777 == 0o755
    f.chmod(0o4755)                 # the permission bits go; a setuid bit never does
    assert taken([Carried("t.sh", str(f))])[0].mode == 0o755


def test_beside_a_script_git_ignores_its_ignored_helpers_go_too(repo):
    """A script kept in an ignored directory (`local/`) with its helper: git bisect run finds the
    helper beside it; the ignored files beside a tracked or merely untracked script stay behind."""
    rng = chain(repo)
    (repo / ".gitignore").write_text("local/\n*.o\n")
    (repo / "local").mkdir()
    for name in ("t.sh", "helper.sh"):
        (repo / "local" / name).write_text(f"# {name}\n")
    (repo / "local" / "cache").mkdir()                                # a directory: never walked
    (repo / "local" / "cache" / "x").write_text("\n")
    _, _, files = resolve_commands("./local/t.sh", None, user_cwd=repo, root=repo, commit=rng[-1])
    assert [(f.copy, f.state) for f in files] == [("local/t.sh", "untracked"),
                                                   ("local/helper.sh", "untracked, beside ./local/t.sh")]
    (repo / "t.sh").write_text("# t\n")
    (repo / "k.o").write_text("\n")
    _, _, files = resolve_commands("./t.sh", None, user_cwd=repo, root=repo, commit=rng[-1])
    assert "k.o" not in [f.copy for f in files] and ("t.sh", "untracked") in [(f.copy, f.state) for f in files]


def test_copies_a_run_left_alone_cost_the_next_lease_no_clean_and_a_runs_writes_are_still_found(repo, monkeypatch):
    """The copy and its removal are bisectk's own writes: a run that wrote nothing leaves the tree
    as its checkout did, and the next lease of the commit skips `git clean` (the watch's fast
    path, spaces/dirwatch.py) as without copies; a run that wrote a file is still cleaned up."""
    from bisectk.spaces import worktrees
    rng = chain(repo)
    (repo / "t.sh").write_text("exit 0\n")
    mine = [Carried("t.sh", str(repo / "t.sh")), Carried("new/x.sh", str(repo / "t.sh"))]
    calls = []
    real = worktrees.run_git
    monkeypatch.setattr(worktrees, "run_git", lambda cwd, *a: calls.append(a) or real(cwd, *a))
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[3]):
            pass
        entry = pool.acquire(rng[3])
        if entry.watch is None or not entry.watch.sound:
            pool.release(entry, rng[3])
            return                          # no inotify here: every lease checks the slow way
        assert pool.carry(entry, mine) is None
        pool.release(entry, rng[3])
        calls.clear()
        entry = pool.acquire(rng[3])
        assert not [a for a in calls if "clean" in a] and not (entry.path / "t.sh").exists()
        assert pool.carry(entry, mine) is None
        (entry.path / "out.log").write_text("a run's output\n")
        pool.release(entry, rng[3])
        with pool.lease(rng[3]) as wt:
            assert not (wt / "out.log").exists() and not (wt / "new").exists()


def test_an_untracked_conftest_above_a_tracked_test_goes_with_it(repo):
    """`--pytest tests/test_k.py` with the test tracked (each commit's own) and an untracked
    conftest.py of the user's above it: pytest in the checkout loads it under git bisect run, so
    it is copied; a tracked conftest is each commit's own, and a directory node id counts too."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_k.py").write_text("def test_k():\n    pass\n")
    git(repo, "add", "tests/test_k.py")
    git(repo, "commit", "-q", "-m", "test")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "conftest.py").write_text("# mine\n")
    for words in (["tests/test_k.py::test_k", "-q"], ["tests"]):
        _, _, files = resolve_commands(None, None, user_cwd=repo, root=repo, commit=head, pytest=words)
        assert [(f.use, f.copy) for f in files if f.use == "yours"] == [("yours", "conftest.py")], (words, files)
    _, _, files = resolve_commands(None, None, user_cwd=repo / "tests", root=repo, commit=head, pytest=["test_k.py"])
    assert [(f.word, f.copy) for f in files if f.use == "yours"] == [("../conftest.py", "conftest.py")]
