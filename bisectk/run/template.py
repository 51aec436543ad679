"""The template of warm workers: one process imports the heavy packages, then forks every worker.

A fresh warm worker pays `import torch` and the CuTe DSL again (5-9 s on an H100; 8 workers
importing at once took 8-9 s each), and a hang retires its worker: on the GPU hang pairs the
pool ran out of spares after four hangs, and the confirmation's passes ran two at a time until
the replacements had imported (bench/results/gpu_hang_h200_trace.txt). A template imports once
and forks a worker on request: the child makes its own CUDA context (0.3-0.7 s) and is ready
(bench/fork_probe.py: a fork to a finished kernel run in 0.8-1.3 s, four at once alike; the next
fork after a hung child was killed ran as well).

A fork must give what a fresh worker's start would, so before every fork the template checks
itself, and refuses (the pool then starts fresh workers, which import for themselves) when:
- CUDA was initialised: by torch, or in the driver, which any CUDA call initialises (even
  `torch.cuda.is_available()`, unless PYTORCH_NVML_BASED_CUDA_CHECK=1), and which leaves the
  process holding /dev/nvidia* open. A process that forks must not have initialised it: a
  forked worker would never make its context (on an H200 no forked worker came up and every
  configuration ran cold; the likely cause, the template's baseline had asked is_available()).
  The template imports without a context (worker._preload(context=False)); each forked worker
  makes its own;
- the preload left Python threads running: a forked worker would lack them, where a fresh one
  has them;
- its interpreter state is no longer as right after the preload (run/isolation.py's Baseline: a
  preloaded module that changes torch's default dtype a moment later, say).

Protocol (the pool's side is run/forked.py): the template's control socket is a SOCK_SEQPACKET
pair, one JSON document a message.
- template -> pool: `{"ready": true, "pid", "preload"}` once imported; `{"forked": PID, "id"}`
  or `{"refused": WHY, "id"}` for each request; `{"exited": PID, "status": S}` for each worker
  that ended (S as Popen's returncode: -N for signal N).
- pool -> template: `{"op": "fork", "id", "env"}` carrying three descriptors (SCM_RIGHTS): the
  worker's request stream (its stdin), its reply pipe, its log (stderr). `{"op": "exit"}`, or EOF:
  the template kills its workers and exits.

The pool's first worker is started fresh beside the template (run/pool.py): the first run never
waits on a template that turns out to refuse, and what that costs is one more process importing
at the start (eight fresh workers imported at once before).

A forked worker sits in a session of its own, dies with the template (PR_SET_PDEATHSIG), and is a
child subreaper, so whatever its runs leave behind stays in its own tree (the pool kills it there
after each run, as a fresh worker's supervisor would). The template itself runs under a
supervisor (run/supervise.py) like any worker: it and everything below it die with bisectk.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
import warnings

from bisectk.run import worker
from bisectk.run.supervise import PR_SET_CHILD_SUBREAPER, prctl

DRIVER_FILES = ("/dev/nvidia",)    # what an initialised CUDA driver keeps open (nvidiactl, nvidia0, nvidia-uvm)
PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20


def _send(sock: socket.socket, doc: dict) -> None:
    sock.send(json.dumps(doc).encode())


def _status(raw: int) -> int:
    return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return True     # cannot tell: do not fork


def _driver_open() -> str:
    """A device file of the CUDA driver this process holds open ('' when none)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return ""
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(DRIVER_FILES):
            return target
    return ""


def unfit(baseline) -> str:
    """Why a worker forked now would not start as a fresh one does ('' when it would)."""
    import threading
    if _cuda_initialised():
        return "CUDA was initialised in the template"
    held = _driver_open()
    if held:
        return f"the CUDA driver was initialised in the template (it holds {held} open)"
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if others:
        return f"the preload left {len(others)} thread(s) running ({', '.join(others[:3])}): a forked worker would lack them"
    dirty = baseline.check()
    if dirty:
        return f"the template is not as fresh as after its preload: {', '.join(dirty[:3])}"
    return ""


def serve_template(control_fd: int, preload: list[str]) -> int:
    from bisectk.run.isolation import Baseline

    sock = socket.socket(fileno=control_fd)
    info = worker._preload(preload, context=False)
    baseline = Baseline()
    import gc
    gc.collect()
    gc.freeze()     # shared by every fork, never scanned again (and its pages stay shared)
    me = os.getpid()
    _send(sock, {"ready": True, "pid": me, "preload": info})
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([sock], [], [], 0.05)
            _reap(sock, children)
            if not ready:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
            except OSError:
                break
            if not data:
                break                      # the pool closed its end, or died
            req = json.loads(data)
            if req.get("op") != "fork":
                for fd in fds:
                    os.close(fd)
                break
            why = unfit(baseline) if len(fds) == 3 else "the request carried no descriptors"
            if why:
                for fd in fds:
                    os.close(fd)
                _send(sock, {"refused": why, "id": req.get("id")})
                continue
            pid = _fork(sock, fds, req.get("env") or {}, info, me)
            children.add(pid)
            _send(sock, {"forked": pid, "id": req.get("id")})
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    return 0


def _reap(sock: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, raw = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        try:
            _send(sock, {"exited": pid, "status": _status(raw)})
        except OSError:
            return


def _fork(sock: socket.socket, fds: list[int], env: dict, info: dict, template: int) -> int:
    requests, reply, log = fds
    worker.flush_std()
    with warnings.catch_warnings():     # Python 3.12 warns of fork in a process with threads: the
        warnings.simplefilter("ignore", DeprecationWarning)   # libraries' idle pools; none is used
        pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    code = 1
    try:
        sock.close()
        os.setpgid(0, 0)    # a group of its own, in the template's session, as a fresh worker has
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != template:    # the template died between the fork and the prctl
            os._exit(1)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(requests, 0)
        os.dup2(devnull, 1)
        os.dup2(log, 2)
        for fd in (requests, log, devnull):
            os.close(fd)
        sys.stdin = open(0, "r", closefd=False, encoding="utf-8")
        sys.stdout = open(1, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        os.environ.update(env)
        forked = dict(info)
        t0 = time.perf_counter()
        worker.make_context(forked)
        forked["forked"] = True
        forked["start_s"] = round(time.perf_counter() - t0, 3)
        code = worker.serve_ready(reply, forked)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        worker.flush_std()
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bisectk.run.template")
    ap.add_argument("--control-fd", type=int, required=True, help="the pool's socket")
    ap.add_argument("--preload", default="torch,cutlass")
    ns = ap.parse_args(argv)
    return serve_template(ns.control_fd, [p for p in ns.preload.split(",") if p])


if __name__ == "__main__":
    sys.exit(main())
