"""`bisectk triage`: for CI, the failure classified, bisected to the first bad commit, and its
culprit hunks isolated (engine/triage.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bisectk.cli_common import (BadRefOpt, capture_after_first_run, BuildOpt, BuildTimeoutOpt, CalibrateOpt,
                                ConfigOpt, ExecutorOpt, FreshOpt, GitLedgerOpt, GoodRefOpt, HtmlOpt, JsonOpt,
                                JsonOutOpt, PytestOpt, RayAddressOpt, CleanIgnoredOpt, RayRepoOpt, RepoOpt, ReportOpt,
                                RunOpt, SameFailureOpt, SetOpt, SnapshotsOpt, TimeoutOpt, WarmOpt, check_outputs, check_outputs_early,
                                fail, finish, history_subject, interrupted, policy, reporter, resume_or_fresh)
from bisectk.cli_history import (checkout_path, history_targets, pytest_in_tree, pytest_words, say_ambiguous, say_command,
                                 say_path, say_shared, say_your_bisect)


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
           repeat: Optional[int] = typer.Option(None, "--repeat", min=1, help="Runs of each endpoint (default: the spec's, else 1)."),
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
    from bisectk.engine.triage import INCONCLUSIVE, run_triage
    from bisectk.report.junit import write_junit
    from bisectk.report.triage import interrupted_cases, to_cases
    from bisectk.spaces.commits import list_graph, open_repo
    from bisectk.spaces.checkout import pathspec_of
    from bisectk.spaces.runfiles import carried, needed, resolve_commands
    from bisectk.spaces.shared import snapshot
    spec, paths = history_targets(targets, bool(run_cmd or pytest_id), triage)
    root = open_repo(repo)
    say_ambiguous(root, [good], bad, ("--good", "--bad"))
    say_your_bisect(root, [good], bad, ("--good", "--bad"))
    paths = pathspec_of(paths, Path.cwd(), root)    # as bisect reads it: relative to where it is typed
    # before git lists the history: a CI job's timeout while it does still leaves the documents
    check_outputs_early(report, json_out, html, junit, spec=spec, commands=(run_cmd or "", build or ""), pytest=pytest_id,
                        dirs=(Path.cwd(), root), ledger=ledger, repo=root, as_json=as_json,
                        name=str(spec or run_cmd or pytest_id))
    commits = list_graph(root, good, bad, first_parent=first_parent, paths=paths)
    pytest_id = pytest_in_tree(pytest_id, root)   # $PWD/tests/t.py::x: each commit's own test
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
    check_outputs(report, json_out, html, junit, spec=s, ledger=ledger_path, as_json=as_json,
                  name=str(spec or run_cmd or pytest_id))
    with Session("triage", s, ledger_path, args=args, policy=pol,
                 reporter=reporter(as_json, None)) as session, held():
        # from here, as in ablate: a signal stops runs, never the writing of a result, and one that
        # comes before the first run is raised at it, where the documents asked for are written
        def these_refs(prev: dict) -> bool:
            return ((prev["args"].get("good"), prev["args"].get("bad"), prev["args"].get("paths", []))
                    == (args["good"], args["bad"], args["paths"]))
        # the last triage of these refs, behind any of other refs since
        if resume and session.ledger.last_session("triage", session.fingerprint, before=session.id,
                                                  accept=these_refs) is None:
            fail(f"--resume: no earlier triage of {good}..{bad} with this subject in {session.ledger.path}")
        if not as_json:
            say_command(files, spec, sub, root)
        on_path = checkout_path(root, commits.bad_sha, s, executor == "local")
        if not as_json:
            say_path(*on_path)
        shared = snapshot(root)
        with session.commit_space(commits, root, cfg, sub) as space:
            space.needed = needed(files)
            space.carry(carried(files))
            space.path_dirs, space.path = on_path
            try:
                rec = run_triage(session.runner(), space, pol, scratch_root=session.scratch("triage"),
                                 environment=capture_after_first_run(session), repo=str(root),
                                 first_parent=first_parent, subdir=sub,
                                 facts={"command_files": tuple(f.to_dict() for f in files)})
            except KeyboardInterrupt:   # as bisect: click would make it a silent Abort (exit 130, nothing said)
                name = str(spec or run_cmd or pytest_id)
                interrupted("triage", "interrupted while verifying the endpoints; runs so far are in the ledger",
                            json_out=json_out, session=session, as_json=as_json, report=report, html=html,
                            verdict=INCONCLUSIVE,
                            more=[("--junit", junit, lambda why: write_junit(junit, "bisectk triage",
                                                                             interrupted_cases(name, why)))]
                            if junit else [])
        say_shared(shared, root)
        cases = ([("--junit", junit, lambda: write_junit(junit, "bisectk triage",
                                                         to_cases(rec, str(spec or run_cmd or pytest_id))))]
                 if junit else [])
        finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html, where=report,
               more=cases)


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command(short_help="For CI: classify, bisect, isolate the culprit hunks.")(triage)
