import sys

from bisectk.engine.endpoints import verify as verify_points
from bisectk.engine.oracle import Trials
from bisectk.events import Note
from bisectk.ledger import Ledger
from bisectk.outcome import FailKind, Outcome, Reason
from bisectk.run.runner import Runner, calibrated
from bisectk.spaces.factors import FactorSpace
from bisectk.spec import load_spec


def verify(runner):
    space = FactorSpace(runner.spec)
    return verify_points(Trials(runner, space), frozenset(), frozenset(space.differences()))


def count(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_memoised_across_runners_and_sessions(tmp_path, make_spec):
    counter = tmp_path / "n.txt"
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}, args=["--counter", str(counter)]))
    ledger = Ledger(tmp_path / "l.db")
    r1 = Runner(spec, ledger)
    v = r1.verdict(spec.endpoint("bad"), repeat=2)
    assert v.outcome is Outcome.FAIL and v.kind is FailKind.WRONG and len(v.runs) == 2
    assert count(counter) == 2
    ledger.close()
    r2 = Runner(spec, Ledger(tmp_path / "l.db"))
    again = r2.verdict(spec.endpoint("bad"), repeat=3)  # two from the ledger, one new
    assert count(counter) == 3 and len(again.runs) == 3 and r2.executed == 1


def test_constraints_are_never_run(tmp_path, make_spec):
    counter = tmp_path / "n.txt"
    spec = load_spec(make_spec({"mode": "ok", "err": 0.0}, {"mode": "wrong", "err": 1.0},
                               args=["--counter", str(counter)], tail='constraints = ["err < 0.5"]'))
    v = Runner(spec).verdict(spec.endpoint("bad"))
    assert v.outcome is Outcome.UNRESOLVED and v.reason is Reason.INVALID and count(counter) == 0


def test_build_step_failure_is_unresolved_build(tmp_path, make_spec):
    build = f'build = ["{sys.executable}", "-c", "import sys; sys.exit(1 if \\"{{mode}}\\" == \\"wrong\\" else 0)"]'
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}, extra_subject=build))
    assert Runner(spec).verdict(spec.endpoint("good")).outcome is Outcome.PASS
    v = Runner(spec).verdict(spec.endpoint("bad"))
    assert v.outcome is Outcome.UNRESOLVED and v.reason is Reason.BUILD


def test_calibration_and_hang_within_watchdog(tmp_path, make_spec):
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "hang"}))
    runner = Runner(spec)
    check = verify(runner)
    assert check.ok and check.bad.kind is FailKind.HANG
    assert check.timeout.source == "calibrated" and check.timeout.seconds >= 1.0
    hang_run = check.bad.runs[0]
    assert hang_run.duration_s < check.timeout.seconds + 0.5
    # a silent hang called by the good run's duration alone is given longer once: it hung again
    assert any("and again after" in n and "a hang" in n for n in check.notes), check.notes
    assert len(check.bad.runs) == 2 and all(r.kind is FailKind.HANG for r in check.bad.runs)
    assert calibrated([0.1, 0.4]).seconds == 2.0 and calibrated([0.01]).seconds == 1.0


def test_endpoint_diagnoses(tmp_path, make_spec):
    inv = verify(Runner(load_spec(make_spec({"mode": "wrong"}, {"mode": "ok"}))))
    assert not inv.ok and "inverted" in inv.problem
    both = verify(Runner(load_spec(make_spec({"mode": "ok"}, {"mode": "ok"}))))
    assert not both.ok and "does not reproduce" in both.problem
    broken = verify(Runner(load_spec(make_spec({"mode": "noresult"}, {"mode": "wrong"}))))
    assert not broken.ok and "cannot be tested" in broken.problem and "does not reproduce" not in broken.problem
    # both ends wrong (a test that is not at the good commit and passes at bad): both are said
    neither = verify(Runner(load_spec(make_spec({"mode": "noresult"}, {"mode": "ok"}))))
    assert not neither.ok and "good configuration cannot be tested" in neither.problem
    assert "and the bad configuration does not reproduce: it passed 10/10 runs" in neither.problem, neither.problem


def test_slow_uses_good_baseline(tmp_path, make_spec):
    spec = load_spec(make_spec({"mode": "ok", "sleep": 0.3}, {"mode": "slow", "sleep": 0.3}, oracle="slow_factor = 2.0"))
    check = verify(Runner(spec))
    assert check.ok and check.bad.kind is FailKind.SLOW, check.bad.describe()


def test_a_bad_endpoint_that_is_slow_not_hung_is_judged_by_its_end(tmp_path, make_spec):
    """Good takes 0.05 s, so the watchdog is its 1 s floor; bad takes 4 s and gives a wrong
    result. Called a hang at 1 s, it is run once more with longer: it ends, wrong, and the
    watchdog is set from its time (the search must not call every slow configuration a hang).
    Bad's 4 s stays past the watchdog of a good run slowed by load up to 0.8 s (5 x it): a
    1.6 s bad was not stopped when the good run took 0.36 s (watchdog 1.78 s)."""
    spec = load_spec(make_spec({"mode": "ok", "sleep": 0.05}, {"mode": "wrong", "sleep": 4.0}))
    check = verify(Runner(spec))
    assert check.ok and check.bad.kind is FailKind.WRONG, check.bad.describe()
    assert check.timeout.seconds >= 5 * 4.0 and check.timeout.source == "calibrated", check.timeout
    assert any("was no hang" in n for n in check.notes), check.notes


def test_a_good_endpoint_slower_than_the_uncalibrated_cap_is_named_and_not_rechecked(tmp_path, make_spec,
                                                                                      monkeypatch):
    """A test suite that takes longer than the watchdog's cap (120 s; 1.5 s here) before any good
    run has passed: the good endpoint is stopped there. Bad fails at once, differently. Before,
    good was re-checked `calibrate_runs` times, each waiting out the whole cap (20 minutes at
    120 s), and then called "never passed"; when bad was as slow, "good fails too (hang)" sent the
    user after a flake. Now: one run, and the cap with --timeout is the problem."""
    import bisectk.run.runner as runner_mod
    monkeypatch.setattr(runner_mod, "CALIBRATION_CAP_S", 1.5)
    counter = tmp_path / "n.txt"
    spec = load_spec(make_spec({"mode": "ok", "sleep": 2.5}, {"mode": "wrong", "sleep": 0.0}, args=["--counter", str(counter)]))
    check = verify(Runner(spec))
    assert not check.ok and check.good.kind is FailKind.HANG
    assert "did not finish within 1.5 s, the watchdog's cap" in check.problem and "--timeout" in check.problem
    assert count(counter) == 2          # good once (not re-checked), bad once
    spec = load_spec(make_spec({"mode": "ok", "sleep": 2.5}, {"mode": "wrong", "sleep": 2.5}))
    check = verify(Runner(spec))        # both slow: not "good fails too (hang)"
    assert "the watchdog's cap" in check.problem and "fails too" not in check.problem, check.problem


PLAIN_PRINTS = """import sys, time
print("importing libraries")        # print() to a pipe, no flush: block-buffered unless told otherwise
time.sleep(0.6)
print("launching kernel")
if sys.argv[1] == "hang":
    while True:
        time.sleep(0.05)
time.sleep(0.05)
print("done")
"""


def test_a_python_subject_that_prints_without_flushing_is_followed_line_by_line(tmp_path, monkeypatch):
    """Most Python subjects print() their progress and never flush. Into a pipe that is
    block-buffered: the good run's lines all arrived at its exit, and a hang was called at 6 x the
    good run "before its first progress point". Subjects are given PYTHONUNBUFFERED=1 (this
    suite's own shell may set it: it is taken away here, as on a user's machine)."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    (tmp_path / "k.py").write_text(PLAIN_PRINTS)
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.toml").write_text('name = "plain"\n[subject]\ncommand = ["python", "k.py", "{mode}"]\n'
                                     '[good]\nmode = "ok"\n[bad]\nmode = "hang"\n')
    spec = load_spec(tmp_path / "s.toml")
    runner = Runner(spec)
    check = verify(runner)
    good = runner.good_timeline
    # each line when printed: 0.6 s of sleep apart, where block-buffered they all arrived together at
    # exit; the gap, not the first line's time, which a loaded machine's start-up pushed past 0.4 s
    assert good is not None and good.points[1][1] - good.points[0][1] > 0.3, good
    assert check.ok and check.bad.kind is FailKind.HANG
    hung = check.bad.runs[0]
    assert "hung after the line 'launching kernel'" in hung.progress, hung.progress
    assert hung.duration_s < good.end + 2.0, (hung.duration_s, good.end)


def test_a_picture_of_every_thread_waiting_on_a_primitive_is_a_deadlock():
    """Such a hang is not given a second, longer run: nothing the run does alone can end it."""
    from bisectk.stuck import deadlocked as _deadlocked
    group = lambda wait: {"role": "t", "count": 1, "place": "k.py:3", "wait": wait}   # noqa: E731
    assert _deadlocked({"groups": [group("condition wait"), group("join")]})
    assert _deadlocked({"groups": [group("mbarrier try_wait"), group("named barrier")]})
    assert not _deadlocked({"groups": [group("condition wait"), group("sleep")]})
    assert not _deadlocked({"groups": [group("running (on CPU)")]}) and not _deadlocked({"groups": []})
    assert not _deadlocked(None) and not _deadlocked({"groups": [group("GPU synchronize")]})
    # a hung kernel: the host waits for it, its warps wait on barriers
    assert _deadlocked({"groups": [group("GPU synchronize"), {**group("mbarrier try_wait"), "device": True},
                                   {**group("named barrier"), "device": True}]})
    assert not _deadlocked({"groups": [group("GPU synchronize"), {**group(""), "device": True}]})


def test_a_picture_that_could_not_read_every_process_is_no_deadlock():
    """A Python subject waits (`p.wait()`) on a native child that is only slow: with the child's
    stacks refused (gdb under Yama's ptrace_scope 1, gdb missing), the picture held the parent's
    wait alone and was taken for a deadlock, so the slow run got no second, longer run and was
    called a hang; with gdb it was read sleeping, given longer, and found slow. What was not read
    may be what the run is doing: such a picture shows no deadlock."""
    from bisectk.stuck import deadlocked as _deadlocked
    waits = {"role": "MainThread", "count": 1, "place": "k.py:4 <module>", "wait": "wait"}
    assert _deadlocked({"groups": [waits]})
    assert not _deadlocked({"groups": [waits],
                            "notes": ["process 8985 (slowc): native stacks not read: gdb: ptrace: Operation not permitted."]})
    assert not _deadlocked({"groups": [waits], "notes": ["the snapshot's time ran out before every process was read"]})
    # a hung kernel's warps read on the GPU say it whatever the host's reading missed
    assert _deadlocked({"groups": [{**waits, "wait": "named barrier", "device": True}], "notes": ["process 9 (sh): gdb: x"]})


def test_files_in_the_pools_worktrees_are_scratch_not_sources():
    """A run imports the commit's own files from its worktree: pinned by the revision, never
    recorded as a source of the subject, wherever the pool keeps its worktrees (spaces/worktrees.py)."""
    from bisectk.run.scratch import ledger_scratch as _scratch
    for wt in ("/home/u/.cache/bisectk/worktrees/repo-0123456789ab/wt-0",
               "/tmp/bisectk-1000/worktrees/repo-0123456789ab-2/wt-11", "/home/u/repo/.git/bisectk-worktrees/wt-0"):
        assert _scratch(f"{wt}/pkg/mod.py", None), wt
    assert not _scratch("/home/u/repo/pkg/mod.py", None)
    assert not _scratch("/home/u/.cache/bisectk/ledger.db", None)


def test_a_run_another_command_is_making_is_waited_for_aloud(tmp_path, make_spec, monkeypatch):
    """Two commands sharing a ledger: the one that waits for the other's run (its claim) says for
    whom, rather than going silent (with the other stopped by Ctrl-Z it waited without a word)."""
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}))
    ledger = Ledger(tmp_path / "l.db")
    real = ledger.claim

    def claim(*args, on_wait=None, **kwargs):
        on_wait("pid 1 on elsewhere")      # as Ledger.claim says it when a live holder has it
        return real(*args, **kwargs)
    monkeypatch.setattr(ledger, "claim", claim)
    runner = Runner(spec, ledger)
    notes = []
    runner.events.subscribe(lambda e: notes.append(e.text) if isinstance(e, Note) else None)
    assert runner.verdict(spec.endpoint("good")).outcome is Outcome.PASS
    assert any(n.startswith("another command sharing the ledger") and n.endswith("waiting for pid 1 on elsewhere")
               for n in notes), notes


def test_a_run_under_way_when_the_search_stopped_is_neither_stored_nor_counted(tmp_path, make_spec):
    """--jobs: a search stopped (Ctrl-C, the budget) with a run made ahead still under way on
    another thread; the record is made at once. That run ended before the command exited and was
    stored after the record had counted its runs: the ledger held a run the report did not.
    A run begun after the stop (a re-check of the good endpoint) is stored as ever."""
    import threading

    from bisectk.run.pending import RunAbandoned
    from tests.conftest import wait_until
    hold = tmp_path / "hold"
    hold.touch()
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}, args=["--hold", str(hold), "--counter", str(tmp_path / "n.txt")]))
    ledger = Ledger(tmp_path / "l.db")
    runner = Runner(spec, ledger)
    ended: dict = {}

    def ahead():
        try:
            ended["run"] = runner.observe(spec.endpoint("bad"), 0)
        except RunAbandoned as exc:
            ended["abandoned"] = exc
    t = threading.Thread(target=ahead)
    t.start()
    assert wait_until(lambda: (tmp_path / "hold.held").exists(), timeout=60)
    runner.drop_under_way()          # the search stopped here
    hold.unlink()                    # the run ends now, after the stop
    t.join(60)
    assert "abandoned" in ended and runner.executed == 0, ended
    assert ledger.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    again = runner.observe(spec.endpoint("bad"), 0)
    assert again.outcome is Outcome.FAIL and runner.executed == 1
    assert ledger.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_a_run_that_could_not_start_is_not_answered_from_the_ledger_once_it_can(tmp_path):
    """A script missing its execute bit (or its #! interpreter, or a directory where a program
    should be) cannot start; `chmod +x` changes no input of the memo key, so a stored 'Permission
    denied' was the answer to every later command, the script fixed or not."""
    script = tmp_path / "t.sh"
    script.write_text('#!/bin/sh\necho \'BISECTK_RESULT {"ok": true}\'\n')
    script.chmod(0o644)
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "spec.toml").write_text('name = "x"\n[subject]\ncommand = ["./t.sh", "{n}"]\n'
                                        '[good]\nn = 1\n[bad]\nn = 2\n')
    spec = load_spec(tmp_path / "spec.toml")
    first = Runner(spec, Ledger(tmp_path / "l.db")).verdict(spec.endpoint("good"))
    assert first.reason is Reason.INFRA and "cannot start" in first.signature
    script.chmod(0o755)
    r = Runner(spec, Ledger(tmp_path / "l.db"))
    assert r.verdict(spec.endpoint("good")).outcome is Outcome.PASS and r.executed == 1
    again = Runner(spec, Ledger(tmp_path / "l.db"))
    assert again.verdict(spec.endpoint("good")).outcome is Outcome.PASS and again.executed == 0   # stored now


def test_a_build_still_running_after_a_few_seconds_is_said_with_its_limit(tmp_path, make_spec, monkeypatch):
    """A build that hangs was its whole limit (240 s) of silence: nothing was said until it timed
    out. A build still running after BUILD_NOTE_S is an event with its time and limit (the spec's
    `build_timeout`), said by the progress lines; a fast build says nothing, and no note follows
    a build's end."""
    import io
    import time
    from bisectk.events import BuildRunning
    from bisectk.report.terminal import ProgressLines
    from bisectk.run import executor
    monkeypatch.setattr(executor, "BUILD_NOTE_S", 1.0)
    monkeypatch.setattr(executor, "BUILD_NOTE_EVERY_S", 60.0)
    sleep = 'import time; time.sleep(3 if \\"{mode}\\" == \\"wrong\\" else 0)'
    build = f'build = ["{sys.executable}", "-c", "{sleep}"]\nbuild_timeout = 30'
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}, extra_subject=build))
    runner = Runner(spec)
    seen, stream = [], io.StringIO()
    runner.events.subscribe(lambda e: seen.append(e) if isinstance(e, BuildRunning) else None)
    runner.events.subscribe(ProgressLines(stream))
    assert runner.verdict(spec.endpoint("good"), label="good").outcome is Outcome.PASS
    assert seen == []                                   # a fast build: no word
    runner.verdict(spec.endpoint("bad"), label="bad")
    time.sleep(0.5)                                     # a late note would come now
    assert len(seen) == 1 and seen[0].label == "bad" and seen[0].limit == 30 and seen[0].seconds >= 1.0, seen
    lines = [line for line in stream.getvalue().splitlines() if "building" in line]
    assert len(lines) == 1 and lines[0].startswith("  ... still building for bad (run 1): ") and lines[0].endswith(
        " s so far; the build's limit is 30 s (--build-timeout, or the spec's `build_timeout`)"), stream.getvalue()


def test_the_confirmations_costs_are_medians_so_one_slowed_run_does_not_move_them(tmp_path, make_spec):
    """Trials.costs feeds the confirmation's plan (search/confirm.py): a failing run slowed once by
    the machine's load must not make failing runs look dear; a hang's watchdog, every time, does."""
    from bisectk.engine.oracle import Trial
    from bisectk.outcome import Run
    spec = load_spec(make_spec({"mode": "ok"}, {"mode": "wrong"}))
    trials = Trials(Runner(spec), FactorSpace(spec))
    def add(outcome, seconds):
        trials.trials.append(Trial("k", "", len(trials.trials), Run(outcome, duration_s=seconds), outcome, False))
    for s in (0.1, 0.12, 0.11):
        add(Outcome.PASS, s)
    for s in (0.1, 0.11, 3.0):      # one failing run slowed to 3 s
        add(Outcome.FAIL, s)
    fail, ok = trials.costs()
    assert abs(fail - 0.11) < 1e-9 and abs(ok - 0.11) < 1e-9
    for _ in range(3):              # hangs: each costs its watchdog
        add(Outcome.FAIL, 3.0)
    assert trials.costs()[0] == 3.0


def test_a_bad_endpoint_slow_to_start_where_good_prints_progress_is_judged_by_its_end(tmp_path):
    """The good run says 'launch' at once, so the watchdog follows progress; the bad one takes 3 s
    before it prints anything, then gives a wrong result. It was called a hang 'before its first
    progress point' (1.4 s) and the search hunted that hang, confidently: a run that printed
    nothing tells a hang from a slow start no better than a silent subject's, so it is given
    longer once too."""
    from tests.conftest import err_spec
    code = ("import json, sys, time\nbad = sys.argv[1] == 's=1'\nif bad:\n    time.sleep(3)\n"
            "print('BISECTK_PHASE launch', flush=True)\n"
            "print('BISECTK_RESULT ' + json.dumps({'err': 1.0 if bad else 0.0}))\n")
    check = verify(Runner(load_spec(err_spec(tmp_path, "slowstart", code, factors="s"))))
    assert check.timeout.source == "progress", check.timeout
    assert check.ok and check.bad.kind is FailKind.WRONG, check.bad.describe()
    assert any("was no hang" in n for n in check.notes), check.notes


def test_a_second_chance_that_ended_stretches_the_start_up_of_a_watchdog_that_follows_progress(tmp_path):
    """A configuration slow to start (4 s before its first line; the good run says 'launch' at
    once) is stopped before its first progress point, given longer, and ends: the watchdog is set
    from its time (Runner.stretch, as Oracle._stretched does). Under a watchdog that follows
    progress nothing was set: the start-up deadline stayed the good run's, so every later run of
    such a configuration was stopped again and cost a second run (ablate: 10 runs of one hybrid
    where 5 passed)."""
    from tests.conftest import err_spec
    code = ("import json, sys, time\nif sys.argv[1] == 's=1':\n    time.sleep(4)\n"
            "print('BISECTK_PHASE launch', flush=True)\nprint('BISECTK_RESULT ' + json.dumps({'err': 0.0}))\n")
    runner = Runner(load_spec(err_spec(tmp_path, "slowstart", code, factors="s")))
    runner.calibrate([runner.observe({"s": 0})])
    assert runner.timeout.source == "progress", runner.timeout
    first = runner.observe({"s": 1}, 0)
    assert first.timed_out and "before its first progress point" in first.signature, first.signature
    longer = runner.observe({"s": 1}, 1, longer=20.0)
    assert longer.outcome is Outcome.PASS, longer.signature
    runner.stretch(longer.duration_s)
    again = runner.observe({"s": 1}, 2)
    assert again.outcome is Outcome.PASS, again.signature


def test_a_bad_endpoint_that_passed_when_given_longer_is_re_run_as_any_passing_bad_endpoint(tmp_path):
    """A bad endpoint slow to start on its first runs (a cold cache), whose failure shows only from
    its third run on: called a hang before its first progress point, given longer, it passed, and
    the pair was unusable at once ('does not reproduce: it passed 1/1 runs; raise
    --calibrate-runs'), where a bad endpoint that passes is re-run up to --calibrate-runs runs
    (README, "Endpoints are confirmed, not trusted"). The pass given longer now counts as one of
    those runs and the others follow."""
    from tests.conftest import err_spec
    counter = tmp_path / "n.txt"
    code = ("import json, sys, time\nfrom pathlib import Path\nbad = sys.argv[1] == 's=1'\n"
            f"n = Path({str(counter)!r})\nk = int(n.read_text()) + 1 if n.exists() else 1\n"
            "if bad:\n    n.write_text(str(k))\n    time.sleep(3 if k <= 2 else 0)\n"
            "print('BISECTK_PHASE launch', flush=True)\n"
            "print('BISECTK_RESULT ' + json.dumps({'err': 1.0 if bad and k >= 3 else 0.0}))\n")
    check = verify(Runner(load_spec(err_spec(tmp_path, "slowstart", code, factors="s"))))
    assert any("was no hang" in n for n in check.notes), check.notes
    assert check.ok and check.bad.kind is FailKind.WRONG, (check.problem, check.bad.describe())
