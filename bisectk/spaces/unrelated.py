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
unrelated -- the words refusing a good that shares no commit with bad (a notes ref named as such).
"""

from __future__ import annotations


def unrelated(good: str, g: str, bad: str, b: str, ends: tuple[str, str], full_name: str) -> str:
    """The words refusing the good `good` (sha `g`, its full ref name `full_name` or "") that
    shares no commit with the bad `bad` (sha `b`); spaces/commits.py asks git which one that is."""
    old, new = ends
    what = ("git notes' own history (the notes attached to commits), not the project's"
            if full_name.startswith("refs/notes/") else "a history of its own (an orphan branch, another project's)")
    return (f"{old} {good} ({g[:10]}) shares no commit with {new} {bad} ({b[:10]}): it is {what}, so it says "
            f"nothing about {new}'s commits; give {old} a commit of {new}'s history")
