"""The worktree cache: leases that hold their commit, a cache that outlives the pool and serves
the next command without a full checkout, never the user's checkout (HEAD, index, working tree,
stash list stay byte-identical), one holder per entry (flock), a killed holder's entry taken over
and reset, background preparation, and `collect` (bisectk ledger gc)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bisectk.spaces.commits import SpaceError, list_graph, resolve, run_git
from bisectk.spaces.worktrees import WorktreePool, cache_dir_of
from bisectk.spaces.wtcollect import collect
from tests.conftest import wait_until
from tests.fixtures.gitrepo import make_dag_repo
from tests.search.dags import CRISS_CROSS
from tests.spaces.test_commits import fingerprint, git, repo, worktrees  # noqa: F401  (repo: a fixture)

ROOT = Path(__file__).resolve().parents[2]


def chain(repo: Path) -> list[str]:
    """The fixture's commits c0..c7 (c5b included), oldest first."""
    return git(repo, "rev-list", "--reverse", "HEAD").split()[-9:]


def cached(repo: Path) -> list[str]:
    """The worktrees git lists under the cache, by name."""
    cache = os.path.join(cache_dir_of(repo), "")
    return sorted(Path(w.split(" ", 1)[1]).name for w in worktrees(repo) if w.split(" ", 1)[1].startswith(cache))


def test_leases_hold_their_commit_and_the_cache_serves_the_next_pool(repo):
    before = fingerprint(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=2) as pool:
        with pool.lease(rng[2]) as a, pool.lease(rng[6]) as b:
            assert a != b and (a / "state.txt").read_text() == "2\n"
            assert (b / "state.txt").read_text() == "5\n" and (b / "kernel.py").exists()
            assert git(a, "rev-parse", "HEAD") == rng[2]
            assert a.is_relative_to(cache_dir_of(repo)) and not a.is_relative_to(repo)
            (a / "build.out").write_text("artifact")
        with pool.lease(rng[2]) as again:       # the same commit again: the same worktree
            assert again == a and (again / "state.txt").read_text() == "2\n"
        with pool.lease(rng[8]) as c:           # a switch cleans untracked outputs
            assert c in (a, b) and not (c / "build.out").exists()
            assert (c / "state.txt").read_text() == "7\n"
    assert cached(repo) == ["wt-0", "wt-1"]         # the pool is gone, its worktrees stay
    assert fingerprint(repo) == before
    # the next command: no `git worktree add`, an entry at the commit is chosen first
    at = {Path(p).name: git(Path(p), "rev-parse", "HEAD") for p in (a, b)}
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[8]) as d:
            assert d in (a, b) and at[d.name] == rng[8] and (d / "state.txt").read_text() == "7\n"
    assert cached(repo) == ["wt-0", "wt-1"] and fingerprint(repo) == before


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_a_half_built_worktree_is_reset_before_the_next_use(repo, exc):
    before = fingerprint(repo)
    rng = chain(repo)
    with pytest.raises(exc):
        with WorktreePool(repo, size=3) as pool:
            with pool.lease(rng[1]) as wt:
                (wt / "state.txt").write_text("build in progress\n")
                (wt / "half.o").write_text("partial")
                raise exc()
    assert fingerprint(repo) == before
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[1]) as again:
            assert again == wt and (wt / "state.txt").read_text() == "1\n" and not (wt / "half.o").exists()


def test_a_worktree_made_again_under_new_settings_keeps_its_lock_while_a_fork_holds_a_copy(repo, monkeypatch):
    """A cached worktree written under other checkout settings (a sparse checkout `set` since) is
    removed and made again in its place. Its flock must not be let go in between: a child another
    thread forks meanwhile (any git command) holds a copy of every descriptor until it execs, and
    the lock, taken again, would be found held: "being created by another bisectk" (a bisect after
    `git sparse-checkout set` failed so under load). Here each lock's descriptor is duplicated as
    such a child's copy is, and kept open throughout."""
    from bisectk.spaces import worktrees
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[1]):
            pass
    git(repo, "config", "core.autocrlf", "false")          # a shaping setting: wt-0 is made again
    forked: list[int] = []
    taken = worktrees.lock_entry

    def lock_copied_by_a_fork(path):
        fd = taken(path)
        if fd is not None:
            forked.append(os.dup(fd))
        return fd
    monkeypatch.setattr(worktrees, "lock_entry", lock_copied_by_a_fork)
    try:
        with WorktreePool(repo, size=1) as pool:
            with pool.lease(rng[2]) as wt:
                assert wt.name == "wt-0" and (wt / "state.txt").read_text() == "2\n"
    finally:
        for fd in forked:
            os.close(fd)
    assert cached(repo) == ["wt-0"]

def test_repo_environment_cannot_redirect_commands(repo, monkeypatch):
    before = fingerprint(repo)
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for i in (1, 5, 3):
            with pool.lease(rng[i]) as wt:
                assert git(wt, "rev-parse", "HEAD") == rng[i]
    assert fingerprint(repo) == before


def test_two_pools_never_share_an_entry(repo):
    rng = chain(repo)
    with WorktreePool(repo, size=1) as first, WorktreePool(repo, size=1) as second:
        with first.lease(rng[3]) as a:
            with second.lease(rng[3]) as b:
                assert a != b and (a / "state.txt").read_text() == (b / "state.txt").read_text() == "3\n"
    assert cached(repo) == ["wt-0", "wt-1"]



def test_a_cache_removed_while_a_command_runs_stops_it_in_one_line_and_blames_no_run(repo):
    """`rm -rf ~/.cache` while a bisection runs: the run under way is given no verdict (not
    "the run broke its worktree"), and no worktree is made again under a lock file that is gone,
    which another command could then take as well: the command stops, saying why."""
    before = fingerprint(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        entry = pool.acquire(rng[2])
        shutil.rmtree(pool.cache_dir)           # while the run of rng[2] is under way
        with pytest.raises(SpaceError, match="was removed while this command ran"):
            pool.damage_of(entry)               # asked as the run ends
        pool.release(entry, rng[2])
        with pytest.raises(SpaceError, match="was removed while this command ran"):
            pool.acquire(rng[4])                # the next lease
    with WorktreePool(repo, size=1) as pool:    # the next command makes its worktrees again
        with pool.lease(rng[4]) as wt:
            assert (wt / "state.txt").read_text() == "4\n"
    assert fingerprint(repo) == before

def test_the_git_dirs_worktree_records_removed_while_a_run_goes_on_are_not_blamed_on_the_run(repo):
    """`rm -rf .git/worktrees` (a user's cleanup beside the command) while a run is under way: the
    run was given no verdict as "the run broke its worktree: its git directory ... was removed",
    sending the user to their script; the command stops, saying what was removed and by whom."""
    from bisectk.spaces.commits import git_common_dir
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        entry = pool.acquire(rng[2])
        shutil.rmtree(git_common_dir(repo) / "worktrees")     # while the run of rng[2] is under way
        with pytest.raises(SpaceError, match="worktrees was removed while this command ran.*not by the run"):
            pool.damage_of(entry)               # asked as the run ends
        pool.release(entry, rng[2])
    with WorktreePool(repo, size=1) as pool:    # the next command makes its worktrees again
        with pool.lease(rng[4]) as wt:
            assert (wt / "state.txt").read_text() == "4\n"


HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from bisectk.spaces.worktrees import WorktreePool
with WorktreePool({repo!r}, size=1) as pool:
    with pool.lease({sha!r}) as wt:
        (wt / "state.txt").write_text("killed mid-build\\n")
        (wt / "junk.o").write_text("x")
        admin = Path((wt / ".git").read_text().split(": ", 1)[1].strip())
        (admin / "index.lock").write_text("")        # as a killed git leaves it
        print(wt, flush=True)
        time.sleep(600)
"""


def test_a_killed_holders_worktree_is_taken_over_and_reset(repo):
    before = fingerprint(repo)
    rng = chain(repo)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT), repo=str(repo), sha=rng[4])],
                            stdout=subprocess.PIPE, text=True)
    held = Path(proc.stdout.readline().strip())
    with WorktreePool(repo, size=1) as pool:       # held: this pool adds another entry
        with pool.lease(rng[4]) as wt:
            assert wt != held
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with WorktreePool(repo, size=2) as pool:
        with pool.lease(rng[4]) as a, pool.lease(rng[4]) as b:
            assert held in (a, b)
            assert (held / "state.txt").read_text() == "4\n" and not (held / "junk.o").exists()
    assert fingerprint(repo) == before


def test_prepare_checks_out_in_the_background_and_the_lease_finds_it(repo, monkeypatch):
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        pool.prepare(rng[6])
        time.sleep(0.05)
        with pool.lease(rng[6]) as wt:
            assert git(wt, "rev-parse", "HEAD") == rng[6]
        assert len(cached(repo)) == 1
        calls = []
        monkeypatch.setattr("bisectk.spaces.worktrees.run_git", lambda *a: calls.append(a) or run_git(*a))
        with pool.lease(rng[6]):
            pass
        assert calls == []          # found at its commit: no git command at all



def test_a_lease_that_waits_for_a_prepared_checkout_says_so_and_one_that_does_not_is_silent(repo, monkeypatch):
    """`while_preparing`: the CLI parses the listing while its first run waits for a big checkout."""
    rng = chain(repo)
    real = run_git
    ended = []
    waited = []

    def slow(*args):
        if "checkout" in args:
            if rng[5] in args:      # the prepared checkout runs until the lease has waited for it (or 60 s)
                wait_until(lambda: waited, timeout=60)
            out = real(*args)
            ended.append(time.monotonic())
            return out
        return real(*args)
    monkeypatch.setattr("bisectk.spaces.worktrees.run_git", slow)
    with WorktreePool(repo, size=1, while_preparing=lambda: waited.append(time.monotonic())) as pool:
        with pool.lease(rng[3]):
            pass                            # an ordinary switch: nothing prepared, nothing said
        assert waited == []
        pool.prepare(rng[5])
        with pool.lease(rng[5]) as wt:
            assert git(wt, "rev-parse", "HEAD") == rng[5]
        assert waited and waited[0] < ended[-1]     # said while the prepared checkout still ran
        n = len(waited)
        with pool.lease(rng[5]):
            pass                            # found at its commit: no wait
        assert len(waited) == n


def test_a_pool_closed_from_another_thread_while_preparing_waits_for_what_it_started(repo):
    """The pool begun before the CLI (spaces/early.py) may be closed by the exit handler while its
    thread is still asking for the first checkout: close never joins a thread it did not start,
    waits for one it did, and a prepare after close starts nothing."""
    import threading
    rng = chain(repo)
    for k in range(20):
        pool = WorktreePool(repo, size=1).__enter__()
        asker = threading.Thread(target=pool.prepare, args=(rng[k % len(rng)],))
        asker.start()
        pool.close()                        # raced against prepare: no RuntimeError
        asker.join()
        assert all(not t.is_alive() for t in pool._threads)
    pool.prepare(rng[1])
    assert not pool._pending
    with WorktreePool(repo, size=1) as again:      # its lock was released: the cached entry serves
        with again.lease(rng[2]) as wt:
            assert git(wt, "rev-parse", "HEAD") == rng[2]
    assert len(cached(repo)) == 1

def test_collect_removes_what_nobody_holds(repo):
    before = fingerprint(repo)
    rng = chain(repo)

    def ours(removed):      # collect also takes the caches of repositories since deleted (another
        return [p for p in removed if p.is_relative_to(cache_dir_of(repo))]   # test's, in a shared root)
    with WorktreePool(repo, size=2) as pool:
        with pool.lease(rng[1]), pool.lease(rng[2]):
            pass
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[3]) as busy:
            removed = collect(repo)
            assert len(ours(removed)) == 1 and busy not in removed and busy.exists()
            assert cached(repo) == [busy.name]
    assert len(ours(collect(repo))) == 1 and cached(repo) == []
    assert not cache_dir_of(repo).exists()
    assert worktrees(repo) == [f"worktree {repo}"] and fingerprint(repo) == before
    assert collect(repo) == []


def test_keep_false_removes_the_worktrees(repo):
    rng = chain(repo)
    with WorktreePool(repo, size=2, keep=False) as pool:
        with pool.lease(rng[1]), pool.lease(rng[2]):
            pass
    assert worktrees(repo) == [f"worktree {repo}"] and not cache_dir_of(repo).exists()


def test_worktrees_of_older_versions_in_the_git_dir_are_never_used_and_gc_removes_them(repo, tmp_path, monkeypatch):
    """bisectk kept its worktrees in <git dir>/bisectk-worktrees/ (wt-N, and per-process sessions
    <pid>-<hex> before the cache): a pool leaves them alone, and `collect` removes those no live
    process holds."""
    import fcntl
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))   # collect also sweeps other tests' orphans
    before = fingerprint(repo)
    legacy = repo / ".git" / "bisectk-worktrees"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = legacy / f"{dead.pid}-abcd1234" / "wt-0"
    stale.parent.mkdir(parents=True)
    head2 = resolve(repo, "HEAD~2")
    for wt in (stale, legacy / "wt-0", legacy / "wt-1"):
        run_git(repo, "worktree", "add", "--detach", str(wt), head2)
    live = legacy / f"{os.getpid()}-beef0000"
    live.mkdir()
    held = os.open(legacy / "wt-1.lock", os.O_RDWR | os.O_CREAT)       # a running older bisectk's
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        with WorktreePool(repo, size=1) as pool:
            with pool.lease(head2) as wt:           # at the very commit: still a worktree of its own
                assert not wt.is_relative_to(repo) and wt.is_relative_to(cache_dir_of(repo))
        assert len(worktrees(repo)) == 5 and cached(repo) == ["wt-0"]
        removed = collect(repo)
        assert sorted(removed) == sorted([stale.parent, legacy / "wt-0", cache_dir_of(repo) / "wt-0"])
        assert not stale.parent.exists() and live.exists() and (legacy / "wt-1" / "state.txt").exists()
    finally:
        os.close(held)
    shutil.rmtree(live)
    assert collect(repo) == [legacy / "wt-1"] and not legacy.exists()
    assert worktrees(repo) == [f"worktree {repo}"] and fingerprint(repo) == before


def test_the_cache_is_outside_the_checkout_and_keyed_per_repository(repo, tmp_path, monkeypatch):
    """Tools search a run's parent directories for their configuration (pytest.ini, conftest.py,
    .python-version, Cargo.toml...): no worktree may have the user's checkout among them."""
    other = tmp_path / "elsewhere" / "repo"                 # the same name, another repository
    run_git(tmp_path, "clone", "-q", str(repo), str(other))
    home = Path(os.environ["XDG_CACHE_HOME"]) / "bisectk" / "worktrees"
    paths = {}
    for r in (repo, other):
        with WorktreePool(r, size=1) as pool:
            with pool.lease(resolve(r, "HEAD")) as wt:
                paths[r] = wt
                assert pool.cache_dir.parent == home and pool.cache_dir.name.startswith("repo-")
                for inside in (r, r / ".git", r.resolve()):
                    assert not wt.resolve().is_relative_to(inside)
                assert (pool.cache_dir / "repo").read_text().strip() == str((r / ".git").resolve())
    assert paths[repo].parent != paths[other].parent and cache_dir_of(repo) == paths[repo].parent
    # a cache home inside the checkout would put it back among the ancestors: the fallback instead
    monkeypatch.setenv("XDG_CACHE_HOME", str(repo / ".cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert cache_dir_of(repo).parent == tmp_path / "tmp" / f"bisectk-{os.getuid()}" / "worktrees"
    assert not (repo / ".cache").exists()


def test_a_key_another_repository_recorded_is_not_shared(repo, tmp_path):
    """Two repositories whose keys collide (or a cache directory copied from elsewhere): the second
    takes the next key, never the other's worktrees."""
    mine = cache_dir_of(repo)
    mine.mkdir(parents=True)
    (mine / "repo").write_text(str(tmp_path / "another" / ".git") + "\n")
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(resolve(repo, "HEAD")) as wt:
            assert wt.parent == mine.with_name(mine.name + "-2")
    assert cache_dir_of(repo) == wt.parent and (mine / "repo").read_text().startswith(str(tmp_path / "another"))
    with pytest.raises(SpaceError, match="keeps the worktrees of .*another"):
        with WorktreePool(repo, cache_dir=mine):
            pass


@pytest.mark.parametrize("home", ["unwritable", "missing"])
def test_an_unwritable_cache_home_falls_back_to_a_private_temp_directory(repo, tmp_path, monkeypatch, home):
    blocker = tmp_path / "file"
    blocker.write_text("")                  # a path under a file cannot be made, not even by root
    if home == "unwritable":
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    else:                                   # HOME=/nonexistent: no home made for the cache
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "nonexistent"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(resolve(repo, "HEAD")) as wt:
            assert git(wt, "rev-parse", "HEAD") == resolve(repo, "HEAD")
    top = tmp_path / "tmp" / f"bisectk-{os.getuid()}"
    assert wt.parent.parent == top / "worktrees" and (top.stat().st_mode & 0o777) == 0o700
    assert not (tmp_path / "nonexistent").exists()
    assert collect(repo) == [wt] and worktrees(repo) == [f"worktree {repo}"]


def test_no_writable_place_for_worktrees_is_one_line(repo, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))
    with pytest.raises(SpaceError, match=r"^no place to keep the worktrees .*XDG_CACHE_HOME[^\n]*$"):
        WorktreePool(repo, size=1)
    # a fallback directory someone else could enter (made first by another user in /tmp) is not used
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / f"bisectk-{os.getuid()}").mkdir(mode=0o755)
    os.chmod(tmp_path / f"bisectk-{os.getuid()}", 0o755)
    with pytest.raises(SpaceError, match="not a directory of this user's alone"):
        WorktreePool(repo, size=1)


def test_gc_removes_the_cache_of_a_repository_that_is_gone(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))   # no other test's orphans
    gone = tmp_path / "gone"
    run_git(tmp_path, "clone", "-q", str(repo), str(gone))
    with WorktreePool(gone, size=2) as pool:
        with pool.lease(resolve(gone, "HEAD")), pool.lease(resolve(gone, "HEAD~1")):
            pass
    orphan = pool.cache_dir
    assert sorted(p.name for p in orphan.iterdir()) == ["repo", "wt-0", "wt-0.lock", "wt-1", "wt-1.lock"]
    with WorktreePool(repo, size=1) as mine:
        with mine.lease(resolve(repo, "HEAD")):
            pass
    shutil.rmtree(gone)
    assert sorted(collect(repo)) == sorted([orphan / "wt-0", orphan / "wt-1", mine.cache_dir / "wt-0"])
    assert not orphan.exists() and not mine.cache_dir.exists()


def test_worktrees_see_what_the_graph_lists(tmp_path):
    good, shas = make_dag_repo(tmp_path / "r", CRISS_CROSS, culprit=2)
    graph = list_graph(tmp_path / "r", good, shas[-1])
    with WorktreePool(tmp_path / "r", size=1) as pool:
        for i in range(len(graph)):
            with pool.lease(graph.sha(i)) as wt:
                assert (wt / "id.txt").read_text().strip() == graph[i].subject
                assert (wt / "BUG").exists() == (graph[i].subject in {"c2", "c3", "c4", "c5", "c6", "c7"})


def test_a_switch_drops_bytecode_and_so_does_another_lease_of_the_commit(repo):
    """Bytecode a run made is the run's own untracked output: gone before the next run, whichever
    commit it runs (runs write none themselves: PYTHONDONTWRITEBYTECODE)."""
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for sha in (rng[2], rng[3]):
            with pool.lease(rng[2]) as wt:
                (wt / "pkg" / "__pycache__").mkdir(parents=True, exist_ok=True)
                (wt / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"stale")
            with pool.lease(sha) as wt:
                assert not (wt / "pkg" / "__pycache__").exists()


def test_each_switch_drops_the_bytecode_made_since_the_last_one_wherever_it_is(repo):
    """The surveys after the first read again only directories whose mtime moved: bytecode a
    run made in an old directory, or deep in a new one, goes all the same, switch after switch."""
    rng = chain(repo)
    # ignored, as most projects ignore them: `git clean` (no -x) keeps them, only the survey drops them
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("__pycache__/\nmade*/\n")
    with WorktreePool(repo, size=1) as pool:
        for i, sha in enumerate(rng[2:7]):
            with pool.lease(sha) as wt:
                for pyc in (wt / "__pycache__", wt / "pkg" / "__pycache__",
                            wt / f"made{i}" / "deep" / "__pycache__"):
                    assert not pyc.exists(), (i, pyc)
                    pyc.mkdir(parents=True)
                    (pyc / "m.cpython-311.pyc").write_bytes(b"stale")


def _subcommand(args: tuple[str, ...]) -> str:
    """git's subcommand among its arguments (past any `-c key=value`)."""
    i = 0
    while args[i] == "-c":
        i += 2
    return args[i]


def test_files_made_anywhere_by_a_run_are_cleaned_and_a_clean_worktree_skips_clean(repo, monkeypatch):
    rng = chain(repo)
    calls = []
    monkeypatch.setattr("bisectk.spaces.worktrees.run_git", lambda *a: calls.append(_subcommand(a[1:])) or run_git(*a))
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            (wt / "out" / "deep").mkdir(parents=True)
            (wt / "out" / "deep" / "o.bin").write_text("x")
        with pool.lease(rng[3]) as wt:          # a new directory: cleaned
            assert not (wt / "out").exists()
        assert calls.count("clean") == 1
        with pool.lease(rng[4]) as wt:          # nothing made since: no clean needed
            assert (wt / "state.txt").read_text() == "4\n"
        assert calls.count("clean") == 1 and calls.count("checkout") == 2
        with pool.lease(rng[5]) as wt:
            (wt / "tmp.txt").write_text("made and removed")
            (wt / "tmp.txt").unlink()
        with pool.lease(rng[6]):
            pass
        assert calls.count("clean") == 2            # a directory changed: cleaned again, to be safe


def test_another_run_of_a_commit_starts_from_the_tree_its_checkout_left(repo, monkeypatch):
    """A run's untracked files and edits to tracked files are undone before the next run of the
    same commit, as a switch undoes them (a test that runs `mkdir out` fails at its second run
    otherwise, and is taken for a flake); ignored build outputs stay; a run that moved HEAD or
    wrote the index (git checkout, add) in its worktree is reset. Nothing is written when the run
    changed nothing, and a lease that wrote says so by a new generation (a build made there is
    made again)."""
    rng = chain(repo)
    (repo / ".git" / "info" / "exclude").write_text("*.o\n")
    calls = []
    monkeypatch.setattr("bisectk.spaces.worktrees.run_git", lambda *a: calls.append(_subcommand(a[1:])) or run_git(*a))
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            (wt / "out").mkdir()
            (wt / "out" / "log.txt").write_text("first run")
            (wt / "state.txt").write_text("edited by the run\n")
            (wt / "kernel.o").write_text("ignored build output")
        first = pool._free[0].generation
        with pool.lease(rng[2]) as again:
            assert again == wt and not (wt / "out").exists() and (wt / "kernel.o").exists()
            assert (wt / "state.txt").read_text() == "2\n"
        assert pool._free[0].generation > first
        calls.clear()
        with pool.lease(rng[2]):                # the last run changed nothing: nothing written
            pass
        assert "checkout" not in calls and "clean" not in calls
        generation = pool._free[0].generation
        with pool.lease(rng[2]) as wt:          # an edit in place moves no directory's mtime
            with open(wt / "state.txt", "a") as f:
                f.write("appended\n")
        with pool.lease(rng[2]) as wt:
            assert (wt / "state.txt").read_text() == "2\n" and pool._held[0].generation > generation
        with pool.lease(rng[2]) as wt:          # the run's own git commands
            git(wt, "checkout", "-q", "--detach", rng[4])
        with pool.lease(rng[2]) as wt:
            assert git(wt, "rev-parse", "HEAD") == rng[2] and (wt / "state.txt").read_text() == "2\n"
        with pool.lease(rng[2]) as wt:
            (wt / "state.txt").write_text("staged\n")
            git(wt, "add", "state.txt")
        with pool.lease(rng[2]) as wt:
            assert (wt / "state.txt").read_text() == "2\n" and git(wt, "diff", "--cached", "--name-only") == ""


def test_on_a_coarse_clock_an_entry_that_kept_its_directorys_mtime_is_still_cleaned(repo, monkeypatch):
    """A run's file made within the tick of the checkout's last write leaves the directory's mtime
    as stamped (a coarse clock: Linux before 6.13). Made here by putting the mtime back. Where the
    pool's probe says the clock is fine-grained the file would survive the switch (the premise);
    where it says coarse, the recently changed directories are cleaned at the next switch."""
    rng = chain(repo)
    monkeypatch.setattr("bisectk.spaces.wtdisk.RACY_NS", 3600 * 10**9)   # "recent": however loaded the machine
    survived = {}
    for coarse in (False, True):
        collect(repo)
        monkeypatch.setattr("bisectk.spaces.worktrees.coarse_mtimes", lambda where: coarse)
        with WorktreePool(repo, size=1) as pool:
            with pool.lease(rng[2]) as wt:
                st = os.stat(wt)
                (wt / "stray.txt").write_text("a run's output")
                os.utime(wt, ns=(st.st_atime_ns, st.st_mtime_ns))     # the tick had not moved
            with pool.lease(rng[3]) as wt:
                survived[coarse] = (wt / "stray.txt").exists()
    assert survived == {False: True, True: False}


def test_a_switch_cleans_only_the_directories_that_changed(tmp_path, monkeypatch):
    r = tmp_path / "r"
    (r / "pkg").mkdir(parents=True)
    (r / "other").mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = []
    for i in range(2):
        for d in ("pkg", "other"):
            (r / d / "m.py").write_text(f"{i}\n")
        git(r, "add", ".")
        git(r, "commit", "-q", "-m", f"c{i}")
        shas.append(git(r, "rev-parse", "HEAD"))
    cleans = []

    def spy(*a):
        if _subcommand(a[1:]) == "clean":
            cleans.append(a[1:])
        return run_git(*a)
    monkeypatch.setattr("bisectk.spaces.worktrees.run_git", spy)
    monkeypatch.setattr("bisectk.spaces.worktrees.coarse_mtimes", lambda where: False)
    with WorktreePool(r, size=1) as pool:
        with pool.lease(shas[0]) as wt:
            (wt / "pkg" / "stray.txt").write_text("x")
            (wt / "pkg" / "new" / "deep").mkdir(parents=True)
            (wt / "pkg" / "new" / "deep" / "o.bin").write_text("x")
        with pool.lease(shas[1]) as wt:
            assert not (wt / "pkg" / "stray.txt").exists() and not (wt / "pkg" / "new").exists()
            assert (wt / "other" / "m.py").read_text() == "1\n"
    assert len(cleans) == 1 and cleans[0][-2:] == ("--", ":(literal)pkg"), cleans


def test_the_clock_probe_answers_and_leaves_nothing(tmp_path):
    from bisectk.spaces.wtdisk import coarse_mtimes
    assert coarse_mtimes(tmp_path) in (True, False)
    assert list(tmp_path.iterdir()) == []
    assert coarse_mtimes(tmp_path / "missing") is True      # no probe possible: assume the worst


def test_a_git_dir_this_user_cannot_write_is_one_line_not_a_traceback(repo, monkeypatch):
    """A checkout another user owns (a team's shared clone, a read-only mount): git worktree add
    writes under its git dir, and so does the pool. As a non-root user that was an internal error
    (PermissionError on wt-0.lock); it is a SpaceError saying what to do. (Root, as here, may write
    anywhere: os.access stands for the other user's view.)"""
    from bisectk.spaces.commits import SpaceError
    import bisectk.spaces.worktrees as wt
    before = fingerprint(repo)
    monkeypatch.setattr(wt.os, "access", lambda path, mode: False)
    with pytest.raises(SpaceError, match=r"cannot write in .*\.git: bisect checks each commit out .*git clone --shared"):
        with WorktreePool(repo, size=1):
            pass
    assert fingerprint(repo) == before


def test_a_pool_of_one_of_its_own_worktrees_is_refused(repo):
    """Run from inside a cached worktree (the path --manual prints), bisectk took it for the user's
    checkout, and its next switch deleted what the user had put there."""
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            pass
    (wt / "mine.sh").write_text("the user's\n")
    with pytest.raises(SpaceError, match="own cached worktrees"):
        WorktreePool(wt)
    assert (wt / "mine.sh").read_text() == "the user's\n"


def test_a_watched_worktree_that_nothing_wrote_is_not_stat_ed_and_one_written_is(repo, monkeypatch, tmp_path):
    """inotify (spaces/dirwatch.py) says whether a run wrote anything: a quiet worktree is leased
    again with no `git diff-files`; any write, in place or in a new directory, is seen; without
    inotify the stats answer as before."""
    from bisectk.spaces.dirwatch import DirWatch
    rng = chain(repo)
    asked = []
    real = __import__("bisectk.spaces.worktrees", fromlist=["git_ok"]).git_ok
    monkeypatch.setattr("bisectk.spaces.worktrees.git_ok", lambda *a: asked.append(a[1:]) or real(*a))
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]):
            pass
        for _ in range(3):
            with pool.lease(rng[2]):
                pass
        assert asked == [] and pool._free[0].watch.sound
        with pool.lease(rng[2]) as wt:
            (wt / "new" / "deeper").mkdir(parents=True)
            (wt / "new" / "deeper" / "o.txt").write_text("x")
        with pool.lease(rng[2]) as wt:
            assert not (wt / "new").exists()
        with pool.lease(rng[2]) as wt:
            with open(wt / "state.txt", "a") as f:
                f.write("in place\n")
        with pool.lease(rng[2]) as wt:
            assert (wt / "state.txt").read_text() == "2\n" and len(asked) == 2
    w = DirWatch()
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    w.arm([str(d), str(d / "sub")])
    assert w.quiet()
    (d / "sub" / "f").write_text("x")
    assert not w.quiet() and w.quiet()          # seen once; then quiet again
    w.close()
    monkeypatch.setattr("bisectk.spaces.dirwatch.sys.platform", "darwin")     # no inotify: never quiet
    assert not DirWatch().quiet()
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[3]) as wt:
            with open(wt / "state.txt", "a") as f:
                f.write("in place\n")
        with pool.lease(rng[3]) as wt:
            assert (wt / "state.txt").read_text() == "3\n"


def test_a_switch_across_a_gitattributes_change_writes_each_file_as_a_fresh_checkout_would(tmp_path):
    """A commit adds `*.txt text eol=crlf` and data.txt's blob never changes: a switch rewrites
    only the files whose blob changed, so data.txt kept the other commit's line endings (LF after
    the old commit, CRLF after the new one, either way) where a fresh checkout writes the commit's."""
    r = tmp_path / "eol"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "data.txt").write_bytes(b"a\nb\n")
    (r / "v").write_text("0\n")
    git(r, "add", ".")
    git(r, "commit", "-qm", "c0")
    (r / "v").write_text("1\n")
    git(r, "commit", "-qam", "c1")
    (r / ".gitattributes").write_text("*.txt text eol=crlf\n")
    git(r, "add", ".gitattributes")
    git(r, "commit", "-qm", "crlf")
    (r / "v").write_text("3\n")
    git(r, "commit", "-qam", "c3")
    shas = git(r, "rev-list", "--reverse", "HEAD").split()
    with WorktreePool(r, size=1) as pool:
        for sha, want in ((shas[0], b"a\nb\n"), (shas[3], b"a\r\nb\r\n"), (shas[1], b"a\nb\n"),
                          (shas[2], b"a\r\nb\r\n"), (shas[3], b"a\r\nb\r\n"), (shas[0], b"a\nb\n")):
            with pool.lease(sha) as wt:
                assert (wt / "data.txt").read_bytes() == want, sha
                assert git(wt, "status", "--porcelain") == ""


def test_an_attributes_file_named_in_the_config_but_empty_or_missing_keeps_the_plain_shape(tmp_path):
    """`core.attributesFile` set (a dotfile's `~/.gitattributes`) where that file is missing or
    empty shapes no checkout: the key of a cached worktree stayed '' before the user's attributes
    file counted, and must stay so, or every cached worktree is checked out again. Before, the
    config line alone made the shape a digest; the file's content is what counts."""
    from bisectk.spaces.wtshape import checkout_shape
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    attributes = tmp_path / "attributes"
    git(r, "config", "core.attributesFile", str(attributes))
    assert checkout_shape(r, r / ".git") == ""                    # missing
    attributes.write_text("")
    assert checkout_shape(r, r / ".git") == ""                    # empty
    attributes.write_text("* eol=crlf\n")
    crlf = checkout_shape(r, r / ".git")
    assert crlf != ""
    git(r, "config", "core.autocrlf", "input")                    # another shaping key beside it
    both = checkout_shape(r, r / ".git")
    attributes.write_text("")
    alone = checkout_shape(r, r / ".git")
    git(r, "config", "--unset", "core.attributesFile")
    assert alone == checkout_shape(r, r / ".git") not in ("", both)


def test_a_git_bisect_a_run_left_open_is_gone_before_the_next_run(repo):
    """A test that runs `git bisect start` in its worktree and fails before `git bisect reset`:
    the bisection's state is the worktree's own and a checkout keeps it, so the next run (another
    commit, or the same one again) would run inside it. It is forgotten; the user's is untouched."""
    before = fingerprint(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for first, then in ((rng[2], rng[6]), (rng[6], rng[6])):
            with pool.lease(first) as wt:
                git(wt, "bisect", "start")
                git(wt, "bisect", "bad")            # HEAD and the index stay where they were
                assert (Path(git(wt, "rev-parse", "--git-dir")) / "BISECT_START").exists()
            with pool.lease(then) as wt:
                admin = Path(git(wt, "rev-parse", "--git-dir"))
                assert not list(admin.glob("BISECT_*")) and not (admin / "refs" / "bisect").exists()
                assert git(wt, "rev-parse", "HEAD") == then
                assert subprocess.run(["git", "bisect", "log"], cwd=wt, capture_output=True).returncode != 0
    assert fingerprint(repo) == before


def test_a_rebase_a_run_left_stopped_at_a_conflict_is_gone_before_the_next_run(repo):
    """A test that rebases or merges in its worktree and stops at a conflict leaves that operation
    under way in the worktree's admin directory. A checkout ends a merge (MERGE_HEAD) but keeps a
    rebase (rebase-merge/): the next run would find `git status` saying "rebase in progress", and
    its own rebase refused. It is forgotten before the next run, of another commit or the same
    one; the user's is untouched."""
    before = fingerprint(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for op, (first, then) in (("rebase", (rng[2], rng[6])), ("rebase", (rng[6], rng[6])),
                                  ("merge", (rng[2], rng[6]))):
            with pool.lease(first) as wt:
                (wt / "conflict.txt").write_text("ours\n")
                git(wt, "add", "conflict.txt")
                git(wt, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "ours")   # detached: no ref
                side = git(wt, "rev-parse", "HEAD")
                git(wt, "checkout", "-q", "--detach", first)
                (wt / "conflict.txt").write_text("theirs\n")
                git(wt, "add", "conflict.txt")
                git(wt, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "theirs")
                stopped = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", op, side],
                                         cwd=wt, capture_output=True, text=True)
                admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
                left = ("MERGE_HEAD", "MERGE_MSG", "rebase-merge", "rebase-apply")
                assert stopped.returncode != 0 and any((admin / n).exists() for n in left)
            with pool.lease(then) as wt:
                assert not any((admin / n).exists() for n in left)
                assert "rebase" not in subprocess.run(["git", "status"], cwd=wt, capture_output=True, text=True).stdout
                assert git(wt, "rev-parse", "HEAD") == then and git(wt, "status", "--porcelain") == ""
    assert fingerprint(repo) == before


def test_a_worktree_of_the_users_that_is_away_keeps_its_git_directory(repo, tmp_path, monkeypatch):
    """A linked worktree of the user's on a disk not mounted now (here: moved away for a while):
    discarding a cached worktree (other checkout settings) or `collect` removes bisectk's own admin
    directories only; `git worktree prune` would have removed the user's too (HEAD, staged index)."""
    rng = chain(repo)
    mine = tmp_path / "feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(mine), rng[3])
    (mine / "wip.txt").write_text("wip\n")
    git(mine, "add", "wip.txt")
    admin = Path(git(mine, "rev-parse", "--absolute-git-dir"))
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]):
            pass
    away = tmp_path / "unmounted"
    mine.rename(away)
    git(repo, "config", "core.autocrlf", "input")       # the cached worktree is made again
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[4]) as wt:
            assert (wt / "state.txt").exists()
    assert admin.is_dir()
    assert collect(repo) and admin.is_dir()
    assert sorted(p.name for p in admin.parent.iterdir()) == [admin.name]   # none of ours is left
    away.rename(mine)
    assert git(mine, "status", "--porcelain") == "A  wip.txt"


def gitdir_names(repo: Path) -> list[str]:
    """What the user's .git holds (a git bisect's state among it), less the worktrees' admin."""
    return sorted(p.name for p in (repo / ".git").iterdir() if p.name != "worktrees")


@pytest.mark.parametrize("breaks", ["removed", "directory", "users", "admin", "head"])
def test_a_worktree_whose_link_to_git_a_run_broke_is_made_again_and_no_git_runs_through_it(repo, breaks):
    """A test that deletes its worktree's .git file, makes a repository of its own there, or
    rewrites the file to name the user's .git (`gitdir: ~/repo/.git`): the next lease, of another
    commit or the same one, makes the worktree again rather than running git there, which would
    find an enclosing repository or check out and clean through the user's HEAD, index and git
    bisect in progress. `damage` says what happened."""
    git(repo, "bisect", "start", "--no-checkout", "HEAD", "HEAD~3")     # the user's own, kept
    before = fingerprint(repo), gitdir_names(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for first, then in ((rng[2], rng[6]), (rng[6], rng[6])):
            with pool.lease(first) as wt:
                dotgit = wt / ".git"
                admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
                if breaks == "head":            # git takes the directory for no repository
                    (admin / "HEAD").write_text("junk\n")
                elif breaks == "admin":
                    shutil.rmtree(admin)
                else:
                    dotgit.unlink()
                if breaks == "directory":
                    git(wt, "init", "-q")
                elif breaks == "users":
                    dotgit.write_text(f"gitdir: {repo / '.git'}\n")
                said = pool.damage(wt)
                assert said == {"removed": "its .git file was removed",
                                "directory": "its .git file was replaced by a directory",
                                "admin": f"its git directory {admin} was removed",
                                "head": "its HEAD names no commit"}.get(breaks, said)
                assert said and (breaks != "users" or str(repo / ".git") in said)
            with pool.lease(then) as again:
                assert again == wt and pool.damage(again) is None
                assert git(again, "rev-parse", "HEAD") == then and not git(again, "status", "--porcelain")
    assert (fingerprint(repo), gitdir_names(repo)) == before
    # the next command takes the cached worktree over only when intact: broken, it is made again
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            (wt / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            assert pool.damage(wt) is None and git(wt, "rev-parse", "HEAD") == rng[2]
    assert (fingerprint(repo), gitdir_names(repo)) == before


@pytest.mark.parametrize("leaves", ["index.lock", "HEAD.lock", "read-only", "worktree remove"])
def test_what_a_run_leaves_that_would_fail_the_next_checkout_does_not_stop_the_command(repo, leaves):
    """A run's git killed mid-commit leaves `index.lock` (or `HEAD.lock`) in the worktree's admin
    directory; a test may make its tree read-only or `git worktree remove` itself. Every later
    checkout of the worktree failed ("Unable to create .../index.lock: File exists"), in this
    command and the next (the lock stayed). A stale lock is removed (the run has ended); a
    worktree the switch still cannot use is made again; the user's checkout is untouched."""
    before = fingerprint(repo)
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        for first, then in ((rng[2], rng[6]), (rng[6], rng[6]), (rng[6], rng[2])):
            with pool.lease(first) as wt:
                admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
                if leaves.endswith(".lock"):
                    (admin / leaves).write_text("")
                    (wt / "state.txt").write_text("edited\n")     # the tidy of the same commit checks out too
                elif leaves == "read-only":
                    (wt / "new.txt").write_text("x\n")
                    subprocess.run(["chmod", "-R", "a-w", str(wt)], check=True)
                else:
                    git(wt, "worktree", "remove", "--force", str(wt))
            with pool.lease(then) as again:
                assert again == wt and pool.damage(again) is None
                assert git(again, "rev-parse", "HEAD") == then and not git(again, "status", "--porcelain")
                assert not list(Path(git(again, "rev-parse", "--absolute-git-dir")).glob("*.lock"))
    assert fingerprint(repo) == before


def test_a_worktree_linked_to_git_by_relative_paths_is_intact_and_switched_not_made_again(repo, monkeypatch):
    """git's worktree.useRelativePaths writes the .git file and the admin directory's `gitdir`
    relative to where they are; git reads them so, and so must `damage` and the admin lookups,
    or every lease would take an intact worktree for a broken one and check it out whole again."""
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
            (wt / ".git").write_text(f"gitdir: {os.path.relpath(admin, wt)}\n")
            (admin / "gitdir").write_text(os.path.relpath(wt / ".git", admin) + "\n")
            assert pool.damage(wt) is None
        monkeypatch.setattr(pool, "_remake", lambda *a: pytest.fail("an intact worktree was made again"))
        with pool.lease(rng[6]) as again:
            assert again == wt and git(again, "rev-parse", "HEAD") == rng[6]


def test_a_run_that_checks_a_branch_out_in_its_worktree_did_not_break_it(repo):
    """`git checkout -b mine` (or `git switch`) in a test: HEAD names a branch, which git reads as
    well as a commit; the worktree is intact (the next lease switches it back), never UNRESOLVED."""
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        with pool.lease(rng[2]) as wt:
            git(wt, "checkout", "-q", "-b", "mine")
            assert pool.damage(wt) is None
        with pool.lease(rng[2]) as again:
            assert git(again, "rev-parse", "HEAD") == rng[2] and git(again, "branch", "--show-current") == ""


MAKING = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from bisectk.spaces.wtdisk import lock_entry
Path({cache!r}).mkdir(parents=True, exist_ok=True)
fd = lock_entry(Path({cache!r}) / "wt-0")       # as `_add` holds it while `git worktree add` checks out
print("held" if fd is not None else "not held", flush=True)
time.sleep(600)
"""


def test_a_command_that_starts_while_another_makes_its_first_worktree_makes_its_own(repo):
    """Two bisections started together on a repository: the first holds wt-0's lock while `git
    worktree add` checks a big tree out (seconds), before wt-0's directory exists. The second is
    not stopped with 'try again': it makes the next entry."""
    rng = chain(repo)
    cache = cache_dir_of(repo)
    proc = subprocess.Popen([sys.executable, "-c", MAKING.format(root=str(ROOT), cache=str(cache))],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with WorktreePool(repo, size=1) as pool:
            with pool.lease(rng[3]) as wt:
                assert wt.name != "wt-0" and (wt / "state.txt").read_text() == "3\n"
    finally:
        proc.kill()
        proc.wait()
    assert cached(repo) == [wt.name]


def test_a_lock_file_removed_between_its_opening_and_its_lock_is_not_taken_as_held(repo, monkeypatch):
    """`bisectk ledger gc` (or a command closing with keep=False) removes an entry and unlinks its
    lock file while it holds it. A command that opened that file just before, and locks it just
    after, would hold a lock nobody else can see: a third command creates wt-N.lock anew, locks
    it too, and two commands switch one worktree under each other's runs."""
    import fcntl

    from bisectk.spaces import wtdisk
    cache = cache_dir_of(repo)
    cache.mkdir(parents=True, exist_ok=True)
    entry = cache / "wt-0"
    real = fcntl.flock
    between = []

    def gc_in_between(fd, op):
        if not between:
            between.append(fd)
            os.unlink(f"{entry}.lock")      # what gc's sweep does to the file this command opened
        return real(fd, op)

    monkeypatch.setattr(wtdisk.fcntl, "flock", gc_in_between)
    fd = wtdisk.lock_entry(entry)
    try:
        assert fd is not None and between
        assert os.fstat(fd).st_ino == os.stat(f"{entry}.lock").st_ino     # the lock the next command meets
        assert wtdisk.lock_entry(entry) is None
    finally:
        os.close(fd)


def test_a_gc_between_a_pools_opening_and_its_first_lease_does_not_stop_the_command(repo):
    """`bisectk ledger gc` in another terminal (or a CI job's clean-up beside this one) while a
    command has opened its pool but holds no worktree yet (triage sets up its endpoints first):
    the cache directory, holding only its owner record, is removed as unused. The first lease
    makes it again, rather than end the command in a FileNotFoundError."""
    rng = chain(repo)
    with WorktreePool(repo, size=1) as pool:
        gc = subprocess.run([sys.executable, "-m", "bisectk", "ledger", "gc", "--repo", str(repo)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert gc.returncode == 0, gc.stderr
        assert not pool.cache_dir.exists()      # the state this test is about: gc took the empty cache
        with pool.lease(rng[3]) as wt:
            assert (wt / "state.txt").read_text() == "3\n"
        assert pool.cache_dir == cache_dir_of(repo)     # claimed again: the next command finds it
    assert cached(repo) == [wt.name]
