"""Warm workers forked from a template, pool side (the template's side is run/template.py).

Abstractions
------------
Replies  -- what every warm worker handle shares: the reply pipe read line by line, the ready
            message, the exit request, close. The pool's fresh worker (poolworker._Worker) and the
            forked one (Forked) are both Replies.
Template -- the pool's handle on one template process: started under a supervisor (so it, and
            every worker forked from it, dies with bisectk), waited for once (its imports), then
            asked to `fork` workers. It hears which of its workers ended and how (`status`).
            `lost` says why it can no longer be trusted (killed, stopped, its supervisor gone):
            then the pool stops forking from it and kills it with its workers.
Forked   -- one worker forked from a template: its requests go down a pipe of its own, its
            replies come up another, its log is the pool's. Its containment is the template's
            (a run that kills or stops the template loses it, as a run that kills a fresh
            worker's supervisor does); what its runs leave behind stays in its own tree (it is a
            subreaper), and is killed there after each run.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from bisectk.procstat import gone, psutil, stopped
from bisectk.run.process import RUN_ID_ENV, death_words, kill_run, kill_tree, start_contained

FORK_TIMEOUT_S = 10.0
FORK_READY_S = 30.0     # a forked worker makes a CUDA context (under 1 s); one that takes longer never will
MAX_MESSAGE = 1 << 20
LOST_WORDS = "the warm worker's supervisor (the template it was forked from)"


_CLOSING = threading.Lock()


class Replies:
    """The reply side of a warm worker: subclasses set `reply_fd` and provide `send`, `kill` and
    `_wait_exit`; `kill` closes the pipe with `close_reply`."""

    reply_fd: int

    def __init__(self) -> None:
        self.buf = b""
        self.runs = 0
        self.ready_info: dict | None = None
        self.exit_asked = False

    def read_line(self, timeout: float | None) -> dict | None:
        """The next JSON line from the reply pipe; None on timeout; EOFError when the worker died."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            if self.reply_fd < 0:
                raise EOFError("the worker's reply pipe is closed")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.reply_fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.reply_fd, 65536)
            if not chunk:
                raise EOFError("the worker closed its reply pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close_reply(self) -> None:
        """Close the reply pipe, once. A worker can be killed from two threads (a pool closed while
        the worker was still starting kills it, and so does the thread that started it); a second
        os.close of the number would close whatever another thread had opened under it since."""
        with _CLOSING:
            fd, self.reply_fd = self.reply_fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def wait_ready(self, timeout: float) -> bool:
        try:
            msg = self.read_line(timeout)
        except (EOFError, OSError, ValueError):   # died, or killed by close() while importing
            return False
        if msg and msg.get("ready"):
            self.ready_info = msg
            return True
        return False

    def send(self, req: dict) -> None:
        raise NotImplementedError

    def kill(self, grace_s: float = 0.5) -> None:
        raise NotImplementedError

    def _wait_exit(self, timeout: float) -> None:
        raise NotImplementedError

    def ask_exit(self) -> None:
        """Ask the worker to exit (once: closing a pool asks all its workers before waiting)."""
        if self.exit_asked:
            return
        self.exit_asked = True
        try:
            self.send({"op": "exit"})
        except Exception:
            pass

    def close(self, deadline: float | None = None, grace_s: float = 0.5) -> None:
        """Ask the worker to exit, wait for it until `deadline` (default: 5 s from now), then
        kill whatever is left of its tree."""
        self.ask_exit()
        try:
            self._wait_exit(max(0.0, (deadline or time.monotonic() + 5) - time.monotonic()))
        except Exception:
            pass
        self.kill(grace_s)


class Template:
    """One template process (see the module docstring)."""

    def __init__(self, python: str, env: dict[str, str], preload: tuple[str, ...], log: Path | None):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(log, "ab") if log else subprocess.DEVNULL
        self.run_id = uuid.uuid4().hex
        try:
            self.contained = start_contained(
                [python, "-P", "-m", "bisectk.run.template", "--control-fd", str(child.fileno()),
                 "--preload", ",".join(preload)],
                stdout=subprocess.DEVNULL, stderr=self.log, env={**env, RUN_ID_ENV: self.run_id},
                pass_fds=(child.fileno(),), cwd=os.getcwd(), grace=0.5)
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.sock = parent
        self.pid = self.contained.pid
        self.lock = threading.Lock()        # one conversation on the socket at a time
        self.ready_info: dict | None = None
        self.failed = ""                    # why it cannot fork ('' while it can)
        self.refused = False                # it said why not: another template would say the same
        self.statuses: dict[int, int] = {}  # worker pid -> how it ended (Popen's returncode)
        self._next = 0

    # -- the socket ---------------------------------------------------------------------------
    def _read(self, timeout: float) -> dict | None:
        """The next message (None on timeout); exits are filed away and not returned. Called
        with the lock held. EOFError when the template is gone."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.sock], [], [], max(0.0, left))
            if not ready:
                return None
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                raise EOFError("the template closed its socket")
            msg = json.loads(data)
            if "exited" in msg:
                self.statuses[int(msg["exited"])] = int(msg["status"])
                continue
            return msg

    def wait_ready(self, timeout: float) -> bool:
        """Whether the template has imported and can fork (the first caller waits for it)."""
        end = time.monotonic() + timeout
        if not self.lock.acquire(timeout=timeout):
            return False
        try:
            while self.ready_info is None and not self.failed:
                try:
                    msg = self._read(max(0.0, end - time.monotonic()))
                except (EOFError, ValueError) as exc:
                    self.failed = f"the template ended before it was ready ({exc})"
                    break
                if msg is None:
                    self.failed = "the template was not ready in time"
                elif msg.get("ready"):
                    self.ready_info = msg
        finally:
            self.lock.release()
        return self.ready_info is not None and not self.failed

    def fork(self, env: dict[str, str], log: Path | None) -> Forked | None:
        """A new worker forked with `env` set (its CUDA context not yet made: wait_ready on it);
        None when the template refused or could not be asked (`failed` says why)."""
        if self.failed or self.ready_info is None:
            return None
        run_id = uuid.uuid4().hex
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        log_f = open(log, "ab") if log else open(os.devnull, "wb")
        with self.lock:
            self._next += 1
            ident = self._next
            try:
                socket.send_fds(self.sock, [json.dumps({"op": "fork", "id": ident,
                                                        "env": {**env, RUN_ID_ENV: run_id}}).encode()],
                                [req_r, rep_w, log_f.fileno()])
                pid = None
                end = time.monotonic() + FORK_TIMEOUT_S
                while pid is None and time.monotonic() < end:
                    msg = self._read(max(0.0, end - time.monotonic()))
                    if msg is None:
                        break
                    if msg.get("id") != ident:
                        continue
                    if "refused" in msg:
                        self.failed = f"the template refused to fork: {msg['refused']}"
                        self.refused = True
                        break
                    pid = int(msg["forked"])
                if pid is None and not self.failed:
                    self.failed = "the template did not answer a fork in time"
            except (OSError, EOFError, ValueError) as exc:
                self.failed = f"the template could not be asked to fork ({exc})"
                pid = None
            finally:
                for fd in (req_r, rep_w):
                    os.close(fd)
                log_f.close()
        if pid is None:
            for fd in (req_w, rep_r):
                os.close(fd)
            return None
        return Forked(self, pid, run_id, os.fdopen(req_w, "wb"), rep_r)

    def refuse(self, why: str) -> None:
        """Fork no more from this template (what it forks does not work): workers start fresh."""
        self.failed = why
        self.refused = True

    def status(self, pid: int, timeout: float) -> int | None:
        """How worker `pid` ended (Popen's returncode), waiting up to `timeout` for the news."""
        end = time.monotonic() + timeout
        while pid not in self.statuses and time.monotonic() < end:
            if not self.lock.acquire(timeout=max(0.0, end - time.monotonic())):
                break
            try:
                self._read(min(0.1, max(0.0, end - time.monotonic())))
            except (EOFError, ValueError):
                break
            finally:
                self.lock.release()
        return self.statuses.get(pid)

    # -- its health ---------------------------------------------------------------------------
    def lost(self) -> str:
        """Why this template (the containment of its workers) cannot be trusted ('' while it
        can): it, or its supervisor, was killed or stopped."""
        proc = self.contained.proc
        if proc.poll() is not None:
            return f"{LOST_WORDS} {death_words(proc.returncode)}"
        if gone(self.pid):
            return f"{LOST_WORDS} was killed"
        if stopped(self.pid) or stopped(proc.pid):
            return f"{LOST_WORDS} was stopped (SIGSTOP or a debugger) during the run"
        return ""

    def kill(self) -> None:
        """End the template and every worker forked from it, whatever state they are in."""
        self.failed = self.failed or "closed"
        for pid in (self.pid, self.contained.proc.pid):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        kill_tree(self.contained.proc.pid, grace_s=0.2)
        kill_tree(self.pid, grace_s=0.0)
        kill_run(self.run_id)
        self.contained.close()
        try:
            self.contained.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.sock.close()
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def kill_alive(procs) -> int:
    """SIGKILL the processes of `procs` (psutil) that are not zombies; how many there were."""
    alive = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            pass
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    return len(alive)


class Forked(Replies):
    """One worker forked from `template` (see the module docstring)."""

    def __init__(self, template: Template, pid: int, run_id: str, requests, reply_fd: int):
        super().__init__()
        self.template = template
        self.pid = pid
        self.run_id = run_id
        self.requests = requests
        self.reply_fd = reply_fd
        self.tree_pid = pid             # where a hang's snapshot reads the worker's tree
        self._status: int | None = None

    def send(self, req: dict) -> None:
        self.requests.write((json.dumps(req) + "\n").encode())
        self.requests.flush()

    def supervisor_lost(self) -> str:
        return self.template.lost()

    def usable(self) -> bool:
        """Alive, and its template (its containment) intact: a run that killed the template took
        every worker forked from it along (PR_SET_PDEATHSIG), spares too. A worker stopped from
        outside while it waited (a SIGSTOP, a debugger) would never answer: not usable."""
        return not gone(self.pid) and not stopped(self.pid) and not self.template.lost()

    def returncode(self, timeout: float) -> int | None:
        """How the worker ended (Popen's returncode), once the template has reaped it."""
        if self._status is None:
            self._status = self.template.status(self.pid, timeout)
        return self._status

    def _wait_exit(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not gone(self.pid) and time.monotonic() < end:
            time.sleep(0.01)

    def leftovers(self) -> int:
        """Kill what a run left running in the worker's tree (it is their subreaper); how many."""
        try:
            return kill_alive(psutil.Process(self.pid).children(recursive=True))
        except psutil.Error:
            return 0

    def kill(self, grace_s: float = 0.5) -> None:
        """End the worker and everything of its tree now; where the template was lost (a run
        killed or stopped it), the template and all its workers as well."""
        try:
            os.kill(self.pid, signal.SIGCONT)
        except OSError:
            pass
        kill_tree(self.pid, grace_s=grace_s)
        if self.template.lost():    # its tree may have been cut off from it: find it by its run id
            kill_run(self.run_id)
            self.template.kill()
        for closing in (self.requests.close, self.close_reply):
            try:
                closing()
            except (OSError, ValueError):
                pass
