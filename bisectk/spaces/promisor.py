"""A partial clone's promisor remote: why a commit's files are missing, and what the user can do.

A clone made with `--filter=blob:none` (or `tree:0`) holds the history's commits but fetches each
commit's files from its promisor remote when a checkout needs them, as `git bisect`'s checkout
does. With that remote gone (a deleted directory, no network, a revoked token) every checkout of
a commit not yet fetched fails, bisectk's as git's; no other --good or --bad helps, so the reason
says which remote it is and what to do rather than "give --good another commit".

Abstractions
------------
PARTIAL_CLONE -- the words that open `promisor_note`.
EVERY_COMMIT  -- the words of a reason that another commit would not avoid (here and in
                 spaces/filtertool.py), by which the engine knows not to advise another --good.
promisor_note -- for a repository that is a partial clone: which remote its files come from,
                 and what to do; "" otherwise.
"""

from __future__ import annotations

from pathlib import Path

PARTIAL_CLONE = "this repository is a partial clone"
# said of a reason that no other --good or --bad avoids (engine/endpoints.py gives no such advice)
EVERY_COMMIT = "every commit that needs them fails the same way"


def promisor_note(repo: Path | str) -> str:
    """What to do about a commit whose files a partial clone lacks: make its promisor remote
    (`remote.NAME.promisor`, or the older `extensions.partialclone`) reachable, or bisect in a
    full clone. "" when the repository is not a partial clone."""
    from bisectk.spaces.commits import SpaceError, run_git
    try:
        listed = run_git(repo, "config", "--get-regexp", r"^(remote\..*\.promisor|extensions\.partialclone)$")
    except SpaceError:
        return ""       # no such key: a full clone (whose missing object is damage, not a promise)
    names = []
    for line in listed.splitlines():
        key, _, value = line.partition(" ")
        if key.lower() == "extensions.partialclone" and value:
            names.append(value)
        elif key.lower().endswith(".promisor") and value.lower() in ("true", "yes", "on", "1"):
            names.append(key[len("remote."):-len(".promisor")])
    if not names:
        return ""
    name = names[0]
    try:
        url = run_git(repo, "config", "--get", f"remote.{name}.url")
    except SpaceError:
        url = ""
    where = f"its remote {name} ({url})" if url else f"its remote {name}"
    return (f"{PARTIAL_CLONE}: a checkout fetches the commit's files from {where}, which could not give "
            f"them, so {EVERY_COMMIT}: make that remote reachable, or bisect in a full clone (git clone without --filter)")
