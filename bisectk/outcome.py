"""The one outcome model: every layer speaks it.

Abstractions
------------
Outcome   -- PASS / FAIL / UNRESOLVED, the tri-state every search algorithm consumes.
FailKind  -- what a FAIL looked like: HANG, CRASH, WRONG, SLOW; BAD when a `--run` command said
             so under git bisect's protocol (exit 1-127 but 125, not a signal or a CUDA error).
Reason    -- why a run is UNRESOLVED: BUILD, INVALID, INFRA (and DIFFERENT, for a failure
             that is not the one being hunted).
Run       -- one process execution, classified. `failed` names what failed, never values: the
             violated checks of a WRONG run ("rel_err <= 0.001"), the signal or CUDA error
             name of a CRASH, the metric of a SLOW one.
Verdict   -- the judgement on one configuration: one or more Runs folded into an outcome,
             with the failure rate over repeats.
Failure   -- the identity of one failing run under a `--same-failure` mode:
             `check` (default): a kind plus what failed -- hang; crash by signal or CUDA error
                 name; wrong by its violated checks (NaN, inf and 1e33 past one bound are one
                 violation); slow by metric;
             `kind`: the kind alone; `signature`: the kind plus the signature with numbers
                 blanked (the strictest).
Target    -- the failure being hunted: the identities the bad endpoint showed. A run is the
             target when its kind is one of them and what failed has something in common with
             what the bad endpoint was seen to fail (a hybrid that violates the rel_err bound the
             bad endpoint violates is the same failure, whatever garbage value it printed). Any
             other failure is a different one: UNRESOLVED for the search, a possible second bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, asdict
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNRESOLVED = "unresolved"


class FailKind(StrEnum):
    HANG = "hang"
    CRASH = "crash"
    WRONG = "wrong"
    SLOW = "slow"
    BAD = "bad"      # git bisect run's protocol: the command itself said bad (exit 1-127, not 125)


SAME_FAILURE_MODES = ("check", "kind", "signature")
DEFAULT_SAME_FAILURE = SAME_FAILURE_MODES[0]   # --same-failure's default, written once


class Reason(StrEnum):
    BUILD = "build"        # build step or compile failed
    INVALID = "invalid"    # a constraint rules the configuration out; never run
    INFRA = "infra"        # the command could not be started, or the harness broke
    USAGE = "usage"        # the subject rejected its arguments (a usage error, exit 2): not a crash
    DIFFERENT = "different"  # it failed, but not with the target failure


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def signature_family(kind: FailKind | None, signature: str) -> str:
    """Kind plus the signature with addresses and numbers blanked, e.g. 'hang:timeout after # s'."""
    text = _HEX.sub("0x#", signature or "")
    text = _NUMBER.sub("#", text)
    text = re.sub(r"\s+", " ", text).strip().lower()
    return f"{kind.value if kind else '?'}:{text}"


@dataclass(frozen=True)
class Run:
    """One classified process execution."""

    outcome: Outcome
    kind: FailKind | None = None
    reason: Reason | None = None
    signature: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""
    log_path: str | None = None
    failed: tuple[str, ...] = ()   # what failed, without values (see the module docstring)
    progress: str = ""             # where a hung run stopped, in words (from the watchdog)
    timeline: tuple | None = None  # progress points seen: ((key, seconds), ..., ("<end>", seconds))
    stuck: dict | None = None      # a hang's snapshot, read before the kill (bisectk/stuck.py Snapshot)

    @property
    def family(self) -> str:
        return signature_family(self.kind, self.signature)

    @property
    def unbuilt(self) -> bool:
        """Whether its own output says the source did not compile, parse or link (run/classify.py:
        under git bisect's protocol tagged COMPILE_FAILED or LINK_FAILED; under a spec a Python
        crash of a parse error, or of a source that does not link by the same rule, `unlinked`):
        a fact of the tree it ran, the same each run, never a flake. It names no failure: a crash
        is still the one of its exception's type (a bad endpoint that dies of a NameError at run
        time hunts that crash, and a hybrid that dies of it is the target); the oracle reads it
        only for a different failure, which it then does not re-run."""
        if self.outcome is not Outcome.FAIL:
            return False
        if {COMPILE_FAILED, LINK_FAILED} & set(self.failed):
            return True
        if self.kind is not FailKind.CRASH or not self.failed:
            return False
        # a spec's crash is named by its exception's type (run/classify.py crash_name); one that
        # says the source did not link is read by the rule --run's protocol reads it by
        return set(self.failed) <= PARSE_ERRORS or (
            self.failed == (self.signature.split(":")[0],) and unlinked(self.signature))

    def failure(self, mode: str = DEFAULT_SAME_FAILURE) -> Failure | None:
        """This run's failure identity under `mode`, or None when it did not fail."""
        if self.outcome is not Outcome.FAIL or self.kind is None:
            return None
        if mode == "kind":
            return Failure(self.kind)
        if mode == "signature":
            return Failure(self.kind, frozenset({self.family}))
        return Failure(self.kind, frozenset(self.failed))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["failed"] = list(self.failed)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Run:
        known = {f for f in cls.__dataclass_fields__}
        d = {k: v for k, v in d.items() if k in known}   # a newer ledger's extra fields
        d["outcome"] = Outcome(d["outcome"])
        d["kind"] = FailKind(d["kind"]) if d.get("kind") else None
        d["reason"] = Reason(d["reason"]) if d.get("reason") else None
        d["failed"] = tuple(d.get("failed") or ())
        if d.get("timeline"):
            d["timeline"] = tuple(tuple(p) for p in d["timeline"])
        return cls(**d)


# the check a NaN breaks where a subject reports metrics and the spec has no thresholds
# (run/classify.py): 'x is a number' is what failed; it is said 'NaN in x'
NAN_CHECK = " is a number"
# what failed where a test under git bisect run's protocol never ran because its source did not
# link (run/classify.py: an ImportError, a NameError, a module's missing attribute): the test's own
# verdict is unknown there, so a hybrid that ran and exited bad is that failure too (Target.matches)
LINK_FAILED = "does not link"
# what failed where a test under git bisect run's protocol never ran because its source did not
# compile or parse (a Python SyntaxError, a compiler's error line: run/classify.py does_not_build)
COMPILE_FAILED = "does not compile"
# a Python crash that is its source not parsing (crash_name's exception type, outside that protocol)
PARSE_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
# a Python traceback's last exception that says its source did not link: an import, or a name, that
# only another hunk brings (a rename's definition tried without its use, as the line pass splits
# them), a module's or a class's missing attribute (the same rename across two files); an
# instance's missing attribute (None.shape) is the program's own failure. run/classify.py reads it
# under --run's protocol (LINK_FAILED), Run.unbuilt in a spec's crash: the one rule for both
LINK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "NameError", "UnboundLocalError"})
_UNLINKED_ATTRIBUTE = re.compile(r"AttributeError: (?:module|type object) '[\w.]+' has no attribute ")


def unlinked(exception: str) -> bool:
    """Whether a traceback's last exception line ('NameError: name 'x' is not defined') says that
    its source did not link (LINK_ERRORS)."""
    return exception.split(":")[0] in LINK_ERRORS or bool(_UNLINKED_ATTRIBUTE.match(exception))

KIND_WORDS = {FailKind.HANG: "hang", FailKind.CRASH: "crash", FailKind.WRONG: "wrong result",
              FailKind.SLOW: "slow", FailKind.BAD: "bad (non-zero exit)"}


@dataclass(frozen=True)
class Failure:
    """The identity of one failing run: its kind and what failed (no values)."""

    kind: FailKind
    what: frozenset[str] = frozenset()

    def describe(self) -> str:
        """Plain words: 'hang', 'crash (SIGSEGV)', 'wrong result (rel_err <= 0.001 violated)'."""
        words = KIND_WORDS[self.kind]
        if not self.what:
            return words
        items = sorted(self.what)
        if self.kind is FailKind.WRONG:
            nan = [i.removesuffix(NAN_CHECK) for i in items if i.endswith(NAN_CHECK)]
            checks = [i for i in items if not i.endswith(NAN_CHECK)]
            said = ([f"{', '.join(checks)} violated"] if checks else []) + ([f"NaN in {', '.join(nan)}"] if nan else [])
            return f"{words} ({'; '.join(said)})"
        return f"{words} ({', '.join(items)})"


@dataclass(frozen=True)
class Target:
    """The failure a search hunts: the identities shown by the bad endpoint's failing runs."""

    failures: tuple[Failure, ...]
    mode: str = DEFAULT_SAME_FAILURE

    @classmethod
    def of(cls, runs, mode: str = DEFAULT_SAME_FAILURE) -> Target | None:
        seen: list[Failure] = []
        for run in runs:
            f = run.failure(mode)
            if f is not None and f not in seen:
                seen.append(f)
        return cls(tuple(seen), mode) if seen else None

    def what(self, kind: FailKind) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for f in self.failures:
            if f.kind is kind:
                out |= f.what
        return out

    def matches(self, run: Run) -> bool:
        """Same kind, and (when what failed is named at all) something in common with what the bad
        endpoint was seen to fail: a hybrid that violates the rel_err bound is the bad endpoint's
        wrong result whether it printed NaN, inf or 2.5e+33, and whether or not the cos check
        happened to fail with it; a SIGSEGV is not a SIGABRT."""
        f = run.failure(self.mode)
        if f is None or all(t.kind is not f.kind for t in self.failures):
            return False
        seen = self.what(f.kind)
        if not f.what and LINK_FAILED in seen:
            # the bad endpoint never ran its test (a name it calls does not exist): a run whose test
            # ran and exited bad cannot be told from what bad's test would have said. The other way
            # round stays apart: half a rename that does not link is no plain exit 1 of bad's
            return True
        return (not f.what and not seen) or bool(f.what & seen)

    def describe(self) -> str:
        kinds = []
        for f in self.failures:
            if f.kind not in kinds:
                kinds.append(f.kind)
        return " or ".join(Failure(k, self.what(k)).describe() for k in kinds)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "text": self.describe(),
                "failures": [{"kind": f.kind.value, "what": sorted(f.what)} for f in self.failures]}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Target | None:
        if not d:
            return None
        return cls(tuple(Failure(FailKind(f["kind"]), frozenset(f["what"])) for f in d["failures"]),
                   d.get("mode", DEFAULT_SAME_FAILURE))


@dataclass(frozen=True)
class Verdict:
    """The judgement on one configuration, folded from its runs.

    `outcome` is FAIL if any run failed (the failing runs decide kind and signature; a
    configuration that fails once in k runs is failing, flakily: `fail_rate` says how often).
    UNRESOLVED wins only when no run produced a PASS/FAIL observation.
    """

    outcome: Outcome
    kind: FailKind | None = None
    reason: Reason | None = None
    signature: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    runs: tuple[Run, ...] = ()
    duration_s: float = 0.0
    cached: bool = False

    @property
    def family(self) -> str:
        return signature_family(self.kind, self.signature)

    @property
    def n_fail(self) -> int:
        return sum(r.outcome is Outcome.FAIL for r in self.runs)

    @property
    def n_pass(self) -> int:
        return sum(r.outcome is Outcome.PASS for r in self.runs)

    @property
    def fail_rate(self) -> float:
        n = self.n_fail + self.n_pass
        return self.n_fail / n if n else 0.0

    def describe(self) -> str:
        """Short human label: 'PASS', 'FAIL hang (timeout after 2.0 s)', 'UNRESOLVED build (...)'."""
        if self.outcome is Outcome.PASS:
            return "PASS"
        label = self.kind.value if self.outcome is Outcome.FAIL and self.kind else (
            self.reason.value if self.reason else "")
        text = f"{self.outcome.value.upper()} {label}".strip()
        if self.signature:
            text += f" ({self.signature})"
        if len(self.runs) > 1 and self.outcome is Outcome.FAIL:
            text += f" [{self.n_fail}/{self.n_fail + self.n_pass} failed]"
        return text

    def against(self, target: Target | None) -> Outcome:
        """This verdict as a search algorithm sees it when hunting `target`'s failure.

        FAIL when any run shows the target failure; a verdict whose failures are all of another
        identity is UNRESOLVED (a possible second bug), never the target.
        """
        if self.outcome is not Outcome.FAIL or target is None:
            return self.outcome
        return Outcome.FAIL if any(target.matches(r) for r in self.runs) else Outcome.UNRESOLVED

    def failure(self, mode: str = DEFAULT_SAME_FAILURE) -> Failure | None:
        """The identity of the failure this verdict reports (its first failing run's)."""
        return next((f for r in self.runs if (f := r.failure(mode)) is not None), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "kind": self.kind.value if self.kind else None,
            "reason": self.reason.value if self.reason else None,
            "signature": self.signature,
            "family": self.family if self.outcome is Outcome.FAIL else None,
            "metrics": self.metrics,
            "fail_rate": self.fail_rate,
            "duration_s": round(self.duration_s, 4),
            "cached": self.cached,
            "runs": [r.to_dict() for r in self.runs],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(
            outcome=Outcome(d["outcome"]),
            kind=FailKind(d["kind"]) if d.get("kind") else None,
            reason=Reason(d["reason"]) if d.get("reason") else None,
            signature=d.get("signature", ""),
            metrics=d.get("metrics") or {},
            runs=tuple(Run.from_dict(r) for r in d.get("runs", ())),
            duration_s=d.get("duration_s", 0.0),
            cached=d.get("cached", False),
        )

    @classmethod
    def fold(cls, runs: list[Run] | tuple[Run, ...]) -> Verdict:
        """Fold repeated runs of one configuration into a verdict."""
        runs = tuple(runs)
        total = sum(r.duration_s for r in runs)
        fails = [r for r in runs if r.outcome is Outcome.FAIL]
        passes = [r for r in runs if r.outcome is Outcome.PASS]
        if fails:
            first = fails[0]
            return cls(Outcome.FAIL, first.kind, None, first.signature, first.metrics, runs, total)
        if passes:
            last = passes[-1]
            return cls(Outcome.PASS, None, None, "", last.metrics, runs, total)
        first = runs[0] if runs else Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature="no runs")
        return cls(Outcome.UNRESOLVED, None, first.reason, first.signature, first.metrics, runs, total)

    def with_run(self, run: Run) -> Verdict:
        """This verdict refolded with one more run of the same configuration."""
        return Verdict.fold([*self.runs, run])
