"""Warm workers, parent side: one run in a slot's worker, from its request to its RawRun.

WarmRun    -- the part of WorkerPool (run/pool.py) that hands a job to a slot's worker, waits on it
              with the one wait loop (run/watchdog.py), reads its output through two FIFOs as a
              cold run's pipes are read (run/output.py), and turns the worker's reply, its death,
              a hang or its lost containment into a RawRun, retiring the worker where its process
              state is in doubt. `_COLD`: the run broke its worker and must be done cold.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from bisectk.run import tmpfiles
from bisectk.run.classify import recognise
from bisectk.run.executor import Job
from bisectk.run.oomkill import OomWatch
from bisectk.run.output import Readers
from bisectk.run.pending import RunAbandoned
from bisectk.run.poolworker import _Slot, _Worker
from bisectk.run.process import SUPERVISOR_CHECK_S, TAIL_BYTES, RawRun, captures, signal_name
from bisectk.run.watchdog import Watch, wait_run
from bisectk.run.worker import BROKEN


class WarmRun:
    """One run in a slot's warm worker: WorkerPool's, over its `_retire`, `_note`, `stats`."""

    oom_counter: str | None = None    # the OOM-kill counter to read instead of the cgroup's (a test's seam)

    def _run_on(self, slot: _Slot, job: Job, watch: Watch):
        """One run in the slot's worker: its RawRun; None when the worker refused it (it was
        retired); _COLD when the run broke the worker (it must be done cold)."""
        w = slot.worker
        # the run's fds 1 and 2 are FIFOs read here as a cold run's pipes are (run/output.py):
        # capped logs, the result line wherever it is, lines followed as they come
        fifos = _Fifos()
        t0 = time.monotonic()
        caps = captures(job.log_dir, TAIL_BYTES, lambda text: watch.feed(text, time.monotonic() - t0))
        readers = Readers(list(zip(fifos.fds, caps)))
        req = {"argv": list(job.argv[1:]), "program": job.argv[0], "env": dict(job.env),
               "cwd": str(Path(job.cwd).resolve()) if job.cwd else os.getcwd(),
               "stdout_path": str(fifos.dir / "stdout"), "stderr_path": str(fifos.dir / "stderr"),
               "imports": bool(job.record_imports)}
        oom = OomWatch(counter=self.oom_counter)   # the worker's death by SIGKILL: whose? (run/oomkill.py)
        try:
            return self._judge(slot, w, job, req, watch, t0, fifos, caps, readers, oom)
        finally:
            oom.close()

    def _judge(self, slot, w, job, req, watch, t0, fifos, caps, readers, oom):
        """_run_on's wait on the worker and its result (`oom` asked if the worker died)."""
        try:
            hung, rep, died, lost = self._wait(w, req, watch, t0, job.snapshot)
        except BaseException:
            # Ctrl-C: the worker is mid-run; end it now rather than wait for the run
            self._retire(slot, grace_s=0.1)
            readers.stop(0.5)
            fifos.close()
            raise
        if self._closed and rep is None and (died or lost):
            # closed under the run: the command is leaving (Ctrl-C, SIGTERM, a hangup, in the main
            # thread while this run, made ahead, went on in its own) and close() killed the
            # worker, not the subject: nothing to judge, and a crash stored would be a lie
            readers.stop(0.5)
            fifos.close()
            raise RunAbandoned("the warm workers were closed during the run (the command is leaving): "
                               "ended unjudged")
        duration = hung.at_s if hung else time.monotonic() - t0
        if not lost and rep is not None:
            lost = w.supervisor_lost()   # a run may kill or stop the supervisor and then return
        leftovers = 0 if lost else w.leftovers()
        if lost or hung:
            # containment gone, or a hang: end the worker first, so a tree that keeps printing (a
            # chatty hang) cannot hold the readers' drain
            self._retire(slot)
        readers.stop()
        broken = _read(fifos.dir / BROKEN) if died else ""
        fifos.close()
        if broken:      # the worker's death is not the subject's: the run is done again cold
            return self._broke(slot, broken)
        self.stats["warm_runs"] += 1
        notes = [c.sink_error for c in caps if c.sink_error]
        seen = dict(stdout=caps[0].text(), stderr=caps[1].text(), result=caps[0].result)
        if lost:   # containment is gone: the worker's whole tree was ended by hand; no verdict
            self.stats["worker_lost"] = self.stats.get("worker_lost", 0) + 1
            return RawRun(started=False, error=f"{lost} during the run; the worker and its processes were "
                                               "ended; the run cannot be judged", **seen)
        seen["timeline"] = watch.timeline(duration).to_list()
        if hung:
            return RawRun(started=True, timed_out=True, duration_s=duration, stalled=hung.stalled, stuck=hung.stuck,
                          **seen)
        if died:
            return self._died(slot, w, duration, seen, oom)
        if rep.get("broken"):   # a run that broke what puts the worker back (os.chdir = None): not its crash
            return self._broke(slot, rep["broken"])
        if rep.get("refused"):
            self._retire(slot)
            self.stats["refused"] = self.stats.get("refused", 0) + 1
            self._note(f"warm worker retired before a run: {rep['refused']}")
            return None
        return self._replied(slot, w, rep, duration, leftovers, notes, seen)

    def _broke(self, slot: _Slot, why: str):
        """The run broke its warm worker (its death, or what puts it back), not the subject: the
        worker is retired, said once, and the run is done again cold (_COLD)."""
        self._retire(slot)
        self.stats["broken"] = self.stats.get("broken", 0) + 1
        self._note(f"warm worker: {why}; that run was done again cold")
        return _COLD

    def _wait(self, w: _Worker, req: dict, watch: Watch, t0: float, snapshot):
        """(Hung or None, the worker's reply or None, whether the worker died, why its containment
        was lost or ''): the one wait loop (run/watchdog.py), the supervisor looked at every
        SUPERVISOR_CHECK_S between its steps. A hang's snapshot reads the worker's tree (its
        supervisor's pid) before it is retired."""
        rep, checked = None, t0

        def step(seconds: float) -> bool:
            nonlocal rep, checked
            if time.monotonic() - checked >= SUPERVISOR_CHECK_S:
                checked = time.monotonic()
                lost = w.supervisor_lost()
                if lost:
                    raise _Lost(lost)
            rep = w.read_line(seconds)
            return rep is not None
        try:
            w.send(req)
            return (wait_run(step, watch, t0, pid=w.tree_pid, snapshot=snapshot, older=(w.tree_pid, w.pid)),
                    rep, False, "")
        except _Lost as exc:
            return None, None, False, str(exc)
        except (BrokenPipeError, OSError, EOFError):
            return None, None, True, w.supervisor_lost()

    def _died(self, slot: _Slot, w: _Worker, duration: float, seen: dict, oom: OomWatch) -> RawRun:
        """The worker died under the script (a segfault, os._exit, abort, SIGKILL): its exit is the
        run's, and a SIGKILL is asked about the OOM killer as a cold run's is."""
        rc = w.returncode(10)
        killed = oom.killed(w.pid) if rc in (-9, 137) else None
        rc = -9 if rc is None else rc
        self._retire(slot)
        return RawRun(started=True, exit_code=None if rc < 0 else rc, signal=signal_name(rc), duration_s=duration,
                      error="" if rc < 0 else "the warm worker exited during the run", oom=killed, **seen)

    def _replied(self, slot: _Slot, w: _Worker, rep: dict, duration: float, leftovers: int, notes: list[str],
                 seen: dict) -> RawRun:
        """The run as the worker reported it, and whether that worker may serve again."""
        w.runs += 1
        code = rep.get("exit_code")
        poisoned = rep.get("poisoned") or ""
        changed, stuck = rep.get("changed") or [], rep.get("stuck") or []
        isolation = ""
        if stuck:
            self.stats["leaks_retired"] = self.stats.get("leaks_retired", 0) + 1
            isolation = f"left state that cannot be put back: {'; '.join(stuck[:3])}; its worker was retired"
            self._note(f"warm worker: a run {isolation}")
        elif changed:
            self.stats["leaks_restored"] = self.stats.get("leaks_restored", 0) + 1
            isolation = f"changed {'; '.join(changed[:3])}; put back before the next run"
            self._note(f"warm worker: a run {isolation}")
        if leftovers:
            self._note(f"warm worker: a run left {leftovers} process(es) running; they were killed")
        # An ordinary failing exit (an assertion, a wrong result, sys.exit(1)) leaves a worker as good
        # as it was: its state was checked and put back above, and its CUDA context checked. Only a
        # process state in doubt retires it: a poisoned context, a failure that reports a CUDA
        # error (the context may be poisoned where the check cannot see it), state that cannot be
        # put back, a native extension of the run's own (`retire`), or its run budget.
        cuda_error = code != 0 and recognise(seen["stderr"][-8192:]) is not None
        if poisoned or cuda_error or rep.get("retire") or w.runs >= self.max_runs:
            self._retire(slot)  # never let a possibly poisoned CUDA context serve again
        killed = isinstance(code, int) and code < 0     # the subject's KeyboardInterrupt: SIGINT, as cold
        return RawRun(started=True, exit_code=None if killed else code, signal=signal_name(code) if killed else None,
                      timed_out=False, duration_s=duration, poisoned=poisoned, leftovers=leftovers, imports=tuple(rep.get("imports") or ()),
                      isolation=isolation, error=f"log not written: {notes[0]}" if notes else "", **seen)



class _Lost(Exception):
    """The warm worker's supervisor was killed or stopped during a run (why, in words)."""


_COLD = object()    # _run_on: the run must be done cold (it broke its warm worker)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


class _Fifos:
    """The two FIFOs a warm run writes its stdout and stderr to, in a private directory. Opened
    read-write, so they exist before the worker opens them and never read as EOF early."""

    def __init__(self) -> None:
        self.dir = Path(tmpfiles.make_dir("warm"))
        self.fds = []
        for name in ("stdout", "stderr"):
            os.mkfifo(self.dir / name, 0o600)
            self.fds.append(os.open(self.dir / name, os.O_RDWR | os.O_NONBLOCK))

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
