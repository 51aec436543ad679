"""Runs ahead of the search (search/ahead.py, Tester.submit): the answers are those of a search
that asks one configuration at a time, every run is accounted for, and the idle slots are used."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from bisectk.outcome import Outcome
from bisectk.search import SearchStopped, ablate, first_runs
from bisectk.search.ahead import plan, replay


class Planted:
    """A deterministic subject: fails when any planted set is applied; counts its runs and the most
    under way at once."""

    def __init__(self, sets, seconds=0.0):
        self.sets, self.seconds = [frozenset(s) for s in sets], seconds
        self.calls, self.now, self.most, self.finished = 0, 0, 0, 0
        self.lock = threading.Lock()
        # `holding` (set under the lock): every run under way ends only once `release` is set
        self.holding, self.release = False, threading.Event()

    def __call__(self, config: frozenset) -> Outcome:
        with self.lock:
            self.calls += 1
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            if self.seconds:
                time.sleep(self.seconds)
            return Outcome.FAIL if any(s <= config for s in self.sets) else Outcome.PASS
        finally:
            with self.lock:
                held = self.holding
                if not held:
                    self.now -= 1
                    self.finished += 1
            if held:
                self.release.wait(30)
                with self.lock:
                    self.now -= 1
                    self.finished += 1


def _cases(n_cases, seed=7):
    rnd = random.Random(seed)
    for _ in range(n_cases):
        n = rnd.randint(2, 10)
        items = [f"f{i}" for i in range(n)]
        sets = [rnd.sample(items, rnd.randint(1, min(3, n)))]
        if rnd.random() < 0.3:
            sets.append(rnd.sample(items, 1))
        yield items, sets


def _trace(result):
    return [(a.config, a.outcome, a.observations, a.phase) for a in result.attempts]


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin"])
def test_runs_ahead_give_the_one_at_a_time_answer_and_attempts(strategy):
    for items, sets in _cases(12):
        kw = dict(strategy=strategy, confidence=0.99, more_sets=7, measure_removal=True)
        one = ablate(items, Planted(sets), **kw)
        subject = Planted(sets)
        with ThreadPoolExecutor(4) as pool:
            ahead = ablate(items, subject, submit=lambda c: pool.submit(subject, c), width=lambda: 4, **kw)
        assert ahead.culprits == one.culprits and ahead.sets == one.sets, (items, sets)
        assert _trace(ahead) == _trace(one), (items, sets)
        # every run is counted: those the search took, and those made ahead that it did not
        taken = sum(len(a.observations) for a in ahead.attempts)
        assert subject.calls == ahead.runs == taken + ahead.unused, (subject.calls, ahead.runs, taken, ahead.unused)


def test_the_idle_slots_run_what_the_search_asks_next():
    items, sets = [f"f{i}" for i in range(8)], [["f5"]]
    one = Planted(sets, 0.05)
    serial = ablate(items, one, confidence=0.99)
    subject = Planted(sets, 0.05)
    with ThreadPoolExecutor(4) as pool:
        res = ablate(items, subject, confidence=0.99, submit=lambda c: pool.submit(subject, c), width=lambda: 4)
    assert res.culprits == serial.culprits == ("f5",)
    assert subject.most == 4 and one.most == 1 and serial.taken_ahead == 0
    # most runs the search took were under way before it asked for them: the confirmation's passes
    # and one of the two answers of each question (the other is a run not needed)
    taken = sum(len(a.observations) for a in res.attempts)
    assert res.taken_ahead >= taken // 2 and res.taken_ahead + res.unused <= res.runs, (res.taken_ahead, taken, res.unused)


def test_width_one_runs_nothing_ahead():
    items, sets = [f"f{i}" for i in range(6)], [["f1", "f4"]]
    subject = Planted(sets)
    with ThreadPoolExecutor(4) as pool:
        res = ablate(items, subject, confidence=0.99, submit=lambda c: pool.submit(subject, c), width=lambda: 1)
    assert subject.most == 1 and res.unused == 0 and res.runs == subject.calls


def test_a_run_budget_holds_with_runs_ahead():
    items, sets = [f"f{i}" for i in range(10)], [["f2", "f7"]]
    subject = Planted(sets, 0.01)
    with ThreadPoolExecutor(4) as pool:
        with pytest.raises(SearchStopped) as stop:
            ablate(items, subject, confidence=0.99, max_runs=9, submit=lambda c: pool.submit(subject, c),
                   width=lambda: 4)
    assert stop.value.reason == "stop" and stop.value.result.runs <= 9 and subject.calls <= 9
    assert not stop.value.result.complete


def test_no_risky_runs_ahead_when_none_may_fail():
    """risky = 0 (a warm pool with no spare): only runs expected to pass go ahead (a
    confirmation's passes), never a question at even odds."""
    items, sets = [f"f{i}" for i in range(8)], [["f3"]]
    subject = Planted(sets)
    started = []

    def submit(c):
        started.append(c)
        return pool.submit(subject, c)
    with ThreadPoolExecutor(4) as pool:
        res = ablate(items, subject, confidence=0.99, submit=submit, width=lambda: 4, risky=lambda: 0)
    # every question of the search itself was asked before its run started: the runs of
    # configurations other than bad-without-the-culprit were all taken
    assert res.culprits == ("f3",)
    taken = {a.config for a in res.attempts}
    assert all(c in taken for c in started)
    assert res.unused <= 4   # at most the passes started ahead past the last one asked


def _binary(items, target):
    """A toy search: the first prefix length whose set fails (one culprit, at index `target`)."""
    def search(ask, expecting):
        lo, hi = 0, len(items)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ask(frozenset(items[:mid])) is Outcome.FAIL:
                hi = mid
            else:
                lo = mid
        return hi
    return search


def test_plan_starts_both_answers_of_the_question_under_way():
    items = list(range(16))
    search = _binary(items, 11)
    first = frozenset(items[:8])
    known = {}
    assert replay(search, lambda k: known.get(k, []), {}).key == first
    # the first question is under way: its two possible successors start, in the free slots
    known[first] = [None]
    chosen = plan(search, lambda k: known.get(k, []), 3)
    assert set(chosen) == {frozenset(items[:4]), frozenset(items[:12])}
    # once it is known, the next question's two successors
    known[first] = [Outcome.PASS]
    assert replay(search, lambda k: known.get(k, []), {}).key == frozenset(items[:12])
    known[frozenset(items[:12])] = [None]
    assert set(plan(search, lambda k: known.get(k, []), 2)) == {frozenset(items[:10]), frozenset(items[:14])}
    assert plan(search, lambda k: known.get(k, []), 0) == []


def test_a_stop_while_runs_are_ahead_counts_only_runs_made():
    """Ctrl-C arrives while the search waits (the engine's `waiting` is where it is raised): the
    runs under way are abandoned to the command's exit, and the result counts the runs taken and
    those finished ahead, never one that did not run."""
    from contextlib import contextmanager
    items, sets = [f"f{i}" for i in range(8)], [["f6"]]
    subject = Planted(sets, 0.3)
    entered = [0]

    @contextmanager
    def waiting():
        entered[0] += 1
        with subject.lock:
            # from the 4th wait, the first with a run under way (a run that has returned can look
            # pending to the search until its future is set): that run ends only after the count
            # below, however loaded the machine
            if entered[0] >= 4 and subject.now:
                subject.holding = True
                raise KeyboardInterrupt
        yield
    with ThreadPoolExecutor(4) as pool:
        try:
            with pytest.raises(SearchStopped) as stop:
                ablate(items, subject, confidence=0.99, submit=lambda c: pool.submit(subject, c), width=lambda: 4,
                       waiting=waiting)
            finished = subject.finished     # the runs abandoned to the stop are still under way here
        finally:
            subject.release.set()
    res = stop.value.result
    assert stop.value.interrupted and not res.complete
    taken = sum(len(a.observations) for a in res.attempts)
    assert res.runs == taken + res.unused <= finished < subject.calls, (res.runs, taken, res.unused, finished, subject.calls)


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin"])
def test_runs_started_before_the_search_are_taken_and_change_no_answer(strategy):
    """first_runs names what the search asks first; begun before it (beside the bad endpoint),
    the search takes them when it asks: same answer, same attempts, every run counted."""
    for items, sets in _cases(12, seed=11):
        kw = dict(strategy=strategy, confidence=0.99, more_sets=7, measure_removal=True)
        one = ablate(items, Planted(sets), **kw)
        first = first_runs(items, 3, strategy=strategy, confidence=0.99, more_sets=7, measure_removal=True)
        assert first and len(first) == len(set(first)) <= 3
        # the first one is the search's first question
        assert first[0] == one.attempts[0].config
        subject = Planted(sets)
        with ThreadPoolExecutor(4) as pool:
            started = {c: [pool.submit(subject, c)] for c in first}
            ahead = ablate(items, subject, submit=lambda c: pool.submit(subject, c), width=lambda: 4,
                           started=started, **kw)
        assert ahead.culprits == one.culprits and ahead.sets == one.sets, (items, sets)
        assert _trace(ahead) == _trace(one), (items, sets)
        taken = sum(len(a.observations) for a in ahead.attempts)
        assert subject.calls == ahead.runs == taken + ahead.unused, (subject.calls, ahead.runs, taken, ahead.unused)
        asked = {a.config for a in one.attempts}
        # a run begun before the search that it never asks for is counted as not needed
        assert ahead.unused >= sum(1 for c in first if c not in asked)


def test_first_runs_respect_the_risky_limit_and_need_submit():
    items = ["a", "b", "c", "d"]
    assert first_runs(items, 3, risky=0) == []    # the first question is even odds of a failure
    assert len(first_runs(items, 3, risky=1)) == 1
    assert first_runs(items, 0) == [] and first_runs([], 3) == [] and first_runs(items, 3, strategy="nope") == []
    with pytest.raises(ValueError, match="submit"):
        ablate(items, Planted([{"a"}]), started={frozenset({"a"}): []})
