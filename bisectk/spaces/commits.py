"""The commit space: candidate commits between two refs, and worktrees to build them in.

Abstractions
------------
SpaceError    -- a bad repository, ref or range, explained in one line.
CommitInfo    -- sha, subject, author, date; `files` (changed paths) filled in by `describe`.
CommitGraph   -- the candidates of a DAG search, with git bisect's semantics: the commits reachable
                 from --bad and not from --good, merges and side branches included, in topological
                 order (parents first, --bad last), each with its parents among the candidates:
                 exactly the index space of bisectk.search.dag. --good is kept, as no candidate.
                 Arrays (shas, parents in CSR form), not an object per commit; the metadata of
                 the few commits shown is read when asked.
list_graph    -- `git rev-list --topo-order --reverse --parents bad ^good` (`--first-parent`: the
                 mainline chain), validated, parsed with numpy when the search first needs it.
run_git       -- every git command of bisectk: hooks off, auto-gc off, the caller's GIT_DIR /
                 GIT_INDEX_FILE / GIT_WORK_TREE dropped (worktrees.py lends the checkouts).

Why the user's checkout stays byte-identical: every git command here only reads the repository
(rev-list, log, merge-base, diff-tree, rev-parse). Nothing runs that refreshes the main index (no
`git status`), hooks are switched off (a post-checkout hook could touch anything), and GIT_DIR /
GIT_INDEX_FILE / GIT_WORK_TREE from the caller's environment are dropped so that no command can be
pointed at the user's index or working tree.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bisectk.errors import BisectkError
from bisectk.spaces import early
from bisectk.run.process import run_tool

if TYPE_CHECKING:       # numpy is imported where it is used: ablate and diff import this module
    import numpy as np  # (SpaceError, run_git) and never load it

_SAFE_CONFIG = early.GIT_CONFIG
# NUL-terminated fields: the one byte a commit subject or an author name cannot hold (a subject may
# hold any other control character, \x1e and \x1f included)
_FIELDS = "%H%x00%s%x00%an <%ae>%x00%aI%x00"


def _records(text: str, n: int) -> list[list[str]]:
    """`git log --format` output of NUL-terminated fields, n per commit (git puts a newline
    between commits, before the next sha)."""
    fields = text.split("\x00")
    if fields and not fields[-1].strip():
        fields.pop()
    if len(fields) % n:
        raise SpaceError(f"git log printed {len(fields)} fields, not a multiple of {n}")
    return [[fields[i].lstrip("\n"), *fields[i + 1:i + n]] for i in range(0, len(fields), n)]


class SpaceError(BisectkError, ValueError):
    """A repository, ref or commit range that cannot be bisected; the message is one line."""


_env = early.git_env


def run_git(cwd: Path | str, *args: str) -> str:
    """Run `git <args>` in `cwd` with hooks off and a clean environment; stdout, stripped.

    Through run/ (run_tool) rather than gitpython's Git.execute: that one merges os.environ into the
    child's environment, so it cannot drop a GIT_INDEX_FILE that would point a checkout at the user's
    index; and a git that hangs (a lock, a prompt) is ended, never left behind.
    """
    try:
        proc = run_tool(["git", *_SAFE_CONFIG, *args], cwd=cwd, env=_env())
    except OSError as exc:
        raise SpaceError(f"git {_verb(args)} cannot start in {cwd}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise SpaceError(f"git {_verb(args)} failed in {cwd}: {_why(proc.stderr, proc.returncode)}")
    return proc.stdout.strip()


def git_common_dir(repo: Path | str) -> Path:
    """The repository's common git directory (its .git, shared by all its worktrees): where the
    ledger, the worktrees' admin directories, the refs and the config are."""
    return (Path(repo) / run_git(repo, "rev-parse", "--git-common-dir")).resolve()


def repo_ledger(repo: Path | str) -> Path:
    """The ledger of a history command without --ledger: in the common git directory, shared by
    the repository's worktrees (engine/session.ledger_location)."""
    return git_common_dir(repo) / "bisectk" / "ledger.db"


def git_ok(cwd: Path | str, *args: str) -> bool:
    """Whether `git <args>` exits 0 in `cwd` (run_git's environment and config): for git's
    yes/no questions (`diff-files --quiet`). One that cannot start is a no."""
    try:
        return run_tool(["git", *_SAFE_CONFIG, *args], cwd=cwd, env=_env()).returncode == 0
    except OSError:
        return False


def names_commit(cwd: Path | str, word: str) -> bool:
    """Whether git in `cwd` reads `word` as a commit (`HEAD~3`, a tag, a sha); never an option."""
    return not word.startswith("-") and git_ok(cwd, "rev-parse", "--verify", "--quiet", f"{word}^{{commit}}")


def _verb(args: tuple[str, ...]) -> str:
    """The git command `args` runs, for a message: the first word past the global options
    (`-c key=value`, `-C dir`), which would otherwise name the command `git -c`."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-c", "-C") else rest[1:]
    return rest[0] if rest else "git"


def _why(stderr: str, code: int) -> str:
    """git's reason, in one line: its last `fatal:`/`error:` line (a hint may follow it, as after
    "detected dubious ownership", whose fix -- git's safe.directory line -- is added), else its
    last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return f"exit {code}"
    causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
    why = causes[-1] if causes else lines[-1]
    fix = [line for line in lines if "safe.directory" in line and line.startswith("git config")]
    return f"{why} (if you trust it: {fix[-1]})" if "dubious ownership" in why and fix else why


def run_git_bytes(cwd: Path | str, *args: str) -> bytes:
    """run_git for a large output, kept as bytes (a listing of 300,000 commits is 25 MB)."""
    try:
        proc = run_tool(["git", *_SAFE_CONFIG, *args], cwd=cwd, env=_env(), text=False)
    except OSError as exc:
        raise SpaceError(f"git {_verb(args)} cannot start in {cwd}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        why = _why(proc.stderr.decode(errors="replace"), proc.returncode)
        raise SpaceError(f"git {_verb(args)} failed in {cwd}: {why}")
    return proc.stdout


def open_repo(path: Path | str) -> Path:
    """The top-level directory of the work tree holding `path`, or SpaceError."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SpaceError(f"repository {p} does not exist")
    where = p if p.is_dir() else p.parent
    known = early.toplevel(p) if p.is_dir() else None
    try:
        top = Path(known) if known is not None else Path(run_git(where, "rev-parse", "--show-toplevel")).resolve()
    except SpaceError:      # not a repository, a bare one, or inside a .git directory
        top = None
    if top is not None:
        from bisectk.spaces.repoenv import given_git_dir, other_repository
        if given_git_dir():     # git would follow it: it must name this repository (spaces/repoenv.py)
            dirs = {str((top / run_git(top, "rev-parse", what)).resolve()) for what in ("--git-dir", "--git-common-dir")}
            other = other_repository(top, p, dirs)
            if other is not None:
                raise SpaceError(other)
        return top
    try:
        bare = run_git(where, "rev-parse", "--is-bare-repository")
    except SpaceError as exc:
        if "dubious ownership" in str(exc):     # git refuses a repository another user owns (CI containers)
            raise SpaceError(f"git refuses {p}: {str(exc).partition(': ')[2]}") from None
        raise SpaceError(f"{p} is not inside a git repository{early.repo_env_note()}") from None
    if bare == "true":
        # a bare repository has no work tree to leave alone: its git directory stands for it, and
        # the commits are checked out in worktrees made from it (git worktree add works there)
        return Path(run_git(where, "rev-parse", "--absolute-git-dir")).resolve()
    raise SpaceError(f"{p} is not inside a git repository's work tree{_work_tree_of(where)}")


def _work_tree_of(git_dir: Path) -> str:
    """For a path inside a git directory (`--repo proj/.git`, or its refs/), the words naming the
    work tree that git directory belongs to, to give instead; '' where it has none git names (a
    .git of its own name, or core.worktree)."""
    from bisectk.names import shell_join
    try:
        if run_git(git_dir, "rev-parse", "--is-inside-git-dir") != "true":
            return ""
        absolute = Path(run_git(git_dir, "rev-parse", "--absolute-git-dir"))
        try:
            named = run_git(git_dir, "config", "--get", "core.worktree")    # a submodule's, under .git/modules
        except SpaceError:                                                  # exit 1: not set
            named = ""
    except SpaceError:
        return ""
    top = (absolute / named).resolve() if named else absolute.parent if absolute.name == ".git" else None
    if top is None or not top.is_dir():
        return ""
    return f": it is in the git directory of {top}; give --repo {shell_join([str(top)])}"


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
    if ref.startswith("^"):     # rev-parse prints ^SHA for it: half of a range, git bisect refuses it
        raise SpaceError(f"{what} {ref!r} is not a commit in {repo}: a leading ^ excludes the commits "
                         f"it reaches (half of a range); name the commit itself")
    known = early.resolved(repo, ref)
    if known is not None:
        return known
    try:
        return run_git(repo, "rev-parse", "--verify", "--quiet", early.peeled(ref))
    except SpaceError:
        from bisectk.spaces.alternates import gone_note
        try:    # every object it borrowed is unreadable: the ref is there all the same
            gone = gone_note(Path(repo, run_git(repo, "rev-parse", "--git-path", "objects/info/alternates")))
        except SpaceError:
            gone = ""
        if gone:
            raise SpaceError(f"{what} {ref!r} cannot be read in {repo}: {gone}") from None
        from bisectk.spaces.refnames import why_missing
        cut = f" (a shallow clone: its history is cut; {SHALLOW_HINT})" if is_shallow(repo) else ""
        raise SpaceError(f"{what} {ref!r} is not a commit in {repo}{why_missing(repo, ref)}{cut}") from None


def not_an_ancestor(root: Path, good: str, bad: str, g: str, b: str,
                    ends: tuple[str, str] = ("--good", "--bad")) -> SpaceError:
    """Why --good is not an ancestor of --bad. In a shallow clone the history between them may
    simply be missing: that is said, and swapping is suggested only when bad really is an
    ancestor of good. `ends`: the options that named the old and the new end (for a fix,
    --bad and --good)."""
    old, new = ends
    try:
        run_git(root, "merge-base", "--is-ancestor", b, g)
        swapped = True
    except SpaceError:
        swapped = False
    if is_shallow(root) and not swapped:
        return SpaceError(f"{old} {good} ({g[:10]}) is not reachable from {new} {bad} ({b[:10]}) in this shallow "
                          f"clone: the history between them is cut; {SHALLOW_HINT}")
    return SpaceError(f"{old} {good} ({g[:10]}) is not an ancestor of {new} {bad} ({b[:10]}); "
                      f"swap them or pick a{' good' if old == '--good' else 'n old'} commit older than the "
                      f"{'bad' if new == '--bad' else 'new'} one")


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


class CommitGraph:
    """Candidates of a DAG search in topological order, --bad last, held as arrays.

    `shas` (numpy bytes, one per candidate) and the parents in CSR form: the parents of i are
    `parent_ref[parent_ptr[i]:parent_ptr[i + 1]]`, first parent first, each a candidate index, or
    -(k + 1) for `outside[k]`, a parent that is no candidate (an ancestor of --good, so good).
    `csr()` gives the candidates-only form a search Dag is built from; with `first_parent`, the
    mainline chain (i's parent is i - 1, and `parent_shas_of` still names a merge's others).
    No Python object is made per commit: subject, author and date are read from git for the
    commits that get shown (`self[i]`, cached), never for the whole range.
    """

    def __init__(self, repo: Path, good_sha: str, shas: np.ndarray, parent_ptr: np.ndarray,
                 parent_ref: np.ndarray, outside: np.ndarray, first_parent: bool = False):
        self._setup(repo, good_sha, first_parent, int(shas.size), shas[-1].decode() if shas.size else "")
        self._arrays = (shas, parent_ptr, parent_ref, outside)

    def _setup(self, repo: Path, good_sha: str, first_parent: bool, n: int, bad: str) -> None:
        self.repo, self.good_sha, self.first_parent = repo, good_sha, first_parent
        self._n, self._bad = n, bad
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._listing: tuple[bytes, str | None] | None = None   # (rev-list's output, a head to add)
        self._parse_lock = threading.Lock()
        self.goods: tuple[str, ...] = (good_sha,)      # every --good (all count)
        self.merge_bases: tuple[str, ...] = ()          # of bad and the goods, to test before the search
        self.paths: tuple[str, ...] = ()                # the pathspec the candidates touch
        self.bad_touches = True                         # False: --bad added, though it touches no path
        self._info: dict[str, CommitInfo] = {}
        self._described: dict[str, CommitInfo] = {}
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_listing(cls, repo: Path, good_sha: str, listing: _Listing, *, head: str | None = None,
                     first_parent: bool = False) -> CommitGraph:
        """From `git rev-list --parents` output (non-empty), parsed into arrays when they are first
        asked for (`arrays`): its length and --bad are known without them, so the endpoints run
        before numpy is loaded. `head`: a sha added as the last candidate (_append_head)."""
        graph = cls.__new__(cls)
        graph._setup(repo, good_sha, first_parent, listing.count + (head is not None), head or listing.last_id())
        graph._listing = (listing.out, head)
        return graph

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(shas, parent_ptr, parent_ref, outside), parsed from the listing on first use (from any
        thread: a command parses them in the background once its first run is over)."""
        with self._parse_lock:
            if self._arrays is None:
                assert self._listing is not None
                listing, head = self._listing
                shas, ptr, ref, outside = _parse_parents(listing)
                if head is not None:
                    shas, ptr, ref = _append_head(shas, ptr, ref, head)
                self._arrays, self._listing = (shas, ptr, ref, outside), None
            return self._arrays

    shas = property(lambda self: self.arrays()[0])
    parent_ptr = property(lambda self: self.arrays()[1])
    parent_ref = property(lambda self: self.arrays()[2])
    outside = property(lambda self: self.arrays()[3])

    @classmethod
    def from_lists(cls, repo: Path, good: str, shas: list[str], parent_shas: list[tuple[str, ...]],
                   first_parent: bool = False) -> CommitGraph:
        """From per-commit lists (small graphs, tests); the same arrays list_graph builds."""
        import numpy as np
        return cls(repo, good, *_index_parents(np.array([s.encode() for s in shas]),
                                               [[p.encode() for p in ps] for ps in parent_shas]),
                   first_parent=first_parent)

    def __len__(self) -> int:
        return self._n

    def sha(self, i: int) -> str:
        if i == self._n - 1 or i == -1:
            return self._bad        # --bad: an endpoint runs before the arrays are parsed
        return self.shas[i].decode()

    def __getitem__(self, i: int) -> CommitInfo:
        return self.info(self.sha(i))

    def info(self, sha: str) -> CommitInfo:
        """Subject, author and date of one commit, read once."""
        if sha not in self._info:
            self._info.update({c.sha: c for c in _parse_log(run_git(self.repo, "log", "--no-walk=unsorted",
                                                                    f"--format={_FIELDS}", sha))})
        return self._info[sha]

    def prefetch(self, indices) -> None:
        """Read the metadata of several commits in one git call."""
        want = [self.sha(i) for i in indices if self.sha(i) not in self._info]
        for k in range(0, len(want), 500):
            text = run_git(self.repo, "log", "--no-walk=unsorted", f"--format={_FIELDS}", *want[k:k + 500])
            self._info.update({c.sha: c for c in _parse_log(text)})

    @property
    def good(self) -> CommitInfo:
        return self.info(self.good_sha)

    @property
    def bad(self) -> CommitInfo:
        return self[len(self) - 1]

    @property
    def bad_sha(self) -> str:
        return self.sha(len(self) - 1)

    @property
    def commits(self) -> tuple[CommitInfo, ...]:
        """Every candidate's metadata (one git call; for small graphs and tests)."""
        self.prefetch(range(len(self)))
        return tuple(self[i] for i in range(len(self)))

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, idx): the parents of i among the candidates, first parent first."""
        import numpy as np
        if self.first_parent:
            n = len(self)
            return np.concatenate([[0], np.arange(n, dtype=np.int64)]), np.arange(n - 1, dtype=np.int64)
        inside = self.parent_ref >= 0
        owner = np.repeat(np.arange(len(self)), np.diff(self.parent_ptr))
        ptr = np.concatenate([[0], np.cumsum(np.bincount(owner[inside], minlength=len(self)))]).astype(np.int64)
        return ptr, self.parent_ref[inside].astype(np.int64)

    def parents_of(self, i: int) -> tuple[int, ...]:
        """i's parents among the candidates (first parent first); (i - 1,) on the mainline chain."""
        if self.first_parent:
            return (i - 1,) if i else ()
        refs = self.parent_ref[self.parent_ptr[i]:self.parent_ptr[i + 1]]
        return tuple(int(r) for r in refs if r >= 0)

    def parent_shas_of(self, i: int) -> tuple[str, ...]:
        """All of i's parents, candidates or not, in git's order."""
        refs = self.parent_ref[self.parent_ptr[i]:self.parent_ptr[i + 1]].tolist()
        return tuple(self.sha(r) if r >= 0 else self.outside[-r - 1].decode() for r in refs)

    @property
    def parents(self) -> tuple[tuple[int, ...], ...]:
        return tuple(self.parents_of(i) for i in range(len(self)))

    @property
    def parent_shas(self) -> tuple[tuple[str, ...], ...]:
        return tuple(self.parent_shas_of(i) for i in range(len(self)))

    def index(self, sha: str) -> int:
        """Candidate index of a full or abbreviated sha (SpaceError for --good or outsiders)."""
        import numpy as np
        if self._sorted is None:
            order = np.argsort(self.shas, kind="stable")
            self._sorted = (self.shas[order], order)
        keys, order = self._sorted
        key = sha.lower().encode()
        lo = int(np.searchsorted(keys, key, "left"))
        hi = int(np.searchsorted(keys, key + b"\x7f", "left"))
        hits = [int(order[k]) for k in range(lo, min(hi, lo + 2)) if keys[k].startswith(key)]
        if len(hits) != 1 or not key:
            raise SpaceError(f"commit {sha!r} is {'ambiguous' if len(hits) > 1 else 'not'} among the candidates")
        return hits[0]

    def describe(self, i: int) -> CommitInfo:
        """Metadata and changed files of candidate i, read once (a record names the first bad
        commit twice: as the answer and as the only candidate)."""
        sha = self.sha(i)
        if sha not in self._described:
            self._described[sha] = describe(self.repo, sha)
        return self._described[sha]

    def merges(self) -> int:
        with self._parse_lock:
            listing = self._listing
        if listing is not None and listing[1] is None:     # an added head may itself be a merge
            return _Listing(listing[0]).merges()
        import numpy as np
        return int((np.diff(self.parent_ptr) > 1).sum())


def _index_parents(shas: np.ndarray, parents: list[list[bytes]] | None = None, *,
                   tokens: np.ndarray | None = None, ptr: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(shas, parent_ptr, parent_ref, outside): parent shas turned into candidate indices, or into
    -(k + 1) for outside[k]. Either `parents` per commit, or the parent tokens with their ptr."""
    import numpy as np
    if parents is not None:
        ptr = np.concatenate([[0], np.cumsum([len(ps) for ps in parents])]).astype(np.int64)
        tokens = np.array([p for ps in parents for p in ps], dtype=shas.dtype)
    assert tokens is not None and ptr is not None
    # Sorting and searching 64-bit prefixes is several times faster than 40-byte strings; a match
    # is then confirmed on the whole sha, and prefixes shared by two candidates (about one
    # repository in 10^9 at 300,000 commits) fall back to the strings.
    skey, tkey = _prefix64(shas), _prefix64(tokens)
    order = np.argsort(skey, kind="stable")
    sorted_keys = skey[order]
    if sorted_keys.size > 1 and (sorted_keys[1:] == sorted_keys[:-1]).any():
        order = np.argsort(shas, kind="stable")
        sorted_keys, tkey = shas[order], tokens
    needles = np.argsort(tkey, kind="stable")       # sorted needles: a cache-friendly search
    pos = np.empty(tkey.size, dtype=np.int64)
    pos[needles] = np.searchsorted(sorted_keys, tkey[needles])
    pos = np.minimum(pos, max(sorted_keys.size - 1, 0))
    found = (shas[order[pos]] == tokens) if shas.size else np.zeros(tokens.size, dtype=bool)
    ref = np.where(found, order[pos] if shas.size else -1, -1).astype(np.int64)
    outside, back = np.unique(tokens[~found], return_inverse=True)
    ref[~found] = -(back.reshape(-1) + 1)
    return shas, ptr, ref, outside


def _prefix64(ids: np.ndarray) -> np.ndarray:
    """The first 16 hex digits of each sha as an unsigned 64-bit number (0 for non-hex)."""
    import numpy as np
    if ids.size == 0:
        return np.zeros(0, dtype=np.uint64)
    raw = np.frombuffer(np.ascontiguousarray(ids).tobytes(), dtype=np.uint8).reshape(ids.size, -1)[:, :16]
    lut = np.zeros(256, dtype=np.uint8)
    lut[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
    lut[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
    nib = lut[raw]
    if nib.shape[1] < 16:
        nib = np.pad(nib, ((0, 0), (0, 16 - nib.shape[1])))
    packed = np.ascontiguousarray((nib[:, 0::2] << 4) | nib[:, 1::2])
    return packed.view(">u8").reshape(-1).astype(np.uint64)


def _parse_parents(out: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`git rev-list --parents` output, every line `sha parent...`, as arrays: each token is a hex
    sha and one separator (a space, or the newline that ends its line), so the bytes reshape into
    a table of tokens and no Python object is made per commit."""
    import numpy as np
    if not out:
        return np.zeros(0, dtype="S40"), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), \
            np.zeros(0, dtype="S40")
    width = _Listing(out).width         # 40 hex digits (64 with SHA-256); a malformed listing raises
    raw = np.frombuffer(out, dtype=np.uint8)
    table = raw.reshape(-1, width + 1)
    ends = table[:, width] == ord("\n")
    starts = np.concatenate([[True], ends[:-1]])
    ids = np.ascontiguousarray(table[:, :width]).view(f"S{width}").reshape(-1)
    line_start = np.flatnonzero(starts)
    counts = np.diff(np.append(line_start, ids.size)) - 1
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return _index_parents(ids[starts], tokens=ids[~starts], ptr=ptr)


def list_graph(repo: Path | str, good: str | Sequence[str], bad: str, *, first_parent: bool = False,
               paths: Sequence[str] = (), ends: tuple[str, str] = ("--good", "--bad")) -> CommitGraph:
    """Candidates between --good and --bad as git bisect sees them: every commit reachable from
    bad and from none of the goods (side branches forked before good included), or with
    `first_parent` the first-parent chain of bad, less what the goods reach (`git bisect start
    --first-parent`: good may sit on a merged branch). One `git rev-list
    --parents` streams them, parsed into arrays (300,000 commits in about a second plus git's own
    walk).

    Several goods all count (`rev-list B ^G1 ^G2`). A good that is not an ancestor of bad (a
    release branch, a sibling) is allowed as git allows it: the merge bases of bad and the goods
    that are no good themselves are left in `merge_bases`, to be tested before the search (a good
    merge base means the candidates are right; a bad one, that the failure was fixed between it
    and the goods). When bad is itself the merge base (an ancestor of a good), that is said at
    once. `paths`: git's pathspec, with git's history simplification and parent rewriting: the
    candidates are the commits that touch those paths, and --bad (kept as the last candidate
    whether or not it touches them, its parents the newest listed commits). `ends`: the options
    that named the old side and the new end, for the messages (for a fix: --bad and --good)."""
    root = open_repo(repo)
    old, new = ends
    given = [good] if isinstance(good, str) else list(good)
    if not given:
        raise SpaceError(f"give at least one {old} commit")
    goods = list(dict.fromkeys(resolve(root, g, old) for g in given))
    b = resolve(root, bad, new)
    if b in goods:
        g = given[goods.index(b)]
        raise SpaceError(f"{old} {g} and {new} {bad} are the same commit ({b[:10]})" if len(given) > 1
                         else f"{old} and {new} are the same commit ({b[:10]})")
    walk = ["--first-parent"] if first_parent else []
    spec = ["--", *paths] if paths else []
    argv = [*early.WALK, *walk, b, *(f"^{g}" for g in goods), *spec]
    out = early.take(root, argv)     # begun before the CLI loaded, when argv named this very walk
    if out is None:
        out = run_git_bytes(root, *argv)
    listing = _Listing(out)
    last = listing.last_id()
    named = dict(zip(goods, given))
    # good is an ancestor of bad iff some listed commit has it as a parent: a path from bad down
    # to good enters good from a commit that is not an ancestor of good, so a listed one. Several
    # goods (one may hide another) and a pathspec (parents rewritten) are asked of git instead.
    quick = len(goods) == 1 and not paths and last == b
    strangers = [] if quick and listing.has_parent(goods[0]) else \
        [g for g in goods if not _is_ancestor(root, g, b)]
    # git checks the merge bases with --first-parent too (check_good_are_ancestors_of_bad)
    bases = _merge_bases(root, b, goods, strangers, named, bad, ends) if strangers else []
    # with --first-parent, a good off the chain (a commit of a merged branch) is taken as git takes
    # it: the candidates are the chain's commits it does not reach, and the oldest one's parent is
    # an ancestor of good (good, not run)
    bad_touches = last == b
    if not bad_touches:
        if not paths:       # nothing reachable from bad that no good reaches: bad is a good's ancestor
            raise not_an_ancestor(root, named[goods[0]], bad, goods[0], b, ends)
        if not listing.count:
            raise SpaceError(f"no commit between {old} and {new} {bad} ({b[:10]}) touches "
                             f"{' '.join(paths)}: bad path arguments? (git bisect: 'No testable commit found')")
    graph = CommitGraph.from_listing(root, goods[0], listing, head=None if bad_touches else b,
                                     first_parent=first_parent)
    graph.goods, graph.merge_bases, graph.paths, graph.bad_touches = tuple(goods), tuple(bases), tuple(paths), bad_touches
    return graph


class _Listing:
    """`git rev-list --parents` output read as bytes, without numpy (list_graph's checks, the
    length, --bad, the merge count): lines `sha parent...`, every token one hex id of `width`."""

    _MERGE = re.compile(rb"^[^ \n]+ [^ \n]+ ", re.M)      # a line with two parents or more

    def __init__(self, out: bytes):
        self.out = out
        self.width = re.match(rb"[^ \n]*", out).end()
        if out and (len(out) % (self.width + 1) or not out.endswith(b"\n")):
            raise SpaceError("git rev-list printed something other than commit ids")
        self.count = out.count(b"\n")

    def last_id(self) -> str | None:
        if not self.count:
            return None
        start = self.out.rfind(b"\n", 0, len(self.out) - 1) + 1
        return self.out[start:start + self.width].decode()

    def has_parent(self, sha: str) -> bool:
        """Whether a listed commit has `sha` as a parent (no listed commit is an excluded one)."""
        return sha.encode() in self.out

    def merges(self) -> int:
        return len(self._MERGE.findall(self.out))


def _is_ancestor(root: Path, a: str, b: str) -> bool:
    try:
        run_git(root, "merge-base", "--is-ancestor", a, b)
        return True
    except SpaceError:
        return False


def _merge_bases(root: Path, b: str, goods: list[str], strangers: list[str], named: dict[str, str],
                 bad: str, ends: tuple[str, str]) -> list[str]:
    """The merge bases of bad and the goods that must be tested (git's check_merge_bases): none
    that is a good already; SpaceError when bad is one (it is an ancestor of a good, so the
    failure was fixed on the way to that good), or when a shallow clone cuts the history."""
    g = strangers[0]
    try:
        found = run_git(root, "merge-base", "--all", b, *goods).split()
    except SpaceError:
        found = []
    old, new = ends
    if b in found:
        g = next(x for x in strangers if _is_ancestor(root, b, x))
        what = "the failure was fixed" if old == "--good" else "the failure came back"
        hint = ("to find that fix, run bisectk bisect --find-fix" if old == "--good"     # triage has no --find-fix
                else "to find that regression, drop --find-fix")
        raise SpaceError(f"{old} {named[g]} ({g[:10]}) is not an ancestor of {new} {bad} ({b[:10]}): their merge "
                         f"base is {new} itself, so {what} between {b[:10]} and {g[:10]}; {hint} (or swap them)")
    if not found and is_shallow(root):
        raise not_an_ancestor(root, named[g], bad, g, b, ends)
    from bisectk.spaces.unrelated import unrelated
    for g in strangers:     # no merge base at all: a history of its own (a notes ref, gh-pages)
        if not git_ok(root, "merge-base", b, g):
            raise SpaceError(unrelated(named[g], g, bad, b, ends, _full_name(root, named[g])))
    return [m for m in found if m not in goods]


def _full_name(root: Path, name: str) -> str:
    """The full ref name git reads `name` as (`refs/notes/commits`), or "" (a sha)."""
    try:
        return run_git(root, "rev-parse", "--symbolic-full-name", name)
    except SpaceError:
        return ""


def _append_head(shas: np.ndarray, ptr: np.ndarray, ref: np.ndarray, sha: str):
    """`sha` added as the last candidate, its parents the listed commits that no listed commit
    has as a parent (every listed commit is its ancestor: it stands for the unlisted commits
    between them and it, none of which touches the pathspec)."""
    import numpy as np
    n = shas.size
    heads = np.setdiff1d(np.arange(n), ref[ref >= 0])
    shas = np.append(shas, np.array([sha.encode()], dtype=shas.dtype))
    ptr = np.append(ptr, ptr[-1] + heads.size).astype(np.int64)
    return shas, ptr, np.concatenate([ref, heads]).astype(np.int64)


def parents_of(repo: Path | str, sha: str) -> list[str]:
    """The commit's own parents, first parent first (under a pathspec a listing rewrites them to
    the last commits touching the paths; these are the commit's)."""
    return run_git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]


def describe(repo: Path | str, sha: str) -> CommitInfo:
    """Full metadata of one commit, with the paths it changed (against its first parent)."""
    root = Path(repo)
    info = _parse_log(run_git(root, "log", "-1", f"--format={_FIELDS}", sha))[0]
    parents = parents_of(root, sha)
    # -z: each name as it is (without it git quotes a name with a byte past ASCII, a quote or a
    # newline: '"f\\351.txt"', quotes and escapes in the name)
    against = [parents[0]] if parents else ["--root"]
    try:
        names = run_git_bytes(root, "diff-tree", "-r", "-z", "--name-only", "--no-commit-id", *against, sha)
    except SpaceError:      # a tree git cannot read (a damaged repository): the commit is still named
        return info
    return CommitInfo(info.sha, info.subject, info.author, info.date,
                      tuple(os.fsdecode(n) for n in names.split(b"\0") if n))   # a byte not UTF-8 kept, as diff's hunks keep it
