"""What to try next, in words: every next step a command suggests is worded here, and only here.

Abstractions
------------
step_words -- one step of a record's `advice` ({"step": kind, facts...}, made by the search,
              search/result.py `advise`, and by the engines) as one sentence, in the voice of a
              debug log.
next_steps -- a record's steps in words (a record stored by an older bisectk kept its words:
              they are used as they are). `one_line`: each name in a step that holds a control
              character (a file named 'a<newline>b.py') C-quoted, as the terminal writes it
              elsewhere, so a step is one line; --json and the reports keep names raw.
document   -- a record's JSON document (`--json`, `--json-out`, the ledger's copy): its facts
              (`to_dict`) with its next steps in words beside them, its parts' too (triage's
              bisection and isolation).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from bisectk.engine.records import Record
from bisectk.names import c_quoted, counted
from bisectk.report.words import made_words

_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _names(items: Sequence[Any]) -> str:
    return ", ".join(str(x) for x in items)


def _fix(fix: Sequence[str]) -> str:
    """'fast', 'both n and block', 'all of a, b and c'."""
    items = [str(d) for d in fix]
    if len(items) == 1:
        return items[0]
    joined = ", ".join(items[:-1]) + " and " + items[-1]
    return ("both " if len(items) == 2 else "all of ") + joined


def _stopped(s: dict) -> str:
    shown, unsure = s["shown"], s["unsure"]
    against = s.get("contradicted")
    if against:     # resuming would roll the same confirmation again: say what did not hold
        what = _names(against["config"]) if against["config"] else "good"
        did = {"pass": "passed", "fail": "failed"}.get(against["got"], "gave no clear verdict")
        claimed = "fail" if against["got"] != "fail" else "pass"
        head = (f"The search's answer was not confirmed after {s['runs']} run{'' if s['runs'] == 1 else 's'}: "
                f"{what} {did} when run again, where the answer needs it to {claimed}.")
        if against.get("two_rate"):
            return (f"{head} The two failure rates are too close to tell configurations apart over these runs: "
                    "measure the endpoints over more runs (--calibrate-runs), or make the failure steadier first.")
        return (f"{head} The failure is intermittent, and a failure was taken as proof (good may fail too, now "
                "and then): --flaky weighs both rates (the two-rate model), or make the failure steadier first.")
    return (f"The search stopped after {s['runs']} run{'' if s['runs'] == 1 else 's'}{made_words(s['runs'], s.get('made'))} "
            f"({s['reason'] or 'interrupted'}); the smallest failing "
            f"configuration so far has {len(shown) + len(unsure)} of {s['of']} differences"
            + (f", of which {_names(shown)} shown necessary" if shown else "")
            + (f"; not yet resolved: {_names(unsure)}" if unsure else "")
            + (". The two failure rates are too close to tell those configurations apart over these runs: measure "
               "the endpoints over more runs (--calibrate-runs), or make the failure steadier first."
               if s.get("undecided") else ". Resume to finish."))


def _together(s: dict) -> str:
    tail = ("reverting any one of them from bad fixes it (each was run)." if s["each_revert_fixes"] else
            "whether reverting one of them fixes bad was not shown: run bad with each reverted.")
    return (f"{_names(s['culprits'])} fail only together (every proper subset passes): look for the state or "
            f"assumption they share; {tail}")


def _isolate_rest(s: dict) -> str:
    tail = ("; then ablate again with a larger --max-runs (the runs so far are answered from the ledger)"
            if s["budget"] else "; make that configuration the [bad] side of a spec and ablate it")
    return "To isolate what remains: " + "; ".join(f"{c} shows bad without {_names(m) or '-'}"
                                                   for c, m in zip(s["commands"], s["without"])) + tail


WORDS: dict[str, Callable[[dict], str]] = {
    # the set searches (search/result.py advise)
    "stopped": _stopped,
    "good_failed": lambda s: (
        f"The good configuration failed in the search (within {counted(s['runs'], 'run')}), so no set of differences is to "
        "blame: a run may leave state that the next one sees (a file or directory it creates in the tree, a "
        "cache, a lock), or good fails sometimes. Make good pass on every run (`bisectk run` it a few times), "
        "then search again."),
    "first_run_cost": lambda s: (
        f"{s['point']} was called a hang after {round(s['stopped_s'], 2):g} s and ended in {s['ended_s']:.2f} s when given "
        f"{s['given_s']:g} s: a first run's cost (a JIT compile into a cache, a build) that the endpoints, run "
        "before, no longer paid. "
        + (f"The watchdog was set from it ({s['watchdog_s']:.1f} s), so a real hang waits that long"
           if s["watchdog_s"] > s.get("before_s", s["stopped_s"]) else "Each commit stopped so is given longer the same way")
        + "; --timeout SECONDS just above one first run (with its compile) makes hangs cheaper."),
    "sets": lambda s: (f"{len(s['sets'])} " + ("independent failing sets, each enough to fail on its own: "
                                               if not s.get("masked") else "failing sets, each enough to fail on good: ")
                       + "; ".join(f"set {i} {{{_names(m)}}}" for i, m in enumerate(s["sets"], 1))
                       + (". Bad passes only when every set loses a member." if not s.get("masked") else
                          "; but not every set needs to lose a member: " + "; ".join(
                              f"{{{_names(m)}}} fails on good, yet bad without {_names(f)} passed with it in "
                              "(another difference of bad masks it)" for m, f in s["masked"]) + ".")),
    "alone": lambda s: (f"{s['culprit']} alone on the good configuration reproduces the failure: start from the "
                        "code paths it changes."),
    "together": _together,
    "proof_incomplete": lambda s: (f"{_names(s['culprits'])} form a 1-minimal failing set, but the interaction proof "
                                   f"is incomplete: {s['unresolved']} proper subset(s) stayed unresolved after their "
                                   "re-runs (they do not build, are invalid, or fail differently every time)."),
    "fixes": lambda s: "Fix " + ", or ".join(_fix(f) for f in s["fixes"]) + ": bad passed with "
                       + ("each of these reverted." if len(s["fixes"]) > 1 else
                          "it reverted." if len(s["fixes"][0]) == 1 else "these reverted together."),
    "not_enough": lambda s: ("Reverting " + " or ".join(s["members"]) + " alone is not enough: bad still failed "
                             "without it (another set does not need it)."),
    "another_cause": lambda s: f"Another cause may remain: {s['note']}.",
    "context": lambda s: (f"The isolated difference fails with {_names(s['context'])} also applied; run the "
                          "'adaptive' strategy to learn which of those it needs."),
    "confirm_fix": lambda s: ("Confirm the fix: run the bad configuration with the culprits reverted one at a time "
                              "('ofat' measures this for every difference)."),
    "other_sets": lambda s: (f"{len(s['sets'])} other failing set(s) were seen: "
                             + "; ".join(f"{{{_names(m)}}}" for m in s["sets"]) + ". There may be more than one cause."),
    "unresolved": lambda s: (f"{s['count']} configuration(s) were UNRESOLVED (invalid, build failure or a different "
                             "failure): a different failure may be a second bug worth its own ablation."),
    "intermittent": lambda s: f"The failure is intermittent: {s['rule']}.",
    # ablate (engine/ablate.py)
    "verify_fixes": lambda s: "Verify each fix on the bad configuration: " + "; ".join(s["commands"]),
    "verify_fix": lambda s: f"Verify the fix candidate on the bad configuration: {s['command']}",
    "isolate_rest": _isolate_rest,
    "threshold": lambda s: f"{s['factor']}: {s['text']}; " + (
        "the failure is intermittent there: measure those values with `bisectk run --set` and --repeat "
        "before acting on them." if not s.get("confirmed", True)
        else "inspect what changes between those two values." if s.get("monotone", True)
        else "inspect what the failing values have in common."),
    "different_failure": lambda s: "A different failure appeared in some hybrids (listed above): ablate it separately.",
    # diff (engine/diff.py)
    "unbuilt_hybrids": lambda s: (f"{s['count']} hybrid(s) did not build or failed differently; hunks that only build "
                                  "together are searched as a group, so check the culprit diff builds on its own."),
    "confirm_lines": lambda s: ("Apply only the culprit lines to GOOD and confirm the failure; then revert them in BAD "
                                "and confirm the fix."),
    # bisect (engine/bisect.py)
    "resume": lambda s: f"The search stopped ({s['reason']}); run it again with --resume to continue.",
    "not_separable": lambda s: (f"Not separable: the good side fails {s['old']:.2f} [{s['old_lo']:.2f}, {s['old_hi']:.2f}], "
                                f"the bad side {s['new']:.2f} [{s['new_lo']:.2f}, {s['new_hi']:.2f}]"
                                + (f"; about {s['more_runs']} more runs would probably separate them "
                                   f"(--max-runs, then --resume)" if s['more_runs'] else "") + "."),
    "fix_skipped": lambda s: "Make the skipped commits testable (fix their build) to resolve the ambiguity.",
    "contradiction": lambda s: (f"The observations contradict each other: {s['text']}. The failure may be flaky (try "
                                "--flaky) or depend on more than the commit (the environment, the build cache)."),
    "inspect": lambda s: (f"Inspect the diff of the first {s.get('term', 'bad')} commit: git show {s['sha']}"
                          if not s.get("parent") else
                          f"Inspect what the first {s.get('term', 'bad')} commit, a merge, brought in: git diff "
                          f"{s['parent']} {s['sha']} (git show of a merge shows only what it resolved)"),
    "inside_merge": lambda s: (f"The first {s.get('term', 'bad')} commit is a merge on the first-parent chain: the change "
                               "came in with the branch it merged. Find the commit inside that branch: bisectk bisect "
                               + (f"--find-fix --bad {s['parent']} --good {s['merge']}" if s.get("find_fix") else
                                  f"--good {s['parent']} --bad {s['merge']}") + " ... (without --first-parent)"),
    "other_path": lambda s: (f"No commit that touches {' '.join(s['paths'])} is {s['term']}: the change is in another "
                             "path; run again without the pathspec."),
    "isolate_lines": lambda s: (f"Isolate the culprit lines inside it: bisectk triage ... --good {s['good']} "
                                f"--bad {s['bad']}"),
}


def step_words(step: dict) -> str:
    words = WORDS.get(step.get("step", ""))
    return words(step) if words else str(step.get("text", step))


def next_steps(rec: Record, one_line: bool = False) -> list[str]:
    if not rec.advice:
        return [_quoted(s) for s in rec.next_steps] if one_line else list(rec.next_steps)
    return [step_words(_quoted(s) if one_line else s) for s in rec.advice]


def _quoted(value):
    """`value` (a step, its facts) with each string that holds a control character C-quoted."""
    if isinstance(value, str):
        return c_quoted(value) if _CONTROL.search(value) else value
    if isinstance(value, dict):
        return {k: _quoted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_quoted(v) for v in value)
    return value


def document(rec: Record) -> dict[str, Any]:
    """The record's JSON document: its facts, and its next steps in words."""
    doc = rec.to_dict()
    doc["next_steps"] = next_steps(rec)
    for part in ("bisect", "diff"):          # triage's parts, stored as documents of their own
        sub = doc.get(part)
        if isinstance(sub, dict) and sub.get("advice"):
            sub["next_steps"] = [step_words(s) for s in sub["advice"]]
    for patches in (doc, doc.get("diff")):   # diff's, and triage's diff part
        if isinstance(patches, dict) and isinstance(patches.get("diff"), str):
            _patch_bytes(patches)
    return doc


def _patch_bytes(doc: dict[str, Any]) -> None:
    """`diff_base64` and `lines_diff_base64`: a patch's bytes where it holds some that are not
    UTF-8 (a latin-1 source), which its text writes as `\\xNN` and so does not apply; else null."""
    import base64
    from bisectk.report.safe import undecoded_bytes
    for key in ("diff", "lines_diff"):
        raw = undecoded_bytes(doc.get(key) or "")
        doc[f"{key}_base64"] = base64.b64encode(raw).decode("ascii") if raw is not None else None
