"""A warm worker process: runs Python subject scripts in a process that imported torch/cutlass once.

A cold process per configuration costs ~6-7 s on a Hopper machine, almost all of it `import torch`
and `import cutlass`; the kernel itself runs in microseconds. A warm worker pays the imports once,
then runs each configuration's script in-process (in a fresh `__main__`, lifecycle.run_main, with a
patched `sys.argv`).
The parent side (the pool, hot spares, the watchdog) is `run/pool.py`.

Protocol: `python -m bisectk.run.worker --serve --reply-fd N [--preload torch,cutlass]`; the worker
preloads, replies `{"ready": true, ...}` on the reply fd, then reads one JSON request per line on
stdin `{argv, program, env, cwd, stdout_path, stderr_path}` and replies one JSON line per request
`{exit_code, duration_s, error, poisoned, retire, changed, stuck, imports}` (or `{refused}`).
fds 1 and 2 are redirected into the request's paths for the run (pipes the parent reads, so
C-level output such as device printf is captured and followed as it is written). `poisoned` holds
the error a CUDA synchronize raised after the run (a sticky error the script swallowed), "" when
the context is healthy; a poisoned worker exits. `imports`: the source files loaded after the run
(run/imports.py), for the memo key.

Nothing of one run leaks into the next: cwd, argv, sys.path, the environment and the standard
streams are restored; every module the run imported from its own tree (its directory, its
script's directory, the sys.path entries it added) is dropped from sys.modules, so the next run --
another hybrid tree, another commit's worktree, at the same path or not -- imports its own sources
fresh; bytecode is not written for them. Every other kind of interpreter state (run/isolation.py:
torch's default dtype, grad mode, deterministic flag, threads and RNG, numpy's and decimal's
global flags, signal handlers, the socket timeout, warnings filters, module attributes rebound...)
is compared with the state right after the preload and put back (`changed` names what the run
had changed). What cannot be put back (`stuck`: a thread left running, torch's interop threads,
module attributes rebound by a run that also imported new packages) retires the worker, and so
does a native extension of the run's own (dlopen keeps it). Before each run the state is checked
again: a worker that is not as fresh as after its preload refuses the run (`refused`) rather than
run it dirty.

What a fresh process's start and exit give a script and a warm run would lack is given to it
(run/lifecycle.py): fresh random streams, the tree's own modules before the worker's cached ones,
its non-daemon threads waited for, its atexit handlers run, its globals cleared while its output
is still its own, a child it forked (os.fork) ended where the script ends for it; a shared library it mapped (ctypes, dlopen) retires the worker, as an extension
of its own does; one it mapped from elsewhere, rebuilt at its path since, makes the worker refuse
the next run. A module a run imported from elsewhere stays loaded: a later run that sets a variable
its source names otherwise is refused (run/importenv.py: it may have read it at import).
"""

from __future__ import annotations

import builtins
import contextvars
import importlib
import json
import os
import sys
import threading
import time
from importlib.machinery import EXTENSION_SUFFIXES


# shared objects runs mapped from elsewhere than their own directories, as they were when mapped
# (run/lifecycle.py `identities`): one rebuilt at its path since makes the worker refuse the next run
HELD: dict[str, tuple] = {}
# the modules runs imported from outside their trees (kept loaded), and the environment each run set
# (run/importenv.py): a run that sets a variable one of them names otherwise is refused
IMPORTED = None
FDS_READY = None        # descriptors open when the worker was ready (run/lifecycle.py open_descriptors)
SOFT_PRELOAD = ("numpy", "decimal", "multiprocessing")   # their global flags are probed from a known start (isolation.py)


def _preload(names: list[str], context: bool = True) -> dict:
    """Import `names` (top-level packages, then submodules the subject names) and, with `context`,
    create torch's CUDA context (0.2-0.3 s on an H100; `import torch` itself is 5 s there). A
    template (run/template.py) imports without the context: CUDA must not be initialised in a
    process that forks, and each forked worker makes its own (`make_context`)."""
    from bisectk.run.lifecycle import startup_modules
    startup_modules()   # asked once here, so a forked worker inherits the answer
    info: dict = {}
    for name in SOFT_PRELOAD:
        try:
            __import__(name)
        except Exception:
            pass
    for name in names:
        t0 = time.perf_counter()
        if "." in name:     # a submodule the subject's source names (run/preload.py)
            try:
                importlib.import_module(name)
                info[name] = round(time.perf_counter() - t0, 3)
            except ModuleNotFoundError:
                pass        # a name imported from a module (`from torch import float32`), not a module
            except Exception as exc:
                info[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
            continue
        try:
            __import__(name)
            if name == "torch" and context:
                make_context(info)
            if name == "cutlass":
                import cutlass.cute  # noqa: F401
            info[name] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # a missing package is the script's problem, not the worker's
            info[name] = f"unavailable: {type(exc).__name__}: {exc}"[:300]
    return info


def make_context(info: dict) -> None:
    """Create torch's CUDA context now, not in run 1, where torch is loaded and sees a GPU."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    t0 = time.perf_counter()
    if torch.cuda.is_available():
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        info["cuda"] = torch.cuda.get_device_name()
        info["context_s"] = round(time.perf_counter() - t0, 3)


def flush_std() -> None:
    """Flush Python's standard streams (a closed one is no error)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass


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


def _run_request(req: dict, baseline=None) -> dict:
    import gc
    import importlib

    from bisectk.run import isolation, lifecycle
    from bisectk.run.imports import loaded_files

    argv = req["argv"]
    script = os.path.abspath(os.path.join(req.get("cwd") or os.getcwd(), argv[0]))
    # the script's __file__ as `python ./k.py` gives it: absolute, not normalised (run/lifecycle.py
    # finds the run's globals by it)
    main_file = os.path.join(req.get("cwd") or os.getcwd(), argv[0])
    saved = {"cwd": os.getcwd(), "argv": sys.argv[:], "orig_argv": sys.orig_argv, "path": sys.path[:], "env": dict(os.environ),
             "environ": os.environ, "zone": _zone(), "import": builtins.__import__,
             "stdin": sys.stdin, "stdout": sys.stdout, "stderr": sys.stderr, "modules": set(sys.modules),
             "dunder": (sys.__stdin__, sys.__stdout__, sys.__stderr__),
             "bytecode": sys.dont_write_bytecode, "ids": isolation.ids()}
    fd_in, fd_out, fd_err = os.dup(0), os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    f_out = open(req["stdout_path"], "wb", buffering=0)
    f_err = open(req["stderr_path"], "wb", buffering=0)
    code, error = 0, ""
    shadow = hooks = permanent = libraries = None
    mapped = lifecycle.mapped_objects()
    locks = lifecycle.held_locks()
    t0 = time.perf_counter()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(devnull, 0)  # the script must not eat the worker's requests
        os.dup2(f_out.fileno(), 1)
        os.dup2(f_err.fileno(), 2)
        # the run's own sys.stdin (on /dev/null, as a fresh process's): the worker's is its request
        # stream, which a run must neither close nor leave replaced (`sys.stdin = io.StringIO(...)`)
        # in the encoding and error handler a fresh interpreter gives its streams here (the locale,
        # PYTHONIOENCODING: the worker's own, started in the same environment): 'replace' made a
        # lone surrogate print as '?' where a fresh process's strict stdout raised UnicodeEncodeError
        sys.stdin = _stream(0, "r", saved["stdin"])
        sys.stdout = _stream(1, "w", saved["stdout"])
        sys.stderr = _stream(2, "w", saved["stderr"])
        # and its sys.__stdout__ (...) as a fresh process's: the same objects, not the worker's, which
        # a run that reconfigured or closed them would have changed for the worker and later runs
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = saved["streams"] = sys.stdin, sys.stdout, sys.stderr
        if req.get("cwd"):
            os.chdir(req["cwd"])
        os.environ.update(req.get("env") or {})
        # argv[0] as typed, as `python k.py` leaves it ('k.py', not the absolute path __file__ is)
        sys.argv = list(argv)
        # orig_argv as a fresh `python k.py ...` has it, the program as typed: a script that started
        # itself again with sys.orig_argv (a reloader, a re-exec under other variables) started a worker instead
        sys.orig_argv = [req.get("program") or sys.executable, *argv]
        # sys.path[0] as the interpreter makes it: the directory of the file the script's path
        # leads to (a linked k.py imports the modules beside its target, not beside the link)
        saved["path0"] = _path0(script)    # _put_back counts its modules the run's own
        sys.path.insert(0, saved["path0"])
        sys.dont_write_bytecode = True
        importlib.invalidate_caches()   # a directory listing cached by a finder may be stale
        pp = (req.get("env") or {}).get("PYTHONPATH", "").split(os.pathsep)
        shadow = lifecycle.Shadowing([saved["path0"], *(p for p in pp if p and p in sys.path)])
        hooks = lifecycle.ExitHooks()
        permanent = lifecycle.Permanent()
        libraries = lifecycle.TorchLibraries()
        threads = set(threading.enumerate())
        lifecycle.reseed()
        me = os.getpid()
        # in a copy of the worker's context (its contextvars): a ContextVar the run sets (a library's
        # mode, `var.set(...)`, numpy's errstate) is gone with the run, as with a fresh process; an
        # object a variable holds and the run changes in place (decimal's context) is a probe's
        ctx = contextvars.copy_context()
        code, error = ctx.run(_exec_script, main_file)
        if os.getpid() != me:   # a child the script forked, back from it: it exits as a fresh one would
            ctx.run(lifecycle.exit_forked, code, threads, hooks)
        # the interpreter's exit, in its order: non-daemon threads, then atexit handlers
        lifecycle.join_threads(threads)
        ctx.run(hooks.run)
        code = ctx.run(lifecycle.flush_at_exit, code)
    finally:
        saved["faulthandler"] = lifecycle.faulthandler_off()   # first: its timer may end the worker
        saved["ids_regained"] = isolation.regain_ids(saved["ids"])   # before anything that opens a file
        if builtins.__import__ is not saved["import"]:   # before the worker's own imports below
            builtins.__import__ = saved["import"]
            saved["import_replaced"] = True
        if hooks is not None:
            hooks.detach()
        if permanent is not None:
            permanent.detach()
        if shadow is not None:
            shadow.restore()
        # the run's globals and garbage, while fds 1 and 2 are still the run's: a file object it
        # never flushed (held by its globals, which live on in a cycle) flushes where it would at exit
        lifecycle.clear_main(main_file)
        gc.collect()
        flush_std()
        for stream in saved.get("streams", ())[1:]:   # written through sys.__stdout__ after sys.stdout was replaced
            try:
                stream.flush()
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
        sys.stdin, sys.stdout, sys.stderr = saved["stdin"], saved["stdout"], saved["stderr"]
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = saved["dunder"]
        routine, roots = _put_back(req, saved, script)
        defined = libraries.detach(roots) if libraries is not None else ""
        if defined:
            routine.append(defined)
        imported = loaded_files() if req.get("imports") else []
        native = False
        own = own_modules(saved["modules"], roots)
        for name in own:
            mod = sys.modules.pop(name, None)
            native = native or str(getattr(mod, "__file__", "")).endswith(tuple(EXTENSION_SUFFIXES))
        if IMPORTED is not None:
            IMPORTED.record([n for n in set(sys.modules) - saved["modules"] if n.partition(".")[0] != "bisectk"],
                            req.get("env") or {})
    duration = time.perf_counter() - t0
    # the run's garbage is collected now (its finalizers free device memory before the next run);
    # what survives is the worker's, frozen out of later collections: a full collection of a heap
    # holding torch and cutlass costs 0.3-0.9 s a run on 2 cores, the young objects only ~0 s.
    # Frozen only once the state is put back: what the restore lets go (an event loop the run left
    # set, a cycle holding an epoll descriptor and a self-pipe) is collected, not kept for good
    gc.collect()
    poisoned = cuda_health()
    changed, stuck = _restore_state(baseline, saved["modules"], routine)
    gc.collect()
    gc.freeze()
    # a native extension of the run's own cannot be unloaded (dlopen keeps it): the worker retires;
    # so does a shared object the run mapped from its own tree (ctypes.CDLL of a library rebuilt per commit)
    now = lifecycle.mapped_objects()
    libs = lifecycle.own_native(mapped, now, roots)
    HELD.update(lifecycle.identities(now - mapped - set(libs)))    # elsewhere: kept while not rebuilt
    if libs:
        what = f"a shared library the run loaded ({', '.join(map(os.path.basename, libs[:3]))})"
        changed.append(what)
        stuck.append(what)
    if lifecycle.held_locks() > locks:
        what = "a file lock the run left held (on a descriptor it never closed)"
        changed.append(what)
        stuck.append(what)
    added = permanent.words(roots) if permanent is not None else ""
    if added:
        changed.append(added)
        stuck.append(added)
    left = lifecycle.open_descriptors() - FDS_READY if FDS_READY is not None else 0
    if left > lifecycle.LEFT_OPEN:
        what = f"{left} file descriptors its runs left open (a fresh process starts without them)"
        changed.append(what)
        stuck.append(what)
    return {"exit_code": code, "duration_s": duration, "error": error, "poisoned": poisoned,
            "retire": native or bool(stuck), "changed": changed, "stuck": stuck, "imports": imported}


def _path0(script: str) -> str:
    """The directory `python script` puts first on sys.path: its real path's (links resolved)."""
    return os.path.dirname(os.path.realpath(script))


def _stream(fd: int, mode: str, like):
    """A text stream on `fd` for the run, with the encoding and errors of the worker's own `like`
    (what the interpreter gave it at start), line-buffered when written."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    errors = getattr(like, "errors", None) or "strict"
    return open(fd, mode, buffering=1 if "w" in mode else -1, closefd=False, encoding=encoding, errors=errors)


def _exec_script(script: str) -> tuple[int, str]:
    """Run the script as `python script.py` would, in this process: (exit status, the error line).
    The status is what the interpreter's would be: `sys.exit(n)` is n & 0xff (-1 is 255, 256 is 0,
    True is 1); an uncaught KeyboardInterrupt ends it by SIGINT, as CPython does since 3.8 (here
    -SIGINT, a signal's number as subprocess gives it), so that a warm run and a cold one of the
    same subject are one verdict in the ledger."""
    import runpy
    import signal

    from bisectk.run import lifecycle
    # a source file runs in a fresh interpreter's __main__ (lifecycle.run_main); a directory or a
    # zip archive as runpy runs it, as `python DIR` does
    source = os.path.isfile(script)
    # the script's frame sits `extra` frames deeper than in `python script.py` (this worker's own,
    # and run_main's one or runpy's three): the recursion limit is raised by that much for the
    # run, and the script reads and sets it as a fresh process would (the same numbers, the same headroom)
    extra = _recursion_used() + (1 if source else 3)
    get, set_ = sys.getrecursionlimit, sys.setrecursionlimit
    limit = get()
    set_(limit + extra)
    sys.getrecursionlimit = lambda: get() - extra
    sys.setrecursionlimit = lambda n: set_(n + extra)
    try:
        if source:
            lifecycle.run_main(script)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        c = exc.code
        if c is None:
            return 0, ""
        if isinstance(c, int):
            return c & 0xFF, ""
        print(c, file=sys.stderr)
        return 1, ""
    except KeyboardInterrupt as exc:
        _uncaught(exc, script)
        return -signal.SIGINT, ""
    except BaseException as exc:  # what the interpreter would print before exiting 1
        _uncaught(exc, script)
        return 1, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        sys.getrecursionlimit, sys.setrecursionlimit = get, set_
        set_(get() - extra)     # the limit as the script left it: the baseline's probe compares it
    return 0, ""


def _recursion_used() -> int:
    """How deep the caller's frame is, as the recursion limit counts: its frames, and the calls
    between them made from C that count as one more each (three in a worker, which a walk of the
    frames missed: a script recursed three frames less deep warm than cold). Read by recursing
    under a limit just above the frames' own count, put back after."""
    def down(n: int) -> int:
        try:
            return down(n + 1)
        except RecursionError:
            return n
    frames, f = 0, sys._getframe(1)
    while f is not None:
        frames, f = frames + 1, f.f_back
    limit = sys.getrecursionlimit()
    probe = frames + 200
    sys.setrecursionlimit(probe)
    try:
        return probe - down(1)
    finally:
        sys.setrecursionlimit(limit)


def _uncaught(exc: BaseException, script: str) -> None:
    """What the interpreter does with an exception nothing caught: hand it to sys.excepthook, the
    script's own if it set one (rich's, a logger's, one that prints a line of its own), with the
    traceback from the script's frame on, as `python script.py` shows it. Before, the worker printed
    the traceback itself: a script whose hook printed one line (no `ValueError: ...`) crashed
    `exit 1` cold and `ValueError` warm, two failures."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    exc = exc.with_traceback(tb or exc.__traceback__)
    try:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    except BaseException as err:   # the interpreter's own words for a hook that fails
        print("Error in sys.excepthook:", file=sys.stderr)
        traceback.print_exception(type(err), err, err.__traceback__.tb_next, chain=False)   # from the hook on
        print("\nOriginal exception was:", file=sys.stderr)
        traceback.print_exception(exc)


def _zone() -> tuple:
    """What time.tzset() last set (time's attributes follow the C library's zone)."""
    return time.timezone, time.altzone, time.daylight, time.tzname


def _put_back(req: dict, saved: dict, script: str) -> tuple[list[str], list[str]]:
    """Put back what every run may change (cwd, argv, sys.path, environment, bytecode flag):
    (what this run had changed of it, the directories of the run's own modules)."""
    from bisectk.run import lifecycle
    routine = []   # what the worker puts back after every run anyway, when the run changed it
    if os.environ is not saved["environ"]:   # `os.environ = {...}`: no later change would reach a child
        routine.append("os.environ (replaced)")
        os.environ = saved["environ"]
    if dict(os.environ) != {**saved["env"], **(req.get("env") or {})}:
        routine.append("the environment (os.environ)")
    try:
        moved = os.getcwd() != (req.get("cwd") or saved["cwd"])
    except OSError:   # the run removed its own working directory
        moved = True
    if moved:
        routine.append("the working directory")
    roots = [req.get("cwd") or "", os.path.dirname(script), saved.get("path0") or _path0(script),
             *(p for p in sys.path if p not in saved["path"])]
    os.chdir(saved["cwd"])
    sys.argv, sys.orig_argv = saved["argv"], saved["orig_argv"]
    sys.path[:] = saved["path"]
    os.environ.clear()
    os.environ.update(saved["env"])
    if lifecycle.sync_c_environ():
        routine.append("the C environment (os.putenv, os.unsetenv)")
    if saved.get("import_replaced"):
        routine.append("builtins.__import__ (replaced)")
    routine += saved.get("faulthandler") or []
    if saved.get("ids_regained"):
        routine.append("the user and group ids (seteuid, setegid, setgroups)")
    if _zone() != saved["zone"]:   # TZ and time.tzset(): the C library's zone, for time.localtime()
        time.tzset()
        routine.append("the time zone (time.tzset)")
    sys.dont_write_bytecode = saved["bytecode"]
    return routine, roots


def _restore_state(baseline, modules_before: set[str], routine: list[str]) -> tuple[list[str], list[str]]:
    """The rest of the interpreter's state compared with the baseline and put back (isolation.py):
    (what the run changed, what cannot be put back)."""
    if baseline is None:
        return [], []
    from bisectk.run import torchstate
    new_packages = set(sys.modules) - modules_before
    reset = torchstate.reset_compiled()   # dynamo's caches and counters, as a fresh process has them
    changed, stuck = baseline.restore(adopt_wrappers=bool(new_packages))
    changed = routine + changed
    if reset:
        stuck.append(reset)
    planted = baseline.planted()
    changed += planted
    stuck += planted
    patched = [c for c in changed if c.endswith((" rebound", " added", " removed", " wrapped"))
               and c not in baseline.managed]
    if patched and new_packages:
        # a package imported by this run may have patched the preloaded ones on import; put back,
        # the next run would not import it again and would run without its patch: no fresh state
        stuck.append(f"{patched[0]} while the run imported packages that stay loaded")
    baseline.adopt_new_modules()
    return changed, stuck


def serve(reply_fd: int, preload: list[str]) -> int:
    return serve_ready(reply_fd, _preload(preload))


def serve_ready(reply_fd: int, info: dict) -> int:
    """Serve requests on stdin, replying on `reply_fd`, in a process whose preload is done (`info`
    says what it took): a fresh worker after its imports, a forked one after its CUDA context."""
    global IMPORTED, FDS_READY
    from bisectk.run import lifecycle
    from bisectk.run.importenv import Imported, refusal
    from bisectk.run.isolation import Baseline

    from bisectk.run.snapshot import allow_reader
    allow_reader()          # a hang's stack readers, bisectk's children, may attach (Yama)
    reply = os.fdopen(reply_fd, "w", buffering=1)
    baseline = Baseline()   # the state every run starts from: as right after the preload
    IMPORTED = Imported()
    FDS_READY = lifecycle.open_descriptors()
    import gc
    gc.collect()
    gc.freeze()             # the preloaded heap is never scanned again (see _run_request)
    reply.write(json.dumps({"ready": True, "pid": os.getpid(), "preload": info}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "exit":
            break
        lifecycle.reap_children()   # what the last run left, ended by the pool since: a fresh process has no child
        dirty = baseline.check()
        if dirty:   # never run in a state a fresh process would not have
            reply.write(json.dumps({"refused": f"the worker is not as fresh as after its preload: "
                                               f"{', '.join(dirty[:5])}"}) + "\n")
            break
        rebuilt = lifecycle.replaced(HELD)
        if rebuilt:  # dlopen of its path would hand the run the library loaded before, not the new one
            reply.write(json.dumps({"refused": "a shared library it loaded was rebuilt since "
                                               f"({', '.join(map(os.path.basename, rebuilt[:3]))})"}) + "\n")
            break
        stale = IMPORTED.stale(req.get("env") or {})
        if stale:    # a module it kept read another value of a variable this run sets (importenv.py)
            reply.write(json.dumps({"refused": refusal(stale)}) + "\n")
            break
        try:
            rep = _run_request(req, baseline)
        except BaseException as exc:  # the worker's own machinery failed: report, then die
            rep = {"exit_code": None, "duration_s": 0.0, "error": f"worker: {exc!r}"[:500],
                   "poisoned": f"the worker's own machinery failed: {exc!r}"[:500],
                   "broken": f"the worker's own machinery failed after the run ({exc!r})"[:500]}
        try:
            reply.write(json.dumps(rep) + "\n")
        except OSError as exc:      # the run closed this worker's own descriptors (os.closerange)
            _say_broken(req, f"the run closed the warm worker's own descriptors ({exc.strerror or exc})")
            os._exit(1)
        if rep.get("poisoned"):
            break
    return 0


BROKEN = "worker-broken"    # beside the run's FIFOs: the worker could not go on for a reason of the run's


def _say_broken(req: dict, why: str) -> None:
    """Leave `why` where the pool looks when a worker dies (its descriptors may all be gone: a path
    is opened anew), so that the run is run again cold, not judged by the worker's own death."""
    try:
        with open(os.path.join(os.path.dirname(req.get("stdout_path") or "."), BROKEN), "w") as f:
            f.write(why)
    except OSError:
        pass


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
