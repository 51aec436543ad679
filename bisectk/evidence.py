"""Evidence beyond the verdict: PTX signature diffs and compute-sanitizer reruns.

Abstractions
------------
script_of      -- the Python script and its arguments when a configuration's command is
                  `python SCRIPT.py ARGS...` (what CuTe DSL subjects look like); else None.
ptx_evidence   -- compile good, bad and the isolated culprit configuration to PTX (compile-only,
                  no GPU needed) and diff their signatures: mbarrier init/arrive/expect_tx/try_wait,
                  bar.sync/bar.arrive ids and thread counts, TMA copies, wgmma, setmaxnreg, shared
                  memory bytes.
sanitize       -- rerun one configuration under compute-sanitizer with the tool that fits the
                  failure (synccheck for a hang, memcheck for a crash, racecheck for a wrong
                  result) and keep its error summary.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.outcome import FailKind
from bisectk.run.process import run_process
from bisectk.spec import Config, Spec

TOOL_FOR = {FailKind.HANG: "synccheck", FailKind.CRASH: "memcheck", FailKind.WRONG: "racecheck"}


def script_of(spec: Spec, config: Config) -> tuple[Path, list[str]] | None:
    argv = spec.argv(config)
    if len(argv) >= 2 and Path(argv[0]).name.startswith("python") and argv[1].endswith(".py"):
        script = Path(argv[1]) if Path(argv[1]).is_absolute() else spec.cwd / argv[1]
        return script, argv[2:]
    return None


@dataclass
class PtxEvidence:
    signatures: dict[str, dict] = field(default_factory=dict)   # label -> flat signature
    errors: dict[str, str] = field(default_factory=dict)        # label -> why it has none
    rows: list[tuple[str, list]] = field(default_factory=list)  # key -> values in label order

    def to_dict(self) -> dict:
        return {"signatures": self.signatures, "errors": self.errors,
                "differences": [{"key": k, **dict(zip(self.signatures, v))} for k, v in self.rows]}

    def table(self) -> str:
        labels = list(self.signatures)
        lines = ["| " + " | ".join(["PTX signature", *labels]) + " |", "|---" * (len(labels) + 1) + "|"]
        lines += [f"| {k} | " + " | ".join(str(x) for x in v) + " |" for k, v in self.rows]
        if not self.rows:   # "no difference" only between two signatures that were compared
            said = "(no difference)" if len(labels) >= 2 else "(nothing compared: fewer than two compiled)"
            lines.append(f"| {said} |" + " |" * len(labels))
        return "\n".join(lines) + "".join(f"\n\n{k}: {e}" for k, e in self.errors.items())


COMPILE_TIMEOUT_S = 600.0     # a compile-only run's limit unless `bisectk ptx --timeout` sets one


def ptx_evidence(spec: Spec, configs: dict[str, Config], timeout: float = COMPILE_TIMEOUT_S) -> PtxEvidence:
    from bisectk import ptx
    ev = PtxEvidence()
    for label, cfg in configs.items():
        found = script_of(spec, cfg)
        if found is None:
            ev.errors[label] = "the command is not `python SCRIPT.py ...`: no PTX to compile"
            continue
        script, args = found
        try:   # with the interpreter the command names (a project's venv), as the runs are made
            ev.signatures[label] = ptx.signature_of_script(script, args, python=spec.argv(cfg)[0], cwd=spec.cwd,
                                                           timeout=timeout, env=spec.environment(cfg))
        except ptx.PtxError as exc:
            ev.errors[label] = str(exc).splitlines()[0]
    keys = sorted({k for s in ev.signatures.values() for k in s})
    for k in keys:
        values = [s.get(k, 0) for s in ev.signatures.values()]
        if len(set(map(str, values))) > 1:
            ev.rows.append((k, values))
    return ev


_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+) error", re.IGNORECASE)


@dataclass
class SanitizerReport:
    tool: str
    available: bool
    errors: int | None = None
    timed_out: bool = False
    excerpt: str = ""

    def to_dict(self) -> dict:
        return {"tool": self.tool, "available": self.available, "errors": self.errors,
                "timed_out": self.timed_out, "excerpt": self.excerpt}

    def describe(self) -> str:
        if not self.available:
            return f"compute-sanitizer not found on PATH (wanted --tool {self.tool})"
        state = ("timed out (still deadlocked under the tool: no misuse reported before the kill)" if self.timed_out
                 else f"{self.errors} error(s)" if self.errors is not None else "no summary")
        return f"compute-sanitizer --tool {self.tool}: {state}"


def sanitize(spec: Spec, config: Config, kind: FailKind | None, timeout: float, cwd: Path | None = None) -> SanitizerReport:
    tool = TOOL_FOR.get(kind, "memcheck")
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        return SanitizerReport(tool, False)
    argv = [exe, "--tool", tool, "--error-exitcode", "99", *spec.argv(config)]
    raw = run_process(argv, cwd=cwd or spec.cwd, env=spec.environment(config), timeout=timeout)
    text = raw.stdout + "\n" + raw.stderr
    # the error lines, not the host/device backtraces that follow each one
    lines = [ln for ln in text.splitlines() if ln.startswith("=========")
             and not re.match(r"=+\s+(Host Frame|Device Frame|at |Saved host backtrace)", ln)]
    m = _SUMMARY.search(text)
    return SanitizerReport(tool, True, int(m.group(1)) if m else None, raw.timed_out, "\n".join(lines[:30]))
