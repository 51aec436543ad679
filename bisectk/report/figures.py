"""What the pictures of a result record show, as plain data: no drawing here (bisectk/report/draw.py
draws these models), so tests read what a picture says instead of its pixels.

Abstractions
------------
RunMatrix    -- ablation: one row per configuration run (the two endpoints, then every attempt in
                the order run), one column per factor, a cell per factor applied or not, the row's
                outcome; the culprit columns named. Past MAX_COLUMNS factors the culprits and the
                unresolved factors are kept first, past MAX_ROWS attempts the first and the last
                ones, and what is left out is counted (a 30,000-factor picture is 30,000 unreadable
                columns, and took minutes and gigabytes to draw).
Interaction  -- ablation: every subset of the culprit set (up to 5 culprits) with the outcome seen
                for it: `exact` when that subset alone was run on the good configuration, else
                read off a run that applied it with other, non-culprit differences; one picture
                per failing set where there are several.
CommitLine   -- bisect/replay/triage: the candidate commits in topological order (--good at -1),
                each tested commit with its pass / fail / unresolved counts, the first bad commit
                (or the candidates), the last good (the culprit's parents), skips, and the next
                commit to test when a replayed log stops early.
Posterior    -- flake-aware bisect: P(first bad = commit) for every commit the record carries, the
                culprit's bar, their sum, and whether the bars are only the top entries (partial).
HunkStrips   -- diff: one strip per file, each hunk at its lines in GOOD, culprit hunks marked.
Progress     -- a hang: the good run's progress timeline against the hung run's (`Run.timeline`, what
                the watchdog recorded: phase lines of the BISECTK_PHASE protocol and output lines),
                where the hung run went silent, how long the good run still needed from that
                point, and the watchdog's own words for where it stopped (`Run.progress`).
SlowMetric   -- a slow failure: the SLOW metric of each configuration against the threshold
                (slow_factor x the good endpoint's median, as the runner calibrates it).
pictures     -- every picture that applies to a record: (name, title, model), names unique.

Outcomes are the strings "pass", "fail", "unresolved", and "not run" (an interaction subset never
observed).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from itertools import chain, combinations
from typing import Any

from bisectk.engine.records import (AblationRecord, BisectRecord, DiffRecord, EndpointCheck, Record, ReplayRecord,
                                    TriageRecord)
from bisectk.outcome import FailKind, Outcome, Run
from bisectk import slowrule

NOT_RUN = "not run"
MAX_INTERACTION = 5      # 2^5 subsets; past that only the proof's levels would be readable
MAX_FILES = 40           # strips; files without culprit hunks are dropped first
MAX_COLUMNS = 40         # run matrix factors; cleared ones are dropped first
MAX_ROWS = 60            # run matrix attempts (besides the endpoints); the middle ones are dropped


@dataclass(frozen=True)
class MatrixRow:
    label: str
    applied: tuple[bool, ...]
    outcome: str
    verdict: str


@dataclass(frozen=True)
class RunMatrix:
    factors: tuple[str, ...]
    rows: tuple[MatrixRow, ...]
    culprits: tuple[str, ...]
    hidden_factors: int = 0        # columns left out (MAX_COLUMNS)
    hidden_rows: int = 0           # attempts left out (MAX_ROWS), between the first and the last


@dataclass(frozen=True)
class SubsetNode:
    members: tuple[str, ...]
    outcome: str
    exact: bool


@dataclass(frozen=True)
class Interaction:
    culprits: tuple[str, ...]
    nodes: tuple[SubsetNode, ...]
    interaction: bool


@dataclass(frozen=True)
class CommitMark:
    index: int
    short: str
    subject: str
    passes: int
    fails: int
    unresolved: int


@dataclass(frozen=True)
class CommitLine:
    n: int
    tested: tuple[CommitMark, ...]
    first_bad: int | None
    first_bad_label: str
    last_good: tuple[int, ...]
    candidates: tuple[int, ...]
    skipped: tuple[int, ...]
    next: int | None = None


@dataclass(frozen=True)
class Posterior:
    n: int
    bars: tuple[tuple[int, str, float], ...]   # (index, short sha, P), in index order
    culprit: int | None
    total: float
    partial: bool


@dataclass(frozen=True)
class HunkMark:
    id: str
    span: tuple[int, int]          # 1-based half-open lines in GOOD; (0, 0) for a whole-file change
    whole: str                     # add | delete | replace | mode for a whole-file change, else ""
    culprit: bool


@dataclass(frozen=True)
class FileStrip:
    file: str
    hunks: tuple[HunkMark, ...]
    length: int                    # the last line the strip covers


@dataclass(frozen=True)
class HunkStrips:
    files: tuple[FileStrip, ...]
    culprits: tuple[str, ...]
    hidden_files: int
    total_hunks: int


@dataclass(frozen=True)
class Timeline:
    points: tuple[tuple[float, str], ...]
    end_s: float
    outcome: str


@dataclass(frozen=True)
class Progress:
    good: Timeline
    hung: Timeline
    stalled_after: str | None      # the hung run's last progress point
    silent_s: float | None         # how long the hung run stayed silent after it, until killed
    good_needed_s: float | None    # how long the good run needed from that same point to its end
    words: str = ""                # the watchdog's sentence: "hung after 'launch', 1.1 s past ..."


@dataclass(frozen=True)
class MetricPoint:
    label: str
    value: float
    outcome: str


@dataclass(frozen=True)
class SlowMetric:
    metric: str
    points: tuple[MetricPoint, ...]
    baseline: float
    factor: float
    higher: bool = False    # a throughput: SLOW below baseline / factor

    @property
    def threshold(self) -> float:
        return self.baseline / self.factor if self.higher else self.factor * self.baseline


# -- ablation ------------------------------------------------------------------------------------

def _endpoint_outcomes(check: EndpointCheck | None) -> tuple[str, str]:
    if check is None:
        return NOT_RUN, NOT_RUN
    return check.good.outcome.value, check.bad.against(check.target).value


def run_matrix(rec: AblationRecord) -> RunMatrix:
    every = tuple(rec.subject.differences) if rec.subject else ()
    factors = _columns(rec, every)
    good, bad = _endpoint_outcomes(rec.endpoints)
    rows = []
    if rec.endpoints is not None:
        rows += [MatrixRow("good (endpoint)", (False,) * len(factors), good, rec.endpoints.good.describe()),
                 MatrixRow("bad (endpoint)", (True,) * len(factors), bad, rec.endpoints.bad.describe())]
    attempts = list(rec.attempts)
    hidden_rows = max(0, len(attempts) - MAX_ROWS)
    if hidden_rows:
        first = MAX_ROWS // 2
        attempts = attempts[:first] + attempts[first + hidden_rows:]
    for a in attempts:
        applied = set(a.applied)
        rows.append(MatrixRow(f"{a.index}. {a.phase}", tuple(f in applied for f in factors), a.outcome, a.verdict))
    return RunMatrix(factors, tuple(rows), tuple(rec.culprits), len(every) - len(factors), hidden_rows)


def _columns(rec: AblationRecord, every: tuple[str, ...]) -> tuple[str, ...]:
    """The factors a run matrix shows, in the differences' order: all of them, or every culprit
    and then up to MAX_COLUMNS in all, the unresolved factors first."""
    if len(every) <= MAX_COLUMNS:
        return every
    culprits, unresolved = set(rec.culprits), set(rec.unresolved_factors)
    keep = {f for f in every if f in culprits}
    for f in chain((f for f in every if f in unresolved), every):
        if len(keep) >= MAX_COLUMNS:
            break
        keep.add(f)
    return tuple(f for f in every if f in keep)


def _fold(outcomes: list[str]) -> str:
    """One subset's outcome from several observations: a failure is conclusive."""
    for o in ("fail", "pass", "unresolved"):
        if o in outcomes:
            return o
    return NOT_RUN


def interaction(rec: AblationRecord, failing_set: dict | None = None) -> Interaction | None:
    """The culprit set's subsets, or those of one of several failing sets (`failing_set`, one of
    `rec.sets`). A subset not run alone is read off a run whose other differences are no culprit
    of any set: one with another set's member in it fails for that set."""
    culprits = tuple(failing_set["members"]) if failing_set else tuple(rec.culprits)
    if not culprits or len(culprits) > MAX_INTERACTION:
        return None
    every_culprit = frozenset(culprits).union(*(s["members"] for s in rec.sets))
    seen: list[tuple[frozenset, str]] = []
    good, bad = _endpoint_outcomes(rec.endpoints)
    if rec.subject:
        seen += [(frozenset(), good), (frozenset(rec.subject.differences), bad)]
    seen += [(frozenset(a.applied), a.outcome) for a in rec.attempts]
    seen += [(frozenset(p["config"]), p["outcome"]) for p in (failing_set["proof"] if failing_set else rec.proof)]
    nodes = []
    for k in range(len(culprits) + 1):
        for members in combinations(culprits, k):
            s = frozenset(members)
            exact = [o for applied, o in seen if applied == s]
            near = [o for applied, o in seen if applied & every_culprit == s]
            outcome = _fold(exact) if exact else _fold(near)
            nodes.append(SubsetNode(members, outcome, bool(exact)))
    return Interaction(culprits, tuple(nodes), failing_set["interaction"] if failing_set else rec.interaction)


# -- history -------------------------------------------------------------------------------------

def _x(index: int | None) -> int:
    """A commit's place on the line: candidates 0..n-1 in topological order, --good at -1."""
    return -1 if index is None else index


def commit_line(rec: BisectRecord | ReplayRecord) -> CommitLine | None:
    if rec.commits < 1:
        return None
    tested = tuple(CommitMark(_x(t["index"]), t["short"], t.get("subject", ""), t.get("pass", 0), t.get("fail", 0),
                              t.get("unresolved", 0)) for t in rec.tested)
    fb = rec.first_bad
    nxt = getattr(rec, "next", None)
    return CommitLine(rec.commits, tested, fb["index"] if fb else None,
                      f"{fb['sha'][:10]} {fb.get('subject', '')}".strip() if fb else "",
                      tuple(_x(p.get("index")) for p in rec.last_good),
                      tuple(c["index"] for c in rec.candidates if c.get("index") is not None),
                      tuple(c["index"] for c in rec.skipped if c.get("index") is not None),
                      _x(nxt["index"]) if nxt else None)


def posterior(rec: BisectRecord | ReplayRecord) -> Posterior | None:
    if not rec.flaky:
        return None
    culprit = rec.first_bad["index"] if rec.first_bad else None
    if rec.marginal:
        bars = tuple((m["index"], m["short"], float(m["p"])) for m in rec.marginal)
        partial = False
    elif getattr(rec, "posterior", ()):
        # an older record: only the top entries, placed where the commit line knows them
        where = {t["sha"]: t["index"] for t in rec.tested if t["index"] is not None}
        if rec.first_bad:
            where[rec.first_bad["sha"]] = rec.first_bad["index"]
        bars = tuple(sorted((where[p["sha"]], p["short"], float(p["p"])) for p in rec.posterior if p["sha"] in where))
        partial = True
    else:
        return None
    return Posterior(rec.commits, bars, culprit, round(sum(p for _, _, p in bars), 6), partial)


# -- diff ----------------------------------------------------------------------------------------

def hunk_strips(rec: DiffRecord) -> HunkStrips | None:
    index = list(rec.hunk_index) or [{k: v for k, v in h.items() if k != "text"} for h in rec.culprit_hunks]
    if not index:
        return None
    culprits = {h["id"] for h in rec.culprit_hunks} | {h.get("parent") for h in rec.culprit_lines if h.get("parent")}
    by_file: dict[str, list[HunkMark]] = {}
    for h in index:
        kind = h.get("kind", "text")
        span = tuple(h.get("good_lines") or (0, 0))
        by_file.setdefault(h["file"], []).append(
            HunkMark(h["id"], (int(span[0]), int(span[1])), "" if kind == "text" else kind, h["id"] in culprits))
    files = []
    for name, marks in by_file.items():
        last = max([max(m.span[1], m.span[0] + 1) for m in marks if not m.whole] or [1])
        files.append(FileStrip(name, tuple(marks), last + 2))
    keep = [f for f in files if any(m.culprit for m in f.hunks)]
    keep += [f for f in files if f not in keep][:max(0, MAX_FILES - len(keep))]
    shown = tuple(f for f in files if f in keep)   # in the diff's own order
    return HunkStrips(shown, tuple(h["id"] for h in rec.culprit_hunks), len(files) - len(shown), len(index))


# -- hangs ---------------------------------------------------------------------------------------

END = "<end>"      # a timeline's last entry: when the run ended (or was killed)


def _label(key: str) -> str:
    return key.removeprefix("phase:")


def timeline(run: Run) -> Timeline | None:
    """A run's progress timeline where it carries one: `Run.timeline` as the watchdog records it
    (run/progress.py), ((key, seconds), ..., ("<end>", seconds)), keys like `phase:launch` shown
    without the `phase:`. None for a run without progress points (or with an unreadable timeline:
    a damaged record loses its picture, not its report)."""
    try:
        entries = [(str(k), float(t)) for k, t in run.timeline or ()]
    except (TypeError, ValueError):
        return None
    points = tuple(sorted((t, _label(k)) for k, t in entries if k != END))
    if not points:
        return None
    ends = [t for k, t in entries if k == END]
    return Timeline(points, max([run.duration_s, points[-1][0], *ends]), run.outcome.value)


def progress(check: EndpointCheck | None) -> Progress | None:
    if check is None:
        return None
    good = next((t for r in check.good.runs if r.outcome is Outcome.PASS and (t := timeline(r))), None)
    run = next((r for r in check.bad.runs if r.kind is FailKind.HANG and timeline(r)), None)
    if good is None or run is None:
        return None
    hung = timeline(run)
    t_last, label = hung.points[-1]
    match = next((t for t, lab in good.points if lab == label), None)
    return Progress(good, hung, label or None, round(hung.end_s - t_last, 3),
                    round(good.end_s - match, 3) if match is not None else None, run.progress or "")


# -- slow ----------------------------------------------------------------------------------------

def slow_metric(rec: Record) -> SlowMetric | None:
    check, subject = rec.endpoints, getattr(rec, "subject", None)
    if check is None or subject is None or not subject.slow_factor or check.bad.kind is not FailKind.SLOW:
        return None
    metric = subject.slow_metric
    base = [v for r in check.good.runs if r.outcome is Outcome.PASS
            and (v := slowrule.value(r.metrics, r.duration_s, metric)) is not None]
    if not base:
        return None
    points = []
    for side, verdict, outcome in (("good", check.good, check.good.outcome.value),
                                   ("bad", check.bad, check.bad.against(check.target).value)):
        vals = [v for r in verdict.runs if (v := slowrule.value(r.metrics, r.duration_s, metric)) is not None]
        if vals:
            points.append(MetricPoint(f"{side} (endpoint)", statistics.median(vals), outcome))
    for a in getattr(rec, "attempts", ()):
        v = slowrule.value(a.metrics, a.time_s / max(a.runs, 1), metric)
        if v is not None:
            points.append(MetricPoint(f"{a.index}. {a.label if rec.command == 'bisect' else ', '.join(a.applied)}",
                                      v, a.outcome))
    return SlowMetric(metric or "wall s", tuple(points), statistics.median(base), float(subject.slow_factor),
                      subject.slow_better == "higher")


# -- which pictures a record gets -----------------------------------------------------------------

def pictures(rec: Record, prefix: str = "") -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []

    def add(name: str, title: str, model: Any) -> None:
        if model is not None:
            out.append((prefix + name, title, model))
    if isinstance(rec, TriageRecord):
        out += pictures(rec.bisect_record(), "bisect-")
        d = rec.diff_record()
        if d is not None:
            out += pictures(d, "diff-")
        return out
    if isinstance(rec, AblationRecord):
        m = run_matrix(rec)
        add("run-matrix", "Run matrix: " + ("the configurations tried, in part" if m.hidden_factors or m.hidden_rows
                                            else "every configuration tried"), m)
        if len(rec.sets) > 1:       # each failing set its own picture: the culprits are the first set's
            for i, failing in enumerate(rec.sets, 1):
                add(f"interaction-set-{i}", f"Failing set {i}: what each subset of it did", interaction(rec, failing))
        else:
            add("interaction", "The culprit set: what each subset of it did", interaction(rec))
    if isinstance(rec, DiffRecord):
        add("hunks", "Files and hunks, culprits marked", hunk_strips(rec))
    if isinstance(rec, (BisectRecord, ReplayRecord)):
        add("commit-line", "Commit line: what each tested commit did", commit_line(rec))
        add("posterior", "Posterior over the first bad commit", posterior(rec))
    add("progress", "Progress: the good run against the hung run", progress(rec.endpoints))
    add("slow-metric", "The SLOW metric of each configuration against the threshold", slow_metric(rec))
    return out
