"""The history's walk, started before the CLI is loaded (issue 27: a command's fixed cost).

`bisectk bisect` spends its first ~0.15-0.2 s importing typer and its own modules and parsing the
options; at 30,000 commits git's `rev-list` takes ~0.25 s more, and it only began after that. Here
the raw arguments are read by hand, the refs resolved and the walk started in a thread at once;
`list_graph` takes its output when, and only when, it is the very command it would run itself
(the same repository root, the same resolved shas and options). Anything else -- another
subcommand, a pathspec, --find-fix, a ref git cannot resolve, an option read differently -- only
means the guess is not used: list_graph runs git itself, with its own checks and messages.

Abstractions
------------
GIT_CONFIG, git_env -- how bisectk runs git everywhere (spaces/commits.py's run_git too): hooks off,
                       no detached-head advice, no automatic gc, no signatures or colours in what
                       it parses, no submodule recursion; the caller's GIT_DIR & co dropped
                       (they would point a command at the user's index), the C locale.
start  -- read `bisect --repo R --good G... --bad B [--first-parent]` from argv and begin the walk.
take   -- list_graph's question: the walk's output if it ran exactly `argv` in `root`, else None
          (a walk that does not match is ended at once, never waited for).
drop_repo_env -- the same variables out of the runs' environment (bisect, triage, diff);
          repo_env_note, the words for a directory that is no repository while a GIT_DIR was
          set, which git would have followed: the --repo to give instead.
toplevel, resolved -- what the walk's one `git rev-parse` found (the --repo's top level, each
          ref's sha), so that open_repo and resolve do not ask git again.
ambiguous -- the names that rev-parse warned are ambiguous (a tag and a branch of one name), for
          spaces/refnames.py to say (git's warning is not printed through).
take_pool -- the CLI's question: the WorktreePool whose first checkout was begun here, if it is
          the one the command would open, else None (see below).
A walk still under way when the command leaves is ended by an exit handler: no git is left behind.

The first endpoint's worktree (issue 27: a big tree's checkout) is begun here too, once the walk
is under way: a WorktreePool is opened for the --jobs the command names and the good commit is
prepared in it (spaces/worktrees.py), while the main thread is still importing the CLI. The
command takes that pool (`take_pool`) only if it would have opened the same one itself (the same
repository, size and first commit; --executor local); otherwise, and at exit if nobody took it,
the pool is closed (its checkout waited for, its locks released).

Standard library only, and nothing of bisectk's: it runs before anything else is imported (the
pool comes from the caller's `open_pool`, which imports its module in the walk's thread, once git
is running).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisectk.names import shell_join     # standard library only itself (re)

# a user's settings that would change what bisectk reads or does: log.showSignature puts "No signature"
# / "Good signature" lines into `git log --format` output (a signer's common setting), color.ui=always
# colours it, submodule.recurse makes a checkout update submodules that spaces/submodules.py syncs itself,
# and a repository's i18n.commitEncoding (latin1) is also its log's output encoding unless one is
# named: its subjects and authors would come in bytes that bisectk reads as UTF-8 ('café' as 'caf�')
GIT_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false", "-c", "gc.auto=0",
              "-c", "log.showSignature=false", "-c", "color.ui=false", "-c", "submodule.recurse=false",
              "-c", "i18n.logOutputEncoding=UTF-8"]
REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
            "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE")
WALK = ["rev-list", "--topo-order", "--reverse", "--parents"]   # list_graph's listing, before its refs


DROPPED: dict[str, str] = {}     # what drop_repo_env took out, for repo_env_note


def drop_repo_env() -> None:
    """Take the caller's GIT_DIR & co out of this process's environment, and so out of every run's:
    set by a git hook, `git rebase -x` or a wrapper, they would point a subject's own git (a build's
    `git describe`, setuptools-scm, a test calling git) at the user's repository, its HEAD and its
    index, instead of the worktree or tree the run is in. bisectk's own git calls never read them."""
    for k in REPO_ENV:
        if k in os.environ:
            DROPPED[k] = os.environ.pop(k)


def repo_env_note() -> str:
    """For a directory that is no repository: the caller's GIT_DIR, which git would have followed
    there and bisectk does not (drop_repo_env), and the --repo that names what it points at (its
    GIT_WORK_TREE, the directory above a `.git`, or a bare repository itself); "" without one."""
    env = {**DROPPED, **{k: os.environ[k] for k in REPO_ENV if k in os.environ}}
    git_dir = env.get("GIT_DIR")
    if not git_dir:
        return ""
    full = os.path.abspath(git_dir)
    top = env.get("GIT_WORK_TREE") or (os.path.dirname(full) if os.path.basename(full) == ".git" else full)
    return (f"; GIT_DIR={git_dir} in your environment is not followed (each run's own git must see its "
            f"worktree): give --repo {shell_join([os.path.abspath(top)])}")


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REPO_ENV}
    env.update(LC_ALL="C", LANGUAGE="C")   # stable messages to quote in errors
    # a checkout that must fetch (a partial clone's promisor, LFS) fails with git's reason rather than
    # waiting, unseen behind the progress display, for a password typed at the terminal
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    return env


class _Walk:
    """One guessed walk: resolve the refs, then stream `git rev-list` into memory, in a thread."""

    def __init__(self, repo: str, bad: str, goods: list[str], first_parent: bool, pool_size: int | None = None,
                 open_pool: Callable[[str, int], Any] | None = None):
        self.keyed = threading.Event()          # set once the command is known (or the guess failed)
        self.pooled = threading.Event()         # set once the first checkout was begun (or not)
        self.pool: tuple[str, int, str, object] | None = None   # (root, size, sha, WorktreePool)
        self.pool_size = pool_size if open_pool is not None else None
        self.open_pool = open_pool
        self.key: tuple[str, tuple[str, ...]] | None = None
        self.out: bytes | None = None
        self.proc: subprocess.Popen | None = None
        self.ended = False
        self._lock = threading.Lock()
        self._args = (repo, bad, goods, first_parent)
        self.thread = threading.Thread(target=self._run, name="bisectk-early-walk", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        global _known
        repo, bad, goods, first_parent = self._args
        try:
            refs = [peeled(r) for r in (bad, *goods)]
            found = subprocess.run(["git", *GIT_CONFIG, "rev-parse", "--show-toplevel", *refs], cwd=repo,
                                   env=git_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   start_new_session=True)
            lines = found.stdout.splitlines()
            if found.returncode != 0 or len(lines) != 1 + len(refs):
                return
            root, b, shas = str(Path(lines[0]).resolve()), lines[1], list(dict.fromkeys(lines[2:]))
            _known = (_place(repo), root, dict(zip((bad, *goods), lines[1:])))
            _warned[:] = [root, *ambiguous_names(found.stderr)]
            if b in shas:
                return
            argv = (*WALK, *(["--first-parent"] if first_parent else []), b, *(f"^{g}" for g in shas))
            with self._lock:
                if self.ended:
                    return
                self.proc = subprocess.Popen(["git", *GIT_CONFIG, *argv], cwd=root, env=git_env(),
                                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL, start_new_session=True)
            self.key = (root, argv)
            self.keyed.set()
            if self.pool_size is not None:
                self._prepare(root, lines[2], self.pool_size)
            self.pooled.set()       # begun or not: take_pool never waits for the walk itself
            out, _ = self.proc.communicate()
            if self.proc.returncode == 0:
                self.out = out
        except (OSError, ValueError):   # no git, a vanished directory: list_graph says what is wrong
            pass
        finally:
            self.keyed.set()
            self.pooled.set()

    def _prepare(self, root: str, sha: str, size: int) -> None:
        """Open the pool the command would open and begin checking `sha` out in it."""
        try:
            pool = self.open_pool(root, size)
            pool.__enter__()
        except Exception:       # not a place for worktrees: the command's own pool says why
            return
        with self._lock:
            if self.ended:
                pool.close()
                return
            self.pool = (root, size, sha, pool)
        pool.prepare(sha)

    def take_pool(self, root: str, size: int, sha: str):
        """The pool begun here if it is the one asked for, else None (a pool not taken is closed)."""
        self.pooled.wait()
        with self._lock:
            pool, self.pool = self.pool, None
        if pool is None:
            return None
        if pool[:3] == (root, size, sha):
            return pool[3]
        pool[3].close()
        return None

    def end(self) -> None:
        with self._lock:
            self.ended = True
            proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        with self._lock:
            pool, self.pool = self.pool, None
        if pool is not None:        # nobody took it: its checkout is waited for, its locks released
            pool[3].close()


_walk: _Walk | None = None
_taken: _Walk | None = None       # the walk list_graph took (its pool, if any, not yet asked for)
# what the walk's rev-parse found: (the --repo directory, its top level, {ref: sha})
_known: tuple[str, str, dict[str, str]] | None = None
# the names that rev-parse warned are ambiguous (a tag and a branch of one name): [top level, name...]
_warned: list[str] = []


def _place(repo: str | Path) -> str:
    return str(Path(repo).expanduser().resolve())


def _found() -> tuple[str, str, dict[str, str]] | None:
    """What the walk's rev-parse found, once it has run (a few ms after start)."""
    walk = _walk
    if walk is not None:
        walk.keyed.wait()
    return _known


def toplevel(repo: str | Path) -> str | None:
    """The work tree's top level of the directory `repo`, as the walk's rev-parse found it, or None."""
    known = _found()
    return known[1] if known is not None and known[0] == _place(repo) else None


def peeled(ref: str) -> str:
    """`ref` as rev-parse is to name its commit: `ref^{commit}` (a tag names its commit); a message
    search (`:/fix the race`) as it is, since there the suffix would be read as part of the
    pattern, and it finds commits only."""
    return ref if ref.startswith(":/") else f"{ref}^{{commit}}"


def resolved(root: str | Path, ref: str) -> str | None:
    """The sha the walk's rev-parse resolved `ref^{commit}` to in the repository `root`, or None."""
    known = _found()
    return known[2].get(ref) if known is not None and known[1] == str(Path(root).resolve()) else None


def ambiguous_names(stderr: str) -> list[str]:
    """The names of git's `warning: refname 'NAME' is ambiguous.` lines, once each."""
    head, tail = "warning: refname '", "' is ambiguous."
    return list(dict.fromkeys(line[len(head):-len(tail)] for line in stderr.splitlines()
                              if line.startswith(head) and line.endswith(tail) and len(line) > len(head + tail)))


def ambiguous(root: str | Path, refs) -> tuple[str, ...] | None:
    """The names the walk's rev-parse warned are ambiguous, if it read every one of `refs` in the
    repository `root`; else None (spaces/refnames.py asks git itself)."""
    known = _found()
    if known is None or known[1] != str(Path(root).resolve()) or not set(refs) <= known[2].keys():
        return None
    return tuple(_warned[1:]) if _warned and _warned[0] == known[1] else ()


def start(argv: list[str], open_pool: Callable[[str, int], Any] | None = None) -> None:
    """Begin the walk `bisectk bisect` will ask for, if argv names one plainly (see the module
    docstring); otherwise do nothing. `open_pool(root, size)`: the WorktreePool the command would
    open (given by the caller: this module imports nothing of bisectk's); None: no early checkout."""
    global _walk
    if _walk is not None or not argv or argv[0] != "bisect" or os.environ.get("BISECTK_NO_EARLY"):
        return
    repo, goods, bads, first_parent = ".", [], [], False
    jobs, executor = "1", "local"
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg == "--" or name in ("--find-fix", "--manual", "--help"):
            return      # a pathspec, the other direction, no walk now: list_graph's own
        if name in ("--repo", "--good", "--bad", "--jobs", "--executor"):
            if not eq:
                if i + 1 >= len(argv):
                    return
                i, value = i + 1, argv[i + 1]
            if name == "--repo":
                repo = value
            elif name == "--jobs":
                jobs = value
            elif name == "--executor":
                executor = value
            else:
                (goods if name == "--good" else bads).append(value)
        elif arg == "--first-parent":
            first_parent = True
        i += 1
    if not goods or len(bads) != 1 or any(not r or r.startswith("-") for r in (*goods, *bads)):
        return
    # the worktrees the command would open: --executor local's (another executor makes none here)
    size = int(jobs) if executor == "local" and jobs.isdigit() and 1 <= int(jobs) <= 64 else None
    _walk = _Walk(repo, bads[0], goods, first_parent, size, open_pool)
    atexit.register(_walk.end)


def take_pool(root: Path | str, size: int, sha: str):
    """The WorktreePool begun early (module docstring) if it is the one of `root` and `size`
    whose first checkout is `sha`, else None; one that is not is closed. Asked once, by the CLI."""
    walk = _walk or _taken
    if walk is None:
        return None
    return walk.take_pool(str(Path(root).resolve()), size, sha)


def take(root: Path | str, argv: list[str] | tuple[str, ...]) -> bytes | None:
    """The early walk's output if it ran `git <argv>` in `root` (argv without the -c options),
    else None. Waits for a matching walk to finish; a walk that does not match is ended."""
    global _walk, _taken
    walk, _walk = _walk, None
    if walk is None:
        return None
    _taken = walk       # its pool may still be asked for
    walk.keyed.wait()
    if walk.key != (str(Path(root).resolve()), tuple(argv)):
        walk.end()
        return None
    walk.thread.join()
    return walk.out
