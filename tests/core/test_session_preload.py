"""The session imports what the result records need (scipy.stats) on a thread while runs go on,
only where the machine has cores to spare, and its closer waits for the import to end."""

from __future__ import annotations

import sys

from bisectk.engine import session as S


def _module(tmp_path, monkeypatch, name):
    (tmp_path / f"{name}.py").write_text("import time\ntime.sleep(0.3)\nLOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_preload_imports_on_a_thread_and_the_closer_waits(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "bisectk_slow_a")
    monkeypatch.setattr(S.os, "cpu_count", lambda: 8)
    closer = S.preload_in_background(("bisectk_slow_a",))
    assert "bisectk_slow_a" not in sys.modules or not hasattr(sys.modules["bisectk_slow_a"], "LOADED")
    closer()
    assert sys.modules["bisectk_slow_a"].LOADED


def test_no_preload_on_a_small_machine_or_when_loaded(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "bisectk_slow_b")
    monkeypatch.setattr(S.os, "cpu_count", lambda: 2)
    S.preload_in_background(("bisectk_slow_b",))()
    assert "bisectk_slow_b" not in sys.modules
    monkeypatch.setattr(S.os, "cpu_count", lambda: 8)
    S.preload_in_background(("json",))()        # already imported: nothing to start


def test_a_missing_module_is_not_an_error(monkeypatch):
    monkeypatch.setattr(S.os, "cpu_count", lambda: 8)
    S.preload_in_background(("bisectk_no_such_module_xyz",))()
    assert "bisectk_no_such_module_xyz" not in sys.modules


def test_an_interrupt_while_the_session_opens_leaves_no_empty_session_and_closes_the_ledger(tmp_path, monkeypatch):
    """Ctrl-C (or a CI job's SIGTERM) after the session's row was written but before the command
    held the session (removing a killed command's large scratch tree takes a while): its ledger
    was never closed (its -wal and -shm files left beside it) and its empty session stayed, the
    one a `--resume` and `bisectk log` then found."""
    import sqlite3
    import pytest
    from bisectk.engine.session import Session
    from bisectk.spec import load_spec
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "spec.toml").write_text('[subject]\ncommand = ["true"]\n[oracle]\n')
    spec = load_spec(tmp_path / "spec.toml")

    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(S.scratch, "remove_stale", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Session("bisect", spec, tmp_path / "l.db")
    assert not (tmp_path / "l.db-wal").exists()
    db = sqlite3.connect(tmp_path / "l.db")
    assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
