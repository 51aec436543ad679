"""spaces/shared.py: what the runs changed in what worktrees share with the user's checkout."""

import shutil
from pathlib import Path

from bisectk.spaces.shared import changes, snapshot
from tests.fixtures.gitrepo import counter_repo, git


def test_a_worktree_a_test_added_or_pruned_is_said_and_bisectks_own_are_not(tmp_path):
    """A test's `git worktree add` registers a worktree in the user's repository (their `git
    worktree list` shows it, and git refuses them its branch), and `git worktree prune` forgets
    one of theirs whose directory is away: neither was said, where a test's `git tag` was."""
    r = tmp_path / "r"
    counter_repo(r, 1)
    git(r, "worktree", "add", "-q", "--detach", str(tmp_path / "mine-away"), "HEAD")
    pool = tmp_path / "cache" / "bisectk" / "worktrees" / "r-0123456789ab"
    pool.mkdir(parents=True)
    before = snapshot(r)
    git(r, "worktree", "add", "-q", "--detach", str(pool / "wt-1"), "HEAD")        # bisectk's own pool
    git(r, "worktree", "add", "-q", "--detach", str(tmp_path / "from-test"), "HEAD")
    (tmp_path / "mine-away" / ".git").unlink()
    shutil.rmtree(tmp_path / "mine-away")
    git(r, "worktree", "prune")
    said = changes(before, snapshot(r, Path(before["git_dir"])))
    assert said == [f"added worktrees {tmp_path / 'from-test'} (git worktree list)",
                    f"removed worktrees {tmp_path / 'mine-away'} (git worktree list)"], said
    assert changes(before, snapshot(r)) == said and changes(before, before) == []


def test_a_pool_worktree_caught_while_git_adds_it_is_not_said_removed(tmp_path):
    """Review bo: the first `bisect --jobs 2` in a repository said `removed worktrees  (git worktree
    list)`, an empty path: the snapshot before the runs is taken while the pool's `git worktree add`
    has made the admin directory `wt-N` and not yet written its `gitdir`, so it read as one of the
    user's worktrees (no path) that was gone at the end (bisectk's own by then)."""
    r = tmp_path / "r"
    counter_repo(r, 1)
    pool = tmp_path / "cache" / "bisectk" / "worktrees" / "r-0123456789ab"
    pool.mkdir(parents=True)
    admin = r / ".git" / "worktrees" / "wt-0"
    admin.mkdir(parents=True)                          # git worktree add, half way
    (admin / "gitdir").write_text("")
    (r / ".git" / "worktrees" / "wt-1").mkdir()        # before its gitdir file exists at all
    before = snapshot(r)
    shutil.rmtree(r / ".git" / "worktrees")
    git(r, "worktree", "add", "-q", "--detach", str(pool / "wt-0"), "HEAD")
    git(r, "worktree", "add", "-q", "--detach", str(pool / "wt-1"), "HEAD")
    assert changes(before, snapshot(r, Path(before["git_dir"]))) == []
