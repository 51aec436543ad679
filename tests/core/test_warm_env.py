"""A warm worker honours an environment variable only when a library reads it at run time: one
read at import (PYTORCH_JIT, XLA_FLAGS, TRITON_*) was read by the worker's preload, before the
run set it. A run that changes such a variable runs cold (pool.PROCESS_LEVEL_ENV); every
variable `bisectk env --diff` offers as a factor is one of them."""

from __future__ import annotations

import json
import sys

import pytest

from bisectk.run.pool import PROCESS_LEVEL_ENV, WARM_HONOURS_ENV, WorkerPool
from bisectk.spaces.env import ENV_NAMES, ENV_PREFIXES


@pytest.fixture
def pool():
    p = WorkerPool(gpus=None, preload=(), eager=False)
    try:
        yield p
    finally:
        p.close()


@pytest.mark.parametrize("var", sorted({p + "X" for p in ENV_PREFIXES} | set(ENV_NAMES)))
def test_every_variable_env_diff_offers_as_a_factor_runs_cold_when_a_run_changes_it(pool, var):
    assert var.startswith(PROCESS_LEVEL_ENV) and var not in WARM_HONOURS_ENV
    argv = [sys.executable, "sub.py"]
    assert pool.warm_capable(argv, {}) and pool.warm_capable(argv, {"MY_FLAG": "1"})
    assert not pool.warm_capable(argv, {var: "changed-by-the-run"})


def test_pytorch_jit_read_at_torch_import_is_not_given_to_a_worker_that_imported_torch(pool):
    """The case found: PYTORCH_JIT=0 as a factor, a worker that preloaded torch, and the bad
    endpoint passing 10/10 warm runs (cold: it fails every time)."""
    assert not pool.warm_capable([sys.executable, "sub.py"], {"PYTORCH_JIT": "0"})


def test_a_variable_a_kept_module_read_at_import_is_this_runs_value_warm_as_cold(tmp_path_factory):
    """A module from outside the run's tree (an installed package, a PYTHONPATH directory) stays
    loaded in the worker; one that reads the spec's env variable at import kept the first run's
    value, and the bad endpoint (ENVLIB_MODE=broken) passed 10/10 warm runs where every cold run
    failed. Now the worker refuses a run that sets it otherwise (run/importenv.py): warm = cold."""
    import json

    from bisectk.run.executor import LocalExecutor, run_command

    lib, tree = tmp_path_factory.mktemp("lib"), tmp_path_factory.mktemp("tree")
    (lib / "envlib.py").write_text('import os\nMODE = os.environ.get("ENVLIB_MODE", "fast")\n')
    (tree / "sub.py").write_text('import envlib, json\nprint("BISECTK_RESULT " + json.dumps({"mode": envlib.MODE}))\n')
    pp = {"PYTHONPATH": str(lib)}

    def modes(executor, base):
        out = []
        for mode in ("fast", "broken", "fast", "broken"):
            raw = run_command(executor, [sys.executable, "sub.py"], cwd=tree, env={**base, "ENVLIB_MODE": mode},
                              timeout=60)
            assert raw.exit_code == 0, (raw.stdout, raw.stderr)
            out.append(json.loads(raw.result.split(" ", 1)[1])["mode"])
        return out

    notes = []
    with WorkerPool(gpus=None, preload=(), spares=0, env=pp, ready_timeout=60, on_note=notes.append) as pool:
        warm = modes(pool, {})
        assert pool.stats["cold_runs"] == 0, pool.stats   # each run warm, in a worker that had not imported envlib
    cold = modes(LocalExecutor(), pp)
    assert cold == ["fast", "broken", "fast", "broken"]
    assert warm == cold
    assert any("envlib.py, imported by an earlier run and kept loaded, names ENVLIB_MODE" in n for n in notes), notes


@pytest.mark.parametrize("io", ["utf-8:strict", "ascii"])
def test_the_runs_standard_streams_encode_as_a_fresh_interpreters_warm_as_cold(tmp_path, io):
    """A warm run's stdout was utf-8 with errors='replace' whatever the environment said: a lone
    surrogate (a file name read with surrogateescape) or a character the locale cannot encode
    printed as '?', and the run passed, where a fresh process's strict stdout raised
    UnicodeEncodeError (exit 1). The streams now take the encoding a fresh interpreter gets."""
    from bisectk.run.executor import LocalExecutor, run_command
    (tmp_path / "p.py").write_text("import sys\nprint('BISECTK_RESULT {}')\nprint(sys.argv[1] == 's' and 'caf\\udce9' or 'caf\\xe9')\n")
    env = {"PYTHONIOENCODING": io}
    argvs = ([sys.executable, "p.py", "s"], [sys.executable, "p.py", "e"])
    cold = [run_command(LocalExecutor(), a, cwd=tmp_path, env=env, timeout=60).exit_code for a in argvs]
    with WorkerPool(gpus=None, preload=(), spares=0, env=env, ready_timeout=60) as pool:
        warm = [run_command(pool, a, cwd=tmp_path, timeout=60).exit_code for a in argvs]
        assert pool.stats["cold_runs"] == 0, pool.stats
    assert cold == [1, 1 if io == "ascii" else 0]
    assert warm == cold


def test_a_locale_variable_read_at_interpreter_start_runs_cold_warm_as_cold(tmp_path):
    """LC_ALL, LC_CTYPE and LANG are read when the interpreter starts: a fresh process under
    LC_ALL=C (or LANG=C) has UTF-8 mode on (sys.flags.utf8_mode, open()'s default encoding, the
    preferred encoding), and LC_CTYPE 'C' under LC_ALL=C; a worker, started under the machine's
    C.UTF-8, kept UTF-8 mode off and its own LC_CTYPE, which no setlocale puts right (UTF-8 mode
    and the filesystem encoding are fixed at start). Such a run now goes to a fresh process, as a
    PYTHON* variable's does; a category read only when the script calls setlocale stays warm."""
    from bisectk.run.executor import LocalExecutor, run_command
    (tmp_path / "loc.py").write_text(
        "import json, locale, sys\nprint('BISECTK_RESULT ' + json.dumps({'utf8': sys.flags.utf8_mode, "
        "'ctype': locale.setlocale(locale.LC_CTYPE), 'preferred': locale.getpreferredencoding(False), "
        "'out': sys.stdout.encoding, 'fs': sys.getfilesystemencoding()}))\n")
    base = {"LANG": "C.UTF-8", "LC_ALL": "", "LC_CTYPE": ""}    # the worker's, whatever this machine's
    envs = [{}, {"LC_ALL": "C"}, {"LANG": "C"}, {"LC_CTYPE": "C"}, {"LC_NUMERIC": "C"}]

    def results(executor, extra):
        return [run_command(executor, [sys.executable, "loc.py"], cwd=tmp_path, env={**extra, **e}, timeout=60).result
                for e in envs]
    cold = results(LocalExecutor(), base)
    with WorkerPool(gpus=None, preload=(), spares=0, env=base, ready_timeout=60) as pool:
        warm = results(pool, {})
        assert pool.stats["cold_runs"] == 3 and pool.stats["warm_runs"] == 2, pool.stats
    assert json.loads(cold[0].split(" ", 1)[1])["utf8"] == 0
    assert json.loads(cold[1].split(" ", 1)[1])["utf8"] == 1
    assert warm == cold


@pytest.mark.parametrize("var", ["LC_ALL", "LC_CTYPE", "LANG"])
def test_a_locale_variable_set_otherwise_than_the_workers_runs_cold(pool, var):
    argv = [sys.executable, "sub.py"]
    assert not pool.warm_capable(argv, {var: "C" if pool.base_env.get(var) != "C" else "C.UTF-8"})
    assert pool.warm_capable(argv, {var: pool.base_env[var]} if var in pool.base_env else {})
    # read only when the script calls setlocale (it reads the run's environment): warm
    assert pool.warm_capable(argv, {"LC_NUMERIC": "C", "LC_TIME": "C", "LANGUAGE": "fr", "LC_TERMINAL": "x"})


def test_a_run_the_environment_sends_cold_is_said_once_naming_the_variable(tmp_path):
    """`--warm` with a factor that sets LC_ALL (or PYTORCH_JIT, a CUDA_* variable): every such run
    went to a fresh process in silence, and the user who asked for warm runs saw no reason for
    their cost. The pool says it once a variable, naming it; a run that sets nothing of the kind
    stays warm and says nothing."""
    from bisectk.run.executor import run_command
    (tmp_path / "s.py").write_text("print('BISECTK_RESULT {\"ok\": 1}')\n")
    base = {"LANG": "C.UTF-8", "LC_ALL": ""}
    notes = []
    with WorkerPool(gpus=None, preload=(), spares=0, env=base, ready_timeout=60, on_note=notes.append) as pool:
        run_command(pool, [sys.executable, "s.py"], cwd=tmp_path, env={"MY_FLAG": "1"}, timeout=60)
        assert notes == [] and pool.stats["warm_runs"] == 1, (notes, pool.stats)
        for env in ({"LC_ALL": "C"}, {"LC_ALL": "C"}, {"PYTORCH_JIT": "0"}):
            raw = run_command(pool, [sys.executable, "s.py"], cwd=tmp_path, env=env, timeout=60)
            assert raw.exit_code == 0
        assert pool.stats["cold_runs"] == 3, pool.stats
    said = [str(n) for n in notes]
    assert len(said) == 2, said
    assert "LC_ALL" in said[0] and "go cold" in said[0] and "PYTORCH_JIT" in said[1], said


SLOW_SPEC = """
name = "slow-warm"
[subject]
command = ["python", "sub.py", "--k", "{{k}}"]
env = {{CUDA_LAUNCH_BLOCKING = "{{clb}}"}}
[oracle]
slow_factor = 3
{metric}
[good]
k = "fast"
clb = "0"
[bad]
k = "slow"
clb = "1"
"""


def _slow_subject(tmp_path, metric: str, imports: str = ""):
    """SLOW_SPEC's subject (1 s slower where --k is 'slow'), its spec loaded; `metric`: the
    spec's slow_metric line, or none (wall time)."""
    from bisectk.spec import load_spec
    (tmp_path / "sub.py").write_text("import argparse, json, time\n" + imports +
                                     "p = argparse.ArgumentParser(); p.add_argument('--k'); a = p.parse_args()\n"
                                     "if a.k == 'slow': time.sleep(1)\n"
                                     "print('BISECTK_RESULT ' + json.dumps({'t': 1.0}))\n")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "s.toml").write_text(SLOW_SPEC.format(metric=metric))
    return load_spec(tmp_path / "s.toml")


@pytest.mark.parametrize("metric", ["", 'slow_metric = "t"'])
def test_wall_time_judged_slow_with_a_factor_that_sends_runs_cold_times_every_run_cold(tmp_path, monkeypatch, metric):
    """`ablate --warm` with a SLOW oracle on wall time and a factor that sets CUDA_LAUNCH_BLOCKING
    (read when a process starts: runs that set it otherwise than the workers have it go cold). The
    good baseline was timed warm (0.3 s), each run with the factor cold, its interpreter's start and
    imports in its time (4 s): every one SLOW, and the factor was named a failing set beside the
    real one. Now, where SLOW is judged on wall time and the command's configurations would go
    both ways, every run goes cold and is timed as the baseline was; a slow_metric the subject
    times itself compares across the two, and its runs stay warm."""
    from bisectk.run.runner import Runner
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "0")   # the workers' own value: good's runs may go warm
    spec = _slow_subject(tmp_path, metric, "import numpy\n")
    notes = []
    with WorkerPool(gpus=None, preload=("numpy",), spares=0, ready_timeout=120, on_note=notes.append) as pool:
        runner = Runner(spec, executor=pool)
        runner.calibrate([runner.observe(spec.good, i) for i in range(3)])
        flipped = runner.verdict({**spec.good, "clb": "1"}, repeat=2)
        stats = dict(pool.stats)
    assert flipped.outcome.name == "PASS", (flipped, notes)
    if metric:
        assert stats["warm_runs"] == 3 and stats["cold_runs"] == 2, stats
    else:
        assert stats["warm_runs"] == 0 and stats["cold_runs"] == 5, stats
        assert any("wall time" in str(n) and "every run goes cold" in str(n) for n in notes), notes


@pytest.mark.parametrize("metric", ["", 'slow_metric = "t"'])
def test_wall_time_judged_slow_on_a_remote_sites_warm_pool_times_every_run_cold(tmp_path, monkeypatch, metric):
    """Review j: the rule above, for runs on other hosts (--executor ray --warm): each site's warm
    pool sent the factor's runs cold and good's warm, and nothing made them alike. The driver
    asks a site whether the configurations go both ways and sends every job cold (InlineExecutor:
    a Site in this process, the protocol Ray's actors speak)."""
    from bisectk.run.remote import InlineExecutor
    from bisectk.run.runner import Runner
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "0")
    spec = _slow_subject(tmp_path, metric)
    notes = []
    ex = InlineExecutor(tmp_path, warm=True, preload=())
    ex.on_note = notes.append
    try:
        runner = Runner(spec, executor=ex)
        runner.calibrate([runner.observe(spec.good, i) for i in range(2)])
        flipped = runner.verdict({**spec.good, "clb": "1"}, repeat=1)
        stats = dict(ex.site.executor.stats)
    finally:
        ex.close()
    assert flipped.outcome.name == "PASS", (flipped, notes)
    if metric:
        assert stats["warm_runs"] == 2 and stats["cold_runs"] == 1 and not notes, (stats, notes)
    else:
        assert stats["warm_runs"] == 0 and stats["cold_runs"] == 3, stats
        assert any("every run goes cold" in n for n in notes), notes
