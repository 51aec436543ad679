"""Command-line wiring (typer). No logic lives here: each command parses its options into a
RunPolicy (the one validator), opens a Session, builds a space, calls an engine (bisectk/engine)
with the session's runner, and hands the result record to `finish` (bisectk/cli_common.py), which
stores it, prints it (report/render.py) and exits with its code (exitcodes.exit_code). The
options every command shares are bisectk/cli_common.py's; the commands that run no search
(report, ledger, ptx, env, demo) are bisectk/cli_tools.py's."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from bisectk import __version__, cli_tools
from bisectk import exitcodes as X
from bisectk.cli_common import (BadRefOpt, Deferred, after_first_run, capture_after_first_run, BuildOpt, BuildTimeoutOpt, CalibrateOpt, ConfigOpt, ExecutorOpt, FreshOpt, GitLedgerOpt,
                                GoodRefOpt, HtmlOpt, JsonOpt, JsonOutOpt, LedgerOpt, SESSION_IDS, PytestOpt, RayAddressOpt,
                                CleanIgnoredOpt, RayRepoOpt, RepoOpt, ReportOpt, RunOpt, SameFailureOpt, SetOpt, SnapshotsOpt, RunSnapshotsOpt, SpecArg, say_warning,
                                TimeoutOpt, WarmOpt, _is, cache_ledger, check_outputs, check_strategy, default_spec, emit_json,
                                environment_capture, fail, finish, history_subject, open_ledger, out, plain_help,
                                policy, reporter, resume_or_fresh, say_error, said_warnings, say_unwritten, spare_ahead, timed_policy, spec_warnings, unwritten_says, usage_error,
                                write_reports)
from bisectk.errors import BisectkError
from bisectk.search.names import strategy_names
from bisectk.timeouts import MIN_TIMEOUT_S

# -h as well as --help, on every command (click passes it down to the subcommands' contexts); help
# as wide as the terminal allows up to 120 columns (click's own cap is 80)
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings=CONTEXT,
                  help="Differential bisection for GPU kernels: isolate the change that makes a kernel "
                       "hang, crash, compute garbage or slow down.")


# -- run / check ---------------------------------------------------------------------------------

@app.command(short_help="Run one configuration and classify it.")
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


@app.command(short_help="Verify the endpoints: good must pass, bad must fail.")
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


# -- ablate ----------------------------------------------------------------------------------------

@app.command(short_help="Isolate the factor(s) of a spec that cause the failure.")
def ablate(spec: Optional[Path] = typer.Argument(None, help="Variant spec (default: the embedded CPU pipeline-hang pair).", show_default=False),
           strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
           exhaustive: bool = typer.Option(False, "--exhaustive", help="Full factorial (n <= 8); same as --strategy exhaustive."),
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check (default: the spec's)."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Treat the failure as intermittent even if the endpoint checks did not show it (default: decided by the endpoint runs); --no-flaky: it is deterministic, and the answer is confirmed by one more run of each configuration it rests on."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           timeout: Optional[float] = TimeoutOpt,
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search once it has made this many runs, with the best result so far (runs the ledger answers cost nothing and are not counted, so --resume goes on; nor are the endpoint checks)."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last ablation of this spec: runs already in the ledger are not repeated."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt,
           warm: bool = WarmOpt,
           gpus: Optional[str] = typer.Option(None, "--gpus", help="Pin runs to GPUs, e.g. 0,1: each run under way holds its own (CUDA_VISIBLE_DEVICES); with --warm, one worker per GPU."),
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
    strategy = "exhaustive" if exhaustive else strategy
    check_strategy(strategy)
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
                 max_runs=max_runs, timeout=timeout, gpus=tuple(gpus.split(",")) if gpus else (), executor=executor,
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
        if resume and session.previous["args"].get("strategy") and strategy == "adaptive":
            strategy = session.previous["args"]["strategy"]
        if not as_json:
            out.print(differences_line(s.name, s.good, s.bad, list(s.differences())), markup=False)
        with held():   # Ctrl-C stops runs, never the writing of a result (engine/interrupts.py)
            try:
                rec = run_ablation(session.runner(), FactorSpace(s), pol, strategy=strategy, ptx=ptx,
                                   sanitize=sanitize, environment=capture_after_first_run(session),
                                   warnings=warnings)
            except KeyboardInterrupt:
                fail("interrupted before the endpoints were verified; nothing to report (runs so far are in the "
                     "ledger)", X.INTERRUPTED)
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


# -- diff ------------------------------------------------------------------------------------------

@app.command("diff", short_help="Isolate the hunks of a source difference that cause it.")
def diff_cmd(good: str = typer.Argument(..., help="The working file or source tree.", show_default=False),
             bad: str = typer.Argument(..., help="The failing file or source tree.", show_default=False),
             spec: Optional[Path] = typer.Argument(None, help="Variant spec whose command runs inside each hybrid tree.", show_default=False),
             run_cmd: Optional[str] = RunOpt, build: Optional[str] = BuildOpt,
             build_timeout: Optional[float] = BuildTimeoutOpt,
             config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
             repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs per endpoint check."),
             flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware search (default: decided by the endpoint runs); --no-flaky: the failure is deterministic, and the answer is confirmed by one more run of each configuration it rests on."),
             calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
             timeout: Optional[float] = TimeoutOpt,
             strategy: str = typer.Option("adaptive", "--strategy", help="Search strategy: " + ", ".join(strategy_names()) + "."),
             lines: bool = typer.Option(True, "--lines/--no-lines", help="Refine culprit hunks to lines (second pass)."),
             max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search once it has made this many runs (runs the ledger answers cost nothing and are not counted; nor are the endpoint checks)."),
             fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
             executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt,
             report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
             ledger: Optional[Path] = typer.Option(None, "--ledger", help=f"Ledger database (default: {cache_ledger()}, in your cache, never in GOOD or BAD; scratch trees beside it)."),
             as_json: bool = JsonOpt) -> None:
    """Isolate the hunks (then lines) of the GOOD->BAD source difference that cause the failure.

    The subject runs with the hybrid tree as its working directory. Exit 0: culprit found;
    1: search stopped; 2: unusable input or endpoints."""
    from bisectk.spaces.early import drop_repo_env
    drop_repo_env()     # before any process starts: a run's git must see its own tree
    spare_ahead(executor, warm)
    from bisectk.engine.diff import run_diff
    from bisectk.engine.interrupts import held
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.subject import load_subject
    from bisectk.report.words import counted
    from bisectk.spaces.treediff import listed
    from bisectk.spaces.hunkspace import HunkSpace, built_files, named_beside, named_inside
    for name, given in (("GOOD", good), ("BAD", bad)):
        if not given:           # Path("") is ".": the current directory, taken for a tree
            fail(f"{name} is empty: name a file or a source tree")
    for word in (good, bad):
        if not Path(word).exists():
            fail(f"{word}: no such file or directory" + _a_commit(word))
    good, bad = Path(good), Path(bad)
    check_strategy(strategy)
    # never in the user's tree: the ledger lives in their cache (or --ledger), scratch trees beside it
    ledger_path = ledger_location(ledger)
    for name, tree in (("GOOD", good), ("BAD", bad)):
        if tree.is_dir() and Path(os.path.realpath(ledger_path.parent)).is_relative_to(os.path.realpath(tree)):
            fail(f"the ledger {ledger_path} is inside {name} {tree}: its run logs and the scratch trees go beside it, "
                 f"and GOOD and BAD are never written; give --ledger a path outside both"
                 + ("" if ledger else " (this one is in your cache: XDG_CACHE_HOME)"))
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, timeout=timeout, executor=executor, ray_address=ray_address, fresh=fresh, warm=warm)
    s, base = load_subject(spec, run_cmd, cwd=Path.cwd(), build=build, config=config, sets=set_,
                           repeat=repeat, name=f"diff {good.name}..{bad.name}", build_timeout=build_timeout)
    spec_warnings(s, timeout)
    named = named_inside([*s.command, *(s.build or [])], good, bad, Path.cwd())
    if named:       # the hybrids run in a scratch copy of GOOD: this word never reaches them
        word, side, rel = named
        say_warning(
            f"the command names {word}, {side if rel == '.' else 'inside ' + side}: every hybrid runs in a scratch "
            f"copy of GOOD (its working directory, $BISECTK_TREE), never in GOOD or BAD themselves; name it "
            f"relative to the tree ({rel!r})")
    beside = None if named else named_beside([*s.command, *(s.build or [])], good, bad, Path.cwd())
    if beside:      # ./check.sh beside the trees: from the scratch copy it names nothing
        word, full = beside
        say_warning(
            f"the command names {word}, which is {full} from here but not in GOOD: every hybrid runs in a scratch "
            f"copy of GOOD (its working directory, $BISECTK_TREE), where it names nothing; name it by its absolute "
            f"path ({full!r})")
    check_outputs(report, json_out, html, spec=s, ledger=ledger_path, trees=(good, bad), as_json=as_json)
    with Session("diff", s, ledger_path, args={"good": str(good), "bad": str(bad)}, policy=pol,
                 reporter=reporter(as_json, None)) as session:
        # without a build step each hybrid starts from GOOD and its hunks alone: files a run made go
        space = HunkSpace(good, bad, session.scratch("scratch"), base=base, keep_created=s.build is not None)
        session.closers.append(space.close)
        if space.unbisected:    # an empty directory, a directory's mode: every hybrid has GOOD's
            say_warning(
                f"{good} and {bad} also differ in directories, which no hunk carries (every hybrid has GOOD's): "
                + listed(space.unbisected))
        built = built_files(space.hunks, space.scratch.copied()) if s.build else []
        if built:       # the trees hold what a build made: GOOD's copy is built over it, its hunks searched
            say_warning(
                f"{good} and {bad} hold compiled files ({listed(built)}): where they differ they are hunks like "
                f"the sources, and each hybrid's build starts over GOOD's, so a build that does not rebuild them "
                f"(make without header dependencies) can hide a source hunk; remove the build outputs from both "
                f"trees (make clean) or give copies without them")
        if not as_json:
            out.print(f"{counted(len(space.hunks), 'hunk')} between {good} and {bad}", markup=False)
        with held():   # as in ablate
            rec = run_diff(session.runner(cwd=space.workdir), space, pol, strategy=strategy, refine=lines,
                           environment=capture_after_first_run(session))
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


def _a_commit(word: str) -> str:
    """For a diff argument that is no path: what to do instead when git here reads it as a commit
    (`bisectk diff HEAD~3 HEAD`, as `git diff` takes them); "" otherwise."""
    from bisectk.spaces.commits import names_commit
    if not names_commit(Path.cwd(), word):
        return ""
    return (f"; {word} is a commit here, and diff compares two files or source trees: check it out with "
            f"`git worktree add DIR {word}` and give DIR, or let `bisectk triage` isolate the hunks of the "
            f"first bad commit against its parent")


# -- bisect / triage -------------------------------------------------------------------------------


def history_ends(good: list[str], bad: list[str], find_fix: bool,
                 hint: Callable[[], str] = lambda: "") -> tuple[list[str], str, tuple[str, str]]:
    """(the old side's refs, the new end's ref, the options that named them) from --good/--bad:
    a regression goes from the goods (all count) to one bad; a fix (--find-fix) from the bads,
    where it fails, to one good, where it passes again. The new end defaults to HEAD, as `git
    bisect bad` (`git bisect fixed`) without a commit marks HEAD. `hint`: words for a missing
    old side (the marks of a `git bisect` of the user's in progress)."""
    olds, news, names = (bad, good, ("--bad", "--good")) if find_fix else (good, bad, ("--good", "--bad"))
    if not olds:
        fail(f"give {names[0]} REF" + (" (--find-fix: --bad is the older commit, where it fails, --good the newer "
                                       "one, where it passes; it defaults to HEAD)" if find_fix else
                                       " (and --bad REF, which defaults to HEAD)" + hint()))
    news = news or ["HEAD"]
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
                                                    "(all count). With --find-fix: the newer commit, where it works again (default HEAD)."),
           bad: Optional[list[str]] = typer.Option(None, "--bad", help="A later commit where it fails (default HEAD, as `git "
                                                   "bisect bad`). With --find-fix: the older commit where it fails "
                                                   "(repeatable)."),
           targets: Optional[list[str]] = typer.Argument(None, metavar="[SPEC] [-- PATHSPEC...]", show_default=False,
                                                         help="Variant spec to run in each commit (or use --run / --pytest), "
                                                              "then git's pathspec: only commits that touch these paths are candidates."),
           run_cmd: Optional[str] = RunOpt,
           pytest_id: Optional[str] = PytestOpt,
           build: Optional[str] = BuildOpt, build_timeout: Optional[float] = BuildTimeoutOpt,
           config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
           timeout: Optional[float] = TimeoutOpt,
           repeat: int = typer.Option(1, "--repeat", min=1, help="Runs of each endpoint; more runs reveal an intermittent failure."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware Bayesian search (default: when the endpoint runs show the failure is intermittent); --no-flaky: the failure is deterministic, and the first bad commit is confirmed by one more run of it and of each parent."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           confidence: float = typer.Option(0.99, "--confidence", min=0.5, max=0.999999, help="Stop when the first bad commit is this probable (flaky mode)."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Test this many commits per round in parallel (k-way multisection)."),
           gpus: Optional[str] = typer.Option(None, "--gpus", help="Pin parallel workers to GPUs, e.g. 0,1,2,3 (sets CUDA_VISIBLE_DEVICES)."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain (merge-heavy history)."),
           clean_ignored: bool = CleanIgnoredOpt,
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
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop the search once it has made this many runs (runs the ledger answers cost nothing and are not counted, so --resume goes on; nor are the endpoint checks)."),
           resume: bool = typer.Option(False, "--resume", help="Continue the last bisection of these refs; nothing already recorded re-runs."),
           fresh: bool = FreshOpt, snapshots: int = SnapshotsOpt, warm: bool = WarmOpt,
           executor: str = ExecutorOpt, ray_address: Optional[str] = RayAddressOpt, ray_repo: Optional[str] = RayRepoOpt,
           report: Optional[Path] = ReportOpt, json_out: Optional[Path] = JsonOutOpt, html: Optional[Path] = HtmlOpt,
           ledger: Optional[Path] = GitLedgerOpt,
           as_json: bool = JsonOpt) -> None:
    """Find the first bad commit between --good and --bad, each commit built and run in its own
    git worktree. Exit 0: found (1 if ambiguous or stopped); 2: unusable input or endpoints."""
    from bisectk.spaces.early import drop_repo_env
    drop_repo_env()     # before any process starts: a run's git must see its worktree, not the checkout
    if not manual:
        spare_ahead(executor, warm)
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import ExitStack

    from bisectk.engine.direction import Terms
    from bisectk.spaces import early
    from bisectk.spaces.checkout import pathspec_of
    from bisectk.spaces.runfiles import resolve_commands
    from bisectk.spaces.commits import list_graph, open_repo, resolve
    from bisectk.spaces.worktrees import WorktreePool
    from bisectk.spaces.yourbisect import marks_hint
    resume_or_fresh(resume, fresh)
    terms = Terms.of(find_fix, term_old, term_new)
    olds, new, names = history_ends(good or [], bad or [], find_fix, lambda: marks_hint(Path(repo)))
    if not (good if find_fix else bad) and not as_json:
        out.print(f"{names[1]} not given: HEAD, as `git bisect {terms.new}` marks it", markup=False)
    spec, paths = history_targets(targets, bool(run_cmd or pytest_id or manual))
    root = open_repo(repo)
    say_ambiguous(root, olds, new, names)
    say_your_bisect(root, olds, new, names)
    paths = pathspec_of(paths, Path.cwd(), root)
    if manual:
        if spec is not None or run_cmd or pytest_id or build:
            fail("--manual: you are the oracle; give no SPEC, --run, --pytest or --build")
        policy(confidence=confidence)       # the one validator (NaN passes click's range check)
        _bisect_manual(root, olds, new, names, paths, terms, first_parent=first_parent, confidence=confidence,
                       fresh=fresh, ledger=ledger)
    with ExitStack() as stack:
        # git lists the history, and the first endpoint is checked out, while Python loads the rest
        background = stack.enter_context(ThreadPoolExecutor(max_workers=2, thread_name_prefix="bisectk-setup"))
        listing = background.submit(list_graph, root, olds, new, first_parent=first_parent, paths=paths, ends=names)
        capture = Deferred(background, environment_capture)     # started with the runs (_bisect)
        pool = None
        try:
            good_sha, bad_sha = resolve(root, olds[0], names[0]), resolve(root, new, names[1])
        except BisectkError:
            listing.result()                # the listing reports a bad ref, as before
            raise
        if executor == "local":
            first = bad_sha if find_fix else good_sha       # the endpoint that must pass runs first
            pool = early.take_pool(root, jobs, first)       # begun before the CLI loaded, if it could be
            if pool is not None:
                stack.callback(pool.close)
            else:
                pool = stack.enter_context(WorktreePool(root, size=jobs))
                pool.prepare(first)
        try:
            run_cmd, build, files = resolve_commands(run_cmd, build, user_cwd=Path.cwd(), root=root, commit=bad_sha,
                                                     olds=olds, pytest=pytest_words(pytest_id),
                                                     copy=executor == "local")
            s, cfg, sub = history_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat, build_timeout)
        except BaseException:
            listing.result()                # a bad range is reported first, as before
            raise
        _bisect(root, listing, good_sha, bad_sha, pool, capture, background, spec=spec, run_cmd=run_cmd, pytest_id=pytest_id, s=s, cfg=cfg,
                sub=sub, good=olds[0], bad=new, repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs,
                same_failure=same_failure, confidence=confidence, jobs=jobs, gpus=gpus, first_parent=first_parent,
                any_failure=any_failure, max_runs=max_runs, resume=resume, fresh=fresh, snapshots=snapshots, warm=warm,
                executor=executor,
                ray_address=ray_address, ray_repo=ray_repo, report=report, json_out=json_out, html=html,
                ledger=ledger, as_json=as_json, terms=terms, files=files, clean_ignored=clean_ignored)


def say_ambiguous(root: Path, olds: list[str], new: str, names: tuple[str, str]) -> None:
    """A warning for each ref whose name git reads as one of several (a tag and a branch of one
    name): git's own warning, which bisectk had dropped with its stderr (spaces/refnames.py)."""
    from bisectk.spaces.refnames import ambiguities
    for line in ambiguities(root, [*((names[0], g) for g in olds), (names[1], new)]):
        say_warning(line)


def say_your_bisect(root: Path, olds: list[str], new: str, names: tuple[str, str]) -> None:
    """A warning where --good or --bad names HEAD while a `git bisect` of the user's has moved it
    (spaces/yourbisect.py): HEAD is then that bisection's commit, not the user's branch."""
    from bisectk.spaces.yourbisect import head_note
    note = head_note(root, [*((names[0], g) for g in olds), (names[1], new)])
    if note:
        say_warning(note)


def pytest_words(pytest_id: Optional[str]) -> list[str]:
    """--pytest's node ids and options, split as pytest gets them (none without --pytest)."""
    from bisectk.engine.subject import pytest_args
    return pytest_args(pytest_id) if pytest_id else []


def say_command(files, spec, sub: Path, root: Path | None = None) -> None:
    """Where the command runs and which copy of each file it names: the user's file, or each
    commit's own (said when the user has a copy: one that only the tree has did not run); and a
    post-checkout hook of the user's, which git bisect would run at each commit and bisectk does not."""
    if root is not None:
        from bisectk.spaces.checkout import post_checkout_hook
        hook = post_checkout_hook(root)
        if hook is not None:
            out.print(f"hooks: your post-checkout hook {hook} does not run in bisectk's worktrees (git bisect runs it "
                      "at each checkout): what a run needs of it, make in --build", markup=False)
    if spec is None and str(sub) != ".":
        out.print(f"runs in each commit's {sub}/, where the command was typed", markup=False)
    from bisectk.report.history import command_lines
    for f in files:
        if f.use == "tree" and f.state != "tracked, not in your directory":
            out.print(f"command: {f.word} is tracked: each commit's own {f.path} " + ("runs" if f.runs else "is named"),
                      markup=False)
    for line in command_lines([f.to_dict() for f in files if f.use != "tree"]):
        out.print(line, markup=False)


def _bisect(root, listing, good_sha, bad_sha, pool, environment, background, *, spec, run_cmd, pytest_id, s, cfg, sub, good, bad,
            repeat, flaky, calibrate_runs, same_failure, confidence, jobs, gpus, first_parent, any_failure, max_runs,
            resume, fresh, snapshots, warm, executor, ray_address, ray_repo, report, json_out, html, ledger,
            as_json, terms, files, clean_ignored=False) -> None:
    """The rest of `bisect`: the engine loads while git lists the history (`listing`), which is
    waited for before a session opens (a bad range opens none). The shas: refs move. `good_sha`
    is the old end (for a fix, the failing --bad), `bad_sha` the new one."""
    from bisectk.engine.bisect import run_bisect
    from bisectk.engine.interrupts import held
    from bisectk.engine.session import Session, ledger_location
    from bisectk.spaces.runfiles import carried, needed
    from bisectk.spaces.shared import snapshot
    commits = listing.result()
    args = {"repo": str(root), "good": good_sha, "bad": bad_sha, "first_parent": first_parent, "flaky": flaky,
            "any_failure": any_failure, "subject": str(spec or run_cmd or pytest_id),
            "olds": list(commits.goods), "paths": list(commits.paths), "confidence": confidence, **terms.to_dict()}
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, jobs=jobs, confidence=confidence, gpus=tuple(gpus.split(",")) if gpus else (),
                 executor=executor, ray_address=ray_address, ray_repo=ray_repo, fresh=fresh, warm=warm,
                 clean_ignored=clean_ignored)
    pol = timed_policy(pol, s)      # a SPEC's SLOW rule: commits timed side by side time each other
    ledger_path = ledger_location(ledger, repo=root)
    check_outputs(report, json_out, html, spec=s, ledger=ledger_path, as_json=as_json)
    with Session("bisect", s, ledger_path, args=args, policy=pol,
                 reporter=reporter(as_json, None)) as session:
        prev = session.previous
        same = prev is not None and all(prev["args"].get(k, d) == args[k] for k, d in
                                        (("good", None), ("bad", None), ("olds", [good_sha]), ("paths", []),
                                         ("find_fix", False)))
        if resume and not same:
            other = session.ledger.last_session("bisect", before=session.id)
            fail(f"--resume: no earlier bisection of {good}..{bad} with this subject in {session.ledger.path}" + (
                f": the last one (session {other['id']}) ran {args['subject']} as it was then, and a file it "
                f"names or sources, its build or its environment has changed since (an edited test script is "
                f"another test); without --resume every run whose inputs are unchanged is still answered from "
                f"the ledger" if other is not None and all(other["args"].get(k) == args[k] for k in
                                                         ("good", "bad", "olds", "paths", "subject")) else ""))
        if not as_json:
            merges = commits.merges()
            old_word, new_word = ("bad", "good") if terms.find_fix else ("good", "bad")
            out.print(f"{len(commits)} candidate commits from {good_sha[:10]} ({old_word}) to {bad_sha[:10]} ({new_word})"
                      + (f", {merges} of them {'a merge' if merges == 1 else 'merges'}" if merges else "")
                      + (" (first-parent chain)" if first_parent else "")
                      + (f", touching {' '.join(commits.paths)}" if commits.paths else ""), markup=False)
            say_command(files, spec, sub, root)
        # Once the first run has ended, the environment is captured and the listing parsed (numpy
        # loaded) beside the runs after it: before, their Python took the GIL from the path to the
        # first launch. With no run, the record asks for both. The parse starts sooner when the
        # first run must wait for its worktree's checkout (the main thread idle meanwhile).
        parse = Deferred(background, commits.arrays)
        after_first_run(session.events, environment, parse)
        if pool is not None:    # or earlier, while the first run waits for a big tree's checkout
            pool.while_preparing = parse.start
        shared = background.submit(snapshot, root)       # refs and config, to say what the runs changed
        with held():   # as in ablate: Ctrl-C stops runs, never the writing of a result
            with session.commit_space(commits, root, cfg, sub, pool=pool) as space:
                space.needed = needed(files)
                space.carry(carried(files))
                try:
                    rec = run_bisect(session.runner(), space, pol, environment=environment, repo=str(root),
                                     first_parent=first_parent, any_failure=any_failure, terms=terms,
                                     facts={"command_files": tuple(f.to_dict() for f in files)})
                except KeyboardInterrupt:
                    fail("interrupted while verifying the endpoints; runs so far are in the ledger", X.INTERRUPTED)
            say_shared(shared.result(), root)
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


def say_shared(before, root: Path) -> None:
    """A warning when the runs changed what the worktrees share with the user's checkout
    (spaces/shared.py): refs, the stash, the config, the list of worktrees."""
    from bisectk.spaces.shared import changes, snapshot
    said = changes(before, snapshot(root, Path(before["git_dir"])) if before else None)
    if said:
        say_warning(f"the runs changed your repository: {'; '.join(said)}. Each commit runs in a worktree of "
                  f"its own, but worktrees share refs, the stash, the config and the list of worktrees with your "
                  f"checkout (as under git bisect run): a test's own git commands reach them")


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
    raise typer.Exit(X.exit_code(rec))


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
def triage(targets: Optional[list[str]] = typer.Argument(None, metavar="[SPEC] [-- PATHSPEC...]", show_default=False,
                                                         help="Variant spec to run (or use --run / --pytest), then git's "
                                                              "pathspec: only commits that touch these paths are candidates "
                                                              "(as bisect reads it)."),
           repo: Path = RepoOpt,
           good: str = GoodRefOpt,
           bad: str = BadRefOpt,
           run_cmd: Optional[str] = RunOpt,
           pytest_id: Optional[str] = PytestOpt,
           build: Optional[str] = BuildOpt, build_timeout: Optional[float] = BuildTimeoutOpt,
           config: str = ConfigOpt, set_: Optional[list[str]] = SetOpt,
           timeout: Optional[float] = TimeoutOpt,
           repeat: int = typer.Option(1, "--repeat", min=1, help="Runs of each endpoint."),
           flaky: Optional[bool] = typer.Option(None, "--flaky/--no-flaky", help="Flake-aware search; --no-flaky: the failure is deterministic, and each answer is confirmed by one more run of each configuration it rests on."),
           calibrate_runs: int = CalibrateOpt, same_failure: str = SameFailureOpt,
           confidence: float = typer.Option(0.99, "--confidence", min=0.5, max=0.999999, help="Stop the bisection when the first bad commit is this probable (flaky mode)."),
           jobs: int = typer.Option(1, "--jobs", min=1, max=64, help="Commits tested per round in parallel."),
           first_parent: bool = typer.Option(False, "--first-parent", help="Only the first-parent chain."),
           clean_ignored: bool = CleanIgnoredOpt,
           max_runs: Optional[int] = typer.Option(None, "--max-runs", min=1, help="Stop each search (the bisection, then the hunk isolation) once it has made this many runs (runs the ledger answers cost nothing and are not counted; nor are the endpoint checks)."),
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
    resume_or_fresh(resume, fresh)
    from bisectk.spaces.early import drop_repo_env
    drop_repo_env()     # a run's git must see its worktree, not the checkout
    from bisectk.engine.interrupts import held
    from bisectk.engine.session import Session, ledger_location
    from bisectk.engine.triage import run_triage
    from bisectk.report.junit import write_junit
    from bisectk.report.triage import to_cases
    from bisectk.spaces.commits import list_graph, open_repo
    from bisectk.spaces.checkout import pathspec_of
    from bisectk.spaces.runfiles import carried, needed, resolve_commands
    from bisectk.spaces.shared import snapshot
    spec, paths = history_targets(targets, bool(run_cmd or pytest_id))
    root = open_repo(repo)
    say_ambiguous(root, [good], bad, ("--good", "--bad"))
    say_your_bisect(root, [good], bad, ("--good", "--bad"))
    paths = pathspec_of(paths, Path.cwd(), root)    # as bisect reads it: relative to where it is typed
    commits = list_graph(root, good, bad, first_parent=first_parent, paths=paths)
    # --run ./test.sh as bisect reads it: the user's untracked script, or each commit's own
    run_cmd, build, files = resolve_commands(run_cmd, build, user_cwd=Path.cwd(), root=root, commit=commits.bad_sha,
                                             olds=[commits.good_sha], pytest=pytest_words(pytest_id),
                                             copy=executor == "local")
    s, cfg, sub = history_subject(spec, run_cmd, pytest_id, build, root, config, set_, timeout, repeat, build_timeout)
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 jobs=jobs, max_runs=max_runs, confidence=confidence, executor=executor, ray_address=ray_address,
                 ray_repo=ray_repo, fresh=fresh, warm=warm, clean_ignored=clean_ignored)
    # what `bisectk log` needs to write the triage's bisection as a replayable record
    args = {"repo": str(root), "good": commits.good_sha, "bad": commits.bad_sha, "first_parent": first_parent,
            "flaky": flaky, "subject": str(spec or run_cmd or pytest_id), "paths": list(commits.paths),
            "confidence": confidence}
    ledger_path = ledger_location(ledger, repo=root)
    check_outputs(report, json_out, html, junit, spec=s, ledger=ledger_path, as_json=as_json)
    with Session("triage", s, ledger_path, args=args, policy=pol,
                 reporter=reporter(as_json, None)) as session:
        prev = session.previous
        if resume and (prev is None or (prev["args"].get("good"), prev["args"].get("bad"), prev["args"].get("paths", []))
                       != (args["good"], args["bad"], args["paths"])):
            fail(f"--resume: no earlier triage of {good}..{bad} with this subject in {session.ledger.path}")
        if not as_json:
            say_command(files, spec, sub, root)
        shared = snapshot(root)
        with held():   # as in ablate: Ctrl-C stops runs, never the writing of a result
            with session.commit_space(commits, root, cfg, sub) as space:
                space.needed = needed(files)
                space.carry(carried(files))
                try:
                    rec = run_triage(session.runner(), space, pol, scratch_root=session.scratch("triage"),
                                     environment=capture_after_first_run(session), repo=str(root),
                                     first_parent=first_parent, subdir=sub,
                                     facts={"command_files": tuple(f.to_dict() for f in files)})
                except KeyboardInterrupt:   # as bisect: click would make it a silent Abort (exit 130, nothing said)
                    fail("interrupted while verifying the endpoints; runs so far are in the ledger", X.INTERRUPTED)
            say_shared(shared, root)
            cases = ([("--junit", junit, lambda: write_junit(junit, "bisectk triage",
                                                             to_cases(rec, str(spec or run_cmd or pytest_id))))]
                     if junit else [])
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html, where=report,
                   more=cases)


# -- log / replay / report -------------------------------------------------------------------------


@app.command(short_help="Print the last bisection as a replayable record.")
def log(repo: Path = typer.Option(Path("."), "--repo", help="The repository whose bisection to print."),
        ledger: Optional[Path] = GitLedgerOpt,
        session: Optional[int] = typer.Option(None, "--session", **SESSION_IDS, help="Session id (default: the last bisection, a triage's included).")) -> None:
    """Print the last bisection (a `bisect`'s, or the one a `triage` ran) as a replayable record
    (like git bisect log)."""
    from bisectk.engine.session import ledger_location
    from bisectk.engine.gitlog import LOGGED, log_lines
    from bisectk.spaces.commits import open_repo
    db = open_ledger(ledger or ledger_location(repo=open_repo(repo)))
    try:
        if session is not None:
            info = db.session(session)
        else:   # the newest of either kind: a triage after a bisect is the bisection asked for
            info = max((i for i in map(db.last_session, LOGGED) if i), key=lambda i: i["id"], default=None)
        if info is None or info["command"] not in LOGGED:
            fail("no bisection recorded" + (f" with session id {session}" if session is not None else "")
                 + (f" (session {session} is a {info['command']})" if info else ""))
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
    from bisectk.engine.replay import replay_record
    from bisectk.report import render
    check_outputs(html=html, also=[(logfile, "the log to replay")])
    rec = replay_record(logfile, repo)
    written = write_reports(rec, None, None, html) if html else []
    if as_json:
        emit_json(render.document(rec))
    else:
        for line in written:
            out.print(line, markup=False)
        render.summary(out, rec)
    raise typer.Exit(X.exit_code(rec))


cli_tools.register(app)   # report, ledger, ptx, env, demo: after replay in --help


@app.callback(invoke_without_command=True)
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    said_warnings().clear()     # each command's record holds its own warnings (cli_common.with_warnings)
    if version:
        out.print(f"bisectk {__version__}")
        raise typer.Exit(X.OK)


def command(only: str | None = None):
    """The click command behind the typer app, with plain value names in its help. `only`: the
    name of the command this process runs; the group then holds that command alone. Building
    every command's click command (their options, read from the signatures) is ~30 ms of each
    start on a 2-core machine; a name that is not a plain command of the app (a group such as
    `ledger`, a typo that must be answered with "No such command") builds them all."""
    import copy

    import typer.main
    source = app
    info = next((c for c in app.registered_commands if only is not None
                 and (c.name or typer.main.get_command_name(c.callback.__name__)) == only), None)
    if info is not None:
        source = copy.copy(app)                 # the same settings and callback (--version)
        source.registered_commands, source.registered_groups = [info], []
    cmd = typer.main.get_command(source)
    plain_help(cmd)
    cmd.invoke = _saying_interrupts(_leaving_quietly_on_a_closed_pipe(cmd.invoke))
    return cmd


def _saying_interrupts(invoke):
    """A Ctrl-C that no command caught (one during the endpoints' setup, or the command's own lazy
    imports) is said, as `entry` says one before the command starts: typer turns a
    KeyboardInterrupt out of the command into exit 130 without a word."""
    def saying(ctx):
        try:
            return invoke(ctx)
        except KeyboardInterrupt:
            say_error("interrupted")
            raise typer.Exit(X.INTERRUPTED) from None
    return saying


def _leaving_quietly_on_a_closed_pipe(invoke):
    """click answers a write to a closed pipe (`bisectk log | head -1`) with exit 1, which says
    "ambiguous" for bisect and "culprit found" for triage: bisectk leaves with OUTPUT_CLOSED, as
    a process killed by SIGPIPE (git) does; so does a write to a terminal that hung up (EIO), unless
    its SIGHUP arrived (HANGUP then)."""
    def guarded(ctx):
        try:
            return invoke(ctx)
        except BrokenPipeError:
            from bisectk.report.safe import broken_pipe_exit
            broken_pipe_exit()
        except OSError as exc:     # EIO: the terminal hung up before its SIGHUP reached bisectk
            from bisectk.report.safe import broken_pipe_exit, disk_full
            if disk_full(exc):     # `bisectk report L > out.txt` on a full disk: no internal error
                say_unwritten(exc.strerror or str(exc))
                raise typer.Exit(X.USAGE) from None
            if exc.errno != errno.EIO:
                raise
            broken_pipe_exit()
    return guarded



def entry() -> None:
    """Console-script entry: user errors become one line and a non-zero exit, never a traceback.
    The process then leaves without tearing the interpreter down (_leave)."""
    try:
        _entry()
    except SystemExit as exc:
        _leave(_hangup_says(unwritten_says(exc.code)))
    _leave(_hangup_says(unwritten_says(0)))


def _hangup_says(code):
    """After a SIGHUP (the terminal closed), the exit status says so, whatever the command had
    printed by then (engine/interrupts.py): HANGUP, as a shell reports a process it hung up."""
    from bisectk.engine.interrupts import hung_up
    return X.HANGUP if hung_up() else code


def _leave(code) -> None:
    """Exit with `code` (as SystemExit reads it) once the exit handlers have run and the output is
    flushed, skipping the interpreter's teardown: freeing every module and object cost 0.1-0.15 s
    after each command (bench/scale_bench.py, fixed cost), and nothing of bisectk's waits on it
    (the ledger is closed with its session, files with their `with`). An ordinary exit where a
    tracer or profiler is active (it writes its results at teardown), with BISECTK_DEBUG, or while
    a thread that is no daemon still runs (the interpreter would wait for it)."""
    import atexit
    import threading
    from bisectk.engine.interrupts import leaving
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    if sys.gettrace() or sys.getprofile() or os.environ.get("BISECTK_DEBUG") or others:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:
        print(code, file=sys.stderr)
        status = 1
    leaving(status)     # a Ctrl-C now (the second of two) waits for the exit handlers (engine/interrupts.py)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:      # None: started with that descriptor closed (`>&-`)
                stream.flush()
        except OSError as exc:          # a closed pipe (`| head`): nothing more can be said
            from bisectk.report.safe import disk_full
            if stream is sys.stdout and disk_full(exc) and not getattr(out, "said_unwritten", False):
                say_unwritten(exc.strerror or str(exc))     # what stayed in its buffer till now
                status = status or X.USAGE
        except ValueError:
            pass
    os._exit(status)


def _interrupted(exc: BaseException) -> bool:
    """Whether `exc` is a Ctrl-C something else wrapped: one that arrives while the command's own
    lazy imports define a dataclass is raised as RuntimeError('Error calling __set_name__ ...')
    from the KeyboardInterrupt; it is no internal error."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _entry() -> None:
    from bisectk.engine.interrupts import install
    try:
        first = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
        cmd = command(first)
        install()   # SIGTERM and SIGHUP clean up as Ctrl-C does; one that came during the start ends it here
        code = cmd.main(prog_name="bisectk", standalone_mode=False)  # returns typer.Exit's code
        sys.exit(code if isinstance(code, int) else 0)
    except BisectkError as exc:
        say_error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say_error("interrupted")
        sys.exit(X.INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:         # click's word for a Ctrl-C it caught
        say_error("interrupted")
        sys.exit(X.INTERRUPTED)
    except Exception as exc:
        if _is(exc, "Abort") or _interrupted(exc):
            say_error("interrupted")
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
