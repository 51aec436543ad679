"""`bisectk bisect`: the first bad commit between --good and --bad, each commit run in its own
worktree, never in the user's checkout.

History is a DAG, searched with git's semantics: the candidates are the commits reachable from
--bad and not from --good (merges and side branches included); a commit is bad exactly when the
culprit is among its ancestors (itself included). `--first-parent` makes the candidates the
mainline chain. "Last good" is the culprit's parents.

Abstractions
------------
run_bisect   -- verify both endpoints through the commit space's oracle (the bad one re-run when
                it passes; the good one is --good itself, not a candidate), decide flaky mode, seed
                the search with the bad endpoint's runs, run the DAG search (binary, Bayesian,
                k-way) and return a BisectRecord. A contradiction (a good commit that descends
                from a bad one) is reported as such, never answered.
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
from bisectk.engine.oracle import SpaceOracle
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import AttemptRecord, BisectRecord, EndpointCheck
from bisectk.events import PhaseStarted
from bisectk.outcome import Outcome, Verdict
from bisectk.search.history import Dag, DagResult, Observation, SearchOptions, SearchStopped, search_dag
from bisectk.search.rates import ONE_SIDED, TWO_RATE
from bisectk.spaces.revisions import GOOD, CommitSpace

MAX_DESCRIBED = 20   # candidates described with their files (each costs a git call)
REASONS = {"interrupt": "interrupted", "budget": "run budget spent", "stop": "stopped"}


def commit_doc(space: CommitSpace, i: Any, full: bool = False) -> dict[str, Any]:
    info = space.commits.describe(i) if full and i != GOOD else space.info(i)
    return {"index": i if i != GOOD else None, **info.to_dict()}


def attempts_in_run_order(oracle: SpaceOracle) -> list[AttemptRecord]:
    """Every run the bisection made (or read from the ledger), in the order made."""
    graph = oracle.space.commits
    ends = {graph.good.sha: "endpoint (good)", graph.bad.sha: "endpoint (bad)"}
    out = []
    for n, obs in enumerate(oracle.observations, 1):
        v = Verdict.fold([obs.run])
        failure = v.failure(oracle.target.mode if oracle.target else "check")
        out.append(AttemptRecord(n, ends.get(obs.key, "bisect"), (obs.key,), obs.label, obs.judged.value,
                                 v.describe(), failure.describe() if failure else None, 1,
                                 round(obs.run.duration_s, 3), obs.cached, metrics=dict(obs.run.metrics)))
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


def run_bisect(oracle: SpaceOracle, *, policy: RunPolicy | None = None,
               environment: dict | Callable[[], dict] | None = None,
               repo: str = "", first_parent: bool = False) -> BisectRecord:
    """`environment`: the capture for the record, or a callable that gives it (called when the
    record is made, so a capture running in the background overlaps the runs)."""
    start = time.monotonic()
    policy = policy or oracle.policy
    space: CommitSpace = oracle.space
    graph, runner = space.commits, oracle.runner
    n = len(graph)
    check = verify(oracle, GOOD, n - 1, repeat=policy.repeat or 1, calibrate_runs=policy.calibrate_runs,
                   flaky=policy.flaky, same_failure=policy.same_failure, measure=False)
    base = dict(command="bisect", endpoints=check, subject=subject_record(runner.spec), repo=repo,
                good=graph.good.sha, bad=graph.bad.sha, commits=n, first_parent=first_parent,
                environment={}, session=runner.session, protocol=runner.spec.protocol)
    if not check.ok:
        base["environment"] = _environment(environment)
        return BisectRecord(ok=False, complete=False, interrupted=False, runs=runner.executed,
                            observations=len(oracle.observations), wall_s=time.monotonic() - start,
                            attempts=tuple(attempts_in_run_order(oracle)),
                            tested=tested_commits(graph, ((o.key, o.judged) for o in oracle.observations)), **base)
    oracle.target = check.target
    flaky = check.flaky
    two_rate = policy.flaky is True     # --flaky: the good side may fail too, less often
    bad_runs = [r for r in check.bad.runs if r.outcome is not Outcome.UNRESOLVED]
    seed = [Observation(n - 1, oracle.judge_run(r)) for r in bad_runs] or [Observation(n - 1, Outcome.FAIL)]
    merges = graph.merges()
    mode = ("Bayesian, two rates" if two_rate else "Bayesian, flake-aware" if flaky else "binary") \
        + (f", {policy.jobs}-way" if policy.jobs > 1 else "")
    runner.events.emit(PhaseStarted("search", f"{mode} over {n} candidate commits"
                                    + (f" ({merges} merge{'s' if merges != 1 else ''})" if merges and not first_parent else "")
                                    + (f"; bad fails {check.bad_rate.describe()}" if flaky else "")))
    options = SearchOptions(flaky=flaky, jobs=policy.jobs, confidence=policy.confidence, max_runs=policy.max_runs,
                            width=oracle.width if policy.jobs > 1 else None,
                            prior=TWO_RATE if two_rate else ONE_SIDED, switch_prior=ONE_SIDED,
                            base=(check.good_rate.fails, check.good_rate.runs - check.good_rate.fails)
                            if two_rate else (0, 0))
    stopped, reason = False, ""
    try:
        result = search_dag(Dag.from_csr(*graph.csr()), oracle if policy.jobs == 1 else None,
                            batch_oracle=oracle.batch if policy.jobs > 1 else None,
                            options=options, observations=seed)
    except SearchStopped as stop:
        result, stopped, reason = stop.result, True, REASONS.get(stop.reason, stop.reason)
    base["environment"] = _environment(environment)
    return _record(oracle, check, result, flaky, stopped, reason, start, base, two_rate)


def _environment(environment: dict | Callable[[], dict] | None) -> dict:
    return (environment() if callable(environment) else environment) or {}


def last_good(oracle: SpaceOracle, check: EndpointCheck, culprit: int,
              first_parent: bool = False) -> list[dict[str, Any]]:
    """The culprit's parents, each with its verdict: a tested candidate's runs, the --good
    endpoint's, or good by ancestry (an ancestor of --good, never run). With --first-parent only
    the first parent: a merge's other parents are the branch it brought in, not last good."""
    space: CommitSpace = oracle.space
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
        v = oracle.verdicts.get(sha)
        out.append({**commit_doc(space, i), "verdict": v.describe() if v else "not run"})
    return out


def _record(oracle: SpaceOracle, check: EndpointCheck, result: DagResult, flaky: bool, stopped: bool,
            reason: str, start: float, base: dict, two_rate: bool = False) -> BisectRecord:
    space: CommitSpace = oracle.space
    graph = space.commits
    described = [commit_doc(space, i, full=True) for i in result.candidates[:MAX_DESCRIBED]]
    candidates = tuple(described + [commit_doc(space, i) for i in result.candidates[MAX_DESCRIBED:]])
    # --flaky with the budget spent short of the confidence: the two rates were not told apart,
    # and no commit is named (the posterior over the candidates is in the record)
    not_separable = two_rate and stopped and reason == REASONS["budget"] and result.separable is False
    found = result.culprit is not None and not result.contradiction and not not_separable
    first_bad = commit_doc(space, result.culprit, full=True) if found else None
    steps: list[str] = []
    text = None
    if result.contradiction:
        text = result.contradiction
        for i in result.conflict:
            text = text.replace(f"#{i}", graph[i].short)
        steps.append(f"The observations contradict each other: {text}. The failure may be flaky (try --flaky) "
                     "or depend on more than the commit (the environment, the build cache).")
    if first_bad:
        parents = graph.parent_shas_of(result.culprit)
        steps += [f"Inspect the diff of the first bad commit: git show {first_bad['sha'][:10]}",
                  f"Isolate the culprit lines inside it: bisectk triage ... --good "
                  f"{parents[0][:10] if parents else graph.good.short} --bad {first_bad['sha'][:10]}"]
    if len(result.candidates) > 1:
        steps.insert(0, "Make the skipped commits testable (fix their build) to resolve the ambiguity.")
    if not_separable:
        r = result.rates
        steps.insert(0, f"Not separable: the good side fails {r.old:.2f} [{r.old_lo:.2f}, {r.old_hi:.2f}], "
                        f"the bad side {r.new:.2f} [{r.new_lo:.2f}, {r.new_hi:.2f}]"
                        + (f"; about {result.more_runs} more runs would probably separate them "
                           f"(--max-runs, then --resume)" if result.more_runs else "") + ".")
    elif stopped:
        steps.insert(0, f"The search stopped ({reason}); run it again with --resume to continue.")
    complete = result.complete and not stopped
    hangs = hang_facts(oracle, check, result.culprit if found and complete else None,
                       f"the first bad commit ({graph[result.culprit].short})" if found else "")
    return BisectRecord(
        ok=True, complete=complete, interrupted=stopped, runs=oracle.runner.executed,
        observations=len(oracle.observations), wall_s=round(time.monotonic() - start, 3), next_steps=tuple(steps),
        run_s=oracle.run_seconds(),
        stop_reason=reason or ("contradiction" if result.contradiction else ""), flaky=flaky, mode=result.mode,
        rounds=result.rounds,
        first_bad=first_bad, candidates=candidates, contradiction=text if result.contradiction else None,
        last_good=tuple(last_good(oracle, check, result.culprit, base["first_parent"])) if found else (),
        confidence=round(result.confidence, 6), ambiguous=len(result.candidates) > 1,
        skipped=tuple(commit_doc(space, i) for i in result.skipped), fail_prob=result.fail_prob,
        posterior=tuple({"sha": graph[i].sha, "short": graph[i].short, "p": round(p, 6)} for i, p in result.posterior),
        attempts=tuple(attempts_in_run_order(oracle)),
        tested=tested_commits(graph, ((o.key, o.judged) for o in oracle.observations)),
        marginal=marginal_doc(graph, result), hangs=hangs,
        rates=result.rates.to_dict() if result.rates is not None else None,
        separable=False if not_separable else result.separable, more_runs=result.more_runs if not_separable else None,
        confirmation=result.confirmation.to_dict() if result.confirmation is not None else None,
        switched=f"{result.switched[0]} at {graph[result.switched[1]].short}"
        if result.switched and 0 <= result.switched[1] < len(graph) else
        (result.switched[0] if result.switched else None), **base)
