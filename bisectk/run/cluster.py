"""Runs on a Ray cluster: one warm actor per GPU (or per CPU slot), fed by the driver's runner.

Ray is an optional dependency (`pip install -e .[ray]`); this module and run/rayhead.py (joining
a cluster, or starting a local Ray instance: `connect`, `LocalHead`) are the only ones that import
it, and only when a RayExecutor is made.

Abstractions
------------
SiteActor    -- the actor: a run/remote.py Site in a Ray worker process. The job's runtime
                environment carries bisectk itself (`py_modules`) and, for `ablate`, the spec's
                project directory (`working_dir`), which the Site copies once into its own
                scratch directory. Commits and scratch trees arrive as tar archives in the object store
                (a commit once per sha, whichever actor asks). Subjects run in the actor's
                children (a warm worker with a hot spare, or a fresh contained process), never in
                the actor: a hang or a crash kills and replaces the worker, as locally, and the
                actor lives on; the watchdog (the Watch's moving deadline, or the fixed timeout)
                runs there, beside the subject.
RayExecutor  -- the driver side (a RemoteExecutor): K actors, `num_gpus=1` each when the cluster
                has GPUs, else one CPU slot each. `run_job` (behind RemoteExecutor.run) takes a free actor; when the actor or
                its node dies mid-run (RayActorError, a lost node), or stops answering, the job is
                retried on another actor (up to MAX_ATTEMPTS) and the dead actor replaced in the
                background. Nothing is stored out there: the runner, on the driver, records the
                one run that came back, so a lost run is never an observation and never twice
                one. `alive()` is K for k-way multisection: the actors ready now.

Liveness backstop: while a job runs the driver asks the actor for its status every HEARTBEAT_S;
an actor that does not answer within HEARTBEAT_TIMEOUT_S, or whose run is BACKSTOP_GRACE_S past
the deadline its own watchdog should have enforced, is killed and its job retried elsewhere.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bisectk.errors import BisectkError
from bisectk.run.pool import DEFAULT_PRELOAD
from bisectk.run.process import RawRun
from bisectk.run.rayhead import READY_TIMEOUT_S, LocalHead, _last_line, connect, one_line, require_ray
from bisectk.run.remote import RemoteExecutor, RemoteJob, Site

MAX_ATTEMPTS = 3
LATECOMER_S = 30.0
HEARTBEAT_S = 5.0
HEARTBEAT_TIMEOUT_S = 60.0
BACKSTOP_GRACE_S = 60.0
EXCLUDES = [".git", ".bisectk", "**/__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", "*.db", "*.db-*"]


class SiteActor:
    """The actor's body (wrapped by ray.remote when a RayExecutor is made)."""

    def __init__(self, has_project: bool, warm: bool, preload: tuple[str, ...]):
        import ray
        base = Path(tempfile.gettempdir()) / f"bisectk-actors-{os.getuid()}"   # another user's is not ours
        base.mkdir(parents=True, exist_ok=True)
        _remove_stale(base)
        self.scratch = base / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.site = Site(Path(os.getcwd()) if has_project else None, self.scratch, warm=warm, preload=preload,
                         fetch=ray.get)
        self.t0 = time.time()

    def ready(self) -> dict[str, Any]:
        import ray
        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "host": socket.gethostname(), "node": ctx.get_node_id()[:12],
                "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def run(self, job: RemoteJob):
        return self.site.run(job)

    def status(self) -> dict[str, Any]:
        return self.site.status()

    def goes_both_ways(self, jobs: list[tuple[list[str], dict[str, str]]], interpreter: str) -> bool:
        return self.site.goes_both_ways(jobs, interpreter)

    def close(self) -> None:
        self.site.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        try:
            self.scratch.parent.rmdir()     # the last actor out removes the base (others' are kept)
        except OSError:
            pass


def _remove_stale(base: Path) -> None:
    """Scratch directories of actors that were killed (their pid is gone)."""
    for d in base.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(d, ignore_errors=True)
            except OSError:
                pass


class _Lost(Exception):
    """The actor died, its node died, or it stopped answering: the job did not run to an end."""


class _Actor:
    def __init__(self, handle, n: int):
        self.handle, self.n = handle, n
        self.info: dict[str, Any] = {}
        self.busy = False
        self.dead = False


class RayExecutor(RemoteExecutor):
    """K warm actors on a Ray cluster (see the module docstring).

        with RayExecutor(actors=4, project=spec_root) as ex:
            runner = Runner(spec, executor=ex)
    """

    def __init__(self, *, actors: int = 1, address: str | None = None, project: Path | None = None,
                 warm: bool = False, preload: tuple[str, ...] = DEFAULT_PRELOAD,
                 ready_timeout: float = READY_TIMEOUT_S, heartbeat_s: float = HEARTBEAT_S,
                 latecomer_s: float = LATECOMER_S):
        super().__init__()
        self.ray = require_ray()
        self.address = address
        self.project = Path(project).resolve() if project else None
        self.wanted = max(1, actors)
        self.ready_timeout, self.heartbeat_s, self.latecomer_s = ready_timeout, heartbeat_s, latecomer_s
        import bisectk
        env: dict[str, Any] = {"py_modules": [str(Path(bisectk.__file__).resolve().parent)], "excludes": EXCLUDES}
        if self.project is not None:
            env["working_dir"] = str(self.project)
        self.started_here = connect(self.ray, address, self.wanted, env)
        self.cond = threading.Condition()
        self.actors: list[_Actor] = []
        self.starting = 0
        self.made = 0
        self.stats = {"jobs": 0, "lost": 0, "retried": 0, "replaced": 0, "failed_starts": 0}
        self.closed = False
        try:
            gpus = self.ray.cluster_resources().get("GPU", 0)
            self.per_actor = {"num_gpus": 1, "num_cpus": 0} if gpus >= 1 else {"num_cpus": 1}
            cls = self.ray.remote(SiteActor)
            self.actor_cls = cls.options(max_concurrency=2, max_restarts=0, **self.per_actor)
            self.args = (self.project is not None, warm, tuple(preload))
            self._start_many(self.wanted)
        except BisectkError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise BisectkError(f"cannot start Ray actors: {type(exc).__name__}: {one_line(str(exc))}") from None
        if not self.actors:
            self.close()
            raise BisectkError(f"no Ray actor became ready within {ready_timeout:g} s (each needs "
                               f"{self._needs()}; the cluster has {self._resources()})")

    # -- actors --------------------------------------------------------------------------------
    def _needs(self) -> str:
        return "1 GPU" if self.per_actor.get("num_gpus") else "1 CPU"

    def _resources(self) -> str:
        try:
            r = self.ray.cluster_resources()
            return ", ".join(f"{k} {v:g}" for k, v in sorted(r.items()) if k in ("CPU", "GPU")) or "nothing"
        except Exception:
            return "unknown resources"

    def _start_many(self, n: int) -> None:
        """Start n actors and wait for them: up to ready_timeout for the first, then up to twice
        what the first took (at least latecomer_s) for the others; those not ready by then (a
        cluster with fewer GPUs or CPU slots than actors asked for) are killed: K is what fits."""
        pending = []
        t0 = time.monotonic()
        for _ in range(n):
            self.made += 1
            a = _Actor(self.actor_cls.remote(*self.args), self.made)
            pending.append((a, a.handle.ready.remote()))
        refs = [r for _, r in pending]
        done, _ = self.ray.wait(refs, num_returns=1, timeout=self.ready_timeout)
        if done and len(refs) > 1:
            first = time.monotonic() - t0
            done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=max(self.latecomer_s, 2 * first))
        for a, ref in pending:
            info = None
            if ref in done:
                try:
                    info = self.ray.get(ref)
                except Exception:
                    info = None
            if info is None:
                self.stats["failed_starts"] += 1
                self._kill(a)
                continue
            a.info = info
            with self.cond:
                if self.closed:
                    self._kill(a)
                    continue
                self.actors.append(a)
                self.cond.notify_all()

    def _replace(self) -> None:
        before = self.made
        try:
            self._start_many(1)
        finally:
            with self.cond:
                self.starting -= 1
                if any(a.n > before for a in self.actors):
                    self.stats["replaced"] += 1
                self.cond.notify_all()

    def _lose(self, a: _Actor) -> None:
        """Drop a dead (or unanswering) actor and start its replacement in the background."""
        self._kill(a)
        with self.cond:
            if a in self.actors:
                self.actors.remove(a)
            self.stats["lost"] += 1
            if self.closed:
                return
            self.starting += 1
        threading.Thread(target=self._replace, daemon=True).start()

    def _kill(self, a: _Actor) -> None:
        a.dead = True
        try:
            self.ray.kill(a.handle, no_restart=True)
        except Exception:
            pass

    def alive(self) -> int:
        with self.cond:
            return max(1, len(self.actors))

    def describe(self) -> str:
        """One line for the progress output: where the actors are."""
        with self.cond:
            hosts = sorted({a.info.get("host", "?") for a in self.actors})
            n = len(self.actors)
        return (f"ray: {n} actor(s), {self._needs()} each, on {', '.join(hosts)} "
                f"({'a local instance' if isinstance(self.started_here, LocalHead) else self.address or 'this job'})")

    def _acquire(self) -> _Actor | None:
        with self.cond:
            while True:
                if self.closed:
                    return None
                for a in self.actors:
                    if not a.busy:
                        a.busy = True
                        return a
                if not self.actors and self.starting == 0:
                    return None
                self.cond.wait(timeout=1.0)

    def _release(self, a: _Actor) -> None:
        with self.cond:
            a.busy = False
            self.cond.notify_all()

    # -- jobs ----------------------------------------------------------------------------------
    def put(self, data: bytes):
        return self.ray.put(data)

    def run_job(self, job: RemoteJob) -> RawRun:
        """The job's RawRun (its build's when that failed), retried on another actor when the one
        running it is lost; a job lost MAX_ATTEMPTS times did not run (UNRESOLVED)."""
        with self.cond:
            self.stats["jobs"] += 1
        lost: list[str] = []
        for attempt in range(MAX_ATTEMPTS):
            a = self._acquire()
            if a is None:
                lost.append("no Ray actor alive")
                break
            if attempt:
                with self.cond:
                    self.stats["retried"] += 1
            try:
                raw = self._await(a, a.handle.run.remote(job))
            except _Lost as exc:
                lost.append(str(exc))
                self._lose(a)
                continue
            except self.ray.exceptions.RayTaskError as exc:   # a bug in the site itself: no retry
                self._release(a)
                return RawRun(started=False, error=f"the Ray actor failed: {one_line(_last_line(exc), 400)}")
            self._release(a)
            return raw
        why = lost[-1] if lost else "no Ray actor alive"
        return RawRun(started=False, error=f"the run was lost on the Ray cluster {len(lost)} time(s): {why}")

    def _await(self, a: _Actor, ref):
        ray = self.ray
        while True:
            done, _ = ray.wait([ref], timeout=self.heartbeat_s)
            if done:
                try:
                    return ray.get(ref)
                except ray.exceptions.RayTaskError:
                    raise
                except ray.exceptions.RayError as exc:
                    raise _Lost(f"actor {a.n} ({a.info.get('host', '?')}) lost mid-run: "
                                f"{one_line(str(exc), 200)}") from None
            if a.dead:
                raise _Lost(f"actor {a.n} was stopped")
            st_ref = a.handle.status.remote()
            answered, _ = ray.wait([st_ref], timeout=HEARTBEAT_TIMEOUT_S)
            if not answered:
                done, _ = ray.wait([ref], timeout=0)
                if done:
                    continue
                raise _Lost(f"actor {a.n} did not answer for {HEARTBEAT_TIMEOUT_S:g} s")
            try:
                st = ray.get(st_ref)
            except ray.exceptions.RayError:
                continue   # the run's own ref says why on the next turn
            if st.get("busy") and st.get("deadline") is not None \
                    and st["elapsed"] > st["deadline"] + BACKSTOP_GRACE_S:
                raise _Lost(f"actor {a.n}'s run went {st['elapsed'] - st['deadline']:.0f} s past its watchdog")

    def goes_both_ways(self, jobs: list[tuple[list[str], dict[str, str]]]) -> bool:
        """Asked of one ready actor (they start alike: same host image, same warm pool), before any
        run; an actor that cannot answer leaves the runs as they would go (False)."""
        if not self.args[1]:
            return False            # no warm workers out there: every run is cold already
        with self.cond:
            actor = next((a for a in self.actors if not a.dead), None)
        if actor is None:
            return False
        try:
            return bool(self.ray.get(actor.handle.goes_both_ways.remote(jobs, sys.executable),
                                     timeout=HEARTBEAT_TIMEOUT_S))
        except Exception:
            return False

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        with self.cond:
            if self.closed:
                return
            self.closed = True
            actors, self.actors = list(self.actors), []
            self.cond.notify_all()
        ray = self.ray
        refs = []
        for a in actors:
            try:
                refs.append(a.handle.close.remote())
            except Exception:
                pass
        if refs:
            try:
                ray.wait(refs, num_returns=len(refs), timeout=30)
            except Exception:
                pass
        for a in actors:
            self._kill(a)
        if self.started_here:
            try:
                ray.shutdown()
            except Exception:
                pass
        if isinstance(self.started_here, LocalHead):
            self.started_here.close()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
