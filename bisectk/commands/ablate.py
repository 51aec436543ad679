"""`bisectk ablate`: which factor, or which set acting together, causes the failure.

Abstractions
------------
FactorOracle  -- the adapter between the pure search and the runner: a frozenset of differences
                 becomes a configuration (by default: the good configuration with those factors
                 at their bad values; diff hunks and other spaces pass `make_config`); the
                 k-th call for the same set asks the runner for that set's k-th run, so repeats
                 are new observations and a resumed session replays the ledger in order.
                 Only the target failure (the bad endpoint's family) counts as FAIL; other
                 failures are UNRESOLVED and kept as possible second bugs.
AblationRun   -- everything the reports need: endpoint check, search result, verdicts by
                 configuration, ordinal thresholds, the flakiness rule, timings.
run_ablation  -- verify endpoints, derive the flakiness rule if the bad side is intermittent,
                 run the chosen strategy, find thresholds of ordinal culprits.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from bisectk.endpoints import EndpointCheck, verify
from bisectk.events import Note, PhaseStarted
from bisectk.outcome import Outcome, Verdict
from bisectk.run.runner import Runner
from bisectk.search import (AblationResult, ConfidenceRule, SearchInterrupted, Threshold, ablate,
                            find_threshold)
from bisectk.spec import Config, config_key


class FactorOracle:
    def __init__(self, runner: Runner, target: str, base: Config | None = None,
                 make_config: Callable[[frozenset], Config] | None = None, label: str = "hybrid"):
        self.runner = runner
        self.target = target
        self.base = base if base is not None else runner.spec.good
        self.make_config = make_config
        self.label = label
        self.calls: Counter[str] = Counter()
        self.verdicts: dict[str, Verdict] = {}  # by config key: every run folded, for reports

    def config(self, applied) -> Config:
        if self.make_config:
            return self.make_config(frozenset(applied))
        cfg = dict(self.base)
        cfg.update({f: self.runner.spec.bad[f] for f in applied})
        return cfg

    def __call__(self, applied: frozenset) -> Outcome:
        return self.judge(self.config(applied), self.label)

    def judge(self, cfg: Config, label: str) -> Outcome:
        key = config_key(cfg)
        index = self.calls[key]
        self.calls[key] += 1
        run = self.runner.observe(cfg, index, label)
        previous = self.verdicts.get(key)
        self.verdicts[key] = previous.with_run(run) if previous else Verdict.fold([run])
        return Verdict.fold([run]).against(self.target)

    def different_failures(self) -> list[tuple[str, Verdict]]:
        return [(k, v) for k, v in self.verdicts.items()
                if v.outcome is Outcome.FAIL and v.against(self.target) is Outcome.UNRESOLVED]


@dataclass
class AblationRun:
    """Everything the reports need (see the module docstring)."""

    check: EndpointCheck
    result: AblationResult | None = None
    oracle: FactorOracle | None = None
    rule: ConfidenceRule | None = None
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    interrupted: bool = False
    wall_s: float = 0.0
    executed: int = 0
    ptx: object | None = None        # evidence.PtxEvidence when --ptx
    sanitizer: object | None = None  # evidence.SanitizerReport when --sanitize

    @property
    def ok(self) -> bool:
        return self.check.ok and self.result is not None


def derive_rule(runner: Runner, check: EndpointCheck, calibrate_runs: int, force: bool) -> ConfidenceRule | None:
    """The flakiness rule, when the bad endpoint is intermittent (or --flaky): its fail rate
    is measured over at least `calibrate_runs` runs, then the rule sets the repeats."""
    if not (check.flaky or force):
        return None
    runner.events.emit(PhaseStarted("flakiness", f"measuring the bad endpoint over {calibrate_runs} runs"))
    bad = runner.verdict(runner.spec.endpoint("bad"), max(calibrate_runs, len(check.bad.runs)), label="bad")
    fails = sum(r.outcome is Outcome.FAIL and Verdict.fold([r]).against(check.target) is Outcome.FAIL
                for r in bad.runs)
    return ConfidenceRule.derive(max(fails, 1), len(bad.runs))


def run_ablation(runner: Runner, *, strategy: str = "adaptive", repeat: int | None = None,
                 flaky: bool = False, calibrate_runs: int = 10, max_runs: int | None = None,
                 thresholds: bool = True) -> AblationRun:
    start = time.monotonic()
    check = verify(runner, repeat)
    out = AblationRun(check)
    if not check.ok:
        out.wall_s = time.monotonic() - start
        return out
    spec = runner.spec
    out.rule = derive_rule(runner, check, calibrate_runs, flaky)
    oracle = FactorOracle(runner, check.target)
    out.oracle = oracle
    # the endpoints' runs are already made; the search never asks for them again
    diffs = spec.differences()
    runner.events.emit(PhaseStarted("search", f"{strategy} over {len(diffs)} differences: {', '.join(diffs)}"))
    try:
        out.result = ablate(diffs, oracle, strategy=strategy, rule=out.rule, max_runs=max_runs,
                            measure_removal=True)
    except SearchInterrupted as stop:
        out.result, out.interrupted = stop.result, True
    if thresholds and not out.interrupted:
        try:
            out.thresholds = find_thresholds(runner, oracle, out.result, out.rule)
        except SearchInterrupted:
            out.interrupted = True
    out.executed = runner.executed
    out.wall_s = time.monotonic() - start
    return out


def find_thresholds(runner: Runner, oracle: FactorOracle, result: AblationResult,
                    rule: ConfidenceRule | None) -> dict[str, Threshold]:
    """For each culprit declared ordinal, the value at which the failure appears, with the
    other culprits (and any context) held at their bad values."""
    spec = runner.spec
    found = {}
    for factor in result.culprits:
        values = spec.ordinal.get(factor)
        if not values:
            continue
        lo, hi = values.index(spec.good[factor]), values.index(spec.bad[factor])
        path = values[lo:hi + 1] if lo <= hi else values[hi:lo + 1][::-1]
        if len(path) < 3:
            continue  # good and bad are neighbours: nothing between them to bisect
        others = oracle.config(result.fail_config - {factor})
        runner.events.emit(PhaseStarted("threshold", f"{factor}: {' -> '.join(map(str, path))}"))

        def judge(i: int, factor=factor, others=others, path=path) -> Outcome:
            return oracle.judge({**others, factor: path[i]}, f"{factor}={path[i]}")
        found[factor] = find_threshold(path, judge, rule=rule)
        runner.events.emit(Note(f"threshold of {factor}: {found[factor].describe()}"))
    return found



def add_evidence(run: AblationRun, *, ptx: bool, sanitize: bool) -> None:
    """PTX signatures of good / bad / culprit, and a compute-sanitizer rerun of the culprit."""
    from bisectk import evidence
    runner = run.oracle.runner
    spec = runner.spec
    culprit_cfg = run.oracle.config(run.result.fail_config)
    if ptx:
        runner.events.emit(PhaseStarted("ptx", "compiling good, bad and the culprit configuration to PTX"))
        run.ptx = evidence.ptx_evidence(spec, {"good": spec.good, "bad": spec.bad, "culprit": culprit_cfg})
    if sanitize:
        runner.events.emit(PhaseStarted("sanitize", "rerunning the culprit configuration under compute-sanitizer"))
        seconds = max(60.0, 20 * (runner.timeout.seconds if runner.timeout else 10.0))
        run.sanitizer = evidence.sanitize(spec, culprit_cfg, run.check.bad.kind, seconds, runner.cwd)
