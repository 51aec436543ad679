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
