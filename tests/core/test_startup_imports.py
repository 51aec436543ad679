"""What a command's start loads (issue 27: the fixed cost of every command is imports). The CLI
names the factor strategies without loading the factor searches, and a bisection's engine loads
neither them nor the ablation engine: each is ~40 ms of a 2-core machine's start."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import json, sys
import bisectk.cli
bisectk.cli.command()
start = sorted(m for m in sys.modules if m.startswith("bisectk."))
import bisectk.engine.bisect, bisectk.run.process
bisect = sorted(m for m in sys.modules if m.startswith("bisectk."))
print(json.dumps({"start": start, "bisect": bisect, "psutil": "psutil" in sys.modules}))
"""

FACTOR_SEARCHES = {"bisectk.search.ablation", "bisectk.search.group", "bisectk.search.dd", "bisectk.search.ddmin",
                   "bisectk.search.ofat", "bisectk.search.sets", "bisectk.engine.ablate"}


def _loaded() -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_the_cli_and_a_bisection_load_no_factor_search():
    got = _loaded()
    assert FACTOR_SEARCHES.isdisjoint(got["start"]), FACTOR_SEARCHES & set(got["start"])
    assert FACTOR_SEARCHES.isdisjoint(got["bisect"]), FACTOR_SEARCHES & set(got["bisect"])
    assert "bisectk.search.names" in got["start"]


def test_the_lazy_search_package_still_hands_out_every_name():
    import bisectk.search as S
    from bisectk.search.ablation import STRATEGIES

    for name in S.__all__:
        assert getattr(S, name) is not None, name
    assert S.strategy_names()[0] == S.DEFAULT_STRATEGY and set(S.strategy_names()) == set(STRATEGIES)


def test_psutil_is_loaded_at_its_first_use_not_at_the_start():
    """psutil (~30-50 ms to import here) serves hangs, trees to end and snapshots: bisectk/procstat.py
    loads it when first used. A direct `import psutil` in the run path (run/starvation.py had one)
    put it back in every command's start."""
    assert _loaded()["psutil"] is False


def test_a_local_bisection_loads_no_remote_executor():
    """run/remote.py (the Ray and other-host executor, ~15 ms of self time to import on this VM)
    is loaded by a commit's archive only, not by a local bisection's engine."""
    got = _loaded()
    assert "bisectk.run.remote" not in got["bisect"] and "bisectk.run.cluster" not in got["bisect"]


def test_the_import_records_skip_what_sysconfig_names_without_loading_it():
    """run/imports.py skips the standard library and site-packages when it records a run's
    imports: the same directories sysconfig.get_paths() names, found without sysconfig's data."""
    probe = ("import json, os, sys, sysconfig\nfrom bisectk.run import imports\n"
             "loaded = '_sysconfigdata' in ' '.join(sys.modules)\n"
             "p = sysconfig.get_paths()\n"
             "want = [os.path.join(os.path.realpath(p[k]), '') for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')]\n"
             "print(json.dumps([loaded, [w for w in want if w not in imports._SKIP]]))")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [False, []]


def test_the_start_loads_no_module_for_the_timeout_bound():
    """--timeout's least value is the spec's `timeout`'s (timeouts.MIN_TIMEOUT_S); the CLI writes it
    rather than importing timeouts, which its start did not load before the bound was shared."""
    from bisectk import cli_common, timeouts
    assert cli_common.MIN_TIMEOUT_S == timeouts.MIN_TIMEOUT_S
    assert "bisectk.timeouts" not in _loaded()["start"]
