"""Reading a subject's output: bounded in memory and on disk, and the result line never lost.

Abstractions
------------
LineFeed      -- splits a byte stream, fed in chunks, into lines for a progress watch (each cut at
                 MAX_LINE bytes).
ResultCatcher -- finds the last `BISECTK_RESULT ...` line of a stream wherever it is: after any
                 amount of other output, and however long the line itself is (up to
                 MAX_RESULT_BYTES, far past the tails kept for reports).
CappedLog     -- the full log on disk, capped: the first LOG_HEAD_BYTES are written as they come,
                 the last LOG_TAIL_BYTES are kept in memory and written at the end after a line
                 saying how much was cut between them. A subject printing 500 MB leaves an 8 MiB log.
Capture       -- one stream's reading: the head and tail kept in memory (its `text()`), the lines
                 for the watch, the result line, the capped log.
pump          -- the reader loop of one file descriptor: polls with a timeout, so it can always be
                 told to stop (a daemon that inherited the pipe and never closes it cannot hold a
                 run, or bisectk, forever); after `stop` it drains what is already buffered.

Why the result line is caught separately: the tail kept for classification is 64 KB, and a subject
with a verbose teardown (or a result line holding a large array) pushed the line out of it; the run
was then "UNRESOLVED infra: no BISECTK_RESULT line" although the subject had reported.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections import deque
from pathlib import Path

from bisectk.run.progress import blurred, unhexed

RESULT_TAG = b"BISECTK_RESULT"
MAX_LINE = 4096                     # bytes of one output line a progress watch sees
FLOOD_BLOCK_LINES = 4               # a block of up to this many lines repeated back to back is a flood
FLOOD_TRIES = 64                    # blocks looked for in a read before the rest is split line by line ...
PLAIN_LINES = 4                     # ... or once this many lines in a row were no flood
MAX_RESULT_BYTES = 16 << 20         # a result line longer than this is kept cut (and will not parse)
LOG_HEAD_BYTES = 4 << 20            # the full log on disk keeps the first ...
LOG_TAIL_BYTES = 4 << 20            # ... and the last this many bytes of each stream
POLL_S = 0.05
DRAIN_S = 1.0                       # after `stop`: at most this long reading what is still coming


class LineFeed:
    """Splits a byte stream, fed in chunks, into lines for a progress watch: each line is cut at
    MAX_LINE bytes (a line still open is kept up to that) and handed on decoded. `emit(text,
    *extra)` gets the extra arguments of `feed`; an exception in it is dropped, so a watchdog bug
    never stops a stream from being drained.

    A line already handed on is not handed on again: to a watch a repeated line says nothing new
    (run/progress.py), and a subject pouring out one line a million times must not cost a progress
    point each, or reading it would slow the subject down enough to make it look hung. Nor a split
    and a set lookup each: a run of back-to-back copies of one line, or of a block of a few lines
    (`repeated`), is skipped by comparing bytes. Lines of one chunk are handed on in order, once
    each (they share one time).

    `keyed`: a line is handed on only when its key is new, the key being the watch's (numbers
    blanked) as run/progress.py's `blurred` and `unhexed` make it for a whole read at once: a log
    of `step 1`, `step 2`, ... costs a translation, a split and a set difference per read (and is
    then a flood like any other), not a decode and a key per line (150 ms a MB, and the subject,
    waiting on its full pipe, looked hung).

    An `emit` that returns True says no line can be new to it any more (the watch has seen as many
    keys as it keeps: run/progress.py's Recorder): from then on only the last line of each read is
    handed on, for its time. A dump of random words (each line a new key) was otherwise keyed line
    by line at about 110 ms a MB, and the subject, waiting on its full pipe, was called a hang."""

    def __init__(self, emit, remember: int = 50_000, keyed: bool = False):
        self.emit = emit
        self.keyed = keyed
        self.full = False
        self.partial = b""
        self.seen: set[bytes] = set()
        self.remember = remember

    def feed(self, chunk: bytes, *extra) -> None:
        data = self.partial + chunk
        end = data.rfind(b"\n") + 1
        self.partial = data[end:][:MAX_LINE]     # an open line's head: its key, wherever reads cut it
        if self.full:
            if end:
                self._emit(data[data.rfind(b"\n", 0, end - 1) + 1:end - 1], extra)
            return
        # a flood of one line (or of a block of a few lines) is skipped at memory speed: splitting
        # it line by line cost 2 ms a 64 KiB read of 2-byte lines, and the subject, waiting on its
        # full pipe, looked hung
        pos = self._floods(data, 0, end, extra)
        if not self.keyed or pos == end:
            self._hand_on(data[pos:end], extra)
            return
        # then the rest blurred (byte for byte as it is): `step 1`, `step 2`, ... is a flood too
        rest = data[pos:end]
        keyed = blurred(rest)
        at = self._floods(rest, 0, len(rest), extra, keyed)
        self._hand_on(rest[at:], extra, keyed[at:])

    def _floods(self, data: bytes, pos: int, end: int, extra: tuple, keyed: bytes | None = None) -> int:
        """Hand on the floods at `pos` of `data` (of `keyed`, data's lines blurred byte for byte,
        when given); where the ordinary output after them begins."""
        plain = 0
        for _ in range(FLOOD_TRIES):
            if pos >= end or plain == PLAIN_LINES:   # ordinary output: split at once, as it comes
                break
            block, after = repeated(data if keyed is None else keyed, pos, end)
            plain = plain + 1 if after - pos == len(block) else 0
            self._hand_on(data[pos:pos + len(block)], extra, None if keyed is None else block)
            pos = after
        return pos

    def _hand_on(self, lines: bytes, extra: tuple, keyed: bytes | None = None) -> None:
        """The whole lines `lines` (each ending in a newline; `keyed`, blurred, when known) keyed at
        once: one split, one set difference. Only a line of a new key is handed on."""
        if keyed is None:
            keyed = blurred(lines) if self.keyed else lines
        keys = keyed.split(b"\n")[:-1]
        if keys and max(map(len, keys)) > MAX_LINE:
            keys = [key[:MAX_LINE] for key in keys]
            keyed = b"".join(key + b"\n" for key in keys)
        if self.keyed and b"0x" in keyed:
            keys = unhexed(keyed).split(b"\n")[:-1]
        new = set(keys) - self.seen
        if not new:
            return
        if len(self.seen) < self.remember:
            self.seen |= new
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))    # a key's first line
        raw = lines.split(b"\n")
        for i in sorted(first[key] for key in new):
            self._emit(raw[i], extra)

    def _emit(self, line: bytes, extra: tuple) -> None:
        try:
            self.full = self.emit(line[:MAX_LINE].decode("utf-8", errors="replace"), *extra) is True or self.full
        except Exception:
            pass


def repeated(data: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """The block of whole lines at `pos` in data[:end] (which ends a line) and where its copies,
    back to back, end: a block of up to FLOOD_BLOCK_LINES lines that repeats right after itself, or
    else the one line at `pos`. Counted by comparing whole runs of copies, never line by line."""
    cut = pos
    for _ in range(FLOOD_BLOCK_LINES):
        cut = data.find(b"\n", cut, end) + 1
        if cut == 0:
            break
        block = data[pos:cut]
        if data.startswith(block, cut, end):
            n, size = 2, len(block)          # copies known to be there
            most = (end - pos) // size
            if data.startswith(block * most, pos, end):
                return block, pos + most * size
            step = 1
            while n + step <= most and data.startswith(block * (n + step), pos, end):
                n, step = n + step, step * 2
            while step > 1:
                step //= 2
                if n + step <= most and data.startswith(block * (n + step), pos, end):
                    n += step
            return block, pos + n * size
    first = data.find(b"\n", pos, end) + 1
    return data[pos:first], first


class ResultCatcher:
    """The last line of a stream that starts with BISECTK_RESULT, found in chunks as they come.

    The line still open at the end of a chunk is carried over only while it can be a result
    line (it starts with the tag, or with a prefix of it), so ordinary output costs one regular
    expression search per chunk, and a result line of any length costs its own bytes once."""

    def __init__(self, limit: int = MAX_RESULT_BYTES):
        self.limit = limit
        self.open: bytearray | None = None   # the unfinished line, when it may be a result line
        self.at_start = True                 # the next byte begins a line
        self.last: bytes | None = None
        self.cut = False                     # the last result line was longer than `limit`

    def feed(self, chunk: bytes) -> None:
        pos = 0
        if self.open is not None:             # continue the line carried over
            nl = chunk.find(b"\n")
            piece = chunk if nl < 0 else chunk[:nl]
            self._extend(piece)
            if nl < 0:
                self._check_open()
                return
            self._close_open()
            pos = nl + 1
        elif not self.at_start:               # inside an ordinary line: skip to its end
            nl = chunk.find(b"\n")
            if nl < 0:
                return
            pos = nl + 1
        last_nl = chunk.rfind(b"\n", pos)
        if last_nl >= pos:
            # the last result line among the complete lines: one reverse search (memmem speed)
            at = chunk.rfind(b"\n" + RESULT_TAG, pos, last_nl)
            start = at + 1 if at >= 0 else (pos if chunk.startswith(RESULT_TAG, pos) else -1)
            if start >= 0:
                line = chunk[start:chunk.find(b"\n", start)]
                self.last, self.cut = line[:self.limit], len(line) > self.limit
            rest_start = last_nl + 1
        else:
            rest_start = pos
        rest = chunk[rest_start:]
        self.at_start = True
        if rest:
            self.open = bytearray()
            self._extend(rest)
            self._check_open()

    def _extend(self, piece: bytes) -> None:
        room = self.limit + 1 - len(self.open)
        if room > 0:
            self.open += piece[:room]

    def _check_open(self) -> None:
        head = bytes(self.open[:len(RESULT_TAG)])
        if not RESULT_TAG.startswith(head):   # not a result line: forget it until its end
            self.open, self.at_start = None, False

    def _close_open(self) -> None:
        line, self.open = bytes(self.open), None
        if line.startswith(RESULT_TAG):
            self.last, self.cut = line[:self.limit], len(line) > self.limit
        self.at_start = True

    def finish(self) -> None:
        """The stream ended: an unfinished last line counts too (a subject may omit the newline)."""
        if self.open is not None:
            self._close_open()

    def text(self) -> str:
        return self.last.decode("utf-8", errors="replace").rstrip("\r") if self.last else ""


class CappedLog:
    """A stream's full log on disk, capped (see the module docstring). A log that cannot be
    written (disk full, directory gone) stops being written; `error` says why."""

    def __init__(self, path: Path, head: int = LOG_HEAD_BYTES, tail: int = LOG_TAIL_BYTES):
        self.path, self.head_limit, self.tail_limit = Path(path), head, tail
        self.written = 0
        self.total = 0
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.error = ""
        try:
            self.file = open(self.path, "wb")
        except OSError as exc:
            self.file, self.error = None, f"{self.path}: {exc.strerror or exc}"

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.file is None:
            return
        if self.written < self.head_limit:
            part = chunk[:self.head_limit - self.written]
            self._write(part)
            self.written += len(part)
            chunk = chunk[len(part):]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size - len(self.tail[0]) >= self.tail_limit:
                self.tail_size -= len(self.tail.popleft())

    def _write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"
            self._close_file()

    def _close_file(self) -> None:
        f, self.file = self.file, None
        if f is not None:
            try:
                f.close()
            except OSError as exc:
                self.error = self.error or f"{self.path}: {exc.strerror or exc}"

    def close(self) -> None:
        if self.file is not None:
            after = self.total - self.written          # bytes past the head
            tail = b"".join(self.tail)[-self.tail_limit:] if after else b""
            cut = after - len(tail)
            if cut > 0:
                self._write(f"\n[bisectk: {cut} bytes of output cut here; the log keeps the first "
                            f"{self.written} and the last {len(tail)} of {self.total}]\n".encode())
            if self.file is not None and tail:
                self._write(tail)
        self._close_file()

    @property
    def cut(self) -> bool:
        return self.total > self.head_limit + self.tail_limit


class Capture:
    """One stream as read: its head and tail in memory (`text()` holds at most `limit` bytes plus
    one line saying what was cut between them), its lines fed to `on_line` (LineFeed, `keyed`),
    its last result line (`result`) and its capped log on disk (`sink`)."""

    def __init__(self, limit: int, sink: Path | None = None, on_line=None, results: bool = False,
                 keyed: bool = False):
        self.head_limit = limit // 4
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0
        self.lines = LineFeed(on_line, keyed=keyed) if on_line is not None else None
        self.results = ResultCatcher() if results else None
        self.log = CappedLog(sink) if sink else None
        self.lock = threading.Lock()

    @property
    def sink_error(self) -> str:
        return self.log.error if self.log else ""

    def feed(self, chunk: bytes, *extra) -> None:
        with self.lock:
            self.total += len(chunk)
            if len(self.head) < self.head_limit:
                self.head += chunk[:self.head_limit - len(self.head)]
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size - len(self.tail[0]) >= self.tail_limit:
                self.tail_size -= len(self.tail.popleft())
            if self.log is not None:
                self.log.write(chunk)
            if self.results is not None:
                self.results.feed(chunk)
        if self.lines is not None:
            self.lines.feed(chunk, *extra)

    def close(self) -> None:
        with self.lock:
            if self.results is not None:
                self.results.finish()
            if self.log is not None:
                self.log.close()

    @property
    def result(self) -> str:
        return self.results.text() if self.results is not None else ""

    def text(self) -> str:
        with self.lock:
            tail = b"".join(self.tail)
            after = self.total - len(self.head)
            if after <= len(tail) and after <= self.tail_limit:
                data = bytes(self.head) + tail[len(tail) - after:] if after else bytes(self.head)
            else:
                keep = tail[-max(0, self.tail_limit - 48):]   # room for the marker line
                marker = f"\n[... {after - len(keep)} bytes not kept ...]\n".encode()
                data = bytes(self.head) + marker + keep
        return data.decode("utf-8", errors="replace")


def pump(pairs: list[tuple[int, Capture]], stop: threading.Event) -> None:
    """Read each descriptor of `pairs` into its capture until it is at EOF; once `stop` is set,
    only what is already buffered is read (for at most DRAIN_S), so a process that still holds a
    pipe cannot keep us here. One thread reads all of a run's streams."""
    poller = select.poll()
    live: dict[int, Capture] = {}
    for fd, capture in pairs:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        live[fd] = capture
    drain_until = None
    try:
        while live:
            if stop.is_set() and drain_until is None:
                drain_until = time.monotonic() + DRAIN_S
            try:
                ready = poller.poll(POLL_S * 1000)
            except InterruptedError:
                continue
            if not ready:
                if stop.is_set():
                    return   # nothing buffered, and whoever still holds a pipe is not ours to wait for
                continue
            for fd, _ in ready:
                if fd not in live:
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    poller.unregister(fd)
                    live.pop(fd).close()
                    continue
                live[fd].feed(chunk)
            if drain_until is not None and time.monotonic() > drain_until:
                return
    finally:
        for capture in live.values():
            capture.close()


class Readers:
    """The reader thread of a run's output descriptors."""

    def __init__(self, pairs: list[tuple[int, Capture]]):
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=pump, args=(list(pairs), self.stop_event), daemon=True,
                                         name="bisectk-output")]
        for t in self.threads:
            t.start()

    def stop(self, timeout: float = DRAIN_S + 1.0) -> None:
        """Ask the readers to finish (after draining what is buffered) and wait for them."""
        self.stop_event.set()
        end = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))

    def wait_eof(self, timeout: float) -> bool:
        """Wait up to `timeout` for every stream to end by itself; True if they did."""
        end = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)
