"""Where the hangs of a command were stuck: the facts every report's "stuck at" section reads.

Abstractions
------------
hang_facts -- after a search, collect the snapshots its hangs carry (bisectk/stuck.py, taken by the
              executors at the moment the watchdog fired): the bad endpoint's first hang, the culprit
              configuration's (the minimal failing set, the first bad commit), and the others taken
              within --snapshots. When the culprit hung but none of its runs was read (the budget
              was spent, or its runs came from the ledger) and the failure is not intermittent, it is
              run once more with a snapshot forced: a confirmation run recorded like any other. The good run's
              last progress point is set beside the bad endpoint's, and `same` says whether the bad
              endpoint and the culprit wait at the same places (False: two different hangs).
Returns plain data (a dict) for the records; report/stuck.py words it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bisectk.engine.oracle import HANG_PICTURE, Oracle
from bisectk.outcome import FailKind, Run
from bisectk.stuck import Snapshot, same_place

if TYPE_CHECKING:
    from bisectk.engine.records import EndpointCheck

END = "<end>"


def _hung(run: Run) -> bool:
    return run.kind is FailKind.HANG


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


def hang_facts(oracle: Oracle, check: EndpointCheck, culprit=None,
               culprit_label: str = "the culprit configuration") -> dict | None:
    """See the module docstring. `culprit`: the search's answer as a point of the oracle's space."""
    bad = next((r for r in check.bad.runs if _hung(r) and r.stuck), None)
    facts: dict[str, Any] = {"bad": _entry("the bad endpoint", bad) if bad else None, "culprit": None,
                             "others": [], "good_last_point": last_point(check.good.runs),
                             "bad_hung": any(_hung(r) for r in check.bad.runs), "same": None}
    if culprit is not None:
        v = oracle.trials.verdict(culprit)
        runs = list(v.runs) if v else []
        read = next((r for r in runs if _hung(r) and r.stuck), None)
        policy = oracle.trials.runner.snapshots
        # An intermittent hang is not re-run for its picture: a pass would be one more observation
        # that the answer already given did not weigh (issue 23's confirmation runs do that).
        steady = not check.flaky and check.bad_rate.fails == check.bad_rate.runs
        if read is None and steady and any(_hung(r) for r in runs) and policy is not None and policy.enabled:
            again = oracle.observe(culprit, snapshot=True, phase=HANG_PICTURE)
            read = again if _hung(again) and again.stuck else None
            if read is None:
                facts["culprit_note"] = (f"{culprit_label} was run once more to read where it waits: "
                                         f"{again.outcome.value.upper()} this time"
                                         + ("" if _hung(again) else " (the hang is intermittent)"))
        if read is not None:
            facts["culprit"] = _entry(culprit_label, read)
    shown = [e["snapshot"] for e in (facts["bad"], facts["culprit"]) if e]
    for t in oracle.trials.trials:
        if _hung(t.run) and t.run.stuck and t.run.stuck not in shown:
            shown.append(t.run.stuck)
            facts["others"].append(_entry(t.label or t.key, t.run))
    if facts["bad"] is None and facts["culprit"] is None and not facts["others"]:
        return None if not facts["bad_hung"] else facts
    a = Snapshot.from_dict(facts["bad"]["snapshot"]) if facts["bad"] else None
    b = Snapshot.from_dict(facts["culprit"]["snapshot"]) if facts["culprit"] else None
    facts["same"] = same_place(a, b)
    return facts
