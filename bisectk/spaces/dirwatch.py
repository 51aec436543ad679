"""Whether anything in a worktree was written since it was left clean, without a stat of every file.

Another run of the same commit must start from the tree its checkout left (worktrees.py, `_tidy`).
A file edited in place moves no directory's mtime, so the check was `git diff-files`: a stat of
every tracked file, 12 ms for 10,002 files on the development VM, paid by each of a confirmation's
re-runs. Linux's inotify says it at once: a watch on every directory of the tree reports a file
created, written, moved, deleted or changed in mode in it. No event since the tree was left clean:
nothing to tidy.

DirWatch -- one inotify instance over a worktree's directories (non-recursive watches, one per
            directory; a directory made since is seen by its parent's watch). `arm(dirs)` watches
            them and forgets every event so far (the switch's own writes); `quiet()` says whether
            none came since; `doubt()` makes it not quiet until the next arm; `written()` which
            entries of the watched directories were (diff's scratch copy, hybrid.py Scratch: what a
            run edited is put back by a stat of those, not of every file). Anything it cannot vouch
            for (no inotify: another OS, a network file system, the watch limit; a queue overflow; a
            watched directory removed or moved) is not quiet and has no list, and the caller checks
            the slow way.

What inotify does not see: a write through another hard link to a tree's file, made from a
directory outside the tree (the event goes to that directory's watchers). A write through mmap is
seen by the close of the file opened for writing, which comes with it.
"""

from __future__ import annotations

import errno
import os
import struct
import sys

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_ONLYDIR = 0x400, 0x800, 0x01000000
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
UNSURE = IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW | IN_IGNORED    # what no list of names can say
_EVENT = struct.Struct("iIII")      # struct inotify_event: wd, mask, cookie, len; then len bytes of name
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
WRITES = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
          | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
MAX_DIRS = 20_000       # more directories than this: the stats of `git diff-files` are the cheaper way

_libc = None


def _lib():
    """libc, through ctypes (imported here: a command that never leases a worktree twice does not
    pay for it at its start)."""
    global _libc
    if _libc is None:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _errno() -> int:
    import ctypes
    return ctypes.get_errno()


class DirWatch:
    def __init__(self):
        self.fd = -1
        self.sound = False      # every directory of the last arm is watched, and nothing was lost
        if not sys.platform.startswith("linux"):
            return
        try:
            fd = _lib().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return
        self.fd = fd if fd >= 0 else -1

    def arm(self, dirs, tags=None) -> None:
        """Watch `dirs` (the tree's directories, as its survey found them) and forget what was
        written so far. `tags`: what `written()` names each directory by (default: as given)."""
        self.sound = False
        if self.fd < 0:
            return
        dirs = list(dirs)
        if len(dirs) > MAX_DIRS:
            self.close()
            return
        add = _lib().inotify_add_watch
        self.tags: dict[int, object] = {}
        for i, d in enumerate(dirs):
            wd = add(self.fd, os.fsencode(d), WRITES)
            if wd < 0 and _errno() != errno.ENOENT:
                self.close()    # the user's watch limit, a file system without inotify: give the
                return          # watches back (an editor's own watches share that limit)
            if wd >= 0:
                self.tags[wd] = tags[i] if tags is not None else d
        self._drain()
        self.sound = True

    def written(self) -> set[tuple[object, str]] | None:
        """(directory's tag, entry name) of each entry created, written, moved, removed or changed
        in mode in a watched directory since `arm`, and forgets them; None when that cannot be
        vouched for (see the module docstring)."""
        if not self.sound or self.fd < 0:
            return None
        names: set[tuple[object, str]] = set()
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return names
            except OSError:
                buf = b""
            if not buf:
                self.sound = False
                return None
            pos = 0
            while pos + _EVENT.size <= len(buf):
                wd, mask, _cookie, size = _EVENT.unpack_from(buf, pos)
                name = buf[pos + _EVENT.size:pos + _EVENT.size + size].rstrip(b"\0")
                pos += _EVENT.size + size
                if mask & UNSURE or wd not in self.tags:
                    self._drain()
                    self.sound = False
                    return None
                names.add((self.tags[wd], os.fsdecode(name)))

    def quiet(self) -> bool:
        """True when nothing was written in the watched tree since `arm`."""
        return self.sound and self.fd >= 0 and not self._drain()

    def doubt(self) -> None:
        """Vouch for nothing until the next `arm` (events read and forgotten by the caller)."""
        self.sound = False

    def _drain(self) -> bool:
        """Read every queued event; whether there was one."""
        seen = False
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return seen
                seen = True
            except BlockingIOError:
                return seen
            except OSError:
                self.sound = False
                return True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
