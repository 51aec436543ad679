"""Result records: what a command concluded, frozen, in the one shape every report reads.

Abstractions
------------
Rate            -- k target failures in n runs, with the Wilson 95% interval (scipy.stats).
EndpointCheck   -- both endpoints' verdicts, the calibrated watchdog, the target failure (the
                   identities the bad endpoint showed, under --same-failure), whether the failure
                   is intermittent, both failure rates, and a one-line diagnosis when unusable.
AttemptRecord   -- one configuration the search tried, in the order run: what was applied (or
                   which commit), the phase that asked, the outcome the search acted on, the
                   verdict in words, the failure identity in plain words, runs, time, and
                   whether the answer came from the ledger.
SubjectRecord   -- the subject: name, spec path, command, good/bad configurations, differences.
AblationRecord, DiffRecord, BisectRecord, TriageRecord, CheckRecord, RunRecord, ReplayRecord
                -- one per command: everything its reports print. `to_dict()` is the command's
                   `--json` document; `from_dict()` reads it back, so a record stored with its
                   session in the ledger is printed again by `bisectk report` without running
                   anything.
stored_form, full_form
                -- how the ledger keeps a record document, and back: an attempt applying more
                   than half of the subject's differences is kept as those it leaves out
                   (`applied_except`, in the differences' order), so ofat's n reversals from bad
                   cost O(n), not n x (n - 1) names (8.8 MB at 1,024 factors); no attempt is ever
                   kept longer than its list. A document stored before (every attempt `applied`)
                   is read as it is: the shape says which.

Records hold plain data (strings, numbers, lists, dicts) plus the outcome model's frozen types
(Verdict, Target) and the watchdog's TimeoutPolicy through EndpointCheck: facts, never prose
about what to do next (`advice` holds those steps as facts; report/advice.py words them). Reports
import this module and the outcome model, never an engine; this module imports nothing from
run/.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from bisectk.errors import BisectkError
from bisectk.outcome import Target, Verdict
from bisectk.search.flaky import wilson
from bisectk.timeouts import TimeoutPolicy


def captured(environment: dict | typing.Callable[[], dict] | None) -> dict:
    """A record's environment: the capture itself, or a callable that gives it (a capture still
    running beside the runs is waited for here, when the record is made)."""
    return (environment() if callable(environment) else environment) or {}


class RecordError(BisectkError):
    """A stored result document that cannot be read back as its record (damaged, or written by
    something else): the field and what is wrong with it, in one line."""

@dataclass(frozen=True)
class Rate:
    fails: int
    runs: int

    @property
    def value(self) -> float:
        return self.fails / self.runs if self.runs else 0.0

    def interval(self) -> tuple[float, float]:
        return wilson(self.fails, self.runs, 0.95)

    def describe(self) -> str:
        lo, hi = self.interval()
        return f"{self.fails}/{self.runs} runs (95% Wilson interval {lo:.2f}-{hi:.2f})"

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {"fails": self.fails, "runs": self.runs, "rate": round(self.value, 4),
                "ci95": [round(lo, 4), round(hi, 4)]}


@dataclass(frozen=True)
class EndpointCheck:
    good: Verdict
    bad: Verdict
    timeout: TimeoutPolicy
    problem: str | None
    target: Target | None
    flaky: bool
    bad_rate: Rate
    good_rate: Rate
    notes: tuple[str, ...] = ()
    details: tuple[str, ...] = ()              # what the problem line rests on, a line each
    environment: dict[str, Any] | None = None   # the named environment cause (engine/environment.py)
    baseline: float | None = None               # the SLOW rule's baseline (the runner's Judge), if any

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "problem": self.problem, "problem_details": list(self.details),
            "environment_problem": self.environment,
            "target": self.target.describe() if self.target else None,
            "target_identity": self.target.to_dict() if self.target else None,
            "flaky": self.flaky, "timeout": self.timeout.to_dict(),
            "bad_fail_rate": round(self.bad_rate.value, 4), "bad_fail_rate_ci95": self.bad_rate.to_dict()["ci95"],
            "bad_rate": self.bad_rate.to_dict(), "good_rate": self.good_rate.to_dict(),
            "notes": list(self.notes), "good": self.good.to_dict(), "bad": self.bad.to_dict(),
            "slow_baseline": self.baseline,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EndpointCheck:
        return cls(Verdict.from_dict(d["good"]), Verdict.from_dict(d["bad"]),
                   TimeoutPolicy.from_dict(d["timeout"]), d.get("problem"),
                   Target.from_dict(d.get("target_identity")), d.get("flaky", False),
                   Rate(d["bad_rate"]["fails"], d["bad_rate"]["runs"]),
                   Rate(d["good_rate"]["fails"], d["good_rate"]["runs"]), tuple(d.get("notes", ())),
                   tuple(d.get("problem_details", ())), d.get("environment_problem"), d.get("slow_baseline"))




@dataclass(frozen=True)
class AttemptRecord:
    index: int
    phase: str
    applied: tuple[str, ...]       # differences applied (factors, hunk ids); a commit: (sha,)
    label: str                     # the point in words (a commit's subject, 'hybrid')
    outcome: str                   # what the search acted on: pass | fail | unresolved
    verdict: str                   # e.g. 'FAIL wrong (rel_err nan > 0.001) [2/3 failed]'
    failure: str | None            # the failure identity in plain words
    runs: int
    time_s: float
    from_ledger: bool = False
    pass_name: str = ""            # diff: 'hunks' or 'lines'
    metrics: dict = field(default_factory=dict)   # the verdict's metrics (pictures: slow metric per configuration)
    stage: str = ""                # ablate: '' (the first failing set), 'set 2', ... (the search for another)

    def to_dict(self) -> dict[str, Any]:
        # shallow: asdict deep-copies `applied` name by name (1.5 s for a report at 8,192 factors)
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["applied"] = list(self.applied)
        d["metrics"] = dict(self.metrics)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AttemptRecord:
        return cls(**{**{k: d[k] for k in (f.name for f in fields(cls)) if k in d},
                      "applied": tuple(d.get("applied", ()))})


@dataclass(frozen=True)
class SubjectRecord:
    name: str
    path: str
    command: tuple[str, ...]
    good: dict[str, Any]
    bad: dict[str, Any]
    differences: tuple[str, ...]
    description: str = ""
    slow_factor: float | None = None   # the oracle's SLOW rule: metric > slow_factor x the good baseline
    slow_metric: str | None = None     # None: wall seconds
    named_files: int | None = None     # files the memo key holds by content (Spec.named_files); None: not said
    slow_better: str = "lower"         # "higher": a throughput, SLOW below the baseline / slow_factor

    @classmethod
    def of(cls, spec, named_files: int | None = None) -> SubjectRecord:
        """The record of a spec (bisectk.spec.Spec); `named_files`: how many files its runner's
        memo key covers (run/memokey.py StaticKey.files)."""
        return cls(spec.name, str(spec.path), tuple(spec.command), dict(spec.good), dict(spec.bad),
                   tuple(spec.differences()), spec.description, spec.slow_factor, spec.slow_metric, named_files,
                   getattr(spec, "slow_better", "lower"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "command": list(self.command), "good": self.good,
                "bad": self.bad, "differences": list(self.differences), "description": self.description,
                "slow_factor": self.slow_factor, "slow_metric": self.slow_metric, "named_files": self.named_files,
                "slow_better": self.slow_better}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubjectRecord:
        return cls(d["name"], d["path"], tuple(d["command"]), d["good"], d["bad"], tuple(d["differences"]),
                   d.get("description", ""), d.get("slow_factor"), d.get("slow_metric"), d.get("named_files"),
                   d.get("slow_better", "lower"))


def confidence_of(first_bad: dict | None, candidates: int, complete: bool) -> str:
    """What a bisection's `confidence` is the probability of: "first_bad" (the commit named, the
    search complete), "candidates" (that the culprit is one of several left), or "unconfirmed" (one
    left, but the search stopped: a deterministic search's 1.0 then assumes every run told the
    truth, which its confirmation was to check)."""
    if candidates > 1 and not first_bad:
        return "candidates"
    if first_bad and not complete:
        return "unconfirmed"
    return "first_bad"


def stop_reason_of(stop_reason: str, advice, interrupted: bool) -> str:
    """Why an incomplete search stopped: its stop reason; else the reason its advice gives (a
    confirmation contradicted under the flake rule: 'unconfirmed'); 'interrupted' only for a stop
    that was one; else 'incomplete'."""
    if stop_reason:
        return stop_reason
    given = next((a.get("reason") for a in advice or () if a.get("step") == "stopped"), None)
    return given or ("interrupted" if interrupted else "incomplete")


def _base_dump(rec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if isinstance(v, (EndpointCheck, SubjectRecord, AttemptRecord)):
            v = v.to_dict()
        elif isinstance(v, tuple) and v and isinstance(v[0], AttemptRecord):
            v = [a.to_dict() for a in v]
        elif isinstance(v, tuple):
            v = list(v)
        out[f.name] = v
    return out


@functools.cache
def _hints(tp: type) -> dict[str, Any]:
    return typing.get_type_hints(tp)     # once a class, not once an attempt (thousands a record)


def _shape_error(value: Any, tp: Any, where: str) -> str | None:
    """Why `value` (decoded JSON) cannot be a field of type `tp`, or None when it can. A record
    read back from a ledger is input like any other: a field of the wrong shape is named here,
    never met later as a TypeError in the middle of printing."""
    if tp is Any or tp is object:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        errors = [_shape_error(value, a, where) for a in args]
        return None if any(e is None for e in errors) else next(e for e in errors if e)
    if tp is type(None):
        return None if value is None else f"{where} is {type(value).__name__}, expected null"
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return f"{where} is {type(value).__name__}, expected an object"
        if tp is EndpointCheck:
            return None   # its document is not its fields (target in words, rates); from_dict reads it
        hints = _hints(tp)
        for f in fields(tp):
            if f.name in value:
                error = _shape_error(value[f.name], hints[f.name], f"{where}.{f.name}")
                if error:
                    return error
        return None
    base = origin or tp
    ok = {bool: lambda v: isinstance(v, bool), int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), str: lambda v: isinstance(v, str),
          dict: lambda v: isinstance(v, dict), list: lambda v: isinstance(v, list),
          tuple: lambda v: isinstance(v, (list, tuple))}.get(base)
    if ok is None:
        return None   # a type this check does not know (Verdict, Target): their own from_dict reads them
    if not ok(value):
        return f"{where} is {type(value).__name__}, expected {getattr(base, '__name__', base)}"
    if base is tuple and args:
        item = args[0]
        if item is str and all(isinstance(v, str) for v in value):
            return None     # the common case in one pass: an attempt's `applied` holds thousands of names
        for i, v in enumerate(value):
            error = _shape_error(v, item, f"{where}[{i}]")
            if error:
                return error
    if base is dict and len(args) == 2:
        for k, v in value.items():
            error = _shape_error(v, args[1], f"{where}.{k}")
            if error:
                return error
    return None


def _base_load(cls, d: dict[str, Any]):
    if not isinstance(d, dict):
        raise RecordError(f"the stored result is {type(d).__name__}, not an object")
    error = _shape_error(d, cls, "result")
    if error:
        raise RecordError(error)
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name == "endpoints" and v is not None:
            v = EndpointCheck.from_dict(v)
        elif f.name == "subject" and v is not None:
            v = SubjectRecord.from_dict(v)
        elif f.name == "attempts":
            v = tuple(AttemptRecord.from_dict(a) for a in v)
        elif isinstance(v, list):
            v = tuple(v)
        kw[f.name] = v
    return cls(**kw)


@dataclass(frozen=True)
class Record:
    """What every record has."""

    command: str
    endpoints: EndpointCheck | None
    ok: bool
    complete: bool
    interrupted: bool
    runs: int                      # runs executed by this session (not answered from the ledger)
    observations: int              # runs seen, from the ledger included
    wall_s: float
    environment: dict[str, Any] = field(default_factory=dict)
    run_s: float = 0.0             # what the observations took when they ran (the ledger's included)
    advice: tuple[dict, ...] = ()  # what to try next, as facts ({"step": kind, ...}: report/advice.py)
    next_steps: tuple[str, ...] = ()   # the same in words, as a record stored by an older bisectk kept them
    session: int | None = None
    stop_reason: str = ""
    hangs: dict | None = None      # where the hangs were stuck (engine/hangs.py), when any was read
    phase_runs: dict[str, int] = field(default_factory=dict)   # observations by the phase that made them
                                   # (engine/oracle.py PHASES): they add up to `observations`; {} in a
                                   # record stored before they were counted

    def to_dict(self) -> dict[str, Any]:
        return _base_dump(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        return _base_load(cls, d)


@dataclass(frozen=True)
class AblationRecord(Record):
    subject: SubjectRecord | None = None
    strategy: str = ""
    culprits: tuple[str, ...] = ()
    unresolved_factors: tuple[str, ...] = ()
    interaction: bool = False
    differences: tuple[dict, ...] = ()      # the key-differences table rows
    attempts: tuple[AttemptRecord, ...] = ()
    proof: tuple[dict, ...] = ()
    different_failures: tuple[dict, ...] = ()
    unresolved: tuple[list, ...] = ()
    flakiness_rule: dict | None = None
    thresholds: dict[str, dict] = field(default_factory=dict)
    search_runs: int = 0
    unused_runs: int = 0                    # of search_runs: made ahead of the search (--jobs), never taken
    ahead_runs: int = 0                     # of search_runs: made ahead of the search and taken when asked
    ptx: dict | None = None
    sanitizer: dict | None = None
    sets: tuple[dict, ...] = ()             # every independent failing set: members, interaction, proof
    fixes: tuple[list, ...] = ()            # differences whose reversal from bad was seen to pass
    open_fixes: tuple[list, ...] = ()       # bad without them failed (or was unresolved); not followed
    sets_complete: bool | None = None       # the sets explain every failure of bad (None: not searched)
    sets_note: str = ""                     # why they may not
    search_made: int | None = None          # of the search's runs, those made now (not from the ledger): what --max-runs counts
    warnings: tuple[str, ...] = ()          # what the command warned of on stderr (the spec's unused or
                                            # alike factors, runs made one at a time, a shared directory)


@dataclass(frozen=True)
class DiffRecord(Record):
    subject: SubjectRecord | None = None
    good: str = ""
    bad: str = ""
    hunks: int = 0
    culprit_hunks: tuple[dict, ...] = ()
    culprit_lines: tuple[dict, ...] = ()
    interaction: bool = False
    line_interaction: bool | None = None
    attempts: tuple[AttemptRecord, ...] = ()
    unresolved: tuple[list, ...] = ()
    different_failures: tuple[dict, ...] = ()
    diff: str = ""
    lines_diff: str = ""
    search_runs: int = 0
    unused_runs: int = 0                    # of search_runs: made ahead of the search (--jobs), never taken
    ahead_runs: int = 0                     # of search_runs: made ahead of the search and taken when asked
    hunk_index: tuple[dict, ...] = ()       # every hunk: id, file, kind, good_lines, bad_lines (no text)
    flakiness_rule: dict | None = None      # --flaky's rule, or --no-flaky's declaration (ablate.STEADY)
    sets: tuple[dict, ...] = ()             # every independent failing set of hunks: members, interaction, proof
    fixes: tuple[list, ...] = ()            # hunks whose reversal from bad was seen to pass
    open_fixes: tuple[list, ...] = ()       # bad without them failed (or was unresolved); not followed
    sets_complete: bool | None = None       # the sets explain every failure of bad (None: not searched)
    sets_note: str = ""                     # why they may not
    search_made: int | None = None          # of the search's runs, those made now (not from the ledger): what --max-runs counts
    warnings: tuple[str, ...] = ()          # each `bisectk: warning:` the command said on stderr (cli_common.say_warning)


@dataclass(frozen=True)
class BisectRecord(Record):
    subject: SubjectRecord | None = None
    repo: str = ""
    good: str = ""
    bad: str = ""
    commits: int = 0
    first_parent: bool = False
    flaky: bool = False
    mode: str = ""
    rounds: int = 0                         # oracle rounds of the search (batches when --jobs > 1)
    first_bad: dict | None = None           # sha, subject, author, date, files; None if ambiguous
    candidates: tuple[dict, ...] = ()       # each with its own subject, author, files
    last_good: tuple[dict, ...] = ()        # the culprit's parent(s), each with its verdict
    confidence: float = 0.0
    confidence_of: str = "first_bad"        # what `confidence` is the probability of (records.confidence_of)
    ambiguous: bool = False
    skipped: tuple[dict, ...] = ()
    fail_prob: float | None = None
    posterior: tuple[dict, ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    protocol: str = "bisectk"
    contradiction: str | None = None        # observations that fit no culprit, in words
    tested: tuple[dict, ...] = ()           # each commit run: index (None: --good), sha, short, subject, and its
                                            # pass / fail / unresolved counts, in topological order
    marginal: tuple[dict, ...] = ()         # flaky: {index, short, p} for every candidate with P(first bad) > 0
    rates: dict | None = None               # both failure rates with 95% intervals (rates.Rates.to_dict)
    separable: bool | None = None           # False: the rates were not told apart within the budget
    more_runs: int | None = None            # then: about how many more runs would probably separate them
    confirmation: dict | None = None        # the runs that confirmed a deterministic answer (dag.Confirmation)
    switched: str | None = None             # why a deterministic search went on in the flake model
    goods: tuple[str, ...] = ()             # every commit of the old side given (several --good: all count)
    merge_bases: tuple[dict, ...] = ()      # tested first: sha, short, subject, side (a term or "untestable"), verdict
    paths: tuple[str, ...] = ()             # the pathspec: candidates are the commits that touch it
    terms: tuple[str, ...] = ("good", "bad")   # the old side's and the new side's words (git's --term-old/-new)
    find_fix: bool = False                  # the new side passes: the answer is the first fixed commit
    repeats: int = 0                        # a fix with an intermittent failure: runs that confirm a pass
    command_files: tuple[dict, ...] = ()    # how --run's relative paths were resolved (spaces/command.py)
    manual: bool = False                    # verdicts given by a person (engine/manual.py), nothing run
    fresh_build: dict | None = None         # the answer run again from builds made from scratch (engine/fresh_build.py):
                                            # points (sha, short, searched, fresh outcome), stale
    search_made: int | None = None          # of the search's runs, those made now (not from the ledger): what --max-runs counts
    warnings: tuple[str, ...] = ()          # each `bisectk: warning:` the command said on stderr (cli_common.say_warning)


@dataclass(frozen=True)
class TriageRecord(Record):
    verdict: str = ""
    exit_code: int = 2
    failure: dict = field(default_factory=dict)
    bisect: dict = field(default_factory=dict)        # the BisectRecord's document
    diff: dict | None = None                          # the DiffRecord's document
    diff_error: str | None = None
    first_bad: dict | None = None
    culprit_hunks: tuple[dict, ...] = ()
    warnings: tuple[str, ...] = ()          # each `bisectk: warning:` the command said on stderr (cli_common.say_warning)

    def bisect_record(self) -> BisectRecord:
        return BisectRecord.from_dict(self.bisect)

    def diff_record(self) -> DiffRecord | None:
        return DiffRecord.from_dict(self.diff) if self.diff else None


@dataclass(frozen=True)
class ReplayRecord(Record):
    """`bisectk replay`: a bisection's answer rebuilt from a log, nothing run (endpoints is None)."""

    log: str = ""
    repo: str = ""
    good: str = ""
    bad: str = ""
    commits: int = 0
    flaky: bool = False
    mode: str = ""
    first_bad: dict | None = None
    last_good: tuple[dict, ...] = ()
    candidates: tuple[dict, ...] = ()
    next: dict | None = None                # the commit to test next when the log stops early
    confidence: float = 0.0
    skipped: tuple[dict, ...] = ()
    contradiction: str | None = None
    tested: tuple[dict, ...] = ()
    marginal: tuple[dict, ...] = ()
    terms: tuple[str, ...] = ("good", "bad")   # the log's words for the old and the new side
    find_fix: bool = False                  # the log looked for a fix (the first fixed commit)


@dataclass(frozen=True)
class CheckRecord(Record):
    subject: SubjectRecord | None = None
    warnings: tuple[str, ...] = ()          # factors that reach no placeholder of the spec


@dataclass(frozen=True)
class RunRecord(Record):
    subject: SubjectRecord | None = None
    config: dict = field(default_factory=dict)
    verdict: dict = field(default_factory=dict)
    timeout: dict | None = None
    ran: str = ""                            # the command line it ran (shown when the subject refused it)


RECORDS = {"ablate": AblationRecord, "diff": DiffRecord, "bisect": BisectRecord, "triage": TriageRecord,
           "check": CheckRecord, "run": RunRecord, "replay": ReplayRecord}


def _differences(d: dict[str, Any]) -> list | None:
    subject = d.get("subject")
    diffs = subject.get("differences") if isinstance(subject, dict) else None
    return diffs if isinstance(diffs, list) and isinstance(d.get("attempts"), list) else None


def stored_form(d: dict[str, Any]) -> dict[str, Any]:
    """A record document as the ledger keeps it (see the module docstring); `d` is not changed.
    An attempt is kept as its complement only where that gives its `applied` back exactly."""
    diffs = _differences(d)
    if not diffs:
        return d
    position = {x: i for i, x in enumerate(diffs) if isinstance(x, str)}
    attempts = []
    for a in d["attempts"]:
        applied = a.get("applied") if isinstance(a, dict) else None
        if isinstance(applied, list) and 2 * len(applied) > len(diffs):
            try:
                at = list(map(position.__getitem__, applied))
            except (KeyError, TypeError):     # a name not among the differences: kept as it is
                at = None
            if at is not None and all(map(operator.lt, at, at[1:])):    # distinct, in the differences' order
                taken = set(at)
                a = {**{k: v for k, v in a.items() if k != "applied"},
                     "applied_except": [x for i, x in enumerate(diffs) if i not in taken]}
        attempts.append(a)
    return {**d, "attempts": attempts}


def full_form(d: dict[str, Any]) -> dict[str, Any]:
    """A stored record document with each attempt's `applied` written out (`d` is not changed):
    what `--json` printed when the command ran."""
    diffs = _differences(d)
    if diffs is None or not any(isinstance(a, dict) and "applied_except" in a for a in d["attempts"]):
        return d
    attempts = []
    for a in d["attempts"]:
        if isinstance(a, dict) and isinstance(a.get("applied_except"), list):
            left = set(map(str, a["applied_except"]))
            a = {**{k: v for k, v in a.items() if k != "applied_except"}, "applied": [x for x in diffs if str(x) not in left]}
            a = {k: a[k] for k in ("index", "phase", "applied") if k in a} | a     # `applied` where it was
        attempts.append(a)
    return {**d, "attempts": attempts}


def load_record(d: dict[str, Any]) -> Record:
    """A stored record document back as its record type (by its `command`); RecordError, naming
    what is wrong, when it cannot be (a damaged record, or one from another program)."""
    if isinstance(d, dict):
        d = full_form(d)
    cls = RECORDS.get(d.get("command", "")) if isinstance(d, dict) else None
    if cls is None:
        raise RecordError("not a bisectk result record (command "
                          f"{d.get('command') if isinstance(d, dict) else None!r})")
    try:
        return cls.from_dict(d)
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise RecordError(f"{type(exc).__name__}: {exc}"[:200]) from None


__all__ = ["AttemptRecord", "SubjectRecord", "Record", "AblationRecord", "DiffRecord", "BisectRecord",
           "TriageRecord", "CheckRecord", "RunRecord", "ReplayRecord", "RECORDS", "load_record", "stored_form", "full_form", "EndpointCheck", "Rate",
           "RecordError"]
