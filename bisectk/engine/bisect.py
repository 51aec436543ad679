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
                oracle with the failure they showed, decide flaky mode (--flaky: two rates, the
                good side may fail too), seed the search with the bad endpoint's runs, run the
                DAG search (binary, Bayesian, k-way) and return a BisectRecord (next steps as
                facts: report/advice.py words them). A contradiction (a good commit that
                descends from a bad one) is reported as such, never answered.
commit_doc   -- a commit as the record stores it (sha, subject, author, date, files).
FirstProbes  -- verify's `meanwhile` at --jobs above one (no --flaky, not --find-fix): the bad
                endpoint's first run and the search's likely first round begin beside the good
                endpoint's, and the search starts from their outcomes as observations.

merge_bases  -- a --good that is not an ancestor of --bad (a release branch, a sibling) leaves the
                merge bases of bad and the goods to test first, as git does: each runs (in flaky
                mode up to as many runs as the bad endpoint took to fail); one that shows the
                target failure ends the command (the failure was fixed between it and the goods:
                a --find-fix case), one that cannot be tested is said and the search goes on.

Only the target failure counts as bad; any other failure is UNRESOLVED (skipped), like a build
failure, unless --any-failure. With --find-fix (engine/direction.py) the search names the first
commit where the failure stops: the old endpoint is the failing one, and the words follow the
terms ("first fixed commit").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait as futures_wait
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bisectk.engine import fresh_build
from bisectk.engine.direction import FixOracle, Terms, fix_base, repeats_for
from bisectk.engine.endpoints import BadBeside, hang_checks, side_by_side, unusable_record, verify
from bisectk.engine.hangs import hang_facts
from bisectk.names import counted
from bisectk.engine.interrupts import live, waited
from bisectk.engine.oracle import ENDPOINTS, MERGE_BASES, SEARCH, Oracle, Trials
from bisectk.engine.policy import RunPolicy
from bisectk.events import Note, PhaseStarted
from bisectk.outcome import DEFAULT_SAME_FAILURE, Outcome, Verdict
from bisectk.run.runner import Runner
from bisectk.spaces.commits import SpaceError
from bisectk.spaces.revisions import GOOD, CommitSpace, Outside

if TYPE_CHECKING:   # loaded where used: the first run does not wait for them (issue 27, the start)
    from bisectk.engine.records import AttemptRecord, BisectRecord, EndpointCheck
    from bisectk.search.history import DagResult

MAX_DESCRIBED = 20   # candidates described with their files (each costs a git call)
REASONS = {"interrupt": "interrupted", "budget": "run budget spent", "stop": "stopped"}


def commit_doc(space: CommitSpace, i: Any, full: bool = False) -> dict[str, Any]:
    info = space.commits.describe(i) if full and i != GOOD else space.info(i)
    return {"index": i if i != GOOD else None, **info.to_dict()}


def attempts_in_run_order(trials: Trials, mode: str, terms: Terms = Terms()) -> list[AttemptRecord]:
    """Every run the bisection made (or read from the ledger), in the order made; failures named
    under the --same-failure `mode`; each named by the phase that made it (a run of the --bad
    commit the search asked for is the search's, not an endpoint check)."""
    from bisectk.engine.records import AttemptRecord
    graph = trials.space.commits
    ends = {graph.good_sha: f"endpoint ({terms.old})", graph.bad_sha: f"endpoint ({terms.new})"}
    out = []
    for n, t in enumerate(trials.trials, 1):
        v = Verdict.fold([t.run])
        failure = v.failure(mode)
        phase = {ENDPOINTS: ends.get(t.key, "endpoint"), MERGE_BASES: "merge base", SEARCH: "bisect"}.get(t.phase, t.phase)
        out.append(AttemptRecord(n, phase, (t.key,), t.label, t.judged.value,
                                 v.describe(), failure.describe() if failure else None, 1,
                                 round(t.run.duration_s, 3), t.cached, metrics=dict(t.run.metrics)))
    return out


class FirstProbes:
    """The search's likely first round, begun before the endpoints are known (verify's `meanwhile`,
    where `side_by_side`): each commit has a worktree of its own, so nothing of the endpoints'
    runs need finish first. The round is one a k-way search would send after the bad endpoint's
    failure (search/dag_bisect.first_round), over the slots the endpoints' runs leave: `early`
    starts jobs - 2 probes beside the good and bad endpoints' runs (nothing at --jobs 2), or
    `__call__` (good ran first: the ledger had it, or the executor keeps its watchdog with the job,
    Ray) the same round beside the bad endpoint's, so that every executor makes the same
    decisions; `drop` ends them unjudged when good did not pass. The slot good's run frees is
    left idle (`then`): a probe begun there would end a run's time after the bad endpoint's, and
    the search waits for every probe. Each is a real run of its commit, judged once the oracle is aimed;
    `observations()` waits for them and gives the search its start, whatever mode the endpoints
    decide (a flaky start's posterior takes them too).

    The round is chosen in a thread of its own (the DAG is built from the listing: numpy and a
    pass over the history), so the good endpoint's run never waits for it."""

    def __init__(self, oracle: Oracle, graph, policy: RunPolicy):
        self.oracle, self.graph, self.policy = oracle, graph, policy
        self.started: dict[int, Future] = {}
        self.dag = None
        self._chosen: threading.Thread | None = None
        self._lock = threading.Lock()
        self._dropped = False

    def _round(self, k: int) -> None:
        """Choose a round of `k` probes (fewer under --max-runs) and start them."""
        from bisectk.search.dag_bisect import first_round
        from bisectk.search.history import Dag, Observation
        if self.policy.max_runs is not None:
            k = min(k, self.policy.max_runs - 2)    # the endpoints' runs come first
        try:
            self.dag = Dag.from_csr(*self.graph.csr())
            probes = first_round(self.dag, [Observation(len(self.graph) - 1, Outcome.FAIL)], k)
        except Exception:        # nothing ahead: the search chooses its own first round
            probes = []
        with self._lock:
            if not self._dropped:
                for i in probes:
                    self.started[i] = self.oracle.submit(i)

    def _choose(self, k: int) -> None:
        if k < 1:
            return
        self._chosen = threading.Thread(target=self._round, args=(k,), name="bisectk-first-round", daemon=True)
        self._chosen.start()

    def early(self) -> None:
        self._choose(self.policy.jobs - 2)      # the good and bad endpoints' runs hold two slots
        also = " and the search's likely first commits" if self.policy.jobs > 2 else ""
        self.oracle.trials.runner.events.emit(Note(
            f"the bad endpoint's run{also} start beside the good endpoint's; their watchdog is set once it has passed"))

    def then(self) -> None:
        pass

    def __call__(self) -> None:
        self._choose(self.policy.jobs - 2)

    def drop(self) -> None:
        """The good endpoint did not pass (or the runs ran the checkout's code): the probes end
        unjudged (the runner's hold ends those begun; those not begun are cancelled)."""
        with self._lock:
            self._dropped = True
            futures = list(self.started.values())
            self.started.clear()
        for f in futures:
            f.cancel()
        self.oracle.abandon()       # a probe's run over already waits to be judged: it ends too
        futures_wait(futures)

    def wait(self) -> None:
        """Let the runs begun end (the endpoints proved unusable: no search takes them)."""
        self._join()
        futures_wait(list(self.started.values()))

    def _join(self) -> None:
        if self._chosen is not None:
            self._chosen.join()

    def observations(self) -> list:
        """Each probe's outcome, as the aimed oracle judged it, in the order started; a probe whose
        run did not come to an outcome (ended unjudged) is left to the search."""
        from bisectk.search.history import Observation
        out = []
        try:
            self._join()
            with live():   # waiting for a run is a run: a Ctrl-C stops it at once (engine/interrupts.py)
                for i, f in list(self.started.items()):
                    try:
                        out.append(Observation(i, waited(f)))
                    except KeyboardInterrupt:
                        raise
                    except BaseException:      # cancelled, abandoned: the search asks again if it must
                        continue
        except KeyboardInterrupt:
            # left at once (one held back is raised on entering `live`); the probes still under way
            # end as bisectk cleans up, and are not stored (Runner.stop), as a batch's are
            self.oracle.trials.runner.stop()
            raise
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
        if sha == graph.good.sha:
            i = None
        else:
            try:
                i = graph.index(sha)
            except SpaceError:
                continue    # no candidate (a merge base, another good): in the attempts and the facts
        info = graph.good if i is None else graph[i]
        rows.append({"index": i, "sha": sha, "short": info.short, "subject": info.subject, **c})
    return tuple(sorted(rows, key=lambda r: -1 if r["index"] is None else r["index"]))


def marginal_doc(graph, result: DagResult) -> tuple[dict, ...]:
    return tuple({"index": i, "short": graph[i].short, "p": p} for i, p in result.marginal)


def run_bisect(runner: Runner, space: CommitSpace, policy: RunPolicy, *,
               environment: dict | Callable[[], dict] | None = None, repo: str = "", first_parent: bool = False,
               any_failure: bool = False, terms: Terms = Terms(), facts: dict | None = None) -> BisectRecord:
    """`environment`: the capture for the record, or a callable that gives it (called when the
    record is made, so a capture running in the background overlaps the runs). `any_failure`:
    every failure counts as bad (git bisect's view), not only the bad endpoint's. `terms`: the
    direction and its words (engine/direction.py). `facts`: more of the record's fields (how the
    command was resolved)."""
    start = time.monotonic()
    trials = Trials(runner, space, policy)
    graph = space.commits
    n = len(graph)
    # the endpoint that must pass and the one that must fail: for a fix, the new one passes
    passing, failing = (n - 1, GOOD) if terms.find_fix else (GOOD, n - 1)
    oracle = Oracle(trials, None, any_failure=any_failure, aimed=False)
    # --jobs above one: the search's first round begins beside the endpoints (a fix's search
    # repeats its passes, FixOracle: it chooses its own)
    ahead = FirstProbes(oracle, graph, policy) if side_by_side(policy) and not terms.find_fix else None
    check = verify(trials, passing, failing, repeat=policy.repeat or runner.spec.repeat, measure=terms.find_fix,
                   meanwhile=ahead or (BadBeside() if side_by_side(policy) else None))
    from bisectk.engine import checkout_imports
    leaked = [] if space.remote else checkout_imports.checkout_files(runner.imported_files, Path(graph.repo))
    if leaked and (said := checkout_imports.redirect(runner, space, leaked)):
        if ahead is not None:       # they ran the checkout's code too
            ahead.drop()
            ahead = None
        oracle.aim(None)
        oracle.close()
        trials = Trials(runner, space, policy)      # the runs so far ran the checkout's code: none counts
        oracle = Oracle(trials, None, any_failure=any_failure, aimed=False)
        check = verify(trials, passing, failing, repeat=policy.repeat or runner.spec.repeat, measure=terms.find_fix)
        check = replace(check, notes=(said, *check.notes))
        if problem := checkout_imports.still_leaking(runner, space, (facts or {}).get("command_files", ())):
            check = replace(check, problem=problem)
    if (not check.ok and not terms.find_fix and check.good.n_fail
            and fresh_build.needed(runner, space, policy, False, False)):
        # the good commit failed over ignored files its cached worktree kept (another commit's
        # build, in this command or an earlier one): built from scratch, does it pass?
        if said := fresh_build.good_from_scratch(trials, check.target):
            check = replace(check, details=(*check.details, said))
    if (not check.ok and not terms.find_fix and not check.bad.n_fail and check.bad.n_pass
            and fresh_build.needed(runner, space, policy, False, False)):
        # the bad commit passed over ignored files its cached worktree kept (the good commit's
        # build, run there first): built from scratch, does it fail?
        if fresh_bad := fresh_build.bad_from_scratch(trials, failing):
            check = replace(check, details=(*check.details, fresh_build.BAD_FAILS))
            facts = {**(facts or {}), "fresh_build": fresh_bad}
    from bisectk.engine.records import BisectRecord, SubjectRecord, captured
    from bisectk.search.history import Dag, Observation, SearchOptions, SearchStopped, search_dag
    from bisectk.search.rates import SWITCHED, flake_model
    base = dict(command="bisect", endpoints=check, subject=SubjectRecord.of(runner.spec, len(runner.memo.files)), repo=repo,
                good=graph.good.sha, bad=graph.bad.sha, commits=n, first_parent=first_parent,
                environment={}, session=runner.session, protocol=runner.spec.protocol,
                goods=graph.goods, paths=graph.paths, terms=(terms.old, terms.new), find_fix=terms.find_fix,
                **(facts or {}))
    oracle.aim(check.target, **hang_checks(check, runner))
    # the first round's outcomes, before any merge base runs (its runs count in the search's phase)
    interrupted = False
    try:
        probed = ahead.observations() if ahead is not None and check.ok else []
    except KeyboardInterrupt:   # the endpoints are verified: the search stops before its first step
        probed, interrupted = [], True
    if check.ok and not interrupted:
        bases, problem = merge_bases(runner, oracle, check, terms)
        base["merge_bases"] = tuple(bases)
        if problem:
            check = replace(check, problem=problem)
            base["endpoints"] = check
    if not check.ok:
        if ahead is not None:
            ahead.wait()
        oracle.close()
        base["environment"] = captured(environment)
        return unusable_record(BisectRecord, trials, start,
                               attempts=tuple(attempts_in_run_order(trials, DEFAULT_SAME_FAILURE, terms)),
                               tested=tested_commits(graph, ((t.key, t.judged) for t in trials.trials)), **base)
    flaky = check.flaky
    two_rate = policy.flaky is True and not terms.find_fix   # --flaky: the good side may fail too, less often
    search, repeats = oracle, 0
    if terms.find_fix:
        # a fix: a pass is the new side; when the failure is intermittent a pass must be repeated
        repeats = repeats_for(check.bad_rate.value, policy.confidence, n) if flaky else 1
        search = FixOracle(oracle, terms, repeats, check.bad_rate.value)
        seed = [Observation(n - 1, Outcome.FAIL)]
    else:
        bad_runs = [r for r in check.bad.runs if r.outcome is not Outcome.UNRESOLVED]
        seed = [Observation(n - 1, oracle.judge_run(r)) for r in bad_runs] or [Observation(n - 1, Outcome.FAIL)]
        seed += probed
    bayes = flaky and not terms.find_fix
    merges = graph.merges()
    mode = ("Bayesian, two rates" if two_rate else "Bayesian, flake-aware" if bayes
            else f"binary, each pass confirmed by up to {repeats} runs" if repeats > 1
            else "binary") + (f", {policy.jobs}-way" if policy.jobs > 1 else "")
    runner.events.emit(PhaseStarted("search", f"{mode} over {counted(n, 'candidate commit')}"
                                    + (f" ({merges} merge{'s' if merges != 1 else ''})" if merges and not first_parent else "")
                                    + (f"; {terms.old if terms.find_fix else 'bad'} fails {check.bad_rate.describe()}"
                                       if flaky else "")))
    # the first round's probes are the search's runs: the budget counts them (one a probe, as a
    # question; a probe the ledger answered is given back through more_runs, as any question)
    budget = None if policy.max_runs is None else max(policy.max_runs - len(probed), 0)
    options = SearchOptions(flaky=bayes, jobs=policy.jobs, confidence=policy.confidence, max_runs=budget,
                            width=oracle.width if policy.jobs > 1 else None,
                            prior=flake_model(two_rate), switch_prior=SWITCHED,
                            base=(check.good_rate.fails, check.good_rate.runs - check.good_rate.fails)
                            if two_rate else fix_base(check.bad_rate) if terms.find_fix else (0, 0),
                            fix=terms.find_fix,     # its confirmation repeats the fixed commit's passes
                            # what a failing and a passing run cost (find-fix: the search's "bad" passes)
                            costs=(lambda: trials.costs()[::-1]) if terms.find_fix else trials.costs,
                            steady=policy.flaky is False,   # --no-flaky: declared deterministic
                            more_runs=search.more_runs)     # a different failure's re-runs, a fix's repeats: the budget's too
    stopped, reason = False, ""
    try:
        dag = ahead.dag if ahead is not None and ahead.dag is not None else Dag.from_csr(*graph.csr())
        ask, batch = (_interrupted, _interrupted) if interrupted else (search, search.batch)
        result = search_dag(dag, ask if policy.jobs == 1 else None,
                            batch_oracle=batch if policy.jobs > 1 else None,
                            options=options, observations=seed)
    except SearchStopped as stop:
        result, stopped, reason = stop.result, True, REASONS.get(stop.reason, stop.reason)
        if stop.reason == "budget" and policy.max_runs is not None:    # as ablate's and diff's say it
            reason = f"run budget of {policy.max_runs} spent"
    finally:
        oracle.close()
    if repeats > 1:
        result = replace(result, confidence=min(result.confidence, search.confidence()))
        base["repeats"] = repeats
    if (not stopped and result.culprit is not None and not result.contradiction and len(result.candidates) == 1
            and fresh_build.needed(runner, space, policy, flaky, terms.find_fix)):
        # the builds were incremental over other commits' outputs: the answer, from scratch
        base["fresh_build"] = fresh_build.check(trials, None if any_failure else check.target, result.culprit)
    base["environment"] = captured(environment)
    return _record(runner, oracle, check, result, flaky, stopped, reason, start, base, two_rate, terms)


def _interrupted(*_, **__):
    """The search's oracle once a Ctrl-C came while the first round's runs were awaited: its first
    question raises it, so the search stops with its best so far (SearchStopped), as it does
    when one comes during its own runs."""
    raise KeyboardInterrupt


def merge_bases(runner: Runner, oracle: Oracle, check: EndpointCheck, terms: Terms) -> tuple[list[dict], str | None]:
    """Test the merge bases of --bad and the goods (graph.merge_bases) before the search, as git
    does; (their facts, the problem when one shows the new side's behaviour)."""
    graph = oracle.space.commits
    facts, problem = [], None
    if graph.merge_bases:
        runner.events.emit(PhaseStarted("merge bases", f"a --{'bad' if terms.find_fix else 'good'} is not an "
                                               f"ancestor of the other end: testing {len(graph.merge_bases)} merge "
                                               "base(s) first"))
    # as many runs as the failing endpoint needed to show its failure (1 when it is not flaky)
    tries = max(1, len(check.bad.runs)) if check.flaky else 1
    for sha in graph.merge_bases:
        point = Outside(sha)
        side = Outcome.UNRESOLVED
        for _ in range(tries):
            with oracle.asking(MERGE_BASES):
                side = terms.new_side(oracle(point))
            if side is Outcome.FAIL or (side is Outcome.PASS and terms.find_fix):
                break       # the new side's behaviour, or (for a fix) a failure that proves the old one
        info = graph.info(sha)
        word = {Outcome.PASS: terms.old, Outcome.FAIL: terms.new, Outcome.UNRESOLVED: "untestable"}[side]
        v = oracle.trials.verdict(point)
        facts.append({"sha": sha, "short": info.short, "subject": info.subject, "side": word,
                      "verdict": v.describe() if v else ""})
        if side is Outcome.FAIL and problem is None:
            olds = " ".join(g[:10] for g in graph.goods)
            problem = (f"the merge base {sha[:10]} of --bad and --good is {terms.new}"
                       + (f": the failure was fixed between {sha[:10]} and [{olds}]; to find that fix: bisectk bisect "
                          f"--find-fix --bad {sha[:10]} --good {graph.goods[0][:10]} ..." if terms.default else
                          f": the first '{terms.new}' commit is between {sha[:10]} and [{olds}]"))
    return facts, problem


def last_good(trials: Trials, check: EndpointCheck, culprit: int,
              first_parent: bool = False, terms: Terms = Terms(), flaky: bool = False) -> list[dict[str, Any]]:
    """The culprit's parents, each with its verdict: a tested candidate's runs, the --good
    endpoint's, or good by ancestry (an ancestor of --good, never run). With --first-parent only
    the first parent: a merge's other parents are the branch it brought in, not last good. A
    flake-aware answer puts a parent's failures on the old side: they are said as its rate, not
    as the verdict 'bad (exit 1) [7/60 failed]' that read as a contradiction of 'last good'."""
    space: CommitSpace = trials.space
    graph = space.commits
    out = []
    parents = graph.parent_shas_of(culprit)
    for sha in parents[:1] if first_parent else parents:
        if sha == graph.good.sha:   # the old endpoint: --good, or for a fix --bad
            v, opt = (check.bad, "--bad") if terms.find_fix else (check.good, "--good")
            out.append({**commit_doc(space, GOOD), "verdict": v.describe() + f" ({opt})"})
            continue
        try:
            i = graph.index(sha)
        except Exception:
            opt = "--bad" if terms.find_fix else "--good"
            word = f"a {opt} given (not run)" if sha in graph.goods else \
                f"a tested merge base" if sha in graph.merge_bases else f"an ancestor of {opt} (not run)"
            v = trials.verdict(Outside(sha))
            out.append({"index": None, "sha": sha, "subject": "", "author": "", "date": "",
                        "verdict": f"{terms.old}: {word}" + (f" [{v.describe()}]" if v and sha in graph.merge_bases else "")})
            continue
        v = trials.verdict(i)
        said = "not run" if not v else v.describe() if not (flaky and v.n_fail) else (
            f"{v.n_fail}/{v.n_fail + v.n_pass} runs failed: the rate before the first {terms.new} commit")
        out.append({**commit_doc(space, i), "verdict": said})
    return out


def advice(graph, result: DagResult, text: str | None, first_bad: dict | None, stopped: bool, reason: str,
           not_separable: bool = False, terms: Terms = Terms(), pathspec: bool = False,
           first_parent: bool = False) -> list[dict]:
    """What to try next, as facts (report/advice.py words them)."""
    steps: list[dict] = []
    if not_separable:
        r = result.rates
        steps.append({"step": "not_separable", "old": r.old, "old_lo": r.old_lo, "old_hi": r.old_hi, "new": r.new,
                      "new_lo": r.new_lo, "new_hi": r.new_hi, "more_runs": result.more_runs})
    elif stopped:
        steps.append({"step": "resume", "reason": reason})
    if len(result.candidates) > 1:
        steps.append({"step": "fix_skipped"})
    if pathspec:
        steps.append({"step": "other_path", "paths": list(graph.paths), "term": terms.new})
    if result.contradiction:
        steps.append({"step": "contradiction", "text": text})
    parents = graph.parent_shas_of(result.culprit) if first_bad else ()
    if first_bad:
        # `git show` of a merge shows only what it resolved (nothing, for a clean merge): what a
        # merge brought in is its diff against its first parent
        steps.append({"step": "inspect", "sha": first_bad["sha"][:10], "term": terms.new,
                      **({"parent": parents[0][:10]} if len(parents) > 1 else {})})
    if first_bad and len(parents) > 1 and first_parent:
        steps.append({"step": "inside_merge", "parent": parents[0][:10], "merge": first_bad["sha"][:10],
                      "term": terms.new, "find_fix": terms.find_fix})
    if first_bad and not terms.find_fix:
        steps.append({"step": "isolate_lines", "good": parents[0][:10] if parents else graph.good.short,
                      "bad": first_bad["sha"][:10]})
    return steps


def subject_rates(rates, find_fix: bool) -> dict | None:
    """The record's failure rates, the subject's: a fix search's FAIL is a pass of the subject
    (direction.py), so its rates are the subject's pass rates, each turned over (the fixed side
    said to fail 9 runs in 10 where it passed them)."""
    if rates is None:
        return None
    if find_fix:
        rates = replace(rates, old=1.0 - rates.old, old_lo=1.0 - rates.old_hi, old_hi=1.0 - rates.old_lo,
                        new=1.0 - rates.new, new_lo=1.0 - rates.new_hi, new_hi=1.0 - rates.new_lo)
    return rates.to_dict()


def _record(runner: Runner, oracle: Oracle, check: EndpointCheck, result: DagResult, flaky: bool, stopped: bool,
            reason: str, start: float, base: dict, two_rate: bool = False, terms: Terms = Terms()) -> BisectRecord:
    from bisectk.engine.records import BisectRecord, confidence_of
    trials = oracle.trials
    space: CommitSpace = trials.space
    graph = space.commits
    # every candidate and skipped commit is named with its subject: read in batches, not a git
    # process each (a 2,001-commit band of skips: ~2,000 git calls as the command ended)
    graph.prefetch([*result.candidates[MAX_DESCRIBED:], *result.skipped])
    described = [commit_doc(space, i, full=True) for i in result.candidates[:MAX_DESCRIBED]]
    candidates = tuple(described + [commit_doc(space, i) for i in result.candidates[MAX_DESCRIBED:]])
    # --flaky with the budget spent short of the confidence: the two rates were not told apart,
    # and no commit is named (the posterior over the candidates is in the record)
    not_separable = two_rate and stopped and reason.startswith("run budget") and result.separable is False
    found = result.culprit is not None and not result.contradiction and not not_separable
    # every candidate that touches the pathspec is on the old side: --bad stands for the commits
    # after them, which touch none of the paths; none of them can be named
    pathspec = found and result.culprit == len(graph) - 1 and not graph.bad_touches
    found = found and not pathspec
    why = "pathspec" if pathspec else ""
    first_bad = commit_doc(space, result.culprit, full=True) if found else None
    text = None
    if result.contradiction:
        text = result.contradiction
        for i in result.conflict:
            text = text.replace(f"#{i}", graph[i].short)
    # built from scratch, the first bad commit passed or a parent failed: the answer is not shown
    stale = bool((base.get("fresh_build") or {}).get("stale"))
    complete = result.complete and not stopped and not why and not stale
    hangs = hang_facts(oracle, check, result.culprit if found and complete and not terms.find_fix else None,
                       f"the first bad commit ({graph[result.culprit].short})" if found else "")
    return BisectRecord(
        ok=True, complete=complete, interrupted=stopped, runs=runner.executed,
        observations=len(trials.trials), phase_runs=trials.phase_runs(), search_made=trials.made(SEARCH),
        wall_s=round(time.monotonic() - start, 3),
        advice=(*advice(graph, result, text, first_bad, stopped, reason, not_separable, terms, pathspec,
                          base["first_parent"]),
                *oracle.stretches[:1]),
        run_s=trials.run_seconds(),
        stop_reason=reason or ("contradiction" if result.contradiction else why), flaky=flaky, mode=result.mode,
        rounds=result.rounds,
        first_bad=first_bad, candidates=candidates, contradiction=text if result.contradiction else None,
        last_good=tuple(last_good(trials, check, result.culprit, base["first_parent"], terms,
                                  flaky="bayes" in result.mode)) if found else (),
        confidence=round(result.confidence, 6), ambiguous=len(result.candidates) > 1,
        confidence_of=confidence_of(first_bad, len(candidates), complete),
        skipped=tuple(commit_doc(space, i) for i in result.skipped), fail_prob=result.fail_prob,
        posterior=tuple({"sha": graph[i].sha, "short": graph[i].short, "p": round(p, 6)} for i, p in result.posterior),
        attempts=tuple(attempts_in_run_order(trials, oracle.mode, terms)),
        tested=tested_commits(graph, ((t.key, t.judged) for t in trials.trials)),
        marginal=marginal_doc(graph, result), hangs=hangs,
        rates=subject_rates(result.rates, terms.find_fix),
        separable=False if not_separable else result.separable, more_runs=result.more_runs if not_separable else None,
        confirmation={**result.confirmation.to_dict(), **({"steady": True} if trials.policy.flaky is False else {})}
        if result.confirmation is not None else None,
        switched=f"{result.switched[0]} at {graph[result.switched[1]].short}"
        if result.switched and 0 <= result.switched[1] < len(graph) else
        (result.switched[0] if result.switched else None), **base)
