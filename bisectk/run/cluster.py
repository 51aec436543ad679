"""Runs on a Ray cluster: one warm actor per GPU (or per CPU slot), fed by the driver's runner.

Ray is an optional dependency (`pip install -e .[ray]`); this is the only module that imports it,
and only when a RayExecutor is made.

Abstractions
------------
require_ray  -- the `ray` module, or a one-line BisectkError saying how to install it.
connect      -- joins the cluster at `address` (probed first: an unreachable one is a one-line
                error at once, not minutes of retries; the user's own Ray authentication is
                used as they set it), or starts a local instance (LocalHead: `ray start --head
                --block` under bisectk's process supervisor, no dashboard, free ports, its own
                session directory and token in bisectk's scratch) that `close` shuts down again
                and that dies with bisectk, SIGKILL included.
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
                has GPUs, else one CPU slot each. `run_job` takes a free actor; when the actor or
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

import contextlib
import logging
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bisectk.errors import BisectkError, install_hint
from bisectk.run.pool import DEFAULT_PRELOAD
from bisectk.run.process import RawRun, start_contained
from bisectk.run.remote import RemoteExecutor, RemoteJob, Site, write_logs

RAY_PIN = "ray==2.60.0"
MAX_ATTEMPTS = 3
READY_TIMEOUT_S = 180.0
LATECOMER_S = 30.0
HEARTBEAT_S = 5.0
HEARTBEAT_TIMEOUT_S = 60.0
BACKSTOP_GRACE_S = 60.0
PROBE_TIMEOUT_S = 5.0
EXCLUDES = [".git", ".bisectk", "**/__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", "*.db", "*.db-*"]


def require_ray():
    try:
        import ray
    except ImportError:
        raise BisectkError(f"--executor ray needs Ray, which is not installed: {install_hint('ray')} "
                           f"(or pip install '{RAY_PIN}')") from None
    return ray


def probe(address: str) -> None:
    """A one-line BisectkError unless something listens at the cluster's address."""
    if address in ("auto", "local") or "://" in address and not address.startswith("ray://"):
        return
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise BisectkError(f"--ray-address {address!r}: expected HOST:PORT (the head node's GCS port, "
                           "default 6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise BisectkError(f"--ray-address {address}: cannot reach the Ray cluster ({why}); "
                           "is the head node started (ray start --head) and the port open?") from None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line(text: str, limit: int = 300) -> str:
    """An error text on one line, cut only between sentences: whole sentences while they fit in
    `limit` characters, and always the first one whole (a message cut mid-sentence misleads)."""
    words = " ".join(str(text).split())
    if len(words) <= limit:
        return words
    kept = ""
    for sentence in re.split(r"(?<=[.;!?])\s+", words):
        if kept and len(kept) + 1 + len(sentence) > limit:
            return kept + " ..."
        kept = f"{kept} {sentence}" if kept else sentence
    return kept


def _last_line(exc: BaseException) -> str:
    """A remote traceback's conclusion: its last non-empty line (the exception and its message)."""
    lines = [x for x in str(exc).splitlines() if x.strip()]
    return lines[-1] if lines else type(exc).__name__


def _refresh_auth() -> None:
    """Ray reads RAY_AUTH_MODE and its token once per process and caches them; after the
    environment changed, its configuration and token cache are re-read (as Ray's own
    `ray.init()` does for a new cluster)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except Exception:   # another Ray version: the environment alone (enough when set before import)
        pass


def _has_ray_client() -> bool:
    try:
        from ray._private.utils import get_ray_client_dependency_error
        return get_ray_client_dependency_error() is None
    except Exception:
        return False


def _scratch_base() -> Path:
    """Where a local instance keeps its token and Ray's session directory: the temp dir, unless
    its path is so long that Ray's Unix socket paths (<= 107 bytes, ~75 of them Ray's own)
    would not fit."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) > 24 and os.access("/tmp", os.W_OK):
        base = Path("/tmp")
    return base


class LocalHead:
    """A local Ray instance (`ray start --head --block`) started under bisectk's process
    supervisor (run/process.py), so nothing of it outlives bisectk: `ray.init()` would start
    one whose agents survive a SIGKILL of bisectk.

    It depends on nothing of the user's: its ports are chosen free (another Ray on the default
    ports is not met), Ray's session directory is in bisectk's own scratch directory (not
    /tmp/ray, which may be another user's, and whose `ray_current_cluster` the user's own
    `ray status` reads), and token authentication uses a fresh token written there (0600)
    and passed to the head and to this driver by RAY_AUTH_TOKEN_PATH: no ~/.ray/auth_token
    is read or written, so a HOME that never ran Ray, or a read-only one, is enough. The
    scratch directory is removed on close."""

    def __init__(self, num_cpus: int, timeout: float = READY_TIMEOUT_S):
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.scratch = Path(tempfile.mkdtemp(prefix="bisectk-ray-", dir=_scratch_base()))   # mode 0700
        token = self.scratch / "auth_token"
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        self.auth_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
        self.log = open(self.scratch / "head.log", "w+b")
        ports = {f"--{k}": str(_free_port()) for k in ("dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                                                       "metrics-export-port", "runtime-env-agent-port")}
        if _has_ray_client():   # Ray starts its client server (default port 10001) only when it can
            ports["--ray-client-server-port"] = str(_free_port())
        argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={self.port}",
                f"--num-cpus={max(1, num_cpus)}", "--include-dashboard=false", "--disable-usage-stats",
                f"--temp-dir={self.scratch / 'r'}", *[f"{k}={v}" for k, v in ports.items()]]
        env = {**os.environ, **self.auth_env, "RAY_USAGE_STATS_ENABLED": "0"}
        env.pop("RAY_AUTH_TOKEN", None)      # it would take precedence over the token file
        self.contained = start_contained(argv, env=env, stdout=self.log, stderr=self.log, grace=1.0)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                pass
            if self.contained.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.tail()
                self.close()
                raise BisectkError(f"cannot start a local Ray instance: {tail or 'no answer on its port'}")
            time.sleep(0.1)

    def use_as_driver(self) -> None:
        """Make this process a driver of this instance: its token, through the environment that
        Ray's driver reads (a token of the user's, RAY_AUTH_TOKEN, would take precedence)."""
        os.environ.update(self.auth_env)
        os.environ.pop("RAY_AUTH_TOKEN", None)
        _refresh_auth()

    def tail(self) -> str:
        """The head's last error, whole: its last line, or the traceback's last line and the
        message lines that follow it."""
        try:
            lines = [x for x in (self.scratch / "head.log").read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            return ""
        for i in range(len(lines) - 1, -1, -1):
            if re.match(r"^[\w.]+(Error|Exception)\b", lines[i].strip()):
                return one_line(" ".join(lines[i:]), 600)
        return one_line(lines[-1], 600) if lines else ""

    def close(self) -> None:
        self.contained.end()        # SIGTERM to the whole tree, a grace period, then SIGKILL
        try:
            self.contained.wait(time.monotonic() + 30)
        except TimeoutError:
            pass
        try:
            self.contained.proc.wait(timeout=30)
        except Exception:
            pass
        self.contained.close()
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


@contextlib.contextmanager
def _quiet_stderr():
    """Ray's C++ client logs each failed connection attempt on file descriptor 2 (one line a
    second while it retries): while connecting, that goes to a scratch file, never to the
    user's terminal; what went wrong is said once, by the error."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _cause(exc: BaseException) -> BaseException:
    """The innermost exception of a chain (Ray wraps the one that says why in ConnectionError)."""
    seen = set()
    while (exc.__cause__ or exc.__context__) is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return exc


def _auth_refused(text: str) -> bool:
    return "InvalidAuthToken" in text or "AuthenticationError" in text or "no authentication token" in text


AUTH_HINT = ("a cluster with token authentication (Ray's default) needs RAY_AUTH_MODE=token and the cluster's token "
             "on this driver: ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH=FILE or RAY_AUTH_TOKEN")


def check_auth(address: str) -> None:
    """A one-line BisectkError at once when the cluster refuses this driver's authentication
    (`ray.init` would retry for 20 s and then say only 'Failed to connect'). The user's own
    settings are used as they are: bisectk adds no token of its own to a cluster it joins."""
    if "://" in address:
        return
    try:
        from ray._raylet import GcsClient
    except Exception:   # another Ray version: ray.init says it
        return
    try:
        with _quiet_stderr():
            GcsClient(address=address)
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if _auth_refused(text):
            mode = os.environ.get("RAY_AUTH_MODE") or "unset"
            raise BisectkError(f"--ray-address {address}: the Ray cluster refused this driver's authentication "
                               f"(RAY_AUTH_MODE is {mode}); {AUTH_HINT}") from None


def connect(ray, address: str | None, num_cpus: int, runtime_env: dict[str, Any]) -> LocalHead | bool:
    """Join the cluster (or start a local instance: a LocalHead) as a job whose runtime
    environment is `runtime_env` (local directories are uploaded at the job level only).
    Returns the LocalHead, True when this call joined a cluster, False when this process was
    connected already (its job's environment is used)."""
    if ray.is_initialized():
        return False
    head = None
    try:
        if address is None:
            head = LocalHead(num_cpus)
            head.use_as_driver()
        else:
            probe(address)
            check_auth(address)
        with _quiet_stderr():
            ray.init(address=head.address if head else address, log_to_driver=False,
                     logging_level=logging.ERROR, runtime_env=runtime_env)
    except BisectkError:
        raise
    except Exception as exc:
        if head is not None:
            head.close()
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        why = _cause(exc)
        text = f"{type(exc).__name__}: {one_line(str(exc))}"
        if why is not exc:
            text += f" ({type(why).__name__}: {one_line(_last_line(why))})"
        hint = f"; {AUTH_HINT}" if address and _auth_refused(f"{text} {why}") else ""
        raise BisectkError(f"cannot start or join {where}: {text}{hint}") from None
    return head or True


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

    def run_job(self, job: RemoteJob, log_dirs=(None, None)):
        """(build RawRun or None, run RawRun or None) of the job, retried on another actor when
        the one running it is lost; a job lost MAX_ATTEMPTS times did not run (UNRESOLVED)."""
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
                build, run = self._await(a, a.handle.run.remote(job))
            except _Lost as exc:
                lost.append(str(exc))
                self._lose(a)
                continue
            except self.ray.exceptions.RayTaskError as exc:   # a bug in the site itself: no retry
                self._release(a)
                return None, RawRun(started=False, error=f"the Ray actor failed: {one_line(_last_line(exc), 400)}")
            self._release(a)
            write_logs(build, log_dirs[0])
            write_logs(run, log_dirs[1])
            return build, run
        why = lost[-1] if lost else "no Ray actor alive"
        return None, RawRun(started=False, error=f"the run was lost on the Ray cluster {len(lost)} time(s): {why}")

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
