"""`bisectk ablate`: the factors of a spec that cause the failure (engine/ablate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bisectk.cli_common import (BEFORE_ENDPOINTS, capture_after_first_run, CalibrateOpt, ExecutorOpt, FreshOpt, HtmlOpt,
                                JsonOpt, JsonOutOpt, LedgerOpt, RayAddressOpt, ReportOpt, SameFailureOpt, SnapshotsOpt,
                                TimeoutOpt, WarmOpt, check_outputs, check_strategy, default_spec, fail, finish,
                                interrupted, out, policy, reporter, resume_or_fresh, spare_ahead, timed_policy,
                                spec_warnings)
from bisectk.search.names import strategy_names


def ablate(spec: Optional[Path] = typer.Argument(None, help="Variant spec (default: the embedded CPU pipeline-hang pair).", show_default=False),
           strategy: Optional[str] = typer.Option(None, "--strategy", show_default=False, help="Search strategy: " + ", ".join(strategy_names()) + ".  [default: adaptive]"),
           exhaustive: bool = typer.Option(False, "--exhaustive", help="Full factorial (n <= 8); same as --strategy exhaustive."),
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check (default: the spec's)."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Treat the failure as intermittent even if the endpoint checks did not show it (default: decided by the endpoint runs); --no-flaky: it is deterministic, and the answer is confirmed by one more run of each configuration it rests on."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           timeout: Optional[float] = TimeoutOpt,
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search once it has made this many runs (the thresholds' runs included), with the best result so far (runs the ledger answers cost nothing and are not counted, so --resume goes on; nor are the endpoint checks)."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last ablation of this spec: runs already in the ledger are not repeated."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt,
           warm: bool = WarmOpt,
           gpus: Optional[str] = typer.Option(None, "--gpus", help="Pin runs to GPUs, e.g. 0,1 (CUDA_VISIBLE_DEVICES): a run takes a GPU no run under way holds while one is free; with more --jobs than GPUs, runs share them; with --warm, one worker per GPU."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Runs side by side: the search's question and, in the slots it leaves idle, the runs it will likely ask next (the answer is the one-at-a-time search's), all in the spec's directory (for subjects that write no files there)."),
           executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
           ptx: bool = typer.Option(False, "--ptx", help="Add a PTX signature diff of good, bad and the culprit configuration (compile-only, no GPU)."),
           sanitize: bool = typer.Option(False, "--sanitize", help="Rerun the culprit configuration under compute-sanitizer (synccheck/memcheck/racecheck)."),
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
           ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Isolate the factor, or the set of factors acting together, that causes the failure.

    Exit 0: culprit isolated; 1: search stopped (what is shown so far printed); 2: endpoints unusable."""
    spare_ahead(executor, warm)
    from bisectk.engine.ablate import run_ablation
    from bisectk.engine.interrupts import held
    from bisectk.engine.session import Session, ledger_location
    from bisectk.report.terminal import differences_line
    from bisectk.spaces.factors import FactorSpace
    from bisectk.spec import load_spec
    resume_or_fresh(resume, fresh)
    given_strategy = strategy is not None or exhaustive
    strategy = check_strategy(strategy, exhaustive)
    spec = spec or default_spec()
    s = load_spec(spec)
    warnings = spec_warnings(s, timeout)
    n = len(s.differences())
    if n == 0:
        fail(f"{spec}: [good] and [bad] are identical" + (" as the subject receives them" if s.written_alike() else "")
             + ": nothing to ablate")
    from bisectk.search.ablation import STRATEGIES
    limit = STRATEGIES[strategy].max_n
    if limit is not None and n > limit:
        fail(f"--strategy {strategy} handles at most {limit} differences; {spec} has {n}")
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, timeout=timeout, gpus=tuple(gpus.split(",")) if gpus is not None else (), executor=executor,
                 ray_address=ray_address, fresh=fresh, warm=warm, jobs=jobs)
    pol = timed_policy(pol, s, warnings)
    ledger_path = ledger_location(ledger, spec=s)
    check_outputs(report, json_out, html, spec=s, ledger=ledger_path, as_json=as_json)
    with Session("ablate", s, ledger_path, args={"spec": str(spec), "strategy": strategy},
                 policy=pol, reporter=reporter(as_json, s.good)) as session:
        if resume and session.previous is None:
            other = session.ledger.last_session("ablate", before=session.id)
            fail(f"--resume: no earlier ablation of {spec} in {session.ledger.path}" + (
                f" as it is now: the last one there (session {other['id']}) ran another command, oracle or "
                f"named file; without --resume every run whose inputs are unchanged is still answered from the "
                f"ledger" if other is not None and other["args"].get("spec") == str(spec) else ""))
        if resume and session.previous["args"].get("strategy") and not given_strategy:
            strategy = session.previous["args"]["strategy"]
            # stored as run: a second --resume (this one interrupted too) goes on with it, not adaptive
            session.ledger.set_args(session.id, {"spec": str(spec), "strategy": strategy})
        if not as_json:
            out.print(differences_line(s.name, s.good, s.bad, list(s.differences())), markup=False)
        with held():   # Ctrl-C stops runs, never the writing of a result (engine/interrupts.py)
            try:
                rec = run_ablation(session.runner(), FactorSpace(s), pol, strategy=strategy, ptx=ptx,
                                   sanitize=sanitize, environment=capture_after_first_run(session),
                                   warnings=warnings)
            except KeyboardInterrupt:   # the documents asked for say so (a CI job's timeout: cli_common.interrupted)
                interrupted("ablate", BEFORE_ENDPOINTS, json_out=json_out, session=session, as_json=as_json,
                            report=report, html=html)
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command(short_help="Isolate the factor(s) of a spec that cause the failure.")(ablate)
