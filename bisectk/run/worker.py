"""A warm worker process: runs Python subject scripts in a process that imported torch/cutlass once.

A cold process per configuration costs ~6-7 s on a Hopper machine, almost all of it `import torch`
and `import cutlass`; the kernel itself runs in microseconds. A warm worker pays the imports once,
then runs each configuration's script in-process (`runpy.run_path` with a patched `sys.argv`).
The parent side (the pool, hot spares, the watchdog) is `run/pool.py`.

Protocol: `python -m bisectk.run.worker --serve --reply-fd N [--preload torch,cutlass]`; the worker
preloads, replies `{"ready": true, ...}` on the reply fd, then reads one JSON request per line on
stdin `{argv, env, cwd, stdout_path, stderr_path}` and replies one JSON line per request
`{exit_code, duration_s, error, poisoned}`. fds 1 and 2 are redirected into the request's files for
the run (so C-level output such as device printf is captured, and the parent can follow progress
lines as they are written). `poisoned` holds the error a CUDA synchronize raised after the run (a
sticky error the script swallowed), "" when the context is healthy; a poisoned worker exits.

Nothing of one run leaks into the next: cwd, argv, sys.path, the environment and the standard
streams are restored; every module the run imported from its own tree (its directory, its
script's directory, the sys.path entries it added) is dropped from sys.modules, so the next run --
another hybrid tree, another commit's worktree, at the same path or not -- imports its own sources
fresh;
bytecode is not written for them. A run that loaded a native extension of its own (which cannot be
unloaded) retires its worker (`retire` in the reply).
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.machinery import EXTENSION_SUFFIXES


def _preload(names: list[str]) -> dict:
    info = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            __import__(name)
            if name == "torch":
                import torch
                if torch.cuda.is_available():
                    torch.cuda.init()
                    torch.zeros(1, device="cuda")  # create the context now, not in run 1
                    info["cuda"] = torch.cuda.get_device_name()
            if name == "cutlass":
                import cutlass.cute  # noqa: F401
            info[name] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # a missing package is the script's problem, not the worker's
            info[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
    return info


def cuda_health() -> str:
    """'' when the CUDA context (if torch made one) still works, else the error it raises."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ""
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception as exc:
        return f"CUDA context poisoned after the run: {type(exc).__name__}: {exc}"[:500]
    return ""


def own_modules(before: set[str], roots: list[str]) -> list[str]:
    """Modules imported since `before` whose files lie under one of `roots` (the run's directory,
    its script's directory, and the sys.path entries the run added): the run's own sources.
    Everything else it imported (installed packages, wherever they live) stays loaded: dropping a
    lazily imported submodule of a preloaded package would give the next run a second copy of its
    classes beside the first."""
    roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
    out = []
    for name in set(sys.modules) - before:
        mod = sys.modules.get(name)
        files = [getattr(mod, "__file__", None) or ""] + list(getattr(mod, "__path__", []) or [])
        if any(f and os.path.join(os.path.realpath(f), "").startswith(tuple(roots)) for f in files):
            out.append(name)
    return out


def _run_request(req: dict) -> dict:
    import gc
    import importlib
    import runpy
    import traceback

    argv = req["argv"]
    script = os.path.abspath(os.path.join(req.get("cwd") or os.getcwd(), argv[0]))
    saved = {"cwd": os.getcwd(), "argv": sys.argv[:], "path": sys.path[:], "env": dict(os.environ),
             "stdout": sys.stdout, "stderr": sys.stderr, "modules": set(sys.modules),
             "bytecode": sys.dont_write_bytecode}
    fd_in, fd_out, fd_err = os.dup(0), os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    f_out = open(req["stdout_path"], "wb", buffering=0)
    f_err = open(req["stderr_path"], "wb", buffering=0)
    code, error = 0, ""
    t0 = time.perf_counter()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(devnull, 0)  # the script must not eat the worker's requests
        os.dup2(f_out.fileno(), 1)
        os.dup2(f_err.fileno(), 2)
        sys.stdout = open(1, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        if req.get("cwd"):
            os.chdir(req["cwd"])
        os.environ.update(req.get("env") or {})
        sys.argv = [script, *argv[1:]]
        sys.path.insert(0, os.path.dirname(script))
        sys.dont_write_bytecode = True
        importlib.invalidate_caches()   # a directory listing cached by a finder may be stale
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            c = exc.code
            if c is None:
                code = 0
            elif isinstance(c, int):
                code = c
            else:
                print(c, file=sys.stderr)
                code = 1
        except BaseException as exc:  # what the interpreter would print before exiting 1
            traceback.print_exc()
            code, error = 1, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        try:  # C stdio buffers (device printf lands there)
            import ctypes
            ctypes.CDLL(None).fflush(None)
        except Exception:
            pass
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        for fd in (fd_in, fd_out, fd_err, devnull):
            os.close(fd)
        f_out.close()
        f_err.close()
        sys.stdout, sys.stderr = saved["stdout"], saved["stderr"]
        roots = [req.get("cwd") or "", os.path.dirname(script), *(p for p in sys.path if p not in saved["path"])]
        os.chdir(saved["cwd"])
        sys.argv = saved["argv"]
        sys.path[:] = saved["path"]
        os.environ.clear()
        os.environ.update(saved["env"])
        sys.dont_write_bytecode = saved["bytecode"]
        native = False
        for name in own_modules(saved["modules"], roots):
            mod = sys.modules.pop(name, None)
            native = native or str(getattr(mod, "__file__", "")).endswith(tuple(EXTENSION_SUFFIXES))
    duration = time.perf_counter() - t0
    gc.collect()
    poisoned = cuda_health()
    # a native extension of the run's own cannot be unloaded (dlopen keeps it): the worker retires
    return {"exit_code": code, "duration_s": duration, "error": error, "poisoned": poisoned, "retire": native}


def serve(reply_fd: int, preload: list[str]) -> int:
    reply = os.fdopen(reply_fd, "w", buffering=1)
    info = _preload(preload)
    reply.write(json.dumps({"ready": True, "pid": os.getpid(), "preload": info}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "exit":
            break
        try:
            rep = _run_request(req)
        except BaseException as exc:  # the worker's own machinery failed: report, then die
            rep = {"exit_code": None, "duration_s": 0.0, "error": f"worker: {exc!r}"[:500],
                   "poisoned": f"the worker's own machinery failed: {exc!r}"[:500]}
        reply.write(json.dumps(rep) + "\n")
        if rep.get("poisoned"):
            break
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bisectk.run.worker")
    ap.add_argument("--serve", action="store_true", required=True)
    ap.add_argument("--reply-fd", type=int, required=True)
    ap.add_argument("--preload", default="torch,cutlass")
    ns = ap.parse_args(argv)
    return serve(ns.reply_fd, [p for p in ns.preload.split(",") if p])


if __name__ == "__main__":
    sys.exit(main())
