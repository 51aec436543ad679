"""A --good that shares no history with --bad: another root's commit (a notes ref, gh-pages).

git bisect takes a good that is no ancestor of bad and tests the merge bases of the two first
(spaces/commits.py `_merge_bases`). A good with no merge base at all lies in a history of its own:
`refs/notes/commits` (the commits git notes writes), an orphan `gh-pages` branch, another project
fetched into the same repository. It excludes nothing, so git bisects all of bad's history down to
its root and never runs the good commit. bisectk verifies its endpoints: it ran that commit, whose
tree is not the project's at all, saw the test fail there, and said "the good configuration fails
too ... the failure does not depend on these differences", which sends the user after flakiness.

Abstractions
------------
unrelated -- the SpaceError for the first good that shares no commit with bad, or None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def unrelated(root: Path, b: str, strangers: Sequence[str], named: dict[str, str], bad: str,
              ends: tuple[str, str]):
    """For the first of `strangers` (goods that are not ancestors of bad) that has no merge base
    with `b`: a SpaceError saying so (a notes ref named as such), for the caller to raise; None
    when every one shares history with bad."""
    from bisectk.spaces.commits import SpaceError, git_ok, run_git
    old, new = ends
    for g in strangers:
        if git_ok(root, "merge-base", b, g):
            continue
        try:
            full = run_git(root, "rev-parse", "--symbolic-full-name", named[g])
        except SpaceError:
            full = ""
        what = ("git notes' own history (the notes attached to commits), not the project's"
                if full.startswith("refs/notes/") else "a history of its own (an orphan branch, another project's)")
        return SpaceError(f"{old} {named[g]} ({g[:10]}) shares no commit with {new} {bad} ({b[:10]}): it is "
                          f"{what}, so it says nothing about {new}'s commits; give {old} a commit of {new}'s history")
    return None
