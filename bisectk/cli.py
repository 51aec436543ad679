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
from bisectk.search import STRATEGIES, strategy_names
from bisectk.workspace import Workspace, apply_sets, subject

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
                   "timeout": policy.to_dict() if policy else None, "environment": environment_capture()})
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
        emit_json({"spec": str(spec), "differences": ws.spec.differences(), **result.to_dict(),
                   "environment": environment_capture()})
    else:
        from bisectk.report.text import print_check
        print_check(out, ws.spec, result)
    raise typer.Exit(0 if result.ok else EXIT_USAGE)


def default_spec() -> Path:
    """The embedded CPU default: a pipeline that deadlocks, among several benign differences."""
    return Path(__file__).resolve().parents[1] / "variants" / "cpu" / "pipeline-hang.toml"


def environment_capture() -> dict:
    from bisectk.spaces.env import capture
    return capture(torch=False)


def write_reports(doc: dict, log, report: Optional[Path], json_out: Optional[Path]) -> None:
    if report:
        report.write_text(log.to_markdown(), encoding="utf-8")
    if json_out:
        json_out.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")


def finish(doc: dict, log, summary, *, report: Optional[Path], json_out: Optional[Path], as_json: bool,
           code: int) -> None:
    """Write the report files, print JSON or the terminal summary, and exit with `code`."""
    write_reports(doc, log, report, json_out)
    if as_json:
        emit_json(doc)
    else:
        summary()
        if report:
            out.print(f"debug log written to {report}", markup=False)
    raise typer.Exit(code)


@app.command()
def ablate(spec: Optional[Path] = typer.Argument(None, help="Variant spec (default: the embedded CPU pipeline-hang pair).", show_default=False),
           strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
           exhaustive: bool = typer.Option(False, "--exhaustive", help="Full factorial (n <= 8); same as --strategy exhaustive."),
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check (default: the spec's)."),
           flaky: bool = typer.Option(False, "--flaky", help="Treat the failure as intermittent even if the endpoint checks did not show it."),
           calibrate_runs: int = typer.Option(10, "--calibrate-runs", min=2, help="Runs of the bad endpoint to estimate an intermittent failure rate."),
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search after this many runs (best result so far)."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last ablation of this spec: runs already in the ledger are not repeated."),
           fresh: bool = typer.Option(False, "--fresh", help="Ignore runs stored in the ledger (re-run everything)."),
           warm: bool = typer.Option(False, "--warm", help="Run Python subjects in warm worker processes (torch/cutlass imported once)."),
           gpus: Optional[str] = typer.Option(None, "--gpus", help="With --warm: one worker per GPU, e.g. 0,1."),
           ptx: bool = typer.Option(False, "--ptx", help="Add a PTX signature diff of good, bad and the culprit configuration (compile-only, no GPU)."),
           sanitize: bool = typer.Option(False, "--sanitize", help="Rerun the culprit configuration under compute-sanitizer (synccheck/memcheck/racecheck)."),
           report: Optional[Path] = typer.Option(None, "--report", help="Write the Markdown debug log here."),
           json_out: Optional[Path] = typer.Option(None, "--json-out", help="Write the JSON result here."),
           ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Isolate the factor, or the set of factors acting together, that causes the failure.

    Exit 0: culprit isolated; 1: search interrupted (best result so far printed); 2: endpoints unusable."""
    from bisectk.commands.ablate import run_ablation
    from bisectk.report.ablation import print_summary, to_debuglog, to_json
    if exhaustive:
        strategy = "exhaustive"
    if strategy not in strategy_names():
        fail(f"--strategy {strategy!r}: choose one of {', '.join(strategy_names())}")
    spec = spec or default_spec()
    ws = Workspace.open(spec, ledger, quiet=as_json, fresh=fresh)
    try:
        n = len(ws.spec.differences())
        if n == 0:
            fail(f"{spec}: [good] and [bad] are identical: nothing to ablate")
        limit = STRATEGIES[strategy].max_n
        if limit is not None and n > limit:
            fail(f"--strategy {strategy} handles at most {limit} differences; {spec} has {n}")
        previous = ws.ledger.last_session("ablate", ws.spec.fingerprint())
        if resume and previous is None:
            fail(f"--resume: no earlier ablation of {spec} in {ws.ledger.path}")
        if resume and previous and previous["args"].get("strategy") and strategy == "adaptive":
            strategy = previous["args"]["strategy"]
        session = ws.ledger.open_session("ablate", ws.spec.fingerprint(), {"spec": str(spec), "strategy": strategy})
        pool = None
        if warm:
            from bisectk.run.worker import WorkerPool
            pool = WorkerPool(gpus=gpus.split(",") if gpus else None).start(wait=False)
            ws.closers.append(pool.close)
        runner = ws.runner(session, executor=pool.run if pool else None)
        if not as_json:
            out.print(f"{ws.spec.name}: {n} differences between good and bad: "
                      + ", ".join(f"{f} {ws.spec.good[f]} -> {ws.spec.bad[f]}" for f in ws.spec.differences()), markup=False)
        try:
            result = run_ablation(runner, strategy=strategy, repeat=repeat, flaky=flaky,
                                  calibrate_runs=calibrate_runs, max_runs=max_runs)
        except KeyboardInterrupt:
            fail("interrupted before the endpoints were verified; nothing to report (runs so far are in the ledger)", 130)
        if result.ok and (ptx or sanitize):
            from bisectk.commands.ablate import add_evidence
            add_evidence(result, ptx=ptx, sanitize=sanitize)
        env = environment_capture()
        doc = to_json(result, env)
        ws.ledger.close_session(session, {k: doc.get(k) for k in ("culprits", "interaction", "runs", "complete", "ok")})
    finally:
        ws.close()
    code = EXIT_USAGE if not result.ok else 1 if result.interrupted or not result.result.complete else 0
    finish(doc, to_debuglog(result, env), lambda: print_summary(out, result), report=report, json_out=json_out,
           as_json=as_json, code=code)


RunOpt = typer.Option(None, "--run", help="Subject command instead of a SPEC, as one quoted string (git bisect run's exit codes: 0 good, 125 skip, other bad).")
BuildOpt = typer.Option(None, "--build", help="Build command run before the subject, as one quoted string; failure = UNRESOLVED(BUILD).")
ConfigOpt = typer.Option("bad", "--config", help="With a SPEC: which endpoint's factor values to run (good or bad).")
SetOpt = typer.Option(None, "--set", help="With a SPEC: override a factor, NAME=VALUE (repeatable).")
TimeoutOpt = typer.Option(None, "--timeout", min=0.01, help="Watchdog seconds (default: calibrated from the good endpoint).")
ReportOpt = typer.Option(None, "--report", help="Write the Markdown debug log here.")
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (its checkout is never touched).")
GoodRefOpt = typer.Option(..., "--good", help="A commit where the subject works.")
BadRefOpt = typer.Option(..., "--bad", help="A later commit where it fails.")
PytestOpt = typer.Option(None, "--pytest", help="Use a pytest node id as the oracle (0 pass, 1 fail, 2-5 unresolved).")
GitLedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: <git dir>/bisectk/ledger.db).")
JsonOutOpt = typer.Option(None, "--json-out", help="Write the JSON result here.")


@app.command("diff")
def diff_cmd(good: Path = typer.Argument(..., help="The working file or source tree.", show_default=False),
             bad: Path = typer.Argument(..., help="The failing file or source tree.", show_default=False),
             spec: Optional[Path] = typer.Argument(None, help="Variant spec whose command runs inside each hybrid tree.", show_default=False),
             run_cmd: Optional[str] = RunOpt, build: Optional[str] = BuildOpt,
             config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
             repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check."),
             timeout: Optional[float] = TimeoutOpt,
             strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
             lines: bool = typer.Option(True, "--lines/--no-lines", help="Refine culprit hunks to lines (second pass)."),
             report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt,
             ledger: Optional[Path] = LedgerOpt, as_json: bool = JsonOpt) -> None:
    """Isolate the hunks (then lines) of the GOOD->BAD source difference that cause the failure.

    The subject runs with the hybrid tree as its working directory. Exit 0: culprit found;
    1: interrupted; 2: unusable input or endpoints."""
    import hashlib
    from bisectk.commands.diffiso import HunkSpace, run_diff
    from bisectk.report.diff import print_summary, to_debuglog, to_json
    for p in (good, bad):
        if not p.exists():
            fail(f"{p}: no such file or directory")
    if strategy not in strategy_names():
        fail(f"--strategy {strategy!r}: choose one of {', '.join(strategy_names())}")
    # not in the user's tree: the ledger lives in their cache (or --ledger), scratch trees beside it
    ledger_path = ledger or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bisectk" / "ledger.db"
    base_dir = ledger_path.parent
    scratch = base_dir / ("scratch-" + hashlib.sha1(f"{good.resolve()}|{bad.resolve()}|{os.getpid()}".encode()).hexdigest()[:10])
    spec_obj, base = subject(spec, run_cmd, build, cwd=scratch, config=config, sets=set_, timeout=timeout,
                             repeat=repeat, name=f"diff {good.name}..{bad.name}")
    space = HunkSpace(good, bad, scratch)
    try:
        ws = Workspace.open(spec_obj, ledger_path, quiet=as_json)
        try:
            session = ws.ledger.open_session("diff", space.digest, {"good": str(good), "bad": str(bad)})
            runner = ws.runner(session, cwd=space.workdir, revision=f"diff-{space.digest}",
                               prepare=space.prepare, extra_env={"BISECTK_TREE": str(space.workdir)})
            if not as_json:
                out.print(f"{len(space.hunks)} hunks between {good} and {bad}", markup=False)
            result = run_diff(runner, space, base, strategy=strategy, refine=lines)
            env = environment_capture()
            doc = to_json(result, env)
            ws.ledger.close_session(session, {k: doc.get(k) for k in ("interaction", "runs", "complete", "ok")})
        finally:
            ws.close()
    finally:
        space.close()
    code = EXIT_USAGE if not result.ok else 1 if result.interrupted or not result.result.complete else 0
    finish(doc, to_debuglog(result, env), lambda: print_summary(out, result), report=report, json_out=json_out,
           as_json=as_json, code=code)


def git_dir(root: Path) -> Path:
    """The repository's common git directory, where bisect/triage keep their ledger and scratch."""
    from bisectk.spaces.commits import run_git
    return (root / run_git(root, "rev-parse", "--git-common-dir")).resolve()


def bisect_subject(spec: Optional[Path], run_cmd: Optional[str], pytest_id: Optional[str], build: Optional[str],
                   repo_root: Path, config: str, sets, timeout, repeat):
    """(Spec, configuration, subject cwd relative to the repository root) for bisect/triage."""
    from bisectk.spec import adhoc_spec
    given = [x for x in (spec, run_cmd, pytest_id) if x is not None]
    if len(given) != 1:
        fail("give exactly one subject: a SPEC file, --run 'CMD' or --pytest NODEID")
    if pytest_id is not None:
        if not pytest_id.strip() or pytest_id.startswith("-"):
            fail(f"--pytest {pytest_id!r}: expected a test node id such as tests/test_k.py::test_x")
        argv = ["python", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", pytest_id]
        from bisectk.workspace import split_command
        s = adhoc_spec(argv, name=f"pytest {pytest_id}", cwd=repo_root, timeout=timeout, repeat=repeat or 1,
                       build=split_command(build, "--build") if build else None, protocol="pytest")
        return s, {}, Path(".")
    s, cfg = subject(spec, run_cmd, build, cwd=repo_root, config=config, sets=sets, timeout=timeout,
                     repeat=repeat, name="bisect")
    try:
        sub = s.cwd.resolve().relative_to(repo_root) if spec is not None else Path(".")
    except ValueError:
        sub = Path(".")  # a spec outside the repository: run from the worktree's root
    return s, cfg, sub


@app.command()
def bisect(repo: Path = RepoOpt,
           good: str = GoodRefOpt,
           bad: str = BadRefOpt,
           spec: Optional[Path] = typer.Argument(None, help="Variant spec to run in each commit (or use --run / --pytest).", show_default=False),
           run_cmd: Optional[str] = RunOpt,
           pytest_id: Optional[str] = PytestOpt,
           build: Optional[str] = BuildOpt, config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
           timeout: Optional[float] = TimeoutOpt,
           repeat: int = typer.Option(1, "--repeat", min=1, help="Runs of each endpoint; more runs reveal an intermittent failure."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware Bayesian search (default: when the endpoint repeats show the failure is intermittent)."),
           confidence: float = typer.Option(0.99, "--confidence", min=0.5, max=0.999999, help="Stop when the first bad commit is this probable (flaky mode)."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Test this many commits per round in parallel (k-way multisection)."),
           gpus: Optional[str] = typer.Option(None, "--gpus", help="Pin parallel workers to GPUs, e.g. 0,1,2,3 (sets CUDA_VISIBLE_DEVICES)."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain (merge-heavy history)."),
           any_failure: bool = typer.Option(False, "--any-failure", help="Count any failure as bad (git bisect's view), not only the bad endpoint's kind."),
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop after this many observations."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last bisection of these refs; nothing already recorded re-runs."),
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt,
           ledger: Optional[Path] = GitLedgerOpt,
           as_json: bool = JsonOpt) -> None:
    """Find the first bad commit between --good and --bad, each commit built and run in its own
    git worktree. Exit 0: found (1 if ambiguous or interrupted); 2: unusable input or endpoints."""
    from bisectk.commands.bisect import CommitOracle, run_bisect
    from bisectk.report.history import print_summary, to_debuglog, to_json
    from bisectk.spaces.commits import WorktreePool, list_commits, open_repo
    root = open_repo(repo)
    commits = list_commits(root, good, bad, first_parent=first_parent)
    spec_obj, cfg, sub = bisect_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat)
    ledger_path = ledger or git_dir(root) / "bisectk" / "ledger.db"
    good_sha, bad_sha = commits[0].sha, commits[len(commits) - 1].sha  # refs move; shas do not
    args = {"repo": str(root), "good": good_sha, "bad": bad_sha, "first_parent": first_parent, "flaky": flaky,
            "any_failure": any_failure, "subject": str(spec or run_cmd or pytest_id)}
    ws = Workspace.open(spec_obj, ledger_path, quiet=as_json)
    if resume:
        prev = ws.ledger.last_session("bisect", ws.spec.fingerprint())
        if prev is None or prev["args"].get("good") != good_sha or prev["args"].get("bad") != bad_sha:
            ws.close()
            fail(f"--resume: no earlier bisection of {good}..{bad} with this subject in {ledger_path}")
    try:
        session = ws.ledger.open_session("bisect", ws.spec.fingerprint(), args)
        if not as_json:
            out.print(f"{len(commits)} commits from {commits[0].short} (good) to {commits[len(commits) - 1].short} (bad)", markup=False)
        with WorktreePool(root, size=jobs) as pool:
            oracle = CommitOracle(ws.spec, cfg, commits, pool, ledger=ws.ledger, events=ws.events, session=session,
                                  log_root=ws.log_root, subdir=sub, gpus=gpus.split(",") if gpus else None,
                                  any_failure=any_failure)
            try:
                result = run_bisect(oracle, repeat=repeat, flaky=flaky, jobs=jobs, confidence=confidence, max_runs=max_runs)
            except KeyboardInterrupt:
                fail("interrupted while verifying the endpoints; runs so far are in the ledger", 130)
        env = environment_capture()
        doc = to_json(result, env)
        ws.ledger.close_session(session, {"first_bad": (doc.get("first_bad") or {}).get("sha"),
                                          "confidence": doc.get("confidence"), "runs": doc.get("runs")})
    finally:
        ws.close()
    code = (EXIT_USAGE if not result.ok else
            1 if result.interrupted or not result.result.complete or result.result.ambiguous else 0)
    finish(doc, to_debuglog(result, env), lambda: print_summary(out, result), report=report, json_out=json_out,
           as_json=as_json, code=code)


@app.command()
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
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Commits tested per round in parallel."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain."),
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt,
           junit: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML here."),
           ledger: Optional[Path] = GitLedgerOpt,
           as_json: bool = JsonOpt) -> None:
    """Regression triage for CI: classify the failure, bisect to the first bad commit, isolate its
    culprit hunks, and write one report.

    Exit 0: nothing to triage (bad does not fail); 1: culprit found; 2: inconclusive."""
    from bisectk.commands.bisect import CommitOracle
    from bisectk.commands.triage import run_triage, verdict_code
    from bisectk.report.junit import write_junit
    from bisectk.report.triage import to_cases, to_debuglog, to_json
    from bisectk.spaces.commits import WorktreePool, list_commits, open_repo
    root = open_repo(repo)
    commits = list_commits(root, good, bad, first_parent=first_parent)
    spec_obj, cfg, sub = bisect_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat)
    gdir = git_dir(root)
    ws = Workspace.open(spec_obj, ledger or gdir / "bisectk" / "ledger.db", quiet=as_json)
    try:
        session = ws.ledger.open_session("triage", ws.spec.fingerprint(), {
            "repo": str(root), "good": commits[0].sha, "bad": commits[len(commits) - 1].sha})
        with WorktreePool(root, size=jobs) as pool:
            oracle = CommitOracle(ws.spec, cfg, commits, pool, ledger=ws.ledger, events=ws.events, session=session,
                                  log_root=ws.log_root, subdir=sub)
            result = run_triage(oracle, workspace=ws, scratch_root=gdir / "bisectk" / f"scratch-{session}",
                                repeat=repeat, flaky=flaky, jobs=jobs, subdir=sub)
        env = environment_capture()
        doc = to_json(result, env)
        ws.ledger.close_session(session, {"verdict": doc["verdict"]})
    finally:
        ws.close()
    log_md = to_debuglog(result, env)
    write_reports(doc, log_md, report, json_out)
    subject_name = str(spec or run_cmd or pytest_id)
    if junit:
        write_junit(junit, "bisectk triage", to_cases(result, subject_name))
    if as_json:
        emit_json(doc)
    else:
        out.print(log_md.to_markdown() if result.found else f"triage: {doc['verdict']}", markup=False, highlight=False)
    raise typer.Exit(verdict_code(result))


@app.command()
def log(repo: Path = typer.Option(Path("."), "--repo", help="The repository whose bisection to print."),
        ledger: Optional[Path] = GitLedgerOpt,
        session: Optional[int] = typer.Option(None, "--session", help="Session id (default: the last bisection).")) -> None:
    """Print the last bisection as a replayable record (like git bisect log)."""
    from bisectk.ledger import Ledger
    from bisectk.report.history import log_lines
    from bisectk.spaces.commits import open_repo
    if ledger is None:
        ledger = git_dir(open_repo(repo)) / "bisectk" / "ledger.db"
    if not ledger.exists():
        fail(f"no ledger at {ledger}: nothing has been bisected there")
    db = Ledger(ledger)
    try:
        info = db.session(session) if session else db.last_session("bisect")
        if info is None or info["command"] != "bisect":
            fail("no bisection recorded" + (f" with session id {session}" if session else ""))
        for line in log_lines(info, db.events(info["id"], "observation")):
            out.print(line, markup=False, highlight=False)
    finally:
        db.close()


@app.command()
def replay(logfile: Path = typer.Argument(..., help="A file written from `bisectk log`.", show_default=False),
           repo: Optional[Path] = typer.Option(None, "--repo", help="Repository (default: the one named in the log)."),
           as_json: bool = JsonOpt) -> None:
    """Rebuild a bisection's answer from a log, running nothing; says which commit to test next if
    the log stops early. Exit 0: the log determines the first bad commit; 1: it does not yet."""
    from bisectk.commands.replay import replay_log
    result, commits, nxt = replay_log(logfile, repo)
    fb = commits[result.first_bad]
    doc = {"first_bad": fb.to_dict(), "last_good": commits[result.last_good].to_dict(), "confidence": result.confidence,
           "complete": result.complete, "candidates": [commits[i].sha for i in result.candidates],
           "next": commits[nxt].sha if nxt is not None else None}
    if as_json:
        emit_json(doc)
    else:
        out.print(f"first bad commit: {fb.sha} {fb.subject}" if result.complete else
                  f"not determined yet; {len(result.candidates)} candidates remain", markup=False)
        if nxt is not None:
            out.print(f"next commit to test: {commits[nxt].sha} {commits[nxt].subject}", markup=False)
    raise typer.Exit(0 if result.complete else 1)


@app.command("ptx")
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
    raise typer.Exit(0 if ev.signatures and not ev.errors else EXIT_USAGE)


@app.command("env")
def env_cmd(save: Optional[Path] = typer.Option(None, "--save", help="Write the capture to this JSON file."),
            diff: Optional[list[Path]] = typer.Option(None, "--diff", help="Compare two saved captures: --diff A.json --diff B.json."),
            torch: bool = typer.Option(False, "--torch", help="Also ask torch (in a subprocess) what it sees."),
            as_json: bool = JsonOpt) -> None:
    """Capture the runtime context to rule out first (GPU, driver, CUDA, packages, CUDA_*/CUTE_DSL_*/TORCH_* variables),
    or list the differences between two saved captures."""
    from bisectk.spaces import env as envmod
    if diff:
        if len(diff) != 2:
            fail("--diff takes exactly two captures: --diff A.json --diff B.json")
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
        raise typer.Exit(1 if rows else 0)
    data = envmod.capture(torch=True if torch else None)
    if save:
        envmod.save(save, data)
    if as_json or not save:
        emit_json(data)
    else:
        out.print(f"environment written to {save}", markup=False)


@app.callback(invoke_without_command=True)
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        out.print(f"bisectk {__version__}")
        raise typer.Exit(0)


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM cleans up like Ctrl-C: subjects killed, worktrees removed


def entry() -> None:
    """Console-script entry: user errors become one line and a non-zero exit, never a traceback."""
    import signal
    signal.signal(signal.SIGTERM, _terminate)
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
