"""`bisectk bisect --manual`: a person is the oracle, as with `git bisect good/bad/skip`.

Each commit to judge is checked out in a worktree of the repository's cache (never the user's
checkout) and its path printed; the person looks at it however they like (runs it, opens a
profile, a picture) and answers with a word. The same DAG search as an automatic bisection picks
the commits; nothing is run by bisectk.

Verdicts are observations like any other: each goes to the ledger (an `observation` event of the
session, `undo` events cancel the latest ones), so `bisectk log` prints the session and `bisectk
replay` rebuilds its answer. Starting the same bisection again (same ends, pathspec and
direction) resumes it: the verdicts still in force are carried into the new session, and the
search, being a pure function of them, asks for the commit it would have asked next.

Flake-aware where verdicts conflict: when they admit no single first bad commit (a commit judged
good that descends from one judged bad, or one commit judged both ways), the search goes on
flake-aware (search/dag_bayes.py): a new-side verdict stays proof and an old-side one becomes
evidence, and commits may be asked again until one first bad commit holds the confidence asked
for. Verdicts that fit no culprit even so (new-side verdicts on branches with no common
candidate) are said, and only `undo` (or `reset`) moves on.

Abstractions
------------
effective  -- the verdicts in force: a session's observation events less the undone ones.
Manual     -- the dialogue: `run()` asks for the merge bases first (as git does), then for the
              commits the search picks, and returns a ManualResult.
ManualResult -- the search's answer (or None when the person stopped), the verdicts, whether the
              search went flake-aware, and a problem line (a bad merge base).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bisectk.engine.direction import Terms
from bisectk.names import counted
from bisectk.outcome import Outcome
from bisectk.search.history import (Dag, DagResult, InconsistentObservations, Observation, SearchOptions,
                                    SearchStopped, search_dag)
from bisectk.spaces.commits import CommitGraph, SpaceError
from bisectk.spaces.revisions import unreadable

COMMANDS = ("skip", "undo", "log", "quit", "reset")


class _Undo(Exception):
    pass


class _Quit(Exception):
    def __init__(self, reset: bool = False):
        super().__init__()
        self.reset = reset


def effective(observations: list[dict[str, Any]], undos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's observation events less the undone ones (events without a `seq` are never undone)."""
    undone = {u.get("seq") for u in undos if u.get("seq") is not None}
    return [e for e in observations if e.get("seq") is None or e.get("seq") not in undone]


@dataclass
class ManualResult:
    result: DagResult | None
    verdicts: list[tuple[str, Outcome]]
    flaky: bool = False
    problem: str | None = None
    reset: bool = False
    merge_bases: list[dict] = field(default_factory=list)


class Manual:
    """The dialogue over one commit graph. `ask(prompt)` returns the person's line (None at the
    end of input), `say(line)` prints one; `lease(sha)` is a context manager giving the worktree
    path of a commit; `record(kind, data)` writes a ledger event."""

    def __init__(self, graph: CommitGraph, terms: Terms, *, ask: Callable[[str], str | None],
                 say: Callable[[str], None], lease, record: Callable[[str, dict], None],
                 verdicts: list[tuple[str, Outcome]] = (), confidence: float = 0.99):
        self.graph, self.terms, self.ask, self.say, self.lease, self.record = graph, terms, ask, say, lease, record
        self.verdicts: list[tuple[str, Outcome]] = []
        self.seqs: list[int] = []       # each verdict's event number: an undo names the one it cancels
        self.confidence = confidence
        self.flaky = False
        self.seq = 0
        self.asked = 0
        # the words a verdict may take: the terms, old/new, and good/bad by behaviour (for a fix
        # good is the new side: it passes again)
        self.words: dict[str, Outcome] = {terms.old: Outcome.PASS, terms.new: Outcome.FAIL,
                                          "old": Outcome.PASS, "new": Outcome.FAIL}
        if terms.find_fix:
            self.words.update(good=Outcome.FAIL, bad=Outcome.PASS)
        for sha, outcome in verdicts:     # carried from the session resumed
            self._keep(sha, outcome, resumed=True)

    # -- the words ------------------------------------------------------------------------------
    def prompt_words(self) -> str:
        return f"{self.terms.old}, {self.terms.new}, skip, undo, log or quit"

    def parse(self, line: str) -> tuple[str, Outcome | None]:
        """('verdict', side) for a verdict, (command, None) for skip/undo/log/quit/reset,
        ('?', None) otherwise. A unique prefix is enough."""
        word = line.strip().lower()
        if not word:
            return "?", None
        choices = {**{w: ("verdict", side) for w, side in self.words.items()},
                   "skip": ("verdict", Outcome.UNRESOLVED), **{c: (c, None) for c in COMMANDS if c != "skip"},
                   "exit": ("quit", None)}
        if word in choices:
            return choices[word]
        hits = {choices[w] for w in choices if w.startswith(word)}
        return hits.pop() if len(hits) == 1 else ("?", None)

    # -- verdicts -------------------------------------------------------------------------------
    def _store(self, sha: str, outcome: Outcome, resumed: bool = False) -> None:
        self.seq += 1
        side = self.terms.new_side(outcome)
        word = {Outcome.PASS: self.terms.old, Outcome.FAIL: self.terms.new, Outcome.UNRESOLVED: "skip"}[side]
        self.record("observation", {"space": "commits", "point": sha, "sha": sha, "seq": self.seq,
                                    "outcome": self.terms.subject(side).value, "manual": True,
                                    "verdict": f"{word} (your verdict{', resumed' if resumed else ''})"})

    def _undo(self) -> bool:
        if not self.verdicts:
            self.say("nothing to undo")
            return False
        sha, outcome = self.verdicts.pop()
        self.record("undo", {"seq": self.seqs.pop(), "sha": sha})   # numbers are never reused
        self.say(f"undone: {sha[:10]} {self._word(outcome)}")
        return True

    def _word(self, outcome: Outcome) -> str:
        side = self.terms.new_side(outcome)
        return {Outcome.PASS: self.terms.old, Outcome.FAIL: self.terms.new, Outcome.UNRESOLVED: "skip"}[side]

    def log_lines(self) -> list[str]:
        return [f"{sha} {self._word(o)}" for sha, o in self.verdicts] or ["(no verdicts yet)"]

    # -- one question ---------------------------------------------------------------------------
    def judge(self, sha: str, note: str = "") -> Outcome:
        """Check `sha` out, print where, and read a verdict: the subject's outcome it stands for
        (a commit that cannot be checked out is skipped, with git's reason)."""
        info = self.graph.info(sha)
        self.asked += 1
        again = any(s == sha for s, _ in self.verdicts)
        self.say(f"[{len(self.verdicts) + 1}] {info.short} {info.subject}"
                 + (f"  ({note})" if note else "") + ("  (asked again: your verdicts conflict)" if again else ""))
        try:
            with self.lease(sha) as path:
                self.say(f"    checked out at {path}")
                return self._read(sha)
        except SpaceError as exc:
            why = unreadable(self.graph.repo, sha, str(exc))
            if why is None:
                raise
            self.say(f"    cannot be checked out ({why}): skipped")
            self._keep(sha, Outcome.UNRESOLVED)
            return Outcome.UNRESOLVED

    def _read(self, sha: str) -> Outcome:
        while True:
            line = self.ask(f"{self.prompt_words()}? ")
            if line is None:
                raise _Quit()
            what, side = self.parse(line)
            if what == "verdict":
                outcome = self.terms.subject(side) if side is not Outcome.UNRESOLVED else side
                self._keep(sha, outcome)
                return outcome
            if what == "undo":
                if self._undo():
                    raise _Undo()
            elif what == "log":
                for entry in self.log_lines():
                    self.say(entry)
            elif what in ("quit", "reset"):
                raise _Quit(reset=what == "reset")
            else:
                self.say(f"answer {self.prompt_words()} (or reset: forget these verdicts)")

    def _keep(self, sha: str, outcome: Outcome, resumed: bool = False) -> None:
        self.verdicts.append((sha, outcome))
        self._store(sha, outcome, resumed)
        self.seqs.append(self.seq)

    # -- the dialogue ---------------------------------------------------------------------------
    def run(self) -> ManualResult:
        try:
            while True:
                try:
                    bases, problem = self._merge_bases()
                    if problem:
                        return ManualResult(None, self.verdicts, problem=problem, merge_bases=bases)
                    return self._search(bases)
                except _Undo:   # a merge base's verdict taken back: the merge bases are asked again first
                    continue
        except _Quit as q:
            return ManualResult(None, self.verdicts, self.flaky, reset=q.reset)

    def _merge_bases(self) -> tuple[list[dict], str | None]:
        """git's rule: a merge base of bad and a good that is no good itself is judged first."""
        facts = []
        for sha in self.graph.merge_bases:
            known = [o for s, o in self.verdicts if s == sha]
            outcome = known[-1] if known else self.judge(sha, "a merge base: git tests it first")
            side = self.terms.new_side(outcome)
            facts.append({"sha": sha, "short": sha[:10], "subject": self.graph.info(sha).subject,
                          "side": self._word(outcome) if side is not Outcome.UNRESOLVED else "untestable",
                          "verdict": "your verdict"})
            if side is Outcome.FAIL:
                olds = " ".join(g[:10] for g in self.graph.goods)
                return facts, (f"the merge base {sha[:10]} is {self.terms.new}: the first '{self.terms.new}' commit "
                               f"is between {sha[:10]} and [{olds}]"
                               + ("; to find that fix: bisectk bisect --manual --find-fix "
                                  f"--bad {sha[:10]} --good {self.graph.goods[0][:10]} ..." if self.terms.default else "")
                               + "; a wrong verdict: the same command with --fresh asks again")
            if side is Outcome.UNRESOLVED:
                self.say(f"the merge base {sha[:10]} was skipped: the first {self.terms.new} commit may not be "
                         "among the candidates; going on anyway (as git does)")
        return facts, None

    def _search(self, bases: list[dict]) -> ManualResult:
        graph = self.graph
        dag = Dag.from_csr(*graph.csr())
        n = len(graph)
        while True:
            judged = {sha for sha, _ in self.verdicts}
            if any(sha not in judged for sha in graph.merge_bases):
                raise _Undo()     # undone: the merge bases are judged before the search, as git does
            obs = [Observation(n - 1, Outcome.FAIL)]    # --bad (the new end) is the new side
            for sha, outcome in self.verdicts:
                if sha in graph.merge_bases or sha in graph.goods:
                    continue
                try:
                    obs.append(Observation(graph.index(sha), self.terms.new_side(outcome)))
                except SpaceError:
                    continue
            oracle = lambda i: self.terms.new_side(self.judge(graph.sha(i)))   # noqa: E731
            try:
                result = search_dag(dag, oracle, options=SearchOptions(flaky=self.flaky, confidence=self.confidence,
                                                                       confirm=False),   # a person's verdict is not re-run
                                    observations=obs)
            except _Undo:
                continue
            except SearchStopped:
                raise _Quit() from None
            except InconsistentObservations as exc:
                self._stuck(str(exc))
                continue
            if result.contradiction and not self.flaky:
                text = result.contradiction
                for i in result.conflict:
                    text = text.replace(f"#{i}", graph[i].short)
                self.say(f"your verdicts conflict ({text}): the behaviour may be intermittent; going on "
                         "flake-aware, and a commit may be asked again")
                self.flaky = True
                continue
            if result.contradiction:
                self._stuck(result.contradiction)
                continue
            return ManualResult(result, self.verdicts, self.flaky, merge_bases=bases)

    def _stuck(self, why: str) -> None:
        """Verdicts no first bad commit fits, even flake-aware: only undo or quit moves on."""
        self.say(f"these verdicts fit no first {self.terms.new} commit, even as an intermittent behaviour ({why}); "
                 "undo one, or quit")
        while True:
            line = self.ask("undo, log or quit? ")
            if line is None:
                raise _Quit()
            what, _ = self.parse(line)
            if what == "undo" and self._undo():
                return
            if what == "log":
                for entry in self.log_lines():
                    self.say(entry)
            if what in ("quit", "reset"):
                raise _Quit(reset=what == "reset")


def fingerprint_of(olds: list[str], new: str, paths: list[str], first_parent: bool, terms: Terms) -> str:
    """The ledger fingerprint of a manual bisection: its range and direction, so the same command
    finds the session to resume."""
    import hashlib
    import json
    blob = json.dumps([sorted(olds), new, list(paths), first_parent, terms.find_fix])
    return "manual-" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def run_manual_session(root, olds: list[str], new: str, names: tuple[str, str], paths: list[str], terms: Terms, *,
                       first_parent: bool, confidence: float, fresh: bool, ledger, ask, say):
    """The whole of `bisect --manual`: list the candidates, resume the verdicts of the last manual
    session of the same bisection (unless `fresh`, or it was reset), run the dialogue, and store
    the result record. Returns the BisectRecord, or None when the person quit before an answer."""
    import time

    from bisectk.engine.records import BisectRecord
    from bisectk.engine.session import Session, ledger_location
    from bisectk.spaces.commits import list_graph
    from bisectk.spaces.worktrees import WorktreePool
    from bisectk.spec import adhoc_spec
    start = time.monotonic()
    graph = list_graph(root, olds, new, first_parent=first_parent, paths=paths, ends=names)
    fp = fingerprint_of(list(graph.goods), graph.bad_sha, list(graph.paths), first_parent, terms)
    args = {"repo": str(root), "good": graph.good_sha, "bad": graph.bad_sha, "first_parent": first_parent,
            "manual": True, "olds": list(graph.goods), "paths": list(graph.paths), **terms.to_dict(),
            "subject": "(you)", "confidence": confidence}
    spec = adhoc_spec(["(you)"], name="manual", cwd=root, protocol="git")
    with Session("bisect", spec, ledger_location(ledger, repo=root), fingerprint=fp, args=args) as session:
        db, prev = session.ledger, session.previous
        carried: list[tuple[str, Outcome]] = []
        if prev is not None and not fresh and (prev.get("result") or {}).get("stop_reason") != "reset":
            kept = effective(db.events(prev["id"], "observation"), db.events(prev["id"], "undo"))
            carried = [(e["sha"], Outcome(e["outcome"])) for e in kept]
        n = len(graph)
        old_word, new_word = ("bad", "good") if terms.find_fix else ("good", "bad")
        say(f"{counted(n, 'candidate commit')} from {graph.good_sha[:10]} ({old_word}) to {graph.bad_sha[:10]} ({new_word})"
            + (f", touching {' '.join(graph.paths)}" if graph.paths else "")
            + (f"; {len(carried)} verdict(s) of session {prev['id']} resumed" if carried else ""))
        say(f"you are the oracle: for each commit answer {terms.old} or {terms.new} (or skip, undo, log, quit); "
            "your checkout is never touched")
        with WorktreePool(root, size=1) as pool:
            dialogue = Manual(graph, terms, ask=ask, say=say, lease=pool.lease,
                              record=lambda kind, data: db.add_event(session.id, kind, data),
                              verdicts=carried, confidence=confidence)
            found = dialogue.run()
        rec = _record(graph, terms, found, args, session.id, time.monotonic() - start, first_parent)
        session.record(rec.to_dict())
        if found.reset:
            say("verdicts forgotten: the next `bisect --manual` of these commits starts over")
            return None
        if found.result is None and found.problem is None:
            say(f"stopped after {len(found.verdicts)} verdict(s); the same command resumes (bisectk log prints them)")
            return None
        return rec


def _record(graph: CommitGraph, terms: Terms, found: ManualResult, args: dict, session: int, wall_s: float,
            first_parent: bool):
    """The manual bisection as a BisectRecord (endpoints: none were run; verdicts are the
    observations)."""
    from bisectk.engine.records import BisectRecord, confidence_of

    def doc(i: int, full: bool = False) -> dict:
        info = graph.describe(i) if full else graph[i]
        return {"index": i, **info.to_dict()}
    r = found.result
    found_one = r is not None and r.culprit is not None and not r.contradiction
    stand_in = found_one and r.culprit == len(graph) - 1 and not graph.bad_touches
    steps = []
    if found.problem:
        steps.append(found.problem)
    if stand_in:
        steps.append(f"No commit that touches {' '.join(graph.paths)} is {terms.new}: the change is in another path.")
    first = doc(r.culprit, True) if found_one and not stand_in else None
    last = []
    if first is not None:
        for sha in graph.parent_shas_of(r.culprit):
            try:
                last.append(doc(graph.index(sha)) | {"verdict": "your verdict"})
            except SpaceError:
                last.append({"index": None, "sha": sha, "subject": "", "author": "", "date": "",
                             "verdict": f"{terms.old}: given or an ancestor of one (not judged)"})
    reason = ("reset" if found.reset else "merge base" if found.problem else "pathspec" if stand_in
              else "stop" if r is None else "")
    return BisectRecord(
        command="bisect", endpoints=None, ok=found.problem is None, complete=bool(first) and r.complete,
        interrupted=r is None and not found.problem, runs=0, observations=len(found.verdicts), wall_s=round(wall_s, 3),
        next_steps=tuple(steps), session=session, stop_reason=reason, repo=args["repo"], good=graph.good_sha,
        bad=graph.bad_sha, commits=len(graph), first_parent=first_parent, flaky=found.flaky,
        mode=(r.mode if r else ""), first_bad=first,
        candidates=tuple(doc(i, True) for i in (r.candidates if r else ())), last_good=tuple(last),
        confidence=round(r.confidence, 6) if r else 0.0, ambiguous=bool(r) and len(r.candidates) > 1,
        confidence_of=confidence_of(first, len(r.candidates) if r else 0, bool(first) and r.complete),
        skipped=tuple(doc(i) for i in (r.skipped if r else ())), goods=graph.goods, paths=graph.paths,
        terms=(terms.old, terms.new), find_fix=terms.find_fix, manual=True, merge_bases=tuple(found.merge_bases),
        protocol="manual")
