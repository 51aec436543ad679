"""Workload: one configuration made runnable -- what the runner executes, and where.

Abstractions
------------
Workload -- a configuration (the memo key's factor values) plus the place it runs: a working
            directory, extra environment variables, a revision that pins the memo (a commit sha,
            a hunk-set digest: the same configuration in another tree is another subject), the
            state of the working directory (which commit a worktree holds, which hunks a scratch
            tree holds: a build made for another state must be redone), and an optional
            `prepare` that makes the sources exist (applies hunks) before the build and the run,
            and an optional `origin` for executors on other hosts.
NO_BYTECODE  -- the environment of runs in rewritten trees (a commit's worktree, a hunk set's tree).
python_first -- the environment that puts directories of a workload's tree first on PYTHONPATH
            (ahead of the caller's; engine/checkout_imports.py finds them).
Origin   -- where a workload's files come from, for an executor on another host (run/remote.py):
            a key naming the file set (a commit sha; "" for "the digest of what `pack` gives"),
            `pack()` giving the files as a tar archive (`git archive` of a commit, a scratch tree
            as it is now: called on the driver, after `prepare`), the working directory relative
            to their root, the local root (argv and environment paths under it are mapped to the
            remote copy), and optionally a repository path that every host can read (a shared
            filesystem): then only the sha travels. A Workload without an origin runs in the
            executor's project directory (the spec's project, shipped as the job's working dir).
            `unrunnable`: why the place cannot be made at all (a commit whose tree git cannot
            read); the runner answers such a workload UNRESOLVED without running anything.
            `key`: the configuration's memo key (spec.config_key of `config`) when the space has
            it already; with thousands of factors it costs milliseconds to make, and the runner
            asks for it several times a run. `built()`: called once the build step has run (or
            its place already held it), before the run: a scratch tree that keeps a build's
            outputs learns there which files are the build's and which a run's.

Every space (factors, hunks, commits, environments) turns a point of its search into a Workload;
the runner never learns which space it came from. Parallel runs each carry their own Workload,
so no run ever reads another's directory or environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

Config = dict[str, Any]


# The runs of a commit or a hunk set write no bytecode, as a warm worker's never do (run/worker.py):
# their trees are rewritten in place (the .pyc would be dropped at the next switch), and a module
# they import from the user's checkout must not leave a __pycache__ there.
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}


def python_first(tree: Path, roots: tuple[str, ...]) -> dict[str, str]:
    """{"PYTHONPATH": tree/root for each root, then this process's PYTHONPATH}, or {} for no roots."""
    if not roots:
        return {}
    given = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(tree / r) for r in roots] + ([given] if given else []))}


@dataclass(frozen=True)
class Origin:
    key: str
    pack: Callable[[], bytes] = field(compare=False)
    subdir: str = "."
    root: Path | None = None
    shared_repo: str | None = None   # with key = a sha: the remote host runs `git archive` there


@dataclass(frozen=True)
class Workload:
    config: Config
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    revision: str = ""
    state: str = ""
    prepare: Callable[[], None] | None = field(default=None, compare=False)
    origin: Origin | None = field(default=None, compare=False)
    unrunnable: str | None = None
    key: str | None = field(default=None, compare=False)
    built: Callable[[], None] | None = field(default=None, compare=False)   # the build step has run here
    # what the run broke of its place, in words, asked once it has ended (a worktree's .git file
    # removed: spaces/wtdisk.py damage); None: nothing, and its verdict stands
    damaged: Callable[[], str | None] | None = field(default=None, compare=False)

    def with_env(self, **extra: str) -> Workload:
        return replace(self, env={**self.env, **extra})
