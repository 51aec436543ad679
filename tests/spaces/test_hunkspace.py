"""The hunk space's points as the progress lines name them (bisectk/spaces/hunkspace.py)."""

from bisectk.spaces.linediff import split_lines
from bisectk.spaces.hunkspace import HunkSpace


def test_the_line_pass_counts_line_units_even_when_every_culprit_hunk_splits(tmp_path):
    """The line pass's view applies the culprit hunks that do not split beneath every point; when
    each culprit hunk splits there are none, and its runs were labelled '1 of 1 hunk(s)'."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, text in ((good, "a = 1\nb = 2\n"), (bad, "a = 1\nx = 7\ny = 8\nb = 2\n")):
        side.mkdir()
        (side / "run.py").write_text(text)
    space = HunkSpace(good, bad, tmp_path / "scratch")
    try:
        (hunk,) = space.hunks
        units = split_lines(hunk)
        space.add(units)
        assert space.label([hunk.id]) == "1 of 1 hunk(s)"
        lines = space.with_fixed([])
        assert lines.label([units[1].id]) == "1 line unit(s)"
        assert lines.ids([units[1].id]) == [units[1].id]
        assert space.label([hunk.id]) == "1 of 1 hunk(s)"     # the view leaves the hunk pass's space as it was
    finally:
        space.close()
