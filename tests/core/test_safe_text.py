"""report/safe.py: text from a repository or a subject cannot act on the terminal or break XML."""

import io
import os
import xml.etree.ElementTree as ET

import pytest
from rich.table import Table
from rich.text import Text

from bisectk.report.junit import Case, to_xml
from bisectk.report.safe import SafeConsole, terminal_text, xml_text

ACTING = ["\x1b]0;title\x07", "\x1b[2J", "\x9b2J", "\u202e", "\r", "\x08", "\x7f", "\udcff"]


def test_terminal_text_escapes_what_a_terminal_acts_on_and_keeps_the_rest():
    for bad in ACTING:
        out = terminal_text(f"a{bad}b")
        assert out.startswith("a") and out.endswith("b") and out.isprintable(), repr(out)
    assert terminal_text("line 1\n\tline 2 é ✓ 漢") == "line 1\n\tline 2 é ✓ 漢"
    assert terminal_text("\x1b[31m") == "\\x1b[31m" and terminal_text("\u202e") == "\\u202e"


def test_an_undecodable_byte_is_shown_as_the_byte_json_writes():
    """A latin-1 file name's byte 0xE9 (decoded with surrogateescape) was `\\udce9` on the terminal
    and in the reports, `\\xe9` in --json: a hunk id read on the terminal was not the JSON's."""
    import json
    from bisectk.report.safe import json_text
    name = "lat\udce9.py:1"
    assert terminal_text(name) == json.loads(json_text(name)) == "lat\\xe9.py:1"
    assert terminal_text("\ud800") == "\\ud800"            # a lone surrogate that is no byte stays one


def test_xml_text_makes_any_string_a_valid_xml_character_run():
    everything = "".join(map(chr, range(0, 0x250))) + "\ufffe\uffff\ud800\U0001f600"
    xml = to_xml("suite\x00", [Case(f"name{everything}", "failed", message=everything, details=everything)])
    root = ET.fromstring(xml.split("\n", 1)[1])
    case = root.find("testsuite/testcase")
    assert "\\x1b" in case.get("name") and "\\ufffe" in case.find("failure").get("message")
    assert "\U0001f600" in case.find("failure").text and "\n" in case.find("failure").text
    assert xml_text("ok <&> text") == "ok <&> text"


def test_the_console_escapes_strings_table_cells_and_plain_text():
    buf = io.StringIO()
    console = SafeConsole(file=buf, width=200, force_terminal=False)
    table = Table(title="t\x1b]0;x\x07")
    table.add_column("c\x1b[2J")
    table.add_row("cell\x9bm")
    console.print("plain\x1b[2J", markup=False)
    console.print(table)
    console.print(Text("text\x1b]0;t\x07"))
    out = buf.getvalue()
    assert not any(c in out for c in ("\x1b", "\x07", "\x9b")), repr(out)
    assert out.count("\\x1b") == 4 and "\\x9bm" in out


def test_the_console_shows_markup_and_emoji_codes_as_they_are():
    """A spec's value `[bold red]good[/]` was shown as `good` in the key-differences table (rich read
    the cell as markup), a name `h[bold]ost[/]ile` as `hostile` in its title, and a gitmoji commit
    subject `:bug: fix` as `🐛 fix` in every printed line (emoji codes are read even with
    markup=False). Now every string shows as it is, in lines, cells and titles."""
    buf = io.StringIO()
    console = SafeConsole(file=buf, width=200, force_terminal=False)
    table = Table(title="h[bold]ost[/]ile", title_justify="left")
    table.add_column("good")
    table.add_row("[bold red]good[/] :bug:")
    console.print(":bug: fix [/] the [red]barrier[/]")
    console.print(table)
    out = buf.getvalue()
    for shown in (":bug: fix [/] the [red]barrier[/]", "h[bold]ost[/]ile", "[bold red]good[/] :bug:"):
        assert shown in out, out
    assert "\U0001f41b" not in ascii(out)


def test_progress_shows_a_subjects_markup_and_emoji_codes_as_they_are():
    """The live progress (TerminalReporter) printed run labels through markup: a signature ending in
    a backslash showed it twice, `:bug:` as an emoji. Now the text is as the subject wrote it, and
    control characters are escaped without losing the verdict's colour."""
    from bisectk.events import RunFinished
    from bisectk.outcome import FailKind, Outcome, Run
    from bisectk.report.terminal import TerminalReporter
    buf = io.StringIO()
    console = SafeConsole(file=buf, width=200, force_terminal=True, color_system="standard")
    run = Run(Outcome.FAIL, FailKind.WRONG, signature=":bug: [/] [bold]x\\\x1b]0;t\x07", duration_s=0.5)
    TerminalReporter(console)(RunFinished("hybrid", {"v": "[red]y[/]"}, 0, run))
    out = Text.from_ansi(buf.getvalue()).plain
    assert "FAIL wrong (:bug: [/] [bold]x\\\\x1b]0;t\\x07)  hybrid v=[red]y[/]" in out, out
    assert "\x1b[31m" in buf.getvalue()          # the verdict keeps its colour


def test_a_terminal_that_says_it_has_no_columns_still_gets_the_result(monkeypatch):
    """COLUMNS=0 (some CI runners): rich takes width 0 and prints nothing; the result is printed."""
    monkeypatch.setenv("COLUMNS", "0")
    buf = io.StringIO()
    SafeConsole(file=buf, soft_wrap=True).print("first bad commit: abc")
    assert buf.getvalue() == "first bad commit: abc\n"


# -- Markdown, HTML, pictures ------------------------------------------------------------------------

def test_markdown_text_escapes_outside_fences_and_keeps_what_bisectk_wrote():
    from bisectk.report.debuglog import code_block
    from bisectk.report.safe import markdown_text, strong
    from tests.report.inert import HOSTILE, inert_markdown
    doc = (f"### t\n\n{strong('Status:')} {HOSTILE}\n- a {strong('bold')} `code` item, R&D, \\<kept\\>\n\n"
           + code_block(f"x < y && {HOSTILE}\n```\n<script>still code</script>", "diff") + "\n\n<b>after</b>\n")
    out = markdown_text(doc)
    inert_markdown(out, code=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "\\x1b]0;pwn\\x07" in out and "\\xff" in out
    assert "- a **bold** `code` item, R&amp;D, &lt;kept&gt;" in out and "&lt;b&gt;after&lt;/b&gt;" in out
    assert "x < y && " in out and "<script>still code</script>" in out     # inside the fence: code, shown as is


def test_a_fence_a_subject_opens_where_a_renderer_would_not_leaves_nothing_unescaped():
    """Only a column-0 fence is taken for code: an indented one inside a list item ends with the
    item in CommonMark, so what follows it is escaped."""
    from bisectk.report.safe import markdown_text
    from tests.report.inert import inert_markdown
    for doc in ("- item\n  ```\n<script>x</script>\n", "```a`b\n<script>x</script>\n", "~~~\n```\n~~\n<i>in</i>\n~~~\n<s>x</s>\n"):
        inert_markdown(markdown_text(doc), code=True)


def test_markdown_cells_and_code_spans_hold_any_text():
    from markdown_it import MarkdownIt
    from bisectk.report.debuglog import table
    from bisectk.report.safe import code_span, markdown_text
    from tests.report.inert import HOSTILE, inert_markdown
    cells = ["a|b", "a\\|b", "x\\", "line\nbreak", HOSTILE, "`a|b`"]
    text = markdown_text(table(["k", "v"], [[c, c] for c in cells]))
    inert_markdown(text)
    page = MarkdownIt("commonmark").enable("table").render(text)
    assert "<td>a\\|b</td>" in page and "<td>a|b</td>" in page and "<td>line break</td>" in page
    md = MarkdownIt("commonmark")
    for s in ["plain", "a`b", "``x``", "`", " lead", "bisectk run s.toml --set 'a=1'"]:
        assert md.renderInline(markdown_text(code_span(s))) == f"<code>{s}</code>", s
    assert md.renderInline(markdown_text(code_span("a=<x> & `y`"))) == "a=&lt;x&gt; &amp; `y`"
    assert md.renderInline(markdown_text(code_span("--set 'a=![p](x.png)'"))) == "--set 'a=![p](x.png)'"


def test_a_picture_or_link_from_outside_is_text_and_bisectks_own_pictures_stay():
    """A commit subject `![p](https://...)` was a picture in the debug log and an <img> in the HTML
    report, which says it fetches nothing; `[go](https://...)` a link. Now both are text; the
    pictures bisectk links beside the log stay pictures."""
    from markdown_it import MarkdownIt
    from bisectk.report.debuglog import DebugLog
    from tests.report.inert import inert_markdown
    evil = "c10 ![p](https://evil.example/p.png) [go](https://evil.example/)"
    log = DebugLog(f"bisect: {evil}", f"Resolved -- {evil}", evil, summary=[evil],
                   differences_header=["commit", "subject"], differences=[["abc", evil]],
                   figures=[("Commit line", "r-figures/commit-line.svg")])
    text = log.to_markdown()
    inert_markdown(text)
    page = MarkdownIt("commonmark").enable("table").render(text)
    assert page.count("<img") == 1 and '<img src="r-figures/commit-line.svg"' in page
    assert page.count("![p](https://evil.example/p.png) [go](https://evil.example/)") == 5


def test_html_text_escapes_markup_and_makes_what_a_parser_rejects_visible():
    from bisectk.report.safe import html_text
    from tests.report.inert import HOSTILE, inert_html
    out = html_text(HOSTILE + "\ufdd0\uffff \"q\"")
    assert inert_html(f"<p title=\"{out}\">{out}</p>").startswith("\\x00\\x07\\x1b]0;pwn")
    assert "&lt;script&gt;" in out and "\\xff" in out and "\\ufdd0" in out and "&quot;q&quot;" in out


def test_picture_text_is_drawn_without_a_missing_glyph_or_mathtext():
    import warnings
    from matplotlib.figure import Figure
    from bisectk.report.safe import picture_text
    label = picture_text("a\x7f\x1b[2J\x00 $x$ \\$y")
    assert label == "a\\x7f\\x1b[2J\\x00 \\$x\\$ \\\\$y" and label.isprintable()
    fig = Figure()
    fig.text(0, 0, label)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()


@pytest.mark.parametrize("name,shown", [
    ("kernel.py:19", "kernel.py:19"),
    ("ñ/k.py:3", "ñ/k.py:3"),                      # git with core.quotePath off: left as it is
    ("a\nb.py:2", '"a\\nb.py:2"'),
    ('q"t.py', '"q\\"t.py"'),
    ("back\\slash", '"back\\\\slash"'),
    ("tab\there", '"tab\\there"'),
    ("esc\x1b[2J", '"esc\\033[2J"'),               # as git writes it: octal
])
def test_a_file_name_is_c_quoted_as_git_quotes_a_path(name, shown):
    from bisectk.names import c_quoted
    assert c_quoted(name) == shown and "\n" not in c_quoted(name)


def test_emphasis_from_outside_is_text_and_bisectks_own_bold_stays():
    """A culprit hunk in `pkg/__init__.py` was `pkg/<strong>init</strong>.py` in the debug log and
    the HTML report (a dunder in a commit subject the same), and a value `2*x*y` was `2<em>x</em>y`:
    a name shown as other text than it is. What came from outside is text; bisectk's own bold
    (the labels, the culprit) stays bold, and a code span shows its text as it is."""
    from markdown_it import MarkdownIt
    from bisectk.report.debuglog import AttemptEntry, DebugLog
    from bisectk.report.safe import code_span, strong
    names = "pkg/__init__.py:1, 2*x*y, _tmp_ and ~~old~~"
    log = DebugLog(f"t {names}", f"Resolved -- {names}", names, summary=[f"Culprit: {strong(names)}"],
                   related=["pkg/__init__.py"], differences_header=["hunk", "value"], differences=[[names, names]],
                   attempts=[AttemptEntry(names, names, code_span(f"run --set 'v={names}'"), names, names)])
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    page = md.render(log.to_markdown())
    assert "<em>" not in page and "<s>" not in page
    assert page.count("<strong>") == 8      # Status, Symptom, Related files, the culprit and the attempt's four
    assert f"<strong>{names}</strong>" in page and page.count(names) == 11
    assert f"<code>run --set 'v={names}'</code>" in page and "<code>pkg/__init__.py</code>" in page
    assert "a tile_elems b" in DebugLog("t", "a tile_elems b", "s").to_markdown()    # no emphasis inside a word
    own = DebugLog("t", "s", "s", summary=[f"Culprit: {strong('__init__')}", f"{strong('x_')}_y"]).to_markdown()
    assert md.render(own).count("<li><strong>") == 1 and "Culprit: <strong>__init__</strong>" in md.render(own)
    assert "<li><strong>x_</strong>_y</li>" in md.render(own)
    plain = log.to_markdown(entities=False)      # JUnit's body: shown as it is, never rendered
    assert f"- Culprit: **{names}**" in plain and f"**Status:** Resolved -- {names}" in plain


def test_shell_join_gives_sh_every_word_as_it_is_on_one_visible_line():
    """names.shell_join: a word with an undecodable byte, a control character, a tab, a bidi
    override, `%`, a backslash, a quote or a leading '-' reaches the program byte for byte through
    sh (dash has no $'...'), and the line holds nothing terminal_text would escape."""
    import subprocess
    from bisectk.names import shell_join
    from bisectk.report.safe import terminal_text
    words = ["bisectk", "run", os.fsdecode(b"sp\xe9c.toml"), "a=x\ty", "-\x1b[31m%s\\n'q'", "\u00e9 ok",
             "b=\u202eevil", "x\ny", "\x9b1", "plain", "", "it's"]
    line = shell_join(words)
    assert "\n" not in line and terminal_text(line) == line and "\t" not in line, line
    got = subprocess.run(["sh", "-c", "set -- " + line + '\nprintf "%s\\0" "$@"'], capture_output=True,
                         check=True).stdout.split(b"\0")[:-1]
    assert got == [os.fsencode(w) for w in words], got
    assert shell_join(["bisectk", "run", "s.toml", "--set", "a=1"]) == "bisectk run s.toml --set a=1"
