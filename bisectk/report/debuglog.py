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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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

    def to_markdown(self) -> str:
        out = [f"### {self.title}", "", f"**Status:** {self.status}", f"**Symptom:** {self.symptom}"]
        if self.environment:
            out.append("**Environment:** " + short_environment(self.environment))
        if self.related:
            out.append("**Related files:** " + ", ".join(f"`{r}`" for r in self.related))
        if self.summary:
            out += ["", "#### Summary", ""] + [f"- {s}" for s in self.summary]
        if self.figures:
            out += ["", "#### Pictures", ""]
            for title, path in self.figures:
                out += [f"**{title}**", "", f"![{title}]({path})", ""]
        if self.differences:
            out += ["", "---", "", f"#### {self.differences_title}", "", _table(self.differences_header, self.differences)]
        if self.attempts:
            out += ["", "---", ""]
            for i, a in enumerate(self.attempts, 1):
                out += [f"#### Attempt {i}: {a.title}", "",
                        f"**Hypothesis:** {a.hypothesis}", f"**What we did:** {a.what}",
                        f"**Result:** {a.result}", f"**Conclusion:** {a.conclusion}", ""]
        for heading, body in self.sections:
            out += ["---", "", f"#### {heading}", "", body.rstrip(), ""]
        if self.next_steps:
            out += ["---", "", "#### What to Try Next", ""] + [f"{i}. {s}" for i, s in enumerate(self.next_steps, 1)]
        if self.environment:
            rows = [[k, v] for k, v in _flat(self.environment) if v not in (None, "", {}, [])]
            out += ["", "---", "", "#### Environment (captured)", "", _table(["key", "value"], rows)]
        return "\n".join(out).rstrip() + "\n"


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


def _cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (for free sections)."""
    return _table(header, rows)


def code_block(text: str, lang: str = "") -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"
