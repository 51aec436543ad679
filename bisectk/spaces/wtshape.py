"""What besides the commit decides the files a checkout writes, and the worktree's record of it:
a cached worktree made under other settings (a filter, line endings, replace refs, a sparse
checkout) is made again (worktrees.py), and a switch across a `.gitattributes` change writes
every file.

Abstractions
------------
checkout_shape   -- a digest of those settings ('' when none is set).
shape_of / record_shape -- the digest a worktree was made under (wt-N.shape beside it).
has_attributes / attributes_differ -- whether a switch may cross a `.gitattributes` change.
trust            -- `safe.directory` for a worktree of a repository another user owns.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from bisectk.spaces.commits import SpaceError, git_ok, run_git


# what decides the bytes a checkout writes besides the commit: filters (git-lfs's smudge among them)
# and line endings; and the repository's own attributes file. Not core.filemode or core.symlinks:
# `git init` writes them for its file system, and they change no file's content. Whether git reads
# its replace refs (core.useReplaceRefs) decides which tree a commit's sha checks out. A sparse
# checkout: `git worktree add` gives each worktree the patterns of the checkout it is run from
_SHAPING = (r"^(filter\..*\.(smudge|process|required)|core\.(autocrlf|eol|checkroundtripencoding|usereplacerefs"
            r"|sparsecheckout|sparsecheckoutcone|attributesfile)|lfs\.)")


def _user_attributes(said: str) -> str:
    """The user's own attributes file (core.attributesFile, else git's default
    $XDG_CONFIG_HOME/git/attributes or ~/.config/git/attributes), which applies to every
    checkout as <git dir>/info/attributes does; '' when there is none."""
    m = re.search(r"^core\.attributesfile (.*)$", said, re.M | re.I)
    if m:
        path = os.path.expanduser(m.group(1))
    else:
        path = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "git", "attributes")
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _sparse_patterns(repo: Path, said: str) -> str:
    """The patterns of the user's sparse checkout ('' when it is not sparse): a worktree made
    under others (`git sparse-checkout set` or `disable` since) has other files."""
    if not re.search(r"^core\.sparsecheckout true$", said, re.M | re.I):
        return ""
    try:
        return Path(repo, run_git(repo, "rev-parse", "--git-path", "info/sparse-checkout")).read_text(errors="replace")
    except (OSError, SpaceError):
        return ""


def _replacements(repo: Path, common: Path) -> str:
    """The replace refs (`git replace`): each makes a sha check out another object's content, so
    a commit's sha no longer pins its tree. '' without any (one stat when refs/replace/ is absent
    and nothing is packed) or when git is told to ignore them (GIT_NO_REPLACE_OBJECTS)."""
    if os.environ.get("GIT_NO_REPLACE_OBJECTS"):
        return ""
    base = os.environ.get("GIT_REPLACE_REF_BASE") or "refs/replace/"
    if base == "refs/replace/" and not (common / "refs" / "replace").is_dir():
        try:
            packed = (common / "packed-refs").read_bytes()
        except OSError:
            return ""
        if b" refs/replace/" not in packed:
            return ""
    return run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)", base)


def has_attributes(dirs: list[str]) -> bool:
    """Whether any of these directories holds a .gitattributes (a stat each)."""
    return any(os.path.lexists(os.path.join(d, ".gitattributes")) for d in dirs)


def attributes_differ(path: Path, old: str, new: str) -> bool:
    """Whether any .gitattributes differs between commits `old` and `new` (a tree diff: unchanged
    directories are not walked)."""
    return not git_ok(path, "diff-tree", "-r", "--quiet", old, new, "--", ":(glob)**/.gitattributes")


def checkout_shape(repo: Path, common: Path) -> str:
    """A digest of what, besides the commit, decides the files a checkout writes ('' when none of
    it is set, so that a plain repository's keys are what they were): the shaping config
    (_SHAPING), <git dir>/info/attributes, the user's attributes file, GIT_LFS_SKIP_SMUDGE, the
    replace refs and the sparse checkout's patterns."""
    try:
        said = run_git(repo, "config", "--get-regexp", _SHAPING)
    except SpaceError:              # exit 1: no such key
        said = ""
    mine = _user_attributes(said)
    # the attributes file's name shapes nothing, its content does (`mine`): a file named but
    # missing or empty keeps the shape a user without one has
    said = "\n".join(ln for ln in said.split("\n") if not re.match(r"core\.attributesfile ", ln, re.I))
    try:
        attributes = (common / "info" / "attributes").read_text(errors="replace")
    except OSError:
        attributes = ""
    skip = os.environ.get("GIT_LFS_SKIP_SMUDGE", "")
    replaced = _replacements(repo, common)
    if not (said or attributes or skip or replaced or mine):
        return ""
    sparse = _sparse_patterns(repo, said)
    mine = "attributes file: " + mine if mine else ""
    parts = (said, attributes, skip) + tuple(p for p in (replaced, sparse, mine) if p)   # keys made before stay
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def shape_of(path: Path) -> str:
    try:
        return Path(f"{path}.shape").read_text().strip()
    except OSError:
        return ""


def record_shape(path: Path, shape: str) -> None:
    shaped = Path(f"{path}.shape")
    if shape:
        shaped.write_text(shape + "\n")
    else:
        shaped.unlink(missing_ok=True)


def trust(path: Path) -> None:
    """Root in a repository another user owns (a CI container's checkout, which the user declared
    safe to git): the worktree's admin directory is given to that user (release), so git run by
    root, ours and the runs', must be told the worktree is safe too (`safe.directory` through
    GIT_CONFIG_COUNT, which this process and every run inherit), once per worktree."""
    n = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    if any(os.environ.get(f"GIT_CONFIG_KEY_{i}") == "safe.directory"
           and os.environ.get(f"GIT_CONFIG_VALUE_{i}") == str(path) for i in range(n)):
        return
    os.environ.update({f"GIT_CONFIG_KEY_{n}": "safe.directory", f"GIT_CONFIG_VALUE_{n}": str(path),
                       "GIT_CONFIG_COUNT": str(n + 1)})
