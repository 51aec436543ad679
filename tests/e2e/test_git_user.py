"""A seasoned `git bisect` user's moves against bisectk bisect, each with what the user is told."""

from __future__ import annotations

from tests.conftest import bisectk
from tests.e2e.test_interrupts import _counting_repo


def test_resume_after_editing_the_test_script_says_why_it_cannot(tmp_path):
    """A bisection stopped by --max-runs, the test script edited, then --resume: 'git bisect run'
    would go on with the new script over the old marks; bisectk refuses (the runs were another
    test's), and now says that the script it ran has changed since, where it said only 'no
    earlier bisection ... with this subject', as if none had been made."""
    r = _counting_repo(tmp_path, 16)
    (r / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 9 ]\n")
    (r / "t.sh").chmod(0o755)
    args = ("bisect", "--good", "HEAD~15", "--run", "./t.sh")
    bisectk(*args, "--max-runs", "3", cwd=r, check=1)
    (r / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 5 ]\n")
    p = bisectk(*args, "--resume", cwd=r, check=2)
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("bisectk: --resume: no earlier bisection of HEAD~15..HEAD with this subject"), p.stderr
    assert "ran ./t.sh as it was then" in line and "an edited test script is another test" in line, line
    p = bisectk("bisect", "--good", "HEAD~14", "--run", "./t.sh", "--resume", cwd=r, check=2)
    assert "as it was then" not in p.stderr       # another range: no earlier bisection, plainly


def test_a_test_written_for_git_bisect_no_checkout_is_told_to_read_head(tmp_path):
    """A test written for `git bisect start --no-checkout` reads the commit through BISECT_HEAD
    (`git show BISECT_HEAD:v`); bisectk checks each commit out in a worktree, where git has no
    BISECT_HEAD, so both endpoints fail: that was 'the good configuration fails too ... --flaky
    applies'. It is named now, with what to write instead (exit 2)."""
    r = _counting_repo(tmp_path, 8)
    (tmp_path / "t.sh").write_text("#!/bin/sh\nv=$(git show BISECT_HEAD:v) || exit 128\n[ \"$v\" -lt 5 ]\n")
    (tmp_path / "t.sh").chmod(0o755)
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~7", "--run", str(tmp_path / "t.sh"), cwd=tmp_path, check=2)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problem) == 1 and "the test reads BISECT_HEAD" in problem[0] and "write HEAD" in problem[0], p.stdout
    assert "fails too" not in p.stdout
    (tmp_path / "t.sh").write_text("#!/bin/sh\nv=$(git show HEAD:v) || exit 128\n[ \"$v\" -lt 5 ]\n")
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~7", "--run", str(tmp_path / "t.sh"), cwd=tmp_path, check=0)
    assert "first bad commit" in p.stdout and " c5" in p.stdout


def test_replaying_gits_own_log_outside_the_repository_says_to_give_repo(tmp_path):
    """`git bisect log > f` then `bisectk replay f` from elsewhere: git's log names no repository,
    and the line said only '... is not inside a git repository'."""
    import subprocess
    r = _counting_repo(tmp_path, 8)
    subprocess.run(["git", "bisect", "start", "HEAD", "HEAD~7"], cwd=r, check=True, capture_output=True)
    log = tmp_path / "git-bisect.log"
    log.write_text(subprocess.run(["git", "bisect", "log"], cwd=r, check=True, capture_output=True, text=True).stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = bisectk("replay", str(log), cwd=elsewhere, check=2)
    assert p.stderr.strip() == (f"bisectk: {elsewhere} is not inside a git repository: a `git bisect log` names no "
                                "repository; run bisectk replay in the repository, or give --repo"), p.stderr
    p = bisectk("replay", str(log), "--repo", str(r), cwd=elsewhere, check=1)
    assert "next commit to test" in p.stdout


def test_a_good_commit_that_does_not_build_is_named_as_the_commit_it_is(tmp_path):
    """A --build that fails on the good commit: 'the good configuration cannot be tested: UNRESOLVED
    build (build failed: ...)' named no commit; the commit is named, with the build's own words."""
    r = _counting_repo(tmp_path, 8)
    build = tmp_path / "build.sh"
    build.write_text("#!/bin/sh\n[ $(cat v) -gt 1 ] || { echo 'cc: error: too old' >&2; exit 1; }\n")
    build.chmod(0o755)
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~7", "--build", str(build), "--run",
                "sh -c '[ $(cat v) -lt 5 ]'", cwd=tmp_path, check=2)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    from tests.fixtures.gitrepo import git
    c1 = git(r, "rev-parse", "--short=10", "HEAD~7")
    assert len(problem) == 1 and problem[0].startswith(f"problem: the good commit {c1} c1 cannot be tested: build failed"), \
        p.stdout[-1500:]
    assert "too old" in problem[0] and problem[0].endswith("; give --good a commit the test can run on")


def _tracked_check_from_c5(tmp_path):
    """c1..c8 on main with a tracked check.sh that fails from c5, and a file v: the checkout."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(1, 9):
        (r / "check.sh").write_text("#!/bin/sh\nexit %d\n" % (1 if i >= 5 else 0))
        (r / "check.sh").chmod(0o755)
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "check.sh", "v")
        git(r, "commit", "-q", "-m", f"c{i}")
    return r


def test_a_tracked_script_by_its_absolute_path_runs_each_commits_copy_as_under_git(tmp_path):
    """`git bisect run $PWD/check.sh` with check.sh tracked and changed at c5 (it starts failing
    there): git runs each commit's check.sh (the checkout moves), and says c5. bisectk ran the
    user's HEAD copy by its absolute path at every commit: the good endpoint failed too (exit 2);
    with another script the answer could be wrong at exit 0."""
    r = _tracked_check_from_c5(tmp_path)
    p = bisectk("bisect", "--good", "HEAD~7", "--run", str(r / "check.sh"), cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:]
    assert f"command: {r / 'check.sh'} is tracked: each commit's own check.sh runs" in p.stdout


def test_a_cd_into_the_checkout_by_its_absolute_path_tests_each_commit_as_under_git(tmp_path):
    """`--run "sh -c 'cd /abs/checkout && ./check.sh'"` (a CI line, $PWD expanded as typed): git
    bisect run's cd lands in the checkout, which git moves to each commit, and it says c5. bisectk
    left the cd as typed, so every commit ran the user's checkout: 'the good configuration fails
    too' (exit 2); with a checkout whose HEAD passes, 'bad passes'."""
    r = _tracked_check_from_c5(tmp_path)
    p = bisectk("bisect", "--good", "HEAD~7", "--run", f"sh -c 'cd {r} && ./check.sh'", cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:]


def _scripts_repo(tmp_path):
    """c1..c8 with a tracked scripts/check.sh that starts failing at c5 (the script itself changed)."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    (r / "scripts").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    for i in range(1, 9):
        (r / "scripts" / "check.sh").write_text("#!/bin/sh\nexit %d\n" % (1 if i >= 5 else 0))
        (r / "scripts" / "check.sh").chmod(0o755)
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "scripts/check.sh", "v")
        git(r, "commit", "-q", "-m", f"c{i}")
    return r


def test_a_program_found_on_a_path_entry_in_the_checkout_is_each_commits_own(tmp_path):
    """PATH holds a directory of the checkout (direnv's `PATH_add scripts`, `export
    PATH=$PWD/scripts:$PATH`) and the command names a program there by its bare name: `git bisect
    run check.sh` finds, through PATH, the checkout git moves to each commit, so each commit's own
    check.sh runs (c5). bisectk's runs kept the user's PATH, which leads to the checkout's HEAD
    copy at every commit: 'the good configuration fails too' (exit 2); a script changed the other
    way would give a wrong first bad commit at exit 0. A PATH directory git does not track (a
    .venv/bin) stays the user's, as git bisect run leaves it."""
    import os
    r = _scripts_repo(tmp_path)
    venv = r / ".venv" / "bin"      # untracked: left on PATH as it is
    venv.mkdir(parents=True)
    (venv / "helper").write_text("#!/bin/sh\nexit 0\n")
    (venv / "helper").chmod(0o755)
    path = os.pathsep.join([str(r / "scripts"), str(venv), os.environ["PATH"]])
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "sh -c 'helper && check.sh'", cwd=r, check=0,
                env={"PATH": path})
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert (f"PATH: {r / 'scripts'} is in your checkout: each commit's own scripts/ takes its place on the "
            "runs' PATH") in p.stdout, p.stdout
    assert str(venv) not in p.stdout
    # typed outside the repository (--repo), and from a subdirectory: the same answer
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~7", "--run", "check.sh", cwd=tmp_path, check=0,
                env={"PATH": path})
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    # triage: its bisection, and its hunk isolation, whose hybrids' check.sh is found on PATH too
    p = bisectk("triage", "--good", "HEAD~7", "--run", "check.sh", cwd=r, check=1, env={"PATH": path})
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert "culprit hunk(s) of" in p.stdout and "scripts/check.sh:2" in p.stdout, p.stdout[-1500:]


def test_an_untracked_link_to_a_script_leads_where_it_leads_under_git(tmp_path):
    """An untracked link of the user's names the test script: `check -> /home/me/proj/scripts/check.sh`
    (absolute, into the checkout) or `t -> ../tools/t.sh` (relative, to a directory beside the
    checkout). Under git bisect run the first leads to each commit's check.sh (c5), the second to
    the user's t.sh. The link was copied into each worktree as written: the absolute one led every
    commit to the checkout's HEAD copy ('the good configuration fails too', exit 2), the relative
    one to nothing beside the worktree ('cannot start ./t', exit 2)."""
    import os
    r = _scripts_repo(tmp_path)
    os.symlink(r / "scripts" / "check.sh", r / "check")
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "./check", cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "t.sh").write_text("#!/bin/sh\nexec scripts/check.sh\n")
    (tools / "t.sh").chmod(0o755)
    os.symlink("../tools/t.sh", r / "t")
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "./t", cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
    assert os.readlink(r / "check") == str(r / "scripts" / "check.sh") and os.readlink(r / "t") == "../tools/t.sh"
    # a link to an untracked script of the user's inside the checkout (relative or absolute): git
    # bisect run finds that file in the checkout at every commit; the copied link led to nothing
    (r / "local").mkdir()
    (r / "local" / "t.sh").write_text("#!/bin/sh\nexec scripts/check.sh\n")
    (r / "local" / "t.sh").chmod(0o755)
    for name, target in (("u", "local/t.sh"), ("w", str(r / "local" / "t.sh"))):
        os.symlink(target, r / name)
        p = bisectk("bisect", "--good", "HEAD~7", "--run", f"./{name}", cwd=r, check=0)
        assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:] + p.stderr[-1500:]
        assert f"is your file {r / 'local' / 't.sh'} (untracked), copied into each commit's worktree at local/t.sh" \
            in p.stdout, p.stdout


def test_a_script_path_with_a_space_or_a_quote_typed_as_one_word_runs_as_git_bisect_run_takes_it(tmp_path):
    """`git bisect run "$PWD/t.sh"` in a directory named `my proj's`: git passes the word as typed
    and says c5. `--run "$PWD/t.sh"` split the path at its space (`cannot start '.../my'`, and the
    line blamed the good commit: 'give --good a commit the test can run on') or stopped at its
    quote ('No closing quotation'). A line that is, whole, the path of a file, where the shell
    reading would split it and its first word names nothing, is that file: as git takes it."""
    from tests.fixtures.gitrepo import git
    base = tmp_path / "my proj's"
    base.mkdir()
    r = _counting_repo(base, 8)
    for name in ("t.sh", "my check.sh"):
        (r / name).write_text("#!/bin/sh\n[ $(cat v) -lt 5 ]\n")
        (r / name).chmod(0o755)
    for cmd in (str(r / "t.sh"), "./my check.sh"):
        p = bisectk("bisect", "--good", "HEAD~7", "--run", cmd, cwd=r, check=0)
        assert "first bad commit" in p.stdout and " c5\n" in p.stdout, (cmd, p.stdout[-1500:], p.stderr)
    assert git(r, "status", "--porcelain") == '?? "my check.sh"\n?? t.sh'     # nothing left in the checkout
    # the shell's reading, where its first word names a program, is kept: `sh -c` runs its script
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "sh -c '[ $(cat v) -lt 5 ]'", cwd=r, check=0)
    assert " c5\n" in p.stdout
    # diff takes its --run the same way
    for side, v in (("good", 1), ("bad", 7)):
        (base / side).mkdir()
        (base / side / "v").write_text(f"{v}\n")
    p = bisectk("diff", base / "good", base / "bad", "--run", str(r / "t.sh"), cwd=base, check=0)
    assert "cannot start" not in p.stdout + p.stderr, p.stdout[-1500:]


def test_a_script_gits_checkout_gave_windows_line_endings_names_the_setting_not_only_dos2unix(tmp_path):
    """core.autocrlf=true set after the clone (a Windows habit, a WSL ~/.gitconfig): the user's
    checkout keeps its LF test.sh, and `git bisect run ./t.sh` works there; each of bisectk's
    fresh worktrees gets CRLF, so the script cannot start. The line said 'convert the script
    (dos2unix ./t.sh)': the user's copy is LF already, and the commits' copies are git's to write.
    It names the setting that writes them, and the run goes through once it is changed."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 5 ]\n")
    (r / "t.sh").chmod(0o755)
    for i in range(1, 9):
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "v", "t.sh")
        git(r, "commit", "-q", "-m", f"c{i}")
    git(r, "config", "core.autocrlf", "true")
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "./t.sh", cwd=r, check=2)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problem) == 1 and "core.autocrlf input" in problem[0] and "/bin/sh" in problem[0], p.stdout
    assert b"\r" not in (r / "t.sh").read_bytes()       # the user's copy was never the cause
    git(r, "config", "core.autocrlf", "input")
    p = bisectk("bisect", "--good", "HEAD~7", "--run", "./t.sh", cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:]


def test_a_file_the_users_sparse_checkout_leaves_out_is_named_with_the_command_that_adds_it(tmp_path):
    """`git sparse-checkout set src` in a big repository, and a test that reads data/ref.txt: the
    worktrees take the checkout's sparse patterns (as git bisect's checkout keeps them), so both
    endpoints fail opening it, and the line said only 'the good configuration fails too ...
    --flaky applies'. It names the file, the sparse checkout and the command that adds it; once
    added, the bisection runs."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    (r / "src").mkdir(parents=True)
    (r / "data").mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "data" / "ref.txt").write_text("ref\n")
    for i in range(1, 9):
        (r / "src" / "v").write_text(f"{i}\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{i}")
    git(r, "sparse-checkout", "set", "src")
    assert not (r / "data").exists()
    t = tmp_path / "t.sh"
    t.write_text("#!/bin/sh\ncat data/ref.txt >/dev/null || exit 1\n[ $(cat src/v) -lt 5 ]\n")
    t.chmod(0o755)
    p = bisectk("bisect", "--good", "HEAD~7", "--run", t, cwd=r, check=2)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problem) == 1 and "data/ref.txt" in problem[0] and "sparse checkout" in problem[0], p.stdout
    assert "git sparse-checkout add data" in problem[0] and "fails too" not in problem[0]
    git(r, "sparse-checkout", "add", "data")
    p = bisectk("bisect", "--good", "HEAD~7", "--run", t, cwd=r, check=0)
    assert "first bad commit" in p.stdout and " c5\n" in p.stdout, p.stdout[-1500:]


def test_a_pytest_node_id_whose_path_has_a_space_or_a_quote_is_one_node_id(tmp_path):
    """`--pytest "$PWD/tests/test v.py::test_v"` under `my proj's` (`git bisect run pytest
    "$PWD/..."` passes it as one word): the value was split as a shell would, 'No closing
    quotation' at the quote, or the node id cut at its space ('file or directory not found:
    tests/test', blamed on the good commit). A value whose file part is, whole, a file is one id."""
    base = tmp_path / "my proj's"
    base.mkdir()
    r = _counting_repo(base, 8)
    (r / "tests").mkdir()
    (r / "tests" / "test v.py").write_text("def test_v():\n    assert int(open('v').read()) < 5\n")
    for node in (f"{r}/tests/test v.py::test_v", "tests/test v.py"):
        p = bisectk("bisect", "--good", "HEAD~7", "--pytest", node, cwd=r, check=0)
        assert "first bad commit" in p.stdout and " c5\n" in p.stdout, (node, p.stdout[-1500:], p.stderr)


def test_a_test_that_neither_end_can_start_is_not_answered_with_another_good_commit(tmp_path):
    """A committed script with Windows line endings (core.autocrlf=true on the machine that
    committed it): the good and the bad commit fail to start it the same way, yet the problem
    ended 'give --good a commit the test can run on', when no commit can run it as it is."""
    from tests.fixtures.gitrepo import git
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "t.sh").write_bytes(b"#!/bin/sh\r\n[ $(cat v) -lt 5 ]\r\n")
    (r / "t.sh").chmod(0o755)
    for i in range(1, 7):
        (r / "v").write_text(f"{i}\n")
        git(r, "add", "v", "t.sh")
        git(r, "commit", "-q", "-m", f"c{i}")
    p = bisectk("bisect", "--good", "HEAD~5", "--bad", "HEAD", "--run", "./t.sh", cwd=r, check=2)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problem) == 1 and "carriage return" in problem[0], p.stdout[-1500:]
    assert "give --good" not in problem[0] and "the bad commit" in problem[0] and "same way" in problem[0], problem[0]
