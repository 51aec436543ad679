"""Where the worktree cache of a repository lives: outside every checkout.

The worktrees are kept in $XDG_CACHE_HOME/bisectk/worktrees/<key>/ (~/.cache when XDG_CACHE_HOME is
unset), because many tools look for their configuration in the parent directories of where they
run: a worktree under the user's .git/ (where bisectk kept them before) made pytest read the
checkout's pytest.ini, rootdir and conftest.py, pyenv its .python-version, cargo its workspace,
node its node_modules -- the files of HEAD, while testing an old commit -- and bisect to a wrong
commit. git's own admin directories stay in <git-common-dir>/worktrees/, as git designs them.

Abstractions
------------
cache_roots  -- where cache directories may be, preferred first: the cache home, then the
                fallback <tempdir>/bisectk-<uid>/worktrees/ (made 0700, and used only if this user
                owns it and nobody else may enter it).
cache_root   -- the first of them that can be written and is not inside the checkout (a cache home
                under it would put the checkout back among the ancestors); else a SpaceError.
cache_dir_of -- the repository's cache directory: <root>/<key>, <key> being the top level's name
                and 12 hex digits of the git common directory's path.
claim        -- make a cache directory the repository's: its `repo` file records the git common
                directory, so that a second repository whose key collides takes the next key
                (<key>-2, ...) and `ledger gc` knows the cache directories whose repository is gone.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

from bisectk.spaces.commits import SpaceError, git_common_dir

LEGACY = "bisectk-worktrees"    # <git-common-dir>/bisectk-worktrees: where bisectk kept them before
OWNER = "repo"                  # in a cache directory: the git common dir it belongs to
KEYS = 100                      # <key>, <key>-2, ... <key>-100: keys tried before giving up


def cache_roots() -> list[Path]:
    """Where cache directories may be, preferred first (made or not): $XDG_CACHE_HOME/bisectk/
    worktrees (~/.cache when unset, if the home directory exists; a relative XDG_CACHE_HOME is
    ignored, as the spec says) and the fallback <tempdir>/bisectk-<uid>/worktrees."""
    tmp = _fallback()
    home = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(home):
        user = os.path.expanduser("~")      # "~" if no home is known
        if not os.path.isdir(user):         # HOME unset or gone (HOME=/nonexistent): not made here
            return [tmp]
        home = os.path.join(user, ".cache")
    return [Path(home) / "bisectk" / "worktrees", tmp]


def _fallback() -> Path:
    return Path(tempfile.gettempdir()) / f"bisectk-{os.getuid()}" / "worktrees"


def writable(d: Path) -> None:
    """Make `d` if need be and write a file in it (os.access would answer yes to root on a
    read-only directory); OSError if that cannot be done."""
    d.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".probe-", dir=d)
    os.close(fd)
    os.unlink(probe)


def _private(top: Path) -> None:
    """<tempdir>/bisectk-<uid>, made 0700; OSError unless this user owns it and nobody else may
    enter it (anyone may create a name in /tmp first)."""
    try:
        top.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(top)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{top} is not a directory of this user's alone")


def cache_root(outside: tuple[Path, ...] = ()) -> Path:
    """The first of cache_roots() that can be written and is under none of `outside` (the
    checkout and its git directory), made; else SpaceError."""
    tried: list[str] = []
    for root in cache_roots():
        try:
            if any(root.resolve().is_relative_to(o) for o in outside):
                tried.append(f"{root} is inside the repository")
                continue
            if root == _fallback():
                _private(root.parent)
            writable(root)
            return root
        except OSError as exc:
            tried.append(f"{root}: {getattr(exc, 'strerror', None) or exc}")
    raise SpaceError("no place to keep the worktrees bisect checks commits out in: " + "; ".join(tried)
                     + " (set XDG_CACHE_HOME to a directory you can write)")


def key_of(common: Path) -> str:
    """<the repository's name>-<12 hex digits of its git common dir's path>."""
    name = common.parent.name if common.name == ".git" else common.name.removesuffix(".git")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40] or "repo"
    return f"{name}-{hashlib.sha256(os.fsencode(common)).hexdigest()[:12]}"


def owner(d: Path) -> str | None:
    try:
        return (d / OWNER).read_text().strip()
    except OSError:
        return None


def slot(root: Path, common: Path) -> Path:
    """The cache directory under `root` that `common` has claimed, else the first unclaimed one of
    its keys (nothing made: WorktreePool claims it)."""
    key = key_of(common)
    for n in range(1, KEYS + 1):
        d = root / (key if n == 1 else f"{key}-{n}")
        if owner(d) in (None, str(common)):
            return d
    raise SpaceError(f"{root} holds {KEYS} cache directories named {key}*, none of them {common}'s")


def claim(d: Path, common: Path) -> bool:
    """Make `d` the cache directory of `common`: whether it is (False: another repository's)."""
    d.mkdir(parents=True, exist_ok=True)
    record = d / OWNER
    if owner(d) is None:
        # linked into place whole, so that a concurrent reader never sees it half-written
        fd, tmp = tempfile.mkstemp(prefix=".repo-", dir=d)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{common}\n")
            os.link(tmp, record)
        except FileExistsError:
            pass                    # another process claimed it first: read below whose it is
        except OSError:             # a file system without hard links: created exclusively instead
            try:
                with open(record, "x") as f:
                    f.write(f"{common}\n")
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    return owner(d) == str(common)


def cache_dir_of(repo: Path | str, common: Path | None = None) -> Path:
    """The repository's cache directory (module doc); made by claim (WorktreePool)."""
    repo = Path(repo)
    common = common or git_common_dir(repo)
    return slot(cache_root(outside=(repo.resolve(), common)), common)


def remove_if_unused(cache: Path) -> None:
    """Remove a cache directory that holds nothing but its `repo` record."""
    try:
        if {p.name for p in cache.iterdir()} <= {OWNER}:
            (cache / OWNER).unlink(missing_ok=True)
            cache.rmdir()
    except OSError:
        pass            # gone already, or claimed and filled meanwhile
