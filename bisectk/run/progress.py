"""A watchdog that follows where a run is, instead of waiting 5 x the whole good run.

The good run of a JIT-compiled kernel is almost all imports and compilation; its kernel takes
milliseconds. A hang (an mbarrier phase that never completes) shows as silence after the launch.
So the good run's progress is recorded -- its output lines with numbers blanked, and the phase
lines of the subject protocol -- and a running configuration's deadline follows its own progress.

Phase protocol (optional, beside `BISECTK_RESULT`): a subject prints, on stdout or stderr,

    BISECTK_PHASE imports       (imports done)
    BISECTK_PHASE compile       (compilation begins)
    BISECTK_PHASE compiled      (compilation done)
    BISECTK_PHASE launch        (the kernel is launched)
    BISECTK_PHASE synchronized  (the kernel finished; checking the result)

Any other name is a progress point too; any other output line is one as well (numbers blanked).
A point is progress only the first time it is seen in a run: a line that repeats one already seen
once numbers are blanked ("waiting for barrier 7", "waiting for barrier 8", ...) is a spin loop
talking, not a run moving on.

Abstractions
------------
point_key -- an output line as a progress point: `phase:launch`, or the line with numbers blanked.
blurred, unhexed -- a whole read of raw lines made alike where point_key makes them alike (a filter
             at memory speed, so a log of `step 1`, `step 2`, ... is keyed per read, not per line).
Timeline  -- a run's progress points (first occurrence of each, seconds from the start) and its
             end; stored with the run in the ledger, so a good run answered from the ledger still
             calibrates.
Recorder  -- collects a running process's points (thread-safe: two reader threads feed it); its
             listeners hear each line with whether it is new in this run.
FixedWatch -- a Recorder whose deadline is a fixed number of seconds (the spec's `timeout`,
             --timeout, the calibration cap, a build's limit; None: no watchdog).
ProgressWatch -- the deadline of a running configuration, from the good run's timeline: the time the
             run last showed progress (a line new in this run), at the good point it last matched, plus
             what the good run needed from that point to its end, each stretch weighted:
               a compile stretch x10 (a new configuration's JIT may take several times longer),
               a kernel stretch (launch -> the next point) x4 (more with a SLOW oracle),
               anything else (start-up, allocation, checking) x5,
             plus a slack (the whole good run's duration, at least 1 s); before the run's first
             progress point, never before the floor. At the launch point only the kernel stretch
             counts, with 1 s of slack: the protocol promises the next point (`synchronized`) when
             the kernel is done, so silence there is a hang about a second after the point where the good
             run had finished, however long its imports and compile took. Without a good timeline
             the deadline is the fixed watchdog (the old rule: max(floor, 5 x good run)).
             Whatever the run prints, the deadline is capped at the largest stretch weight x the
             good run's whole duration, plus the slack (`cap`): a run that keeps finding new
             things to say can take that long and no longer.
             `where(now)` puts a hang into words for the report.
watch_from_dict -- either watch rebuilt from its `to_dict()` (a run on another host keeps its
             watchdog beside it).

Both keep the Watch protocol of run/watchdog.py, which the one wait loop reads.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

PHASE_TAG = "BISECTK_PHASE"
MAX_POINTS = 200
MAX_SECONDS = 365 * 24 * 3600.0   # a fixed deadline this long (or inf, nan) is no watchdog
MAX_SEEN = 20_000   # distinct lines remembered per run; past that, no line counts as new (the cap decides)
COMPILE_FACTOR, KERNEL_FACTOR, DEFAULT_FACTOR, SLACK_S = 10.0, 4.0, 5.0, 1.0
# Ordinary lines that say what the protocol's phases say: a subject that prints "compiling kernel"
# or "launching kernel" is followed as if it printed BISECTK_PHASE compile / launch.
_COMPILE_LINE = re.compile(r"\bcompil(?:e|ing)\b", re.IGNORECASE)
_LAUNCH_LINE = re.compile(r"\blaunch(?:es|ed|ing)?\b", re.IGNORECASE)
_DONE_LINE = re.compile(r"\b(?:done|finished|complete[d]?|compiled|took|in # ?m?s)\b", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


_EVERY_DIGIT = bytes.maketrans(b"0123456789", b"1111111111")
_BUT_ZERO = bytes.maketrans(b"123456789", b"111111111")
_HEX_BYTES = re.compile(_HEX.pattern.encode())
_PHASE_BYTES = PHASE_TAG.encode()


def blurred(lines: bytes) -> bytes:
    """Raw output lines (a whole read of them) made alike where point_key makes them alike, byte
    for byte and at memory speed: every ASCII digit becomes '1' (a '0' is kept where the read holds
    '0x', which may begin an address), and a read holding a phase line (whose name may hold digits)
    is left as it is. Two lines blurred alike have one point_key (the same bytes but digits, so
    each regular expression matches them alike); lines whose numbers differ in length blur apart:
    a filter before point_key, never one in its place (run/output.py's LineFeed)."""
    if _PHASE_BYTES in lines:
        return lines
    return lines.translate(_BUT_ZERO if b"0x" in lines else _EVERY_DIGIT)


def unhexed(lines: bytes) -> bytes:
    """Blurred lines with each `0x...` blanked as point_key blanks it (and the '0's kept for it made
    '1' after): printf'd addresses, whose hex letters blur apart, blurred alike. Lines stay lines,
    one for one, not byte for byte."""
    if b"0x" not in lines or _PHASE_BYTES in lines:
        return lines
    return _HEX_BYTES.sub(b"0x#", lines).translate(_EVERY_DIGIT)


def point_key(line: str) -> str | None:
    text = line.strip()
    if not text or text.startswith("BISECTK_RESULT"):
        return None
    if text.startswith(PHASE_TAG):
        name = text[len(PHASE_TAG):].split()
        return f"phase:{name[0]}" if name else None
    return _NUMBER.sub("#", _HEX.sub("0x#", text))[:160]


def role(key: str) -> str:
    """What a progress point starts: 'compile', 'launch' (the kernel runs until the next point), or
    'other'. The protocol's phase lines say it; an ordinary line that reads like one says it too."""
    if key.startswith("phase:"):
        return {"phase:compile": "compile", "phase:launch": "launch"}.get(key, "other")
    if _DONE_LINE.search(key):
        return "other"
    if _LAUNCH_LINE.search(key):
        return "launch"
    return "compile" if _COMPILE_LINE.search(key) else "other"


def describe_point(key: str) -> str:
    return f"'{key[6:]}'" if key.startswith("phase:") else f"the line {key!r}"


@dataclass(frozen=True)
class Timeline:
    points: tuple[tuple[str, float], ...]
    end: float

    def to_list(self) -> list:
        return [[k, round(t, 4)] for k, t in self.points] + [["<end>", round(self.end, 4)]]

    @classmethod
    def from_list(cls, data: Any) -> Timeline | None:
        if not data:
            return None
        pts = [(str(k), float(t)) for k, t in data]
        if pts[-1][0] != "<end>":
            return None
        return cls(tuple(pts[:-1]), pts[-1][1])


class Recorder:
    """The points a running process has shown, first occurrence each, with the time of its last line."""

    def __init__(self) -> None:
        self.points: list[tuple[str, float]] = []
        self.seen: set[str] = set()     # every distinct key of this run (up to MAX_SEEN)
        self.last_line_t = 0.0
        self.lock = threading.Lock()
        self.listeners: list = []

    def feed(self, text: str, t: float) -> bool:
        """One output line of the run, `t` seconds after its start. Whether the run has shown
        MAX_SEEN keys, so that no line can be new any more (its reader then hands on only the last
        line of each read: the time of its last line is all a line still tells)."""
        key = point_key(text)
        if key is None:
            return len(self.seen) >= MAX_SEEN
        with self.lock:
            self.last_line_t = max(self.last_line_t, t)
            new = key not in self.seen and len(self.seen) < MAX_SEEN
            if new:
                self.seen.add(key)
                if len(self.points) < MAX_POINTS:
                    self.points.append((key, t))
            for fn in self.listeners:
                fn(key, t, new)
            return len(self.seen) >= MAX_SEEN

    def timeline(self, end: float) -> Timeline:
        """The points with the run's end, never before the last line it printed (a line is timed
        when read, which may come after the exit was timed)."""
        with self.lock:
            return Timeline(tuple(self.points), max(end, self.last_line_t))


class FixedWatch(Recorder):
    """A Recorder with a fixed deadline: `seconds` after the start (None, inf, nan or a year or
    more: no watchdog rather than a broken one)."""

    def __init__(self, seconds: float | None = None):
        super().__init__()
        self.seconds = seconds if seconds is not None and seconds < MAX_SECONDS else None

    def deadline(self) -> float | None:
        return self.seconds

    def where(self, now: float) -> str:
        return ""

    def to_dict(self) -> dict:
        return {"kind": "fixed", "seconds": self.seconds}


class ProgressWatch(Recorder):
    """A Recorder whose deadline follows the run's progress through the good run's timeline (see
    the module docstring)."""

    def __init__(self, good: Timeline | None, fixed_s: float, floor_s: float = 1.0, kernel_factor: float = KERNEL_FACTOR,
                 grace_s: float | None = None, until: int | None = None, end_s: float = 0.0):
        super().__init__()
        self.good, self.fixed_s, self.floor_s = good, fixed_s, floor_s
        self.end_s = end_s      # at least this long past the good run's last point (a slow teardown: Runner.stretch)
        self.kernel_factor = kernel_factor
        # a second chance (engine/oracle.py): at least `grace_s` to reach point `until` (a first
        # run's compile lies before it), then the good run's pace from there
        self.grace_s, self.until = grace_s, until
        self.matched = -1        # index into good.points of the last point this run reached
        self.ref_t = 0.0         # when this run last showed progress
        self.matched_t = 0.0     # when it reached good.points[matched]
        self.own_t = 0.0         # when it last printed a new line the good run never printed
        if good is not None and good.points:
            self.index = {}
            for i, (k, _) in enumerate(good.points):
                self.index.setdefault(k, i)
            self.listeners.append(self._advance)

    def _advance(self, key: str, t: float, new: bool) -> None:
        # only a line not seen before in this run is progress: a loop printing "waiting for
        # barrier i" repeats one key, and repeating it must not push the deadline on
        if not new:
            return
        j = self.index.get(key)
        if j is not None and j > self.matched:
            self.matched, self.matched_t = j, t
        if j is None:
            self.own_t = max(self.own_t, t)
        self.ref_t = max(self.ref_t, t)

    def _factor(self, key: str) -> float:
        kind = role(key)
        if kind == "compile":
            return COMPILE_FACTOR
        if kind == "launch":
            return self.kernel_factor
        return DEFAULT_FACTOR

    def allowance(self, j: int) -> float:
        """What the good run needed from point j (-1: the start) to its end, each stretch weighted;
        from the launch point, only the kernel stretch (to the next point)."""
        g = self.good
        marks = [("<start>", 0.0), *g.points, ("<end>", g.end)]
        stretches = list(zip(marks[j + 1:], marks[j + 2:]))
        if j >= 0 and role(g.points[j][0]) == "launch":
            stretches = stretches[:1]
        return sum((DEFAULT_FACTOR if key == "<start>" else self._factor(key)) * max(0.0, t1 - t0)
                   for (key, t0), (_, t1) in stretches)

    def deadline(self) -> float:
        """Seconds from the start of the run after which it is a hang."""
        if self.good is None or not self.good.points:
            return self.fixed_s
        with self.lock:
            j, ref, at = self.matched, self.ref_t, self.matched_t
        deadline = ref + self.allowance(j) + self.slack(j)
        # the floor guards a run that has shown nothing yet; past a progress point, the good run's
        # own stretches decide (a spec's timeout_floor for JIT jitter is what the compile weight covers)
        deadline = max(self.floor_s, deadline) if j < 0 else deadline
        if self.grace_s is None or self.until is None:
            deadline = min(deadline, self.cap())
        else:
            deadline = min(deadline, self.cap() + self.grace_s)     # the grace's time is not the run's own
            deadline = max(deadline, self.grace_s) if j < self.until else deadline
        if self.end_s and j == len(self.good.points) - 1:
            # from the point, as it was measured (past_last_point): a run's own new lines past it
            # do not push it on (they would, by `end_s` each, past the cap)
            deadline = max(deadline, at + self.end_s)
        return deadline

    def cap(self) -> float:
        """The most any run may take, however much new output it shows: the largest stretch
        weight x the good run's whole duration, plus the slack (never below the floor)."""
        weight = max(COMPILE_FACTOR, DEFAULT_FACTOR, self.kernel_factor)
        return max(self.floor_s, weight * self.good.end + max(SLACK_S, self.good.end))

    def slack(self, j: int) -> float:
        """Past any progress point, 1 s on top of the good run's weighted stretches: a hang is
        called about a second after the point where the good run had finished, whichever line it
        last printed. Before the first point, at least the whole good run: start-up (imports, a
        cold cache) varies the most, and nothing of the run is known yet. A configuration whose
        stretch legitimately takes more than the weights allow (5x, 10x for a compile) needs the
        spec's `timeout` or --timeout."""
        if j >= 0:
            return SLACK_S
        return max(SLACK_S, self.good.end)

    def to_dict(self) -> dict:
        return {"kind": "progress", "good": self.good.to_list() if self.good else None, "fixed_s": self.fixed_s,
                "floor_s": self.floor_s, "kernel_factor": self.kernel_factor, "grace_s": self.grace_s,
                "until": self.until, "end_s": self.end_s}

    def where(self, now: float) -> str:
        """Where a hung run stopped, in words, or '' without a good timeline."""
        if self.good is None or not self.good.points:
            return ""
        with self.lock:
            j, at, last = self.matched, self.matched_t, self.own_t
        if j < 0:
            return before_first_point(self.good)
        key, t_good = self.good.points[j]
        finish = at + (self.good.end - t_good)    # where this run would have finished, at the good run's pace
        said = (f"hung after {describe_point(key)}, {now - finish:.1f} s past the point where the good run had "
                f"finished ({self.good.end - t_good:.2f} s after that point)")
        if now < finish and j + 1 < len(self.good.points):
            # at the launch point only the kernel's stretch counts: called before the good run's finish
            nxt, t_next = self.good.points[j + 1]
            said = (f"hung after {describe_point(key)}, {now - at:.1f} s after it (the good run showed "
                    f"{describe_point(nxt)} {t_next - t_good:.2f} s after that point)")
        # lines of its own after the point: they moved the deadline on, up to the cap. A line of the
        # good run's read out of its order (stdout and stderr are two pipes, read apart) is not one
        if last > at:
            said += (f"; it went on printing lines the good run never printed, the last {max(0.0, now - last):.1f} s "
                     f"before it was stopped")
        return said


def before_first_point(good: Timeline) -> str:
    """Where a run stopped before the first of the good run's progress points, in words."""
    return (f"hung before its first progress point (the good run reached {describe_point(good.points[0][0])} "
            f"after {good.points[0][1]:.1f} s)")


def watch_from_dict(d: dict | None) -> FixedWatch | ProgressWatch | None:
    """A watch rebuilt from its `to_dict()` (None stays None)."""
    if d is None:
        return None
    if d.get("kind") == "progress":
        return ProgressWatch(Timeline.from_list(d["good"]), d["fixed_s"], d["floor_s"], d["kernel_factor"],
                             d.get("grace_s"), d.get("until"), d.get("end_s", 0.0))
    return FixedWatch(d.get("seconds"))


def reach(timeline: Any, good: Timeline | None) -> int:
    """How far a run got through the good run's progress: the index in `good` of the last of its
    points (a Run.timeline) that the good run also showed; -1 when it showed none of them."""
    if good is None or not timeline:
        return -1
    order = {key: i for i, (key, _) in enumerate(good.points)}
    return max((order[str(p[0])] for p in timeline if p and str(p[0]) in order), default=-1)


def past_last_point(timeline: Any, good: Timeline | None) -> float | None:
    """The seconds a run (a Run.timeline) took from the good run's last progress point to its end;
    None when it did not reach that point."""
    run = Timeline.from_list(timeline)
    if run is None or good is None or not good.points:
        return None
    # the run's points, not its stored list, whose end entry is named as a line `<end>` is keyed
    at = next((t for k, t in run.points if k == good.points[-1][0]), None)
    return None if at is None else max(0.0, run.end - at)
