"""The memo key covers every input of a verdict (issue 22, item 1): the timeout policy, the
environment, the subject's tree and the sources it imports each change it; nothing else does, so
an unchanged subject is still answered from the ledger; a ledger from the old key just misses."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.ledger import Ledger
from bisectk.outcome import FailKind, Outcome, Run
from bisectk.run.pool import WorkerPool
from bisectk.run.runner import Runner, TimeoutPolicy
from bisectk.spec import config_key, load_spec
from tests.conftest import ROOT

SUBJECT = """import json, os, sys, time
import helper
sys.path.insert(0, os.environ.get("EXTRA_LIB", "/nonexistent"))
import extlib
time.sleep(float(os.environ.get("SLEEP_S", "0")))
open(os.environ["COUNTER"], "a").write("run\\n")
err = helper.ERR + extlib.ERR + (1.0 if os.environ.get("BREAK") == "1" else 0.0)
print("BISECTK_RESULT " + json.dumps({"rel_err": err}))
"""


def project(tmp_path: Path, timeout: str = "") -> Path:
    d = tmp_path / "proj"
    d.mkdir(exist_ok=True)
    (d / "pyproject.toml").touch()
    (d / "subject.py").write_text(SUBJECT)
    (d / "helper.py").write_text("ERR = 0.0\n")
    lib = tmp_path / "outside" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    (lib / "extlib.py").write_text("ERR = 0.0\n")
    (d / "spec.toml").write_text(f'name = "memo"\n[subject]\ncommand = ["python", "subject.py"]\n{timeout}\n'
                                 f'[oracle]\nmetric = "rel_err"\nmax = 1e-3\n')
    return d


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNTER", str(tmp_path / "counter.txt"))
    monkeypatch.setenv("EXTRA_LIB", str(tmp_path / "outside" / "lib"))
    monkeypatch.delenv("BREAK", raising=False)
    monkeypatch.delenv("SLEEP_S", raising=False)
    return tmp_path


def runs(tmp_path: Path) -> int:
    p = tmp_path / "counter.txt"
    return len(p.read_text().splitlines()) if p.exists() else 0


def verdict(d: Path, ledger_path: Path, option: float | None = None, executor=None):
    spec = load_spec(d / "spec.toml")
    ledger = Ledger(ledger_path)
    try:
        runner = Runner(spec, ledger, executor=executor)
        if option:
            runner.timeout = TimeoutPolicy(option, "option", f"{option:g} s from --timeout")
        return runner.verdict(spec.endpoint("good")), runner.executed
    finally:
        ledger.close()


def test_an_unchanged_subject_is_answered_from_the_ledger(env):
    d = project(env)
    first, n1 = verdict(d, env / "l.db")
    again, n2 = verdict(d, env / "l.db")
    assert first.outcome is again.outcome is Outcome.PASS and (n1, n2) == (1, 0) and again.cached


def test_the_specs_timeout_and_the_timeout_option_are_in_the_key(env, monkeypatch):
    monkeypatch.setenv("SLEEP_S", "1.5")
    d = project(env, "timeout = 1")
    hung, _ = verdict(d, env / "l.db")
    assert hung.kind is FailKind.HANG
    project(env, "timeout = 30")      # the spec now gives it room: a new observation, not the old hang
    ok, n = verdict(d, env / "l.db")
    assert ok.outcome is Outcome.PASS and n == 1
    hung, n = verdict(d, env / "l.db", option=0.5)
    assert hung.kind is FailKind.HANG and n == 1
    again, n = verdict(d, env / "l.db", option=1.0)    # the same policy as the spec's first `timeout = 1`
    assert again.kind is FailKind.HANG and n == 0 and again.cached
    ok, n = verdict(d, env / "l.db", option=20.0)
    assert ok.outcome is Outcome.PASS and n == 1


def test_a_run_stored_under_other_classification_rules_is_made_again(env, monkeypatch):
    """The ledger keeps verdicts, not raw output: when the rules that turn a run's output into a
    verdict change (run/classify.py RULES_VERSION), a stored verdict may be one the new rules would
    not give, so the run is made again; unchanged rules answer from the ledger."""
    from bisectk.run import classify
    d = project(env)
    _, n1 = verdict(d, env / "l.db")
    _, n2 = verdict(d, env / "l.db")
    monkeypatch.setattr(classify, "RULES_VERSION", classify.RULES_VERSION + "-next")
    again, n3 = verdict(d, env / "l.db")
    assert (n1, n2, n3) == (1, 0, 1) and not again.cached


def test_the_environment_is_in_the_key_but_not_the_shells_bookkeeping(env, monkeypatch):
    d = project(env)
    assert verdict(d, env / "l.db")[0].outcome is Outcome.PASS
    monkeypatch.setenv("BREAK", "1")
    broken, n = verdict(d, env / "l.db")
    assert broken.outcome is Outcome.FAIL and n == 1
    monkeypatch.delenv("BREAK")
    for name, value in (("PWD", "/somewhere/else"), ("SHLVL", "7"), ("TERM", "dumb"), ("OLDPWD", "/x")):
        monkeypatch.setenv(name, value)
    again, n = verdict(d, env / "l.db")
    assert again.outcome is Outcome.PASS and n == 0
    from bisectk.run.memokey import environment_digest
    assert environment_digest({"A": "1", "PWD": "/a"}) == environment_digest({"A": "1", "PWD": "/b"})
    assert environment_digest({"A": "1"}) != environment_digest({"A": "2"})


def test_pyenvs_echo_of_the_working_directory_is_no_input():
    """pyenv's shims export PYENV_DIR, the directory the command was typed in (as PWD): with
    bisectk run through a shim, the same spec run from another directory re-ran every run."""
    from bisectk.run.memokey import environment_digest
    assert environment_digest({"A": "1", "PYENV_DIR": "/a"}) == environment_digest({"A": "1", "PYENV_DIR": "/b"})


def test_a_ci_jobs_own_bookkeeping_is_no_input():
    """A ledger restored from the CI cache (or a retried job's `--resume`): every GitHub Actions or
    GitLab CI job has its own run id, attempt, tokens, step files and pipeline commit, so the next
    job's key never matched and it ran everything again; the variables a job sets for its scripts
    still count."""
    from bisectk.run.memokey import environment_digest

    def job(n: int) -> dict[str, str]:
        return {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": f"{n}",
                "GITHUB_RUN_NUMBER": f"{n}", "GITHUB_RUN_ATTEMPT": f"{n}", "GITHUB_SHA": f"{n}" * 40,
                "GITHUB_OUTPUT": f"/home/runner/work/_temp/_runner_file_commands/set_output_{n}",
                "GITHUB_STEP_SUMMARY": f"/tmp/step_summary_{n}", "ACTIONS_RUNTIME_TOKEN": f"t{n}",
                "RUNNER_TRACKING_ID": f"github_{n}", "RUNNER_NAME": f"GitHub Actions {n}",
                "GITLAB_CI": "true", "CI_JOB_ID": f"{n}", "CI_JOB_TOKEN": f"t{n}", "CI_PIPELINE_ID": f"{n}",
                "CI_COMMIT_SHA": f"{n}" * 40, "CI_JOB_STARTED_AT": f"2026-12-0{n}T00:00:00Z",
                "CI_RUNNER_ID": f"{n}", "CI_CONCURRENT_ID": f"{n}", "CI_NODE_INDEX": "1"}

    assert environment_digest(job(1)) == environment_digest(job(2))
    assert environment_digest(job(1)) != environment_digest({**job(1), "CI_NODE_INDEX": "2"})   # a shard
    assert environment_digest(job(1)) != environment_digest({**job(1), "GITHUB_REPOSITORY": "o/s"})



def test_a_jenkins_builds_own_bookkeeping_is_no_input():
    """Jenkins keeps a job's workspace, and with it `.git/bisectk/ledger.db`, from build to build,
    but every build has its own number, tag, URLs, executor slot and server cookie: the next
    build's key never matched and its triage ran everything again. A job's parameters and its
    name still count."""
    from bisectk.run.memokey import environment_digest

    def build(n: int) -> dict[str, str]:
        return {"JENKINS_URL": "https://ci.example.com/", "JOB_NAME": "kernels/main", "WORKSPACE": "/w/kernels",
                "ARCH": "sm_90a", "BUILD_NUMBER": f"{n}", "BUILD_ID": f"{n}", "BUILD_DISPLAY_NAME": f"#{n}",
                "BUILD_TAG": f"jenkins-kernels-main-{n}", "BUILD_URL": f"https://ci.example.com/job/kernels/{n}/",
                "EXECUTOR_NUMBER": f"{n % 2}", "NODE_NAME": f"gpu-{n}", "JENKINS_SERVER_COOKIE": f"c{n}",
                "HUDSON_COOKIE": f"h{n}", "RUN_DISPLAY_URL": f"https://ci.example.com/{n}/display",
                "RUN_ARTIFACTS_DISPLAY_URL": f"https://ci.example.com/{n}/artifacts",
                "RUN_CHANGES_DISPLAY_URL": f"https://ci.example.com/{n}/changes",
                "RUN_TESTS_DISPLAY_URL": f"https://ci.example.com/{n}/tests", "GIT_COMMIT": f"{n}" * 40,
                "GIT_PREVIOUS_COMMIT": f"{n + 1}" * 40, "GIT_PREVIOUS_SUCCESSFUL_COMMIT": f"{n + 2}" * 40}

    assert environment_digest(build(1)) == environment_digest(build(2))
    assert environment_digest(build(1)) != environment_digest({**build(1), "ARCH": "sm_100a"})   # a parameter
    assert environment_digest(build(1)) != environment_digest({**build(1), "JOB_NAME": "kernels/dev"})


def test_a_slurm_jobs_own_bookkeeping_is_no_input():
    """A kernel author on a GPU cluster runs bisectk in a new SLURM allocation each time (`srun
    --gres=gpu:1 bisectk ablate ...`): every job has its own id, step, task pid, ports, times,
    nodes and CPU mask, so no run was ever answered from the ledger of the job before. What a job
    is given (its GPUs, CPU count, an array task's index) still counts."""
    from bisectk.run.memokey import environment_digest

    def job(n: int) -> dict[str, str]:
        return {"SLURM_CLUSTER_NAME": "c", "SLURM_CPUS_PER_TASK": "8", "SLURM_JOB_PARTITION": "gpu",
                "SLURM_ARRAY_TASK_ID": "3", "SLURM_JOB_GPUS": "0", "SLURM_JOB_ID": f"{n}", "SLURM_JOBID": f"{n}",
                "SLURM_STEP_ID": f"{n}", "SLURM_STEPID": f"{n}", "SLURM_TASK_PID": f"{n}",
                "SLURM_ARRAY_JOB_ID": f"{n}", "SLURM_JOB_START_TIME": f"{n}", "SLURM_JOB_END_TIME": f"{n + 1}",
                "SLURM_SRUN_COMM_PORT": f"{n}", "SLURM_SRUN_COMM_HOST": f"10.0.0.{n}",
                "SLURM_STEP_LAUNCHER_PORT": f"{n}", "SLURM_LAUNCH_NODE_IPADDR": f"10.0.0.{n}",
                "SLURM_SUBMIT_HOST": f"login{n}", "SLURM_JOB_NODELIST": f"gpu{n}", "SLURM_NODELIST": f"gpu{n}",
                "SLURM_STEP_NODELIST": f"gpu{n}", "SLURMD_NODENAME": f"gpu{n}", "SLURM_TOPOLOGY_ADDR": f"gpu{n}",
                "SLURM_CPU_BIND": f"quiet,mask_cpu:0x{n:02x}", "SLURM_CPU_BIND_LIST": f"0x{n:02x}"}

    assert environment_digest(job(1)) == environment_digest(job(2))
    for name, value in (("SLURM_JOB_GPUS", "1"), ("SLURM_CPUS_PER_TASK", "4"), ("SLURM_ARRAY_TASK_ID", "4")):
        assert environment_digest(job(1)) != environment_digest({**job(1), name: value}), name

def test_a_module_of_the_subjects_tree_is_in_the_key(env):
    d = project(env)
    assert verdict(d, env / "l.db")[0].outcome is Outcome.PASS
    (d / "helper.py").write_text("ERR = 0.5   # a regression in an imported module\n")
    broken, n = verdict(d, env / "l.db")
    assert broken.outcome is Outcome.FAIL and n == 1


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_module_imported_from_outside_the_tree_is_in_the_key(env, warm):
    """extlib.py lives outside the subject's directory (an editable install, a PYTHONPATH entry):
    the run records that it imported it, and the next session checks its content."""
    d = project(env)
    pool = WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=60) if warm else None
    try:
        ex = pool
        assert verdict(d, env / "l.db", executor=ex)[0].outcome is Outcome.PASS
        again, n = verdict(d, env / "l.db", executor=ex)
        assert again.outcome is Outcome.PASS and n == 0          # recorded, unchanged: reused
        (env / "outside" / "lib" / "extlib.py").write_text("ERR = 0.25\n")
        broken, n = verdict(d, env / "l.db", executor=ex)
        assert broken.outcome is Outcome.FAIL and n == 1
        if pool:
            assert pool.stats["warm_runs"] >= 2
    finally:
        if pool:
            pool.close()


def test_a_git_tree_is_keyed_by_its_index_and_changes_without_writing_the_users_index(env):
    d = project(env)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=d, check=True)
    subprocess.run([*git, "add", "-A"], cwd=d, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=d, check=True)
    from bisectk.run.memokey import tree_digest
    first = tree_digest(d)
    assert first.startswith("git:")
    (d / "untracked_output.log").write_text("not a source")   # untracked non-sources do not count
    assert tree_digest(d) == first
    index = d / ".git" / "index"
    before = index.stat().st_mtime_ns
    os.utime(d / "helper.py")            # touched, same content: git's stat data differs, the key does not
    assert tree_digest(d) == first
    (d / "helper.py").write_text("ERR = 0.5\n")
    assert tree_digest(d) != first
    assert index.stat().st_mtime_ns == before


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_tracked_file_git_status_is_told_to_ignore_is_keyed_by_its_content(env, flag):
    """A file marked `git update-index --assume-unchanged` (a local settings module, a habit for
    edits never to commit) or `--skip-worktree` (sparse checkout) never shows in `git status`:
    the tree digest read only the index for it, so after an edit that breaks the subject, the
    earlier PASS was answered from the ledger."""
    d = project(env)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=d, check=True)
    subprocess.run([*git, "add", "-A"], cwd=d, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=d, check=True)
    subprocess.run(["git", "update-index", flag, "helper.py"], cwd=d, check=True)
    first = verdict(d, env / "l.db")
    (d / "helper.py").write_text("ERR = 0.99\n")
    second = verdict(d, env / "l.db")
    assert [(v.outcome, n) for v, n in (first, second)] == [(Outcome.PASS, 1), (Outcome.FAIL, 1)]


def test_a_ledger_written_under_the_old_key_just_misses(env):
    d = project(env)
    spec = load_spec(d / "spec.toml")
    ledger = Ledger(env / "l.db")   # what bisectk before issue 22 stored: a stale hang
    ledger.add_run(spec.fingerprint(), config_key(spec.good), Run(Outcome.FAIL, FailKind.HANG, signature="old"))
    ledger.close()
    v, n = verdict(d, env / "l.db")
    assert v.outcome is Outcome.PASS and n == 1


ABLATE_SPEC = """name = "timeouts"
[subject]
command = ["python", "k.py", "--slow", "{slow}", "--bug", "{bug}", "--a", "{a}", "--b", "{b}"]
TIMEOUT
[oracle]
metric = "rel_err"
max = 1e-3
[good]
slow = 0
bug = 0
a = 1
b = 1
[bad]
slow = 1
bug = 1
a = 2
b = 2
"""

ABLATE_KERNEL = """import argparse, json, time
ap = argparse.ArgumentParser()
for n in ("slow", "bug", "a", "b"):
    ap.add_argument("--" + n, type=int)
a = ap.parse_args()
if a.slow:
    time.sleep(1.5)      # a larger problem: slower, not wrong
print("BISECTK_RESULT " + json.dumps({"rel_err": 0.5 if a.bug else 0.0}))
"""


def test_ablate_after_the_spec_gives_more_time_runs_again_and_names_the_real_culprit(tmp_path):
    """The issue's case: under `timeout = 1` the slow factor is a hang and is named; once the spec
    says 30 s, the stored hangs must not answer: the runs are new, and `bug` is named."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.py").write_text(ABLATE_KERNEL)
    found = []
    for timeout in ("timeout = 1", "timeout = 30"):
        (tmp_path / "spec.toml").write_text(ABLATE_SPEC.replace("TIMEOUT", timeout))
        p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", "spec.toml", "--json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        doc = json.loads(p.stdout)
        found.append((doc["culprits"], doc["runs"]))
    assert found[0][0] == ["slow"] and found[1][0] == ["bug"] and found[1][1] > 0, found


def test_a_safe_directory_declared_through_the_environment_is_not_in_the_key():
    """Root in another user's repository: bisectk declares its worktrees safe to git through
    GIT_CONFIG_COUNT as it goes; a run before and after that is the same run. Other config
    through the environment still counts."""
    from bisectk.run.memokey import environment_digest
    base = {"PATH": "/usr/bin"}
    trusted = {**base, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "/c/wt-0"}
    assert environment_digest(trusted) == environment_digest(base)
    other = {**base, "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "/c/wt-0",
             "GIT_CONFIG_KEY_1": "core.autocrlf", "GIT_CONFIG_VALUE_1": "true"}
    assert environment_digest(other) != environment_digest(base)


def test_a_signal_to_the_terminals_process_group_leaves_the_tree_digest_to_git(tmp_path):
    """The tree's digest asks git (`status`, `ls-files`); a Ctrl-C or a hangup the terminal sends
    to bisectk's whole process group killed that git, and the digest fell back to the file walk:
    another key for the same tree. git runs in a session of its own, as bisectk's other tools."""
    from tests.fixtures.gitrepo import git
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "k.py").write_text("x = 1\n")
    git(repo, "add", "k.py")
    git(repo, "commit", "-q", "-m", "k")
    slow = tmp_path / "bin"
    slow.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (slow / "git").write_text(f"#!/bin/sh\nsleep 0.5\nexec {real} \"$@\"\n")
    (slow / "git").chmod(0o755)
    code = ("import os, signal, sys, threading\nfrom pathlib import Path\nfrom bisectk.run import memokey\n"
            "signal.signal(signal.SIGINT, lambda *a: None)\n"          # bisectk's own handler: it goes on
            "threading.Timer(0.2, os.killpg, (os.getpgid(0), signal.SIGINT)).start()\n"
            "print(memokey._git_tree(Path(sys.argv[1])))\n")
    p = subprocess.run([sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=60,
                       start_new_session=True,      # a process group of its own, as a terminal's job
                       env={**os.environ, "PATH": f"{slow}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)})
    assert p.stdout.startswith("git:"), (p.stdout, p.stderr[-800:])


def _venv(where: Path, version: str, err: float) -> Path:
    """A virtual environment over bisectk's interpreter (its packages seen through
    --system-site-packages) with a distribution `fakepkg` of `version` installed, whose ERR is `err`."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
                   check=True, timeout=120)
    (site_dir,) = where.glob("lib/python3*/site-packages")
    _install(site_dir, version, err)
    return where / "bin" / "python"


def _install(site_dir: Path, version: str, err: float) -> None:
    for old in site_dir.glob("fakepkg-*.dist-info"):
        (old / "METADATA").unlink()
        old.rmdir()
    (site_dir / "fakepkg").mkdir(exist_ok=True)
    shutil.rmtree(site_dir / "fakepkg" / "__pycache__", ignore_errors=True)   # as pip's upgrade: no stale .pyc
    (site_dir / "fakepkg" / "__init__.py").write_text(f"ERR = {err}\n")
    (site_dir / f"fakepkg-{version}.dist-info").mkdir()
    (site_dir / f"fakepkg-{version}.dist-info" / "METADATA").write_text(f"Name: fakepkg\nVersion: {version}\n")


def test_an_installed_packages_upgrade_and_another_venv_are_new_observations(tmp_path):
    """An installed package (site-packages) is no recorded import; what bisectk's interpreter has
    installed is keyed by the distributions' names and versions and the directories they are in:
    `pip install -U` and bisectk run from another venv of the same base interpreter each make the
    run again, where the stored PASS of the old version answered (confidently wrong)."""
    d = tmp_path / "proj"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text('import json, fakepkg\nprint("BISECTK_RESULT " + json.dumps({"err": fakepkg.ERR}))\n')
    (d / "spec.toml").write_text('name = "pkg"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    a = _venv(tmp_path / "a", "1.0", 0.0)
    b = _venv(tmp_path / "b", "2.0", 0.0)

    def good(python: Path) -> str:
        p = subprocess.run([str(python), "-m", "bisectk", "run", "spec.toml", "--config", "good"], cwd=d,
                           capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return p.stdout + p.stderr

    assert "PASS" in good(a) and "from the ledger" in good(a)          # unchanged: answered
    (site_a,) = (tmp_path / "a").glob("lib/python3*/site-packages")
    _install(site_a, "2.0", 1.0)                                      # pip install -U fakepkg
    upgraded = good(a)
    assert "FAIL" in upgraded and "from the ledger" not in upgraded, upgraded
    other = good(b)                                                   # the same name and version, elsewhere
    assert "PASS" in other and "from the ledger" not in other, other


def test_an_installed_packages_upgrade_is_seen_through_a_wrapper_script(tmp_path):
    """`command = ["sh", "run.sh"]` whose script runs `python s.py` (or a `pytest` found on PATH):
    the program keyed is sh, whose identity holds nothing of what Python has installed, and the
    import record left installed packages out, so after `pip install -U fakepkg` the stored PASS
    answered the run that now fails. The record names the site-packages directory a run imported
    an installed package from, keyed by what it has installed; a `python` subject, whose program
    keys its site-packages already, records none (its key unchanged)."""
    d = tmp_path / "proj"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text('import json, fakepkg\nprint("BISECTK_RESULT " + json.dumps({"err": fakepkg.ERR}))\n')
    (d / "run.sh").write_text("python s.py\n")
    (d / "spec.toml").write_text('name = "wrapped"\n[subject]\ncommand = ["sh", "run.sh"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    (d / "plain.toml").write_text('name = "plain"\n[subject]\ncommand = ["python", "s.py"]\n'
                                  '[oracle]\nmetric = "err"\nmax = 0.5\n')
    a = _venv(tmp_path / "a", "1.0", 0.0)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{a.parent}{os.pathsep}{os.environ['PATH']}"}

    def good(spec: str) -> str:
        p = subprocess.run([str(a), "-m", "bisectk", "run", spec, "--config", "good", "--ledger", str(tmp_path / "l.db")],
                           cwd=d, capture_output=True, text=True, timeout=120, env=env)
        return p.stdout + p.stderr

    assert "PASS" in good("spec.toml") and "from the ledger" in good("spec.toml")     # unchanged: answered
    assert "PASS" in good("plain.toml")
    (site_a,) = (tmp_path / "a").glob("lib/python3*/site-packages")
    _install(site_a, "2.0", 1.0)                                                    # pip install -U fakepkg
    upgraded = good("spec.toml")
    assert "FAIL" in upgraded and "from the ledger" not in upgraded, upgraded
    assert "FAIL" in good("plain.toml")
    with sqlite3.connect(tmp_path / "l.db") as db:
        recorded = [json.loads(v) for (v,) in db.execute("SELECT value FROM meta WHERE key LIKE 'sources:%'")]
    # the wrapped subject's (with the base interpreter's, whose .pth hooks load at start); none for python s.py
    assert len(recorded) == 1 and os.path.realpath(site_a) in recorded[0], recorded


def test_another_python_named_by_the_command_is_keyed_by_what_it_has_installed(tmp_path):
    """`command = ["/path/to/venv/bin/python3", ...]` (or `python3` found on PATH): that Python's
    prefix's site-packages count as bisectk's own do."""
    from bisectk.run import memokey
    python = _venv(tmp_path / "a", "1.0", 0.0)
    before = memokey.program_identity(str(python), os.environ)
    memokey._INSTALLED.clear()            # made once per process: a new command sees the upgrade
    assert memokey.program_identity(str(python), os.environ) == before
    (site_dir,) = (tmp_path / "a").glob("lib/python3*/site-packages")
    _install(site_dir, "2.0", 1.0)
    memokey._INSTALLED.clear()
    assert memokey.program_identity(str(python), os.environ) != before


def test_a_program_found_on_the_path_the_specs_env_sets_is_in_the_key(env):
    """`env = {PATH = "/opt/tools/bin:..."}` and `command = ["ktool"]`: the run finds ktool on
    the spec's PATH, but the key looked it up on bisectk's own, found nothing ('unresolved'), and
    after ktool was replaced by another build the stored PASS answered from the ledger."""
    tools = env / "tools"
    tools.mkdir()
    ktool = tools / "ktool"

    def install(err: str) -> None:
        ktool.write_text(f'#!/bin/sh\necho \'BISECTK_RESULT {{"err": {err}}}\'\n')
        ktool.chmod(0o755)

    install("0.0")
    d = env / "proj"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "spec.toml").write_text(f'name = "tool"\n[subject]\ncommand = ["ktool"]\n'
                                 f'env = {{PATH = "{tools}{os.pathsep}/usr/bin{os.pathsep}/bin"}}\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    first, n1 = verdict(d, env / "l.db")
    again, n2 = verdict(d, env / "l.db")
    install("0.99")                        # another build of the tool, in place
    replaced, n3 = verdict(d, env / "l.db")
    assert [(v.outcome, n) for v, n in ((first, n1), (again, n2), (replaced, n3))] == [
        (Outcome.PASS, 1), (Outcome.PASS, 0), (Outcome.FAIL, 1)]


def test_the_bad_endpoints_program_is_in_the_key_too(env, monkeypatch):
    """`command = ["{tool}"]` with tool = ktool-a on the good side and ktool-b on the bad: the key
    held the good configuration's program alone, so after ktool-b was replaced the stored PASS of
    the bad configuration answered from the ledger. Each endpoint's program counts, as each
    endpoint's named files do."""
    tools = env / "tools"
    tools.mkdir()
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")

    def install(name: str, err: str) -> None:
        (tools / name).write_text(f'#!/bin/sh\necho \'BISECTK_RESULT {{"err": {err}}}\'\n')
        (tools / name).chmod(0o755)

    install("ktool-a", "0.0")
    install("ktool-b", "0.0")
    d = env / "proj"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "spec.toml").write_text('name = "tools"\n[subject]\ncommand = ["{tool}"]\n[oracle]\nmetric = "err"\n'
                                 'max = 0.5\n[good]\ntool = "ktool-a"\n[bad]\ntool = "ktool-b"\n')

    def bad() -> tuple:
        spec = load_spec(d / "spec.toml")
        ledger = Ledger(env / "l.db")
        try:
            runner = Runner(spec, ledger)
            return runner.verdict(spec.endpoint("bad")).outcome, runner.executed
        finally:
            ledger.close()

    found = [bad(), bad()]
    install("ktool-b", "0.99")             # another build of the bad side's tool
    found.append(bad())
    assert found == [(Outcome.PASS, 1), (Outcome.PASS, 0), (Outcome.FAIL, 1)], found


def test_the_bad_endpoints_program_is_found_on_the_bad_endpoints_path(env):
    """`env = {PATH = "<tools>/{bin}:..."}` (a toolchain as a factor) and `command = ["ktool"]`:
    each endpoint's program was looked up on the good configuration's PATH, so the bad side's
    ktool (under bin = "b") was never keyed, and after it was replaced the stored FAIL of the bad
    configuration answered from the ledger."""
    tools = env / "tools"

    def install(side: str, err: str) -> None:
        (tools / side).mkdir(parents=True, exist_ok=True)
        (tools / side / "ktool").write_text(f'#!/bin/sh\necho \'BISECTK_RESULT {{"err": {err}}}\'\n')
        (tools / side / "ktool").chmod(0o755)

    install("a", "0.0")
    install("b", "0.99")
    d = env / "proj"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "spec.toml").write_text(f'name = "tool"\n[subject]\ncommand = ["ktool"]\n'
                                 f'env = {{PATH = "{tools}/{{bin}}{os.pathsep}/usr/bin{os.pathsep}/bin"}}\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n[good]\nbin = "a"\n[bad]\nbin = "b"\n')

    def bad() -> tuple:
        spec = load_spec(d / "spec.toml")
        ledger = Ledger(env / "l.db")
        try:
            runner = Runner(spec, ledger)
            return runner.verdict(spec.endpoint("bad")).outcome, runner.executed
        finally:
            ledger.close()

    found = [bad(), bad()]
    install("b", "0.0")                    # the bad side's toolchain fixed, in place
    found.append(bad())
    assert found == [(Outcome.FAIL, 1), (Outcome.FAIL, 0), (Outcome.PASS, 1)], found


def _driver(root: Path, version: str, model: str) -> None:
    (root / "gpus" / "0000:18:00.0").mkdir(parents=True, exist_ok=True)
    (root / "version").write_text(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Tue Jan 1 2026\n"
                                  "GCC version:  gcc version 12.3.0\n")
    (root / "gpus" / "0000:18:00.0" / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 42\n")


def test_the_gpus_and_the_driver_are_in_the_key(env, monkeypatch):
    """A run observes one machine: after a driver upgrade, or from a host with other GPUs sharing
    the ledger (beside the spec on a network home), the stored verdict is not the answer."""
    from bisectk.run import memokey
    proc = env / "proc-nvidia"
    monkeypatch.setattr(memokey, "NVIDIA_PROC", str(proc), raising=False)
    d = project(env)
    _driver(proc, "550.54.15", "NVIDIA H100 80GB HBM3")
    _, n1 = verdict(d, env / "l.db")
    again, n2 = verdict(d, env / "l.db")
    _driver(proc, "570.86.10", "NVIDIA H100 80GB HBM3")        # the driver upgraded
    _, n3 = verdict(d, env / "l.db")
    _driver(proc, "570.86.10", "NVIDIA H200")                  # another host's GPU
    _, n4 = verdict(d, env / "l.db")
    assert (n1, n2, n3, n4) == (1, 0, 1, 1) and again.cached


def test_bisectks_own_switches_are_no_input(env, monkeypatch):
    """BISECTK_DEBUG=1 (set for a traceback to report), BISECTK_NO_EARLY and BISECTK_POOL_TRACE
    change what bisectk says or does, not a run's verdict: the whole search ran again."""
    d = project(env)
    _, n1 = verdict(d, env / "l.db")
    for name, value in (("BISECTK_DEBUG", "1"), ("BISECTK_NO_EARLY", "1"), ("BISECTK_POOL_TRACE", str(env / "t"))):
        monkeypatch.setenv(name, value)
    again, n2 = verdict(d, env / "l.db")
    assert (n1, n2) == (1, 0) and again.cached


def test_a_module_of_the_tree_that_git_ignores_is_in_the_key(env):
    """A local settings module the subject imports, ignored by git: the tree digest leaves ignored
    files out (build outputs), so after an edit of it the stored PASS answered. It is keyed as a
    module from outside the tree is; tracked modules stay keyed by the tree alone."""
    d = env / "repo"
    d.mkdir()
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    (d / ".gitignore").write_text("local_cfg.py\n.bisectk/\n")
    (d / "pyproject.toml").touch()
    (d / "local_cfg.py").write_text("ERR = 0.0\n")
    (d / "tracked.py").write_text("ERR = 0.0\n")
    (d / "s.py").write_text('import json, local_cfg, tracked\n'
                            'print("BISECTK_RESULT " + json.dumps({"err": local_cfg.ERR + tracked.ERR}))\n')
    (d / "spec.toml").write_text('name = "ignored"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    subprocess.run(["git", "-C", str(d), "add", "-A"], check=True)
    first, n1 = verdict(d, env / "l.db")
    again, n2 = verdict(d, env / "l.db")
    (d / "local_cfg.py").write_text("ERR = 1.00\n")     # another size: within the second, a same-size edit reads the old .pyc
    edited, n3 = verdict(d, env / "l.db")
    assert (first.outcome, again.outcome, edited.outcome) == (Outcome.PASS, Outcome.PASS, Outcome.FAIL)
    assert (n1, n2, n3) == (1, 0, 1) and again.cached
    ledger = Ledger(env / "l.db")
    try:
        rows = ledger.db.execute("SELECT value FROM meta WHERE key LIKE 'sources:%'").fetchall()
    finally:
        ledger.close()
    assert {p for (value,) in rows for p in json.loads(value)} == {str((d / "local_cfg.py").resolve())}


def test_runs_made_after_the_subjects_files_changed_mid_command_are_not_kept(env, monkeypatch):
    """The key is made when the command starts. A helper edited while it ran (and put back after)
    left the runs of the edited helper filed under the original key, and the next command, the
    helper as it was, was answered by them: the wrong culprit, from the ledger."""
    from bisectk.events import Note
    from bisectk.run import runner as runner_module
    monkeypatch.setattr(runner_module, "MOVED_EVERY_S", 0.0, raising=False)     # the tree compared at every run
    monkeypatch.setattr(runner_module, "MOVED_COST", 0, raising=False)
    d = project(env)
    spec = load_spec(d / "spec.toml")
    ledger = Ledger(env / "l.db")
    try:
        session = ledger.open_session("run", spec.fingerprint(), {})
        runner = Runner(spec, ledger, session=session)
        notes = []
        runner.events.subscribe(lambda e: notes.append(e.text) if isinstance(e, Note) else None)
        assert runner.verdict(spec.endpoint("good")).outcome is Outcome.PASS
        (d / "helper.py").write_text("ERR = 1.00\n")         # edited while the command runs (another size: no stale .pyc)
        assert runner.observe(spec.endpoint("good"), 1).outcome is Outcome.FAIL     # a second run, of the edit
        assert any("changed while this command ran" in n for n in notes), notes
    finally:
        ledger.close()
    (d / "helper.py").write_text("ERR = 0.0\n")              # put back
    again, n = verdict(d, env / "l.db")
    assert again.outcome is Outcome.PASS and n == 1 and not again.cached
    (d / "helper.py").write_text("ERR = 1.00\n")
    edited, n = verdict(d, env / "l.db")
    assert edited.outcome is Outcome.FAIL and n == 1


def test_a_module_the_tree_digest_leaves_out_is_in_the_key_outside_git_too(env):
    """Outside git the tree digest walks source files, skipping hidden and build directories: a
    module the subject imports from `.cfg/` or `build/lib/` was in no key, and its edit answered
    from the ledger."""
    d = env / "plain"
    for sub in (".cfg", "build/lib"):
        (d / sub).mkdir(parents=True)
    (d / "pyproject.toml").touch()
    (d / ".cfg" / "local_cfg.py").write_text("ERR = 0.0\n")
    (d / "build" / "lib" / "kern.py").write_text("ERR = 0.0\n")
    (d / "s.py").write_text('import json, sys\nsys.path[:0] = [".cfg", "build/lib"]\nimport kern, local_cfg\n'
                            'print("BISECTK_RESULT " + json.dumps({"err": local_cfg.ERR + kern.ERR}))\n')
    (d / "spec.toml").write_text('name = "left out"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    found = [verdict(d, env / "l.db")]
    found.append(verdict(d, env / "l.db"))
    for f in (d / ".cfg" / "local_cfg.py", d / "build" / "lib" / "kern.py"):
        f.write_text("ERR = 1.00\n")        # another size: no stale .pyc within the second
        found.append(verdict(d, env / "l.db"))
        f.write_text("ERR = 0\n")
    assert [(v.outcome, n) for v, n in found] == [(Outcome.PASS, 1), (Outcome.PASS, 0), (Outcome.FAIL, 1),
                                                  (Outcome.FAIL, 1)], found


def test_only_a_scratch_tree_given_for_the_runs_is_left_out_of_the_mid_command_check(env):
    """diff's scratch tree is rewritten by every run (what the command names there changes by
    design); a project of the user's whose directory happens to be named like one is not."""
    d = project(env)
    ledger = Ledger(env / "l.db")
    try:
        spec = load_spec(d / "spec.toml")
        assert not Runner(spec, ledger).memo.pinned
        scratch_tree = env / "scratch-7-1234"
        scratch_tree.mkdir()
        assert Runner(spec, ledger, cwd=scratch_tree).memo.pinned
        named = env / "scratch-mine"
        d.rename(named)
        assert not Runner(load_spec(named / "spec.toml"), ledger).memo.pinned
    finally:
        ledger.close()


def test_edits_inside_a_submodule_are_in_the_key(env):
    """A submodule of the subject's tree (CUTLASS vendored as one, a kernel library of one's own)
    with an edited file shows in `git status` as ` M sub`, whatever the edit: the tree digest
    hashed that line and the directory (no file: 'missing'), so after a second edit inside the
    submodule the first edit's PASS answered from the ledger. Its own index and changed files count."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]
    lib = env / "kernlib"
    lib.mkdir()
    (lib / "kern.py").write_text("ERR = 0.0\n")
    subprocess.run([*git, "init", "-q"], cwd=lib, check=True)
    subprocess.run([*git, "add", "-A"], cwd=lib, check=True)
    subprocess.run([*git, "commit", "-qm", "lib"], cwd=lib, check=True)
    d = env / "repo"
    d.mkdir()
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text('import json, sys\nsys.path.insert(0, "sub")\nimport kern\n'
                            'print("BISECTK_RESULT " + json.dumps({"err": kern.ERR}))\n')
    (d / "spec.toml").write_text('name = "submodule"\n[subject]\ncommand = ["python", "s.py"]\n'
                                 '[oracle]\nmetric = "err"\nmax = 0.5\n')
    subprocess.run([*git, "init", "-q"], cwd=d, check=True)
    subprocess.run([*git, "submodule", "add", "-q", str(lib), "sub"], cwd=d, check=True)
    subprocess.run([*git, "add", "-A"], cwd=d, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=d, check=True)
    kern = d / "sub" / "kern.py"
    found = [verdict(d, env / "l.db")]
    kern.write_text("ERR = 0.1\n")              # a first edit in the submodule: a new observation
    found.append(verdict(d, env / "l.db"))
    kern.write_text("ERR = 0.99\n")             # a second one (another size: no stale .pyc)
    found.append(verdict(d, env / "l.db"))
    subprocess.run([*git, "commit", "-qam", "wip"], cwd=d / "sub", check=True)   # committed in the submodule: new commits
    kern.write_text("ERR = 0.2\n")
    found.append(verdict(d, env / "l.db"))
    found.append(verdict(d, env / "l.db"))      # nothing changed since: answered from the ledger
    assert [(v.outcome, n) for v, n in found] == [(Outcome.PASS, 1), (Outcome.PASS, 1), (Outcome.FAIL, 1),
                                                  (Outcome.PASS, 1), (Outcome.PASS, 0)], found


def test_a_program_named_by_path_is_keyed_by_its_content_not_its_mtime(tmp_path):
    """`--run ./test.sh` with the script untracked, a CI job's: the next job's fresh checkout (or
    a cache restored) writes the same script again with a new mtime, and the ledger restored from
    the CI cache answered nothing (program_identity held the mtime; the content is what runs)."""
    from bisectk.run import memokey
    script = tmp_path / "test.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    before = memokey.program_identity(str(script), os.environ)
    os.utime(script, ns=(1_000_000_000, 1_000_000_000))      # the same bytes, written again
    assert memokey.program_identity(str(script), os.environ) == before
    script.write_text("#!/bin/sh\nexit 1\n")                 # another script, the same size
    assert memokey.program_identity(str(script), os.environ) != before


def test_a_tree_deeper_than_python_recurses_is_keyed_not_an_internal_error(tmp_path):
    """A spec whose cwd held a directory 1,200 levels deep (here: /tmp, while another test's deep
    tree sat in it): the memo key's walk (os.walk, recursive on Python 3.11) raised RecursionError,
    and `bisectk check` ended 'internal error' (exit 3). contents.walk keeps its own stack and
    visits what os.walk visits, in the same order."""
    import random
    from bisectk.contents import walk
    from bisectk.run.memokey import tree_digest
    rng = random.Random(7)
    for i in range(60):        # a shallow tree of files and links: walk is os.walk, pruning too
        d = tmp_path / "t" / "/".join(rng.choice("abc") for _ in range(rng.randint(0, 3)))
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text(str(i))
    (tmp_path / "t" / "ln").symlink_to(tmp_path / "t" / "a")

    def listed(walker):
        out = []
        for top, dirs, files in walker(tmp_path / "t"):
            dirs[:] = sorted(d for d in dirs if d != "c")
            out.append((os.fspath(top), list(dirs), sorted(files)))
        return out
    assert listed(walk) == listed(os.walk)
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "k.py").write_text("x = 1\n")
    fd = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(1200):
            os.mkdir("d", dir_fd=fd)
            fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(old)
        with open(os.open("m.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("y = 2\n")
    finally:
        os.close(fd)
    try:
        first = tree_digest(deep)
        assert first.startswith("files:") and tree_digest(deep) == first
        assert sum(len(files) for _, _, files in walk(deep)) == 2
    finally:       # taken down one level at a time: pytest's own removal recurses too
        while (deep / "d").exists():
            if (deep / "d" / "d").exists():
                os.rename(deep / "d" / "d", deep / "up")
                os.rmdir(deep / "d")
                os.rename(deep / "up", deep / "d")
            else:
                for name in os.listdir(deep / "d"):
                    os.unlink(deep / "d" / name)
                os.rmdir(deep / "d")
