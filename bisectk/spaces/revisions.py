"""The commit space: commits of a history as points a search can run.

Abstractions
------------
CommitSpace -- a point is a candidate's index in a CommitGraph, GOOD (the --good commit, which
               is not a candidate), or an Outside commit (a merge base to test, another --good);
               its Workload is the subject's configuration pinned to the
               commit's sha (the ledger memoises per commit) and run in a worktree leased from the
               WorktreePool with that commit checked out (the worktree's state is the sha, so a
               build made for another commit is redone). `workload` alone leases nothing: a
               commit answered from the ledger is never checked out. Without a pool (`remote`:
               an executor on other hosts) nothing is checked out here at all: the Workload's
               origin is the commit, which the remote worker materialises from the `git archive`
               it is sent (or from `shared_repo`, a path of the repository every host can read).
               The user's files the command names (an untracked test script, spaces/yours.py)
               are copied into each leased worktree (`carry`), and what they hold is part of
               each commit's revision.
               A commit whose tree cannot be read (a damaged or partial clone: a tree or blob
               missing) cannot be checked out: its Workload is `unrunnable`, with git's reason,
               and the runner answers it UNRESOLVED, as git skips it, instead of ending the command.
FreshBuilds -- the same commits, each run from a build made from scratch: its worktree loses its
               ignored files (`git clean -x`, a `build/` kept for incremental builds) before the
               run, so the build sees nothing another commit's build left (engine/fresh_build.py).
               Its runs are kept apart from the cached worktree's in the ledger (the revision says
               `#fresh-build`) and out of the bisect log (its kind).
Outside     -- a commit outside the candidates, named by its sha and its role ("merge base").
unreadable  -- git's reason why a commit cannot be checked out, or None when its objects are all there.
export_tree -- a commit's tree as plain files (`git archive`), outside the user's checkout;
               `archive` the same as the bytes of a tar archive.
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bisectk.run.workload import NO_BYTECODE, Origin, Workload, python_first
from bisectk.spaces.checkout import on_path, outside_tree, path_mark
from bisectk.spaces.commits import CommitGraph, CommitInfo, SpaceError, _env, git_ok, run_git
from bisectk.spaces.submodules import SubmoduleMissing
from bisectk.spaces.worktrees import WorktreePool
from bisectk.spec import Config

NOWHERE = Path("/nonexistent-bisectk-worktree")   # a ledger lookup needs no directory
GOOD = "good"                                      # the point naming the --good commit


@dataclass(frozen=True)
class Outside:
    """A commit that is no candidate but is run: a merge base of --bad and a --good."""

    sha: str
    role: str = "merge base"


class CommitSpace:
    kind = "commits"
    label_reads_git = True      # a label is a git call: the oracle makes it while the checkout runs
    own_places = True           # two commits run in two worktrees: one's build never holds the other's

    def __init__(self, commits: CommitGraph, pool: WorktreePool | None, config: Config,
                 subdir: Path = Path("."), *, remote: bool = False, shared_repo: str | None = None):
        self.commits, self.pool, self.config, self.subdir = commits, pool, dict(config), Path(subdir)
        self.remote, self.shared_repo = remote, shared_repo
        # directories of each worktree put first on the runs' PYTHONPATH, where runs were seen to
        # import the user's checkout instead (engine/checkout_imports.py)
        self.python_roots: tuple[str, ...] = ()
        # files the command names that each commit's own tree provides (spaces/command.py, "tree"),
        # relative to the repository root: a commit without one cannot run the command (skipped,
        # as git's 125) -- it is not a commit where the failure appeared
        self.needed: tuple[str, ...] = ()
        # the user's files copied into each commit's worktree before its runs (spaces/yours.py),
        # and what they hold, part of each commit's revision: `carry`
        self.carried: tuple = ()
        self._carried_digest = ""
        self._own_dir: bool | None = None   # own_dirs, asked of git once
        # PATH's directories in the user's checkout that git tracks (spaces/checkout.py path_dirs),
        # and the PATH the runs inherit: each worktree's own directory takes each one's place
        self.path_dirs: tuple[tuple[int, str], ...] = ()
        self.path = ""

    def carry(self, carried) -> None:
        """Copy these files of the user's (spaces/yours.py Carried) into each commit's worktree,
        at their paths, before its build and runs; what they hold now pins the memo key. Not with
        an executor on other hosts: each commit's tree is made there, and the command runs the
        user's file by the path the user has it (as before this copy was made)."""
        from bisectk.spaces.yours import digest, taken
        self.carried = taken(carried)
        self._carried_digest = digest(self.carried) if self.carried and not self.remote else ""

    def info(self, point: Any) -> CommitInfo:
        if isinstance(point, Outside):
            return self.commits.info(point.sha)
        return self.commits.good if point == GOOD else self.commits[point]

    def _rev(self, sha: str) -> str:
        """What pins a run's tree in the memo key: the commit, where in it the command runs (the
        same command typed in two directories of one commit is two subjects), and git's settings
        that shape its checkout, when any is set (a filter, git-lfs, line endings)."""
        rev = sha if str(self.subdir) == "." else f"{sha}:{self.subdir.as_posix()}"
        shape = self.pool.shape if self.pool is not None else ""     # git's checkout settings, when set
        rev = f"{rev}+yours-{self._carried_digest}" if self._carried_digest else rev
        if self.path_dirs and not self.remote:      # its programs on PATH are the commit's own
            rev += path_mark(self.path_dirs)
        return f"{rev}@{shape}" if shape else rev

    def _skipped(self, sha: str, why: str) -> Workload:
        """A commit that cannot run the command, and why: skipped, as git's 125."""
        return Workload(dict(self.config), NOWHERE, revision=self._rev(sha), state=sha, unrunnable=why)

    def _missing(self, tree: Path) -> str | None:
        """Why a checked-out commit cannot run the command: the directory it runs in, or a file it
        runs (`needed`), is not in the commit's tree; None when both are there."""
        if not (tree / self.subdir).is_dir() and not self.own_dirs():
            return f"the directory {self.subdir}/ is not in this commit's tree"
        absent = next((p for p in self.needed if not os.path.lexists(tree / p)), None)
        return f"{absent}, which the command names, is not in this commit's tree" if absent else None

    def own_dirs(self) -> tuple[str, ...]:
        """The directory the command runs in, when it is the user's own (`mkdir build && cd build`,
        `cd mine` holding an untracked script), to be made in each worktree that lacks it: the
        user's checkout has it and neither their HEAD nor the --bad commit does. `git bisect run`
        keeps such a directory in the checkout at every commit (git never removes an untracked
        directory, nor the one it runs in); a directory of the project's that a commit lacks is
        still skipped there. Asked of git once."""
        if self._own_dir is None:
            sub = self.subdir.as_posix()
            self._own_dir = str(self.subdir) != "." and (Path(self.commits.repo) / self.subdir).is_dir() \
                and not any(git_ok(self.commits.repo, "cat-file", "-e", f"{rev}:{sub}")
                            for rev in (self.commits.bad_sha, "HEAD"))
        return (self.subdir.as_posix(),) if self._own_dir else ()

    def key(self, point: Any) -> str:
        """The commit's sha: the ledger's key, read from the graph's arrays (no metadata fetched)."""
        if isinstance(point, Outside):
            return point.sha
        return self.commits.good_sha if point == GOOD else self.commits.sha(point)

    def label(self, point: Any) -> str:
        c = self.info(point)
        subject = c.subject if len(c.subject) <= 60 else c.subject[:57].rstrip() + "..."
        return f"{c.short} {subject}"

    def workload(self, point: Any) -> Workload:
        sha = self.key(point)
        return Workload(dict(self.config), NOWHERE, revision=self._rev(sha), state=sha)

    def untracked(self, path: str) -> str | None:
        """`path`, as a run in a worktree named it (relative to the run's directory, or absolute in
        a worktree), when the user's checkout has it and git does not track it: its path in the
        checkout (engine/environment.py, "untracked-file"); else None."""
        if self.remote or self.pool is None:
            return None
        cache = os.path.join(os.fspath(self.pool.cache_dir), "")     # its worktrees: CACHE/wt-N/...
        if os.path.isabs(path):
            if not path.startswith(cache):
                return None             # not in a worktree: nothing of the checkout's
            rel = os.path.normpath(path[len(cache):].partition(os.sep)[2] or ".")
        else:
            rel = os.path.normpath(os.path.join(self.subdir, path))
        if rel in (".", "") or rel.startswith(".."):
            return None
        checkout = Path(self.commits.repo)
        if not os.path.lexists(checkout / rel):
            return None
        try:
            run_git(checkout, "ls-files", "--error-unmatch", "--", ":(literal)" + rel)
            return None                 # tracked: the worktree has it too, where the commit has it
        except SpaceError:
            return str(checkout / rel)

    def sparse(self, path: str) -> str | None:
        """`path`, as a run named it (relative to the run's directory), when git tracks it and the
        user's sparse checkout leaves it out (skip-worktree): each worktree takes the same patterns,
        as git bisect's checkout keeps them. Its path from the top of the tree; else None."""
        if self.remote or self.pool is None or os.path.isabs(path):
            return None
        rel = os.path.normpath(os.path.join(self.subdir, path))
        if rel in (".", "") or rel.startswith(".."):
            return None
        try:
            listed = run_git(Path(self.commits.repo), "ls-files", "-t", "--", ":(literal)" + rel)
        except SpaceError:
            return None
        return rel if any(line.startswith("S ") for line in listed.splitlines()) else None

    def uncloned(self, path: str) -> str | None:
        """`path`, as a run named it, when it lies in a submodule the user's checkout never cloned
        (spaces/emptysub.py): that submodule's path; else None."""
        if self.remote or self.pool is None:
            return None
        from bisectk.spaces.emptysub import uncloned
        return uncloned(Path(self.commits.repo), self.subdir, path)

    def outside(self, path: str) -> str | None:
        """`path`, as a run in a worktree named it, when it is relative, climbs out of the
        repository (`../cutlass/include`, a sibling checkout) and names a file or directory from
        the user's checkout: its path there (spaces/checkout.py outside_tree); else None."""
        if self.remote or self.pool is None:
            return None
        return outside_tree(path, self.subdir, self.commits.repo)

    @contextmanager
    def lease(self, point: Any, fresh: bool = False):
        """The commit's Workload in a leased worktree. `fresh` (FreshBuilds): the worktree's
        untracked and ignored files are removed first, before the user's files are copied in."""
        sha = self.key(point)
        if self.remote:
            repo = self.commits.repo
            yield Workload(dict(self.config), NOWHERE / sha / self.subdir, revision=self._rev(sha), state=sha,
                           origin=Origin(sha, lambda: archive(repo, sha), str(self.subdir),
                                         shared_repo=self.shared_repo))
            return
        if self.pool is None:
            raise RuntimeError("CommitSpace.lease without a worktree pool")
        try:
            entry = self.pool.acquire(sha)
        except SubmoduleMissing as exc:     # this commit's tree cannot be made whole: skipped, as git's 125
            yield self._skipped(sha, f"checkout failed: {exc}")
            return
        except SpaceError as exc:
            why = unreadable(self.commits.repo, sha, str(exc))
            if why is None:
                raise           # the repository or the disk, not the commit: the command stops
            yield self._skipped(sha, f"checkout failed: {why}")
            return
        # no bytecode written: a switch drops the worktree's anyway (spaces/bytecode.py), and a run that
        # imports the user's checkout (an editable install) must not leave __pycache__ there
        env = {**python_first(entry.path, self.python_roots), **NO_BYTECODE}
        if self.path_dirs:
            env["PATH"] = on_path(self.path, self.path_dirs, entry.path)
        try:                    # switched worktrees lose their .pyc (wtdisk.survey)
            missing = self._missing(entry.path)
            if missing:
                yield self._skipped(sha, missing)
                return
            if fresh:           # the whole worktree's, from its root (`:/`), whatever subdirectory the command runs in
                run_git(entry.path, "clean", "-ffdqx", "--", ":/")
            made = self.own_dirs() if not (entry.path / self.subdir).is_dir() else ()
            why = self.pool.carry(entry, self.carried, made) if self.carried or made else None
            if why is not None:         # a directory of the commit's where the user's file goes
                yield self._skipped(sha, f"your file could not be copied into this commit's worktree: {why}")
                return
            # state: a build made here before a tidy that removed its outputs is made again
            yield Workload(dict(self.config), entry.path / self.subdir, env, revision=self._rev(sha),
                           state=f"{sha}+{entry.generation}", damaged=lambda: self.pool.damage_of(entry))
        finally:
            self.pool.release(entry, sha)


FRESH_BUILD = "#fresh-build"     # a revision run from a build made from scratch (FreshBuilds)


class FreshBuilds:
    kind = "fresh-build"        # not "commits": `bisectk log` and `replay` read those alone
    label_reads_git = True
    own_places = True

    def __init__(self, space: CommitSpace):
        self.space = space

    def key(self, point: Any) -> str:
        return self.space.key(point)

    def label(self, point: Any) -> str:
        return self.space.label(point)

    def workload(self, point: Any) -> Workload:
        w = self.space.workload(point)
        return replace(w, revision=w.revision + FRESH_BUILD)

    @contextmanager
    def lease(self, point: Any):
        # cleaned before the user's files are copied in: after, `clean -x` removed the copies
        # (an untracked ./test.sh), and every run from scratch failed to start
        with self.space.lease(point, fresh=True) as w:
            # state: the build a worktree held is gone, so it is made again
            yield replace(w, revision=w.revision + FRESH_BUILD, state=w.state + FRESH_BUILD)


FILTER_FAILED = re.compile(r"\b(smudge filter|external filter|filter-process)\b.*\bfailed|filter '[^']*' failed")


def unreadable(repo: Path, sha: str, error: str = "") -> str | None:
    """Why `sha` cannot be checked out, in git's words (`error`: the failed checkout's message),
    when an object of its tree is missing or corrupt (a damaged repository, a partial clone
    without its promisor) or a filter failed on one of its files; None when every tree and blob is there, so the checkout failed for
    another reason (a full disk, a lock) that must stop the command."""
    try:
        listing = run_git(repo, "rev-list", "--objects", "--no-walk", "--missing=print", sha)
    except SpaceError as exc:       # the commit object itself
        return _git_line(str(exc))
    missing = [line[1:] for line in listing.splitlines() if line.startswith("?")]
    if not missing:
        # a file's filter (`.gitattributes` filter=lfs, a smudge driver) that fails on this commit's
        # content: its tree cannot be made, as git's 125 (the next commit's may be fine)
        if not FILTER_FAILED.search(error):
            return None
        from bisectk.spaces.filtertool import missing_tool
        tool = missing_tool(repo, error)       # git-lfs named by the config, not installed
        return f"{_git_line(error)}: {tool}" if tool else _git_line(error)
    said = (_git_line(error) or f"object {missing[0]} is missing") + (f" ({len(missing)} objects missing)" if len(missing) > 1 else "")
    from bisectk.spaces.promisor import promisor_note
    note = promisor_note(repo)
    return f"{said}: {note}" if note else said


def _git_line(message: str) -> str:
    """git's own words in a SpaceError ('git checkout failed in PATH: fatal: unable to read tree X')."""
    cut = max(message.rfind("fatal: "), message.rfind("error: "))
    return message[cut:] if cut >= 0 else ""


def _archive_to(repo: Path, sha: str, tar: Path) -> None:
    try:
        from bisectk.run.remote import git_archive_to   # Ray and export only: ~15 ms of a local command's start
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
        import tarfile
        with tarfile.open(tar) as t:
            t.extractall(dest, filter="tar")
    return dest
