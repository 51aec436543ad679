"""TimeoutPolicy: the watchdog's limit and where it came from, as plain data.

The runner (run/runner.py) sets it and the result records (engine/records.py) carry it; the
reports word it. It lives below both, so that a record never imports the process machinery.

Abstractions
------------
TimeoutPolicy -- seconds, source ("spec", "option": --timeout, "calibrated", "progress": a
                 deadline that follows each run's progress through the good run's timeline, "cap":
                 nothing calibrated yet) and a detail in words.
calibrated    -- max(floor, factor x the slowest good run), stated with its inputs.
second_chance -- the watch of a run given longer once: EXTEND x the watchdog, within its bounds.
limit_problem -- what is wrong with a time limit the command line gives (--timeout, --build-timeout).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_FLOOR_S = 1.0
DEFAULT_FACTOR = 5.0
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: beyond that a "timeout" is a typo (and overflows timers)
MIN_TIMEOUT_S = 0.01    # the least fixed watchdog, --timeout's and the spec's `timeout`'s
MAX_REPEAT = 1000       # runs of one configuration a spec or --repeat may ask for
CALIBRATION_CAP_S = 120.0  # the first good run has no baseline yet; --timeout overrides
EXTEND = 4.0            # a second chance for a run the calibrated watchdog stopped: this many times
EXTEND_MIN_S = 10.0     # the watchdog, at least this long, at most the cap (second_chance)


def limit_problem(option: str, seconds: float) -> str | None:
    """What is wrong with `seconds` given as the time limit `option` (--timeout, --build-timeout):
    not more than 0, more than MAX_TIMEOUT_S, or NaN; None when it is a limit."""
    if 0 < seconds <= MAX_TIMEOUT_S:
        return None
    return f"{option} {seconds:g}: must be more than 0 seconds and at most a week ({MAX_TIMEOUT_S:g} s)"


@dataclass(frozen=True)
class TimeoutPolicy:
    seconds: float
    source: str   # "spec" | "option" | "calibrated" | "progress" | "cap"
    detail: str

    def to_dict(self) -> dict:
        return {"seconds": round(self.seconds, 3), "source": self.source, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: dict) -> TimeoutPolicy:
        return cls(d["seconds"], d["source"], d["detail"])


def calibrated(good_durations: list[float], floor: float = DEFAULT_FLOOR_S,
               factor: float = DEFAULT_FACTOR) -> TimeoutPolicy:
    slowest = max(good_durations)
    seconds = max(floor, factor * slowest)
    return TimeoutPolicy(seconds, "calibrated",
                         f"max({floor:g} s, {factor:g} x slowest good run {slowest:.2f} s) = {seconds:.2f} s")


def second_chance(seconds: float) -> float:
    """The seconds a run stopped by a calibrated watchdog of `seconds` is given when it is run once
    more to tell a hang from a slow run: EXTEND times as long, at least EXTEND_MIN_S, at most
    the cap."""
    return min(CALIBRATION_CAP_S, max(EXTEND * seconds, EXTEND_MIN_S))
