"""Ref names git reads as one of several things: a tag and a branch both called `v2`, or a branch
named like the abbreviated sha the user meant. git takes one by its rules (refs/<name>, then
refs/tags/, refs/heads/, refs/remotes/: a ref before an object id) and warns `refname 'v2' is
ambiguous`; bisectk reads the name the same way (spaces/commits.py `resolve`), and says so here,
naming what was taken and what was not, where the warning had been dropped with git's stderr.

Abstractions
------------
ambiguities -- one line per --good/--bad whose name git warns about: what git reads it as, the
               other things of that name, and to name the one meant in full.
why_missing -- why a name reads as no commit, where git says more than that: HEAD on a branch
               with no commit yet, `@{u}` without an upstream, a reflog entry past its end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bisectk.run.process import run_tool
from bisectk.spaces import early

# git's lookup of a short name, in its order (refs.c, ref_rev_parse_rules); an object id comes after
_RULES = ("refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")


def _git(root: Path, *args: str):
    return run_tool(["git", *early.GIT_CONFIG, *args], cwd=root, env=early.git_env())


def _warned(root: Path, refs: Sequence[str]) -> list[str]:
    """The names git warns about while reading `refs` (as resolve reads them: each one's commit)."""
    known = early.ambiguous(root, refs)
    if known is not None:       # the walk's rev-parse read these very refs before the CLI loaded
        return list(known)
    try:
        proc = _git(root, "rev-parse", *(early.peeled(r) for r in refs))
    except OSError:
        return []
    return early.ambiguous_names(proc.stderr)


def _readings(root: Path, name: str) -> list[str]:
    """What `name` can be, in git's order: each ref of that name, then the object its hex names."""
    found = []
    # git's first rule is the name itself: HEAD, FETCH_HEAD, ORIG_HEAD (files in the git directory)
    rules = ("{}", *_RULES) if re.fullmatch(r"[A-Z_]*HEAD", name) else _RULES
    for rule in rules:
        full = rule.format(name)
        proc = _git(root, "rev-parse", "--verify", "--quiet", f"{full}^{{commit}}")
        if proc.returncode == 0 and proc.stdout.strip():
            found.append(f"{full} ({proc.stdout.strip()[:10]})")
    if _HEX.fullmatch(name):
        proc = _git(root, "rev-parse", f"--disambiguate={name}")
        for sha in proc.stdout.split() if proc.returncode == 0 else ():
            kind = _git(root, "cat-file", "-t", sha).stdout.strip() or "object"
            found.append(f"the {kind} {sha[:10]}")
    return found


def ambiguities(root: Path, given: Sequence[tuple[str, str]]) -> list[str]:
    """For each (option, ref) whose name git reads as one of several things, the line that says
    what it was read as (git's choice, which bisectk follows) and what else it names."""
    refs = [ref for _, ref in given if ref and not ref.startswith("-")]
    if not refs:
        return []
    lines = []
    for name in _warned(root, refs):
        readings = _readings(root, name)
        if len(readings) < 2:
            continue
        for option, ref in given:
            if ref == name or (ref.startswith(name) and ref[len(name)] in "~^@"):
                what = f"{option} {ref} is ambiguous" if ref == name else f"{option} {ref}: {name} is ambiguous"
                lines.append(f"{what}: git reads it as {readings[0]}, as git bisect would, not "
                             f"{' or '.join(readings[1:])}; name the one you mean in full")
    return lines


_HEADISH = re.compile(r"(HEAD|@)([~^].*)?")


def why_missing(root: Path, ref: str) -> str:
    """Why `ref` names no commit in `root`, as ': REASON', or '' where git says only that it does
    not (`Needed a single revision`). HEAD on an unborn branch (`git checkout --orphan`, a fresh
    `git init`) is named as that, since git's words for it are those of a typo; `main@{u}` without
    an upstream and `main@{9}` past the reflog's end get git's own reason."""
    from bisectk.spaces.early import peeled
    if _HEADISH.fullmatch(ref):
        branch = _git(root, "symbolic-ref", "-q", "HEAD").stdout.strip()
        if branch and _git(root, "rev-parse", "--verify", "--quiet", branch).returncode != 0:
            name = branch.removeprefix("refs/heads/")
            return f": HEAD is on the branch {name!r}, which has no commit yet; name a commit"
    try:
        said = _git(root, "rev-parse", "--verify", peeled(ref)).stderr
    except OSError:
        return ""
    reasons = [ln.removeprefix("fatal: ").strip() for ln in said.splitlines() if ln.startswith("fatal: ")]
    reasons = [r for r in reasons if r and r != "Needed a single revision"]
    return f": {reasons[0]}" if reasons else ""
