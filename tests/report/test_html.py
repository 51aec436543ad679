"""The HTML report is one self-contained file with the debug log's content and its pictures; the
Markdown report links the same pictures beside it; `bisectk report` rebuilds both from the ledger."""
import html
import re
import sys
from pathlib import Path

import pytest

from bisectk.engine.records import AttemptRecord
from bisectk.report import html as H
from tests.conftest import bisectk
from tests.report.records import interaction_record


EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)|<script|<link|@import|url\(\s*["']?https?:""", re.I)


def test_html_is_self_contained_with_the_debug_log_and_pictures():
    page = H.to_html(interaction_record())
    assert not EXTERNAL.search(page)
    assert page.count("<figure") == 2 and page.count("<svg") == 2
    for part in ('id="status"', "Summary", "Key Differences", "Attempt 1:", "Hypothesis:", "Conclusion:",
                 "Run matrix", "warps + mma_warp"):
        assert part in page, part
    assert re.search(r'<tr class="culprit"><td>warps</td>', page)
    # ids inside the two inlined SVGs do not collide
    svg_ids = re.findall(r'<(?:g|path|clipPath|defs|use)[^>]* id="([^"]+)"', page)
    assert len(svg_ids) == len(set(svg_ids))


def test_subject_output_is_escaped_never_markup():
    rec = interaction_record()
    evil = "FAIL wrong (<script>alert(1)</script> <img src=http://x/y.png>)"
    rec = type(rec)(**{**rec.__dict__, "attempts": (AttemptRecord(1, "split", ("warps",), "hybrid", "fail", evil,
                                                                  None, 1, 0.1),)})
    page = H.to_html(rec)
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page


def test_markdown_report_links_pictures_written_beside_it(tmp_path):
    md = tmp_path / "log.md"
    line = H.write_markdown(md, interaction_record())
    text = md.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == ["log-figures/run-matrix.svg", "log-figures/interaction.svg"]
    for link in links:
        svg = (tmp_path / link).read_text()
        assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert "#### Pictures" in text and "2 picture(s)" in line


def test_without_matplotlib_the_reports_are_still_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib -> ImportError
    out = tmp_path / "r.html"
    line = H.write_html(out, interaction_record())
    page = out.read_text()
    assert "<svg" not in page and html.escape(H.MISSING) in page and H.MISSING in line and "Attempt 1:" in page
    H.write_markdown(tmp_path / "r.md", interaction_record())
    assert "Pictures" not in (tmp_path / "r.md").read_text() and not (tmp_path / "r-figures").exists()


SUBJECT = """import json, sys
a = dict(arg.split("=") for arg in sys.argv[1:])
bad = a["warps"] == "10" and a["mma_warp"] == "last"
print("BISECTK_RESULT " + json.dumps({"rel_err": 0.6 if bad else 0.0}))
"""


def interaction_spec(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(SUBJECT)
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "warps"\n[subject]\ncommand = ["python", "k.py", "warps={warps}", "mma_warp={mma_warp}", '
                    '"tile={tile}", "seed={seed}"]\n[oracle]\nmetric = "rel_err"\nmax = 1e-4\n'
                    '[good]\nwarps = 6\nmma_warp = "packed"\ntile = 64\nseed = 0\n'
                    '[bad]\nwarps = 10\nmma_warp = "last"\ntile = 128\nseed = 1\n')
    return spec


def test_report_command_rebuilds_the_same_html_from_the_ledger(tmp_path):
    spec = interaction_spec(tmp_path)
    ledger = tmp_path / "l.db"
    p = bisectk("ablate", spec, "--ledger", ledger, "--html", tmp_path / "a.html", "--report", tmp_path / "a.md",
                check=0)
    assert "HTML report written to" in p.stdout and "(2 picture(s))" in p.stdout
    bisectk("report", ledger, "--html", tmp_path / "b.html", "--report", tmp_path / "b.md", check=0)
    first, again = (tmp_path / "a.html").read_text(), (tmp_path / "b.html").read_text()
    assert "warps + mma_warp" in first and first == again
    assert (tmp_path / "a-figures" / "run-matrix.svg").read_text() == (tmp_path / "b-figures" / "run-matrix.svg").read_text()


def test_commands_in_the_html_are_shell_quoted():
    import shlex
    rec = interaction_record()
    subj = rec.subject
    rec = type(rec)(**{**rec.__dict__, "subject": type(subj)(**{**subj.__dict__, "path": "/tmp/my specs/a;b.toml",
                                                                 "bad": {**subj.bad, "warps": "10 $(rm -rf ~)"}})})
    page = H.to_html(rec)
    commands = [html.unescape(c) for c in re.findall(r"<code>(bisectk run [^<]*)</code>", page)]
    assert commands, "no command printed"
    for c in commands:
        argv = shlex.split(c)
        assert argv[:3] == ["bisectk", "run", "/tmp/my specs/a;b.toml"]
        assert all(a == "warps=10 $(rm -rf ~)" for a in argv if a.startswith("warps="))
