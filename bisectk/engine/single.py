"""`bisectk run` and `bisectk check`: one configuration classified, and the endpoints verified.

Abstractions
------------
run_one        -- the configuration's verdict over `repeat` runs, the watchdog calibrated from the
                  good endpoint first (from the ledger when it ran before); a RunRecord.
check_endpoints -- the endpoint confirmation every search starts with, alone; a CheckRecord.
"""

from __future__ import annotations

import time

from bisectk.engine.endpoints import announce_watchdog, verify
from bisectk.engine.slowends import baseline_runs
from bisectk.engine.oracle import Trials
from bisectk.engine.policy import RunPolicy
from bisectk.engine.records import CheckRecord, RunRecord, SubjectRecord
from bisectk.outcome import Outcome
from bisectk.run.runner import Runner
from bisectk.spaces.factors import FactorSpace
from bisectk.spec import Config


def run_one(runner: Runner, config: Config, *, repeat: int | None, label: str,
            environment: dict | None = None) -> RunRecord:
    start = time.monotonic()
    spec = runner.spec
    announce_watchdog(runner, spec.endpoint("good"))
    if runner.timeout is None and config != spec.good:
        # calibrate the watchdog from the good endpoint (memoised: usually from the ledger)
        # (as the endpoint check does: a SLOW baseline rests on 3 runs, the same 3)
        good = runner.verdict(spec.endpoint("good"), max(spec.repeat, baseline_runs(runner)), label="good (calibration)")
        runner.calibrate(list(good.runs))
    verdict = runner.verdict(config, repeat, label=label)
    hung = next((r for r in verdict.runs if r.stuck), None)
    hangs = {"bad": {"label": "the run", "snapshot": hung.stuck, "progress": hung.progress,
                     "at_s": round(hung.duration_s, 3)},
             "culprit": None, "others": [], "good_last_point": None, "bad_hung": True, "same": None} if hung else None
    return RunRecord(command="run", endpoints=None, ok=verdict.outcome is not Outcome.UNRESOLVED,
                     complete=True, interrupted=False, runs=runner.executed, observations=len(verdict.runs),
                     wall_s=round(time.monotonic() - start, 3), environment=environment or {}, session=runner.session,
                     subject=SubjectRecord.of(spec, len(runner.memo.files)), config=config, verdict=verdict.to_dict(),
                     timeout=runner.timeout.to_dict() if runner.timeout else None, hangs=hangs,
                     ran=spec.command_text(config))


def check_endpoints(runner: Runner, policy: RunPolicy, *, warnings: list[str] | None = None,
                    environment: dict | None = None) -> CheckRecord:
    start = time.monotonic()
    space = FactorSpace(runner.spec)
    trials = Trials(runner, space, policy)
    check = verify(trials, frozenset(), frozenset(space.differences()), repeat=policy.repeat or runner.spec.repeat)
    return CheckRecord(command="check", endpoints=check, ok=check.ok, complete=True, interrupted=False,
                       runs=runner.executed, observations=len(trials.trials),
                       wall_s=round(time.monotonic() - start, 3), environment=environment or {},
                       session=runner.session, subject=SubjectRecord.of(runner.spec, len(runner.memo.files)), warnings=tuple(warnings or ()))
