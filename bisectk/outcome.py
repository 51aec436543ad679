"""The one outcome model: every layer speaks it.

Abstractions
------------
Outcome   -- PASS / FAIL / UNRESOLVED, the tri-state every search algorithm consumes.
FailKind  -- what a FAIL looked like: HANG, CRASH, WRONG, SLOW.
Reason    -- why a run is UNRESOLVED: BUILD, INVALID, INFRA (and DIFFERENT, for a failure
             that is not the one being hunted).
Run       -- one process execution, classified.
Verdict   -- the judgement on one configuration: one or more Runs folded into an outcome,
             with the failure rate over repeats.

The *family* of a failure (kind plus its signature with numbers blanked) decides whether a
failure is the target (the bad endpoint's failure) or a different bug: "timeout after 2.1 s"
and "timeout after 3.4 s" are one family; "SIGSEGV" and "timeout ..." are not.
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


class Reason(StrEnum):
    BUILD = "build"        # build step or compile failed
    INVALID = "invalid"    # a constraint rules the configuration out; never run
    INFRA = "infra"        # the command could not be started, or the harness broke
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

    @property
    def family(self) -> str:
        return signature_family(self.kind, self.signature)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Run:
        d = dict(d)
        d["outcome"] = Outcome(d["outcome"])
        d["kind"] = FailKind(d["kind"]) if d.get("kind") else None
        d["reason"] = Reason(d["reason"]) if d.get("reason") else None
        return cls(**d)


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

    def against(self, target: Verdict | str | None) -> Outcome:
        """This verdict as a search algorithm sees it when hunting `target`'s failure.

        A failure of another family is UNRESOLVED (a possible second bug), never the target.
        """
        if self.outcome is not Outcome.FAIL or target is None:
            return self.outcome
        family = target if isinstance(target, str) else target.family
        return Outcome.FAIL if self.family == family else Outcome.UNRESOLVED

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
