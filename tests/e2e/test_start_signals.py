"""Signals at the two ends of a command, tied to events in the code rather than to moments on the
clock (engine/interrupts.py: defer, leaving): a Ctrl-C while bisectk's first modules are read,
Ctrl-C pressed twice or three times while the CLI loads, and a second Ctrl-C landing on the exit
handlers after "bisectk: interrupted". Each ends in one line and its exit code, never a
traceback, with the user's repository as it was."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.test_hangup import _env, _ours_left
from tests.e2e.test_interrupts import _counting_repo

# a finder first on sys.meta_path sends this process SIGINT when each module named in argv[1] (a
# comma-separated list, one name per signal) is about to be imported, then lets the import go on
SIGNAL_AT_IMPORT = """
import os, signal, sys
when = sys.argv[1].split(",")
class SignalAtImport:
    def find_spec(self, name, path=None, target=None):
        while name in when:
            when.remove(name)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, SignalAtImport())
from bisectk.__main__ import main
sys.argv = ["bisectk", *sys.argv[2:]]
main()
"""


def _bisect_with_signals_at(tmp_path, modules: list[str]):
    from tests.fixtures.gitrepo import git
    r = _counting_repo(tmp_path, 8)
    before = (git(r, "rev-parse", "HEAD"), git(r, "status", "--porcelain"), git(r, "symbolic-ref", "HEAD"))
    p = subprocess.run([sys.executable, "-c", SIGNAL_AT_IMPORT, ",".join(modules), "bisect", "--repo", str(r),
                        "--good", "HEAD~7", "--bad", "HEAD", "--run", "sh -c '[ $(cat v) -lt 5 ]'", "--fresh"],
                       cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    after = (git(r, "rev-parse", "HEAD"), git(r, "status", "--porcelain"), git(r, "symbolic-ref", "HEAD"))
    return p, before, after


@pytest.mark.parametrize("modules", [
    ["bisectk.engine.interrupts"],        # while the module that notes signals is itself being read
    ["bisectk.engine.interrupts", "bisectk.cli"],   # pressed again while the CLI loads
    ["bisectk.cli", "typer"],
    ["bisectk.spaces.early", "bisectk.cli", "typer"],   # three times: leave at once
], ids=["during-interrupts-import", "twice", "twice-in-cli", "three-times"])
def test_a_ctrl_c_while_bisectk_starts_is_one_line_and_130(tmp_path, modules):
    p, before, after = _bisect_with_signals_at(tmp_path, modules)
    assert p.returncode == 130, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1] == "bisectk: interrupted", p.stderr[-2000:]
    assert after == before
    assert not _ours_left(tmp_path)


# an exit handler that stands for bisectk's own (spares ended, the early walk's git waited for):
# it is hit by a Ctrl-C, and finishes its work, which marks a file
SIGNAL_IN_EXIT_HANDLER = """
import atexit, os, signal, sys, time
mark = sys.argv[1]
def cleanup():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    open(mark, "w").write("cleaned up")
atexit.register(cleanup)
from bisectk.cli import entry
sys.argv = ["bisectk", "bisect", "--repo", sys.argv[2], "--good", "HEAD", "--run", "true"]
entry()
"""


def test_a_ctrl_c_during_the_exit_handlers_lets_them_finish(tmp_path):
    """The second of two Ctrl-C lands after the command's last word, on its exit handlers: it is
    noted, the handler finishes its cleanup and the command's own exit code stands, where before
    the handler was torn away half-done with "Exception ignored in atexit callback" and a
    traceback."""
    mark = tmp_path / "cleaned"
    p = subprocess.run([sys.executable, "-c", SIGNAL_IN_EXIT_HANDLER, str(mark), str(tmp_path / "no-such-repo")],
                       cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("bisectk: "), (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr[-2000:]
    assert mark.read_text() == "cleaned up"


def test_a_second_ctrl_c_during_the_exit_handlers_leaves_at_once(tmp_path):
    """An exit handler that hangs: the second Ctrl-C there ends the process at once, with the
    command's exit code and no traceback (a signal handler runs inside the hanging handler)."""
    script = SIGNAL_IN_EXIT_HANDLER.replace(
        "    time.sleep(0.2)\n", "    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(600)\n")
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cleaned"), str(tmp_path / "no-such-repo")],
                       cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-2000:])
    assert not (tmp_path / "cleaned").exists()
