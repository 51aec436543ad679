"""Session: what one command invocation owns while it runs.

Abstractions
------------
ledger_location -- where a command's ledger lives, decided here and nowhere else: `--ledger`;
                   else `<git dir>/bisectk/ledger.db` for a repository (bisect, triage, log);
                   else `.bisectk/ledger.db` beside a spec file; else the user's cache
                   (`$XDG_CACHE_HOME/bisectk/ledger.db`, for `diff` and `--run` subjects), so
                   nothing is ever written into a source tree the user did not point at.
Session         -- the open ledger and this invocation's session record (kind, fingerprint,
                   arguments; the final result record is stored with it), the event bus (the
                   CLI subscribes its reporter), the run policy,
                   the one Runner factory (warm workers plugged in when asked), and everything
                   to close on the way out (worker pools, scratch trees).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bisectk.engine.policy import RunPolicy
from bisectk.events import EventBus
from bisectk.ledger import Ledger
from bisectk.run.runner import Runner, TimeoutPolicy
from bisectk.spec import Spec


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bisectk"


def git_dir(repo: Path) -> Path:
    """The repository's common git directory (where bisect/triage keep their ledger)."""
    from bisectk.spaces.commits import run_git
    return (repo / run_git(repo, "rev-parse", "--git-common-dir")).resolve()


def ledger_location(explicit: Path | None = None, *, spec: Spec | None = None,
                    repo: Path | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    if repo is not None:
        return git_dir(repo) / "bisectk" / "ledger.db"
    if spec is not None and spec.path.is_file():
        return spec.path.resolve().parent / ".bisectk" / "ledger.db"
    return cache_dir() / "ledger.db"


class Session:
    def __init__(self, command: str, spec: Spec, ledger_path: Path, *, fingerprint: str | None = None,
                 args: dict[str, Any] | None = None, policy: RunPolicy | None = None,
                 fresh: bool = False, warm: bool = False, reporter: Callable | None = None):
        self.command = command
        self.spec = spec
        self.policy = policy or RunPolicy()
        self.ledger = Ledger(ledger_path)
        self.events = EventBus()
        self.reporter = None
        self.closers: list[Callable[[], None]] = []
        self.fresh = fresh
        self.warm = warm
        self.pool = None
        self.fingerprint = fingerprint or spec.fingerprint()
        self.previous = self.ledger.last_session(command, self.fingerprint)
        self.id = self.ledger.open_session(command, self.fingerprint, args or {})
        if reporter is not None:   # the porcelain's subscriber (terminal, progress lines)
            self.reporter = reporter
            self.events.subscribe(reporter)
            if hasattr(reporter, "close"):
                self.closers.append(reporter.close)

    @property
    def log_root(self) -> Path:
        return self.ledger.path.parent / "logs"

    def scratch(self, name: str) -> Path:
        """A private directory beside the ledger (never in the user's tree)."""
        return self.ledger.path.parent / f"{name}-{self.id}-{os.getpid()}"

    def executor(self):
        """The run executor: warm workers when asked (started once, closed with the session)."""
        if not self.warm:
            return None
        if self.pool is None:
            from bisectk.run.pool import WorkerPool
            self.pool = WorkerPool(gpus=list(self.policy.gpus) or None, slots=self.policy.jobs).start(wait=False)
            self.closers.append(self.pool.close)
        return self.pool.run

    def runner(self, cwd: Path | None = None) -> Runner:
        """The one Runner factory: this session's ledger, events, logs, executor and namespace."""
        runner = Runner(self.spec, self.ledger, events=self.events, session=self.id, cwd=cwd,
                        log_root=self.log_root, executor=self.executor(),
                        namespace=f"#fresh-{self.id}-{time.time_ns()}" if self.fresh else "")
        if self.policy.timeout:
            runner.timeout = TimeoutPolicy(self.policy.timeout, "option", f"{self.policy.timeout:g} s from --timeout")
        return runner

    def record(self, result: dict[str, Any]) -> None:
        """Store the result record with the session (what `bisectk report` prints again)."""
        self.ledger.close_session(self.id, result)

    def close(self) -> None:
        for fn in reversed(self.closers):
            try:
                fn()
            except Exception:   # closing must not hide the error that brought us here
                pass
        self.closers.clear()
        self.ledger.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
