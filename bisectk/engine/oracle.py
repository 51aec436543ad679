"""The oracle: the one adapter between a pure search and the runner, for every space.

Abstractions
------------
Space   -- what a search ranges over (the protocol every space in `bisectk/spaces` keeps):
           `key(point)` a stable string naming the point (a configuration key, a sha),
           `label(point)` words for progress and reports, `workload(point)` the Workload for a
           ledger lookup (nothing materialised), and `lease(point)` a context manager yielding
           the runnable Workload (a worktree checked out, hunks applied).
Trial   -- one run as it was made: point key, label, run index, the Run, how the search judged
           it, whether the ledger answered it, and the phase that asked for it (PHASES).
Trials  -- the runs of one space in one command, in the order made (the reports' attempt list),
           and each point's runs folded (its verdict, derived from them). The k-th run asked of a
           point is the runner's k-th run of its workload, so repeats are new observations and a
           resumed session replays the ledger in order; the runner is the one memo (the ledger
           behind it), and a point is materialised only when its run must really execute. A view
           over another space of the same subject (`view`: diff's line pass) shares the run
           counts, so one configuration has one run index whichever pass asks. Every trial is
           written to the ledger's event log (`bisectk log` and `replay` read it). `no_hang`: a
           point's stopped runs turned out slow, not hung (a second, longer run ended).
           `phase_runs`: how many runs each phase made, counted from the trials themselves, so
           every run (a re-run of a different failure, a second chance, a run cut short by a
           Ctrl-C and never made) is counted once, where it ran: the reports' breakdown.
Oracle  -- what a search calls: the target failure it judges against is fixed once
           (engine/endpoints.py `verify` finds it first, through the same Trials); an oracle made
           `unaimed` takes runs before that (the search's first runs beside the bad endpoint's)
           and judges them when `aim` names the target. It answers
           PASS, FAIL (the target failure) or UNRESOLVED (a build failure, an invalid hybrid, or
           a different failure, re-run up to `policy.retry_different` times first: garbage whose
           form changes from run to run must not block a proof; not one whose output says its
           source did not compile, parse or link (Run.unbuilt), the same every run of its
           tree). `batch` runs distinct points in parallel, each with its own directory and
           environment; `width` is how many a batch should hold now (--jobs, or fewer when the
           executor has fewer workers alive); `submit` starts one run in a slot and gives its
           Future (the runs a search makes ahead of its questions, search/ahead.py). Its runs
           are the search's; `asking(phase)` names another phase for the runs asked within it
           (thresholds, merge bases). `questions`: the runs that answered each question asked of
           a point, in the order asked (a search counts one run a question; the reports count
           the runs).
SideBySide -- the daemon threads behind `submit`.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Future, wait
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from bisectk.engine import slowvotes
from bisectk.engine.interrupts import live, waited
from bisectk.engine.policy import RunPolicy
from bisectk.engine.slots import Slots
from bisectk.events import Note
from bisectk.ledger.schema import stored_key
from bisectk.outcome import DEFAULT_SAME_FAILURE, FailKind, Outcome, Run, Target, Verdict
from bisectk.run.pending import RunAbandoned
from bisectk.run.progress import reach
from bisectk.run.runner import Runner
from bisectk.run.workload import Workload
from bisectk.timeouts import second_chance


class Space(Protocol):
    kind: str

    def key(self, point: Any) -> str: ...

    def label(self, point: Any) -> str: ...

    def workload(self, point: Any) -> Workload: ...

    def lease(self, point: Any) -> AbstractContextManager[Workload]: ...


# the phases a run is made in, in the order the reports name them: the endpoints' checks (and
# re-checks), the search's runs (its confirmation's and those made ahead included), the merge
# bases bisect tests first, an ordinal culprit's threshold, and a hung culprit run once more to
# read where it waits (engine/hangs.py)
ENDPOINTS, SEARCH, MERGE_BASES, THRESHOLD, HANG_PICTURE = "endpoints", "search", "merge bases", "threshold", "hang picture"
PHASES = (ENDPOINTS, SEARCH, MERGE_BASES, THRESHOLD, HANG_PICTURE)


@dataclass(frozen=True)
class Trial:
    key: str
    label: str
    index: int
    run: Run
    judged: Outcome
    cached: bool
    phase: str = ENDPOINTS


class Trials:
    def __init__(self, runner: Runner, space: Space, policy: RunPolicy | None = None, *, label: str = "",
                 _counts: tuple[Counter, threading.Lock] | None = None, _slots: Slots | None = None):
        self.runner, self.space, self.policy, self.label = runner, space, policy or RunPolicy(), label
        self._counts, self._count_lock = _counts or (Counter(), threading.Lock())
        self.slots = _slots or Slots(self.policy.jobs)     # a run's GPU with --gpus (engine/slots.py)
        self.trials: list[Trial] = []                # in the order made
        self.points: dict[str, Hashable] = {}        # key -> point, for reports
        self._verdicts: dict[str, Verdict] = {}      # key -> its runs folded (derived from the trials)
        self._lock = threading.Lock()

    def view(self, space: Space) -> Trials:
        """The trials of another space over the same subject, sharing the run counts."""
        return Trials(self.runner, space, self.policy, label=self.label, _counts=(self._counts, self._count_lock),
                      _slots=self.slots)

    def observe(self, point: Any, *, snapshot: bool = False,
                target: Target | None | Callable[[], Target | None] = None, longer: float | None = None,
                until: int | None = None, phase: str = ENDPOINTS) -> Run:
        """One new run of `point` (its next run index), executed only if the ledger lacks it; the
        trial is judged against `target` (None: as the run came; a call: the target it gives
        once the run is made, for a run begun before the endpoints named the failure).
        `snapshot`: should it hang, read where it waits whatever the budget (engine/hangs.py).
        `longer`, `until`: this run's second chance (Oracle.__call__; Runner.observe). `phase`:
        which phase asked (PHASES; the endpoints' checks call this directly, the rest through an
        Oracle). The run holds one of the --jobs slots while it executes (engine/slots.py): with
        --gpus, its GPU."""
        with live():   # the one place a held-back Ctrl-C takes effect (engine/interrupts.py)
            return self._observe(point, snapshot, target, longer, until, phase)

    def _observe(self, point: Any, snapshot: bool, target, longer: float | None = None,
                 until: int | None = None, phase: str = ENDPOINTS) -> Run:
        key = self.space.key(point)
        workload = self.space.workload(point)
        with self._count_lock:
            index = self._counts[(workload.revision, key)]
            self._counts[(workload.revision, key)] += 1
        def label_of() -> str:
            return " ".join(x for x in (self.label, self.space.label(point)) if x)
        try:
            if self.runner.has(workload, index):
                label = label_of()
                run = self.runner.observe(workload, index, label, longer=longer, until=until)
            else:
                # a commit's label is read from git (its subject): while git checks the commit out
                label_of = _meanwhile(label_of) if getattr(self.space, "label_reads_git", False) else label_of
                with self.slots.held() as slot, self.space.lease(point) as leased:
                    label = label_of()
                    if self.policy.gpus:
                        leased = leased.with_env(CUDA_VISIBLE_DEVICES=self.policy.gpus[slot % len(self.policy.gpus)])
                    run = self.runner.observe(leased, index, label, snapshot=snapshot, longer=longer, until=until)
        except RunAbandoned:
            with self._count_lock:      # never made: its run index is the next one asked again
                if self._counts[(workload.revision, key)] == index + 1:
                    self._counts[(workload.revision, key)] = index
            raise
        judged = judged_as(run, target() if callable(target) else target)
        trial = Trial(key, label, index, run, judged, self.runner.was_cached(workload, index), phase)
        with self._lock:
            self.points.setdefault(key, point)
            self.trials.append(trial)
            previous = self._verdicts.get(key)
            self._verdicts[key] = previous.with_run(run) if previous else Verdict.fold([run])
        ledger, session = self.runner.ledger, self.runner.session
        if ledger is not None and session is not None:
            # the point as the runs table keys it: a commit's sha; a configuration's digest when its
            # key is long (a key names every factor: 80 KB at 8,192 of them, ~5 ms per run to write)
            named = stored_key(key) if isinstance(key, str) else key
            ledger.add_event(session, "observation", {
                "space": self.space.kind, "point": named, "sha": named, "label": label, "index": index,
                "outcome": judged.value, "verdict": Verdict.fold([run]).describe(), "signature": run.signature})
        return run

    # -- what the reports read -------------------------------------------------------------
    def verdict(self, point: Any) -> Verdict | None:
        """Every run of `point` this command saw, folded."""
        return self._verdicts.get(self.space.key(point))

    def verdicts(self) -> list[tuple[Hashable, Verdict]]:
        """(point, its runs folded) for every point run, in the order first run."""
        with self._lock:
            return [(self.points[k], v) for k, v in self._verdicts.items()]

    def from_ledger(self, point: Any) -> bool:
        """Whether every run of `point` this command saw was answered from the ledger."""
        key = self.space.key(point)
        seen = [t.cached for t in self.trials if t.key == key]
        return bool(seen) and all(seen)

    def no_hang(self, point: Any, *, refold: bool = False) -> None:
        """`point`'s runs that the watchdog stopped were no hang (given longer, it ended): where
        they "waited" is no hang's place, and no report shows it as one. `refold`: the point's
        verdict is then what its other runs did (the reports' "last good: ... [PASS]")."""
        key = self.space.key(point)
        with self._lock:
            self.trials[:] = [replace(t, run=replace(t.run, stuck=None)) if t.key == key and t.run.timed_out
                              else t for t in self.trials]
            if refold:
                self._verdicts[key] = Verdict.fold([t.run for t in self.trials if t.key == key and not t.run.timed_out])

    def set_aside(self, point: Any, run: Run) -> None:
        """`point`'s verdict is refolded without `run` (a first run's cost: Oracle._first_run_cost);
        the run stays in the attempts, as it was made."""
        key = self.space.key(point)
        with self._lock:
            self._verdicts[key] = Verdict.fold([t.run for t in self.trials if t.key == key and t.run is not run])

    def costs(self) -> tuple[float, float]:
        """(median seconds of this command's runs judged FAIL, of those judged PASS): what one more
        failing run and one more passing run cost, for the confirmation's plan (search/confirm.py:
        a hang costs its watchdog, so it is re-run less and its parents' passes more). A kind not
        seen yet costs what the other does; neither seen: 1 each. The median: one run slowed by
        the machine's load does not move it."""
        import statistics
        with self._lock:
            walls = {o: [t.run.duration_s for t in self.trials if t.judged is o] for o in (Outcome.FAIL, Outcome.PASS)}
        typical = {o: statistics.median(w) for o, w in walls.items() if w}
        fail = typical.get(Outcome.FAIL, typical.get(Outcome.PASS, 1.0))
        return fail, typical.get(Outcome.PASS, fail)

    def phase_runs(self) -> dict[str, int]:
        """How many runs each phase made (those answered from the ledger included), in PHASES'
        order, phases that made none left out: one count per trial, so they add up to the
        command's observations whatever re-ran or was cut short."""
        with self._lock:
            counts = Counter(t.phase for t in self.trials)
        return {p: counts[p] for p in (*PHASES, *sorted(set(counts) - set(PHASES))) if counts[p]}

    def made(self, phase: str) -> int:
        """How many of `phase`'s runs were made by this command (not answered from the ledger)."""
        with self._lock:
            return sum(1 for t in self.trials if t.phase == phase and not t.cached)

    def was_cached(self, run: Run) -> bool:
        """Whether `run` (one this command observed) was answered from the ledger."""
        with self._lock:
            return next((t.cached for t in reversed(self.trials) if t.run is run), False)

    def run_seconds(self) -> float:
        """What the trials cost when they ran, those answered from the ledger included."""
        with self._lock:
            return round(sum(t.run.duration_s for t in self.trials), 3)


def judged_as(run: Run, target: Target | None) -> Outcome:
    """A run's outcome for a search hunting `target` (None: any failure counts)."""
    return run.outcome if target is None else Verdict.fold([run]).against(target)


class Oracle:
    """What a search calls (see the module docstring). `any_failure`: every failure counts (git
    bisect's view); the target still names the failure in the reports."""

    def __init__(self, trials: Trials, target: Target | None, *, any_failure: bool = False, aimed: bool = True,
                 recheck: bool = False, reach: int | None = None, steady_slow: bool = False):
        self.trials, self.target, self.any_failure = trials, target, any_failure
        self.steady_slow = steady_slow  # SLOW the bad endpoint showed every run: a lone run re-run (slowvotes)
        self.recheck = recheck      # a silent hang hunted is given longer once (endpoints.recheck_hangs)
        self.reach = reach          # how far the bad endpoint's hang got (endpoints.hang_checks; _short)
        self.space, self.policy = trials.space, trials.policy
        self._target_known = threading.Event()
        self._abandoned = False     # the good endpoint did not pass: no target will be named (abandon)
        self._side: SideBySide | None = None
        self._lock = threading.Lock()
        self._hung_again = 0        # runs given longer (_second_chance) that hung again
        self._stretch_seen = False  # a run given longer ended (_stretched)
        self.stretches: list[dict] = []     # each as a record's advice step ("first_run_cost")
        self.phase = SEARCH         # the phase its runs are counted in (asking)
        self._questions: dict[str, list[list[Run]]] = {}   # point key -> each question's runs (questions)
        self._more = 0              # runs made beyond one a question (more_runs)
        self._free = 0              # runs of questions the ledger answered: they cost no time (more_runs)
        if aimed:
            self.aim(target, recheck=recheck, reach=reach, steady_slow=steady_slow)

    @classmethod
    def unaimed(cls, trials: Trials) -> Oracle:
        """An oracle whose target failure is not known yet (the bad endpoint still runs): runs
        submitted to it start now, and are judged once `aim` names the target."""
        return cls(trials, None, aimed=False)

    def aim(self, target: Target | None, *, recheck: bool = False, reach: int | None = None,
            steady_slow: bool = False) -> None:
        """Fix the failure this oracle judges against (once); `recheck`, `reach`, `steady_slow`:
        see endpoints.hang_checks."""
        self.target, self.recheck, self.reach, self.steady_slow = target, recheck, reach, steady_slow
        self._target_known.set()

    def abandon(self) -> None:
        """No target will be named (the good endpoint did not pass): runs made ahead that wait to
        be judged end unjudged (RunAbandoned), as those still under way do (run/pending.py). A run
        that could not start is not held back by the runner, and ended before the good endpoint:
        it waited for `aim` for good, and so did the command that waited for it."""
        self._abandoned = True
        self._target_known.set()

    @property
    def _judging(self) -> Target | None:
        """The target runs are judged against (None: every failure counts); waits for `aim`."""
        self._target_known.wait()
        if self._abandoned:
            raise RunAbandoned("the good endpoint did not pass: a run made ahead is not judged")
        return None if self.any_failure else self.target

    @property
    def mode(self) -> str:
        """The --same-failure mode the failures are named under."""
        return self.target.mode if self.target else DEFAULT_SAME_FAILURE

    @contextmanager
    def asking(self, phase: str) -> Iterator[None]:
        """The runs asked within count in `phase` (PHASES), not in the search's: a threshold's, a
        merge base's. Only between searches: runs a search made ahead of itself are still its own,
        and none is under way then (its side-by-side threads are closed)."""
        before, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = before

    def observe(self, point: Any, *, snapshot: bool = False, longer: float | None = None,
                until: int | None = None, phase: str | None = None) -> Run:
        run = self.trials.observe(point, snapshot=snapshot, target=lambda: self._judging, longer=longer,
                                  until=until, phase=phase or self.phase)
        if self.trials.was_cached(run):     # the ledger answered: it costs the run budget nothing (more_runs)
            with self._lock:
                self._free += 1
        return run

    def judge(self, verdict: Verdict) -> Outcome:
        return verdict.outcome if self._judging is None else verdict.against(self._judging)

    def judge_run(self, run: Run) -> Outcome:
        """One run as this oracle judges it (a run made before the oracle, an endpoint's)."""
        return judged_as(run, self._judging)

    def different(self, run: Run) -> bool:
        """A failure, but not the target's: a possible second bug, never this one."""
        return run.outcome is Outcome.FAIL and self.judge_run(run) is Outcome.UNRESOLVED

    def _question(self, point: Any) -> list[Run]:
        """A new question about `point`, in the order asked: the runs that answer it go in it."""
        runs: list[Run] = []
        with self._lock:
            self._questions.setdefault(self.space.key(point), []).append(runs)
        return runs

    def more_runs(self) -> int:
        """The runs made beyond one a question (a different failure re-run, a second chance), less
        the runs the ledger answered: what a search's run budget (--max-runs) counts besides its
        questions (Tester.more_runs), so that it counts the runs made, what costs time; negative
        when the ledger answered more than were re-run (a --resume goes on from where it stopped)."""
        with self._lock:
            return self._more - self._free

    def questions(self, point: Any) -> list[list[Run]]:
        """The runs that answered each question asked of `point` (a call, a batch's or a
        submitted one), in the order asked: a search counts one run a question, and the oracle may
        make more (a different failure re-run, a second chance) or none (a question cut short by
        a Ctrl-C, or cancelled before it began)."""
        with self._lock:
            return [list(q) for q in self._questions.get(self.space.key(point), ())]

    def __call__(self, point: Any, question: list[Run] | None = None) -> Outcome:
        """The search's single-shot verdict on `point`: a different failure is re-run first, and
        one the calibrated watchdog called a hang is re-run given longer (_second_chance): a hang
        of another failure, a hang stopped short of where the bad endpoint hangs (_short), and,
        where `recheck` allows, a silent hang of the one hunted. `question`: where its runs go
        (questions), when it was asked before it began (batch, submit)."""
        question = self._question(point) if question is None else question
        longer, until = None, None
        for _ in range(1 + max(0, self.policy.retry_different)):
            run = self.observe(point, longer=longer, until=until)
            question.append(run)
            if len(question) > 1:
                with self._lock:
                    self._more += 1
            if len(question) == 1 and self._first_run_cost(point, run):
                first, run = run, self.observe(point)      # the second run decides
                question.append(run)
                with self._lock:
                    self._more += 1
                if run.outcome is Outcome.PASS:
                    self.trials.set_aside(point, first)
                    self.trials.runner.events.emit(Note(
                        f"{self.space.label(point)}: its first run was slow ({first.duration_s:.2f} s) and its second "
                        f"passed ({run.duration_s:.2f} s): a first run's cost (a JIT compile, a cold cache), judged "
                        "by the second"))
            elif len(question) == 1 and (slowvotes.lone_slow(self, point, run) or slowvotes.lone_pass(self, point, run)):
                run = slowvotes.median_of_three(self, point, run, question)
            off = self._off_point(run)
            short, past = off < 0, off > 0
            if longer is not None and run.timed_out:
                if short or past or self.different(run) or self.reach is None:
                    with self._lock:        # stopped again where it was (not at the bad endpoint's
                        self._hung_again += 1   # hang point, given longer): no first run's cost
                return self.judge_run(run)      # still short: a hang hunted that moved earlier
            if longer is not None and self.different(question[-2]) and run.duration_s < question[-2].duration_s:
                # ended sooner than the run stopped before it had already run: a first run's cost
                # makes a run longer, not shorter (unless the stopped run filled its cache while it
                # was read before the kill), so most likely a point that hangs only sometimes; its
                # hang is kept, the watchdog left as it is. A hang of the failure hunted stays as it
                # was: set aside (_stretched), the verdict the one its search answer was made from
                self.trials.runner.events.emit(Note(
                    f"{self.space.label(point)} was called a hang after {question[-2].duration_s:.2f} s, and given "
                    f"{longer:g} s it ended in {run.duration_s:.2f} s, sooner: no slow first run (unless the stopped "
                    "run filled a cache before it was ended), so it may hang only sometimes (its hang is kept)"))
            elif longer is not None:
                self._stretched(point, run, longer, question[-2].duration_s)
            if self.different(run) and run.unbuilt and not short:
                # its source did not compile, parse or link: another run of the same tree says so again
                return self.judge_run(run)
            if short or past or self.different(run):
                longer = self._second_chance(run)
                until = self.reach if short else None   # given longer to get there, then the usual pace
                if longer is None and (short or past):
                    return self.judge_run(run)  # two hung short (or past) again: such hangs are real here
                continue
            longer = self._second_chance(run, hunted=True) if self.recheck else None
            if longer is None:
                return self.judge_run(run)
        return Outcome.UNRESOLVED

    def _first_run_cost(self, point: Any, run: Run) -> bool:
        """Whether `run`, the first of `point` this command made, is SLOW by wall time, the failure
        hunted: it is run once more and the second run decides. The endpoints were usually run by
        hand before, so a JIT cache keyed by the source or the configuration holds their kernels and
        the baseline is a cached run; every other point compiles on its first run, and its wall time
        is SLOW for that alone. Each such point was taken for a culprit (the search then stopped
        unconfirmed, "the failure is intermittent"). A metric the subject reports times the kernel
        alone, and a steady SLOW hunt by wall time judges like it: its lone SLOW runs are judged by the
        median of three instead (engine/slowvotes.py)."""
        if run.kind is not FailKind.SLOW or self.trials.runner.judge.slow_metric is not None \
                or self.steady_slow or self.judge_run(run) is not Outcome.FAIL:
            return False
        seen = self.trials.verdict(point)
        return seen is not None and len(seen.runs) == 1

    def count_more(self) -> None:
        """One more run made for a question (slowvotes.median_of_three): more_runs counts it."""
        with self._lock:
            self._more += 1

    def _off_point(self, run: Run) -> int:
        """Where a hang of the kind hunted was stopped against the progress point where the bad
        endpoint hangs (`reach`, in the good run's order): -1 short of it, 1 past it, 0 at it (or
        no such hang: not stopped, another failure, no point known).
        - Short (`hung after 'compiling kernel'` where the bad endpoint hung after 'launching
          kernel'): the deadline that follows the good run's progress gives each stretch a
          multiple of the good run's, and a first run's JIT compile outgrows any multiple of a
          cached one. Given longer first; stopped short again (a deadlock whose place varies from
          run to run), it is the hang hunted, as it was before.
        - Past (`hung after 'done'` where the bad endpoint never got past 'launching kernel'): it
          has not shown the hang hunted (a slow teardown, a cache written at exit, output read late
          on a loaded machine). Given longer too; stopped past it again, it is judged as it was: a hang."""
        if self.reach is None or not run.timed_out or self.different(run):
            return 0
        got = reach(run.timeline, self.trials.runner.good_timeline)
        return (got > self.reach) - (got < self.reach)

    def _second_chance(self, run: Run, hunted: bool = False) -> float | None:
        """The seconds to give the next run of a point whose run was called a hang. A calibrated
        watchdog is 5 x the good endpoint's run, and a commit or configuration run for the first
        time may pay what the endpoints, run by hand before, no longer do (a JIT compile into a
        cache, a build, a download). Re-run with the same watch it would be stopped at the same
        place every time, its cache never written:
        - the failure hunted is another: every such point would be left unresolved;
        - the failure hunted is a hang (`hunted`; `recheck`: the search is deterministic and no
          picture showed the bad endpoint's hang as a deadlock): a silent hang, called by the good
          run's duration alone (no progress output followed, no picture of a deadlock), would be
          taken for the hang hunted. Only until one such second chance hangs again: from then on
          this subject's silent hangs are real, and each would cost the longer watch.
        None: no second chance (not a hang, the watchdog is the user's or the spec's, or hangs
        given longer already hung again: twice for another failure, once for the hunted one; or,
        for the hunted one, the watchdog was already set from a first run's cost, which it now
        covers, unless this run was stopped by the shorter watch before it)."""
        timeout = self.trials.runner.timeout
        if not run.timed_out or timeout is None or timeout.source not in ("calibrated", "progress"):
            return None
        if hunted:
            from bisectk.stuck import deadlocked
            if timeout.source != "calibrated" or run.progress or deadlocked(run.stuck):
                return None
        with self._lock:
            if hunted and self._stretch_seen:
                # the watchdog covers a first run's cost now; a run begun before it did (a slot
                # beside the one that set it) is run again under it
                return timeout.seconds if run.duration_s < 0.9 * timeout.seconds else None
            if self._hung_again >= (1 if hunted else 2):
                return None
        return second_chance(timeout.seconds)

    def _stretched(self, point: Any, run: Run, longer: float, stopped_s: float) -> None:
        """A run given longer ended: the watchdog is set from its time, as from a good run's, so
        the points after it are not stopped at the same first-run cost (Runner.stretch).
        `stopped_s`: when the run before it was called a hang (under a watchdog that follows
        progress, not the fixed seconds `before`, which a run is stopped at only without a timeline)."""
        runner = self.trials.runner
        self.trials.no_hang(point, refold=True)
        before = runner.policy().seconds
        after = runner.stretch(run.duration_s, run.timeline).seconds
        more = f"; the watchdog is now {after:.1f} s" if after > before else ""
        with self._lock:
            self._stretch_seen = True
            self.stretches.append({"step": "first_run_cost", "point": self.space.label(point), "stopped_s": stopped_s,
                                   "before_s": before, "ended_s": round(run.duration_s, 3), "given_s": longer,
                                   "watchdog_s": after})
        runner.events.emit(Note(
            f"{self.space.label(point)} was called a hang after {round(stopped_s, 2):g} s, and ended in {run.duration_s:.2f} s "
            f"when given {longer:g} s (a first run's cost: a JIT compile, a cold cache, a build){more}"))

    def batch(self, points: Sequence[Any]) -> list[Outcome]:
        """Outcomes for several points (the same one again, too: each is its next run), run side
        by side, one slot each. Spaces that materialise a point (commits) give each its own
        directory; factor points share the spec's (ablate --jobs says so)."""
        if len(points) <= 1:
            return [self(p) for p in points]
        asked = [(p, self._question(p)) for p in points]    # in the order given
        futures = [Future() for _ in points]
        for k, (a, future) in enumerate(zip(asked, futures)):
            threading.Thread(target=_settle, args=(future, self, *a), name=f"bisectk-batch-{k}",
                             daemon=True).start()
        try:
            with live():    # waiting for runs is a run: a Ctrl-C stops it at once (engine/interrupts.py)
                return [waited(f) for f in futures]
        except KeyboardInterrupt:
            # left at once, not after every run of the batch has ended (up to its watchdog): the
            # runs still under way end as bisectk cleans up, and are not stored (Runner.stop)
            self.trials.runner.stop()
            raise
        except BaseException:
            wait(futures)   # another error (the budget spent): the batch's other runs end first
            raise

    def submit(self, point: Any) -> Future:
        """Start the search's next run of `point` side by side with those under way (at most
        --jobs, one slot each, in the order submitted); its Future gives the outcome. The threads
        are daemons: a Ctrl-C leaves by the report without waiting for a run started ahead (the
        runs die with their supervisors when bisectk exits)."""
        if self._side is None:
            self._side = SideBySide(max(1, self.policy.jobs), lambda asked: self(*asked))
        return self._side.submit((point, self._question(point)))   # asked now: in the order submitted

    def close(self) -> None:
        """Stop the side-by-side threads (runs not begun are cancelled; none is waited for)."""
        if self._side is not None:
            self._side.close()
            self._side = None

    def width(self) -> int:
        """How many points a batch should hold now: --jobs, or fewer when the executor has fewer
        workers alive (an actor lost and not yet replaced, a node gone)."""
        return max(1, min(self.policy.jobs, self.trials.runner.alive()))

    def ready_width(self) -> int:
        """How many runs may be under way at once for a search that runs ahead of itself
        (search/ahead.py): --jobs, or fewer while the executor has fewer workers ready."""
        return max(1, min(self.policy.jobs, self.trials.runner.ready()))

    def different_failures(self) -> list[tuple[Hashable, Verdict]]:
        """(point, verdict) of every point that failed only differently: possible second bugs."""
        return [(p, v) for p, v in self.trials.verdicts()
                if v.outcome is Outcome.FAIL and self.judge(v) is Outcome.UNRESOLVED]


def _settle(future: Future, call: Callable[..., Outcome], *args: Any) -> None:
    """One run of a batch, on a thread of its own: its outcome, or its error, to `future`."""
    try:
        future.set_result(call(*args))
    except BaseException as exc:      # handed to the batch, which waits for it
        future.set_exception(exc)


class SideBySide:
    """`slots` daemon threads that run `call(point)` for each submitted point, in order: at most
    `slots` at once (each run takes its GPU from Trials.slots when it begins, not from its thread)."""

    def __init__(self, slots: int, call: Callable[[Any], Outcome]):
        self._call = call
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, name=f"bisectk-side-{k}", daemon=True)
                         for k in range(slots)]
        for t in self._threads:
            t.start()

    def submit(self, point: Any) -> Future:
        future: Future = Future()
        self._work.put((future, point))
        return future

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, point = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self._call(point))
            except BaseException as exc:      # handed to whoever waits on it
                future.set_exception(exc)

    def close(self) -> None:
        while True:
            try:
                item = self._work.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._work.put(None)


def _meanwhile(fn: Callable[[], str]) -> Callable[[], str]:
    """Start fn in a daemon thread now; the returned call waits for its value (or raises its
    error). A daemon: a Ctrl-C that leaves it behind does not hold the exit."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:       # handed to the caller
            box["error"] = exc
    thread = threading.Thread(target=work, name="bisectk-label", daemon=True)
    thread.start()

    def result() -> str:
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]
    return result

