"""The terminal UI: a subscriber that turns events into rich output on stderr.

Abstractions
------------
TerminalReporter -- prints one line per finished run (label, the factors that differ from the
                    good side, verdict, time) and shows a live status line with elapsed time and
                    the watchdog limit while a run is in flight. For a terminal.
ProgressLines    -- the same progress as plain lines for a log or a pipe (CI): one line per
                    finished run (verdict, label and what differs, time or "from the ledger"),
                    phases and notes, and a line before any run whose watchdog allows a long
                    wait, so a silent minute is never a mystery. Flushed line by line.
                    Both say a build step still running after a few seconds, against its
                    limit: a hung build was minutes of silence.
fmt_config       -- a configuration written as the differences from a reference one.
shown_value      -- a factor's value on the terminal: cut past VALUE_CHARS, saying how long it was.
building         -- the line for a build step still running.

Both write to stderr only: stdout holds the result (and only the JSON document with --json).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from bisectk.events import BuildRunning, Event, Note, PhaseStarted, RunFinished, RunStarted
from bisectk.outcome import Outcome, Run
from bisectk.names import counted
from bisectk.specvalues import one_line, same_value
from bisectk.report.safe import SafeConsole, disk_full, terminal_text

STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.UNRESOLVED: "yellow"}


# A factor's value longer than this is cut on the terminal (the debug log and --json keep it whole):
# a value of 20,000 characters (a list of flags, an inlined source) made the key-differences table
# 1,400 lines, which scrolled the culprit away, and the differences line and each progress line 20 kB
VALUE_CHARS = 120


def cut_value(text: str) -> str:
    """`text` (a value as one_line writes it) cut past VALUE_CHARS, with how long it was."""
    return text if len(text) <= VALUE_CHARS else f"{text[:VALUE_CHARS - 1]}… ({len(text):,} characters)"


def shown_value(value: Any) -> str:
    """A factor's value on the terminal: as substituted (one_line), cut past VALUE_CHARS."""
    return cut_value(one_line(value))


def fmt_config(config: dict[str, Any], reference: dict[str, Any] | None = None, limit: int = 6) -> str:
    items = [(k, v) for k, v in config.items()
             if not k.startswith("__") and (reference is None or k not in reference or not same_value(reference[k], v))]
    if not items:
        return "(as good)" if reference is not None else ""
    text = " ".join(f"{k}={shown_value(v)}" for k, v in items[:limit])   # as substituted: true, not True
    return text + (f" +{len(items) - limit} more" if len(items) > limit else "")


TABLE_ROWS = 50     # a key-differences table on the terminal lists this many factors; past it, it counts the rest


def print_table(out: Console, table, header: list[str], rows: list[list[str]]) -> None:
    """`table` (holding `rows` under `header`), or, on a terminal too narrow for it, its rows as
    lines (`name: header value, ...`): below about 6 characters a column (3 of text, its border
    and padding) rich gives some columns no width at all, and their cells are lost (COLUMNS=20:
    the key differences' factor names and values)."""
    if out.width >= 6 * len(header) + 1:
        out.print(table)
        return
    out.print(table.title, markup=False)
    for row in rows:
        cells = ", ".join(f"{h} {c}" for h, c in zip(header[1:], row[1:]) if c)
        out.print(f"{row[0]}: {cells}" if cells else row[0], markup=False)


def differences_line(name: str, good: dict[str, Any], bad: dict[str, Any], factors: list[str],
                     limit: int = 12) -> str:
    """An ablation's first line: how many differences, the first `limit` of them (a spec of 30,000
    factors made it one 400 kB line)."""
    shown = ", ".join(f"{f} {shown_value(good[f])} -> {shown_value(bad[f])}" for f in factors[:limit])
    more = f", +{len(factors) - limit} more" if len(factors) > limit else ""
    return f"{name}: {counted(len(factors), 'difference')} between good and bad: {shown}{more}"


def run_label(run: Run) -> str:
    """A run's verdict on one line: its signature may hold a subject's newline (a metric named
    "a\\nb"), which would split the one line a finished run is given."""
    if run.outcome is Outcome.PASS:
        return "PASS"
    tag = run.kind.value if run.kind else (run.reason.value if run.reason else "")
    said = " ".join(run.signature.splitlines()) if run.signature else ""
    return f"{run.outcome.value.upper()} {tag}".strip() + (f" ({said})" if said else "")


def what_ran(label: str, config: dict[str, Any], reference: dict[str, Any] | None) -> str:
    """A run in words: its label, and for a hybrid the factors it changes (an endpoint is named)."""
    detail = fmt_config(config, reference)
    if label in ("good", "bad") or (label and detail == "(as good)"):
        return label
    return " ".join(x for x in (label, detail) if x) or "run"


def watchdog_words(timeout: float | None, follows_progress: bool) -> str:
    """The watchdog of a starting run: its limit, or that it follows the run's progress (then the
    number is only the rule for a subject that prints nothing, and would read as a limit the
    run is seen to pass)."""
    if follows_progress:
        return "watchdog follows progress"
    return f"watchdog {limit_seconds(timeout)} s" if timeout else ""


def limit_seconds(seconds: float) -> str:
    """A limit in seconds as run times are shown: to hundredths, a whole number kept whole, never
    in exponent form (a calibrated limit such as 1.21282 s read as noise)."""
    return f"{seconds:.2f}".rstrip("0").rstrip(".")


def building(what: str, index: int, seconds: float, limit: float) -> str:
    """A build step still running: for how long, against its limit and how to set that."""
    return (f"  ... still building for {what} (run {index + 1}): {seconds:.0f} s so far; the build's limit is "
            f"{limit:g} s (--build-timeout, or the spec's `build_timeout`)")


class _Running:
    """The live status line: re-rendered by rich on every refresh, so the elapsed time ticks. One
    line whatever the width: the time and the watchdog first, then what runs, cut with an
    ellipsis where the terminal ends."""

    def __init__(self, what: str, index: int, timeout: float | None, follows_progress: bool = False):
        self.what, self.index = what, index
        self.watchdog = watchdog_words(timeout, follows_progress)
        self.start = time.monotonic()

    def __rich__(self) -> Text:
        watchdog = f" ({self.watchdog})" if self.watchdog else ""
        return Text(f"{time.monotonic() - self.start:.1f} s{watchdog}: running {self.what} (run {self.index + 1})",
                    no_wrap=True, overflow="ellipsis")


def _styled(*parts: str | tuple[str, str]) -> Text:
    """A line of text and (text, style) parts, as rich Text: the text is never read as markup or
    emoji codes (a subject's `[/]` or `:bug:` shows as it is), and its control characters are
    escaped part by part, so the styles stay where they were."""
    return Text.assemble(*(terminal_text(p) if isinstance(p, str) else (terminal_text(p[0]), p[1]) for p in parts))


class TerminalReporter:
    def __init__(self, console: Console | None = None, reference: dict[str, Any] | None = None):
        self.console = console or SafeConsole(stderr=True)
        self.reference = reference
        self.status = None
        self.lock = threading.Lock()  # parallel bisection reports from several threads

    def __call__(self, event: Event) -> None:
        with self.lock:
            self._handle(event)

    def _handle(self, event: Event) -> None:
        match event:
            case PhaseStarted(name=name, detail=detail):
                self._stop()
                self.console.print(_styled((f"== {name}", "bold"), f" {detail}"), highlight=False)
            case RunStarted(label=label, config=config, index=index, timeout=timeout,
                            follows_progress=moving):
                self._stop()
                what = what_ran(label, config, self.reference)
                self.status = self.console.status(_Running(what, index, timeout, moving))
                self.status.start()
            case RunFinished(label=label, config=config, run=run, cached=cached):
                self._stop()
                what = what_ran(label, config, self.reference)
                src = "ledger" if cached else f"{run.duration_s:6.2f} s"
                self.console.print(_styled("  ", (run_label(run), STYLE[run.outcome]), f"  {what}  ", (src, "dim")),
                                   highlight=False)
            case BuildRunning(label=label, config=config, index=index, seconds=seconds, limit=limit):
                # above the live status line, which goes on ticking
                self.console.print(_styled(building(what_ran(label, config, self.reference), index, seconds, limit)),
                                   highlight=False)
            case Note(text=text):
                self._stop()
                self.console.print(_styled(text), highlight=False)

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        self._stop()


class ProgressLines:
    """Plain progress lines (see the module docstring). `long_wait`: a run whose watchdog allows
    at least this many seconds is announced before it starts."""

    def __init__(self, stream: TextIO | None = None, reference: dict[str, Any] | None = None,
                 long_wait: float = 10.0):
        self.stream = stream or sys.stderr
        self.reference = reference
        self.long_wait = long_wait
        self.lock = threading.Lock()

    def _say(self, text: str) -> None:
        with self.lock:
            if self.stream is None:
                return
            try:
                self.stream.write(terminal_text(text) + "\n")
                self.stream.flush()
            except OSError as exc:
                # a log file on a full disk (`2>ci.log`): the progress stops there, the search and
                # its result go on (it ended the command, the result and the report files lost)
                if not disk_full(exc):
                    raise
                self.stream = None

    def _what(self, label: str, config: dict[str, Any]) -> str:
        return what_ran(label, config, self.reference)

    def __call__(self, event: Event) -> None:
        match event:
            case PhaseStarted(name=name, detail=detail):
                self._say(f"== {name} {detail}".rstrip())
            case RunStarted(label=label, config=config, index=index, timeout=timeout,
                            follows_progress=moving):
                if timeout and timeout >= self.long_wait:
                    self._say(f"  ... running {self._what(label, config)} (run {index + 1}); "
                              f"{watchdog_words(timeout, moving)}")
            case RunFinished(label=label, config=config, run=run, cached=cached):
                src = "from the ledger" if cached else f"{run.duration_s:.2f} s"
                self._say(f"  {run_label(run)}  {self._what(label, config)}  ({src})")
            case BuildRunning(label=label, config=config, index=index, seconds=seconds, limit=limit):
                self._say(building(self._what(label, config), index, seconds, limit))
            case Note(text=text):
                self._say(text)
