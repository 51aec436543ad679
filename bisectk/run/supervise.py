"""The per-run supervisor: the process that makes a subject's whole tree die with its run.

Started by `bisectk.run.process` as `python -I -S`, importing this file and calling `main` with
FD (standard library only, so it starts in ~10 ms and no user environment variable such as
PYTHONPATH or LD_* meant for the subject can change it). FD is one end of a socket pair whose other
end bisectk keeps. A spare (`FD spare`, run/spares.py) is started before its run: it waits for the
run's stdout and stderr, passed over the socket, and for a configuration naming the run's cwd.

Abstractions
------------
frame        -- one message on the socket: 4-byte big-endian length, then `marshal` data.
                bisectk -> supervisor: the configuration {argv, env, paths, grace,
                leftover_grace, and cwd for a spare}. supervisor -> bisectk: {"pid", "t0"} once the subject runs (or
                {"error", "errno", "filename"} if it cannot start), then {"status", "duration",
                "leftovers", "aborted", "reusable"} at the end. A spare told `reuse` whose run
                ended by itself, leaving nothing, says `reusable` and waits for the next run's
                output descriptors instead of exiting (run/spares.py takes it back). EOF from
                bisectk (it closed or shut down its end, or it died, even by SIGKILL) means: end
                the subject's tree now; the byte INTERRUPT before it means: the user pressed
                Ctrl-C, use the short grace.
supervisor   -- a child subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux): every orphan in the
                subject's tree, a double-forked `setsid` daemon included, is reparented to it
                rather than to init, so the tree below it is complete and can always be walked.
                It starts the subject as the leader of a process group of its own, in its own session (with no terminal), waits, and then kills every
                descendant that is left (SIGTERM, a grace period, SIGKILL until none remains): after
                a normal exit, after a timeout or interruption (EOF on the socket), or on SIGTERM.
                Its own exit status mirrors the subject's, so a `Popen` of the supervisor reads like
                a `Popen` of the subject (the warm workers rely on this).

Why a separate process rather than bisectk itself as the subreaper: the tree must die when bisectk
is SIGKILLed, and then only a process outside bisectk is left to kill it. It lives in its own
session, so a signal to bisectk's process group (Ctrl-C, a terminal hangup) does not reach it;
bisectk tells it what to do through the socket.
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import sys
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS_S = 5.0  # SIGKILL rounds stop after this long (a fork bomb outrunning us)
INTERRUPT = b"K"     # bisectk -> supervisor before EOF: Ctrl-C, end the tree with INTERRUPT_GRACE_S
INTERRUPT_GRACE_S = 0.3


# -- frames (shared with the bisectk side) ---------------------------------------------------
def pack(obj) -> bytes:
    data = marshal.dumps(obj)
    return len(data).to_bytes(4, "big") + data


def unpack_from(buf: bytes):
    """(message, rest) if `buf` holds a whole frame, else (None, buf)."""
    if len(buf) < 4:
        return None, buf
    n = int.from_bytes(buf[:4], "big")
    if len(buf) < 4 + n:
        return None, buf
    return marshal.loads(buf[4:4 + n]), buf[4 + n:]


def _read_frame(fd: int):
    buf = b""
    while True:
        msg, rest = unpack_from(buf)
        if msg is not None:
            return msg
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk


def _send(fd: int, obj) -> None:
    data = pack(obj)
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass  # bisectk is gone: nobody to tell


# -- the process tree --------------------------------------------------------------------------
def prctl(option: int, value: int) -> bool:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except Exception:  # not Linux, or no libc symbol: containment falls back to the process group
        return False


_HAVE_CHILDREN_FILE = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _children(pid: int) -> list[int]:
    kids = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
        except (OSError, ValueError):
            pass
    return kids


def _ppid_map() -> dict[int, list[int]]:
    """Fallback without /proc/PID/task/TID/children: parent -> children from every /proc/PID/stat."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(name))
    return tree


def descendants(root: int) -> list[int]:
    """Every live (non-zombie) process below `root`."""
    tree = None if _HAVE_CHILDREN_FILE else _ppid_map()
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        for kid in (_children(pid) if tree is None else tree.get(pid, [])):
            stack.append(kid)
            if not _zombie(kid):
                out.append(kid)
    return out


PTRACE_DETACH = 17


def untrace(pid: int, sig: int) -> None:
    """Let go of a child that made this supervisor its tracer (PTRACE_TRACEME, as an anti-debugging
    check does) and is stopped for it: waitpid reports a tracee's stops, and one was read as its
    end, the subject SIGKILLed and said to be killed 'not by bisectk'. Detached, it goes on as an
    untraced process would: the signal it stopped for delivered, but the SIGTRAP a tracee gets at
    an execve, which an untraced process never sees."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        libc.ptrace(PTRACE_DETACH, pid, None, ctypes.c_void_p(0 if sig == signal.SIGTRAP else sig))
    except Exception:   # no libc symbol: it stays stopped, and the watchdog calls the hang
        pass


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # gone


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class _Reaper:
    """Reaps every child of the supervisor (the subject and adopted orphans), keeping the subject's status."""

    def __init__(self):
        self.subject = -1
        self.status: int | None = None

    def __call__(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if os.WIFSTOPPED(status):   # a child that made this supervisor its tracer: not its end
                untrace(pid, os.WSTOPSIG(status))
                continue
            if pid == self.subject:
                self.status = status


def end_tree(me: int, reap: _Reaper, grace: float, subject: int | None = None) -> int:
    """SIGTERM every descendant (and the subject's group), wait up to `grace`, then SIGKILL in
    rounds until none is left. Returns how many processes were found alive at the start."""
    targets = descendants(me)
    if subject is not None:
        try:
            os.killpg(subject, signal.SIGTERM)  # the subject leads its own group
        except OSError:
            pass
    if not targets:
        reap()
        return 0
    found = len(targets)
    _signal_all(targets, signal.SIGTERM)
    _signal_all(targets, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()
        if not descendants(me):
            return found
        time.sleep(0.01)
    deadline = time.monotonic() + KILL_ROUNDS_S
    while True:
        reap()
        left = descendants(me)
        if not left or time.monotonic() > deadline:
            break
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.002)
    reap()
    return found


# -- starting the subject ---------------------------------------------------------------------
_DEFAULT_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGPIPE, getattr(signal, "SIGXFSZ", None),
                                     signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD) if s is not None)


def _spawn(cfg: dict) -> int:
    """posix_spawn the subject as the leader of a process group of its own, in this supervisor's
    session (which has no terminal), trying each candidate path as execvpe would: as a shell's job
    control starts `python k.py`. The leader of a session of its own, as it was, could not
    `os.setpgrp()` (EPERM: a session leader cannot move its group), which works in a terminal."""
    first_other = last = None
    for path in cfg["paths"]:
        if not os.path.lexists(path):
            # what execvpe skips (ENOENT), skipped without a spawn: each failed posix_spawn forks
            # and converts the whole environment (thousands of factor variables, a long PATH)
            last = last or FileNotFoundError(2, "No such file or directory", path)
            continue
        try:
            return os.posix_spawn(path, cfg["argv"], cfg["env"], setpgroup=0, setsigdef=_DEFAULT_SIGNALS)
        except OSError as exc:
            last = exc
            if exc.errno not in (2, 20) and first_other is None:  # ENOENT, ENOTDIR: try the next
                first_other = exc
    raise first_other or last or FileNotFoundError(2, "No such file or directory", cfg["argv"][0])


# -- main ---------------------------------------------------------------------------------------
_flags = {"abort": False}


def _on_term(signum, frame) -> None:
    _flags["abort"] = True


def _detach_fds(keep: set[int]) -> None:
    """Give up the output pipes and any passed descriptor: bisectk must see EOF on them when the
    subject's tree is gone, not when the supervisor exits."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _mirror(status: int | None) -> None:
    """Exit as the subject did: the same code, or the same signal (without a core dump of our own)."""
    if status is None:
        os._exit(255)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        prctl(PR_SET_DUMPABLE, 0)
        try:
            if sig != signal.SIGKILL:   # its disposition cannot be set (EINVAL), nor caught
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255)


def _take_output(fd: int) -> bool:
    """A spare (started before its run, its output on /dev/null) takes the run's stdout and stderr:
    two descriptors passed over the socket with one byte. False when bisectk closed it instead."""
    import socket
    sock = socket.socket(fileno=fd)
    try:
        data, fds, _, _ = socket.recv_fds(sock, 1, 2)
    except OSError:
        return False
    finally:
        sock.detach()
    if not data or len(fds) != 2:
        return False
    for src, dst in zip(fds, (1, 2)):
        os.dup2(src, dst)
        os.close(src)
    return True


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    spare = argv[2:3] == ["spare"]
    os.set_inheritable(fd, False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interruption reaches us as EOF, from bisectk
    # a spare makes itself a subreaper while it waits: nothing of a run is done before the run
    subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) if spare else None
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_term)
    while True:
        if spare and not _take_output(fd):
            os._exit(0)  # bisectk went away (or gave up this spare) before it had a run for us
        cfg = _read_frame(fd)
        if cfg is None:
            os._exit(0)  # bisectk went away before telling us what to run
        if spare and _flags["abort"]:
            os._exit(0)  # told to end while idle (SIGTERM): run nothing; bisectk starts the run elsewhere
        if subreaper is None:
            subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
        status, report = _serve(fd, cfg, subreaper, wake_r, wake_w)
        # A spare whose run ended by itself and left nothing behind may serve the next run
        # (REUSE): its own start (~30 ms) was most of a quick run's cost. Anything else -- a
        # tree that had to be ended, a signal to us, a run that asked nothing -- ends it here.
        again = spare and bool(cfg.get("reuse")) and not report["aborted"] and not report["leftovers"] \
            and not _flags["abort"]
        if again:
            try:
                os.chdir("/")   # idle, it holds no run's directory (a worktree may be removed)
            except OSError:
                pass
        report["reusable"] = again
        _send(fd, report)
        if not again:
            _mirror(status)


def _serve(fd: int, cfg: dict, subreaper: bool, wake_r: int, wake_w: int) -> tuple[int | None, dict]:
    """Run one configuration to its end: (the subject's wait status, the final report)."""
    me = os.getpid()
    reap = _Reaper()
    try:
        if cfg.get("cwd"):      # a spare started in bisectk's directory, not the run's
            os.chdir(cfg["cwd"])
        pid = _spawn(cfg)
    except (OSError, ValueError) as exc:
        _send(fd, {"error": getattr(exc, "strerror", None) or str(exc), "errno": getattr(exc, "errno", None) or 0,
                   "filename": str(getattr(exc, "filename", "") or "")})
        os._exit(127)
    t0 = time.monotonic()
    reap.subject = pid
    _send(fd, {"pid": pid, "t0": t0, "subreaper": subreaper})
    _detach_fds({fd, wake_r, wake_w})

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    aborted = False
    grace = float(cfg.get("grace", 1.0))
    while True:
        reap()
        if reap.status is not None or _flags["abort"]:
            aborted = reap.status is None
            break
        try:
            events = poller.poll(1000)  # periodic reaping of adopted orphans, even without SIGCHLD
        except InterruptedError:
            continue
        for f, _ in events:
            if f == wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            elif f == fd:
                try:
                    data = os.read(fd, 512)
                except OSError:
                    data = b""
                if INTERRUPT in data:
                    grace = min(grace, INTERRUPT_GRACE_S)
                if not data:
                    _flags["abort"] = True
                    poller.unregister(fd)
    end = time.monotonic()
    if aborted:
        end_tree(me, reap, grace, subject=pid)
        leftovers = 0
    else:
        leftovers = end_tree(me, reap, float(cfg.get("leftover_grace", 0.2)))
    return reap.status, {"status": reap.status, "duration": end - t0, "leftovers": leftovers, "aborted": aborted}


if __name__ == "__main__":
    main(sys.argv)
