"""The history walk begun before the CLI loads (spaces/early.py): used only when it is the very walk
list_graph runs, ended when it is not, never left behind, and never a different answer."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from bisectk.spaces import early
from bisectk.spaces.commits import SpaceError, list_graph, open_repo, resolve
from bisectk.__main__ import _open_pool
from bisectk.spaces.worktrees import cache_dir_of
from tests.conftest import ROOT, bisectk, wait_until
from tests.fixtures.gitrepo import make_repo


@pytest.fixture(autouse=True)
def clean_state():
    early._walk, early._known, early._taken = None, None, None
    yield
    for walk in {early._walk, early._taken} - {None}:
        walk.end()
    early._walk, early._known, early._taken = None, None, None


@pytest.fixture
def repo(tmp_path):
    shas = make_repo(tmp_path / "r", n=24, culprit=13)
    return tmp_path / "r", shas


def _git_walk(root, *args) -> bytes:
    return subprocess.run(["git", *early.WALK, *args], cwd=root, capture_output=True, check=True).stdout


def test_a_matching_walk_is_taken_and_equals_gits_own(repo):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), f"--good={shas[0]}", "--bad", "HEAD", "--run", "./t.sh"])
    walk = early._walk
    assert walk is not None and walk.pool_size is None        # no open_pool given: no early checkout
    graph = list_graph(r, [shas[0]], "HEAD")
    assert walk.out == _git_walk(r, shas[-1], f"^{shas[0]}")       # taken: the listing came from it
    assert [s.decode() for s in graph.shas] == shas[1:]
    assert early._walk is None                                    # taken once


def test_a_walk_that_does_not_match_is_ended_not_waited_for(repo):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1]])
    walk = early._walk
    graph = list_graph(r, [shas[2]], shas[-1])        # another range: git is asked again
    assert walk.keyed.is_set() and walk.ended
    assert [s.decode() for s in graph.shas] == shas[3:]
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1]])
    walk = early._walk
    assert list_graph(r, [shas[0]], shas[-1], first_parent=True).shas.size == len(shas) - 1
    assert walk.ended and (walk.proc is None or walk.proc.poll() is not None)


@pytest.mark.parametrize("argv", [
    ["ablate", "spec.toml"],
    ["bisect", "--good", "A"],                                   # no --bad
    ["bisect", "--good", "A", "--bad", "B", "--bad", "C"],       # several bads: not a plain walk
    ["bisect", "--good", "A", "--bad", "B", "--find-fix"],       # the other direction
    ["bisect", "--good", "A", "--bad", "B", "--", "src/"],       # a pathspec
    ["bisect", "--good", "-x", "--bad", "B"],
    ["bisect", "--good"],
])
def test_arguments_it_does_not_read_plainly_start_nothing(argv):
    early.start(argv)
    assert early._walk is None


def test_a_ref_git_cannot_resolve_leaves_the_error_to_list_graph(repo):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", "no-such-ref", "--bad", "HEAD"])
    with pytest.raises(SpaceError, match="--good 'no-such-ref' is not a commit"):
        list_graph(r, ["no-such-ref"], "HEAD")


def test_the_refs_it_resolved_answer_open_repo_and_resolve(repo, monkeypatch):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", "HEAD~3", "--bad", "HEAD"])
    early._walk.keyed.wait()
    import bisectk.spaces.commits as commits
    calls = []
    real = commits.run_git
    monkeypatch.setattr(commits, "run_git", lambda *a: calls.append(a[1:]) or real(*a))
    assert open_repo(r) == r.resolve()
    assert resolve(r, "HEAD~3") == shas[-4] and resolve(r, "HEAD") == shas[-1]
    assert calls == []                      # no git asked again
    assert resolve(r, "HEAD~1") == shas[-2] and calls    # a ref it did not resolve: git answers


def _slow_git(tmp_path, marker: str):
    """A `git` first on PATH whose rev-list never ends (a huge history); every other command is git's."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\ncase \"$*\" in *rev-list*) exec python3 -c 'import time; time.sleep(60)' "
                                 f"{marker} ;; esac\nexec {real} \"$@\"\n")
    (bin_dir / "git").chmod(0o755)
    return bin_dir


def _alive(marker: str) -> str:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip()


def _started(marker: str) -> str:
    """The slow rev-list, once it runs: the walk's Popen returns as the script starts, and the
    marker is only on a command line once its shell has exec'd python3 (on a loaded machine,
    well after `keyed` is set)."""
    return wait_until(lambda: _alive(marker), timeout=60)


def test_a_walk_that_does_not_match_is_ended_while_it_runs(repo, tmp_path, monkeypatch):
    r, shas = repo
    marker = f"early-probe-{uuid.uuid4().hex}"   # unique on the machine: another session may run this test
    monkeypatch.setenv("PATH", f"{_slow_git(tmp_path, marker)}:{os.environ['PATH']}")
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1]])
    walk = early._walk
    assert walk.keyed.wait(60)
    assert walk.proc is not None and walk.proc.poll() is None and _started(marker)
    assert early.take(r, [*early.WALK, shas[-1], f"^{shas[1]}"]) is None      # another range: ended
    assert walk.proc.poll() is not None and not _alive(marker)


def _free(lock) -> bool:
    """Whether no process holds the flock of a cached worktree (`wt-N.lock`)."""
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


EARLY_THEN_CLI = """
import sys
from bisectk.spaces import early
from bisectk.__main__ import _open_pool
early.start(sys.argv[1:], _open_pool)
assert early._walk.pooled.wait(30)
from bisectk.cli import entry
entry()
"""


def test_an_unused_walk_is_ended_when_the_command_leaves(repo, tmp_path):
    """`bisect` with an option error after the walk began: one line, exit 2, no git left, and the
    worktree begun early released (its lock free, its checkout whole)."""
    r, shas = repo
    marker = f"early-probe-{uuid.uuid4().hex}"   # unique on the machine: another session may run this test
    path = f"{_slow_git(tmp_path, marker)}:{os.environ['PATH']}"
    # bisectk/__main__.py, with one wait: the CLI fails at its option parsing in ~0.1 s, which may
    # come before the walk has opened its pool on a loaded machine; the premise is that it has
    p = subprocess.run([sys.executable, "-c", EARLY_THEN_CLI, "bisect", "--repo", str(r), "--good", shas[0], "--bad",
                        shas[-1], "--no-such-option"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PATH": path, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2 and "no-such-option" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not _alive(marker)
    cache = cache_dir_of(r)
    assert [d.name for d in cache.iterdir() if d.is_dir()] == ["wt-0"]       # begun before the CLI failed
    assert _free(cache / "wt-0.lock")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cache / "wt-0", capture_output=True, text=True).stdout
    assert head.strip() == shas[0]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=cache / "wt-0", capture_output=True,
                          text=True).stdout == ""


def test_the_first_endpoint_is_checked_out_early_and_taken_by_its_command(repo):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1], "--jobs=2", "--run", "./t.sh"],
                open_pool=_open_pool)
    walk = early._walk
    walk.pooled.wait(30)
    assert walk.pool is not None and walk.pool[1:3] == (2, shas[0])
    pool = early.take_pool(r, 2, shas[0])
    assert pool is not None and walk.pool is None                   # taken, once
    try:
        with pool.lease(shas[0]) as tree:                           # found at the good commit
            got = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout
            assert got.strip() == shas[0]
            assert not _free(f"{tree}.lock")                        # held by this process
    finally:
        pool.close()
    assert early.take_pool(r, 2, shas[0]) is None


@pytest.mark.parametrize("size,first", [(1, 0), (2, 1)])
def test_a_pool_begun_for_another_command_is_closed_not_used(repo, size, first):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1], "--jobs", "2"], open_pool=_open_pool)
    early._walk.pooled.wait(30)
    assert early.take_pool(r, size, shas[first]) is None
    lock = cache_dir_of(r) / "wt-0.lock"
    assert _free(lock)                      # released: the command's own pool can take it


@pytest.mark.parametrize("extra", [["--executor", "ray"], ["--executor=ray", "--jobs", "2"], ["--jobs", "0"],
                                   ["--jobs", "many"]])
def test_no_worktree_is_begun_where_the_command_would_not_make_one(repo, extra):
    r, shas = repo
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1], *extra],
                open_pool=_open_pool)
    walk = early._walk
    assert walk is not None and walk.pool_size is None
    walk.pooled.wait(30)
    assert walk.pool is None and not cache_dir_of(r).exists()


def test_the_cli_answer_is_the_same_with_and_without_the_early_walk(tmp_path):
    shas = make_repo(tmp_path / "r", n=12, culprit=7, broken=())
    answers = []
    for env in ({}, {"BISECTK_NO_EARLY": "1"}):
        p = bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
                    "--json", "--ledger", tmp_path / f"l{len(answers)}.db", env=env)
        assert p.returncode == 0, p.stderr[-2000:]
        answers.append(json.loads(p.stdout)["first_bad"]["sha"])
    assert answers == [shas[7], shas[7]]


def test_a_pool_that_could_not_be_opened_is_answered_at_once_not_after_the_walk(repo, tmp_path, monkeypatch):
    """The CLI asks for the early pool before it needs the listing: a pool that could not be
    opened (a read-only git dir, say) is None at once, not once a long rev-list has ended."""
    r, shas = repo
    marker = f"early-probe-{uuid.uuid4().hex}"   # unique on the machine: another session may run this test
    monkeypatch.setenv("PATH", f"{_slow_git(tmp_path, marker)}:{os.environ['PATH']}")

    def cannot(root, size):
        raise OSError("read-only file system")
    early.start(["bisect", "--repo", str(r), "--good", shas[0], "--bad", shas[-1]], open_pool=cannot)
    assert early._walk.keyed.wait(60)
    t = time.monotonic()
    assert early.take_pool(r, 1, shas[0]) is None
    assert time.monotonic() - t < 10
    assert early._walk.proc.poll() is None and _started(marker)      # the walk (60 s) still runs
