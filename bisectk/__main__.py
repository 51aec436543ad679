"""`python -m bisectk` and the `bisectk` console script: a `bisect` command's history walk begins
(spaces/early.py) before the CLI and its libraries load."""

import sys


def _open_pool(root: str, size: int):
    """The WorktreePool `bisect` opens (cli.py), for the first checkout begun early."""
    from bisectk.spaces.worktrees import WorktreePool
    return WorktreePool(root, size=size)


def _fill_closed_std() -> None:
    """A command started with stdin, stdout or stderr closed (`>&-`, a daemon's launcher): the
    descriptor is filled with /dev/null before anything opens a file or a pipe, which would
    otherwise take its number (a run's pipe as fd 1), and Python's stream for it (None) with a
    stream on it: what would have been printed is dropped, and the command still runs."""
    import fcntl
    import os
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            # open, and writable where it must be: a launcher that ran with the descriptor closed may
            # have left a file of its own there (a pyenv shim's script, read-only, as fd 2)
            if mode == "r" or fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
                os.fstat(fd)
                continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, mode, closefd=False, encoding="utf-8", errors="replace"))


def _buffered_std() -> None:
    """Under PYTHONUNBUFFERED (or -u) Python's stdout and stderr write straight to the file
    descriptor, and a write that a closed pipe cuts short (`report --json | head -c 10`: the
    64 KiB the pipe took of a larger document) is taken as done: the command ended 0 with its
    output truncated. Each such stream gets a buffer that writes the rest, or fails with
    BrokenPipeError (the exit as SIGPIPE's), flushed at every line as before."""
    import io
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        raw = getattr(stream, "buffer", None)
        if isinstance(raw, io.RawIOBase):
            own = io.FileIO(raw.fileno(), "w", closefd=False)    # not Python's: closing either spares the other
            setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(own), encoding=stream.encoding,
                                                errors=stream.errors, line_buffering=True, write_through=True))


_early: list[int] = []      # signals that arrived before engine/interrupts.py had loaded


def _noted_early(signum, frame) -> None:
    _early.append(signum)


def main() -> None:
    # first, with the built-in _signal (no file read; signal.py imports enum): a Ctrl-C during the
    # start is noted, and acted on once the CLI has loaded. Before, one that came while
    # interrupts.py and what it imports were read from disk (milliseconds on a loaded machine) was
    # a traceback.
    import _signal
    for s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(s) is not _signal.SIG_IGN:
            _signal.signal(s, _noted_early)
    from bisectk.engine import interrupts
    interrupts.defer(_early)
    _fill_closed_std()
    _buffered_std()
    from bisectk.spaces import early
    early.start(sys.argv[1:], _open_pool)
    from bisectk.cli import entry
    entry()


if __name__ == "__main__":
    main()
