"""The remote protocol (run/remote.py) without a cluster: a Site materialises what it is sent in
its own copies, builds each copy once per build, maps the driver's paths and interpreter; the
watchdog travels as data; bisect over a commit space that checks nothing out here finds what the
local run finds."""
import sys
import time
from pathlib import Path

import pytest

from bisectk.run.progress import FixedWatch, ProgressWatch, Timeline, watch_from_dict
from bisectk.run.remote import InlineExecutor, RemoteJob, Site, pack_tree
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

BUILD = "import pathlib, os\npathlib.Path('built.txt').write_text(os.environ['FLAVOUR'])\n" \
        "n = pathlib.Path(os.environ['COUNT']); n.write_text(str(int(n.read_text() or 0) + 1) if n.exists() else '1')\n"
RUN = "import os, pathlib, sys\nprint(pathlib.Path('built.txt').read_text(), os.environ['TREE'], sys.executable)\n"


def tree(root: Path, flavour: str) -> Path:
    root.mkdir(parents=True)
    (root / "build.py").write_text(BUILD)
    (root / "run.py").write_text(RUN)
    (root / "note.txt").write_text(flavour)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "stale.pyc").write_bytes(b"x")
    return root


def job(source, key: str, tmp: Path, local_root: str = "/driver/tree") -> RemoteJob:
    return RemoteJob(source=source, argv=["/driver/python", "run.py"], build=["/driver/python", "build.py"],
                     env={"FLAVOUR": key, "TREE": local_root + "/sub", "COUNT": str(tmp / "count")},
                     watch=FixedWatch(30).to_dict(), build_key=key, interpreter="/driver/python", local_root=local_root)


def test_site_builds_each_copy_once_per_build_and_maps_driver_paths(tmp_path):
    a, b = tree(tmp_path / "a", "A"), tree(tmp_path / "b", "B")
    site = Site(None, tmp_path / "site")
    src_a = {"kind": "tar", "id": "a", "ref": pack_tree(a), "subdir": "."}
    src_b = {"kind": "tar", "id": "b", "ref": pack_tree(b), "subdir": "."}
    count = tmp_path / "count"
    try:
        run = site.run(job(src_a, "k1", tmp_path))
        assert run.phase == "run" and run.exit_code == 0 and count.read_text() == "1", run
        text, tree_path, python = run.stdout.split()
        root = site.roots["a"]
        assert text == "k1" and tree_path == f"{root}/sub" and python == sys.executable
        assert not (root / "__pycache__").exists()              # bytecode never travels
        run = site.run(job(src_a, "k1", tmp_path))              # same copy, same build: not rebuilt
        assert count.read_text() == "1" and run.stdout.split()[0] == "k1"
        run = site.run(job(src_b, "k1", tmp_path))              # another copy: its own build
        assert count.read_text() == "2" and run.exit_code == 0
        run = site.run(job(src_a, "k2", tmp_path))              # another build in the first copy
        assert count.read_text() == "3" and run.stdout.split()[0] == "k2"
        assert site.executor.builds.count == 3
        assert (a / "built.txt").exists() is False              # the sources it was sent are untouched
    finally:
        site.close()
    assert not any((tmp_path / "site").iterdir())


def test_a_source_that_cannot_be_materialised_is_a_run_that_did_not_start(tmp_path):
    site = Site(None, tmp_path / "site")
    run = site.run(job({"kind": "git", "id": "x", "repo": str(tmp_path / "nowhere"), "sha": "0" * 40}, "k",
                       tmp_path))
    assert run.phase == "run" and run.started is False and "cannot materialise" in run.error
    assert not (tmp_path / "count").exists()                    # nothing was built


def test_the_watchdog_travels_as_data():
    good = Timeline((("phase:imports", 0.5), ("phase:launch", 1.0), ("phase:synchronized", 1.1)), 1.2)
    w = ProgressWatch(good, 6.0, 1.0, 8.0)
    w.feed("BISECTK_PHASE imports", 0.7)
    w.feed("BISECTK_PHASE launch", 1.3)
    again = watch_from_dict(w.to_dict())
    again.feed("BISECTK_PHASE imports", 0.7)
    again.feed("BISECTK_PHASE launch", 1.3)
    assert again.deadline() == w.deadline() and again.kernel_factor == 8.0
    assert watch_from_dict(None) is None and watch_from_dict(FixedWatch(7).to_dict()).deadline() == 7
    assert watch_from_dict(FixedWatch(None).to_dict()).deadline() is None


def test_a_hang_on_the_site_is_ended_by_its_watchdog(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "hang.py").write_text("import time\nprint('BISECTK_PHASE launch', flush=True)\ntime.sleep(60)\n")
    site = Site(None, tmp_path / "site")
    good = Timeline((("phase:launch", 0.1),), 0.2)
    t0 = time.monotonic()
    run = site.run(RemoteJob(source={"kind": "tar", "id": "t", "ref": pack_tree(root), "subdir": "."},
                             argv=[sys.executable, "hang.py"], env={},
                             watch=ProgressWatch(good, 30.0, 1.0).to_dict()))
    site.close()
    assert run.timed_out and time.monotonic() - t0 < 10 and "hung after 'launch'" in run.stalled


@pytest.mark.parametrize("shared", [False, True])
def test_bisect_through_the_remote_protocol_checks_nothing_out_here(tmp_path, shared):
    """CommitSpace(remote=True) with a build step: each commit arrives as a `git archive` (or, with
    a shared repository path, the site archives it there), is built and run in the site's copy;
    the answer is the local one; no worktree is ever added."""
    from bisectk.engine.bisect import run_bisect
    from bisectk.engine.policy import RunPolicy
    from bisectk.ledger import Ledger
    from bisectk.run.runner import Runner
    from bisectk.spaces.commits import list_graph, run_git
    from bisectk.spaces.revisions import CommitSpace
    from bisectk.spec import adhoc_spec
    shas = make_repo(tmp_path / "r", n=30, culprit=17, broken=(8, 9))
    graph = list_graph(tmp_path / "r", shas[0], shas[-1])
    spec = adhoc_spec(["python", "kernel.py"], name="k", cwd=tmp_path / "r", build=["python", "build.py"],
                      timeout=None, repeat=1, protocol="git")
    ex = InlineExecutor()
    ledger = Ledger(tmp_path / "l.db")
    try:
        runner = Runner(spec, ledger, executor=ex)
        space = CommitSpace(graph, None, {}, remote=True, shared_repo=str(tmp_path / "r") if shared else None)
        rec = run_bisect(runner, space, RunPolicy(jobs=2))
    finally:
        ex.close()
        ledger.close()
    assert rec.first_bad["sha"] == shas[17]
    assert ex.site.executor.builds.count == ex.site.stats["materialised"] >= 4
    assert (len(ex._packed) == 0) == shared          # a shared repository: only shas travel
    assert len(run_git(tmp_path / "r", "worktree", "list").splitlines()) == 1      # nothing checked out here
