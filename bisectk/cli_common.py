"""What every command of the CLI shares: the option definitions, the output (stdout for results,
one `bisectk: ...` line on stderr for errors), and the porcelain a command ends with.

Abstractions
------------
Options      -- the typer options shared by several commands (one definition each: `--same-failure`'s
                default is outcome.DEFAULT_SAME_FAILURE, its validation is RunPolicy's).
fail         -- one line on stderr and an exit code (bad input the CLI sees before an engine does).
policy       -- the RunPolicy of a command: the one validator of every run setting.
finish       -- a result record stored, its report files written, its JSON or terminal view printed
                (report/render.py), and its exit code (exitcodes.exit_code): the end of every command
                that searches.
plain_help   -- plain value names in help (`--ledger FILE.db`), and click's usage errors as one line.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from bisectk import exitcodes as X
from bisectk.outcome import DEFAULT_SAME_FAILURE
from bisectk.report.safe import disk_full, json_text, terminal_text
from bisectk.search.names import strategy_names


class _Terminal:
    """bisectk's console on stdout (a SafeConsole: repository and subject text escaped, see
    report/safe.py), made at its first use: a command that prints nothing there (--json) never
    loads rich."""

    def __init__(self, **options):
        self._options, self._console = options, None

    @property
    def unwritten(self) -> str | None:
        """Why the console dropped its output (stdout on a full disk), asked without making one."""
        return self._console.unwritten if self._console is not None else None

    def __getattr__(self, name: str):
        if self._console is None:
            from bisectk.report.safe import SafeConsole
            self._console = SafeConsole(**self._options)
        return getattr(self._console, name)


# markup off: what stdout shows is text from outside (factor values, spec names, environment
# values, file names) that rich would otherwise read as markup, where `[bf16]` vanishes from a
# table and `[/bold]` is a MarkupError; nothing printed here is styled by markup
out = _Terminal(highlight=False, soft_wrap=True, markup=False)


# --timeout's least value: timeouts.MIN_TIMEOUT_S, the spec's `timeout`'s bound too, written here
# rather than imported: the start loads no module it does not need (tests/core/test_cli.py holds
# the two equal)
MIN_TIMEOUT_S = 0.01

SpecArg = typer.Argument(..., help="Variant spec (TOML).", show_default=False)
LedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: .bisectk/ledger.db beside the spec).")
JsonOpt = typer.Option(False, "--json", help="Print the result as one JSON document on stdout (progress on stderr only when it is a terminal).")
RunOpt = typer.Option(None, "--run", help="Subject command instead of a SPEC, as one quoted string (git bisect run's "
                                          "exit codes: 0 good, 125 skip, 1-127 bad; a signal or 128-255, where git "
                                          "aborts, a crash).")
BuildOpt = typer.Option(None, "--build", help="Build command run before the subject, as one quoted string; "
                                              "failure = UNRESOLVED(BUILD).")
BuildTimeoutOpt = typer.Option(None, "--build-timeout", help="The build step's time limit in seconds (default: the "
                               "spec's `build_timeout`, else 240); a build that runs longer is UNRESOLVED(BUILD).")
ConfigOpt = typer.Option("bad", "--config", help="With a SPEC: which endpoint's factor values to run (good or bad).")
SetOpt = typer.Option(None, "--set", help="With a SPEC: override a factor, NAME=VALUE (repeatable).")
CleanIgnoredOpt = typer.Option(False, "--clean-ignored", help="Before each run, remove the files git ignores too "
                               "(git clean -x): what one commit's run or build left in ignored paths never reaches "
                               "another's (each --build starts from scratch).")
TimeoutOpt = typer.Option(None, "--timeout", min=MIN_TIMEOUT_S, help="Watchdog seconds, fixed for every run (default: the spec's "
                                                              "`timeout`, else calibrated from the good endpoint).")
ReportOpt = typer.Option(None, "--report", help="Write the Markdown debug log here (its pictures beside it).")
HtmlOpt = typer.Option(None, "--html", help="Write one self-contained HTML report with pictures here.")


def _session_id(value: Optional[int]) -> Optional[int]:
    """--session: a ledger row's id, an SQLite INTEGER from 1 (0 was read as no --session, the last
    session shown in its place; past 2**63 - 1 the lookup raised OverflowError, an internal error)."""
    if value is not None and not 1 <= value < 2**63:
        raise typer.BadParameter(f"{value} is no session id (ids count from 1)")
    return value


SESSION_IDS = dict(callback=_session_id)
JsonOutOpt = typer.Option(None, "--json-out", help="Write the JSON result here.")


def a_directory(path: Optional[Path]) -> Optional[Path]:
    if path is not None and path.is_file():     # not taken for the repository holding it
        raise typer.BadParameter(f"{path} is a file: give the repository's directory")
    return path


RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (its checkout is never touched).",
                       callback=a_directory)
GoodRefOpt = typer.Option(..., "--good", help="A commit where the subject works.")
BadRefOpt = typer.Option("HEAD", "--bad", help="A later commit where it fails (default HEAD, as `git bisect bad`).")
PytestOpt = typer.Option(None, "--pytest", help="Use a pytest node id as the oracle (0 pass, 1 fail, 2-5 unresolved, and so is a run whose tests were all skipped or xfailed); pytest's options may follow it, as one argument: --pytest \"tests/k.py -k 'tile and not slow'\".")
GitLedgerOpt = typer.Option(None, "--ledger", help="Ledger database (default: <git dir>/bisectk/ledger.db).")
SameFailureOpt = typer.Option(DEFAULT_SAME_FAILURE, "--same-failure",
                              help="When is a failure the one hunted: 'check' (kind plus what failed: the signal or "
                                   "CUDA error, the violated accuracy checks; values never matter), 'kind' (hang, "
                                   "crash, wrong, slow), or 'signature' (the error text with numbers blanked).")
CalibrateOpt = typer.Option(10, "--calibrate-runs", min=1, help="Cap on endpoint re-runs: a bad endpoint that passes is "
                                                                "re-run up to this many times, and an intermittent one "
                                                                "is measured over this many runs.")
WarmOpt = typer.Option(False, "--warm", help="Run Python subjects in warm worker processes (imports paid once; each run "
                                              "loads the tree's own modules fresh), with hot spares (four per GPU slot, five once a "
                                              "hang or crash has killed a worker) to replace it.")
SnapshotsOpt = typer.Option(2, "--snapshots", min=0, help="Hangs to read before the kill beyond the bad endpoint's "
                                                          "first and the culprit's (where each thread and warp waits: "
                                                          "py-spy, gdb, cuda-gdb); 0: none.")
# `run` has no search and no culprit: the first hang of its runs, then this many more
RunSnapshotsOpt = typer.Option(2, "--snapshots", min=0, help="Hangs to read before the kill (where each thread and warp "
                                                             "waits: py-spy, gdb, cuda-gdb): the first of the runs, then "
                                                             "this many more of --repeat's; 0: none.")
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
    base = os.environ.get("XDG_CACHE_HOME", "")
    return f"{base}/bisectk/ledger.db" if os.path.isabs(base) else "~/.cache/bisectk/ledger.db"


def say_error(message: str) -> None:
    """One line on stderr, unwrapped whatever the terminal width."""
    _to_stderr(f"bisectk: {terminal_text(' '.join(str(message).split()))}\n")


def say_warning(message: str) -> None:
    """`bisectk: warning: ...` on stderr, one line, as the subject's own text is made safe; kept
    (raw) for the command's result record too (said_warnings), so --json and the reports hold
    what stderr said."""
    _to_stderr(f"bisectk: warning: {terminal_text(message)}\n")
    said_warnings().append(message)


def said_warnings() -> list[str]:
    """The warnings said (say_warning) since the command began, in order (`main`, the app's
    callback, forgets those of an earlier command run in the same process: a test's)."""
    return _SAID


_SAID: list[str] = []


def with_warnings(record):
    """`record` with the warnings said while the command ran added to its own `warnings` (a record
    with that field: ablate, diff, bisect, triage, check), each once, the record's first."""
    import dataclasses
    if not any(f.name == "warnings" for f in dataclasses.fields(record)):
        return record
    kept = list(record.warnings)
    kept += [w for w in said_warnings() if w not in kept]
    return dataclasses.replace(record, warnings=tuple(kept)) if len(kept) != len(record.warnings) else record


def say_unwritten(why: str) -> None:
    """That stdout could not take the output (a full disk), once."""
    say_error(f"could not write the output to stdout: {why}")
    out.said_unwritten = True


def unwritten_says(code):
    """A command whose stdout console dropped output (a full disk, report/safe.py) and that did
    not say so itself (finish does) says it here, and does not exit 0: `ledger check L > f` on a
    full disk printed nothing and said all was well."""
    if out.unwritten and not getattr(out, "said_unwritten", False):
        say_unwritten(out.unwritten)
        return code if code not in (None, 0) else X.USAGE
    return code


def _to_stderr(line: str) -> None:
    """A line on stderr, dropped where stderr is a file on a full disk (the exit code still says it)."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except OSError as exc:
        if not disk_full(exc):
            raise


def timed_policy(pol, spec, warnings: list[str] | None = None):
    """`pol` for a spec whose failure may be SLOW (RunPolicy.timed: its runs one at a time where
    side by side they would time each other), and the warning that says so when it changed (added
    to `warnings` too, where given: the record keeps it)."""
    pol, said = pol.timed(spec)
    if said:
        say_warning(said)
        if warnings is not None:
            warnings.append(said)
    return pol


def fail(message: str, code: int = X.USAGE) -> None:
    say_error(message)
    raise typer.Exit(code)


def resume_or_fresh(resume: bool, fresh: bool) -> None:
    """--resume reuses the ledger's runs, --fresh ignores them: given together, one is refused
    rather than dropped without a word."""
    if resume and fresh:
        fail("--resume and --fresh contradict each other: --resume reuses the ledger's runs, "
             "--fresh runs everything again; give one")


def spec_warnings(spec, timeout: float | None = None) -> list[str]:
    """A warning per factor that reaches no placeholder, or whose two values reach the subject as
    the same text, and per setting nothing uses (Spec.ignored_settings; `timeout`: --timeout's)
    (printed on stderr; `check` repeats it)."""
    from bisectk.specvalues import format_value, render     # loaded already: the spec was
    lines = [f"factor {f!r} is used by no placeholder of [subject] command, build or env: its values never "
             f"reach the subject{_near(spec, f)} ({spec.path})" for f in spec.unused_factors()]
    lines += [f"factor {f!r} is {format_value(spec.good[f])} ({type(spec.good[f]).__name__}) in [good] and "
              f"{format_value(spec.bad[f])} ({type(spec.bad[f]).__name__}) in [bad]: both reach the subject as "
              f"{render(spec.good[f])!r}, so it is no difference ({spec.path})" for f in spec.written_alike()]
    lines += spec.ignored_settings(timeout)
    for line in lines:
        say_warning(line)
    return lines


def _near(spec, factor: str) -> str:
    """What the spec wrote where it meant {factor}, which reaches the subject as typed."""
    near = spec.near_placeholders(factor)
    if not near:
        return ""
    said = ", ".join(repr(n) for n in near) + (" is no placeholder" if len(near) == 1 else " are no placeholders")
    return f"; {said}, passed on as typed (a placeholder is {{{factor}}}: the name alone, no spaces or format)"


def logs_gone(data, ledger) -> None:
    """In a JSON document (in place): each run whose log is gone (pruned by the cap on run logs,
    run/logcap.py, or removed) has no `log_path`, and `log_gone` says what became of it."""
    from bisectk.report.words import log_gone_words
    from bisectk.run.logcap import gone
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            path = item.get("log_path")
            if isinstance(path, str) and (why := gone(ledger, path)):
                item["log_path"], item["log_gone"] = None, log_gone_words(why, path)
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))


def emit_json(data: dict) -> None:
    sys.stdout.write(json_text(data, indent=2, default=str) + "\n")
    sys.stdout.flush()      # a write that fails (a full disk) fails here, not unseen at the exit


class Deferred:
    """A call made when asked (`start`), at the latest when its result is wanted (a call of the
    object), on `pool` or else on a thread of its own: background work the first run must not
    wait for (issue 27: on two cores the environment capture's Python took the GIL from the path
    to the first run)."""

    def __init__(self, pool, fn):
        self.pool, self.fn, self.future = pool, fn, None
        self._lock = threading.Lock()

    def start(self) -> Deferred:
        with self._lock:            # started from whichever thread ends a run first
            if self.future is None:
                if self.pool is not None:
                    self.future = self.pool.submit(self.fn)
                else:
                    from concurrent.futures import Future
                    self.future = Future()
                    threading.Thread(target=self._run, name="bisectk-deferred", daemon=True).start()
        return self

    def _run(self) -> None:
        try:
            self.future.set_result(self.fn())
        except BaseException as exc:        # raised again to whoever asks for the result
            self.future.set_exception(exc)

    def __call__(self):
        return self.start().future.result()

    def settle(self) -> None:
        """Wait for a call that was started (its probes end before the command does)."""
        if self.future is not None:
            self.future.exception()


def after_first_run(events, *work: Deferred) -> None:
    """Start `work` once the first run has ended (or was read from the ledger): beside the runs
    after it, never on the path to the first launch."""
    from bisectk.events import RunFinished
    events.subscribe(lambda e: isinstance(e, RunFinished) and [w.start() for w in work])


def capture_after_first_run(session) -> Deferred:
    """The environment capture of a session's record, begun once its first run has ended, on a
    thread of its own, and waited for before the session closes (its probes end with the command)."""
    capture = Deferred(None, environment_capture)
    after_first_run(session.events, capture)
    session.closers.append(capture.settle)
    return capture


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


def spare_ahead(executor: str = "local", warm: bool = False) -> None:
    """Start a spare supervisor (run/spares.py) now, while Python loads the engine, for the first
    run (later runs keep their own ahead). Local runs only: warm and Ray runs start no supervisor
    of their own per run."""
    if executor == "local" and not warm:
        from bisectk.run.spares import SPARES
        SPARES.refill(0)


def policy(**kw):
    """The run policy: RunPolicy is the one validator (a setting that cannot hold is its one line)."""
    from bisectk.engine.policy import RunPolicy
    return RunPolicy(**kw)


def check_strategy(strategy: str | None, exhaustive: bool = False) -> str:
    """The strategy named (None: not given, adaptive): --exhaustive is --strategy exhaustive, and a
    --strategy beside it that names another is refused, not dropped without a word."""
    if exhaustive:
        if strategy not in (None, "exhaustive"):
            fail(f"--exhaustive and --strategy {strategy} contradict each other: --exhaustive is --strategy "
                 f"exhaustive; give one")
        strategy = "exhaustive"
    strategy = strategy or "adaptive"
    if strategy not in strategy_names():
        fail(f"--strategy {strategy!r}: choose one of {', '.join(strategy_names())}")
    return strategy


def write_reports(record, log, markdown: Optional[Path], html: Optional[Path]) -> list[str]:
    """The Markdown debug log (pictures beside it) and the HTML report; a line for each. Their
    directories are made, as finish() makes them; a file that cannot be written is one line, exit 2."""
    if not (markdown or html):
        return []
    from bisectk.report.html import write_html, write_markdown
    from bisectk.report.outputs import write_outputs
    written: list[str] = []
    writers = ([("--report", markdown, lambda: written.append(write_markdown(markdown, record, log)))] if markdown else []) \
        + ([("--html", html, lambda: written.append(write_html(html, record, log)))] if html else [])
    failed = write_outputs(writers)
    if failed:
        fail("; ".join(failed))
    return written


def check_outputs(report: Optional[Path] = None, json_out: Optional[Path] = None, html: Optional[Path] = None,
                  junit: Optional[Path] = None, *, spec=None, ledger: Optional[Path] = None, trees=(),
                  also=(), as_json: bool = False, name: str = "") -> None:
    """Refuse, before any run, a report path that cannot be written or that names what the command
    reads: the spec, the ledger, the files the subject's command names, diff's trees
    (report/outputs.py); `also`: more (path, what) the command reads. With --json, a path that is
    stdout (/dev/stdout) too: the file would follow the JSON document there. Those accepted are
    kept for interrupted_early (`name`: the subject, as a --junit names it)."""
    from bisectk.report.outputs import argv_files, check_outputs as check, ledger_files
    outputs = {"--report": report, "--json-out": json_out, "--html": html, "--junit": junit}
    _checked.clear()
    if as_json or any(outputs.values()):
        _checked.update(report=report, json_out=json_out, html=html, junit=junit, as_json=as_json,
                        name=name or str(getattr(spec, "name", "") or ""))
    if not any(outputs.values()):
        return
    inputs = [(p, "the ledger") for p in (ledger_files(ledger) if ledger else [])] + list(also)
    if spec is not None:
        if spec.path.is_file():
            inputs.append((spec.path, "the spec"))
        argv = [*_script_words(spec.command), *_script_words(spec.build or [])]
        inputs += [(p, "a file the subject's command names") for p in argv_files(argv, spec.cwd, Path.cwd())]
    try:
        check(outputs, inputs=inputs, trees=trees, stdout_taken="--json" if as_json else "")
    except BaseException:
        _checked.clear()
        raise


def check_outputs_early(report: Optional[Path], json_out: Optional[Path], html: Optional[Path],
                        junit: Optional[Path] = None, *, spec: Optional[Path], commands=(), pytest: Optional[str] = None, dirs=(),
                        ledger: Optional[Path], repo: Path, as_json: bool = False, name: str = "") -> None:
    """check_outputs for bisect and triage before git lists the history (their paths do not depend
    on it): a CI job's timeout while a big history was listed, or the spec loaded, left no
    document at all. What is known this early is checked: the SPEC's file and the files its
    command names (a SPEC that does not load writes nothing early), the ledger, the files the
    words of --run and --build (`commands`) name in `dirs`, and --pytest's file as typed (it is
    split once it is read against the tree); the full check, once the subject is loaded, follows.
    `ledger`: --ledger, else `repo`'s."""
    import shlex
    from bisectk.report.outputs import argv_files
    from bisectk.spaces.commits import repo_ledger
    also, loaded = [], None
    if spec is not None and spec.is_file():
        from bisectk.spec import load_spec
        try:    # the files its command names are the user's too (a TOML read: milliseconds)
            loaded = load_spec(spec)
        except Exception:   # said when the command loads it; until then, the file alone
            also = [(spec, "the spec")]
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:      # an unbalanced quote: the loading of the subject says so
            words = command.split()
        also += [(p, "a file the subject's command names") for p in argv_files(_script_words(words), *dirs)]
    if pytest:
        also += [(p, "the file --pytest names") for p in argv_files([pytest, pytest.split("::", 1)[0]], *dirs)]
    check_outputs(report, json_out, html, junit, spec=loaded, ledger=ledger if ledger is not None else repo_ledger(repo),
                  also=also, as_json=as_json, name=name)
    if spec is not None and loaded is None:
        _checked.clear()    # what its command names is unknown: an early interrupt writes nothing


def _script_words(argv: list[str]) -> list[str]:
    """`argv`'s words and those of the script it runs (`bash -c 'sh s.sh 1'`: s.sh), where a
    report written over what the script names destroyed the user's file just as well."""
    import shlex
    from bisectk.spaces.shellwords import shell_script_index
    script = shell_script_index(argv)
    try:
        return [*argv, *(shlex.split(argv[script]) if script is not None else ())]
    except ValueError:      # an unbalanced quote: the script as one word
        return list(argv)


def finish(record, *, report: Optional[Path] = None, json_out: Optional[Path] = None, as_json: bool = False,
           session=None, html: Optional[Path] = None, where: str = "(bisectk report --report)",
           more=()) -> None:
    """Store the record with its session, print its JSON or its terminal view (report/render.py),
    then write the report files (`more`: other (option, path, writer) to write with them), and exit
    with its code (exitcodes.exit_code). A report that cannot be written, or a record the ledger
    cannot keep (a full disk), is a line after the result, and exit 2 where the result would say
    0. `where`: where triage says its debug log is."""
    from bisectk.engine.interrupts import late
    from bisectk.report import render
    from bisectk.report.outputs import write_outputs
    from bisectk.errors import LedgerError
    _checked.clear()        # a result: an interrupt from here on never writes "interrupted" over it
    if session is not None:
        try:    # said before the result, which lists them with the others (they were said after it, at close)
            for line in session.install_warnings():
                say_warning(line)
        except Exception:   # a look at site-packages must not cost the result
            pass
    record = with_warnings(record)
    unstored = None         # the ledger could not keep the record (a full disk): the answer is still given
    if session is not None:
        try:
            session.record(render.stored(record))
        except LedgerError as exc:
            unstored = str(exc)
    document = render.document(record) if (as_json or json_out) else None
    if document is not None and session is not None:
        logs_gone(document, session.ledger)
    closed = None           # stdout's reader left (`| head`): the report files are still written
    unprinted = None        # stdout is a file on a full disk: so are they, and the failure is said
    try:
        if as_json:
            emit_json(document)
        else:
            render.summary(out, record, report=where)
    except SystemExit as exc:
        if exc.code != X.OUTPUT_CLOSED:
            raise
        closed = exc
    except OSError as exc:  # it was an internal error (exit 3) that lost the report files too
        if not disk_full(exc):
            raise
        unprinted = exc.strerror or str(exc)
    unprinted = unprinted or out.unwritten     # the console drops what it cannot write (report/safe.py)
    if unprinted:
        unprinted = f"could not write the result to stdout: {unprinted}"
        out.said_unwritten = True
    written: list[str] = []
    writers = list(more)
    if report or html:
        from bisectk.report.html import write_html, write_markdown
        log = render.debuglog(record)
        if report:
            writers.append(("--report", report, lambda: written.append(write_markdown(report, record, log))))
        if html:
            writers.append(("--html", html, lambda: written.append(write_html(html, record, log))))
    if json_out:
        writers.append(("--json-out", json_out, lambda: json_out.write_text(
            json_text(document, indent=2, default=str) + "\n", encoding="utf-8")))
    failed = write_outputs(writers) + ([unprinted] if unprinted else [])
    if closed is not None:
        raise closed
    if not as_json and not unprinted:
        for line in written:
            out.print(line, markup=False)
    for line in failed:
        say_error(line)
    if unstored:
        failed.append(unstored)
        say_error(f"{unstored} (the result above is complete; `bisectk report` will not find it, and the runs "
                  "are in the ledger)")
    interrupted_late = late()   # Ctrl-C after the last run, while the result was written (engine/interrupts.py)
    code = X.exit_code(record, interrupted_late=interrupted_late)
    if failed and code == X.OK:
        code = X.USAGE
    if interrupted_late and X.exit_code(record) == X.OK:
        say_error("interrupted after the search had finished; the result printed is complete")
    raise typer.Exit(code)


# ablate's and diff's words for an interrupt before any result (`interrupted`)
BEFORE_ENDPOINTS = "interrupted before the endpoints were verified; nothing to report (runs so far are in the ledger)"


def interrupted(command: str, message: str, *, json_out: Optional[Path] = None, more=(), session=None,
                verdict: str = "", as_json: bool = False, report: Optional[Path] = None,
                html: Optional[Path] = None) -> None:
    """Exit INTERRUPTED (130) with `message`, an interrupt having come before the command had any
    result; the documents asked for written first, saying so (write_interrupted)."""
    write_interrupted(command, message, json_out=json_out, more=more, session=session, verdict=verdict,
                      as_json=as_json, report=report, html=html)
    fail(message, X.INTERRUPTED)


def write_interrupted(command: str, message: str, *, json_out: Optional[Path] = None, more=(), session=None,
                      verdict: str = "", as_json: bool = False, report: Optional[Path] = None,
                      html: Optional[Path] = None) -> None:
    """The --json document, the --json-out one, the --report and --html (render.interrupted_log)
    and `more` (other (option, path, writer(message))), each saying `message`: a CI job's timeout
    must not leave its test report, or the page it publishes, missing."""
    from bisectk.engine.interrupts import hung_up
    from bisectk.report import render
    from bisectk.report.outputs import write_outputs
    _checked.clear()        # written here: cli.py's interrupted_early must not write them again
    writers = [(option, path, (lambda w=write: w(message))) for option, path, write in more]
    # the code the process exits with (cli.py: 129 after a hangup)
    sid = getattr(session, "id", None)
    doc = render.interrupted(command, message, X.HANGUP if hung_up() else X.INTERRUPTED, sid, verdict)
    if as_json:
        try:
            emit_json(doc)
        except OSError:     # stdout gone (a hangup): the files below are still written
            pass
    if json_out:
        writers.append(("--json-out", json_out, lambda: json_out.write_text(
            json_text(doc, indent=2, default=str) + "\n", encoding="utf-8")))
    if report or html:
        from bisectk.report.html import write_unrecorded
        log = render.interrupted_log(command, message, sid)
        writers += [(option, path, (lambda p=path, page=page: write_unrecorded(p, log, command, sid, page=page)))
                    for option, path, page in (("--report", report, False), ("--html", html, True)) if path]
    for line in write_outputs(writers):
        say_error(line)


# the outputs check_outputs accepted, for an interrupt that no command's own handler meets (before its
# session opens, as it sets up its runs): cli.py writes them (interrupted_early), as `interrupted` would
_checked: dict = {}
EARLY = "interrupted before any result; nothing to report"
SEARCHES = ("ablate", "diff", "bisect", "triage")    # the commands whose documents say an interrupt (README)


def interrupted_early(command: str | None) -> None:
    """After an interrupt that went past the command: the documents asked for, saying so, where
    check_outputs had accepted them (before that, a path may be the spec: nothing is written)."""
    if not _checked or command not in SEARCHES:
        return
    checked = dict(_checked)
    _checked.clear()                # once, whatever comes
    junit, name = checked.pop("junit"), checked.pop("name")
    more = []
    if junit:
        from bisectk.report.junit import write_junit
        from bisectk.report.triage import interrupted_cases
        more = [("--junit", junit, lambda why: write_junit(junit, f"bisectk {command}", interrupted_cases(name, why)))]
    verdict = ""
    if command == "triage":     # as its own handler says it (cli_triage)
        from bisectk.engine.triage import INCONCLUSIVE as verdict
    try:
        write_interrupted(command, EARLY, more=more, verdict=verdict, **checked)
    except Exception:   # the exit must still come: an early interrupt is no internal error
        pass


def default_spec() -> Path:
    """The embedded CPU default: a pipeline that deadlocks, among several benign differences
    (relative to the working directory when inside it, so printed commands read as typed)."""
    path = Path(__file__).resolve().parents[1] / "variants" / "cpu" / "pipeline-hang.toml"
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def history_subject(spec, run_cmd, pytest_id, build, root: Path, config, sets, timeout, repeat, build_timeout=None):
    """(Spec, configuration, the subject's cwd relative to the repository root) for bisect/triage:
    a spec's own directory; for --run/--pytest, the directory the command was typed in
    (spaces/checkout.py run_dir)."""
    from bisectk.engine.subject import load_subject
    from bisectk.spaces.checkout import run_dir
    if timeout is not None:
        policy(timeout=timeout)     # the one validator: NaN, inf and more than a week are refused here too
    s, cfg = load_subject(spec, run_cmd, pytest_id, build=build, cwd=root, config=config, sets=sets,
                          timeout=timeout, repeat=repeat, name="bisect", build_timeout=build_timeout)
    spec_warnings(s, timeout)
    try:
        sub = s.cwd.resolve().relative_to(root) if spec is not None else run_dir(Path.cwd(), root)
    except ValueError:
        sub = Path(".")  # a spec outside the repository: run from the worktree's root
    return s, cfg, sub


def open_ledger(path: Path, writable: bool = False):
    from bisectk.ledger import Ledger
    if not path.exists():
        fail(f"no ledger at {path}: nothing has been recorded there")
    db = Ledger(path, readonly=True)   # printing never writes (and works on a read-only ledger)
    if db.schema is None:              # an SQLite file with no table at all: a ledger not yet written
        db.close()
        fail(f"no ledger at {path}: an empty file, nothing has been recorded there")
    if writable:    # opened for writing only once it is a ledger: that opening makes one of an empty file
        db.close()
        db = Ledger(path)
    return db


# Value names shown in help ("--ledger FILE", "diff GOOD BAD [SPEC]"), set on the click command
# once instead of on every option; an option not named here gets one from its type.
METAVARS = {"--term-old": "TERM", "--term-new": "TERM", "--run": "'CMD'", "--build": "'CMD'", "--set": "NAME=VALUE", "--pytest": "NODEID", "--good": "REF",
            "--bad": "REF", "--repo": "PATH", "--gpus": "IDS", "--with": "FACTOR", "--strategy": "NAME",
            "--same-failure": "MODE", "--config": "good|bad", "--timeout": "SECONDS", "--build-timeout": "SECONDS", "--confidence": "P",
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
    name = str(getattr(getattr(param, "type", None), "name", "text")).lower()
    # click says "integer range", typer's own copy "int range"
    return "N" if name.startswith("int") else "X" if name.startswith("float") else "FILE" if name == "path" else "TEXT"


def _plain_argument(param) -> None:
    """An argument as usage lines write it (`GOOD`, `[SPEC]`, `[CAPTURE]...`), where typer would
    write `{GOOD}` and add its python type (`<list[Path]>`) to the help."""
    name = param.metavar or param.name.upper()
    if name.startswith("["):                            # written out in full by the command
        shown = name
    else:
        shown = (name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else "")
    if hasattr(param, "_usage_display_name"):           # typer 0.29
        param._usage_display_name = lambda: shown
    else:                                               # typer 0.26-0.28 (`{GOOD}` in the usage line)
        param.get_usage_pieces = lambda ctx: [shown]
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
