"""The CLI's commands that read what was stored or look at the machine, running no search:
`report`, `ledger check`, `ledger gc`, `ptx`, `env` and `demo history`. `register(app)` adds them
to the app of bisectk/cli.py (in this order: the order of `bisectk --help`)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from bisectk import exitcodes as X
from bisectk.cli_common import (SESSION_IDS, HtmlOpt, a_directory, JsonOpt, SpecArg, check_outputs, emit_json, fail, logs_gone, open_ledger, out,
                                write_reports)
from bisectk.errors import BisectkError


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app`."""
    app.command(short_help="Print a finished command's result again from the ledger.")(report)
    ledger_app = typer.Typer(no_args_is_help=True, help="Inspect or repair a ledger; remove cached worktrees (gc).")
    app.add_typer(ledger_app, name="ledger")
    ledger_app.command("check")(ledger_check)
    ledger_app.command("gc")(ledger_gc)
    app.command("ptx", short_help="Diff the PTX signatures of good and bad (no GPU needed).")(ptx_cmd)
    app.command("env", short_help="Capture the runtime context, or diff two captures.")(env_cmd)
    demo_app = typer.Typer(no_args_is_help=True, help="Write ready-to-run inputs for the README's examples.")
    app.add_typer(demo_app, name="demo")
    demo_app.command("history")(demo_history)


def report(ledger: Path = typer.Argument(..., help="A ledger database (e.g. .bisectk/ledger.db, <git dir>/bisectk/ledger.db).", show_default=False),
           session: Optional[int] = typer.Option(None, "--session", **SESSION_IDS, help="Session id (default: the last finished one)."),
           markdown: Optional[Path] = typer.Option(None, "--report", help="Write the Markdown debug log here (its pictures beside it)."),
           html: Optional[Path] = HtmlOpt, as_json: bool = JsonOpt) -> None:
    """Print a finished command's result again from the ledger, running nothing."""
    from bisectk.engine.records import full_form, load_record
    from bisectk.report import render
    check_outputs(report=markdown, html=html, ledger=ledger, as_json=as_json)
    db = open_ledger(ledger)
    try:
        info = db.session(session) if session is not None else db.last_finished_session()
        if as_json and info and isinstance(info.get("result"), dict):
            logs_gone(info["result"], db)
    finally:
        db.close()
    result = info.get("result") if info else None
    if session and info and result is None and info.get("finished") is None:   # begun, nothing stored yet
        fail(f"{ledger}: session {session} ({info['command']}) has stored no result yet: it is still running, "
             "or it was killed before it could (its runs so far are in the ledger: `bisectk log` for a bisection)")
    if not isinstance(result, dict) or "command" not in result:
        fail(f"{ledger}: no finished session" + (f" with id {session}" if session is not None else "") + " with a stored result")
    damaged = f"{ledger}: the stored result of session {info['id']} is damaged"
    with _said_damaged(damaged):
        rec = load_record(result)
    # the session's spec and the files its command names are known only now
    check_outputs(report=markdown, html=html, ledger=ledger, also=stored_inputs(rec, ledger), as_json=as_json)
    with _said_damaged(damaged):
        with out.capture() as shown:   # printed whole or not at all; rendered for --json too, to read it all
            render.summary(out, rec)
        written = write_reports(rec, None, markdown, html)
    if as_json:
        emit_json(full_form(result))
    else:
        sys.stdout.write(shown.get())
        for line in written:
            out.print(line, markup=False)
    raise typer.Exit(X.OK)


@contextmanager
def _said_damaged(damaged: str):
    """A stored result that cannot be read or rendered: one line saying it is damaged, and why."""
    try:
        yield
    except BisectkError as exc:
        fail(f"{damaged} ({exc})")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:   # a field of the wrong shape
        fail(f"{damaged} ({type(exc).__name__}: {exc})"[:300])


def stored_inputs(rec, ledger: Path) -> list[tuple[Path, str]]:
    """The files a stored session read that a report must not overwrite: its spec and the files its
    subject's command names. The record keeps them as the command was given, relative to where it
    ran, which the ledger does not keep: they are read from here, from the ledger's directory and
    from the one above it (the default ledger is `DIR/.bisectk/ledger.db`, for a command run in DIR)."""
    from bisectk.report.outputs import argv_files
    subject = getattr(rec, "subject", None)
    if subject is None:
        return []
    home = Path(os.path.abspath(ledger)).parent
    bases = list(dict.fromkeys([Path.cwd(), home, home.parent]))
    found = [(p, "the spec") for p in argv_files([subject.path], *bases)]
    return found + [(p, "a file the subject's command names") for p in argv_files(subject.command, *bases)]


def ledger_check(path: Path = typer.Argument(..., help="The ledger database.", show_default=False),
                 salvage: Optional[Path] = typer.Option(None, "--salvage", help="Copy every readable row into this new ledger."),
                 as_json: bool = JsonOpt) -> None:
    """Check a ledger's integrity without writing to it; --salvage copies what is readable into a
    new ledger. Exit 0: healthy (or salvaged); 2: damaged."""
    from bisectk import ledger_check as L
    if not path.exists():
        fail(f"no ledger at {path}")
    if not path.is_file():      # a directory, a device: no file to check, nothing to salvage
        fail(f"{path} is {'a directory' if path.is_dir() else 'not a regular file'}, not a ledger file: "
             "give the ledger's database file (e.g. .bisectk/ledger.db)")
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


def ledger_gc(repo: Optional[Path] = typer.Option(None, "--repo", help="The repository whose cached worktrees to remove "
                                                  "(default: the current directory's, unless --ledger is given alone).",
                                                  callback=a_directory),
              ledger: Optional[Path] = typer.Option(None, "--ledger", help="Also prune this ledger's run logs to their cap "
                                                    "(BISECTK_LOG_CAP_MB, default 512), oldest commands' first.")) -> None:
    """Remove the worktrees that bisect and triage keep between commands in
    $XDG_CACHE_HOME/bisectk/worktrees/ (those no running command holds), those older versions kept
    in <git dir>/bisectk-worktrees, and the cached worktrees of repositories that are gone; with
    --ledger, that ledger's run logs over their cap (and those of the logs' older layout). Exit 0;
    2 (one line) where there is nothing to clean: no git repository here or at --repo."""
    from bisectk.run import logcap
    from bisectk.spaces.wtcollect import collect
    cap = logcap.cap_bytes()
    if ledger is not None and not ledger.is_file():
        fail(f"--ledger {ledger}: no ledger file there (e.g. .bisectk/ledger.db)")
    if repo is not None or ledger is None:
        removed = collect(repo or Path("."))
        places = sorted({str(p.parent) for p in removed})
        out.print(f"removed {len(removed)} cached worktree{'s' if len(removed) != 1 else ''}"
                  + (f" from {', '.join(places)}" if removed else ""), markup=False)
    if ledger is not None:
        db = open_ledger(ledger, writable=True)
        try:
            legacy, pruned = logcap.collect(db, cap)
        finally:
            db.close()
        out.print(f"pruned the run logs of {len(pruned)} command{'s' if len(pruned) != 1 else ''} from "
                  f"{logcap.logs_root(ledger)} (cap {cap >> 20} MiB)"
                  + (f", and {len(legacy)} director{'ies' if len(legacy) != 1 else 'y'} no session of it "
                     "holds (an older bisectk's layout, a salvaged ledger's)" if legacy else ""), markup=False)
    raise typer.Exit(X.OK)


def ptx_cmd(spec: Path = SpecArg,
            with_: Optional[list[str]] = typer.Option(None, "--with", help="Also compile good with these factors at their bad values (e.g. the culprits); repeatable."),
            timeout: Optional[float] = typer.Option(None, "--timeout", min=0.01, help="Seconds each compile-only run may take "
                                                    "(default 600); a compile still running then is a build hang, its processes killed."),
            as_json: bool = JsonOpt) -> None:
    """PTX evidence without a GPU: compile good, bad (and good + --with factors) in compile-only mode
    and print the differences of their PTX signatures (mbarrier, bar.sync ids/counts, TMA, wgmma, smem)."""
    from bisectk.evidence import COMPILE_TIMEOUT_S, ptx_evidence
    from bisectk.spec import load_spec
    from bisectk.timeouts import limit_problem
    if timeout is not None and (problem := limit_problem("--timeout", timeout)):
        fail(problem)
    s = load_spec(spec)
    configs = {"good": s.good, "bad": s.bad}
    if with_:
        unknown = [f for f in with_ if f not in s.good]
        if unknown:
            fail(f"--with {', '.join(unknown)}: not a factor of {spec} (factors: {', '.join(s.factors)})")
        with_ = list(dict.fromkeys(with_))
        differ = s.differences()
        alike = [f for f in with_ if f not in differ]
        if alike:   # good with it at its bad value is good itself: a column that cleared nothing
            fail(f"--with {', '.join(alike)}: good and bad give {'it' if len(alike) == 1 else 'them'} the same value, "
                 f"so good with {'it' if len(alike) == 1 else 'them'} is good itself; name a factor that differs "
                 f"({', '.join(differ) or 'none do'})")
        configs["good+" + "+".join(with_)] = s.hybrid(set(with_))
    ev = ptx_evidence(s, configs, timeout=COMPILE_TIMEOUT_S if timeout is None else timeout)
    if as_json:
        emit_json(ev.to_dict())
    else:
        out.print(ev.table(), markup=False, highlight=False)
    if ev.signatures and not ev.errors:
        raise typer.Exit(X.OK)
    # the reasons are in the table (stdout); a script that keeps only stderr gets the first of them
    label, why = next(iter(ev.errors.items()), ("", "fewer than two configurations compiled"))
    fail(f"ptx {spec}: {label + ': ' if label else ''}{why}"
         + (f" (and {len(ev.errors) - 1} more)" if len(ev.errors) > 1 else ""))


def env_cmd(captures: Optional[list[Path]] = typer.Argument(None, metavar="CAPTURE", show_default=False,
                                                           help="Two saved captures to compare: the same as --diff A.json B.json."),
            save: Optional[Path] = typer.Option(None, "--save", help="Write the capture to this JSON file."),
            diff: Optional[list[Path]] = typer.Option(None, "--diff", help="Compare two saved captures: --diff A.json B.json (or --diff A.json --diff B.json)."),
            torch: bool = typer.Option(False, "--torch", help="Also ask torch (in a subprocess) what it sees."),
            as_json: bool = JsonOpt) -> None:
    """Capture the runtime context to rule out first (GPU, driver, CUDA, packages, CUDA_*/CUTE_DSL_*/TORCH_* variables),
    or list the differences between two saved captures."""
    from bisectk.spaces import env as envmod
    diff = [*(diff or []), *(captures or [])]      # `env A.json B.json` is `env --diff A.json B.json`
    if diff:
        if len(diff) != 2:
            fail(f"--diff compares exactly two captures (--diff A.json B.json), got {len(diff)}")
        if save or torch:   # a diff captures nothing: either would be dropped without a word
            fail(f"{'--save' if save else '--torch'} goes with a capture, not with --diff: "
                 "capture with `bisectk env --save FILE`, then compare")
        a, b = envmod.load(diff[0]), envmod.load(diff[1])
        rows = envmod.diff(a, b)
        if as_json:
            emit_json({"a": str(diff[0]), "b": str(diff[1]), "differences": [{"key": k, "a": x, "b": y} for k, x, y in rows]})
        else:
            from rich.table import Table
            if not rows:    # an empty table read as a capture that failed to load
                out.print(f"{diff[0]} vs {diff[1]}: the captures are equal", markup=False)
                raise typer.Exit(X.ENV_EQUAL)
            t = Table(title=f"{diff[0]} vs {diff[1]}", title_justify="left")
            for col in ("key", str(diff[0].name), str(diff[1].name)):
                t.add_column(col, overflow="fold")    # never cut to '…': the key is the variable to set
            for k, x, y in rows:    # a variable set empty is "" (a blank cell read as a value left out)
                t.add_row(k, *envmod.cells(k, x, y))
            out.print(t)
            snippet = envmod.factors_toml(rows)
            if snippet.strip():
                out.print("as spec factors (environment variables applied per run):", markup=False)
                out.print(snippet, markup=False, highlight=False)
        raise typer.Exit(X.ENV_DIFFER if rows else X.ENV_EQUAL)
    if save:     # refused before the capture (a torch probe may take seconds)
        from bisectk.report.outputs import check_outputs
        check_outputs({"--save": save}, stdout_taken="--json" if as_json else "")
        if not save.parent.exists():    # as --ledger: a typo's directories are not made
            fail(f"--save {save}: the directory {save.parent} does not exist (env --save writes a file, not the "
                 f"directories named above it: create {save.parent} first, or check the path)")
    data = envmod.capture(torch=True if torch else None)
    if save:
        envmod.save(save, data)
    if as_json or not save:
        emit_json(data)
    else:
        out.print(f"environment written to {save}", markup=False)


def demo_history(path: Path = typer.Argument(..., help="A new or empty directory for the repository.", show_default=False)) -> None:
    """Create a throwaway git repository with a planted regression for bisect, triage, log and
    replay: tag v1.0 works, main deadlocks; a side branch is merged and two commits do not build."""
    from bisectk.demo import make_history
    for line in make_history(path).lines():
        out.print(line.replace("--repo DIR", f"--repo {path}"), markup=False)
