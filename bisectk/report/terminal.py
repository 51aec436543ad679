"""The terminal UI: a subscriber that turns events into rich output on stderr.

Abstractions
------------
TerminalReporter -- prints one line per finished run (label, the factors that differ from the
                    good side, verdict, time) and shows a live status line with elapsed time and
                    the watchdog limit while a run is in flight. Silent unless enabled (the CLI
                    enables it only on a TTY and without --json), so machine output stays clean.
fmt_config       -- a configuration written as the differences from a reference one.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from bisectk.events import Event, Note, PhaseStarted, RunFinished, RunStarted
from bisectk.outcome import Outcome, Run

STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.UNRESOLVED: "yellow"}


def fmt_config(config: dict[str, Any], reference: dict[str, Any] | None = None, limit: int = 6) -> str:
    items = [(k, v) for k, v in config.items()
             if not k.startswith("__") and (reference is None or reference.get(k) != v)]
    if not items:
        return "(as good)" if reference is not None else "(no factors)"
    text = " ".join(f"{k}={v}" for k, v in items[:limit])
    return text + (f" +{len(items) - limit} more" if len(items) > limit else "")


def run_label(run: Run) -> str:
    if run.outcome is Outcome.PASS:
        return "PASS"
    tag = run.kind.value if run.kind else (run.reason.value if run.reason else "")
    return f"{run.outcome.value.upper()} {tag}".strip() + (f" ({run.signature})" if run.signature else "")


class _Running:
    """The live status line: re-rendered by rich on every refresh, so the elapsed time ticks."""

    def __init__(self, what: str, index: int, timeout: float | None):
        self.what, self.index, self.timeout = what, index, timeout
        self.start = time.monotonic()

    def __rich__(self) -> Text:
        limit = f" / watchdog {self.timeout:.1f} s" if self.timeout else ""
        return Text(f"running {self.what} (run {self.index + 1}): {time.monotonic() - self.start:.1f} s{limit}")


class TerminalReporter:
    def __init__(self, console: Console | None = None, reference: dict[str, Any] | None = None):
        self.console = console or Console(stderr=True)
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
                self.console.print(f"[bold]== {escape(name)}[/] {escape(detail)}", highlight=False)
            case RunStarted(label=label, config=config, index=index, timeout=timeout):
                self._stop()
                what = f"{label} {fmt_config(config, self.reference)}".strip()
                self.status = self.console.status(_Running(what, index, timeout))
                self.status.start()
            case RunFinished(label=label, config=config, run=run, cached=cached):
                self._stop()
                what = f"{label} {fmt_config(config, self.reference)}".strip()
                src = "ledger" if cached else f"{run.duration_s:6.2f} s"
                self.console.print(f"  [{STYLE[run.outcome]}]{escape(run_label(run))}[/]  {escape(what)}  [dim]{src}[/]", highlight=False)
            case Note(text=text):
                self._stop()
                self.console.print(escape(text), highlight=False)

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        self._stop()
