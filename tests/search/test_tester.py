"""The oracle gateway (memo, counting, attempts, stop, budget, replay) and the confidence rule."""

import math

import pytest

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule, wilson
from bisectk.search.tester import StopSearch, Tester

from .oracles import Counting, planted

A, B = frozenset({"a"}), frozenset({"b"})


def test_memoises_counts_and_records_each_configuration_once():
    seen = []
    oracle = Counting(planted({"a"}))
    tester = Tester(oracle, on_attempt=seen.append)
    assert tester.test(A, "split") is Outcome.FAIL
    assert tester.test(A, "minimality") is Outcome.FAIL
    assert tester.test(B, "split") is Outcome.PASS
    assert oracle.calls == [A, B]
    assert tester.runs == 2
    assert [(a.index, a.config, a.outcome, a.phase, a.runs) for a in tester.attempts] == [
        (1, A, Outcome.FAIL, "split", 1), (2, B, Outcome.PASS, "split", 1)]
    assert seen == tester.attempts


def test_seeded_endpoints_are_free_and_known_outcomes_replay_without_running():
    oracle = Counting(planted({"a"}))
    tester = Tester(oracle, known={A: Outcome.FAIL})
    tester.seed(frozenset(), Outcome.PASS)
    assert tester.test(frozenset(), "x") is Outcome.PASS
    assert tester.test(A, "x") is Outcome.FAIL
    assert oracle.calls == [] and tester.runs == 0
    assert [a.cached for a in tester.attempts] == [True]  # the replay is listed, the seed not


def test_rule_repeats_passes_but_a_single_failure_is_conclusive():
    rule = ConfidenceRule.derive(7, 10)
    script = iter([Outcome.PASS, Outcome.PASS, Outcome.FAIL])
    tester = Tester(lambda config: next(script) if config == A else Outcome.PASS, rule=rule)
    assert tester.test(A, "split") is Outcome.FAIL
    assert tester.attempts[-1].observations == (Outcome.PASS, Outcome.PASS, Outcome.FAIL)
    assert tester.test(B, "split") is Outcome.PASS
    assert tester.attempts[-1].runs == rule.repeats
    assert tester.runs == 3 + rule.repeats


def test_unresolved_is_not_repeated():
    tester = Tester(lambda config: Outcome.UNRESOLVED, rule=ConfidenceRule.derive(5, 10))
    assert tester.test(A, "split") is Outcome.UNRESOLVED
    assert tester.runs == 1


def test_budget_and_stop_hook_raise_stop_search_before_running():
    oracle = Counting(planted({"a"}))
    tester = Tester(oracle, max_runs=1)
    tester.test(A, "x")
    with pytest.raises(StopSearch):
        tester.test(B, "x")
    stopping = Tester(oracle, should_stop=lambda: True)
    with pytest.raises(StopSearch):
        stopping.test(B, "x")
    assert oracle.calls == [A]


def test_the_budget_counts_the_runs_the_oracle_reports_beyond_one_a_question():
    """An oracle that re-runs a configuration (a different failure, twice more) says so through
    `more_runs`: a budget of 4 is spent after two questions, not four."""
    more = [0]

    def rerunning(key):
        more[0] += 2            # three runs for this question
        return Outcome.UNRESOLVED
    tester = Tester(rerunning, max_runs=4, more_runs=lambda: more[0])
    tester.test(A, "x")
    tester.test(B, "x")
    with pytest.raises(StopSearch, match="run budget of 4 spent"):
        tester.test(frozenset({"c"}), "x")
    assert tester.runs == 2 and more[0] == 4


def test_oracle_must_return_an_outcome():
    with pytest.raises(TypeError):
        Tester(lambda config: "fail").test(A, "x")


def test_wilson_rule_numbers():
    rule = ConfidenceRule.derive(7, 10, alpha=0.01, confidence=0.95)
    assert rule.p_lo == pytest.approx(0.3968, abs=1e-4)  # Wilson 95% interval for 7/10
    assert rule.repeats == 10  # ceil(log 0.01 / log(1 - 0.3968)) = ceil(9.1)
    assert rule.miss_probability <= rule.alpha < (1 - rule.p_lo) ** (rule.repeats - 1)
    text = rule.describe()
    assert "7/10" in text and "p_lo=0.397" in text and "10 consecutive passes" in text


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_closed_form_wilson_is_scipys(confidence):
    """wilson() avoids loading scipy.stats (about a second per command); it must give scipy's
    interval (method="wilson", no continuity correction) everywhere, the ends included."""
    from scipy.stats import binomtest
    for runs in range(1, 41):
        for fails in range(runs + 1):
            ci = binomtest(fails, runs).proportion_ci(confidence_level=confidence, method="wilson")
            assert wilson(fails, runs, confidence) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))
    assert wilson(0, 0) == (0.0, 1.0)


def test_clopper_pearson_is_more_conservative_than_wilson():
    wilson = ConfidenceRule.derive(9, 10)
    exact = ConfidenceRule.derive(9, 10, method="clopper-pearson")
    assert exact.p_lo < wilson.p_lo and exact.repeats >= wilson.repeats
    assert exact.p_lo == pytest.approx(0.5550, abs=1e-4)
    assert exact.repeats == math.ceil(math.log(0.01) / math.log(1 - exact.p_lo))


def test_a_steady_failure_still_needs_a_few_passes_and_rule_is_serialisable():
    rule = ConfidenceRule.derive(10, 10)
    assert rule.repeats == 4
    assert rule.to_dict()["repeats"] == 4 and "text" in rule.to_dict()


@pytest.mark.parametrize("fails, runs, kwargs", [
    (0, 10, {}), (11, 10, {}), (5, 10, {"alpha": 0}), (5, 10, {"method": "bayes"})])
def test_rule_rejects_nonsense(fails, runs, kwargs):
    with pytest.raises(ValueError):
        ConfidenceRule.derive(fails, runs, **kwargs)


def test_confirmation_passes_go_in_rounds_of_the_width_and_stop_at_a_failing_round():
    rounds = []

    def batch(keys):
        rounds.append(len(keys))
        return [Outcome.PASS] * len(keys)

    tester = Tester(Counting(planted({"a"})), batch=batch, width=lambda: 4)
    assert tester.confirm(B, Outcome.PASS, 10) is Outcome.PASS
    assert rounds == [4, 4, 2] and tester.runs == 10 and tester.history[B] == [Outcome.PASS] * 10
    assert tester.attempts[-1].runs == 10 and tester.attempts[-1].phase == "confirm"

    # a failure in a round ends the confirmation after that round, and is its answer
    script = iter([Outcome.PASS] * 5 + [Outcome.FAIL] + [Outcome.PASS] * 10)
    tester = Tester(Counting(planted({"a"})), batch=lambda keys: [next(script) for _ in keys], width=lambda: 3)
    assert tester.confirm(B, Outcome.PASS, 12) is Outcome.FAIL
    assert tester.runs == 6 and tester.history[B][-1] is Outcome.FAIL

    # a FAIL expectation runs one at a time (a failure there ends it at once); width 1 is serial
    oracle = Counting(planted({"a"}))
    tester = Tester(oracle, batch=batch, width=lambda: 1)
    rounds.clear()
    assert tester.confirm(A, Outcome.FAIL, 5) is Outcome.FAIL
    assert tester.confirm(B, Outcome.PASS, 3) is Outcome.PASS
    assert rounds == [] and oracle.calls == [A, B, B, B]


def test_a_round_takes_no_more_runs_than_the_budget_left():
    rounds = []

    def batch(keys):
        rounds.append(len(keys))
        return [Outcome.PASS] * len(keys)

    tester = Tester(Counting(planted({"a"})), batch=batch, width=lambda: 8, max_runs=6)
    with pytest.raises(StopSearch):
        tester.confirm(B, Outcome.PASS, 10)
    assert rounds == [6] and tester.runs == 6


def test_a_rules_passes_go_in_rounds_and_a_failure_in_a_round_is_the_verdict():
    rounds = []
    oracle = Counting(planted({"a"}))

    def batch(keys):
        rounds.append(len(keys))
        return [oracle(k) for k in keys]

    rule = ConfidenceRule.derive(3, 10)
    assert rule.repeats > 4
    tester = Tester(oracle, rule=rule, batch=batch, width=lambda: 4)
    assert tester.test(B, "split") is Outcome.PASS
    # rounds of four; a last round of one is a plain run
    assert sum(rounds) == rule.repeats - (rule.repeats % 4 == 1) and max(rounds) == 4
    assert len(tester.history[B]) == rule.repeats == tester.runs
    rounds.clear()
    assert tester.test(A, "split") is Outcome.FAIL          # a deterministic failure: the first round
    assert rounds == [4] and tester.attempts[-1].runs == 4
    # the same verdicts one run at a time (width 1), in fewer runs for the failing one
    serial = Tester(Counting(planted({"a"})), rule=rule, batch=batch, width=lambda: 1)
    rounds.clear()
    assert serial.test(B, "split") is Outcome.PASS and serial.test(A, "split") is Outcome.FAIL
    assert rounds == [] and serial.runs == rule.repeats + 1
