"""The "stuck at" section of every report: where a hang's threads and warps waited when the
watchdog fired (the facts of engine/hangs.py, each snapshot a bisectk/stuck.py Snapshot).

Abstractions
------------
rows           -- one snapshot as table rows: role, count, place, instruction or source text, wait.
terminal_lines -- plain lines for the end-of-run summary (or one headline each, `brief`): per snapshot a heading (whose run, where
                  its progress stopped beside the good run's last point, which tool read it and in
                  how long) and the rows; "two different hangs" when the bad endpoint and the
                  culprit wait at different places; notes (a missing tool, no permission) as is.
markdown       -- the same as a debug-log section (a table per snapshot).
"""

from __future__ import annotations

import re

from bisectk.names import c_quoted
from bisectk.report.safe import emphasis, strong, terminal_text
from bisectk.stuck import Snapshot

HEADER = ["where", "who", "count", "waiting at", "instruction / code", "wait"]
MAX_OTHERS = 3
# the hangs were the test's own timeout's (engine/hangs.py own_timeout): no watchdog of bisectk's read them
OWN_TIMEOUT = ("stuck at: not read (pytest-timeout ended each hang before bisectk's watchdog could read where "
               "it waits: give --timeout below its limit)")


def _snap(entry: dict | None) -> Snapshot | None:
    return Snapshot.from_dict(entry.get("snapshot")) if entry else None


_PLACE = re.compile(r"^(.*?):(\d+)(\s.*)?$", re.DOTALL)
_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": " "}


def _one_line(text: str) -> str:
    """A cell on one line: a thread's name, a source line may hold a newline or a tab."""
    return "".join(_BREAKS.get(c, c) for c in text) if any(c in text for c in _BREAKS) else text


def _place(place: str) -> str:
    """'file:line function' with the file C-quoted as git quotes a path ("a\\nb.py":2 f)."""
    m = _PLACE.match(place)
    if m is None:
        return _one_line(place)
    return c_quoted(m.group(1)) + ":" + m.group(2) + _one_line(m.group(3) or "")


def rows(snap: Snapshot) -> list[list[str]]:
    out = []
    for g in snap.groups:
        unit = "warp" if g.device else "thread"
        out.append([_one_line(g.scope), _one_line(g.role), f"{g.count} {unit}{'s' if g.count != 1 else ''}",
                    _place(g.place), _one_line(g.instruction), _one_line(g.wait or "-")])
    return out


def _heading(entry: dict, snap: Snapshot, good_last: str | None) -> str:
    bits = [entry["label"]]
    if entry.get("progress"):
        bits.append(entry["progress"].split(";")[0])
    elif good_last:
        bits.append(f"the good run's last progress point: '{good_last}'")
    how = f"read by {', '.join(snap.tools)} in {snap.took_s:.2f} s" if snap.tools else ""
    return "stuck at -- " + "; ".join(b for b in bits if b) + (f" ({how})" if how else "")


def _aligned(table: list[list[str]]) -> list[str]:
    # the cells as the terminal will show them (a thread name's ESC is written `\x1b`, four
    # columns): padded after the console escaped them, a row was pushed out of line
    table = [[terminal_text(c) for c in r] for r in table]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))] if table else []
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]


def _short_rows(snap: Snapshot) -> list[list[str]]:
    """Terminal rows: who, place, code or instruction (cut), wait; the scope only where it varies."""
    scopes = {g.scope for g in snap.groups}
    out = []
    for r in rows(snap):
        code = r[4] if len(r[4]) <= 40 else r[4][:37] + "..."
        who = r[1] if r[2].startswith("1 ") or "warp" in r[2] else f"{r[1]} ({r[2]})"
        out.append(([r[0]] if len(scopes) > 1 else []) + [who, r[3], code, r[5]])
    return out


def _entries(facts: dict) -> list[dict]:
    """The snapshots worth a table: the bad endpoint's, the culprit's, and the others that wait
    somewhere the bad endpoint does not (those that wait at the same places are `_alike`)."""
    out = [e for e in (facts.get("bad"), facts.get("culprit")) if e]
    return out + [e for e in _others(facts) if not _same_as_bad(facts, e)][:MAX_OTHERS]


def _others(facts: dict) -> list[dict]:
    return list(facts.get("others") or [])


def _same_as_bad(facts: dict, entry: dict) -> bool:
    from bisectk.stuck import same_place
    return bool(facts.get("bad")) and same_place(_snap(facts["bad"]), _snap(entry)) is True


def _alike(facts: dict) -> list[str]:
    return [e["label"] for e in _others(facts) if _same_as_bad(facts, e)]


def terminal_lines(facts: dict | None, brief: bool = False) -> list[str]:
    """The section for a summary; `brief`: one line per snapshot (its headline), for the short
    summaries whose details go to the debug log (triage)."""
    if not facts:
        return []
    lines: list[str] = []
    if brief:
        for entry in _entries(facts)[:2]:
            snap = _snap(entry)
            if snap is not None:
                lines.append(f"stuck at -- {entry['label']}: {snap.headline()}")
        if facts.get("same") is False:
            lines.append("two different hangs: the bad endpoint and the culprit wait at different places")
        return lines
    if facts.get("bad_hung") and not facts.get("bad") and not facts.get("culprit"):
        lines.append(OWN_TIMEOUT if facts.get("own_timeout") else
                     "stuck at: not read (--snapshots 0, or the hangs came from the ledger)")
    for entry in _entries(facts):
        snap = _snap(entry)
        if snap is None:
            continue
        if entry is facts.get("culprit") and facts.get("same") is True:
            lines.append(f"stuck at -- {entry['label']}: the same places as the bad endpoint")
            continue
        lines.append(_heading(entry, snap, facts.get("good_last_point")))
        scopes = {g.scope for g in snap.groups}
        if len(scopes) == 1 and snap.device:   # a kernel's scope says which CTAs; a lone host process needs no pid
            lines.append(f"  in {snap.groups[0].scope}:")
        lines += _aligned(_short_rows(snap))
        for n in snap.notes:
            lines.append(f"  ({n})")
    alike = _alike(facts)
    if alike:
        lines.append(f"stuck at the same places as the bad endpoint: {len(alike)} more hang(s) read ("
                     + "; ".join(alike[:3]) + (", ..." if len(alike) > 3 else "") + ")")
    if facts.get("same") is False:
        lines.append("two different hangs: the bad endpoint and the culprit configuration wait at different places")
    if facts.get("culprit_note"):
        lines.append(facts["culprit_note"])
    return lines


def markdown(facts: dict | None) -> str:
    from bisectk.report.debuglog import table
    if not facts:
        return ""
    parts: list[str] = []
    for entry in _entries(facts):
        snap = _snap(entry)
        if snap is None:
            continue
        parts.append(strong(_heading(entry, snap, facts.get('good_last_point'))[len('stuck at -- '):]))
        parts.append("")
        if snap.groups:
            parts.append(table(HEADER, rows(snap)))
        for n in snap.notes:
            parts += ["", emphasis(n)]
        parts.append("")
    alike = _alike(facts)
    if alike:
        parts.append("Waiting at the same places as the bad endpoint: " + "; ".join(alike) + ".")
    if facts.get("same") is False:
        parts.append(f"{strong('Two different hangs:')} the bad endpoint and the culprit configuration wait at different places.")
    elif facts.get("same") is True:
        parts.append("The culprit configuration waits at the same places as the bad endpoint.")
    if facts.get("culprit_note"):
        parts += ["", facts["culprit_note"]]
    return "\n".join(parts).strip()
