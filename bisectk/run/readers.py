"""The stack readers a hang snapshot uses (py-spy, gdb, cuda-gdb): where they are, and one bounded call.

Abstractions
------------
which -- a reader on PATH, or beside this interpreter.
call  -- run a reader to completion within `timeout` seconds, in its own session; on timeout its
         whole tree is killed (a debugger that hangs on a hung process must not hang bisectk).
         Returns (stdout, problem): problem is '' when it exited 0, else one line saying why not
         (`failure`: py-spy's own error and its first cause, not the Rust backtrace after them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from bisectk.procstat import psutil


def which(tool: str) -> str | None:
    """A tool on PATH, or beside this interpreter (py-spy installs its binary into the venv's bin,
    which need not be on PATH when bisectk runs as `venv/bin/python -m bisectk`)."""
    found = shutil.which(tool)
    if found:
        return found
    for d in {sysconfig.get_path("scripts"), os.path.dirname(sys.executable)}:
        p = Path(d or "") / tool
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def call(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[str, str]:
    name = os.path.basename(argv[0])
    if timeout <= 0.05:
        return "", "no time left in the snapshot's budget"
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True, env=env)
    except OSError as exc:
        return "", f"cannot start {name}: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc.pid)
        out, _ = proc.communicate()
        return out, f"{name}: timed out after {timeout:.0f} s"
    except BaseException:
        _kill_tree(proc.pid)
        proc.communicate()
        raise
    if proc.returncode != 0:
        return out, f"{name}: {failure(err, proc.returncode)[:200]}"
    return out, ""


def failure(err: str, code: int) -> str:
    """A reader's failure in one line. py-spy (anyhow) prints `Error: ...`, `Caused by:` and
    numbered causes, then a `Stack backtrace:` of its own whose last line ('9: main') was the
    whole of what a report said; that error and its first cause are said instead. Another
    tool's: its last line on stderr."""
    lines = [ln.strip() for ln in err.split("Stack backtrace:", 1)[0].splitlines() if ln.strip()]
    head = next((ln for ln in lines if ln.startswith("Error:")), "")
    if head:
        causes = [ln.partition(": ")[2] for ln in lines if ln.partition(": ")[0].isdigit()]
        return head[len("Error:"):].strip() + (f": {causes[0]}" if causes else "")
    return lines[-1] if lines else f"exit {code}"


def _kill_tree(pid: int) -> None:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
