"""No confidence without confirmation: the runs that stand behind a deterministic answer. Pure.

A deterministic search takes every run at its word: one pass clears, one failure convicts. An
intermittent failure nobody declared breaks that silently (a lucky pass of a bad commit moves the
answer), so before an answer is given as certain the boundary it rests on is run again:

- history: the first bad commit fails again, and each of its parents (among the candidates)
  passes again, `repeats` times;
- factors and hunks (the sets search): the culprit set fails again on good, bad without each fix
  passes again, and the proper subsets behind an interaction claim pass again (ablation.py
  drives it through the Tester).

How many passes. `repeats` follows from the failure rate observed so far and the asked
confidence: with k failures in n runs of configurations the answer calls bad, p_lo is the lower
end of the interval on that rate at the asked confidence (Wilson), and a configuration failing at
p_lo or more passes `repeats` times in a row with probability (1 - p_lo)^repeats <= 1 - confidence
(flaky.ConfidenceRule, the rule of the factor searches: one statistic). Two things make the
interval stricter than the factor rule's 95%: it is taken at the asked confidence, and the rate
is counted as k failures in n + 1 runs, because a deterministic search reads every pass as good:
if the answer is wrong, the pass it rests on (the parent's, the fix's) was a run of a bad
configuration, and the k / n it saw overstates the rate. A deterministic failure observed k times
asks for fewer passes as k grows (k = 7: 9 passes at 0.99; an undeclared 50% flake then slips
through a wrong answer's confirmation with probability 0.5 x 0.5^9 = 0.1%).

What a run costs. A failing re-run and a passing one rarely cost the same: a hang costs its
watchdog (and, warm, the worker it kills), a pass only the run. With `costs` = (seconds of a
failing run, seconds of a passing run), the split between re-runs of the culprit and passes of
each parent is the one that costs least time, not fewest runs; the confidence is the same either
way (every split considered meets it). Without costs each run counts 1, and so do costs within 2x
of each other (cost_ratio: the plan must not follow the jitter of measured times).

Declared steady (`steady`: --no-flaky, the user's word that the failure is deterministic): the
rate is 1, so each claim is run once more -- the culprit fails again, each parent (each fix, each
subset behind an interaction) passes again. The confirmation still catches a wrong endpoint, a
mix-up of worktrees or a flake that shows itself; it no longer bounds an undeclared flake's
chance of slipping through, which the declaration took on.

A contradiction (the culprit passes, a parent fails) means the failure is intermittent: the
caller goes on in the flake model from every observation made so far (history.search_dag,
ablation.ablate); nothing is run again from the start.

Abstractions
------------
repeats_for      -- the passes asked of a configuration judged good, from k / n and the confidence.
cost_ratio       -- measured costs as the plan weighs them (1 each within 2x; else a power of two).
plan_confirmation -- how often the culprit runs again and how many passes each parent needs, at
                    the least cost (runs, or seconds with `costs`).
confirm_culprit  -- run the confirmation of a DAG answer through the search's gateway; returns
                    the facts (dag.Confirmation).
set_claims       -- the configurations a sets search's answer rests on, FAIL and PASS claims.
claim_rule       -- the two-rate rule a FAIL claim is confirmed by when good may fail too
                    (old_side_rule: the same from old-side counts the caller makes).
confirm_sets     -- run them again through the Tester; returns the facts (SetConfirmation).
switched_rule    -- the one-sided rule a contradicted deterministic sets search goes on with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bisectk.outcome import Outcome
from bisectk.search.flaky import ConfidenceRule

if TYPE_CHECKING:     # the history half loads numpy: the factor searches (and the CLI's start) need neither
    from bisectk.search.dag import Confirmation, Dag
    from bisectk.search.gateway import Gateway

Costs = Callable[[], tuple[float, float]]   # (seconds of a failing run, seconds of a passing run)

MAX_RETRIES = 3     # an untestable confirmation run is tried again this often before it is given up


def repeats_for(fails: int, runs: int, confidence: float) -> int:
    """Passes in a row that clear a configuration when bad ones failed `fails` of `runs` times
    (counted as `runs` + 1: see the module docstring)."""
    if fails < 1:
        return 1
    return ConfidenceRule.derive(fails, runs + 1, alpha=1.0 - confidence, confidence=confidence).repeats


def _bad_side_counts(dag: Dag, gw: Gateway, culprit: int) -> tuple[int, int]:
    """Fails and runs observed at commits the answer calls bad (the culprit's descendants)."""
    bad = dag.descendants([culprit])
    fails = sum(1 for o in gw.observations if o.outcome is Outcome.FAIL and bad[o.index])
    runs = sum(1 for o in gw.observations if o.outcome is not Outcome.UNRESOLVED and bad[o.index])
    return fails, runs


CLEAR_S = 0.5   # a cost difference per run below this is scheduling noise (search/confirm.py cost_ratio)


def cost_ratio(costs: tuple[float, float]) -> tuple[float, float]:
    """(failing, passing) costs as the plan weighs them: 1 each unless one kind costs at least
    twice the other and at least CLEAR_S seconds more, else the ratio rounded to a power of two
    (at most 16). Measured run times jitter: a run of a tenth of a second takes twice that on a
    loaded machine. A plan that followed every jitter would differ between two runs of the same
    command (and between a command and its concurrent twin sharing a ledger). Only a clear
    difference, a hang against a pass, changes the split."""
    fail, ok = (max(float(c), 1e-3) for c in costs)
    ratio = fail / ok
    if 0.5 < ratio < 2.0 or abs(fail - ok) < CLEAR_S:
        return 1.0, 1.0
    step = min(max(round(math.log2(ratio)), -4), 4)
    return (2.0 ** step, 1.0) if step > 0 else (1.0, 2.0 ** -step)


def plan_confirmation(fails: int, runs: int, parents: int, confidence: float,
                      costs: tuple[float, float] = (1.0, 1.0), made: int = 0,
                      passes: Sequence[int] = (), steady: bool = False) -> tuple[int, int]:
    """(more culprit re-runs, passes asked of each parent): every re-run of the culprit that fails
    raises the observed rate and so lowers the passes asked of each parent; the split whose new
    runs cost least is taken, each failing run at costs[0] and each pass at costs[1]. `fails` /
    `runs` count every run made so far; `made` of them are re-runs of the culprit already made,
    `passes` the confirming passes each parent already has (a resumed or replayed log: what it
    holds is used as it is, whatever plan made it). The culprit must fail again at least once.
    `steady` (declared deterministic): once each."""
    if steady:
        return (0 if made else 1), 1
    fail_cost, pass_cost = cost_ratio(costs)
    have = list(passes) or [0] * parents
    best = None
    for extra in range(0 if made else 1, 31):
        repeats = repeats_for(fails + extra, runs + extra, confidence) if parents else 0
        cost = extra * fail_cost + sum(max(repeats - p, 0) for p in have) * pass_cost
        if best is None or cost < best[0]:
            best = (cost, extra, repeats)
    return best[1], best[2]


def confirm_culprit(dag: Dag, gw: Gateway, culprit: int, confidence: float,
                    spend: Callable[[int], int], width: int = 1, costs: Costs | None = None,
                    steady: bool = False, fix: bool = False, base: tuple[int, int] = (0, 0),
                    group: tuple[int, ...] = ()) -> Confirmation:
    """Run the culprit again (each run must fail) and each parent among the candidates `repeats`
    times (each must pass), in rounds of up to `width` runs; stop at the first contradiction.
    `spend(k)` returns how many of k runs the budget allows (raising when none). The gateway must
    allow repeats (the caller sets it). `costs()`: (seconds of a failing run, of a passing one).
    `fix` (a search for a fix): the other way round, see _fix_plan; `base`: the old end's (fails,
    passes), which it counts. `group`: the answer is these commits (untestable ones beside
    `culprit`, the member run), and the parents are those outside it."""
    from bisectk.search.dag import Confirmation
    parents = tuple(dag.parents_of(culprit))
    if group:
        parents = tuple(sorted({p for m in group for p in dag.parents_of(m)} - set(group)))
    fails, runs = _bad_side_counts(dag, gw, culprit)
    # runs made already beyond the one the narrowing read (a replayed or resumed log holds the
    # confirmation it made; repeats are the same evidence whenever they were made) count
    obs = gw.observations
    own_fails = sum(1 for o in obs if o.index == culprit and o.outcome is Outcome.FAIL)
    # where a replayed log's confirmation begins: at the culprit's first failure after the one the
    # narrowing read (after the leading runs of --bad, when it is the culprit: those are its read).
    # A parent's passes from there on are all the confirmation's: a parent the narrowing never ran
    # (good as an ancestor of a passing commit) has no run of its own to leave out
    seeds = next((k for k, o in enumerate(obs) if o.index != culprit), len(obs))
    again = [k for k, o in enumerate(obs) if k >= seeds and o.index == culprit and o.outcome is Outcome.FAIL]
    start = (again[1:] if not seeds else again)[:1] or [len(obs)]
    passes = [[k < start[0] for k, o in enumerate(obs) if o.index == p and o.outcome is Outcome.PASS] for p in parents]
    own_passes = [max(sum(before) - 1, 0) + before.count(False) if _read(dag, obs, culprit, p) else len(before)
                  for p, before in zip(parents, passes)]
    made = max(own_fails - 1, 0) if _read(dag, obs, culprit, culprit) else own_fails
    if fix:
        plan, repeats = _fix_plan(dag, gw, culprit, parents, confidence, costs() if costs else (1.0, 1.0),
                                  made, own_passes, steady, base)
    else:
        extra, repeats = plan_confirmation(fails, runs, len(parents), confidence, costs() if costs else (1.0, 1.0),
                                           made=made, passes=own_passes, steady=steady)
        plan = [culprit] * extra + [p for p, have in zip(parents, own_passes) for _ in range(max(repeats - have, 0))]
    made: list[tuple[int, str]] = []
    retries = {i: 0 for i in (culprit, *parents)}
    expect = {culprit: Outcome.FAIL, **{p: Outcome.PASS for p in parents}}
    while plan:
        chunk = plan[:spend(min(width, len(plan)))]
        del plan[:len(chunk)]
        outcomes = gw.test_many(chunk) if width > 1 else [gw.test(chunk[0])]
        for i, outcome in zip(chunk, outcomes):
            made.append((i, outcome.value))
            if outcome is Outcome.UNRESOLVED:
                retries[i] += 1
                if retries[i] > MAX_RETRIES:    # it cannot be run: the answer cannot be confirmed
                    return Confirmation(culprit, repeats, tuple(made), (i, outcome.value), parents)
                plan.append(i)      # a run that could not be judged is not a verdict: again
                continue
            if outcome is not expect[i]:
                return Confirmation(culprit, repeats, tuple(made), (i, outcome.value), parents)
    return Confirmation(culprit, repeats, tuple(made), None, parents)


def _fix_plan(dag: Dag, gw: Gateway, culprit: int, parents: tuple[int, ...], confidence: float,
              costs: tuple[float, float], made: int, own_passes: list[int], steady: bool,
              base: tuple[int, int]) -> tuple[list[int], int]:
    """The confirmation of a fix (--find-fix; FAIL = the new side, where the subject passes): the
    plan of a regression's, the other way round. What an intermittent failure fakes is here the
    search's FAIL (a broken commit's run that happened to pass), and what proves is its PASS (the
    subject failed: still broken). So the claimed commit is the one run `repeats` times (each must
    be FAIL), from the rate of proving runs on the old side (its commits' and the old end's, `base`),
    and each parent among the candidates runs again (each must PASS), as often as the least cost
    asks: each of its failures raises that rate. Returns (the runs to make, repeats)."""
    old_fails, old_runs, _, _ = observed_sides(dag, gw.observations, culprit)
    proving, runs = old_runs - old_fails + base[1], old_runs + base[0] + base[1]
    if not parents:     # nothing on the old side to run again: the rate is as observed
        repeats = 1 if steady else repeats_for(proving, runs, confidence)
        return [culprit] * max(repeats - made, 0), repeats
    extra, repeats = plan_confirmation(proving, runs, 1, confidence, costs[::-1], made=min(own_passes),
                                       passes=[made], steady=steady)
    return [p for p in parents for _ in range(extra)] + [culprit] * max(repeats - made, 0), repeats


def _read(dag: Dag, obs, culprit: int, commit: int) -> bool:
    """Whether the narrowing read a run of `commit`: without its runs, the other observations do
    not leave `culprit` the one allowed culprit. Where they do (a --jobs round ran it beside the
    run that decided, or it was never run before the confirmation), every run of it is the
    confirmation's, wherever a log lists it: a --jobs log lists runs in the order they ended."""
    import numpy as np
    allowed = np.ones(dag.n, dtype=bool)
    for i, outcome in {(o.index, o.outcome) for o in obs if o.index != commit}:
        if outcome is Outcome.FAIL:
            allowed &= dag.ancestors(i)
        elif outcome is Outcome.PASS:
            allowed &= ~dag.ancestors(i)
    return not (allowed[culprit] and allowed.sum() == 1)


def observed_sides(dag: Dag, observations, culprit: int) -> tuple[int, int, int, int]:
    """(old fails, old runs, new fails, new runs): the runs on each side of `culprit`."""
    import numpy as np
    bad = dag.descendants([culprit])
    counts = np.zeros((2, 2), dtype=np.int64)
    for o in observations:
        if o.outcome is not Outcome.UNRESOLVED:
            counts[int(bad[o.index]), int(o.outcome is Outcome.FAIL)] += 1
    return int(counts[0, 1]), int(counts[0].sum()), int(counts[1, 1]), int(counts[1].sum())


@dataclass(frozen=True)
class SetConfirmation:
    """Facts of the confirmation of a sets search's answer: the passes each PASS claim needed
    (`repeats`), every confirmation as (configuration, expected, what the new runs said), and the
    first one that contradicted the answer."""

    repeats: int
    checks: tuple[tuple[frozenset, str, str], ...]
    contradicted: tuple[frozenset, str] | None = None

    @property
    def ok(self) -> bool:
        return self.contradicted is None

    @property
    def runs(self) -> int:
        return len(self.checks)


def set_claims(everything: frozenset, found: Sequence, fixes: Sequence[frozenset], context: frozenset,
               ) -> tuple[list[frozenset], list[frozenset]]:
    """What an answer of a sets search rests on: the configurations that must FAIL (each set on
    good, with the context) and those that must PASS (bad without each fix shown, or without the
    whole set when no fix was looked for; the context alone, the passing side of a difference
    that dd isolated; every proper subset behind an interaction claim)."""
    fail = [context | frozenset(s.members) for s in found if s.members]
    passing: list[frozenset] = [everything - f for f in fixes]
    if not fixes and found and found[0].members and not context:
        passing.append(everything - frozenset(found[0].members))
    if context and any(s.members for s in found):
        # dd's answer is a pair: context passes, context plus the difference fails. One lucky
        # pass of a configuration that holds the cause made the context; its failing side runs
        # again and fails, so only a re-run of the passing side can show it
        passing.append(context)
    for s in found:
        if s.interaction:
            passing += [context | p for p, o in s.proof.items() if o is Outcome.PASS]
    return list(dict.fromkeys(fail)), list(dict.fromkeys(passing))


def claim_rule(tester, must_fail: Sequence[frozenset], good: tuple[int, int], confidence: float):
    """The rule a FAIL claim is confirmed by where nothing declared that good never fails
    (confirm_sets' `good`): the two rates under rates.SWITCHED, the old side measured by good's
    runs and every run of a configuration that holds none of the claims (the old side, if the
    answer is right: a spurious failure there shows good's rate) and one failure more, the new
    side by the runs of the rule in force (the bad endpoint's after an intermittent start, the
    failing configurations' after a switch). A failure is then evidence, not proof.

    Both counts are what a wrong claim would leave them. If a claim is wrong, the failure that
    made it one was an old-side failure, which the old-side runs (those holding no claim) leave
    out: counted there, p_old = 0 is no longer certain, and one fresh failure no longer convicts
    a claim after a clean run of the old side. And a search that started deterministic has the
    bad endpoint's one run, which left p_new anywhere in Beta(2, 2): passes hardly cleared a claim
    and two or three failures in its runs convicted one failing 5%. With the endpoint's runs and
    no such failure, 61 of 913 old-side claims were convicted over 1000 seeded searches of 8
    factors (3 culprits, good failing 5%, bad always), 4 of 86 answers wrong; now 6 of 873, none
    wrong (bench/flaky_calibration.py). The claims do not share 1 - confidence: the answer is
    given only if every claim is confirmed, as for the PASS claims."""
    return old_side_rule(tester, _old_side(tester, must_fail, good), confidence)


def old_side_rule(tester, old: tuple[int, int], confidence: float):
    """claim_rule's two rates, from the old side's (fails, runs) as the caller counts them (a
    threshold's: good's runs and those of the values below the failing one claimed)."""
    from bisectk.search.rates import SWITCHED, RateRule     # numpy: only a flake-ruled confirmation needs it
    old_fails, old_runs = old
    return RateRule(old_fails + 1, old_runs + 1, tester.rule.fails, tester.rule.runs, alpha=1.0 - confidence,
                    prior=SWITCHED)


def _old_side(tester, must_fail: Sequence[frozenset], good: tuple[int, int]) -> tuple[int, int]:
    """(fails, runs) of the old side: good's runs and those of every configuration holding no claim."""
    old_fails, old_runs = good
    for key, history in tester.history.items():
        if isinstance(key, frozenset) and not any(claim <= key for claim in must_fail):
            judged = [o for o in history if o is not Outcome.UNRESOLVED]
            old_fails += sum(o is Outcome.FAIL for o in judged)
            old_runs += len(judged)
    return old_fails, old_runs


def measuring(tester, old_side: Callable[[], tuple[int, int]], confidence: float, old, given: int,
              made: list[Outcome], judge):
    """Tester.confirm's `rejudge` for a FAIL claim the two-rate rule cannot decide yet: the old
    side is run too (`old`, the configuration holding no claim: good, or dd's context, or a
    threshold's good value), once each time it has had fewer runs (`old_side()`: its (fails,
    runs) as the caller counts them) than the claim, and the rule is taken again from every run.
    A claim is evidence only against a measured old side: with good run once (a deterministic
    start), p_old stayed anywhere near 1/2 and no run of the claim could separate the two rates
    (a 50% flake of one hunk, good clean: 60 runs of the claim, then `unconfirmed`). The runs
    of `old` are added to `made`; `judge`: the rule before any of them."""
    def rejudge(fresh: Sequence[Outcome]):
        nonlocal judge
        if old_side()[1] < given + len(fresh):
            made.append(tester.confirm(old, Outcome.PASS, 1))
            judge = old_side_rule(tester, old_side(), confidence)
        return judge
    return rejudge


def failing_evidence(tester, seen: tuple[int, int]) -> tuple[int, int]:
    """(fails, runs): `seen` (the bad endpoint's, and what the caller counted before) and every
    judged run of each configuration the tester holds as FAIL, its confirmation's re-runs
    included: the failure rate the PASS claims' passes are planned from."""
    fails, runs = seen
    for key, outcome in tester.memo.items():
        if outcome is Outcome.FAIL:
            judged = [o for o in tester.history.get(key, ()) if o is not Outcome.UNRESOLVED]
            fails, runs = fails + judged.count(Outcome.FAIL), runs + len(judged)
    return fails, runs


def _unselected(runs: Sequence[Outcome]) -> list[Outcome]:
    """A claim's runs as evidence: all of them but one failure, the one that made the search pick
    it (of the many configurations a search runs, one on the good side fails now and then: its
    failure is why it is a claim, and says nothing more), as repeats_for counts n + 1 runs."""
    judged = [o for o in runs if o is not Outcome.UNRESOLVED]
    if Outcome.FAIL in judged:
        judged.remove(Outcome.FAIL)
    return judged


def confirm_sets(tester, must_fail: Sequence[frozenset], must_pass: Sequence[frozenset],
                 confidence: float, endpoint: tuple[int, int] = (0, 0), costs: Costs | None = None,
                 steady: bool = False, good: tuple[int, int] | None = None,
                 old: frozenset = frozenset()) -> SetConfirmation:
    """Run each claim again through the Tester (Tester.confirm): FAIL claims first, then the
    number of passes a PASS claim needs follows from the failure rate observed at configurations
    judged FAIL (their runs, plus the bad endpoint's `endpoint` = (fails, runs)), or is one when
    the failure was declared `steady` (and no flake rule took over). Stops at the first
    contradiction.

    `good`: the good endpoint's (fails, runs), given where nothing declared how the good side
    fails (no --flaky). Under the one-sided rule then (an intermittent start, or a contradiction's
    switch) one failure of a FAIL claim is no proof: a good side that fails sometimes fails once
    at some configuration of the many a search runs, and the search, taking it as proof, built
    its answer on it (a spurious extra set, a culprit that is not one). Each FAIL claim is then
    run afresh until the two-rate rule (claim_rule) decides, and while it cannot, `old` (the
    configuration holding no claim: good, or dd's context) is run too, so that both rates are
    measured (measuring). Those runs are fresh runs of `old` made after the answer: where all
    of them passed, they count among the passes a PASS claim on `old` asks (a failing `old`
    passes them and the rest in a row as rarely as it would the rest alone)."""
    checks: list[tuple[frozenset, str, str]] = []
    # a configuration the search could not judge (a different failure, a build error) is no
    # claim the answer rests on: the report lists it as unresolved
    must_pass = [k for k in must_pass if tester.outcome_of(k) is not Outcome.UNRESOLVED]
    judged = good is not None and isinstance(tester.rule, ConfidenceRule)
    made: list[Outcome] = []        # the runs of `old` made to measure the old side
    for key in must_fail:
        if judged:
            given = _unselected(tester.history.get(key, ()))
            judge = claim_rule(tester, must_fail, good, confidence)
            got = tester.confirm(key, Outcome.FAIL, 1, judge, given,
                                 measuring(tester, lambda: _old_side(tester, must_fail, good), confidence, old,
                                           len(given), made, judge))
        else:
            got = tester.confirm(key, Outcome.FAIL, 1)
        checks.append((key, "fail", got.value))
        if got is not Outcome.FAIL:
            return SetConfirmation(0, tuple(checks), (key, got.value))
    fails, runs = failing_evidence(tester, endpoint)
    # each PASS claim is asked the passes of one claim at the full confidence, not a share of it:
    # the answer is given only if every claim passes, so a wrong answer (one of its claims a
    # failing configuration) slips through only if that claim passes all of its fresh runs,
    # (1 - p_lo)^repeats <= 1 - confidence however many right claims stand beside it. Splitting
    # 1 - confidence among the claims (a union bound, for an answer given if any claim held)
    # asked an interaction's four claims 19 passes each where 12 give the same bound
    repeats = 1 if steady and tester.rule is None else repeats_for(fails, runs, confidence)
    if tester.rule is not None:     # fresh passes, at least as many as the rule's verdicts needed
        repeats = max(repeats, getattr(tester.rule, "repeats", 1))
    elif must_fail and must_pass and not steady:
        # as for a commit (plan_confirmation): each more failure of the culprit set raises the
        # observed rate and lowers the passes every PASS claim needs; the cheapest split is run
        again, repeats = plan_confirmation(fails - 1, runs - 1, len(must_pass), confidence,
                                           costs() if costs else (1.0, 1.0))   # again >= 1: one made
        for _ in range(again - 1):
            got = tester.confirm(must_fail[0], Outcome.FAIL, 1)
            checks.append((must_fail[0], "fail", got.value))
            if got is not Outcome.FAIL:
                return SetConfirmation(0, tuple(checks), (must_fail[0], got.value))
    for key in must_pass:
        ask = repeats - len(made) if key == old and all(o is Outcome.PASS for o in made) else repeats
        got = tester.confirm(key, Outcome.PASS, ask) if ask > 0 else Outcome.PASS
        checks.append((key, "pass", got.value))
        if got is not Outcome.PASS:
            return SetConfirmation(repeats, tuple(checks), (key, got.value))
    return SetConfirmation(repeats, tuple(checks))


def switched_rule(tester, endpoint: tuple[int, int] = (0, 0), confidence: float = 0.99) -> ConfidenceRule:
    """The flake model a contradicted deterministic sets search goes on in: the one-sided rule
    from every run of configurations that failed at least once (their passes count: they are
    what the contradiction showed), plus the bad endpoint's runs."""
    fails, runs = endpoint
    for key, history in tester.history.items():
        judged = [o for o in history if o is not Outcome.UNRESOLVED]
        if any(o is Outcome.FAIL for o in judged):
            fails += sum(o is Outcome.FAIL for o in judged)
            runs += len(judged)
    # the interval is taken at the asked confidence (not the factor rule's 95%): the runs it
    # rests on are few, and a switched search has already been wrong once
    rule = ConfidenceRule.derive(max(fails, 1), max(runs, fails, 1), alpha=1.0 - confidence, confidence=confidence)
    return replace(rule, basis="the configurations that failed at least once (the bad endpoint's runs included)")
