"""A warm run gets what a fresh process's start and exit give a script (run/lifecycle.py): a shared
library rebuilt at the same path is the new one, random streams are fresh, the start method can be
set again, the tree's own module shadows the stdlib's, unflushed output, atexit handlers and
non-daemon threads end as at an interpreter's exit. Each test names the finding it pins
(/tmp/adv_warm/findings/NN.sh: a warm verdict that differed from the cold one)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisectk.run.executor import run_command
from bisectk.run.pool import WorkerPool

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def pool():
    # no spares: every run goes to the one worker (or its replacement), where leaks would show
    with WorkerPool(gpus=None, preload=("torch",), spares=0, ready_timeout=120) as p:
        yield p


def run(pool, d: Path, code: str, name: str = "t.py"):
    (d / name).write_text(code)
    raw = run_command(pool, [sys.executable, name], cwd=d, timeout=120)
    assert raw.exit_code == 0, (raw.stdout, raw.stderr)
    return raw


def result(raw) -> dict:
    line = [ln for ln in raw.stdout.splitlines() if ln.startswith("BISECTK_RESULT")][-1]
    return json.loads(line.split(" ", 1)[1])


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_library_rebuilt_at_the_same_path_is_the_new_one_in_the_next_run(pool, tmp_path):
    """02: ctypes.CDLL of libk.so, rebuilt between runs at the same path: dlopen would hand the next
    run the loaded (old) library; the worker that loaded it retires, with a note."""
    code = ("import ctypes, json, os\nlib = ctypes.CDLL(os.path.abspath('libk.so'))\n"
            "print('BISECTK_RESULT ' + json.dumps({'v': lib.v()}))\n")
    seen = []
    for v in (1, 2):
        (tmp_path / "k.c").write_text(f"int v(void) {{ return {v}; }}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", "libk.so", "k.c"], cwd=tmp_path, check=True)
        raw = run(pool, tmp_path, code)
        seen.append(result(raw)["v"])
        assert "shared library the run loaded (libk.so)" in raw.isolation, raw.isolation
    assert seen == [1, 2]


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_library_from_outside_the_runs_tree_keeps_the_worker(pool, tmp_path, tmp_path_factory):
    """A shared object from elsewhere (the driver's libcuda at each worker's first CUDA run, a kernel
    cache keyed by its source) is the same file for every run: the worker is not retired for it,
    or every GPU subject's worker would serve one run."""
    lib = tmp_path_factory.mktemp("elsewhere")
    (lib / "k.c").write_text("int v(void) { return 7; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", "libshared.so", "k.c"], cwd=lib, check=True)
    code = (f"import ctypes, json\nlib = ctypes.CDLL({str(lib / 'libshared.so')!r})\n"
            "print('BISECTK_RESULT ' + json.dumps({'v': lib.v()}))\n")
    run(pool, tmp_path, "pass\n")                  # a worker in place (the last test's retired one)
    starts = pool.stats["worker_starts"]
    for _ in range(2):
        raw = run(pool, tmp_path, code)
        assert result(raw)["v"] == 7 and "shared library" not in raw.isolation
    run(pool, tmp_path, "pass\n")
    assert pool.stats["worker_starts"] == starts


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_library_rebuilt_outside_the_runs_tree_is_the_new_one_in_the_next_run(pool, tmp_path, tmp_path_factory):
    """A build that puts its library outside the run's directories (`make OUT=../out`, $HOME/lib):
    rebuilt at the same path between two runs, dlopen would hand the next run the loaded (old) one.
    The worker that holds it refuses the next run, and another worker loads the new library."""
    lib = tmp_path_factory.mktemp("out")
    code = (f"import ctypes, json\nlib = ctypes.CDLL({str(lib / 'libk.so')!r})\n"
            "print('BISECTK_RESULT ' + json.dumps({'v': lib.v()}))\n")
    seen = []
    for v in (1, 2, 2):
        if v not in seen:
            (lib / "k.c").write_text(f"int v(void) {{ return {v}; }}\n")
            subprocess.run(["cc", "-shared", "-fPIC", "-o", "libk.so", "k.c"], cwd=lib, check=True)
        seen.append(result(run(pool, tmp_path, code))["v"])
    assert seen == [1, 2, 2]


def test_unseeded_random_numbers_differ_between_warm_runs_and_seeded_ones_repeat(pool, tmp_path):
    """06: an unseeded draw differs from run to run, as in fresh processes; a seeded one is its seed's."""
    draw = ("import json, random, sys\nimport numpy as np, torch\n"
            "if len(sys.argv) > 1:\n    random.seed(5); np.random.seed(5); torch.manual_seed(5)\n"
            "print('BISECTK_RESULT ' + json.dumps([random.random(), float(np.random.rand()), "
            "float(torch.rand(1))]))\n")
    (tmp_path / "draw.py").write_text(draw)
    draws = [tuple(result(run(pool, tmp_path, draw, "draw.py"))) for _ in range(3)]
    for i in range(3):   # each stream on its own: every one must be fresh
        assert len({d[i] for d in draws}) == 3, draws
    seeded = result(run_command(pool, [sys.executable, "draw.py", "seeded"], cwd=tmp_path, timeout=120))
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    assert seeded == [random.random(), float(np.random.rand()), float(torch.rand(1))]


def test_a_start_method_set_by_one_run_can_be_set_again_by_the_next(pool, tmp_path):
    """03: set_start_method('spawn') twice in a worker raised 'context has already been set'."""
    code = ("import json, multiprocessing as mp\nmp.set_start_method('spawn')\n"
            "print('BISECTK_RESULT ' + json.dumps({'m': mp.get_start_method()}))\n")
    for _ in range(2):
        assert result(run(pool, tmp_path, code))["m"] == "spawn"


def test_the_trees_own_module_shadows_a_stdlib_module_the_worker_imported(pool, tmp_path):
    """07: the tree's platform.py, as a fresh `python t.py` imports it; the next run, elsewhere,
    gets the stdlib's again. A tree's os.py does not shadow os (a fresh process has it already)."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "platform.py").write_text("ARCH = 'sm_90a'\n")
    (tmp_path / "tree" / "os.py").write_text("raise SystemExit('the tree os.py was imported')\n")
    code = ("import json, os, platform\n"
            "print('BISECTK_RESULT ' + json.dumps({'arch': getattr(platform, 'ARCH', None), "
            "'sep': os.sep, 'has_system': hasattr(platform, 'system')}))\n")
    assert result(run(pool, tmp_path / "tree", code)) == {"arch": "sm_90a", "sep": "/", "has_system": False}
    assert result(run(pool, tmp_path, code)) == {"arch": None, "sep": "/", "has_system": True}


def test_output_a_script_never_flushed_is_written_as_at_exit(pool, tmp_path):
    """11: a block-buffered file object on a dup of fd 1, never flushed nor closed."""
    code = ("import json, os\nout = open(os.dup(1), 'w')\n"
            "def report(err):\n    out.write('BISECTK_RESULT ' + json.dumps({'err': err}) + '\\n')\n"
            "report(0.5)\n")
    assert result(run(pool, tmp_path, code)) == {"err": 0.5}


def test_atexit_handlers_of_the_run_run_at_its_end_last_first_and_only_once(pool, tmp_path):
    """05: handlers a run registers run at its end, last registered first; unregistered ones not."""
    code = ("import atexit, json\n"
            "atexit.register(print, 'BISECTK_RESULT ' + json.dumps({'order': 'first'}))\n"
            "atexit.register(print, 'second')\n"
            "def dropped():\n    print('dropped')\n"
            "atexit.register(dropped)\natexit.unregister(dropped)\n")
    raw = run(pool, tmp_path, code)
    assert raw.stdout.splitlines() == ["second", 'BISECTK_RESULT {"order": "first"}'], raw.stdout
    again = run(pool, tmp_path, "print('BISECTK_RESULT {}')\n", "other.py")
    assert again.stdout.splitlines() == ["BISECTK_RESULT {}"] and not again.isolation


def test_a_non_daemon_thread_is_waited_for_as_at_exit_and_an_idle_executor_ends(pool, tmp_path):
    """04: the run's work done in a non-daemon thread is reported, and the worker is kept; a
    ThreadPoolExecutor left without shutdown() ends as at exit, not at the watchdog."""
    discards = pool.stats["worker_discards"]
    code = ("import json, threading, time\n"
            "def main():\n    time.sleep(0.3)\n    print('BISECTK_RESULT ' + json.dumps({'done': True}))\n"
            "threading.Thread(target=main).start()\n")
    raw = run(pool, tmp_path, code)
    assert result(raw) == {"done": True} and not raw.isolation, (raw.stdout, raw.isolation)
    t0 = time.monotonic()
    raw = run(pool, tmp_path, "from concurrent.futures import ThreadPoolExecutor\n"
                              "ex = ThreadPoolExecutor(2)\nprint('BISECTK_RESULT', ex.submit(sum, [1, 2]).result())\n")
    assert raw.stdout.strip() == "BISECTK_RESULT 3" and time.monotonic() - t0 < 30
    assert pool.stats["worker_discards"] == discards


def test_recursion_that_passes_cold_passes_warm(pool, tmp_path):
    """A warm run's script starts frames deeper than `python script.py` (the worker's and runpy's):
    the recursion limit is raised by as much for the run, and put back after it."""
    code = ("import sys\nsys.setrecursionlimit(1000)\n"
            "def down(n):\n    return 0 if n == 0 else 1 + down(n - 1)\n"
            "print('BISECTK_RESULT {\"depth\": %d}' % down(990))\n")
    (tmp_path / "deep.py").write_text(code)
    cold = subprocess.run([sys.executable, "deep.py"], cwd=tmp_path, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    assert result(run(pool, tmp_path, code, "deep.py")) == {"depth": 990}
    probe = "import sys\nprint('BISECTK_RESULT {\"limit\": %d}' % sys.getrecursionlimit())\n"
    seen = [result(run(pool, tmp_path, probe, "limit.py"))["limit"] for _ in range(3)]
    assert seen[0] == seen[1] == seen[2], seen    # put back after each run: never raised twice


def test_a_child_the_script_forks_exits_at_the_scripts_end_and_never_serves_as_a_worker(pool, tmp_path):
    """`pid = os.fork()` with the child's branch running off the end of the script (or calling
    sys.exit): in a fresh process the child exits there. In a worker it came back into the worker's
    loop, answered the pool in the parent's stead and took the next request: the bad endpoint
    (exit status 1 of the child, err 1) 'passed' and two runs of 0.00 s had no result line."""
    code = ("import atexit, json, os, sys\nPARENT = os.getpid()\n"
            "atexit.register(lambda: print('atexit', os.getpid() == PARENT))\npid = os.fork()\nif pid == 0:\n    print('child', flush=True)\n"
            "    if sys.argv[1] == '3':\n        sys.exit(3)\nelse:\n    _, st = os.waitpid(pid, 0)\n"
            "    print('BISECTK_RESULT ' + json.dumps({'child': os.waitstatus_to_exitcode(st)}))\n")
    (tmp_path / "f.py").write_text(code)

    def seen(executor):
        out = []
        for arg in ("0", "3", "0"):
            raw = run_command(executor, [sys.executable, "f.py", arg], cwd=tmp_path, timeout=60)
            out.append((raw.exit_code, raw.result, sorted(raw.stdout.splitlines())))
        return out

    from bisectk.run.executor import LocalExecutor
    cold = seen(LocalExecutor())
    before = dict(pool.stats)
    warm = seen(pool)
    assert cold[1][:2] == (0, 'BISECTK_RESULT {"child": 3}') and "atexit False" in cold[1][2], cold
    assert warm == cold
    assert pool.stats["cold_runs"] == before["cold_runs"]


@pytest.mark.parametrize("adds", ["sys.addaudithook(hook)", "os.register_at_fork(after_in_child=lambda: None)"])
def test_a_hook_nothing_removes_retires_the_worker_so_the_next_run_is_as_cold(tmp_path, adds):
    """An audit hook the bad configuration adds (refusing to open `*.secret`) outlived its run in
    the worker: every later good run failed to open its file ('the good configuration fails
    intermittently', 9/10) where cold found the culprit. Nothing removes such a hook, so the worker
    retires (a fork handler alike)."""
    from bisectk.run.executor import LocalExecutor
    (tmp_path / "a.py").write_text(
        "import json, os, sys\ndef hook(event, args):\n    if event == 'open' and str(args[0]).endswith('.secret'):\n"
        "        raise PermissionError('refused')\n"
        f"if sys.argv[1] == '1':\n    {adds}\n"
        "try:\n    open('k.secret', 'w').close()\n    err = 0\nexcept PermissionError:\n    err = 1\n"
        "print('BISECTK_RESULT ' + json.dumps({'err': err}))\n")

    def errs(executor):
        return [result(run_command(executor, [sys.executable, "a.py", k], cwd=tmp_path, timeout=120))["err"]
                for k in ("0", "1", "0")]

    cold = errs(LocalExecutor())
    with WorkerPool(gpus=None, preload=(), spares=0, ready_timeout=120) as p:
        warm = errs(p)
        assert p.stats["cold_runs"] == 0 and p.stats["worker_discards"] == 1, p.stats
    assert cold == ([0, 1, 0] if "audit" in adds else [0, 0, 0])
    assert warm == cold


def test_a_run_that_sets_the_interop_thread_count_to_its_value_leaves_the_next_one_free_to_set_it(pool, tmp_path):
    """torch.set_num_interop_threads may be called once a process; a script that sets it to the
    count it already had changed nothing a probe could see, and the next warm run's own call raised
    'cannot set number of interop threads' where a fresh process sets it. The call retires the worker."""
    from bisectk.run.executor import LocalExecutor
    (tmp_path / "t.py").write_text(
        "import json, sys, torch\ntorch.set_num_interop_threads(int(sys.argv[1]) or torch.get_num_interop_threads())\n"
        "print('BISECTK_RESULT ' + json.dumps({'interop': torch.get_num_interop_threads()}))\n")

    def seen(executor):
        out = []
        for arg in ("0", "1"):
            raw = run_command(executor, [sys.executable, "t.py", arg], cwd=tmp_path, timeout=120)
            out.append((raw.exit_code, raw.result))
        return out

    cold = seen(LocalExecutor())
    before = dict(pool.stats)
    warm = seen(pool)
    assert cold == [(0, cold[0][1]), (0, 'BISECTK_RESULT {"interop": 1}')], cold
    assert warm == cold
    assert pool.stats["cold_runs"] == before["cold_runs"]


def test_an_operator_a_run_defines_with_torch_library_can_be_defined_again_by_the_next(pool, tmp_path):
    """torch.library.define keeps its Library for the process: the next warm run's same definition
    (another configuration of the same kernel) raised 'should only be registered with a single call
    to def()' where a fresh process defines it. The run's own definitions go with the run."""
    from bisectk.run.executor import LocalExecutor
    (tmp_path / "t.py").write_text(
        "import json, sys, torch\ntorch.library.define('bisectk_t::add', '(Tensor x) -> Tensor')\n"
        "@torch.library.impl('bisectk_t::add', 'cpu')\ndef add(x):\n    return x + int(sys.argv[1])\n"
        "print('BISECTK_RESULT ' + json.dumps({'y': torch.ops.bisectk_t.add(torch.zeros(1)).item()}))\n")

    def seen(executor):
        return [(raw.exit_code, raw.result) for raw in
                (run_command(executor, [sys.executable, "t.py", arg], cwd=tmp_path, timeout=120) for arg in ("1", "2"))]

    cold = seen(LocalExecutor())
    before = dict(pool.stats)
    warm = seen(pool)
    assert cold == [(0, 'BISECTK_RESULT {"y": 1.0}'), (0, 'BISECTK_RESULT {"y": 2.0}')], cold
    assert warm == cold
    assert pool.stats["cold_runs"] == before["cold_runs"]
