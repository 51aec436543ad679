"""`bisectk triage`: one command for CI -- classify the failure, bisect history to the first bad
commit, then isolate the culprit hunks inside that commit's diff.

Abstractions
------------
run_triage   -- the three steps; each later step runs only if the earlier one found something.
                The isolation diffs the first bad commit against its (first) parent, both exported
                with `git archive` outside the user's checkout, the user's files the command names
                copied into both as into each commit's worktree (spaces/yours.py), through the same
                runner (so the calibrated watchdog carries over).
verdict_of   -- the triage's conclusion: "nothing to triage" (the bad ref passes), "culprit found",
                or "inconclusive" (endpoints unusable, ambiguous history, interrupted); its CI
                exit code is bisectk/exitcodes.py's (0, 1, 2).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bisectk.engine.bisect import run_bisect
from bisectk.engine.diff import run_diff
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import BisectRecord, DiffRecord, TriageRecord, captured
from bisectk.errors import BisectkError
from bisectk.events import PhaseStarted
from bisectk.exitcodes import TRIAGE_VERDICTS
from bisectk.outcome import Outcome
from bisectk.run import scratch
from bisectk.run.runner import Runner
from bisectk.spaces.commits import parents_of
from bisectk.spaces.hunkspace import HunkSpace
from bisectk.spaces.revisions import CommitSpace, export_tree
from bisectk.spaces.yours import place

NOTHING, CULPRIT, INCONCLUSIVE = TRIAGE_VERDICTS


def nothing_to_triage(b: BisectRecord) -> bool:
    e = b.endpoints
    # a bad commit that passed only over another commit's build outputs (engine/fresh_build.py)
    stale = bool((b.fresh_build or {}).get("stale"))
    return bool(e and not e.ok and e.good.outcome is Outcome.PASS and e.bad.outcome is Outcome.PASS and not stale)


def found(b: BisectRecord) -> bool:
    return bool(b.ok and b.first_bad and b.complete and not b.ambiguous and not b.interrupted)


def verdict_of(b: BisectRecord) -> str:
    if nothing_to_triage(b):
        return NOTHING
    return CULPRIT if found(b) else INCONCLUSIVE


def run_triage(runner: Runner, space: CommitSpace, policy: RunPolicy, *, scratch_root: Path,
               environment: dict | Callable[[], dict] | None = None, repo: str = "", first_parent: bool = False,
               subdir: Path = Path("."), facts: dict | None = None) -> TriageRecord:
    """`facts`: the bisection record's facts of the command (bisect's `command_files`)."""
    start = time.monotonic()
    bis = run_bisect(runner, space, policy, environment=environment, repo=repo, first_parent=first_parent,
                     facts=facts)
    diff: DiffRecord | None = None
    diff_error = None
    stopped = False
    if found(bis):
        try:
            diff, diff_error = isolate(runner, space, policy, bis, scratch_root=scratch_root,
                                       environment=environment, subdir=subdir)
        except KeyboardInterrupt:   # before the isolation had a result: the bisection's answer stands
            stopped, diff_error = True, "interrupted while it verified its endpoints (the runs so far are in the ledger)"
    verdict = verdict_of(bis)
    e = bis.endpoints
    failure = {"kind": e.bad.kind.value if e and e.bad.kind else None, "signature": e.bad.signature if e else "",
               "identity": e.target.describe() if e and e.target else None}
    return TriageRecord(
        command="triage", endpoints=e, ok=bis.ok,
        complete=bis.complete and not stopped and (diff is None or diff.complete),
        interrupted=bis.interrupted or stopped or bool(diff and diff.interrupted), runs=runner.executed,
        observations=bis.observations + (diff.observations if diff else 0), wall_s=round(time.monotonic() - start, 3),
        phase_runs=dict(Counter(bis.phase_runs) + Counter(diff.phase_runs if diff else {})),
        run_s=round(bis.run_s + (diff.run_s if diff else 0.0), 3),
        environment=captured(environment), advice=bis.advice + (diff.advice if diff else ()),
        session=runner.session, verdict=verdict, exit_code=TRIAGE_VERDICTS[verdict], failure=failure,
        bisect=bis.to_dict(), diff=diff.to_dict() if diff else None, diff_error=diff_error,
        # a stopped or ambiguous bisection names no first bad commit, and a stopped isolation no
        # culprit hunks: their best guess is no verdict (the isolation's record keeps it)
        first_bad=bis.first_bad if found(bis) else None,
        culprit_hunks=diff.culprit_hunks if diff and diff.complete else (),
        hangs=bis.hangs)


def isolate(runner: Runner, commits: CommitSpace, policy: RunPolicy, bis: BisectRecord, *, scratch_root: Path,
            environment: dict | Callable[[], dict] | None, subdir: Path) -> tuple[DiffRecord | None, str | None]:
    """The first bad commit's hunks against its (first) parent: (the DiffRecord, or None and why
    the trees could not be diffed). Its runs are its own (the runner is shared)."""
    graph = commits.commits
    bad_sha = bis.first_bad["sha"]
    # under a pathspec git rewrites a candidate's parents to the last commits that touch the paths:
    # the diff to those holds the commits between too, so the commit's own parents are asked of git
    parents = parents_of(graph.repo, bad_sha) if graph.paths else [p["sha"] for p in bis.last_good]
    if not parents:       # a root commit (a vendored history merged in): no parent to diff against
        return None, (f"{bad_sha[:10]} is a root commit: it has no parent, so its hunks are the "
                      "whole tree it adds")
    good_sha = parents[0]
    runner.events.emit(PhaseStarted("triage", f"isolating hunks of {bad_sha[:10]} against {good_sha[:10]}"))
    with scratch.temporary_dir("bisectk-triage-") as tmp:   # registered: a SIGKILL cannot leak it
        try:
            good_tree = export_tree(graph.repo, good_sha, Path(tmp) / "good")
            bad_tree = export_tree(graph.repo, bad_sha, Path(tmp) / "bad")
            for tree in (good_tree, bad_tree):      # the user's files, as in each commit's worktree
                why = place(tree, commits.carried)[2] if commits.carried else None
                if why is not None:
                    return None, f"your file could not be copied into the exported tree: {why}"
            space = HunkSpace(good_tree, bad_tree, scratch_root, base=commits.config, subdir=subdir, tag="triage",
                              keep_created=runner.spec.build is not None)
            space.python_roots = commits.python_roots   # where the bisection found runs importing the checkout
            space.path_dirs, space.path = commits.path_dirs, commits.path   # the checkout's PATH directories
        except BisectkError as exc:
            return None, str(exc)
        try:
            before = runner.executed
            diff = run_diff(runner, space, policy, environment=environment)
            return replace(diff, runs=diff.runs - before), None
        finally:
            space.close()
