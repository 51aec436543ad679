"""Command-line wiring (typer). No logic lives here: each command parses its options into a
RunPolicy (the one validator), opens a Session, builds a space, calls an engine (bisectk/engine)
with the session's runner, and hands the result record to `finish` (bisectk/cli_common.py), which
stores it, prints it (report/render.py) and exits with its code (exitcodes.exit_code). The
options every command shares are bisectk/cli_common.py's. This module holds the typer app, the
entry point and the wiring; each command group is a module of its own, which `register`s its
commands here in the order of --help: cli_run (run, check), cli_ablate, cli_diff, cli_bisect
(and cli_history, what bisect and triage share), cli_triage, cli_replay (log, replay), and
cli_tools (report, ledger, ptx, env, demo: the commands that run no search)."""

from __future__ import annotations

import errno
import os
import sys

import typer

from bisectk import __version__, cli_ablate, cli_bisect, cli_diff, cli_replay, cli_run, cli_tools, cli_triage
from bisectk import exitcodes as X
from bisectk.cli_common import (_is, interrupted_early, out, plain_help, said_warnings, say_error, say_unwritten,
                                unwritten_says, usage_error)
from bisectk.errors import BisectkError

# -h as well as --help, on every command (click passes it down to the subcommands' contexts); help
# as wide as the terminal allows up to 120 columns (click's own cap is 80)
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings=CONTEXT,
                  help="Differential bisection for GPU kernels: isolate the change that makes a kernel "
                       "hang, crash, compute garbage or slow down.")

# the commands, in the order of --help: those that search, then those that run no search
cli_run.register(app)
cli_ablate.register(app)
cli_diff.register(app)
cli_bisect.register(app)
cli_triage.register(app)
cli_replay.register(app)
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
    cmd.invoke = _saying_interrupts(_leaving_quietly_on_a_closed_pipe(cmd.invoke), only)
    return cmd


def _saying_interrupts(invoke, name: str | None):
    """A Ctrl-C that no command caught (one during the endpoints' setup, or the command's own lazy
    imports) is said, as `entry` says one before the command starts: typer turns a
    KeyboardInterrupt out of the command into exit 130 without a word. The documents the command
    was asked for are written, saying so, where it had accepted their paths."""
    def saying(ctx):
        try:
            return invoke(ctx)
        except KeyboardInterrupt:
            interrupted_early(name)     # the documents asked for, saying so (cli_common)
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


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


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
        interrupted_early(first)
        say_error("interrupted")
        sys.exit(X.INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:         # click's word for a Ctrl-C it caught
        interrupted_early(first)
        say_error("interrupted")
        sys.exit(X.INTERRUPTED)
    except Exception as exc:
        if _is(exc, "Abort") or _interrupted(exc):
            interrupted_early(first)
            say_error("interrupted")
            sys.exit(X.INTERRUPTED)
        if _is(exc, "NoArgsIsHelpError"):
            exc.show()   # a bare `bisectk` (or `bisectk ledger`) asks for help: show it
            sys.exit(exc.exit_code)
        if _is(exc, "ClickException"):   # option parsing: one line, as for every bad input
            say_error(usage_error(exc) if _is(exc, "UsageError") else exc.format_message())
            sys.exit(X.USAGE)
        if isinstance(exc, FileNotFoundError) and not _cwd_exists():   # no bug: the shell's directory is gone
            say_error("the current directory no longer exists (removed while this shell was in it): cd to one that does")
            sys.exit(X.USAGE)
        if os.environ.get("BISECTK_DEBUG"):
            raise
        say_error(f"internal error: {type(exc).__name__}: {exc} (set BISECTK_DEBUG=1 for the traceback)")
        sys.exit(X.INTERNAL)
