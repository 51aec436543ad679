"""engine/direction.py: a fix searched with an intermittent broken side (FixOracle) is called fixed
after `repeats` passes in a row; the answer's confidence is the one asked."""

from __future__ import annotations

import random

from bisectk.engine.direction import FixOracle, Terms, repeats_for
from bisectk.outcome import Outcome
from bisectk.search.history import Observation, SearchOptions, SearchStopped, search_dag


class _Subject:
    """Broken before `fix` (fails at `q`), fixed from it on (passes): the engine's Oracle as
    FixOracle asks it (the subject's outcomes)."""

    def __init__(self, fix: int, q: float, rng: random.Random):
        self.fix, self.q, self.rng = fix, q, rng

    def __call__(self, i: int) -> Outcome:
        return Outcome.PASS if i >= self.fix or self.rng.random() >= self.q else Outcome.FAIL

    def more_runs(self) -> int:
        return 0


def test_a_fix_found_through_repeated_passes_holds_the_confidence_asked():
    """--find-fix with a broken side failing 30% (measured so): each probe called fixed after R
    passes, R from 0.99 for one probe, so a bisection over 16 commits answered at 0.86-0.95 with
    exit 0 where 0.99 was asked; the confirmation's re-runs of the fixed commit, each R passes
    more of the same commit, lowered it as if each were another commit. R is now asked of the
    probes a bisection calls fixed together, and a commit called fixed again is one commit."""
    chain = [()] + [(i - 1,) for i in range(1, 16)]
    repeats = repeats_for(0.3, 0.99, len(chain))
    answered = 0
    for seed in range(20):
        rng = random.Random(seed)
        fix = rng.randrange(1, 16)
        search = FixOracle(_Subject(fix, 0.3, rng), Terms.of(find_fix=True), repeats, 0.3)
        try:
            r = search_dag(chain, search, options=SearchOptions(fix=True, base=(7, 3)),
                           observations=[Observation(15, Outcome.FAIL)])
        except SearchStopped:
            continue
        if r.complete and r.culprit is not None:
            answered += 1
            assert r.culprit == fix and search.confidence() >= 0.99, (seed, search.confidence())
    assert answered >= 15
