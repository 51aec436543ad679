"""`bisectk run` and `bisectk check`: one configuration classified, and the endpoints verified
(engine/single.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bisectk.cli_common import (MIN_TIMEOUT_S, CalibrateOpt, FreshOpt, JsonOpt, LedgerOpt, SameFailureOpt, SnapshotsOpt,
                                RunSnapshotsOpt, SpecArg, TimeoutOpt, WarmOpt, environment_capture, fail, finish,
                                policy, reporter, spare_ahead, spec_warnings)


def run(spec: Path = SpecArg,
        config: str = typer.Option("bad", "--config", help="Which endpoint to start from: good or bad."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a factor: NAME=VALUE (repeatable)."),
        repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs of the configuration (default: the spec's)."),
        timeout: Optional[float] = typer.Option(None, "--timeout", min=MIN_TIMEOUT_S, help="Watchdog seconds (default: spec, else calibrated from good)."),
        fresh: bool = FreshOpt, snapshots: int = RunSnapshotsOpt, ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Run one configuration and classify it. Exit 0 pass, 1 fail, 125 unresolved."""
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.single import run_one
    from bisectk.engine.subject import load_subject
    s, cfg = load_subject(spec, cwd=Path.cwd(), config=config, sets=set_)
    spec_warnings(s, timeout)
    with Session("run", s, ledger_location(ledger, spec=s), args={"spec": str(spec), "config": cfg},
                 policy=policy(timeout=timeout, snapshots=snapshots, fresh=fresh, repeat=repeat),
                 reporter=reporter(as_json, s.good)) as session:
        rec = run_one(session.runner(), cfg, repeat=repeat, label=config if not set_ else "custom",
                      environment=environment_capture() if as_json else None)
        finish(rec, as_json=as_json, session=session)


def check(spec: Path = SpecArg,
          repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint (default: the spec's)."),
          flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Measure the failure rate even if the bad endpoint failed every time."),
          calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
          timeout: Optional[float] = TimeoutOpt,
          fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
          ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Verify the endpoints: good must pass, bad must fail. Exit 0 if usable, 2 if not."""
    spare_ahead("local", warm)
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.single import check_endpoints
    from bisectk.engine.subject import load_subject
    s, _ = load_subject(spec, cwd=Path.cwd())
    warnings = spec_warnings(s, timeout)
    if s.good and not s.differences():     # bad would run as good does: ten runs to say it passes
        fail(f"{spec}: [good] and [bad] are identical" + (" as the subject receives them" if s.written_alike() else "")
             + ": the bad configuration is the good one")
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure,
                 timeout=timeout, snapshots=snapshots, fresh=fresh, warm=warm)
    with Session("check", s, ledger_location(ledger, spec=s), args={"spec": str(spec)}, policy=pol,
                 reporter=reporter(as_json, s.good)) as session:
        rec = check_endpoints(session.runner(), pol, warnings=warnings,
                              environment=environment_capture() if as_json else None)
        finish(rec, as_json=as_json, session=session)


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command(short_help="Run one configuration and classify it.")(run)
    app.command(short_help="Verify the endpoints: good must pass, bad must fail.")(check)
