"""The endpoint check's SLOW steps (engine/endpoints.py's procedure, steps 1 and 3b, and the
problems it words for a SLOW rule): the baseline's runs, whether one run tells good from bad, and
the numbers a SLOW problem gives.

Abstractions
------------
baseline_runs  -- how many good runs step 1 makes at least (slowrule.BASELINE_RUNS under a SLOW rule).
slow_only      -- whether the failure hunted is SLOW alone.
hunted         -- whether the failure hunted is SLOW (a reported metric or wall time) against a positive baseline.
spread_values  -- the values 3b weighs (wall time: each side's first run left out).
values         -- the SLOW values of the runs the rule judged: the one reading every line here rests on.
separate_sides -- 3b: both endpoints run on until their spread settles whether one run is judged alone.
inseparable    -- the problem line where it is not (search/separation.py's answer in words).
slow_seen      -- 2c: a bad endpoint that failed otherwise in every run is run for SLOW to show.
target_of      -- the failure hunted: SLOW alone where bad's runs show it, whatever else they show.
as_hunted      -- bad's verdict worded by the failure hunted, not by a crash that came first.
besides_slow   -- the note on bad's other failures where SLOW is hunted.
remeasured     -- 1c: a baseline from the ledger checked against fresh good runs (a machine that got
                  faster or slower since).
measured       -- what a bad endpoint that never failed measured against the threshold.
spread         -- good's own spread against the threshold, where good showed the SLOW failure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bisectk.events import PhaseStarted
from bisectk.outcome import FailKind, Outcome, Run, Target, Verdict
from bisectk.slowrule import BASELINE_RUNS, rule_words, value

if TYPE_CHECKING:
    from bisectk.engine.oracle import Trials
    from bisectk.run.runner import Runner


def measured(runner: Runner, good_runs: list[Run], bad_runs: list[Run]) -> str:
    """What a bad endpoint that never failed measured under a SLOW oracle, against the threshold
    and what the baseline rests on ("" without one): "check the command's exit status" alone says
    nothing of a regression below slow_factor, or of a throughput judged as a time."""
    judge = runner.judge
    if not judge.slow_factor or judge.baseline is None:
        return ""
    import statistics
    unit, base, f = judge.slow_metric or "wall s", judge.baseline, judge.slow_factor
    if base <= 0:
        return (f"; the good endpoint's {unit} is {base:g}, and SLOW compares against a multiple of it: no value "
                f"is judged slower; report a positive {unit} (a time in finer units: us, ns)")
    vals = values(runner, [r for r in bad_runs if r.outcome is Outcome.PASS])
    n_good = sum(r.outcome is Outcome.PASS for r in good_runs)
    if not vals:
        return ""
    mid = statistics.median(vals)
    rule = rule_words(base, f, judge.higher)
    rests = "good's one run" if n_good == 1 else f"good's median over {n_good} runs"
    said = (f"; SLOW is {unit} {rule} (the baseline: {rests}), and bad's {unit} was "
            f"{min(vals):.3g}-{max(vals):.3g} (median {mid:.3g}, {mid / base:.2f}x good's)")
    if judge.slow_metric and (mid * f < base if not judge.higher else mid > f * base):
        seen, better = ("higher", "lower") if judge.higher else ("lower", "higher")
        said += (f"; bad's {unit} is {seen} than good's by more than the factor: if a {better} {unit} is better "
                 f"({'a throughput' if better == 'higher' else 'a time'}), say slow_better = \"{better}\" in [oracle]")
    return said


def baseline_runs(runner: Runner) -> int:
    """How many good runs step 1 makes at least: slowrule.BASELINE_RUNS under a SLOW rule, else 1.
    A command's first run pays its cold start (no spare supervisor yet, cold file caches: 0.27 s
    where the next ones took 0.24 s), and one run was the baseline: a 1.25x regression passed
    against 1.15 x it. A reported metric has its noise: one good run 1.6 standard deviations low
    (3% noise) put the threshold of a +30% regression under slow_factor 1.1 inside good's spread,
    and the search ended rc 2 after 241 runs. The median of three leaves either out; 3b (separate_sides)
    runs three a side anyway."""
    return BASELINE_RUNS if runner.judge.slow_factor else 1


def spread(runner: Runner, good_runs: list[Run], target: Target | None) -> tuple[str, ...]:
    """Where good's own runs show the SLOW failure: the spread of its metric against the threshold,
    a line (none otherwise). A regression smaller than the metric's run-to-run noise makes good
    fail as a race would, and "a race that got more frequent" alone sent a perf regression's
    reader after a race."""
    judge = runner.judge
    if (target is None or not judge.slow_factor or not judge.baseline or judge.baseline <= 0
            or not any(f.kind is FailKind.SLOW for f in target.failures)):
        return ()
    import statistics
    vals = values(runner, good_runs)
    if not vals:
        return ()
    unit, base, f = judge.slow_metric or "wall s", judge.baseline, judge.slow_factor
    return (f"good's {unit} ranged {min(vals):.3g}-{max(vals):.3g} over {len(vals)} runs (median "
            f"{statistics.median(vals):.3g}) against the SLOW threshold ({rule_words(base, f, judge.higher)}): the metric's run-to-run spread "
            f"reaches slow_factor, so one run cannot tell good from bad; raise slow_factor above that spread, or make "
            f"the metric steadier (more iterations a run, a quieter machine, --jobs 1)",)


SEPARATION_EARLY = 3   # runs a side that may settle 3b at once (no spread, or a wide margin)


def slow_only(target: Target | None) -> bool:
    """Whether the failure hunted is SLOW alone (target_of makes it so wherever bad showed SLOW)."""
    return target is not None and all(f.kind is FailKind.SLOW for f in target.failures)


def hunted(runner: Runner, target: Target | None) -> bool:
    """The failure hunted is SLOW, on a metric the subject reports or on wall time, against a
    positive baseline. Wall time was left out, and a search by it judged one run alone against a
    threshold inside good's own spread (each noisy run a failure of a configuration without the
    culprit); its first runs pay cold starts and JIT compiles, so 3b leaves each side's first run
    out of the spread (spread_values)."""
    judge = runner.judge
    return (bool(judge.slow_factor) and judge.baseline is not None and judge.baseline > 0 and slow_only(target))


def spread_values(runner: Runner, runs: list[Run]) -> list[float]:
    """The values 3b weighs: values(), less the side's first run on wall time (a command's first
    run pays its cold start, a configuration's first its JIT compile; the baseline is a median)."""
    return values(runner, runs[1:] if runner.judge.slow_metric is None else runs)


def values(runner: Runner, runs: list[Run]) -> list[float]:
    """The SLOW values (slowrule.value) of the runs the rule judged, passes and SLOW failures,
    positive ones: the one reading every SLOW problem and note here rests on."""
    metric = runner.judge.slow_metric
    return [v for r in runs if r.outcome is Outcome.PASS or r.kind is FailKind.SLOW
            if (v := value(r.metrics, r.duration_s, metric)) is not None and v > 0]


def separate_sides(trials: Trials, good_point: Any, bad_point: Any, good_runs: list[Run], bad_runs: list[Run],
              cap: int):
    """3b. of the module docstring: both endpoints run up to SEPARATION_EARLY runs, and on to
    `cap` unless those settle it (search/separation.py); the runs are appended to the lists.
    Returns the Separation, or None where a side has fewer than two values."""
    from bisectk.search.separation import separate
    runner, judge = trials.runner, trials.runner.judge
    early = True
    for n in (SEPARATION_EARLY, max(cap, SEPARATION_EARLY)):
        if len(good_runs) < n or len(bad_runs) < n:
            runner.events.emit(PhaseStarted("separation", f"SLOW judges each run alone: measuring how far the "
                                                          f"threshold lies from good's and bad's spread, {n} runs each"))
        while len(good_runs) < n:
            good_runs.append(trials.observe(good_point))
        while len(bad_runs) < n:
            bad_runs.append(trials.observe(bad_point))
        good, bad = spread_values(runner, good_runs), spread_values(runner, bad_runs)
        if len(good) < 2 or len(bad) < 2:
            return None
        found = separate(good, bad, judge.baseline, judge.slow_factor, judge.higher, early=early)
        if found.clear or not early:
            return found
        early = False
    return found


def inseparable(runner: Runner, found, good_runs: list[Run], bad_runs: list[Run]) -> str:
    """The problem line of a SLOW failure that one run does not tell from good's own spread (3b)."""
    import statistics
    from bisectk.search.separation import SHIFT_ALPHA
    judge = runner.judge
    unit, base, f = judge.slow_metric or "wall s", judge.baseline, judge.slow_factor
    good, bad = spread_values(runner, good_runs), spread_values(runner, bad_runs)
    spread = (f"good's {unit} {min(good):.3g}-{max(good):.3g} (median {statistics.median(good):.3g}) and bad's "
              f"{min(bad):.3g}-{max(bad):.3g} (median {statistics.median(bad):.3g}) over {len(good)} and {len(bad)} runs")
    steadier = "make the metric steadier (more iterations a run, a quieter machine, --jobs 1)"
    if found.p_shift is not None and found.p_shift > SHIFT_ALPHA:
        return (f"the bad configuration's {unit} is not told apart from the good one's: {spread}, Mann-Whitney "
                f"p = {found.p_shift:.2g}; a difference this size is within the run-to-run noise, and a search "
                f"judging one run at a time would chase it as an intermittent failure; {steadier}")
    crossed = [f"{found.crossed[0]} of good's runs are SLOW" if found.crossed[0] else "",
               f"{found.crossed[1]} of bad's runs pass" if found.crossed[1] else ""]
    why = " and ".join(c for c in crossed if c) or (f"the threshold lies {found.margin:.1f} standard deviations of "
                                                    f"the run-to-run spread from one side's median")
    fix = "no slow_factor splits single runs"
    if found.factor is not None:    # over good's median: made a factor of the baseline the rule multiplies
        mid = statistics.median(good)
        to = base * found.factor / mid if judge.higher else mid * found.factor / base
        fix = (f"slow_factor = {to:.3g} puts the threshold halfway between the two medians (against this "
               f"baseline, {base:.3g}, the median of good's calibrating runs, which the ledger keeps)")
    return (f"good and bad differ (Mann-Whitney p = {found.p_shift:.2g}) but one run is not judged alone against "
            f"the SLOW threshold ({unit} {rule_words(base, f, judge.higher)}): {spread}; {why}, so the search would take the noise for "
            f"an intermittent failure; {fix}; or {steadier}")


def remeasured(trials: Trials, good_point: Any, good_runs: list[Run]) -> str | None:
    """1c. of endpoints.py's procedure. Under a SLOW rule, where every good run came from the
    ledger, run good until BASELINE_RUNS of its runs are fresh (appended to `good_runs`). Their
    median moved from the stored runs' by more than half of slow_factor (in log space), and out of
    the stored runs' range: the problem, with --fresh; else None. A resume after the machine got
    twice as fast judged every run against the old baseline: nothing was slow any more, and the
    search ran 190 runs to "unconfirmed ... the failure is intermittent" with every factor
    named; a slower machine makes every run slow."""
    import math
    import statistics
    runner = trials.runner
    judge = runner.judge
    if not judge.slow_factor or not trials.from_ledger(good_point):
        return None
    stored = values(runner, good_runs)
    if not stored:
        return None
    runner.events.emit(PhaseStarted("endpoints", f"the SLOW baseline's {len(stored)} good run(s) came from the "
                                                 f"ledger (another sitting): {BASELINE_RUNS} fresh good runs to "
                                                 f"check it still holds"))
    fresh: list[Run] = []
    while len(fresh) < BASELINE_RUNS:
        before = runner.executed
        run = trials.observe(good_point)
        good_runs.append(run)
        if runner.executed > before:
            fresh.append(run)
    now = values(runner, fresh)
    if not now:
        return None
    old, new = statistics.median(stored), statistics.median(now)
    unit = judge.slow_metric or "wall s"
    if abs(math.log(new / old)) <= math.log(judge.slow_factor) / 2 or min(stored) <= new <= max(stored):
        return None
    return (f"the good endpoint's {unit} is {new:.3g} now (median of {len(now)} fresh runs) against {old:.3g} in "
            f"the ledger ({new / old:.2f}x): the machine got {'faster' if new < old else 'slower'} since those runs "
            f"by more than half of slow_factor {judge.slow_factor:g}, and every stored run (the baseline, bad's, "
            f"the hybrids') was timed there, so judged against them this command's runs would be wrong; --fresh "
            f"runs everything again on this machine")


def slow_seen(trials: Trials, bad_point: Any, bad_runs: list[Run]) -> list[Run]:
    """2c. Under a SLOW rule, a bad endpoint whose every run so far failed other than SLOW (a
    crash, which leaves no time to judge) is run on up to BASELINE_RUNS runs, until one is SLOW:
    one crash first made the crash the failure hunted, one slow run first made it SLOW, and the
    two answers of one pair told apart by the order its runs came in."""
    runner = trials.runner
    if not runner.judge.slow_factor or runner.judge.baseline is None:
        return bad_runs
    runs = list(bad_runs)
    while (len(runs) < BASELINE_RUNS and all(r.outcome is Outcome.FAIL for r in runs)
           and not any(r.kind is FailKind.SLOW for r in runs) and not any(r.timed_out for r in runs)):
        runs.append(trials.observe(bad_point))
    return runs


def target_of(runner: Runner, bad_runs: list[Run], mode: str) -> Target | None:
    """The failure hunted (Target.of bad's failing runs), SLOW alone where the rule is on and bad
    showed it: a crashed run has no time, so it is no evidence of the slowness, and with both in
    the target the search took the difference behind the crash (one failure in a hybrid is
    proof) for the regression's culprit, or cleared it by a lucky pass. A hybrid that crashes is
    then a different failure: run again (--retry-different), and said as a possible second bug."""
    if runner.judge.slow_factor and any(r.kind is FailKind.SLOW for r in bad_runs):
        return Target.of([r for r in bad_runs if r.kind is FailKind.SLOW], mode)
    return Target.of(bad_runs, mode)


def besides_slow(runner: Runner, bad_runs: list[Run], target: Target | None) -> tuple[str, ...]:
    """Where SLOW is hunted and bad's runs also failed otherwise: a note saying so (none otherwise)."""
    if not slow_only(target):
        return ()
    other = [r for r in bad_runs if r.outcome is Outcome.FAIL and r.kind is not FailKind.SLOW]
    if not other:
        return ()
    return (f"the bad endpoint also failed otherwise in {len(other)}/{len(bad_runs)} runs "
            f"({Verdict.fold(other[:1]).describe()}): SLOW is the failure hunted, since a run that fails so "
            f"leaves no time to judge; a hybrid that fails so is run again, and shown as a possible second bug",)


def as_hunted(bad: Verdict, target: Target | None) -> Verdict:
    """Bad's verdict with the kind, signature and metrics of its first run of the failure hunted:
    folded, it takes its first failing run's, and where SLOW is hunted past a crash (target_of)
    that was the crash ("bad: FAIL crash", no SLOW figure)."""
    first = next((r for r in bad.runs if target is not None and target.matches(r)), None)
    if first is None or first.kind is bad.kind:
        return bad
    return replace(bad, kind=first.kind, signature=first.signature, metrics=first.metrics)
