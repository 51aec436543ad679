"""picire, the peer the ablation and diff benchmarks compare against, imported where setuptools
no longer ships `pkg_resources` (removed in setuptools 81; picire 21.8's package imports it for
its own version). Its one use there is stood in for while picire is imported, then taken out of
`sys.modules` again: a stand-in left there made pytest's `monkeypatch.syspath_prepend` (which
imports `pkg_resources.fixup_namespace_packages` once the name is loaded) fail in every later
test of the same process."""

from __future__ import annotations

import sys
import types


def import_picire():
    try:
        import picire
    except ModuleNotFoundError as missing:
        if missing.name != "pkg_resources":
            raise
        from importlib.metadata import version
        shim = types.ModuleType("pkg_resources")
        shim.get_distribution = lambda name: types.SimpleNamespace(version=version(name))
        sys.modules["pkg_resources"] = shim
        try:
            import picire
        finally:
            if sys.modules.get("pkg_resources") is shim:
                del sys.modules["pkg_resources"]
    return picire
