"""The memo key: every input of a verdict, so a run is answered from the ledger only when nothing
that could change its verdict has changed.

A verdict depends on (1) what is run and how it is judged -- the spec's command, build, build
timeout, env templates, oracle and directory, and the files the command runs, names or sources
(`Spec.fingerprint`, bisectk/contents.py: the program and an interpreter's script whatever their
suffix, other arguments with a source suffix, and the files those name, a bounded heuristic), the
configuration (the ledger's configuration key), and the programs the command resolves to
(`python` is bisectk's own interpreter, with the distributions it has installed by name and
version; another program is found on the runs' PATH, the spec's env's where it sets one, and its
size and mtime count); (2) the timeout policy: a fixed number of seconds (the spec's `timeout`,
`--timeout`), or "calibrated from the good runs" with the calibration's own inputs (floor,
factors, the SLOW factor), since those runs are themselves under the same key; (3) the
environment the subject receives; (4) the content of the subject's tree; (5) for a Python subject, the source files it imports from
outside that tree.

Abstractions
------------
environment_digest -- the environment bisectk passes on (its own, which the subject inherits;
                      the spec's env is part of the spec's fingerprint), less VOLATILE_ENV: names
                      that differ between two shells of the same user without changing what a
                      program computes (the terminal, the SSH session, the shell's own bookkeeping,
                      a test runner's current test, PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE,
                      which bisectk sets for its runs itself), and a CI job's own bookkeeping
                      (CI_JOB_ENV: its ids, tokens, step files, the pipeline's commit). All other variables count: a subject may read
                      any of them, and bisectk cannot know which it reads.
tree_digest        -- the content of a directory's sources. In a git work tree: the index (blob
                      ids, which git keeps current by stat data) plus the content of every file
                      `git status` reports modified (a submodule: its own tree digest) or is
                      told to leave out (assume-unchanged, skip-worktree: `_untag`), and of
                      untracked source files (ignored files never count). Elsewhere: every source file's path and content hash, a file
                      rehashed only when its size or mtime changed (file_digest's stat cache, for
                      the process). Build outputs, `__pycache__` and `.bisectk` (the ledger, logs)
                      are never part of it.
content_digest     -- every file of a tree, whatever its name, tracked or not: what `diff` copies
                      into its scratch tree (all but `.git`, `__pycache__`, `.bisectk`), so the
                      whole of GOOD and BAD pins a hunk set's runs (spaces/hunkspace.py). Those
                      trees are only read (the runs execute in the scratch copy), so nothing a run
                      writes moves it.
file_digest        -- one file's content hash, remembered by (size, mtime, inode) for the process
                      (bisectk/contents.py).
gpu_facts          -- the driver's version and each GPU's model (/proc/driver/nvidia), in the
                      key where the driver is loaded: a run is an observation of one machine; with
                      --gpus, the models of the GPUs the runs are pinned to, not the machine's.
StaticKey          -- (1)-(4) for one Runner: `key(policy, revision)`. A workload pinned by a
                      revision (a commit, a hunk set over GOOD's and BAD's whole content) does not
                      add the tree. `files`: the named files (1) it covers, for the reports.
                      `moved()`: which of (1) and (4) changed since it was made (the runner
                      stores no run made after that, run/runner.py); in a scratch tree every
                      run rewrites (`pinned`: diff's), not the files in it.
sources_digest     -- (5): a subject's runs record the files they import (run/imports.py; and, in
                      the user's tree with no build step, those the tree digest leaves out:
                      `uncovered`), and the site-packages directories they imported installed
                      packages from where no program of the key stands for them (a Python that
                      `sh run.sh` or `pytest` runs: keyed by what is installed there, as
                      installed_digest keys the programs'); the ledger keeps their union per static key
                      (`Ledger.sources`), and the full key is the static key plus the hash of
                      those files' current content. A run that imported a file not yet recorded
                      is stored under the key that includes it, which is what the next session
                      computes.

Old ledgers stay readable: their runs were stored under the old key, which no new key equals, so
they are simply not answered again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from bisectk.contents import NOT_COPIED, file_digest, walk

VOLATILE_ENV = frozenset({
    "PWD", "OLDPWD", "PYENV_DIR", "SHLVL", "_", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "HISTFILE", "HISTSIZE",
    "HISTFILESIZE", "HISTCONTROL", "LS_COLORS", "LSCOLORS", "TERM", "TERMCAP", "COLORTERM", "COLUMNS", "LINES",
    "DISPLAY", "WINDOWID", "XAUTHORITY", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_CLIENT", "SSH_CONNECTION",
    "SSH_TTY", "GPG_AGENT_INFO", "GPG_TTY", "DBUS_SESSION_BUS_ADDRESS", "MAIL", "STY", "WINDOW", "VTE_VERSION",
    "INVOCATION_ID", "JOURNAL_STREAM", "MANAGERPID", "SYSTEMD_EXEC_PID", "SECURITYSESSIONID",
    "PYTEST_CURRENT_TEST", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "BISECTK_RUN_ID", "BISECTK_TRACER",
    "BISECTK_TREE", "BISECTK_IMPORTS", "BISECTK_IMPORTS_SKIP",
    # bisectk's own switches: a traceback on an internal error, no early history walk, the warm
    # pool's trace file; they change what bisectk says, never what a run computes
    "BISECTK_DEBUG", "BISECTK_NO_EARLY", "BISECTK_POOL_TRACE",
})
VOLATILE_PREFIXES = ("SSH_", "XDG_SESSION_", "XDG_VTNR", "XDG_SEAT", "TMUX", "KITTY_", "VSCODE_", "ITERM_",
                     "WEZTERM_", "ALACRITTY_", "KONSOLE_", "GNOME_TERMINAL_", "LC_TERMINAL", "TERM_",
                     "WT_", "BASH_FUNC_", "__")
# sources: code and build files (the spec's SOURCE_SUFFIXES and the build systems' own files).
# Not data or configuration files outside git: runs write results and counters (.json, .txt), and a
# new spec file (.toml) beside the subject must not move the key under them (in a git tree every
# tracked file counts)
TREE_SUFFIXES = {".py", ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".sh", ".mlir", ".ptx", ".cmake"}
TREE_NAMES = {"Makefile", "makefile", "CMakeLists.txt", "meson.build", "BUILD", "WORKSPACE", "setup.py"}
SKIP_DIRS = {".git", ".bisectk", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", "build", "dist", ".eggs"}
MAX_TREE_FILES = 20000
SCRIPT_BYTES = 1 << 20           # a program named by path up to this size is keyed by its content (program_key)
POLICY_VERSION = "progress-v2"   # the watchdog's rules (run/progress.py): a change there is a new key


# a CI job's own bookkeeping (GitHub Actions, GitLab CI, Jenkins; a SLURM job's): its ids and
# attempt, its runner, tokens and service URLs, its step files, who triggered it, and the pipeline's
# commit (a run's tree is keyed by its revision or content, never by the CI's name for it). Every job
# has its own, so a ledger restored from the CI cache, or a retried job's --resume, answered nothing.
# What a job sets for its scripts (CI, the repository, a shard's CI_NODE_INDEX, the workflow's env)
# still counts.
CI_JOB_ENV = frozenset({
    "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "GITHUB_ACTION", "GITHUB_ACTION_REF",
    "GITHUB_ACTION_REPOSITORY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
    "GITHUB_SHA", "GITHUB_REF", "GITHUB_REF_NAME", "GITHUB_REF_TYPE", "GITHUB_REF_PROTECTED", "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_ACTOR", "GITHUB_ACTOR_ID",
    "GITHUB_TRIGGERING_ACTOR", "GITHUB_WORKFLOW_REF", "GITHUB_WORKFLOW_SHA", "GITHUB_TOKEN", "RUNNER_NAME",
    "RUNNER_TRACKING_ID", "CI_BUILD_ID", "CI_BUILD_TOKEN", "CI_REPOSITORY_URL", "CI_REGISTRY_PASSWORD",
    "CI_DEPLOY_PASSWORD", "CI_DEPENDENCY_PROXY_PASSWORD", "GITLAB_USER_ID", "GITLAB_USER_LOGIN", "GITLAB_USER_NAME",
    "GITLAB_USER_EMAIL",
    # Jenkins (a job's workspace, and its ledger, is kept from build to build): each build's number,
    # tag and URLs, its executor slot and agent, the server's cookies, the commits its git plugin names
    "BUILD_NUMBER", "BUILD_ID", "BUILD_DISPLAY_NAME", "BUILD_TAG", "BUILD_URL", "EXECUTOR_NUMBER", "NODE_NAME",
    "JENKINS_SERVER_COOKIE", "HUDSON_COOKIE", "RUN_DISPLAY_URL", "RUN_ARTIFACTS_DISPLAY_URL", "RUN_CHANGES_DISPLAY_URL",
    "RUN_TESTS_DISPLAY_URL", "GIT_COMMIT", "GIT_PREVIOUS_COMMIT", "GIT_PREVIOUS_SUCCESSFUL_COMMIT",
    # a SLURM job (a GPU cluster's allocation, a new one for each sitting): its ids, step and task pid,
    # times, the ports and hosts its launcher talks on, its nodes and CPU mask; not what it was given
    # (GPUs, CPUs, memory), nor an array task's index
    "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_ARRAY_JOB_ID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_TASK_PID",
    "SLURM_JOB_START_TIME", "SLURM_JOB_END_TIME", "SLURM_SRUN_COMM_PORT", "SLURM_SRUN_COMM_HOST",
    "SLURM_STEP_LAUNCHER_PORT", "SLURM_LAUNCH_NODE_IPADDR", "SLURM_SUBMIT_HOST", "SLURM_JOB_NODELIST",
    "SLURM_NODELIST", "SLURM_STEP_NODELIST", "SLURMD_NODENAME", "SLURM_TOPOLOGY_ADDR", "SLURM_CPU_BIND",
    "SLURM_CPU_BIND_LIST",
})
CI_JOB_PREFIXES = ("ACTIONS_", "CI_JOB_", "CI_PIPELINE_", "CI_COMMIT_", "CI_MERGE_REQUEST_", "CI_RUNNER_",
                   "CI_CONCURRENT_", "CI_EXTERNAL_PULL_REQUEST_")


def _volatile(name: str) -> bool:
    return (name in VOLATILE_ENV or name.startswith(VOLATILE_PREFIXES)
            or name in CI_JOB_ENV or name.startswith(CI_JOB_PREFIXES))


def _trust_only(env: Mapping[str, str]) -> set[str]:
    """The GIT_CONFIG_* names that only declare a directory safe to git (`safe.directory`: what
    bisectk adds for its worktrees when root works in another user's repository): they change
    who git trusts, never what a run computes."""
    try:
        n = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    except ValueError:
        return set()
    safe = [i for i in range(n) if env.get(f"GIT_CONFIG_KEY_{i}") == "safe.directory"]
    names = {f"GIT_CONFIG_{part}_{i}" for i in safe for part in ("KEY", "VALUE")}
    return names | ({"GIT_CONFIG_COUNT"} if safe and len(safe) == n else set())


def environment_digest(env: Mapping[str, str]) -> str:
    trust = _trust_only(env)
    kept = sorted((k, v) for k, v in env.items() if not _volatile(k) and k not in trust)
    return hashlib.sha256(json.dumps(kept).encode("utf-8", "surrogateescape")).hexdigest()[:16]


# -- files -----------------------------------------------------------------------------------
def sources_digest(paths) -> str:
    """The content of recorded source files, as one hash ('' when there are none)."""
    paths = sorted(set(paths))
    if not paths:
        return ""
    h = hashlib.sha256()
    for p in paths:
        # a site-packages directory (imports.installed_dirs): what it has installed, by name and version
        what = f"installed:{installed_digest([p])}" if os.path.isdir(p) else file_digest(p)
        h.update(f"{p}\0{what}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:12]


# -- trees -----------------------------------------------------------------------------------
def _is_source(name: str) -> bool:
    return name in TREE_NAMES or os.path.splitext(name)[1] in TREE_SUFFIXES


def _git(root: Path, *args: str) -> bytes | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(k, None)
    try:
        # a session of its own, as run_tool's: a Ctrl-C or a hangup sent to the terminal's process
        # group is bisectk's to act on; a git it killed would turn the digest into the file walk's
        p = subprocess.run(["git", "--no-optional-locks", *args], cwd=root, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=120, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def _untag(tagged: bytes) -> tuple[bytes, list[bytes]]:
    """`git ls-files -s -v -z` read as `git ls-files -s -z` (the index's entries, so a tree's key
    is the one it had), and the paths of the entries whose tag says `git status` leaves them out:
    lowercase, assume-unchanged (`update-index --assume-unchanged`, a local settings file never to
    commit), or `S`, skip-worktree (sparse checkout): edited, they differ from the index unseen."""
    entries, hidden = [], []
    for entry in tagged.split(b"\0"):
        if len(entry) < 2:
            continue
        tag, rest = entry[:1], entry[2:]
        entries.append(rest)
        if tag.islower() or tag == b"S":
            hidden.append(rest.split(b"\t", 1)[-1])
    return b"".join(e + b"\0" for e in entries), hidden


def _git_tree(root: Path) -> str | None:
    """The tree's content through git (None when `root` is not in a git work tree). Nothing is
    written: `--no-optional-locks` keeps `git status` from refreshing the user's index."""
    inside = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != b"true":
        return None
    tagged = _git(root, "ls-files", "-s", "-v", "-z", "--", ".")
    status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    top = _git(root, "rev-parse", "--show-toplevel")
    if tagged is None or status is None or top is None:
        return None
    top_path = Path(os.fsdecode(top.strip()))
    index, hidden = _untag(tagged)
    h = hashlib.sha256(index)
    for rel in hidden:      # git status never reports them: their content, as for a modified file
        h.update(b"hidden\0" + rel + b"\0" + file_digest(root / os.fsdecode(rel)).encode())
    entries = status.split(b"\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, rel = entry[:2], os.fsdecode(entry[3:])
        if code[:1] in (b"R", b"C"):
            i += 1   # a rename's source path follows
        parts = Path(rel).parts
        if any(part in SKIP_DIRS for part in parts):
            continue
        if code == b"??" and not _is_source(parts[-1]):
            continue   # untracked outputs and data: only new sources count
        h.update(entry[:3] + rel.encode("utf-8", "surrogateescape") + b"\0")
        path = top_path / rel
        # a submodule (its own work tree) says ` M sub` whatever changed in it: its content counts
        h.update((tree_digest(path) if path.is_dir() and not path.is_symlink() else file_digest(path)).encode())
    return "git:" + h.hexdigest()[:16]


def _walk_tree(root: Path) -> str:
    h = hashlib.sha256()
    n = 0
    for dirpath, dirnames, filenames in walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not _is_source(name):
                continue
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
            h.update(file_digest(path).encode())
            n += 1
            if n >= MAX_TREE_FILES:
                return "files:" + h.hexdigest()[:16] + "+capped"
    return "files:" + h.hexdigest()[:16]


def content_digest(root: str | os.PathLike) -> str:
    """Every file and link under `root` (or `root` itself when it is a file): path, permission
    bits and content hash (a link: its target), skipping `.git`, `__pycache__` and `.bisectk`."""
    root = Path(root)
    h = hashlib.sha256()
    if not root.is_dir():
        entries = [(root.name, root)]
    else:
        entries = []
        for dirpath, dirnames, filenames in walk(root):
            here = Path(dirpath)
            links = [d for d in dirnames if (here / d).is_symlink()]   # a linked directory: one entry
            dirnames[:] = sorted(d for d in dirnames if d not in NOT_COPIED and d not in links)
            entries += [((here / n).relative_to(root).as_posix(), here / n)
                        for n in sorted(filenames + links) if n not in NOT_COPIED]
    for rel, path in sorted(entries):
        try:
            st = path.lstat()
        except OSError:
            continue
        what = f"link:{os.readlink(path)}" if path.is_symlink() else file_digest(path)
        h.update(f"{rel}\0{st.st_mode & 0o7777:o}\0{what}\n".encode("utf-8", "surrogateescape"))
    return "content:" + h.hexdigest()[:16]


def tree_digest(root: str | os.PathLike) -> str:
    """The content of the sources under `root` (see the module docstring)."""
    root = Path(root)
    if not root.is_dir():
        return "no-tree"
    return _git_tree(root) or _walk_tree(root)


# -- the key ---------------------------------------------------------------------------------
_INSTALLED: dict[tuple[str, ...], str] = {}   # site directories -> installed_digest, for the process
_PYTHON = re.compile(r"(python|pypy)[0-9.]*$")


def site_dirs(program: str | None = None) -> list[str]:
    """The site-packages directories of bisectk's interpreter (`program` None), or of another
    Python's executable by where it lies: PREFIX/bin/python3 reads PREFIX/lib/python3*/
    site-packages (a venv, conda, pyenv, /usr/local) or dist-packages (Debian's /usr)."""
    if program is None:
        import site
        return [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    prefix = Path(program).parent.parent
    return [str(p) for kind in ("site-packages", "dist-packages") for p in sorted(prefix.glob(f"lib/python3*/{kind}"))]


def installed_digest(dirs: list[str]) -> str:
    """The distributions installed in `dirs` (site_dirs), by name and version: the directories
    themselves (a virtual environment's are its own, so two venvs of one base interpreter differ)
    and the `*.dist-info` / `*.egg-info` entries there, whose names carry the version (`pip
    install -U` renames them). A local install (a dist-info with PEP 610's direct_url.json: `pip
    install -e .`, `pip install .`, a VCS URL) does not count: it is the subject's own code, which
    the tree, the revision or the recorded imports key, and a build step that re-installs it must
    not move the next command's key. An installed file edited in place is not seen (names only)."""
    real = tuple(dict.fromkeys(os.path.realpath(d) for d in dirs))
    if real not in _INSTALLED:
        h = hashlib.sha256()
        for d in real:
            try:
                names = sorted(e.name for e in os.scandir(d) if e.name.endswith((".dist-info", ".egg-info")))
            except OSError:
                continue
            h.update(f"{d}\0".encode("utf-8", "surrogateescape"))
            for name in names:
                if not (name.endswith(".dist-info") and os.path.exists(os.path.join(d, name, "direct_url.json"))):
                    h.update(f"{name}\0".encode("utf-8", "surrogateescape"))
        _INSTALLED[real] = h.hexdigest()[:16]
    return _INSTALLED[real]


def program_identity(argv0: str, env: Mapping[str, str]) -> str:
    """What a command's program resolves to: bisectk's interpreter for `python` (its version and
    what it has installed, `installed_digest`), else the file found on PATH, with its size and
    mtime (an upgraded compiler is another program; one named by path: its content), and for
    another Python what its prefix has installed."""
    return program_key(argv0, env)[0]


def program_key(argv0: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """(program_identity, the site directories whose installed distributions it keys, as real
    paths: bisectk's interpreter's for `python`, another Python's prefix's, none for another
    program), from one search of PATH."""
    if argv0 == sys.executable:
        dirs = site_dirs()
        return (f"python:{os.path.realpath(sys.executable)}:{sys.version.split()[0]}:{installed_digest(dirs)}",
                [os.path.realpath(d) for d in dirs])
    found = shutil.which(argv0, path=env.get("PATH")) if not os.path.dirname(argv0) else argv0
    if not found:
        return f"unresolved:{argv0}", []
    try:
        st = os.stat(found)
    except OSError:
        return f"unresolved:{argv0}", []
    python = bool(_PYTHON.match(os.path.basename(found)))
    dirs = site_dirs(found) if python else []
    installed = f":{installed_digest(dirs)}" if python else ""
    # a program named by path (`./test.sh`, often untracked in CI) by its content: a fresh checkout
    # or a restored cache writes the same bytes with a new mtime; one found on PATH by size and mtime
    # (up to SCRIPT_BYTES: a large binary named by path is read by size and mtime, not at every command)
    stamp = (file_digest(found) if os.path.dirname(argv0) and st.st_size <= SCRIPT_BYTES
             else f"{st.st_size}:{st.st_mtime_ns}")
    return f"{os.path.realpath(found)}:{stamp}{installed}", [os.path.realpath(d) for d in dirs]


NVIDIA_PROC = "/proc/driver/nvidia"   # the driver's own files: version, gpus/<bus id>/information


def gpu_facts(visible: tuple[str, ...] = (), order: str | None = None) -> str:
    """The machine's GPUs as the driver states them, '' without NVIDIA's driver: its version line
    and each GPU's bus id and model (/proc, no nvidia-smi: well under a millisecond). A driver
    upgraded since the runs, or a ledger shared by hosts of other GPUs (beside the spec on a
    network home), is another machine, whose runs are new observations.

    `visible`: the GPUs the runs are pinned to (--gpus: each run's CUDA_VISIBLE_DEVICES is one of
    them): then the driver's line and the models of those GPUs alone, as a set (a run sees one of
    them), so a run on one GPU never answers for a run on a GPU of another model. An index names
    the GPU CUDA counts there: in bus order under `order` (CUDA_DEVICE_ORDER) PCI_BUS_ID, or where
    every GPU is one model; else (CUDA's default, fastest first, on GPUs of several models), and
    for a UUID /proc does not list (MIG-...), the entry itself beside the whole machine's facts."""
    try:
        with open(os.path.join(NVIDIA_PROC, "version"), errors="replace") as f:
            version = f.readline().strip()
        gpus = sorted(os.listdir(os.path.join(NVIDIA_PROC, "gpus")))
    except OSError:
        return ""
    info = {bus: _gpu_information(bus) for bus in gpus}
    models = {bus: "?" if i is None else i.get("Model", "") for bus, i in info.items()}
    machine = "; ".join([version, *(f"{bus}={models[bus]}" for bus in gpus)])
    if not visible:
        return machine
    by_index = order == "PCI_BUS_ID" or len(set(models.values())) == 1
    seen = set()
    for entry in visible:
        if entry.isdigit():
            buses = [gpus[int(entry)]] if by_index and int(entry) < len(gpus) else []
        else:
            buses = [bus for bus in gpus if entry.upper().startswith("GPU-")
                     and (info[bus] or {}).get("GPU UUID", "").lower().startswith(entry.lower())]
        seen.add(models[buses[0]] if len(buses) == 1 else f"{entry} of {machine}")
    return "; ".join([version, "pinned to " + ", ".join(sorted(seen))])


def _gpu_information(bus: str) -> dict[str, str] | None:
    """A GPU's /proc/driver/nvidia/gpus/<bus>/information as {field: value} (Model, GPU UUID, ...);
    None where it cannot be read."""
    try:
        with open(os.path.join(NVIDIA_PROC, "gpus", bus, "information"), errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    fields: dict[str, str] = {}
    for ln in lines:
        name, sep, value = ln.partition(":")
        if sep:
            fields.setdefault(name.strip(), value.strip())
    return fields


class StaticKey:
    """The memo key of one Runner, less the recorded sources (see the module docstring)."""

    def __init__(self, spec, cwd: Path, env: Mapping[str, str] | None = None, *, pinned: bool = False,
                 gpus: tuple[str, ...] = ()):
        """`pinned`: `cwd` is a tree of bisectk's own that every run rewrites (diff's scratch
        tree), its content pinned by each workload's revision: `moved()` leaves out what lies
        in it. `gpus`: --gpus, the GPUs the runs are pinned to (gpu_facts keys those alone)."""
        env = os.environ if env is None else env
        self.spec, self.cwd, self.pinned = spec, Path(cwd), pinned
        programs = []
        self.sites: set[str] = set()    # site directories the programs' identities key already
        for template in (spec.command, spec.build):
            if template:
                found = {}      # each endpoint's program (`command = ["{tool}"]`), as named_files keys each one's files,
                for config in (spec.good, spec.bad):    # looked up on the PATH its runs have (the spec's env may set it)
                    try:
                        argv0 = spec.argv(config, template)[0]
                    except KeyError:
                        argv0 = template[0]
                    try:
                        path = {**env, **spec.environment(config)}
                    except KeyError:
                        path = env
                    found.setdefault((argv0, path.get("PATH")), (argv0, path))
                keys = {}       # one program for both: once
                for argv0, path in found.values():
                    identity, sites = program_key(argv0, path)
                    keys.setdefault((argv0, identity), sites)
                for (_, identity), sites in keys.items():
                    programs.append(identity)
                    self.sites.update(sites)
        self.files = spec.named_files(cwd)   # path -> digest, also in the fingerprint: for the reports
        from bisectk.run.classify import RULES_VERSION
        self.base = {"spec": spec.fingerprint(cwd), "programs": programs, "env": environment_digest(env),
                     "rules": RULES_VERSION}
        gpus = gpu_facts(tuple(gpus), (getattr(spec, "env", None) or {}).get("CUDA_DEVICE_ORDER", env.get("CUDA_DEVICE_ORDER")))
        if gpus:    # a machine without NVIDIA's driver keeps the key it had
            self.base["gpus"] = gpus
        self._tree: str | None = None
        self._keys: dict[tuple, str] = {}
        self._uncovered: dict[str, bool] = {}  # file -> whether the tree digest leaves it out (uncovered)

    def uncovered(self, paths) -> list[str]:
        """The files of `paths` (what a run imported) inside the subject's tree that the tree
        digest leaves out: ignored by git, under a skipped or (outside git) hidden directory, or
        with no source suffix (a compiled extension). A run that imports one (a local settings
        module, a module left in `build/`, a `.so`) depends on it, so it is keyed as an import
        from outside the tree is. Git is asked once per file, for the process."""
        from bisectk.run.imports import outside
        root = os.path.join(os.path.realpath(self.cwd), "")
        inside = [p for p in outside(paths) if p.startswith(root)]
        new = [p for p in inside if p not in self._uncovered]
        in_git = self.tree().startswith("git:")
        ignored: set[str] = set()
        for i in range(0, len(new), 200) if in_git else ():
            out = _git(self.cwd, "-c", "core.quotePath=false", "check-ignore", "--", *new[i:i + 200])
            ignored |= {os.path.realpath(os.path.join(self.cwd, os.fsdecode(n))) for n in (out or b"").split(b"\n") if n}
        for p in new:
            dirs = Path(p[len(root):]).parts[:-1]
            skipped = any(d in SKIP_DIRS or (not in_git and d.startswith(".")) for d in dirs)
            self._uncovered[p] = p in ignored or skipped or not _is_source(os.path.basename(p))
        return [p for p in inside if self._uncovered[p]]

    def moved(self, tree: bool = True) -> list[str]:
        """What of this key's inputs changed since it was made: the named files, by path, and
        (with `tree`, where a key included it) the subject's tree. A run made after such a change
        is no observation of this key: stored under it, a later command with the files put back
        would be answered by it."""
        now = self.spec.named_files(self.cwd)
        out = sorted(p for p in {*self.files, *now} if self.files.get(p) != now.get(p)
                     and not (self.pinned and not os.path.isabs(p)))   # relative: in cwd (contents.named_files)
        if tree and self._tree is not None and tree_digest(self.cwd) != self._tree:
            out.append(f"the sources under {self.cwd}")
        return out

    def tree(self) -> str:
        if self._tree is None:
            self._tree = tree_digest(self.cwd)
        return self._tree

    def key(self, policy: str, revision: str = "") -> str:
        """`policy`: the timeout policy in words that change when it does (`policy_words`)."""
        k = (policy, revision)
        if k not in self._keys:
            parts = {**self.base, "policy": policy}
            if not revision:
                parts["tree"] = self.tree()
            digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
            self._keys[k] = f"k2-{digest}" + (f"@{revision}" if revision else "")
        return self._keys[k]


def policy_words(source: str | None, seconds: float | None, *, floor: float, factor: float,
                 slow_factor: float | None, kernel_factor: float, cap: float) -> str:
    """The timeout policy as a key: fixed seconds, or calibration from the good runs with its inputs."""
    if source in ("spec", "option"):
        return f"fixed:{seconds!r}"
    return (f"calibrated:{POLICY_VERSION}:floor={floor!r}:factor={factor!r}:slow={slow_factor!r}:"
            f"kernel={kernel_factor!r}:cap={cap!r}")
