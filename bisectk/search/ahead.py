"""Runs ahead of the search: which runs to start now in the slots a search leaves idle. Pure.

An adaptive search asks one configuration at a time, and on a GPU one question can be a hang that
holds the command for a second or more while the other workers wait. Every search here is a
deterministic function of the outcomes it is given, so the questions it will ask next can be
known before the answers: replay it from the start against the runs seen so far, suppose an
outcome for each run still out, and see which run it asks for next. The runs most likely to be
asked are started now, side by side (Tester `submit`); when the search asks for one, it is there,
or under way. A run started ahead is a real run of that configuration, taken by the search in the
order it would have made it: the answers are the ones a one-at-a-time search gives. A guess that
proves wrong costs a slot's time and a run, never a wrong answer (a run not taken is counted and
reported as such).

Abstractions
------------
Question  -- what a replay stopped at: the run (configuration, its index among that
             configuration's runs) it needs and has not got, and the outcome the search expects of
             it, if any (a confirmation expects one).
replay    -- run a search against known and supposed runs; the first run it lacks, or None when
             it ends without one.
plan      -- best first over the tree of supposed outcomes: the runs to start in `slots` free
             slots, most likely to be asked first, never one started already, and no more than
             `risky` that are not expected to pass.

Likelihoods are rough on purpose: a question with no expectation is even odds; a confirmation's
run is its expected outcome 9 times in 10; a configuration that ran before repeats its last
outcome 4 times in 5. They order the guesses, and a guess less likely than LEAST is not made.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from bisectk.outcome import Outcome

# a configuration's runs as the planner sees them: in the order the search takes them, an Outcome
# for a run that is known and None for one under way
RunsOf = Callable[[Hashable], Sequence[Outcome | None]]
Search = Callable[[Callable[[Hashable], Outcome], Callable[[], Outcome | None]], object]

EVEN, EXPECTED, REPEATED = 0.5, 0.9, 0.8
# a run is started ahead only when the search asks for it with at least this likelihood: both
# answers of the question under way (even odds), a confirmation's next passes, never a guess two
# even-odds questions deep or one behind a contradiction. A run asked for nothing costs its
# slot's time, and on a warm GPU pool a hang costs a worker too (its replacement imports for ~9 s).
LEAST = 0.3
NODES_PER_SLOT = 3   # replays per free slot, at most: each replays the search from its start


@dataclass(frozen=True)
class Question:
    key: Hashable
    index: int
    expect: Outcome | None


class _Missing(BaseException):
    """A replay reached a run it has no outcome for (BaseException: no search code catches it)."""

    def __init__(self, question: Question):
        super().__init__(question)
        self.question = question


def replay(search: Search, runs_of: RunsOf, supposed: dict[tuple[Hashable, int], Outcome]) -> Question | None:
    """Run `search` (called with an oracle and a function naming the outcome its caller expects)
    against the known runs and `supposed` ones; the first run it lacks. A search that ends, stops
    or fails without lacking one asks nothing more: None."""
    taken: Counter = Counter()
    expecting: list[Callable[[], Outcome | None]] = []

    def oracle(key: Hashable) -> Outcome:
        index = taken[key]
        taken[key] += 1
        runs = runs_of(key)
        outcome = runs[index] if index < len(runs) else None
        if outcome is None:
            outcome = supposed.get((key, index))
        if outcome is None:
            raise _Missing(Question(key, index, expecting[0]() if expecting else None))
        return outcome

    try:
        search(oracle, expecting.append)
    except _Missing as missing:
        return missing.question
    except Exception:   # a stop, a budget, anything else: no question to guess from this branch
        return None
    return None


def _likelihood(question: Question, outcome: Outcome, runs: Sequence[Outcome | None]) -> float:
    if question.expect is not None:
        return EXPECTED if outcome is question.expect else 1.0 - EXPECTED
    seen = [o for o in runs[:question.index] if o is not None]
    if seen:
        return REPEATED if outcome is seen[-1] else 1.0 - REPEATED
    return EVEN


def plan(search: Search, runs_of: RunsOf, slots: int, risky: int | None = None) -> list[Hashable]:
    """The configurations to start one more run of now, at most `slots`, in the order they should
    start. A run under way is never started again; a branch goes on past it with each outcome
    supposed. A supposed run becomes a start only when it is the next one its configuration lacks.
    `risky`: how many of them may be runs not expected to pass (even odds or worse of a failure;
    None: any number). A failure can cost more than its time: a hang's warm worker is replaced
    by a spare, and the spares run out before new ones have imported."""
    if slots <= 0:
        return []
    starts: list[Hashable] = []
    added: Counter = Counter()      # runs chosen here per configuration, after those known or under way
    chosen: set[tuple[Hashable, int]] = set()
    heap: list[tuple[float, int, dict]] = [(-1.0, 0, {})]
    order, nodes = 1, 0
    while heap and len(starts) < slots and nodes < NODES_PER_SLOT * slots + 1:
        neg, _, supposed = heapq.heappop(heap)
        if -neg < LEAST:
            break       # every branch left is less likely still
        nodes += 1
        question = replay(search, runs_of, supposed)
        if question is None:
            continue
        runs = runs_of(question.key)
        run = (question.key, question.index)
        if question.index >= len(runs) and run not in chosen:
            if question.index != len(runs) + added[question.key]:
                continue    # an earlier run of it is neither known, under way nor chosen
            if risky is not None and _likelihood(question, Outcome.FAIL, runs) >= EVEN:
                if risky <= 0:
                    continue    # not started, nor followed: its branch waits for a spare
                risky -= 1
            starts.append(question.key)
            added[question.key] += 1
            chosen.add(run)
        for outcome in (Outcome.FAIL, Outcome.PASS):
            p = -neg * _likelihood(question, outcome, runs)
            heapq.heappush(heap, (-p, order, {**supposed, (question.key, question.index): outcome}))
            order += 1
    return starts
