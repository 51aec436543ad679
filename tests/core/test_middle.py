"""The middle of issue 24, piece by piece: one wait decides a hang for every executor
(run/watchdog.py), a fixed watch that cannot be a watchdog is none, every executor is called the
same way (run/executor.py), and one function maps a result record to its exit code."""
import sys
import time
from types import SimpleNamespace

import pytest

from bisectk import exitcodes as X
from bisectk.engine.policy import RunPolicy
from bisectk.engine.session import make_executor
from bisectk.run.executor import LocalExecutor, run_command
from bisectk.run.progress import FixedWatch, ProgressWatch, Timeline
from bisectk.run.watchdog import wait_run


def test_the_wait_ends_when_the_run_does():
    steps = []

    def step(seconds):
        steps.append(seconds)
        return len(steps) == 3
    assert wait_run(step, FixedWatch(60), time.monotonic(), pid=0) is None
    assert len(steps) == 3 and all(0 < s <= 0.05 for s in steps)


def test_a_run_past_its_deadline_is_a_hang_named_by_its_watch():
    good = Timeline((("phase:launch", 0.05),), 0.1)
    watch = ProgressWatch(good, 0.3, floor_s=0.0)
    watch.feed("BISECTK_PHASE launch", 0.01)
    t0 = time.monotonic()
    hung = wait_run(lambda s: time.sleep(s) or False, watch, t0, pid=0)
    assert hung is not None and hung.at_s >= watch.deadline() and time.monotonic() - t0 < 5
    assert "hung after 'launch'" in hung.stalled and hung.stuck is None   # no snapshot asked


def test_a_step_never_waits_past_the_deadline():
    asked = []

    def step(seconds):
        asked.append((time.monotonic() - t0, seconds))
        time.sleep(seconds)
        return False
    t0 = time.monotonic()
    hung = wait_run(step, FixedWatch(0.12), t0, pid=0)
    assert hung is not None and 0.12 <= hung.at_s < 0.5
    # each step waits at most what is left to the deadline (the last one is cut short), checked
    # against when it was asked: a loaded machine's late wake-ups only change how many steps there are
    assert all(seconds <= 0.12 - at + 0.02 for at, seconds in asked), asked


@pytest.mark.parametrize("seconds", [None, float("inf"), float("nan"), 400 * 24 * 3600.0])
def test_a_fixed_watch_that_cannot_be_one_is_no_watchdog(seconds):
    assert FixedWatch(seconds).deadline() is None and FixedWatch(seconds).to_dict()["seconds"] is None


def test_the_policy_decides_the_executor_once():
    ex = make_executor(RunPolicy(jobs=3))
    assert isinstance(ex, LocalExecutor) and ex.alive() == 3
    raw = run_command(ex, [sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert raw.timed_out and raw.duration_s < 5 and raw.exit_code is None
    raw = run_command(ex, [sys.executable, "-c", "raise SystemExit(3)"], timeout=30)
    assert raw.exit_code == 3 and not raw.timed_out
    ex.close()


def _rec(command, **kw):
    base = dict(command=command, ok=True, complete=True, interrupted=False, ambiguous=False, separable=None)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("rec,code", [
    (_rec("run", verdict={"outcome": "pass"}), X.OK),
    (_rec("run", verdict={"outcome": "fail"}), X.FAILED),
    (_rec("run", verdict={"outcome": "unresolved"}), X.UNRESOLVED),
    (_rec("check", ok=False), X.USAGE),
    (_rec("triage", verdict="culprit found"), X.TRIAGE_CULPRIT),
    (_rec("triage", verdict="nothing to triage"), X.TRIAGE_NOTHING),
    (_rec("replay", first_bad=None), X.INCOMPLETE),
    (_rec("replay", first_bad={"sha": "a"}), X.OK),
    (_rec("bisect", ambiguous=True), X.INCOMPLETE),
    (_rec("bisect", separable=False), X.USAGE),
    (_rec("ablate", interrupted=True), X.INCOMPLETE),
    (_rec("diff", ok=False), X.USAGE),
    (_rec("ablate"), X.OK),
])
def test_one_function_maps_a_record_to_its_exit_code(rec, code):
    assert X.exit_code(rec) == code


def test_ctrl_c_after_the_result_turns_success_into_incomplete_only():
    assert X.exit_code(_rec("ablate"), interrupted_late=True) == X.INCOMPLETE
    assert X.exit_code(_rec("diff", ok=False), interrupted_late=True) == X.USAGE


@pytest.mark.parametrize("verdict", ["nothing to triage", "culprit found", "inconclusive"])
def test_a_triage_interrupted_late_keeps_its_verdicts_code(verdict):
    """A Ctrl-C while a triage's result was written turned "nothing to triage" (0) into 1, which
    says "culprit found" to CI: a triage's code is its verdict, whenever the interrupt came."""
    rec = _rec("triage", verdict=verdict)
    assert X.exit_code(rec, interrupted_late=True) == X.exit_code(rec) == X.TRIAGE_VERDICTS[verdict]
