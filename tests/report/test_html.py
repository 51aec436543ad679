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


def test_a_report_whose_name_is_not_utf8_links_its_pictures_by_their_bytes(tmp_path):
    """`--report $'r\\xe9.md'` (a latin-1 name): the link's percent-encoding raised
    UnicodeEncodeError on the name's undecodable byte, an internal error (exit 3) after the search
    that lost the debug log, and the --html and --json-out written after it."""
    import os
    from urllib.parse import unquote_to_bytes
    md = tmp_path / os.fsdecode(b"r\xe9.md")
    line = H.write_markdown(md, interaction_record())
    links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md.read_text())
    assert links == ["r%E9-figures/run-matrix.svg", "r%E9-figures/interaction.svg"], links
    for link in links:
        assert (tmp_path / os.fsdecode(unquote_to_bytes(link))).read_text().startswith("<svg")
    assert "2 picture(s)" in line


def test_a_report_to_a_pipe_or_device_is_written_without_a_pictures_folder_beside_it(tmp_path):
    """`--report /dev/stdout`, `--report >(cat > log.md)`, `--report /dev/null`: the pictures went
    in `/dev/fd/63-figures/`, which cannot be made, so after the whole search the debug log was lost
    too ('could not write --report /dev/fd/63: No such file or directory', exit 2); as root
    `/dev/null-figures/` was made in /dev. A log that goes to no regular file is written without
    pictures, and says so."""
    import os
    import threading
    read, write = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(read, "rb").read()))
    reader.start()
    try:
        line = H.write_markdown(Path(f"/dev/fd/{write}"), interaction_record())
    finally:
        os.close(write)
        reader.join(10)
    text = got[0].decode("utf-8")
    assert text.startswith("### ") and "#### Pictures" not in text and "-figures/" not in text
    assert line.startswith(f"debug log written to /dev/fd/{write}") and "pictures left out" in line, line
    assert not list(tmp_path.iterdir()) and not os.path.lexists(f"/dev/fd/{write}-figures")
    # /dev/stdout redirected to a file (`--report /dev/stdout > log.md`): a regular file, named in /dev
    log = tmp_path / "log.md"
    with open(log, "w") as f:
        named = Path(f"/dev/fd/{f.fileno()}")
        line = H.write_markdown(named, interaction_record())
    assert "pictures left out" in line and "#### Pictures" not in log.read_text()
    assert not os.path.lexists(f"{named}-figures") and os.listdir(tmp_path) == ["log.md"]


def test_a_report_named_with_spaces_links_its_pictures_as_markdown_reads_links(tmp_path):
    """`--report "my report (1).md"`: the link `![..](my report (1)-figures/run-matrix.svg)` is no
    link in Markdown (a space ends its destination): the pictures did not render on a code host."""
    from urllib.parse import unquote
    md = tmp_path / "my report (1) é.md"
    H.write_markdown(md, interaction_record())
    links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md.read_text())
    assert len(links) == 2, md.read_text()
    for link in links:
        assert (tmp_path / unquote(link)).read_text().startswith("<svg")


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


def test_report_and_replay_make_the_directory_of_their_report_files(tmp_path):
    """README: --report's, --html's and --json-out's directories "are made when written". Before,
    `bisectk report LEDGER --html out/r.html` and `bisectk replay LOG --html out/r.html` with no
    `out/` yet ended in `internal error: FileNotFoundError` (exit 3), as the search commands do not."""
    spec = interaction_spec(tmp_path)
    ledger = tmp_path / "l.db"
    bisectk("ablate", spec, "--ledger", ledger, check=0)
    p = bisectk("report", ledger, "--html", tmp_path / "new" / "b.html", check=0)
    assert "HTML report written to" in p.stdout and (tmp_path / "new" / "b.html").is_file(), p.stderr
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from gitrepo import counter_repo
    repo = tmp_path / "r"
    shas = counter_repo(repo, 4)
    log = tmp_path / "b.log"
    log.write_text(f"# bisectk bisect --repo {repo} --good {shas[0]} --bad {shas[-1]}\n"
                   + "".join(f"observe {s} {v}\n" for s, v in zip(shas, ["pass", "pass", "fail", "fail"])))
    p = bisectk("replay", log, "--html", tmp_path / "newer" / "r.html")
    assert p.returncode in (0, 1) and (tmp_path / "newer" / "r.html").is_file(), (p.returncode, p.stderr)


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


def _hostile_records():
    """An ablation whose factor names, values and failure, a bisection whose commit subjects and
    authors, and a diff whose file names hold inert.HOSTILE."""
    from tests.report.inert import HOSTILE
    from tests.report.records import ablation, attempt, bisect_record, commit, diff_record, hunk
    factors = ["warps", f"f{HOSTILE}", "$x$"]
    evil = AttemptRecord(1, "split", tuple(factors[:2]), "hybrid", "fail", f"FAIL wrong ({HOSTILE})", None, 1, 0.1)
    abl = ablation(factors, factors[:2], [evil, attempt(2, ["warps"], "pass")])
    subj = abl.subject
    abl = type(abl)(**{**abl.__dict__, "subject": type(subj)(**{**subj.__dict__, "name": f"k{HOSTILE}",
                                                                 "bad": {**subj.bad, "warps": f"10{HOSTILE}"}})})
    bis = bisect_record()
    bad = {**commit(7), "subject": f"tune{HOSTILE}", "author": f"A{HOSTILE}", "files": [f"k{HOSTILE}.py"]}
    bis = type(bis)(**{**bis.__dict__, "first_bad": bad, "candidates": (bad,),
                       "tested": tuple({**t, "subject": f"s{HOSTILE}"} for t in bis.tested)})
    dif = diff_record([hunk(f"k{HOSTILE}.py", 1, 2), hunk("b.py", 3, 4)], [f"k{HOSTILE}.py:1-1"])
    return {"ablation": abl, "bisect": bis, "diff": dif}


@pytest.mark.parametrize("kind", ["ablation", "bisect", "diff"])
def test_text_from_outside_is_inert_in_every_report(tmp_path, kind):
    """Control characters, a lone surrogate, <script>, | and ``` in a failure, a factor, a commit
    subject, an author or a file name: the Markdown has no raw control byte and no HTML of its own,
    its tables keep their columns; the HTML page parses and has neither; nor have the pictures,
    drawn without a missing-glyph warning."""
    import warnings
    from tests.report.inert import inert_html, inert_markdown, no_raw_control
    rec = _hostile_records()[kind]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        H.write_markdown(tmp_path / "r.md", rec)
        H.write_html(tmp_path / "r.html", rec)
    assert not [str(w.message) for w in caught if "Glyph" in str(w.message)]
    text = (tmp_path / "r.md").read_bytes().decode("utf-8")
    inert_markdown(text, code=kind == "diff")     # the culprit diff is a fenced block: code, shown as is
    assert "\\x1b]0;pwn\\x07" in text and "&lt;script&gt;" in text
    shown = inert_html((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "\\x1b]0;pwn\\x07" in shown and "<script>alert(1)</script>" in shown    # shown as text
    for picture in (tmp_path / "r-figures").glob("*.svg"):
        no_raw_control(picture.read_bytes())
        assert "<script" not in picture.read_text()


HOSTILE_SUBJECT = r"""import json, sys
print("log line \x1b]0;pwn\x07\x1b[2J\x7f <script>alert(2)</script>", flush=True)
if sys.argv[1] == "1":
    print("BISECTK_RESULT " + json.dumps({"ok": False, "error":
          "\u0000\u0007\u001b]0;pwn\u0007\u001b[2J\u007f\u009b2J\udcff <script>alert(1)</script> a|b ```"}))
else:
    print('BISECTK_RESULT {"v": 0}')
"""


def test_a_subjects_hostile_error_reaches_no_report_raw(tmp_path):
    """The adversarial finding 06: `bisectk ablate` of a subject whose error holds NUL, BEL, ESC
    sequences, DEL, an 8-bit CSI, a lone surrogate, <script> and |."""
    from tests.report.inert import inert_html, inert_markdown
    (tmp_path / "subj.py").write_text(HOSTILE_SUBJECT)
    (tmp_path / "s.toml").write_text('[subject]\ncommand=["python3","subj.py","{a}"]\n[good]\na=0\n[bad]\na=1\n')
    p = bisectk("ablate", "s.toml", "--report", "r.md", "--html", "r.html", "--json-out", "r.json", cwd=tmp_path,
                timeout=300)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert "Glyph" not in p.stderr and "Warning" not in p.stderr, p.stderr[-2000:]
    text = (tmp_path / "r.md").read_bytes().decode("utf-8")
    inert_markdown(text)
    assert "\\x1b]0;pwn\\x07\\x1b[2J\\x7f\\x9b2J\\udcff &lt;script&gt;alert(1)&lt;/script&gt; a|b" in text
    shown = inert_html((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "\\x00\\x07\\x1b]0;pwn\\x07\\x1b[2J\\x7f\\x9b2J\\udcff <script>alert(1)</script> a|b ```" in shown
