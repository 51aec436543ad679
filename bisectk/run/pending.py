"""Runs begun before their watchdog is known: the bad endpoint and the search's first runs, started
beside the good endpoint's run (engine/endpoints.py, --jobs above one).

A calibrated watchdog comes from the good endpoint's passing run, so a run begun beside it has no
deadline yet. It gets one the moment the good run has passed: its watch is made then, as the
runner would have made it, and told the lines the run printed so far at the times it printed
them, so a run already past its new deadline is a hang at once. Until then it runs under the
watchdog the runner had when it began (the uncalibrated cap, or the user's fixed one).

If the good endpoint did not pass, there is nothing to calibrate from and no search to run ahead
for: the runs made ahead are ended where they are, unjudged and never stored (RunAbandoned
through the executor, which ends a run on any error of its wait), and a run kept (the bad
endpoint's, which the endpoint check needs in any case) goes on under the runner's watchdog as
it is then.

Abstractions
------------
Pending      -- the watchdog to come: `settle(make)` when the good endpoint passed (`make()` builds
                a run's watch as the runner would now), `abandon(make)` when it did not;
                `keep_here()` marks the calling thread's runs as kept when abandoned; `decided()`
                waits for either (a run judged by the SLOW rule needs good's baseline first).
PendingWatch -- a Watch (run/watchdog.py) for a run begun while pending: it records the run's
                lines as any watch does; its deadline is the one the run began under until the
                pending watchdog is settled, then that of the watch made then, fed this run's
                lines so far (each line's first occurrence and the last line, at their times).
RunAbandoned -- raised from the deadline of a run made ahead once the pending watchdog is
                abandoned: the executor ends the run and nothing is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from bisectk.run.progress import MAX_SEEN, FixedWatch, ProgressWatch, Recorder, point_key

PENDING, SETTLED, ABANDONED = "pending", "settled", "abandoned"


class RunAbandoned(Exception):
    """A run made ahead, begun before the good endpoint passed, which then did not; one still
    under way when the search it was made for stopped (Runner.drop_under_way); or one whose warm
    worker was killed by the pool's close, the command leaving (run/pool.py): never stored."""


class Pending:
    def __init__(self, owner: int):
        self.owner = owner              # the thread whose runs are the good endpoint's: never pending
        self._here = threading.local()  # per thread (an ident is reused once its thread has ended)
        self._lock = threading.Lock()
        self._state, self._make = PENDING, None
        self._decided = threading.Event()   # settled or abandoned

    def keep_here(self) -> None:
        """The calling thread's runs go on when the pending watchdog is abandoned."""
        self._here.kept = True

    def kept(self) -> bool:
        return getattr(self._here, "kept", False)

    def settle(self, make: Callable[[], FixedWatch | ProgressWatch]) -> None:
        with self._lock:
            self._state, self._make = SETTLED, make
        self._decided.set()

    def abandon(self, make: Callable[[], FixedWatch | ProgressWatch]) -> None:
        with self._lock:
            self._state, self._make = ABANDONED, make
        self._decided.set()

    def decided(self) -> str:
        """Wait until the good endpoint's runs are done (settled or abandoned); the state then.
        A run that ended before them waits here to be judged (Runner._execute: a SLOW verdict
        needs the baseline they give)."""
        self._decided.wait()
        return self.state()[0]

    def state(self) -> tuple[str, Callable | None]:
        with self._lock:
            return self._state, self._make


class PendingWatch(Recorder):
    def __init__(self, pending: Pending, seconds: float | None, *, kept: bool = False):
        super().__init__()
        self.pending, self.kept = pending, kept
        self.before = FixedWatch(seconds)       # the watchdog the run began under
        self.real: FixedWatch | ProgressWatch | None = None
        self._early: dict[str, tuple[str, float]] = {}     # point -> its first line and time
        self._last: tuple[str, float] | None = None
        self._switch = threading.Lock()

    def feed(self, text: str, t: float) -> bool:
        full = super().feed(text, t)       # the run's own timeline, whichever watch decides
        with self._switch:
            if self.real is None:
                key = point_key(text)
                if key is not None:
                    if key not in self._early and len(self._early) < MAX_SEEN:
                        self._early[key] = (text, t)
                    self._last = (text, t)
                return full
        return self.real.feed(text, t)

    def _settled(self) -> FixedWatch | ProgressWatch | None:
        if self.real is not None:
            return self.real
        state, make = self.pending.state()
        if state == PENDING:
            return None
        if state == ABANDONED and not self.kept:
            raise RunAbandoned("the good endpoint did not pass: a run made ahead of the search is ended unjudged")
        watch = make()
        with self._switch:
            for text, t in sorted(self._early.values(), key=lambda x: x[1]):
                watch.feed(text, t)
            if self._last is not None:
                watch.feed(*self._last)
            self.real = watch
        return watch

    def deadline(self) -> float | None:
        real = self._settled()
        return self.before.deadline() if real is None else real.deadline()

    def where(self, now: float) -> str:
        return self.real.where(now) if self.real is not None else ""

    def to_dict(self) -> dict:
        return (self.real or self.before).to_dict()
