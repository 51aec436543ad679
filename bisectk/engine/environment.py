"""The environment diagnosis: when the endpoints fail because of the machine, not the differences.

A GPU variant run where the CuTe DSL is not installed fails on both sides with the same
ModuleNotFoundError; on a machine without a GPU both sides stop with "no CUDA device". That is
true of the endpoints, but "the good configuration fails too" is not the diagnosis: nothing of
the kernel ran on either side, so the differences were never tested. The cause is named instead,
with what fixes it.

Abstractions
------------
EnvironmentProblem -- a named cause: `kind` (missing-module, import-error, command-not-found,
                      bisect-head, driver-mismatch, no-gpu, cpu-torch, oom-at-start, untracked-file,
                      outside-path, uncloned-submodule, sparse-checkout, beside-spec, missing-file), the one line that says it and what fixes it, and the facts
                      behind it (details).
recognise_cause    -- what one run's output says about the machine: a (kind, subject) pair, e.g.
                      ("missing-module", "cutlass"), or None. Pure: text in, cause out.
missing_paths      -- the paths a run's output says could not be opened ("No such file or
                      directory"). For `bisect`, a path your checkout has but git does not track
                      (a data file, a local config) is missing from every commit's worktree
                      (they hold tracked files only), so both endpoints fail opening it, where
                      `git bisect run` in your checkout would not: the space names such a path
                      (CommitSpace.untracked), and `diagnose` says so ("untracked-file"). A relative
                      path that climbs out of the repository (`../cutlass/include`) names, from a
                      worktree, a place beside the worktree, not beside the checkout
                      (CommitSpace.outside; "outside-path"). A path the command itself names
                      (`python kernels/rnu.py`, a typo) that is nowhere is named too (FactorSpace.missing;
                      "missing-file"): both sides stop at python's "can't open file" before any of
                      the kernel ran, which is not "the good configuration fails too".
diagnose           -- the endpoints' runs -> an EnvironmentProblem, or None. A cause is named only
                      when every run of both endpoints failed (or could not be tested) and every
                      one of them shows the same cause: one side that passed, or the two sides
                      failing differently, puts the differences back in question. "Out of memory"
                      counts only before the kernel was launched (at start: no `launch` progress
                      point on either side), where no configuration of the kernel can be blamed.

The machine's own facts (nvidia-smi, /dev/nvidia*, CUDA_VISIBLE_DEVICES, the driver's CUDA
version) come from bisectk/spaces/env.py, which `bisectk env` reports (under "checks"); the
extra that installs a module, from bisectk/errors.py's install_hint.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bisectk.errors import install_hint
from bisectk.outcome import Outcome, Reason, Run
from bisectk.run.progress import describe_point


class _Lazy:
    """A pattern compiled at its first use: these are read only when endpoints fail, and compiling
    them all (IGNORECASE alternations) is ~4 ms of every command's start on a 2-core machine."""

    def __init__(self, pattern: str, flags: int = 0):
        self._args, self._compiled = (pattern, flags), None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


_MISSING = _Lazy(r"ModuleNotFoundError: No module named '([\w.]+)'")
_SHARED_LIB = _Lazy(r"(\S+\.so(?:\.[\d.]+)?): cannot open shared object file")
_IMPORT = _Lazy(r"^(?:\S+\.)?ImportError: (.+)$", re.MULTILINE)
_MISMATCH = _Lazy(r"driver version is insufficient|cudaErrorInsufficientDriver|CUDA_ERROR_INSUFFICIENT_DRIVER"
                  r"|NVIDIA driver on your system is too old|CUDA_ERROR_COMPAT_NOT_SUPPORTED"
                  r"|cudaErrorCompatNotSupportedOnDevice|unsupported display driver / cuda driver combination"
                  r"|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|cudaErrorUnsupportedPtxVersion"
                  r"|PTX was compiled with an unsupported toolchain", re.IGNORECASE)
_NO_GPU = _Lazy(r"no CUDA-capable device is detected|no CUDA device|Found no NVIDIA driver"
                r"|CUDA driver initialization failed|cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE"
                r"|NVIDIA driver (?:is )?not (?:found|loaded)|torch\.cuda\.is_available\(\) is False",
                re.IGNORECASE)
_CPU_TORCH = _Lazy(r"Torch not compiled with CUDA enabled")
# "No such file or directory: 'x'" (Python), "x: No such file or directory" (shells, coreutils, C),
# "can't open file 'x'" (python x.py)
_NO_FILE = _Lazy(r"No such file or directory:\s*'([^'\n]+)'|([^\s'\":]+): No such file or directory"
                 r"|can't open file '([^'\n]+)'|cannot open ([^\s'\":]+): No such file$", re.MULTILINE)
# a shell's "command not found" (dash: "x.sh: 2: foo: not found", bash: "x.sh: line 2: foo: command not
# found", sh -c: "sh: 1: foo: not found"), with the run's exit status 127
_NOT_FOUND = _Lazy(r"^[^\n:]*: (?:line )?\d+: ([^\n:]+): (?:command )?not found\s*$", re.MULTILINE)
# git's words for a ref it does not have, naming BISECT_HEAD: the ref git bisect, in its no-checkout mode,
# moves to each commit instead of checking it out, which a test written for that mode reads
_BISECT_HEAD = _Lazy(r"^(?:fatal|error): .*\bBISECT_HEAD\b.*$", re.MULTILINE)
_OOM = _Lazy(r"CUDA out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|out of memory(?!\?| \(the OOM killer\))",
             re.IGNORECASE)


@dataclass(frozen=True)
class EnvironmentProblem:
    kind: str
    subject: str          # the module, the library, or the matched text
    line: str             # the one line: the cause and its fix
    details: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "line": self.line, "details": list(self.details)}


def _text(run: Run) -> str:
    return "\n".join((run.signature or "", run.stderr_tail or "", run.stdout_tail or ""))


def _reached(run: Run, key: str | None = None) -> bool:
    """Whether the run reached a progress point (any, or the one named `key`, e.g. 'phase:launch')."""
    points = [p[0] for p in (run.timeline or ()) if p and p[0] != "<end>"]
    return bool(points) if key is None else key in points


def recognise_cause(run: Run) -> tuple[str, str] | None:
    """The machine's part in one run's failure, from its output (first match wins: a missing
    module explains everything after it)."""
    text = _text(run)
    m = _MISSING.search(text)
    if m:
        return "missing-module", m.group(1).split(".")[0]
    m = _SHARED_LIB.search(text)
    if m:
        return "import-error", m.group(1)
    m = _IMPORT.search(text)
    if m:
        return "import-error", " ".join(m.group(1).split())[:160]
    m = _NOT_FOUND.search(text) if run.exit_code == 127 else None
    if m:
        return "command-not-found", m.group(1).strip()
    m = _BISECT_HEAD.search(text)
    if m:
        return "bisect-head", m.group(0).strip()
    m = _MISMATCH.search(text)
    if m:
        return "driver-mismatch", m.group(0)
    m = _CPU_TORCH.search(text)
    if m:
        return "cpu-torch", m.group(0)
    m = _NO_GPU.search(text)
    if m:
        return "no-gpu", m.group(0)
    m = _OOM.search(text)
    if m and not _reached(run, "phase:launch"):
        return "oom-at-start", m.group(0)
    return None


def missing_paths(run: Run) -> list[str]:
    """The paths the run's output says could not be opened, in order, each once."""
    text = _text(run)
    found = [next(g for g in m.groups() if g) for m in _NO_FILE.finditer(text)]
    # a shell that could not run a script by its path (dash: "x.sh: 2: ./helper.sh: not found")
    found += [m.group(1).strip() for m in _NOT_FOUND.finditer(text) if "/" in m.group(1)]
    return list(dict.fromkeys(found))


def _placed(runs: list[Run], place: Callable[[str], str | None] | None) -> tuple[str, str] | None:
    """A path every run failed to open that `place` finds in the user's own tree: (the path as the
    runs named it, where `place` puts it), or None."""
    if place is None:
        return None
    common = None
    for r in runs:
        paths = set(missing_paths(r))
        common = paths if common is None else common & paths
    for path in sorted(common or ()):
        where = place(path)
        if where:
            return path, where
    return None


def _no_gpu_why(facts: dict[str, Any]) -> str:
    n, cvd = facts.get("gpus", 0), facts.get("cuda_visible_devices")
    if n and cvd is not None:
        return f"CUDA_VISIBLE_DEVICES={cvd!r} hides this machine's {n}"
    if n:
        return f"the subject sees none of this machine's {n}"
    smi = "nvidia-smi lists none" if facts.get("nvidia_smi") else "no nvidia-smi"
    return f"{smi}, {'no /dev/nvidia*' if not facts.get('device_files') else 'but /dev/nvidia* exists'}"


def path_python_with(module: str) -> str | None:
    """The `python` first on PATH when it is another environment than bisectk's own (a venv the
    user activated, bisectk installed elsewhere) and it can import `module`; else None. A bare
    `python` in a command is bisectk's interpreter (spec.py), where `git bisect run` would run
    the PATH's: the usual reason a module the user has is missing from every run."""
    from bisectk.engine.installs import path_python
    from bisectk.run.process import run_tool
    exe = path_python()
    if exe is None or not re.fullmatch(r"[\w.]+", module):
        return None
    probe = "import importlib.util, sys; print(sys.prefix); sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)"
    try:
        p = run_tool([exe, "-c", probe, module], timeout=30)
    except OSError:
        return None
    prefix = p.stdout.strip()
    same = prefix and os.path.realpath(prefix) == os.path.realpath(sys.prefix)
    return exe if p.returncode == 0 and prefix and not same else None


def _words(kind: str, subject: str, facts: dict[str, Any]) -> tuple[str, list[str]]:
    """(the cause and what fixes it, the facts behind it) for one kind of cause."""
    from bisectk.spaces.env import gpu_line     # the capture's module: loaded when a cause is named
    if kind == "missing-module":
        other = path_python_with(subject)
        if other is not None:
            return (f"missing Python module '{subject}' in bisectk's interpreter ({sys.executable}), which runs "
                    f"`python` in commands; the `python` on your PATH ({other}) has it: install bisectk there "
                    f"(`{other} -m pip install bisectk`) or write that interpreter's path in the command"), []
        return f"missing Python module '{subject}': {install_hint(subject)}", []
    if kind == "import-error":
        return f"an import fails ({subject}): install or repair what it names", []
    if kind == "command-not-found":
        return (f"the command runs '{subject}', which the shell did not find (exit 127): install it or put it on "
                "the PATH bisectk runs with, or name it by its absolute path"), []
    if kind == "bisect-head":
        return (f"the test reads BISECT_HEAD ({subject}), the ref git bisect moves to each commit in its no-checkout mode "
                "(instead of checking it out): bisectk checks each commit out in a worktree of its own, where HEAD is that commit; "
                "write HEAD in the test"), []
    if kind == "driver-mismatch":
        driver = facts.get("driver_cuda")
        return (f"the CUDA driver and runtime do not match ({subject}"
                + (f"; the driver supports CUDA {driver}" if driver else "") + "): update the driver or install "
                "a build for the driver's CUDA version"), [gpu_line(facts)]
    if kind == "cpu-torch":
        return "torch is a CPU-only build (Torch not compiled with CUDA enabled): install a CUDA build of torch", []
    if kind == "no-gpu":
        return f"no GPU visible ({_no_gpu_why(facts)}): run where a GPU is visible", [gpu_line(facts)]
    return ("out of memory at start, before the kernel was launched: free the GPU's memory or run where more is "
            "free"), [gpu_line(facts)]


def _where(run: Run) -> str:
    """How far the run got, by the phases of the progress protocol (its other output lines are
    progress too, for the watchdog, but a traceback's lines say nothing of how far it got)."""
    phases = [p[0] for p in (run.timeline or ()) if p and str(p[0]).startswith("phase:")]
    return f"after {describe_point(phases[-1])}" if phases else "before its first BISECTK_PHASE"


def diagnose(good_runs: list[Run], bad_runs: list[Run], facts: dict[str, Any] | None = None,
             untracked: Callable[[str], str | None] | None = None,
             outside: Callable[[str], str | None] | None = None,
             uncloned: Callable[[str], str | None] | None = None,
             sparse: Callable[[str], str | None] | None = None,
             beside_spec: Callable[[str], str | None] | None = None,
             missing: Callable[[str], str | None] | None = None) -> EnvironmentProblem | None:
    """The environment as the cause of unusable endpoints (see the module docstring), or None.
    `facts`: the machine's GPU facts (spaces.env.gpu_visibility()), read when a GPU cause is named.
    `untracked`: a path a run could not open -> where the user's checkout has it untracked, or None.
    `outside`: a relative path a run could not open -> what it names from the user's checkout,
    outside the repository (`../sibling/include`), or None.
    `uncloned`: a path a run could not open -> the submodule it lies in, when the user's checkout
    never cloned that one (spaces/emptysub.py), or None.
    `sparse`: a path a run could not open -> its path in the tree, when git tracks it and the user's
    sparse checkout leaves it out (CommitSpace.sparse), or None.
    `beside_spec`: a path a run could not open -> where the spec's directory has it, when the
    subject's cwd (the project root, or `[subject] cwd`) does not, or None.
    `missing`: a path a run could not open -> where it would be, when the command names it and
    nothing is there, or None (asked last: the three above say where the file is instead)."""
    runs = [*good_runs, *bad_runs]
    if not good_runs or not bad_runs or any(r.outcome is Outcome.PASS for r in runs):
        return None
    sides = [f"{side}: {r.outcome.value.upper()} ({r.signature}), {_where(r)}"
             for side, r in (("good", good_runs[-1]), ("bad", bad_runs[-1]))]
    step = "build" if all(r.reason is Reason.BUILD for r in runs) else "command"   # the step that failed to open it
    unopened = (f"all {len(runs)} runs of both endpoints failed to open it: the differences between them were "
                "never tested")
    said = (
        (untracked, "untracked-file", lambda named, where: (
            f"environment problem: the runs cannot open {where}, which your checkout has but git does not track: each "
            "commit runs in a worktree of its own, holding tracked files only; name it by its absolute path in the "
            "command, or track it")),
        (outside, "outside-path", lambda named, where: (
            f"environment problem: the runs cannot open {named}, which from your own tree is {where}, outside the "
            "tree: each commit or hybrid runs in a tree of its own elsewhere (a worktree under the git directory, a "
            f"scratch copy of GOOD), where {named.split(os.sep)[0]}/ leads elsewhere; name it by its absolute path "
            "(in the command or the script, or through an environment variable)")),
        (uncloned, "uncloned-submodule", lambda named, where: (
            f"environment problem: the runs cannot open {named}, in the submodule {where}/, which your checkout never "
            f"cloned: each commit's worktree gets the submodules your checkout has cloned, and leaves the others "
            f"empty, as in your checkout; clone it (git submodule update --init {where}) and run again")),
        (sparse, "sparse-checkout", lambda named, where: (
            f"environment problem: the runs cannot open {named}, which git tracks but your sparse checkout leaves "
            "out: each commit's worktree takes your checkout's sparse patterns, as git bisect's checkout keeps them; "
            f"add it (git sparse-checkout add {os.path.dirname(where) or where}) and run again")),
        (beside_spec, "beside-spec", lambda named, where: (
            f"environment problem: the runs cannot open {named}; the spec's directory has {where}, but the command "
            "runs from [subject] cwd, which is read from the project root (the nearest directory above the spec "
            "with .git or pyproject.toml), not from the spec's directory; name the file from there, or set cwd")),
        (missing, "missing-file", lambda named, where: (
            f"environment problem: the runs cannot open {named}, which the {step} names: there is no such file"
            + ("" if os.path.normpath(named) == where else f" ({where})")
            + f"; correct the path in the spec's {step}, or create the file")),
    )
    for found, kind, words in said:
        placed = _placed(runs, found)
        if placed is not None:
            named, where = placed
            return EnvironmentProblem(kind, where, words(named, where), (*sides, unopened))
    causes = {recognise_cause(r) for r in runs}
    if len(causes) != 1 or None in causes:
        return None
    (kind, subject), = causes
    if facts is None and kind in ("driver-mismatch", "no-gpu", "oom-at-start"):
        from bisectk.spaces.env import gpu_visibility
        facts = gpu_visibility()
    cause, extra = _words(kind, subject, facts or {})
    details = [*sides, f"all {len(runs)} runs of both endpoints stopped this way: the differences between them "
                       "were never tested", *extra, "`bisectk env` shows the same facts (under \"checks\")"]
    return EnvironmentProblem(kind, subject, f"environment problem: {cause}", tuple(details))
