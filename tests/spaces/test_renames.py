"""Renamed files in a tree diff: a move is a hunk of its own, apart from the content's hunks, in the
hybrids, in the printed patch, and in the answer diff gives."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bisectk.spaces.hunks import Entry, alike, line_counts, split_text, unified_diff
from bisectk.spaces.hybrid import Scratch
from bisectk.spaces.linediff import split_lines
from bisectk.spaces.renames import pairs
from bisectk.spaces.treediff import diff_paths
from tests.spaces.test_hunks import _patched, snapshot
from tests.conftest import bisectk

BODY = "".join(f"V{i} = {i}\n" for i in range(1, 21))


def _entry(text: str, mode: int = 0o644) -> Entry:
    return Entry(text.encode(), mode)


def similarity(a: Entry, b: Entry) -> int:
    """How alike two text entries are, as a move is judged (hunks.alike over their lines)."""
    return alike(*(line_counts(split_text(e.data.decode())) for e in (a, b)))


def test_pairs_take_equal_contents_first_then_the_most_alike_and_each_file_once():
    edited = BODY.replace("V3 = 3\n", "V3 = 300\n")
    gone = {"util.py": _entry(BODY), "old/k.py": _entry(edited), "notes.txt": _entry("a\nb\nc\n"),
            "link": Entry(b"util.py", 0o777, link=True)}
    new = {"helpers.py": _entry(BODY.replace("V9 = 9\n", "V9 = 90\n")), "new/k.py": _entry(edited),
           "other.txt": _entry("x\ny\nz\n"), "link2": Entry(b"util.py", 0o777, link=True)}
    assert sorted(pairs(gone, new)) == [("old/k.py", "new/k.py"), ("util.py", "helpers.py")]
    assert similarity(_entry(BODY), _entry(BODY.replace("V9 = 9\n", "V9 = 90\n"))) == 95
    assert similarity(_entry("a\nb\n"), _entry("x\ny\n")) == 0
    # two equally alike candidates: the one in the same directory is the move
    assert pairs({"a/x.py": _entry(BODY)}, {"b/y.py": _entry(BODY), "a/y.py": _entry(BODY)}) == [("a/x.py", "a/y.py")]
    # below half alike: a deletion and an addition, as git has them
    half = "".join(f"W{i}\n" for i in range(11)) + "".join(BODY.splitlines(True)[:9])
    assert similarity(_entry(BODY), _entry(half)) < 50 and pairs({"a": _entry(BODY)}, {"b": _entry(half)}) == []


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """A tree pair with every kind of move: one file moved unchanged into another directory, one
    renamed with two lines changed and made executable, one moved to CRLF line endings, a binary
    file moved unchanged; and a deletion and an addition too unlike to be a move."""
    tmp_path = tmp_path_factory.mktemp("moved")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        (side / "pkg").mkdir(parents=True)
    (good / "pkg" / "same.py").write_text(BODY)
    (bad / "lib").mkdir()
    (bad / "lib" / "same.py").write_text(BODY)
    (good / "util.py").write_text(BODY + "LIM = 100\n")
    (bad / "helpers.py").write_text(BODY.replace("V3 = 3\n", "V3 = 300\n").replace("V17 = 17\n", "") + "LIM = 100\n")
    (bad / "helpers.py").chmod(0o755)
    (good / "pkg" / "crlf.txt").write_bytes(b"one\ntwo\nthree\n")
    (bad / "pkg" / "crlf2.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (good / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (bad / "blob2.bin").write_bytes(bytes(range(256)) * 4)
    (good / "gone.txt").write_text("only good\n")
    (bad / "came.txt").write_text("only bad\n")
    return good, bad


def _reference(good: dict, hunks) -> dict:
    """GOOD's snapshot with `hunks` applied, written here apart from bisectk's code: each file's
    lines replaced bottom to top, then moved where its rename hunk is taken."""
    out = dict(good)
    for rel in {h.file for h in hunks}:
        hs = [h for h in hunks if h.file == rel]
        if hs[0].kind in ("add", "delete", "replace"):
            if hs[0].bad_entry is None:
                out.pop(rel)
            else:
                out[rel] = (hs[0].bad_entry.data, bool(hs[0].bad_entry.mode & 0o100))
            continue
        data, exe = good[rel]
        lines = data.decode("utf-8", "surrogateescape").splitlines(True)
        for h in sorted((h for h in hs if h.kind == "text"), key=lambda h: (h.good_lines, h.bad_lines), reverse=True):
            lines[h.good_lines[0] - 1:h.good_lines[1] - 1] = list(h.new)
        exe = next((bool(h.modes[1] & 0o100) for h in hs if h.kind == "mode"), exe)
        to = next((h.to for h in hs if h.kind == "rename"), None)
        if to:
            out.pop(rel)
        out[to or rel] = ("".join(lines).encode("utf-8", "surrogateescape"), exe)
    return out


def test_a_move_is_a_hunk_apart_from_its_content_and_every_subset_is_a_tree(moved, tmp_path):
    good, bad = moved
    hunks = diff_paths(good, bad)
    kinds = sorted((h.id, h.kind, h.to) for h in hunks if h.kind in ("rename", "add", "delete", "mode"))
    assert kinds == [("blob.bin:rename", "rename", "blob2.bin"), ("came.txt:add", "add", None),
                     ("gone.txt:delete", "delete", None), ("pkg/crlf.txt:rename", "rename", "pkg/crlf2.txt"),
                     ("pkg/same.py:rename", "rename", "lib/same.py"), ("util.py:mode", "mode", None),
                     ("util.py:rename", "rename", "helpers.py")], kinds
    assert {h.id for h in hunks if h.kind == "text" and h.file == "util.py"} == {"util.py:3", "util.py:17"}
    assert next(h for h in hunks if h.id == "util.py:rename").to_dict()["to"] == "helpers.py"
    g = snapshot(good)
    s = Scratch(good, tmp_path / "scratch", bad=bad)
    ids = {h.id: h for h in hunks}
    for subset in ([], hunks, [ids["util.py:3"]], [ids["util.py:rename"]], [ids["util.py:rename"], ids["util.py:17"]],
                   [ids["util.py:3"], ids["util.py:mode"]], [], hunks):
        assert snapshot(s.apply(subset)) == _reference(g, subset), [h.id for h in subset]
    assert snapshot(s.root) == snapshot(bad)
    shutil.rmtree(s.root)


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_subset_of_moves_and_lines_is_the_same_tree_applied_and_patched(moved, data):
    """Random subsets (lines split or not): the hybrid Scratch writes and what `patch -p1` makes of
    the printed diff are both the reference; one Scratch serves every subset in turn."""
    good, bad = moved
    hunks = diff_paths(good, bad)
    units = [u for h in hunks for u in (split_lines(h) if data.draw(st.booleans()) else [h])]
    subset = [u for u in units if data.draw(st.booleans())]
    g = snapshot(good)
    with tempfile.TemporaryDirectory() as d:
        plain = [h for h in subset if not h.id.startswith("blob")]     # a binary file: `patch` has no bytes for it
        text = unified_diff(plain)
        assert {k: v for k, v in _patched(good, text, Path(d)).items() if not k.startswith("blob")} == \
            {k: v for k, v in _reference(g, plain).items() if not k.startswith("blob")}, text
        s = Scratch(good, Path(d) / "scratch", bad=bad)
        assert snapshot(s.apply(subset)) == _reference(g, subset)
        assert snapshot(s.apply(units)) == snapshot(bad)


def test_the_printed_move_is_gits_and_git_apply_takes_it(moved, tmp_path):
    good, bad = moved
    hunks = diff_paths(good, bad)
    text = unified_diff([h for h in hunks if h.file == "util.py"])
    assert text.startswith("diff --git a/util.py b/helpers.py\nold mode 100644\nnew mode 100755\n"
                           "similarity index 9"), text
    assert "rename from util.py\nrename to helpers.py\n--- a/util.py\n+++ b/helpers.py\n" in text
    alone = next(h for h in hunks if h.id == "pkg/same.py:rename").unified()
    assert alone == ("diff --git a/pkg/same.py b/lib/same.py\nsimilarity index 100%\nrename from pkg/same.py\n"
                     "rename to lib/same.py\n")
    copy = tmp_path / "copy"
    shutil.copytree(good, copy)
    import subprocess
    plain = [h for h in hunks if not h.file.startswith("blob")]
    p = subprocess.run(["git", "apply", "-p1", "--unsafe-paths", "-"], input=unified_diff(plain), text=True,
                       cwd=copy, capture_output=True)
    assert p.returncode == 0, p.stderr
    want = {k: v for k, v in snapshot(bad).items() if not k.startswith("blob")}
    assert {k: v for k, v in snapshot(copy).items() if not k.startswith("blob")} == want


def test_diff_answers_the_changed_line_of_a_renamed_file_not_the_whole_new_file(tmp_path):
    """util.py renamed helpers.py (its import changed with it) and one of its lines changed, which
    is the failure. Before, the move was a deletion and an addition: the answer was the whole new
    file (and the import). Now it is the one line."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "util.py").write_text(BODY + "LIM = 100\n")
    (bad / "helpers.py").write_text(BODY.replace("V3 = 3\n", "V3 = 300\n") + "LIM = 100\n")
    (good / "t.py").write_text("import util as u\nimport sys\nsys.exit(0 if u.V3 < u.LIM else 1)\n")
    (bad / "t.py").write_text("import helpers as u\nimport sys\nsys.exit(0 if u.V3 < u.LIM else 1)\n")
    p = bisectk("diff", good, bad, "--run", "python t.py", "--json", "--ledger", tmp_path / "l.db", check=0)
    doc = json.loads(p.stdout)
    assert [h["id"] for h in doc["culprit_hunks"]] == ["util.py:3"], (p.stdout, p.stderr[-2000:])
    assert "+V3 = 300" in doc["culprit_hunks"][0]["text"]
    index = sorted((h["id"], h.get("to")) for h in doc["hunk_index"])
    assert index == [("t.py:1", None), ("util.py:3", None), ("util.py:rename", "helpers.py")], index
