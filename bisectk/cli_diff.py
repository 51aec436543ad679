"""`bisectk diff`: the hunks of a difference between two files or source trees that cause the
failure (engine/diff.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from bisectk.cli_common import (capture_after_first_run, BuildOpt, BuildTimeoutOpt, CalibrateOpt, ConfigOpt,
                                ExecutorOpt, FreshOpt, HtmlOpt, JsonOpt, JsonOutOpt, RayAddressOpt, ReportOpt, RunOpt,
                                SameFailureOpt, SetOpt, SnapshotsOpt, say_warning, TimeoutOpt, WarmOpt, cache_ledger,
                                check_outputs, check_strategy, fail, finish, interrupted, out, policy, reporter, spare_ahead,
                                spec_warnings, BEFORE_ENDPOINTS)
from bisectk.names import c_quoted
from bisectk.search.names import strategy_names


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
    from bisectk.spaces.hunkspace import HunkSpace, built_files, named_beside, named_inside, named_pair
    for name, given in (("GOOD", good), ("BAD", bad)):
        if not given:           # Path("") is ".": the current directory, taken for a tree
            fail(f"{name} is empty: name a file or a source tree")
    for word in (good, bad):
        if not Path(word).exists():
            fail(f"{word}: no such file or directory" + _a_commit(word))
    good, bad = Path(good), Path(bad)
    check_strategy(strategy)
    # never in the user's tree: the ledger lives in their cache (or --ledger), scratch trees beside it
    # where a --ledger is inside GOOD or BAD, that is said first, before whether its directory exists
    ledger_path = Path(ledger) if ledger is not None else ledger_location()
    for name, tree in (("GOOD", good), ("BAD", bad)):
        if tree.is_dir() and Path(os.path.realpath(ledger_path.parent)).is_relative_to(os.path.realpath(tree)):
            fail(f"the ledger {ledger_path} is inside {name} {tree}: its run logs and the scratch trees go beside it, "
                 f"and GOOD and BAD are never written; give --ledger a path outside both"
                 + ("" if ledger else " (this one is in your cache: XDG_CACHE_HOME)"))
    ledger_path = ledger_location(ledger)
    pol = policy(repeat=repeat, flaky=flaky, calibrate_runs=calibrate_runs, same_failure=same_failure, snapshots=snapshots,
                 max_runs=max_runs, timeout=timeout, executor=executor, ray_address=ray_address, fresh=fresh, warm=warm)
    s, base = load_subject(spec, run_cmd, cwd=Path.cwd(), build=build, config=config, sets=set_,
                           repeat=repeat, name=f"diff {good.name}..{bad.name}", build_timeout=build_timeout)
    spec_warnings(s, timeout)
    sub = _spec_subdir(s, good) if spec is not None else Path(".")
    # the words as the command reads them: from its directory (a spec's `cwd`), and from `sub` in the hybrid
    commands = [s.command, *([s.build] if s.build else [])]
    named = named_inside(commands, good, bad, s.cwd, sub)
    if named:       # the hybrids run in a scratch copy of GOOD: this word never reaches them
        word, side, rel = named
        if rel == "." and sub == Path(".") and os.sep not in word:
            # a bare word that is the tree's name (`grep -q good k.py`, `mode=bad`) may be no path at all
            say_warning(
                f"the command's word {word!r} is also {side}'s name from here: if it names that tree, it never "
                f"reaches the hybrids, which run in a scratch copy of GOOD (their working directory, "
                f"$BISECTK_TREE): name it '.'; if it is no path (a pattern, a mode), ignore this")
        else:
            say_warning(
                f"the command names {word}, {side if rel == '.' and sub == Path('.') else 'inside ' + side}: every "
                f"hybrid runs in a scratch "
                f"copy of GOOD (its working directory, $BISECTK_TREE), never in GOOD or BAD themselves; name it "
                f"relative to the tree ({rel!r})")
    pair = None if named else named_pair(commands, good, bad, s.cwd, sub)
    if pair:        # two files: each hybrid is GOOD's name in a scratch directory
        word, side = pair
        say_warning(
            f"the command names {word}, which is {side} itself from here: every hybrid is a copy of GOOD named "
            f"{good.name!r} in a scratch directory (its working directory, $BISECTK_TREE), never GOOD or BAD "
            f"themselves; name it {good.name!r}")
    beside = None if named or pair else named_beside(commands, good, bad, s.cwd, sub)
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
        space = HunkSpace(good, bad, session.scratch("scratch"), base=base, keep_created=s.build is not None,
                          subdir=sub)
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
            out.print(f"{counted(len(space.hunks), 'hunk')} between {c_quoted(str(good))} and {c_quoted(str(bad))}",
                      markup=False)
        with held():   # as in ablate
            try:
                rec = run_diff(session.runner(cwd=space.workdir), space, pol, strategy=strategy, refine=lines,
                               environment=capture_after_first_run(session))
            except KeyboardInterrupt:
                interrupted("diff", BEFORE_ENDPOINTS, json_out=json_out, session=session, as_json=as_json,
                            report=report, html=html)
            finish(rec, report=report, json_out=json_out, as_json=as_json, session=session, html=html)


def _spec_subdir(s, good: Path) -> Path:
    """The spec's `cwd` in the hybrid tree: relative to its project root, as bisect reads it in each
    commit's tree (cli_common.history_subject), where GOOD has that directory; else "." (the tree's
    root, where diff ran every spec's command before), and a warning says the key is not followed."""
    from bisectk.spec import project_root
    rel = os.path.relpath(s.cwd, project_root(s.path))
    if rel == ".":
        return Path(".")
    if good.is_dir() and rel != ".." and not rel.startswith(".." + os.sep) and (good / rel).is_dir():
        return Path(rel)
    where = "a file" if not good.is_dir() else f"has no directory {rel!r}"
    say_warning(f"the spec's subject.cwd {str(s.cwd)!r} ({rel!r} from its project) is not followed: GOOD {good} is "
                f"{where}, and diff runs the command in each hybrid tree (a scratch copy of GOOD, $BISECTK_TREE), "
                f"from its root")
    return Path(".")


def _a_commit(word: str) -> str:
    """For a diff argument that is no path: what to do instead when git here reads it as a commit
    (`bisectk diff HEAD~3 HEAD`, as `git diff` takes them); "" otherwise."""
    from bisectk.spaces.commits import names_commit
    if not names_commit(Path.cwd(), word):
        return ""
    return (f"; {word} is a commit here, and diff compares two files or source trees: check it out with "
            f"`git worktree add DIR {word}` and give DIR, or let `bisectk triage` isolate the hunks of the "
            f"first bad commit against its parent")


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command("diff", short_help="Isolate the hunks of a source difference that cause it.")(diff_cmd)
