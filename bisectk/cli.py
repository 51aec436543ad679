"""Command-line wiring (typer). No logic lives here: each command builds a Workspace, calls the
engine, and hands the result to a report. Exit codes are part of the contract (README)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from bisectk import __version__
from bisectk.endpoints import verify
from bisectk.errors import BisectkError
from bisectk.outcome import Outcome
from bisectk.report.terminal import fmt_config
from bisectk.workspace import Workspace, apply_sets

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Differential bisection for GPU kernels: isolate the change that makes a kernel "
                       "hang, crash, compute garbage or slow down.")
out = Console(highlight=False, soft_wrap=True)

EXIT_PASS, EXIT_FAIL, EXIT_UNRESOLVED, EXIT_USAGE = 0, 1, 125, 2
OUTCOME_EXIT = {Outcome.PASS: EXIT_PASS, Outcome.FAIL: EXIT_FAIL, Outcome.UNRESOLVED: EXIT_UNRESOLVED}

SpecArg = typer.Argument(..., help="Variant spec (TOML).", show_default=False)
LedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: .bisectk/ledger.db beside the spec).")
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout; no progress output.")


def say_error(message: str) -> None:
    """One line on stderr, unwrapped whatever the terminal width."""
    sys.stderr.write(f"bisectk: {' '.join(str(message).split())}\n")


def fail(message: str, code: int = EXIT_USAGE) -> None:
    say_error(message)
    raise typer.Exit(code)


def emit_json(data: dict) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@app.command()
def run(spec: Path = SpecArg,
        config: str = typer.Option("bad", "--config", help="Which endpoint to start from: good or bad."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a factor: NAME=VALUE (repeatable)."),
        repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs of the configuration (default: the spec's)."),
        timeout: Optional[float] = typer.Option(None, "--timeout", min=0.01, help="Watchdog seconds (default: spec, else calibrated from good)."),
        ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Run one configuration and classify it. Exit 0 pass, 1 fail, 125 unresolved."""
    if config not in ("good", "bad"):
        fail(f"--config must be good or bad, not {config!r}")
    ws = Workspace.open(spec, ledger, quiet=as_json)
    try:
        cfg = apply_sets(ws.spec, ws.spec.endpoint(config), set_ or [])
        runner = ws.runner()
        if timeout:
            from bisectk.run.runner import TimeoutPolicy
            runner.timeout = TimeoutPolicy(timeout, "option", f"{timeout:g} s from --timeout")
        elif runner.timeout is None and cfg != ws.spec.good:
            # calibrate the watchdog from the good endpoint (memoised: usually from the ledger)
            runner.calibrate(list(runner.verdict(ws.spec.endpoint("good"), label="good (calibration)").runs))
        verdict = runner.verdict(cfg, repeat, label=config if not set_ else "custom")
        policy = runner.timeout
    finally:
        ws.close()
    if as_json:
        emit_json({"spec": str(spec), "config": cfg, **verdict.to_dict(),
                   "timeout": policy.to_dict() if policy else None})
    else:
        out.print(f"{ws.spec.name}: {fmt_config(cfg, ws.spec.good)}", markup=False)
        out.print(f"verdict: {verdict.describe()}  ({verdict.duration_s:.2f} s"
                  f"{', from the ledger' if verdict.cached else ''})", markup=False)
    raise typer.Exit(OUTCOME_EXIT[verdict.outcome])


@app.command()
def check(spec: Path = SpecArg,
          repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint (default: the spec's)."),
          ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Verify the endpoints: good must pass, bad must fail. Exit 0 if usable, 2 if not."""
    ws = Workspace.open(spec, ledger, quiet=as_json)
    try:
        result = verify(ws.runner(), repeat)
    finally:
        ws.close()
    if as_json:
        emit_json({"spec": str(spec), "differences": ws.spec.differences(), **result.to_dict()})
    else:
        from bisectk.report.text import print_check
        print_check(out, ws.spec, result)
    raise typer.Exit(0 if result.ok else EXIT_USAGE)


@app.callback(invoke_without_command=True)
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        out.print(f"bisectk {__version__}")
        raise typer.Exit(0)


def entry() -> None:
    """Console-script entry: user errors become one line and a non-zero exit, never a traceback."""
    try:
        code = app(standalone_mode=False)  # click returns typer.Exit's code in this mode
        sys.exit(code if isinstance(code, int) else 0)
    except BisectkError as exc:
        say_error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say_error("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort,):
        sys.exit(130)
    except Exception as exc:
        if any(c.__name__ == "ClickException" for c in type(exc).__mro__):  # usage errors (typer's click)
            exc.show()
            sys.exit(exc.exit_code)
        if os.environ.get("BISECTK_DEBUG"):
            raise
        say_error(f"internal error: {type(exc).__name__}: {exc} (set BISECTK_DEBUG=1 for the traceback)")
        sys.exit(3)
