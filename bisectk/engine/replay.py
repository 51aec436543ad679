"""`bisectk replay`: rebuild a bisection from a `bisectk log` record, running nothing.

Abstractions
------------
parse_log  -- (engine/gitlog.py, the log format's one owner: it writes `bisectk log` too) the
              bisection a log describes and its observations, from `bisectk log` or `git bisect log`.
replay_log -- maps shas (and ref names, which git bisect replay resolves too) to candidate indices
              of the commit graph, feeds the observations to the same DAG search with an oracle
              that stops at the first commit the log does not cover, and returns the result with
              that next commit (None when the log is complete). Lines of the --good commit (an
              endpoint, not a candidate) are checked, not searched; skips outside the range are
              ignored, as git ignores them.
replay_record -- the same answer as a ReplayRecord (for the HTML report's pictures: the commit line
              of the log and, for a flaky log, the posterior).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from bisectk.engine.bisect import marginal_doc, tested_commits
from bisectk.engine.direction import fix_confidence, repeats_for
from bisectk.engine.gitlog import Header, parse_log, read_log
from bisectk.engine.records import ReplayRecord
from bisectk.errors import BisectkError
from bisectk.outcome import Outcome
from bisectk.search.history import Dag, DagResult, Observation, SearchOptions, SearchStopped, StopSearch, search_dag
from bisectk.search.rates import TWO_RATE, flake_model
from bisectk.spaces.commits import CommitGraph, SpaceError, list_graph, open_repo, resolve


def replay_log(path: Path, repo: Path | None = None) -> tuple[DagResult, CommitGraph, int | str | None]:
    """(the answer, the graph, the next commit to test: a candidate's index, or the sha of a merge
    base the log has not tested yet, or None when the log is complete)."""
    result, graph, nxt, _, _ = _replay(path, repo)
    return result, graph, nxt


def _replay(path: Path, repo: Path | None):
    """replay_log's answer, with the log's header and its marks (names resolved to shas)."""
    header, observed = parse_log(read_log(path))
    graph, observations, observed = _observations(header, observed, repo)
    fix = _FixRuns.of(header, graph, observed)
    if fix is not None:
        observations = fix.fold(observations, len(graph) - 1)
    asked: list[int] = []

    def oracle(i: int) -> Outcome:
        asked.append(i)
        raise StopSearch()
    for sha in graph.merge_bases:   # git tests a merge base first: a log that has not yet stops there
        if not any(sha.startswith(s) for s, _ in observed):
            open_ = DagResult(culprit=None, candidates=tuple(range(len(graph))), parents=(), runs=len(observations),
                              new_runs=0, rounds=0, confidence=0.0, skipped=(), observations=tuple(observations),
                              complete=False, mode="replay")
            return open_, graph, sha, header, observed
    try:
        result, nxt = search_dag(Dag.from_csr(*graph.csr()), oracle, options=_options(header, graph, observed),
                                 observations=observations), None
    except SearchStopped as stop:
        result, nxt = stop.result, asked[0] if asked else None
    if fix is not None:
        result = replace(result, confidence=min(result.confidence, fix.confidence()))
    return result, graph, nxt, header, observed


@dataclass
class _FixRuns:
    """A fix searched with an intermittent old side (engine/direction.py FixOracle): a commit is
    called fixed only after `repeats` passes in a row, and broken at its first failure, so the
    log's runs are folded into those calls before the search reads them (read one by one, a
    broken commit's lucky pass would be a fix, and the old end's own passes a contradiction)."""

    repeats: int
    fail_rate: float
    called: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, header: Header, graph: CommitGraph, observed) -> _FixRuns | None:
        if not header.terms.find_fix or header.manual or not (header.flaky or header.intermittent):
            return None
        old_end = [o for sha, o in observed if graph.good.sha.startswith(sha) and o is not Outcome.UNRESOLVED]
        rate = sum(o is Outcome.FAIL for o in old_end) / len(old_end) if old_end else 1.0
        return cls(repeats_for(rate, header.confidence, len(graph)), rate)

    def fold(self, observations: list[Observation], new_end: int) -> list[Observation]:
        folded, passes = [], {}
        for o in observations:
            if o.index == new_end:      # the engine seeds the new end once, not run by run
                folded.append(o)
            elif o.outcome is Outcome.FAIL:         # a pass: the new side
                passes[o.index] = passes.get(o.index, 0) + 1
                if passes[o.index] == self.repeats:
                    folded.append(o)
                    passes[o.index] = 0
                    if self.repeats > 1:
                        self.called[o.index] = self.called.get(o.index, 0) + 1
            else:
                folded.append(o)
                passes[o.index] = 0
        return folded      # passes short of `repeats`: a call the log stops inside, asked again

    def confidence(self) -> float:
        """FixOracle.confidence: P(no commit called fixed was a broken one that passed every run)."""
        return fix_confidence(self.fail_rate, self.repeats, self.called.values())


def _options(header: Header, graph: CommitGraph, observed) -> SearchOptions:
    """The search the log's observations were fed to (engine/bisect.py's choice): with --flaky the
    two-rate model, its base the old end's runs; flake-aware, in rates.flake_model's undeclared
    model, where the endpoints showed the failure intermittent (one rate where a person's verdicts
    contradicted each other, as engine/manual.py searches); the
    confidence asked. A fix is searched as the engine searches it: binary, its runs folded
    (_FixRuns), never weighed."""
    two_rate = header.flaky and not header.terms.find_fix and not header.manual
    old_end = [outcome for sha, outcome in observed if graph.good.sha.startswith(sha)]
    fails, passes = sum(o is Outcome.FAIL for o in old_end), sum(o is Outcome.PASS for o in old_end)
    # a fix's confirmation counts the broken end's runs too, as the search sees them (a pass: FAIL)
    base = (fails, passes) if two_rate else (passes, fails) if header.terms.find_fix and not header.manual else (0, 0)
    return SearchOptions(flaky=(header.flaky or header.intermittent) and (header.manual or not header.terms.find_fix),
                         confidence=header.confidence, steady=header.steady,
                         # a person's contradicting verdicts: the manual search's own one-rate model
                         prior=TWO_RATE if two_rate else None if header.manual else flake_model(False), base=base,
                         fix=header.terms.find_fix and not header.manual,
                         # git's log and a person's verdicts hold no confirmation runs: their
                         # answer is the log's, as git gives it (a bisectk log holds its own)
                         confirm=header.source == "bisectk" and not header.manual)


def _observations(header: Header, observed, repo: Path | None):
    """The commit graph the log's bisection searched, its observations as the search's (FAIL =
    the new side), and the log's marks with every name resolved to its full sha (a mark may name
    a tag or a branch, or abbreviate a sha: git bisect replay resolves each). Lines of the old
    ends and of merge bases are checked, not searched; a skip outside the range is ignored."""
    terms = header.terms
    ends = ("--bad", "--good") if terms.find_fix else ("--good", "--bad")
    where = repo or header.repo or Path.cwd()
    if repo is None and header.repo is None:    # git's own log: the repository is the one it is read in
        try:
            open_repo(where)
        except SpaceError as exc:
            raise SpaceError(f"{exc}: a `git bisect log` names no repository; run bisectk replay in the "
                             "repository, or give --repo") from None
    graph = list_graph(where, header.olds, header.new, first_parent=header.first_parent,
                       paths=header.paths, ends=ends)
    # an old end seen on the new side is a contradiction, but where the model allows it: --flaky's
    # good side may fail now and then, an intermittent fix's broken side may pass
    mixed = header.flaky or (terms.find_fix and header.intermittent)
    observations, marks = [], []
    for name, outcome in observed:
        side = terms.new_side(outcome)
        word = {Outcome.FAIL: terms.new, Outcome.PASS: terms.old}.get(side, "skip")
        sha = name if _FULL_SHA.fullmatch(name) else resolve(graph.repo, name, f"the log's {word} mark")
        marks.append((sha, outcome))
        if any(g.startswith(sha) for g in (*graph.goods, *graph.merge_bases)):
            if side is Outcome.FAIL and not mixed:
                what = "merge base" if any(m.startswith(sha) for m in graph.merge_bases) else "old end"
                raise BisectkError(f"the log records {sha[:10]} (the {what}) as {terms.new}: the first {terms.new} "
                                   f"commit is not between the log's ends")
            continue
        try:
            observations.append(Observation(graph.index(sha), side))
        except BisectkError:
            if side is Outcome.UNRESOLVED:   # git too: a skip outside the range changes nothing
                continue
            if sha == name:     # a full sha is not looked up above: one of no commit here is not a contradiction
                resolve(graph.repo, name, f"the log's {word} mark")
            shown = name if name != sha else sha[:10]
            raise BisectkError(f"the log marks {shown} {word}, but it is not between the log's ends (an ancestor "
                               f"of a {terms.old} commit): the log contradicts itself") from None
    _new_end_failed(graph, observations, terms)
    return graph, observations, marks


def _new_end_failed(graph: CommitGraph, observations: list[Observation], terms) -> None:
    """A log whose new end ran and was never on the new side (a triage's 'nothing to triage', a
    bisect whose bad endpoint did not reproduce) stopped at its endpoints: there is no failure to
    bisect, whatever the search would make of it. A new end never run (git's log names it on its
    start line) is the log's word."""
    end = len(graph) - 1
    sides = [o.outcome for o in observations if o.index == end]
    if sides and Outcome.FAIL not in sides and Outcome.PASS in sides:
        raise BisectkError(f"the log records {graph.bad_sha[:10]} (the {terms.new} end) as {terms.old} in "
                           f"{sides.count(Outcome.PASS)} run(s) and never failed there: the bisection stopped at its "
                           f"endpoints, so there is no first {terms.new} commit to find")


_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def replay_record(path: Path, repo: Path | None = None) -> ReplayRecord:
    """The log's answer as a record: the first bad commit (when the log determines it), the
    culprit's parents (whenever one candidate is left), the candidates, the commit to test next
    (a candidate, or a merge base the log has not tested yet)."""
    start = time.monotonic()
    result, graph, nxt, header, observed = _replay(path, repo)
    # every candidate and skipped commit is named with its subject: read in batches, not one git
    # process each (a log that had only started a 30,000-commit range took 80 s)
    graph.prefetch([*result.candidates, *result.skipped])

    def doc(sha_or_index) -> dict:
        if sha_or_index is None or (isinstance(sha_or_index, str) and graph.good.sha.startswith(sha_or_index)):
            return {"index": None, **graph.good.to_dict()}
        try:
            i = sha_or_index if isinstance(sha_or_index, int) else graph.index(sha_or_index)
        except Exception:      # a parent outside the candidates: an ancestor of --good, good
            return {"index": None, "sha": sha_or_index, "subject": "an ancestor of --good"}
        return {"index": i, **graph[i].to_dict()}
    one_left = result.culprit is not None and not result.contradiction
    return ReplayRecord(
        command="replay", endpoints=None, ok=True, complete=result.complete, interrupted=False, runs=0,
        observations=len(observed), wall_s=round(time.monotonic() - start, 3), log=str(path),
        repo=str(repo or header.repo or ""), good=graph.good.sha, bad=graph.bad.sha, commits=len(graph),
        flaky=header.flaky, mode=result.mode,
        first_bad=doc(result.culprit) if result.found and not result.contradiction else None,
        last_good=tuple(doc(sha) for sha in graph.parent_shas_of(result.culprit)) if one_left else (),
        candidates=tuple(doc(i) for i in result.candidates),
        next=(doc(nxt) if isinstance(nxt, int) else {"index": None, **graph.info(nxt).to_dict()}) if nxt is not None
        else None,
        confidence=result.confidence, skipped=tuple(doc(i) for i in result.skipped),
        terms=(header.terms.old, header.terms.new), find_fix=header.terms.find_fix,
        contradiction=result.contradiction,
        tested=tested_commits(graph, ((doc(sha)["sha"], outcome) for sha, outcome in observed)),
        marginal=marginal_doc(graph, result))
