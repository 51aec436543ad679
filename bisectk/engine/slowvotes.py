"""The median of three for a search hunting SLOW: which lone runs of a point are run twice more,
and the vote that decides (the Oracle's questions, engine/oracle.py).

Abstractions
------------
lone_slow      -- a point's first SLOW run (its earlier runs passed), where the bad endpoint was
                  SLOW every run (`steady_slow`): one draw past the threshold.
lone_pass      -- a question's first run that passed where the bad endpoint was SLOW every run,
                  drawn between the halfway mark (slowrule.halfway) and the threshold: one draw
                  short of it.
median_of_three -- a second run, and a third where the two disagree: the two of three that agree
                  decide, and the run they outvoted is set aside from the point's verdict, said.

Why both directions. SLOW judges each run alone, and a search takes one run of a point as its
answer. A hybrid without the culprit drawn past the threshold once was proof, under the one-sided
flake rule, that it held the culprit (the search chased it ~60 runs and ended unconfirmed); a
hybrid with the culprit drawn just short of the threshold once cleared it, and the contradiction
that followed switched the search to the flake rule: 43-49 runs in place of 23, and "the failure
is intermittent" said of a regression that was not. A pass is re-run only where it lies past the
halfway mark (between the baseline and the threshold, in log space): a configuration without the
culprit lands near the baseline, so a search's passes mostly cost nothing more. Wall time is
judged the same way as a metric (a steady SLOW hunt by wall time used to let a point's second run
decide alone: a first run's compile is outvoted by two passes all the same).
"""

from __future__ import annotations

from typing import Any

from bisectk import slowrule
from bisectk.events import Note
from bisectk.outcome import FailKind, Outcome, Run

Oracle = Any    # engine/oracle.py's Oracle, which imports this module: named here, not imported


def lone_slow(oracle: Oracle, point: Any, run: Run) -> bool:
    """Whether `run` is SLOW, the failure hunted, where the bad endpoint was SLOW every time
    (`steady_slow`), and the first failure of `point` (its runs before, if any, passed)."""
    if not oracle.steady_slow or run.kind is not FailKind.SLOW or oracle.judge_run(run) is not Outcome.FAIL:
        return False
    seen = oracle.trials.verdict(point)
    return seen is not None and all(r.outcome is Outcome.PASS for r in seen.runs if r is not run)


def lone_pass(oracle: Oracle, point: Any, run: Run) -> bool:
    """Whether `run`, the first of a question, passed where the bad endpoint was SLOW every time,
    its SLOW value past the halfway mark toward the threshold: one draw of a hybrid holding the
    culprit may land there, short of the threshold, in the search or in the confirmation that
    re-runs the culprit (where a point that failed twice passed once, and the search went on in
    the flake model)."""
    judge = oracle.trials.runner.judge
    if not oracle.steady_slow or run.outcome is not Outcome.PASS or not judge.slow_factor or not judge.baseline \
            or judge.baseline <= 0:
        return False
    v = slowrule.value(run.metrics, run.duration_s, judge.slow_metric)
    mark = slowrule.halfway(judge.baseline, judge.slow_factor, judge.higher)
    return v is not None and (v < mark if judge.higher else v > mark)


def median_of_three(oracle: Oracle, point: Any, first: Run, question: list[Run]) -> Run:
    """A second run of `point`, and a third where the two disagree: the run that decides. A first
    run outvoted by two runs is set aside from the point's verdict, and said; a lone SLOW run
    outvoted by two passes (the second or the third, after a first that passed) is set aside
    too, so the verdict folds what the vote decided."""
    was = oracle.judge_run(first)

    def again() -> Run:
        run = oracle.observe(point)
        question.append(run)
        oracle.count_more()
        return run
    second = again()
    if oracle.judge_run(second) is was:
        return second               # the same again: two of two
    other = Outcome.PASS if was is Outcome.FAIL else Outcome.FAIL
    third = again()
    label = oracle.space.label(point)
    if oracle.judge_run(second) is other and oracle.judge_run(third) is other:
        oracle.trials.set_aside(point, first)
        oracle.trials.runner.events.emit(Note(
            f"{label}: its first run was SLOW and the next two passed: a lone draw of the metric past the threshold, "
            "judged by the median of three" if was is Outcome.FAIL else
            f"{label}: its first run passed near the SLOW threshold and the next two were SLOW: a lone draw short of "
            "it, judged by the median of three"))
        return third
    if was is Outcome.PASS:         # the pass decides: its one SLOW run (one at most) is the outlier
        lone = next((r for r in (second, third) if oracle.judge_run(r) is Outcome.FAIL), None)
        if lone is not None:
            oracle.trials.set_aside(point, lone)
    return first                    # not outvoted by two: the first decides
