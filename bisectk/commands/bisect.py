"""`bisectk bisect`: the first bad commit between --good and --bad, in worktrees, never in the
user's checkout.

Abstractions
------------
CommitOracle -- maps a candidate index to a verdict: one Runner per commit (its fingerprint pinned
                to the sha, so the ledger memoises per commit), the commit checked out in a leased
                worktree only when a run must really execute. The k-th call for a commit asks for
                its k-th run, so flaky repeats are new observations and a resumed session replays
                the ledger in order. Only the target failure counts as bad; any other failure is
                UNRESOLVED (skipped), like a build failure. Every observation is appended to the
                ledger's event log (for `bisectk log` / `replay`).
BisectRun    -- the commit range, the endpoint check, the history search's result, timings.
run_bisect   -- verify both endpoints (calibrating the watchdog on good), decide flaky mode, then
                run the binary / Bayesian / k-way search.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bisectk.endpoints import EndpointCheck, diagnose
from bisectk.events import PhaseStarted
from bisectk.ledger import Ledger
from bisectk.outcome import Outcome, Verdict
from bisectk.run.runner import Runner
from bisectk.search.history import HistoryResult, Observation, SearchOptions, SearchStopped, search_history
from bisectk.spaces.commits import CommitRange, WorktreePool
from bisectk.spec import Config, Spec


class CommitOracle:
    def __init__(self, spec: Spec, config: Config, commits: CommitRange, pool: WorktreePool, *,
                 ledger: Ledger | None, events, session: int | None, log_root: Path | None,
                 subdir: Path, gpus: list[str] | None = None, any_failure: bool = False):
        self.spec, self.config, self.commits, self.pool = spec, config, commits, pool
        self.ledger, self.events, self.session, self.log_root = ledger, events, session, log_root
        self.subdir = subdir            # the subject's cwd relative to the repository root
        self.gpus = gpus or []
        self.any_failure = any_failure
        self.target: str | None = None
        self.runners: dict[int, Runner] = {}
        self.calls: Counter[int] = Counter()
        self.verdicts: dict[int, Verdict] = {}
        self.last_sha_at: dict[Path, str] = {}  # which commit each worktree last ran
        self.timeout = None   # the calibrated watchdog, shared by every commit's runner
        self.baseline = None  # the good endpoint's time, for SLOW
        self.executed = 0
        self.lock = threading.Lock()

    def runner(self, i: int) -> Runner:
        with self.lock:
            if i not in self.runners:
                sha = self.commits[i].sha
                # cwd is set per lease; a path that does not exist keeps file hashes out of the
                # fingerprint, which the sha already pins
                self.runners[i] = Runner(self.spec, self.ledger, events=self.events, session=self.session,
                                         cwd=Path("/nonexistent-bisectk-worktree"), revision=sha,
                                         log_root=self.log_root)
            runner = self.runners[i]
            if self.timeout is not None:
                runner.timeout, runner.judge.baseline = self.timeout, self.baseline
            return runner

    def calibrate(self, good_runs) -> None:
        self.timeout = self.runner(0).calibrate(good_runs)
        self.baseline = self.runner(0).judge.baseline

    def observe(self, i: int, slot: int = 0) -> Verdict:
        """One new observation of commit i (its next run index)."""
        with self.lock:
            index = self.calls[i]
            self.calls[i] += 1
        runner = self.runner(i)
        sha = self.commits[i].sha
        label = f"{self.commits[i].short} {self.commits[i].subject[:48]}"
        if runner.has(self.config, index):
            run = runner.observe(self.config, index, label)
        else:
            with self.pool.lease(sha) as path:
                if self.last_sha_at.get(path) != sha:
                    runner.invalidate_build()
                self.last_sha_at[path] = sha
                runner.cwd = path / self.subdir
                if self.gpus:
                    runner.extra_env = {"CUDA_VISIBLE_DEVICES": self.gpus[slot % len(self.gpus)]}
                run = runner.observe(self.config, index, label)
                self.executed += 1
        v = Verdict.fold([run])
        with self.lock:
            prev = self.verdicts.get(i)
            self.verdicts[i] = prev.with_run(run) if prev else v
        if self.ledger is not None and self.session is not None:
            self.ledger.add_event(self.session, "observation", {
                "index": i, "sha": sha, "outcome": self.judge(v).value, "verdict": v.describe(),
                "signature": v.signature})
        return v

    def judge(self, v: Verdict) -> Outcome:
        if self.any_failure or self.target is None:
            return v.outcome
        return v.against(self.target)

    def __call__(self, i: int) -> Outcome:
        return self.judge(self.observe(i))

    def batch(self, indices: list[int]) -> list[Outcome]:
        with ThreadPoolExecutor(max_workers=len(indices)) as ex:
            verdicts = list(ex.map(lambda a: self.observe(a[1], a[0]), enumerate(indices)))
        return [self.judge(v) for v in verdicts]


@dataclass
class BisectRun:
    commits: CommitRange
    check: EndpointCheck
    result: HistoryResult | None = None
    oracle: CommitOracle | None = None
    flaky: bool = False
    interrupted: bool = False
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.check.ok and self.result is not None

    def first_bad_info(self) -> dict[str, Any] | None:
        if not self.result:
            return None
        return self.commits.describe(self.result.first_bad).to_dict()


def verify_endpoints(oracle: CommitOracle, repeat: int) -> EndpointCheck:
    n = len(oracle.commits)
    oracle.events.emit(PhaseStarted("endpoints", f"--good {oracle.commits[0].short} and --bad "
                                                 f"{oracle.commits[n - 1].short}, {repeat} run(s) each"))
    good_runs = [oracle.observe(0).runs[0] for _ in range(repeat)]
    oracle.calibrate(good_runs)
    bad_runs = [oracle.observe(n - 1).runs[0] for _ in range(repeat)]
    good, bad = Verdict.fold(good_runs), Verdict.fold(bad_runs)
    return EndpointCheck(good, bad, oracle.timeout, diagnose(good, bad))


def run_bisect(oracle: CommitOracle, *, repeat: int = 1, flaky: bool | None = None, jobs: int = 1,
               confidence: float = 0.99, max_runs: int | None = None) -> BisectRun:
    start = time.monotonic()
    commits = oracle.commits
    check = verify_endpoints(oracle, repeat)
    out = BisectRun(commits, check, oracle=oracle)
    if not check.ok:
        out.wall_s = time.monotonic() - start
        return out
    oracle.target = check.target
    out.flaky = check.flaky if flaky is None else flaky
    n = len(commits)
    seed = [Observation(0, Outcome.PASS)] * len(check.good.runs)
    if out.flaky:
        seed += [Observation(n - 1, oracle.judge(Verdict.fold([r]))) for r in check.bad.runs]
    else:
        seed += [Observation(n - 1, Outcome.FAIL)]
    mode = ("Bayesian, flake-aware" if out.flaky else "binary") + (f", {jobs}-way" if jobs > 1 else "")
    oracle.events.emit(PhaseStarted("search", f"{mode} over {n} commits"))
    options = SearchOptions(flaky=out.flaky, jobs=jobs, confidence=confidence, max_runs=max_runs)
    try:
        out.result = search_history(n, oracle if jobs == 1 else None,
                                    batch_oracle=oracle.batch if jobs > 1 else None,
                                    options=options, observations=seed)
    except SearchStopped as stop:
        out.result, out.interrupted = stop.result, True
    out.wall_s = time.monotonic() - start
    return out
