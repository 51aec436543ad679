"""Runs on other hosts: the job a driver sends, and the remote worker's side that builds and runs it.

The runner (run/runner.py) owns the memo, the ledger and classification; on one machine it calls
an executor twice per configuration (build, then run) in a directory it shares with them. An
executor on another host has no such directory: the sources must travel, and the build and the run
must happen on the same host, in the same copy. So a remote executor is given one job per run --
what to materialise, what to build, what to run, under which watchdog -- and returns the raw runs;
judging them stays on the driver, beside the ledger, which stays the one source of truth.

Abstractions
------------
RemoteJob      -- one run as it travels: the source (`stage`), argv and build argv, the
                  environment, the watchdog as data (its `to_dict()`, rebuilt there), the key of
                  the build it needs, the hang snapshot to take, and the driver's interpreter and
                  source root (argv and environment paths under them are mapped to the remote
                  interpreter and copy).
RemoteExecutor -- the driver side, an Executor (run/executor.py): `run(job, watch)` stages the
                  job's files (`stage`: called under the runner's directory lock when a `prepare`
                  wrote them), sends one RemoteJob through `run_job` (how a subclass reaches its
                  workers), and keeps the logs that came back where a local run's would be.
                  `InlineExecutor` keeps a Site in this process (tests, and a model of the
                  protocol without a cluster).
Site           -- the remote worker's side: materialises sources into its own scratch directory
                  (the project directory copied once, a commit's `git archive` or a scratch tree's
                  archive extracted, or a shared repository read with `git archive`), never in a
                  checkout it does not own; runs the job there through a local executor (a warm
                  worker pool, run/pool.py: a hang or a crash kills the worker and its hot spare
                  takes over, as locally; or fresh contained processes), which builds each copy
                  once per build and keeps the watchdog beside the subject. `status()` says what it
                  is running and until when, for the driver's backstop.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tarfile
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bisectk.contents import walk
from bisectk.run import gitmodules
from bisectk.run.executor import Build, Job, LocalExecutor
from bisectk.run.gitexport import checkout_attributes
from bisectk.run.process import RawRun, run_process
from bisectk.run.progress import FixedWatch, watch_from_dict
from bisectk.run.snapshot import SnapshotRequest
from bisectk.run.watchdog import Watch
from bisectk.run.workload import Origin

KEEP_SOURCES = 6          # materialised copies a site keeps (least recently used dropped)
KEEP_PACKED = 64          # archives a driver keeps sent (a commit probed again is not packed again)
IGNORED = ("__pycache__", ".bisectk", ".git", ".hypothesis", ".pytest_cache")


@dataclass
class RemoteJob:
    source: dict[str, Any]
    argv: list[str]
    env: dict[str, str]
    watch: dict | None = None           # the Watch's to_dict() (None: no watchdog)
    build: list[str] | None = None
    build_timeout: float = 240.0
    build_key: str = ""
    build_carries_config: bool = False  # executor.Build's carries_config
    snapshot: dict | None = None        # run/snapshot.py SnapshotRequest: read a hang before the kill
    interpreter: str = sys.executable
    local_root: str = ""
    label: str = ""
    attempts: list[str] = field(default_factory=list)   # where earlier tries of this job were lost
    cold: bool = False                  # every run of the session cold (RemoteExecutor.time_alike)


# -- packing -------------------------------------------------------------------------------------
def pack_tree(root: Path, ignore: tuple[str, ...] = IGNORED) -> bytes:
    """A directory as an uncompressed tar archive (bytecode and bisectk's own state left out)."""
    buf = io.BytesIO()
    root = Path(root)
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ignore)
            rel = Path(dirpath).relative_to(root)
            for d in dirnames:
                tar.add(Path(dirpath) / d, arcname=str(rel / d), recursive=False)
            for f in sorted(filenames):
                if f.endswith((".pyc", ".pyo")):
                    continue
                tar.add(Path(dirpath) / f, arcname=str(rel / f), recursive=False)
    return buf.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="tar")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


# -- the driver side -----------------------------------------------------------------------------
class RemoteExecutor:
    """The driver side of runs on other hosts (see the module docstring). Subclasses say how bytes
    travel (`put`) and how a job reaches a worker (`run_job`)."""

    project: Path | None = None   # the spec's project directory, shipped with the job (ablate)
    on_note: Callable[[str], None] | None = None    # hears what the executor has to say (the session's events)

    def __init__(self) -> None:
        self._packed: dict[str, Any] = {}     # origin key -> what `put` returned (a commit is sent once)
        self._lock = threading.Lock()
        self.all_cold = False                 # every run in a fresh process out there (time_alike)

    def time_alike(self, jobs) -> None:
        """The warm pool's rule (run/pool.py WorkerPool.time_alike) for the pools out there: where
        SLOW is judged on wall time and `jobs` ((argv, env, cwd), the configurations the command may
        run) would go warm and cold on a worker, every job is sent to run cold, and that is said once."""
        if self.goes_both_ways([(list(argv), dict(env or {})) for argv, env, _ in jobs]):
            self.all_cold = True
            if self.on_note is not None:
                from bisectk.run.pool import ALL_COLD_NOTE
                self.on_note(ALL_COLD_NOTE)

    def goes_both_ways(self, jobs: list[tuple[list[str], dict[str, str]]]) -> bool:
        """Whether a worker out there would run some of `jobs` (argv, env) warm and others cold
        (Site.goes_both_ways); False where they have no warm workers."""
        return False

    def run(self, job: Job, watch: Watch) -> RawRun:
        """Executor.run: stage, send, and keep the logs of what came back (the build's when it
        failed, else the run's) where a local run's would be."""
        source = self.stage(job.cwd, job.origin)
        b = job.build
        raw = self.run_job(RemoteJob(
            source=source, argv=list(job.argv), env=dict(job.env), watch=watch.to_dict(),
            build=list(b.argv) if b else None, build_timeout=b.timeout if b else 0.0, build_key=b.key if b else "",
            build_carries_config=b.carries_config if b else False,
            snapshot=job.snapshot.to_dict() if job.snapshot else None, local_root=source.get("local_root", ""),
            label=job.label, cold=self.all_cold))
        write_logs(raw, b.log_dir if raw.phase == "build" and b else job.log_dir)
        return raw

    def put(self, data: bytes) -> Any:
        return data

    def stage(self, cwd: Path | None, o: Origin | None) -> dict[str, Any]:
        """A job's source, ready to travel: the project directory (shipped with the job), a shared
        repository and a sha, or a tar archive (a commit's, once per sha; a scratch tree's as it
        is now)."""
        if o is None:
            sub = self.project_subdir(cwd)
            if sub is None:   # outside the shipped project: a path every host must have
                return {"kind": "path", "id": f"path:{cwd}", "path": str(cwd), "subdir": ".", "local_root": ""}
            return {"kind": "project", "id": "project", "subdir": sub, "local_root": str(self.project)}
        base = {"subdir": o.subdir, "local_root": str(o.root) if o.root else ""}
        if o.shared_repo:
            return {"kind": "git", "id": o.key, "repo": o.shared_repo, "sha": o.key, **base}
        if o.key:
            with self._lock:
                ref = self._packed.pop(o.key, None)
            if ref is None:
                ref = self.put(o.pack())
            with self._lock:
                self._packed[o.key] = ref          # most recently used last
                while len(self._packed) > KEEP_PACKED:
                    self._packed.pop(next(iter(self._packed)))
            return {"kind": "tar", "id": o.key, "ref": ref, **base}
        data = o.pack()
        return {"kind": "tar", "id": digest(data), "ref": self.put(data), **base}

    def project_subdir(self, cwd: Path | None) -> str | None:
        """cwd relative to the project directory, or None when it lies outside."""
        if self.project is not None and cwd is not None:
            try:
                return str(Path(cwd).resolve().relative_to(self.project))
            except ValueError:
                pass
        return None

    def run_job(self, job: RemoteJob) -> RawRun:
        raise NotImplementedError

    def alive(self) -> int:
        """How many workers can take a job now (k-way multisection sends that many per round)."""
        return 1

    def close(self) -> None:
        pass


def write_logs(raw: RawRun | None, log_dir: Path | None) -> None:
    """The remote run's output tails, kept where a local run's logs would be (reports link them)."""
    if raw is None or log_dir is None:
        return
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / "stdout.log").write_text(raw.stdout, encoding="utf-8")
        (log_dir / "stderr.log").write_text(raw.stderr, encoding="utf-8")
    except OSError:
        pass


class InlineExecutor(RemoteExecutor):
    """A Site in this process behind the remote protocol: the staging, materialising and
    per-copy build bookkeeping of a cluster run, without a cluster."""

    def __init__(self, project: Path | None = None, *, warm: bool = False, preload: tuple[str, ...] = ()):
        super().__init__()
        self.project = Path(project).resolve() if project else None
        self.scratch = Path(tempfile.mkdtemp(prefix="bisectk-site-"))
        self.site = Site(self.project, self.scratch, warm=warm, preload=preload)
        self.jobs = 0
        self._one = threading.Lock()

    def run_job(self, job: RemoteJob) -> RawRun:
        with self._one:     # one site runs one job at a time, as an actor does
            self.jobs += 1
            return self.site.run(job)

    def goes_both_ways(self, jobs: list[tuple[list[str], dict[str, str]]]) -> bool:
        return self.site.goes_both_ways(jobs, sys.executable)

    def close(self) -> None:
        self.site.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


# -- the remote side -----------------------------------------------------------------------------
class Site:
    def __init__(self, project: Path | None, scratch: Path, *, warm: bool = False,
                 preload: tuple[str, ...] = (), fetch: Callable[[Any], bytes] | None = None):
        self.project = Path(project) if project else None
        self.scratch = Path(scratch)
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.fetch = fetch or (lambda ref: ref)
        self.roots: OrderedDict[str, Path] = OrderedDict()   # source id -> its copy here
        self.made = 0
        if warm:
            from bisectk.run.pool import WorkerPool
            from bisectk.run.snapshot import LINEINFO_ENV
            # jobs may ask for line info (hang snapshots on): the worker has it, so they stay warm
            self.executor = WorkerPool(slots=1, preload=preload, env=dict(LINEINFO_ENV)).start(wait=False)
        else:
            self.executor = LocalExecutor()
        self.current: dict | None = None
        self.stats = {"jobs": 0, "materialised": 0}

    # -- sources ----------------------------------------------------------------------------
    def materialise(self, source: dict[str, Any]) -> Path:
        if source["kind"] == "path":
            return Path(source["path"])       # never copied, never removed: it is not ours
        sid = str(source["id"])
        if sid in self.roots:
            self.roots.move_to_end(sid)
            return self.roots[sid]
        self.made += 1
        # a new path for every copy: what the executor remembers of an old copy's build never
        # applies to a new one
        dest = self.scratch / f"src-{self.made}"
        kind = source["kind"]
        if kind == "project":
            if self.project is None:
                raise RuntimeError("this site has no project directory")
            shutil.copytree(self.project, dest, symlinks=True,
                            ignore=shutil.ignore_patterns(*IGNORED, "*.pyc"))
        elif kind == "tar":
            unpack(self.fetch(source["ref"]), dest)
        elif kind == "git":
            unpack(_git_archive(source["repo"], source["sha"]), dest)
        else:
            raise RuntimeError(f"unknown source kind {kind!r}")
        self.stats["materialised"] += 1
        self.roots[sid] = dest
        while len(self.roots) > KEEP_SOURCES:
            _, path = self.roots.popitem(last=False)
            shutil.rmtree(path, ignore_errors=True)
        return dest

    # -- running ----------------------------------------------------------------------------
    def run(self, job: RemoteJob) -> RawRun:
        """Materialise, then build (when this copy does not hold the job's build) and run, through
        the site's executor. Never raises for the subject; a source that cannot be materialised
        is a run that did not start."""
        self.stats["jobs"] += 1
        try:
            root = self.materialise(job.source)
        except Exception as exc:  # a bad archive, a shared path missing here: not the subject's fault
            return RawRun(started=False, error=f"cannot materialise the sources on this host: "
                                               f"{type(exc).__name__}: {exc}"[:500])
        cwd = root / job.source.get("subdir", ".")
        if job.cold and hasattr(self.executor, "all_cold"):
            self.executor.all_cold = True   # the driver's rule for the session: its runs all timed cold
        mapped = _Mapper(job.local_root, str(root), job.interpreter)
        env = {k: mapped.path(v) for k, v in job.env.items()}
        build = (Build(mapped.argv(job.build), job.build_timeout, job.build_key, carries_config=job.build_carries_config)
                 if job.build else None)
        watch = watch_from_dict(job.watch) or FixedWatch(None)
        # the backstop's deadline allows the build too (it runs first, under its own limit)
        self.current = {"t0": time.monotonic(), "watch": watch, "build_s": job.build_timeout if build else 0.0}
        try:
            return self.executor.run(Job(mapped.argv(job.argv), cwd, env, build=build, label=job.label,
                                         snapshot=SnapshotRequest.from_dict(job.snapshot)), watch)
        finally:
            self.current = None

    def goes_both_ways(self, jobs: list[tuple[list[str], dict[str, str]]], interpreter: str) -> bool:
        """Whether this site's warm pool would run some of `jobs` ((argv, env) as the driver
        words them, `interpreter` its Python) warm and others cold: the driver's time_alike."""
        both = getattr(self.executor, "goes_both_ways", None)
        if both is None:
            return False
        mapped = _Mapper("", "", interpreter)
        return both([(mapped.argv(list(argv)), dict(env), None) for argv, env in jobs])

    def status(self) -> dict[str, Any]:
        """What runs now: elapsed seconds and the deadline the watchdog enforces (None: idle)."""
        cur = self.current
        if cur is None:
            return {"busy": False, **self.stats}
        due = cur["watch"].deadline()
        return {"busy": True, "elapsed": time.monotonic() - cur["t0"],
                "deadline": None if due is None else due + cur["build_s"], **self.stats}

    def close(self) -> None:
        self.executor.close()
        for path in self.roots.values():
            shutil.rmtree(path, ignore_errors=True)
        self.roots.clear()


class _Mapper:
    """Paths of the driver's source root and interpreter, as this host's."""

    def __init__(self, local_root: str, root: str, interpreter: str):
        self.local_root, self.root, self.interpreter = local_root.rstrip("/"), root, interpreter

    def path(self, value: str) -> str:
        if self.local_root and (value == self.local_root or value.startswith(self.local_root + "/")):
            return self.root + value[len(self.local_root):]
        return value

    def argv(self, argv: list[str]) -> list[str]:
        out = [self.path(a) for a in argv]
        if out and out[0] == self.interpreter:
            out[0] = sys.executable   # "python" in a spec: the interpreter bisectk runs in, here
        return out


def _git(cwd: str | Path, env: dict[str, str], *args: str) -> str | None:
    """`git args` in `cwd` (hooks off): its stdout, or None when it fails."""
    raw = run_process(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, base_env=env, timeout=600)
    return raw.stdout if raw.started and raw.exit_code == 0 else None


def git_archive_to(repo: str | Path, sha: str, tar: Path, env: dict[str, str]) -> None:
    """Write a commit's tree as a tar file, read from the object database (hooks off, no checkout
    touched), with each submodule the repository has cloned (its git dir under <git-common-dir>/
    modules/<name>, as spaces/submodules.py reads them) at its recorded commit, nested ones too; a
    RuntimeError says why git could not (its last line). `env` is git's whole environment."""
    with tempfile.TemporaryDirectory(prefix="bisectk-export-") as tmp:    # as checked out (run/gitexport.py)
        plain = checkout_attributes(repo, env, Path(tmp) / "git")
        raw = run_process(["git", *plain, "-c", "core.hooksPath=/dev/null", "archive", "--format=tar", "-o", str(tar),
                           sha], cwd=repo, base_env=env, timeout=600)
    if not raw.started or raw.exit_code != 0:
        why = raw.error or (raw.stderr.strip().splitlines() or [f"exit {raw.exit_code}"])[-1]
        raise RuntimeError(why[-200:])
    _append_submodules(Path(repo), sha, tar, env, None, "", user_tree=Path(repo))


def _append_submodules(at: Path, sha: str, tar: Path, env: dict[str, str], modules: Path | None, prefix: str,
                       gd: tuple[str, ...] = (), user_tree: Path | None = None) -> None:
    """Append the submodules of commit `sha` (of the repository at `at`; `gd`: its --git-dir when
    `at` is one) to `tar`, each under `prefix` + its path, from the clones under `modules`
    (None: <git-common-dir>/modules of `at`) or in place in `user_tree` (the checkout of `at`)."""
    listed = _git(at, env, *gd, "config", "-z", "--blob", f"{sha}:.gitmodules", "--get-regexp",
                  gitmodules.PATHS_KEY)
    names = gitmodules.names_by_path(listed or "")
    if not names:
        return              # no .gitmodules in the commit (the common case), or none named
    if modules is None:
        common = _git(at, env, "rev-parse", "--git-common-dir")
        if common is None:
            return
        modules = (at / common.strip()).resolve() / "modules"
    listing = _git(at, env, *gd, "ls-tree", "-z", sha, "--", *gitmodules.pathspecs(names)) or ""
    for name, path, sub in gitmodules.recorded(listing, names):
        source, where = gitmodules.source_of(modules, name, user_tree, path), f"{prefix}{path}"
        if source is None:
            continue                        # never cloned: empty, as in the user's checkout
        # the work tree given, never read: the clone's core.worktree may be gone (a submodule
        # `git rm`-ed since), where git dies before reading an object
        own = ("--git-dir", str(source), "--work-tree", str(source))
        if _git(source, env, *own, "cat-file", "-e", f"{sub}^{{commit}}") is None:
            raise RuntimeError(f"submodule {where} at {sub[:10]} is not in your clone of it ({source})")
        part = tar.with_name(tar.name + ".sub")
        if _git(source, env, *own, "archive", "--format=tar", f"--prefix={where}/", "-o", str(part), sub) is None:
            raise RuntimeError(f"submodule {where}: git archive {sub[:10]} failed")
        with tarfile.open(part) as src, tarfile.open(tar, "a") as dst:
            for member in src:
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        part.unlink()
        _append_submodules(source, sub, tar, env, source / "modules", f"{where}/", own,
                           user_tree / path if user_tree is not None else None)


def _git_archive(repo: str, sha: str) -> bytes:
    """A commit's tree from a repository this host can read, as the bytes of a tar archive."""
    with tempfile.TemporaryDirectory(prefix="bisectk-archive-") as tmp:
        out = Path(tmp) / "tree.tar"
        try:
            git_archive_to(repo, sha, out, {k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
        except RuntimeError as exc:
            raise RuntimeError(f"git archive {sha[:10]} in {repo}: {exc}") from None
        return out.read_bytes()
