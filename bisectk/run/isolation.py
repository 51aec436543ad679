"""Interpreter state a run may leave in a warm worker: found, restored, or named as unrestorable.

A warm worker (run/worker.py) runs configuration after configuration in one interpreter. A fresh
process starts every run from the same state; a warm one must too, or the first run that calls
`torch.set_default_dtype(torch.float64)` (a double-precision reference, as kernel scripts compute)
makes every later run in that worker fail -- and the search blames the wrong factor.

Abstractions
------------
Probe     -- one kind of process-global state, as named data: what it is called in a report, how
             to read it, how to put it back (None: it cannot be put back; the worker retires),
             and how two readings compare. `PROBES` is the list; a probe whose module is not
             loaded reads as absent and is skipped.
Baseline  -- the state right after the worker's preload (what every run must start from): every
             probe's reading, plus each loaded module's namespace (the identity of each top-level
             attribute: `json.dumps = ...`, `torch.float32 = ...`, a monkeypatched function).
             `check()` lists what differs now (cheap: one identity pass over every namespace);
             `restore()` puts back whatever it can and returns what it changed, in words, and what
             it could not restore. The threads a run leaves running cannot be stopped from outside:
             they are unrestorable. Modules a run imports for the first time (an installed package)
             stay loaded: their namespaces join the baseline as the run left them, so later runs are
             held to that state (a run that imports a package and changes it at once cannot be told
             from its import; the worker preloads numpy so its flags are known from a clean start).

Not covered (documented, not silently assumed): C-level state without a getter (e.g.
`torch.set_flush_denormal`, `codecs.register`), state inside extension modules that Python cannot
read, changes to mutable objects that keep their identity (a list appended to in a module's
namespace, `mimetypes.add_type`), and the hash seed (str hashes are fixed per worker: it cannot
change in a running interpreter). A nice value a run raised cannot be lowered again without
privileges: the worker then retires.
"""

from __future__ import annotations

import ast
import importlib
import operator
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bisectk.procstat import psutil
from bisectk.run import loggers, torchstate

# the standard modules of probes, cheap to import and with no effect on import: loaded before the
# baseline, so a run that loads one first is compared with the state before it, not after
STATE_MODULES = ("decimal", "faulthandler", "gc", "locale", "logging", "resource", "signal", "socket",
                 "threading", "warnings")
# namespaces the worker manages itself, or that change by design between runs
SKIP_MODULES = {"__main__", "__mp_main__", "bisectk.run.worker", "bisectk.run.template", "bisectk.run.isolation",
                "bisectk.run.torchstate"}
SKIP_ATTRS = {
    "sys": {"argv", "orig_argv", "stdout", "stderr", "stdin", "dont_write_bytecode", "path_importer_cache", "last_type",
            "last_value", "last_traceback", "last_exc", "exc_info", "_git"},
    "os": {"environ"},
}


@dataclass(frozen=True)
class Probe:
    name: str
    module: str                                  # only read when this module is loaded
    read: Callable[[], Any]
    write: Callable[[Any], None] | None          # None: cannot be put back
    same: Callable[[Any, Any], bool] = operator.eq
    show: Callable[[Any], str] = repr
    quiet: bool = False    # put back without a word: every run changes it (random number streams)
    adopt: bool = False    # read again after each run: what a package's first import made joins it


def _m(name: str):
    return sys.modules[name]


def _np_state_same(a, b) -> bool:
    return a[0] == b[0] and _m("numpy").array_equal(a[1], b[1]) and a[2:] == b[2:]


def _signals() -> dict:
    out = {}
    for s in signal.valid_signals():
        if s in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            out[s] = signal.getsignal(s)
        except (OSError, ValueError):
            pass
    return out


def _set_signals(saved: dict) -> None:
    for s, handler in saved.items():
        if handler is None:
            continue   # installed from C before us: nothing Python can put back
        try:
            if signal.getsignal(s) is not handler:
                signal.signal(s, handler)
        except (OSError, ValueError, TypeError):
            pass


def _signals_same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def _show_signals(d: dict) -> str:
    return ", ".join(f"{signal.Signals(k).name}={getattr(v, '__name__', v)}" for k, v in sorted(d.items())
                     if v not in (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler)) or "defaults"


def _show_func(v) -> str:
    """A hook by its name, not its address: a run that installs a new one each time is one note."""
    return "None" if v is None else getattr(v, "__qualname__", None) or type(v).__name__


def _decimal_ctx():
    c = _m("decimal").getcontext()
    return (c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp,
            tuple(sorted((k.__name__, v) for k, v in c.traps.items())))


def _set_decimal_ctx(v) -> None:
    d = _m("decimal")
    prec, rounding, emin, emax, capitals, clamp, traps = v
    names = {k.__name__: k for k in d.getcontext().traps}
    d.setcontext(d.Context(prec=prec, rounding=rounding, Emin=emin, Emax=emax, capitals=capitals, clamp=clamp,
                           traps=[names[n] for n, on in traps if on], flags=[]))


def _limits():
    import resource
    out = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                out[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    return out


def _set_limits(saved: dict) -> None:
    import resource
    for name, (soft, hard) in saved.items():
        if resource.getrlimit(getattr(resource, name)) != (soft, hard):
            resource.setrlimit(getattr(resource, name), (soft, hard))   # raises when the hard limit was lowered


def _set_filters(v) -> None:
    w = _m("warnings")
    w.filters[:] = v
    mutated = getattr(w, "_filters_mutated", None) or getattr(w, "_filters_mutated_lock_held", None)
    if mutated:
        mutated()   # the C side caches the filters' version


_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)


def _timers() -> tuple[bool, ...]:
    """Which interval timers are pending: wall time (SIGALRM), and the CPU-time ones (SIGVTALRM,
    SIGPROF, a sampling profiler's) that would fire in a later run of the worker."""
    return tuple(signal.getitimer(t) != (0.0, 0.0) for t in _TIMERS)


def _cancel_timers(v: tuple[bool, ...]) -> None:
    for t, pending in zip(_TIMERS, v):
        if not pending:
            signal.setitimer(t, 0)


def _show_timers(v: tuple[bool, ...]) -> str:
    return ", ".join(n for n, pending in zip(("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"), v) if pending) or "none"


def _wakeup_fd() -> int:
    """The signal wakeup fd (set_wakeup_fd is its only getter: it sets, so it is put back at once).
    Left set by a run, its number closed and reused, every later signal wrote a byte into the file a
    later run opened there."""
    fd = signal.set_wakeup_fd(-1)
    if fd != -1:
        try:
            signal.set_wakeup_fd(fd)
        except (OSError, ValueError):   # its descriptor is closed: left unset, as it is put back
            pass
    return fd


def _asyncio() -> tuple:
    """asyncio's event loop policy and, for the default one, the main thread's loop and whether one
    was set (after asyncio.run() get_event_loop() has none to give). A fresh import has no policy
    yet: so does a worker where asyncio is not loaded, and a run that first imports it is put back
    to that."""
    ev = sys.modules.get("asyncio.events")
    policy = getattr(ev, "_event_loop_policy", None)
    local = getattr(policy, "_local", None)
    return policy, getattr(local, "_loop", None), getattr(local, "_set_called", False)


def _set_asyncio(v: tuple) -> None:
    ev = sys.modules.get("asyncio.events")
    if ev is None:
        return
    policy, loop, set_called = v
    ev._event_loop_policy = policy
    local = getattr(policy, "_local", None)
    if local is not None:
        local._loop, local._set_called = loop, set_called


def _set_gc_debug(v: tuple[int, int]) -> None:
    gc = _m("gc")
    gc.set_debug(v[0])
    del gc.garbage[v[1]:]       # what DEBUG_SAVEALL kept of the run's garbage


def _stack_size() -> int:
    old = _m("threading").stack_size()     # with no size it sets the default (0): put back at once
    _m("threading").stack_size(old)
    return old


def _tracemalloc() -> int:
    """The frames tracemalloc keeps per allocation while it traces; 0 when it does not (the
    built-in module: importing tracemalloc itself loads pickle and more)."""
    import _tracemalloc
    return _tracemalloc.get_traceback_limit() if _tracemalloc.is_tracing() else 0


def _set_tracemalloc(frames: int) -> None:
    import _tracemalloc
    _tracemalloc.stop()
    if frames:
        _tracemalloc.start(frames)


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def _torch_flag(path: str) -> Probe:
    mod, attr = path.rsplit(".", 1)

    def read():
        return getattr(_m(mod), attr)

    def write(v):
        setattr(_m(mod), attr, v)
    return Probe(path, mod, read, write)


def _logging_root():
    lg = _m("logging")
    return list(lg.root.handlers), lg.root.level, lg.root.manager.disable


def _set_logging_root(v) -> None:
    lg = _m("logging")
    handlers, level, disable = v
    for h in lg.root.handlers:
        if h not in handlers:       # a run's basicConfig: its stream is that run's output, gone now
            lg.root.removeHandler(h)
            h.close()
    lg.root.handlers[:] = handlers
    lg.root.setLevel(level)
    lg.disable(disable)


def _logging_same(a, b) -> bool:
    return len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0])) and a[1:] == b[1:]


def ids() -> tuple:
    """The process's real, effective and saved user and group ids, and its groups."""
    return os.getresuid(), os.getresgid(), sorted(os.getgroups())


def regain_ids(v: tuple) -> bool:
    """`ids()` back to `v` where a run changed them: True when it had and they are back. The
    worker calls it first thing after a run (as nobody it could not reach its own directory under
    a 0700 one: HOME, a clone in /root); one that cannot be had back is left to the probe."""
    if ids() == v:
        return False
    try:
        _set_ids(v)
    except OSError:
        return False
    return True


def _set_ids(v: tuple) -> None:
    """The user first (a run's seteuid(nobody) leaves the real and saved ids root: root again, it
    may set the rest); what cannot be had back (setuid as root drops all three) stays, and the
    worker retires."""
    uids, gids, groups = v
    if os.getresuid() != uids:
        os.setresuid(*uids)
    if os.getresgid() != gids:
        os.setresgid(*gids)
    if sorted(os.getgroups()) != groups:
        os.setgroups(groups)


PROBES: list[Probe] = [
    # the ids first: as nobody, the rest may not be allowed (the worker's directory under a 0700 one)
    Probe("the user and group ids", "os", ids, _set_ids),
    Probe("the working directory", "os", os.getcwd, os.chdir),
    Probe("the CPU affinity", "os", lambda: os.sched_getaffinity(0), lambda v: os.sched_setaffinity(0, v),
          show=lambda v: f"{len(v)} CPUs"),
    Probe("the scheduling priority (nice)", "os", lambda: os.getpriority(os.PRIO_PROCESS, 0),
          lambda v: os.setpriority(os.PRIO_PROCESS, 0, v)),
    # SCHED_IDLE, the idle I/O class: a later run given a CPU or the disk only when nothing else wants it
    Probe("the scheduling policy (os.sched_setscheduler)", "os",
          lambda: (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority),
          lambda v: os.sched_setscheduler(0, v[0], os.sched_param(v[1]))),
    Probe("the I/O priority (ionice)", "os", lambda: tuple(psutil.Process().ionice()),
          lambda v: psutil.Process().ionice(*v)),
    Probe("the root logger (handlers, level, logging.disable)", "logging", _logging_root, _set_logging_root,
          _logging_same, show=lambda v: f"{len(v[0])} handler(s), level {v[1]}, disable {v[2]}"),
    Probe("named loggers (level, handlers, propagate)", "logging", loggers.read, loggers.write, loggers.same,
          loggers.show, quiet=True, adopt=True),   # every `logging.getLogger(__name__)` makes one
    Probe("the environment (os.environ)", "os", lambda: dict(os.environ),
          lambda v: (os.environ.clear(), os.environ.update(v)), show=lambda v: f"{len(v)} variables"),
    Probe("the umask", "os", _umask, os.umask, show=oct),
    Probe("the resource limits", "resource", _limits, _set_limits),
    Probe("signal handlers", "signal", _signals, _set_signals, _signals_same, _show_signals),
    Probe("the blocked signal mask", "signal", lambda: signal.pthread_sigmask(signal.SIG_BLOCK, []),
          lambda v: signal.pthread_sigmask(signal.SIG_SETMASK, v), show=lambda v: str(sorted(v))),
    Probe("a pending timer (alarm, setitimer)", "signal", _timers, _cancel_timers, show=_show_timers),
    Probe("the asyncio event loop policy", "sys", _asyncio, _set_asyncio,
          lambda a, b: a[0] is b[0] and a[1] is b[1] and a[2] == b[2], quiet=True),
    Probe("the socket default timeout", "socket", lambda: _m("socket").getdefaulttimeout(),
          lambda v: _m("socket").setdefaulttimeout(v)),
    Probe("warnings filters", "warnings", lambda: list(_m("warnings").filters), lambda v: _set_filters(v),
          show=lambda v: f"{len(v)} filters"),
    Probe("subnormal floats flushed to zero (torch.set_flush_denormal)", "sys", torchstate.denormals,
          torchstate.set_denormals),
    Probe("the recursion limit", "sys", sys.getrecursionlimit, sys.setrecursionlimit),
    Probe("the thread switch interval", "sys", sys.getswitchinterval, sys.setswitchinterval),
    Probe("the int max str digits limit", "sys", sys.get_int_max_str_digits, sys.set_int_max_str_digits),
    Probe("a trace function (sys.settrace)", "sys", sys.gettrace, sys.settrace, operator.is_, _show_func),
    Probe("a profile function (sys.setprofile)", "sys", sys.getprofile, sys.setprofile, operator.is_,
          _show_func),
    Probe("a trace function for new threads (threading.settrace)", "threading",
          lambda: _m("threading")._trace_hook, lambda v: _m("threading").settrace(v), operator.is_,
          _show_func),
    Probe("a profile function for new threads (threading.setprofile)", "threading",
          lambda: _m("threading")._profile_hook, lambda v: _m("threading").setprofile(v), operator.is_,
          _show_func),
    Probe("import hooks (sys.meta_path)", "sys", lambda: list(sys.meta_path),
          lambda v: sys.meta_path.__setitem__(slice(None), v), show=lambda v: ", ".join(map(_show_func, v))),
    Probe("path hooks (sys.path_hooks)", "sys", lambda: list(sys.path_hooks),
          lambda v: sys.path_hooks.__setitem__(slice(None), v), show=lambda v: ", ".join(map(_show_func, v))),
    Probe("the garbage collector switch", "gc", lambda: _m("gc").isenabled(),
          lambda v: _m("gc").enable() if v else _m("gc").disable()),
    Probe("the garbage collector thresholds", "gc", lambda: _m("gc").get_threshold(),
          lambda v: _m("gc").set_threshold(*v)),
    # a run's callback, called at every later run's collections (a leak check that exits, a profiler's)
    Probe("garbage collector callbacks (gc.callbacks)", "gc", lambda: list(_m("gc").callbacks),
          lambda v: _m("gc").callbacks.__setitem__(slice(None), v),
          lambda a, b: len(a) == len(b) and all(map(operator.is_, a, b)), lambda v: ", ".join(map(_show_func, v))),
    # DEBUG_SAVEALL: every later run's garbage kept in gc.garbage; DEBUG_STATS: its stderr written to
    Probe("the garbage collector debug flags (gc.set_debug) and gc.garbage", "gc",
          lambda: (_m("gc").get_debug(), len(_m("gc").garbage)), _set_gc_debug),
    # the stack of every thread a later run makes (64 KiB: a recursion in one a SIGSEGV)
    Probe("the thread stack size (threading.stack_size)", "threading", _stack_size,
          lambda v: _m("threading").stack_size(v)),
    # tracing every allocation: a later run several times slower (a SLOW, a hang) where a fresh one is not
    Probe("tracemalloc", "sys", _tracemalloc, _set_tracemalloc),
    Probe("coroutine origin tracking (sys.set_coroutine_origin_tracking_depth)", "sys",
          sys.get_coroutine_origin_tracking_depth, sys.set_coroutine_origin_tracking_depth),
    Probe("the async generator hooks (sys.set_asyncgen_hooks)", "sys", lambda: tuple(sys.get_asyncgen_hooks()),
          lambda v: sys.set_asyncgen_hooks(*v), lambda a, b: all(map(operator.is_, a, b)),
          lambda v: ", ".join(map(_show_func, v))),
    # RTLD_LAZY | RTLD_GLOBAL: a later run's extension with an undefined symbol imports, or binds another's
    Probe("the dlopen flags of extension imports (sys.setdlopenflags)", "sys", sys.getdlopenflags,
          sys.setdlopenflags),
    Probe("the signal wakeup fd (signal.set_wakeup_fd)", "signal", _wakeup_fd, signal.set_wakeup_fd),
    Probe("faulthandler", "faulthandler", lambda: _m("faulthandler").is_enabled(),
          lambda v: _m("faulthandler").enable() if v else _m("faulthandler").disable()),
    Probe("the locale", "locale", lambda: _m("locale").setlocale(_m("locale").LC_ALL, None),
          lambda v: _m("locale").setlocale(_m("locale").LC_ALL, v)),
    Probe("the multiprocessing start method", "multiprocessing.context",
          lambda: _m("multiprocessing.context")._default_context._actual_context,
          lambda v: setattr(_m("multiprocessing.context")._default_context, "_actual_context", v), operator.is_,
          show=lambda v: getattr(v, "_name", "unset"), quiet=True),   # any run that uses multiprocessing sets it
    Probe("the decimal context", "decimal", _decimal_ctx, _set_decimal_ctx,
          show=lambda v: f"prec={v[0]}, rounding={v[1]}"),
    Probe("numpy error handling (seterr)", "numpy", lambda: _m("numpy").geterr(),
          lambda v: _m("numpy").seterr(**v)),
    Probe("numpy print options", "numpy", lambda: _m("numpy").get_printoptions(),
          lambda v: _m("numpy").set_printoptions(**v)),
    Probe("numpy's global random state", "numpy", lambda: _m("numpy").random.get_state(),
          lambda v: _m("numpy").random.set_state(v), _np_state_same, quiet=True),
    Probe("torch default dtype", "torch", lambda: _m("torch").get_default_dtype(),
          lambda v: _m("torch").set_default_dtype(v), show=str),
    Probe("torch grad mode", "torch", lambda: _m("torch").is_grad_enabled(),
          lambda v: _m("torch").set_grad_enabled(v)),
    Probe("torch inference mode", "torch", lambda: _m("torch").is_inference_mode_enabled(), None),
    Probe("torch deterministic algorithms", "torch",
          lambda: (_m("torch").are_deterministic_algorithms_enabled(),
                   _m("torch").is_deterministic_algorithms_warn_only_enabled()),
          lambda v: _m("torch").use_deterministic_algorithms(v[0], warn_only=v[1])),
    Probe("torch num_threads", "torch", lambda: _m("torch").get_num_threads(),
          lambda v: _m("torch").set_num_threads(v)),
    Probe("torch num_interop_threads", "torch", lambda: _m("torch").get_num_interop_threads(), None),
    Probe("torch default device", "torch", lambda: str(_m("torch").get_default_device()),
          lambda v: _m("torch").set_default_device(None if v == "cpu" else v)),
    Probe("torch anomaly detection", "torch", lambda: _m("torch").is_anomaly_enabled(),
          lambda v: _m("torch").set_anomaly_enabled(v)),
    Probe("torch float32 matmul precision", "torch", lambda: _m("torch").get_float32_matmul_precision(),
          lambda v: _m("torch").set_float32_matmul_precision(v)),
    Probe("torch autocast (torch.autocast left entered, set_autocast_enabled, set_autocast_dtype)", "torch",
          torchstate.autocast, torchstate.set_autocast,
          show=lambda v: ", ".join(f"{d} {str(dt).removeprefix('torch.')}" for d, on, dt in v[0] if on) or "off"),
    Probe("torch saved-tensor hooks (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks left entered)",
          "torch", torchstate.saved_hooks, torchstate.set_saved_hooks,
          show=lambda v: ("hooks set" if v[0] else "no hooks") + ("" if v[1] else ", disabled")),
    Probe("torch forward AD level (forward_ad.dual_level left entered)", "torch", torchstate.dual_level,
          torchstate.set_dual_level),
    Probe("torch's CPU random state", "torch", lambda: _m("torch").get_rng_state(),
          lambda v: _m("torch").set_rng_state(v), torchstate.torch_rng_same, quiet=True),
    Probe("torch print options", "torch", lambda: dict(vars(_m("torch")._tensor_str.PRINT_OPTS)),
          lambda v: vars(_m("torch")._tensor_str.PRINT_OPTS).update(v)),
    Probe("the CUDA current device and stream", "torch", torchstate.cuda_stream, torchstate.set_cuda_stream),
    Probe("torch's CUDA random state", "torch",
          lambda: _m("torch").cuda.get_rng_state_all() if torchstate.cuda_ready() else None,
          lambda v: _m("torch").cuda.set_rng_state_all(v) if v is not None else None,
          lambda a, b: (a is None) == (b is None) and (a is None or all(map(_m("torch").equal, a, b))),
          quiet=True),
    Probe("torch attention backends (enable_flash_sdp, enable_math_sdp, ..., mha fastpath)", "torch", torchstate.sdp,
          torchstate.set_sdp),
    *[_torch_flag(p) for p in ("torch.backends.cudnn.enabled", "torch.backends.cudnn.benchmark",
                               "torch.backends.cudnn.deterministic", "torch.backends.cudnn.allow_tf32",
                               "torch.backends.mkldnn.enabled")],
    Probe("torch cuBLAS matmul flags (torch.backends.cuda.matmul: allow_tf32, reduced-precision reductions, "
          "fp16 accumulation)", "torch", torchstate.cublas, torchstate.set_cublas,
          show=lambda v: ", ".join(f"{n}={x}" for n, x in v)),
    Probe("torch warn always (set_warn_always)", "torch", lambda: _m("torch").is_warn_always_enabled(),
          lambda v: _m("torch").set_warn_always(v)),
    Probe("torch sparse tensor invariant checks", "torch",
          lambda: _m("torch").sparse.check_sparse_tensor_invariants.is_enabled(),
          lambda v: (_m("torch").sparse.check_sparse_tensor_invariants.enable() if v
                     else _m("torch").sparse.check_sparse_tensor_invariants.disable())),
    Probe("the TorchScript tensor-expression fuser", "torch", lambda: _m("torch")._C._jit_texpr_fuser_enabled(),
          lambda v: _m("torch")._C._jit_set_texpr_fuser_enabled(v)),
    *[_torch_flag(p) for p in ("torch.utils.deterministic.fill_uninitialized_memory",
                               "torch.backends.quantized.engine")],
    # after the older setters above (set_float32_matmul_precision, allow_tf32), which set these too
    Probe("torch fp32_precision (torch.backends.*.fp32_precision)", "torch", torchstate.fp32_precision,
          torchstate.set_fp32_precision, show=lambda v: ", ".join(f"{p}={x}" for p, x in v if x != "none")),
]


class Baseline:
    """The state every run must start from (see the module docstring)."""

    def __init__(self, probes: list[Probe] = PROBES):
        # state these hold is the process's or the interpreter's, there before any import: loaded
        # first by a run, the probe read after it adopted the run's change (`import gc;
        # gc.callbacks.append(...)`, `signal.signal(...)` in a worker's first run stayed for good)
        for name in STATE_MODULES:
            importlib.import_module(name)
        self.probes = []
        self.readings: dict[str, Any] = {}
        for p in probes:
            value = self._read(p)
            if value is not _ABSENT:
                self.probes.append(p)
                self.readings[p.name] = value
        self.threads = set(threading.enumerate())
        self.managed: list[str] = []
        self.modules: dict[str, Any] = {}
        self.spaces: dict[str, dict] = {}
        self._take_namespaces(list(sys.modules.items()))

    @staticmethod
    def _read(p: Probe):
        if p.module not in sys.modules:
            return _ABSENT
        try:
            return p.read()
        except Exception:
            return _ABSENT

    def _take_namespaces(self, items) -> None:
        for name, mod in items:
            if name in SKIP_MODULES or name in self.modules:
                continue
            ns = getattr(mod, "__dict__", None)
            if isinstance(ns, dict):
                self.modules[name] = mod
                self.spaces[name] = dict(ns)

    def planted(self) -> list[str]:
        """What the run put into a module it imported first (one not yet in the baseline, whose
        namespace before the run's changes nobody saw): a public attribute holding a function or
        class of the run's own script (`colorsys.rgb_to_hsv = lambda ...`), or a mock it left
        patched in. A later run's import would get the module so patched: it cannot be put back."""
        out = []
        for name, mod in list(sys.modules.items()):
            if name in self.modules or name in SKIP_MODULES:
                continue
            ns = getattr(mod, "__dict__", None)
            if not isinstance(ns, dict):
                continue
            for k, v in list(ns.items()):
                if k.startswith("_") or _is_module(v):
                    continue
                try:
                    mine = getattr(v, "__module__", None) == "__main__" or type(v).__module__ == "unittest.mock"
                except Exception:
                    mine = False
                if mine:
                    out.append(f"{name}.{k} set by the run in a module it imported")
        return out

    def adopt_new_modules(self) -> None:
        """Modules first imported by the run that stay loaded join the baseline as they are."""
        self._take_namespaces([(n, m) for n, m in list(sys.modules.items()) if n not in self.modules])
        for p in PROBES:   # a probe whose module the run loaded (numpy, decimal) starts to count
            if p.name not in self.readings or p.adopt:
                value = self._read(p)
                if value is not _ABSENT:
                    self.probes += [p] if p.name not in self.readings else []
                    self.readings[p.name] = value

    # -- what differs ---------------------------------------------------------------------
    def _probe_diffs(self) -> list[tuple[Probe, Any]]:
        out = []
        for p in self.probes:
            now = self._read(p)
            try:
                same = now is not _ABSENT and p.same(now, self.readings[p.name])
            except Exception:
                same = False
            if not same:
                out.append((p, now))
        return out

    def _namespace_diffs(self) -> list[tuple[str, str, str]]:
        """(module, attribute, how) for each public top-level attribute rebound, added or removed.

        Private names (`_cache`, `_counter`) are a library's own business and are left as the run
        left them: putting back a counter that names compiled kernels beside a cache that keeps
        them would hand the next run another configuration's kernel; but a private name that held
        one of its module's own functions is a hook (`ssl._create_default_https_context`), and
        counts as a public one. A public name that was None
        and now holds a value is a lazy initialisation (`tempfile.tempdir`): "lazy", put back
        without a word. A value that wraps the old one (`__wrapped__`, as functools.wraps makes)
        is "wrapped": what a package does to another on import (torch._dynamo wraps
        torch.manual_seed when it is first imported)."""
        out = []
        for name, saved in self.spaces.items():
            mod = sys.modules.get(name)
            if mod is not self.modules[name]:
                if mod is None:
                    continue   # dropped from sys.modules: an import brings it back, from its file
                out.append((name, "", "replaced in sys.modules"))
                continue
            ns = mod.__dict__
            if ns.keys() == saved.keys() and all(map(operator.is_, ns.values(), saved.values())):
                continue   # the common case, at C speed
            skip = SKIP_ATTRS.get(name, ())
            for k, v in saved.items():
                if k in skip or (k.startswith("_") and not _own_function(v, name)):
                    continue
                if k not in ns:
                    out.append((name, k, "removed"))
                elif ns[k] is not v:
                    out.append((name, k, "lazy" if v is None else "wrapped" if _wraps(ns[k], v) else "rebound"))
            for k, v in ns.items():
                if k not in saved and k not in skip and not k.startswith("_") and not _is_module(v):
                    out.append((name, k, "added"))
        return out

    def _new_threads(self) -> list[threading.Thread]:
        # a _DummyThread stands for a native thread that once called into Python: not the run's
        return [t for t in threading.enumerate() if t not in self.threads and t.is_alive()
                and not isinstance(t, threading._DummyThread)]

    def check(self) -> list[str]:
        """What differs from the baseline now, in words ([] when the worker is as fresh)."""
        words = [p.name for p, _ in self._probe_diffs()]
        words += [f"{m}.{a}" if a else m for m, a, how in self._namespace_diffs() if how != "lazy"]
        words += [f"thread {t.name!r}" for t in self._new_threads()]
        return words

    def restore(self, join_s: float = 0.2, adopt_wrappers: bool = False) -> tuple[list[str], list[str]]:
        """Put the state back. Returns (what the run had changed, in words; what could not be
        put back, in words). A worker with anything in the second list must not run again.
        `adopt_wrappers` (the run imported packages that stay loaded): a wrapped attribute is
        taken as that import's doing and kept, the baseline with it, without a word -- the next
        run would not import the package again, and a fresh process that did would have it."""
        changed, stuck = [], []
        self.managed = []   # what of `changed` the module rebinds itself (module_global): never an import's patch
        for p, now in self._probe_diffs():
            old = self.readings[p.name]
            what = f"{p.name} ({_show(p, old)} -> {_show(p, now)})"
            if not p.quiet:
                changed.append(what)
            if p.write is None:
                stuck.append(what)
                continue
            try:
                p.write(old)
                if not p.same(p.read(), old):
                    stuck.append(what)
            except Exception as exc:
                stuck.append(f"{what}: {type(exc).__name__}: {exc}"[:300])
        for name, attr, how in self._namespace_diffs():
            what = f"{name}.{attr} {how}" if attr else f"{name} {how}"
            if how == "wrapped" and adopt_wrappers:
                self.spaces[name][attr] = self.modules[name].__dict__[attr]
                continue
            if how != "lazy":
                changed.append(what)
                if how in ("rebound", "added") and module_global(self.modules[name], attr):
                    self.managed.append(what)
            try:
                if not attr:
                    sys.modules[name] = self.modules[name]
                elif how == "added":
                    del self.modules[name].__dict__[attr]
                else:
                    self.modules[name].__dict__[attr] = self.spaces[name][attr]
            except Exception as exc:
                stuck.append(f"{what}: {type(exc).__name__}: {exc}"[:300])
        threads = self._new_threads()
        for t in threads:
            t.join(timeout=join_s / max(1, len(threads)))
        for t in self._new_threads():
            what = f"a thread left running ({t.name!r}{', daemon' if t.daemon else ''})"
            changed.append(what)
            stuck.append(what)
        return changed, stuck


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


_GLOBALS: dict[str, frozenset] = {}


def module_global(mod, attr: str) -> bool:
    """Whether `mod`'s own source rebinds `attr` from its functions (`global FRAME_COUNTER`: a
    counter, a lazy `__getattr__`'s import): the module's own state as it runs, which a package
    imported by the run did not patch in."""
    path = getattr(mod, "__file__", None) or ""
    if not path.endswith(".py"):
        return False
    if path not in _GLOBALS:
        try:
            tree = ast.parse(Path(path).read_bytes())
            _GLOBALS[path] = frozenset(n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names)
        except (OSError, SyntaxError, ValueError):
            _GLOBALS[path] = frozenset()
    return attr in _GLOBALS[path]


def _own_function(v, module: str) -> bool:
    """A private name that holds one of its module's own functions is a hook, not a cache: a run
    that rebinds it (`ssl._create_default_https_context = ssl._create_unverified_context`, the
    known way to turn certificate checks off) changes what every later caller gets."""
    import types
    return isinstance(v, types.FunctionType) and v.__module__ == module


def _wraps(new, old) -> bool:
    for _ in range(10):
        new = getattr(new, "__wrapped__", None)
        if new is None:
            return False
        if new is old:
            return True
    return False


def _is_module(v) -> bool:
    return type(v).__name__ == "module" or isinstance(v, type(sys))


def _show(p: Probe, v) -> str:
    try:
        return p.show(v)[:80]
    except Exception:
        return "?"
