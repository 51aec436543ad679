"""`bisectk replay`: rebuild a bisection from a `bisectk log` record, running nothing.

Abstractions
------------
replay_log    -- the log read (bisectk/bisectlog.py: the format's one owner), its shas mapped to
                 candidate indices of the commit graph, the observations fed to the same DAG search
                 with an oracle that stops at the first commit the log does not cover; returns the
                 result with that next commit (None when the log is complete). Lines of the --good
                 commit (an endpoint, not a candidate) are checked, not searched.
replay_record -- the same answer as a ReplayRecord: what `replay` prints and its --json, and the HTML
                 report's pictures (the commit line of the log and, for a flaky log, the posterior).
"""

from __future__ import annotations

import time
from pathlib import Path

from bisectk.bisectlog import parse_log, read_log
from bisectk.engine.bisect import marginal_doc, tested_commits
from bisectk.engine.records import ReplayRecord
from bisectk.errors import BisectkError
from bisectk.outcome import Outcome
from bisectk.search.history import Dag, DagResult, Observation, SearchOptions, SearchStopped, StopSearch, search_dag
from bisectk.spaces.commits import CommitGraph, list_graph


def replay_log(path: Path, repo: Path | None = None) -> tuple[DagResult, CommitGraph, int | None]:
    header, observed = parse_log(read_log(path))
    graph = list_graph(repo or header["repo"], header["good"], header["bad"], first_parent=header["first_parent"])
    observations = []
    for sha, outcome in observed:
        if graph.good.sha.startswith(sha):
            if outcome is Outcome.FAIL:
                raise BisectkError(f"the log records a failure of --good {sha[:10]}: not a usable bisection")
            continue
        observations.append(Observation(graph.index(sha), outcome))
    asked: list[int] = []

    def oracle(i: int) -> Outcome:
        asked.append(i)
        raise StopSearch()
    try:
        result = search_dag(Dag.from_csr(*graph.csr()), oracle, options=SearchOptions(flaky=header["flaky"]),
                            observations=observations)
        return result, graph, None
    except SearchStopped as stop:
        return stop.result, graph, asked[0] if asked else None


def replay_record(path: Path, repo: Path | None = None) -> ReplayRecord:
    """The log's answer as a record: the first bad commit (when the log determines it), the
    culprit's parents (whenever one candidate is left), the candidates, the commit to test next."""
    start = time.monotonic()
    result, graph, nxt = replay_log(path, repo)
    header, observed = parse_log(read_log(path))

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
        repo=str(repo or header.get("repo", "")), good=graph.good.sha, bad=graph.bad.sha, commits=len(graph),
        flaky=bool(header.get("flaky")), mode=result.mode,
        first_bad=doc(result.culprit) if result.found and not result.contradiction else None,
        last_good=tuple(doc(sha) for sha in graph.parent_shas_of(result.culprit)) if one_left else (),
        candidates=tuple(doc(i) for i in result.candidates), next=doc(nxt) if nxt is not None else None,
        confidence=result.confidence, skipped=tuple(doc(i) for i in result.skipped),
        contradiction=result.contradiction,
        tested=tested_commits(graph, ((doc(sha)["sha"], outcome) for sha, outcome in observed)),
        marginal=marginal_doc(graph, result))
