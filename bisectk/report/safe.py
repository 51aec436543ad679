"""Text that comes from outside bisectk, made safe for where it is written: the terminal, XML,
Markdown, HTML and the pictures.

Abstractions
------------
terminal_text -- a string with every control character a terminal would act on written as a visible
                 escape (`\\x1b`, `\\x9b`, `\\u202e`): C0 controls but newline and tab, DEL, the C1
                 range (U+0080-U+009F: an 8-bit CSI is an escape sequence too), the bidirectional
                 overrides (text that reads differently from what it is) and lone surrogates
                 (undecodable bytes, which no terminal encoding can write: a file name's byte
                 0xE9, decoded with surrogateescape, is `\\xe9`, as json_text writes it, so a hunk
                 id read on the terminal is the one --json holds).
Verbatim      -- text rich prints as terminal_text makes it, tabs and all (a patch: diff, triage).
xml_text      -- a string with every character XML 1.0 forbids written the same way (ElementTree
                 escapes `<`, `&` and quotes, but writes control characters as they are, which no
                 XML parser accepts).
markdown_text -- a Markdown document bisectk composed, with what came from outside made inert:
                 control characters visible everywhere (a `cat` of the file is a terminal too),
                 and `&`, `<`, `>` written as entities outside fenced code blocks, so a subject's
                 `<script>` is shown, never rendered by a viewer that allows inline HTML; and
                 `](` written `]\\(` there, so a commit subject's `![x](https://...)` is no
                 picture a viewer fetches (nor `[x](...)` a link), but on the lines bisectk
                 wrote as its own links (the pictures beside the log); and `*`, `~` and `_`
                 (but inside a word: `tile_elems` stays greppable) backslash-escaped outside
                 code spans there, so no name is read as emphasis
                 (`pkg/__init__.py` was `pkg/<strong>init</strong>.py`), bisectk's own written
                 with strong and emphasis.
strong, emphasis -- bisectk's own bold and italic in a Markdown document it composes: written
                 with two noncharacters (U+FDEE, U+FDEF; Unicode keeps them for a program's internal
                 use) that markdown_text turns into `**` and `_`, after it has made every `*`, `_`
                 and `~` from outside text (a culprit in `pkg/__init__.py`, a value `2*x*y`).
markdown_cell -- one table cell: newlines flattened, `|` escaped (with the backslashes before it,
                 so `a\\|b` neither splits the row nor loses its backslash).
code_span     -- a Markdown code span that holds any text (fenced by a backtick run longer than
                 any inside); text with `&`, `<`, `>` or `](` is written as plain text instead,
                 its other punctuation backslash-escaped, since neither entities nor escapes are
                 read inside a code span and markdown_text must make those three entities and
                 escape that bracket's parenthesis.
html_text     -- html.escape, with control characters, lone surrogates and noncharacters made
                 visible (an HTML parser reports each as an error; NUL is replaced).
visible_text  -- html_text without the escaping: what a whole page bisectk wrote is passed through.
picture_text  -- a label for matplotlib: control characters visible (it has no glyph for them and
                 warns on stderr) and `$` escaped (an even number of them is read as mathtext,
                 which draws something else or raises).
json_text     -- a JSON document any strict reader reads back: a name made of bytes that are not
                 UTF-8 (a latin-1 file name, decoded with surrogateescape) has each such byte written
                 as `\\xNN` text, as the terminal shows it, never as a lone surrogate escape
                 (`\\udce9`), which is not Unicode;
                 and a metric that is NaN or an infinity (a subject's `{"err": NaN}`) is
                 written as the string "NaN", "Infinity" or "-Infinity" (as protobuf's JSON
                 mapping writes them), never as json.dumps's bare NaN, which is no JSON: jq,
                 JavaScript's JSON.parse and every strict parser reject the whole document.
undecoded_bytes -- a text's bytes where it holds bytes that are not UTF-8 (surrogateescape):
                 every view above writes each as `\\xNN`, so a patch shown so no longer applies;
                 where it does, the bytes are given as a file (--report) or base64 (--json).
broken_pipe_exit -- how a command leaves when the reader of its output went away (`| head`).
disk_full     -- whether a write failed for want of space (ENOSPC, EDQUOT, EFBIG).
SafeConsole   -- a rich Console that passes every string it renders (printed text, table cells,
                 titles) and every plain Text through terminal_text, and reads no string as rich
                 markup or emoji code. bisectk's consoles are made here, so a commit subject,
                 author, file name, factor value, metric name or subject output cannot retitle,
                 clear or rewrite the user's terminal, nor be shown as other text than it is (a
                 value `[red]x[/]` printed as `x`, a gitmoji subject `:bug: fix` as `🐛 fix`). The class is made at
                 its first use (a module __getattr__): importing this module for the text functions
                 loads no rich, so a --json command, which prints nothing to a terminal, never does
                 (~25 ms of its start).

Why markdown_text escapes at the boundary, when the document is written, and which lines it
leaves alone: bisectk writes no inline HTML, so every `<` outside code is text. Code spans are
not told apart: a renderer pairs backticks per table cell, per link, across lines, and a pairing
that differed from its own would leave a `<` unescaped outside code (so entities inside a span
show as `&lt;`, hence code_span). Fenced blocks are, and only those that open at column 0, the
ones code_block writes: in CommonMark such a line opens a fence wherever it stands (it ends a
paragraph, a list item or a quote rather than continuing it, and no HTML block can hold it, `<`
being escaped), so what is left unescaped is code to a renderer too.

Why here, once: the strings a repository or a subject controls reach the terminal through many
reports, and a rule applied at each print would be missed at the next one. Rich renders every str
through `Console.render_str`, before layout, so escaping there keeps tables aligned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Container

_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(match: re.Match) -> str:
    c = ord(match.group(0))
    if 0xDC80 <= c <= 0xDCFF:       # an undecodable byte (surrogateescape): the byte, as json_text has it
        c -= 0xDC00
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal_text(text: str) -> str:
    """`text` with control characters a terminal acts on made visible (newline and tab kept)."""
    return _TERMINAL.sub(_escape, text) if isinstance(text, str) else text


class Verbatim:
    """`text` as rich prints it unchanged but for terminal_text: its tabs kept, its lines never cut
    (printed with soft_wrap), and a CR that ends a line (CRLF: it moves nothing a newline does not).
    A string rich prints has every tab expanded to spaces, and a patch printed so no longer applies
    (a Makefile's recipe line, C indented with tabs, a CRLF file's lines as `a\\x0d`: the context
    matches no line of GOOD)."""

    def __init__(self, text: str):
        self.text = text

    def __rich_console__(self, console, options):
        from rich.segment import Segment
        for line in self.text.split("\n"):
            end = "\r" if line.endswith("\r") else ""
            yield Segment(terminal_text(line[:len(line) - len(end)]) + end)
            yield Segment.line()


def xml_text(text: str) -> str:
    """`text` with the characters XML 1.0 cannot hold made visible (newline, tab and CR kept), and
    with terminal controls escaped too, since CI pages show it to people."""
    return _XML_INVALID.sub(_escape, terminal_text(text))


_NONCHARACTERS = re.compile("[\ufdd0-\ufdef\ufffe\uffff]")
# A backslash escape is read whole (`\\<` is a backslash, then a `<`); `\<` becomes `&lt;` too, since
# Markdown outside CommonMark (Markdown.pl, Python-Markdown) does not read it as an escape.
_MARKDOWN_HTML = re.compile(r"\\[!-/:-@\[-`{-~]|[&<>]")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\&": "&amp;", "\\<": "&lt;", "\\>": "&gt;"}
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_PUNCTUATION = re.compile(r"([!-%'-/:;=?@\[-`{-~])")     # but & < >, which markdown_text makes entities


def _entity(match: re.Match) -> str:
    return _ENTITIES.get(match.group(0), match.group(0))


_STRONG, _EMPHASIS = "\ufdee", "\ufdef"
# a backslash escape (read whole: its character is text already), a backtick run (a code span's
# fence), or what makes emphasis or strikethrough (GFM's `~`)
_INLINE = re.compile(r"\\[!-/:-@\[-`{-~]|`+|_+|[*~]")
_CELL_BORDER = re.compile(r"(?<!\\)(?:\\\\)*\|")


def strong(text: str) -> str:
    """`text` in bisectk's own bold (markdown_text writes it `**text**`)."""
    return f"{_STRONG}{text}{_STRONG}"


def emphasis(text: str) -> str:
    """`text` in bisectk's own italic (markdown_text writes it `_text_`)."""
    return f"{_EMPHASIS}{text}{_EMPHASIS}"


def marks(text: str) -> str:
    """`text` with bisectk's own bold and italic written as Markdown, and nothing escaped: the
    document as a reader that shows it as it is reads it (a JUnit failure's body)."""
    return text.replace(_STRONG, "**").replace(_EMPHASIS, "_")


def _span_end(line: str, start: int, fence: int, table: bool) -> int | None:
    """Where the code span whose opening run of `fence` backticks ends at `start` closes (after a
    run of exactly as many), within its table cell; None where nothing closes it (the run is text)."""
    border = _CELL_BORDER.search(line, start) if table else None
    for run in re.finditer("`+", line[start:border.start() if border else len(line)]):
        if len(run.group(0)) == fence:
            return start + run.end()
    return None


def _word(c: str) -> bool:
    """A character of a word, to CommonMark: neither space nor punctuation (bisectk's own marks
    are punctuation: they are written `**` and `_`)."""
    import unicodedata
    return not c.isspace() and unicodedata.category(c)[0] not in "PS" and c not in (_STRONG, _EMPHASIS)


def _intraword(line: str, start: int, end: int) -> bool:
    """Whether the run line[start:end] stands between two characters of words (`tile_elems`): a
    `_` run there neither opens nor closes emphasis in CommonMark, so it is left as it is (a
    `grep tile_elems` of the log finds it)."""
    return 0 < start and end < len(line) and _word(line[start - 1]) and _word(line[end])


def _inert_emphasis(line: str) -> str:
    """`line` with every `*` and `~` outside a code span backslash-escaped, and every `_` but
    those inside a word (a code span shows a backslash as it is, so its text is left alone,
    paired as CommonMark pairs backtick runs)."""
    out, pos, table = [], 0, line.startswith("|")
    while (m := _INLINE.search(line, pos)):
        out.append(line[pos:m.start()])
        token, pos = m.group(0), m.end()
        if token[0] == "`" and (end := _span_end(line, pos, len(token), table)) is not None:
            token, pos = line[m.start():end], end
        elif token[0] in "*~" or token[0] == "_" and not _intraword(line, m.start(), m.end()):
            token = "\\" + "\\".join(token)
        out.append(token)
    out.append(line[pos:])
    return "".join(out)


def markdown_text(document: str, links: Container[str] = ()) -> str:
    """`document` (Markdown bisectk composed) with control characters visible, and `&`, `<`, `>`
    as entities, `](` as `]\\(` and `*`, `_`, `~` backslash-escaped outside the fenced code blocks
    that open at column 0 and the lines in `links` (bisectk's own links; see the module
    docstring); bisectk's own strong and emphasis then written as Markdown."""
    out, fence = [], ""
    for line in terminal_text(document).split("\n"):
        if line in links:
            pass
        elif fence:
            close = _FENCE_CLOSE.fullmatch(line)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                fence = ""
        elif (opened := _FENCE_OPEN.match(line)) and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
        else:
            line = marks(_inert_emphasis(_MARKDOWN_HTML.sub(_entity, line).replace("](", "]\\(")))
        out.append(line)
    return "\n".join(out)


def markdown_cell(value) -> str:
    """One Markdown table cell: newlines flattened, pipes escaped."""
    text = str(value).replace("\r\n", " ").replace("\n", " ")
    return re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", text)


def code_span(text: str) -> str:
    """`text` as a Markdown code span (escaped plain text where it holds `&`, `<` or `>`)."""
    text = str(text).replace("\r\n", " ").replace("\n", " ")
    if not text:
        return ""
    if any(c in text for c in "&<>") or "](" in text:
        return _PUNCTUATION.sub(r"\\\1", text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(text: str) -> str:
    """`text` for an HTML page: escaped, with what an HTML parser rejects made visible."""
    import html
    return visible_text(html.escape(text))


def visible_text(text: str) -> str:
    """terminal_text, with noncharacters (U+FDD0-U+FDEF, U+FFFE, U+FFFF) made visible too: what an
    HTML page's text may not hold (a page bisectk writes is passed through it whole)."""
    return _NONCHARACTERS.sub(_escape, terminal_text(text))


def picture_text(text: str) -> str:
    """`text` for a matplotlib label: control characters visible, `$` escaped (no mathtext)."""
    return terminal_text(text).replace("$", "\\$") if isinstance(text, str) else text


def disk_full(exc: OSError) -> bool:
    """Whether a write failed because the file it goes to can take no more (a full disk or quota,
    /dev/full, a file past its size limit): a stream of diagnostics is then dropped, never the
    command's result with it."""
    import errno
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def broken_pipe_exit(stream=None) -> None:
    """Leave as a process whose reader went away: the stream whose write failed (`stream`, else
    stdout and stderr where their reader is gone, else stdout) is pointed at /dev/null, so that
    what is flushed on the way out fails no more, and the exit code is OUTPUT_CLOSED (128 +
    SIGPIPE, as git's). Nothing is printed: the command stops as `git log | head` does, its ledger
    keeping what ran (`--resume` goes on from there), its runs and worktrees ended on the way out."""
    import os
    import sys

    from bisectk.exitcodes import OUTPUT_CLOSED
    streams = [stream] if stream is not None else [s for s in (sys.stdout, sys.stderr) if _reader_gone(s)]
    for broken in streams or [sys.stdout]:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, broken.fileno())
            os.close(null)
        except (AttributeError, OSError, ValueError):     # not a file descriptor's stream
            pass
    raise SystemExit(OUTPUT_CLOSED)


def _reader_gone(stream) -> bool:
    """Whether `stream` is a pipe whose reading end is closed (poll reports POLLERR on it)."""
    import select
    try:
        poller = select.poll()
        poller.register(stream.fileno(), 0)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _console_class() -> type:
    from rich.console import Console
    from rich.text import Text

    class SafeConsole(Console):
        """A Console whose every rendered string is terminal_text'd (see the module docstring)."""

        def __init__(self, *args, **kwargs):
            # markup and emoji codes are read in every str rich renders (a table's cells and title
            # too, where no print(markup=False) reaches): bisectk styles with Text, never markup
            kwargs.setdefault("markup", False)
            kwargs.setdefault("emoji", False)
            super().__init__(*args, **kwargs)
            if self.width < 1:      # COLUMNS=0 (a CI runner's empty terminal): rich then prints nothing at all
                self.width = 80
            self.unwritten: str | None = None      # why output was dropped (a full disk)

        def render_str(self, text: str, **kwargs) -> Text:
            return super().render_str(terminal_text(text), **kwargs)

        def render(self, renderable, options=None):
            if isinstance(renderable, Text) and _TERMINAL.search(renderable.plain):
                renderable = Text(terminal_text(renderable.plain), style=renderable.style)   # spans lost: rare
            return super().render(renderable, options)

        def _check_buffer(self) -> None:
            """rich's write of what was printed: where the file is on a full disk (`> out.txt`), the
            rest of this console's output is dropped and `unwritten` says why, so the command goes
            on to its report files and says the failure (it was an internal error, exit 3, that
            lost them too)."""
            try:
                super()._check_buffer()
            except OSError as exc:
                if not disk_full(exc):
                    raise
                self.unwritten = exc.strerror or str(exc)
                self.quiet = True

        def on_broken_pipe(self) -> None:
            """The reader of this console's stream went away (`| head`, `less` quit): rich's own
            answer is SystemExit(1), which bisect reads as "ambiguous" and triage as "culprit
            found", and it points stdout at /dev/null even when the console writes to stderr."""
            self.quiet = True
            broken_pipe_exit(self.file)

    SafeConsole.__module__, SafeConsole.__qualname__ = __name__, "SafeConsole"
    return SafeConsole


def __getattr__(name: str):
    if name == "SafeConsole":
        globals()[name] = cls = _console_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _unsurrogate(value):
    if isinstance(value, str):
        if not any("\ud800" <= c <= "\udfff" for c in value):
            return value
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else
                       f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, dict):
        return {_unsurrogate(k): _unsurrogate(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unsurrogate(v) for v in value]
    return value


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


_UNDECODED = re.compile("[\udc80-\udcff]")


def undecoded_bytes(text: str) -> bytes | None:
    """`text`'s bytes where it holds some that are not UTF-8 (decoded with surrogateescape), else
    None: the text is its bytes, as every view writes it."""
    if not isinstance(text, str) or not _UNDECODED.search(text):
        return None
    return text.encode("utf-8", "surrogateescape")


def json_text(data, **kwargs) -> str:
    """json.dumps(data, **kwargs), with no lone surrogate and no NaN or infinity in it (see the
    module docstring). The document is walked only when dumps finds one of them: a plain document
    costs one dumps."""
    import json
    try:
        text = json.dumps(data, allow_nan=False, **kwargs)
    except ValueError:      # a float that is no number: each written as a string
        text = json.dumps(_finite(json.loads(json.dumps(data, **kwargs))), allow_nan=False, **kwargs)
    if "\\ud" not in text:
        return text
    return json.dumps(_unsurrogate(json.loads(text)), allow_nan=False, **kwargs)
