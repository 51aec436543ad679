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
