"""SpaceOracle: the one adapter between a pure search and the runner, for every space.

Abstractions
------------
Space        -- what a search ranges over (the protocol every space in `bisectk/spaces` keeps):
                `key(point)` a stable string naming the point (a configuration key, a sha),
                `label(point)` words for progress and reports, `workload(point)` the Workload
                for a ledger lookup (nothing materialised), and `lease(point)` a context manager
                yielding the runnable Workload (a worktree checked out, hunks applied).
SpaceOracle  -- maps a point to one new observation: the k-th call for a point asks the runner
                for its k-th run, so repeats are new observations and a resumed session replays
                the ledger in order; a point is materialised only when its run must really
                execute. The search sees PASS, FAIL (the target failure) or UNRESOLVED (build
                failure, invalid hybrid, or a different failure). A different failure is re-run
                up to `policy.retry_different` times before it is left unresolved: garbage whose
                form changes from run to run must not block a proof. `batch` runs distinct
                workloads in parallel, each with its own directory and environment; `width`
                is how many a batch should hold (the remote workers alive, at most --jobs).
Observation  -- one run as the oracle made it (point key, label, run index, the Run and how the
                search judged it), in the order made: the reports' attempt list.

Every observation is also written to the ledger's event log (`bisectk log` and `replay` read it).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from bisectk.engine.interrupts import live
from bisectk.engine.policy import RunPolicy
from bisectk.outcome import Outcome, Run, Target, Verdict
from bisectk.run.runner import Runner
from bisectk.run.workload import Workload


class Space(Protocol):
    kind: str

    def key(self, point: Any) -> str: ...

    def label(self, point: Any) -> str: ...

    def workload(self, point: Any) -> Workload: ...

    def lease(self, point: Any) -> AbstractContextManager[Workload]: ...


@dataclass(frozen=True)
class Observation:
    key: str
    label: str
    index: int
    run: Run
    judged: Outcome
    cached: bool


class SpaceOracle:
    def __init__(self, runner: Runner, space: Space, *, policy: RunPolicy | None = None,
                 target: Target | None = None, any_failure: bool = False, label: str = ""):
        self.runner = runner
        self.space = space
        self.policy = policy or RunPolicy()
        self.target = target
        self.any_failure = any_failure
        self.label = label
        self.calls: Counter[str] = Counter()
        self.verdicts: dict[str, Verdict] = {}      # every run of a point folded, for reports
        self.points: dict[str, Hashable] = {}       # key -> point, for reports
        self.observations: list[Observation] = []   # in the order made
        self._lock = threading.Lock()

    def run_seconds(self) -> float:
        """What the observations cost when they ran, those answered from the ledger included."""
        with self._lock:
            return round(sum(o.run.duration_s for o in self.observations), 3)

    # -- one observation --------------------------------------------------------------------
    def observe(self, point: Any, slot: int = 0, *, snapshot: bool = False) -> Run:
        """One new run of `point` (its next run index), executed only if the ledger lacks it.
        `snapshot`: should it hang, read where it waits whatever the budget (engine/hangs.py)."""
        with live():   # the one place a held-back Ctrl-C takes effect (engine/interrupts.py)
            return self._observe(point, slot, snapshot)

    def _observe(self, point: Any, slot: int, snapshot: bool = False) -> Run:
        key = self.space.key(point)
        with self._lock:
            index = self.calls[key]
            self.calls[key] += 1
            self.points.setdefault(key, point)
        label = " ".join(x for x in (self.label, self.space.label(point)) if x)
        workload = self.space.workload(point)
        if self.runner.has(workload, index):
            run = self.runner.observe(workload, index, label)
        else:
            with self.space.lease(point) as leased:
                if self.policy.gpus:
                    leased = leased.with_env(CUDA_VISIBLE_DEVICES=self.policy.gpus[slot % len(self.policy.gpus)])
                run = self.runner.observe(leased, index, label, snapshot=snapshot)
        judged = self.judge_run(run)
        cached = self.runner.was_cached(workload, index)
        with self._lock:
            previous = self.verdicts.get(key)
            self.verdicts[key] = previous.with_run(run) if previous else Verdict.fold([run])
            self.observations.append(Observation(key, label, index, run, judged, cached))
        ledger, session = self.runner.ledger, self.runner.session
        if ledger is not None and session is not None:
            ledger.add_event(session, "observation", {
                "space": self.space.kind, "point": key, "sha": key, "label": label, "index": index,
                "outcome": judged.value, "verdict": Verdict.fold([run]).describe(), "signature": run.signature})
        return run

    def judge_run(self, run: Run) -> Outcome:
        if self.any_failure or self.target is None:
            return run.outcome
        return Verdict.fold([run]).against(self.target)

    def judge(self, verdict: Verdict) -> Outcome:
        if self.any_failure or self.target is None:
            return verdict.outcome
        return verdict.against(self.target)

    def different(self, run: Run) -> bool:
        return run.outcome is Outcome.FAIL and self.judge_run(run) is Outcome.UNRESOLVED

    # -- what the search calls -------------------------------------------------------------
    def __call__(self, point: Any, slot: int = 0) -> Outcome:
        """The search's single-shot verdict on `point`: a different failure is re-run first."""
        for _ in range(1 + max(0, self.policy.retry_different)):
            run = self.observe(point, slot)
            if not self.different(run):
                return self.judge_run(run)
        return Outcome.UNRESOLVED

    def batch(self, points: Sequence[Any]) -> list[Outcome]:
        """Outcomes for several points, run side by side (one slot, one directory each)."""
        if len(points) <= 1:
            return [self(p) for p in points]
        with ThreadPoolExecutor(max_workers=len(points)) as ex:
            return list(ex.map(lambda a: self(a[1], a[0]), enumerate(points)))

    def width(self) -> int:
        """How many points a batch should hold now: --jobs, or fewer when fewer remote workers
        are alive (an actor lost and not yet replaced, a node gone)."""
        alive = getattr(self.runner.executor, "alive", None)
        return max(1, min(self.policy.jobs, alive())) if callable(alive) else self.policy.jobs

    # -- what the reports read -------------------------------------------------------------
    def verdict(self, point: Any) -> Verdict | None:
        return self.verdicts.get(self.space.key(point))

    def from_ledger(self, point: Any) -> bool:
        """Whether every run of `point` this session saw was answered from the ledger."""
        key = self.space.key(point)
        seen = [o.cached for o in self.observations if o.key == key]
        return bool(seen) and all(seen)

    def different_failures(self) -> list[tuple[str, Verdict]]:
        """(label, verdict) of every point that failed only differently: possible second bugs."""
        out = []
        for key, v in self.verdicts.items():
            if v.outcome is Outcome.FAIL and self.judge(v) is Outcome.UNRESOLVED:
                out.append((self.space.label(self.points[key]), v))
        return out
