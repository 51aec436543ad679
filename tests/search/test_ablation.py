"""The entry point the CLI calls: registry, validation, the result, stop and resume, noise."""

import json

import pytest

from bisectk.outcome import Outcome
from bisectk.search import (DEFAULT_STRATEGY, STRATEGIES, ConfidenceRule, SearchStopped,
                            StopSearch, ablate, strategy_names)

from .oracles import Counting, flaky, planted, said

ITEMS = [f"f{i:02d}" for i in range(16)]
PAIR = {"f03", "f11"}


def test_registry_offers_the_default_first():
    assert DEFAULT_STRATEGY == "adaptive" == strategy_names()[0]
    assert set(strategy_names()) == set(STRATEGIES) >= {"adaptive", "ddmin", "dd", "ofat",
                                                        "exhaustive"}
    assert all(STRATEGIES[name].summary for name in STRATEGIES)


@pytest.mark.parametrize("items, kwargs", [
    ([], {}), (["a", "a"], {}), (["a"], {"strategy": "magic"})])
def test_rejects_bad_input(items, kwargs):
    with pytest.raises(ValueError):
        ablate(items, planted({"a"}), **kwargs)


def test_result_carries_what_the_report_needs():
    seen = []
    result = ablate(ITEMS, planted(PAIR), on_attempt=seen.append, measure_removal=True)
    assert result.culprits == ("f03", "f11") and result.interaction and result.complete
    assert result.fail_config == frozenset(PAIR)
    assert result.attempts == seen and result.runs == len(seen)
    # for a pair the proof subsets are the minimality checks, which ran first
    assert {a.phase for a in seen} == {"split", "split-check", "minimality", "confirm-removal"}
    assert result.effects["f03"].removed is Outcome.PASS  # measured by measure_removal
    assert result.effects["f03"].role == "culprit"
    assert result.proof == {frozenset({"f03"}): Outcome.PASS, frozenset({"f11"}): Outcome.PASS}
    assert said(result) and "only together" in said(result)[0]
    data = json.loads(json.dumps(result.to_dict()))
    assert data["culprits"] == ["f03", "f11"] and data["interaction"] is True
    assert data["runs"] == len(data["attempts"]) and data["flakiness_rule"] is None


def test_unresolved_configurations_are_listed():
    def oracle(config):
        if len(config) == 8:
            return Outcome.UNRESOLVED
        return planted({"f05"})(config)
    result = ablate(ITEMS, oracle)
    assert result.culprits == ("f05",)
    assert result.unresolved and all(a.outcome is Outcome.UNRESOLVED for a in result.unresolved)
    assert any("UNRESOLVED" in step for step in said(result))


@pytest.mark.parametrize("stop", [KeyboardInterrupt, StopSearch])
def test_interrupt_raises_with_the_best_result_so_far(stop):
    calls = []

    def oracle(config):
        calls.append(config)
        if len(calls) == 5:
            raise stop()
        return planted(PAIR)(config)

    with pytest.raises(SearchStopped) as caught:
        ablate(ITEMS, oracle)
    best = caught.value.result
    assert not best.complete and isinstance(caught.value.cause, stop)
    assert best.runs == 5 and len(best.attempts) == 4
    failing = [a.config for a in best.attempts if a.outcome is Outcome.FAIL]
    assert best.fail_config == min(failing, key=len)  # the smallest failure seen
    assert PAIR <= best.fail_config
    assert "Resume" in said(best)[0]


def test_stop_from_the_progress_callback_and_from_the_budget():
    def on_attempt(attempt):
        if attempt.index == 2:
            raise StopSearch("user pressed q")
    with pytest.raises(SearchStopped) as caught:
        ablate(ITEMS, planted(PAIR), on_attempt=on_attempt)
    assert len(caught.value.result.attempts) == 2
    with pytest.raises(SearchStopped) as caught:
        ablate(ITEMS, planted(PAIR), max_runs=3)
    assert caught.value.result.runs == 3


def test_resume_replays_known_outcomes_and_runs_only_the_rest():
    full = ablate(ITEMS, planted(PAIR))
    with pytest.raises(SearchStopped) as caught:
        ablate(ITEMS, planted(PAIR), max_runs=4)
    ledger = {a.config: a.outcome for a in caught.value.result.attempts}
    oracle = Counting(planted(PAIR))
    resumed = ablate(ITEMS, oracle, known=ledger)
    assert resumed.culprits == full.culprits
    assert not set(oracle.calls) & set(ledger)  # nothing ran twice
    assert resumed.runs == full.runs - 4
    assert [a.config for a in resumed.attempts] == [a.config for a in full.attempts]


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin"])
def test_flaky_oracle_with_the_confidence_rule_stays_correct(strategy):
    wrong = 0
    for seed in range(25):
        oracle = flaky(planted(PAIR), pass_rate=0.3, seed=seed)
        endpoint = [oracle(frozenset(ITEMS)) for _ in range(10)]
        rule = ConfidenceRule.derive(endpoint.count(Outcome.FAIL), 10)
        result = ablate(ITEMS, oracle, strategy=strategy, rule=rule)
        wrong += set(result.culprits) != PAIR or not result.interaction
        assert result.rule is rule
        assert all(a.runs == rule.repeats for a in result.attempts if a.outcome is Outcome.PASS)
        assert result.runs == sum(a.runs for a in result.attempts)
    assert wrong == 0


def test_without_the_rule_a_flaky_oracle_misleads():
    # The reason the rule exists: single-shot verdicts on a 50% flaky failure go wrong.
    wrong = sum(set(ablate(ITEMS, flaky(planted(PAIR), 0.5, seed)).culprits) != PAIR
                for seed in range(25))
    assert wrong > 0


def test_flaky_result_explains_its_rule():
    rule = ConfidenceRule.derive(8, 10)
    result = ablate(ITEMS, planted({"f07"}), rule=rule)
    assert result.to_dict()["flakiness_rule"]["repeats"] == rule.repeats
    assert any("p_lo=" in step for step in said(result))


def test_a_failure_declared_steady_confirms_each_claim_once():
    from tests.search.oracles import planted as _planted
    items = [f"f{i:02d}" for i in range(16)]
    for cause in ({"f03"}, {"f03", "f11"}):
        steady = ablate(items, _planted(cause), confidence=0.99, endpoint=(1, 1), steady=True)
        default = ablate(items, _planted(cause), confidence=0.99, endpoint=(1, 1))
        assert set(steady.culprits) == set(default.culprits) == cause and steady.complete
        c = steady.confirmation
        assert c.ok and c.repeats == 1 and all(n == 1 for n in _runs_per_claim(c)), c
        assert default.confirmation.repeats > 1 and default.runs > steady.runs


def test_an_undeclared_flake_does_not_slip_through_dd_s_confirmation():
    """dd answers with a pair: the context passes, context plus the difference fails. The
    confirmation re-ran the failing side only, so a context made by one lucky pass of a
    configuration holding the cause (the pair f03, f11 failing 70% of the time, nobody said so)
    stood: 19 of these 100 answers were wrong at exit 0. The context is a PASS claim too."""
    from bisectk.search.confirm import set_claims
    from bisectk.search.sets import FailingSet
    _, passing = set_claims(frozenset(ITEMS), [FailingSet(("f03",), {}, False)], [], frozenset({"f11"}))
    assert frozenset({"f11"}) in passing
    wrong = 0
    for seed in range(100):
        oracle = flaky(planted(PAIR), pass_rate=0.3, seed=seed)
        result = ablate(ITEMS[:12], oracle, strategy="dd", confidence=0.99, endpoint=(1, 1))
        if result.complete:
            failing = result.context | frozenset(result.culprits)
            wrong += not (PAIR <= failing and not PAIR <= result.context)
    assert wrong == 0


def _runs_per_claim(confirmation):
    counts: dict = {}
    for key, _, _ in confirmation.checks:
        counts[key] = counts.get(key, 0) + 1
    return counts.values()


def test_an_unconfirmed_answer_counts_every_run_in_its_advice():
    """An answer the confirmation contradicts under the flake rule stops 'unconfirmed'; its advice
    ("The search stopped after N runs") counted the runs before the confirmation, so the terminal
    said 'after 65 search run(s)' above 'The search stopped after 55 runs'."""
    import random
    seen = 0
    for seed in range(40):
        rng = random.Random(seed)

        def good_fails_sometimes(config: frozenset) -> Outcome:
            return Outcome.FAIL if "f03" in config or rng.random() < 0.15 else Outcome.PASS
        result = ablate(ITEMS[:6], good_fails_sometimes, rule=ConfidenceRule.derive(6, 7), confidence=0.99,
                        endpoint=(6, 7))
        if result.stop_reason == "unconfirmed":
            seen += 1
            stopped = [s for s in result.advice if s["step"] == "stopped"]
            assert stopped and stopped[0]["runs"] == result.runs, (seed, stopped, result.runs)
    assert seen


def test_a_switched_rule_does_not_claim_its_counts_are_the_bad_endpoints():
    """A deterministic search whose confirmation is contradicted goes on under a rule derived from
    every configuration that failed at least once. Its line said 'bad endpoint failed 7/8' under a
    report whose bad endpoint had failed 1/1."""
    import random
    seen = 0
    for seed in range(20):
        rng = random.Random(seed)

        def good_fails_sometimes(config: frozenset) -> Outcome:
            return Outcome.FAIL if "f03" in config or rng.random() < 0.15 else Outcome.PASS
        result = ablate(ITEMS[:6], good_fails_sometimes, confidence=0.99, endpoint=(1, 1))
        if result.switched is not None and (result.rule.fails, result.rule.runs) != (1, 1):
            seen += 1
            text = result.rule.describe()
            assert "bad endpoint failed" not in text, text
            assert f"failed {result.rule.fails}/{result.rule.runs}" in text
    assert seen


def _good_fails_sometimes(seed: int, start: str, good: tuple[int, int] | None):
    """One search of 8 factors where f3 fails 70% of its runs and every other configuration (good
    among them) 5%, nothing declared: `start` 'intermittent' (bad passed: the one-sided rule from
    its 10 runs) or 'deterministic' (bad failed first: no rule until a contradiction). None when
    the bad endpoint never failed or the search stopped; else (complete, the sets named)."""
    import random
    rng = random.Random(seed)
    items = [f"f{i}" for i in range(8)]

    def oracle(config: frozenset) -> Outcome:
        return Outcome.FAIL if rng.random() < (0.7 if "f3" in config else 0.05) else Outcome.PASS
    rule, endpoint = None, (1, 1)
    if start == "intermittent":
        bad = [oracle(frozenset(items)) for _ in range(10)]
        if Outcome.FAIL not in bad:
            return None
        endpoint = (bad.count(Outcome.FAIL), 10)
        rule = ConfidenceRule.derive(*endpoint)
    try:
        res = ablate(items, oracle, rule=rule, measure_removal=True, more_sets=7, confidence=0.99,
                     endpoint=endpoint, max_runs=2000, good=good)
    except SearchStopped:
        return None
    return res.complete, [sorted(s.members) for s in res.sets if s.members]


def test_a_good_side_that_fails_sometimes_is_not_named_a_culprit_at_exit_0():
    """adv51b U1: under the one-sided rule (an intermittent start, or after a contradiction) one
    failure was proof, and the confirmation took one more failure within its runs as the FAIL
    claim's: a configuration without the cause that failed once (good fails 5%) became a culprit
    or a second failing set ('set 2: f7') in 28 of 800 seeded searches, 13% of the answers given.
    With the good endpoint's runs the FAIL claims are confirmed as evidence under two rates."""
    given = wrong = 0
    for start in ("intermittent", "deterministic"):
        for seed in range(400):
            got = _good_fails_sometimes(seed, start, good=(0, 1))
            if got is None or not got[0]:
                continue
            given += 1
            wrong += got[1] != [["f3"]]
    assert given >= 150, given          # still answers: the right set is confirmed
    assert wrong <= 4, (wrong, given)   # 2 of 176 here (1%, as the confidence says); 28 of 211 before


def test_the_good_endpoint_s_runs_change_nothing_for_a_deterministic_subject():
    """A deterministic search whose confirmation holds runs no rule: its answer and runs stay."""
    for causes in ({"f03"}, PAIR):
        plain = ablate(ITEMS, planted(causes), measure_removal=True, more_sets=7, confidence=0.99, endpoint=(1, 1))
        told = ablate(ITEMS, planted(causes), measure_removal=True, more_sets=7, confidence=0.99, endpoint=(1, 1),
                      good=(0, 1))
        assert told.culprits == plain.culprits == tuple(sorted(causes))
        assert [(a.config, a.phase, a.observations) for a in told.attempts] == \
            [(a.config, a.phase, a.observations) for a in plain.attempts]


def test_the_search_gives_the_contradiction_as_a_fact():
    """An unconfirmed answer's 'stopped' step carries what contradicted it (report/advice.py words it)."""
    import random
    for seed in range(40):
        rng = random.Random(seed)

        def oracle(config, rng=rng):
            return Outcome.FAIL if rng.random() < (0.7 if "f3" in config else 0.05) else Outcome.PASS
        res = ablate([f"f{i}" for i in range(8)], oracle, rule=ConfidenceRule.derive(7, 10), more_sets=7,
                     confidence=0.99, endpoint=(7, 10), good=(0, 1), max_runs=2000)
        if res.stop_reason == "unconfirmed":
            stopped = [s for s in res.advice if s["step"] == "stopped"][0]
            against = res.confirmation.contradicted
            assert stopped["contradicted"]["config"] == sorted(map(str, against[0]))
            assert stopped["contradicted"]["got"] == against[1] and stopped["contradicted"]["two_rate"] is False
            return
    raise AssertionError("no seed gave an unconfirmed answer")


def test_a_switch_keeps_the_bad_endpoint_failing_when_its_re_run_passed():
    """When every difference is needed (an interaction of all of them), the confirmation re-runs
    the bad endpoint itself; an intermittent failure that passed there switched the search to the
    flake rule, which re-read bad's one passing run as 'not decided yet' and forgot its verified
    failure. The search then asked bad again as if it were a hybrid, and a stop with nothing else
    seen failing raised ValueError (min() of no failing configuration) instead of SearchStopped."""
    import random
    stopped = 0
    for seed in range(40):
        rng = random.Random(seed)

        def both_needed(config: frozenset) -> Outcome:
            return Outcome.FAIL if config == frozenset("ab") and rng.random() < 0.5 else Outcome.PASS
        calls = Counting(both_needed)
        try:
            result = ablate(["a", "b"], calls, confidence=0.99, endpoint=(1, 1), max_runs=5)
        except SearchStopped as stop:
            result, stopped = stop.result, stopped + 1
        assert result.runs == len(calls.calls)
        assert set(result.culprits) <= {"a", "b"} and frozenset("ab") >= result.fail_config
    assert stopped
