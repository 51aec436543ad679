"""spaces/command.py and spaces/checkout.py: --run's relative paths, where it runs and the pathspec,
resolved as a git user means them."""
import shlex
import sys
from pathlib import Path

import pytest

from bisectk.errors import BisectkError
from bisectk.spaces.checkout import pathspec_of, run_dir
from bisectk.spaces.command import resolve_command
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git  # noqa: E402


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "r"
    (r / "tools").mkdir(parents=True)
    (r / "tools" / "check.sh").write_text("exit 0\n")
    (r / "run.sh").write_text("exit 0\n")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "one")
    return r, git(r, "rev-parse", "HEAD")


def resolve(text, cwd, r, sha):
    return resolve_command(text, "--run", user_cwd=cwd, root=r, commit=sha)


def test_untracked_modified_tracked_and_path_programs(repo, tmp_path):
    r, sha = repo
    (r / "mine.sh").write_text("exit 1\n")
    line, files = resolve("./mine.sh", r, r, sha)       # copied into each commit's tree, run from there as typed
    assert line == "./mine.sh" and [(f.use, f.state, f.copy) for f in files] == [("yours", "untracked", "mine.sh")]
    (r / "run.sh").write_text("exit 3\n")                       # modified: the user's copy runs
    line, files = resolve("sh run.sh", r, r, sha)
    assert line == "sh run.sh" and (files[0].state, files[0].copy, files[0].runs) == ("modified", "run.sh", True)
    line, files = resolve_command("./mine.sh", "--run", user_cwd=r, root=r, commit=sha, copy=False)
    assert shlex.split(line) == [str(r / "mine.sh")] and files[0].copy == ""    # a remote executor: by its path
    (r / ".git" / "t.sh").write_text("exit 0\n")        # kept in .git/ to stay out of every checkout: no tree
    line, files = resolve(".git/t.sh", r, r, sha)          # can hold a copy there; git bisect runs it from there
    assert shlex.split(line) == [str(r / ".git" / "t.sh")] and files[0].copy == ""
    line, files = resolve("./tools/check.sh --fast", r, r, sha)    # the same as the tree's: each commit's own
    assert line == "./tools/check.sh --fast" and (files[0].use, files[0].state) == ("tree", "tracked")
    line, files = resolve("python -c 'print(1)'", r, r, sha)    # a program on PATH, a non-path argument
    assert line == "python -c 'print(1)'" and files == []


def test_a_script_unmodified_since_head_runs_each_commits_copy_though_bad_holds_an_older_one(repo):
    """--bad older than HEAD: the user's tracked script is HEAD's, newer than --bad's. It is not
    modified, so each commit's own copy runs (git bisect's checkout moves it); an edit since HEAD
    makes it the user's."""
    r, old = repo
    (r / "run.sh").write_text("exit 2\n")
    git(r, "commit", "-q", "-am", "two")
    line, files = resolve("./run.sh", r, r, old)
    assert line == "./run.sh" and (files[0].use, files[0].state) == ("tree", "tracked")
    (r / "run.sh").write_text("exit 4\n")
    line, files = resolve("./run.sh", r, r, old)
    assert line == "./run.sh" and (files[0].use, files[0].state, files[0].copy) == ("yours", "modified", "run.sh")


def test_a_script_git_tracked_at_good_or_at_head_but_not_at_bad_is_said_deleted_not_untracked(repo):
    """The user's copy runs (the --bad commit lacks the file), but the report says what happened:
    tracked at --good and deleted on the way, or tracked at HEAD (newer than --bad); "untracked"
    only for a file git never had at either end or at HEAD."""
    r, good = repo
    git(r, "rm", "-q", "--cached", "run.sh")            # deleted by the next commit, the user's copy kept
    git(r, "commit", "-q", "-m", "drop run.sh")
    bad = git(r, "rev-parse", "HEAD")
    line, files = resolve_command("./run.sh", "--run", user_cwd=r, root=r, commit=bad, olds=[good])
    assert line == "./run.sh" and (files[0].use, files[0].copy) == ("yours", "run.sh")
    assert files[0].state == f"deleted: tracked at {good[:10]}, not at {bad[:10]}"
    _, files = resolve_command("./run.sh", "--run", user_cwd=r, root=r, commit=bad, olds=["main~1"])
    assert files[0].state == f"deleted: tracked at {good[:10]}, not at {bad[:10]}"    # a ref named the good
    git(r, "add", "run.sh")                            # HEAD tracks it again; --bad is the commit without it
    git(r, "commit", "-q", "-m", "run.sh back")
    _, files = resolve_command("./run.sh", "--run", user_cwd=r, root=r, commit=bad, olds=[bad])
    assert (files[0].use, files[0].state) == ("yours", f"tracked at HEAD, not at {bad[:10]}")
    (r / "new.sh").write_text("exit 0\n")
    _, files = resolve_command("./new.sh", "--run", user_cwd=r, root=r, commit=bad, olds=[good])
    assert files[0].state == "untracked"


def test_subdirectory_spaces_and_outside(repo, tmp_path):
    r, sha = repo
    line, files = resolve("./check.sh", r / "tools", r, sha)      # typed in tools/: the tree's tools/check.sh,
    assert line == "./check.sh" and (files[0].use, files[0].path) == ("tree", "tools/check.sh")  # run in tools/
    assert run_dir(r / "tools", r) == Path("tools") and run_dir(r, r) == Path(".")
    assert run_dir(tmp_path, r) == Path(".") and run_dir(r / ".git", r) == Path(".")
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "t t.sh").write_text("exit 0\n")
    line, files = resolve("'./t t.sh' 'an arg'", tmp_path / "my dir", r, sha)
    assert shlex.split(line) == [str(tmp_path / "my dir" / "t t.sh"), "an arg"]
    assert files[0].state == "outside the repository"
    line, files = resolve("sh run.sh", tmp_path, r, sha)          # --repo elsewhere, no such file here: the tree's
    assert line == "sh run.sh" and files[0].state == "tracked, not in your directory"
    with pytest.raises(BisectkError, match="--run"):
        resolve("./t.sh 'unclosed", r, r, sha)


def test_a_path_typed_outside_that_climbs_into_the_repository_reads_as_typed_at_its_top(repo, tmp_path):
    """`--repo r --run 'sh r/run.sh'` typed in r's parent: the tree was asked for `r/run.sh`,
    found nothing, and the user's file (HEAD's, for a tracked script) ran by its absolute path on
    every commit. The word names r's run.sh: each commit's own where the user's is the tree's,
    the user's copied into each worktree where it is not (the command runs at the worktree's
    top, run_dir), and its absolute path for an executor elsewhere."""
    r, sha = repo
    line, files = resolve("sh r/run.sh", tmp_path, r, sha)
    assert line == "sh run.sh" and [(f.use, f.path, f.state) for f in files] == [("tree", "run.sh", "tracked")]
    line, files = resolve("r/tools/check.sh", tmp_path, r, sha)
    assert line == "tools/check.sh" and files[0].use == "tree"
    (r / "mine.sh").write_text("exit 1\n")
    line, files = resolve("r/mine.sh", tmp_path, r, sha)       # a program without a slash would be looked up
    assert line == "./mine.sh" and (files[0].use, files[0].state, files[0].copy) == ("yours", "untracked", "mine.sh")
    (r / "run.sh").write_text("exit 3\n")
    line, files = resolve_command("sh r/run.sh", "--run", user_cwd=tmp_path, root=r, commit=sha, copy=False)
    assert shlex.split(line) == ["sh", str(r / "run.sh")] and files[0].state == "modified"


def test_pathspec_as_git_reads_it(repo, tmp_path):
    r, _ = repo
    assert pathspec_of(["check.sh", "../run.sh", "sub/"], r / "tools", r) == ["tools/check.sh", "run.sh", "tools/sub/"]
    assert pathspec_of([":(top)x", ":!tools"], r / "tools", r) == [":(top)x", ":!tools"]
    assert pathspec_of(["tools"], tmp_path, r) == ["tools"]       # typed outside: from the root
    with pytest.raises(BisectkError, match="outside the repository"):
        pathspec_of(["../../x"], r / "tools", r)
    # a name that begins with two dots is inside the repository, as git reads it
    assert pathspec_of(["..data", "...", "tools/..x"], r, r) == ["..data", "...", "tools/..x"]
    assert pathspec_of(["..gen"], r / "tools", r) == ["tools/..gen"]


def test_which_tracked_file_the_command_runs(repo):
    """Only the program, or the file an interpreter runs, is one a commit must have to run the
    command (spaces/revisions.py skips a commit without it); other paths are the script's own
    arguments (`./check.sh bug`: a file the script tests for)."""
    r, sha = repo
    runs = lambda text: [(f.word, f.runs) for f in resolve(text, r, r, sha)[1]]  # noqa: E731
    assert runs("python ./tools/check.sh run.sh") == [("./tools/check.sh", True), ("run.sh", False)]
    assert runs("bash -x tools/check.sh") == [("tools/check.sh", True)]
    assert runs("./tools/check.sh run.sh") == [("./tools/check.sh", True), ("run.sh", False)]
    assert runs("python -m pytest tools/check.sh") == [("tools/check.sh", False)]
    assert runs("sh -c ./run.sh") == [("./run.sh", True)]     # the script's program: a commit needs it


def test_a_tracked_symlink_unmodified_is_each_commits_own(repo):
    """A symlink the tree tracks is its target's path, not its target's bytes: an unmodified one
    (`./t -> tools/check.sh`, an argument `link -> data`) is each commit's own, as git bisect's
    checkout moves it. It was compared by the content it points to, so it was always "modified"
    and every commit read the user's copy (the answer: "the good configuration fails too")."""
    r, _ = repo
    (r / "t").symlink_to("tools/check.sh")
    (r / "data").write_text("good\n")
    (r / "link").symlink_to("data")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "links")
    sha = git(r, "rev-parse", "HEAD")
    line, files = resolve("./t", r, r, sha)
    assert line == "./t" and (files[0].use, files[0].state) == ("tree", "tracked")
    line, files = resolve("grep -qx good link", r, r, sha)
    assert line == "grep -qx good link" and [(f.word, f.use, f.state) for f in files] == [
        ("link", "tree", "tracked")]
    (r / "link").unlink()
    (r / "link").symlink_to("tools/check.sh")                  # retargeted: the user's link
    line, files = resolve("grep -qx good link", r, r, sha)
    assert line == "grep -qx good link" and (files[0].use, files[0].state, files[0].copy) == ("yours", "modified", "link")


def test_a_file_of_a_submodule_is_each_commits_own_unless_modified_there(tmp_path):
    """`--run "python lib/test.py"` with lib a submodule: the superproject's tree has no blob at
    lib/test.py (a gitlink), so the user's file was taken for an untracked one and every commit
    ran the user's copy, though each commit's worktree checks lib out at the commit it records.
    A file the user's submodule has committed (unmodified there) is each commit's own; an edit
    in the submodule makes it the user's."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "test.py").write_text("print(1)\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(r, "commit", "-q", "-m", "add lib")
    sha = git(r, "rev-parse", "HEAD")
    line, files = resolve("python lib/test.py", r, r, sha)
    assert line == "python lib/test.py" and [(f.use, f.path, f.state) for f in files] == [
        ("tree", "lib/test.py", "tracked")]
    (r / "lib" / "test.py").write_text("print(2)\n")           # edited in the submodule: the user's
    line, files = resolve("python lib/test.py", r, r, sha)
    assert line == "python lib/test.py" and (files[0].state, files[0].copy) == ("modified", "lib/test.py")
    (r / "lib" / "mine.py").write_text("print(3)\n")           # untracked there: the user's
    line, files = resolve("python lib/mine.py", r, r, sha)
    assert line == "python lib/mine.py" and (files[0].state, files[0].copy) == ("untracked", "lib/mine.py")


def test_a_tracked_script_named_through_a_tracked_directory_symlink_is_each_commits_own(repo):
    """`./scripts/check.sh` with `scripts -> tools` tracked: git's tree names the file
    tools/check.sh, so the typed path had no blob and the user's copy was taken for untracked:
    every commit ran HEAD's script, and a stricter check committed since --bad gave a wrong first
    bad commit at exit 0. A directory link the user made themselves (untracked) is copied as the
    link (git bisect run follows it to each commit's files); one by an absolute path, into the
    checkout, leaves the file theirs."""
    r, _ = repo
    (r / "scripts").symlink_to("tools")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "link")
    sha = git(r, "rev-parse", "HEAD")
    line, files = resolve("./scripts/check.sh", r, r, sha)
    assert line == "./scripts/check.sh" and [(f.use, f.path, f.state) for f in files] == [
        ("tree", "scripts/check.sh", "tracked")]
    (r / "mine").symlink_to("tools")         # the user's own link: copied, it leads to each commit's tools/
    line, files = resolve("./mine/check.sh", r, r, sha)
    assert line == "./mine/check.sh" and [(f.use, f.state, f.copy) for f in files] == [("yours", "untracked link", "mine")]
    (r / "away").symlink_to(r / "tools")     # by an absolute path: into the checkout, the user's file
    line, files = resolve("./away/check.sh", r, r, sha)
    assert (files[0].use, files[0].copy) == ("yours", "away/check.sh")


def test_an_absolute_path_into_the_work_tree_is_read_as_git_bisect_run_reads_it(repo, tmp_path):
    """`git bisect run $PWD/tools/check.sh`: git moves the checkout to each commit, so the absolute
    path names each commit's own file. It was left as typed, and the user's checkout's copy (with
    whatever it sources beside it) ran at every commit. Now it is read as the same path typed
    relative to where the command runs: the tree's copy, or the user's copied in; a path outside
    the work tree (or in .git) stays as typed."""
    r, sha = repo
    line, files = resolve(f"{r}/tools/check.sh --fast", r, r, sha)
    assert line == "tools/check.sh --fast" and [(f.word, f.use, f.path, f.state, f.runs) for f in files] == [
        (f"{r}/tools/check.sh", "tree", "tools/check.sh", "tracked", True)]
    line, files = resolve(f"{r}/run.sh", r / "tools", r, sha)      # typed in a subdirectory: relative to it
    assert line == "../run.sh" and (files[0].use, files[0].path) == ("tree", "run.sh")
    (r / "mine.sh").write_text("exit 1\n")
    line, files = resolve(f"sh {r}/mine.sh", r, r, sha)            # untracked: the user's, copied in
    assert line == "sh mine.sh" and (files[0].use, files[0].copy, files[0].word) == ("yours", "mine.sh", f"{r}/mine.sh")
    line, files = resolve(f"{r}/tools/check.sh", tmp_path, r, sha)   # typed outside: the command runs at the root
    assert line == "tools/check.sh" and (files[0].use, files[0].path) == ("tree", "tools/check.sh")
    (r / ".git" / "t.sh").write_text("exit 0\n")
    outside = tmp_path / "elsewhere.sh"
    outside.write_text("exit 0\n")
    for word in (f"{r}/.git/t.sh", str(outside), "/bin/true"):
        line, files = resolve(word, r, r, sha)
        assert line == word and files == [], (word, line, files)


def test_an_absolute_directory_of_the_work_tree_is_read_as_git_bisect_run_reads_it(repo, tmp_path):
    """`sh -c 'grep -rq x /abs/checkout/tools'`, `make -C $PWD`, `sh -c 'cd $PWD/tools && ./check.sh'`:
    under git bisect run these name the checkout, which git moves to each commit. The directory in
    a shell script ended the command with an internal error (IndexError: a rewritten word taken for
    a file); the work tree's root and a `cd` target were left as typed, so every commit ran the
    user's checkout ("the good configuration fails too"). Each is read relative to where the
    command runs, as an absolute file path is."""
    r, sha = repo
    line, files = resolve(f"sh -c 'grep -rq x {r}/tools'", r, r, sha)
    assert shlex.split(line) == ["sh", "-c", "grep -rq x tools"] and files == []
    (r / "mine.sh").write_text("exit 1\n")
    line, files = resolve(f"sh -c './mine.sh {r}/tools'", r, r, sha)      # the file before it stays the user's
    assert shlex.split(line) == ["sh", "-c", "./mine.sh tools"] and [(f.word, f.use) for f in files] == [
        ("./mine.sh", "yours")]
    for typed_in, text, want in ((r, f"make -C {r}", "make -C ."), (r / "tools", f"make -C {r}/", "make -C .."),
                                 (tmp_path, f"make -C {r}", "make -C ."), (tmp_path, "make -C r/tools", "make -C tools"),
                                 (r, f"sh -c 'cd {r}/tools && ./check.sh'", "sh -c 'cd tools && ./check.sh'"),
                                 (r / "tools", f"sh -c 'cd {r} && make'", "sh -c 'cd .. && make'"),
                                 (r, f"sh -c 'cd -P -- {r}/tools && ./check.sh'", "sh -c 'cd -P -- tools && ./check.sh'")):
        line, files = resolve(text, typed_in, r, sha)
        assert shlex.split(line) == shlex.split(want) and files == [], (text, line, files)
    (r / "data").mkdir()            # untracked: the user's own, which git bisect run's checkout keeps
    for typed_in in (r, tmp_path):
        for text in (f"ls {r}/data", f"sh -c 'ls {r}/data'", f"sh -c 'cd {r}/data && ls'"):
            line, files = resolve(text, typed_in, r, sha)
            assert line == text and files == [], (text, line, files)
    (tmp_path / "link").symlink_to(r)     # the checkout by a link ($PWD as the shell keeps it)
    line, files = resolve(f"sh -c 'cd {tmp_path}/link && make'", r, r, sha)
    assert shlex.split(line) == ["sh", "-c", "cd . && make"] and files == [], line
    (r / ".git" / "info" / "exclude").write_text("build/\n")
    (r / "build").mkdir()           # ignored: each worktree's own build directory, never the user's
    line, files = resolve(f"cmake -S {r} -B {r}/build", r, r, sha)
    assert line == "cmake -S . -B build" and files == [], line


def test_a_compiled_program_git_ignores_is_each_commits_build_not_a_file_of_yours(repo):
    """`--build make --run build/k` typed in a checkout where make had run: build/k, which git
    ignores, was taken for the user's untracked file, copied (with build/*.o beside it) into every
    commit's worktree, and make found it up to date there: every commit ran the checkout's binary
    ("the good configuration fails too"). A compiled file git ignores is what each commit's own
    build makes: not copied. An ignored script of the user's (a `local/` of their own) still is."""
    r, sha = repo
    (r / ".gitignore").write_text("build/\nlocal/\n")
    (r / "build").mkdir()
    (r / "build" / "k").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00" + bytes(64))
    (r / "build" / "k.o").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))
    for text in ("build/k", "sh -c 'make && build/k'"):
        line, files = resolve(text, r, r, sha)
        assert line == text and not [f for f in files if f.use == "yours"], files
        assert [(f.word, f.use, f.runs) for f in files] == [("build/k", "built", False)], files
    (r / "local").mkdir()
    (r / "local" / "t.sh").write_text("#!/bin/sh\nexit 0\n")
    line, files = resolve("local/t.sh", r, r, sha)
    assert [(f.use, f.copy) for f in files] == [("yours", "local/t.sh")], files


def test_node_ids_typed_outside_or_by_absolute_path_are_read_where_the_run_is(tmp_path):
    """--pytest's node ids (spaces/command.py node_ids_in_tree): an absolute path into the tree,
    and one typed above the repository, read as typed where the run is; -k's, -m's and -p's
    values are no paths (`-k proj` from above `proj/` stays `-k proj`), nor are options."""
    from bisectk.spaces.command import node_ids_in_tree
    r = tmp_path / "proj"
    (r / "tests").mkdir(parents=True)
    above = node_ids_in_tree(["proj/tests/t.py::x[a b]", "-k", "proj", "-m", "proj", "--co", "tests/t.py"],
                             user_cwd=tmp_path, root=r)
    assert above == ["tests/t.py::x[a b]", "-k", "proj", "-m", "proj", "--co", "tests/t.py"], above
    inside = node_ids_in_tree([f"{r}/tests/t.py::x", "t.py", "-p", f"{r}/plug.py", "/elsewhere/t.py"],
                              user_cwd=r / "tests", root=r)
    assert inside == ["t.py::x", "t.py", "-p", f"{r}/plug.py", "/elsewhere/t.py"], inside
    assert node_ids_in_tree([f"{r}/.git/hooks/t.py"], user_cwd=r, root=r) == [f"{r}/.git/hooks/t.py"]
