"""Shared fixtures: a private HOME for the whole session, a toy subject spec writer and a CLI
runner that calls bisectk as users do."""
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

# The suite's signal dispositions as a terminal gives them. A runner started in the background by
# a non-interactive shell (`cmd &`: a CI script, fresh-clone-check) begins with SIGINT ignored, and
# every command a test starts would inherit that: bisectk keeps an inherited SIG_IGN, as POSIX asks
# (engine/interrupts.py), so each test's Ctrl-C would be ignored and its command run to the end.
# A test that wants a signal ignored sets it in its child.
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy.py"

# Where bisectk (and what it runs: Ray, matplotlib, git) reads or writes by default in a user's
# home; the suite points every one of them into its own temporary directory.
PRIVATE_DIRS = {"HOME": "home", "XDG_CACHE_HOME": "home/.cache", "XDG_CONFIG_HOME": "home/.config",
                "XDG_DATA_HOME": "home/.local/share", "XDG_STATE_HOME": "home/.local/state",
                "MPLCONFIGDIR": "home/.config/matplotlib"}
# A user's own Ray settings would make the Ray tests join or authenticate against their cluster.
# Python's own switches that a development or CI shell may set and a user's usually does not: with
# them, a subject's print() reached bisectk line by line and nothing wrote bytecode, which hid a
# block-buffered progress line and a __pycache__ left in the user's checkout.
# A terminal's size exported by the shell that started the suite (a CI runner's narrow COLUMNS): rich
# wrapped every table bisectk printed to it, and pytest run as a subject (--pytest) cut its summary
# line to it ('FAILED test_k.py::test_x - A...'); a test that wants a width sets COLUMNS itself.
USER_ONLY_VARS = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH",
                  "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "COLUMNS", "LINES")

try:   # hypothesis keeps its examples in ./.hypothesis by default: nothing is written into the checkout
    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    # no example's time is asserted: on a loaded 2-core CI machine one draw took 1.4 s, and the
    # health check ("input generation is slow") failed a test whose property held
    settings.register_profile("bisectk-tests", database=None, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("bisectk-tests")
except ImportError:
    set_hypothesis_home_dir = None
_HYPOTHESIS_HOME: list[str] = []


def pytest_configure(config):
    """Hypothesis also caches what it learns of the code (constants, unicode data) in its home,
    ./.hypothesis by default, as soon as the test modules are collected: a directory of its own
    from before collection to the end of the session."""
    if set_hypothesis_home_dir is not None:
        import tempfile
        _HYPOTHESIS_HOME.append(tempfile.mkdtemp(prefix="bisectk-tests-hypothesis-"))
        set_hypothesis_home_dir(_HYPOTHESIS_HOME[-1])


def pytest_collection_finish(session):
    """On a fresh home, Hypothesis builds its unicode tables and reads the constants of every
    local module into the first text it generates: seconds on a loaded machine, enough to trip
    the too_slow health check of whichever test comes first. Done here, once, before any test is
    timed, where hypothesis tests were collected."""
    if set_hypothesis_home_dir is None or not any(getattr(getattr(item, "obj", None), "is_hypothesis_test", False)
                                                  for item in session.items):
        return
    from hypothesis import find
    from hypothesis import strategies as st
    find(st.text(min_size=1), lambda text: True, settings=settings(database=None, max_examples=1))


def pytest_unconfigure(config):
    import shutil
    while _HYPOTHESIS_HOME:
        shutil.rmtree(_HYPOTHESIS_HOME.pop(), ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def private_home(tmp_path_factory):
    """The whole suite runs as on a machine that never ran anything, and writes nothing outside
    its temporary directories: HOME (no ~/.ray, no ~/.cache/bisectk ledger or worktrees, no git
    identity), the XDG directories and matplotlib's configuration all point into a fresh
    directory, for this process and every command it starts."""
    base = tmp_path_factory.mktemp("user")
    with pytest.MonkeyPatch.context() as mp:
        for var, sub in PRIVATE_DIRS.items():
            (base / sub).mkdir(parents=True, exist_ok=True)
            mp.setenv(var, str(base / sub))
        for var in USER_ONLY_VARS:
            mp.delenv(var, raising=False)
        yield base / "home"


def toy_spec(tmp_path: Path, good: dict, bad: dict, *, extra_subject: str = "", oracle: str = 'metric = "rel_err"\nmax = 1e-4',
             args: list[str] | None = None, tail: str = "") -> Path:
    """Write a spec running tests/fixtures/toy.py with `--NAME {NAME}` for every factor."""
    names = list(good)
    argv = ["python", str(TOY)] + (args or [])
    for n in names:
        argv += [f"--{n}", "{" + n + "}"]
    def table(d):
        return "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items())
    text = (f'name = "toy"\n{tail}\n[subject]\ncommand = {json.dumps(argv)}\n{extra_subject}\n'
            f'[oracle]\n{oracle}\n[good]\n{table(good)}\n[bad]\n{table(bad)}\n')
    (tmp_path / "pyproject.toml").touch()
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


def bisectk(*args, cwd=None, timeout=120, check=None, env=None) -> subprocess.CompletedProcess:
    """`bisectk ARGS` in a subprocess; `env`: variables added to this process's environment."""
    proc = subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env} if env else None)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def factor_spec(d: Path, code: str, factors: str, oracle: str, head: str = "") -> Path:
    """A spec over `code` (s.py in `d`, given NAME=value for each one-letter factor of `factors`, 0 on
    good and 1 on bad), judged by `oracle` (the [oracle] table's lines); `head`: lines above [subject]."""
    (d / "pyproject.toml").touch()
    (d / "s.py").write_text(code)
    spec = d / "spec.toml"
    spec.write_text(f'{head}[subject]\ncommand = {json.dumps(["python", "s.py", *(f"{f}={{{f}}}" for f in factors)])}\n'
                    f'[oracle]\n{oracle}'
                    + "[good]\n" + "".join(f"{f} = 0\n" for f in factors) + "[bad]\n" + "".join(f"{f} = 1\n" for f in factors))
    return spec


def err_spec(d: Path, name: str, code: str, factors: str = "abc") -> Path:
    """factor_spec judged by the `err` metric (at most 0.5), named `name`."""
    return factor_spec(d, code, factors, 'metric = "err"\nmax = 0.5\n', head=f'name = "{name}"\n')


def slow_spec(d: Path, code: str, factors: str = "abc", factor: float = 1.15, metric: str = "time_ms") -> Path:
    """factor_spec judged SLOW by `metric` above `factor` x good's."""
    return factor_spec(d, code, factors, f'slow_factor = {factor}\nslow_metric = "{metric}"\n')


@pytest.fixture
def make_spec(tmp_path):
    return lambda *a, **kw: toy_spec(tmp_path, *a, **kw)


MARK_VAR = "BISECTK_TEST_MARK"


def new_mark() -> dict[str, str]:
    """An environment variable to start a command with: every process it starts, however deep
    (and however it detaches), inherits it, so `own_processes` finds this test's processes and
    never another test's or another session's on the same machine."""
    return {MARK_VAR: uuid.uuid4().hex}


def own_processes(mark: dict[str, str]) -> list:
    """Live processes (zombies aside) whose environment carries `mark`."""
    import psutil
    (value,) = mark.values()
    found = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and p.pid != os.getpid() \
                    and p.environ().get(MARK_VAR) == value:
                found.append(p)
        except psutil.Error:
            pass
    return found


def wait_until(predicate, timeout: float = 60.0, every: float = 0.05):
    """Poll `predicate` until it returns something true (returned) or `timeout` passes (the last
    value returned): tests wait for an event, never for a guessed time."""
    import time
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
