"""Source differences as hunks: what a hunk is, the lines it changes, and how a set of them reads
as a patch.

Abstractions
------------
Entry        -- one side of a file: its bytes (a symlink's target when `link`) and permission bits.
Hunk         -- one unit of difference between GOOD and BAD in one file. `kind` is "text" (a run
                of lines replaced, deleted or inserted: one difflib opcode), "add" / "delete"
                (a file present on one side only), "replace" (a binary file or symlink that
                differs: replaced whole; text means no NUL byte, as git has it: _text), "mode" (the
                permission bits changed), "rename" (the file moved to `to`: renames.py; its
                content's hunks are text and mode hunks under GOOD's name, each apart from the
                move) or "retype" (a path that is a file on one side and a
                directory on the other: the file and every file under the directory, replaced
                together, as no subset of them can be written). Line ranges are 1-based and
                half-open: `good_lines = (s, e)` covers GOOD's lines s..e-1, and s == e is an
                insertion before GOOD's line s. An added or deleted text file spans (1, n+1) on
                its side; an absent side, a binary side and a mode change have (0, 0). Its `id`
                and `where` name the place closed, as people write it: 'a.py:7', 'a.py:3-5',
                'a.py:before 4'.
apply_lines  -- GOOD's lines of one file with a subset of its text hunks applied (`join_lines` makes
                them a text again).
unified_diff -- a set of hunks as one git-style unified diff that `patch -p1` applies to GOOD.

Where hunks come from is treediff.py (GOOD and BAD read, their lines matched in linediff.py, which
also splits a hunk into lines: `split_lines`); where a subset of them is made a tree, hybrid.py
(`Scratch`, `materialise`).

Why any subset applies: difflib's opcodes are separated by at least one equal line, so hunks of
one file never overlap or touch, and every hunk is addressed in GOOD's coordinates only; a subset
is applied in one forward pass over GOOD's lines. Applying all hunks gives BAD byte for byte,
none gives GOOD, but for a relative symlink that climbs out of its tree: the copy names what it
names from its own tree, by its absolute path (Entry.outside). Overlapping hunks (two of one
file's, or a hunk and the one split_lines made it from) raise SpaceError.
"""

from __future__ import annotations

import base64
import difflib
import functools
import hashlib
import os
import stat
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from bisectk.spaces.commits import SpaceError  # one error type for every space

WHOLE = frozenset({"add", "delete", "replace", "retype"})


@dataclass(frozen=True)
class Entry:
    """One side of a file: its bytes (a symlink's target when `link`) and permission bits.
    `outside`: for a relative link whose target climbs out of its tree (`logs -> ../logs`), the
    absolute path it names from there, which the scratch copy writes instead (from a copy
    elsewhere the same `..` names something else: bisectk's cache); not part of equality."""

    data: bytes
    mode: int
    link: bool = False
    outside: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Hunk:
    """One unit of difference; hashable, so a search can use hunks as its items."""

    file: str                                  # relative posix path (GOOD's name for a file pair)
    kind: str                                  # text | add | delete | replace | mode | rename | retype
    good_lines: tuple[int, int] = (0, 0)
    bad_lines: tuple[int, int] = (0, 0)
    old: tuple[str, ...] = ()                  # GOOD's lines, each with its line ending
    new: tuple[str, ...] = ()                  # BAD's lines
    parent: str | None = None                  # the hunk split_lines made this one from
    sub: int = 0                               # position among the parent's sub-hunks
    modes: tuple[int, int] | None = None       # (good, bad) permission bits, for "mode"
    to: str | None = None                      # BAD's path, for "rename"
    good_entry: Entry | None = field(default=None, repr=False)
    bad_entry: Entry | None = field(default=None, repr=False)
    # "retype": (path, GOOD's entry, BAD's entry) for the path and every file under it
    tree: tuple[tuple[str, Entry | None, Entry | None], ...] = field(default=(), repr=False)
    # GOOD's whole text, shared by the text hunks of one file (context for rendering and the
    # lines a subset is applied to); not part of equality.
    base: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @functools.cached_property
    def id(self) -> str:
        """Stable and unique within one diff, and where the hunk is in GOOD, as people write it:
        'a.py:7' (line 7 replaced or deleted), 'a.py:3-5' (lines 3 to 5), 'a.py:before 4' (an
        insertion; 'after 9' past GOOD's last line 9), 'a.py:add', and 'a.py:3-5#1' for the second
        line of a split hunk. Unique because two text hunks of one file never touch."""
        if self.parent:
            return f"{self.parent}#{self.sub}"
        return self.where

    @property
    def good_place(self) -> str:
        """GOOD's lines as a closed range: '7', '3-5', 'before 4' / 'after 9' for an insertion."""
        start, end = self.good_lines
        if end == start:
            return f"after {start - 1}" if self.base and start > len(self.base) else f"before {start}"
        return str(start) if end - start == 1 else f"{start}-{end - 1}"

    @functools.cached_property
    def where(self) -> str:
        """'file:place' in GOOD for any hunk (a split line: the line itself). The lines a split
        insertion adds all sit before one line of GOOD, so each is told apart by its line in BAD:
        'a.py:before 4 (BAD line 6)'."""
        if self.kind != "text":
            return f"{self.file}:{self.kind}"
        if self.parent and self.good_lines[0] == self.good_lines[1]:
            return f"{self.file}:{self.good_place} (BAD line {self.bad_lines[0]})"
        return f"{self.file}:{self.good_place}"

    def summary(self) -> str:
        """One line for tables: 'kernel.py:10-12 -2 +3'."""
        if self.kind in ("text", "add", "delete") and (self.old or self.new):
            return f"{self.id} -{len(self.old)} +{len(self.new)}"
        if self.kind == "mode":
            return f"{self.id} {' -> '.join(_patch_modes(*self.modes))}"
        if self.kind == "rename":
            return f"{self.id} -> {self.to}"
        return self.id

    def unified(self, context: int = 3) -> str:
        """This hunk alone as a git-style patch against GOOD (BAD's line numbers on the + side)."""
        if self.kind == "retype":       # as git shows it: the file deleted, the directory's files added
            return "".join(Hunk(rel, whole_kind(g, b), good_entry=g, bad_entry=b).unified(context)
                           for rel, g, b in self.tree if g != b)
        if self.kind == "rename":       # the move alone: the content as GOOD has it
            return _diff_git(self.file, self.to) + _moved(self.file, self.to, 100)
        head = _diff_git(self.file)
        if self.kind == "mode":
            return head + _mode_change(*_patch_modes(*self.modes))
        if self.kind in WHOLE:
            return head + _render_whole(self)
        gs, ge = self.good_lines
        before = self.base[max(0, gs - 1 - context):gs - 1]
        after = self.base[ge - 1:ge - 1 + context]
        n = len(before)
        old, new = list(self.old), list(self.new)
        if before and not before[-1].endswith("\n") and new:
            # lines added after GOOD's last line, which has no newline: applied, the join gives it
            # one (apply_lines), so the patch changes it too; as context it would read `B = 2Z = 9`
            before, old, new = before[:-1], [before[-1], *old], [before[-1] + line_end(apply_lines(self.base, [self])), *new]
        body = [f"--- {_label('a/', self.file)}\n+++ {_label('b/', self.file)}\n",
                f"@@ -{_range(gs - n, n + len(self.old) + len(after))} "
                f"+{_range(self.bad_lines[0] - n, n + len(self.new) + len(after))} @@\n"]
        body += [_line(" ", s) for s in before] + [_line("-", s) for s in old]
        body += [_line("+", s) for s in new] + [_line(" ", s) for s in after]
        return head + "".join(body)

    def to_dict(self) -> dict:
        d = {"id": self.id, "file": self.file, "kind": self.kind, "where": self.where,
             "good_lines": list(self.good_lines), "bad_lines": list(self.bad_lines),
             "text": self.unified()}
        if self.parent:
            d["parent"] = self.parent
        if self.to:
            d["to"] = self.to
        return d


def whole_kind(good: Entry | None, bad: Entry | None) -> str:
    """The kind of a hunk that replaces one file whole: 'add', 'delete' or 'replace'."""
    return "add" if good is None else "delete" if bad is None else "replace"


def _text(entry: Entry | None) -> tuple[str, ...] | None:
    """The lines of a text file (None for binary files and symlinks). Text is what git takes for
    text: no NUL byte in its first 8 KiB. Bytes that are no UTF-8 (a latin-1 `\xfc` in a comment)
    are kept as lone surrogates (surrogateescape), so its lines are hunks like any file's and a
    subset is written back byte for byte (`encode_text`); as strict UTF-8 such a file was binary,
    one hunk whole, printed as a base85 patch."""
    if entry is None or entry.link or b"\0" in entry.data[:8192]:
        return None
    return tuple(split_text(entry.data.decode("utf-8", "surrogateescape")))


def encode_text(text: str) -> bytes:
    """A text `_text` read (or a patch of its lines) as its bytes: undecodable bytes as they were."""
    return text.encode("utf-8", "surrogateescape")


def split_text(text: str) -> list[str]:
    """Lines split on '\\n' only, each keeping its ending; ''.join() inverts it exactly."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])



def _by_file(hunks: Iterable[Hunk]) -> dict[str, list[Hunk]]:
    unique = {h.id: h for h in hunks}
    for h in unique.values():
        if h.parent in unique:
            raise SpaceError(f"hunk {h.id} is part of {h.parent}: apply one or the other")
    groups: dict[str, list[Hunk]] = defaultdict(list)
    for h in unique.values():
        groups[h.file].append(h)
    return groups


def _in_order(hunks: Iterable[Hunk]) -> list[Hunk]:
    """Text hunks of one file in the order they are applied (apply_lines) and rendered
    (_hunk_opcodes): by (good start, good end, bad start)."""
    return sorted(hunks, key=lambda h: (h.good_lines[0], h.good_lines[1], h.bad_lines[0]))


def apply_lines(base: tuple[str, ...] | list[str], hunks: Iterable[Hunk]) -> list[str]:
    """GOOD's lines with the given text hunks of one file applied, in one forward pass.

    Sorting by (good start, good end, bad start) puts insertions at a position before a hunk
    that starts there, and keeps split insertions in BAD's order.
    """
    out: list[str] = []
    cursor = 1
    for h in _in_order(hunks):
        start, end = h.good_lines
        if start < cursor:
            raise SpaceError(f"hunks overlap in {h.file}: {h.id}")
        out += base[cursor - 1:start - 1]
        out += h.new
        cursor = end
    out += base[cursor - 1:]
    return out


def join_lines(lines: list[str]) -> str:
    """Lines to text. A line without its newline (only ever the last line of GOOD or BAD) gets
    one when split hunks put another line after it, so every subset stays a valid text: the
    file's own (`line_end`), never a `\n` amid CRLF lines that neither side has."""
    eol = line_end(lines)
    return "".join(s if s.endswith("\n") or k == len(lines) - 1 else s + eol
                   for k, s in enumerate(lines))


MIN_SIMILARITY = 50     # a move's two files share at least half their lines (git's -M default; renames.py)


def line_counts(lines: Iterable[str]) -> Counter:
    """Lines as a multiset, each without its ending (a file moved to CRLF line endings is still
    itself): what `alike` compares."""
    return Counter(line.rstrip("\r\n") for line in lines)


def alike(a: Counter | None, b: Counter | None) -> int:
    """0-100: the share of lines two texts hold in common (line_counts of each; None: no text);
    0 too where their sizes alone put it below MIN_SIMILARITY (no move, whatever they share)."""
    if not a or not b:
        return 0
    na, nb = a.total(), b.total()
    if 200 * min(na, nb) < MIN_SIMILARITY * (na + nb):
        return 0        # sizes too far apart for half of the lines to be shared
    # the lines both hold, found by a set operation (C speed: most candidate pairs share few)
    return int(200 * sum(min(a[line], b[line]) for line in a.keys() & b.keys()) / (na + nb))


def line_end(lines: Iterable[str]) -> str:
    """'\r\n' where every line that ends ends so (a CRLF file), else '\n'."""
    ends = [s.endswith("\r\n") for s in lines if s.endswith("\n")]
    return "\r\n" if ends and all(ends) else "\n"



# -- rendering ---------------------------------------------------------------------------------

def _git_mode(mode: int, link: bool = False) -> str:
    return "120000" if link else "100755" if mode & 0o111 else "100644"


def _patch_modes(old: int, new: int) -> tuple[str, str]:
    """A mode hunk's two modes as its patch writes them: git's where they differ, else the
    permission bits themselves ('100644' -> '100444': a file made read-only, which git does not
    record; patch -p1 sets them, git apply takes them). Written as git's, that change read
    'old mode 100644 / new mode 100644': a patch that changes nothing."""
    a, b = _git_mode(old), _git_mode(new)
    return (a, b) if a != b else (f"{stat.S_IFREG | old:o}", f"{stat.S_IFREG | new:o}")


_C_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def _name(prefix: str, rel: str, space: bool = False) -> str:
    """`prefix + rel` as a patch names it: C-quoted as git quotes it ("a/new\\nline.py", octal
    bytes) where the name holds a control character, '"', '\\' or a byte that is no UTF-8 (read
    back as a surrogate): written plain, a newline would end the header line and such a byte
    cannot be written at all. git apply and GNU patch read the quoted form. With `space` (the
    `diff --git` line, whose two names GNU patch cannot tell apart where they hold a space: a
    moved file's patch named none) a name with a space is quoted too."""
    name = prefix + rel
    raw = os.fsencode(name)
    if (not any(b < 0x20 or b == 0x7f or b in (34, 92) or (space and b == 32) for b in raw)
            and raw.decode("utf-8", "replace") == name):
        return name
    return '"' + "".join(_C_ESCAPES.get(b) or (chr(b) if 0x20 <= b < 0x7f else f"\\{b:03o}") for b in raw) + '"'


def _label(prefix: str, rel: str) -> str:
    """A `---`/`+++` line's name: ended by a tab where it holds a space, as git writes it (GNU
    patch reads such a name up to its first space or tab: `--- a/sp ace.py` named no file)."""
    return _name(prefix, rel) + ("\t" if " " in rel else "")


def _diff_git(rel: str, to: str | None = None) -> str:
    return f"diff --git {_name('a/', rel, space=True)} {_name('b/', to or rel, space=True)}\n"


def _moved(rel: str, to: str, similar: int) -> str:
    """A patch's lines for a file moved (git's form, which git apply and GNU patch read)."""
    return f"similarity index {similar}%\nrename from {_name('', rel)}\nrename to {_name('', to)}\n"


def _mode_change(old: str, new: str) -> str:
    """A patch's lines for a mode changed (git's modes: '100644', '100755', '120000')."""
    return f"old mode {old}\nnew mode {new}\n"


def _range(start: int, length: int) -> str:
    """A unified-diff range: 'start,length', 'start' for one line, 'start-1,0' when empty."""
    if length == 1:
        return str(start)
    return f"{start - 1 if length == 0 else start},{length}"


def _line(prefix: str, s: str) -> str:
    return prefix + s if s.endswith("\n") else f"{prefix}{s}\n\\ No newline at end of file\n"


def _entry_lines(e: Entry | None) -> tuple[str, ...] | None:
    return (os.fsdecode(e.data),) if e is not None and e.link else _text(e)


def _render_whole(h: Hunk) -> str:
    g, b = h.good_entry, h.bad_entry
    if g is not None and b is not None and g.link != b.link:
        # a link that became a file, or the reverse: git writes the type change as the path
        # deleted and added again (as 'old mode 120000 / new mode 100644' git apply refuses it)
        return (_render_whole(replace(h, bad_entry=None)) + _diff_git(h.file)
                + _render_whole(replace(h, good_entry=None)))
    if g is None:
        head = f"new file mode {_git_mode(b.mode, b.link)}\n"
    elif b is None:
        head = f"deleted file mode {_git_mode(g.mode, g.link)}\n"
    elif _git_mode(g.mode, g.link) != _git_mode(b.mode, b.link):
        head = _mode_change(_git_mode(g.mode, g.link), _git_mode(b.mode, b.link))
    else:
        head = ""
    old, new = _entry_lines(g), _entry_lines(b)
    if (g is not None and old is None) or (b is not None and new is None):
        return head + _binary_patch(g, b)     # its own index line, full ids (git apply's)
    head += _index(g, b)
    old, new = old or (), new or ()
    if not old and not new:
        return head
    labels = ["/dev/null" if e is None else _label(side, h.file) for side, e in (("a/", g), ("b/", b))]
    return (head + f"--- {labels[0]}\n+++ {labels[1]}\n@@ -{_range(1, len(old))} +{_range(1, len(new))} @@\n"
            + "".join(_line("-", s) for s in old) + "".join(_line("+", s) for s in new))


def _binary_patch(g: Entry | None, b: Entry | None) -> str:
    """A binary file's change as `git diff --binary` writes it, which git apply reads (GNU patch
    does not): the index line with both blobs' full ids (git apply refuses a binary patch without
    it) and BAD's bytes, deflated and base85-encoded 52 bytes a line ('literal')."""
    data = zlib.compress(b.data if b is not None else b"")
    lines = [(chr(ord("A") + len(c) - 1) if len(c) <= 26 else chr(ord("a") + len(c) - 27))
             + base64.b85encode(c, pad=True).decode() + "\n" for c in (data[i:i + 52] for i in range(0, len(data), 52))]
    size = len(b.data) if b is not None else 0
    return f"index {_blob_id(g)}..{_blob_id(b)}\nGIT binary patch\nliteral {size}\n" + "".join(lines) + "\n"


def _blob_id(e: Entry | None) -> str:
    """git's object id of an entry's bytes as a blob (zeros for an absent side), as an index line names it."""
    return "0" * 40 if e is None else hashlib.sha1(b"blob %d\0" % len(e.data) + e.data).hexdigest()


def _index(g: Entry | None, b: Entry | None) -> str:
    """git's `index` line of a whole-file change: the two blobs' ids (zeros for an absent side)
    and, where the type and mode stay, the mode. GNU patch reads it: without it a retargeted
    link was taken for a file ('not a regular file -- refusing to patch') and an empty file
    deleted for one emptied ('already empty!  Skipping patch')."""
    ids = [_blob_id(e)[:7] for e in (g, b)]
    same = g is not None and b is not None and _git_mode(g.mode, g.link) == _git_mode(b.mode, b.link)
    return f"index {ids[0]}..{ids[1]}" + (f" {_git_mode(g.mode, g.link)}" if same else "") + "\n"


def _hunk_opcodes(base: tuple[str, ...], hunks: list[Hunk], result: list[str]) -> list[tuple]:
    """difflib opcodes over (GOOD's lines, the lines `hunks` give) that put each change where its
    hunk is: a re-diff of the two could put it elsewhere among repeated lines (`y y y` -> `y z y`,
    the hunk 'f:2', came out as `+z` after line 1 and `-y` at line 3). GOOD's last line is a change
    too where the join gave it a newline (a line now follows it); adjacent changes are one."""
    ops, i, j = [], 0, 0
    for h in _in_order(hunks):
        i1, i2 = h.good_lines[0] - 1, h.good_lines[1] - 1
        ops += [("equal", i, i1, j, j + i1 - i), ("change", i1, i2, j + i1 - i, j + i1 - i + len(h.new))]
        i, j = i2, j + i1 - i + len(h.new)
    ops.append(("equal", i, len(base), j, len(result)))
    merged: list[list] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i2 == i1:
            continue
        if tag == "equal" and base[i2 - 1] != result[j2 - 1]:     # the joined last line
            merged.append(["equal", i1, i2 - 1, j1, j2 - 1])
            tag, i1, j1 = "change", i2 - 1, j2 - 1
        if merged and merged[-1][0] == tag == "change":
            merged[-1][2], merged[-1][4] = i2, j2
        else:
            merged.append([tag, i1, i2, j1, j2])
    return [("equal" if tag == "equal" else "replace" if i2 > i1 and j2 > j1 else "delete" if i2 > i1 else "insert",
             i1, i2, j1, j2) for tag, i1, i2, j1, j2 in merged if i2 > i1 or j2 > j1]


class _Given(difflib.SequenceMatcher):
    """A matcher whose opcodes are given: difflib groups them with their context."""

    def __init__(self, a, b, opcodes: list[tuple]):
        super().__init__(None, a, b, autojunk=False)
        self.given = opcodes

    def get_opcodes(self):
        return list(self.given)


def _render_text(a: list[str] | tuple[str, ...], b: list[str], opcodes: list[tuple], context: int) -> str:
    out = []
    for group in _Given(a, b, opcodes).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", s) for s in a[a1:a2]]
                continue
            out += [_line("-", s) for s in a[a1:a2]] + [_line("+", s) for s in b[b1:b2]]
    return "".join(out)


def unified_diff(hunks: Iterable[Hunk], context: int = 3) -> str:
    """The subset as one git-style patch against GOOD; `patch -p1` applied to GOOD gives what
    `materialise` gives (a binary file's change is git's binary patch, which git apply reads)."""
    out = []
    for rel, hs in sorted(_by_file(hunks).items()):
        whole = [h for h in hs if h.kind in WHOLE]
        if whole:
            out.append(whole[0].unified(context))
            continue
        text = [h for h in hs if h.kind == "text"]
        mode = [h for h in hs if h.kind == "mode"]
        moved = next((h for h in hs if h.kind == "rename"), None)
        to = moved.to if moved else rel
        part = _diff_git(rel, to)
        if mode:
            part += _mode_change(*_patch_modes(*mode[0].modes))
        result = split_text(join_lines(apply_lines(text[0].base, text))) if text else []
        if moved:
            similar = 100 if not text else alike(line_counts(text[0].base), line_counts(result))
            part += _moved(rel, to, similar)
        if text:
            base = text[0].base
            part += f"--- {_label('a/', rel)}\n+++ {_label('b/', to)}\n" + _render_text(base, result, _hunk_opcodes(base, text, result), context)
        out.append(part)
    return "".join(out)
