"""Command-line wiring (typer). No logic lives here: each command parses its options, opens a
Session, builds a space and its oracle, calls an engine (bisectk/engine), and hands the result
record to a report. Exit codes come from bisectk/exitcodes.py (README: "Outcomes and exit codes")."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer

from bisectk import __version__
from bisectk import exitcodes as X
from bisectk.errors import BisectkError
from bisectk.outcome import SAME_FAILURE_MODES, Outcome, Reason
from bisectk.report.safe import SafeConsole, terminal_text
from bisectk.search import STRATEGIES, strategy_names

# -h as well as --help, on every command (click passes it down to the subcommands' contexts); help
# as wide as the terminal allows up to 120 columns (click's own cap is 80)
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings=CONTEXT,
                  help="Differential bisection for GPU kernels: isolate the change that makes a kernel "
                       "hang, crash, compute garbage or slow down.")
out = SafeConsole(highlight=False, soft_wrap=True)   # repository and subject text escaped (report/safe.py)

OUTCOME_EXIT = {Outcome.PASS: X.OK, Outcome.FAIL: X.FAILED, Outcome.UNRESOLVED: X.UNRESOLVED}

SpecArg = typer.Argument(..., help="Variant spec (TOML).", show_default=False)
LedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: .bisectk/ledger.db beside the spec).")
JsonOpt = typer.Option(False, "--json", help="Print the result as one JSON document on stdout (progress on stderr only when it is a terminal).")
RunOpt = typer.Option(None, "--run", help="Subject command instead of a SPEC, as one quoted string (git bisect run's "
                                          "exit codes: 0 good, 125 skip, 1-127 bad).")
BuildOpt = typer.Option(None, "--build", help="Build command run before the subject, as one quoted string; "
                                              "failure = UNRESOLVED(BUILD).")
ConfigOpt = typer.Option("bad", "--config", help="With a SPEC: which endpoint's factor values to run (good or bad).")
SetOpt = typer.Option(None, "--set", help="With a SPEC: override a factor, NAME=VALUE (repeatable).")
TimeoutOpt = typer.Option(None, "--timeout", min=0.01, help="Watchdog seconds, fixed for every run (default: the spec's "
                                                              "`timeout`, else calibrated from the good endpoint).")
ReportOpt = typer.Option(None, "--report", help="Write the Markdown debug log here (its pictures beside it).")
HtmlOpt = typer.Option(None, "--html", help="Write one self-contained HTML report with pictures here.")
JsonOutOpt = typer.Option(None, "--json-out", help="Write the JSON result here.")
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (its checkout is never touched).")
GoodRefOpt = typer.Option(..., "--good", help="A commit where the subject works.")
BadRefOpt = typer.Option(..., "--bad", help="A later commit where it fails.")
PytestOpt = typer.Option(None, "--pytest", help="Use a pytest node id as the oracle (0 pass, 1 fail, 2-5 unresolved).")
GitLedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: <git dir>/bisectk/ledger.db).")
SameFailureOpt = typer.Option("check", "--same-failure",
                              help="When is a failure the one hunted: 'check' (kind plus what failed: the signal or "
                                   "CUDA error, the violated accuracy checks; values never matter), 'kind' (hang, "
                                   "crash, wrong, slow), or 'signature' (the error text with numbers blanked).")
CalibrateOpt = typer.Option(10, "--calibrate-runs", min=1, help="Cap on endpoint re-runs: a bad endpoint that passes is "
                                                                "re-run up to this many times, and an intermittent one "
                                                                "is measured over this many runs.")
WarmOpt = typer.Option(False, "--warm", help="Run Python subjects in warm worker processes (imports paid once; each run "
                                              "loads the tree's own modules fresh), with hot spares (two per GPU slot) to replace "
                                              "a worker a hang or crash kills.")
SnapshotsOpt = typer.Option(2, "--snapshots", min=0, help="Hangs to read before the kill beyond the bad endpoint's "
                                                          "first and the culprit's (where each thread and warp waits: "
                                                          "py-spy, gdb, cuda-gdb); 0: none.")
FreshOpt = typer.Option(False, "--fresh", help="Ignore runs stored in the ledger (run everything again).")
ExecutorOpt = typer.Option("local", "--executor", help="Where runs execute: 'local' (processes here) or 'ray' (one warm "
                                                       "actor per GPU or CPU slot on a Ray cluster; pip install -e '.[ray]').")
RayAddressOpt = typer.Option(None, "--ray-address", help="With --executor ray: the cluster's head node, HOST:PORT "
                                                         "(its GCS port; default: start a local Ray instance).")
RayRepoOpt = typer.Option(None, "--ray-repo", help="With --executor ray: the repository's path on every Ray host (a shared "
                                                   "filesystem); actors read commits there instead of receiving them.")


def cache_ledger() -> str:
    """Where `diff` keeps its ledger by default, worded for help: engine.session.cache_dir's rule
    (not imported here: help must not load the engine)."""
    base = os.environ.get("XDG_CACHE_HOME")
    return f"{base}/bisectk/ledger.db" if base else "~/.cache/bisectk/ledger.db"


def say_error(message: str) -> None:
    """One line on stderr, unwrapped whatever the terminal width."""
    sys.stderr.write(f"bisectk: {terminal_text(' '.join(str(message).split()))}\n")


def fail(message: str, code: int = X.USAGE) -> None:
    say_error(message)
    raise typer.Exit(code)


def unused_factor_warnings(spec) -> list[str]:
    """A warning per factor that reaches no placeholder (printed on stderr; `check` repeats it)."""
    lines = [f"factor {f!r} is used by no placeholder of [subject] command, build or env: its values never "
             f"reach the subject ({spec.path})" for f in spec.unused_factors()]
    for line in lines:
        sys.stderr.write(f"bisectk: warning: {terminal_text(line)}\n")
    return lines


def emit_json(data: dict) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def environment_capture() -> dict:
    from bisectk.spaces.env import capture
    return capture(torch=False)


def reporter(as_json: bool, reference: dict | None):
    """The progress subscriber, always on stderr: a live status line on a terminal; plain lines,
    one per run, when stderr is a pipe or a file (a CI log) -- except with --json, where only a
    terminal gets progress, so `--json 2>&1` stays one JSON document."""
    if sys.stderr.isatty():
        from bisectk.report.terminal import TerminalReporter
        return TerminalReporter(reference=reference)
    if as_json:
        return None
    from bisectk.report.terminal import ProgressLines
    return ProgressLines(sys.stderr, reference=reference)


def policy(**kw):
    from bisectk.engine.policy import RunPolicy
    mode = kw.setdefault("same_failure", "check")
    if mode not in SAME_FAILURE_MODES:
        fail(f"--same-failure {mode!r}: choose one of {', '.join(SAME_FAILURE_MODES)}")
    return RunPolicy(**kw)


def check_strategy(strategy: str) -> None:
    if strategy not in strategy_names():
        fail(f"--strategy {strategy!r}: choose one of {', '.join(strategy_names())}")


def write_reports(record, log, markdown: Optional[Path], html: Optional[Path]) -> list[str]:
    """The Markdown debug log (pictures beside it) and the HTML report; a line for each."""
    if not (markdown or html):
        return []
    from bisectk.report.html import write_html, write_markdown
    return ([write_markdown(markdown, record, log)] if markdown else []) + ([write_html(html, record, log)] if html else [])


def finish(record, log, summary, *, report: Optional[Path], json_out: Optional[Path], as_json: bool, code: int,
           session=None, html: Optional[Path] = None) -> None:
    """Store the record with its session, write the report files, print JSON or the terminal
    summary, and exit with `code`."""
    doc = record.to_dict()
    if session is not None:
        session.record(doc)
    written = write_reports(record, log, report, html)
    if json_out:
        json_out.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    if as_json:
        emit_json(doc)
    else:
        summary()
        for line in written:
            out.print(line, markup=False)
    from bisectk.engine.interrupts import late
    if late() and code == X.OK:   # Ctrl-C after the last run, while the result was written (engine/interrupts.py)
        say_error("interrupted after the search had finished; the result printed is complete")
        code = X.INCOMPLETE
    raise typer.Exit(code)


# -- run / check ---------------------------------------------------------------------------------

@app.command(short_help="Run one configuration and classify it.")
def run(spec: Path = SpecArg,
        config: str = typer.Option("bad", "--config", help="Which endpoint to start from: good or bad."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a factor: NAME=VALUE (repeatable)."),
        repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs of the configuration (default: the spec's)."),
        timeout: Optional[float] = typer.Option(None, "--timeout", min=0.01, help="Watchdog seconds (default: spec, else calibrated from good)."),
        fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Run one configuration and classify it. Exit 0 pass, 1 fail, 125 unresolved."""
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.single import run_one
    from bisectk.engine.subject import load_subject
    from bisectk.report.terminal import fmt_config
    s, cfg = load_subject(spec, cwd=Path.cwd(), config=config, sets=set_)
    unused_factor_warnings(s)
    with Session("run", s, ledger_location(ledger, spec=s), args={"spec": str(spec), "config": cfg},
                 policy=policy(timeout=timeout, snapshots=snapshots), fresh=fresh, reporter=reporter(as_json, s.good)) as session:
        rec = run_one(session, cfg, repeat=repeat, label=config if not set_ else "custom",
                      environment=environment_capture() if as_json else None)
        session.record(rec.to_dict())
    from bisectk.outcome import Verdict
    verdict = Verdict.from_dict(rec.verdict)
    if as_json:
        emit_json({"spec": str(spec), "config": cfg, **rec.verdict, "timeout": rec.timeout,
                   "environment": rec.environment})
    else:
        out.print(f"{s.name}: {fmt_config(cfg, s.good)}", markup=False)
        out.print(f"verdict: {verdict.describe()}  ({verdict.duration_s:.2f} s"
                  f"{', from the ledger' if verdict.cached else ''})", markup=False)
        if verdict.reason is Reason.USAGE:
            out.print(f"command: {s.command_text(cfg)}", markup=False)
        from bisectk.report.stuck import terminal_lines
        for line in terminal_lines(rec.hangs):
            out.print(line, markup=False, highlight=False)
    raise typer.Exit(OUTCOME_EXIT[verdict.outcome])


@app.command(short_help="Verify the endpoints: good must pass, bad must fail.")
def check(spec: Path = SpecArg,
          repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint (default: the spec's)."),
          flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Measure the failure rate even if the bad endpoint failed every time."),
          calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
          timeout: Optional[float] = TimeoutOpt,
          fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Verify the endpoints: good must pass, bad must fail. Exit 0 if usable, 2 if not."""
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.single import check_endpoints
    from bisectk.engine.subject import load_subject
    from bisectk.report.text import print_check
    s, _ = load_subject(spec, cwd=Path.cwd())
    warnings = unused_factor_warnings(s)
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure,
                 timeout=timeout, snapshots=snapshots)
    with Session("check", s, ledger_location(ledger, spec=s), args={"spec": str(spec)}, policy=pol, fresh=fresh,
                 reporter=reporter(as_json, s.good)) as session:
        rec = check_endpoints(session, environment=environment_capture() if as_json else None)
        session.record(rec.to_dict())
    if as_json:
        emit_json({"spec": str(spec), "differences": list(rec.subject.differences), **rec.endpoints.to_dict(),
                   "warnings": warnings, "environment": rec.environment})
    else:
        print_check(out, rec)
        for line in warnings:
            out.print(f"warning: {line}", markup=False)
    raise typer.Exit(X.OK if rec.ok else X.USAGE)


def default_spec() -> Path:
    """The embedded CPU default: a pipeline that deadlocks, among several benign differences
    (relative to the working directory when inside it, so printed commands read as typed)."""
    path = Path(__file__).resolve().parents[1] / "variants" / "cpu" / "pipeline-hang.toml"
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


# -- ablate ----------------------------------------------------------------------------------------

@app.command(short_help="Isolate the factor(s) of a spec that cause the failure.")
def ablate(spec: Optional[Path] = typer.Argument(None, help="Variant spec (default: the embedded CPU pipeline-hang pair).", show_default=False),
           strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
           exhaustive: bool = typer.Option(False, "--exhaustive", help="Full factorial (n <= 8); same as --strategy exhaustive."),
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check (default: the spec's)."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Treat the failure as intermittent even if the endpoint checks did not show it (default: decided by the endpoint runs)."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           timeout: Optional[float] = TimeoutOpt,
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search after this many runs (best result so far)."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last ablation of this spec: runs already in the ledger are not repeated."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt,
           warm: bool = WarmOpt,
           gpus: Optional[str] = typer.Option(None, "--gpus", help="With --warm: one worker per GPU, e.g. 0,1."),
           executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
           ptx: bool = typer.Option(False, "--ptx", help="Add a PTX signature diff of good, bad and the culprit configuration (compile-only, no GPU)."),
           sanitize: bool = typer.Option(False, "--sanitize", help="Rerun the culprit configuration under compute-sanitizer (synccheck/memcheck/racecheck)."),
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
           ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Isolate the factor, or the set of factors acting together, that causes the failure.

    Exit 0: culprit isolated; 1: search stopped (what is shown so far printed); 2: endpoints unusable."""
    from bisectk.engine.ablate import run_ablation
    from bisectk.engine.interrupts import held
    from bisectk.engine.oracle import SpaceOracle
    from bisectk.engine.session import Session, ledger_location
    from bisectk.report.ablation import print_summary, to_debuglog
    from bisectk.spaces.factors import FactorSpace
    from bisectk.spec import load_spec, render
    strategy = "exhaustive" if exhaustive else strategy
    check_strategy(strategy)
    spec = spec or default_spec()
    s = load_spec(spec)
    unused_factor_warnings(s)
    n = len(s.differences())
    if n == 0:
        fail(f"{spec}: [good] and [bad] are identical: nothing to ablate")
    limit = STRATEGIES[strategy].max_n
    if limit is not None and n > limit:
        fail(f"--strategy {strategy} handles at most {limit} differences; {spec} has {n}")
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, timeout=timeout, gpus=tuple(gpus.split(",")) if gpus else (), executor=executor,
                 ray_address=ray_address)
    with Session("ablate", s, ledger_location(ledger, spec=s), args={"spec": str(spec), "strategy": strategy},
                 policy=pol, fresh=fresh, warm=warm, reporter=reporter(as_json, s.good)) as session:
        if resume and session.previous is None:
            fail(f"--resume: no earlier ablation of {spec} in {session.ledger.path}")
        if resume and session.previous["args"].get("strategy") and strategy == "adaptive":
            strategy = session.previous["args"]["strategy"]
        if not as_json:
            out.print(f"{s.name}: {n} differences between good and bad: "
                      + ", ".join(f"{f} {render(s.good[f])} -> {render(s.bad[f])}" for f in s.differences()),
                      markup=False)
        oracle = SpaceOracle(session.runner(), FactorSpace(s), policy=pol)
        with held():   # Ctrl-C stops runs, never the writing of a result (engine/interrupts.py)
            try:
                rec = run_ablation(oracle, strategy=strategy, ptx=ptx, sanitize=sanitize,
                                   environment=environment_capture())
            except KeyboardInterrupt:
                fail("interrupted before the endpoints were verified; nothing to report (runs so far are in the "
                     "ledger)", X.INTERRUPTED)
            finish(rec, to_debuglog(rec), lambda: print_summary(out, rec), report=report, json_out=json_out,
                   as_json=as_json, code=X.search_code(rec.ok, rec.complete, rec.interrupted), session=session,
                   html=html)


# -- diff ------------------------------------------------------------------------------------------

@app.command("diff", short_help="Isolate the hunks of a source difference that cause it.")
def diff_cmd(good: Path = typer.Argument(..., help="The working file or source tree.", show_default=False),
             bad: Path = typer.Argument(..., help="The failing file or source tree.", show_default=False),
             spec: Optional[Path] = typer.Argument(None, help="Variant spec whose command runs inside each hybrid tree.", show_default=False),
             run_cmd: Optional[str] = RunOpt, build: Optional[str] = BuildOpt,
             config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
             repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check."),
             flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware search (default: decided by the endpoint runs)."),
             calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
             timeout: Optional[float] = TimeoutOpt,
             strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
             lines: bool = typer.Option(True, "--lines/--no-lines", help="Refine culprit hunks to lines (second pass)."),
             max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search after this many runs."),
             fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
             executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
             report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
             ledger: Optional[Path] = typer.Option(None, "--ledger", help=f"Ledger database (default: {cache_ledger()}, in your cache, never in GOOD or BAD; scratch trees beside it)."),
             as_json: bool = JsonOpt) -> None:
    """Isolate the hunks (then lines) of the GOOD->BAD source difference that cause the failure.

    The subject runs with the hybrid tree as its working directory. Exit 0: culprit found;
    1: search stopped; 2: unusable input or endpoints."""
    from bisectk.engine.diff import run_diff
    from bisectk.engine.interrupts import held
    from bisectk.engine.oracle import SpaceOracle
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.subject import load_subject
    from bisectk.report.diff import print_summary, to_debuglog
    from bisectk.report.words import counted
    from bisectk.spaces.hunkspace import HunkSpace
    for p in (good, bad):
        if not p.exists():
            fail(f"{p}: no such file or directory")
    check_strategy(strategy)
    # never in the user's tree: the ledger lives in their cache (or --ledger), scratch trees beside it
    ledger_path = ledger_location(ledger)
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, timeout=timeout, executor=executor, ray_address=ray_address)
    s, base = load_subject(spec, run_cmd, cwd=Path.cwd(), build=build, config=config, sets=set_,
                           repeat=repeat, name=f"diff {good.name}..{bad.name}")
    unused_factor_warnings(s)
    with Session("diff", s, ledger_path, args={"good": str(good), "bad": str(bad)}, policy=pol, fresh=fresh,
                 warm=warm, reporter=reporter(as_json, None)) as session:
        space = HunkSpace(good, bad, session.scratch("scratch"), base=base)
        session.closers.append(space.close)
        if not as_json:
            out.print(f"{counted(len(space.hunks), 'hunk')} between {good} and {bad}", markup=False)
        oracle = SpaceOracle(session.runner(cwd=space.workdir), space, policy=pol)
        with held():   # as in ablate
            rec = run_diff(oracle, strategy=strategy, refine=lines, environment=environment_capture())
            finish(rec, to_debuglog(rec), lambda: print_summary(out, rec), report=report, json_out=json_out,
                   as_json=as_json, code=X.search_code(rec.ok, rec.complete, rec.interrupted), session=session,
                   html=html)


# -- bisect / triage -------------------------------------------------------------------------------

def history_subject(spec, run_cmd, pytest_id, build, root: Path, config, sets, timeout, repeat):
    """(Spec, configuration, the subject's cwd relative to the repository root) for bisect/triage."""
    from bisectk.engine.subject import load_subject
    s, cfg = load_subject(spec, run_cmd, pytest_id, build=build, cwd=root, config=config, sets=sets,
                          timeout=timeout, repeat=repeat, name="bisect")
    unused_factor_warnings(s)
    try:
        sub = s.cwd.resolve().relative_to(root) if spec is not None else Path(".")
    except ValueError:
        sub = Path(".")  # a spec outside the repository: run from the worktree's root
    return s, cfg, sub


def history_ends(good: list[str], bad: list[str], find_fix: bool) -> tuple[list[str], str, tuple[str, str]]:
    """(the old side's refs, the new end's ref, the options that named them) from --good/--bad:
    a regression goes from the goods (all count) to one bad; a fix (--find-fix) from the bads,
    where it fails, to one good, where it passes again."""
    olds, news, names = (bad, good, ("--bad", "--good")) if find_fix else (good, bad, ("--good", "--bad"))
    if not olds or not news:
        fail(f"give {names[0]} REF and {names[1]} REF" + (" (--find-fix: --bad is the older commit, where it "
                                                           "fails, --good the newer one, where it passes)" if find_fix else ""))
    if len(news) > 1:
        fail(f"{names[1]} is given {len(news)} times: one {names[1]} commit ({names[0]} may be repeated"
             + (", and --find-fix looks from the failing --bad commits to one passing --good)" if find_fix else ")"))
    return olds, news[0], names


def history_targets(targets: Optional[list[str]], command_given: bool) -> tuple[Optional[Path], list[str]]:
    """(SPEC, PATHSPEC) from the positional words: with --run, --pytest or --manual they are all
    the pathspec (git's `-- PATHSPEC...`, with or without the `--`); else the first is the spec."""
    words = list(targets or [])
    if command_given or not words:
        return None, words
    return Path(words[0]), words[1:]


@app.command(short_help="Find the first bad commit between --good and --bad.")
def bisect(repo: Path = RepoOpt,
           good: Optional[list[str]] = typer.Option(None, "--good", help="A commit where the subject works; repeatable "
                                                    "(all count). With --find-fix: the newer commit, where it works again."),
           bad: Optional[list[str]] = typer.Option(None, "--bad", help="A later commit where it fails. With --find-fix: the "
                                                   "older commit where it fails (repeatable)."),
           targets: Optional[list[str]] = typer.Argument(None, metavar="[SPEC] [-- PATHSPEC...]", show_default=False,
                                                         help="Variant spec to run in each commit (or use --run / --pytest), "
                                                              "then git's pathspec: only commits that touch these paths are candidates."),
           run_cmd: Optional[str] = RunOpt,
           pytest_id: Optional[str] = PytestOpt,
           build: Optional[str] = BuildOpt, config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
           timeout: Optional[float] = TimeoutOpt,
           repeat: int = typer.Option(1, "--repeat", min=1, help="Runs of each endpoint; more runs reveal an intermittent failure."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware Bayesian search (default: when the endpoint runs show the failure is intermittent)."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           confidence: float = typer.Option(0.99, "--confidence", min=0.5, max=0.999999, help="Stop when the first bad commit is this probable (flaky mode)."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Test this many commits per round in parallel (k-way multisection)."),
           gpus: Optional[str] = typer.Option(None, "--gpus", help="Pin parallel workers to GPUs, e.g. 0,1,2,3 (sets CUDA_VISIBLE_DEVICES)."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain (merge-heavy history)."),
           any_failure: bool = typer.Option(False, "--any-failure", help="Count any failure as bad (git bisect's view), not only the bad endpoint's."),
           find_fix: bool = typer.Option(False, "--find-fix", help="Find the first commit where the failure stops (the fix): "
                                                                 "--bad is the older commit, where it fails, --good the newer one."),
           term_old: Optional[str] = typer.Option(None, "--term-old", help="git's word for the old side (default good; with "
                                                                          "--find-fix broken)."),
           term_new: Optional[str] = typer.Option(None, "--term-new", help="git's word for the new side (default bad; with "
                                                                          "--find-fix fixed): the answer is the first TERM commit."),
           manual: bool = typer.Option(False, "--manual", help="You are the oracle: each commit to judge is checked out in a "
                                                             "worktree whose path is printed; answer on stdin (good, bad, skip, "
                                                             "undo, log, quit). The same command resumes."),
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop after this many observations."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last bisection of these refs; nothing already recorded re-runs."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
           executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt, ray_repo: Optional[str] = RayRepoOpt,
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
           ledger: Optional[Path] = GitLedgerOpt,
           as_json: bool = JsonOpt) -> None:
    """Find the first bad commit between --good and --bad, each commit built and run in its own
    git worktree. Exit 0: found (1 if ambiguous or stopped); 2: unusable input or endpoints."""
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import ExitStack

    from bisectk.engine.direction import Terms
    from bisectk.spaces.command import pathspec_of, resolve_command
    from bisectk.spaces.commits import list_graph, open_repo, resolve
    from bisectk.spaces.worktrees import WorktreePool
    terms = Terms.of(find_fix, term_old, term_new)
    olds, new, names = history_ends(good or [], bad or [], find_fix)
    spec, paths = history_targets(targets, bool(run_cmd or pytest_id or manual))
    root = open_repo(repo)
    paths = pathspec_of(paths, Path.cwd(), root)
    if manual:
        if spec is not None or run_cmd or pytest_id or build:
            fail("--manual: you are the oracle; give no SPEC, --run, --pytest or --build")
        _bisect_manual(root, olds, new, names, paths, terms, first_parent=first_parent, confidence=confidence,
                       fresh=fresh, ledger=ledger)
    with ExitStack() as stack:
        # git lists the history, and the first endpoint is checked out, while Python loads the rest
        background = stack.enter_context(ThreadPoolExecutor(max_workers=2, thread_name_prefix="bisectk-setup"))
        listing = background.submit(list_graph, root, olds, new, first_parent=first_parent, paths=paths, ends=names)
        capture = background.submit(environment_capture)
        pool = None
        try:
            good_sha, bad_sha = resolve(root, olds[0], names[0]), resolve(root, new, names[1])
        except BisectkError:
            listing.result()                # the listing reports a bad ref, as before
            raise
        if executor == "local":
            pool = stack.enter_context(WorktreePool(root, size=jobs))
            pool.prepare(bad_sha if find_fix else good_sha)     # the endpoint that must pass runs first
        try:
            files = []
            if run_cmd:
                run_cmd, found = resolve_command(run_cmd, "--run", user_cwd=Path.cwd(), root=root, commit=bad_sha)
                files += found
            if build:
                build, found = resolve_command(build, "--build", user_cwd=Path.cwd(), root=root, commit=bad_sha)
                files += found
            s, cfg, sub = history_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat)
        except BaseException:
            listing.result()                # a bad range is reported first, as before
            raise
        _bisect(root, listing, good_sha, bad_sha, pool, capture.result, spec=spec, run_cmd=run_cmd, pytest_id=pytest_id, s=s, cfg=cfg,
                sub=sub, good=olds[0], bad=new, repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs,
                same_failure=same_failure, confidence=confidence, jobs=jobs, gpus=gpus, first_parent=first_parent,
                any_failure=any_failure, max_runs=max_runs, resume=resume, fresh=fresh, snapshots=snapshots, warm=warm,
                executor=executor,
                ray_address=ray_address, ray_repo=ray_repo, report=report, json_out=json_out, html=html,
                ledger=ledger, as_json=as_json, terms=terms, files=files)


def _bisect(root, listing, good_sha, bad_sha, pool, environment, *, spec, run_cmd, pytest_id, s, cfg, sub, good, bad,
            repeat, flaky, calibrate_runs, same_failure, confidence, jobs, gpus, first_parent, any_failure, max_runs,
            resume, fresh, snapshots, warm, executor, ray_address, ray_repo, report, json_out, html, ledger,
            as_json, terms, files) -> None:
    """The rest of `bisect`: the engine loads while git lists the history (`listing`), which is
    waited for before a session opens (a bad range opens none). The shas: refs move. `good_sha`
    is the old end (for a fix, the failing --bad), `bad_sha` the new one."""
    from bisectk.engine.bisect import run_bisect
    from bisectk.engine.oracle import SpaceOracle
    from bisectk.engine.session import Session, ledger_location
    from bisectk.report.history import print_summary, to_debuglog
    commits = listing.result()
    args = {"repo": str(root), "good": good_sha, "bad": bad_sha, "first_parent": first_parent, "flaky": flaky,
            "any_failure": any_failure, "subject": str(spec or run_cmd or pytest_id),
            "olds": list(commits.goods), "paths": list(commits.paths), **terms.to_dict()}
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, jobs=jobs, confidence=confidence, gpus=tuple(gpus.split(",")) if gpus else (),
                 executor=executor, ray_address=ray_address, ray_repo=ray_repo)
    with Session("bisect", s, ledger_location(ledger, repo=root), args=args, policy=pol, fresh=fresh,
                 warm=warm, reporter=reporter(as_json, None)) as session:
        prev = session.previous
        same = prev is not None and all(prev["args"].get(k, d) == args[k] for k, d in
                                        (("good", None), ("bad", None), ("olds", [good_sha]), ("paths", []),
                                         ("find_fix", False)))
        if resume and not same:
            fail(f"--resume: no earlier bisection of {good}..{bad} with this subject in {session.ledger.path}")
        if not as_json:
            merges = commits.merges()
            old_word, new_word = ("bad", "good") if terms.find_fix else ("good", "bad")
            out.print(f"{len(commits)} candidate commits from {good_sha[:10]} ({old_word}) to {bad_sha[:10]} ({new_word})"
                      + (f", {merges} of them {'a merge' if merges == 1 else 'merges'}" if merges else "")
                      + (" (first-parent chain)" if first_parent else "")
                      + (f", touching {' '.join(commits.paths)}" if commits.paths else ""), markup=False)
            for f in files:     # which copy runs: the user's file, or each commit's own (said when
                if f.state == "tracked, not in your directory":     # the user has a copy: it did not run)
                    continue
                out.print(f"command: {f.word} is your file {f.path} ({f.state}), run in each commit's worktree"
                          if f.use == "yours" else f"command: {f.word} is tracked: each commit's own {f.path} runs",
                          markup=False)
        with session.commit_space(commits, root, cfg, sub, pool=pool) as space:
            oracle = SpaceOracle(session.runner(), space, policy=pol, any_failure=any_failure)
            try:
                rec = run_bisect(oracle, environment=environment, repo=str(root), first_parent=first_parent, terms=terms,
                                 facts={"command_files": tuple(f.to_dict() for f in files)})
            except KeyboardInterrupt:
                fail("interrupted while verifying the endpoints; runs so far are in the ledger", X.INTERRUPTED)
        finish(rec, to_debuglog(rec), lambda: print_summary(out, rec), report=report, json_out=json_out,
               as_json=as_json, code=X.search_code(rec.ok, rec.complete, rec.interrupted, rec.ambiguous,
                                 rec.separable is False),
               session=session, html=html)


def _bisect_manual(root, olds, new, names, paths, terms, *, first_parent, confidence, fresh, ledger) -> None:
    """`bisect --manual`: the person is the oracle (engine/manual.py); verdicts on stdin, each to
    the ledger; the same command resumes, `bisectk log` prints it, `bisectk replay` reads it."""
    from bisectk.engine.manual import run_manual_session
    from bisectk.report.history import print_summary
    rec = run_manual_session(root, olds, new, names, paths, terms, first_parent=first_parent, confidence=confidence,
                             fresh=fresh, ledger=ledger, ask=_ask_line, say=lambda line: out.print(line, markup=False))
    if rec is None:
        raise typer.Exit(X.INCOMPLETE)
    print_summary(out, rec)
    raise typer.Exit(X.search_code(rec.ok, rec.complete, rec.interrupted, rec.ambiguous))


def _ask_line(prompt: str) -> Optional[str]:
    """One answer from stdin after `prompt` (None at the end of input); a piped answer is echoed so
    that the transcript reads as typed."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stdout.write("\n")
        return None
    if not sys.stdin.isatty():
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
    return line.rstrip("\n")


@app.command(short_help="For CI: classify, bisect, isolate the culprit hunks.")
def triage(spec: Optional[Path] = typer.Argument(None, help="Variant spec to run (or use --run / --pytest).", show_default=False),
           repo: Path = RepoOpt,
           good: str = GoodRefOpt,
           bad: str = BadRefOpt,
           run_cmd: Optional[str] = RunOpt,
           pytest_id: Optional[str] = PytestOpt,
           build: Optional[str] = BuildOpt, config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
           timeout: Optional[float] = TimeoutOpt,
           repeat: int = typer.Option(1, "--repeat", min=1, help="Runs of each endpoint."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware search."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           confidence: float = typer.Option(0.99, "--confidence", min=0.5, max=0.999999, help="Stop the bisection when the first bad commit is this probable (flaky mode)."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Commits tested per round in parallel."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain."),
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop each search (the bisection, then the hunk isolation) after this many runs."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last triage of these refs; nothing already recorded re-runs."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
           executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt, ray_repo: Optional[str] = RayRepoOpt,
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
           junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
           ledger: Optional[Path] = GitLedgerOpt,
           as_json: bool = JsonOpt) -> None:
    """Regression triage for CI: classify the failure, bisect to the first bad commit, isolate its
    culprit hunks, and write one report.

    Exit 0: nothing to triage (bad does not fail); 1: culprit found; 2: inconclusive."""
    from bisectk.engine.oracle import SpaceOracle
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.triage import run_triage
    from bisectk.report.junit import write_junit
    from bisectk.report.triage import print_summary, to_cases, to_debuglog
    from bisectk.spaces.commits import list_graph, open_repo
    root = open_repo(repo)
    commits = list_graph(root, good, bad, first_parent=first_parent)
    s, cfg, sub = history_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat)
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 jobs=jobs, max_runs=max_runs, confidence=confidence, executor=executor, ray_address=ray_address,
                 ray_repo=ray_repo)
    args = {"repo": str(root), "good": commits.good_sha, "bad": commits.bad_sha}
    with Session("triage", s, ledger_location(ledger, repo=root), args=args, policy=pol, fresh=fresh,
                 warm=warm, reporter=reporter(as_json, None)) as session:
        prev = session.previous
        if resume and (prev is None or (prev["args"].get("good"), prev["args"].get("bad")) != (args["good"], args["bad"])):
            fail(f"--resume: no earlier triage of {good}..{bad} with this subject in {session.ledger.path}")
        with session.commit_space(commits, root, cfg, sub) as space:
            oracle = SpaceOracle(session.runner(), space, policy=pol)
            rec = run_triage(oracle, scratch_root=session.scratch("triage"), environment=environment_capture(),
                             repo=str(root), first_parent=first_parent, subdir=sub)
        log_md = to_debuglog(rec)
        if junit:
            write_junit(junit, "bisectk triage", to_cases(rec, str(spec or run_cmd or pytest_id)))
        finish(rec, log_md, lambda: print_summary(out, rec, report), report=report, json_out=json_out,
               as_json=as_json, code=rec.exit_code, session=session, html=html)


# -- log / replay / report -------------------------------------------------------------------------

def open_ledger(path: Path):
    from bisectk.ledger import Ledger
    if not path.exists():
        fail(f"no ledger at {path}: nothing has been recorded there")
    return Ledger(path, readonly=True)   # printing never writes (and works on a read-only ledger)


@app.command(short_help="Print the last bisection as a replayable record.")
def log(repo: Path = typer.Option(Path("."), "--repo", help="The repository whose bisection to print."),
        ledger: Optional[Path] = GitLedgerOpt,
        session: Optional[int] = typer.Option(None, "--session", help="Session id (default: the last bisection).")) -> None:
    """Print the last bisection as a replayable record (like git bisect log)."""
    from bisectk.engine.session import ledger_location
    from bisectk.report.history import log_lines
    from bisectk.spaces.commits import open_repo
    db = open_ledger(ledger or ledger_location(repo=open_repo(repo)))
    try:
        info = db.session(session) if session else db.last_session("bisect")
        if info is None or info["command"] != "bisect":
            fail("no bisection recorded" + (f" with session id {session}" if session else ""))
        for line in log_lines(info, db.events(info["id"], "observation"), db.events(info["id"], "undo")):
            out.print(line, markup=False, highlight=False)
    finally:
        db.close()


@app.command(short_help="Rebuild a bisection's answer from a log, running nothing.")
def replay(logfile: Path = typer.Argument(..., help="A file written from `bisectk log`, or by `git bisect log`.", show_default=False),
           repo: Optional[Path] = typer.Option(None, "--repo", help="Repository (default: the one named in the log; for "
                                                                   "a git bisect log, the current directory)."),
           html: Optional[Path] = HtmlOpt, as_json: bool = JsonOpt) -> None:
    """Rebuild a bisection's answer from a log, running nothing; says which commit to test next if
    the log stops early. Exit 0: the log determines the first bad commit; 1: it does not yet."""
    from bisectk.engine.gitlog import parse_log
    from bisectk.engine.replay import read_log, replay_log, replay_record
    result, graph, nxt = replay_log(logfile, repo)
    terms = parse_log(read_log(logfile))[0].terms
    fb = graph[result.culprit] if result.culprit is not None else None
    nxt_info = None if nxt is None else graph[nxt] if isinstance(nxt, int) else graph.info(nxt)
    doc = {"first_bad": fb.to_dict() if fb and result.complete else None,
           "last_good": [graph[p].to_dict() for p in result.parents] if fb else [],
           "confidence": result.confidence, "complete": result.complete,
           "candidates": [graph[i].sha for i in result.candidates], "contradiction": result.contradiction,
           "next": nxt_info.sha if nxt_info else None, "terms": [terms.old, terms.new], "find_fix": terms.find_fix}
    written = write_reports(replay_record(logfile, repo, (result, graph, nxt)), None, None, html) if html else []
    if as_json:
        emit_json(doc)
    else:
        for line in written:
            out.print(line, markup=False)
        if result.contradiction:
            out.print(f"the log contradicts itself: {result.contradiction}", markup=False)
        out.print(f"first {terms.new} commit: {fb.sha} {fb.subject}" if fb and result.complete else
                  f"not determined yet; {len(result.candidates)} candidates remain", markup=False)
        if nxt_info is not None:
            out.print(f"next commit to test: {nxt_info.sha} {nxt_info.subject}"
                      + ("" if isinstance(nxt, int) else " (a merge base: git tests it first)"), markup=False)
    raise typer.Exit(X.OK if fb and result.complete else X.INCOMPLETE)


@app.command(short_help="Print a finished command's result again from the ledger.")
def report(ledger: Path = typer.Argument(..., help="A ledger database (e.g. .bisectk/ledger.db, <git dir>/bisectk/ledger.db).", show_default=False),
           session: Optional[int] = typer.Option(None, "--session", help="Session id (default: the last finished one)."),
           markdown: Optional[Path] = typer.Option(None, "--report", help="Write the Markdown debug log here (its pictures beside it)."),
           html: Optional[Path] = HtmlOpt, as_json: bool = JsonOpt) -> None:
    """Print a finished command's result again from the ledger, running nothing."""
    from bisectk.engine.records import load_record
    from bisectk.report import render
    db = open_ledger(ledger)
    try:
        info = db.session(session) if session else db.last_finished_session()
    finally:
        db.close()
    result = info.get("result") if info else None
    if not isinstance(result, dict) or "command" not in result:
        fail(f"{ledger}: no finished session" + (f" with id {session}" if session else "") + " with a stored result")
    damaged = f"{ledger}: the stored result of session {info['id']} is damaged"
    try:
        rec = load_record(result)
        with out.capture() as shown:   # printed whole or not at all; rendered for --json too, to read it all
            render.summary(out, rec)
        written = write_reports(rec, None, markdown, html)
    except BisectkError as exc:
        fail(f"{damaged} ({exc})")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:   # a field of the wrong shape
        fail(f"{damaged} ({type(exc).__name__}: {exc})"[:300])
    if as_json:
        emit_json(result)
    else:
        sys.stdout.write(shown.get())
        for line in written:
            out.print(line, markup=False)
    raise typer.Exit(X.OK)


ledger_app = typer.Typer(no_args_is_help=True, help="Inspect or repair a ledger; remove cached worktrees (gc).")
app.add_typer(ledger_app, name="ledger")


@ledger_app.command("check")
def ledger_check(path: Path = typer.Argument(..., help="The ledger database.", show_default=False),
                 salvage: Optional[Path] = typer.Option(None, "--salvage", help="Copy every readable row into this new ledger."),
                 as_json: bool = JsonOpt) -> None:
    """Check a ledger's integrity without writing to it; --salvage copies what is readable into a
    new ledger. Exit 0: healthy (or salvaged); 2: damaged."""
    from bisectk import ledger_check as L
    if not path.exists():
        fail(f"no ledger at {path}")
    rep = L.check(path)
    saved = L.salvage(path, salvage) if salvage else None
    if as_json:
        emit_json({**rep.to_dict(), "salvaged": saved})
    else:
        for line in rep.lines():
            out.print(line, markup=False)
        if saved is not None:
            out.print(f"salvaged into {salvage}: " + ", ".join(f"{k} {v}" for k, v in saved.items()), markup=False)
    raise typer.Exit(X.OK if rep.ok or saved is not None else X.USAGE)


@ledger_app.command("gc")
def ledger_gc(repo: Path = typer.Option(Path("."), "--repo", help="The repository whose cached worktrees to remove.")) -> None:
    """Remove the worktrees that bisect and triage keep under <git dir>/bisectk-worktrees between
    commands (those no running command holds). Exit 0."""
    from bisectk.spaces.worktrees import collect
    removed = collect(repo)
    out.print(f"removed {len(removed)} cached worktree{'s' if len(removed) != 1 else ''}"
              + (f" from {removed[0].parent}" if removed else ""), markup=False)
    raise typer.Exit(X.OK)


# -- evidence / environment ------------------------------------------------------------------------

@app.command("ptx", short_help="Diff the PTX signatures of good and bad (no GPU needed).")
def ptx_cmd(spec: Path = SpecArg,
            with_: Optional[list[str]] = typer.Option(None, "--with", help="Also compile good with these factors at their bad values (e.g. the culprits); repeatable."),
            as_json: bool = JsonOpt) -> None:
    """PTX evidence without a GPU: compile good, bad (and good + --with factors) in compile-only mode
    and print the differences of their PTX signatures (mbarrier, bar.sync ids/counts, TMA, wgmma, smem)."""
    from bisectk.evidence import ptx_evidence
    from bisectk.spec import load_spec
    s = load_spec(spec)
    configs = {"good": s.good, "bad": s.bad}
    if with_:
        unknown = [f for f in with_ if f not in s.good]
        if unknown:
            fail(f"--with {', '.join(unknown)}: not a factor of {spec} (factors: {', '.join(s.factors)})")
        configs["good+" + "+".join(with_)] = s.hybrid(set(with_))
    ev = ptx_evidence(s, configs)
    if as_json:
        emit_json(ev.to_dict())
    else:
        out.print(ev.table(), markup=False, highlight=False)
    raise typer.Exit(X.OK if ev.signatures and not ev.errors else X.USAGE)


@app.command("env", short_help="Capture the runtime context, or diff two captures.")
def env_cmd(captures: Optional[list[Path]] = typer.Argument(None, metavar="CAPTURE", show_default=False,
                                                           help="Two saved captures to compare: the same as --diff A.json B.json."),
            save: Optional[Path] = typer.Option(None, "--save", help="Write the capture to this JSON file."),
            diff: Optional[list[Path]] = typer.Option(None, "--diff", help="Compare two saved captures: --diff A.json B.json (or --diff A.json --diff B.json)."),
            torch: bool = typer.Option(False, "--torch", help="Also ask torch (in a subprocess) what it sees."),
            as_json: bool = JsonOpt) -> None:
    """Capture the runtime context to rule out first (GPU, driver, CUDA, packages, CUDA_*/CUTE_DSL_*/TORCH_* variables),
    or list the differences between two saved captures."""
    from bisectk.spaces import env as envmod
    if captures and not diff:
        fail(f"unexpected argument {str(captures[0])!r}: captures are compared with --diff A.json B.json")
    diff = [*(diff or []), *(captures or [])]
    if diff:
        if len(diff) != 2:
            fail(f"--diff compares exactly two captures (--diff A.json B.json), got {len(diff)}")
        a, b = envmod.load(diff[0]), envmod.load(diff[1])
        rows = envmod.diff(a, b)
        if as_json:
            emit_json({"a": str(diff[0]), "b": str(diff[1]), "differences": [{"key": k, "a": x, "b": y} for k, x, y in rows]})
        else:
            from rich.table import Table
            t = Table(title=f"{diff[0]} vs {diff[1]}", title_justify="left")
            for col in ("key", str(diff[0].name), str(diff[1].name)):
                t.add_column(col)
            for k, x, y in rows:
                t.add_row(k, str(x), str(y))
            out.print(t)
            snippet = envmod.factors_toml(rows)
            if snippet.strip():
                out.print("as spec factors (environment variables applied per run):", markup=False)
                out.print(snippet, markup=False, highlight=False)
        raise typer.Exit(X.ENV_DIFFER if rows else X.ENV_EQUAL)
    data = envmod.capture(torch=True if torch else None)
    if save:
        envmod.save(save, data)
    if as_json or not save:
        emit_json(data)
    else:
        out.print(f"environment written to {save}", markup=False)


demo_app = typer.Typer(no_args_is_help=True, help="Write ready-to-run inputs for the README's examples.")
app.add_typer(demo_app, name="demo")


@demo_app.command("history")
def demo_history(path: Path = typer.Argument(..., help="A new or empty directory for the repository.", show_default=False)) -> None:
    """Create a throwaway git repository with a planted regression for bisect, triage, log and
    replay: tag v1.0 works, main deadlocks; a side branch is merged and two commits do not build."""
    from bisectk.demo import make_history
    for line in make_history(path).lines():
        out.print(line.replace("--repo DIR", f"--repo {path}"), markup=False)


@app.callback(invoke_without_command=True)
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        out.print(f"bisectk {__version__}")
        raise typer.Exit(X.OK)


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM cleans up like Ctrl-C: subjects killed, worktrees removed


# Value names shown in help ("--ledger FILE", "diff GOOD BAD [SPEC]"), set on the click command
# once instead of on every option; an option not named here gets one from its type.
METAVARS = {"--term-old": "TERM", "--term-new": "TERM", "--run": "'CMD'", "--build": "'CMD'", "--set": "NAME=VALUE", "--pytest": "NODEID", "--good": "REF",
            "--bad": "REF", "--repo": "PATH", "--gpus": "IDS", "--with": "FACTOR", "--strategy": "NAME",
            "--same-failure": "MODE", "--config": "good|bad", "--timeout": "SECONDS", "--confidence": "P",
            "--session": "ID", "--report": "FILE.md", "--junit": "FILE.xml", "--html": "FILE.html",
            "--executor": "local|ray", "--ray-address": "HOST:PORT", "--ray-repo": "PATH", "--save": "FILE.json",
            "--diff": "FILE.json", "--ledger": "FILE.db", "--json-out": "FILE.json", "--salvage": "FILE.db"}
_TYPE_METAVARS = {int: "N", float: "X", Path: "FILE", str: "TEXT"}


def _value_kind(param) -> str:
    """A parameter's value type as a metavar, across typer versions (own parameter classes with a
    type descriptor, or click's with a ParamType)."""
    desc = getattr(param, "type_descriptor", None)
    if desc is not None:
        annotation = desc.annotation
        args = getattr(annotation, "__args__", None)
        annotation = args[0] if args else annotation   # list[str] -> str (repeatable)
        return _TYPE_METAVARS.get(annotation, "TEXT")
    name = getattr(getattr(param, "type", None), "name", "text")
    return {"integer": "N", "integer range": "N", "float": "X", "float range": "X", "path": "FILE"}.get(name, "TEXT")


def _plain_argument(param) -> None:
    """An argument as usage lines write it (`GOOD`, `[SPEC]`, `[CAPTURE]...`), where typer would
    write `{GOOD}` and add its python type (`<list[Path]>`) to the help."""
    if hasattr(param, "_usage_display_name"):
        name = param.metavar or param.name.upper()
        shown = name if param.required else f"[{name}]"
        param._usage_display_name = lambda: shown + ("..." if param.nargs != 1 else "")
    if hasattr(param, "display_type_rich"):
        param.display_type_rich = lambda ctx: None


def plain_help(cmd) -> None:
    """Plain value names for every parameter of `cmd` and its subcommands (typer's default shows
    python types such as `<list[str]>`)."""
    for param in getattr(cmd, "params", ()):
        if param.param_type_name == "argument":
            _plain_argument(param)
        if param.metavar is not None or getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        if param.param_type_name == "argument":
            param.metavar = param.name.upper()
        else:
            flag = max(param.opts, key=len)
            param.metavar = METAVARS.get(flag) or _value_kind(param)
    for sub in getattr(cmd, "commands", {}).values():
        plain_help(sub)


def _is(exc: BaseException, name: str) -> bool:
    """click's exception classes by name: typer vendors its own copy of click in recent versions."""
    return any(c.__name__ == name for c in type(exc).__mro__)


def usage_error(exc) -> str:
    """A click usage error as one line: what is wrong and where to read about it."""
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"{exc.format_message().rstrip('.')}{where}"


def command():
    """The click command behind the typer app, with plain value names in its help."""
    import typer.main
    cmd = typer.main.get_command(app)
    plain_help(cmd)
    return cmd


def entry() -> None:
    """Console-script entry: user errors become one line and a non-zero exit, never a traceback."""
    import signal
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = command().main(prog_name="bisectk", standalone_mode=False)  # returns typer.Exit's code
        sys.exit(code if isinstance(code, int) else 0)
    except BisectkError as exc:
        say_error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say_error("interrupted")
        sys.exit(X.INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(X.INTERRUPTED)
    except Exception as exc:
        if _is(exc, "Abort"):
            sys.exit(X.INTERRUPTED)
        if _is(exc, "NoArgsIsHelpError"):
            exc.show()   # a bare `bisectk` (or `bisectk ledger`) asks for help: show it
            sys.exit(exc.exit_code)
        if _is(exc, "ClickException"):   # option parsing: one line, as for every bad input
            say_error(usage_error(exc) if _is(exc, "UsageError") else exc.format_message())
            sys.exit(X.USAGE)
        if os.environ.get("BISECTK_DEBUG"):
            raise
        say_error(f"internal error: {type(exc).__name__}: {exc} (set BISECTK_DEBUG=1 for the traceback)")
        sys.exit(X.INTERNAL)
