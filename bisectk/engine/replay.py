"""`bisectk replay`: rebuild a bisection from a `bisectk log` record, running nothing.

Abstractions
------------
parse_log  -- the header's `bisectk bisect ...` command (repo, refs, flags) and the `observe SHA
              OUTCOME` lines, in order.
replay_log -- maps shas to candidate indices of the commit graph, feeds the observations to the same
              DAG search with an oracle that stops at the first commit the log does not cover, and
              returns the result with that next commit (None when the log is complete). Lines of
              the --good commit (an endpoint, not a candidate) are checked, not searched.
replay_record -- the same answer as a ReplayRecord (for the HTML report's pictures: the commit line
              of the log and, for a flaky log, the posterior).
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from bisectk.engine.bisect import marginal_doc, tested_commits
from bisectk.engine.records import ReplayRecord
from bisectk.errors import BisectkError
from bisectk.outcome import Outcome
from bisectk.search.history import Dag, DagResult, Observation, SearchOptions, SearchStopped, StopSearch, search_dag
from bisectk.spaces.commits import CommitGraph, list_graph


def parse_log(text: str) -> tuple[dict, list[tuple[str, Outcome]]]:
    header: dict = {}
    observations = []
    for n, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].strip() if not line.startswith("# bisectk bisect") else ""
        if line.startswith("# bisectk bisect"):
            try:
                argv = shlex.split(line[2:])
            except ValueError as exc:   # an unclosed quote: not a header bisectk wrote
                raise BisectkError(f"line {n}: the header cannot be read ({exc})") from None
            header = {"flaky": "--flaky" in argv, "first_parent": "--first-parent" in argv}
            for key in ("--repo", "--good", "--bad"):
                if key in argv and argv.index(key) + 1 < len(argv):
                    header[key[2:]] = argv[argv.index(key) + 1]
            continue
        if not body:
            continue
        parts = body.split()
        if len(parts) != 3 or parts[0] != "observe":
            raise BisectkError(f"line {n}: expected 'observe SHA OUTCOME', got {line.strip()!r}")
        try:
            observations.append((parts[1], Outcome(parts[2])))
        except ValueError:
            raise BisectkError(f"line {n}: unknown outcome {parts[2]!r} (pass, fail or unresolved)") from None
    if not {"repo", "good", "bad"} <= header.keys():
        raise BisectkError("not a bisectk log: the '# bisectk bisect --repo ... --good ... --bad ...' header is missing")
    return header, observations


def read_log(path: Path) -> str:
    """The text of a log file, or one line saying why it is not one (missing, a directory, binary)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BisectkError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BisectkError(f"{path}: not a bisectk log (binary data at byte {exc.start}; "
                           f"`bisectk log` writes UTF-8 text)") from None
    if "\0" in text:
        raise BisectkError(f"{path}: not a bisectk log (binary data: a NUL byte at character {text.index(chr(0))})")
    return text


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


def replay_record(path: Path, repo: Path | None = None, replayed=None) -> ReplayRecord:
    """`replayed`: replay_log's answer for this log, when the caller has it already."""
    start = time.monotonic()
    result, graph, nxt = replayed or replay_log(path, repo)
    header, observed = parse_log(read_log(path))

    def doc(sha_or_index) -> dict:
        if sha_or_index is None or (isinstance(sha_or_index, str) and graph.good.sha.startswith(sha_or_index)):
            return {"index": None, **graph.good.to_dict()}
        try:
            i = sha_or_index if isinstance(sha_or_index, int) else graph.index(sha_or_index)
        except Exception:      # a parent outside the candidates: an ancestor of --good, good
            return {"index": None, "sha": sha_or_index, "subject": "an ancestor of --good"}
        return {"index": i, **graph[i].to_dict()}
    found = result.found and not result.contradiction
    return ReplayRecord(
        command="replay", endpoints=None, ok=True, complete=result.complete, interrupted=False, runs=0,
        observations=len(observed), wall_s=round(time.monotonic() - start, 3), log=str(path),
        repo=str(repo or header.get("repo", "")), good=graph.good.sha, bad=graph.bad.sha, commits=len(graph),
        flaky=bool(header.get("flaky")), mode=result.mode,
        first_bad=doc(result.culprit) if found else None,
        last_good=tuple(doc(sha) for sha in graph.parent_shas_of(result.culprit)) if found else (),
        candidates=tuple(doc(i) for i in result.candidates), next=doc(nxt) if nxt is not None else None,
        confidence=round(result.confidence, 6), skipped=tuple(doc(i) for i in result.skipped),
        contradiction=result.contradiction,
        tested=tested_commits(graph, ((doc(sha)["sha"], outcome) for sha, outcome in observed)),
        marginal=marginal_doc(graph, result))
