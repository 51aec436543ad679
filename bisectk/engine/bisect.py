"""`bisectk bisect`: the first bad commit between --good and --bad, each commit run in its own
worktree, never in the user's checkout.

Abstractions
------------
run_bisect   -- verify both endpoints through the commit space's oracle (the bad one re-run when
                it passes, the failure rate measured when it is intermittent), decide flaky mode,
                seed the search with the endpoint runs, run the history search (binary, Bayesian,
                k-way) and return a BisectRecord.
commit_doc   -- a commit as the record stores it (sha, subject, author, date, files).

Only the target failure counts as bad; any other failure is UNRESOLVED (skipped), like a build
failure, unless --any-failure.
"""

from __future__ import annotations

import time
from typing import Any

from bisectk.engine.ablate import subject_record
from bisectk.engine.endpoints import verify
from bisectk.engine.oracle import SpaceOracle
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import AttemptRecord, BisectRecord
from bisectk.events import PhaseStarted
from bisectk.outcome import Outcome, Verdict
from bisectk.search.history import HistoryResult, Observation, SearchOptions, SearchStopped, search_history
from bisectk.spaces.revisions import CommitSpace

MAX_DESCRIBED = 20   # candidates described with their files (each costs a git call)


def commit_doc(space: CommitSpace, i: int, full: bool = False) -> dict[str, Any]:
    info = space.commits.describe(i) if full else space.commits[i]
    return {"index": i, **info.to_dict()}


def attempts_in_run_order(oracle: SpaceOracle) -> list[AttemptRecord]:
    """Every run the bisection made (or read from the ledger), in the order made."""
    commits = oracle.space.commits
    ends = {commits[0].sha: "endpoint (good)", commits[len(commits) - 1].sha: "endpoint (bad)"}
    out = []
    for n, obs in enumerate(oracle.observations, 1):
        v = Verdict.fold([obs.run])
        failure = v.failure(oracle.target.mode if oracle.target else "check")
        out.append(AttemptRecord(n, ends.get(obs.key, "bisect"), (obs.key,), obs.label, obs.judged.value,
                                 v.describe(), failure.describe() if failure else None, 1,
                                 round(obs.run.duration_s, 3), obs.cached))
    return out


def run_bisect(oracle: SpaceOracle, *, policy: RunPolicy | None = None, environment: dict | None = None,
               repo: str = "", first_parent: bool = False) -> BisectRecord:
    start = time.monotonic()
    policy = policy or oracle.policy
    space: CommitSpace = oracle.space
    commits, runner = space.commits, oracle.runner
    n = len(commits)
    check = verify(oracle, 0, n - 1, repeat=policy.repeat or 1, calibrate_runs=policy.calibrate_runs,
                   flaky=policy.flaky, same_failure=policy.same_failure, measure=False)
    base = dict(command="bisect", endpoints=check, subject=subject_record(runner.spec), repo=repo,
                good=commits[0].sha, bad=commits[n - 1].sha, commits=n, first_parent=first_parent,
                environment=environment or {}, session=runner.session, protocol=runner.spec.protocol)
    if not check.ok:
        return BisectRecord(ok=False, complete=False, interrupted=False, runs=runner.executed,
                            observations=len(oracle.observations), wall_s=time.monotonic() - start,
                            attempts=tuple(attempts_in_run_order(oracle)), **base)
    oracle.target = check.target
    flaky = check.flaky
    seed = [Observation(0, Outcome.PASS)] * check.good_rate.runs
    bad_runs = [r for r in check.bad.runs if r.outcome is not Outcome.UNRESOLVED]
    seed += ([Observation(n - 1, oracle.judge_run(r)) for r in bad_runs] if flaky
             else [Observation(n - 1, Outcome.FAIL)])
    mode = ("Bayesian, flake-aware" if flaky else "binary") + (f", {policy.jobs}-way" if policy.jobs > 1 else "")
    runner.events.emit(PhaseStarted("search", f"{mode} over {n} commits"
                                    + (f"; bad fails {check.bad_rate.describe()}" if flaky else "")))
    options = SearchOptions(flaky=flaky, jobs=policy.jobs, confidence=policy.confidence, max_runs=policy.max_runs)
    stopped, reason = False, ""
    try:
        result = search_history(n, oracle if policy.jobs == 1 else None,
                                batch_oracle=oracle.batch if policy.jobs > 1 else None,
                                options=options, observations=seed)
    except SearchStopped as stop:
        result, stopped = stop.result, True
        reason = "interrupted" if stop.interrupted else "run budget spent"
    return _record(oracle, check, result, flaky, stopped, reason, start, base)


def _record(oracle: SpaceOracle, check, result: HistoryResult, flaky: bool, stopped: bool, reason: str,
            start: float, base: dict) -> BisectRecord:
    space: CommitSpace = oracle.space
    commits = space.commits
    ambiguous = result.ambiguous
    described = [commit_doc(space, i, full=True) for i in result.candidates[:MAX_DESCRIBED]]
    candidates = tuple(described + [commit_doc(space, i) for i in result.candidates[MAX_DESCRIBED:]])
    first_bad = described[-1] if described and not ambiguous and len(result.candidates) == 1 else None
    parents = [result.last_good] if result.last_good is not None else []
    last_good = []
    for p in parents:
        v = oracle.verdicts.get(commits[p].sha)
        last_good.append({**commit_doc(space, p), "verdict": v.describe() if v else "not run (known good)"})
    complete = result.complete and not stopped
    c = commits
    steps: list[str] = []
    if first_bad:
        steps += [f"Inspect the diff of the first bad commit: git show {first_bad['sha'][:10]}",
                  f"Isolate the culprit lines inside it: bisectk triage ... --good {c[result.last_good].short} "
                  f"--bad {first_bad['sha'][:10]}"]
    if ambiguous:
        steps.insert(0, "Make the skipped commits testable (fix their build) to resolve the ambiguity.")
    if stopped:
        steps.insert(0, f"The search stopped ({reason}); run it again with --resume to continue.")
    return BisectRecord(
        ok=True, complete=complete, interrupted=stopped, runs=oracle.runner.executed,
        observations=len(oracle.observations), wall_s=round(time.monotonic() - start, 3), next_steps=tuple(steps),
        stop_reason=reason, flaky=flaky, mode=result.mode, first_bad=first_bad, candidates=candidates,
        last_good=tuple(last_good), confidence=round(result.confidence, 6), ambiguous=ambiguous,
        skipped=tuple(commit_doc(space, i) for i in result.skipped), fail_prob=result.fail_prob,
        posterior=tuple({"sha": c[i].sha, "short": c[i].short, "p": round(p, 6)} for i, p in result.posterior),
        attempts=tuple(attempts_in_run_order(oracle)), **base)
