"""Progress events: the engine emits, the terminal UI / JSON writer / tests subscribe.

Abstractions
------------
Event subclasses -- plain records of what happened (a run started or finished, a phase began,
                    a note worth showing). They carry data, never formatting. A run's events
                    (RunEvent) name it alike: label, configuration, index.
EventBus         -- a list of subscribers; `emit` calls each. No subscriber means silence, which
                    is what `--json` and non-TTY output want.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from bisectk.outcome import Run


@dataclass(frozen=True)
class Event:
    pass


@dataclass(frozen=True)
class PhaseStarted(Event):
    name: str
    detail: str = ""


@dataclass(frozen=True)
class RunEvent(Event):
    """An event of one run: its label, its configuration and its index among that
    configuration's runs."""
    label: str
    config: dict[str, Any]
    index: int


@dataclass(frozen=True)
class RunStarted(RunEvent):
    timeout: float | None
    follows_progress: bool = False   # the deadline moves with the run's progress; `timeout` is its
                                     # rule for a subject that prints nothing, not this run's limit


@dataclass(frozen=True)
class RunFinished(RunEvent):
    run: Run
    cached: bool = False


@dataclass(frozen=True)
class BuildRunning(RunEvent):
    """A run's build step is still running after `seconds` (its limit: `limit`)."""
    seconds: float
    limit: float


@dataclass(frozen=True)
class Note(Event):
    text: str
    data: dict[str, Any] = field(default_factory=dict)


class EventBus:
    def __init__(self) -> None:
        self.subscribers: list[Callable[[Event], None]] = []

    def subscribe(self, fn: Callable[[Event], None]) -> None:
        self.subscribers.append(fn)

    def emit(self, event: Event) -> None:
        for fn in self.subscribers:
            fn(event)
