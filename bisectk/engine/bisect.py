"""`bisectk bisect`: the first bad commit between --good and --bad, each commit run in its own
worktree, never in the user's checkout.

History is a DAG, searched with git's semantics: the candidates are the commits reachable from
--bad and not from --good (merges and side branches included); a commit is bad exactly when the
culprit is among its ancestors (itself included). `--first-parent` makes the candidates the
mainline chain. "Last good" is the culprit's parents.

Abstractions
------------
run_bisect   -- verify both endpoints through the commit space's trials (the bad one re-run when
                it passes; the good one is --good itself, not a candidate), make the judging
                oracle with the failure they showed, decide flaky mode, seed the search with the
                bad endpoint's runs, run the DAG search (binary, Bayesian, k-way) and return a
                BisectRecord (next steps as facts: report/advice.py words them). A contradiction
                (a good commit that descends from a bad one) is reported as such, never answered.
commit_doc   -- a commit as the record stores it (sha, subject, author, date, files).

Only the target failure counts as bad; any other failure is UNRESOLVED (skipped), like a build
failure, unless --any-failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bisectk.engine.ablate import subject_record
from bisectk.engine.endpoints import verify
from bisectk.engine.hangs import hang_facts
from bisectk.engine.oracle import Oracle, Trials
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import AttemptRecord, BisectRecord, EndpointCheck
from bisectk.events import PhaseStarted
from bisectk.outcome import DEFAULT_SAME_FAILURE, Outcome, Verdict
from bisectk.run.runner import Runner
from bisectk.search.history import Dag, DagResult, Observation, SearchOptions, SearchStopped, search_dag
from bisectk.spaces.revisions import GOOD, CommitSpace

MAX_DESCRIBED = 20   # candidates described with their files (each costs a git call)
REASONS = {"interrupt": "interrupted", "budget": "run budget spent", "stop": "stopped"}


def commit_doc(space: CommitSpace, i: Any, full: bool = False) -> dict[str, Any]:
    info = space.commits.describe(i) if full and i != GOOD else space.info(i)
    return {"index": i if i != GOOD else None, **info.to_dict()}


def attempts_in_run_order(trials: Trials, mode: str) -> list[AttemptRecord]:
    """Every run the bisection made (or read from the ledger), in the order made; failures named
    under the --same-failure `mode`."""
    graph = trials.space.commits
    ends = {graph.good.sha: "endpoint (good)", graph.bad.sha: "endpoint (bad)"}
    out = []
    for n, t in enumerate(trials.trials, 1):
        v = Verdict.fold([t.run])
        failure = v.failure(mode)
        out.append(AttemptRecord(n, ends.get(t.key, "bisect"), (t.key,), t.label, t.judged.value,
                                 v.describe(), failure.describe() if failure else None, 1,
                                 round(t.run.duration_s, 3), t.cached, metrics=dict(t.run.metrics)))
    return out


def tested_commits(graph, observed) -> tuple[dict, ...]:
    """Each commit run, in topological order (--good first, index None), with its pass / fail /
    unresolved counts: the commit line of the reports' pictures. `observed` yields (sha, outcome as
    the search judged it)."""
    counts: dict[str, dict[str, int]] = {}
    for sha, outcome in observed:
        counts.setdefault(sha, {o.value: 0 for o in Outcome})[Outcome(outcome).value] += 1
    rows = []
    for sha, c in counts.items():
        i = None if sha == graph.good.sha else graph.index(sha)
        info = graph.good if i is None else graph[i]
        rows.append({"index": i, "sha": sha, "short": info.short, "subject": info.subject, **c})
    return tuple(sorted(rows, key=lambda r: -1 if r["index"] is None else r["index"]))


def marginal_doc(graph, result: DagResult) -> tuple[dict, ...]:
    return tuple({"index": i, "short": graph[i].short, "p": p} for i, p in result.marginal)


def run_bisect(runner: Runner, space: CommitSpace, policy: RunPolicy, *,
               environment: dict | Callable[[], dict] | None = None, repo: str = "", first_parent: bool = False,
               any_failure: bool = False) -> BisectRecord:
    """`environment`: the capture for the record, or a callable that gives it (called when the
    record is made, so a capture running in the background overlaps the runs). `any_failure`:
    every failure counts as bad (git bisect's view), not only the bad endpoint's."""
    start = time.monotonic()
    trials = Trials(runner, space, policy)
    graph = space.commits
    n = len(graph)
    check = verify(trials, GOOD, n - 1, repeat=policy.repeat or 1, measure=False)
    base = dict(command="bisect", endpoints=check, subject=subject_record(runner.spec), repo=repo,
                good=graph.good.sha, bad=graph.bad.sha, commits=n, first_parent=first_parent,
                environment={}, session=runner.session, protocol=runner.spec.protocol)
    if not check.ok:
        base["environment"] = _environment(environment)
        return BisectRecord(ok=False, complete=False, interrupted=False, runs=runner.executed,
                            observations=len(trials.trials), wall_s=time.monotonic() - start,
                            attempts=tuple(attempts_in_run_order(trials, DEFAULT_SAME_FAILURE)),
                            tested=tested_commits(graph, ((t.key, t.judged) for t in trials.trials)), **base)
    oracle = Oracle(trials, check.target, any_failure=any_failure)
    flaky = check.flaky
    bad_runs = [r for r in check.bad.runs if r.outcome is not Outcome.UNRESOLVED]
    seed = ([Observation(n - 1, oracle.judge_run(r)) for r in bad_runs] if flaky
            else [Observation(n - 1, Outcome.FAIL)])
    merges = graph.merges()
    mode = ("Bayesian, flake-aware" if flaky else "binary") + (f", {policy.jobs}-way" if policy.jobs > 1 else "")
    runner.events.emit(PhaseStarted("search", f"{mode} over {n} candidate commits"
                                    + (f" ({merges} merge{'s' if merges != 1 else ''})" if merges and not first_parent else "")
                                    + (f"; bad fails {check.bad_rate.describe()}" if flaky else "")))
    options = SearchOptions(flaky=flaky, jobs=policy.jobs, confidence=policy.confidence, max_runs=policy.max_runs,
                            width=oracle.width if policy.jobs > 1 else None)
    stopped, reason = False, ""
    try:
        result = search_dag(Dag.from_csr(*graph.csr()), oracle if policy.jobs == 1 else None,
                            batch_oracle=oracle.batch if policy.jobs > 1 else None,
                            options=options, observations=seed)
    except SearchStopped as stop:
        result, stopped, reason = stop.result, True, REASONS.get(stop.reason, stop.reason)
    base["environment"] = _environment(environment)
    return _record(runner, oracle, check, result, flaky, stopped, reason, start, base)


def _environment(environment: dict | Callable[[], dict] | None) -> dict:
    return (environment() if callable(environment) else environment) or {}


def last_good(trials: Trials, check: EndpointCheck, culprit: int,
              first_parent: bool = False) -> list[dict[str, Any]]:
    """The culprit's parents, each with its verdict: a tested candidate's runs, the --good
    endpoint's, or good by ancestry (an ancestor of --good, never run). With --first-parent only
    the first parent: a merge's other parents are the branch it brought in, not last good."""
    space: CommitSpace = trials.space
    graph = space.commits
    out = []
    parents = graph.parent_shas_of(culprit)
    for sha in parents[:1] if first_parent else parents:
        if sha == graph.good.sha:
            out.append({**commit_doc(space, GOOD), "verdict": check.good.describe() + " (--good)"})
            continue
        try:
            i = graph.index(sha)
        except Exception:
            out.append({"index": None, "sha": sha, "subject": "", "author": "", "date": "",
                        "verdict": "good: an ancestor of --good (not run)"})
            continue
        v = trials.verdict(i)
        out.append({**commit_doc(space, i), "verdict": v.describe() if v else "not run"})
    return out


def advice(graph, result: DagResult, text: str | None, first_bad: dict | None, stopped: bool,
           reason: str) -> list[dict]:
    """What to try next, as facts (report/advice.py words them)."""
    steps: list[dict] = []
    if stopped:
        steps.append({"step": "resume", "reason": reason})
    if len(result.candidates) > 1:
        steps.append({"step": "fix_skipped"})
    if result.contradiction:
        steps.append({"step": "contradiction", "text": text})
    if first_bad:
        parents = graph.parent_shas_of(result.culprit)
        steps += [{"step": "inspect", "sha": first_bad["sha"][:10]},
                  {"step": "isolate_lines", "good": parents[0][:10] if parents else graph.good.short,
                   "bad": first_bad["sha"][:10]}]
    return steps


def _record(runner: Runner, oracle: Oracle, check: EndpointCheck, result: DagResult, flaky: bool, stopped: bool,
            reason: str, start: float, base: dict) -> BisectRecord:
    trials = oracle.trials
    space: CommitSpace = trials.space
    graph = space.commits
    described = [commit_doc(space, i, full=True) for i in result.candidates[:MAX_DESCRIBED]]
    candidates = tuple(described + [commit_doc(space, i) for i in result.candidates[MAX_DESCRIBED:]])
    found = result.culprit is not None and not result.contradiction
    first_bad = commit_doc(space, result.culprit, full=True) if found else None
    text = None
    if result.contradiction:
        text = result.contradiction
        for i in result.conflict:
            text = text.replace(f"#{i}", graph[i].short)
    complete = result.complete and not stopped
    hangs = hang_facts(oracle, check, result.culprit if found and complete else None,
                       f"the first bad commit ({graph[result.culprit].short})" if found else "")
    return BisectRecord(
        ok=True, complete=complete, interrupted=stopped, runs=runner.executed,
        observations=len(trials.trials), wall_s=round(time.monotonic() - start, 3),
        advice=tuple(advice(graph, result, text, first_bad, stopped, reason)), run_s=trials.run_seconds(),
        stop_reason=reason or ("contradiction" if result.contradiction else ""), flaky=flaky, mode=result.mode,
        rounds=result.rounds,
        first_bad=first_bad, candidates=candidates, contradiction=text if result.contradiction else None,
        last_good=tuple(last_good(trials, check, result.culprit, base["first_parent"])) if found else (),
        confidence=round(result.confidence, 6), ambiguous=len(result.candidates) > 1,
        skipped=tuple(commit_doc(space, i) for i in result.skipped), fail_prob=result.fail_prob,
        posterior=tuple({"sha": graph[i].sha, "short": graph[i].short, "p": round(p, 6)} for i, p in result.posterior),
        attempts=tuple(attempts_in_run_order(trials, oracle.mode)),
        tested=tested_commits(graph, ((t.key, t.judged) for t in trials.trials)),
        marginal=marginal_doc(graph, result), hangs=hangs, **base)
