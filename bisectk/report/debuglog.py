"""The Markdown debug log, in the shape kernel authors already write by hand.

Abstractions
------------
AttemptEntry -- one attempt: hypothesis, what was run, the result, the conclusion.
DebugLog     -- status, symptom, environment, related files, the pictures (written beside the
                Markdown file, linked by relative path), the key-differences table, the attempts,
                free sections (culprit diff, PTX evidence, statistics) and the "what to try
                next" list. `to_markdown()` renders it; commands fill it in.

The layout follows the debug protocol in the user's own notes: attempts with hypothesis /
what you did / result / conclusion, a key-differences table, and a prioritised next-steps list,
so a report can be pasted into an issue or a project's debug doc unchanged.

The fields hold text from outside bisectk (a subject's error and output, commit subjects, authors,
file names, factor values) as it came. `to_markdown` makes it inert where the document is written
(report/safe.py `markdown_text`): a field meant for one line is kept on one line (a newline in a
commit subject would otherwise start a heading or a code fence of its own), table cells are
markdown_cell'd, and the whole is passed through markdown_text once. bisectk's own bold and italic
in a field are written with safe.strong and safe.emphasis, never `**`, which markdown_text would
escape as it escapes a `__init__.py` from outside. `to_markdown(entities=False)`
is the same text for a reader that shows it as it is, never renders it (the body of a JUnit
failure, which its XML writer escapes): there `&lt;` would be read as four characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bisectk.report.safe import code_span, markdown_cell, markdown_text, marks, strong, terminal_text


@dataclass
class AttemptEntry:
    title: str
    hypothesis: str
    what: str
    result: str
    conclusion: str


@dataclass
class DebugLog:
    title: str
    status: str
    symptom: str
    environment: dict[str, Any] = field(default_factory=dict)
    related: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    differences_title: str = "Key Differences"
    differences_header: list[str] = field(default_factory=list)
    differences: list[list[str]] = field(default_factory=list)
    attempts: list[AttemptEntry] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)  # (heading, markdown body)
    next_steps: list[str] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)    # (title, relative path of the picture)

    def to_markdown(self, *, entities: bool = True) -> str:
        one = _line
        out = [f"### {one(self.title)}", "", f"{strong('Status:')} {one(self.status)}",
               f"{strong('Symptom:')} {one(self.symptom)}"]
        if self.environment:
            out.append(f"{strong('Environment:')} " + one(short_environment(self.environment)))
        if self.related:
            out.append(f"{strong('Related files:')} " + ", ".join(code_span(r) for r in self.related))
        if self.summary:
            out += ["", "#### Summary", ""] + [f"- {one(s)}" for s in self.summary]
        links = [f"![{one(title)}]({path})" for title, path in self.figures]
        if self.figures:
            out += ["", "#### Pictures", ""]
            for (title, _), link in zip(self.figures, links):
                out += [strong(one(title)), "", link, ""]
        if self.differences:
            out += ["", "---", "", f"#### {one(self.differences_title)}", "",
                    _table(self.differences_header, self.differences)]
        if self.attempts:
            out += ["", "---", ""]
            for i, a in enumerate(self.attempts, 1):
                out += [f"#### Attempt {i}: {one(a.title)}", "",
                        f"{strong('Hypothesis:')} {one(a.hypothesis)}", f"{strong('What we did:')} {one(a.what)}",
                        f"{strong('Result:')} {one(a.result)}", f"{strong('Conclusion:')} {one(a.conclusion)}", ""]
        for heading, body in self.sections:
            out += ["---", "", f"#### {one(heading)}", "", body.rstrip(), ""]
        if self.next_steps:
            out += ["---", "", "#### What to Try Next", ""] + [f"{i}. {one(s)}" for i, s in enumerate(self.next_steps, 1)]
        if self.environment:
            rows = [[k, v] for k, v in _flat(self.environment) if v not in (None, "", {}, [])]
            out += ["", "---", "", "#### Environment (captured)", "", _table(["key", "value"], rows)]
        text = "\n".join(out).rstrip() + "\n"
        return markdown_text(text, links=links) if entities else marks(terminal_text(text))


def _line(text: Any) -> str:
    """A field written on one line of the log."""
    return str(text).replace("\r\n", " ").replace("\n", " ")


def short_environment(env: dict[str, Any]) -> str:
    """One line: GPU(s), driver/CUDA, Python, and the kernel stack's package versions."""
    gpu = env.get("gpu") or {}
    devices = gpu.get("devices") or []
    parts = [", ".join(f"{d.get('name')} (sm_{str(d.get('compute_capability', '')).replace('.', '')})" for d in devices)
             if devices else "no GPU"]
    if gpu.get("driver") or gpu.get("cuda_driver"):
        parts.append(f"driver {gpu.get('driver') or '?'}, CUDA {gpu.get('cuda_driver') or '?'}")
    py = (env.get("python") or {}).get("version")
    if py:
        parts.append(f"Python {py}")
    pkgs = env.get("packages") or {}
    for name in ("torch", "nvidia-cutlass-dsl", "triton", "jax", "cupy"):
        if pkgs.get(name):
            parts.append(f"{name} {pkgs[name]}")
    variables = env.get("env") or {}
    if variables:
        parts.append(", ".join(f"{k}={v}" for k, v in variables.items()))
    return "; ".join(parts)


def _flat(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items = []
    for k, v in d.items():
        if isinstance(v, dict):
            items += _flat(v, f"{prefix}{k}.")
        else:
            items.append((f"{prefix}{k}", v))
    return items


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(markdown_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (for free sections)."""
    return _table(header, rows)


def code_block(text: str, lang: str = "", as_is: bool = False) -> str:
    """A fenced block that no line of `text` closes: its fence is longer than any backtick run in it.
    Trailing whitespace is dropped unless `as_is` (a patch whose last line is empty needs it)."""
    import re
    fence = "`" * max(3, max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence}{lang}\n{text if as_is else text.rstrip()}\n{fence}"
