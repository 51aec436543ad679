"""A `git bisect` of the user's own in progress, and bisectk run beside it (spaces/yourbisect.py):
HEAD is then the commit git bisect checked out, not the user's branch. `--bad HEAD` (the default)
still takes it, as `git bisect bad` would, and bisectk says so in one line, naming the session's
own bad commit; the session (refs/bisect/, BISECT_LOG, HEAD) is left exactly as git left it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import bisectk
from tests.e2e.test_git_habits import TEST_SH, git, hist, run, snapshot  # noqa: F401 (hist: a fixture)


def _mid_bisect(hist, tmp_path, *start: str) -> tuple[Path, dict]:
    """A clone whose own `git bisect start START...` checked a commit out, with an untracked ./test.sh."""
    base, c = hist
    r = tmp_path / "user"
    git(tmp_path, "clone", "-q", "--no-local", str(base), str(r))
    (r / "test.sh").write_text(TEST_SH)
    (r / "test.sh").chmod(0o755)
    git(r, "bisect", "start", *start, c["c8"], c["c1"])
    return r, c


@pytest.mark.parametrize("bad", [[], ["--bad", "HEAD"], ["--bad", "@~1"]], ids=["default", "HEAD", "@~1"])
def test_head_in_the_users_own_bisection_is_said_and_the_bisection_is_left_as_it_was(hist, tmp_path, bad):
    r, c = _mid_bisect(hist, tmp_path)
    head = git(r, "rev-parse", "HEAD")
    assert head != c["c8"]      # git checked the midpoint out
    before = snapshot(r)
    p = run(r, "--good", c["c1"], *bad, "--run", "./test.sh")
    warning = [line for line in p.stderr.splitlines() if "your `git bisect` in progress" in line]
    assert len(warning) == 1, p.stderr[-2000:]
    assert warning[0].startswith("bisectk: warning: ") and f"HEAD is {head[:10]}" in warning[0]
    assert f"bad commit is {c['c8'][:10]}, refs/bisect/bad names it" in warning[0]
    assert "branch 'main'" in warning[0]
    assert snapshot(r) == before


def test_the_users_own_terms_name_their_ref(hist, tmp_path):
    r, c = _mid_bisect(hist, tmp_path, "--term-old", "fine", "--term-new", "broken")
    p = run(r, "--good", c["c1"], "--run", "./test.sh")
    assert "your bisection's broken commit is" in p.stderr and "refs/bisect/broken" in p.stderr, p.stderr[-2000:]


def test_no_word_where_head_is_the_users_branch(hist, tmp_path):
    """`git bisect start --no-checkout` leaves HEAD on the branch; and refs that do not read HEAD."""
    r, c = _mid_bisect(hist, tmp_path, "--no-checkout")
    p = run(r, "--good", c["c1"], "--run", "./test.sh")
    assert "git bisect` in progress" not in p.stderr, p.stderr[-2000:]
    (tmp_path / "2").mkdir()
    r2, c = _mid_bisect(hist, tmp_path / "2")
    p = run(r2, "--good", c["c1"], "--bad", c["c8"], "--run", "./test.sh")
    assert "git bisect` in progress" not in p.stderr, p.stderr[-2000:]


def test_without_good_in_the_middle_of_the_users_bisection_its_marks_are_named(hist, tmp_path):
    """`bisectk bisect --run ./test.sh` typed as `git bisect run ./test.sh` would be, in the middle
    of the user's own bisection: the one line that asks for --good names the options that give
    the commits that bisection has marked (its own terms), where it asked for --good alone."""
    r, c = _mid_bisect(hist, tmp_path, "--term-old", "fine", "--term-new", "broken")
    before = snapshot(r)
    p = run(r, "--run", "./test.sh")
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1] == (
        "bisectk: give --good REF (and --bad REF, which defaults to HEAD); your `git bisect` in progress has "
        f"marked them: --good refs/bisect/fine-{c['c1']} --bad refs/bisect/broken"), p.stderr[-1500:]
    assert snapshot(r) == before
    p = run(r, "--good", f"refs/bisect/fine-{c['c1']}", "--bad", "refs/bisect/broken", "--run", "./test.sh")
    assert f"first bad commit: {c['c5']}" in p.stdout and p.returncode == 0, p.stdout[-1500:]
    assert snapshot(r) == before


def test_triage_says_it_too(hist, tmp_path):
    """`bisectk triage` takes --bad HEAD by default as bisect does: the same one line."""
    r, c = _mid_bisect(hist, tmp_path)
    before = snapshot(r)
    p = bisectk("triage", "--repo", str(r), "--good", c["c1"], "--run", "./test.sh", cwd=r, timeout=300)
    assert sum("your `git bisect` in progress" in line for line in p.stderr.splitlines()) == 1, p.stderr[-2000:]
    assert snapshot(r) == before
