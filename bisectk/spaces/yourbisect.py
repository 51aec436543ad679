"""A `git bisect` of the user's own, in progress in the checkout bisectk is given.

While one runs (and was not started in its no-checkout mode), HEAD is the commit git bisect checked
out last, detached, not the user's branch: `--bad HEAD`, bisectk's default as `git bisect bad`
marks the commit checked out, takes that commit, which is rarely what a user who typed `bisectk
bisect --good v1.0` in the middle of their session meant. bisectk reads the session (git's own
files: BISECT_START, BISECT_TERMS, refs/bisect/) and says so in one line, naming the session's
own bad commit and the ref that names it; it never writes there (refs/bisect/ and BISECT_LOG
stay as git left them, and `git bisect` goes on where it was).

Abstractions
------------
names_head -- whether a ref the user gave is read from HEAD (`HEAD`, `@`, `HEAD~3`, `@{1}`).
head_note  -- the one line for the --good/--bad that name HEAD while a bisection of the user's
              moved it, or "" (no such ref, no bisection, or one that left HEAD alone).
marks_hint -- for `bisectk bisect --run ./t.sh` typed without --good in the middle of one (as
              `git bisect run` would be): the options that name the commits it has marked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bisectk.run.process import run_tool
from bisectk.spaces import early

_HEAD = re.compile(r"(HEAD|@)(?!\{-)([~^@{:].*)?")     # @{-1} is the branch checked out before


def names_head(ref: str) -> bool:
    """Whether git reads `ref` from HEAD: HEAD or @ itself, or with a suffix (~N, ^N, @{N}, ...)."""
    return bool(_HEAD.fullmatch(ref))


def _git(root: Path, *args: str) -> str | None:
    """stdout of `git <args>` in `root`, stripped; None where git fails."""
    try:
        proc = run_tool(["git", *early.GIT_CONFIG, *args], cwd=root, env=early.git_env())
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def head_note(root: Path, given: Sequence[tuple[str, str]]) -> str:
    """One line for the refs in `given` ((option, ref) pairs: `("--bad", "HEAD")`) that name HEAD,
    where a `git bisect` of the user's is in progress in `root` and HEAD is the commit it checked
    out; "" otherwise. Costs one git call where no ref names HEAD is never made."""
    heads = [(option, ref) for option, ref in given if names_head(ref)]
    if not heads:
        return ""
    paths = _git(root, "rev-parse", "--git-path", "BISECT_START", "--git-path", "BISECT_TERMS",
                 "--git-path", "BISECT_HEAD")
    if paths is None:
        return ""
    start, terms_file, bisect_head = (root / p for p in paths.splitlines())
    if not start.is_file() or bisect_head.exists():   # none, or no-checkout mode: HEAD was left alone
        return ""
    if _git(root, "symbolic-ref", "-q", "HEAD") is not None:
        return ""       # back on a branch of theirs: HEAD is what they checked out
    try:
        began = start.read_text(errors="replace").strip()
        words = terms_file.read_text(errors="replace").split() if terms_file.is_file() else []
    except OSError:
        return ""
    term_bad = words[0] if len(words) == 2 else "bad"
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD") or ""
    bad = _git(root, "rev-parse", "--verify", "-q", f"refs/bisect/{term_bad}")
    named = ", ".join(f"{option} {ref}" for option, ref in heads)
    began_on = f"branch '{began}'" if not re.fullmatch(r"[0-9a-f]{40}", began) else began[:10]
    theirs = f"; your bisection's {term_bad} commit is {bad[:10]}, refs/bisect/{term_bad} names it" if bad else ""
    return (f"{named}: HEAD is {head[:10]}, the commit your `git bisect` in progress checked out "
            f"(it began on {began_on}), not your branch{theirs}; your bisection is left as it is")


def marks_hint(repo: Path) -> str:
    """The --good/--bad options that name the commits a `git bisect` of the user's in progress in
    `repo` has marked (refs/bisect/<term>, refs/bisect/<term>-<sha>: its own terms), or "" where
    none is in progress (or it has no good commit yet). Skipped commits are not given: bisectk
    runs them itself."""
    paths = _git(repo, "rev-parse", "--git-path", "BISECT_START", "--git-path", "BISECT_TERMS")
    if paths is None:
        return ""
    start, terms_file = (Path(repo) / p for p in paths.splitlines())
    if not start.is_file():
        return ""
    try:
        words = terms_file.read_text(errors="replace").split() if terms_file.is_file() else []
    except OSError:
        words = []
    term_bad, term_good = words if len(words) == 2 else ("bad", "good")
    listed = _git(repo, "for-each-ref", "--format=%(refname)", f"refs/bisect/{term_good}-*") or ""
    goods = listed.split()
    if not goods:
        return ""
    bad = _git(repo, "rev-parse", "--verify", "-q", f"refs/bisect/{term_bad}")
    options = " ".join([*(f"--good {g}" for g in goods), *([f"--bad refs/bisect/{term_bad}"] if bad else [])])
    return f"; your `git bisect` in progress has marked them: {options}"
