"""Adversarial harness (issue 22): hostile subjects and conditions users create without meaning to,
each driven through the real CLI (or the run layer), bounded, and reported as case / figure / goal.

Cases are plain functions registered with `@case(name, goal)` in the list CASES; each returns
(figure, ok). Add a case by writing one more function (fuzzers of exit 3 and odd repositories fit
the same shape). Every `bisectk` invocation goes through `cli()`, which counts exit 3 (internal
error) for the closing `exit 3` row.

    python bench/adversary.py                         # every case, ~5 min on 2 loaded cores
    python bench/adversary.py --only stale,chatty     # cases whose name contains a word
    python bench/adversary.py --big                   # the huge-output case at 500 MB (default 100 MB)
    python bench/adversary.py --code /path/to/checkout --out bench/results/adversary-base.txt

`--code DIR` runs another checkout's bisectk (e.g. the commit before issue 22) for comparison.
Exit status 0 when every goal is met.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

ROOT = Path(__file__).resolve().parents[1]
CODE = ROOT                      # whose bisectk runs (--code)
WORK: Path = Path(".")           # the scratch directory of this harness run
EXITS: list[tuple[str, int]] = []   # (command, exit code) of every bisectk invocation
OPTS = argparse.Namespace(big=False)


@dataclass
class Case:
    name: str
    goal: str
    fn: Callable[[Path], tuple[str, bool]]


CASES: list[Case] = []


def case(name: str, goal: str):
    def register(fn):
        CASES.append(Case(name, goal, fn))
        return fn
    return register


# -- plumbing ------------------------------------------------------------------------------------
def env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(CODE), "XDG_CACHE_HOME": str(WORK / "cache"),
            "TMPDIR": str(WORK / "tmp"), **extra}


def cli(*args, cwd: Path, timeout: float = 300, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd, env=env(**(extra_env or {})),
                       capture_output=True, text=True, timeout=timeout)
    EXITS.append((" ".join(map(str, args[:2])), p.returncode))
    return p


def start(*args, cwd: Path, extra_env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd, env=env(**(extra_env or {})),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def marker() -> str:
    return f"bisectk-adv-{uuid.uuid4().hex[:10]}"


def marked(m: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status", "cwd"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and (m in " ".join(p.info["cmdline"] or [])
                                                             or (p.info["cwd"] or "").startswith(m)):
                out.append(p)
        except psutil.Error:
            pass
    return out


def kill_marked(m: str) -> None:
    for p in marked(m):
        try:
            p.kill()
        except psutil.Error:
            pass


def project(d: Path, files: dict[str, str], spec: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyproject.toml").touch()
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    (d / "spec.toml").write_text(spec)
    return d


def spec_text(command: list[str], good: dict, bad: dict, subject: str = "", oracle='metric = "rel_err"\nmax = 1e-3') -> str:
    table = lambda d: "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items())  # noqa: E731
    return (f'name = "adv"\n[subject]\ncommand = {json.dumps(command)}\n{subject}\n[oracle]\n{oracle}\n'
            f"[good]\n{table(good)}\n[bad]\n{table(bad)}\n")


def result_of(p: subprocess.CompletedProcess) -> dict:
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


# -- 1. stale answers ----------------------------------------------------------------------------
TIMED = """import argparse, json, os, sys, time
ap = argparse.ArgumentParser()
for n in ("slow", "bug", "a", "b"):
    ap.add_argument("--" + n, type=int, default=0)
a = ap.parse_args()
sys.path.insert(0, os.environ.get("ADV_LIB", "/nonexistent"))
import helper, extlib
if a.slow:
    time.sleep(1.5)
err = (0.5 if a.bug else 0.0) + helper.ERR + extlib.ERR + (0.5 if os.environ.get("ADV_BREAK") == "1" else 0.0)
print("BISECTK_RESULT " + json.dumps({"rel_err": err}))
"""
TIMED_CMD = ["python", "k.py", "--slow", "{slow}", "--bug", "{bug}", "--a", "{a}", "--b", "{b}"]
TIMED_GOOD, TIMED_BAD = {"slow": 0, "bug": 0, "a": 1, "b": 1}, {"slow": 1, "bug": 1, "a": 2, "b": 2}


def timed_project(d: Path, timeout: str) -> Path:
    lib = d.parent / f"{d.name}-lib"
    lib.mkdir(parents=True, exist_ok=True)
    if not (lib / "extlib.py").exists():
        (lib / "extlib.py").write_text("ERR = 0.0\n")
    files = {"k.py": TIMED}
    if not (d / "helper.py").exists():
        files["helper.py"] = "ERR = 0.0\n"
    return project(d, files, spec_text(TIMED_CMD, TIMED_GOOD, TIMED_BAD, timeout))


@case("stale: spec timeout 1 s -> 30 s, then --timeout, env, tree module, outside module (cold and --warm)",
      "0 stale answers")
def stale(work: Path) -> tuple[str, bool]:
    stale_answers, checks = 0, []
    d = work / "stale"
    lib = {"ADV_LIB": str(work / "stale-lib")}
    timed_project(d, "timeout = 1")
    first = result_of(cli("ablate", "spec.toml", "--json", cwd=d, extra_env=lib))
    timed_project(d, "timeout = 30")
    second = result_of(cli("ablate", "spec.toml", "--json", cwd=d, extra_env=lib))
    # under 1 s the slow factor hangs; with 30 s the real culprit is `bug`, from new runs
    ok = first.get("culprits") == ["slow"] and second.get("culprits") == ["bug"] and second.get("runs", 0) > 0
    stale_answers += not ok
    checks.append(f"timeout: {first.get('culprits')} -> {second.get('culprits')} ({second.get('runs')} executed)")

    def check(what: str, after_env: dict, edit=None) -> None:
        """The good configuration passes; after the change the same command must be a new run."""
        nonlocal stale_answers
        cli("run", "spec.toml", "--json", cwd=d, extra_env=lib)
        if edit:
            edit()
        doc = result_of(cli("run", "spec.toml", "--json", cwd=d, extra_env={**lib, **after_env}))
        fresh = doc.get("outcome") == "fail" and not doc.get("cached")
        stale_answers += not fresh
        checks.append(f"{what}: {'new run' if fresh else 'STALE'}")

    cli("run", "spec.toml", "--json", "--timeout", "1", "--config", "bad", cwd=d, extra_env=lib)
    p = result_of(cli("run", "spec.toml", "--json", "--timeout", "20", "--config", "bad", cwd=d, extra_env=lib))
    opt_ok = p.get("kind") == "wrong"        # not the hang stored under 1 s
    stale_answers += not opt_ok
    checks.append(f"--timeout 1 -> 20: {'new run' if opt_ok else 'STALE'}")
    check("env", {"ADV_BREAK": "1"})
    check("tree module", {}, edit=lambda: (d / "helper.py").write_text("ERR = 0.25\n"))
    (d / "helper.py").write_text("ERR = 0.0\n")
    check("outside module", {}, edit=lambda: (work / "stale-lib" / "extlib.py").write_text("ERR = 0.25\n"))
    (work / "stale-lib" / "extlib.py").write_text("ERR = 0.0\n")
    # --warm: the worker records what the run imported
    dw = work / "stale-warm"
    timed_project(dw, "timeout = 30")
    libw = {"ADV_LIB": str(work / "stale-warm-lib")}
    a = result_of(cli("ablate", "spec.toml", "--json", "--warm", cwd=dw, extra_env=libw))
    (work / "stale-warm-lib" / "extlib.py").write_text("ERR = 0.25\n")   # now the good side fails too
    b = result_of(cli("ablate", "spec.toml", "--json", "--warm", cwd=dw, extra_env=libw))
    warm_ok = a.get("culprits") == ["bug"] and b.get("endpoints", {}).get("good", {}).get("outcome") == "fail"
    stale_answers += not warm_ok
    checks.append(f"--warm outside module: {'new runs' if warm_ok else 'STALE'}")
    # and nothing changed: everything answered from the ledger, said as such
    again = cli("ablate", "spec.toml", cwd=d, extra_env=lib)
    reused = "answered from the ledger (same command, timeout, environment, tree content" in again.stdout
    return f"{stale_answers} stale of {len(checks)} changes ({'; '.join(checks)}); unchanged rerun reused: {reused}", \
        stale_answers == 0 and reused


# -- 2. warm leaks -------------------------------------------------------------------------------
PROBE = """import decimal, json, os, signal, socket, threading, warnings
import numpy as np, torch
print("BISECTK_RESULT " + json.dumps({
    "dtype": str(torch.get_default_dtype()), "grad": torch.is_grad_enabled(),
    "deterministic": torch.are_deterministic_algorithms_enabled(), "threads": torch.get_num_threads(),
    "device": str(torch.get_default_device()), "seeded": torch.initial_seed() == 1234,
    "anomaly": torch.is_anomaly_enabled(), "matmul": torch.get_float32_matmul_precision(),
    "np_err": np.geterr(), "np_precision": np.get_printoptions()["precision"],
    "decimal": [decimal.getcontext().prec, decimal.getcontext().rounding], "socket": socket.getdefaulttimeout(),
    "sigusr1": str(signal.getsignal(signal.SIGUSR1)), "sigterm": str(signal.getsignal(signal.SIGTERM)),
    "warnings": [list(map(str, f[:1])) for f in warnings.filters[:3]], "json_dumps": json.dumps.__module__,
    "math_pi": __import__("math").pi, "env": os.environ.get("LEAKED_VAR"), "umask": oct(os.umask(0o022)),
    "recursion": __import__("sys").getrecursionlimit(), "threads_alive": threading.active_count(),
}))
"""
STATE_KINDS = [
    ("torch default dtype", "import torch; torch.set_default_dtype(torch.float64)"),
    ("torch grad mode", "import torch; torch.set_grad_enabled(False)"),
    ("torch deterministic", "import torch; torch.use_deterministic_algorithms(True)"),
    ("torch num_threads", "import torch; torch.set_num_threads(torch.get_num_threads() + 1)"),
    ("torch default device", "import torch; torch.set_default_device('meta')"),
    ("torch anomaly", "import torch; torch.set_anomaly_enabled(True)"),
    ("torch matmul precision", "import torch; torch.set_float32_matmul_precision('medium')"),
    ("torch RNG seed", "import torch; torch.manual_seed(1234)"),
    ("numpy seterr", "import numpy as np; np.seterr(all='raise')"),
    ("numpy printoptions", "import numpy as np; np.set_printoptions(precision=2)"),
    ("decimal precision", "import decimal; decimal.getcontext().prec = 5"),
    ("socket timeout", "import socket; socket.setdefaulttimeout(0.5)"),
    ("signal handler", "import signal; signal.signal(signal.SIGUSR1, lambda *a: None)"),
    ("SIGTERM ignored", "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)"),
    ("warnings filter", "import warnings; warnings.simplefilter('error')"),
    ("module attribute", "import json; json.dumps = lambda *a, **k: 'patched'"),
    ("math.pi rebound", "import math; math.pi = 3.0"),
    ("os.environ", "import os; os.environ['LEAKED_VAR'] = '1'"),
    ("cwd", "import os; os.chdir('/')"),
    ("umask", "import os; os.umask(0o077)"),
    ("recursion limit", "import sys; sys.setrecursionlimit(123)"),
    ("thread left running", "import threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start()"),
]


@case(f"warm leaks: {len(STATE_KINDS)} kinds of interpreter state changed by one run, probed by the next "
      "in the same worker", "0 leaks")
def warm_leaks(work: Path) -> tuple[str, bool]:
    sys.path.insert(0, str(CODE))
    from bisectk.run.executor import run_command
    from bisectk.run.pool import WorkerPool
    from bisectk.run.process import run_process
    d = work / "leaks"
    d.mkdir()
    (d / "probe.py").write_text(PROBE)
    fresh = run_process([sys.executable, "probe.py"], cwd=d, timeout=120)
    want = [ln for ln in fresh.stdout.splitlines() if ln.startswith("BISECTK_RESULT")][-1]
    leaks, restored, retired, quiet, names = 0, 0, 0, 0, []
    pool = None
    try:
        for kind, code in STATE_KINDS:
            if pool is None:   # a pool a kind broke or dirtied is not reused
                pool = WorkerPool(gpus=None, preload=("torch",), spares=1, ready_timeout=120)
            (d / "dirty.py").write_text(code + "\nprint('BISECTK_RESULT {}')\n")
            discards = pool.stats["worker_discards"]
            try:
                dirty = run_command(pool, [sys.executable, "dirty.py"], cwd=d, timeout=120)
                probe = run_command(pool, [sys.executable, "probe.py"], cwd=d, timeout=120)
            except Exception as exc:   # the pool itself broke (a patched json in the worker's replies)
                leaks += 1
                names.append(f"{kind} (the pool raised {type(exc).__name__})")
                pool.close()
                pool = None
                continue
            got = [ln for ln in probe.stdout.splitlines() if ln.startswith("BISECTK_RESULT")]
            try:
                same = bool(got) and json.loads(got[-1][15:]) == json.loads(want[15:])
            except ValueError:   # the probe's own json.dumps was patched: a leak
                same = False
            leaks += not same
            if not same:   # the next kind starts from a clean pool: each kind is counted on its own
                names.append(kind)
                pool.close()
                pool = None
            elif pool.stats["worker_discards"] > discards:
                retired += 1
            elif getattr(dirty, "isolation", ""):
                restored += 1
            else:
                quiet += 1
    finally:
        if pool is not None:
            pool.close()
    return (f"{leaks} leaked of {len(STATE_KINDS)} ({restored} noticed and put back, {retired} retired the worker, "
            f"{quiet} clean without a note)"
            + (f"; leaked: {', '.join(names)}" if names else ""), leaks == 0)


DTYPE_KERNEL = """import argparse, json
import torch
ap = argparse.ArgumentParser()
for name in ("ref64", "bug", "tiles", "stages"):
    ap.add_argument(f"--{name}", type=int, default=0)
a = ap.parse_args()
x = torch.arange(64.0)
if x.dtype != torch.float32:
    print("BISECTK_RESULT " + json.dumps({"rel_err": 1.0, "ok": False, "error": f"input is {x.dtype}"}))
    raise SystemExit(0)
out = x * 2 + (1 if a.bug else 0)
if a.ref64:
    torch.set_default_dtype(torch.float64)
ref = torch.arange(64.0) * 2
print("BISECTK_RESULT " + json.dumps({"rel_err": float((out.double() - ref.double()).abs().max() / 126)}))
"""


@case("dtype leak end to end: ablate --warm vs cold, one factor sets torch's default dtype, another is the bug",
      "warm names the cold culprit")
def dtype_ablate(work: Path) -> tuple[str, bool]:
    d = project(work / "dtype", {"kernel.py": DTYPE_KERNEL}, spec_text(
        ["python", "kernel.py", "--ref64", "{ref64}", "--bug", "{bug}", "--tiles", "{tiles}", "--stages", "{stages}"],
        {"ref64": 0, "bug": 0, "tiles": 4, "stages": 2}, {"ref64": 1, "bug": 1, "tiles": 8, "stages": 3}))
    got = {}
    for mode in ("cold", "warm"):
        p = cli("ablate", "spec.toml", "--json", "--fresh", *(["--warm"] if mode == "warm" else []), cwd=d)
        got[mode] = result_of(p).get("culprits")
    return f"cold {got['cold']}, warm {got['warm']}", got["cold"] == got["warm"] == ["bug"]


# -- 3. chatty hangs -----------------------------------------------------------------------------
@case("chatty hang: a hung kernel printing 'waiting for barrier i' every 0.2 s (JIT-shaped, progress followed)",
      "called within the silent hang's time + 0.5 s")
def chatty(work: Path) -> tuple[str, bool]:
    sys.path.insert(0, str(CODE))
    from bisectk.run.process import run_process
    from bisectk.run.progress import FixedWatch, ProgressWatch, Timeline
    jit = [sys.executable, str(ROOT / "tests" / "fixtures" / "jit.py"), "--startup", "0.3"]
    good = run_process(jit, watch=FixedWatch(60))
    tl = Timeline.from_list(good.timeline)
    silent = run_process([*jit, "--hang", "1"], timeout=60, watch=ProgressWatch(tl, 5 * good.duration_s, 1.0))
    t = time.monotonic()
    chatty_run = run_process([*jit, "--hang", "1", "--chatty", "1"], timeout=60,
                             watch=ProgressWatch(tl, 5 * good.duration_s, 1.0))
    took = time.monotonic() - t
    called = chatty_run.timed_out
    return (f"chatty called a hang: {called} after {took:.2f} s (silent hang {silent.duration_s:.2f} s, good run "
            f"{good.duration_s:.2f} s)", called and took <= silent.duration_s + 0.5)


# -- 4. output that buries the result ------------------------------------------------------------
@case("output: result line before 1 MB of teardown, a 1 MB result line, and a subject printing 100 MB "
      "(500 MB with --big) through ablate", "result found; log on disk <= 8 MiB per stream")
def output(work: Path) -> tuple[str, bool]:
    mb = 500 if OPTS.big else 100
    kernel = f"""import argparse, json, sys
ap = argparse.ArgumentParser()
ap.add_argument("--verbose", type=int)
ap.add_argument("--bug", type=int)
ap.add_argument("--wide", type=int)
a = ap.parse_args()
out = sys.stdout.buffer
print("BISECTK_RESULT " + json.dumps({{"rel_err": 0.5 if a.bug else 0.0, "samples": list(range(150000)) if a.wide else []}}), flush=True)
line = b"teardown: freeing buffer at 0x7f00deadbeef, still talking " * 2 + b"\\n"
n = ({mb} << 20) // len(line) if a.verbose else (1 << 20) // len(line)
for _ in range(n // 1000):
    out.write(line * 1000)
out.flush()
"""
    d = project(work / "output", {"k.py": kernel}, spec_text(
        ["python", "k.py", "--verbose", "{verbose}", "--bug", "{bug}", "--wide", "{wide}"],
        {"verbose": 0, "bug": 0, "wide": 0}, {"verbose": 1, "bug": 1, "wide": 1},
        "timeout = 300   # this case is about the output; the watchdog has its own case"))
    t = time.monotonic()
    p = cli("ablate", "spec.toml", "--json", cwd=d, timeout=1200)
    took = time.monotonic() - t
    doc = result_of(p)
    logs = list((d / ".bisectk" / "logs").rglob("stdout.log"))
    biggest = max((f.stat().st_size for f in logs), default=0)
    total = sum(f.stat().st_size for f in (d / ".bisectk").rglob("*") if f.is_file())
    ok = doc.get("culprits") == ["bug"] and biggest <= (8 << 20) + 4096
    return (f"culprits {doc.get('culprits')}; {len(logs)} logs, largest {biggest / 2**20:.1f} MiB, "
            f"all beside the ledger {total / 2**20:.1f} MiB; {took:.0f} s"), ok


# -- 5. containment ------------------------------------------------------------------------------
HOSTILE = """import argparse, json, os, signal, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--mode")
ap.add_argument("--marker")
a = ap.parse_args()
if a.mode == "ok":
    print("BISECTK_RESULT " + json.dumps({"rel_err": 0}))
    sys.exit(0)
if a.mode == "hang":
    open("hanging", "w").close()
    time.sleep(300)
if os.fork() == 0:            # a daemon holding our pipes, outliving everything
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", a.marker])
    os._exit(0)
time.sleep(0.2)
os.kill(os.getppid(), signal.SIGKILL if a.mode == "killsup" else signal.SIGSTOP)
time.sleep(0.5)
print("BISECTK_RESULT " + json.dumps({"rel_err": 1}))
time.sleep(300)
"""


def hostile_project(d: Path, bad: str, m: str) -> Path:
    return project(d, {"subject.py": HOSTILE}, spec_text(
        ["python", "subject.py", "--mode", "{mode}", "--marker", "{marker}"],
        {"mode": "ok", "marker": m}, {"mode": bad, "marker": m}, "timeout = 20"))


@case("supervisor killed (SIGKILL) or stopped (SIGSTOP) by its subject, with a daemon holding the pipes; "
      "cold `run` and `ablate --warm`", "UNRESOLVED infra, returns (cold < 10 s, warm with its worker's start "
      "< 60 s), 0 leftovers")
def supervisor(work: Path) -> tuple[str, bool]:
    rows, ok = [], True
    for bad in ("killsup", "stopsup"):
        for warm in (False, True):
            m = marker()
            d = hostile_project(work / f"sup-{bad}-{warm}", bad, m)
            t = time.monotonic()
            try:
                if warm:
                    p = cli("ablate", "spec.toml", "--json", "--warm", cwd=d, timeout=120)
                    doc = result_of(p).get("endpoints", {}).get("bad", {})
                else:
                    p = cli("run", "spec.toml", "--config", "bad", "--json", cwd=d, timeout=120)
                    doc = result_of(p)
                took = time.monotonic() - t
            except subprocess.TimeoutExpired:
                took, doc, p = 120.0, {}, None
            time.sleep(0.5)
            left = len(marked(m)) + len([q for q in marked(str(d)) if "bisectk.run.worker" in " ".join(q.cmdline())])
            kill_marked(m)
            kill_marked(str(d))
            unresolved = doc.get("outcome") == "unresolved" and doc.get("reason") == "infra"
            good = unresolved and took < (60 if warm else 10) and left == 0 and p is not None and p.returncode != 0
            ok &= good
            rows.append(f"{bad}{' --warm' if warm else ''}: {doc.get('outcome')}/{doc.get('reason')} "
                        f"exit {p.returncode if p else 'timeout'} in {took:.1f} s, {left} left")
    return "; ".join(rows), ok


@case("Ctrl-C while a subject that ignores SIGTERM hangs: cold `ablate` and `ablate --warm`", "exit 130 within 1 s, 0 leftovers")
def ctrl_c(work: Path) -> tuple[str, bool]:
    rows, ok = [], True
    for warm in (False, True):
        m = marker()
        d = hostile_project(work / f"ctrlc-{warm}", "hang", m)
        (d / "subject.py").write_text(HOSTILE.replace("if a.mode == \"hang\":\n",
                                                      "if a.mode == \"hang\":\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"))
        proc = start("ablate", "spec.toml", *(["--warm"] if warm else []), cwd=d)
        deadline = time.monotonic() + 120
        while not (d / "hanging").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        took = time.monotonic() - t
        EXITS.append(("ablate (Ctrl-C)", proc.returncode))
        time.sleep(0.5)
        left = len([q for q in marked(str(d))])
        kill_marked(str(d))
        good = proc.returncode == 130 and took < 1.0 and left == 0
        ok &= good
        rows.append(f"{'--warm' if warm else 'cold'}: exit {proc.returncode} after {took:.2f} s, {left} left")
    return "; ".join(rows), ok


# -- 6. SIGKILL of every command -----------------------------------------------------------------
KILL_SUBJECT = """import json, os, subprocess, sys, time
m = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", m], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", m])
    os._exit(0)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.3)
print("BISECTK_RESULT " + json.dumps({"rel_err": 0.5 if os.environ.get("ADV_BAD") == "1" or "BUG = True" in open(__file__).read() else 0.0}))
"""


def _kill_targets(work: Path, m: str) -> list[tuple[str, list, Path]]:
    base = work / "kill"
    spec = spec_text(["python", "k.py", m, "{sleep}"], {"sleep": 0.3}, {"sleep": 2.0})
    p = project(base / "proj", {"k.py": KILL_SUBJECT}, spec)
    good, bad = base / "good", base / "bad"
    for side, text in ((good, KILL_SUBJECT), (bad, KILL_SUBJECT + "BUG = True\n")):
        project(side, {"k.py": text, "data.txt": "x" * 4096}, "")
    (base / "diffspec.toml").write_text(spec_text(["python", "k.py", m, "1.0"], {}, {}))
    repo = base / "repo"
    if not repo.exists():
        repo.mkdir()
        g = ["git", "-c", "user.name=a", "-c", "user.email=a@a", "-c", "commit.gpgsign=false"]
        subprocess.run([*g, "init", "-q"], cwd=repo, check=True)
        for i in range(6):
            (repo / "k.py").write_text(KILL_SUBJECT + ("BUG = True\n" if i >= 3 else "") + f"# rev {i}\n")
            subprocess.run([*g, "add", "-A"], cwd=repo, check=True)
            subprocess.run([*g, "commit", "-qm", f"rev {i}"], cwd=repo, check=True)
    shas = subprocess.run(["git", "rev-list", "--reverse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.split()
    run_cmd = f"python k.py {m} 1.0"
    return [
        ("run", ["run", "spec.toml", "--config", "bad"], p),
        ("check", ["check", "spec.toml"], p),
        ("ablate", ["ablate", "spec.toml", "--fresh"], p),
        ("ablate --warm", ["ablate", "spec.toml", "--fresh", "--warm"], p),
        ("diff", ["diff", good, bad, base / "diffspec.toml", "--fresh"], base),
        ("diff --warm", ["diff", good, bad, base / "diffspec.toml", "--fresh", "--warm"], base),
        ("bisect", ["bisect", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run", run_cmd, "--fresh"], base),
        ("triage", ["triage", "--repo", repo, "--good", shas[0], "--bad", shas[-1], "--run", run_cmd, "--fresh"], base),
    ]


@case("SIGKILL of every command (run, check, ablate, ablate --warm, diff, diff --warm, bisect, triage) at "
      "3 points each, subjects with daemons; then one more start", "0 leftover processes, 0 leftover scratch trees")
def sigkill(work: Path) -> tuple[str, bool]:
    m = marker()
    targets = _kill_targets(work, m)
    kills, rows = 0, []
    for name, args, cwd in targets:
        for delay in (0.8, 2.0, 4.0):
            proc = start(*args, cwd=cwd)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
    time.sleep(2.0)   # supervisors see EOF and end their trees
    procs_left = len(marked(m)) + len([q for q in marked(str(work / "kill")) if "bisectk" in " ".join(q.cmdline())])
    # the next start of any command removes what the killed ones left (registered scratch trees)
    cli("run", "spec.toml", "--config", "good", cwd=work / "kill" / "proj")
    scratch = [p for p in (work / "cache" / "bisectk").glob("scratch-*")] + list((work / "tmp").glob("bisectk-triage-*"))
    scratch += [p for p in (work / "kill" / "repo" / ".git" / "bisectk").glob("triage-*")] \
        if (work / "kill" / "repo" / ".git" / "bisectk").exists() else []
    kill_marked(m)
    rows.append(f"{kills} kills: {procs_left} processes left, {len(scratch)} scratch trees left after the next start")
    return "; ".join(rows), procs_left == 0 and not scratch


# -- 7. exit 3 over everything above -------------------------------------------------------------
@case("internal errors over every bisectk invocation of this harness", "0 exit 3")
def exit3(work: Path) -> tuple[str, bool]:
    threes = [c for c, code in EXITS if code == 3]
    return f"{len(threes)} exit 3 of {len(EXITS)} invocations" + (f" ({', '.join(threes[:5])})" if threes else ""), \
        not threes


def main(argv: list[str] | None = None) -> int:
    global CODE, WORK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated words; run the cases whose name contains one")
    ap.add_argument("--big", action="store_true", help="the huge-output case at 500 MB")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose bisectk runs")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "adversary.txt")
    ns = ap.parse_args(argv)
    OPTS.big = ns.big
    CODE = ns.code.resolve()
    words = [w for w in ns.only.split(",") if w]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bisectk-adversary-") as tmp:
        WORK = Path(tmp)
        (WORK / "tmp").mkdir()
        os.chdir(WORK)   # no checkout of bisectk in the cwd: what runs is CODE's
        for c in CASES:
            if words and not any(w in c.name for w in words) and c.fn is not exit3:
                continue
            t = time.monotonic()
            try:
                figure, ok = c.fn(WORK)
            except Exception as exc:   # a case that breaks is a failed goal, with its reason
                figure, ok = f"harness error: {type(exc).__name__}: {exc}"[:300], False
            rows.append((c.name, figure, c.goal, ok, time.monotonic() - t))
            print(f"[{'met' if ok else 'MISSED'}] {c.name}: {figure} ({time.monotonic() - t:.0f} s)", flush=True)
    head = (f"# bench/adversary.py on {platform.node()} ({os.cpu_count()} cores), python {platform.python_version()}, "
            f"code {CODE}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    table = ["| case | figure | goal | met |", "|---|---|---|---|"]
    table += [f"| {n} | {f} | {g} | {'yes' if ok else 'NO'} |" for n, f, g, ok, _ in rows]
    text = head + "\n".join(table) + "\n"
    print("\n" + text)
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(text)
    return 0 if all(ok for *_, ok, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
