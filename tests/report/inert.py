"""What a written report must be whatever text came from outside bisectk: no raw control character,
no markup of the subject's own, tables that keep their columns, an HTML page a parser reads."""
from __future__ import annotations

import re
from html.parser import HTMLParser

# A subject's error or output, a commit subject: NUL, BEL, ESC sequences (retitle, clear), DEL, an
# 8-bit CSI, a lone surrogate (an undecodable byte), inline HTML, a table's pipe and a code fence,
# and a Markdown picture and link (a viewer would fetch the one and follow the other).
HOSTILE = ("\x00\x07\x1b]0;pwn\x07\x1b[2J\x7f\x9b2J\udcff <script>alert(1)</script> a|b \\| ```"
           " ![p](https://evil.example/p.png) [go](https://evil.example/)")

RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def no_raw_control(data: bytes) -> None:
    assert not RAW_CONTROL.search(data), sorted(set(RAW_CONTROL.findall(data)))
    data.decode("utf-8")                            # a lone surrogate could not have been written anyway


def markdown_tokens(text: str):
    """Every token of `text` as a viewer that renders inline HTML parses it (GFM tables on)."""
    from markdown_it import MarkdownIt
    stack = list(MarkdownIt("commonmark", {"html": True}).enable("table").parse(text))
    while stack:
        token = stack.pop()
        yield token
        stack += token.children or []


def inert_markdown(text: str, code: bool = False) -> None:
    """No raw control character, no HTML a viewer would render, and every table row as wide as its
    header; no `<script` at all unless `code` (a fenced block shows one as it is)."""
    no_raw_control(text.encode("utf-8"))
    assert code or "<script" not in text.lower()
    tokens = list(markdown_tokens(text))
    assert not [t.content for t in tokens if t.type in ("html_inline", "html_block")]
    # no link, and no picture but bisectk's own (its SVGs beside the log, by relative path)
    assert not [t.attrs for t in tokens if t.type == "link_open"]
    assert not [t.attrs for t in tokens if t.type == "image" and "://" in str(t.attrs.get("src", ""))]
    from markdown_it import MarkdownIt
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    for table in re.findall(r"<table>.*?</table>", page, re.S):
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, (widths, table[:2000])


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def inert_html(page: str) -> str:
    """No raw control character, no script, and a page html.parser reads; returns its text."""
    no_raw_control(page.encode("utf-8"))
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert "script" not in parser.tags and "<script" not in page.lower()
    assert not {"img", "a", "link", "iframe"} & set(parser.tags)      # nothing fetched, nothing followed
    return "".join(parser.text)
