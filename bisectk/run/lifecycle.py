"""What a fresh interpreter's start and exit give a script, given to a run in a warm worker.

run/isolation.py puts back the state a run changed; this module gives each run what a new process
would have had and a warm one lacks (the worker, run/worker.py, calls each around `_exec_script`):

mapped_objects / own_native / replaced -- the shared objects mapped into the worker (/proc/self/maps),
             before and after a run. dlopen() of a path already loaded returns the loaded handle
             (ctypes never dlcloses), so a library the run loaded from its own tree --
             `ctypes.CDLL("libk.so")` rebuilt per commit at the same path -- would serve every
             later run as it was built for this one: the worker retires. Shared objects elsewhere
             are the same file for every run (the driver's libcuda that each worker's first CUDA
             run loads, an installed package's libraries, a kernel cache keyed by its source) and
             do not retire it: a worker retired for them would serve one run each. One rebuilt at
             its path since a run mapped it (a build that puts its library in `../out` or $HOME;
             `identities` taken when mapped, `replaced` asked before each run) makes the worker
             refuse the next run.
reseed     -- fresh entropy for `random`, numpy's legacy global RandomState and torch's default
             generators: a fresh process seeds them from the OS, and forked workers share the
             template's state (isolation.py puts the baseline back after each run), so without it
             every warm run draws the same numbers and an intermittent failure never shows as one.
Shadowing  -- a module of the run's own tree (its `platform.py`) named like a module the worker
             has imported: a fresh `python t.py` puts the script's directory first and imports the
             tree's file; the worker's cached module is hidden for the run and put back after.
             Never hidden: the interpreter's startup modules (a fresh process has them before the
             script too, so it also gets the stdlib's) and the modules the worker itself imports
             while a run is in progress (WORKER_NEEDS, bisectk).
run_main   -- the script run in a `__main__` with the globals `python k.py` gives it: `__builtins__`
             the module (runpy's exec gave a dict: `__builtins__.profile = ...` failed warm), a
             SourceFileLoader as `__loader__`, `__package__` None, `__annotations__` {}; a directory
             or a zip archive (its `__main__.py`) goes through runpy, as `python DIR` does.
clear_main -- the run's module globals cleared as an interpreter's exit clears them, while fds 1
             and 2 are still the run's: a file object it never flushed is flushed.
ExitHooks  -- atexit handlers the run registers, run at its end, last registered first, as an
             interpreter's exit would (the worker's own handlers are not touched); multiprocessing's
             and weakref.finalize's, which run once a process, are armed again for the next run.
held_locks -- the file locks (flock, fcntl) this process holds, from /proc/locks: one a run left
             held on a descriptor it never closed dies with a fresh process, but would outlive the
             run in a worker, and the next run taking it would wait forever: the worker retires.
open_descriptors -- how many file descriptors this process has open: those a run never closed
             (`os.open`, `tempfile.mkstemp`'s fd) close with a fresh process, but pile up in a
             worker until a later run fails with EMFILE ('Too many open files') where a fresh
             process of it passes: past LEFT_OPEN more than the worker had when ready, it retires.
c_environ  -- the C library's environment, which os.putenv/os.unsetenv change without os.environ
             knowing and a child process (subprocess, os.system) inherits: made os.environ's again.
Permanent  -- hooks no call takes back, added by the run: an audit hook (sys.addaudithook) and
             fork handlers (os.register_at_fork). A fresh process's end drops them; in a worker
             they would act in every later run (a hook refusing to open `*.secret` made a good
             configuration fail warm): the run's are counted, and the worker retires. So does
             a call of torch.set_num_interop_threads, by anyone: a later run's would raise.
exit_forked -- a process the run forked (os.fork) that comes back from the script: it exits there,
             as that process of `python script.py` would, rather than go on as a second worker
             (answering the pool, taking the next run's request).
faulthandler_off -- what a run armed in faulthandler and no getter shows: a timer
             (`dump_traceback_later(N, exit=True)`, a script's own watchdog) ticks on in a worker
             and ended a later run N seconds on; a handler `register(SIGUSR1)` installed in C
             kept a later run alive through a signal that kills a fresh process. A fresh process
             has neither: the timer is cancelled and the handlers unregistered after every run.
flush_at_exit -- the run's sys.stdout and sys.stderr flushed as an interpreter's exit flushes them:
             one that fails (a Tee with no flush method, a detached stream) is said as 'Exception
             ignored in: ...' and makes the status 120 (CPython's Py_RunMain), in the run and in a
             child it forked; the worker swallowed it, and such a run passed warm, crashed cold.
TorchLibraries -- operators the run's own code defined with torch.library.define/impl/register_fake,
             which torch keeps for the process: the next run's same definition raised warm. The
             run's own are destroyed after it; a package's stay with the package.
reap_children -- the children an earlier run left that have ended (a fork it never waited for,
             what the pool ended after it) collected before the next run: they stayed the
             worker's zombies, and a later run's os.wait() took one, where a fresh process has none.
join_threads -- the run's non-daemon threads waited for, as threading._shutdown does at exit (idle
             ThreadPoolExecutor workers are woken to exit first, as its exit hook does); the
             watchdog still bounds the run.
"""

from __future__ import annotations

import os
import sys
import threading

# imported by the worker while a run is in progress (worker._exec_script, the finally after it)
WORKER_NEEDS = ("runpy", "traceback", "linecache", "tokenize", "token", "ctypes", "importlib", "pkgutil",
                "json", "gc", "threading", "atexit", "bisectk")


# -- native libraries ---------------------------------------------------------------------------
def mapped_objects() -> set[str]:
    """Regular files mapped executable into this process (shared objects); empty off Linux."""
    out = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6 or "x" not in parts[1] or parts[4] == "0":
                    continue   # not executable, or anonymous (inode 0)
                path = parts[5].rstrip("\n")
                if path.endswith(" (deleted)"):
                    path = path[: -len(" (deleted)")]
                if path.startswith("/"):
                    out.add(path)
    except OSError:
        pass
    return out


def _installed() -> tuple[str, ...]:
    import site
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except Exception:
        pass
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


def own_native(before: set[str], after: set[str], roots: list[str]) -> list[str]:
    """Shared objects the run mapped from its own directories (`roots`: its working directory,
    its script's, what it put on sys.path), not an installed package's (sorted)."""
    installed = _installed()
    own = _under(roots)
    return sorted(p for p in after - before
                  if os.path.realpath(p).startswith(own) and not os.path.realpath(p).startswith(installed))


def _under(roots: list[str]) -> tuple[str, ...]:
    """The run's directories (`roots`) as real-path prefixes: a file whose real path starts with
    one of them is the run's own."""
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def identities(paths) -> dict[str, tuple]:
    """What each file at `paths` is now (device, inode, size, mtime); a path gone is left out."""
    out = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        out[p] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def replaced(held: dict[str, tuple]) -> list[str]:
    """The paths of `held` (identities taken when a run mapped them) whose file is no longer the
    one mapped: rebuilt at the same path (a new inode, or rewritten in place) or removed (sorted)."""
    now = identities(held)
    return sorted(p for p, ident in held.items() if now.get(p) != ident)


# -- random number streams ----------------------------------------------------------------------
def reseed() -> None:
    """Seed the global random streams from the OS, as a fresh process does."""
    import random
    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(None)
        except Exception:
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.seed()
        except Exception:
            pass


# -- faulthandler --------------------------------------------------------------------------------
def faulthandler_off() -> list[str]:
    """Cancel a faulthandler timer the run may have armed (there is no getter: cancelled always)
    and unregister the signals it registered: the words for the latter."""
    fh = sys.modules.get("faulthandler")
    if fh is None:
        return []
    import signal
    fh.cancel_dump_traceback_later()
    out = []
    for sig in signal.valid_signals():
        try:
            if fh.unregister(sig):
                out.append(f"faulthandler.register({signal.Signals(sig).name})")
        except (ValueError, RuntimeError, OSError):   # the fatal signals: enable()'s, not register()'s
            pass
    return out


# -- file locks ---------------------------------------------------------------------------------
def held_locks() -> int:
    """How many file locks /proc/locks lists for this process (0 off Linux)."""
    me = str(os.getpid())
    n = 0
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split()
                if "->" in parts:   # a waiter, blocked on a lock: not held
                    continue
                if len(parts) > 4 and parts[4] == me:
                    n += 1
    except OSError:
        pass
    return n


# -- file descriptors ---------------------------------------------------------------------------
# descriptors the runs may leave open in a worker before it retires: a library that opens a few once,
# in the first run that uses it (a device's, a cache's), keeps the worker; a run that leaks one each
# time, or hundreds at once, takes a later run that much nearer its limit than a fresh process
LEFT_OPEN = 64


def open_descriptors() -> int:
    """How many file descriptors this process has open (0 where /proc/self/fd cannot be read)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1     # less the one listdir itself opened
    except OSError:
        return 0


# -- the C environment ---------------------------------------------------------------------------
def c_environ() -> dict[bytes, bytes] | None:
    """The C library's `environ` (what a child process inherits); None where it cannot be read."""
    try:
        import ctypes
        env = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    except Exception:
        return None
    out: dict[bytes, bytes] = {}
    i = 0
    while env and env[i] is not None:
        k, _, v = env[i].partition(b"=")
        out.setdefault(k, v)
        i += 1
    return out


def sync_c_environ() -> bool:
    """Make the C environment os.environ's again (a run's os.putenv/os.unsetenv undone); True when
    it differed."""
    c = c_environ()
    want = dict(os.environb)
    if c is None or c == want:
        return False
    for k in c.keys() - want.keys():
        os.unsetenv(k)
    for k, v in want.items():
        if c.get(k) != v:
            os.putenv(k, v)
    return True


# -- shadowed modules ---------------------------------------------------------------------------
_startup: frozenset[str] | None = None


def startup_modules() -> frozenset[str]:
    """The modules a fresh `python script.py` has imported before the script runs (asked once)."""
    global _startup
    if _startup is None:
        import subprocess
        try:
            out = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"],
                                 capture_output=True, text=True, timeout=30, env={"PATH": os.environ.get("PATH", "")})
            _startup = frozenset(out.stdout.split())
        except Exception:
            _startup = frozenset(sys.builtin_module_names)
        _startup |= {"sys", "builtins", "os", "io", "abc", "codecs", "encodings", "site"}
    return _startup


def _provided(d: str) -> set[str]:
    """Top-level module names a directory provides as a module file or a regular package."""
    from importlib.machinery import all_suffixes
    out = set()
    try:
        entries = os.listdir(d)
    except OSError:
        return out
    suffixes = tuple(all_suffixes())
    for e in entries:
        if e.endswith(suffixes):
            name = e.split(".", 1)[0]
            if name.isidentifier():
                out.add(name)
        elif e.isidentifier() and os.path.isfile(os.path.join(d, e, "__init__.py")):
            out.add(e)
    return out


class Shadowing:
    """The worker's cached modules that the run's tree provides, hidden for the run."""

    def __init__(self, dirs: list[str]):
        keep = startup_modules()
        names = set()
        for d in dirs:
            names |= _provided(d)
        self.hidden: dict[str, object] = {}
        for name in names:
            if name not in sys.modules or name in keep or name in WORKER_NEEDS:
                continue
            for k in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
                self.hidden[k] = sys.modules.pop(k)

    def restore(self) -> None:
        tops = {k.split(".", 1)[0] for k in self.hidden}
        for k in [k for k in sys.modules if k.split(".", 1)[0] in tops]:
            sys.modules.pop(k, None)   # the run's own copies (its tree's files)
        sys.modules.update(self.hidden)


# -- the exit of the run ------------------------------------------------------------------------
def run_main(script: str) -> None:
    """Run the source file `script` as the interpreter runs `python script`, in a new `__main__`
    (the module it replaces is put back after, as runpy does)."""
    import builtins
    import io
    import types
    from importlib.machinery import SourceFileLoader
    with io.open_code(script) as f:
        source = f.read()
    code = compile(source, script, "exec", dont_inherit=True)   # not this module's __future__ flags
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __loader__=SourceFileLoader("__main__", script),
                         __builtins__=builtins, __annotations__={})
    before = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if before is not None:
            sys.modules["__main__"] = before


def clear_main(script: str) -> None:
    """Clear the run's `__main__` globals as an interpreter's exit clears its modules (underscore
    names first, then the rest, to None): the objects they alone hold are freed by reference
    count, in that order. Collected as a cycle instead (its functions' __globals__), a file
    object's buffer and its raw file are finalized in no order, and what it never flushed is lost.
    The run's objects are the young ones (the worker's heap is frozen): the search is short."""
    import gc
    for d in gc.get_objects():
        if type(d) is dict and d.get("__name__") == "__main__" and d.get("__file__") == script:
            for first in (True, False):
                for k in [k for k in d if k.startswith("_") == first and k != "__builtins__"]:
                    d[k] = None


class ExitHooks:
    """atexit.register/unregister captured for the run (the worker's own handlers untouched)."""

    def __init__(self):
        import atexit
        self.atexit = atexit
        self.saved = (atexit.register, atexit.unregister)
        self.hooks: list[tuple] = []

        def register(func, *args, **kwargs):
            self.hooks.append((func, args, kwargs))
            return func

        def unregister(func):
            self.hooks[:] = [h for h in self.hooks if h[0] != func]
        atexit.register, atexit.unregister = register, unregister

    def detach(self) -> None:
        self.atexit.register, self.atexit.unregister = self.saved

    def run(self) -> None:
        """The run's handlers, last registered first; an error is printed, as at exit."""
        import traceback
        while self.hooks:
            func, args, kwargs = self.hooks.pop()
            try:
                func(*args, **kwargs)
            except SystemExit:
                pass
            except BaseException:
                print(f"Exception ignored in atexit callback: {func!r}", file=sys.stderr)
                traceback.print_exc()
        rearm_exit_functions()


def rearm_exit_functions() -> None:
    """The standard library's exit functions that run once a process, armed again after a run's
    handlers ran them (registered when a run first needed them, they ran here; the modules stay
    loaded in the worker, so later runs would find them done):
    - multiprocessing's: a later run's forked Process, which calls it at its own end to send its
      Queue's data, found it done and sent nothing;
    - weakref.finalize's: it marks every finalizer shut down, and none of a later run fired."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None and getattr(util, "_exiting", False) is True:
        util._exiting = False
    weakref = sys.modules.get("weakref")
    if weakref is not None and getattr(weakref.finalize, "_shutdown", False) is True:
        weakref.finalize._shutdown = False


class Permanent:
    """sys.addaudithook and os.register_at_fork, passed through, each call noted with the file that
    made it: the run's own code (its script, its tree's modules) counts; a module that stays loaded
    registering its own on import (random, logging) does what a fresh process's import would, once.
    torch.set_num_interop_threads counts whoever calls it: a process may call it once."""

    def __init__(self):
        self.saved = (sys.addaudithook, os.register_at_fork)
        self.added: list[tuple[str, str]] = []      # (what, the caller's file)
        audit, at_fork = self.saved

        def addaudithook(hook):
            self.added.append(("an audit hook (sys.addaudithook)", sys._getframe(1).f_code.co_filename))
            return audit(hook)

        def register_at_fork(**kwargs):
            self.added.append(("a fork handler (os.register_at_fork)", sys._getframe(1).f_code.co_filename))
            return at_fork(**kwargs)
        sys.addaudithook, os.register_at_fork = addaudithook, register_at_fork
        # a call a process may make once, whoever makes it: a later run's own call, which a fresh
        # process allows, would raise (torch's thread pool takes its size once; the same size as
        # before is no change a probe could see)
        self.torch = sys.modules.get("torch")
        self.once: list[str] = []
        if self.torch is not None and hasattr(self.torch, "set_num_interop_threads"):
            self.interop = self.torch.set_num_interop_threads

            def set_num_interop_threads(n):
                self.once.append("torch.set_num_interop_threads called, which a process may call once")
                return self.interop(n)
            self.torch.set_num_interop_threads = self.torch._C.set_num_interop_threads = set_num_interop_threads

    def detach(self) -> None:
        sys.addaudithook, os.register_at_fork = self.saved
        if self.torch is not None and hasattr(self, "interop"):
            self.torch.set_num_interop_threads = self.torch._C.set_num_interop_threads = self.interop

    def words(self, roots: list[str]) -> str:
        """What the run's own code (files under `roots`) added that no call removes, in words ('' for
        nothing)."""
        under = _under(roots)
        own = [what for what, f in self.added if under and os.path.realpath(f).startswith(under)]
        parts = [f"{' and '.join(dict.fromkeys(own))} the run added, which nothing removes"] if own else []
        return "; ".join([*dict.fromkeys(self.once), *parts])


class TorchLibraries:
    """The operators the run's own code defined with torch.library.define, impl, register_fake...,
    whose Library objects torch keeps for the process (torch.library._keep_alive): in a fresh
    process they go with it; in a worker the next run's same definition raised 'should only be
    registered with a single call to def()'. Each kept Library is noted with the first file outside
    torch that made it; the run's own (files under its roots) are destroyed after the run, a loaded
    package's (torch._dynamo's, on its first import) stay, as the package does."""

    def __init__(self):
        self.lib = sys.modules.get("torch.library")
        self.keep = getattr(self.lib, "_keep_alive", None)
        self.made: list[tuple[object, str]] = []
        if not isinstance(self.keep, list):
            return
        import functools
        # torch's frames, and functools' (torch.library.define is a singledispatch function)
        skip = (os.path.join(os.path.dirname(os.path.realpath(self.lib.__file__)), ""),
                os.path.realpath(functools.__file__))
        made = self.made

        class Kept(list):
            def append(self, lib):
                f = sys._getframe(1)
                while f is not None and os.path.realpath(f.f_code.co_filename).startswith(skip):
                    f = f.f_back
                made.append((lib, f.f_code.co_filename if f is not None else ""))
                super().append(lib)
        self.lib._keep_alive = Kept(self.keep)

    def detach(self, roots: list[str]) -> str:
        """Put torch's own list back, less the run's own Libraries, destroyed: the words for them."""
        if not isinstance(self.keep, list):
            return ""
        kept, self.lib._keep_alive = self.lib._keep_alive, self.keep
        under = _under(roots)
        own = [lib for lib, f in self.made if under and f and os.path.realpath(f).startswith(under)]
        self.keep[:] = [lib for lib in kept if not any(lib is o for o in own)]
        for lib in own:
            try:
                lib._destroy()
            except Exception:
                pass
        names = sorted({getattr(lib, "ns", "?") for lib in own})
        return f"torch.library registrations ({', '.join(names)})" if own else ""


def reap_children() -> int:
    """Collect every ended child of this process (never waiting for a live one): how many."""
    n = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return n
        if pid == 0:
            return n
        n += 1


def join_threads(before: set) -> None:
    """Wait for the non-daemon threads started since `before`, as the interpreter does at exit."""
    ours = [t for t in threading.enumerate() if t not in before and not t.daemon and t.is_alive()
            and t is not threading.current_thread() and not isinstance(t, threading._DummyThread)]
    if not ours:
        return
    cft = sys.modules.get("concurrent.futures.thread")
    if cft is not None:   # idle executor workers wait for work forever: wake them to exit
        for t, q in list(getattr(cft, "_threads_queues", {}).items()):
            if t in ours:
                ex = t._args[0]() if getattr(t, "_args", None) else None
                if ex is not None:
                    ex._shutdown = True   # what the executor's exit hook (_python_exit) says to its workers
                q.put(None)
    for t in ours:
        t.join()


def flush_at_exit(code: int) -> int:
    """Flush the run's sys.stdout and sys.stderr (each not None and not closed), as the interpreter's
    exit does: the status the process would then exit with (120 where a flush failed, the same
    otherwise; an exit by SIGINT, a negative code, stays one)."""
    failed = False
    for f in (sys.stdout, sys.stderr):
        if f is None:
            continue
        try:
            if f.closed:
                continue
        except Exception:   # no 'closed' (a detached stream's raises): flushed, as the C side does
            pass
        try:
            f.flush()
        except Exception as exc:
            failed = True
            _unraisable(f, exc)
    return 120 if failed and code >= 0 else code


def _unraisable(obj, exc: BaseException) -> None:
    """What sys.unraisablehook's default prints, on the run's sys.stderr (nothing if that fails too)."""
    import traceback
    try:
        text = f"Exception ignored in: {obj!r}\n" + "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None))
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass


def exit_forked(code: int, threads: set, hooks: ExitHooks) -> None:
    """End a process the run forked that has run the script to its end (`pid = os.fork()`, the
    child's branch falling off the script or calling sys.exit): an interpreter's exit, in its order
    (non-daemon threads, atexit handlers, the standard streams flushed), then its status. Never
    returns: it must not go back into the worker, whose request and reply descriptors it shares."""
    try:
        join_threads(threads)
        hooks.run()
        code = flush_at_exit(code)
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except BaseException:
        pass
    if code < 0:   # a KeyboardInterrupt: ended by SIGINT, as CPython does (worker._exec_script)
        import signal
        try:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        except BaseException:
            pass
        os._exit(128 - code)
    os._exit(code & 0xFF)
