"""`--executor ray` (issue 14): runs on Ray actors give the answers local runs give; an actor
killed mid-run loses no observation; k-way rounds stay within their bound; nothing of Ray is left
behind. The Ray tests use one local head for the module (joined with --ray-address) except where
a command starts and stops its own local instance; they skip when ray is not installed."""
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, bisectk, new_mark, own_processes, wait_until

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import counter_repo, git, make_repo  # noqa: E402

try:
    import ray  # noqa: F401
    HAVE_RAY = True
except ImportError:
    HAVE_RAY = False

needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install -e '.[ray]')")
VARIANTS = ROOT / "variants" / "cpu"


@pytest.fixture(scope="module")
def head():
    """One local Ray head for the module, under bisectk's own supervisor; the commands join it."""
    if not HAVE_RAY:
        pytest.skip("ray is not installed")
    from bisectk.run.cluster import LocalHead
    h = LocalHead(num_cpus=4)
    yield h
    h.close()


@pytest.fixture(autouse=True)
def driver_leaves_nothing():
    """`ray.init` in this process (the tests that drive a RayExecutor here) installs Ray's SIGTERM
    handler and sets PYTHONBREAKPOINT, and `ray.shutdown` keeps both: the xdist worker's later
    tests, of other modules, ran with them (a per-test watch of the worker's state saw both)."""
    handler, env = signal.getsignal(signal.SIGTERM), dict(os.environ)
    yield
    if handler is not None:         # None: installed from C, nothing Python could put back
        signal.signal(signal.SIGTERM, handler)
    for k in os.environ.keys() - env.keys():
        del os.environ[k]
    os.environ.update({k: v for k, v in env.items() if os.environ.get(k) != v})


def cli_env(head) -> dict:
    """A driver that joins by address uses the cluster's token only when told to (Ray's rule):
    the head's own token, as a user passes theirs."""
    env = {**os.environ, **head.auth_env, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_AUTH_TOKEN", None)
    return env


def driver_of(head, monkeypatch) -> None:
    """This test process as a driver of `head` (its token), restored after the test."""
    for k, v in head.auth_env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    head.use_as_driver()


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
                                             f"pip install -e '{ROOT}[ray]' (or pip install 'ray==2.60.0')"]


def startup_s(env) -> float:
    """What starting a command that joins Ray costs on this machine now (the interpreter, bisectk,
    ray imported): seconds of a bound on a loaded 2-core machine (15.7 s against 15 seen), none of
    Ray's retries. A test's time bound adds it rather than assume an idle machine."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import ray, bisectk.run.cluster"], capture_output=True, check=True,
                   timeout=300, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
    return time.monotonic() - t0


@needs_ray
def test_unreachable_cluster_is_one_line_at_once(tmp_path):
    # a history of its own: bisectk's checkout may be a shallow clone (CI's), where HEAD~1 is no commit
    good, bad = counter_repo(tmp_path / "r", 2)
    start_s = startup_s(os.environ)
    t0 = time.monotonic()
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", bad, "--run", "true", "--executor", "ray",
                "--ray-address", "127.0.0.1:9", "--ledger", tmp_path / "l.db")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisectk: --ray-address 127.0.0.1:9: cannot reach the Ray cluster")
    assert time.monotonic() - t0 < start_s + 15     # at once, not after Ray's retries: start-up aside


def test_ray_options_need_the_ray_executor(tmp_path):
    for args, words in ((["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
                        (["--executor", "ray", "--gpus", "0,1"], "Ray gives each actor its own GPU"),
                        (["--executor", "slurm"], "--executor 'slurm': choose one of local, ray")):
        p = bisectk("ablate", VARIANTS / "pipeline-hang.toml", *args, "--ledger", tmp_path / "l.db")
        assert p.returncode == 2 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def occupy(*ports: int) -> list:
    """Listen on those of `ports` that are free (as another user's Ray on the default ports would)."""
    import socket
    held = []
    for port in ports:
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", port))
            s.listen()
            held.append(s)
        except OSError:     # taken already: by something else, which serves as well
            s.close()
    return held


@needs_ray
def test_a_local_instance_needs_nothing_of_the_users(tmp_path):
    """A machine that never ran Ray: no ~/.ray (HOME cannot even be created: it lies under a
    regular file, so nothing can be written there, root included), Ray's default /tmp/ray taken
    by something not ours, the default ports (6379 GCS, 10001 client, 8265 dashboard) in use.
    `--executor ray` starts its own instance anyway, finds the culprit, and leaves nothing:
    no process of its own, no scratch directory."""
    import tempfile
    (tmp_path / "file").write_text("")
    home = tmp_path / "file" / "home"
    tmp = Path(tempfile.mkdtemp(prefix="bk", dir="/tmp"))   # a short temp dir: Ray's socket paths fit
    (tmp / "ray").write_text("another user's, not a directory\n")
    held = occupy(6379, 10001, 8265)
    mark = new_mark()
    try:
        p = bisectk("ablate", VARIANTS / "pipeline-hang.toml", "--executor", "ray", "--json", "--ledger",
                    tmp_path / "l.db", timeout=600, env={"HOME": str(home), "TMPDIR": str(tmp), **mark,
                                                        "XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert p.returncode == 0, p.stderr[-3000:]
        assert json.loads(p.stdout)["culprits"] == ["producer_phase"]
        assert "Token authentication" not in p.stderr
        left = wait_until(lambda: not own_processes(mark), timeout=60) or own_processes(mark)
        assert left is True, f"Ray processes left behind: {[q.pid for q in left]}"
        assert sorted(x.name for x in tmp.iterdir()) == ["ray"]   # its scratch (token, Ray's session) removed
    finally:
        for s in held:
            s.close()
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


@needs_ray
def test_joining_by_address_keeps_the_users_auth(head, tmp_path):
    """--ray-address uses the user's own authentication, as they set it: without the cluster's
    token the command is refused in one whole line that says what is needed; with it, it runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    start_s = startup_s(env)
    t0 = time.monotonic()
    p = run_cli("ablate", VARIANTS / "pipeline-hang.toml", "--executor", "ray", "--ray-address", head.address,
                "--ledger", tmp_path / "l.db", env={**env, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.stderr.strip().splitlines() == [
        f"bisectk: --ray-address {head.address}: the Ray cluster refused this driver's authentication "
        "(RAY_AUTH_MODE is unset); a cluster with token authentication (Ray's default) needs RAY_AUTH_MODE=token "
        "and the cluster's token on this driver: ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH=FILE or RAY_AUTH_TOKEN"]
    assert time.monotonic() - t0 < start_s + 15     # at once, not after Ray's 20 s of retries
    p = run_cli("ablate", VARIANTS / "pipeline-hang.toml", "--executor", "ray", "--ray-address", head.address,
                "--json", "--ledger", tmp_path / "l.db", env=cli_env(head))
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout)["culprits"] == ["producer_phase"]


def test_errors_are_never_cut_mid_sentence():
    from bisectk.run.cluster import one_line
    text = ("Token authentication is enabled but no authentication token was found. Ensure that the token "
            "for the cluster is available in a local file (e.g., ~/.ray/auth_token or via RAY_AUTH_TOKEN_PATH) "
            "or as the `RAY_AUTH_TOKEN` environment variable. To generate a token for local development, use "
            "`ray get-auth-token --generate`. For more information, see the Ray documentation.")
    short = one_line(text, 300)
    assert short.endswith("environment variable. ...") and len(short) <= 304
    assert one_line("x" * 500 + ". y", 100) == "x" * 500 + ". ..."     # the first sentence whole, however long
    assert one_line("a\n  b") == "a b"


def test_the_heads_error_is_read_whole(tmp_path):
    """The local head's last error, as `ray start` logged it: the exception line and the message
    lines after it, never cut in the middle of a sentence (the issue's 'To generate a token for')."""
    from bisectk.run.cluster import LocalHead
    head = LocalHead.__new__(LocalHead)     # its log only: nothing is started
    head.scratch = tmp_path
    (tmp_path / "head.log").write_text(
        "Traceback (most recent call last):\n  File \"scripts.py\", line 1072, in start\n"
        "ray.exceptions.AuthenticationError: Token authentication is enabled but no authentication token was "
        "found. Ensure that the token for the cluster is available in a local file (e.g., ~/.ray/auth_token or via "
        "RAY_AUTH_TOKEN_PATH) or as the `RAY_AUTH_TOKEN` environment variable. To generate a token for local\n"
        "development, use `ray get-auth-token --generate`.\n")
    text = head.tail()
    assert text.startswith("ray.exceptions.AuthenticationError: Token authentication is enabled")
    assert text.endswith("environment variable. ...") or text.endswith("--generate`.")
    assert "To generate a token for" not in text or text.endswith("--generate`.")


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
def test_the_same_command_again_is_answered_by_the_ledger(tmp_path):
    """The memo key holds the user's environment, not what Ray put into bisectk's own (a local
    instance's token path, new for every command; ray.init's PYTHONBREAKPOINT; `import ray`'s
    RAY_CLIENT_MODE): on a local instance, the same command as a local one, on the same ledger,
    is answered from it and executes nothing (as a second local command, or Ray command, is)."""
    runs = []
    for executor in ("local", "ray"):
        p = bisectk("ablate", VARIANTS / "crash-oob.toml", "--executor", executor, "--json", "--ledger",
                    tmp_path / "l.db", timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(json.loads(p.stdout)["runs"])
    assert runs[0] > 0 and runs[1] == 0, runs


@needs_ray
def test_bisect_256_commits_on_ray_matches_local_within_the_round_bound(tmp_path):
    """A 256-commit history, --jobs 4: the same first bad commit as local, in at most
    ceil(log_5 N) + 1 rounds; no worktree is made (commits travel as archives); the local Ray
    instance the command started is gone afterwards."""
    shas = make_repo(tmp_path / "r", n=256, culprit=171, broken=())
    docs = {}
    for executor in ("ray", "local"):
        mark = new_mark()
        p = bisectk("bisect", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1], "--run",
                    "python kernel.py", "--jobs", "4", "--executor", executor, "--json",
                    "--ledger", tmp_path / f"{executor}.db", timeout=600, env=mark)
        assert p.returncode == 0, p.stderr[-3000:]
        docs[executor] = json.loads(p.stdout)
        if executor == "ray":
            assert len(git(tmp_path / "r", "worktree", "list").splitlines()) == 1   # nothing checked out here
            # the command's own Ray processes (raylet, GCS, workers, actors), not another session's
            left = wait_until(lambda: not own_processes(mark), timeout=60) or own_processes(mark)
            assert left is True, f"Ray processes left behind: {[q.pid for q in left]}"
    for doc in docs.values():
        assert doc["first_bad"]["sha"] == shas[171]
        # + the confirmation of the answer (search/confirm.py): the culprit again and its parent's
        # passes, run 4 at a time
        assert doc["rounds"] <= math.ceil(math.log(doc["commits"], 5)) + 1 + 3, doc["rounds"]
    # the search's own runs are the same decisions; the confirmation plans by what runs cost (a hang
    # more than a pass), which a loaded machine can shift, so its length is not compared
    searched = {k: d["runs"] - len(d["confirmation"]["runs"]) for k, d in docs.items()}
    assert docs["ray"]["mode"] == "dag-multisect-4" and searched["ray"] == searched["local"], searched


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

# the first run says it has begun and sleeps; the run after it (the job run again) ends at once
SLOW = ("import json, pathlib, sys, time\n"
        "print('BISECTK_PHASE launch', flush=True)\n"
        "mark = pathlib.Path(sys.argv[2])\n"
        "if not mark.exists():\n"
        "    mark.write_text('started')\n"
        "    time.sleep(float(sys.argv[1]))\n"
        "print('BISECTK_RESULT ' + json.dumps({'rel_err': 0.0}))\n")


@needs_ray
def test_an_actor_killed_mid_run_loses_no_observation(head, tmp_path, monkeypatch):
    """ray.kill of the actor running a job: the job is run again on another actor, the ledger
    records it once (the run that came back), and a replacement actor starts."""
    import ray
    from bisectk.ledger import Ledger
    from bisectk.run.cluster import RayExecutor
    from bisectk.run.runner import Runner
    from bisectk.spec import config_key, load_spec
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").touch()
    (proj / "slow.py").write_text(SLOW)
    # the subject says it runs, outside the shipped project (paths inside it map to the actor's copy)
    started = tmp_path / "started"
    (proj / "spec.toml").write_text('name = "slow"\n[subject]\ncommand = ["python", "slow.py", "{t}", '
                                    f'"{started}"]\ntimeout = 60\n[oracle]\nmetric = "rel_err"\nmax = 1e-4\n'
                                    '[good]\nt = 20\n[bad]\nt = 2.0\n')   # 20 s for the kill to land
    spec = load_spec(proj / "spec.toml")
    driver_of(head, monkeypatch)
    ledger = Ledger(tmp_path / "l.db")
    ex = RayExecutor(actors=2, address=head.address, project=proj)
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
        assert wait_until(started.exists, timeout=60)      # the subject is running on it now
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
def test_k_is_the_actors_that_fit(head, tmp_path, monkeypatch):
    """Six actors asked of a 4-CPU cluster: the four that fit serve, the rest are not waited for."""
    import ray
    from bisectk.run.cluster import RayExecutor
    driver_of(head, monkeypatch)
    t0 = time.monotonic()
    # the others are waited for twice what the first actor's start took (at least latecomer_s), which
    # a loaded machine stretches (79 s in all, 3 suites on 2 cores): what the bound tells apart is that
    # wait from the ready timeout's, set long here so that the two stay far apart
    ex = RayExecutor(actors=6, address=head.address, latecomer_s=3, ready_timeout=600)
    try:
        assert ex.alive() == 4 and ex.stats["failed_starts"] == 2
        assert time.monotonic() - t0 < 300
        assert "4 actor(s), 1 CPU each" in ex.describe()
    finally:
        ex.close()
        ray.shutdown()


@needs_ray
@pytest.mark.skipif(__import__("shutil").which("py-spy") is None, reason="py-spy is not installed")
def test_a_hang_on_an_actor_is_read_before_the_kill(head, tmp_path):
    """Hang snapshots for the Ray executor (issue 25): the actor reads the hung run where it runs,
    and the record names the two waiting lines of a lock-order deadlock, as a local run does."""
    from tests.e2e.test_hang_snapshot import places, spec
    p = run_cli("ablate", spec(tmp_path), "--json", "--warm", "--ledger", tmp_path / "l.db",
                "--executor", "ray", "--ray-address", head.address, "--html", tmp_path / "r.html",
                env=cli_env(head))
    assert p.returncode == 0, p.stderr[-3000:]
    rec = json.loads(p.stdout)
    assert rec["culprits"] == ["order"]
    bad = places(rec["hangs"]["bad"])
    assert bad["producer"] == "lockpair.py:12 producer" and bad["consumer"] == "lockpair.py:18 consumer", bad
    html = (tmp_path / "r.html").read_text()
    assert "lockpair.py:12 producer" in html and "lockpair.py:18 consumer" in html   # the HTML's table


@needs_ray
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_mid_search_on_ray_ends_as_locally(head, tmp_path, sig):
    """SIGTERM (or Ctrl-C) while a hybrid runs on an actor: bisectk's own handling, not Ray's
    (ray.init installs a SIGTERM handler that exits at once, after a C++ stack dump on stderr):
    the result so far is printed (exit 1, "interrupted"), and nothing of the command is left."""
    import signal
    (tmp_path / "pyproject.toml").touch()
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "s.py").write_text(
        "import json, os, sys, time\na = [int(x) for x in sys.argv[1:]]\n"
        "if 0 < sum(a) < len(a):\n"        # a hybrid: under way when the signal comes
        f"    open(os.path.join({str(marks)!r}, str(os.getpid())), 'w').close()\n    time.sleep(30)\n"
        "print('BISECTK_RESULT ' + json.dumps({'err': float(a[0] and a[2])}))\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "sig"\n[subject]\ncommand = ["python", "s.py", "{a}", "{b}", "{c}"]\ntimeout = 60\n'
                    '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\na = 0\nb = 0\nc = 0\n[bad]\na = 1\nb = 1\nc = 1\n')
    mark = new_mark()
    p = subprocess.Popen([sys.executable, "-m", "bisectk", "ablate", str(spec), "--ledger", str(tmp_path / "l.db"),
                          "--executor", "ray", "--ray-address", head.address], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**cli_env(head), **mark})
    deadline = time.monotonic() + 240
    while not os.listdir(marks):
        assert time.monotonic() < deadline and p.poll() is None, "no hybrid ever began"
        time.sleep(0.05)
    p.send_signal(getattr(signal, sig))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1 and "SIGTERM received" not in err and "Traceback" not in err, (p.returncode, err[-3000:])
    assert "interrupted" in out, out[-1500:]
    left = wait_until(lambda: not own_processes(mark), timeout=30) or own_processes(mark)
    assert left is True, f"left behind: {[q.pid for q in left]}"
    import psutil      # the hybrids on the actors (children of the head's workers, not of the command)
    subjects = [int(x) for x in os.listdir(marks)]
    assert wait_until(lambda: not [q for q in subjects if psutil.pid_exists(q)], timeout=60), subjects


@needs_ray
def test_wall_time_judged_slow_on_warm_actors_times_every_run_cold(head, tmp_path, monkeypatch):
    """Review j: `--executor ray --warm` with a SLOW oracle on wall time and a factor that sends
    runs cold (a process-level variable set otherwise than the actors' warm workers have it):
    good was timed warm, the factor's runs cold with their interpreter's start and imports, and
    were SLOW for that alone. The actors' pools now run every job cold, as the local pool does."""
    import ray
    from bisectk.run.cluster import RayExecutor
    from bisectk.run.runner import Runner
    from bisectk.spec import load_spec
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").touch()
    (proj / "sub.py").write_text("import argparse, json\nimport numpy\n"
                                 "p = argparse.ArgumentParser(); p.add_argument('--k'); p.parse_args()\n"
                                 "print('BISECTK_RESULT ' + json.dumps({'t': 1.0}))\n")
    # the actors' warm workers have CUTE_DSL_LINEINFO=1 (run/snapshot.py LINEINFO_ENV): li = 0 goes cold
    (proj / "spec.toml").write_text('name = "cold-or-warm"\n[subject]\ncommand = ["python", "sub.py", "--k", "{k}"]\n'
                                    'env = {CUTE_DSL_LINEINFO = "{li}"}\n[oracle]\nslow_factor = 3\n'
                                    '[good]\nk = "a"\nli = "1"\n[bad]\nk = "b"\nli = "0"\n')
    spec = load_spec(proj / "spec.toml")
    driver_of(head, monkeypatch)
    notes = []
    ex = RayExecutor(actors=1, address=head.address, project=proj, warm=True, preload=("numpy",))
    ex.on_note = notes.append
    try:
        runner = Runner(spec, executor=ex)
        runner.calibrate([runner.observe(spec.good, i) for i in range(3)])
        flipped = runner.verdict({**spec.good, "li": "0"}, repeat=2)
    finally:
        ex.close()
        ray.shutdown()
    assert flipped.outcome.name == "PASS", (flipped, notes)
    assert ex.all_cold and any("every run goes cold" in n for n in notes), notes
