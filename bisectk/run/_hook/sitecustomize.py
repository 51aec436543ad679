"""bisectk's import recorder, loaded by Python's `site` in a subject's processes (run/imports.py).

It puts a finder first on `sys.meta_path` that asks the other finders, notes the file each module
comes from (unless it is the standard library; for an installed package, the site-packages
directory it is in, once), and appends it at once to
the file named by BISECTK_IMPORTS, so a run that crashes or calls os._exit still leaves its record;
at exit, the files of the modules that finders put ahead of it loaded (pytest's) are noted too.
Then it takes its own directory off `sys.path` and imports the `sitecustomize` that this one
shadows, if there is one: the subject sees the path and the site hooks it would have seen.
Before that, where BISECTK_TRACER asks it (Yama's ptrace_scope 1), it lets bisectk's stack readers
attach to this process (the hang snapshot).
"""
import os
import sys


def _install() -> None:
    out = os.environ.get("BISECTK_IMPORTS")
    if not out:
        return
    try:
        fd = os.open(out, os.O_WRONLY | os.O_APPEND)   # made by bisectk; gone: the run is over
    except OSError:
        return
    import _thread
    # the prefixes not to record (standard library, installed packages) come from bisectk, so this
    # hook imports nothing that a bare interpreter does not have loaded already
    skip = tuple(p for p in os.environ.get("BISECTK_IMPORTS_SKIP", "").split(os.pathsep) if p)
    busy = set()   # threads inside find_spec (it asks the other finders, which may import)
    seen = set()

    class _BisectkImportRecorder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            me = _thread.get_ident()
            if me in busy:
                return None
            busy.add(me)
            try:
                for finder in list(sys.meta_path):
                    if finder is _BisectkImportRecorder:
                        continue
                    find = getattr(finder, "find_spec", None)
                    if find is None:
                        continue
                    spec = find(name, path, target)
                    if spec is not None:
                        _note(spec.origin if spec.has_location else None)
                        return spec
                return None
            finally:
                busy.discard(me)

    def _write(line) -> None:
        try:
            os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))
        except OSError:
            pass

    def _installed(origin) -> bool:
        """A module of an installed package: its site directory is noted once (bisectk keys it by
        what it has installed, whichever Python of the run imported from it), not the file."""
        for mark in ("/site-packages/", "/dist-packages/"):
            i = origin.find(mark)
            if i >= 0:
                site_dir = origin[:i + len(mark) - 1]
                if site_dir not in seen:
                    seen.add(site_dir)
                    _write(site_dir)
                return True
        return False

    def _note(origin) -> None:
        if not origin or origin in seen:
            return
        seen.add(origin)
        if _installed(origin) or origin.startswith(skip):
            return   # the common case, decided without a system call
        real = os.path.realpath(origin)
        if _installed(real) or real.startswith(skip):
            return
        _write(real)

    sys.meta_path.insert(0, _BisectkImportRecorder)

    def _sweep() -> None:
        """At exit, every module loaded by a finder put ahead of this one later: pytest's
        assertion rewriter loads the test files and the conftest.py files itself, which
        this finder never sees (a conftest of the user's checkout, loaded beside their own
        test file there, changed every commit's verdict unseen)."""
        for module in list(sys.modules.values()):
            origin = getattr(module, "__file__", None)
            if isinstance(origin, str) and origin.endswith(".py"):
                _note(origin)

    import atexit
    atexit.register(_sweep)


def _chain() -> None:
    """Off the path, and on to the sitecustomize this one shadows (if any), which then stands in
    sys.modules as `sitecustomize` in our place."""
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
    try:
        import _frozen_importlib as bootstrap            # loaded at start-up already: no import cost
        import _frozen_importlib_external as external
        spec = external.PathFinder.find_spec("sitecustomize", sys.path)
        if spec is None or spec.loader is None:
            return
        module = bootstrap.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    except Exception:
        import traceback
        traceback.print_exc()


def _allow_reader() -> None:
    """Under Yama's ptrace_scope 1, only a process's ancestors may read it: bisectk, which reads a
    hung run's stacks with its own children (py-spy, gdb), names itself in BISECTK_TRACER
    (run/snapshot.py tracer_env), and the run allows it (prctl PR_SET_PTRACER)."""
    tracer = os.environ.get("BISECTK_TRACER", "")
    if not tracer.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None).prctl(0x59616D61, int(tracer), 0, 0, 0)
    except Exception:
        pass


_allow_reader()
_install()
_chain()
