"""Warm workers as good as fresh processes (issue 22, item 2): a run that changes interpreter state
leaves the next run in the same worker exactly where a fresh process would start; what cannot be put
back retires the worker; a worker that is not fresh refuses to run.

One kind of state per test: a run changes it, then a probe run in the same worker must print what
the probe prints in a fresh process."""

from __future__ import annotations

import contextvars
import json
import os
import sys
from pathlib import Path

import pytest

from bisectk.run.executor import run_command
from bisectk.run.pool import WorkerPool
from bisectk.run.process import run_process

pytest.importorskip("torch")
np = pytest.importorskip("numpy")


def _context_local(change, read) -> bool:
    """Whether numpy keeps this state in a ContextVar (numpy 2): a run changes it in its own context
    (run/worker.py), which goes with the run, so there is nothing to put back or say."""
    before = read()
    contextvars.copy_context().run(change)
    return read() == before


NP_ERR = None if _context_local(lambda: np.seterr(all="raise"), np.geterr) else True
NP_PRINT = None if _context_local(lambda: np.set_printoptions(precision=2), np.get_printoptions) else True

PROBE = """
import decimal, gc, json, logging, os, signal, socket, subprocess, sys, threading, warnings
import numpy as np
import torch
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import asyncio
    try:   # a fresh process makes a loop here; after an asyncio.run() it has none to give
        aio = [type(asyncio.get_event_loop_policy()).__name__, asyncio.get_event_loop().is_closed()]
    except RuntimeError as exc:
        aio = str(exc)
print("BISECTK_RESULT " + json.dumps({
    "dtype": str(torch.get_default_dtype()), "grad": torch.is_grad_enabled(),
    "subnormal": float((torch.tensor([1e-40]) * 1.0)[0]),
    "sdpa": [float(torch.nn.functional.scaled_dot_product_attention(*[torch.ones(1, 1, 2, 4)] * 3).sum())],
    "deterministic": torch.are_deterministic_algorithms_enabled(), "threads": torch.get_num_threads(),
    "device": str(torch.get_default_device()), "seed_1234": torch.initial_seed() == 1234,
    "anomaly": torch.is_anomaly_enabled(), "matmul": torch.get_float32_matmul_precision(),
    "fp32": [getattr(b, "fp32_precision", None) for b in (torch.backends, torch.backends.mkldnn.matmul,
                                                        torch.backends.cuda.matmul, torch.backends.cudnn.conv)],
    "autocast": [str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype), str(torch.get_autocast_dtype("cuda"))],
    "warn_always": torch.is_warn_always_enabled(), "fill": torch.utils.deterministic.fill_uninitialized_memory,
    "qengine": torch.backends.quantized.engine, "fuser": torch._C._jit_texpr_fuser_enabled(),
    "sparse_checks": torch.sparse.check_sparse_tensor_invariants.is_enabled(),
    "saved_hooks": [torch._C._autograd._top_saved_tensors_default_hooks(False) is None,
                    torch._C._autograd._saved_tensors_hooks_is_enabled()],
    "dual_level": torch.autograd.forward_ad._current_level,
    "tracemalloc": __import__("tracemalloc").is_tracing(), "gc_debug": [gc.get_debug(), len(gc.garbage)],
    "coroutine_origin": sys.get_coroutine_origin_tracking_depth(), "stack_size": threading.stack_size(),
    "sched": os.sched_getscheduler(0), "ionice": list(__import__("psutil").Process().ionice()),
    "asyncgen_hooks": [h is None for h in sys.get_asyncgen_hooks()],
    "cublas": [getattr(torch.backends.cuda.matmul, f, None) for f in (
        "allow_fp16_reduced_precision_reduction", "allow_fp16_reduced_precision_reduction_split_k",
        "allow_bf16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction_split_k",
        "allow_fp16_accumulation")],
    "np_err": np.geterr(), "np_precision": np.get_printoptions()["precision"],
    "decimal": [decimal.getcontext().prec, decimal.getcontext().rounding],
    "socket": socket.getdefaulttimeout(), "sigusr1": str(signal.getsignal(signal.SIGUSR1)),
    "sigterm": str(signal.getsignal(signal.SIGTERM)),
    "warnings": [list(map(str, f[:1])) for f in warnings.filters[:3]],
    "json_dumps": json.dumps.__module__, "env": os.environ.get("LEAKED_VAR"),
    "environ": [type(os.environ).__name__, os.environ is not os.environb and type(os.environb).__name__],
    "threads_alive": threading.active_count(), "umask": oct(os.umask(0o022)),
    "affinity": sorted(os.sched_getaffinity(0)), "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "log": [len(logging.root.handlers), logging.root.level, logging.root.manager.disable],
    "child_env": subprocess.run(["sh", "-c", "echo ${LEAKED_C_VAR:-unset}"], capture_output=True,
                                text=True).stdout.strip(),
    "asyncio": aio, "thread_hooks": [threading._trace_hook is None, threading._profile_hook is None],
    "gc_callbacks": len(gc.callbacks), "dlopenflags": sys.getdlopenflags(),
    "wakeup_fd": signal.set_wakeup_fd(-1),
    "timers": [signal.getitimer(t) != (0.0, 0.0) for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL,
                                                             signal.ITIMER_PROF)],
}))
"""

# one kind of state each: (name, what the run does, can it be put back (None: silently))
DIRTY = [
    ("torch default dtype", "import torch; torch.set_default_dtype(torch.float64)", True),
    ("torch grad mode", "import torch; torch.set_grad_enabled(False)", True),
    ("torch deterministic algorithms", "import torch; torch.use_deterministic_algorithms(True)", True),
    ("torch num_threads", "import torch; torch.set_num_threads(torch.get_num_threads() + 1)", True),
    ("torch default device", "import torch; torch.set_default_device('meta')", True),
    ("torch anomaly detection", "import torch; torch.set_anomaly_enabled(True)", True),
    ("torch float32 matmul precision", "import torch; torch.set_float32_matmul_precision('medium')", True),
    # no getter: a float32 1e-40 times 1 read 0.0 in every later warm run, and good failed 9/10
    ("torch flush denormal", "import torch; torch.set_flush_denormal(True)", True),
    # SDPA's backends: with math and flash off, every later warm run's attention raised 'No viable backend'
    ("torch attention backends", "import torch; torch.backends.cuda.enable_math_sdp(False); "
                                 "torch.backends.cuda.enable_flash_sdp(False); "
                                 "torch.backends.mha.set_fastpath_enabled(False)",
     True),
    # torch 2.9's precision API: the root's 'tf32' stayed for every later warm run's convolutions
    ("torch fp32_precision", "import torch; torch.backends.fp32_precision = 'tf32'; "
                             "torch.backends.mkldnn.matmul.fp32_precision = 'bf16'", True),
    # an autocast region entered and never left: every later warm run's float32 matmul gave bfloat16
    ("torch autocast", "import torch; torch.autocast('cpu', dtype=torch.bfloat16).__enter__(); "
                       "torch.set_autocast_dtype('cuda', torch.bfloat16)", True),
    # torch's flags no probe read: each stayed for every later warm run, and nothing was said
    ("torch warn always", "import torch; torch.set_warn_always(True)", True),
    ("torch fill uninitialized memory", "import torch; torch.utils.deterministic.fill_uninitialized_memory = "
                                        "not torch.utils.deterministic.fill_uninitialized_memory", True),
    ("torch quantized engine", "import torch; e = torch.backends.quantized.supported_engines; "
                               "torch.backends.quantized.engine = [x for x in e if x != torch.backends.quantized.engine][-1]",
     True),
    ("torch sparse invariant checks", "import torch; torch.sparse.check_sparse_tensor_invariants.enable()", True),
    ("torch texpr fuser", "import torch; torch._C._jit_set_texpr_fuser_enabled(not torch._C._jit_texpr_fuser_enabled())",
     True),
    # autograd regions left entered: every later run's backward packed its saved tensors through the
    # run's functions (or raised: hooks disabled), and its make_dual was of the run's level
    ("torch saved-tensor hooks", "import torch; torch.autograd.graph.saved_tensors_hooks(lambda t: t, "
                                 "lambda t: t).__enter__(); torch.autograd.graph.save_on_cpu().__enter__()", True),
    # a generator context: kept alive (closed, it enables them again)
    ("torch saved-tensor hooks disabled", "import torch, warnings; warnings._bisectk_keep = "
                                          "torch.autograd.graph.disable_saved_tensors_hooks('no'); "
                                          "warnings._bisectk_keep.__enter__()", True),
    # cuBLAS's reduced-precision matmul flags (torch.backends.cuda.matmul is an object, not a module:
    # their probes waited for a module of that name, never read them, and the flags stayed set)
    ("torch cuBLAS reduced-precision flags", "import torch; m = torch.backends.cuda.matmul; "
                                             "m.allow_fp16_reduced_precision_reduction = (False, False); "
                                             "m.allow_bf16_reduced_precision_reduction = False; "
                                             "m.allow_fp16_accumulation = True", True),
    ("torch forward AD level", "import torch; torch.autograd.forward_ad.dual_level().__enter__()", True),
    # random streams are put back without a word (every run draws from them): only the probe tells
    ("torch's CPU random state", "import torch; torch.manual_seed(1234); torch.rand(5)", None),
    ("numpy error handling", "import numpy as np; np.seterr(all='raise')", NP_ERR),
    ("numpy print options", "import numpy as np; np.set_printoptions(precision=2)", NP_PRINT),
    ("the decimal context", "import decimal; decimal.getcontext().prec = 5; "
                            "decimal.getcontext().rounding = decimal.ROUND_DOWN", True),
    ("the socket default timeout", "import socket; socket.setdefaulttimeout(0.5)", True),
    ("the CPU affinity", "import os; os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:1]))", True),
    # a lower nice value needs privileges: without them the worker cannot be put back, and retires
    ("the scheduling priority", "import os; os.nice(1)", os.geteuid() == 0),
    ("the root logger", "import logging; logging.basicConfig(level=logging.DEBUG); logging.disable(logging.INFO)",
     True),
    ("signal handlers", "import signal; signal.signal(signal.SIGUSR1, lambda *a: None); "
                        "signal.signal(signal.SIGTERM, signal.SIG_IGN)", True),
    ("warnings filters", "import warnings; warnings.simplefilter('error')", True),
    ("json.dumps rebound", "import json; json.dumps = lambda *a, **k: 'patched'", True),
    ("the environment", "import os; os.environ['LEAKED_VAR'] = '1'", True),
    # one the worker was not started with (0o077 was the CI shell's own under `umask 077`: no change to see)
    ("the umask", "import os; os.umask(os.umask(0) ^ 0o070)", True),
    ("os.environ replaced", "import os; os.environ = dict(os.environ); os.environb = {}", True),
    # the C environment a child process inherits, set without os.environ knowing
    ("the environment by os.putenv", "import os; os.putenv('LEAKED_C_VAR', '1')", True),
    # CPU-time timers: left pending, SIGVTALRM/SIGPROF would end a later run in the worker
    ("a pending CPU-time timer", "import signal; signal.setitimer(signal.ITIMER_VIRTUAL, 100); "
                                 "signal.setitimer(signal.ITIMER_PROF, 100)", True),
    # asyncio's event loop policy: its current loop, closed, or none after asyncio.run(); a policy
    # of the run's own. Put back without a word: every asyncio run changes it
    ("the asyncio event loop", "import asyncio\nasync def main(): pass\nasyncio.run(main())", None),
    ("a closed asyncio event loop", "import asyncio\nloop = asyncio.new_event_loop()\n"
                                    "asyncio.set_event_loop(loop)\nloop.close()", None),
    ("an asyncio event loop policy", "import asyncio\nclass Policy(asyncio.DefaultEventLoopPolicy): pass\n"
                                     "asyncio.set_event_loop_policy(Policy())", None),
    # what every thread started later is traced or profiled with (a coverage tool's, a profiler's)
    ("threading.settrace and setprofile", "import threading; threading.settrace(lambda *a: None); "
                                          "threading.setprofile(lambda *a: None)", True),
    # state with no probe before stop 55: each stayed set for every later run of the worker
    ("gc.callbacks", "import gc; gc.callbacks.append(lambda phase, info: None)", True),
    ("sys.setdlopenflags", "import os, sys; sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)", True),
    ("signal.set_wakeup_fd", "import os, signal; r, w = os.pipe(); os.set_blocking(w, False); "
                             "signal.set_wakeup_fd(w)", True),
    # interpreter switches no probe read: each stayed for every later run of the worker (tracemalloc
    # made a later run 8x slower, a SLOW or a hang where a fresh process is neither)
    ("tracemalloc", "import tracemalloc; tracemalloc.start(25)", True),
    ("gc debug flags", "import gc; gc.set_debug(gc.DEBUG_SAVEALL); a = []; a.append(a); del a; gc.collect()", True),
    ("coroutine origin tracking", "import sys; sys.set_coroutine_origin_tracking_depth(5)", True),
    ("asyncgen hooks", "import sys; sys.set_asyncgen_hooks(firstiter=lambda g: None, finalizer=lambda g: None)", True),
    # every later run's threads made with 64 KiB stacks: a recursion in one a SIGSEGV
    ("threading.stack_size", "import threading; threading.stack_size(64 * 1024)", True),
    # SCHED_IDLE, the idle I/O class: every later run of the worker given a CPU or the disk only when
    # nothing else wants it (on a loaded machine a hang or a SLOW where a fresh process is neither)
    ("the scheduling policy", "import os; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))", True),
    ("the I/O priority", "import psutil; psutil.Process().ionice(psutil.IOPRIO_CLASS_IDLE)", True),
    ("a thread left running", "import threading, time; threading.Thread(target=time.sleep, args=(30,), "
                               "daemon=True).start()", False),
]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("probe")
    (d / "probe.py").write_text(PROBE)
    raw = run_process([sys.executable, str(d / "probe.py")], timeout=120)
    assert raw.exit_code == 0, raw.stderr
    return result(raw)


def result(raw) -> dict:
    line = [ln for ln in raw.stdout.splitlines() if ln.startswith("BISECTK_RESULT")][-1]
    return json.loads(line.split(" ", 1)[1])


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(gpus=None, preload=("torch",), spares=1, ready_timeout=120) as p:
        yield p


def run(pool, d: Path, name: str, code: str):
    (d / name).write_text(code + "\nprint('BISECTK_RESULT {}')\n")
    return run_command(pool, [sys.executable, name], cwd=d, timeout=120)


@pytest.mark.parametrize("kind, code, restorable", DIRTY, ids=[d[0] for d in DIRTY])
def test_a_run_that_changes_state_leaves_the_next_run_a_fresh_start(pool, fresh, tmp_path, kind, code, restorable):
    (tmp_path / "probe.py").write_text(PROBE)
    before = dict(pool.stats)
    dirty = run(pool, tmp_path, "dirty.py", code)
    assert dirty.exit_code == 0, dirty.stderr
    probe = run_command(pool, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
    assert probe.exit_code == 0, probe.stderr
    state = result(probe)
    assert state == fresh, {k: (state[k], fresh[k]) for k in state if state[k] != fresh[k]}
    assert pool.stats["cold_runs"] == 0   # both ran warm
    assert bool(dirty.isolation) == (restorable is not None), dirty.isolation
    if restorable is None:
        assert pool.stats["worker_discards"] == before["worker_discards"]
    elif restorable:
        assert "put back" in dirty.isolation and pool.stats["worker_discards"] == before["worker_discards"]
    else:
        assert "cannot be put back" in dirty.isolation
        assert pool.stats["worker_discards"] == before["worker_discards"] + 1   # retired


def test_an_ordinary_torch_run_changes_nothing_and_keeps_its_worker(pool, fresh, tmp_path):
    before = pool.stats["worker_discards"]
    ok = run(pool, tmp_path, "ordinary.py", "import torch, numpy\nx = torch.randn(64, 64)\n"
                                           "print(float((x @ x).sum()), numpy.arange(3).sum())")
    assert ok.exit_code == 0 and ok.isolation == "", ok.isolation
    assert pool.stats["worker_discards"] == before


def test_a_worker_that_is_no_longer_fresh_refuses_the_run(tmp_path, monkeypatch):
    """A preloaded module whose thread changes torch's default dtype a moment after the preload:
    the worker finds itself dirty before the next run and refuses it; the run is made elsewhere
    (here, after the spares refuse too, in a fresh process) and sees a fresh state."""
    (tmp_path / "dirty_later.py").write_text(
        "import threading, time, torch\n"
        "def flip():\n    time.sleep(1.0)\n    torch.set_default_dtype(torch.float64)\n"
        "threading.Thread(target=flip, daemon=True).start()\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[2]}")
    (tmp_path / "dtype.py").write_text("import torch\nprint('BISECTK_RESULT {\"dtype\": \"%s\"}' % "
                                       "str(torch.get_default_dtype()))\n")
    with WorkerPool(gpus=None, preload=("torch", "dirty_later"), spares=1, ready_timeout=120) as p:
        p.start()
        import time
        time.sleep(2.5)
        raw = run_command(p, [sys.executable, "dtype.py"], cwd=tmp_path, timeout=120)
        assert raw.exit_code == 0 and result(raw)["dtype"] == "torch.float32", (raw.stdout, raw.stderr)
        assert p.stats.get("refused", 0) >= 1


def test_an_ordinary_failing_exit_keeps_its_worker_and_leaves_the_next_run_fresh(pool, fresh, tmp_path):
    """A failing run (an exception after changing state, or sys.exit(1)) is not a process in doubt:
    the worker serves the next run (issue 25: --warm must never be slower than cold), and the next
    run still starts as fresh as a new process."""
    (tmp_path / "probe.py").write_text(PROBE)
    before = pool.stats["worker_discards"]
    failed = run(pool, tmp_path, "fails.py", "import torch; torch.set_default_dtype(torch.float64)\n"
                                             "raise AssertionError('rel_err 2.7 > 1e-4')")
    assert failed.exit_code == 1 and "AssertionError" in failed.stderr
    exited = run(pool, tmp_path, "exits.py", "import sys; sys.exit(3)")
    assert exited.exit_code == 3
    probe = run_command(pool, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
    assert result(probe) == fresh
    assert pool.stats["worker_discards"] == before and pool.stats["cold_runs"] == 0


def test_with_hang_snapshots_the_warm_workers_compile_with_line_info(tmp_path):
    """Hang snapshots ask CuTe DSL kernels for line info (CUTE_DSL_LINEINFO=1, a process-level
    variable, so a run whose value differs from its worker's goes cold). The session starts its
    workers with it when snapshots are on, so those runs stay warm, and without it otherwise."""
    from bisectk.engine.policy import RunPolicy
    from bisectk.engine.session import Session
    from bisectk.run.snapshot import LINEINFO_ENV
    from bisectk.spec import load_spec
    spec = load_spec(Path(__file__).resolve().parents[2] / "variants" / "cpu" / "pipeline-arrive.toml")
    (tmp_path / "ok.py").write_text("import os\nprint('BISECTK_RESULT {\"li\": \"%s\"}' % os.environ.get('CUTE_DSL_LINEINFO'))\n")
    seen = {}
    for n in (0, 2):
        s = Session("ablate", spec, tmp_path / f"l{n}.db", policy=RunPolicy(snapshots=n, warm=True))
        try:
            pool = s.executor()
            env = dict(LINEINFO_ENV) if n else {}
            raw = run_command(pool, [sys.executable, "ok.py"], cwd=tmp_path, env=env, timeout=120)
            seen[n] = (result(raw)["li"], pool.stats["cold_runs"])
        finally:
            s.close()
    assert seen[2] == ("1", 0)                      # asked for it: warm, and it has it
    assert seen[0][0] != "1" and seen[0][1] == 0    # snapshots off: warm, without the cost


def test_a_change_that_every_run_makes_is_said_once(tmp_path):
    """Each run installs a new function (a trace hook, a lambda signal handler): the words that say
    so name it, not its address, so the note is not repeated for every run."""
    notes: list[str] = []
    (tmp_path / "hooks.py").write_text(
        "import signal, sys, threading\nthreading.settrace(lambda *a: None)\n"
        "sys.setprofile(lambda *a: None)\nsignal.signal(signal.SIGUSR1, lambda *a: None)\n"
        "class Finder:\n    def find_spec(self, *a):\n        return None\nsys.meta_path.append(Finder())\n"
        "print('BISECTK_RESULT {}')\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120, on_note=notes.append) as p:
        for _ in range(3):
            raw = run_command(p, [sys.executable, "hooks.py"], cwd=tmp_path, timeout=120)
            assert raw.exit_code == 0 and "put back" in raw.isolation, (raw.stderr, raw.isolation)
    assert len([n for n in notes if "put back" in n]) == 1, notes


@pytest.mark.parametrize("patch", ["colorsys.rgb_to_hsv = lambda r, g, b: (0, 0, 0)",
                                   "from unittest import mock; mock.patch('colorsys.rgb_to_hsv').start()"])
def test_a_module_the_run_imported_first_and_patched_is_not_served_to_the_next_run(tmp_path, patch):
    """The worker never saw the module before the run patched it, so it cannot put it back: the
    worker retires, and the next run imports the module as a fresh process does."""
    (tmp_path / "patch.py").write_text(f"import colorsys\n{patch}\nprint('BISECTK_RESULT {{}}')\n")
    (tmp_path / "probe.py").write_text("import colorsys\nprint('BISECTK_RESULT {\"m\": \"%s\"}' % "
                                       "(type(colorsys.rgb_to_hsv).__module__ + colorsys.rgb_to_hsv.__module__))\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        dirty = run_command(p, [sys.executable, "patch.py"], cwd=tmp_path, timeout=120)
        assert dirty.exit_code == 0 and "cannot be put back" in dirty.isolation, (dirty.stderr, dirty.isolation)
        probe = run_command(p, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
        assert result(probe) == {"m": "builtinscolorsys"}, probe.stdout


@pytest.mark.parametrize("code", ["import io, sys; sys.stdin = io.StringIO('left by the run')",
                                  "import sys; sys.stdin.close()"])
def test_a_run_that_replaces_or_closes_sys_stdin_leaves_the_next_run_an_empty_stdin(tmp_path, code):
    """A fresh process's sys.stdin reads /dev/null: the next run in the worker reads '' too, not
    the text a run left there, nor a closed file (the worker's own request stream, before)."""
    (tmp_path / "dirty.py").write_text(code + "\nprint('BISECTK_RESULT {}')\n")
    (tmp_path / "probe.py").write_text("import json, sys\n"
                                       "print('BISECTK_RESULT ' + json.dumps({'stdin': sys.stdin.read()}))\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        for _ in range(2):
            dirty = run_command(p, [sys.executable, "dirty.py"], cwd=tmp_path, timeout=120)
            assert dirty.exit_code == 0, dirty.stderr
            probe = run_command(p, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
            assert probe.exit_code == 0 and result(probe) == {"stdin": ""}, (probe.stdout, probe.stderr)
        assert p.stats["cold_runs"] == 0


def test_a_run_that_moves_the_time_zone_leaves_the_next_run_in_the_workers_own(tmp_path):
    """TZ set and time.tzset() called: the environment and time's attributes are put back, and so
    is the C library's zone that time.localtime() reads (a later run read Tokyo's hours)."""
    (tmp_path / "tz.py").write_text("import os, time\nos.environ['TZ'] = 'Asia/Tokyo'\ntime.tzset()\n"
                                    "print('BISECTK_RESULT {}')\n")
    (tmp_path / "probe.py").write_text("import json, time\nprint('BISECTK_RESULT ' + json.dumps({'hour': "
                                       "time.localtime(0).tm_hour, 'zone': list(time.tzname)}))\n")
    fresh = result(run_process([sys.executable, str(tmp_path / "probe.py")], timeout=120))
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        for script in ("probe.py", "tz.py"):   # the second run imports nothing new: put back, not retired
            assert run_command(p, [sys.executable, script], cwd=tmp_path, timeout=120).exit_code == 0
        probe = run_command(p, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
        assert result(probe) == fresh, (probe.stdout, probe.stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing ids needs root")
@pytest.mark.parametrize("code, restorable", [("os.seteuid(65534)", True), ("os.setegid(65534)", True),
                                              ("os.setuid(65534)", False)])
@pytest.mark.parametrize("private", [False, True])
def test_a_run_that_changes_its_user_or_group_leaves_the_next_run_as_fresh(tmp_path, monkeypatch, code, restorable,
                                                                          private):
    """As root, seteuid(nobody) leaves the real and saved ids root: the ids are put back; setuid
    drops all three, and the worker retires. Before, the next run in the worker ran as nobody (or
    the worker broke: 'crash (exit None)'). `private`: the worker's own directory under a 0700 one
    (a clone in /root, a fresh clone's tmp): as nobody the worker could not go back to it, and the
    seteuid run was done again cold, its note lost; the ids now come back first. A setuid run
    cannot have them back: it is said as not put back, or (where the worker cannot reach its own
    directory as nobody) done again cold; either way the next run is root's."""
    where = tmp_path / "private" / "run" if private else tmp_path
    where.mkdir(parents=True, exist_ok=True)
    if private:
        (tmp_path / "private").chmod(0o700)
        monkeypatch.chdir(where)        # the pool's workers start here
    (where / "ids.py").write_text(f"import os\n{code}\nprint('BISECTK_RESULT {{}}')\n")
    (where / "probe.py").write_text("import json, os\nprint('BISECTK_RESULT ' + json.dumps({'ids': "
                                    "[os.getresuid(), os.getresgid()]}))\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        dirty = run_command(p, [sys.executable, "ids.py"], cwd=where, timeout=120)
        assert dirty.exit_code == 0, (dirty.stderr, dirty.isolation)
        if restorable:
            assert "put back" in dirty.isolation and "cannot" not in dirty.isolation, dirty.isolation
        else:
            assert "cannot be put back" in dirty.isolation or not dirty.isolation, dirty.isolation
        probe = run_command(p, [sys.executable, "probe.py"], cwd=where, timeout=120)
        assert result(probe) == {"ids": [[0, 0, 0], [0, 0, 0]]}, probe.stdout


def test_a_run_that_leaves_a_file_lock_held_retires_its_worker(tmp_path):
    """A lock taken on a descriptor the run never closed dies with a fresh process; in a worker it
    would outlive the run and the next run that takes it would wait forever (a hang only warm)."""
    take = ("import fcntl, os, sys\nfd = os.open('lock', os.O_CREAT | os.O_RDWR)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(9)\n"
            "print('BISECTK_RESULT {}')\n")
    (tmp_path / "take.py").write_text(take)
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        first = run_command(p, [sys.executable, "take.py"], cwd=tmp_path, timeout=120)
        assert first.exit_code == 0 and "cannot be put back" in first.isolation, (first.stderr, first.isolation)
        again = run_command(p, [sys.executable, "take.py"], cwd=tmp_path, timeout=120)
        assert again.exit_code == 0, "the lock outlived its run"


def test_a_run_that_replaces_builtins_import_is_judged_as_it_ran_and_leaves_the_next_run_its_own(tmp_path):
    """builtins.__import__ replaced by a function of the run's script: the worker's own imports
    after the run went through it (its globals cleared at the run's end: the worker broke and the
    run read 'exit None'), and later runs would import through it."""
    (tmp_path / "hook.py").write_text(
        "import builtins\n_orig = builtins.__import__\n"
        "def imp(name, *a, **k):\n    if name == 'colorsys':\n        raise ImportError('blocked')\n"
        "    return _orig(name, *a, **k)\nbuiltins.__import__ = imp\nprint('BISECTK_RESULT {}')\n")
    (tmp_path / "probe.py").write_text("import colorsys\nprint('BISECTK_RESULT {}')\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        hooked = run_command(p, [sys.executable, "hook.py"], cwd=tmp_path, timeout=120)
        assert hooked.exit_code == 0 and "put back" in hooked.isolation, (hooked.stderr, hooked.isolation)
        probe = run_command(p, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
        assert probe.exit_code == 0, probe.stderr
        assert p.stats["cold_runs"] == 0


def test_a_private_hook_a_run_rebinds_is_put_back(tmp_path):
    """The known way to turn certificate checks off rebinds a private name of ssl to another of its
    functions: a hook, not a cache, and every later run in the worker would skip the checks."""
    (tmp_path / "off.py").write_text("import ssl\nssl._create_default_https_context = ssl._create_unverified_context\n"
                                     "print('BISECTK_RESULT {}')\n")
    (tmp_path / "probe.py").write_text("import json, ssl\nprint('BISECTK_RESULT ' + json.dumps("
                                       "{'https': ssl._create_default_https_context.__name__}))\n")
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        for script in ("probe.py", "off.py"):
            raw = run_command(p, [sys.executable, script], cwd=tmp_path, timeout=120)
            assert raw.exit_code == 0, raw.stderr
        assert "put back" in raw.isolation, raw.isolation
        probe = run_command(p, [sys.executable, "probe.py"], cwd=tmp_path, timeout=120)
        assert result(probe) == {"https": "create_default_context"}, probe.stdout


def test_an_event_loop_a_run_left_set_is_closed_with_its_descriptors_not_kept_by_the_worker(tmp_path):
    """asyncio.get_event_loop() makes a loop (an epoll descriptor and a self-pipe: 3 descriptors)
    that a fresh process drops at exit. The worker put the policy back after freezing the run's
    survivors out of the collector (gc.freeze), so the loop, a cycle, was never collected: every
    such run left 3 descriptors in the worker for good."""
    (tmp_path / "loop.py").write_text("import asyncio, warnings\nwarnings.simplefilter('ignore')\n"
                                      "asyncio.get_event_loop()\nprint('BISECTK_RESULT {}')\n")
    (tmp_path / "fds.py").write_text("import json, os\n"
                                     "print('BISECTK_RESULT ' + json.dumps({'fds': len(os.listdir('/proc/self/fd'))}))\n")

    def fds(p) -> int:
        raw = run_command(p, [sys.executable, "fds.py"], cwd=tmp_path, timeout=120)
        return result(raw)["fds"]

    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as p:
        run_command(p, [sys.executable, "loop.py"], cwd=tmp_path, timeout=120)   # asyncio loaded once
        before = fds(p)
        for _ in range(5):
            assert run_command(p, [sys.executable, "loop.py"], cwd=tmp_path, timeout=120).exit_code == 0
        assert fds(p) == before
        assert p.stats["worker_discards"] == 0 and p.stats["cold_runs"] == 0, p.stats


def test_descriptors_runs_leave_open_do_not_pile_up_into_a_later_runs_emfile_warm_as_cold(tmp_path):
    """A run that never closes what it opens (os.open, tempfile.mkstemp's fd): each fresh process
    starts without them, but a worker kept them, and from its third run on a subject that opens 100
    files under a limit of 256 failed with EMFILE (OSError: Too many open files) where every cold
    run passed. Past lifecycle.LEFT_OPEN descriptors left open the worker retires: warm = cold."""
    from bisectk.run.executor import LocalExecutor
    (tmp_path / "leak.py").write_text(
        "import os, resource\n_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(100)]\nprint('BISECTK_RESULT {}')\n")
    cold = [run_command(LocalExecutor(), [sys.executable, "leak.py"], cwd=tmp_path, timeout=120) for _ in range(4)]
    assert [r.exit_code for r in cold] == [0] * 4, cold[-1].stderr
    with WorkerPool(gpus=None, preload=(), spares=1, ready_timeout=120) as p:
        warm = [run_command(p, [sys.executable, "leak.py"], cwd=tmp_path, timeout=120) for _ in range(4)]
        assert p.stats["cold_runs"] == 0, p.stats
    assert [r.exit_code for r in warm] == [0] * 4, warm[-1].stderr
    assert "file descriptors its runs left open" in warm[0].isolation, warm[0].isolation


def test_a_contextvar_a_run_sets_in_a_kept_module_is_gone_with_the_run_warm_as_cold(tmp_path_factory):
    """A library (kept loaded: outside the run's tree) holding its mode in a ContextVar that the
    bad configuration sets: no probe sees a ContextVar, and every later warm run read the bad
    run's mode ('the good configuration fails intermittently', 9/10) where cold found the culprit.
    Each run now runs in its own copy of the worker's context."""
    from bisectk.run.executor import LocalExecutor
    lib, tree = tmp_path_factory.mktemp("lib"), tmp_path_factory.mktemp("tree")
    (lib / "ctxlib.py").write_text("from contextvars import ContextVar\nmode = ContextVar('mode', default='fast')\n")
    (tree / "m.py").write_text("import json, sys, ctxlib\nif sys.argv[1] != '-':\n    ctxlib.mode.set(sys.argv[1])\n"
                               "print('BISECTK_RESULT ' + json.dumps({'mode': ctxlib.mode.get()}))\n")
    env = {"PYTHONPATH": str(lib)}

    def modes(executor, run_env):
        return [result(run_command(executor, [sys.executable, "m.py", m], cwd=tree, env=run_env, timeout=120))["mode"]
                for m in ("-", "slow", "-")]

    cold = modes(LocalExecutor(), env)
    with WorkerPool(gpus=None, preload=(), spares=0, env=env, ready_timeout=120) as p:
        warm = modes(p, {})
        assert p.stats["cold_runs"] == 0 and p.stats["worker_discards"] == 0, p.stats
    assert cold == ["fast", "slow", "fast"]
    assert warm == cold


COMPILED = ("import json, sys, torch\n"
            "def f(x):\n    return x * SCALE\n"
            "y = torch.compile(f, backend='eager')(torch.ones(4))\n"
            "print('BISECTK_RESULT ' + json.dumps({'y': float(y[0])}))\n")


def test_a_torch_compile_run_keeps_its_worker_and_the_next_run_compiles_its_own_source(tmp_path):
    """A run that calls torch.compile imports dynamo's lazy modules and moves its counters
    (FRAME_COUNTER, DESCRIBER_NEXT_ID: globals the modules rebind themselves). Taken for patches of
    an import, every such run retired its worker: a torch.compile subject paid a new worker and
    dynamo's import per run (4.5 s, against 0.3 s kept). The worker now stays, put back, and the
    next run compiles its own source, not the cached graph of the last."""
    with WorkerPool(gpus=None, preload=("torch",), spares=1, ready_timeout=120) as p:
        ys = []
        for scale in (2, 3, 3):
            (tmp_path / "comp.py").write_text(COMPILED.replace("SCALE", str(scale)))
            raw = run_command(p, [sys.executable, "comp.py"], cwd=tmp_path, timeout=120)
            assert raw.exit_code == 0, raw.stderr
            assert "cannot be put back" not in raw.isolation, raw.isolation
            ys.append(result(raw)["y"])
        assert ys == [2.0, 3.0, 3.0]
        assert p.stats["worker_discards"] == 0 and p.stats["cold_runs"] == 0, p.stats


def test_dynamo_state_a_compile_run_left_is_gone_in_the_next_run_warm_as_cold(tmp_path_factory):
    """A function of a module kept loaded (outside the run's tree), compiled by one run for one
    shape and by the next for another: dynamo's cache on that code object (and its counters) are
    a fresh process's in each run, so a subject that forbids recompiles passes warm as cold."""
    from bisectk.run.executor import LocalExecutor
    lib, tree = tmp_path_factory.mktemp("lib"), tmp_path_factory.mktemp("tree")
    (lib / "kernlib.py").write_text("def f(x):\n    return x.sin() * 2\n")
    (tree / "k.py").write_text(
        "import json, sys, torch, torch._dynamo, kernlib\n"
        "torch._dynamo.config.error_on_recompile = True\n"
        "y = torch.compile(kernlib.f, backend='eager')(torch.ones(int(sys.argv[1])))\n"
        "print('BISECTK_RESULT ' + json.dumps({'graphs': torch._dynamo.utils.counters['stats']['unique_graphs']}))\n")
    env = {"PYTHONPATH": str(lib)}

    def graphs(executor, run_env):
        out = []
        for n in ("4", "8", "4"):
            raw = run_command(executor, [sys.executable, "k.py", n], cwd=tree, env=run_env, timeout=120)
            assert raw.exit_code == 0, raw.stderr[-2000:]
            out.append(result(raw)["graphs"])
        return out

    cold = graphs(LocalExecutor(), env)
    with WorkerPool(gpus=None, preload=("torch",), spares=1, env=env, ready_timeout=120) as p:
        warm = graphs(p, {})
        assert p.stats["cold_runs"] == 0, p.stats
    assert cold == [1, 1, 1]
    assert warm == cold
