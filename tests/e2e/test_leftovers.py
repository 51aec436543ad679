"""Scratch trees of `diff` and the exported trees of `triage` (issue 22, item 6): a SIGKILL of
bisectk leaks them, and the next start of any command removes them."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_repo  # noqa: E402

SPEC = """name = "slow"
[subject]
command = ["python", "run.py"]
[oracle]
metric = "err"
max = 0
"""


def env_for(tmp_path: Path) -> dict:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "TMPDIR": str(tmp_path / "tmp")}


def start(args, tmp_path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bisectk", *map(str, args)], cwd=tmp_path, env=env_for(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(find, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("never appeared")


def next_start(tmp_path):
    """Any command that opens a session: a quick `run` of a passing subject."""
    d = tmp_path / "quick"
    d.mkdir(exist_ok=True)
    (d / "pyproject.toml").touch()
    (d / "run.py").write_text("print('BISECTK_RESULT {\"err\": 0}')\n")
    (d / "spec.toml").write_text(SPEC)
    p = subprocess.run([sys.executable, "-m", "bisectk", "run", d / "spec.toml"], cwd=tmp_path, env=env_for(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_killed_diff_leaves_its_scratch_tree_to_the_next_start(tmp_path):
    for side, body in (("good", "print('BISECTK_RESULT {\"err\": 0}')"),
                       ("bad", "import time; time.sleep(60)\nprint('BISECTK_RESULT {\"err\": 1}')")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "run.py").write_text(body + "\n")
        (tmp_path / side / "data.txt").write_text("x" * 10000)
    (tmp_path / "spec.toml").write_text(SPEC)
    cache = tmp_path / "cache" / "bisectk"
    proc = start(["diff", tmp_path / "good", tmp_path / "bad", tmp_path / "spec.toml", "--timeout", "100"], tmp_path)
    try:
        scratch = wait_for(lambda: [p for p in cache.glob("scratch-*") if (p / "data.txt").exists()])
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert all(p.exists() for p in scratch)       # leaked by the SIGKILL
    next_start(tmp_path)
    assert not any(p.exists() for p in scratch), scratch


def test_a_killed_triage_leaves_its_exported_trees_to_the_next_start(tmp_path):
    shas = make_repo(tmp_path / "r", n=6, culprit=3, broken=())
    tmp = tmp_path / "tmp"
    proc = start(["triage", "--repo", tmp_path / "r", "--good", shas[0], "--bad", shas[-1],
                  "--run", "python kernel.py", "--timeout", "5"], tmp_path)   # each hang costs its timeout
    try:
        exported = wait_for(lambda: [p for p in tmp.glob("bisectk-triage-*") if (p / "bad").exists()], timeout=300)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert all(p.exists() for p in exported)
    next_start(tmp_path)
    assert not any(p.exists() for p in exported), exported
    assert not list((tmp_path / "r" / ".git").glob("bisectk/triage-*"))   # its hunk scratch tree too
