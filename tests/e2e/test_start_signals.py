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
