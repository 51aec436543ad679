"""Scratch directories registered so a SIGKILL cannot leak them (bisectk/run/scratch.py): the
next start removes those of dead owners, and only those."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from bisectk.run import scratch


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _registered(tmp_path, monkeypatch, host: str):
    """A scratch tree registered by a command on `host` whose pid names no process here."""
    monkeypatch.setattr(scratch.socket, "gethostname", lambda: host)
    tree = tmp_path / "ledgers" / "scratch-7-4242"
    tree.mkdir(parents=True)
    (tree / "kernel.cu").write_text("// a run's copy of GOOD\n")
    reg = scratch.register(tree)
    record = json.loads(reg.record.read_text())
    reg.record.write_text(json.dumps({**record, "owner": _dead_pid()}))
    monkeypatch.undo()
    return tree, reg.record


def test_a_scratch_tree_another_host_registered_is_left_to_that_host(tmp_path, monkeypatch):
    """Two cluster nodes share a home (the default ledger of `diff`, the scratch registry, both in
    ~/.cache): a command starting on one node must not take a live `diff` on the other for a dead
    one because its pid names no process here, and delete the scratch tree its runs execute in."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tree, record = _registered(tmp_path, monkeypatch, host=socket.gethostname() + "-node-a")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert scratch.remove_stale() == []
    assert (tree / "kernel.cu").exists() and record.exists()


def test_a_scratch_tree_of_a_dead_command_on_this_host_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tree, record = _registered(tmp_path, monkeypatch, host=socket.gethostname())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert scratch.remove_stale() == [tree.resolve()]
    assert not tree.exists() and not record.exists()
