"""report/safe.py: text from a repository or a subject cannot act on the terminal or break XML."""

import io
import xml.etree.ElementTree as ET

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


def test_a_terminal_that_says_it_has_no_columns_still_gets_the_result(monkeypatch):
    """COLUMNS=0 (some CI runners): rich takes width 0 and prints nothing; the result is printed."""
    monkeypatch.setenv("COLUMNS", "0")
    buf = io.StringIO()
    SafeConsole(file=buf, soft_wrap=True).print("first bad commit: abc")
    assert buf.getvalue() == "first bad commit: abc\n"
