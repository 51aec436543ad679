"""`bisectk log` and `bisectk replay`: a bisection as a replayable record, and its answer
rebuilt from such a record (engine/gitlog.py, engine/replay.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from bisectk import exitcodes as X
from bisectk.cli_common import (GitLedgerOpt, HtmlOpt, JsonOpt, SESSION_IDS, check_outputs, emit_json, fail,
                                open_ledger, out, write_reports)


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
        try:
            lines = log_lines(info, db.events(info["id"], "observation"), db.events(info["id"], "undo"))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:   # an edited ledger
            fail(f"{db.path}: the stored bisection of session {info['id']} is damaged ({type(exc).__name__}: {exc})"[:300])
        for line in lines:
            out.print(line, markup=False, highlight=False)
    finally:
        db.close()


def replay(logfile: Path = typer.Argument(..., help="A file written from `bisectk log`, or by `git bisect log`.", show_default=False),
           repo: Optional[Path] = typer.Option(None, "--repo", help="Repository (default: the one named in the log; for "
                                                                   "a git bisect log, the current directory)."),
           html: Optional[Path] = HtmlOpt, as_json: bool = JsonOpt) -> None:
    """Rebuild a bisection's answer from a log, running nothing; says which commit to test next if
    the log stops early. Exit 0: the log determines the first bad commit; 1: it does not yet."""
    from bisectk.engine.replay import replay_record
    from bisectk.report import render
    check_outputs(html=html, also=[(logfile, "the log to replay")], as_json=as_json)
    rec = replay_record(logfile, repo)
    written = write_reports(rec, None, None, html) if html else []
    if as_json:
        emit_json(render.document(rec))
    else:
        for line in written:
            out.print(line, markup=False)
        render.summary(out, rec)
    raise typer.Exit(X.exit_code(rec))


def register(app: typer.Typer) -> None:
    """The commands of this module, added to `app` (cli.py: in the order of --help)."""
    app.command(short_help="Print the last bisection as a replayable record.")(log)
    app.command(short_help="Rebuild a bisection's answer from a log, running nothing.")(replay)
