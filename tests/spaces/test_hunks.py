"""Hunks: splitting GOOD/BAD differences, applying subsets, the line pass, unified diffs."""

import difflib
import hashlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bisectk.spaces.commits import SpaceError
from bisectk.spaces.hunks import apply_lines, join_lines, unified_diff
from bisectk.spaces.hybrid import Scratch, materialise
from bisectk.spaces.linediff import split_lines
from bisectk.spaces.treediff import IGNORED, diff_paths

_GEN = Path(__file__).resolve().parents[1] / "fixtures" / "diffsrc" / "kernelpair.py"
_spec = importlib.util.spec_from_file_location("kernelpair", _GEN)
kernelpair = importlib.util.module_from_spec(_spec)
sys.modules["kernelpair"] = kernelpair
_spec.loader.exec_module(kernelpair)

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- helpers: an independent view of trees and an independent way to apply hunks ----------------

def snapshot(root: Path) -> dict[str, tuple]:
    """rel -> (content or link target, executable?) for everything a diff looks at."""
    root = Path(root)
    if root.is_file():
        return {root.name: (root.read_bytes(), os.access(root, os.X_OK))}
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in IGNORED and not os.path.islink(os.path.join(dirpath, d))]
        links = [d for d in os.listdir(dirpath) if os.path.islink(os.path.join(dirpath, d))]
        for name in set(filenames) | set(links):
            if name in IGNORED:
                continue
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            out[rel] = ("->" + os.readlink(p),) if p.is_symlink() else (p.read_bytes(), os.access(p, os.X_OK))
    return out


def digest(root: Path) -> str:
    """Every byte, mode and mtime under root (IGNORED included): proves GOOD/BAD were not touched."""
    h = hashlib.sha256()
    paths = [Path(root)] if Path(root).is_file() else sorted(Path(root).rglob("*"))
    for p in paths:
        st_ = p.lstat()
        h.update(f"{p}|{st_.st_mode}|{st_.st_mtime_ns}".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


def reference(good: dict, bad: dict, hunks) -> dict:
    """GOOD's snapshot with `hunks` applied, bottom to top by splicing line lists."""
    out = dict(good)
    by_file = {}
    for h in hunks:
        by_file.setdefault(h.file, []).append(h)
    for rel, hs in by_file.items():
        if hs[0].kind == "retype":
            for sub, _, _ in hs[0].tree:
                if sub in bad:
                    out[sub] = bad[sub]
                else:
                    out.pop(sub, None)
            continue
        if hs[0].kind in ("add", "delete", "replace"):
            if rel in bad:
                out[rel] = bad[rel]
            else:
                out.pop(rel)
            continue
        data, exe = good[rel]
        lines = data.decode().split("\n")
        lines = [s + "\n" for s in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        # bottom to top; at one position, later BAD lines first so earlier ones end up on top
        for h in sorted(hs, key=lambda h: (h.good_lines[0], h.good_lines[1], h.bad_lines[0]), reverse=True):
            if h.kind == "mode":
                exe = bad[rel][1]
                continue
            s, e = h.good_lines
            lines[s - 1:e - 1] = list(h.new)
        # a line given a newline (GOOD's last, with lines put after it) gets the file's own end:
        # CRLF where every line that ends ends so, else LF
        ends = [s.endswith("\r\n") for s in lines if s.endswith("\n")]
        eol = "\r\n" if ends and all(ends) else "\n"
        text = "".join(s if s.endswith("\n") or i == len(lines) - 1 else s + eol for i, s in enumerate(lines))
        out[rel] = (text.encode(), exe)
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    p = kernelpair.make_pair(root, hunks=40, culprit="pair", breakers=2)
    before = (digest(p.good), digest(p.bad))
    hunks = diff_paths(p.good, p.bad)
    yield p, hunks, snapshot(p.good), snapshot(p.bad)
    assert (digest(p.good), digest(p.bad)) == before, "GOOD or BAD was modified"


# -- splitting ------------------------------------------------------------------------------------

def test_file_pair_hunks_and_dict(tmp_path):
    good, bad = tmp_path / "repro.py", tmp_path / "kernel.py"
    good.write_text("a\nb\nc\nd\ne\n")
    bad.write_text("a\nB\nc\nd\ne\nf\n")
    hunks = diff_paths(good, bad)
    assert [h.id for h in hunks] == ["repro.py:2", "repro.py:after 5"]   # closed: line 2; after the last line
    d = hunks[1].to_dict()
    assert d["file"] == "repro.py" and d["good_lines"] == [6, 6] and d["bad_lines"] == [6, 7]
    assert "+f\n" in d["text"] and d["text"].startswith("diff --git a/repro.py b/repro.py\n")
    out = materialise(good, hunks, tmp_path / "s")
    assert out == tmp_path / "s" / "repro.py" and out.read_text() == bad.read_text()
    assert materialise(good, [], tmp_path / "s").read_text() == good.read_text()
    assert good.read_text() == "a\nb\nc\nd\ne\n"


def test_file_pair_follows_symlinks(tmp_path):
    (tmp_path / "real_good.py").write_text("x = 1\n")
    (tmp_path / "real_bad.py").write_text("x = 2\n")
    (tmp_path / "good.py").symlink_to("real_good.py")
    (tmp_path / "bad.py").symlink_to("real_bad.py")
    (h,) = diff_paths(tmp_path / "good.py", tmp_path / "bad.py")
    assert h.id == "good.py:1" and h.kind == "text"
    out = materialise(tmp_path / "good.py", [h], tmp_path / "s")
    assert out == tmp_path / "s" / "good.py" and not out.is_symlink() and out.read_text() == "x = 2\n"


def test_tree_pair_has_every_kind(pair):
    p, hunks, good, bad = pair
    assert len(hunks) == p.hunks >= 30
    kinds = {h.kind for h in hunks}
    assert kinds == {"text", "add", "delete", "replace", "mode"}
    assert len({h.id for h in hunks}) == len(hunks)
    assert not any("__pycache__" in h.file for h in hunks)
    culprits = [h for h in hunks if any(line in h.new for line in p.culprit_lines)]
    assert len(culprits) == 2 and {h.file for h in culprits} >= {"kernel/config.py"}
    notes = [h for h in hunks if h.file == "docs/notes.txt"]
    assert notes[-1].new == ("delta, revised",)             # no final newline, kept as is


@pytest.mark.parametrize("good_text,bad_text", [
    ("x\ny", "x\ny\n"), ("x\ny\n", "x\ny"), ("a\nb", "a\nc"), ("", "a"), ("a", ""),
    ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"), ("a\nb\n", "a\nb\nc"),
])
def test_trailing_newlines_and_line_endings(tmp_path, good_text, bad_text):
    good, bad = tmp_path / "g.txt", tmp_path / "b.txt"
    good.write_bytes(good_text.encode())
    bad.write_bytes(bad_text.encode())
    hunks = diff_paths(good, bad)
    dest = tmp_path / "scratch"
    assert materialise(good, hunks, dest).read_bytes() == bad_text.encode()
    assert materialise(good, [], dest).read_bytes() == good_text.encode()
    subs = [s for h in hunks for s in split_lines(h)]
    assert materialise(good, subs, dest).read_bytes() == bad_text.encode()


def test_errors(tmp_path):
    f = tmp_path / "f.py"
    f.write_text("x = 1\n")
    d = tmp_path / "d"
    d.mkdir()
    (d / "f.py").write_text("x = 1\n")
    with pytest.raises(SpaceError, match="no such file"):
        diff_paths(tmp_path / "missing", f)
    with pytest.raises(SpaceError, match="is a directory"):
        diff_paths(d, f)
    with pytest.raises(SpaceError, match="identical"):
        diff_paths(f, d / "f.py")
    d2 = tmp_path / "d2"
    shutil.copytree(d, d2)
    (d2 / "__pycache__").mkdir()
    (d2 / "__pycache__" / "f.pyc").write_bytes(b"\0")
    with pytest.raises(SpaceError, match="identical"):
        diff_paths(d, d2)
    assert isinstance(SpaceError("x"), ValueError)
    # a file on one side, a directory of that name on the other: one hunk (test_retyped_paths)
    (d2 / "x").mkdir()
    (d2 / "x" / "y").write_text("1\n")
    (d / "x").write_text("1\n")
    assert [(h.file, h.kind) for h in diff_paths(d, d2)] == [("x", "retype")]


def test_fifos_and_sockets_in_a_tree_are_skipped_never_read(tmp_path):
    """A named pipe or a unix socket left in a tree (a test server's, a build daemon's) has no
    content: reading the FIFO waited forever, the socket was an internal error. Both are left out
    of the hunks and of the scratch copy; a FIFO given as the file GOOD is a one-line error."""
    import socket
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 1), (bad, 2)):
        side.mkdir()
        (side / "a").write_text(f"{v}\n")
        os.mkfifo(side / "pipe")
    s = socket.socket(socket.AF_UNIX)
    # a regression hangs in the read: a failure, not a stuck suite; the handler is the worker
    # process's, put back after (a later test's SIGALRM would otherwise fail it as "a FIFO was read")
    before = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("a FIFO was read"))
    signal.alarm(20)
    try:
        s.bind(str(good / "sock"))
        assert [h.id for h in diff_paths(good, bad)] == ["a:1"]
        scratch = Scratch(good, tmp_path / "scratch")
        assert sorted(p.name for p in scratch.apply([]).iterdir()) == [".bisectk", "a"]
        with pytest.raises(SpaceError, match="FIFO"):
            diff_paths(good / "pipe", bad / "a")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
        s.close()


def test_overlapping_subsets_are_refused(tmp_path):
    good, bad = tmp_path / "g", tmp_path / "b"
    good.write_text("a\nb\nc\n")
    bad.write_text("a\nB\nC\nD\n")
    (h,) = diff_paths(good, bad)
    subs = split_lines(h)
    with pytest.raises(SpaceError, match="part of"):
        materialise(good, [h, subs[0]], tmp_path / "s")
    notmine = tmp_path / "notmine"
    notmine.mkdir()
    (notmine / "keep").write_text("precious")
    with pytest.raises(SpaceError, match="not empty"):
        materialise(good, [h], notmine)
    assert (notmine / "keep").read_text() == "precious"
    with pytest.raises(SpaceError, match="overlap"):
        Scratch(tmp_path, tmp_path / "inside")


def test_the_lines_one_split_insertion_adds_have_places_of_their_own(tmp_path):
    """Every line a split insertion adds sits before the same line of GOOD; the report's lines list
    names each by its place, so each says which of them it is (its line in BAD)."""
    good, bad = tmp_path / "g.py", tmp_path / "b.py"
    good.write_text("a = 1\nb = 2\nc = 3\n")
    bad.write_text("a = 1\nx = 7\ny = 8\nb = 2\nd = 4\nc = 3\n")
    units = [u for h in diff_paths(good, bad) for u in split_lines(h)]
    assert [u.where for u in units] == ["g.py:before 2 (BAD line 2)", "g.py:before 2 (BAD line 3)",
                                        "g.py:before 3"]
    assert len({u.id for u in units}) == len(units)


# -- applying subsets -----------------------------------------------------------------------------

def test_all_and_none(pair, tmp_path):
    p, hunks, good, bad = pair
    assert snapshot(materialise(p.good, hunks, tmp_path / "s")) == bad
    assert snapshot(materialise(p.good, [], tmp_path / "s")) == good
    fresh = materialise(p.good, hunks)
    assert snapshot(fresh) == bad and (fresh / "kernel" / "current.py").is_symlink()
    shutil.rmtree(fresh)


@pytest.fixture(scope="module")
def scratches(pair):
    """One Scratch per test, reused across its examples (as a search reuses one)."""
    made = {}

    def get(name):
        if name not in made:
            made[name] = Scratch(pair[0].good)
        return made[name]
    yield get
    for s in made.values():
        shutil.rmtree(s.root, ignore_errors=True)


@FAST
@given(data=st.data())
def test_random_subsets_match_reference(pair, scratches, data):
    p, hunks, good, bad = pair
    picked = data.draw(st.sets(st.integers(0, len(hunks) - 1)))
    subset = [hunks[i] for i in sorted(picked)]
    out = scratches("subsets").apply(subset)
    assert snapshot(out) == reference(good, bad, subset)


@FAST
@given(data=st.data())
def test_random_line_level_subsets(pair, scratches, data):
    p, hunks, good, bad = pair
    units = []
    for h in hunks:                 # refine a random half of the hunks, like a second pass would
        units += split_lines(h) if data.draw(st.booleans()) else [h]
    picked = data.draw(st.sets(st.integers(0, len(units) - 1)))
    subset = [units[i] for i in sorted(picked)]
    assert snapshot(scratches("lines").apply(subset)) == reference(good, bad, subset)
    assert snapshot(scratches("lines").apply(units)) == bad


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "\n", "x = 1\n", "a\r\n"]), max_size=14)
ends = st.sampled_from(["", "z", "a"])


@settings(max_examples=150, deadline=None)
@given(a=lines, b=lines, a_end=ends, b_end=ends, data=st.data())
def test_random_text_pairs(a, b, a_end, b_end, data):
    good_text, bad_text = "".join(a) + a_end, "".join(b) + b_end
    if good_text == bad_text:
        return
    with tempfile.TemporaryDirectory() as d:
        gp, bp = Path(d, "g.txt"), Path(d, "b.txt")
        gp.write_text(good_text, newline="")
        bp.write_text(bad_text, newline="")
        hunks = diff_paths(gp, bp)
    base = hunks[0].base
    assert join_lines(apply_lines(base, hunks)) == bad_text
    assert join_lines(apply_lines(base, [])) == good_text
    units = [u for h in hunks for u in (split_lines(h) if data.draw(st.booleans()) else [h])]
    assert join_lines(apply_lines(base, units)) == bad_text
    subset = [u for u in units if data.draw(st.booleans())]
    got = join_lines(apply_lines(base, subset)).encode()
    want = reference({"g.txt": (good_text.encode(), False)}, {}, subset)["g.txt"][0]
    assert got == want


def test_the_printed_diff_of_a_hunk_shows_that_hunk_where_its_id_says():
    """`y y y` -> `y z y` is the hunk `f:2` (line 2 replaced), but the printed diff re-diffed GOOD
    against the result, and among repeated lines difflib put the change elsewhere: `+z` after line
    1 and `-y` at line 3, under a culprit line named `f:2`. The diff is rendered from the hunks."""
    from bisectk.spaces.treediff import _text_hunks
    hunks = _text_hunks("f", ("y\n", "y\n", "y\n"), ("y\n", "z\n", "y\n"))
    assert [h.id for h in hunks] == ["f:2"]
    assert unified_diff(hunks).endswith("@@ -1,3 +1,3 @@\n y\n-y\n+z\n y\n")
    hunks = _text_hunks("f", ("\n", "\n", "x\n"), ("\n", "z\n", "\n", "\n", "x\n"))
    assert [h.id for h in hunks] == ["f:before 2"]
    assert unified_diff(hunks).endswith("@@ -1,3 +1,5 @@\n \n+z\n+\n \n x\n")


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")
@settings(max_examples=150, deadline=None)
@given(a=st.lists(st.sampled_from(["}\n", "\n", "x\n", "y\n"]), max_size=12),
       b=st.lists(st.sampled_from(["}\n", "\n", "x\n", "z\n"]), max_size=12), a_end=ends, b_end=ends,
       data=st.data())
def test_each_printed_change_is_its_hunks_and_the_diff_applies(a, b, a_end, b_end, data):
    """Repeated lines on both sides: each rendered -/+ run is one applied unit's (or adjacent
    units') lines, and `patch` turns GOOD into what the subset gives."""
    good_text, bad_text = "".join(a) + a_end, "".join(b) + b_end
    if good_text == bad_text:
        return
    with tempfile.TemporaryDirectory() as d:
        gp, bp = Path(d, "good", "f"), Path(d, "bad", "f")
        for path, text in ((gp, good_text), (bp, bad_text)):
            path.parent.mkdir()
            path.write_text(text, newline="")
        hunks = diff_paths(gp.parent, bp.parent)
        units = [u for h in hunks for u in (split_lines(h) if data.draw(st.booleans()) else [h])]
        subset = [u for u in units if data.draw(st.booleans())] or units[:1]
        text = unified_diff(subset)
        assert _patched(gp.parent, text, Path(d))["f"][0] == join_lines(apply_lines(hunks[0].base, subset)).encode()
    removed = [line[1:].rstrip("\n") for line in text.splitlines(True)[3:] if line.startswith("-")]
    olds = [s.rstrip("\n") for u in sorted(subset, key=lambda u: u.good_lines) for s in u.old]
    # and GOOD's last line without its newline, when a line now follows it
    assert removed in (olds, olds + [s.rstrip("\n") for s in hunks[0].base[-1:]]), text


def test_a_file_whose_only_common_lines_repeat_is_diffed_in_bounded_time(tmp_path):
    """Every statement of a 3,000-line kernel changed, its braces not (a rename, a reformat): the
    only lines the two sides share are the same `}` over and over. difflib without its junk
    heuristic splits such a region one brace at a time and scans every pair of braces at each
    split: cubic (2,000 lines took 46 s, 4,000 lines 4 minutes) before the first run. Past a
    budget of pairs looked at, the region is diffed with difflib's heuristic for lines repeated
    all over; every subset still applies and all of them give BAD."""
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text("".join("}\n" if i % 2 else f"  a{i} = f(a{i - 2});\n" for i in range(3000)))
    bad.write_text("".join("}\n" if i % 2 else f"  b{i} = g(b{i - 2});\n" for i in range(3000)))
    # the CPU time this process spent, not the wall's: the diff is pure Python, and on a loaded
    # machine (three test workers and others on two cores) its 1.8 s took 21 s of wall
    t = time.process_time()
    hunks = diff_paths(good, bad)
    assert time.process_time() - t < 20
    assert materialise(good, hunks, tmp_path / "all").read_bytes() == bad.read_bytes()
    assert materialise(good, [], tmp_path / "none").read_bytes() == good.read_bytes()
    t = time.process_time()
    unified_diff(split_lines(hunks[0])[::7])
    assert time.process_time() - t < 20


def test_a_file_of_thousands_of_tiny_hunks_is_diffed_in_linear_steps(tmp_path, monkeypatch):
    """Every other line of one big file edited (a generated table, a sweep of constants): each
    match is one line long, and difflib splits one line off the whole range per search, scanning
    it each time, so its searches visit n^2/4 lines (8,000 hunks took 23 s, 50,000 hours). Past
    the budget the lines found once on each side anchor the file, and the stretches between them
    are small. Counted: the lines every longest-match search of the diff scanned."""
    from bisectk.spaces import linediff as H
    n = 3000
    good, bad = tmp_path / "table.c", tmp_path / "table-bad.c"
    good.write_text("".join(f"// entry {k}\nv{k} = 0;\n" for k in range(n)))
    bad.write_text("".join(f"// entry {k}\nv{k} = {'BUG' if k == 1234 else 1};\n" for k in range(n)))
    budget = 200_000
    monkeypatch.setattr(H, "_MATCH_BUDGET", budget)
    scanned = []
    search = difflib.SequenceMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):
        scanned.append((len(self.a) if ahi is None else ahi) - alo)
        return search(self, alo, ahi, blo, bhi)
    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counted)
    hunks = diff_paths(good, bad)
    assert [h.good_lines for h in hunks] == [(2 * k + 2, 2 * k + 3) for k in range(n)]
    assert hunks[1234].new == ("v1234 = BUG;\n",)
    # a scanned line is charged as several pairs (_LINE_STEPS), so the budget buys at most half as
    # many lines as pairs; past it, a few scans per line
    assert sum(scanned) <= budget // 2 + 4 * 2 * n, sum(scanned)
    assert materialise(good, hunks, tmp_path / "all").read_bytes() == bad.read_bytes()


@settings(max_examples=150, deadline=None)
@given(a=lines, b=lines, a_end=ends, b_end=ends, data=st.data())
def test_random_text_pairs_past_the_budget_anchor_on_lines_found_once(a, b, a_end, b_end, data):
    """With no budget at all, every file goes through the anchors: any subset still applies."""
    from unittest import mock

    from bisectk.spaces import linediff as H
    with mock.patch.object(H, "_MATCH_BUDGET", 0):
        test_random_text_pairs.hypothesis.inner_test(a, b, a_end, b_end, data)


def test_split_lines_of_a_hunk_of_megabyte_lines_reads_a_bounded_number_of_characters(tmp_path, monkeypatch):
    """Three long lines replaced by four (an embedded table, minified code): pairing them by
    similarity scored every old x new pair with difflib over both lines whole, 6 s for 1 MB
    lines, more with each line. Past a budget of characters they pair up by position. Counted:
    the characters handed to difflib."""
    long = ["".join(chr(97 + (k * 7 + i * 13) % 26) for i in range(200_000)) for k in range(5)]
    good, bad = tmp_path / "t.c", tmp_path / "t-bad.c"
    good.write_text("head\n" + "".join(line + "\n" for line in long[:3]) + "tail\n")
    bad.write_text("head\n" + "".join(line[:-1] + "!\n" for line in long[:3]) + long[4] + "\ntail\n")
    (hunk,) = diff_paths(good, bad)
    read = []
    seqs = difflib.SequenceMatcher.set_seqs

    def counted(self, a, b):
        read.append(len(a) + len(b) if isinstance(a, str) else 0)
        return seqs(self, a, b)
    monkeypatch.setattr(difflib.SequenceMatcher, "set_seqs", counted)
    subs = split_lines(hunk)
    assert sum(read) <= 2_000_000, sum(read)
    assert len(subs) == 4 and join_lines(apply_lines(hunk.base, subs)) == bad.read_text()


def test_split_lines_pairs_and_order(tmp_path):
    good, bad = tmp_path / "g", tmp_path / "b"
    good.write_text("keep\nalpha = 1\nbeta = 2\nkeep2\none\ntwo\nend\n")
    bad.write_text("keep\nalpha = 10\nbeta = 20\nkeep2\nnew first\none!\nnew mid\ntwo!\nend\n")
    h1, h2 = diff_paths(good, bad)
    s1 = split_lines(h1)
    assert [(s.old, s.new) for s in s1] == [(("alpha = 1\n",), ("alpha = 10\n",)), (("beta = 2\n",), ("beta = 20\n",))]
    assert [s.id for s in s1] == ["g:2-3#0", "g:2-3#1"] and s1[0].parent == h1.id
    s2 = split_lines(h2)            # 2 old lines, 4 new: similar lines stay paired
    assert [(s.old, s.new) for s in s2] == [((), ("new first\n",)), (("one\n",), ("one!\n",)),
                                            ((), ("new mid\n",)), (("two\n",), ("two!\n",))]
    assert split_lines(s2[0]) == [s2[0]]
    only_mid = materialise(good, [s2[2]], tmp_path / "s").read_text()
    assert only_mid == "keep\nalpha = 1\nbeta = 2\nkeep2\none\nnew mid\ntwo\nend\n"


# -- scratch reuse --------------------------------------------------------------------------------

def test_scratch_rewrites_only_what_changes(pair, tmp_path):
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch")
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    s.apply(text[:1])
    untouched = s.root / "kernel" / "stages_01.py"
    stamp = untouched.stat().st_mtime_ns
    (s.root / "build.log").write_text("subject output")       # a file the subject created
    (s.root / "run.py").write_text("tampered")                 # a file the subject edited
    pyc = s.root / "kernel" / "__pycache__" / "stages_00.cpython-311.pyc"
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(b"stale")
    s.apply(text[1:3])
    assert untouched.stat().st_mtime_ns == stamp
    assert (s.root / "build.log").exists() and (s.root / "run.py").read_bytes() == good["run.py"][0]
    assert not pyc.exists()
    (s.root / "build.log").unlink()
    assert snapshot(s.apply(text[1:3])) == reference(good, bad, text[1:3])
    shutil.rmtree(s.root)


def test_without_keep_created_each_apply_starts_from_good_and_its_hunks(pair, tmp_path):
    """No build step to keep outputs for: what a run created (a file, a directory with files, one
    inside a directory a hunk added) is gone before the next configuration, as a fresh copy of
    GOOD with those hunks would have it; the tree is exactly the reference each time."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=False)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    for subset in (text[:1], text[1:3], text[1:3], hunks[:7], []):
        root = s.apply(subset)
        assert snapshot(root) == reference(good, bad, subset)
        (root / "out").mkdir()                                   # what a test run leaves
        (root / "out" / "result.json").write_text("{}")
        (root / "kernel" / "lock").write_text("held")
        for rel in reference(good, bad, subset):                  # and a directory a hunk made
            if "/" in rel and not (Path(p.good) / rel).parent.is_dir():
                (root / rel).parent.joinpath("made.txt").write_text("x")
    assert snapshot(s.apply(text[:1])) == reference(good, bad, text[:1])
    assert (s.root / ".bisectk" / "scratch").exists()
    shutil.rmtree(s.root)


@pytest.mark.parametrize("keep_created", [False, True])
def test_a_run_that_changes_directory_modes_is_put_back_before_the_next_apply(pair, tmp_path, keep_created):
    """A test that runs `chmod 555 kernel` or `chmod 000 kernel` (checking read-only behaviour, or
    vandalising): the next apply could neither remove nor write a file there (an internal error,
    as any user but root), and a hybrid ran with a mode GOOD never had. Each known directory gets
    back the mode it was left with, with or without a build step; a file's mode comes back with
    the file, and a directory a run made unwritable goes when its run's files go."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=keep_created)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    modes = {d: (s.root / d).stat().st_mode for d in ("", "kernel")}
    for subset in (text[:1], text[1:3], []):
        root = s.apply(subset)
        assert snapshot(root) == reference(good, bad, subset)
        assert {d: (s.root / d).stat().st_mode for d in modes} == modes
        os.chmod(root / "kernel" / "stages_01.py", 0)
        if not keep_created:
            (root / "out" / "x").mkdir(parents=True)
            os.chmod(root / "out", 0)
        os.chmod(root / "kernel", 0o555)
        os.chmod(root, 0o500)
    assert snapshot(s.apply(text[:1])) == reference(good, bad, text[:1])
    assert {d: (s.root / d).stat().st_mode for d in modes} == modes
    shutil.rmtree(s.root)


@pytest.mark.parametrize("keep_created", [False, True])
def test_a_directory_a_run_replaced_by_a_file_or_a_link_is_a_directory_again_and_never_written_through(
        pair, tmp_path, keep_created):
    """A test that replaced `kernel/` by a file (an internal error at the next apply: mkdir found a
    file there), or moved it away and left a link to it (`mv kernel k2; ln -s k2 kernel`, or to a
    directory outside the scratch tree): the next apply unlinked and wrote GOOD's and the hunks'
    files through that link, in whatever directory it names. The directory is made again, empty,
    and filled; what the link names is never touched."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=keep_created)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    elsewhere = tmp_path / "elsewhere"
    for subset, vandal in ((text[:1], "file"), (text[1:3], "link out"), ([], "link in"), (text[:2], None)):
        root = s.apply(subset)
        kept = {k: v for k, v in snapshot(root).items() if not k.startswith("k2/")}    # a build's stays
        assert (kept if keep_created else snapshot(root)) == reference(good, bad, subset), vandal
        if vandal == "file":
            shutil.rmtree(root / "kernel")
            (root / "kernel").write_text("not a directory\n")
        elif vandal == "link out":
            shutil.move(root / "kernel", elsewhere)
            os.symlink(elsewhere, root / "kernel")
            before = digest(elsewhere)
        elif vandal == "link in":
            os.rename(root / "kernel", root / "k2")
            os.symlink("k2", root / "kernel")
    assert digest(elsewhere) == before
    shutil.rmtree(s.root)


def test_materialise_reuses_dest_and_is_fast(pair, tmp_path):
    p, hunks, good, bad = pair
    dest = tmp_path / "scratch"
    materialise(p.good, hunks, dest)
    t = time.process_time()      # the work done: a loaded machine adds waiting for a core, not CPU
    for k in range(20):
        materialise(p.good, hunks[k:k + 10], dest)
    assert (time.process_time() - t) / 20 < 0.05
    assert snapshot(dest) == reference(good, bad, hunks[19:29])
    assert (dest / ".bisectk" / "scratch").exists()
    # a new process (here: a new Scratch) may take the directory over: it is marked as ours
    assert snapshot(Scratch(p.good, dest).apply([])) == good


# -- unified diffs --------------------------------------------------------------------------------

def _patched(good: Path, diff: str, workdir: Path) -> dict:
    copy = workdir / "patched"
    shutil.copytree(good, copy, symlinks=True)
    proc = subprocess.run(["patch", "-p1", "-s", "-t", "-N"], input=diff, text=True, cwd=copy,
                          capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr + diff
    return snapshot(copy)


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")
def test_unified_diff_applies_with_patch(pair, tmp_path):
    p, hunks, good, bad = pair
    plain = [h for h in hunks if h.kind != "replace"]       # binary files and symlinks: named only
    diff = unified_diff(plain)
    assert diff.count("diff --git") == len({h.file for h in plain})
    assert "\\ No newline at end of file" in diff
    assert _patched(p.good, diff, tmp_path) == reference(good, bad, plain)
    assert "diff --git a/kernel/table.bin b/kernel/table.bin\nindex " in unified_diff(hunks)   # git's binary patch
    assert "\nGIT binary patch\nliteral " in unified_diff(hunks)
    single = next(h for h in hunks if h.kind == "text" and h.file.endswith(".py"))
    shutil.rmtree(tmp_path / "patched")
    assert _patched(p.good, single.unified(), tmp_path) == reference(good, bad, [single])


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_unified_diff_of_random_subsets(pair, data):
    p, hunks, good, bad = pair
    units = [u for h in hunks if h.kind != "replace"
             for u in (split_lines(h) if data.draw(st.booleans()) else [h])]
    subset = [u for u in units if data.draw(st.booleans())] or units[:1]
    with tempfile.TemporaryDirectory() as d:
        assert _patched(p.good, unified_diff(subset), Path(d)) == reference(good, bad, subset)


# -- a path that is a file on one side and a directory on the other -------------------------------

@pytest.fixture(scope="module")
def retyped(tmp_path_factory):
    """GOOD and BAD where `t` (a file) became a directory, `u/` (a directory) became a file, `lnk`
    (a link) became a directory, with ordinary hunks beside them."""
    root = tmp_path_factory.mktemp("retyped")
    good, bad = root / "good", root / "bad"
    for side in (good, bad):
        (side / "pkg").mkdir(parents=True)
    (good / "t").write_text("a file\n")
    (bad / "t" / "deep").mkdir(parents=True)
    (bad / "t" / "x.py").write_text("x = 1\n")
    (bad / "t" / "deep" / "y").write_bytes(b"\0bin")
    (good / "u").mkdir()
    (good / "u" / "a").write_text("a\n")
    (good / "u" / "b").write_text("b\n")
    (bad / "u").write_text("now a file\n")
    os.symlink("pkg", good / "lnk")
    (bad / "lnk").mkdir()
    (bad / "lnk" / "f").write_text("f\n")
    (good / "pkg" / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    (bad / "pkg" / "m.py").write_text("a = 1\nb = 20\nc = 3\nd = 4\n")
    (good / "z.txt").write_text("z\n")
    before = (digest(good), digest(bad))
    yield good, bad, diff_paths(good, bad), snapshot(good), snapshot(bad)
    assert (digest(good), digest(bad)) == before, "GOOD or BAD was modified"


def test_retyped_paths_are_one_hunk_each(retyped):
    good, bad, hunks, _, _ = retyped
    kinds = [(h.file, h.kind) for h in hunks]
    assert ("t", "retype") in kinds and ("u", "retype") in kinds and ("lnk", "retype") in kinds
    assert not [h for h in hunks if h.file.startswith(("t/", "u/", "lnk/"))]   # inside the one hunk
    t = next(h for h in hunks if h.file == "t")
    assert [r for r, _, _ in t.tree] == ["t", "t/deep/y", "t/x.py"] and t.id == "t:retype"
    # rendered as git shows it: the file deleted, the directory's files added
    text = unified_diff([t])
    assert "deleted file mode 100644" in text and "+x = 1" in text and "new file mode 100644\nindex 0000000000000000000000000000000000000000.." in text
    assert "GIT binary patch\nliteral 4\n" in text        # t/deep/y's 4 bytes, as git diff --binary writes them


@FAST
@given(data=st.data())
def test_retyped_subsets_match_reference(retyped, data):
    """Random subsets applied one after another on one Scratch (as a search does), with build
    output left inside the directories between them."""
    good, bad, hunks, gsnap, bsnap = retyped
    picked = data.draw(st.sets(st.integers(0, len(hunks) - 1)))
    build = data.draw(st.booleans())
    subset = [hunks[i] for i in sorted(picked)]
    out = _retyped_scratch(good).apply(subset)
    # a run's own files stay where their directory stays (Scratch leaves build outputs alone); a
    # directory that becomes a file takes them with it
    assert {k: v for k, v in snapshot(out).items() if not k.endswith("/build.o")} == reference(gsnap, bsnap, subset)
    if build:                             # a run's build output inside whatever is a directory now
        for d in ("t", "u", "lnk"):
            if (out / d).is_dir() and not (out / d).is_symlink():
                (out / d / "build.o").write_text("made by the run\n")


def test_with_a_build_what_the_build_made_stays_and_what_a_run_made_goes(pair, tmp_path):
    """keep_created (a build step): before the first mark nothing is swept; after `mark()` what
    the tree held (the build's outputs, a new directory with files, bytecode a build compiled)
    stays through every later apply, and what appeared after the mark (the run's `out`, a log in
    the build's own directory, a file beside GOOD's) is gone; the rest is the reference."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=True)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    root = s.apply(text[:1])
    (root / "early.o").write_text("made before any build was marked")
    root = s.apply(text[1:2])
    assert (root / "early.o").exists()                       # no mark yet: nothing is taken away
    (root / "build").mkdir()
    (root / "build" / "lib.so").write_text("so")
    (root / "kernel" / "__pycache__").mkdir(exist_ok=True)
    (root / "kernel" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"pyc")
    s.mark()                                                 # the build step has run
    made = {"early.o", "build/lib.so"}
    pyc = root / "kernel" / "__pycache__" / "x.cpython-311.pyc"     # snapshot() does not list bytecode
    for subset in (text[:2], [], hunks[:5], text[:1]):
        (root / "out").mkdir()                               # what the run leaves
        (root / "out" / "r.json").write_text("{}")
        (root / "build" / "test.log").write_text("run")
        (root / "kernel" / "note.txt").write_text("run")
        root = s.apply(subset)
        tree = snapshot(root)
        assert {k for k in tree if k not in reference(good, bad, subset)} == made, sorted(tree)
        assert {k: v for k, v in tree.items() if k not in made} == reference(good, bad, subset)
        assert pyc.exists() and not (root / "out").exists() and not (root / "build" / "test.log").exists()
        s.mark()                                             # the next build: nothing new
    (root / "build" / "lib2.so").write_text("a second build's output")
    s.mark()
    (root / "late.txt").write_text("run")
    assert {"build/lib2.so", "build/lib.so"} <= set(snapshot(s.apply([]))) and not (root / "late.txt").exists()


_RETYPED: dict = {}


def _retyped_scratch(good: Path) -> Scratch:
    if good not in _RETYPED:
        _RETYPED[good] = Scratch(good, good.parent / "scratch")   # under pytest's tmp, not /tmp
    return _RETYPED[good]


def test_retyped_all_none_and_back(retyped, tmp_path):
    good, bad, hunks, gsnap, bsnap = retyped
    sc = Scratch(good, tmp_path / "s")
    for _ in range(2):
        assert snapshot(sc.apply(hunks)) == bsnap
        (tmp_path / "s" / "t" / "build.o").write_text("x")      # left by a run: goes with the directory
        assert snapshot(sc.apply([])) == gsnap
        assert (tmp_path / "s" / "t").is_file() and (tmp_path / "s" / "lnk").is_symlink()


# -- symlinks that climb out of their tree -----------------------------------------------------------

def test_a_relative_link_that_climbs_out_of_its_tree_names_the_same_place_from_the_scratch_copy(tmp_path):
    """`logs -> ../logs` (a directory beside GOOD and BAD) copied as it is named, from the scratch
    copy under bisectk's cache, `$XDG_CACHE_HOME/bisectk/logs`: bisectk's own run logs, which a test
    that cleans its logs directory deleted, and never the directory GOOD's test sees. In the scratch
    copy such a link names, by its absolute path, what it names from its own tree: GOOD's links
    from GOOD, a hunk's link from BAD; links inside the tree stay as they are."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "ref.txt").write_text("ref\n")
    good, bad = tmp_path / "trees" / "good", tmp_path / "elsewhere" / "bad"
    for side in (good, bad):
        (side / "sub").mkdir(parents=True)
        (side / "k.txt").write_text("k\n")
    os.symlink("../../shared", good / "shared")                 # the same in both: no hunk
    os.symlink("../../shared", bad / "shared")
    os.symlink("../../../shared/ref.txt", good / "sub" / "ref")  # differs: a hunk, named from each side
    os.symlink("../../bad-data", bad / "sub" / "ref")
    os.symlink("../k.txt", good / "sub" / "inside")             # stays inside: kept as it is
    os.symlink("../k.txt", bad / "sub" / "inside")
    (bad / "k.txt").write_text("k2\n")
    hunks = diff_paths(good, bad)
    assert [h.id for h in hunks] == ["k.txt:1", "sub/ref:replace"]
    assert "+../../bad-data" in unified_diff(hunks)             # the diff shows the links as written
    s = Scratch(good, tmp_path / "scratch")
    real = Path(os.path.realpath(tmp_path))
    for subset, ref in (([], real / "shared" / "ref.txt"), (hunks, real / "elsewhere" / "bad-data"),
                        ([], real / "shared" / "ref.txt")):
        root = s.apply(subset)
        assert os.readlink(root / "shared") == str(real / "shared")
        assert (root / "shared" / "ref.txt").read_text() == "ref\n"
        assert os.readlink(root / "sub" / "ref") == str(ref)
        assert os.readlink(root / "sub" / "inside") == "../k.txt"
    shutil.rmtree(s.root)


def test_a_directory_a_retype_hunk_made_a_file_is_left_alone_by_the_next_apply(retyped, tmp_path):
    """`u/` is a file once its retype hunk is applied; the next apply with the same hunks took it
    for a directory a run had replaced, made `u/` again and wrote the file once more (with a build
    step, a rebuild of whatever reads it)."""
    good, bad, hunks, gsnap, bsnap = retyped
    u = [h for h in hunks if h.file == "u"]
    s = Scratch(good, tmp_path / "scratch")
    root = s.apply(u)
    stamp = (root / "u").stat().st_mtime_ns, (root / "u").stat().st_ino
    time.sleep(0.01)
    root = s.apply(u)
    assert ((root / "u").stat().st_mtime_ns, (root / "u").stat().st_ino) == stamp
    assert snapshot(root) == reference(gsnap, bsnap, u)
    assert snapshot(s.apply([])) == gsnap
    shutil.rmtree(s.root)


def test_a_directory_emptied_by_the_hunks_goes_unless_bad_has_it(tmp_path):
    """`old/` renamed `new/`, and a file deleted from `keep/`: with every hunk applied the copy has
    BAD's directories, not `old/` left empty because GOOD has it; with none, GOOD's again."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, sub in ((good, "old"), (bad, "new")):
        for d in ("keep", sub):
            (side / d).mkdir(parents=True)
            (side / d / "x.py").write_text(f"# {d}\n" if d == "keep" else "# x\n")
    (good / "keep" / "y.py").write_text("y = 1\n")

    def dirs(root):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and ".bisectk" not in p.parts)
    hunks = diff_paths(good, bad)
    s = Scratch(good, tmp_path / "scratch", bad=bad)
    for subset, want in ((hunks, bad), ([], good), (hunks, bad)):
        root = s.apply(subset)
        assert dirs(root) == dirs(want) and snapshot(root) == snapshot(want)
    shutil.rmtree(s.root)


def test_directories_no_hunk_carries_are_listed(tmp_path):
    """An empty directory on one side (the topmost only), a directory's mode: no hunk carries
    them. A directory with files (they carry it), a retyped path and a symlinked directory are
    not listed."""
    from bisectk.spaces.treediff import unbisected
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        (side / "same").mkdir(parents=True)
    (good / "out" / "deep").mkdir(parents=True)             # GOOD only, empty
    (bad / "new").mkdir()                                   # BAD only, empty
    (bad / "full").mkdir()
    (bad / "full" / "f").write_text("f\n")                  # an add hunk carries it
    (good / "conf").write_text("c\n")
    (bad / "conf" / "sub").mkdir(parents=True)
    (bad / "conf" / "sub" / "x").write_text("x\n")          # retype
    (good / "lnk").mkdir()
    os.symlink("same", bad / "lnk")                         # retype
    (good / "same").chmod(0o755)                            # not the umask's (077 made both 700)
    (bad / "same").chmod(0o700)
    assert unbisected(good, bad) == ["new/ (BAD only, empty)", "out/ (GOOD only, empty)", "same/ (mode 755 -> 700)"]
    assert unbisected(good / "same", bad / "same") == []


def test_a_line_added_after_a_last_line_without_newline_is_shown_as_the_hybrid_has_it(tmp_path):
    """GOOD ends `B = 2` (no newline); BAD changes it and adds `Z = 9`. The line unit that adds
    `Z = 9` alone gives `B = 2\\nZ = 9` (the join puts a newline after B): its own patch, the one
    the report shows for a culprit line, must say so, not leave `B = 2` unchanged as context
    (`git apply` made `B = 2Z = 9` of it; GNU patch guessed the newline)."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "k.py").write_text("A = 1\nB = 2")
    (bad / "k.py").write_text("A = 1\nB = 3\nZ = 9")
    units = split_lines(diff_paths(good, bad)[0])
    added = next(u for u in units if not u.old)
    assert (materialise(good, [added], tmp_path / "m") / "k.py").read_text() == "A = 1\nB = 2\nZ = 9"
    for unit in units:
        copy = tmp_path / f"patched-{units.index(unit)}"
        shutil.copytree(good, copy)
        proc = subprocess.run(["git", "apply", "-"], input=unit.unified(), text=True, cwd=copy, capture_output=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr + unit.unified()
        shutil.rmtree(tmp_path / "m")
        expected = (materialise(good, [unit], tmp_path / "m") / "k.py").read_text()
        assert (copy / "k.py").read_text() == expected, unit.unified()


# -- what a run edited, found by name (dirwatch.py), not by a stat of every copied file ---------

def _wide(tmp_path: Path, n: int = 300) -> tuple[Path, Path]:
    for side in ("good", "bad"):
        for i in range(n):
            p = tmp_path / side / f"d{i % 7}" / f"f{i}.txt"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"file {i}\n")
    (tmp_path / "bad" / "d0" / "f0.txt").write_text("changed\n")
    return tmp_path / "good", tmp_path / "bad"


def _counting_stat(monkeypatch):
    from bisectk.spaces import hybrid as H
    calls = []
    real = H._stat
    monkeypatch.setattr(H, "_stat", lambda p: calls.append(p) or real(p))
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_an_apply_stats_only_what_the_run_wrote_and_still_puts_every_edit_back(tmp_path, monkeypatch):
    good, bad = _wide(tmp_path)
    hunks = diff_paths(good, bad)
    s = Scratch(good, tmp_path / "s", keep_created=False, bad=bad)
    s.apply(hunks)
    calls = _counting_stat(monkeypatch)
    s.apply([])
    assert len(calls) < 10, len(calls)        # 300 files copied: a stat of each was the old way
    root = tmp_path / "s"
    (root / "d3" / "f10.txt").write_text("edited in place\n")
    (root / "d4" / "f11.txt").unlink()
    os.chmod(root / "d5" / "f12.txt", 0o755)
    (root / "d6" / "new.txt").write_text("made by the run\n")
    calls.clear()
    s.apply(hunks)
    assert len(calls) < 20, len(calls)
    assert snapshot(root) == snapshot(bad)
    assert not (os.stat(root / "d5" / "f12.txt").st_mode & 0o111)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_directory_a_run_removed_and_made_again_is_checked_the_slow_way(tmp_path, monkeypatch):
    good, bad = _wide(tmp_path)
    s = Scratch(good, tmp_path / "s", keep_created=False, bad=bad)
    s.apply([])
    root = tmp_path / "s"
    kept = {p.name: p.read_text() for p in (root / "d2").iterdir()}
    shutil.rmtree(root / "d2")                # its watch is gone with it: no list of names to trust
    (root / "d2").mkdir()
    for name in kept:
        (root / "d2" / name).write_text("rewritten by the run\n")
    calls = _counting_stat(monkeypatch)
    s.apply([])
    assert len(calls) >= 300
    assert snapshot(root) == snapshot(good)


def test_without_a_watch_every_copied_file_is_checked(tmp_path, monkeypatch):
    from bisectk.spaces import dirwatch
    monkeypatch.setattr(dirwatch.DirWatch, "written", lambda self: None)   # another OS, a network file system
    good, bad = _wide(tmp_path, 50)
    s = Scratch(good, tmp_path / "s", keep_created=False, bad=bad)
    s.apply([])
    (tmp_path / "s" / "d1" / "f8.txt").write_text("edited\n")
    s.apply([])
    assert snapshot(tmp_path / "s") == snapshot(good)


def test_with_fresh_builds_what_a_build_made_goes_when_another_hybrid_is_applied(pair, tmp_path):
    """fresh_builds (diff's build step): the build's outputs stay while the same hunks are applied
    again (their build is not run again) and go, files and the directories the build made, before
    another set is applied, so the next build starts from GOOD and its hunks alone (make with a
    Makefile without header dependencies rebuilt nothing for a changed header)."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=True, fresh_builds=True)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    root = s.apply(text[:1])
    (root / "build" / "obj").mkdir(parents=True)
    (root / "build" / "obj" / "a.o").write_text("o")
    (root / "kernel" / "k.o").write_text("o")            # beside GOOD's files
    s.mark()
    root = s.apply(text[:1])                              # the same hybrid: its build stays
    assert (root / "build" / "obj" / "a.o").exists() and (root / "kernel" / "k.o").exists()
    s.mark()
    root = s.apply(text[1:3])                             # another: built from scratch
    assert snapshot(root) == reference(good, bad, text[1:3])
    assert not (root / "build").exists() and not (root / "kernel" / "k.o").exists()
    (root / "build").mkdir()
    (root / "build" / "b.o").write_text("o")
    s.mark()
    assert snapshot(s.apply(text[:1])) == reference(good, bad, text[:1])
    shutil.rmtree(s.root)


def test_with_fresh_builds_what_a_failed_build_left_goes_before_the_first_mark_too(pair, tmp_path):
    """A build that failed is never marked: before any mark (the endpoints answered from the
    ledger, the first hybrid's build failing after it compiled one object) what it left stayed,
    and the next hybrid's build ran over that object (a Makefile without header dependencies kept
    it). With fresh_builds it goes at the next apply like any run's leftovers."""
    p, hunks, good, bad = pair
    s = Scratch(p.good, tmp_path / "scratch", keep_created=True, fresh_builds=True)
    text = [h for h in hunks if h.file == "kernel/stages_00.py"]
    root = s.apply(text[:1])
    (root / "build").mkdir()
    (root / "build" / "b.o").write_text("half a build")      # no mark: the build failed
    (root / "kernel" / "a.o").write_text("o")
    assert snapshot(s.apply(text[1:2])) == reference(good, bad, text[1:2])
    assert not (root / "build").exists() and not (root / "kernel" / "a.o").exists()
    shutil.rmtree(s.root)


# -- file names that git quotes in a patch ------------------------------------------------------

QUOTED_NAMES = ["new\nline.py", 'say "hi".py', "back\\slash.py", "tab\there.py", os.fsdecode(b"latin\xe9.py")]


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_a_patch_names_a_file_whose_name_holds_a_newline_quote_or_odd_byte_as_git_does(tmp_path, tool):
    """Before: names went into the patch as they are, so `diff --git a/new<newline>line.py` was two
    lines and `git apply` refused the culprit's patch ('git diff header lacks filename
    information'); an undecodable byte became a character no file has. Now such a name is
    C-quoted as git quotes it ("a/new\\nline.py", octal bytes), which git apply and patch read."""
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    for k, name in enumerate(QUOTED_NAMES):
        (good / name).write_text(f"a = {k}\nb = 0\n")
        (bad / name).write_text(f"a = {k}\nb = 1\n")
    (bad / "new\nfile.py").write_text("c = 2\n")          # added: a whole-file hunk
    (good / 'gone "x".py').write_text("d = 3\n")           # deleted
    hunks = diff_paths(good, bad)
    assert len(hunks) == len(QUOTED_NAMES) + 2
    for subset in (hunks, hunks[:1]):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        cmd = ["git", "apply", "-"] if tool == "git" else ["patch", "-p1", "-s", "-t", "-N"]
        proc = subprocess.run(cmd, input=unified_diff(subset).encode(), cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, unified_diff(subset))
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), unified_diff(subset)
        shutil.rmtree(tmp_path / "m")


def test_a_binary_files_change_is_a_binary_patch_git_applies(tmp_path):
    """Before: a binary file's hunk was written 'Binary files a/b.bin and b/b.bin differ' alone, as
    `git diff` without --binary does: its bytes were in no patch, and git apply refused the whole
    culprit patch at the file after it ('bad git-diff - inconsistent old filename'). Now it is
    git's binary patch (`git diff --binary`: the full index line and BAD's bytes), which git applies."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
    (good / "b.bin").write_bytes(b"\0\1\2" + bytes(range(256)) * 3)
    (bad / "b.bin").write_bytes(b"\0\1\3" + bytes(range(256)) * 3)
    (bad / "new.bin").write_bytes(b"\0new")                   # added
    (good / "gone.bin").write_bytes(b"\0gone")                # deleted
    (good / "was_text").write_text("t\n")                     # text that became binary
    (bad / "was_text").write_bytes(b"\0t\n")
    (good / "x.py").write_text("a = 0\n")
    (bad / "x.py").write_text("a = 1\n")
    hunks = diff_paths(good, bad)
    assert sorted(h.id for h in hunks) == ["b.bin:replace", "gone.bin:delete", "new.bin:add",
                                           "was_text:replace", "x.py:1"]
    for subset in (hunks, *([h] for h in hunks)):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        proc = subprocess.run(["git", "apply", "-"], input=unified_diff(subset).encode(), cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, unified_diff(subset))
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), unified_diff(subset)
        shutil.rmtree(tmp_path / "m")


def test_a_text_file_that_is_not_utf8_is_split_into_lines_as_git_does(tmp_path):
    """A C file with one latin-1 byte in a comment (`/* (c) J\\xfcrgen */`): it was taken for a
    binary file, its one changed line answered as the whole file (`k.c:replace`) and printed as a
    base85 `GIT binary patch`, where git diff (binary: a NUL byte) shows the line. Its lines are
    hunks now, its other bytes kept as they are: any subset is written back byte for byte, and the
    patch (its bytes as read) is one git applies."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    good, bad = tmp_path / "good", tmp_path / "bad"
    text = "/* (c) J\xfcrgen */\nint a = 1;\nint b = 2;\nint c = 3;\nint d = 4;\nint e = 5;\n"
    for side, edit in ((good, text), (bad, text.replace("b = 2", "b = 5").replace("e = 5", "e = \xb5"))):
        side.mkdir()
        (side / "k.c").write_bytes(edit.encode("latin-1"))
    hunks = diff_paths(good, bad)
    assert [h.id for h in hunks] == ["k.c:3", "k.c:6"]
    for subset in (hunks, *([h] for h in hunks)):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        patch = unified_diff(subset).encode("utf-8", "surrogateescape")
        proc = subprocess.run(["git", "apply", "-"], input=patch, cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, patch)
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), patch
        shutil.rmtree(tmp_path / "m")
    assert (materialise(good, hunks, tmp_path / "all") / "k.c").read_bytes() == (bad / "k.c").read_bytes()


def test_a_symlink_that_became_a_file_or_the_reverse_is_a_patch_git_applies(tmp_path):
    """Before: a link replaced by a file (or a file by a link) was written 'old mode 120000 / new
    mode 100644' over a text change, which git refuses ('new mode (100644) of lnk does not match
    old mode (120000)'): the culprit's patch did not apply. git writes such a type change as the
    path deleted and added again; so does the patch now."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "keep").write_text("k\n")
    (good / "lnk").symlink_to("keep")
    (bad / "lnk").write_text("x\n")
    (good / "was_file").write_text("y\n")
    (bad / "was_file").symlink_to("keep")
    hunks = diff_paths(good, bad)
    assert sorted(h.id for h in hunks) == ["lnk:replace", "was_file:replace"]
    for subset in (hunks, hunks[:1], hunks[1:]):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy, symlinks=True)
        proc = subprocess.run(["git", "apply", "-"], input=unified_diff(subset).encode(), cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stderr, unified_diff(subset))
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), unified_diff(subset)
        shutil.rmtree(tmp_path / "m")


def test_a_line_added_after_a_crlf_files_last_line_without_newline_ends_it_with_crlf(tmp_path):
    """GOOD `a\\r\\nb` (CRLF, no newline at the end), BAD `a\\r\\nb\\r\\nc`. The line unit that adds
    `c` alone gives GOOD's `b` a line end: it was `\\n`, a hybrid of mixed line ends that neither
    side has (`a\\r\\nb\\nc`: a CRLF-strict reader fails on it differently). Now the file's own
    `\\r\\n`; the unit's patch says the same and applies."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "k.bat").write_bytes(b"a\r\nb")
    (bad / "k.bat").write_bytes(b"a\r\nb\r\nc")
    units = split_lines(diff_paths(good, bad)[0])
    added = next(u for u in units if not u.old)
    assert (materialise(good, [added], tmp_path / "m") / "k.bat").read_bytes() == b"a\r\nb\r\nc"
    copy = tmp_path / "patched"
    shutil.copytree(good, copy)
    proc = subprocess.run(["git", "apply", "-"], input=added.unified().encode(), cwd=copy, capture_output=True)
    assert proc.returncode == 0, (proc.stderr, added.unified())
    assert (copy / "k.bat").read_bytes() == b"a\r\nb\r\nc", added.unified()


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")
def test_a_mode_change_git_does_not_record_is_written_with_its_permission_bits(tmp_path):
    """BAD's copy of a file is read-only (644 -> 444, a tree unpacked from a read-only store).
    The mode hunk is a real change (the hybrid gets 444, and a run that writes the file fails),
    but its patch read 'old mode 100644 / new mode 100644' (git's two regular-file modes): the
    culprit printed was a patch that changes nothing. Where git's modes cannot tell the two apart,
    the patch now writes the permission bits themselves, which patch -p1 sets and git apply takes."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "c.json").write_text("{}\n")
    (bad / "c.json").chmod(0o444)
    [hunk] = diff_paths(good, bad)
    assert hunk.id == "c.json:mode"
    assert "old mode 100644\nnew mode 100444\n" in unified_diff([hunk]) == hunk.unified()
    copy = tmp_path / "patched"
    shutil.copytree(good, copy)
    proc = subprocess.run(["patch", "-p1", "-s"], input=hunk.unified(), text=True, cwd=copy, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (copy / "c.json").stat().st_mode & 0o777 == 0o444
    assert (materialise(good, [hunk], tmp_path / "m") / "c.json").stat().st_mode & 0o777 == 0o444
    if shutil.which("git"):
        shutil.rmtree(copy)
        shutil.copytree(good, copy)
        proc = subprocess.run(["git", "apply", "-"], input=hunk.unified(), text=True, cwd=copy, capture_output=True)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_a_patch_names_a_file_whose_name_holds_a_space_as_patch_reads_it(tmp_path, tool):
    """Before: `--- a/sp ace.py` was written as is, and GNU patch reads a name up to its first
    space or tab: `patch -p1` found no file to patch ('No file to patch. Skipping patch.') and
    the culprit's patch did not apply. git ends such a name with a tab; so does the patch now."""
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        (side / "my dir").mkdir(parents=True)
    (good / "sp ace.py").write_text("a = 0\nb = 0\n")
    (bad / "sp ace.py").write_text("a = 0\nb = 1\n")
    (good / "my dir" / "old file.txt").write_text("gone\n")
    (bad / "my dir" / "new file.txt").write_text("came\n")
    body = "".join(f"V{i} = {i}\n" for i in range(1, 21))
    (good / "moved from.py").write_text(body)
    (bad / "moved to.py").write_text(body.replace("V3 = 3\n", "V3 = 30\n"))
    hunks = diff_paths(good, bad)
    assert len(hunks) == 5, [h.id for h in hunks]
    for subset in (hunks, *([h] for h in hunks)):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy)
        cmd = ["git", "apply", "-"] if tool == "git" else ["patch", "-p1", "-s", "-t", "-N"]
        proc = subprocess.run(cmd, input=unified_diff(subset).encode(), cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stdout, proc.stderr, unified_diff(subset))
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), unified_diff(subset)
        shutil.rmtree(tmp_path / "m")


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_a_retargeted_symlink_and_an_empty_file_deleted_are_a_patch_both_tools_apply(tmp_path, tool):
    """Before: the patch of a symlink whose target changed had no `index` line, so GNU patch took
    `lnk` for a file ('File lnk is not a regular file -- refusing to patch'), and an empty file
    deleted was a bare `deleted file mode` that patch skipped ('would empty out the file ...,
    which is already empty'): `patch -p1` refused the culprit's patch where `git apply` took it.
    A whole-file hunk now carries git's `index` line (its blobs' ids and, the type unchanged,
    its mode), which tells patch a link from a file and a deletion from an emptying."""
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "keep").write_text("k\n")
    (good / "lnk").symlink_to("keep")
    (bad / "lnk").symlink_to("other")
    (good / "gone").write_bytes(b"")
    (bad / "came").write_text("c\n")
    hunks = diff_paths(good, bad)
    assert sorted(h.id for h in hunks) == ["came:add", "gone:delete", "lnk:replace"]
    for subset in (hunks, *([h] for h in hunks)):
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(good, copy, symlinks=True)
        cmd = ["git", "apply", "-"] if tool == "git" else ["patch", "-p1", "-s", "-t", "-N"]
        proc = subprocess.run(cmd, input=unified_diff(subset).encode(), cwd=copy, capture_output=True)
        assert proc.returncode == 0, (proc.stdout, proc.stderr, unified_diff(subset))
        assert snapshot(copy) == snapshot(materialise(good, subset, tmp_path / "m")), unified_diff(subset)
        shutil.rmtree(tmp_path / "m")
    copy = tmp_path / "copy"
    shutil.rmtree(copy)
    shutil.copytree(good, copy, symlinks=True)
    subprocess.run(cmd, input=unified_diff(hunks).encode(), cwd=copy, check=True, capture_output=True)
    assert snapshot(copy) == snapshot(bad)


def test_an_absolute_link_into_its_own_tree_names_that_place_in_the_scratch_copy(tmp_path):
    """GOOD's `inc -> /abs/good/real` and BAD's `inc -> /abs/bad/real`: read as written, the link
    was the one hunk (`inc:replace`), the scratch copy's link read GOOD's own files (a run writing
    through it wrote into GOOD) and the hunk's read BAD's. Each names its own tree's `real`, from
    wherever the tree is: no hunk there, the difference is real/x.txt's, and no run reaches GOOD."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, v in ((good, 1), (bad, 2)):
        (side / "real").mkdir(parents=True)
        (side / "real" / "x.txt").write_text(f"{v}\n")
        os.symlink(str(side / "real"), side / "inc")
    hunks = diff_paths(good, bad)
    assert [h.id for h in hunks] == ["real/x.txt:1"]
    s = Scratch(good, tmp_path / "scratch")
    for subset, want in (([], "1\n"), (hunks, "2\n")):
        root = s.apply(subset)
        assert os.readlink(root / "inc") == "real"
        assert (root / "inc" / "x.txt").read_text() == want
        (root / "inc" / "x.txt").write_text("written by a run\n")
    assert (good / "real" / "x.txt").read_text() == "1\n" and (bad / "real" / "x.txt").read_text() == "2\n"
    shutil.rmtree(s.root)
