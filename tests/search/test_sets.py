"""Every independent failing set (search/sets.py): the search goes on while bad without a fix of the
sets found still fails, and the table never contradicts its own cells."""

import itertools
import random

import pytest

from bisectk.outcome import Outcome
from bisectk.search import STRATEGIES, SearchStopped, ablate
from bisectk.search.sets import hitting_sets

from .oracles import Counting, planted, said, with_invalid

SOFTMAX = ["fast", "n", "block", "rows", "seed"]


def minimal_sets(causes) -> set[frozenset]:
    causes = [frozenset(c) for c in causes]
    return {c for c in causes if not any(o < c for o in causes)}


def check_table(result) -> None:
    """No line of the key-differences table contradicts its own cells or another line."""
    for d, e in result.effects.items():
        if e.removed is Outcome.FAIL:
            assert e.role != "culprit", (d, e)          # bad still fails without it: not the cause
        if e.removed is Outcome.PASS:
            assert e.role not in ("cleared",), (d, e)   # bad passes without it: it is needed
        if e.role in ("culprit", "member"):
            assert e.sets, (d, e)
        if e.alone is Outcome.FAIL and result.sets:
            assert frozenset({d}) in {frozenset(s.members) for s in result.sets}, (d, e)


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin", "ofat", "exhaustive"])
def test_softmax_two_sets_are_both_found_and_the_fixes_follow_from_them(strategy):
    oracle = planted({"fast", "n"}, {"fast", "block"})
    result = ablate(SOFTMAX, oracle, strategy=strategy, measure_removal=True, more_sets=7)
    assert {frozenset(s.members) for s in result.sets} == {frozenset({"fast", "n"}), frozenset({"fast", "block"})}
    assert result.culprits == result.sets[0].members and result.sets_complete is True
    assert set(result.fixes) == {frozenset({"fast"}), frozenset({"n", "block"})}
    roles = {d: e.role for d, e in result.effects.items()}
    assert roles == {"fast": "culprit", "n": "member", "block": "member", "rows": "cleared", "seed": "cleared"}
    assert result.effects["n"].removed is Outcome.FAIL and result.effects["block"].removed is Outcome.FAIL
    assert result.effects["fast"].sets == (1, 2)
    check_table(result)
    words = " ".join(said(result))
    assert "Fix fast, or both n and block" in words
    assert "may suffice" not in words and "Reverting n" in words
    assert all(s.interaction for s in result.sets)


def test_one_set_costs_no_run_beyond_measuring_its_removal():
    """The fixes of a single set are its members, whose removal the table measures anyway."""
    plain = Counting(planted({"f03", "f11"}))
    sets = Counting(planted({"f03", "f11"}))
    items = [f"f{i:02d}" for i in range(16)]
    a = ablate(items, plain, measure_removal=True)
    b = ablate(items, sets, measure_removal=True, more_sets=7)
    assert plain.calls == sets.calls and b.sets_complete is True and len(b.sets) == 1
    assert b.fixes == [frozenset({"f03"}), frozenset({"f11"})]
    assert a.culprits == b.culprits


def test_two_single_culprits_each_failing_alone():
    """pipeline-two-culprits' shape: two differences that each fail alone; the fix is both."""
    result = ablate(list("abcdefgh"), planted({"c"}, {"f"}), measure_removal=True, more_sets=7)
    assert [s.members for s in result.sets] in ([("c",), ("f",)], [("f",), ("c",)])
    assert result.fixes == [frozenset({"c", "f"})]
    assert {d for d, e in result.effects.items() if e.role == "member"} == {"c", "f"}
    check_table(result)
    assert "Fix both c and f" in " ".join(said(result))


@pytest.mark.parametrize("seed", range(40))
def test_random_families_are_found_whole(seed):
    """Planted families of 1-3 causes of 1-3 members among 10 differences: every minimal failing
    set is found, and every fix offered was run and passed."""
    rng = random.Random(seed)
    items = [f"x{i}" for i in range(10)]
    causes = [rng.sample(items, rng.randint(1, 3)) for _ in range(rng.randint(1, 3))]
    strategy = rng.choice(["adaptive", "ddmin", "ofat"])
    oracle = Counting(planted(*causes))
    result = ablate(items, oracle, strategy=strategy, measure_removal=True, more_sets=7)
    assert {frozenset(s.members) for s in result.sets} == minimal_sets(causes), (causes, strategy)
    assert result.sets_complete is True
    everything = frozenset(items)
    for fix in result.fixes:
        assert everything - fix in oracle.calls and planted(*causes)(everything - fix) is Outcome.PASS
    assert set(result.fixes) == set(hitting_sets(list(minimal_sets(causes))))
    check_table(result)


def test_hitting_sets_are_minimal_and_meet_every_set():
    family = [frozenset("ab"), frozenset("ac"), frozenset("d")]
    found = hitting_sets(family)
    assert set(found) == {frozenset("ad"), frozenset("bcd")}
    for h in found:
        assert all(h & s for s in family)
        assert not any(all((h - {x}) & s for s in family) for x in h)
    assert hitting_sets([frozenset(range(i, i + 2)) for i in range(0, 40, 2)], limit=10) is None


def test_the_run_budget_keeps_the_first_set_and_says_another_cause_may_remain():
    oracle = planted({"fast", "n"}, {"fast", "block"})
    full = ablate(SOFTMAX, Counting(oracle), measure_removal=True, more_sets=7)
    result = ablate(SOFTMAX, oracle, measure_removal=True, more_sets=7, max_runs=full.runs - 3)
    assert result.complete and result.culprits == ("fast", "n")
    assert result.sets_complete is False and "budget" in result.sets_note
    assert frozenset({"n"}) in result.open_fixes     # bad without n failed; its set not isolated
    assert result.effects["n"].role == "member"        # bad still fails without n: not CULPRIT
    check_table(result)
    assert any(step.startswith("Another cause may remain") for step in said(result))


def test_max_sets_bounds_the_search_and_names_what_is_left():
    causes = [{f"x{i}"} for i in range(5)]
    result = ablate([f"x{i}" for i in range(8)], planted(*causes), measure_removal=True, more_sets=2)
    assert len(result.sets) == 3 and result.sets_complete is False
    assert "3 failing sets were found already" in result.sets_note and result.open_fixes


def test_an_unjudged_fix_leaves_the_list_open():
    def oracle(config):
        if config == frozenset(SOFTMAX) - {"n", "block"}:
            return Outcome.UNRESOLVED
        return planted({"fast", "n"}, {"fast", "block"})(config)
    result = ablate(SOFTMAX, oracle, measure_removal=True, more_sets=7)
    assert len(result.sets) == 2 and result.sets_complete is False
    assert "could not be judged" in result.sets_note
    assert result.fixes == [frozenset({"fast"})] and frozenset({"n", "block"}) in result.open_fixes


def test_ctrl_c_while_looking_for_other_sets_keeps_the_first():
    calls = []
    base = planted({"fast", "n"}, {"fast", "block"})

    def oracle(config):
        calls.append(config)
        if len(calls) == 6:        # the first set is settled and measured after 5 runs
            raise KeyboardInterrupt
        return base(config)
    with pytest.raises(SearchStopped) as stop:
        ablate(SOFTMAX, oracle, measure_removal=True, more_sets=7)
    result = stop.value.result
    assert stop.value.interrupted and result.culprits == ("fast", "n")
    assert result.sets_complete is False and result.sets_note == "interrupted"
    check_table(result)


def test_with_invalid_hybrids_every_set_found_is_a_real_minimal_set():
    items = [f"x{i}" for i in range(10)]
    causes = [{"x1", "x4"}, {"x7"}]
    truth = planted(*causes)
    oracle = with_invalid(truth, 0.2, seed=3, keep_valid=lambda c: c in (frozenset(), frozenset(items)))
    result = ablate(items, oracle, measure_removal=True, more_sets=7)
    for s in result.sets:
        assert truth(frozenset(s.members)) is Outcome.FAIL
    check_table(result)


def test_without_more_sets_nothing_changes_for_a_single_cause():
    for name in STRATEGIES:
        if name == "exhaustive":
            continue
        result = ablate(list("abcdef"), planted({"d"}), strategy=name)
        assert result.sets == [] and result.sets_complete is None and result.culprits == ("d",)


def test_exhaustive_names_every_other_set():
    result = ablate(list("abcde"), planted({"a", "c"}, {"e"}), strategy="exhaustive")
    assert "{a, c}" in " ".join(said(result))


def masked(config: frozenset) -> Outcome:
    """a fails alone, but b (also in bad) masks it; c and d fail together: bad fails through c and d
    only, so reverting c alone fixes it. Not monotone: {a} fails and {a, b} passes."""
    fails = ("a" in config and "b" not in config) or {"c", "d"} <= config
    return Outcome.FAIL if fails else Outcome.PASS


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin", "ofat"])
def test_a_set_another_difference_masks_in_bad_is_said_and_the_smaller_fixes_are_given(strategy):
    """The sets found ({a}, {c, d}) make 'a and c' look like the fix, and 'bad passes only when every
    set loses a member' -- but bad without c alone was seen to pass, with a still in: that run is
    the fix (and d's), and {a} is a set bad masks."""
    result = ablate(list("acbd"), masked, strategy=strategy, measure_removal=True, more_sets=7)
    assert {frozenset(s.members) for s in result.sets} == {frozenset("a"), frozenset("cd")}
    assert set(result.fixes) == {frozenset("c"), frozenset("d")}, result.fixes
    assert [(set(s), set(f)) for s, f in result.masked] in ([({"a"}, {"c"})], [({"a"}, {"d"})])
    check_table(result)
    words = " ".join(said(result))
    assert "Fix c, or d" in words and "both a and" not in words
    assert "every set loses a member" not in words and "bad masks it" in words, words


def b_masks_a(config: frozenset) -> Outcome:
    """a fails alone and b masks it; b and c fail together. Bad fails through b and c only, so
    reverting c alone fixes it; the fixes are exactly {c} and {a, b} (brute force over all 16)."""
    fails = ("a" in config and "b" not in config) or {"b", "c"} <= config
    return Outcome.FAIL if fails else Outcome.PASS


@pytest.mark.parametrize("strategy", ["adaptive", "ddmin", "ofat"])
@pytest.mark.parametrize("measure_removal", [False, True])
def test_a_fix_read_back_from_a_masking_run_is_shrunk_to_the_members_it_needs(strategy, measure_removal):
    """diff searches without measuring each removal: the only masking run it had was bad without
    c and d, and 'fix: both a and c, or both c and d' was printed, d irrelevant and neither of them
    the smallest fix. Each fix is shrunk while bad without the rest still passes."""
    items = list("abcd")
    result = ablate(items, b_masks_a, strategy=strategy, measure_removal=measure_removal, more_sets=7)
    everything = frozenset(items)
    truth = [frozenset(f) for r in range(1, 5) for f in itertools.combinations(items, r)
             if b_masks_a(everything - frozenset(f)) is Outcome.PASS]
    minimal = {f for f in truth if not any(g < f for g in truth)}
    assert minimal == {frozenset("c"), frozenset("ab")}
    assert set(result.fixes) == minimal, result.fixes
    assert [(set(s), set(f)) for s, f in result.masked] == [({"a"}, {"c"})]
    assert "both c and d" not in " ".join(said(result))
