"""Which of the --jobs slots each run under way holds: with --gpus a slot is a GPU (the run's
CUDA_VISIBLE_DEVICES is `policy.gpus[slot % len]`), so two runs that hold one slot share a GPU.

Runs begin from several places at once: the good endpoint's in the command's thread, the bad
endpoint's beside it (endpoints._beside_good), the search's first runs beside both (ablate's
FirstRuns, through SideBySide's threads), a batch's runs in a pool. Each used to name its slot
itself -- the good endpoint 0, the bad one 1, a SideBySide thread its own number -- and the
runs begun ahead took whichever thread was free first: the first of them often ran on the good
endpoint's GPU while another GPU sat idle, its time stretched by the other run's kernel (a slow
or a hung verdict that only the sharing caused).

Now a run takes its slot when it begins and gives it back when it ends: the lowest slot no run
holds. It never waits: when every slot is held (more runs under way than --jobs: never by the
engines' own counts, but a slot must not be what blocks a run) it shares the least held one,
the lowest of those.

Abstractions
------------
Slots -- the board: `held()` a context manager giving a slot for one run; `taken()` the slots
         held now (tests, reports).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Slots:
    def __init__(self, n: int):
        self.n = max(1, n)
        self._holders = [0] * self.n
        self._lock = threading.Lock()

    @contextmanager
    def held(self) -> Iterator[int]:
        with self._lock:
            slot = min(range(self.n), key=lambda s: (self._holders[s], s))
            self._holders[slot] += 1
        try:
            yield slot
        finally:
            with self._lock:
                self._holders[slot] -= 1

    def taken(self) -> list[int]:
        with self._lock:
            return [s for s, k in enumerate(self._holders) if k]
