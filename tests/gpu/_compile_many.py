#!/usr/bin/env python3
"""Compile many kernel configurations in one process (the imports are paid once).

stdin: a JSON list of jobs {"script": path, "argv": [...], "ptx_out": path|null}.
stdout: one JSON line per job, {"index", "exit_code", "result", "error", "seconds"}, in job order.
Every job runs the script's ``main(argv + ["--compile-only"])`` in this process, with
CUTE_DSL_ARCH=sm_90a unless set; a raised exception is exit code 1 (as the script would exit).
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import traceback

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ["BISECTK_COMPILE_ONLY"] = "1"

_MODULES = {}


def _module(script: str):
    path = os.path.abspath(script)
    if path not in _MODULES:
        name = "bisectk_kernel_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _MODULES[path] = mod
    return _MODULES[path]


def run_job(job: dict) -> dict:
    argv = list(job["argv"]) + ["--compile-only"]
    if job.get("ptx_out"):
        argv += ["--ptx-out", job["ptx_out"]]
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code, error = 0, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _module(job["script"]).main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception as e:  # what `python script.py` would turn into exit 1
        code, error = 1, "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]
    result = None
    for line in out.getvalue().splitlines():
        if line.startswith("BISECTK_RESULT "):
            result = json.loads(line[len("BISECTK_RESULT "):])
    return {"exit_code": code, "result": result, "error": error,
            "stderr_tail": err.getvalue()[-1000:], "seconds": round(time.perf_counter() - t0, 2)}


def main() -> int:
    jobs = json.load(sys.stdin)
    for i, job in enumerate(jobs):
        rec = run_job(job)
        rec["index"] = i
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
