"""`bisectk bisect`: the first bad commit (engine/bisect.py), and `--manual`, where the person is
the oracle (engine/manual.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from bisectk import exitcodes as X
from bisectk.cli_common import (Deferred, after_first_run, BuildOpt, BuildTimeoutOpt, CalibrateOpt, ConfigOpt,
                                ExecutorOpt, FreshOpt, GitLedgerOpt, HtmlOpt, JsonOpt, JsonOutOpt, PytestOpt,
                                RayAddressOpt, CleanIgnoredOpt, RayRepoOpt, RepoOpt, ReportOpt, RunOpt,
                                SameFailureOpt, SetOpt, SnapshotsOpt, TimeoutOpt, WarmOpt, check_outputs, check_outputs_early,
                                environment_capture, fail, finish, history_subject, interrupted, out, policy, reporter,
                                resume_or_fresh, spare_ahead, timed_policy)
from bisectk.cli_history import (checkout_path, history_ends, history_targets, pytest_in_tree, pytest_words, say_ambiguous,
                                 say_command, say_path, say_shared, say_your_bisect)
from bisectk.errors import BisectkError
from bisectk.names import counted


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
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs of each endpoint (default: the spec's, else 1); more runs reveal an intermittent failure."),
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
    # the one validator, before git lists the history or a worktree is checked out for the first run
    policy(gpus=tuple(gpus.split(",")) if gpus is not None else (), calibrate_runs=calibrate_runs)
    terms = Terms.of(find_fix, term_old, term_new)
    spec, paths = history_targets(targets, bool(run_cmd or pytest_id or manual), bisect)
    olds, new, names = history_ends(good or [], bad or [], find_fix, lambda: marks_hint(Path(repo)))
    if not (good if find_fix else bad) and not as_json:
        out.print(f"{names[1]} not given: HEAD, as `git bisect {terms.new}` marks it", markup=False)
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
    # before git lists the history: a CI job's timeout while it does still leaves the documents
    check_outputs_early(report, json_out, html, spec=spec, commands=(run_cmd or "", build or ""), pytest=pytest_id,
                        dirs=(Path.cwd(), root), ledger=ledger, repo=root, as_json=as_json)
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
            pytest_id = pytest_in_tree(pytest_id, root)   # $PWD/tests/t.py::x: each commit's own test
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
                 max_runs=max_runs, jobs=jobs, confidence=confidence, gpus=tuple(gpus.split(",")) if gpus is not None else (),
                 executor=executor, ray_address=ray_address, ray_repo=ray_repo, fresh=fresh, warm=warm,
                 clean_ignored=clean_ignored)
    pol = timed_policy(pol, s)      # a SPEC's SLOW rule: commits timed side by side time each other
    ledger_path = ledger_location(ledger, repo=root)
    check_outputs(report, json_out, html, spec=s, ledger=ledger_path, as_json=as_json)
    with Session("bisect", s, ledger_path, args=args, policy=pol,
                 reporter=reporter(as_json, None)) as session, held():
        # from here, as in ablate: a signal stops runs, never the writing of a result, and one that
        # comes before the first run is raised at it, where the documents asked for are written
        def these_refs(prev: dict) -> bool:
            return all(prev["args"].get(k, d) == args[k] for k, d in
                       (("good", None), ("bad", None), ("olds", [good_sha]), ("paths", []), ("find_fix", False)))
        # the last bisection of these refs, behind any of other refs since
        if resume and session.ledger.last_session("bisect", session.fingerprint, before=session.id,
                                                  accept=these_refs) is None:
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
            out.print(f"{counted(len(commits), 'candidate commit')} from {good_sha[:10]} ({old_word}) to {bad_sha[:10]} ({new_word})"
                      + (f", {merges} of them {'a merge' if merges == 1 else 'merges'}" if merges else "")
                      + (" (first-parent chain)" if first_parent else "")
                      + (f", touching {' '.join(commits.paths)}" if commits.paths else ""), markup=False)
            say_command(files, spec, sub, root)
        on_path = checkout_path(root, bad_sha, s, executor == "local")
        if not as_json:
            say_path(*on_path)
        # Once the first run has ended, the environment is captured and the listing parsed (numpy
        # loaded) beside the runs after it: before, their Python took the GIL from the path to the
        # first launch. With no run, the record asks for both. The parse starts sooner when the
        # first run must wait for its worktree's checkout (the main thread idle meanwhile).
        parse = Deferred(background, commits.arrays)
        after_first_run(session.events, environment, parse)
        if pool is not None:    # or earlier, while the first run waits for a big tree's checkout
            pool.while_preparing = parse.start
        shared = background.submit(snapshot, root)       # refs and config, to say what the runs changed
        with session.commit_space(commits, root, cfg, sub, pool=pool) as space:
            space.needed = needed(files)
            space.carry(carried(files))
            space.path_dirs, space.path = on_path
            try:
                rec = run_bisect(session.runner(), space, pol, environment=environment, repo=str(root),
                                 first_parent=first_parent, any_failure=any_failure, terms=terms,
                                 facts={"command_files": tuple(f.to_dict() for f in files)})
            except KeyboardInterrupt:
                interrupted("bisect", "interrupted while verifying the endpoints; runs so far are in the ledger",
                            json_out=json_out, session=session, as_json=as_json, report=report, html=html)
        say_shared(shared.result(), root)
        finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


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


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command(short_help="Find the first bad commit between --good and --bad.")(bisect)
