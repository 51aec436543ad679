"""The temporary files a bisectk process makes for its runs (a warm run's FIFO directory, a cold
run's import record) name their owner, and a later bisectk removes those whose owner is gone.

Each is removed by its maker when the run ends, and at Ctrl-C; what a run still under way when
bisectk exits leaves (a run made ahead at --jobs above one, in a daemon thread a Ctrl-C does not
wait for) is removed as bisectk exits (`_remove_own`, at exit). A bisectk ended by SIGKILL (by
hand, by the OOM killer, by a CI job's timeout) runs no cleanup at all; its processes are found
again by run records (process.reap_stale), and its temporary files by their names:
`bisectk-warm-PID.START-xxxx` -- PID and START (process_start: ticks since boot) of the process
that made it. An entry whose PID is not running, or runs but started at another time (the PID was
reused), is stale. Only the current user's entries are looked at; nothing else in the temporary
directory is touched.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading

from bisectk.procstat import process_start

KINDS = ("warm", "imports")     # bisectk-warm-* (directories), bisectk-imports-* (files)

_swept = threading.Lock()
_done = [False]


@functools.cache
def _tag_of(pid: int) -> str:
    return f"{pid}.{int(process_start(pid) or 0)}-"


def _tag() -> str:
    return _tag_of(os.getpid())     # by pid: a forked child is its own owner


_at_exit: set[int] = set()     # the processes whose exit removes what they made
_making = threading.Lock()     # held while an entry is made, and by the exit's removal
_exiting = [False]             # set by the exit's removal: nothing more is made


def _remember() -> None:
    pid = os.getpid()
    with _swept:
        if pid in _at_exit:
            return
        _at_exit.add(pid)
    atexit.register(_remove_own, pid, tempfile.gettempdir())


def _remove_own(pid: int, directory: str) -> None:
    """At exit: remove the entries this process made that are still there. Never raises."""
    if os.getpid() != pid:
        return      # a forked child inherited the handler: what it made is its own
    with _making:   # a run thread still under way makes nothing after this
        _exiting[0] = True
    heads = tuple(f"bisectk-{kind}-{_tag_of(pid)}" for kind in KINDS)
    try:
        with os.scandir(directory) as entries:
            for e in entries:
                if e.name.startswith(heads):
                    try:
                        if e.is_dir(follow_symlinks=False):
                            shutil.rmtree(e.path, ignore_errors=True)
                        else:
                            os.unlink(e.path)
                    except OSError:
                        pass
    except OSError:
        pass


def make_dir(kind: str) -> str:
    """A private directory, removed by the caller (or, once its maker is dead, by sweep)."""
    _remember()
    with _making:
        _refuse_when_exiting()
        return tempfile.mkdtemp(prefix=f"bisectk-{kind}-{_tag()}")


def make_file(kind: str) -> tuple[int, str]:
    """A private file (fd, path), as tempfile.mkstemp."""
    _remember()
    with _making:
        _refuse_when_exiting()
        return tempfile.mkstemp(prefix=f"bisectk-{kind}-{_tag()}")


def _refuse_when_exiting() -> None:
    if _exiting[0]:
        raise OSError("bisectk is exiting: no new run")


def owner(name: str) -> tuple[int, int] | None:
    """(pid, start) from an entry's name; None for a name that is not one of ours."""
    for kind in KINDS:
        head = f"bisectk-{kind}-"
        if name.startswith(head):
            stamp = name[len(head):].split("-", 1)[0]
            pid, dot, start = stamp.partition(".")
            if dot and pid.isdigit() and start.isdigit():
                return int(pid), int(start)
    return None


def sweep(directory: str | None = None, *, force: bool = False) -> int:
    """Remove the entries of dead owners in `directory` (the temporary directory); once per
    process unless `force`. Returns how many were removed. Never raises."""
    with _swept:
        if _done[0] and not force:
            return 0
        _done[0] = True
    removed = 0
    uid = os.getuid()
    try:
        with os.scandir(directory or tempfile.gettempdir()) as entries:
            for e in entries:
                who = owner(e.name)
                if who is None:
                    continue
                try:
                    if e.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    start = process_start(who[0])
                    if start is not None and int(start) == who[1]:
                        continue        # its maker is alive: it removes it itself
                    if e.is_dir(follow_symlinks=False):
                        shutil.rmtree(e.path)
                    else:
                        os.unlink(e.path)
                    removed += 1
                except OSError:
                    continue
    except OSError:
        pass
    return removed
