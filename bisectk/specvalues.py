"""A factor's values as the subject receives them, and a metric's accepted range: the text of
values (no file, no spec), for bisectk/spec.py, which loads specs and re-exports these names.

Abstractions
------------
Scalar       -- a factor's value: a string, an integer, a float or a boolean (TOML's scalars).
Threshold    -- one metric's accepted range (min and/or max), and the words of a value past it.
render       -- a value as substituted into argv and the environment (`true`, `1.0`).
same_value   -- whether two values reach the subject as the same text (differences, ordinal lists).
parse_value  -- a `--set` value read back (a TOML scalar, else the bare string).
format_value -- a value written so that parse_value reads it back unchanged, on one line.
one_line     -- a value in a line of text (progress, the differences line).
mixed_order  -- why an ordinal list's values are no order (numbers beside strings or booleans), or None.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

Scalar = str | int | float | bool
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Threshold:
    metric: str
    min: float | None = None
    max: float | None = None

    def violation(self, value: Any) -> str | None:
        """None if `value` is acceptable, else the signature of the violation."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{self.metric} is not a number ({value!r})"
        if math.isnan(value):
            return f"NaN in {self.metric}"
        if math.isinf(value):
            # an infinity is no measurement: -inf is not "below max", it is an overflow, like +inf
            return f"{'-' if value < 0 else '+'}inf in {self.metric}"
        if self.max is not None and not value <= self.max:
            return "{} {} > {}".format(self.metric, *_past(value, self.max))
        if self.min is not None and not value >= self.min:
            return "{} {} < {}".format(self.metric, *_past(value, self.min))
        return None


def _past(value: float, bound: float) -> tuple[str, str]:
    """A value and the bound it broke, written short (3 and 6 digits) unless that makes them read
    equal or in the wrong order (`0.001 > 0.001`): then with the digits that tell them apart."""
    for digits in (3, 6, 9, 12, 17):
        shown, limit = f"{value:.{digits}g}", f"{bound:.{max(digits, 6)}g}"
        if (float(shown) > float(limit)) == (value > bound) and float(shown) != float(limit):
            return shown, limit
    return repr(value), repr(bound)


def same_value(a: Scalar, b: Scalar) -> bool:
    """Whether the subject receives the same text: `{name}` reaches argv and the environment only
    as render() writes it, so `0` and `"0"`, `true` and `"true"` are one value to it, and `nan` is
    `nan`. Floats by their text alone: `0.0 == -0.0` in Python, but the subject reads "-0.0"."""
    if type(a) is type(b) and type(a) is not float:
        return a == b
    return render(a) == render(b)


def render(value: Scalar) -> str:
    """How a factor value is written into argv/env: TOML-style booleans, plain numbers."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def finite_float(text: str) -> float:
    """tomllib's parse_float: a TOML float past a double's range is refused (ValueError), where
    float() would give inf (1e400) or 0.0 (1e-400) and the subject receive what no one wrote."""
    value = float(text)
    literal = text.lower().lstrip("+-")
    if math.isinf(value) and literal != "inf":
        raise ValueError(f"{text} is past a float's range: it would be read as {value}")
    if value == 0 and any(c in "123456789" for c in literal.split("e")[0]):
        raise ValueError(f"{text} is too small for a float: it would be read as {value}")
    return value


def parse_value(text: str) -> Scalar:
    """A `--set` value: a TOML scalar (3, 1e-4, true, "x") or else the bare string."""
    import tomllib      # here, not at import: a --run command's spec reads no TOML (~4 ms of a start)
    try:
        value = tomllib.loads(f"v = {text}", parse_float=finite_float)["v"]
    except (tomllib.TOMLDecodeError, ValueError, RecursionError, MemoryError):
        return text  # ValueError: an integer past Python's int-string limit
    return value if isinstance(value, (str, int, float, bool)) else text


def format_value(value: Scalar) -> str:
    """A value written so that `--set NAME=VALUE` (parse_value) reads it back unchanged, on one line."""
    if isinstance(value, str) and (parse_value(value) != value or _CONTROL.search(value)):
        # e.g. the string "1": quoted, or it would read as a number; a newline or an escape: written
        # escaped (a TOML basic string), or a one-line message or a code span would make it a space.
        # Not ensure_ascii: TOML refuses the surrogate pairs json writes for an emoji.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return render(value)


def one_line(value: Scalar) -> str:
    """A value in a line of text (progress, the differences line): as substituted (render), or,
    where it holds a newline or another control character, escaped as format_value writes it, so
    it stays on its line. The empty string is written `""`: as substituted it is nothing, and
    `subj_x  -> 1` or a blank table cell reads as a value left out."""
    if value == "" and isinstance(value, str):
        return '""'
    return format_value(value) if isinstance(value, str) and _CONTROL.search(value) else render(value)


def _order_kind(value: Scalar) -> str:
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, (int, float)) else "string"


def mixed_order(values: list[Scalar]) -> str | None:
    """Why an ordinal list (`[factors] x = [...]`, "in order") is no order, or None: its values
    must be of one kind, numbers (integers and floats together), strings or booleans. `[1, true,
    2]` or `[1, "2", 3.0]` was accepted, and a threshold (engine/ablate.py find_thresholds) takes
    the listed positions for an order that such values do not have. Strings alone are an order as listed (the subject reads text), and are what to
    write where the values are meant as text in that order: a string matches a number by its text."""
    def shown(v: Scalar) -> str:    # a string quoted, as the spec writes it
        text = json.dumps(v, ensure_ascii=False) if isinstance(v, str) else render(v)
        return text if len(text) <= 40 else text[:37] + "..."
    first = _order_kind(values[0])
    for i, v in enumerate(values):
        if _order_kind(v) != first:
            return (f"mixes kinds of value: value 1 is a {first} ({shown(values[0])}), value {i + 1} a "
                    f"{_order_kind(v)} ({shown(v)}); an order is over numbers (integers and "
                    f"floats together), strings or booleans: write them all as strings (\"1\", \"true\") to order "
                    f"them as text, as listed")
    return None
