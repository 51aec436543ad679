"""Where the hangs of a command were stuck: the facts every report's "stuck at" section reads.

Abstractions
------------
hang_facts -- after a search, collect the snapshots its hangs carry (bisectk/stuck.py, taken by the
              executors at the moment the watchdog fired): the bad endpoint's first hang, the culprit
              configuration's (the minimal failing set, the first bad commit), and the others taken
              within --snapshots. When the culprit hung but none of its runs was read (the budget
              was spent, or its runs came from the ledger) and the failure is not intermittent, it is
              run once more with a snapshot forced: a run recorded like any other, counted in its own
              phase (oracle.HANG_PICTURE). Another hung run is named by what it applied. The good run's
              last progress point is set beside the bad endpoint's, and `same` says whether the bad
              endpoint and the culprit wait at the same places (False: two different hangs). A
              hang the test's own timeout ended (pytest-timeout) was never the watchdog's, so never
              read: it is not run again for a picture, and `own_timeout` says why there is none.
Returns plain data (a dict) for the records; report/stuck.py words it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bisectk.engine.oracle import HANG_PICTURE, Oracle
from bisectk.names import c_quoted
from bisectk.outcome import FailKind, Run
from bisectk.run.classify import PYTEST_TIMEOUT
from bisectk.stuck import Snapshot, same_place

if TYPE_CHECKING:
    from bisectk.engine.records import EndpointCheck

END = "<end>"


def _hung(run: Run) -> bool:
    return run.kind is FailKind.HANG


def _own_timeout(run: Run) -> bool:
    """A hang the test's own timeout ended, before the watchdog could read where it waits."""
    return _hung(run) and run.signature.startswith(PYTEST_TIMEOUT)


def _entry(label: str, run: Run) -> dict[str, Any]:
    return {"label": label, "snapshot": run.stuck, "progress": run.progress, "at_s": round(run.duration_s, 3)}


def last_point(runs) -> str | None:
    """The last progress point a passing run reached before it finished (its timeline's key)."""
    for r in runs:
        points = [k for k, _ in (r.timeline or ()) if k != END]
        if r.kind is None and points:
            key = points[-1]
            return key.split(":", 1)[1] if key.startswith("phase:") else key
    return None


def _named(label: str, point: Any) -> str:
    """A hung run's label, with what it applied when the label alone does not say (a set
    space's 'hybrid': its differences, the first five and how many more)."""
    if label != "hybrid" or not isinstance(point, frozenset):
        return label
    names = [c_quoted(n) for n in sorted(map(str, point))]
    return f"{label} ({', '.join(names[:5])}" + (f" +{len(names) - 5} more" if len(names) > 5 else "") + ")"


def hang_facts(oracle: Oracle, check: EndpointCheck, culprit=None,
               culprit_label: str = "the culprit configuration") -> dict | None:
    """See the module docstring. `culprit`: the search's answer as a point of the oracle's space."""
    bad = next((r for r in check.bad.runs if _hung(r) and r.stuck), None)
    facts: dict[str, Any] = {"bad": _entry("the bad endpoint", bad) if bad else None, "culprit": None,
                             "others": [], "good_last_point": last_point(check.good.runs),
                             "bad_hung": any(_hung(r) for r in check.bad.runs), "same": None}
    hangs = [r for r in check.bad.runs if _hung(r)]
    if hangs and all(map(_own_timeout, hangs)):
        facts["own_timeout"] = True
    read: Run | None = None     # the culprit's run whose picture is shown
    if culprit is not None:
        v = oracle.trials.verdict(culprit)
        runs = list(v.runs) if v else []
        read = next((r for r in runs if _hung(r) and r.stuck), None)
        policy = oracle.trials.runner.snapshots
        # An intermittent hang is not re-run for its picture: a pass would be one more observation
        # that the answer already given did not weigh (issue 23's confirmation runs do that).
        steady = not check.flaky and check.bad_rate.fails == check.bad_rate.runs
        watched = any(_hung(r) and not _own_timeout(r) for r in runs)
        if read is None and steady and watched and policy is not None and policy.enabled:
            again = oracle.observe(culprit, snapshot=True, phase=HANG_PICTURE)
            read = again if _hung(again) and again.stuck else None
            if read is None:
                facts["culprit_note"] = (f"{culprit_label} was run once more to read where it waits: "
                                         f"{again.outcome.value.upper()} this time"
                                         + ("" if _hung(again) else " (the hang is intermittent)"))
        if read is not None:
            facts["culprit"] = _entry(culprit_label, read)
    shown = [e["snapshot"] for e in (facts["bad"], facts["culprit"]) if e]
    # the point each shown picture is of: another hang of the same point at the same places (the
    # culprit's confirmation run) is no other hang, and was listed as one ('hybrid')
    pictured = [r for r in (bad, read if facts["culprit"] else None) if r is not None]
    key_of = {id(t.run): t.key for t in oracle.trials.trials}
    places = {key_of[id(r)]: Snapshot.from_dict(r.stuck) for r in pictured if id(r) in key_of}
    for t in oracle.trials.trials:
        if not (_hung(t.run) and t.run.stuck) or t.run.stuck in shown:
            continue
        if t.key in places and same_place(places[t.key], Snapshot.from_dict(t.run.stuck)) is True:
            continue
        shown.append(t.run.stuck)
        facts["others"].append(_entry(_named(t.label, oracle.trials.points.get(t.key)) or t.key, t.run))
    if facts["bad"] is None and facts["culprit"] is None and not facts["others"]:
        return None if not facts["bad_hung"] else facts
    a = Snapshot.from_dict(facts["bad"]["snapshot"]) if facts["bad"] else None
    b = Snapshot.from_dict(facts["culprit"]["snapshot"]) if facts["culprit"] else None
    facts["same"] = same_place(a, b)
    return facts
