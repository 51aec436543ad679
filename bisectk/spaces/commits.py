"""The commit space: candidate commits between two refs, and worktrees to build them in.

Abstractions
------------
SpaceError    -- a bad repository, ref or range, explained in one line.
CommitInfo    -- sha, subject, author, date; `files` (changed paths) filled in by `describe`.
CommitGraph   -- the candidates of a DAG search, with git bisect's semantics: the commits reachable
                 from --bad and not from --good, merges and side branches included, in topological
                 order (parents first, --bad last), each with its parents among the candidates:
                 exactly the index space of bisectk.search.dag. --good is kept, as no candidate.
list_graph    -- `git log --topo-order --reverse bad ^good` with parents (`--first-parent`: the
                 mainline chain), validated.
CommitRange   -- the linear searches' index space: index 0 is --good, the last index is --bad
                 (bisectk.search.linear). On a history with merges it is a list, not a chain.
list_commits  -- `git rev-list --ancestry-path good..bad` (or `--first-parent`), validated.
WorktreePool  -- a context manager lending detached worktrees, one per concurrent lease, under a
                 cache directory (default <git-common-dir>/bisectk-worktrees/); on exit, however
                 it is left (exception, KeyboardInterrupt), every worktree is removed and pruned.

Why the user's checkout stays byte-identical: every git command here either only reads the
repository (rev-list, log, merge-base, diff-tree, rev-parse) or runs inside a worktree this module
created; the one write to the shared .git is the worktree's admin directory (.git/worktrees/<name>),
which `git worktree remove`/`prune` delete. Nothing runs that refreshes the main index (no
`git status`), hooks are switched off (a post-checkout hook could touch anything), and GIT_DIR /
GIT_INDEX_FILE / GIT_WORK_TREE from the caller's environment are dropped so that no command can be
pointed at the user's index or working tree.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from bisectk.run.process import run_tool

from bisectk.errors import BisectkError

_SAFE_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false", "-c", "gc.auto=0"]
_REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
             "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE")
# NUL-terminated fields: the one byte a commit subject or an author name cannot hold (a subject may
# hold any other control character, \x1e and \x1f included)
_FIELDS = "%H%x00%s%x00%an <%ae>%x00%aI%x00"
_GRAPH_FIELDS = "%H%x00%P%x00%s%x00%an <%ae>%x00%aI%x00"


def _records(text: str, n: int) -> list[list[str]]:
    """`git log --format` output of NUL-terminated fields, n per commit (git puts a newline
    between commits, before the next sha)."""
    fields = text.split("\x00")
    if fields and not fields[-1].strip():
        fields.pop()
    if len(fields) % n:
        raise SpaceError(f"git log printed {len(fields)} fields, not a multiple of {n}")
    return [[fields[i].lstrip("\n"), *fields[i + 1:i + n]] for i in range(0, len(fields), n)]
_SESSION = re.compile(r"^(\d+)-[0-9a-f]+$")


class SpaceError(BisectkError, ValueError):
    """A repository, ref or commit range that cannot be bisected; the message is one line."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    env.update(LC_ALL="C", LANGUAGE="C")   # stable messages to quote in SpaceError
    return env


def run_git(cwd: Path | str, *args: str) -> str:
    """Run `git <args>` in `cwd` with hooks off and a clean environment; stdout, stripped.

    Through run/ (run_tool) rather than gitpython's Git.execute: that one merges os.environ into the
    child's environment, so it cannot drop a GIT_INDEX_FILE that would point a checkout at the user's
    index; and a git that hangs (a lock, a prompt) is ended, never left behind.
    """
    try:
        proc = run_tool(["git", *_SAFE_CONFIG, *args], cwd=cwd, env=_env())
    except OSError as exc:
        raise SpaceError(f"git {args[0]} cannot start in {cwd}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise SpaceError(f"git {args[0]} failed in {cwd}: {lines[-1] if lines else f'exit {proc.returncode}'}")
    return proc.stdout.strip()


def open_repo(path: Path | str) -> Path:
    """The top-level directory of the work tree holding `path`, or SpaceError."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SpaceError(f"repository {p} does not exist")
    try:
        repo = git.Repo(p, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise SpaceError(f"{p} is not inside a git repository") from None
    if repo.bare:
        raise SpaceError(f"{p} is a bare repository; give a checkout")
    return Path(repo.working_tree_dir).resolve()


def is_shallow(repo: Path) -> bool:
    """Whether `repo` is a shallow clone (its history stops at the commits in .git/shallow)."""
    try:
        return run_git(repo, "rev-parse", "--is-shallow-repository") == "true"
    except SpaceError:
        return False


SHALLOW_HINT = "fetch the missing history with `git fetch --unshallow` (or a deeper `git fetch --depth N`)"


def resolve(repo: Path, ref: str, what: str = "ref") -> str:
    """The full sha of the commit `ref` names, or SpaceError naming the option."""
    if not ref or ref.startswith("-"):
        raise SpaceError(f"{what} {ref!r} is not a revision")
    try:
        return run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except SpaceError:
        cut = f" (a shallow clone: its history is cut; {SHALLOW_HINT})" if is_shallow(repo) else ""
        raise SpaceError(f"{what} {ref!r} is not a commit in {repo}{cut}") from None


def check_ancestry(root: Path, good: str, bad: str, g: str, b: str) -> None:
    """SpaceError unless --good is an ancestor of --bad. In a shallow clone the history between
    them may simply be missing: that is said, and swapping is suggested only when bad really is
    an ancestor of good."""
    try:
        run_git(root, "merge-base", "--is-ancestor", g, b)
        return
    except SpaceError:
        pass
    swapped = True
    try:
        run_git(root, "merge-base", "--is-ancestor", b, g)
    except SpaceError:
        swapped = False
    if is_shallow(root) and not swapped:
        raise SpaceError(f"--good {good} ({g[:10]}) is not reachable from --bad {bad} ({b[:10]}) in this shallow "
                         f"clone: the history between them is cut; {SHALLOW_HINT}")
    raise SpaceError(f"--good {good} ({g[:10]}) is not an ancestor of --bad {bad} ({b[:10]}); "
                     "swap them or pick a good commit older than the bad one")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    author: str
    date: str                          # ISO 8601, author date
    files: tuple[str, ...] | None = None   # None until `describe` fills it in

    @property
    def short(self) -> str:
        return self.sha[:10]

    def to_dict(self) -> dict[str, Any]:
        d = {"sha": self.sha, "subject": self.subject, "author": self.author, "date": self.date}
        if self.files is not None:
            d["files"] = list(self.files)
        return d


def _parse_log(text: str) -> list[CommitInfo]:
    return [CommitInfo(sha, subject, author, date) for sha, subject, author, date in _records(text, 4)]


@dataclass(frozen=True)
class CommitRange:
    """Candidates in topological order: [good, ..., bad]; indices are the search's indices."""

    repo: Path
    commits: tuple[CommitInfo, ...]
    first_parent: bool = False
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({c.sha: i for i, c in enumerate(self.commits)})

    def __len__(self) -> int:
        return len(self.commits)

    def __getitem__(self, i: int) -> CommitInfo:
        return self.commits[i]

    def index(self, sha: str) -> int:
        """Index of a full or abbreviated sha."""
        if sha in self._index:
            return self._index[sha]
        hits = [i for s, i in self._index.items() if s.startswith(sha)]
        if len(hits) != 1:
            raise SpaceError(f"commit {sha!r} is {'ambiguous' if hits else 'not'} in the range")
        return hits[0]

    def describe(self, i: int) -> CommitInfo:
        return describe(self.repo, self.commits[i].sha)


def list_commits(repo: Path | str, good: str, bad: str, *, first_parent: bool = False) -> CommitRange:
    """Commits from --good to --bad: `rev-list --ancestry-path` (or `--first-parent`) good..bad.

    With merges in the range, the order is a topological linearisation; `first_parent` gives a
    true chain (the mainline) and is what merge-heavy histories want.
    """
    root = open_repo(repo)
    g, b = resolve(root, good, "--good"), resolve(root, bad, "--bad")
    if g == b:
        raise SpaceError(f"--good and --bad are the same commit ({g[:10]})")
    check_ancestry(root, good, bad, g, b)
    walk = ["--first-parent"] if first_parent else ["--ancestry-path"]
    text = run_git(root, "log", "--reverse", "--topo-order", *walk, f"--format={_FIELDS}", f"{g}..{b}")
    commits = _parse_log(run_git(root, "log", "-1", f"--format={_FIELDS}", g)) + _parse_log(text)
    if first_parent and len(commits) > 1:
        parents = run_git(root, "rev-list", "--parents", "-n", "1", commits[1].sha).split()[1:]
        if not parents or parents[0] != g:
            raise SpaceError(f"--good {good} ({g[:10]}) is not on the first-parent chain of --bad "
                             f"{bad}; drop --first-parent or pick a mainline commit")
    return CommitRange(root, tuple(commits), first_parent)


@dataclass(frozen=True)
class CommitGraph:
    """Candidates of a DAG search: `commits[i]` in topological order, --bad last.

    `parents[i]`: indices of i's parents among the candidates, first parent first (a parent
    outside them is an ancestor of --good, so good); `parent_shas[i]`: all of i's parents, for
    "last good". With `first_parent`, the mainline chain: `parents[i]` is (i - 1,) and
    `parent_shas` still names a merge's other parents.
    """

    repo: Path
    good: CommitInfo
    commits: tuple[CommitInfo, ...]
    parents: tuple[tuple[int, ...], ...]
    parent_shas: tuple[tuple[str, ...], ...]
    first_parent: bool = False
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({c.sha: i for i, c in enumerate(self.commits)})

    def __len__(self) -> int:
        return len(self.commits)

    def __getitem__(self, i: int) -> CommitInfo:
        return self.commits[i]

    @property
    def bad(self) -> CommitInfo:
        return self.commits[-1]

    def index(self, sha: str) -> int:
        """Candidate index of a full or abbreviated sha (SpaceError for --good or outsiders)."""
        if sha in self._index:
            return self._index[sha]
        hits = [i for s, i in self._index.items() if s.startswith(sha)]
        if len(hits) != 1:
            raise SpaceError(f"commit {sha!r} is {'ambiguous' if hits else 'not'} among the candidates")
        return hits[0]

    def describe(self, i: int) -> CommitInfo:
        return describe(self.repo, self.commits[i].sha)

    def merges(self) -> int:
        return sum(len(p) > 1 for p in self.parent_shas)


def list_graph(repo: Path | str, good: str, bad: str, *, first_parent: bool = False) -> CommitGraph:
    """Candidates between --good and --bad as git bisect sees them: every commit reachable from
    bad and not from good (side branches forked before good included), or with `first_parent`
    the first-parent chain from good (exclusive) to bad."""
    root = open_repo(repo)
    g, b = resolve(root, good, "--good"), resolve(root, bad, "--bad")
    if g == b:
        raise SpaceError(f"--good and --bad are the same commit ({g[:10]})")
    check_ancestry(root, good, bad, g, b)
    walk = ["--first-parent"] if first_parent else []
    text = run_git(root, "log", "--reverse", "--topo-order", *walk, f"--format={_GRAPH_FIELDS}", b, f"^{g}")
    commits, all_parents = [], []
    for sha, parents, subject, author, date in _records(text, 5):
        commits.append(CommitInfo(sha, subject, author, date))
        all_parents.append(tuple(parents.split()))
    if not commits or commits[-1].sha != b:
        raise SpaceError(f"git listed no candidates ending at --bad {bad} ({b[:10]})")
    if first_parent:
        if all_parents[0][:1] != (g,):
            raise SpaceError(f"--good {good} ({g[:10]}) is not on the first-parent chain of --bad "
                             f"{bad}; drop --first-parent or pick a mainline commit")
        parents = [()] + [(i - 1,) for i in range(1, len(commits))]
    else:
        index = {c.sha: i for i, c in enumerate(commits)}
        parents = [tuple(index[p] for p in ps if p in index) for ps in all_parents]
    good_info = _parse_log(run_git(root, "log", "-1", f"--format={_FIELDS}", g))[0]
    return CommitGraph(root, good_info, tuple(commits), tuple(parents), tuple(all_parents), first_parent)


def describe(repo: Path | str, sha: str) -> CommitInfo:
    """Full metadata of one commit, with the paths it changed (against its first parent)."""
    root = Path(repo)
    info = _parse_log(run_git(root, "log", "-1", f"--format={_FIELDS}", sha))[0]
    parents = run_git(root, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    if parents:
        names = run_git(root, "diff-tree", "-r", "--name-only", "--no-commit-id", parents[0], sha)
    else:
        names = run_git(root, "diff-tree", "-r", "--name-only", "--no-commit-id", "--root", sha)
    return CommitInfo(info.sha, info.subject, info.author, info.date,
                      tuple(n for n in names.splitlines() if n))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WorktreePool:
    """Detached worktrees lent one per lease; all of them removed (and pruned) on exit.

    A lease of a commit that a free worktree already holds reuses it untouched (its build outputs
    too); otherwise a new worktree is added while fewer than `size` exist, else the least recently
    used free one is switched with `checkout --force --detach` and `clean` (`-x` too when
    `clean_ignored`, which also wipes ignored build outputs).
    """

    def __init__(self, repo: Path | str, *, cache_dir: Path | str | None = None, size: int = 4,
                 clean_ignored: bool = False):
        self.repo = open_repo(repo)
        common = Path(run_git(self.repo, "rev-parse", "--git-common-dir"))
        self.cache_dir = Path(cache_dir) if cache_dir else (self.repo / common).resolve() / "bisectk-worktrees"
        self.size, self.clean_ignored = max(1, size), clean_ignored
        self.session: Path | None = None
        self._free: list[tuple[Path, str]] = []     # (path, sha), least recently used first
        self._busy: set[Path] = set()
        self._count = 0
        self._cond = threading.Condition()

    def __enter__(self) -> WorktreePool:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.remove_stale()
        self.session = self.cache_dir / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.session.mkdir()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def remove_stale(self) -> list[Path]:
        """Delete sessions left by a process that died without cleaning up (e.g. SIGKILL)."""
        stale = [d for d in self.cache_dir.iterdir()
                 if d.is_dir() and (m := _SESSION.match(d.name)) and not _pid_alive(int(m.group(1)))]
        for d in stale:
            shutil.rmtree(d, ignore_errors=True)
        if stale:
            run_git(self.repo, "worktree", "prune")
        return stale

    @contextmanager
    def lease(self, sha: str) -> Iterator[Path]:
        """A worktree with `sha` checked out (detached); it is this lease's alone until exit."""
        path = self.acquire(sha)
        try:
            yield path
        finally:
            self.release(path, sha)

    def acquire(self, sha: str) -> Path:
        if self.session is None:
            raise RuntimeError("WorktreePool used outside its `with` block")
        with self._cond:
            while True:
                warm = next((k for k, (_, s) in enumerate(self._free) if s == sha), None)
                if warm is not None:
                    path, _ = self._free.pop(warm)
                    self._busy.add(path)
                    return path
                if self._count < self.size:
                    path = self.session / f"wt-{self._count}"
                    self._count += 1
                    self._busy.add(path)
                    # Adding writes .git/worktrees: kept under the lock so two adds never race.
                    try:
                        run_git(self.repo, "worktree", "add", "--detach", "--force", str(path), sha)
                    except BaseException:
                        self._busy.discard(path)
                        self._count -= 1        # nothing was created under that name
                        raise
                    return path
                if self._free:
                    path, _ = self._free.pop(0)
                    self._busy.add(path)
                    break
                self._cond.wait()
        # Switching a worktree touches only that worktree's own index and files: no lock needed.
        try:
            run_git(path, "checkout", "--force", "--detach", sha)
            run_git(path, "clean", "-ffdq" + ("x" if self.clean_ignored else ""))
        except BaseException:
            self.release(path, "")
            raise
        return path

    def release(self, path: Path, sha: str) -> None:
        with self._cond:
            self._busy.discard(path)
            self._free.append((path, sha))
            self._cond.notify()

    def close(self) -> None:
        """Remove every worktree of this session and prune; safe to call twice."""
        if self.session is None:
            return
        session, self.session = self.session, None
        try:
            for path in sorted(session.glob("wt-*")):
                try:
                    run_git(self.repo, "worktree", "remove", "--force", "--force", str(path))
                except SpaceError:
                    pass    # half-created or already gone: rmtree + prune below settle it
        finally:
            shutil.rmtree(session, ignore_errors=True)
            run_git(self.repo, "worktree", "prune")
            try:
                self.cache_dir.rmdir()      # only if empty: other live sessions keep theirs
            except OSError:
                pass
            self._free.clear()
            self._busy.clear()
