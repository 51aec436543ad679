"""`--executor ray` (issue 14): runs on Ray actors give the answers local runs give; an actor
killed mid-run loses no observation; k-way rounds stay within their bound; nothing of Ray is left
behind. The Ray tests use one local head for the module (joined with --ray-address) except where
a command starts and stops its own local instance; they skip when ray is not installed."""
import json
import math
import os
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

try:
    import ray  # noqa: F401
    HAVE_RAY = True
except ImportError:
    HAVE_RAY = False

needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install -e '.[ray]')")
VARIANTS = ROOT / "variants" / "cpu"


def ray_processes() -> set[int]:
    """Ray's own processes on this machine (raylet, GCS, agents, workers, actors)."""
    found = set()
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            text = " ".join(p.info["cmdline"] or []) or (p.info["name"] or "")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if p.info["pid"] != os.getpid() and ("ray::" in text or "raylet" in text or "gcs_server" in text
                                              or "ray.scripts.scripts" in text or "default_worker.py" in text):
            found.add(p.info["pid"])
    return found


@pytest.fixture(scope="module")
def head():
    """One local Ray head for the module, under bisectk's own supervisor; the commands join it."""
    if not HAVE_RAY:
        pytest.skip("ray is not installed")
    from bisectk.run.cluster import LocalHead
    h = LocalHead(num_cpus=4)
    yield h
    h.close()


def cli_env(head) -> dict:
    # a driver that joins by address uses the cluster's token only when told to (Ray's rule)
    return {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONPATH": str(ROOT)}


def run_cli(*args, env=None, timeout=300):
    import subprocess
    return subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


# -- bad input: one line, exit 2, with or without ray ----------------------------------------------

def test_ray_missing_is_one_line(tmp_path):
    fake = tmp_path / "noray"
    fake.mkdir()
    (fake / "ray.py").write_text("raise ImportError('No module named ray')\n")
    p = run_cli("ablate", VARIANTS / "pipeline-hang.toml", "--executor", "ray", "--ledger", tmp_path / "l.db",
                env={**os.environ, "PYTHONPATH": f"{fake}{os.pathsep}{ROOT}"})
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().splitlines() == ["bisectk: --executor ray needs Ray, which is not installed: "
                                             "pip install -e '.[ray]' (or pip install 'ray==2.60.0')"]


@needs_ray
def test_unreachable_cluster_is_one_line_at_once(tmp_path):
    t0 = time.monotonic()
    p = bisectk("bisect", "--repo", ROOT, "--good", "HEAD~1", "--bad", "HEAD", "--run", "true", "--executor", "ray",
                "--ray-address", "127.0.0.1:9", "--ledger", tmp_path / "l.db")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: --ray-address 127.0.0.1:9: cannot reach the Ray cluster")
    assert time.monotonic() - t0 < 30


def test_ray_options_need_the_ray_executor(tmp_path):
    for args, words in ((["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
                        (["--executor", "ray", "--gpus", "0,1"], "Ray gives each actor its own GPU"),
                        (["--executor", "slurm"], "--executor 'slurm': choose one of local, ray")):
        p = bisectk("ablate", VARIANTS / "pipeline-hang.toml", *args, "--ledger", tmp_path / "l.db")
        assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


# -- same answers as local -------------------------------------------------------------------------

@needs_ray
@pytest.mark.parametrize("variant,flags", [("pipeline-hang", ["--warm"]), ("pipeline-two-culprits", []),
                                           ("crash-oob", ["--warm"]), ("build-arch", [])])
def test_ablate_on_ray_matches_local(head, tmp_path, variant, flags):
    """Hangs and crashes in warm workers on the actors (the worker killed, its spare taking over),
    a build step run on the actor in its own copy of the project, two culprits."""
    docs = {}
    for executor in ("local", "ray"):
        extra = ["--executor", "ray", "--ray-address", head.address] if executor == "ray" else []
        p = run_cli("ablate", VARIANTS / f"{variant}.toml", "--json", "--ledger", tmp_path / f"{executor}.db",
                    *flags, *extra, env=cli_env(head))
        assert p.returncode == 0, p.stderr[-3000:]
        docs[executor] = json.loads(p.stdout)
    assert docs["ray"]["culprits"] == docs["local"]["culprits"]
    assert docs["ray"]["interaction"] == docs["local"]["interaction"]
    assert docs["ray"]["endpoints"]["bad"]["kind"] == docs["local"]["endpoints"]["bad"]["kind"]


@needs_ray
def test_bisect_256_commits_on_ray_matches_local_within_the_round_bound(tmp_path):
    """A 256-commit history, --jobs 4: the same first bad commit as local, in at most
    ceil(log_5 N) + 1 rounds; no worktree is made (commits travel as archives); the local Ray
    instance the command started is gone afterwards."""
    shas = make_repo(tmp_path / "r", n=256, culprit=171, broken=())
    before = ray_processes()
    docs = {}
    for executor in ("ray", "local"):
        p = bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run",
                    "python kernel.py", "--jobs", "4", "--executor", executor, "--json",
                    "--ledger", tmp_path / f"{executor}.db", timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        docs[executor] = json.loads(p.stdout)
        if executor == "ray":
            assert not (tmp_path / "r" / ".git" / "bisectk-worktrees").exists()   # nothing checked out here
            deadline = time.monotonic() + 10
            while ray_processes() - before and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not ray_processes() - before, "Ray processes left behind"
    for doc in docs.values():
        assert doc["first_bad"]["sha"] == shas[171]
        assert doc["rounds"] <= math.ceil(math.log(doc["commits"], 5)) + 1, doc["rounds"]
    assert docs["ray"]["mode"] == "dag-multisect-4" and docs["ray"]["runs"] == docs["local"]["runs"]


@needs_ray
def test_triage_on_ray_names_the_culprit_hunk(head, tmp_path):
    shas = make_repo(tmp_path / "r", n=20, culprit=12, broken=(4,))
    p = run_cli("triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run", "python kernel.py",
                "--build", "python build.py", "--jobs", "2", "--executor", "ray", "--ray-address", head.address,
                "--json", "--ledger", tmp_path / "t.db", env=cli_env(head))
    assert p.returncode == 1, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[12]
    assert [(h["file"], h["good_lines"]) for h in doc["culprit_hunks"]] == [("kernel.py", [2, 3])]


# -- faults ----------------------------------------------------------------------------------------

SLOW = ("import json, sys, time\n"
        "print('BISECTK_PHASE launch', flush=True)\n"
        "time.sleep(float(sys.argv[1]))\n"
        "print('BISECTK_RESULT ' + json.dumps({'rel_err': 0.0}))\n")


@needs_ray
def test_an_actor_killed_mid_run_loses_no_observation(head, tmp_path):
    """ray.kill of the actor running a job: the job is run again on another actor, the ledger
    records it once (the run that came back), and a replacement actor starts."""
    import ray
    from bisectk.ledger import Ledger
    from bisectk.run.cluster import RayExecutor, _use_token_auth
    from bisectk.run.runner import Runner
    from bisectk.spec import config_key, load_spec
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "spec.toml").write_text('name = "slow"\n[subject]\ncommand = ["python", "slow.py", "{t}"]\n'
                                        'timeout = 60\n[oracle]\nmetric = "rel_err"\nmax = 1e-4\n'
                                        '[good]\nt = 2.5\n[bad]\nt = 2.0\n')
    spec = load_spec(tmp_path / "spec.toml")
    _use_token_auth()
    ledger = Ledger(tmp_path / "l.db")
    ex = RayExecutor(actors=2, address=head.address, project=tmp_path)
    try:
        assert ex.alive() == 2
        runner = Runner(spec, ledger, executor=ex, session=ledger.open_session("ablate", "fp", {}))
        result = {}
        t = threading.Thread(target=lambda: result.setdefault("run", runner.observe(spec.good)))
        t.start()
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:
            with ex.cond:
                victim = next((a for a in ex.actors if a.busy), None)
            time.sleep(0.05)
        assert victim is not None
        time.sleep(1.0)                  # the subject is running on it now
        ray.kill(victim.handle, no_restart=True)
        t.join(timeout=120)
        run = result["run"]
        assert run.outcome.value == "pass", run
        assert ex.stats["lost"] == 1 and ex.stats["retried"] == 1
        assert len(ledger.runs(runner.fingerprint, config_key(spec.good))) == 1
        assert runner.executed == 1
        deadline = time.monotonic() + 60
        while ex.alive() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ex.alive() == 2 and ex.stats["replaced"] == 1
    finally:
        ex.close()
        ledger.close()
        ray.shutdown()


@needs_ray
def test_k_is_the_actors_that_fit(head, tmp_path):
    """Six actors asked of a 4-CPU cluster: the four that fit serve, the rest are not waited for."""
    import ray
    from bisectk.run.cluster import RayExecutor, _use_token_auth
    _use_token_auth()
    t0 = time.monotonic()
    ex = RayExecutor(actors=6, address=head.address, latecomer_s=3)
    try:
        assert ex.alive() == 4 and ex.stats["failed_starts"] == 2
        assert time.monotonic() - t0 < 60
        assert "4 actor(s), 1 CPU each" in ex.describe()
    finally:
        ex.close()
        ray.shutdown()
