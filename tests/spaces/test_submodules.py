"""Submodules in cached worktrees (spaces/submodules.py): each at the commit the superproject's
commit records, from the user's own clone, nested ones too, with no network; a run's files in a
submodule cleaned at the next switch; a commit whose submodule commit the user's clone lacks
skipped with that reason; the user's checkout, config and clones untouched; `collect` leaves no
admin directory behind. And end to end: `bisectk bisect` of a bump of a submodule names it, as
`git bisect run` does with a script that updates the submodules itself."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.spaces.submodules import SubmoduleMissing, gitlinks
from bisectk.spaces.worktrees import WorktreePool
from bisectk.spaces.wtcollect import collect
from tests.fixtures.gitrepo import git

ROOT = Path(__file__).resolve().parents[2]
FILE_OK = ("-c", "protocol.file.allow=always")      # git >= 2.38.1 refuses file:// submodules otherwise


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def library(path: Path, name: str, versions: int) -> list[str]:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    shas = []
    for v in range(1, versions + 1):
        (path / "version").write_text(f"{name} v{v}\n")
        shas.append(commit_all(path, f"{name} v{v}"))
    return shas


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """super: c0 (lib at v1, lib's inner at i1), c1, c2, c3 bumps lib to v2 (inner still i1),
    c4, c5 bumps lib to v3 (inner at i2); the user's checkout has both cloned (update --init)."""
    base = tmp_path_factory.mktemp("sub")
    inner = library(base / "inner", "inner", 2)
    git(base / "inner", "checkout", "-q", inner[0])
    lib = base / "lib"
    lib_shas = library(lib, "lib", 1)
    git(lib, *FILE_OK, "submodule", "add", "-q", str(base / "inner"), "inner")
    lib_shas = [commit_all(lib, "inner at i1")]
    (lib / "version").write_text("lib v2\n")
    lib_shas.append(commit_all(lib, "lib v2"))
    (lib / "version").write_text("lib v3\n")
    git(lib / "inner", "checkout", "-q", inner[1])
    lib_shas.append(commit_all(lib, "lib v3, inner at i2"))
    git(lib, "checkout", "-q", lib_shas[0])
    git(lib / "inner", "checkout", "-q", inner[0])

    sup = base / "super"
    sup.mkdir()
    git(sup, "init", "-q", "-b", "main")
    git(sup, *FILE_OK, "submodule", "add", "-q", str(lib), "third_party/lib")
    git(sup, *FILE_OK, "submodule", "update", "-q", "--init", "--recursive")
    (sup / "test.sh").write_text("#!/bin/sh\ngrep -q 'lib v1' third_party/lib/version || exit 1\n"
                                 "test -f third_party/lib/inner/version || exit 1\nexit 0\n")
    (sup / "test.sh").chmod(0o755)
    shas = [commit_all(sup, "c0")]
    for k, lib_at in ((1, None), (2, None), (3, 1), (4, None), (5, 2)):
        (sup / f"f{k}").write_text(f"{k}\n")
        if lib_at is not None:
            git(sup / "third_party/lib", "checkout", "-q", lib_shas[lib_at])
            git(sup / "third_party/lib", *FILE_OK, "submodule", "update", "-q", "--recursive")
        shas.append(commit_all(sup, f"c{k}"))
    return sup, shas, lib_shas, inner


def state(repo: Path) -> str:
    """What the user owns: HEAD, index, config and refs of the superproject and of its clones,
    and every file of the checkout (submodules' included)."""
    h = hashlib.sha256()
    gitdir = repo / ".git"
    for p in [gitdir / "HEAD", gitdir / "index", gitdir / "config", *sorted((gitdir / "modules").rglob("config")),
              *sorted((gitdir / "modules").rglob("HEAD")), *sorted((gitdir / "modules").rglob("index"))]:
        if "worktrees" not in p.parts:
            h.update(str(p).encode() + p.read_bytes())
    for nested in sorted(p for p in repo.rglob(".git") if p.is_dir() and p != gitdir):   # repositories in place
        for name in ("HEAD", "config", "index"):
            h.update(str(nested / name).encode() + (nested / name).read_bytes())
    for path in sorted(p for p in repo.rglob("*") if ".git" not in p.relative_to(repo).parts):
        h.update(str(path).encode())
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    return h.hexdigest()


def admins(repo: Path) -> list[Path]:
    """Admin directories of worktrees in the user's clones of the submodules (there must be none)."""
    return sorted(p for p in (repo / ".git" / "modules").rglob("worktrees/*") if (p / "gitdir").is_file())


def test_leases_check_submodules_out_at_the_recorded_commits_nested_too(project):
    sup, shas, lib_shas, inner = project
    before = state(sup)
    with WorktreePool(sup, size=1) as pool:
        with pool.lease(shas[0]) as wt:
            assert gitlinks(wt) == [("third_party/lib", "third_party/lib", lib_shas[0])]
            assert (wt / "third_party/lib/version").read_text() == "lib v1\n"
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v1\n"
            (wt / "third_party/lib/run-output.o").write_text("a build's file")
            (wt / "third_party/lib/version").write_text("edited by a run\n")
            (wt / "third_party/lib/inner/junk").write_text("x")
        with pool.lease(shas[3]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v2\n"
            assert not (wt / "third_party/lib/run-output.o").exists()
            assert not (wt / "third_party/lib/inner/junk").exists()
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v1\n"
            assert git(wt / "third_party/lib", "status", "--porcelain") == ""
        with pool.lease(shas[5]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v3\n"
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v2\n"
            assert git(wt, "status", "--porcelain") == ""    # the superproject sees them as recorded
        with pool.lease(shas[1]) as wt:     # back: a switch in the other direction
            assert (wt / "third_party/lib/version").read_text() == "lib v1\n"
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v1\n"
    assert state(sup) == before and admins(sup) == []
    admin = sup / ".git" / "worktrees"
    clones = sorted(str(h.parent.relative_to(admin)) for h in admin.rglob("HEAD") if h.parent.parts[-2:-1] != ("logs",)
                    and (h.parent / "objects").is_dir() and h.parent != admin / "wt-0")
    # in the cached worktree's admin directory, for the next command
    assert clones == ["wt-0/modules/third_party/lib", "wt-0/modules/third_party/lib/modules/inner"]
    collect(sup)
    assert not (sup / ".git" / "worktrees").exists() or not list((sup / ".git" / "worktrees").iterdir())
    assert state(sup) == before


def test_a_submodule_commit_missing_from_the_users_clone_is_a_space_error_naming_it(project, tmp_path):
    sup, shas, lib_shas, inner = project
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(sup), str(clone))
    git(clone, *FILE_OK, "submodule", "update", "-q", "--init", "--recursive")
    # a commit recording a lib commit that no clone has
    git(clone, "update-index", "--cacheinfo", f"160000,{'ab' * 20},third_party/lib")
    git(clone, "commit", "-qm", "lib at a commit nobody fetched")
    missing = git(clone, "rev-parse", "HEAD")
    with WorktreePool(clone, size=1) as pool:
        with pytest.raises(SubmoduleMissing, match=r"submodule third_party/lib at abababab"):
            with pool.lease(missing):
                pass
        with pool.lease(shas[0]) as wt:     # the pool goes on
            assert (wt / "third_party/lib/version").read_text() == "lib v1\n"
    # in a bisection that commit is skipped with that reason (as a script's exit 125 would be)
    git(clone, "update-index", "--cacheinfo", f"160000,{lib_shas[2]},third_party/lib")
    git(clone, "commit", "-qm", "lib back")
    (clone / "bug").write_text("")
    bug = commit_all(clone, "the bug")
    script = tmp_path / "no-bug.sh"
    script.write_text("#!/bin/sh\ntest -f bug && exit 1\nexit 0\n")
    script.chmod(0o755)
    doc = bisect(clone, shas[-1], bug, script, tmp_path / "l.db")
    assert doc["first_bad"]["sha"] == bug
    skipped = [a for a in doc["attempts"] if a["applied"][0] == missing]
    assert skipped and all(a["outcome"] == "unresolved" for a in skipped)
    assert "submodule third_party/lib at abababab" in skipped[0]["verdict"]
    collect(clone)


def test_a_submodule_the_user_never_cloned_stays_empty_as_in_their_checkout(project, tmp_path):
    sup, shas, lib_shas, inner = project
    clone = tmp_path / "plain"
    git(tmp_path, "clone", "-q", str(sup), str(clone))      # no `submodule update --init`
    with WorktreePool(clone, size=1) as pool:
        with pool.lease(shas[3]) as wt:
            assert (wt / "third_party/lib").is_dir() and list((wt / "third_party/lib").iterdir()) == []
    collect(clone)


def bisect(repo: Path, good: str, bad: str, script: Path, ledger: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", good, "--bad", bad,
                        "--run", str(script), "--json", "--ledger", str(ledger)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def test_bisect_names_the_submodule_bump_as_git_bisect_run_does(project, tmp_path):
    sup, shas, lib_shas, inner = project
    before = state(sup)
    doc = bisect(sup, shas[0], shas[-1], sup / "test.sh", tmp_path / "a.db")
    assert doc["first_bad"]["sha"] == shas[3]
    # a script that updates the submodules itself, as users write for `git bisect run`: the
    # worktree's are there already, so nothing is cloned or fetched
    updating = tmp_path / "update-then-test.sh"
    updating.write_text("#!/bin/sh\ngit submodule update -q --init --recursive || exit 125\nexec ./test.sh\n")
    updating.chmod(0o755)
    doc = bisect(sup, shas[0], shas[-1], updating, tmp_path / "b.db")
    assert doc["first_bad"]["sha"] == shas[3]
    assert state(sup) == before
    collect(sup)
    # git's answer with the same script, in the user's checkout (last: it moves the submodules)
    git(sup, "bisect", "start", shas[-1], shas[0])
    try:
        out = git(sup, "bisect", "run", str(updating))
    finally:
        git(sup, "bisect", "reset")
        git(sup, *FILE_OK, "submodule", "update", "-q", "--recursive")
    assert f"{shas[3]} is the first bad commit" in out


def test_a_commits_archive_for_another_host_holds_its_submodules(project, tmp_path):
    """--executor ray sends a commit as `git archive` (run/remote.py), which holds no submodule:
    each one cloned is appended at its recorded commit, nested ones too."""
    import tarfile

    from bisectk.run.remote import git_archive_to
    sup, shas, lib_shas, inner = project
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    before = state(sup)
    for sha, lib_v, inner_v in ((shas[0], "lib v1", "inner v1"), (shas[3], "lib v2", "inner v1"),
                                (shas[5], "lib v3", "inner v2")):
        tar = tmp_path / f"{sha}.tar"
        git_archive_to(sup, sha, tar, env)
        with tarfile.open(tar) as t:
            assert t.extractfile("third_party/lib/version").read().decode() == lib_v + "\n"
            assert t.extractfile("third_party/lib/inner/version").read().decode() == inner_v + "\n"
            assert t.extractfile("f1" if sha != shas[0] else "test.sh") is not None
    assert state(sup) == before
    plain = tmp_path / "plain"
    git(tmp_path, "clone", "-q", str(sup), str(plain))      # nothing cloned: the superproject alone
    git_archive_to(plain, shas[3], tmp_path / "plain.tar", env)
    with tarfile.open(tmp_path / "plain.tar") as t:
        assert not any(n.startswith("third_party/lib/") for n in t.getnames())


def test_a_repository_added_in_place_is_cloned_from_its_own_git_directory(project, tmp_path):
    """`git submodule add` of a path that is already a repository keeps its .git directory in the
    checkout ("Adding existing repo at ..."), with nothing under .git/modules: that .git is the
    clone to take it from, for a worktree and for an archive alike."""
    import tarfile

    from bisectk.run.remote import git_archive_to
    sup, shas, lib_shas, inner = project
    lib = sup.parent / "lib"
    r = tmp_path / "inplace"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "clone", "-q", str(lib), "vendor/lib")
    git(r / "vendor/lib", "checkout", "-q", lib_shas[1])
    git(r, *FILE_OK, "submodule", "add", "-q", str(lib), "vendor/lib")
    first = commit_all(r, "lib v2 in place")
    git(r / "vendor/lib", "checkout", "-q", lib_shas[2])
    second = commit_all(r, "lib v3")
    assert (r / "vendor/lib/.git").is_dir() and not (r / ".git" / "modules").exists()
    before = state(r)
    with WorktreePool(r, size=1) as pool:
        for sha, version in ((first, "lib v2\n"), (second, "lib v3\n"), (first, "lib v2\n")):
            with pool.lease(sha) as wt:
                assert (wt / "vendor/lib/version").read_text() == version
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git_archive_to(r, first, tmp_path / "a.tar", env)
    with tarfile.open(tmp_path / "a.tar") as t:
        assert t.extractfile("vendor/lib/version").read() == b"lib v2\n"
    assert state(r) == before
    collect(r)


def test_a_submodule_commit_fetched_after_the_cached_clone_was_made_is_found(project, tmp_path):
    """The worktree's clone of a submodule is made once and kept; a commit the user fetches into
    their clone later is not in it: that switch clones again from the user's."""
    sup, shas, lib_shas, inner = project
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(sup), str(c))
    git(c, *FILE_OK, "submodule", "update", "-q", "--init", "--recursive")
    upstream = tmp_path / "upstream-lib"
    git(tmp_path, "clone", "-q", str(sup.parent / "lib"), str(upstream))
    with WorktreePool(c, size=1) as pool:
        with pool.lease(shas[5]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v3\n"
        git(upstream, "checkout", "-q", "-b", "next", lib_shas[2])
        (upstream / "version").write_text("lib v4\n")
        v4 = commit_all(upstream, "lib v4")
        git(c / "third_party/lib", "fetch", "-q", str(upstream), "next")
        git(c / "third_party/lib", "checkout", "-q", v4)
        new = commit_all(c, "lib v4")
        with pool.lease(new) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v4\n"
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v2\n"
        with pool.lease(shas[0]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v1\n"
    collect(c)


def test_a_submodule_removed_since_is_still_checked_out_from_the_clone_it_left(project, tmp_path):
    """`git rm` of a submodule removes its directory and keeps its clone under .git/modules, whose
    core.worktree now names nothing: git run there dies ("cannot chdir") before reading an object.
    The older commits that record it are still checked out with it (and archived with it), not
    skipped as if the clone lacked their commits."""
    import tarfile

    from bisectk.run.remote import git_archive_to
    sup, shas, lib_shas, inner = project
    user = tmp_path / "user"
    git(tmp_path, "clone", "-q", str(sup), str(user))
    git(user, *FILE_OK, "submodule", "update", "-q", "--init", "--recursive")
    git(user, "rm", "-q", "third_party/lib")
    git(user, "commit", "-qm", "drop lib")
    assert not (user / "third_party/lib").exists() and (user / ".git/modules/third_party/lib/HEAD").is_file()
    before = state(user)
    with WorktreePool(user, size=1) as pool:
        with pool.lease(shas[3]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v2\n"
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v1\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git_archive_to(user, shas[5], tmp_path / "c5.tar", env)
    with tarfile.open(tmp_path / "c5.tar") as t:
        assert t.extractfile("third_party/lib/version").read().decode() == "lib v3\n"
        assert t.extractfile("third_party/lib/inner/version").read().decode() == "inner v2\n"
    assert state(user) == before


def _vendored_clone(project, tmp_path):
    """The user's clone of `project` with one more commit: the submodule `git rm`-ed and its
    files committed in its place (a vendored library). (clone, the project's shas, that commit)"""
    sup, shas, lib_shas, inner = project
    user = tmp_path / "user"
    git(tmp_path, "clone", "-q", str(sup), str(user))
    git(user, *FILE_OK, "submodule", "update", "-q", "--init", "--recursive")
    git(user, "rm", "-q", "third_party/lib")
    (user / "third_party/lib").mkdir(parents=True)
    (user / "third_party/lib/version").write_text("vendored\n")
    return user, shas, commit_all(user, "vendor lib")


def test_a_submodule_made_a_directory_again_keeps_the_directorys_files_at_a_switch(project, tmp_path):
    """A vendored library made a submodule and back (`git rm` of the submodule, its files
    committed in its place): a switch from a commit that records the submodule to one that tracks
    the directory writes the directory's files, as a fresh checkout does; the submodule's own
    checkout there (its `.git` file, what only it holds) is gone."""
    user, shas, vendored = _vendored_clone(project, tmp_path)
    with WorktreePool(user, size=1) as pool:
        with pool.lease(shas[0]) as wt:
            assert (wt / "third_party/lib/inner/version").read_text() == "inner v1\n"
        with pool.lease(vendored) as wt:
            assert (wt / "third_party/lib/version").read_text() == "vendored\n"
            assert sorted(p.name for p in (wt / "third_party/lib").iterdir()) == ["version"]
            assert git(wt, "status", "--porcelain", "--ignored") == ""
        with pool.lease(shas[5]) as wt:
            assert (wt / "third_party/lib/version").read_text() == "lib v3\n"
        with pool.lease(vendored) as wt:
            assert (wt / "third_party/lib/version").read_text() == "vendored\n"
    collect(user)


def test_a_cached_worktree_left_at_a_submodule_has_none_of_it_at_a_vendored_commit_of_the_next_command(
        project, tmp_path):
    """The same switch in the next command (a new pool takes the cached worktree over, knowing
    nothing of the submodules the last one checked out there): the directory holds the vendored
    files alone, no submodule `.git` file left in it (git run there would reach the submodule's
    clone, not the commit's tree), as a fresh worktree of that commit has it."""
    user, shas, vendored = _vendored_clone(project, tmp_path)
    with WorktreePool(user, size=1) as pool:
        with pool.lease(shas[0]) as wt:
            assert (wt / "third_party/lib/.git").is_file()
    with WorktreePool(user, size=1) as pool:
        with pool.lease(vendored) as wt:
            assert sorted(p.name for p in (wt / "third_party/lib").iterdir()) == ["version"]
            assert (wt / "third_party/lib/version").read_text() == "vendored\n"
            assert git(wt / "third_party/lib", "rev-parse", "--show-toplevel") == str(wt)
    collect(user)
