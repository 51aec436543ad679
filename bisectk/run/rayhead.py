"""Joining a Ray cluster, or starting a local Ray instance that dies with bisectk.

Ray is an optional dependency (`pip install -e .[ray]`); this module and run/cluster.py are the
only ones that import it, and only inside functions, so bisectk runs without it.

Abstractions
------------
require_ray  -- the `ray` module, or a one-line BisectkError saying how to install it.
probe        -- a one-line error at once when nothing listens at the cluster's address (not
                minutes of Ray's retries).
check_auth   -- a one-line error at once when the cluster refuses this driver's authentication
                (the user's own Ray settings are used as they are).
LocalHead    -- `ray start --head --block` under bisectk's process supervisor: no dashboard, free
                ports, its own session directory and token in bisectk's scratch; `close` shuts it
                down again, and it dies with bisectk, SIGKILL included.
connect      -- joins the cluster at `address` (probed first), or starts a LocalHead; the process
                environment and signal handlers are bisectk's again afterwards (Ray keeps the token
                it read).
one_line     -- an error text on one line, cut only between sentences.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bisectk.errors import BisectkError, install_hint
from bisectk.run.process import start_contained

RAY_PIN = "ray==2.60.0"
READY_TIMEOUT_S = 180.0
PROBE_TIMEOUT_S = 5.0


def require_ray():
    users = dict(os.environ)
    try:
        import ray
    except ImportError:
        raise BisectkError(f"--executor ray needs Ray, which is not installed: {install_hint('ray')} "
                           f"(or pip install '{RAY_PIN}')") from None
    finally:
        _restore_environ(users)     # importing it sets RAY_CLIENT_MODE
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
    users, handlers = dict(os.environ), _handlers()
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
    finally:
        _restore_environ(users)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return head or True


def _handlers() -> dict:
    """The Python signal handlers of SIGINT, SIGTERM and SIGHUP (bisectk's, engine/interrupts.py):
    ray.init puts its own on SIGTERM (exit at once, after its C++ handler's stack dump), which
    would end a command at once, with no result and no "interrupted"."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    found = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    return {s: h for s, h in found.items() if h is not None}


def _restore_environ(users: dict[str, str]) -> None:
    """The process environment as the user gave it, once Ray has read what it needs (the token,
    cached): what importing and joining put there (a local instance's token path, new for every command; ray.init's
    PYTHONBREAKPOINT and RAY_CLIENT_MODE) would otherwise reach the memo key and local runs."""
    for k in os.environ.keys() - users.keys():
        del os.environ[k]
    os.environ.update({k: v for k, v in users.items() if os.environ.get(k) != v})
