"""Endpoint confirmation: before any search, good must pass and bad must fail -- for every command.

Abstractions
------------
verify         -- the procedure, through the space's Trials (engine/oracle.py; its answer is an
                  EndpointCheck, a record: see records.py, whose `target` the judging Oracle is
                  then made with):
                  1. good, `repeat` runs (at least 3 under a SLOW rule: the median leaves out the
                     command's cold first run, or a metric's one low draw); the watchdog and the SLOW baseline
                     are calibrated from its passing runs; under a SLOW oracle, where every one of them failed (a first
                     run's crash), good is run again until it passes, up to `calibrate_runs` runs
                     (1b): without its time a bad run passes unjudged;
                  1c. under a SLOW rule, where good's runs all came from the ledger (another
                     sitting: a resume, or `check` before `ablate`), BASELINE_RUNS fresh good runs:
                     their median moved well past the stored runs' (the machine got faster or
                     slower) makes the pair unusable with --fresh as the fix, since the stored runs,
                     bad's and the hybrids' too, were timed on the old machine (engine/slowends.py);
                  With `meanwhile` able to (--jobs above one, no --flaky: engine/ablate.py
                  FirstRuns; for a bisection, BadBeside), the bad endpoint's first run and the
                  search's likely first runs begin beside good's instead of after it; their
                  watchdog is the one calibrated when good has passed (run/pending.py), and if
                  good did not pass, the runs made ahead are ended unjudged (the bad endpoint's
                  goes on, as step 2 needs it);
                  2. bad, `repeat` runs; a bad endpoint that passed every time is re-run, up to
                     `calibrate_runs` runs in all (twice that with --flaky), until it fails: one
                     lucky pass of an intermittent failure must not abort the search;
                  2c. under a SLOW rule, a bad endpoint that failed otherwise (a crash) in every
                     run so far is run up to BASELINE_RUNS runs for a SLOW one to show; where
                     bad's runs show SLOW, SLOW alone is the failure hunted, and bad's other
                     failures are said as a possible second bug (engine/slowends.py: target_of);
                  3. if the failure is intermittent (bad passed at least once) or --flaky, and the
                     search needs the rate up front (`measure`: an ablation's flakiness rule), bad
                     is run up to `calibrate_runs` runs to measure its failure rate; a bisection's
                     posterior learns the rate as it goes, from these runs and every later one;
                  3b. a SLOW failure, on a reported metric or wall time (no --flaky): does one run tell good from
                     bad? Both run to SEPARATION_EARLY runs (engine/slowends.py), and on to `calibrate_runs` unless
                     those settle it (search/separation.py: the threshold's margin to either side's
                     spread, Mann-Whitney). Where not, the pair is unusable with a problem that
                     gives both sides' numbers and what to do (a slow_factor between them, a
                     steadier metric): a regression of the order of the noise otherwise made
                     good "fail intermittently", ~115 runs and a race's wording;
                  4. a good endpoint that failed differently from the target is re-checked the
                     same way (up to `calibrate_runs` runs): it is unusable if it ever shows the
                     target failure, or never passes; a different failure seen once is reported,
                     not fatal. Under --flaky (the two-rate model: a race that got more
                     frequent) a good endpoint that shows the target failure sometimes is usable:
                     its runs measure p_old. For an ablation (`measure`) it is measured over
                     `calibrate_runs` runs like bad; the search decides whether the two rates
                     can be told apart. A good endpoint that already showed the target failure, or a bad
                     one that never failed, or a good one stopped by the uncalibrated watchdog cap,
                     settles the pair as unusable without re-checks (a hanging good side -- swapped
                     endpoints, or a test slower than the cap -- must not wait out the cap
                     `calibrate_runs` times); the cap is then named as the problem, with --timeout.
                     A good endpoint whose every run outlasted a fixed watchdog (the spec's
                     `timeout`, --timeout) has that watchdog named as the problem the same way.
                  5. unusable endpoints whose every run shows the same environment cause (a missing
                     module, no GPU, a driver/runtime mismatch, out of memory at start:
                     engine/environment.py) get that cause as their problem, with its facts:
                     the differences were never tested.

recheck_good   -- 6. after a search, when its answer says the good side may fail too (see below):
                  the good endpoint run again, as often as the search's flake rule asks of a
                  configuration it clears; one that shows the target failure makes the endpoints
                  unusable, with its rate and what to do.

side_by_side   -- whether runs may begin beside the good endpoint's (--jobs above one, no --flaky).
BadBeside      -- verify's `meanwhile` for a search that makes no runs ahead (bisect): only the
                  bad endpoint's first run begins beside the good endpoint's.

unusable_record -- the record a command returns when its endpoints proved unusable, before its
                  search or after it (recheck_good): not complete, the runs made so far.

announce_watchdog -- a note before the good endpoint's first run when it runs under the
                  uncalibrated watchdog cap (120 s unless --timeout or the spec says otherwise),
                  so a long silent wait is explained before it starts.

Why good is re-checked after a search (6). The one-sided flake rule (search/flaky.py) takes any
failure as proof that the configuration holds the culprit: it rests on a good side that never
fails, which step 1 checked with `repeat` runs (one, by default). A good side that fails now and
then breaks it without a trace at the endpoints: hybrids are run many times each (r passes in a
row to be cleared), so each one's rare failure turns up, and every difference flipped alone on good
"fails", while bad without it fails too. The search then finds one-difference failing sets, one
after another, and its confirmation never holds. The caller (engine/ablate.py) says when the
answer looks like that; only then is good run again, so a search without a contradiction costs no
extra runs. The re-check holds good to the search's own rule: r passes in a row.

As mozregression and Pinpoint do, endpoints are re-tested rather than trusted: a "broken"
configuration that does not fail, or a "working" one that does, makes every later answer wrong.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bisectk.engine import environment
from bisectk.engine.interrupts import live, waited
from bisectk.engine.oracle import Trials
from bisectk.events import Note, PhaseStarted
from bisectk.names import counted
from bisectk.outcome import FailKind, Outcome, Reason, Run, Target, Verdict
from bisectk.run.classify import SKIP_SIGNATURE
from bisectk.run.runner import Runner
from bisectk.engine import slowends
from bisectk.spaces.promisor import EVERY_COMMIT


if TYPE_CHECKING:   # loaded after the endpoints ran: the first run does not wait for it (issue 27)
    from bisectk.engine.records import EndpointCheck, Rate


def announce_watchdog(runner: Runner, workload) -> None:
    """Say so before a run that may wait out the uncalibrated watchdog (the good endpoint's first
    run has no baseline yet): a hang there is silent for the whole cap."""
    if runner.timeout is not None or runner.has(workload):
        return
    cap = runner.policy()
    sets = "--timeout SECONDS sets it" if runner.spec.literal else "--timeout SECONDS or the spec's `timeout` sets it"
    runner.events.emit(Note(f"watchdog: {cap.seconds:g} s until the good endpoint has passed once (then "
                            f"calibrated from it); {sets}",
                            {"watchdog_s": cap.seconds, "source": cap.source}))


def _target_fails(runs: list[Run], target: Target | None) -> int:
    return sum(1 for r in runs if target is not None and target.matches(r))


def _judged(runs: list[Run]) -> int:
    return sum(1 for r in runs if r.outcome is not Outcome.UNRESOLVED)


def verify(trials: Trials, good_point: Any, bad_point: Any, *, repeat: int = 1, measure: bool = True,
           meanwhile=None) -> EndpointCheck:
    """The procedure of the module docstring; `trials.policy` gives the re-run cap, --flaky and
    --same-failure. `meanwhile` (engine/ablate.py FirstRuns), when the bad endpoint's first run
    must execute, starts the search's first runs: with the bad endpoint's beside the good
    endpoint's (`early`, then `then` once good has passed, or `drop` when it did not: see
    _beside_good), or else, called, beside the bad endpoint's once good has passed."""
    runner, policy = trials.runner, trials.policy
    cap = max(policy.calibrate_runs, repeat)
    good_repeat = max(repeat, slowends.baseline_runs(runner))
    runner.events.emit(PhaseStarted("endpoints", f"verifying good and bad, {repeat} run(s) each" if good_repeat == repeat
                                    else f"verifying good ({good_repeat} runs: the SLOW baseline is their "
                                         f"median) and bad ({repeat} run(s))"))
    announce_watchdog(runner, trials.space.workload(good_point))
    bad_to_run = not runner.has(trials.space.workload(bad_point))
    beside = _beside_good(trials, good_point, bad_point, meanwhile) if bad_to_run else None
    try:
        good_runs = [trials.observe(good_point) for _ in range(good_repeat)]
    except BaseException:
        runner.settle(False)        # a Ctrl-C: the runs made ahead end with it
        raise
    watchdog = runner.calibrate(good_runs)
    moved = slowends.remeasured(trials, good_point, good_runs)    # 1c. a baseline from another sitting
    if moved is not None or len(good_runs) > good_repeat:
        watchdog = runner.calibrate(good_runs)
    if beside is None and _unmeasured(runner, good_runs):     # 1b. SLOW needs good's time
        runner.events.emit(PhaseStarted("recheck", f"the good endpoint failed, and SLOW is judged against its "
                                                   f"time: re-running it until it passes, up to {counted(cap, 'run')}"))
        while len(good_runs) < cap and not any(r.outcome is Outcome.PASS for r in good_runs):
            good_runs.append(trials.observe(good_point))
        watchdog = runner.calibrate(good_runs)
    good_passed = all(r.outcome is Outcome.PASS for r in good_runs)
    if runner.timeout is None and bad_to_run and (beside is None or not beside.done()):
        runner.events.emit(Note(f"watchdog: the good endpoint never passed, so it stays at {watchdog.seconds:g} s "
                                "for the bad endpoint; --timeout SECONDS sets it"))
    if beside is not None:
        runner.settle(good_passed)
        if good_passed:
            meanwhile.then()
        else:                       # nothing to run ahead for: the runs made ahead end unjudged
            meanwhile.drop()
            runner.release()
    elif meanwhile is not None and bad_to_run and good_passed:
        meanwhile()
    reruns = 2 * cap if policy.flaky else cap
    bad_runs = _reproduced(trials, bad_point, repeat, reruns, first=beside)
    bad_runs = slowends.slow_seen(trials, bad_point, bad_runs)     # 2c. SLOW hidden behind a crash?
    target = slowends.target_of(runner, bad_runs, policy.same_failure)
    notes: list[str] = []
    if _silent_hang(runner, bad_runs, target):     # 2b. slow, or hung? given longer once
        bad_runs, said = _hang_or_slow(trials, bad_point, bad_runs)
        # a pass given longer is a run of a bad endpoint that passed: re-run as any such is
        bad_runs = _reproduced(trials, bad_point, repeat, reruns, done=bad_runs)
        target = slowends.target_of(runner, bad_runs, policy.same_failure)
        watchdog = runner.policy()
        notes.append(said)
    passed = any(r.outcome is Outcome.PASS for r in bad_runs)
    is_flaky = bool(target) and (passed if policy.flaky is None else policy.flaky)
    if measure and target is not None and is_flaky and len(bad_runs) < cap:
        runner.events.emit(PhaseStarted("flakiness", f"measuring the bad endpoint over {counted(cap, 'run')}"))
        while len(bad_runs) < cap:
            bad_runs.append(trials.observe(bad_point))
        target = slowends.target_of(runner, bad_runs, policy.same_failure)
    separation = None
    if policy.flaky is not True and moved is None and slowends.hunted(runner, target):     # 3b. does one run tell them apart?
        separation = slowends.separate_sides(trials, good_point, bad_point, good_runs, bad_runs, cap)
        target = slowends.target_of(runner, bad_runs, policy.same_failure)
    notes += slowends.besides_slow(runner, bad_runs, target)
    two_rate = policy.flaky is True and target is not None
    if two_rate and measure and len(good_runs) < cap:
        runner.events.emit(PhaseStarted("flakiness", f"measuring the good endpoint over {counted(cap, 'run')} (--flaky: "
                                                     "it may fail too, less often)"))
        while len(good_runs) < cap:
            good_runs.append(trials.observe(good_point))
    # unusable already: good showed the target failure, or ran into the uncalibrated cap (each
    # re-check would wait out the whole cap again: 20 minutes at 10 x 120 s for a test that is slow)
    decided = (target is None or (_target_fails(good_runs, target) > 0 and not two_rate)
               or _capped(runner, good_runs) is not None)
    if any(r.outcome is Outcome.FAIL for r in good_runs) and not decided and len(good_runs) < cap:
        runner.events.emit(PhaseStarted("recheck", f"the good endpoint failed: re-checking it over {counted(cap, 'run')}"))
        while len(good_runs) < cap:
            good_runs.append(trials.observe(good_point))
        notes.append(f"the good endpoint failed {sum(r.outcome is Outcome.FAIL for r in good_runs)}"
                     f"/{len(good_runs)} runs and was re-checked")
    good, bad = _folded(trials, good_point, good_runs), slowends.as_hunted(_folded(trials, bad_point, bad_runs), target)
    from bisectk.engine.records import EndpointCheck, Rate
    bad_rate = Rate(_target_fails(bad_runs, target), _judged(bad_runs))
    good_rate = Rate(_target_fails(good_runs, target), _judged(good_runs))
    problem = diagnose(good, bad, target, good_rate, bad_rate, two_rate,
                       fixes=_fixes(getattr(trials.space, "kind", ""), bool(trials.runner.spec.thresholds)))
    problem = _asked_to_skip(trials, good_point, bad_point, good, bad) or _commit_untestable(
        trials, good_point, bad_point, good, bad, problem)
    env = (environment.diagnose(good_runs, bad_runs, untracked=getattr(trials.space, "untracked", None),
                                outside=getattr(trials.space, "outside", None),
                                uncloned=getattr(trials.space, "uncloned", None),
                                sparse=getattr(trials.space, "sparse", None),
                                beside_spec=getattr(trials.space, "beside_spec", None),
                                missing=getattr(trials.space, "missing", None))
           if problem is not None else None)
    details: tuple[str, ...] = ()
    capped = _capped(runner, good_runs) or _outlasted(runner, good_runs)
    if problem is not None and env is None and capped:
        problem = capped
    elif problem is not None and bad.n_pass and runner.judge.slow_factor and runner.judge.baseline is None:
        problem = (f"the good configuration never passed ({good.describe()}), so the SLOW rule has no baseline "
                   f"and the bad configuration's runs could not be judged slow (they passed unjudged); make good "
                   f"pass first")
    elif problem is not None and bad.outcome is Outcome.PASS and target is None:
        problem += slowends.measured(runner, good_runs, bad_runs)
    elif separation is not None and not separation.clear:
        problem = slowends.inseparable(runner, separation, good_runs, bad_runs)
    if moved is not None:
        problem = moved
    if separation is not None and separation.clear and separation.p_shift is not None:
        notes.append(f"SLOW: good and bad told apart run by run over {separation.n[0]} runs each (the threshold "
                     f"{separation.margin:.1f} standard deviations of the run-to-run spread from either side)")
    if env is not None:   # 5. the machine, not the differences: named, with what fixes it
        problem, details = env.line, env.details
    elif problem is not None:   # a subject that refused its arguments: the command it was given
        details = tuple(f"{side} ran: {runner.spec.command_text(trials.space.workload(point).config)}"
                        for side, point, v in (("good", good_point, good), ("bad", bad_point, bad))
                        if v.reason is Reason.USAGE)
    return EndpointCheck(good, bad, watchdog, problem, target, is_flaky and problem is None, bad_rate, good_rate,
                         tuple(notes), details, env.to_dict() if env else None, runner.judge.baseline)


def recheck_good(trials: Trials, good_point: Any, bad_point: Any, check: EndpointCheck, runs: int,
                 why: str, one_sided: bool = True) -> EndpointCheck:
    """6. of the module docstring: run the good endpoint `runs` more times (`why`: what in the
    search's answer asked for it, in words); a failure ends the runs once the rate rests on
    `calibrate_runs` of them. It showed the target failure: the check returned has a problem
    saying so (the rate with its interval, what the search's answer was, and what to do; bad is
    measured over `calibrate_runs` runs first if it had fewer, for the two rates to be compared);
    else a note that it passed them all. `one_sided`: the search ran under the one-sided flake rule
    (else good itself was seen to fail, whatever the rule: search.result.GOOD_FAILED)."""
    from bisectk.engine.records import Rate
    from bisectk.search.rates import endpoint_runs_to_separate
    trials.runner.events.emit(PhaseStarted("recheck", f"{why}: re-checking the good endpoint over {runs} more runs"))
    good_runs, before = list(check.good.runs), check.good_rate.runs
    cap = trials.policy.calibrate_runs
    for _ in range(runs):   # r passes, as the rule asks; a failure ends it once the rate has `cap` runs
        good_runs.append(trials.observe(good_point))
        if _target_fails(good_runs, check.target) and _judged(good_runs) >= cap:
            break
    good = _folded(trials, good_point, good_runs)
    rate = Rate(_target_fails(good_runs, check.target), _judged(good_runs))
    if not rate.fails:
        return replace(check, good=good, good_rate=rate, notes=(
            *check.notes, f"{why}; the good endpoint was re-checked and passed {runs} more runs in a row, as many "
                          "as the search asks of a configuration it clears"))
    bad_runs = list(check.bad.runs)
    if len(bad_runs) < cap:     # a deterministic start ran bad once or twice: its rate is to be compared
        trials.runner.events.emit(PhaseStarted("flakiness", f"measuring the bad endpoint over {counted(cap, 'run')}"))
        while len(bad_runs) < cap:
            bad_runs.append(trials.observe(bad_point))
    bad = Rate(_target_fails(bad_runs, check.target), _judged(bad_runs))
    more = endpoint_runs_to_separate(rate.fails, rate.runs, bad.fails, bad.runs)
    if more is None:
        todo = ("in these runs good failed as often as bad: the failure may not depend on these differences at "
                "all; make good pass reliably first, or measure both over more runs (`bisectk check SPEC --repeat 40`)")
    else:
        each = max(trials.policy.calibrate_runs, min(rate.runs, bad.runs) + more)
        todo = ("if good fails less often than bad (a race that got more frequent), --flaky weighs both rates "
                f"(the two-rate model): about {each} runs of each endpoint tell these two apart, "
                f"`--flaky --calibrate-runs {each}`; else make good pass reliably first")
    problem = (f"the good configuration fails intermittently: the same failure ({check.target.describe()}) in "
               f"{rate.describe()}, though its first {'run' if before == 1 else f'{before} runs'} passed")
    first = (f"the search took every failure as proof (the one-sided flake rule: a good side never fails); {why}, "
             f"which is what a good side that fails sometimes produces: its answer is set aside" if one_sided else
             f"{why}: its answer is set aside; a run may leave state that the next one sees (a file or directory "
             f"it creates in the tree, a cache, a lock), or good fails sometimes")
    details = (first,
               f"the bad endpoint fails in {bad.describe()}",
               *slowends.spread(trials.runner, good_runs, check.target),
               todo)
    return replace(check, good=good, good_rate=rate, bad=_folded(trials, bad_point, bad_runs), bad_rate=bad,
                   problem=problem, details=details, flaky=False)


def _unmeasured(runner: Runner, good_runs: list[Run]) -> bool:
    """A SLOW oracle has no baseline because every good run failed (a first run's crash, a JIT
    that failed once): the bad endpoint's runs would pass unjudged, and its "passes" beside good's
    failure were read as swapped endpoints. A good run stopped by the cap or left unresolved is
    not run again here (120 s each; a missing metric stays missing)."""
    return (bool(runner.judge.slow_factor) and runner.judge.baseline is None and bool(good_runs)
            and all(r.outcome is Outcome.FAIL for r in good_runs) and _capped(runner, good_runs) is None)


def _capped(runner: Runner, good_runs: list[Run]) -> str | None:
    """The good endpoint was stopped by the uncalibrated watchdog cap (no --timeout, no spec
    `timeout`): a test that takes longer than the cap looks like a hang there, and "good fails
    too (hang)" would send the user after a flake. Says so, with what to do; None otherwise."""
    if runner.timeout is not None or not any(r.timed_out for r in good_runs):
        return None
    cap = runner.policy().seconds
    return (f"the good endpoint did not finish within {cap:g} s, the watchdog's cap before any good run has passed "
            f"(nothing to calibrate from yet): if one run takes longer than that, give --timeout SECONDS (or the "
            f"spec's `timeout`) above its time; if it really hangs, check that --good and --bad are not swapped")


def _outlasted(runner: Runner, good_runs: list[Run]) -> str | None:
    """Every good run outlasted a fixed watchdog (the spec's `timeout`, or --timeout) and none
    passed: a `timeout` below the test's own time makes every run a hang, good's too, and "good
    fails too (hang) ... the good side is flaky" would send the user after a flake. Says so, with
    what to do; None otherwise (a good side that passed once, or hung under a calibrated watchdog)."""
    fixed = runner.timeout
    if fixed is None or fixed.source not in ("spec", "option") or not good_runs \
            or not all(r.timed_out for r in good_runs):
        return None
    where = "the spec's `timeout`" if fixed.source == "spec" else "--timeout"
    adhoc = runner.spec.literal     # a --run or --pytest subject: no spec, no [good] and [bad] tables
    return (f"the good endpoint did not finish within {fixed.seconds:g} s, the fixed watchdog set by {where}, "
            f"({len(good_runs)}/{len(good_runs)} runs): if one run takes longer than that, raise it above the run's "
            f"time (or leave it out: the watchdog is then calibrated from the good run); if it really hangs, "
            f"check that {'good and bad' if adhoc else '[good] and [bad]'} are not swapped")


def hang_checks(check: EndpointCheck, runner: Runner) -> dict:
    """What a search's Oracle needs to give a hang a second, longer run (Oracle.__call__):
    `recheck` (recheck_hangs) and `reach`, how far through the good run's progress points the
    bad endpoint's hangs got (None: it did not hang, or followed no progress); and a lone SLOW
    run (or pass near the threshold) a median of three: `steady_slow`, SLOW that bad showed every
    run, on a metric or wall time (engine/slowvotes.py)."""
    from bisectk.run.progress import reach
    hung = [r for r in check.bad.runs if r.kind is FailKind.HANG and r.timeline]
    far = min((reach(r.timeline, runner.good_timeline) for r in hung), default=-1)
    steady_slow = not check.flaky and slowends.slow_only(check.target)
    return {"recheck": recheck_hangs(check), "reach": far if runner.moving and far >= 0 else None,
            "steady_slow": steady_slow}


def recheck_hangs(check: EndpointCheck) -> bool:
    """Whether a search's silent hangs of the failure hunted get a second, longer run (Oracle):
    the bad endpoint fails every time, and no picture of its hang showed a deadlock (one that
    did says what this subject's hangs look like, and a silent one in the search is taken for
    it; see README, "a first run's cost")."""
    from bisectk.stuck import deadlocked
    return (not check.flaky and any(r.kind is FailKind.HANG for r in check.bad.runs)
            and not any(deadlocked(r.stuck) for r in check.bad.runs))


def _silent_hang(runner: Runner, runs: list[Run], target: Target | None) -> bool:
    """The bad endpoint's failure is a hang that only the good run's duration called: the
    watchdog was calibrated (not the user's, not the spec's), no run said where it stopped (under
    a watchdog that follows the good run's progress: none printed a line before it was stopped,
    so it was called before its first progress point by the good run's start-up alone), and no
    picture read at the kill shows a deadlock. A test that became slower, or slower to start,
    looks the same."""
    from bisectk.run.progress import Timeline, before_first_point
    from bisectk.stuck import deadlocked
    hung = [r for r in runs if r.kind is FailKind.HANG]

    def silent(r: Run) -> bool:
        if not runner.moving:
            return not r.progress
        return (r.progress == before_first_point(runner.good_timeline)
                and not getattr(Timeline.from_list(r.timeline), "points", ()))
    return (target is not None and runner.timeout is not None and runner.timeout.source in ("calibrated", "progress")
            and all(f.kind is FailKind.HANG for f in target.failures)
            and all(silent(r) for r in hung) and not any(deadlocked(r.stuck) for r in hung))


def _hang_or_slow(trials: Trials, bad_point: Any, bad_runs: list[Run]) -> tuple[list[Run], str]:
    """Run the bad endpoint once more with EXTEND times the watchdog (at least EXTEND_MIN_S, at
    most the cap). Hung again: a hang, and the watchdog stays. It finished: the subject is slow,
    its runs are the bad endpoint's runs, and the watchdog is set from how long it took, so the
    search does not call every slow commit a hang (a test that went from 0.1 s to 6 s is not a
    deadlock). Returns the bad endpoint's runs and what was done, in words."""
    from bisectk.timeouts import TimeoutPolicy, second_chance
    runner = trials.runner
    short = runner.timeout
    longer = second_chance(short.seconds)
    # a watchdog that follows progress called it at the good run's start-up, not at its seconds
    called = max(r.duration_s for r in bad_runs if r.timed_out) if runner.moving else short.seconds
    runner.events.emit(Note(f"the bad endpoint was called a hang after {round(called, 2):g} s ({short.detail}), and "
                            f"it printed nothing that tells a hang from a slow run: once more with {longer:g} s"))
    runner.timeout = TimeoutPolicy(longer, "extended", f"{longer:g} s: the bad endpoint's second chance")
    try:
        run = trials.observe(bad_point)
    finally:
        runner.timeout = short
    if run.timed_out:
        return [*bad_runs, run], (f"the bad endpoint hung after {short.seconds:g} s and again after {longer:g} s: "
                                  "a hang")
    watchdog = runner.stretch(run.duration_s)
    trials.no_hang(bad_point)   # where the short runs "waited" is no hang's place: not shown as one
    now = ("the watchdog still follows the good run's progress" if runner.moving
           else f"the watchdog is now {watchdog.seconds:.1f} s")
    return [run], (f"the bad endpoint was no hang: called one after {round(called, 2):g} s, it ended in "
                   f"{run.duration_s:.2f} s when given {longer:g} s ({Verdict.fold([run]).describe()}); {now}")


def _reproduced(trials: Trials, bad_point: Any, repeat: int, cap: int, first: Future | None = None,
                done: list[Run] | None = None) -> list[Run]:
    """The bad endpoint's `repeat` runs, and more while it passed every time, up to `cap` in all
    (told the failure is intermittent, --flaky, the cap is doubled: at a 30% failure rate, 10
    passes in a row still happen 3% of the time). `first`: its first run, begun beside the good
    endpoint's; `done`: its runs so far."""
    runs: list[Run] = list(done or ())
    if first is not None:
        with live():   # waiting for a run is a run: a Ctrl-C stops it at once (engine/interrupts.py)
            runs.append(waited(first))
    while len(runs) < repeat or (not any(r.outcome is Outcome.FAIL for r in runs)
                                 and len(runs) < cap and runs[-1].outcome is Outcome.PASS):
        runs.append(trials.observe(bad_point))
    return runs


def _beside_good(trials: Trials, good_point: Any, bad_point: Any, meanwhile) -> Future | None:
    """Begin the bad endpoint's first run, and the search's likely first runs (`meanwhile.early`),
    beside the good endpoint's runs, their watchdog set once those have passed (Runner.hold;
    run/pending.py). Only where `meanwhile` can (--jobs above one, no --flaky), the good endpoint
    must run (not in the ledger), no build step holds the one directory every point runs in (a
    commit has a worktree of its own: `own_places`), and the executor's watch
    runs in this process (a fresh process or a warm worker; a Ray actor takes its watchdog with
    the job). Returns the bad run's Future, or None where the runs wait for the good endpoint."""
    runner = trials.runner
    shared = not getattr(trials.space, "own_places", False)     # every point runs in one directory
    if (meanwhile is None or not hasattr(meanwhile, "early") or (shared and runner.spec.build is not None)
            or not getattr(runner.executor, "watches_here", False)
            or runner.has(trials.space.workload(good_point))):
        return None
    pending = runner.hold()
    future: Future = Future()

    def work() -> None:
        pending.keep_here()     # the endpoint check needs this run whatever the good endpoint does
        try:
            future.set_result(trials.observe(bad_point))
        except BaseException as exc:      # handed to verify, which waits for it
            future.set_exception(exc)
    threading.Thread(target=work, name="bisectk-bad-endpoint", daemon=True).start()
    meanwhile.early()
    return future


def side_by_side(policy) -> bool:
    """Whether runs may begin beside the good endpoint's (verify's `meanwhile`): slots to spare
    (--jobs above one), and no --flaky, whose rule comes from the endpoint runs."""
    return policy.jobs > 1 and policy.flaky is not True


class BadBeside:
    """verify's `meanwhile` where the search starts nothing ahead of the endpoints (a bisection,
    where `side_by_side`: each commit has a worktree of its own, so the bad endpoint's first run
    need not wait for the good endpoint's, nor for its build)."""

    def early(self) -> None:
        pass

    then = drop = __call__ = early


def unusable_record(record_type, trials: Trials, start: float, **fields):
    """A `record_type` (AblationRecord, DiffRecord, BisectRecord) for endpoints that proved unusable:
    not complete, not interrupted, the runs this command made (by phase) and the wall time since
    `start` (time.monotonic); `fields`: the rest of the record."""
    return record_type(ok=False, complete=False, interrupted=False, runs=trials.runner.executed,
                       observations=len(trials.trials), wall_s=time.monotonic() - start,
                       phase_runs=trials.phase_runs(), **fields)


def _folded(trials: Trials, point: Any, runs: list[Run]) -> Verdict:
    """The runs folded, marked as answered from the ledger when none of them was executed now."""
    return replace(Verdict.fold(runs), cached=trials.from_ledger(point))


def _fixes(kind: str, thresholds: bool) -> tuple[str, str]:
    """(how the endpoints are swapped in this command, what else decides pass and fail): a spec's
    [good] and [bad], diff's GOOD and BAD arguments, bisect's --good and --bad; the thresholds
    where the spec has any, else the command's exit status."""
    swap = {"hunks": "swap GOOD and BAD", "commits": "swap --good and --bad"}.get(kind, "swap [good] and [bad]")
    return swap, ("check the oracle thresholds" if thresholds else
                  "check the command's exit status (0 passes; 1-127 but 125 fail)")


def _asked_to_skip(trials: Trials, good_point: Any, bad_point: Any, good: Verdict, bad: Verdict) -> str | None:
    """An endpoint every run of which exited 125 (git bisect run's "skip"), in words of what
    happened: the test asked to skip that commit (or configuration), which one, its own reason,
    and what the user can do; before, "cannot be tested: UNRESOLVED build (skip (exit 125) ...)",
    a build failure that never was. None where neither endpoint was skipped so."""
    commits = getattr(trials.space, "kind", "") == "commits"
    for side, point, verdict, option in (("good", good_point, good, "--good"), ("bad", bad_point, bad, "--bad")):
        if verdict.outcome is not Outcome.UNRESOLVED or not verdict.signature.startswith(SKIP_SIGNATURE):
            continue
        why = verdict.signature[len(SKIP_SIGNATURE):].removeprefix(":").strip()
        said = f"exit 125: {why}" if why else "exit 125"
        needs = "passes" if side == "good" else "fails"
        if commits:
            return (f"the test asked to skip the {side} commit {trials.space.label(point)} ({said}); a bisection "
                    f"needs a {side} commit that the test runs and that {needs}: give {option} another commit, "
                    f"or have the test exit 125 only where it cannot test")
        return (f"the subject asked to skip the {side} configuration ({said}); the search needs a {side} "
                f"configuration that runs and {needs}")
    return None


def _commit_untestable(trials: Trials, good_point: Any, bad_point: Any, good: Verdict, bad: Verdict,
                       problem: str | None) -> str | None:
    """`problem` for a bisection's endpoint that cannot be tested, said of the commit it is (which
    one, and why in the run's own words) where diagnose says "configuration" and "UNRESOLVED build"
    of every reason a commit is skipped for (the directory the command was typed in, or the file
    it runs, is not in its tree; its build failed); where the other endpoint was stopped the same
    way, that is said instead of asking for another endpoint. Any other problem is returned as it is."""
    if problem is None or getattr(trials.space, "kind", "") != "commits":
        return problem
    for side, point, verdict, option in (("good", good_point, good, "--good"), ("bad", bad_point, bad, "--bad")):
        said = f"the {side} configuration cannot be tested: {verdict.describe()}"
        if verdict.outcome is Outcome.UNRESOLVED and problem.startswith(said):
            why = verdict.signature if verdict.reason is Reason.BUILD and verdict.signature else verdict.describe()
            # a partial clone whose remote is gone, a filter's program not installed: another commit
            # fails the same, and the reason already says what to do (spaces/promisor.py)
            advice = "" if EVERY_COMMIT in why else f"; give {option} a commit the test can run on"
            other, other_point, other_side = (bad, bad_point, "bad") if side == "good" else (good, good_point, "good")
            if advice and other.outcome is Outcome.UNRESOLVED and (other.reason, other.signature) == (
                    verdict.reason, verdict.signature):
                # both ends stopped by one cause (a script with CRLF endings, a missing tool): another
                # endpoint would be stopped by it too
                advice = (f"; the {other_side} commit {trials.space.label(other_point)} cannot either, the same way: "
                          f"no commit will run the test until that is fixed")
            return f"the {side} commit {trials.space.label(point)} cannot be tested: {why}{problem[len(said):]}{advice}"
    return problem


def diagnose(good: Verdict, bad: Verdict, target: Target | None, good_rate: Rate, bad_rate: Rate,
             two_rate: bool = False, fixes: tuple[str, str] = _fixes("factors", True)) -> str | None:
    if good.outcome is Outcome.UNRESOLVED and not (two_rate and good.n_pass):
        also = (f"; and the bad configuration does not reproduce: it passed {bad.n_pass}/{bad.n_pass} runs"
                if bad.outcome is Outcome.PASS else "")
        return f"the good configuration cannot be tested: {good.describe()}{also}"
    if bad.outcome is Outcome.UNRESOLVED:
        return f"the bad configuration cannot be tested: {bad.describe()}"
    if good.outcome is Outcome.FAIL and bad.outcome is Outcome.PASS:
        return ("endpoints are inverted: good fails and bad passes "
                f"(good: {good.describe()}); {fixes[0]} or {fixes[1]}")
    if bad.outcome is Outcome.PASS:
        return (f"the bad configuration does not reproduce: it passed {bad.n_pass}/{bad.n_pass} runs; "
                f"raise --calibrate-runs if the failure is rarer than that, or {fixes[1]}")
    if good_rate.fails and two_rate and good.n_pass:
        return None     # a race that got more frequent: the search weighs both rates
    if good_rate.fails:
        return (f"the good configuration fails too, with the same failure ({target.describe()}) in "
                f"{good_rate.describe()}; the failure does not depend on these differences, or the good side is "
                "flaky; if good fails only sometimes, less often than bad (a race that got more frequent), "
                "--flaky applies")
    if good.n_pass == 0:
        return f"the good configuration never passed: {good.describe()}"
    return None
