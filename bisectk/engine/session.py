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
                   CLI subscribes its reporter), the run policy, the one executor (made once from
                   the policy by `make_executor`: fresh processes, warm workers with --warm, or
                   actors on a Ray cluster with --executor ray, where `ablate` ships the spec's
                   project directory with them), the one Runner factory, the commit space of
                   bisect/triage (worktrees here, or commits sent to the actors), and everything
                   to close on the way out (the executor, the local Ray instance, scratch trees).
                   Scratch trees are registered (run/scratch.py), and a session's start removes
                   those whose command was killed before it could.
make_executor   -- the policy's executor: the one place that decides where runs happen.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bisectk.engine.policy import RunPolicy
from bisectk.errors import BisectkError
from bisectk.events import EventBus, Note
from bisectk.ledger import Ledger
from bisectk.run import logcap, scratch
from bisectk.run.executor import Executor, LocalExecutor
from bisectk.run.runner import Runner
from bisectk.spec import Spec


SHIPS_PROJECT = ("ablate", "run", "check")   # commands whose runs need the spec's project directory
# What the result records need at the end (scipy.stats, for the Wilson intervals, takes 0.5-1 s to
# import): imported on a thread while the runs go on, where the machine has cores to spare.
PRELOAD = ("scipy.stats",)
PRELOAD_MIN_CPUS = 4


def preload_in_background(names: tuple[str, ...] = PRELOAD) -> Callable[[], None]:
    """Start importing `names` on a thread; returns the closer that waits for it (an interpreter
    must not exit in the middle of an import). Nothing is started on a small machine, where the
    import would take a core from the runs being timed."""
    missing = [n for n in names if n not in sys.modules]
    if not missing or (os.cpu_count() or 1) < PRELOAD_MIN_CPUS:
        return lambda: None

    def work() -> None:
        for name in missing:
            try:
                importlib.import_module(name)
            except Exception:   # imported again, and reported, where it is needed
                pass

    t = threading.Thread(target=work, name="bisectk-preload", daemon=True)
    t.start()
    return lambda: t.join(timeout=60)


def cache_dir() -> Path:
    from bisectk.run.process import cache_home
    return cache_home() / "bisectk"


def ledger_location(explicit: Path | None = None, *, spec: Spec | None = None,
                    repo: Path | None = None) -> Path:
    if explicit is not None:
        return _named_ledger(Path(explicit), lambda: ledger_location(spec=spec, repo=repo))
    if repo is not None:
        from bisectk.spaces.commits import repo_ledger
        return repo_ledger(repo)
    if spec is not None and spec.path.is_file():
        beside = spec.path.resolve().parent / ".bisectk"
        if _writable(beside):
            return beside / "ledger.db"
        # a spec this user cannot write beside (bisectk's own variants in a system-wide install, a
        # shared read-only directory): the user's cache, as for no spec
    return cache_dir() / "ledger.db"


def _named_ledger(path: Path, default: Callable[[], Path]) -> Path:
    """A --ledger path, its directory already there: the ledger's file is made where missing, as
    a default ledger's directory is (.bisectk/, <git dir>/bisectk/, the cache: bisectk's own
    places, `default()` this command's, made when named too), but a directory the user names is
    theirs: a typo there made directories, and a new ledger no --resume of the intended one finds."""
    parent = path.parent
    if parent.is_dir() or os.path.realpath(parent) == os.path.realpath(default().parent):
        return path
    there = parent
    while not there.exists() and there.parent != there:
        there = there.parent
    if there.exists() and not there.is_dir():
        raise BisectkError(f"--ledger {path}: {there} is not a directory; nothing has run")
    raise BisectkError(f"--ledger {path}: the directory {parent} does not exist (bisectk makes a ledger file, not the "
                       f"directories named above it: create {parent} first, or check the path); nothing has run")


def _writable(directory: Path) -> bool:
    """Whether `directory` can be written, or made where it is missing."""
    if directory.exists():
        return os.access(directory, os.W_OK | os.X_OK)
    return os.access(directory.parent, os.W_OK | os.X_OK)


class Session:
    def __init__(self, command: str, spec: Spec, ledger_path: Path, *, fingerprint: str | None = None,
                 args: dict[str, Any] | None = None, policy: RunPolicy | None = None,
                 reporter: Callable | None = None):
        self.command = command
        self.spec = spec
        self.policy = policy or RunPolicy()
        if self.policy.gpus and "CUDA_VISIBLE_DEVICES" in spec.env:
            # --gpus sets each run's CUDA_VISIBLE_DEVICES (engine/oracle.py): the spec's (a factor,
            # as `bisectk env --diff` writes a differing one) would be dropped without a word
            raise BisectkError(f"--gpus sets each run's CUDA_VISIBLE_DEVICES, which {spec.path}'s [subject] env "
                               f"sets too (CUDA_VISIBLE_DEVICES = {spec.env['CUDA_VISIBLE_DEVICES']!r}): "
                               "leave --gpus out, or the variable out of the spec")
        self.log_cap = logcap.cap_bytes()      # a bad BISECTK_LOG_CAP_MB is said before anything runs
        self.events = EventBus()
        self.reporter = None
        self.closers: list[Callable[[], None]] = []
        self.runners: list[Runner] = []        # made by runner(): their inputs compared once more at close
        self._executor: Executor | None = None
        # where runs build in directories of bisectk's (worktrees, scratch copies): a build that
        # installs from there is named at close (engine/installs.py), with the user's own copy
        self.started, self.run_roots, self.yours = time.time(), [], Path.cwd()
        self.installs_looked = False       # install_warnings ran (finish): close does not look again
        self.ledger = Ledger(ledger_path)
        try:    # an interrupt before the command holds the session (`with`): closed all the same
            self._open(command, spec, fingerprint, args, reporter)
        except BaseException:
            self.close()
            raise

    def _open(self, command: str, spec: Spec, fingerprint: str | None, args: dict[str, Any] | None,
              reporter: Callable | None) -> None:
        """The session's row in the opened ledger, and what it needs from the start; an empty
        session left here by an interrupt is dropped by close (a --resume or `log` would find it)."""
        # a ledger deleted or replaced mid-run is written again (ledger/store.py Store._in_place): say so
        self.ledger.on_notice = lambda text: sys.stderr.write(f"bisectk: warning: {text}\n")
        from bisectk.run.snapshot import SnapshotPolicy
        self.snapshots = SnapshotPolicy(self.policy.snapshots)   # one budget for the whole command
        self.fingerprint = fingerprint or spec.fingerprint()
        self.previous = self.ledger.last_session(command, self.fingerprint)
        self.id = self.ledger.open_session(command, self.fingerprint, args or {})
        scratch.remove_stale()   # scratch trees of commands that were SIGKILLed
        self.closers.append(preload_in_background())
        if reporter is not None:   # the porcelain's subscriber (terminal, progress lines)
            self.reporter = reporter
            self.events.subscribe(reporter)
            if hasattr(reporter, "close"):
                self.closers.append(reporter.close)

    @property
    def log_root(self) -> Path:
        # absolute: a relative --ledger gave each run a log path that named nothing from elsewhere
        return logcap.session_dir(Path(os.path.abspath(self.ledger.path)), self.id)

    def scratch(self, name: str) -> Path:
        """A private directory beside the ledger (never in the user's tree), registered before it
        exists so that the next start removes it if this command is killed; removed on close."""
        path = self.ledger.path.parent / f"{name}-{self.id}-{os.getpid()}"
        self.closers.append(scratch.register(path).remove)
        self.run_roots.append(path)
        return path

    def executor(self) -> Executor:
        """The one executor of this command, made once from the run policy and closed with the
        session: Ray actors (`--executor ray`; `ablate`, `run` and `check` ship the spec's
        project directory with them), warm workers (`--warm`), or fresh processes."""
        if self._executor is None:
            self._executor = make_executor(self.policy, project=self._project(), line_info=self.snapshots.enabled,
                                           on_note=lambda text: self.events.emit(Note(text)),
                                           preload=self._preload() if self.policy.warm else None)
            self.closers.append(self._executor.close)
        return self._executor

    def _preload(self) -> tuple[str, ...] | None:
        """What warm workers import before their first run: the heavy packages the subject's own
        source imports (run/preload.py); None (the pool's default) when that cannot be read."""
        from bisectk.run.pool import DEFAULT_PRELOAD
        from bisectk.run.preload import subject_preload
        try:
            argv = self.spec.argv(self.spec.good)
        except Exception:   # a template the good configuration cannot fill: the runs will say so
            return None
        return subject_preload(argv, self.spec.cwd, DEFAULT_PRELOAD)

    def _project(self) -> Path | None:
        from bisectk.spec import project_root
        ships = self.command in SHIPS_PROJECT and self.spec.path.is_file()
        return project_root(self.spec.path) if ships else None

    def runner(self, cwd: Path | None = None) -> Runner:
        """The one Runner factory: this session's ledger, events, logs, executor and namespace.
        Runs made with --clean-ignored are kept apart from those made without: a worktree's
        ignored files (stale build outputs) are in no memo key, and --clean-ignored is the remedy
        for an answer they made wrong, which the ledger would otherwise give again."""
        namespace = "#clean-ignored" if self.policy.clean_ignored else ""
        runner = Runner(self.spec, self.ledger, events=self.events, session=self.id, cwd=cwd, log_root=self.log_root,
                        executor=self.executor(), snapshots=self.snapshots, timeout=self.policy.timeout,
                        namespace=namespace, fresh=self.policy.fresh, gpus=self.policy.gpus)
        self.runners.append(runner)
        return runner

    @contextmanager
    def commit_space(self, commits, root: Path, config: dict, subdir: Path, pool=None):
        """The commit space of bisect/triage: each commit checked out in a worktree of a pool
        here (`pool`: one the caller opened early, e.g. to prepare the first checkout while
        the history is listed), or, with a remote executor, nothing checked out here (the
        actors materialise each commit from its `git archive`, or from `--ray-repo`)."""
        from bisectk.spaces.revisions import CommitSpace
        from bisectk.spaces.worktrees import WorktreePool
        self.yours = root
        if self.policy.remote:
            self.executor()   # the cluster is reached (or refused) before anything else runs
            yield CommitSpace(commits, None, config, subdir, remote=True, shared_repo=self.policy.ray_repo)
            return
        if pool is not None:
            pool.clean_ignored = self.policy.clean_ignored      # before its first lease: a prepared one is tidied
            self.run_roots.append(pool.cache_dir)
            yield CommitSpace(commits, pool, config, subdir)
            return
        with WorktreePool(root, size=self.policy.jobs, clean_ignored=self.policy.clean_ignored) as pool:
            self.run_roots.append(pool.cache_dir)
            yield CommitSpace(commits, pool, config, subdir)

    def record(self, result: dict[str, Any]) -> None:
        """Store the result record with the session (what `bisectk report` prints again), its
        attempts in the ledger's form (engine/records.py stored_form)."""
        from bisectk.engine.records import stored_form
        self.ledger.close_session(self.id, stored_form(result))

    def install_warnings(self) -> list[str]:
        """The installs a build made from bisectk's directories (engine/installs.py), in words, for
        the result's warnings (cli finish says them with the others, so --json and the reports
        hold them too); looked for once, close does not say them again."""
        if not self.run_roots or self.installs_looked:
            return []
        self.installs_looked = True
        from bisectk.engine.installs import installed_from, warning
        return warning(installed_from(self.run_roots, self.started), str(self.yours))

    def close(self) -> None:
        answered: set[str] = set()    # log paths of runs answered from the ledger: their sessions' logs are kept
        for runner in self.runners:   # an edit during the last run: its runs taken back out, said before the reporter closes
            try:
                runner.last_check()
                answered |= runner.answered_logs()
            except Exception:   # closing must not hide the error that brought us here
                pass
        self.runners.clear()
        if self.run_roots and not self.installs_looked:     # no result finished: an error, an interrupt
            try:
                from bisectk.engine.installs import check
                check(self.run_roots, self.started, str(self.yours))
            except Exception:   # a look at site-packages must not hide the command's own error
                pass
        for fn in reversed(self.closers):
            try:
                fn()
            except Exception:   # closing must not hide the error that brought us here
                pass
        self.closers.clear()
        try:    # a session left before it stored anything is no session to resume or log
            self.ledger.drop_session_if_empty(self.id)
        except Exception:
            pass
        try:    # its logs counted; the least recently used finished commands' pruned when over the cap
            used = {s for s in (logcap.session_of(self.ledger.path, p) for p in answered) if s is not None}
            logcap.settle(self.ledger, self.id, self.log_cap, used)
        except Exception:
            pass
        self.ledger.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_executor(policy: RunPolicy, *, project: Path | None = None, line_info: bool = False,
                  on_note: Callable[[str], None] | None = None, preload: tuple[str, ...] | None = None) -> Executor:
    """Where a command's runs happen, decided here and nowhere else (run/executor.py). `on_note`
    hears what the executor has to say (where the Ray actors are, what a warm run changed).
    `line_info`: hang snapshots are on, so runs compile CuTe DSL kernels with line info (a
    process-level variable): warm workers start with it so those runs stay warm; without
    snapshots they do not pay for it (on an H100 the FMHA example's 6 runs took 21.2 s with it,
    13.4 s without). `preload`: what warm workers import first (None: the pool's default)."""
    extra = {} if preload is None else {"preload": preload}
    if policy.remote:
        from bisectk.run.cluster import RayExecutor
        ray = RayExecutor(actors=policy.jobs, address=policy.ray_address, project=project, warm=policy.warm, **extra)
        if on_note is not None:
            on_note(ray.describe())
        ray.on_note = on_note       # what it has to say later (every run cold: RemoteExecutor.time_alike)
        return ray
    if policy.warm:
        from bisectk.run.pool import WorkerPool
        from bisectk.run.snapshot import LINEINFO_ENV
        return WorkerPool(gpus=list(policy.gpus) or None, slots=policy.jobs, env=dict(LINEINFO_ENV) if line_info else None,
                          on_note=on_note, **extra).start(wait=False)
    return LocalExecutor(slots=policy.jobs)
