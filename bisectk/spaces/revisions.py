"""The commit space: commits of a history as points a search can run.

Abstractions
------------
CommitSpace -- a point is a candidate's index in a CommitGraph, or GOOD (the --good commit, which
               is not a candidate); its Workload is the subject's configuration pinned to the
               commit's sha (the ledger memoises per commit) and run in a worktree leased from the
               WorktreePool with that commit checked out (the worktree's state is the sha, so a
               build made for another commit is redone). `workload` alone leases nothing: a
               commit answered from the ledger is never checked out. Without a pool (`remote`:
               an executor on other hosts) nothing is checked out here at all: the Workload's
               origin is the commit, which the remote worker materialises from the `git archive`
               it is sent (or from `shared_repo`, a path of the repository every host can read).
export_tree -- a commit's tree as plain files (`git archive`), outside the user's checkout;
               `archive` the same as the bytes of a tar archive.
"""

from __future__ import annotations

import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bisectk.run.workload import Origin, Workload
from bisectk.run.remote import git_archive_to
from bisectk.spaces.commits import CommitGraph, CommitInfo, SpaceError, _env
from bisectk.spaces.worktrees import WorktreePool
from bisectk.spec import Config

NOWHERE = Path("/nonexistent-bisectk-worktree")   # a ledger lookup needs no directory
GOOD = "good"                                      # the point naming the --good commit


class CommitSpace:
    kind = "commits"

    def __init__(self, commits: CommitGraph, pool: WorktreePool | None, config: Config,
                 subdir: Path = Path("."), *, remote: bool = False, shared_repo: str | None = None):
        self.commits, self.pool, self.config, self.subdir = commits, pool, dict(config), Path(subdir)
        self.remote, self.shared_repo = remote, shared_repo

    def info(self, point: Any) -> CommitInfo:
        return self.commits.good if point == GOOD else self.commits[point]

    def key(self, point: Any) -> str:
        """The commit's sha: the ledger's key, read from the graph's arrays (no metadata fetched)."""
        return self.commits.good_sha if point == GOOD else self.commits.sha(point)

    def label(self, point: Any) -> str:
        c = self.info(point)
        subject = c.subject if len(c.subject) <= 60 else c.subject[:57].rstrip() + "..."
        return f"{c.short} {subject}"

    def workload(self, point: Any) -> Workload:
        sha = self.key(point)
        return Workload(dict(self.config), NOWHERE, revision=sha, state=sha)

    @contextmanager
    def lease(self, point: Any):
        sha = self.key(point)
        if self.remote:
            repo = self.commits.repo
            yield Workload(dict(self.config), NOWHERE / sha / self.subdir, revision=sha, state=sha,
                           origin=Origin(sha, lambda: archive(repo, sha), str(self.subdir),
                                         shared_repo=self.shared_repo))
            return
        if self.pool is None:
            raise RuntimeError("CommitSpace.lease without a worktree pool")
        with self.pool.lease(sha) as path:     # switched worktrees lose their .pyc (worktrees.drop_bytecode)
            yield Workload(dict(self.config), path / self.subdir, revision=sha, state=sha)


def _archive_to(repo: Path, sha: str, tar: Path) -> None:
    try:
        git_archive_to(repo, sha, tar, _env())
    except RuntimeError as exc:
        raise SpaceError(f"git archive {sha[:10]} failed: {exc}") from None


def archive(repo: Path, sha: str) -> bytes:
    """A commit's tree as a tar archive, read from the object database (no checkout touched)."""
    with tempfile.TemporaryDirectory(prefix="bisectk-archive-") as tmp:
        tar = Path(tmp) / "tree.tar"
        _archive_to(repo, sha, tar)
        return tar.read_bytes()


def export_tree(repo: Path, sha: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bisectk-archive-") as tmp:
        tar = Path(tmp) / "tree.tar"
        _archive_to(repo, sha, tar)
        with tarfile.open(tar) as t:
            t.extractall(dest, filter="tar")
    return dest
