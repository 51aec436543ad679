"""A bisection's answer checked from builds made from scratch, where its builds were incremental.

Each commit's worktree keeps its ignored files from one commit to the next (spaces/worktrees.py),
so a `--build` is incremental over whatever the last commit built there, as `git bisect run` in
one checkout is. A build whose dependencies are incomplete -- a Makefile without its header
dependencies, whose object files are not rebuilt when a header they include changes -- then runs
what another commit built, and the search names, with full confidence, a commit that changed
nothing the build reads (or misses the one that did).

needed -- whether there is anything to check: no --clean-ignored (every build is from scratch
          then), worktrees of this machine (a remote host's is a fresh copy each), a
          deterministic search in git's direction, and ignored files in the worktrees now (none:
          no build left anything another commit's run could see); without a build step, files
          other than Python's own caches (a test script that runs make left them).
good_from_scratch -- the good commit once more from scratch, where it failed: a worktree keeps its
          ignored files between commands too, so its build may have run over what another
          commit's build left there; a pass from scratch is said beside the problem.
bad_from_scratch -- the same for a bad commit that never failed (the good commit's build ran
          first in the same worktree); a failure from scratch is said beside the problem.
check  -- the first bad commit and each parent that was run, once more each, in a worktree that
          lost its ignored files first (spaces/revisions.py FreshBuilds): the first bad commit
          must still fail and each parent still pass. Facts for the record (`fresh_build`):
          each point's outcome from scratch, and `stale` when one of them disagrees with the
          search (the answer rests on stale build outputs; report/history.py says so, and the
          command's exit is that of an ambiguous answer).
"""

from __future__ import annotations

from typing import Any

from bisectk.engine.oracle import SEARCH, Trials
from bisectk.engine.policy import RunPolicy
from bisectk.outcome import Outcome, Target
from bisectk.run.runner import Runner
from bisectk.spaces.revisions import GOOD, CommitSpace, FreshBuilds


def needed(runner: Runner, space: CommitSpace, policy: RunPolicy, flaky: bool, find_fix: bool) -> bool:
    if policy.clean_ignored or space.remote or space.pool is None or flaky or find_fix:
        return False
    # without --build, a test script that builds (`make || exit 125; ./build/k`, git bisect run's
    # habit) leaves its outputs too: anything ignored but Python's own caches
    return space.pool.holds_ignored(beyond_caches=runner.spec.build is None)


def good_from_scratch(trials: Trials, target: Target | None) -> str | None:
    fresh = trials.view(FreshBuilds(trials.space))
    fresh.observe(GOOD, target=target)
    if fresh.trials[-1].judged is not Outcome.PASS:
        return None
    return ("built from scratch (its worktree's ignored files removed), the good commit passes: its build ran "
            "over what another commit's build left in bisectk's cached worktree; run again with --clean-ignored")


def bad_from_scratch(trials: Trials, bad: Any) -> dict[str, Any] | None:
    """The bad commit once more from scratch, where it never failed: its build ran over what the
    good commit's (or an earlier command's) build left in the same cached worktree, and a build
    that misses a header's change runs the good commit's objects there. Where it fails, the facts
    for the record (`fresh_build`, as check's: triage then does not call it nothing to triage)."""
    fresh = trials.view(FreshBuilds(trials.space))
    fresh.observe(bad)
    if fresh.trials[-1].judged is not Outcome.FAIL:
        return None
    info = trials.space.info(bad)
    return {"points": [{"sha": info.sha, "short": info.short, "searched": Outcome.PASS.value,
                        "fresh": Outcome.FAIL.value}], "stale": True}


BAD_FAILS = ("built from scratch (its worktree's ignored files removed), the bad commit fails: its build ran "
             "over what another commit's build left in bisectk's cached worktree; run again with --clean-ignored")


def check(trials: Trials, target: Target | None, culprit: int) -> dict[str, Any]:
    space: CommitSpace = trials.space
    graph = space.commits
    fresh = trials.view(FreshBuilds(space))
    points: list[tuple[Any, Outcome]] = [(culprit, Outcome.FAIL)]
    for sha in graph.parent_shas_of(culprit):
        if sha == graph.good.sha:
            points.append((GOOD, Outcome.PASS))
        else:
            try:
                points.append((graph.index(sha), Outcome.PASS))
            except Exception:
                continue        # an ancestor of --good, good by ancestry and never run: nothing to redo
    seen = []
    for point, searched in points:
        fresh.observe(point, target=target, phase=SEARCH)
        judged = fresh.trials[-1].judged
        info = space.info(point)
        seen.append({"sha": info.sha, "short": info.short, "searched": searched.value, "fresh": judged.value})
    stale = any(s["fresh"] != s["searched"] and s["fresh"] != Outcome.UNRESOLVED.value for s in seen)
    return {"points": seen, "stale": stale}
