"""Read the stack tools' output into snapshot groups (bisectk/stuck.py). Pure: text in, groups out.

Abstractions
------------
Frame            -- one frame: file, line, function; `own` when it is the subject's (not the
                    interpreter's library, not site-packages, not bisectk's own worker).
python_threads   -- py-spy's `dump --json` output -> one (name, frames, active) per thread.
native_threads   -- gdb's `thread apply all bt` output -> the same, for a native process.
group_threads    -- threads with the same own frames are one Group, placed at the innermost own
                    frame ("2 threads waiting at pipeline.py:194 consumer"), with the kind of wait
                    read from the library frames above it (a lock, a join, a condition, a sleep).
frameless        -- the threads read with no frame at all (a thread starting or ending, an interpreter
                    exiting): no place to show, so not grouped; the snapshot says them in a note.
Threads with no own frame at all (an idle pool thread of a library) are grouped by their innermost
frame and listed after the subject's; bisectk's own worker threads are dropped.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from bisectk.stuck import ON_CPU, Group

BISECTK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIB_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    own: bool

    def place(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line} {self.function}" if self.line else \
               f"{os.path.basename(self.file) or '?'} {self.function}"


def python_own(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(BISECTK_DIR + os.sep):
        return False
    return not any(m in path for m in _LIB_MARKERS)


def python_threads(text: str) -> list[tuple[str, list[Frame], bool]]:
    """py-spy dump --json: [(thread name, frames innermost first, on CPU)]."""
    data = json.loads(text)
    out = []
    for t in data if isinstance(data, list) else []:
        frames = [Frame(f.get("filename") or "", int(f.get("line") or 0), f.get("name") or "?",
                        python_own(f.get("filename") or ""))
                  for f in t.get("frames") or [] if isinstance(f, dict)]
        name = t.get("thread_name") or f"thread {t.get('os_thread_id') or t.get('thread_id')}"
        out.append((str(name), frames, bool(t.get("active"))))
    return out


_THREAD = re.compile(r'^Thread \d+ \(.*?LWP (\d+)\)(?: "([^"]*)")?\)?:?')
_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\)(?: at (\S+):(\d+))?(?: from (\S+))?\s*$")


def native_own(file: str) -> bool:
    return bool(file) and not file.startswith(("./", "../", "/usr/", "/build/")) and "sysdeps" not in file


def native_threads(text: str) -> list[tuple[str, list[Frame], bool]]:
    """gdb `thread apply all bt`: [(thread name, frames innermost first, False)]."""
    out: list[tuple[str, list[Frame], bool]] = []
    current: list[Frame] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _THREAD.match(line)
        if m:
            current = []
            out.append((f"{m.group(2) or 'thread'} (LWP {m.group(1)})", current, False))
            continue
        f = _FRAME.match(line)
        if f and current is not None:
            func, file, num = f.group(1), f.group(2) or (f.group(4) or ""), int(f.group(3) or 0)
            current.append(Frame(file, num, func, native_own(file) if f.group(2) else False))
    return out


# A thread in an asyncio loop's `run_forever` with none of the subject's frames above it: the loop
# waits in its selector, and what its tasks await is on no thread's stack (py-spy reads threads)
EVENT_LOOP = "event loop idle"

# The kind of wait, read from the library frames above the subject's innermost own frame: the one
# nearest the subject's call names it (a join waits on a futex too; Event.wait on a Condition).
_WAITS = tuple((re.compile(rx), kind) for rx, kind in (
    (r"^BaseEventLoop\.(run_forever|_run_once)$", EVENT_LOOP),
    (r"_wait_for_tstate_lock|Thread\.join|pthread_join|clockjoin", "join"),
    (r"Condition\.wait|pthread_cond_|cond_wait", "condition wait"),
    (r"Event\.wait", "event wait"),
    (r"Barrier\.wait|pthread_barrier_wait", "barrier wait"),
    (r"Semaphore\.acquire|sem_wait|sem_timedwait", "semaphore"),
    (r"Queue\.(get|put)", "queue"),
    (r"lll_lock|pthread_mutex_lock|mutex_lock|pthread_rwlock|pthread_spin_lock", "lock"),
    (r"(^|_)(nano|u)?sleep$|clock_nanosleep", "sleep"),
    (r"^(__GI_)?(__)?(libc_)?(select|poll|ppoll|epoll_wait|recv|recvfrom|read|accept|wait4|waitpid)(64)?$|selectors|socket\.", "I/O wait"),
    (r"cuCtxSynchronize|cudaDeviceSynchronize|cuStreamSynchronize|cudaStreamSynchronize|\.synchronize$", "GPU synchronize"),
))


def wait_kind(frames: list[Frame], code: str, active: bool) -> str:
    above = []
    for f in frames:
        if f.own:
            break
        above.append(f.function)
    for fn in reversed(above):      # the library call nearest the subject's own frame says what it waits for
        for rx, kind in _WAITS:
            if rx.search(fn):
                return kind
    text = code.replace(" ", "")
    if text.startswith("with") or ".acquire(" in text:
        return "lock"
    if "sleep(" in text:
        return "sleep"
    if ".join(" in text:
        return "join"
    if ".wait(" in text:
        return "wait"
    return ON_CPU if active else ""


def source_line(path: str, line: int, cache: dict[str, list[str]] | None = None) -> str:
    if not path or line <= 0:
        return ""
    cache = {} if cache is None else cache
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                cache[path] = f.read().splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip()[:160] if 0 < line <= len(lines) else ""


def _names(names: list[str]) -> str:
    seen = sorted(dict.fromkeys(names), key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])
    return ", ".join(seen[:4]) + (f" (+{len(seen) - 4} more)" if len(seen) > 4 else "")


def _bisectks_own(frames: list[Frame]) -> bool:
    """A thread of bisectk's own: every frame with a real file is bisectk's (the supervisor starts
    from `python -c`, whose outermost frame is `<string>`)."""
    files = [f.file for f in frames if f.file and not f.file.startswith("<")]
    return bool(files) and all(os.path.abspath(f).startswith(BISECTK_DIR + os.sep) for f in files)


def frameless(threads: list[tuple[str, list[Frame], bool]]) -> list[str]:
    """The names of the threads read with no frame at all."""
    return [name for name, frames, _ in threads if not frames]


def group_threads(threads: list[tuple[str, list[Frame], bool]], scope: str) -> list[Group]:
    """One Group per distinct stack of own frames; library-only threads after the subject's."""
    buckets: dict[tuple, list] = {}
    cache: dict[str, list[str]] = {}
    for name, frames, active in threads:
        if not frames or _bisectks_own(frames):
            continue   # no place to show (frameless), or bisectk's own machinery (a warm worker, a run's supervisor)
        own = tuple((f.file, f.line, f.function) for f in frames if f.own)
        key = own or (("lib",) + tuple((f.file, f.line, f.function) for f in frames[:1]))
        buckets.setdefault(key, []).append((name, frames, active))
    groups = []
    for key, members in buckets.items():
        name, frames, active = members[0]
        own = [f for f in frames if f.own]
        top = own[0] if own else frames[0]
        code = source_line(top.file, top.line, cache) if own else ""
        groups.append((not own, -len(members), Group(
            role=_names([m[0] for m in members]), count=len(members), place=top.place(), instruction=code,
            wait=wait_kind(frames, code, any(m[2] for m in members)), scope=scope,
            stack=tuple(f.place() for f in own))))
    groups.sort(key=lambda x: (x[0], x[1]))
    return [g for *_, g in groups]
