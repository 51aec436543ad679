"""Classification: a RawRun plus the oracle's thresholds becomes a `Run` of the outcome model.

Abstractions
------------
Judge          -- the oracle's side of classification: metric thresholds and the SLOW rule
                  against the good baseline.
classify_build -- a build step's RawRun: only UNRESOLVED(BUILD/INFRA) or None (built fine).
classify_run   -- the subject's RawRun: PASS, FAIL(HANG/CRASH/WRONG/SLOW), UNRESOLVED.
parse_result   -- the `BISECTK_RESULT {json}` line of the subject protocol (the reader keeps the
                  last one of the whole stream in `RawRun.result`, wherever it was).
own_words      -- a subject's own `error` as a signature: one line, at most 200 characters.
skip_reason    -- why a subject exited 125 (its own `error`, else its last stderr line).
unopened_script -- python's own "can't open file" for the script the command names: nothing of
                  the subject ran, UNRESOLVED(INFRA), never a crash of the kernel.
usage_error    -- the subject rejected its arguments (exit 2 with a `usage:` line, as argparse,
                  click and typer do): UNRESOLVED(USAGE), never a crash of the kernel.
recognise      -- known error texts (CUDA runtime, CuTe DSL, Python) to a short signature.

Order matters: a timeout is a HANG whatever was printed; a signal or non-zero exit is a CRASH
unless its text says the kernel never compiled (then BUILD: the hybrid is untestable, not bad);
exit 125 is git bisect's "cannot test" (UNRESOLVED), and so is a usage error (exit 2 with a
`usage:` line: the subject refused the configuration's arguments); only a clean exit is judged
by metrics.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass

from bisectk import slowrule
from bisectk.outcome import (COMPILE_FAILED, LINK_FAILED, NAN_CHECK, PARSE_ERRORS, FailKind, Outcome, Reason, Run,
                             unlinked)

# The rules above, as a memo key's part (run/memokey.py StaticKey): a change that can move a stored
# run's verdict (an import failure read as a hybrid that does not link, a quoted metric as
# unresolved: stop 50; a subject's own error cut to one line, which a signature-identity target
# compares; a C compiler's error line read as a build failure, a SLOW metric better higher or a
# baseline of zero or below: stop 52; an exit 129-192 named as that exit, not as the script's own
# death by the signal, a NameError read as a hybrid that does not link, a slow_metric below zero
# left UNRESOLVED (slowrule): stop 54; a module's or a class's missing attribute read as a hybrid
# that does not link, a SIGKILL death said as the OOM killer's or another's, a C++ std::bad_alloc
# named: stop 55; a CUDA error named by its driver or runtime enum alone, CUDA_ERROR_ILLEGAL_ADDRESS
# as the CuTe DSL prints it, read as that error and no longer as a plain crash: stop 58; a pytest
# run whose tests were all skipped or xfailed, and `python -m pytest` in an interpreter without it,
# left UNRESOLVED, no longer a pass and a failure; a test pytest-timeout stopped a HANG: review g; python's
# own "can't open file" for the script it was given UNRESOLVED(INFRA), no longer a crash: review i) is a new
# version, so a ledger written under the old rules is not answered from, as a changed timeout
# policy is not (memokey.POLICY_VERSION).
RULES_VERSION = "classify-v15"
from bisectk.run.process import RawRun, signal_name
from bisectk.specvalues import Threshold

RESULT_TAG = "BISECTK_RESULT"
SUBJECT_CHECK = "the subject's own check (ok = false)"
SKIP_EXIT = 125
SKIP_SIGNATURE = "skip (exit 125)"      # a run that asked to be skipped (engine/endpoints.py words it)

# (pattern, signature). First match wins; CUDA texts come from the runtime, torch, and the DSL,
# which (with cuda-python) names an error by its driver or runtime enum alone:
# `CUDA_ERROR_ILLEGAL_ADDRESS (error code: 700)`, `cudaErrorIllegalAddress`.
_CUDA_PATTERNS = [
    (r"illegal memory access|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress",
     "CUDA: an illegal memory access was encountered"),
    (r"misaligned address|CUDA_ERROR_MISALIGNED_ADDRESS|cudaErrorMisalignedAddress", "CUDA: misaligned address"),
    (r"operation not supported on global/shared address space|cudaErrorInvalidAddressSpace|invalid address space"
     r"|CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA: operation not supported on global/shared address space"),
    (r"unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED", "CUDA: unspecified launch failure"),
    (r"too many resources requested for launch|CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES|cudaErrorLaunchOutOfResources",
     "CUDA: too many resources requested for launch"),
    (r"CUDA out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|out of memory(?!\?| \(the OOM killer\))",
     "CUDA: out of memory"),
    (r"illegal instruction|CUDA_ERROR_ILLEGAL_INSTRUCTION|cudaErrorIllegalInstruction",
     "CUDA: an illegal instruction was encountered"),
    (r"device-side assert triggered|CUDA_ERROR_ASSERT\b|cudaErrorAssert\b", "CUDA: device-side assert triggered"),
    (r"launch timed out|CUDA_ERROR_LAUNCH_TIMEOUT|cudaErrorLaunchTimeout", "CUDA: the launch timed out"),
    (r"shared memory (?:size|usage)?.{0,40}(?:exceed|too large)|exceeds? .{0,30}shared memory",
     "launch: too much shared memory"),
    (r"no kernel image is available|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice",
     "CUDA: no kernel image is available for the device"),
]
_BUILD_PATTERNS = [
    r"CompilerDiagnosticError", r"DSLOperationBuildError", r"DSLAstPreprocessorError",
    r"ptxas (?:error|fatal)", r"nvcc (?:error|fatal)", r"error: compilation failed",
    r"MLIR (?:verification|pass) (?:failed|error)",
]
# A C, C++ or CUDA compiler's own error line, as make or cmake passes it on: gcc's and clang's
# `k.c:12:5: error: ...` (`fatal error: k.h: No such file ...`), nvcc's front end's `k.cu(12):
# error: ...`, the linker's through the driver (`undefined reference to`, `collect2: error: ld
# returned 1 exit status`, clang's `linker command failed`). A test's own words (`error: 3
# mismatches`, `k.c:12: check failed`) carry no line and column, and are none of them.
_CC_ERROR = re.compile(r"^(?:[^\s:][^:\n]*:\d+:(?:\d+:)? (?:fatal )?error: .*"
                       r"|[^\s(][^(\n]*\(\d+\): (?:catastrophic )?error: .*"
                       r"|.*: undefined reference to .*|collect2: error: ld returned .*"
                       r"|\S*clang\S*: error: linker command failed.*)$", re.MULTILINE)
_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Interrupt)|AssertionError)\b:?\s*(.*)$")

# A path in one of the pool's worktrees, up to and with the worktree's own directory
# (spaces/worktrees.py): <cache home>/bisectk/worktrees/<key>/wt-N/, the fallback
# <tempdir>/bisectk-<uid>/worktrees/<key>/wt-N/, or older versions' <git dir>/bisectk-worktrees/wt-N/.
WORKTREE_PATH = re.compile(r"[^\s'\"]*/(?:bisectk(?:-\d+)?/worktrees/[^/\s]+|bisectk-worktrees)/wt-\d+/")


def _shell_signal(code: int | None) -> str | None:
    """A shell reports a child killed by signal n as exit 128+n (git bisect would abort there):
    `exit 139 = 128+SIGSEGV`. Not the signal's own name: the script itself exited (waitpid says
    so), where a script killed by SIGSEGV is `SIGSEGV`, and the two are not one failure (a test
    that runs `exit 139` on its own, a wrapper that reports a child's death, are told apart from
    a script that died)."""
    if code is None or not 128 < code < 128 + 65:
        return None
    name = signal_name(128 - code)
    return None if name.startswith("signal ") else f"exit {code} = 128+{name}"


# A SIGKILL death that bisectk did not send (it sends one only after calling a hang), by what the
# machine could tell of the OOM killer (run/oomkill.py: RawRun.oom True, False, None). The first is
# the host's memory, not the GPU's: the CUDA pattern above does not read it as `CUDA: out of memory`.
OOM_KILLED = "killed: out of memory (the OOM killer)"
_KILLED = {True: OOM_KILLED,
           False: "killed by SIGKILL (not by bisectk, nor by the OOM killer: another process?)",
           None: "killed by SIGKILL (not by bisectk: out of memory? another process?)"}
_BAD_ALLOC = re.compile(r"std::bad_alloc")


def killed_words(oom: bool | None) -> str:
    """A SIGKILL death in words: the OOM killer's only with evidence of it."""
    return _KILLED[oom]


def recognise(text: str) -> str | None:
    for pattern, signature in _CUDA_PATTERNS:
        if re.search(pattern, text, re.IGNORECASE):
            return signature
    return None


def is_compile_error(text: str) -> bool:
    return any(re.search(p, text) for p in _BUILD_PATTERNS)


_TRACEBACK = "Traceback (most recent call last):"
_PY_SYNTAX = re.compile(rf"^\s*((?:{'|'.join(sorted(PARSE_ERRORS))})\b.*)$", re.MULTILINE)   # outcome's one list


def does_not_build(text: str) -> tuple[str, str] | None:
    """(COMPILE_FAILED or LINK_FAILED, a few words) where the output says the source did not compile
    or parse (a Python SyntaxError, a compiler's error: COMPILE_FAILED), or did not link (a Python
    traceback that ends in an ImportError, a NameError, or an AttributeError of a module or a
    class: a diff hybrid or a commit that imports a module, or uses a name, that only another hunk
    brings: LINK_FAILED); None when nothing does."""
    said = _PY_SYNTAX.search(text)
    if said:
        return COMPILE_FAILED, said.group(1).strip()[:160]
    if _TRACEBACK in text:
        last = last_exception(text)
        # an import, or a name, that only another hunk defines (NameError: a rename's definition
        # tried without its use, as the line pass splits them; a module's or a class's attribute:
        # the same rename across two files, `def f` in one and `a.f()` in another)
        if last is not None and unlinked(last):
            return LINK_FAILED, last
    if is_compile_error(text):
        return COMPILE_FAILED, last_exception(text) or "compile error"
    said_cc = compiler_error(text)
    return (COMPILE_FAILED, said_cc) if said_cc else None


def compiler_error(text: str) -> str | None:
    """A C, C++ or CUDA compiler's (or linker's) first error line in `text`, shortened; None when
    there is none."""
    said = _CC_ERROR.search(text)
    return said.group(0).strip()[:160] if said else None


def last_exception(text: str) -> str | None:
    """The last 'SomeError: message' line of a traceback, shortened."""
    for line in reversed(text.strip().splitlines()):
        m = _EXC_LINE.match(line.strip())
        if m:
            msg = m.group(2).strip()
            return f"{m.group(1)}: {msg[:160]}" if msg else m.group(1)
    return None


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def own_words(text) -> str:
    """What a subject said of itself (its `error`), as one line of at most 200 characters: the
    signature is stored with every run and printed in every progress line, attempt and report,
    so a 1 MB or multi-line message would be copied into each of them."""
    return " ".join(str(text).split())[:200]


def skip_reason(raw: RawRun) -> str:
    """Why a subject said "cannot test" (exit 125): the `error` of its BISECTK_RESULT line, else the
    last line it wrote to stderr -- e.g. 'no CUDA device: this kernel needs a GPU ...'."""
    result = parse_result(raw.result or raw.stdout) or {}
    error = result.get("error")
    if isinstance(error, str) and error.strip():
        return own_words(error)
    return last_line(raw.stderr)


_USAGE_LINE = re.compile(r"^usage:\s", re.IGNORECASE | re.MULTILINE)
_USAGE_ERROR = re.compile(r"^(?:\S+: error: |Error: )(.+)$", re.MULTILINE)   # argparse's, click's


# CPython's own words when the script it was given cannot be opened (before any of it runs):
# `python3: can't open file '/w/k.py': [Errno 2] No such file or directory`, exit 2
_CANT_OPEN = re.compile(r"(\S+): can't open file '(.+)': \[Errno \d+\] ([^\n]+)")


def unopened_script(raw: RawRun) -> str | None:
    """Why the interpreter could not open the script the command names, when that is all it said
    (its one line of stderr, exit 2), or None. Nothing of the subject ran, so the run is no crash
    of the kernel: a wrong path, or a configuration that names a script that is not there. A run
    that printed anything else wrote it itself (a subprocess of its own failing is its story)."""
    if raw.exit_code != 2 or raw.signal:
        return None
    m = _CANT_OPEN.fullmatch(raw.stderr.strip())
    if m is None:
        return None
    program, path, why = m.groups()
    return f"cannot start the script {path}: {why} ({os.path.basename(program)}: can't open file)"


def usage_error(raw: RawRun) -> str | None:
    """What a subject that rejected its arguments said: its error and its usage line, or None.
    Exit 2 alone is not enough (a kernel may exit 2 for its own reasons): a `usage:` line on
    stderr is what command-line parsers print when they refuse an argument."""
    if raw.exit_code != 2 or raw.signal or not _USAGE_LINE.search(raw.stderr):
        return None
    lines = raw.stderr.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.lower().startswith("usage:"))
    usage = [lines[i]]
    for ln in lines[i + 1:]:          # a long usage is wrapped onto indented lines
        if not ln[:1].isspace() or not ln.strip():
            break
        usage.append(ln)
    usage = " ".join(" ".join(usage).split())
    usage = usage if len(usage) <= 160 else usage[:159] + "…"
    errors = _USAGE_ERROR.findall(raw.stderr)
    return f"{' '.join(errors[-1].split())} ({usage})" if errors else usage
def _integer(text: str) -> int | float:
    """A JSON integer: exact while a float can hold its size, else the float it overflows to
    (inf): a 5,000-digit count is past every bound, not a reason to stop (Python refuses to
    convert integers of more than 4,300 digits, and a float cannot hold past ~1.8e308)."""
    return int(text) if len(text.lstrip("-")) <= 308 else float(text)


def says_not_ok(ok) -> bool:
    """Whether the subject's `"ok"` declares a wrong result: false, and the spellings a subject
    that has no JSON boolean at hand writes for it (`"ok": 0` from a C printf, `"ok": "false"`)."""
    if ok is False:
        return True
    if isinstance(ok, (int, float)) and not isinstance(ok, bool):
        return ok == 0
    return isinstance(ok, str) and ok.strip().lower() in ("false", "0")


def parse_result(stdout: str) -> dict | None:
    """Metrics from the last `BISECTK_RESULT {json}` line; None if absent or malformed (nested too
    deeply to decode included)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            try:
                value = json.loads(line[len(RESULT_TAG):].strip(), parse_int=_integer)
            except (ValueError, RecursionError):   # JSONDecodeError is a ValueError
                return None
            return _scrubbed(value) if isinstance(value, dict) else None
    return None


def _scrubbed(value):
    """A decoded result with every lone surrogate (`"\\ud800"` is valid JSON, not valid UTF-8)
    written as its escape: the ledger, the reports and the terminal store and print UTF-8; and
    every metric's name on one line (a name is said in signatures and failure lines, and one
    named "x\\nobserve SHA fail" wrote a line of its own into each, `bisectk log` included)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {" ".join(_scrubbed(k).splitlines()): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


@dataclass
class Judge:
    thresholds: list[Threshold]
    slow_factor: float | None = None
    slow_metric: str | None = None
    baseline: float | None = None  # good endpoint's time (slow_metric, or wall seconds)
    protocol: str = "bisectk"      # "pytest": exit codes are pytest's (see classify_pytest);
                                   # "git": a `--run` command, git bisect run's exit codes
    higher: bool = False           # the slow metric is better higher (a throughput): SLOW below
                                   # the baseline / slow_factor, not above slow_factor x it

    def elapsed(self, metrics: dict, duration_s: float) -> float | None:
        return slowrule.value(metrics, duration_s, self.slow_metric)

    def slow(self, metrics: dict, duration_s: float) -> str | None:
        # a baseline of 0 or below (a time printed in too coarse a unit, a signed metric) has no
        # multiple to exceed: a negative one made good's own runs SLOW; the endpoint check says so
        if not self.slow_factor or not self.baseline or self.baseline < 0:
            return None
        t = self.elapsed(metrics, duration_s)
        unit = self.slow_metric or "wall s"
        if self.higher:
            if t is not None and t * self.slow_factor < self.baseline:
                slower = f"{self.baseline / t:.2f}x slower" if t > 0 else "none at all"
                return f"{unit} {t:.3g} < baseline {self.baseline:.3g} / {self.slow_factor:g} ({slower})"
            return None
        if t is not None and t > self.slow_factor * self.baseline:
            return (f"{unit} {t:.3g} > {self.slow_factor:g} x baseline {self.baseline:.3g} "
                    f"({t / self.baseline:.2f}x)")
        return None


def _common(raw: RawRun, log_path: str | None) -> dict:
    return dict(duration_s=raw.duration_s, exit_code=raw.exit_code, signal=raw.signal,
                timed_out=raw.timed_out, stdout_tail=raw.stdout[-4000:], stderr_tail=raw.stderr[-4000:],
                log_path=log_path, progress=raw.stalled, stuck=raw.stuck,
                timeline=tuple(tuple(p) for p in raw.timeline) if raw.timeline else None)


def _numeric_text(value: object) -> bool:
    """A string that reads as a finite number ("1e-9", " 0.5"): a metric printed in quotes. "inf"
    and "nan" are not: JSON has no word for them, so a subject may well write them as strings,
    and they are the wrong result they say."""
    if not isinstance(value, str) or len(value) > 64:
        return False
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _unreported(metric: str, metrics: dict, common: dict) -> Run:
    """UNRESOLVED: the oracle judges by `metric` and the run did not report it; the names it did
    report make a typo in the spec plain."""
    names = [k for k in metrics if k not in ("ok", "error")]
    said = f"it reported {', '.join(names[:6])}{', ...' if len(names) > 6 else ''}" if names else "it reported none"
    return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=f"metric {metric} not reported ({said})",
               metrics=metrics, **common)


def check_text(t: Threshold) -> str:
    """A threshold as the check it states, without values seen: 'rel_err <= 0.001'."""
    if t.min is not None and t.max is not None:
        return f"{t.min:g} <= {t.metric} <= {t.max:g}"
    return f"{t.metric} <= {t.max:g}" if t.max is not None else f"{t.metric} >= {t.min:g}"


def crash_name(signature: str, sig: str | None, exit_code: int | None) -> str:
    """What crashed, without values: the CUDA error name, else the signal, else the exception
    type, else the exit code."""
    cuda = recognise(signature)
    if cuda:
        return cuda
    if sig:
        return sig
    m = re.match(r"(\w+(?:Error|Exception|Interrupt))\b", signature or "")
    if m:
        return m.group(1)
    return f"exit {exit_code}"


# make's and ninja's own words for a build with nothing to do
_NOTHING_MADE = re.compile(r"^(?:g?make(?:\[\d+\])?: (?:'[^'\n]*' is up to date|Nothing to be done for '[^'\n]*')\."
                           r"|ninja: no work to do\.)$", re.MULTILINE)


def classify_build(raw: RawRun, log_path: str | None = None, carries_config: bool = False,
                   limit_s: float | None = None) -> Run | None:
    """UNRESOLVED(INFRA) when the build could not start, UNRESOLVED(BUILD) when it failed or timed
    out, None when it built. `carries_config`: a factor's value reaches the run through the build
    alone (`make CFLAGS=-DWARPS={warps}`); make or ninja saying it had nothing to do then means
    the run would use the outputs of whatever was built there before (make does not rebuild for a
    changed variable), another configuration's: that build did not happen either. `limit_s`: the
    build's limit, named in a timeout's signature (the same for every run that hit it; the
    measured duration overshoots it by the watchdog's poll and kill)."""
    if not raw.started:
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=f"build: {raw.error}", **_common(raw, log_path))
    if raw.timed_out:
        limit = limit_s if limit_s is not None else raw.duration_s
        return Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature=f"build timed out after {limit:.1f} s",
                   **_common(raw, log_path))
    if raw.exit_code != 0:
        text = raw.stderr + "\n" + raw.stdout
        detail = (last_exception(text) or compiler_error(text) or last_line(text)
                  or (raw.signal or f"exit {raw.exit_code}"))
        return Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature=f"build failed: {detail}", **_common(raw, log_path))
    said = _NOTHING_MADE.search(raw.stdout + "\n" + raw.stderr) if carries_config else None
    if said:
        return Run(Outcome.UNRESOLVED, reason=Reason.BUILD,
                   signature=f"the build made nothing ({said.group(0)}): the run would get an earlier "
                             f"configuration's build; rebuild each time (make -B)", **_common(raw, log_path))
    return None


_PYTEST_EXITS = {2: (Reason.BUILD, "pytest: interrupted or collection error"),
                 3: (Reason.INFRA, "pytest: internal error"), 4: (Reason.INFRA, "pytest: usage error"),
                 5: (Reason.INFRA, "pytest: no tests collected")}


# A line of pytest's short test summary: `FAILED tests/k.py::test_x[a b - c] - AssertionError: ...`,
# or `ERROR ...` for a test whose setup or teardown raised (or a file that did not collect, no
# `::`). A parametrized id keeps its spaces, and any ' - ', inside its brackets.
_SUMMARY = re.compile(r"^(FAILED|ERROR) ([^\s\[]+(?:\[.*?\])?)(?: - (.*))?$", re.MULTILINE)
# pytest-xdist ends a run that `-x` (which --pytest gives) stopped at its first failure as
# interrupted, exit 2, where pytest alone exits 1 (a project's `addopts = -n auto`)
_XDIST_STOPPED = re.compile(r"^!+ xdist\.dsession\.Interrupted: stopping after \d+ failures? !+$", re.MULTILINE)


# pytest-timeout's words for a test it stopped: its failure (the signal method), or the banner
# over the stacks it dumps before it ends the process, summary-less (the thread method)
PYTEST_TIMEOUT = "pytest-timeout: Timeout"     # such a hang's signature: no watchdog of bisectk's read it (engine/hangs.py)
_PYTEST_TIMEOUT = re.compile(r"Failed: Timeout \(>([\d.]+)s\) from pytest-timeout\.$|^\++ Timeout \++$",
                             re.MULTILINE)


# pytest's usage errors (exit 4) in its own words: `ERROR: Wrong expression passed to '-k': ...`,
# or argparse's line under `ERROR: usage: ...` (`pytest: error: unrecognized arguments: -n`, an
# addopts option whose plugin the commit's environment lacks; pytest 9.2 names the program as run,
# `python -m pytest: error: ...`)
_USAGE_SAID = re.compile(r"^ERROR: (?!usage:)(.+)$", re.MULTILINE)
_PARSER_SAID = re.compile(r"^[^\s:]+(?: -m [^\s:]+)?: error: (.+)$", re.MULTILINE)


def _as_typed(line: str) -> str:
    """A line of pytest's with the worktree's own path taken out of the paths it names: as the
    user wrote them, and the same in every worktree (a conftest that fails to import)."""
    return WORKTREE_PATH.sub("", line.strip())


def _summary(stdout: str) -> list[tuple[str, str]]:
    """(what failed, pytest's message) for each test the short test summary names: a failed test
    by its node id, one that errored in setup or teardown as 'ID (error)' (it never ran its body:
    not the failure of one that did), one marked `xfail(strict=True)` that passed as 'ID
    (XPASS(strict))' (its body passed: a fix that came before the mark's removal, not the failure
    of a body that fails), a file that did not collect by its path."""
    return [(test + (" (error)" if word == "ERROR" and "::" in test else
                     " (XPASS(strict))" if said.startswith("[XPASS(strict)]") else ""), said or "")
            for word, test, said in _SUMMARY.findall(stdout)]


# pytest's last line, its counts: `1 passed, 2 skipped in 0.31s`, `==== 1 xfailed in 2.00s ====`
_COUNTS = re.compile(r"^=* ?((?:\d+ [a-z]+, )*\d+ [a-z]+) in \d", re.MULTILINE)
# why a test was skipped or xfailed, where the run's `-r` report names it (`-rfEsx`, which --pytest gives)
_SKIP_SAID = re.compile(r"^(?:SKIPPED \[\d+\] [^\s:]+:\d+: |XFAIL \S+ - )(.+)$", re.MULTILINE)


def _nothing_judged(stdout: str) -> str | None:
    """pytest's counts where a run that exited 0 passed no test, every one it selected skipped or
    an expected failure (xfail): its body never ran, or failed as marked, so the run says nothing
    of the commit. None where a test passed (or the counts cannot be read)."""
    said = _COUNTS.findall(stdout)
    counts = dict((word, int(n)) for n, word in (c.split(" ") for c in said[-1].split(", "))) if said else {}
    if not counts or counts.get("passed") or counts.get("xpassed") or not (counts.get("skipped") or counts.get("xfailed")):
        return None
    return ", ".join(f"{counts[w]} {w}" for w in ("skipped", "xfailed") if counts.get(w))


def classify_pytest(raw: RawRun, text: str, common: dict) -> Run:
    """pytest's exit codes: 0 pass, 1 tests failed (the target), 2-5 the test could not be judged
    (interrupted/collection error, internal error, usage error, nothing collected) -- never 'bad'.
    A run of 0 where no test passed (all skipped or xfailed) is unresolved too (_nothing_judged)."""
    if raw.exit_code == 0:
        counts = _nothing_judged(raw.stdout)
        if counts is None:
            return Run(Outcome.PASS, **common)
        why = _SKIP_SAID.search(raw.stdout)
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=f"pytest: no test was judged ({counts})"
                   + (f": {_as_typed(why.group(1))[:200]}" if why else ""), **common)
    failed = _summary(raw.stdout)
    stopped = raw.exit_code == 2 and _XDIST_STOPPED.search(text) and failed and all("::" in t for t, _ in failed)
    if raw.exit_code == 1 or stopped:
        detail = (failed[0][1] or failed[0][0]) if failed else (last_exception(text) or "test failed")
        cuda = recognise(text)
        if cuda:
            return Run(Outcome.FAIL, FailKind.CRASH, signature=cuda, failed=(cuda,), **common)
        tests = tuple(sorted({t for t, _ in failed})) or ("pytest",)
        hung = _PYTEST_TIMEOUT.search(text)
        if hung:    # pytest-timeout ended a test that hung: a hang, whatever exit it gave
            return Run(Outcome.FAIL, FailKind.HANG, signature=PYTEST_TIMEOUT + (
                f" (>{hung.group(1)}s)" if hung.group(1) else ""), failed=tests if failed else (), **common)
        return Run(Outcome.FAIL, FailKind.WRONG, signature=detail[:200], failed=tests, **common)
    reason, what = _PYTEST_EXITS.get(raw.exit_code, (Reason.INFRA, f"pytest: exit {raw.exit_code}"))
    detail = last_exception(text)
    said = re.search(r"^ERROR: ((?:file or directory )?not found: .*)$", text, re.MULTILINE)
    refused = _USAGE_SAID.search(text) or _PARSER_SAID.search(text)
    if raw.exit_code in (4, 5) and said:     # a node id this commit does not have: pytest's own words
        detail = f"{_as_typed(said.group(1))[:300]} (the test may not exist at this commit)"
    elif raw.exit_code == 4 and refused:     # what it refused: a -k expression, an addopts option
        detail = " ".join(_as_typed(refused.group(1)).split())[:300]
    elif detail:
        detail = _as_typed(detail)
    return Run(Outcome.UNRESOLVED, reason=reason, signature=f"{what}" + (f": {detail}" if detail else ""), **common)


# `python -m pytest` in an interpreter without pytest: the interpreter's own words, exit 1 (an
# import inside a script says `ModuleNotFoundError: No module named 'x'`, quoted). Only pytest's
# own absence: a module of the project's that a commit lacks may be the very failure hunted.
_NO_PYTEST = re.compile(r"^(?:\S*/)?(?:python|pypy)[\d.]*: No module named pytest$", re.MULTILINE)


def classify_run(raw: RawRun, judge: Judge, log_path: str | None = None) -> Run:
    common = _common(raw, log_path)
    if not raw.started:
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=raw.error, **common)
    if raw.timed_out:
        where = f"; {raw.stalled}" if raw.stalled else ""
        return Run(Outcome.FAIL, FailKind.HANG, signature=f"timeout after {raw.duration_s:.1f} s{where}", **common)
    text = raw.stderr + "\n" + raw.stdout
    if raw.poisoned and raw.exit_code == 0 and not raw.signal:
        # The script returned, but the warm worker's CUDA context is poisoned after the run (a
        # sticky error the script swallowed): a crash, named by the CUDA error when it is known.
        cuda = recognise(raw.poisoned + "\n" + text)
        return Run(Outcome.FAIL, FailKind.CRASH, signature=cuda or raw.poisoned,
                   failed=(cuda or "CUDA context poisoned",), **common)
    missing = _NO_PYTEST.search(raw.stderr) if raw.exit_code == 1 and not raw.signal else None
    if missing:     # `python -m pytest` where pytest is not installed: nothing of the commit ran
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA,
                   signature=f"{missing.group(0)} (install it in that interpreter)", **common)
    if judge.protocol == "pytest" and not raw.signal:
        return classify_pytest(raw, text, common)
    if raw.exit_code == SKIP_EXIT:
        why = skip_reason(raw)
        return Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature=SKIP_SIGNATURE + (f": {why}" if why else ""),
                   **common)
    unopened = unopened_script(raw)
    if unopened:    # the interpreter never read the script: untestable, under any protocol
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=unopened, **common)
    usage = usage_error(raw)
    if usage:   # the configuration never reached the kernel: it cannot be judged, and is no crash
        return Run(Outcome.UNRESOLVED, reason=Reason.USAGE, signature=f"the subject rejected its arguments: {usage}",
                   **common)
    if raw.exit_code != 0 and judge.protocol == "git" and not raw.signal and 0 < (raw.exit_code or 0) < 128:
        # git bisect run's protocol: any exit 1-127 (125 was handled above) means bad; a known CUDA
        # error text still names the crash, so a different crash is not taken for this failure
        cuda = recognise(text)
        if cuda:
            return Run(Outcome.FAIL, FailKind.CRASH, signature=cuda, failed=(cuda,), **common)
        if unbuilt := does_not_build(text):
            # bad by the protocol, but a failure of its own: a hybrid of `diff` (or a commit) that
            # does not even parse is not the failure a test that ran saw, and is only the target
            # where the bad endpoint did not compile either ("when did the build break"); one that
            # does not link is the target where bad did not link (outcome.Target.matches)
            tag, words = unbuilt
            return Run(Outcome.FAIL, FailKind.BAD, signature=f"exit {raw.exit_code}: {words}",
                       failed=(tag,), **common)
        return Run(Outcome.FAIL, FailKind.BAD, signature=f"exit {raw.exit_code}", **common)
    if raw.exit_code != 0:
        if is_compile_error(text) or compiler_error(text):
            detail = last_exception(text) or compiler_error(text) or "compile error"
            return Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature=f"compile failed: {detail}", **common)
        signature = recognise(text)
        if signature is None and _BAD_ALLOC.search(text):     # an RLIMIT_AS / ulimit -v failure in C++
            signature = "std::bad_alloc (a C++ allocation failed)"
        shell_signal = _shell_signal(raw.exit_code)
        if raw.signal == "SIGKILL" and signature is None:
            signature = killed_words(raw.oom)
        elif raw.signal or shell_signal:
            name = raw.signal or shell_signal
            if shell_signal and raw.oom:      # `sh -c` reporting a child the OOM killer ended
                signature = f"{signature}; {OOM_KILLED}" if signature else OOM_KILLED
            signature = f"{name}: {signature}" if signature else name
        else:
            signature = signature or last_exception(text) or f"exit {raw.exit_code}"
        name = crash_name(signature, raw.signal or shell_signal, raw.exit_code)
        return Run(Outcome.FAIL, FailKind.CRASH, signature=signature, failed=(name,), **common)
    out = raw.result or raw.stdout   # the line caught wherever it was, else the tail
    metrics = parse_result(out)
    if metrics is None:
        metrics = {}
        if judge.thresholds:
            line = next((ln for ln in reversed(out.splitlines()) if ln.startswith(RESULT_TAG)), None)
            said = (f"{RESULT_TAG} line is not a JSON object: {line[len(RESULT_TAG):].strip()[:60]!r}"
                    if line is not None else f"no {RESULT_TAG} line in stdout")
            return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=said, **common)
    violations: list[tuple[str, str]] = []  # (signature text, check)
    for t in judge.thresholds:
        if t.metric in metrics:
            violation = t.violation(metrics[t.metric])
            if violation:
                violations.append((violation, check_text(t)))
    if says_not_ok(metrics.get("ok")):
        # the subject's own verdict, plus whichever thresholds it also broke: a NaN run that says
        # ok=false and an inf run that does not are the same failure when both break rel_err
        said = own_words(metrics.get("error") or "subject reported a wrong result")
        return Run(Outcome.FAIL, FailKind.WRONG, signature=said,
                   metrics=metrics, failed=tuple(sorted({SUBJECT_CHECK, *(c for _, c in violations)})), **common)
    # a metric the oracle judges by (thresholds, then slow_metric: a wrong result need not time
    # itself) that the run did not report: a typo in the spec or a subject that never prints it
    missing = [t.metric for t in judge.thresholds if t.metric not in metrics]
    if missing:
        return _unreported(missing[0], metrics, common)
    quoted = [t.metric for t in judge.thresholds if _numeric_text(metrics[t.metric])]
    if quoted:      # "1e-9" in quotes: the subject's printing, not a wrong result of its kernel
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, signature=(
            f"metric {quoted[0]} is the string {metrics[quoted[0]]!r}, not a number: print it without quotes"),
            metrics=metrics, **common)
    if violations:
        return Run(Outcome.FAIL, FailKind.WRONG, signature="; ".join(v for v, _ in violations), metrics=metrics,
                   failed=tuple(sorted({c for _, c in violations})), **common)
    if judge.slow_factor and judge.slow_metric and judge.slow_metric not in metrics:
        return _unreported(judge.slow_metric, metrics, common)   # else SLOW is undecidable: a slow bad side "passes"
    nan = [k for k, v in metrics.items() if isinstance(v, float) and math.isnan(v)]
    if nan and not judge.thresholds:
        return Run(Outcome.FAIL, FailKind.WRONG, signature=f"NaN in {nan[0]}", metrics=metrics,
                   failed=tuple(f"{k}{NAN_CHECK}" for k in sorted(nan)), **common)
    if judge.slow_factor and judge.slow_metric and (bad := slowrule.unjudged(judge.slow_metric, metrics[judge.slow_metric])):
        # read as no value, the run passed: a slow hybrid that printed its time in quotes cleared the culprit
        return Run(Outcome.UNRESOLVED, reason=Reason.INFRA, metrics=metrics, **common, signature=bad)
    slow = judge.slow(metrics, raw.duration_s)
    if slow:
        return Run(Outcome.FAIL, FailKind.SLOW, signature=slow, metrics=metrics,
                   failed=(judge.slow_metric or "wall time",), **common)
    return Run(Outcome.PASS, metrics=metrics, **common)
