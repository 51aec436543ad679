"""The HTML report: one self-contained file (inline SVG pictures, inline CSS, no script, nothing
fetched) with the debug log's content; and the Markdown report with the same pictures beside it.

Abstractions
------------
Picture        -- one drawn picture: name, title, SVG text, and the model it shows.
draw_pictures  -- every picture that applies to a record (bisectk/report/figures.py says which),
                  drawn; empty, with a note, where matplotlib cannot be imported (a
                  base dependency: only a broken install lacks it).
to_html        -- the page: title and status, symptom, environment, summary, pictures, key
                  differences, attempts, free sections (culprit diffs coloured), next steps, the
                  captured environment. Markdown in the debug log's fields is rendered by
                  markdown-it with raw HTML, links and images off (bisectk writes none there; a
                  commit subject's `![x](https://...)` would be a picture the page fetches), so
                  nothing from a subject's output becomes markup;
                  plain text is html_text'd, and the page is passed whole through visible_text
                  (report/safe.py), so no control character reaches it from anywhere.
write_html     -- to_html into a file; a culprit patch that is not UTF-8 beside it, as write_markdown.
write_unrecorded -- a log with no record (an interrupt before any result) as Markdown or HTML.
write_markdown -- the Markdown debug log, its pictures written as SVG files in `<stem>-figures/`
                  beside it and linked by relative path, so it renders on a code host (none
                  beside a log that goes to a pipe or a device: outputs.pictures_folder); a
                  diff's culprit patch that holds bytes that are not UTF-8 as they are, in
                  `<stem>-culprit.patch` beside it (the log shows each such byte as `\\xNN`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bisectk.engine.records import Record
from bisectk.report import render
from bisectk.report.debuglog import DebugLog, _flat, _line, short_environment
from bisectk.report.outputs import patch_file, pictures_folder
from bisectk.report.safe import html_text, markdown_text, visible_text

MISSING = "pictures need matplotlib, which bisectk installs but this Python cannot import: pip install matplotlib"


@dataclass(frozen=True)
class Picture:
    name: str
    title: str
    svg: str
    model: Any


def draw_pictures(rec: Record) -> tuple[list[Picture], str | None]:
    """(pictures, None), or ([], why not) when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return [], MISSING
    from bisectk.report.draw import svg
    from bisectk.report.figures import pictures
    return [Picture(name, title, svg(name, model), model) for name, title, model in pictures(rec)], None


def _markdown():
    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable(["link", "image"])

    def fence(self, tokens, idx, options, env):
        return _pre(tokens[idx].content, diff=tokens[idx].info.strip() == "diff")
    md.add_render_rule("fence", fence)
    return md


def _pre(text: str, diff: bool = False) -> str:
    if not diff:
        return f"<pre><code>{html_text(text)}</code></pre>\n"
    lines = []
    for line in text.rstrip("\n").split("\n"):
        cls = ("hunk" if line.startswith("@@") else "file" if line.startswith(("diff ", "--- ", "+++ "))
               else "add" if line.startswith("+") else "del" if line.startswith("-") else "")
        lines.append(f'<span class="{cls}">{html_text(line)}</span>' if cls else html_text(line))
    return '<pre class="diff"><code>' + "\n".join(lines) + "</code></pre>\n"


CSS = """
:root { --pass: #2e7d32; --fail: #c62828; --unres: #f9a825; --ink: #212121; --muted: #616161; --line: #e0e0e0; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink);
       margin: 0; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 1.45em; margin: 0 0 .4em; word-break: break-word; }
h2 { font-size: 1.15em; margin: 1.8em 0 .6em; padding-bottom: .2em; border-bottom: 1px solid var(--line); }
.status { padding: .55em .8em; border-left: 6px solid var(--unres); background: #fff8e1; font-weight: 600; }
.status.resolved { border-color: var(--pass); background: #e8f5e9; }
.status.unusable { border-color: var(--fail); background: #ffebee; }
.facts { margin: .6em 0; }
.facts dt { font-weight: 600; float: left; clear: left; width: 8.5em; color: var(--muted); }
.facts dd { margin: 0 0 .3em 9em; }
figure { margin: 1.2em 0 2em; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin-bottom: .4em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid var(--line); padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
tr.culprit td { background: #ffebee; font-weight: 600; color: var(--fail); }
code { font: .9em/1.4 "DejaVu Sans Mono", ui-monospace, monospace; background: #f5f5f5; padding: 0 .2em; }
pre { background: #f7f7f7; border: 1px solid var(--line); padding: .7em; overflow-x: auto; }
pre code { background: none; padding: 0; }
pre.diff .add { color: #1b5e20; background: #e8f5e9; display: inline-block; min-width: 100%; }
pre.diff .del { color: #b71c1c; background: #ffebee; display: inline-block; min-width: 100%; }
pre.diff .hunk { color: #6a1b9a; }
pre.diff .file { color: var(--muted); font-weight: 600; }
details.attempt { border: 1px solid var(--line); border-left: 5px solid var(--line); margin: .4em 0;
                  padding: .3em .7em; }
details.attempt.pass { border-left-color: var(--pass); }
details.attempt.fail { border-left-color: var(--fail); }
details.attempt.unresolved { border-left-color: var(--unres); }
details.attempt summary { cursor: pointer; font-weight: 600; }
details.attempt p { margin: .3em 0; }
footer { margin-top: 3em; color: var(--muted); font-size: .85em; }
"""


def _attempt_outcome(result: str) -> str:
    word = result.split(" ", 1)[0].lower()
    return {"pass": "pass", "fail": "fail", "bad": "fail", "unresolved": "unresolved"}.get(word, "")


def to_html(rec: Record, log: DebugLog | None = None, pictures: list[Picture] | None = None,
            note: str | None = None) -> str:
    log = log or render.debuglog(rec)
    if pictures is None:
        pictures, note = draw_pictures(rec)
    md = _markdown()

    def inline(text: str) -> str:
        """A one-line field of the log, its Markdown rendered (as to_markdown writes it)."""
        return md.renderInline(markdown_text(_line(text)))
    esc = html_text
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{esc(log.title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>", "<main>",
           f"<h1>{esc(log.title)}</h1>"]
    kind = ("resolved" if log.status.startswith("Resolved") else
            "unusable" if log.status.startswith("Inconclusive") else "open")
    out.append(f'<p class="status {kind}" id="status">{inline(log.status)}</p>')
    facts = [("Symptom", inline(log.symptom))]
    if log.environment:
        facts.append(("Environment", esc(short_environment(log.environment))))
    if log.related:
        facts.append(("Related files", ", ".join(f"<code>{esc(r)}</code>" for r in log.related)))
    out.append('<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
    if log.summary:
        out += ['<section id="summary"><h2>Summary</h2><ul>', *[f"<li>{inline(s)}</li>" for s in log.summary],
                "</ul></section>"]
    if pictures or note:
        out.append('<section id="pictures"><h2>Pictures</h2>')
        if note:
            out.append(f"<p>{esc(note)}</p>")
        for p in pictures:
            out.append(f'<figure id="fig-{esc(p.name)}"><figcaption>{esc(p.title)}</figcaption>{p.svg}</figure>')
        out.append("</section>")
    if log.differences:
        out.append(f'<section id="differences"><h2>{esc(log.differences_title)}</h2><table><thead><tr>'
                   + "".join(f"<th>{esc(str(h))}</th>" for h in log.differences_header) + "</tr></thead><tbody>")
        for row in log.differences:
            cls = ' class="culprit"' if any(str(c) in ("CULPRIT", "first bad") for c in row) else ""
            out.append(f"<tr{cls}>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>")
        out.append("</tbody></table></section>")
    if log.attempts:
        out.append(f'<section id="attempts"><h2>Attempts ({len(log.attempts)})</h2>')
        opened = " open" if len(log.attempts) <= 12 else ""
        for i, a in enumerate(log.attempts, 1):
            out.append(f'<details class="attempt {_attempt_outcome(a.result)}"{opened}>'
                       f"<summary>Attempt {i}: {inline(a.title)} &mdash; {inline(a.result)}</summary>"
                       f"<p><b>Hypothesis:</b> {inline(a.hypothesis)}</p><p><b>What we did:</b> {inline(a.what)}</p>"
                       f"<p><b>Conclusion:</b> {inline(a.conclusion)}</p></details>")
        out.append("</section>")
    for heading, body in log.sections:
        out.append(f"<section><h2>{esc(heading)}</h2>{md.render(markdown_text(body))}</section>")
    if log.next_steps:
        out += ['<section id="next"><h2>What to try next</h2><ol>',
                *[f"<li>{inline(s)}</li>" for s in log.next_steps], "</ol></section>"]
    if log.environment:
        rows = [(k, v) for k, v in _flat(log.environment) if v not in (None, "", {}, [])]
        out.append('<section id="environment"><details><summary><h2 style="display:inline">Environment (captured)'
                   "</h2></summary><table>" + "".join(f"<tr><td><code>{esc(k)}</code></td><td>{esc(str(v))}</td></tr>"
                                                      for k, v in rows) + "</table></details></section>")
    from bisectk import __version__
    session = f", session {rec.session}" if rec.session is not None else ""
    out += [f"<footer>bisectk {esc(__version__)}: the {esc(rec.command)} record{session}. "
            "Self-contained: no scripts, nothing loaded from elsewhere.</footer>", "</main>", "</body>", "</html>"]
    return visible_text("\n".join(out) + "\n")


def write_html(path: Path, rec: Record, log: DebugLog | None = None) -> str:
    """Write the HTML report; returns one line for the terminal."""
    log = log or render.debuglog(rec)
    pictures, note = draw_pictures(rec)
    log, where = _with_patch(Path(path), rec, log, "page")
    Path(path).write_text(to_html(rec, log, pictures, note), encoding="utf-8")
    return (f"HTML report written to {path} ({len(pictures)} picture(s))" + (f"; {note}" if note else "")
            + (f"; the culprit patch as it is (bytes that are not UTF-8) in {where}" if where else ""))


def write_unrecorded(path: Path, log: DebugLog, command: str, session: int | None, *, page: bool) -> None:
    """A report with no record behind it (render.interrupted_log: an interrupt before any
    result), as the Markdown log or (`page`) the HTML page: no pictures, no culprit patch."""
    from types import SimpleNamespace
    text = (to_html(SimpleNamespace(command=command, session=session), log, [], None) if page   # the footer's words
            else log.to_markdown())
    Path(path).write_text(text, encoding="utf-8")


def write_markdown(path: Path, rec: Record, log: DebugLog | None = None) -> str:
    """Write the Markdown debug log and its pictures beside it; returns one line for the terminal."""
    path = Path(path)
    log = log or render.debuglog(rec)
    pictures, note = draw_pictures(rec)
    folder = pictures_folder(path)
    if pictures and folder is None:
        note = "; ".join(filter(None, [note, f"its {len(pictures)} pictures left out: {path} is a pipe, a device or "
                                              "a name in /dev, with no folder beside it for them (--html FILE holds them)"]))
        pictures = []
    if pictures:
        folder.mkdir(parents=True, exist_ok=True)
        for p in pictures:
            (folder / f"{p.name}.svg").write_text(p.svg, encoding="utf-8")
        # percent-encoded: a space (or a parenthesis) in a Markdown link's destination ends it; from
        # the name's bytes, so a name that is not UTF-8 (latin-1's 'r\xe9.md') is linked as it is
        log = replace(log, figures=[(p.title, quote(os.fsencode(f"{folder.name}/{p.name}.svg"))) for p in pictures])
    log, where = _with_patch(path, rec, log, "log")
    path.write_text(log.to_markdown(), encoding="utf-8")
    return (f"debug log written to {path}" + (f" ({len(pictures)} picture(s) in {folder}/)" if pictures
                                              else "") + (f"; {note}" if note else "")
            + (f"; the culprit patch as it is (bytes that are not UTF-8) in {where}" if where else ""))


def _with_patch(path: Path, rec: Record, log: DebugLog, what: str) -> tuple[DebugLog, Path | None]:
    """Where the culprit patch holds bytes that are not UTF-8 (shown as \\xNN in the report, so as
    shown it does not apply): the patch as it is, written beside the report at `path`
    (outputs.patch_file), and the log with a line that names it; else (log, None)."""
    raw, where = _patch_bytes(rec), patch_file(path)
    if raw is None or where is None:
        return log, None
    where.write_bytes(raw)
    return replace(log, summary=[*log.summary, f"The culprit patch holds bytes that are not UTF-8, shown here "
                                               f"as `\\xNN`, so as shown it does not apply: {where.name} beside "
                                               f"this {what} holds it as it is (`git apply {where.name}`)."]), where


def _patch_bytes(rec: Record) -> bytes | None:
    """A diff's culprit patch (report/diff.py culprit_patch; triage's, of its diff part) as bytes,
    where it holds bytes that are not UTF-8; else None."""
    if rec.command == "triage":
        rec = rec.diff_record()
    if rec is None or rec.command != "diff":
        return None
    from bisectk.report.diff import culprit_patch
    from bisectk.report.safe import undecoded_bytes
    return undecoded_bytes(culprit_patch(rec))
