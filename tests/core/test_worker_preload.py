"""Warm workers preload what the subject imports, read from its source (run/preload.py): a subject
that imports no heavy package gets workers that start at once; one that imports torch anywhere (a
function, a project module, a package of its own, an installed package's __init__) gets torch
preloaded; a source that cannot be read keeps the pool's default."""

from __future__ import annotations

import sys
from pathlib import Path

from bisectk.run.preload import subject_preload

HEAVY = ("torch", "cutlass")
ROOT = Path(__file__).resolve().parents[2]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_subject_that_imports_nothing_heavy_preloads_nothing(tmp_path):
    _write(tmp_path, {"k.py": "import json, time\nfrom helper import f\n", "helper.py": "import numpy\ndef f(): pass\n"})
    assert subject_preload([sys.executable, "k.py", "--x", "1"], tmp_path, HEAVY) == ()


def test_imports_are_followed_through_project_modules_functions_and_packages(tmp_path):
    _write(tmp_path, {
        "run.py": "from kern import launch\n",
        "kern/__init__.py": "from .impl import launch\n",
        "kern/impl.py": "def launch():\n    import cutlass.cute as cute\n    from .util import g\n",
        "kern/util.py": "def g():\n    from torch import nn\n",
    })
    # the candidates' order, then the submodules of them the source names (fewest dots first)
    assert subject_preload([sys.executable, "run.py"], tmp_path, HEAVY) == ("torch", "cutlass", "cutlass.cute", "torch.nn")
    # only the candidates asked about
    assert subject_preload([sys.executable, "run.py"], tmp_path, ("cutlass",)) == ("cutlass", "cutlass.cute")


def test_the_script_may_live_elsewhere_than_the_working_directory(tmp_path):
    _write(tmp_path, {"sub/s.py": "import lib\n", "sub/lib.py": "import torch\n"})
    assert subject_preload([sys.executable, str(tmp_path / "sub" / "s.py")], tmp_path / "sub", HEAVY) == ("torch",)
    assert subject_preload([sys.executable, "sub/s.py"], tmp_path, HEAVY) == ("torch",)


def test_an_installed_package_that_imports_torch_for_the_subject_counts(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _write(site, {"wrapsy/__init__.py": "import torch\n", "plainpkg/__init__.py": "import os\n"})
    monkeypatch.syspath_prepend(str(site))
    proj = tmp_path / "proj"
    _write(proj, {"a.py": "import wrapsy\n", "b.py": "import plainpkg\n"})
    assert subject_preload([sys.executable, "a.py"], proj, HEAVY) == ("torch",)
    assert subject_preload([sys.executable, "b.py"], proj, HEAVY) == ()


def test_what_cannot_be_read_keeps_the_default(tmp_path):
    _write(tmp_path, {"bad.py": "def (:\n"})
    assert subject_preload([sys.executable, "bad.py"], tmp_path, HEAVY) is None          # not Python
    assert subject_preload([sys.executable, "missing.py"], tmp_path, HEAVY) is None      # not there
    assert subject_preload(["bash", "run.sh"], tmp_path, HEAVY) is None                  # not a script
    assert subject_preload([sys.executable, "-m", "mod"], tmp_path, HEAVY) is None       # not served warm


def test_the_kernels_shipped_here_are_read_as_they_are():
    assert subject_preload([sys.executable, "kernels/cpu/attention.py"], ROOT, HEAVY) == ("torch",)
    ws = subject_preload([sys.executable, "kernels/cutedsl/ws_pipeline.py"], ROOT, HEAVY)
    assert ws[:2] == ("torch", "cutlass")
    assert {"cutlass.cute", "cutlass.pipeline", "cutlass.cute.nvgpu", "cutlass.cute.runtime"} <= set(ws[2:])
    assert subject_preload([sys.executable, "tests/fixtures/jit.py"], ROOT, HEAVY) == ()


def test_the_session_starts_warm_workers_with_the_subjects_preload(tmp_path):
    """`--warm` on a subject that imports no heavy package: its workers preload nothing (they
    were torch + cutlass, seconds of CPU per worker and per hot spare); a torch subject's get torch."""
    from bisectk.engine.policy import RunPolicy
    from bisectk.engine.session import Session
    from bisectk.spec import load_spec
    got = {}
    for name in ("pipeline-arrive", "attention-warps"):
        spec = load_spec(ROOT / "variants" / "cpu" / f"{name}.toml")
        s = Session("ablate", spec, tmp_path / f"{name}.db", policy=RunPolicy(warm=True))
        try:
            got[name] = s.executor().preload
        finally:
            s.close()
    assert got == {"pipeline-arrive": (), "attention-warps": ("torch",)}


def test_the_worker_preloads_the_submodules_and_skips_names_that_are_not_modules(tmp_path):
    """A submodule the source names is imported before the first run (not in it); a name imported
    from a module (`from pkgx.sub import value`) is not a module and is skipped without a note."""
    import json
    import os
    import subprocess
    _write(tmp_path, {"pkgx/__init__.py": "", "pkgx/sub.py": "value = 1\n", "pkgx/lazy.py": "x = 2\n"})
    r, w = os.pipe()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-m", "bisectk.run.worker", "--serve", "--reply-fd", str(w),
                             "--preload", "pkgx,pkgx.sub,pkgx.sub.value,pkgx.missing"],
                            stdin=subprocess.PIPE, pass_fds=(w,), env=env, stdout=subprocess.DEVNULL)
    os.close(w)
    try:
        with os.fdopen(r) as replies:
            ready = json.loads(replies.readline())
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert ready["ready"] is True
    info = ready["preload"]
    assert "pkgx.sub" in info and not str(info["pkgx.sub"]).startswith("unavailable")
    assert "pkgx.sub.value" not in info and "pkgx.missing" not in info
