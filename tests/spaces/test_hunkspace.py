"""The hunk space's points as the progress lines name them (bisectk/spaces/hunkspace.py)."""

from pathlib import Path

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


def test_every_unit_of_a_hunk_applied_is_the_tree_of_the_hunk_applied(tmp_path):
    """What lets diff's line pass take the hunk pass's verdict (engine/diff.py same_trees): a hunk's
    units, all of them, over the culprit hunks that do not split, make the tree the hunk pass ran
    under the hunks' ids, file for file; fewer units do not."""
    import hashlib

    def digest(root):
        h = hashlib.sha256()
        for p in sorted(root.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
        return h.hexdigest()
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, a, b in ((good, "x = 1\ny = 2\nz = 3\n", "k = 0\n"), (bad, "x = 10\n    y = 2\nw = 4\nz = 30\n", "k = 1\n")):
        side.mkdir()
        (side / "a.py").write_text(a)
        (side / "b.py").write_text(b)
    space = HunkSpace(good, bad, tmp_path / "scratch")
    try:
        (a_hunk, b_hunk) = space.hunks
        units = split_lines(a_hunk)
        assert len(units) > 1 and split_lines(b_hunk) == [b_hunk]
        space.add(units)
        space.workload([a_hunk.id, b_hunk.id]).prepare()
        whole = digest(space.workdir)
        lines = space.with_fixed([b_hunk.id])
        lines.workload([u.id for u in units]).prepare()
        assert digest(space.workdir) == whole
        lines.workload([u.id for u in units[:-1]]).prepare()
        assert digest(space.workdir) != whole
    finally:
        space.close()


def test_the_line_pass_is_given_only_the_hunk_pass_verdicts_of_its_own_trees():
    """engine/diff.py same_trees: a set of hunks is a line-pass point only where it holds every
    culprit hunk that does not split (the line pass applies them beneath every point) and no other
    hunk that does not split; a set judged two ways (a confirmation against it) is not given."""
    from types import SimpleNamespace

    from bisectk.engine.diff import same_trees
    from bisectk.outcome import Outcome
    from bisectk.search.tester import Attempt

    split = {"a.py:1-3": frozenset({"a.py:1-3#0", "a.py:1-3#1"}), "b.py:2-3": frozenset({"b.py:2-3#0", "b.py:2-3#1"})}
    whole = frozenset({"c.py:4"})
    tried = [({"a.py:1-3", "c.py:4"}, Outcome.UNRESOLVED),             # a.py's units over c.py: the same tree
             ({"a.py:1-3", "b.py:2-3", "c.py:4"}, Outcome.FAIL),
             ({"a.py:1-3"}, Outcome.PASS),                             # without c.py:4: no line-pass point
             ({"a.py:1-3", "c.py:4", "d.py:9"}, Outcome.FAIL),         # d.py:9 is no culprit: neither
             ({"b.py:2-3", "c.py:4"}, Outcome.PASS), ({"b.py:2-3", "c.py:4"}, Outcome.FAIL)]   # judged two ways
    attempts = [Attempt(i, frozenset(c), o, "split") for i, (c, o) in enumerate(tried, 1)]
    same = same_trees(SimpleNamespace(attempts=attempts), split, whole)
    assert same == {split["a.py:1-3"]: (Outcome.UNRESOLVED, frozenset({"a.py:1-3", "c.py:4"})),
                    split["a.py:1-3"] | split["b.py:2-3"]: (Outcome.FAIL, frozenset({"a.py:1-3", "b.py:2-3", "c.py:4"}))}


def _two_trees(tmp_path, *files):
    good, bad = tmp_path / "g", tmp_path / "b"
    for side in (good, bad):
        for rel in files:
            (side / rel).parent.mkdir(parents=True, exist_ok=True)
            (side / rel).write_text("x = 1\n" if side == good else "x = 2\n")
    return good, bad


def test_a_trees_name_inside_a_quoted_pattern_is_no_path_the_command_names(tmp_path):
    """Review j: trees named `g` and `b` and `--run 'grep -q "b = 2" k.py'` warned "the command
    names b, BAD": every word with a space in it was split as if it were a shell script. Only
    the command's own words, and the words of a `sh -c` script, are read as paths."""
    from bisectk.spaces.hunkspace import named_beside, named_inside
    good, bad = _two_trees(tmp_path, "k.py")
    for argv in (["grep", "-q", "b = 2", "k.py"], ["sh", "-c", 'grep -q "b = 2" k.py'],
                 ["python3", "-c", "import b ; print(1)"]):
        assert named_inside([argv], good, bad, tmp_path) is None, argv
        assert named_beside([argv], good, bad, tmp_path) is None, argv
    for argv in (["python3", "b/k.py"], ["sh", "-c", "python3 b/k.py"]):
        assert named_inside([argv], good, bad, tmp_path) == ("b/k.py", "BAD", "k.py"), argv
    assert named_inside([["run", "--file=b/k.py"]], good, bad, tmp_path) == ("--file=b/k.py", "BAD", "k.py")
    assert named_inside([["true"], ["sh", "-c", "cat b/k.py"]], good, bad, tmp_path) == ("b/k.py", "BAD", "k.py")


def test_the_words_of_a_command_are_read_from_its_own_directory_in_the_trees(tmp_path):
    """Review j: the checks read the command's words from the user's directory and GOOD's root,
    where a spec's `cwd = "k"` runs it from k/ (in the user's project and in each hybrid tree):
    `sh ../x.sh` from g/k names g/x.sh, which the hybrid has at the same place, and was warned of
    as a file inside GOOD."""
    from bisectk.spaces.hunkspace import named_inside
    good, bad = _two_trees(tmp_path, "k/run.sh", "x.sh")
    assert named_inside([["sh", "../x.sh"]], good, bad, good / "k", Path("k")) is None
    assert named_inside([["sh", "run.sh"]], good, bad, good / "k", Path("k")) is None
    # from the tree's root (a spec's `cwd` GOOD does not have), run.sh is not where k/run.sh is
    assert named_inside([["sh", "run.sh"]], good, bad, good / "k", Path(".")) == ("run.sh", "GOOD", "k/run.sh")
