"""Run one command in an isolated process tree with a watchdog; leave nothing behind.

Abstractions
------------
RawRun          -- what happened to one process: exit code or signal, timed out or not, captured
                   output tails, wall time, how many descendants it left behind (killed). No
                   judgement: classification is `run/classify.py`'s job.
run_process     -- start argv (never through a shell) under a supervisor, feed nothing on stdin,
                   read stdout/stderr through run/output.py (head and tail in memory, the result
                   line wherever it is, capped logs on disk, pipes polled so a daemon holding them
                   cannot block us), and end the whole process tree: on timeout (SIGTERM, a grace
                   period, SIGKILL), after a normal exit too (whatever the subject left running),
                   and on Ctrl-C with a short grace (INTERRUPT_GRACE_S).
SupervisorLost  -- a subject may SIGKILL or SIGSTOP its parent, the supervisor: the wait notices
                   (EOF, or the supervisor's state read every SUPERVISOR_CHECK_S), the run's
                   processes are ended by hand (`kill_run`: every process carrying its run id) and
                   the run is not judged (UNRESOLVED infra, the reason in words).
start_contained -- the building block: argv running under its supervisor, with the handle to
                   end it (the warm workers start their processes through it as well).
reap_stale      -- the last resort: processes of runs whose bisectk and supervisor both died,
                   found by the run id in their environment, killed at the next start.
run_tool        -- bisectk's own short, trusted tools (git): a plain child in its own session,
                   output captured whole, its group ended if it outlives `timeout` (no supervisor:
                   git does not daemonise when asked not to, and it runs hundreds of times).

Why a supervisor (`run/supervise.py`): a subject is often `sh -> python -> compiler`, and some
subjects start daemons (double fork, `setsid`) or leave children running after they exit. A
process group misses whatever made its own session; a tree walk from the subject misses orphans,
which the kernel reparents to init. The supervisor is a child subreaper, so every orphan of the
tree is reparented to it and the walk below it is complete; and because it is a process of its
own, it ends the tree even when bisectk is SIGKILLed (it sees EOF on its socket). Every process
the tool starts should go through here.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bisectk.procstat import process_start, psutil, stopped  # noqa: F401  (process_start re-exported)

from bisectk.run import supervise, tmpfiles
from bisectk.run.spares import SPARES, SUPERVISOR, SUPERVISOR_ARGV  # noqa: F401  (SUPERVISOR re-exported)
from bisectk.run.oomkill import OomWatch
from bisectk.run.output import Capture, LineFeed, Readers  # noqa: F401  (LineFeed re-exported)
from bisectk.run.progress import FixedWatch
from bisectk.run.startcheck import exec_paths, invalid_command, shell_script, why_not_started
from bisectk.run.watchdog import wait_run

TAIL_BYTES = 64 * 1024
GRACE_S = 1.0            # SIGTERM -> SIGKILL, on timeout
INTERRUPT_GRACE_S = 0.3  # the same on Ctrl-C: the user is waiting for the prompt
SUPERVISOR_CHECK_S = 0.1  # how often a run's supervisor is looked at (killed? stopped?)
LEFTOVER_GRACE_S = 0.2   # the same, for what a subject left running after it exited
START_TIMEOUT_S = 60.0   # the supervisor's own start (a loaded machine)
RUN_ID_ENV = "BISECTK_RUN_ID"  # set in every subject's environment: the last resort finds it there


@dataclass
class RawRun:
    started: bool
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stdout: str = ""     # head and tail of the output (run/output.py Capture.text)
    stderr: str = ""
    error: str = ""
    leftovers: int = 0  # processes still alive after the subject exited, killed by the supervisor
    poisoned: str = ""  # a warm worker's CUDA context failed after the run returned: what it said
    timeline: list | None = None   # progress points seen (run/progress.py Timeline.to_list())
    stalled: str = ""              # where a hung run stopped, in words
    result: str = ""               # the last BISECTK_RESULT line of stdout, wherever it was
    imports: tuple = ()            # source files the run imported (see run/imports.py), when recorded
    isolation: str = ""            # a warm worker: interpreter state the run changed (restored, or why not)
    stuck: dict | None = None      # where it waited when the watchdog fired (run/snapshot.py), if asked
    oom: bool | None = None        # a SIGKILL death (or exit 137): the OOM killer's (True), not (False),
                                   # or nothing here could tell (None); run/oomkill.py
    phase: str = "run"             # "build": the job's build failed, and this is it (the run never started)


def kill_tree(pid: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM the process tree rooted at `pid` (and its process group), then SIGKILL survivors."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)  # a group leader's pid is its group id
        except (ProcessLookupError, PermissionError):
            pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        procs = _wait_gone(procs, grace_s if sig == signal.SIGTERM else 2.0)
        if not procs:
            break


def _alive(p: psutil.Process) -> bool:
    # A zombie has finished; whether its parent (or init) has reaped it yet is not our business.
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while True:
        procs = [p for p in procs if _alive(p)]
        if not procs or time.monotonic() >= deadline:
            return procs
        time.sleep(0.01)


def signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class SupervisorLost(Exception):
    """The run's supervisor was stopped (SIGSTOP, by the subject or anyone) while the run went on:
    containment can no longer be trusted, so the run is ended by hand and not judged."""


class Contained:
    """A subject running under its supervisor. `proc` is the supervisor's Popen (its exit status
    mirrors the subject's); `pid` is the subject's; `t0` when it started (time.monotonic)."""

    def __init__(self, proc: subprocess.Popen, guard: socket.socket, pid: int, t0: float, streams=None):
        self.proc, self.guard, self.pid, self.t0 = proc, guard, pid, t0
        # the subject's stdout and stderr, read here: the Popen's pipes, or ours when a spare runs it
        self.stdout, self.stderr = streams or (proc.stdout, proc.stderr)
        self.spare = streams is not None
        self.ended = False      # told to end the tree: the socket is shut, the supervisor cannot serve again
        self._buf = b""

    def reusable(self, report: dict | None) -> bool:
        """Whether the supervisor may serve another run: a spare whose run ended by itself, left
        nothing behind and was never told to end (supervise.py's `reusable`; a hang is ended, a
        lost supervisor sends no report)."""
        return bool(self.spare and not self.ended and report and report.get("reusable") and not self._buf)

    def wait(self, deadline: float | None = None):
        """The supervisor's final report (a dict), None if it died without one, or TimeoutError
        raised when `deadline` (time.monotonic) passes first. SupervisorLost when the supervisor
        is found stopped (looked at every SUPERVISOR_CHECK_S: a stopped supervisor never reports,
        and would leave us waiting for good)."""
        while True:
            msg, self._buf = supervise.unpack_from(self._buf)
            if msg is not None:
                return msg
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError
            step = SUPERVISOR_CHECK_S if left is None else min(left, SUPERVISOR_CHECK_S)
            ready, _, _ = select.select([self.guard], [], [], step)
            if not ready:
                why = self.stopped()
                if why:
                    raise SupervisorLost(why)
                continue
            try:
                chunk = self.guard.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self._buf += chunk

    def stopped(self) -> str:
        """Why the supervisor cannot act ('' while it can): it is stopped or traced."""
        if stopped(self.proc.pid):
            return "the run's supervisor was stopped (SIGSTOP or a debugger) during the run"
        return ""

    def end(self, interrupt: bool = False) -> None:
        """Ask the supervisor to end the tree now (SIGTERM, grace, SIGKILL); it still reports.
        `interrupt`: Ctrl-C, so the grace is INTERRUPT_GRACE_S, not the run's."""
        self.ended = True
        try:
            if interrupt:
                self.guard.send(supervise.INTERRUPT)
            self.guard.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def abandon(self, run_id: str | None) -> None:
        """Ctrl-C before the run is waited for (while it starts, or right after): the supervisor
        is asked to end the tree, as after a run, and given the interrupt's grace; then it is
        killed, and anything carrying `run_id` in its environment goes too. The subject runs in a
        session of its own, so killing the supervisor alone would leave it (holding the caller's
        pipes: a Ctrl-C'd command hung until the subject's sleep ran out)."""
        self.end(interrupt=True)
        try:
            self.proc.wait(timeout=supervise.INTERRUPT_GRACE_S + 2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if run_id:
            kill_run(run_id)

    def close(self) -> None:
        self.guard.close()


def start_contained(argv: list[str], *, cwd=None, env: dict[str, str] | None = None,
                    stdin=subprocess.DEVNULL, stdout=None, stderr=None, pass_fds=(),
                    grace: float = GRACE_S, leftover_grace: float = LEFTOVER_GRACE_S) -> Contained:
    """Start argv under a supervisor. `env` is the subject's complete environment (default: ours).
    Raises OSError or ValueError, as Popen would, when argv cannot start."""
    env = dict(os.environ if env is None else env)
    problem = invalid_command(argv, cwd, env)
    if problem:
        raise ValueError(problem)
    parent, child = socket.socketpair()
    try:
        proc = subprocess.Popen([sys.executable, *SUPERVISOR_ARGV, str(child.fileno())], cwd=cwd,
                                stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
                                pass_fds=(child.fileno(), *pass_fds))
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    c = Contained(proc, parent, -1, 0.0)
    return _started(c, _handshake(c, _config(argv, env, grace, leftover_grace)))


def _config(argv: list[str], env: dict[str, str], grace: float, leftover_grace: float, **more) -> dict:
    """What the supervisor is told to run (run/supervise.py's configuration frame)."""
    return {"argv": list(argv), "env": env, "paths": exec_paths(argv[0], env), "grace": grace,
            "leftover_grace": leftover_grace, **more}


def _handshake(c: Contained, cfg: dict) -> dict | None:
    """Tell the supervisor what to run; its first reply (None if it never came)."""
    try:
        c.guard.sendall(supervise.pack(cfg))
        try:
            return c.wait(time.monotonic() + START_TIMEOUT_S)
        except TimeoutError:
            return None
    except BaseException:
        c.abandon(cfg["env"].get(RUN_ID_ENV))     # the subject may run already
        c.guard.close()
        raise


def _started(c: Contained, reply: dict | None) -> Contained:
    """The started run, or OSError (closing what was opened) when the subject could not start."""
    proc, parent = c.proc, c.guard
    if reply is None or "pid" not in reply:
        for stream in {c.stdout, c.stderr, proc.stdout, proc.stderr} - {None}:
            stream.close()
        parent.close()
        proc.wait()
        if reply is None:
            raise OSError(0, f"the process supervisor did not start (exit {proc.returncode})")
        raise OSError(reply.get("errno") or 0, reply.get("error") or "cannot start",
                      reply.get("filename") or None)
    c.pid, c.t0 = reply["pid"], reply["t0"]
    return c


def _start_on_spare(argv: list[str], cwd, env: dict[str, str], grace: float = GRACE_S,
                    leftover_grace: float = LEFTOVER_GRACE_S) -> Contained | None:
    """Start argv on an idle spare supervisor (run/spares.py), its stdout and stderr to pipes
    read here; None when no spare is idle or the one taken did not answer (the caller starts a
    supervisor itself). OSError, as start_contained, when the subject cannot start."""
    spare = SPARES.take()
    if spare is None:
        return None
    proc, parent = spare
    pipes = [os.pipe(), os.pipe()]
    try:
        socket.send_fds(parent, [b"F"], [pipes[0][1], pipes[1][1]])
    except OSError:
        parent.close()
        for r, _ in pipes:
            os.close(r)
        return None
    finally:
        for _, w in pipes:
            os.close(w)
    c = Contained(proc, parent, -1, 0.0, streams=tuple(open(r, "rb", buffering=0) for r, _ in pipes))
    try:
        reply = _handshake(c, _config(argv, env, grace, leftover_grace, reuse=True,
                                      cwd=os.path.abspath(cwd) if cwd else os.getcwd()))   # it waits in /
    except (OSError, SupervisorLost):   # it died, or was stopped, while it waited: passed over
        reply = None
    if reply is None:       # nothing of the run started on it (_handshake ended anything that might have)
        parent.close()
        for stream in (c.stdout, c.stderr):
            stream.close()
        proc.kill()         # a stopped one too
        proc.wait()
        return None
    return _started(c, reply)


def run_process(argv: list[str], *, cwd: str | os.PathLike | None = None,
                env: dict[str, str] | None = None, timeout: float | None = None,
                log_dir: Path | None = None, tail_bytes: int = TAIL_BYTES,
                base_env: dict[str, str] | None = None, watch=None, record_imports: bool = False,
                snapshot=None, oom_counter: str | None = None) -> RawRun:
    """Run argv to completion or until its watchdog calls a hang. Never raises for the subject's
    behaviour (nor for a command the kernel refuses: that is `RawRun(started=False, error=...)`).

    The child's environment is `base_env` (default: this process's) updated with `env`. The
    `watch` (run/progress.py; default a FixedWatch of `timeout` seconds, None: no watchdog) hears
    every output line and says when the run is a hang (run/watchdog.py: the one wait loop).
    `record_imports`: Python processes of the run record the source files they import
    (run/imports.py), returned in `RawRun.imports`. With a `snapshot` request (run/snapshot.py),
    a hung tree is read before it is ended (`RawRun.stuck`).

    A supervisor that dies (SIGKILL) or is stopped (SIGSTOP) during the run -- a hostile subject
    can do either to its parent -- is noticed within SUPERVISOR_CHECK_S: the run's processes are
    ended by hand (its tree, and any process carrying its run id) and the run is not judged
    (`started=False`, the reason in `error`: UNRESOLVED infra).

    A subject that dies of SIGKILL is asked about the OOM killer (run/oomkill.py, `RawRun.oom`);
    `oom_counter` names the counter file to read instead of its cgroup's (a test's seam)."""
    problem = invalid_command(argv, cwd, env)
    if problem:
        return RawRun(started=False, error=f"cannot start: {problem}")
    watch = watch if watch is not None else FixedWatch(timeout)
    reap_stale()
    run_id = uuid.uuid4().hex
    full_env = {**(os.environ if base_env is None else base_env), **(env or {}), RUN_ID_ENV: run_id}
    if snapshot is not None:        # the readers of a hang are this process's children (Yama)
        from bisectk.run.snapshot import tracer_env
        full_env.update(tracer_env())
    recording = None
    if record_imports:
        from bisectk.run import imports
        recording = imports.Recording(full_env)
    def start(argv: list[str]) -> Contained:
        return (_start_on_spare(argv, cwd, full_env)
                or start_contained(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))

    oom = OomWatch(counter=oom_counter)     # before the start: what the run's time adds is its own
    try:    # the kernel log's descriptor is closed however the run ends (a start refused, Ctrl-C)
        try:
            try:
                c = start(argv)
            except OSError as exc:
                if exc.errno != errno.ENOEXEC or not shell_script(argv[0], cwd):
                    raise
                # a script without `#!`: a shell runs it with sh (POSIX's rule for ENOEXEC), and so
                # does `git bisect run`, whose command goes through the shell
                argv = ["/bin/sh", *argv]
                c = start(argv)
        except BaseException as exc:   # a start refused, or Ctrl-C during it
            if recording:
                recording.close()
            if not isinstance(exc, (OSError, ValueError)):
                raise
            return RawRun(started=False, error=f"cannot start {argv[0]!r}: {why_not_started(exc, argv[0], cwd, argv, full_env)}")
        try:
            SPARES.refill(_RUNNING.add(1))     # the next run's supervisor starts while this one runs
            record = _write_record(run_id, c)
            caps = captures(log_dir, tail_bytes, lambda text: watch.feed(text, time.monotonic() - c.t0))
            readers = Readers([(c.stdout.fileno(), caps[0]), (c.stderr.fileno(), caps[1])])
        except BaseException:      # Ctrl-C between the start and the wait: the run ends all the same
            _RUNNING.add(-1)
            c.abandon(run_id)
            if recording:
                recording.close()
            raise
        try:
            hung, report, lost = _wait(c, watch, snapshot)
        except BaseException:
            # Ctrl-C or an error in bisectk itself: never leave the subject behind, and be quick
            c.end(interrupt=True)
            _finish(c, readers, record, run_id, quick=True)
            if recording:
                recording.close()
            raise
        if report is None and not lost:
            c.proc.wait()
            lost = f"the run's supervisor {death_words(c.proc.returncode)} during the run"
        _finish(c, readers, record, run_id, lost=bool(lost), keep=c.reusable(report))
        imported = recording.read_and_close() if recording else ()
        notes = [cap.sink_error for cap in caps if cap.sink_error]
        if lost:  # the supervisor is gone: what it watched over was ended by hand; no verdict
            return RawRun(started=False, error=f"{lost}; its processes were ended; the run cannot be judged",
                          stdout=caps[0].text(), stderr=caps[1].text(), result=caps[0].result)
        status = report.get("status")
        code = None if hung or status is None else os.waitstatus_to_exitcode(status)
        # bisectk sends SIGKILL only after a hang (or on a lost supervisor, never judged): this is another's
        killed = oom.killed(c.pid) if code in (-signal.SIGKILL, 128 + signal.SIGKILL) else None
        duration = hung.at_s if hung else report.get("duration", 0.0)
        return RawRun(started=True, exit_code=code, signal=None if code is None else signal_name(code),
                      timed_out=hung is not None, duration_s=duration, stdout=caps[0].text(), stderr=caps[1].text(),
                      error=f"log not written: {notes[0]}" if notes else "", leftovers=report.get("leftovers", 0),
                      timeline=watch.timeline(duration).to_list(), stalled=hung.stalled if hung else "",
                      result=caps[0].result, imports=imported, stuck=hung.stuck if hung else None, oom=killed)
    finally:
        oom.close()


def captures(log_dir: Path | None, tail_bytes: int, on_line) -> list[Capture]:
    """stdout's and stderr's readings: tails in memory, capped logs in `log_dir` (when it can be
    made), every line to `on_line`, the result line caught on stdout."""
    sinks = [None, None]
    if log_dir:
        try:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            sinks = [Path(log_dir) / "stdout.log", Path(log_dir) / "stderr.log"]
        except OSError:
            pass  # no full logs; the tails are still kept
    return [Capture(tail_bytes, sinks[0], on_line, results=True, keyed=True),
            Capture(tail_bytes, sinks[1], on_line, keyed=True)]


def death_words(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        return f"was killed by {signal_name(returncode)}"
    return f"exited ({returncode}) without a report"


def _wait(c: Contained, watch, snapshot):
    """(Hung or None, the supervisor's report or None, why containment was lost or ''). On a hang
    the tree is read first (run/watchdog.py), then ended, and its report still waited for."""
    report = None

    def step(seconds: float) -> bool:
        nonlocal report
        try:
            report = c.wait(time.monotonic() + seconds)
            return True
        except TimeoutError:
            return False
    try:
        # no `older`: the tree under c.pid is the subject's, made for this run: its CPU waits
        # count whole (run/starvation.py), and nothing needs reading at the start
        hung = wait_run(step, watch, c.t0, pid=c.pid, snapshot=snapshot)
        if hung is not None:
            c.end()
            report = c.wait(time.monotonic() + GRACE_S + supervise.KILL_ROUNDS_S + 5)
        return hung, report, ""
    except SupervisorLost as exc:
        return None, None, str(exc)
    except TimeoutError:   # the supervisor never reported after being told to end the tree
        return None, None, "the run's supervisor did not end the run when told to"


def run_tool(argv: list[str], *, cwd=None, env: dict[str, str] | None = None,
             timeout: float = 600.0, text: bool = True) -> subprocess.CompletedProcess:
    """Run a short tool of bisectk's own to completion; its group is killed if it takes longer
    than `timeout` (then the returncode is -9). Raises OSError when it cannot start. With
    text=False stdout stays bytes (a large listing is parsed without decoding it)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=text, errors="replace" if text else None,
                            start_new_session=True)
    try:   # errors="replace": git prints commit subjects and paths in whatever bytes they were written in
        out, err = proc.communicate(timeout=timeout)
    except BaseException:   # a timeout, Ctrl-C: never leave it behind
        kill_tree(proc.pid, grace_s=0.2)
        out, err = proc.communicate()
        if not isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
            raise
        note = f"\ntimed out after {timeout:g} s"
        return subprocess.CompletedProcess(argv, -9, out, err + (note if text else note.encode()))
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class _Count:
    """Runs of this process between their start and their end (as many spares are kept)."""

    def __init__(self):
        self.n, self.lock = 0, threading.Lock()

    def add(self, k: int) -> int:
        with self.lock:
            self.n += k
            return self.n


_RUNNING = _Count()


def _finish(c: Contained, readers: Readers, record: Path | None, run_id: str, *, quick: bool = False,
            lost: bool = False, keep: bool = False) -> None:
    """End what is left of the run and stop reading its output. With the supervisor alive it has
    ended the tree itself; with it lost, everything is ended here (the supervisor, the subject's
    tree, and any process still carrying the run id). The readers stop after draining what is
    buffered, so a daemon still holding a pipe cannot keep us waiting."""
    _RUNNING.add(-1)
    if lost:
        _end_lost(c, run_id)
    if keep:        # its report said the tree is gone: it goes back to wait for the next run
        SPARES.give(c.proc, c.guard)
    else:
        try:
            c.proc.wait(timeout=INTERRUPT_GRACE_S + 2 if quick else GRACE_S + supervise.KILL_ROUNDS_S + 5)
        except subprocess.TimeoutExpired:  # the supervisor itself is stuck: end everything by hand
            _end_lost(c, run_id)
            c.proc.wait()
        c.close()
    if not readers.wait_eof(0.2 if quick or lost else 2.0):
        readers.stop()
    for stream in (c.stdout, c.stderr):
        if stream:
            try:
                stream.close()
            except OSError:
                pass
    if record:
        try:
            record.unlink()
        except OSError:
            pass


def _end_lost(c: Contained, run_id: str) -> None:
    """End a run whose supervisor is gone or stopped: the supervisor, the subject's tree, and every
    process with the run id in its environment (a daemon that left the tree still carries it)."""
    try:
        os.kill(c.proc.pid, signal.SIGKILL)   # works on a stopped process too
    except OSError:
        pass
    kill_tree(c.pid, grace_s=0.2)
    kill_run(run_id)


def kill_run(run_id: str) -> int:
    """SIGKILL every process whose environment carries this run id; returns how many."""
    return len(_kill_marked({f"{RUN_ID_ENV}={run_id}".encode() + b"\0"}))


def _kill_marked(needles: set[bytes]) -> list[int]:
    """SIGKILL every process (but this one) whose environment holds one of `needles`."""
    victims = []
    for pid in psutil.pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if any(n in environ for n in needles):
            victims.append(pid)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)   # SIGKILL ends a stopped process as well
        except OSError:
            pass
    return victims


# -- the last resort: records of live runs, reaped at the next start ------------------------
def cache_home() -> Path:
    """$XDG_CACHE_HOME, or ~/.cache where it is unset or relative (the XDG spec calls a relative
    one invalid: it would put bisectk's records under whatever directory a command was typed in,
    a user's checkout)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return Path(base if os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".cache"))


def live_dir() -> Path:
    return cache_home() / "bisectk" / "live"


_OWNER: dict = {}


def _write_record(run_id: str, c: Contained) -> Path | None:
    """Best effort: a run we cannot record is still contained by its supervisor."""
    try:
        d = live_dir()
        d.mkdir(parents=True, exist_ok=True)
        if "start" not in _OWNER:
            _OWNER["start"] = process_start(os.getpid())
        path = d / f"{run_id}.json"
        path.write_text(json.dumps({"run_id": run_id, "host": socket.gethostname(), "owner": os.getpid(),
                                    "owner_start": _OWNER["start"], "supervisor": c.proc.pid, "subject": c.pid}))
        return path
    except OSError:
        return None


_reaped_once = threading.Lock()
_reaped = [False]


def reap_stale(directory: Path | None = None, *, force: bool = False) -> int:
    """Kill the processes of recorded runs whose bisectk is gone (found by RUN_ID_ENV in their
    environment: a daemon that left the subject's session still carries it), and drop the records.
    Runs once per bisectk process unless `force`; returns how many processes it killed."""
    with _reaped_once:
        if _reaped[0] and not force:
            return 0
        _reaped[0] = True
    if directory is None:
        tmpfiles.sweep()    # and the temporary files such a bisectk left (run/tmpfiles.py)
    d = directory or live_dir()
    try:
        records = list(d.glob("*.json"))
    except OSError:
        return 0
    stale = []
    host = socket.gethostname()
    for path in records:
        try:
            rec = json.loads(path.read_text())
            owner, owner_start = int(rec["owner"]), rec.get("owner_start")
            run_id = str(rec["run_id"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if rec.get("host", host) != host:
            continue  # another node's (a home shared by a cluster's nodes): its pid says nothing here
        start = process_start(owner)
        if start is not None and (owner_start is None or start == owner_start):
            continue  # its bisectk is alive (another session): its supervisor is in charge
        stale.append((path, run_id))
    if not stale:
        return 0
    victims = _kill_marked({f"{RUN_ID_ENV}={run_id}".encode() + b"\0" for _, run_id in stale})
    for path, _ in stale:
        try:
            path.unlink()
        except OSError:
            pass
    return len(victims)
