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

from typing import Any

from rich.console import Console
from rich.markup import escape

from bisectk.events import Event, Note, PhaseStarted, RunFinished, RunStarted
from bisectk.outcome import Outcome, Run

STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.UNRESOLVED: "yellow"}


def fmt_config(config: dict[str, Any], reference: dict[str, Any] | None = None, limit: int = 6) -> str:
    items = [(k, v) for k, v in config.items() if reference is None or reference.get(k) != v]
    if not items:
        return "(as good)" if reference is not None else "(no factors)"
    text = " ".join(f"{k}={v}" for k, v in items[:limit])
    return text + (f" +{len(items) - limit} more" if len(items) > limit else "")


def run_label(run: Run) -> str:
    if run.outcome is Outcome.PASS:
        return "PASS"
    tag = run.kind.value if run.kind else (run.reason.value if run.reason else "")
    return f"{run.outcome.value.upper()} {tag}".strip() + (f" ({run.signature})" if run.signature else "")


class TerminalReporter:
    def __init__(self, console: Console | None = None, reference: dict[str, Any] | None = None):
        self.console = console or Console(stderr=True)
        self.reference = reference
        self.status = None

    def __call__(self, event: Event) -> None:
        match event:
            case PhaseStarted(name=name, detail=detail):
                self._stop()
                self.console.print(f"[bold]== {escape(name)}[/] {escape(detail)}")
            case RunStarted(label=label, config=config, index=index, timeout=timeout):
                self._stop()
                what = f"{label} {fmt_config(config, self.reference)}".strip()
                limit = f", watchdog {timeout:.1f} s" if timeout else ""
                self.status = self.console.status(f"running {escape(what)} (run {index + 1}{limit})")
                self.status.start()
            case RunFinished(label=label, config=config, run=run, cached=cached):
                self._stop()
                what = f"{label} {fmt_config(config, self.reference)}".strip()
                src = "ledger" if cached else f"{run.duration_s:6.2f} s"
                self.console.print(f"  [{STYLE[run.outcome]}]{escape(run_label(run))}[/]  {escape(what)}  [dim]{src}[/]")
            case Note(text=text):
                self._stop()
                self.console.print(escape(text))

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        self._stop()
