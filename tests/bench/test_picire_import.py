"""bench/picire_import.py: picire imported without a stand-in `pkg_resources` left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_peer_leaves_no_stand_in_pkg_resources_for_later_tests(tmp_path):
    """ablation_bench imported picire with a stand-in `pkg_resources` and left it in sys.modules;
    every later test of that pytest process calling `monkeypatch.syspath_prepend` then failed
    (`cannot import name 'fixup_namespace_packages' from 'pkg_resources' (unknown location)`:
    the fresh-clone suite, 3 tests)."""
    code = ("import sys; sys.path.insert(0, 'bench'); import ablation_bench, diff_vs_picire; "
            "diff_vs_picire.import_picire(); import pkg_resources as p; "
            "print(getattr(p, '__file__', None) is not None and hasattr(p, 'fixup_namespace_packages'))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if "No module named 'picire'" in p.stderr:
        pytest.skip("picire not installed (the bench extra)")
    # either no pkg_resources at all (setuptools >= 81: ModuleNotFoundError) or the real one
    assert (p.returncode == 0 and p.stdout.strip() == "True") or "No module named 'pkg_resources'" in p.stderr, \
        (p.returncode, p.stdout, p.stderr[-800:])
