"""`bisectk triage`: one command for CI -- classify the failure, bisect history to the first bad
commit, then isolate the culprit hunks inside that commit's diff.

Abstractions
------------
run_triage   -- the three steps; each later step runs only if the earlier one found something.
                The isolation diffs the first bad commit against its (first) parent, both exported
                with `git archive` outside the user's checkout, through the same runner (so the
                calibrated watchdog carries over).
verdict_code -- the CI exit code: 0 nothing to triage (the bad ref passes), 1 culprit found,
                2 inconclusive (endpoints unusable, ambiguous history, interrupted).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from bisectk.engine.bisect import run_bisect
from bisectk.engine.diff import run_diff
from bisectk.engine.oracle import SpaceOracle
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import BisectRecord, DiffRecord, TriageRecord
from bisectk.errors import BisectkError
from bisectk.events import PhaseStarted
from bisectk.exitcodes import TRIAGE_CULPRIT, TRIAGE_INCONCLUSIVE, TRIAGE_NOTHING
from bisectk.outcome import Outcome
from bisectk.run import scratch
from bisectk.spaces.hunkspace import HunkSpace
from bisectk.spaces.revisions import export_tree

VERDICTS = {TRIAGE_NOTHING: "nothing to triage", TRIAGE_CULPRIT: "culprit found", TRIAGE_INCONCLUSIVE: "inconclusive"}


def nothing_to_triage(b: BisectRecord) -> bool:
    e = b.endpoints
    return bool(e and not e.ok and e.good.outcome is Outcome.PASS and e.bad.outcome is Outcome.PASS)


def found(b: BisectRecord) -> bool:
    return bool(b.ok and b.first_bad and b.complete and not b.ambiguous and not b.interrupted)


def verdict_code(b: BisectRecord) -> int:
    if nothing_to_triage(b):
        return TRIAGE_NOTHING
    return TRIAGE_CULPRIT if found(b) else TRIAGE_INCONCLUSIVE


def run_triage(oracle: SpaceOracle, *, scratch_root: Path, policy: RunPolicy | None = None,
               environment: dict | None = None, repo: str = "", first_parent: bool = False,
               subdir: Path = Path(".")) -> TriageRecord:
    start = time.monotonic()
    policy = policy or oracle.policy
    bis = run_bisect(oracle, policy=policy, environment=environment, repo=repo, first_parent=first_parent)
    diff: DiffRecord | None = None
    diff_error = None
    if found(bis):
        commits = oracle.space.commits
        bad_sha = bis.first_bad["sha"]
        good_sha = bis.last_good[0]["sha"]
        oracle.runner.events.emit(PhaseStarted("triage", f"isolating hunks of {bad_sha[:10]} against {good_sha[:10]}"))
        with scratch.temporary_dir("bisectk-triage-") as tmp:   # registered: a SIGKILL cannot leak it
            space = None
            try:
                good_tree = export_tree(commits.repo, good_sha, Path(tmp) / "good")
                bad_tree = export_tree(commits.repo, bad_sha, Path(tmp) / "bad")
                space = HunkSpace(good_tree, bad_tree, scratch_root, base=oracle.space.config, subdir=subdir,
                                  tag="triage")
            except BisectkError as exc:
                diff_error = str(exc)
            if space is not None:
                try:
                    hunk_oracle = SpaceOracle(oracle.runner, space, policy=policy)
                    before = oracle.runner.executed   # the runner is shared: the isolation's own runs
                    diff = run_diff(hunk_oracle, policy=policy, environment=environment)
                    diff = replace(diff, runs=diff.runs - before)
                finally:
                    space.close()
    code = verdict_code(bis)
    e = bis.endpoints
    failure = {"kind": e.bad.kind.value if e and e.bad.kind else None, "signature": e.bad.signature if e else "",
               "identity": e.target.describe() if e and e.target else None}
    return TriageRecord(
        command="triage", endpoints=e, ok=bis.ok, complete=bis.complete and (diff is None or diff.complete),
        interrupted=bis.interrupted or bool(diff and diff.interrupted), runs=oracle.runner.executed,
        observations=bis.observations + (diff.observations if diff else 0), wall_s=round(time.monotonic() - start, 3),
        run_s=round(bis.run_s + (diff.run_s if diff else 0.0), 3),
        environment=environment or {}, next_steps=bis.next_steps + (diff.next_steps if diff else ()),
        session=oracle.runner.session, verdict=VERDICTS[code], exit_code=code, failure=failure,
        bisect=bis.to_dict(), diff=diff.to_dict() if diff else None, diff_error=diff_error,
        first_bad=bis.first_bad, culprit_hunks=diff.culprit_hunks if diff else (), hangs=bis.hangs)
