"""Drawing the picture models of bisectk/report/figures.py with matplotlib, as SVG text.

Abstractions
------------
svg     -- one model drawn and serialised: an <svg> element (no XML prologue) to inline in HTML
           or write beside a Markdown report.
COLOURS -- one colour per outcome, shared with the HTML report's CSS.

matplotlib's object API (`matplotlib.figure.Figure`, never pyplot) draws without a display and
without global state; text stays text (svg.fonttype none), so names in a picture can be searched
and read by a browser. Marks that tests look for carry SVG ids (`gid`): `matrix-row-N`,
`culprit-...`, `commit-N`, `bar-N`, `hunk-...`, `point-N`, `threshold`.

The models carry text from outside (factor names, commit subjects, file names, output lines): `svg`
passes every string of a model through report/safe.py `picture_text` before drawing, once, so no
label holds a control character (no glyph, a warning on stderr) or a `$` pair (read as mathtext).
Equal strings stay equal, so the drawing code's own comparisons of them still hold. A glyph the
fonts lack otherwise (a CJK commit subject) is measured without it and drawn by the browser, which
has the font: its warning is not the user's business.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import warnings
from typing import Any

from bisectk.report.figures import (NOT_RUN, CommitLine, HunkStrips, Interaction, Posterior, Progress, RunMatrix,
                                    SlowMetric)
from bisectk.report.safe import picture_text

COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "unresolved": "#f9a825", NOT_RUN: "#bdbdbd"}
TINTS = {"pass": "#e8f5e9", "fail": "#ffebee", "unresolved": "#fff8e1", NOT_RUN: "#f5f5f5"}
INK, MUTED = "#212121", "#757575"
WORDS = {"pass": "PASS", "fail": "FAIL", "unresolved": "UNRESOLVED", NOT_RUN: "not run"}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), dpi=96, layout="constrained")


def _clean(ax) -> None:
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _short(text: str, n: int = 38) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def svg(name: str, model: Any) -> str:
    import matplotlib
    draw = {RunMatrix: run_matrix, Interaction: interaction, CommitLine: commit_line, Posterior: posterior,
            HunkStrips: hunk_strips, Progress: progress, SlowMetric: slow_metric}[type(model)]
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name, "font.size": 9,
                                "font.family": "sans-serif",
                                "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"]}):
        buf = io.StringIO()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"Glyph \d+ ", UserWarning)     # see the module docstring
            fig = draw(_labels(model))
            fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.08)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    # ids must be unique across the pictures inlined in one page
    return re.sub(r'id="(?!matrix-|culprit-|commit-|bar-|hunk-|point-|threshold)([^"]+)"', rf'id="{name}-\1"',
                  text).replace('url(#', f'url(#{name}-').replace('href="#', f'href="#{name}-')


def _labels(value: Any) -> Any:
    """`value` (a picture model, or a part of one) with every string in it picture_text'd."""
    if isinstance(value, str):
        return picture_text(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_labels(v) for v in value)
    if isinstance(value, dict):
        return {_labels(k): _labels(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _labels(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value


# -- ablation --------------------------------------------------------------------------------------

def run_matrix(m: RunMatrix):
    nf, nr = max(len(m.factors), 1), len(m.rows)
    fig = _figure(min(2.6 + 0.55 * nf + 1.2, 14), 1.3 + 0.26 * nr)
    ax = fig.add_subplot()
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    cells, inks = [], []
    for r, row in enumerate(m.rows):
        y = nr - 1 - r
        band = Rectangle((-0.5, y - 0.5), nf + 1.6, 1, color=TINTS.get(row.outcome, TINTS[NOT_RUN]), zorder=0)
        band.set_gid(f"matrix-row-{r}")
        ax.add_patch(band)
        for c, on in enumerate(row.applied):
            cells.append(Rectangle((c - 0.38, y - 0.38), 0.76, 0.76))
            inks.append(INK if on else "white")
        ax.add_patch(Rectangle((nf + 0.1, y - 0.38), 0.9, 0.76, color=COLOURS.get(row.outcome, MUTED), zorder=2))
        ax.text(nf + 0.55, y, WORDS.get(row.outcome, row.outcome)[:5], ha="center", va="center", color="white",
                fontsize=7, fontweight="bold", zorder=3)
    # the cells as one artist: a patch each cost matplotlib a millisecond or more per cell
    ax.add_collection(PatchCollection(cells, facecolors=inks, edgecolors=MUTED, linewidths=0.6, zorder=2))
    for c, f in enumerate(m.factors):
        if f in m.culprits:
            box = Rectangle((c - 0.48, -0.55), 0.96, nr + 0.1, fill=False, edgecolor=COLOURS["fail"], linewidth=2,
                            zorder=4)
            box.set_gid(f"culprit-{f}")
            ax.add_patch(box)
    ax.set_xlim(-0.6, nf + 1.1)
    ax.set_ylim(-0.6, nr - 0.4)
    ax.set_xticks(range(len(m.factors)), [f + (" ★" if f in m.culprits else "") for f in m.factors],
                  rotation=35, ha="left")
    ax.xaxis.tick_top()
    for tick, f in zip(ax.get_xticklabels(), m.factors):
        if f in m.culprits:
            tick.set_color(COLOURS["fail"])
            tick.set_fontweight("bold")
    ax.set_yticks(range(nr), [row.label for row in reversed(m.rows)])
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    left = [f"{m.hidden_factors} more factor(s) without a culprit not shown"] if m.hidden_factors else []
    left += [f"{m.hidden_rows} attempt(s) in the middle not shown"] if m.hidden_rows else []
    ax.set_xlabel("black = the factor at its bad value; row colour = outcome; ★ culprit"
                  + "".join(f"\n{words}" for words in left), color=MUTED)
    return fig


def interaction(m: Interaction):
    k = len(m.culprits)
    levels = [[n for n in m.nodes if len(n.members) == i] for i in range(k + 1)]
    width = max(len(lv) for lv in levels)
    fig = _figure(max(4.5, 2.1 * width), 1.1 + 0.9 * (k + 1))
    ax = fig.add_subplot()
    pos = {}
    for i, lv in enumerate(levels):
        for j, node in enumerate(lv):
            pos[node.members] = ((j + 0.5) * width / len(lv), i)
    for node in m.nodes:
        for other in m.nodes:
            if len(other.members) == len(node.members) + 1 and set(node.members) < set(other.members):
                (x0, y0), (x1, y1) = pos[node.members], pos[other.members]
                ax.plot([x0, x1], [y0, y1], color="#cfcfcf", linewidth=1, zorder=1)
    for node in m.nodes:
        x, y = pos[node.members]
        text = " + ".join(node.members) if node.members else "none (good)"
        if not node.exact and node.outcome != NOT_RUN:
            text += "\n(with cleared factors)"
        t = ax.text(x, y, f"{text}\n{WORDS[node.outcome]}", ha="center", va="center", fontsize=8,
                    color="white" if node.outcome in ("pass", "fail") else INK, zorder=3,
                    bbox={"boxstyle": "round,pad=0.45", "facecolor": COLOURS[node.outcome],
                          "edgecolor": INK if len(node.members) == k else "none",
                          "linewidth": 2, "hatch": None if node.exact else "//"})
        t.set_gid("culprit-set" if len(node.members) == k else f"subset-{'+'.join(node.members) or 'none'}")
    ax.set_xlim(-0.1, width + 0.1)
    ax.set_ylim(-0.6, k + 0.6)
    ax.axis("off")
    ax.set_title(("each proper subset passes, only all together fail: an interaction" if m.interaction
                  else f"{len(m.culprits)} culprit(s): subsets of the culprit set, one level per size"),
                 color=MUTED, fontsize=9)
    return fig


# -- history ---------------------------------------------------------------------------------------

def commit_line(m: CommitLine):
    fig = _figure(9.5, 2.8)
    ax = fig.add_subplot()
    n = m.n
    ax.hlines(0, -1, n - 1, color=MUTED, linewidth=1.5, zorder=1)
    if n <= 200:
        ax.plot(range(-1, n), [0] * (n + 1), "|", color=MUTED, markersize=5, zorder=1)
    top = 1.0    # every tested commit: a bar of unit height split by the share of each outcome, runs above it
    width = max(0.6, n / 120)
    for t in m.tested:
        runs = t.passes + t.fails + t.unresolved
        bottom = 0.0
        for count, outcome in ((t.passes, "pass"), (t.fails, "fail"), (t.unresolved, "unresolved")):
            if count:
                bar = ax.bar(t.index, count / runs, width, bottom=bottom, color=COLOURS[outcome], zorder=2)
                bar.patches[0].set_gid(f"commit-{t.index}-{outcome}")
                bottom += count / runs
        if runs > 1 and len(m.tested) <= 40:
            ax.text(t.index, 1.02, str(runs), ha="center", va="bottom", fontsize=7, color=MUTED)
    for i in m.skipped:
        ax.plot(i, -0.12 * top, "^", color=COLOURS["unresolved"], markersize=6, zorder=3)
    if m.candidates and m.first_bad is None:
        ax.axvspan(min(m.candidates) - 0.5, max(m.candidates) + 0.5, color=TINTS["fail"], zorder=0)
    for i in m.last_good:
        ax.axvline(i, color=COLOURS["pass"], linestyle="--", linewidth=1, zorder=1)
        ax.text(i, -0.2 * top, "last good ", ha="right", va="top", color=COLOURS["pass"], fontsize=8)
    if m.first_bad is not None:
        line = ax.axvline(m.first_bad, color=COLOURS["fail"], linewidth=2, zorder=1)
        line.set_gid("culprit-commit")
        ax.text(m.first_bad, top * 1.14, f" first bad: {_short(m.first_bad_label, 46)}", ha="left", va="bottom",
                color=COLOURS["fail"], fontsize=8, fontweight="bold")
    if m.next is not None:
        ax.axvline(m.next, color="#1565c0", linestyle=":", linewidth=1.5)
        ax.text(m.next, -0.3 * top, "test next", ha="center", va="top", color="#1565c0", fontsize=8)
    ticks = sorted({-1, n - 1, *(t.index for t in m.tested)})
    if len(ticks) <= 20 and n <= 60:
        ax.set_xticks(ticks, ["good" if i == -1 else str(i) for i in ticks], fontsize=7)
    else:
        ax.set_xticks([-1, n - 1], ["good", str(n - 1)], fontsize=7)
    ax.set_xlim(-0.02 * n - 1.5, n - 0.5 + 0.02 * n)
    ax.set_ylim(-0.45 * top, top * 1.35)
    ax.set_yticks([])
    _clean(ax)
    ax.set_xlabel(f"candidate commits in topological order ({n - 1} = --bad); each bar: share of runs that "
                  "passed (green), failed (red), were unresolved (amber); runs above; ▲ skipped", color=MUTED)
    return fig


def posterior(m: Posterior):
    fig = _figure(9.5, 2.6)
    ax = fig.add_subplot()
    width = max(0.6, m.n / 120)
    for i, short, p in m.bars:
        bar = ax.bar(i, p, width, color=COLOURS["fail"] if i == m.culprit else "#90a4ae", zorder=2)
        bar.patches[0].set_gid(f"bar-{i}")
        if i != m.culprit and p >= 0.01:
            ax.text(i, p + 0.02, f"{p:.2f}", ha="center", va="bottom", fontsize=7, color=MUTED)
    if m.culprit is not None:
        p = next((p for i, _, p in m.bars if i == m.culprit), None)
        if p is not None:
            ax.annotate(f"first bad {next(s for i, s, _ in m.bars if i == m.culprit)}: P = {p:.4f}",
                        (m.culprit + width / 2, p), xytext=(6, -4), textcoords="offset points", ha="left",
                        va="top", color=COLOURS["fail"], fontweight="bold", fontsize=8)
    ax.set_xlim(-0.02 * m.n - 1.5, m.n - 0.5 + 0.02 * m.n)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("P(first bad)")
    _clean(ax)
    ax.spines["left"].set_visible(True)
    note = (f"partial: the top {len(m.bars)} commits only, holding {m.total:.4f} of the probability" if m.partial
            else f"every commit with P > 0 shown; the bars sum to {m.total:.4f}")
    ax.set_xlabel(f"candidate commits in topological order; {note}", color=MUTED)
    return fig


# -- diff ------------------------------------------------------------------------------------------

def hunk_strips(m: HunkStrips):
    nf = len(m.files)
    fig = _figure(9.5, 1.0 + 0.34 * nf)
    ax = fig.add_subplot()
    from matplotlib.patches import Rectangle
    longest = max(f.length for f in m.files)
    for r, f in enumerate(m.files):
        y = nf - 1 - r
        length = max(f.length, 0.1 * longest) if any(h.whole for h in f.hunks) else f.length
        ax.add_patch(Rectangle((0, y - 0.3), length, 0.6, color="#eeeeee", zorder=0))
        for h in f.hunks:
            colour = COLOURS["fail"] if h.culprit else "#78909c"
            if h.whole:
                patch = Rectangle((0, y - 0.3), length, 0.6, facecolor="none", edgecolor=colour, hatch="//",
                                  linewidth=1.5 if h.culprit else 0.8, zorder=2)
                ax.text(length + 0.01 * longest, y, f"whole file: {h.whole}" + (f"  {h.id}" if h.culprit else ""),
                        ha="left", va="center", fontsize=7, color=colour, zorder=3,
                        fontweight="bold" if h.culprit else "normal")
            else:
                start, end = h.span
                patch = Rectangle((start - 0.5, y - 0.3), max(end - start, 1) + 0.0, 0.6, color=colour, zorder=2,
                                  linewidth=0)
            patch.set_gid(f"hunk-{h.id}{'-culprit' if h.culprit else ''}")
            ax.add_patch(patch)
            if h.culprit and not h.whole:
                ax.text(h.span[0] + 1.5, y + 0.32, h.id, ha="left", va="bottom", fontsize=7, color=COLOURS["fail"],
                        fontweight="bold", zorder=4)
    ax.set_yticks(range(nf), [_short(f.file, 44) for f in reversed(m.files)])
    ax.set_xlim(0, longest + 1)
    ax.set_ylim(-0.7, nf - 0.1)
    ax.tick_params(axis="y", length=0)
    _clean(ax)
    more = f"; {m.hidden_files} more file(s) without culprits not shown" if m.hidden_files else ""
    hunks = f"{m.total_hunks} hunk{'s' if m.total_hunks != 1 else ''}"
    ax.set_xlabel(f"line in GOOD; {hunks}: red = culprit, grey = cleared; hatched = whole-file change{more}",
                  color=MUTED)
    return fig


# -- hangs -----------------------------------------------------------------------------------------

def progress(m: Progress):
    fig = _figure(9.5, 2.6)
    ax = fig.add_subplot()
    lanes = ((1, m.good, "good run", COLOURS["pass"]), (0, m.hung, "hung run", COLOURS["fail"]))
    good_at = {}
    for t, label in m.good.points:
        good_at.setdefault(label, t)
    for y, tl, _, colour in lanes:
        ax.hlines(y, 0, tl.end_s, color=colour, linewidth=2, zorder=1)
        for j, (t, label) in enumerate(tl.points):
            dot = ax.plot(t, y, "o", color=colour, markersize=5, zorder=3)[0]
            dot.set_gid(f"point-{'good' if y else 'hung'}-{j}")
            ax.text(t, y + (0.12 if y else -0.12), _short(label, 24), rotation=25 if y else -25,
                    ha="left", va="bottom" if y else "top", fontsize=7, color=INK)
    for t, label in m.hung.points:
        if label in good_at:
            ax.plot([good_at[label], t], [1, 0], color="#cfcfcf", linewidth=0.8, zorder=0)
    ax.plot(m.good.end_s, 1, "s", color=COLOURS["pass"], markersize=7)
    ax.plot(m.hung.end_s, 0, "X", color=COLOURS["fail"], markersize=9)
    ax.text(m.hung.end_s, -0.55, "killed by the watchdog", ha="right", va="top", fontsize=8, color=COLOURS["fail"])
    ax.set_yticks([1, 0], ["good run", "hung run"])
    ax.set_ylim(-1.0, 1.7)
    ax.set_xlim(0, max(m.good.end_s, m.hung.end_s) * 1.05)
    _clean(ax)
    words = ""
    if m.stalled_after:
        words = f"; silent after '{_short(m.stalled_after, 30)}' for {m.silent_s:.2f} s"
        if m.good_needed_s is not None:
            words += f" (the good run needed {m.good_needed_s:.2f} s from there)"
    ax.set_xlabel(f"seconds since start{words}", color=MUTED)
    if m.words:
        ax.set_title(f"watchdog: {_short(m.words, 110)}", color=COLOURS["fail"], fontsize=9, loc="left")
    return fig


# -- slow ------------------------------------------------------------------------------------------

def slow_metric(m: SlowMetric):
    """A bar per configuration against the threshold. A value that is no finite number (a subject
    that printed Infinity, the slowest a time can be) is drawn hatched to the edge of the axis and
    named: matplotlib draws a bar of infinite length as nothing, with a warning on stderr, so the
    slowest configuration was the one missing from the picture."""
    n = len(m.points)
    fig = _figure(8.5, 1.2 + 0.26 * n)
    ax = fig.add_subplot()
    finite = [v for v in (*(p.value for p in m.points), m.threshold, m.baseline) if math.isfinite(v)]
    low, high = min(0.0, *finite), max(0.0, *finite)
    span = (high - low) or 1.0
    edges = {1: high + 0.12 * span, -1: low - 0.12 * span if low < 0 else 0.0}
    for r, p in enumerate(m.points):
        colour = COLOURS.get(p.outcome, MUTED)
        if math.isfinite(p.value):
            bar = ax.barh(n - 1 - r, p.value, 0.7, color=colour, zorder=2)
        else:       # inf to the right edge, -inf to the left one, NaN no length: each named
            end = 0.0 if p.value != p.value else edges[1 if p.value > 0 else -1]
            bar = ax.barh(n - 1 - r, end, 0.7, color=colour, hatch="//", edgecolor="white", zorder=2)
            ax.text(end, n - 1 - r, f" {p.value:g} ", color=INK, fontsize=8, va="center",
                    ha="right" if end < 0 else "left", zorder=4)     # past the bar's end
        bar.patches[0].set_gid(f"point-{r}")
    if math.isfinite(m.threshold):
        line = ax.axvline(m.threshold, color=COLOURS["fail"], linestyle="--", linewidth=1.5, zorder=3)
        line.set_gid("threshold")
    if math.isfinite(m.baseline):
        ax.axvline(m.baseline, color=COLOURS["pass"], linestyle=":", linewidth=1.2, zorder=3)
    rule = f"{m.baseline:.4g} / {m.factor:g}" if m.higher else f"{m.factor:g} x {m.baseline:.4g}"
    ax.text(m.threshold if math.isfinite(m.threshold) else edges[1], n - 0.35, f" threshold {rule} = {m.threshold:.4g}",
            color=COLOURS["fail"], fontsize=8, va="bottom")
    ax.set_yticks(range(n), [_short(p.label, 48) for p in reversed(m.points)])
    ax.set_ylim(-0.6, n + 0.4)
    ax.tick_params(axis="y", length=0)
    _clean(ax)
    ax.set_xlabel(f"{m.metric} (dotted: good baseline; bar colour = outcome)", color=MUTED)
    return fig
