"""Variant specs: one subject and a working/broken pair of configurations (TOML).

Abstractions
------------
Spec        -- the loaded, validated file: how to build and run the subject, the oracle's
               thresholds, the factors with their good and bad values, declared ordinal ranges,
               and constraints that mark invalid hybrids.
Threshold   -- one metric's accepted range (min and/or max); a Spec holds them by metric name
               (bisectk/specvalues.py, with a value's text: render, same_value, format_value, ...:
               import them from there).
Config      -- a plain dict factor -> value; `Spec.hybrid(applied)` makes one from the good side
               with the `applied` factors set to their bad values.

Values reach the program through argv elements and environment values by `{name}` substitution,
never through a shell, so `;`, `$()` and quotes arrive literally. A command typed on the command
line (`--run`, `--pytest`: `adhoc_spec`) has no factors and no templates: its words reach the
program as typed, braces included (`Spec.literal`), as `git bisect run` passes them. Every
loading problem raises SpecError naming the file, the key and what is wrong.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import keyword
import math
import operator
import re
import shlex
import sys
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisectk.contents import named_files
from bisectk.errors import SpecError
from bisectk.expr import Expr, ExprError, clip
from bisectk.specvalues import Scalar, Threshold, finite_float, format_value, mixed_order, render, same_value
from bisectk.timeouts import MAX_REPEAT, MAX_TIMEOUT_S, MIN_TIMEOUT_S

__all__ = ["Config", "Spec", "adhoc_spec", "config_key", "load_spec", "placeholders", "project_root", "substitute"]

Config = dict[str, Scalar]

# `{name}` is a placeholder; `{{` and `}}` are literal braces; any other brace is literal too, so
# inline code such as `python -c "d = {'a': 1}"` needs no escaping.
_FACTOR_NAME = re.compile(r"[^\W\d]\w*")      # a letter (any script's: `ñ`, `α`) or _, then letters, digits, _
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(%s)\}" % _FACTOR_NAME.pattern)
_BRACED = re.compile(r"\{[^{}]*\}")                # what a placeholder was meant to be: near_placeholders
_WORD = re.compile(r"\w+")
_TOP_KEYS = {"name", "description", "constraints", "subject", "oracle", "factors", "good", "bad"}
_SUBJECT_KEYS = {"command", "build", "cwd", "env", "timeout", "repeat", "build_timeout", "timeout_floor"}
_ORACLE_KEYS = {"metric", "min", "max", "metrics", "slow_factor", "slow_metric", "slow_better"}
MAX_SPEC_BYTES = 16 << 20
MAX_CONSTRAINTS = 1000


@functools.lru_cache(maxsize=1 << 16)
def _parts(template: str) -> tuple[tuple[bool, str], ...]:
    """A template as (is_placeholder, text) parts, parsed once: a spec with thousands of factors
    substitutes thousands of environment values per run."""
    parts, pos = [], 0
    for m in _PLACEHOLDER.finditer(template):
        if m.start() > pos:
            parts.append((False, template[pos:m.start()]))
        tok = m.group(0)
        parts.append((False, tok[0]) if tok in ("{{", "}}") else (True, m.group(1)))
        pos = m.end()
    if pos < len(template):
        parts.append((False, template[pos:]))
    return tuple(parts)


def substitute(template: str, config: Config) -> str:
    parts = _parts(template)
    if len(parts) == 1:
        placeholder, text = parts[0]
        return render(config[text]) if placeholder else text
    return "".join(render(config[text]) if placeholder else text for placeholder, text in parts)


def placeholders(template: str) -> set[str]:
    return {m.group(1) for m in _PLACEHOLDER.finditer(template) if m.group(1)}


def project_root(path: Path) -> Path:
    for parent in path.resolve().parents:
        if (parent / ".git").exists() or (parent / "pyproject.toml").exists():
            return parent
    return path.resolve().parent


@dataclass(frozen=True)
class _EnvPlan:
    """`env` rendered for the good configuration (`rendered`), and per factor (`per`): its bad
    value, its variables that name it alone as the bad configuration renders them, those same
    variables' names, and the variables that name it among other factors. For a hybrid (each
    factor holding good's or bad's very value, as Spec.hybrid makes it): the factors in good's
    order (`order`; their good values are `good`'s), each factor's bad value (`bad_values`,
    _MISSING where bad lacks it), its variables at bad as pairs (`at_bad_items`), and the factors
    whose variables name no other factor (`simple`). `bad_values` and `at_bad_items` repeat what
    `per` holds, flat: reached through `per` a hybrid of 8,192 factors took about twice as long
    (3.6-5.4 ms against 1.8-2.6 ms, one sitting)."""

    good: Config
    rendered: dict[str, str]
    per: dict[str, tuple[Any, dict[str, str], tuple[str, ...], tuple[str, ...]]]
    order: tuple[str, ...] = ()
    bad_values: dict[str, Any] = field(default_factory=dict)
    at_bad_items: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    simple: frozenset[str] = frozenset()

    @classmethod
    def of(cls, env: dict[str, str], good: Config, bad: Config) -> _EnvPlan:
        rendered = {k: substitute(v, good) for k, v in env.items()}
        single: dict[str, list[str]] = {}
        mixed: dict[str, list[str]] = {}
        for k, v in env.items():
            names = placeholders(v)
            for f in names:
                (single if len(names) == 1 else mixed).setdefault(f, []).append(k)
        per = {}
        for f in good:
            alone = tuple(single.get(f, ()))
            at_bad = {k: substitute(env[k], {f: bad[f]}) for k in alone} if f in bad else {}
            per[f] = (bad.get(f, _MISSING), at_bad, alone, tuple(mixed.get(f, ())))
        return cls(dict(good), rendered, per, tuple(good),
                   {f: p[0] for f, p in per.items()}, {f: tuple(p[1].items()) for f, p in per.items()},
                   frozenset(f for f, p in per.items() if not p[3]))

    def hybrid(self, config: Config) -> dict[str, str] | None:
        """The environment of a hybrid in a few C-level passes (no Python step per factor), or
        None when `config` is not one: other keys or order, a value that is neither good's nor
        bad's object, or a changed factor sharing a variable with another."""
        if tuple(config) != self.order:
            return None
        moved = list(itertools.compress(self.order, map(operator.is_not, config.values(), self.good.values())))
        if not self.simple.issuperset(moved) or not all(
                map(operator.is_, map(config.__getitem__, moved), map(self.bad_values.__getitem__, moved))):
            return None
        env = dict(self.rendered)
        env.update(itertools.chain.from_iterable(map(self.at_bad_items.__getitem__, moved)))
        return env


@dataclass
class Spec:
    path: Path
    name: str
    description: str
    command: list[str]
    build: list[str] | None
    cwd: Path
    env: dict[str, str]
    timeout: float | None
    build_timeout: float | None
    repeat: int
    thresholds: list[Threshold]
    slow_factor: float | None
    slow_metric: str | None
    good: Config
    bad: Config
    ordinal: dict[str, list[Scalar]] = field(default_factory=dict)
    constraints: list[Expr] = field(default_factory=list)
    protocol: str = "bisectk"  # or "pytest": how exit codes are read (see run/classify.py)
    slow_better: str = "lower"  # the slow metric's better direction: "lower" (a time) or "higher" (a throughput)
    timeout_floor: float | None = None  # least calibrated watchdog (JIT compiles jitter); default 1 s
    literal: bool = False   # command and build are words as typed, not templates (adhoc_spec)
    _plan: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # thresholds by metric name, not as the file lists them: the fingerprint and a run's
        # signature (its violations joined in this order, run/classify.py) are then the same for a
        # `metrics` table written in any order, so reordering it neither re-runs everything nor
        # files one failure under two signature texts (stable: `metric` before a `metrics` entry
        # of the same name)
        self.thresholds = sorted(self.thresholds, key=lambda t: t.metric)

    @property
    def factors(self) -> list[str]:
        return list(self.good)

    def differences(self) -> list[str]:
        """Factors whose good and bad values reach the subject differently, in file order. By the
        text it receives: `1`, `1.0` and `true` are equal in Python, but the subject receives them as
        "1", "1.0" and "true"; `nan` and `nan` are unequal in Python, but the subject receives "nan"
        twice; `0` and `"0"` are unequal in Python and in TOML, but the subject receives "0" twice
        (written_alike: a warning names them)."""
        return [f for f in self.good if not same_value(self.good[f], self.bad[f])]

    def written_alike(self) -> list[str]:
        """Factors whose good and bad values are written differently in the spec (`0` and `"0"`)
        but reach the subject as the same text: no difference to it, so none to search."""
        return [f for f in self.good if self.good[f] is not self.bad[f] and type(self.good[f]) is not type(self.bad[f])
                and render(self.good[f]) == render(self.bad[f])]

    def unused_factors(self) -> list[str]:
        """Factors that no `{placeholder}` of the command, the build or the environment names:
        their values never reach the subject, so flipping them changes nothing."""
        used: set[str] = set()
        for template in [*self.command, *(self.build or []), *self.env.values()]:
            used |= placeholders(template)
        return [f for f in self.good if f not in used]

    def ignored_settings(self, timeout: float | None = None) -> list[str]:
        """What the spec sets that nothing uses, in words (warned of, not refused: a spec that
        worked before still loads): `timeout_floor` where the watchdog is fixed (by the spec's
        `timeout`, or by `timeout`, --timeout, given here), `build_timeout` without a build step."""
        said = []
        if self.timeout_floor is not None and (timeout or self.timeout):
            by = f"--timeout {timeout:g}" if timeout else f"subject.timeout = {self.timeout:g}"
            said.append(f"subject.timeout_floor = {self.timeout_floor:g} is ignored: {by} fixes the watchdog, and "
                        f"the floor bounds only the one calibrated from the good runs ({self.path})")
        if self.build_timeout is not None and not self.build:
            said.append(f"subject.build_timeout = {self.build_timeout:g} is ignored: the spec has no build step "
                        f"(subject.build) to limit ({self.path})")
        return said

    def near_placeholders(self, factor: str) -> list[str]:
        """Braces in the command, the build or the environment that name `factor` but are no
        placeholder (`{ x }`, `{x:>3}`, `{x!r}`: left alone, so the subject receives them as
        typed): what an unused factor's warning points at."""
        near: list[str] = []
        for template in [*self.command, *(self.build or []), *self.env.values()]:
            for m in _BRACED.finditer(template.replace("{{", "").replace("}}", "")):
                if _PLACEHOLDER.fullmatch(m.group(0)) is None and factor in _WORD.findall(m.group(0)) \
                        and m.group(0) not in near:
                    near.append(m.group(0))
        return near

    def hybrid(self, applied) -> Config:
        return {f: (self.bad[f] if f in applied else self.good[f]) for f in self.good}

    def endpoint(self, which: str) -> Config:
        return dict(self.good if which == "good" else self.bad)

    def violated(self, config: Config) -> str | None:
        """The first constraint the configuration breaks, or None."""
        for c in self.constraints:
            try:
                ok = c.evaluate(config)
            except ExprError as exc:
                return str(exc)
            if not ok:
                return c.source
        return None

    def argv(self, config: Config, template: list[str] | None = None) -> list[str]:
        words = template or self.command
        args = list(words) if self.literal else [substitute(a, config) for a in words]
        if args and args[0] in ("python", "python3"):
            args[0] = sys.executable  # the interpreter bisectk runs in: same packages
        return args

    def command_text(self, config: Config) -> str:
        """The command as typed, with this configuration substituted (for messages)."""
        return shlex.join(self.command if self.literal else (substitute(a, config) for a in self.command))

    def environment(self, config: Config) -> dict[str, str]:
        """The subject's environment values for a configuration. With many of them (a factor per
        variable), the good and the bad configuration's are rendered once; a hybrid proper (each
        factor good's or bad's very value) is then made in a few C-level passes (_EnvPlan.hybrid:
        ~3 ms at 8,192 factors, against ~14 ms for a Python step per changed factor); any other
        configuration takes each changed factor's variables from the bad rendering and re-renders
        only values that mix factors or hold a value in between."""
        plan = self._env_plan()
        if plan is None or len(config) != len(plan.good):
            return {k: substitute(v, config) for k, v in self.env.items()}
        fast = plan.hybrid(config)
        if fast is not None:
            return fast
        good = plan.good
        changed = [k for k, v in config.items()
                   if (g := good.get(k, _MISSING)) is not v and (type(g) is not type(v) or g != v)]
        if not all(k in good for k in changed):
            return {k: substitute(v, config) for k, v in self.env.items()}
        env = dict(plan.rendered)
        redo: list[str] = []
        per = plan.per
        for f in changed:
            b, at_bad, alone, mixed = per[f]
            v = config[f]
            if v is b or (type(v) is type(b) and v == b):
                env.update(at_bad)
            else:
                redo.extend(alone)
            redo.extend(mixed)
        for name in redo:
            env[name] = substitute(self.env[name], config)
        return env

    def _env_plan(self) -> _EnvPlan | None:
        """The rendering plan of `env`, made once while `env`, `good` and `bad` stay the same
        objects; None for a small environment (a plain substitution is as fast)."""
        if len(self.env) < 64:
            return None
        ident = (id(self.env), id(self.good), id(self.bad), len(self.env), len(self.good), len(self.bad))
        if self._plan is None or self._plan[0] != ident:
            try:
                self._plan = (ident, _EnvPlan.of(self.env, self.good, self.bad))
            except KeyError:                # a placeholder the endpoints lack: substitute plainly
                self._plan = (ident, None)
        return self._plan[1]

    def named_files(self, cwd: Path | None = None) -> dict[str, str]:
        """Path -> content digest of the files the command and the build run, name or source
        (bisectk/contents.py: the program and an interpreter's script whatever their suffix, other
        arguments with a source suffix, and what those files name, a bounded heuristic). A
        placeholder is filled with the good and the bad value: each endpoint's file counts."""
        commands = []
        for template in (self.command, self.build or []):
            if self.literal:
                commands.append(list(template))
                continue
            for config in (self.good, self.bad):
                try:
                    commands.append([substitute(a, config) for a in template])
                except KeyError:   # a placeholder that names no factor (an ad-hoc command's braces)
                    commands.append([a for a in template if not placeholders(a)])
        unique = list({json.dumps(c): c for c in commands}.values())
        return named_files(unique, cwd or self.cwd)

    def fingerprint(self, cwd: Path | None = None) -> str:
        """Identity of the subject for memoisation: what is run, where (the spec's directory), how
        it is built (its build timeout: a build that timed out may finish given more) and judged,
        and the contents of the files the command names (so editing the kernel, the script or a
        helper it sources invalidates the memo)."""
        blob = json.dumps({
            "command": self.command, "build": self.build, "env": self.env, "files": self.named_files(cwd),
            "cwd": str(self.cwd), "build_timeout": self.build_timeout,
            "thresholds": [(t.metric, t.min, t.max) for t in self.thresholds],
            "slow": [self.slow_factor, self.slow_metric], "protocol": self.protocol,
            # only where declared: a spec without it keeps the key its runs were stored under
            **({"slow_better": self.slow_better} if self.slow_better != "lower" else {}),
            # only where it changes what runs (a `{name}`, `{{` or `}}` typed): every other key stays
            **({"literal": True} if self.literal and any(_PLACEHOLDER.search(a)
                                                       for a in [*self.command, *(self.build or [])]) else {}),
        }, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def adhoc_spec(command: list[str], *, name: str, cwd: Path, build: list[str] | None = None,
               timeout: float | None = None, repeat: int = 1, path: Path | None = None,
               protocol: str = "bisectk", env: dict[str, str] | None = None) -> Spec:
    """A spec for `--run CMD` / `--pytest ID`: no factors, no thresholds (exit codes and the
    BISECTK_RESULT protocol only), its words run as typed (`literal`)."""
    return Spec(path=path or cwd / "(command line)", name=name, description="", command=list(command),
                build=list(build) if build else None, cwd=cwd, env=dict(env or {}), timeout=timeout, build_timeout=None,
                repeat=repeat, thresholds=[], slow_factor=None, slow_metric=None, good={}, bad={},
                protocol=protocol, literal=True)


_MISSING = object()
_KEYS: list[tuple[list[str], tuple[Any, ...], str]] = []     # the last few configurations keyed
_KEYS_LOCK = threading.Lock()


def config_key(config: Config) -> str:
    """The memo key of a configuration: its canonical JSON. A run asks for the key of one
    configuration several times (the oracle, the ledger lookup, the record), and with thousands
    of factors each encoding costs milliseconds, so the last few are kept. A hit needs the same
    keys in the same order holding the very same value objects (configurations are built from
    the spec's values), so it is exact: equal but different objects (1, 1.0, True) never hit."""
    names = list(config)
    with _KEYS_LOCK:
        for k, (keys, values, key) in enumerate(_KEYS):
            if len(keys) == len(names) and keys == names and all(map(operator.is_, values, config.values())):
                if k:
                    _KEYS.insert(0, _KEYS.pop(k))
                return key
    key = json.dumps(config, sort_keys=True, separators=(",", ":"))
    with _KEYS_LOCK:
        _KEYS.insert(0, (names, tuple(config.values()), key))
        del _KEYS[8:]
    return key


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(path, None, f"too large for a spec file (over {MAX_SPEC_BYTES >> 20} MiB)")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(path, None, "no such file") from None
    except IsADirectoryError:
        raise SpecError(path, None, "is a directory, not a spec file") from None
    except UnicodeDecodeError:
        raise SpecError(path, None, "not a UTF-8 text file") from None
    except (OSError, ValueError) as exc:
        raise SpecError(path, None, f"cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    import tomllib
    text = text.removeprefix("\ufeff")     # a byte-order mark, as some editors write: tomllib reads it as a statement
    try:
        raw = tomllib.loads(text, parse_float=finite_float)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(path, None, f"invalid TOML: {exc}") from None
    except ValueError as exc:  # an integer past Python's int-string limit (4,300 digits), a float past its range
        raise SpecError(path, None, f"invalid TOML: {exc}") from None
    except (RecursionError, MemoryError):
        raise SpecError(path, None, "invalid TOML: nested too deeply") from None
    return _build(path, raw)


def _need(cond: bool, path: Path, key: str, problem: str) -> None:
    if not cond:
        raise SpecError(path, key, problem)


def _strings(value: Any, path: Path, key: str) -> list[str]:
    _need(isinstance(value, list) and value, path, key, "must be a non-empty list of strings (argv, no shell)"
          + ("; a string is run through no shell: split it into its words" if isinstance(value, str) else ""))
    for i, a in enumerate(value):   # `3` for "3": which element, and how to write it
        _need(isinstance(a, str), path, key, f"must be a list of strings (argv, no shell): element {i} is "
                                             f"{_kind(a)} {_show(a)}; write it in quotes")
    _need(value[0] != "", path, key, "the program (its first element) is empty")
    for i, a in enumerate(value):
        _need("\0" not in a, path, key, f"element {i} ({clip(a, 40)}) contains a NUL byte")
    return list(value)


def _number(value: Any, path: Path, key: str, positive: bool = False, most: float | None = None, *,
            least: float | None = None) -> float:
    """`least`: the smallest value taken (the bound --timeout's option has, for the spec's `timeout`)."""
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)  # a 400-digit integer: OverflowError
        except OverflowError:
            number = None
    ok = number is not None and math.isfinite(number) and (number > 0 or not positive) \
        and (most is None or number <= most) and (least is None or number >= least)
    what = (f"a number from {least:g}" if least is not None else f"a {'positive ' if positive else ''}number") \
        + (f" up to {most:g}" if most is not None else "")
    _need(ok, path, key, f"must be {what}, got {_show(value)}")
    return number


def _show(value: Any) -> str:
    """A value for an error message: short, whatever its size (a 4,000-digit int, a long string)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 200:
        return f"an integer of {len(str(abs(value))) if abs(value).bit_length() < 14000 else 'thousands of'} digits"
    return clip(value, 60) if isinstance(value, str) else clip(repr(value), 60)[1:-1]


def _kind(value: Any) -> str:
    """A TOML value's kind, in a problem's words."""
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def _misplaced(keys, table: str) -> str:
    """Where a top-level key (`constraints`, `name`) was written below a [table] header, which TOML
    reads as that table's key: what to do, as words to add to the problem ("" for other keys)."""
    top = sorted(k for k in keys if k in _TOP_KEYS - {"subject", "oracle", "factors", "good", "bad"})
    return (f"; {top[0]} is a top-level key: write it above the first [table] header (TOML puts every key "
            f"below [{table}] in that table)") if top else ""


def _written(value: Scalar) -> str:
    """A factor's value for an error message, as a spec or --set writes it (`true`, `"2"`), short."""
    text = format_value(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _build(path: Path, raw: dict[str, Any]) -> Spec:
    unknown = set(raw) - _TOP_KEYS
    _need(not unknown, path, ",".join(sorted(unknown)), f"unknown key (expected one of {', '.join(sorted(_TOP_KEYS))})")
    for side in ("good", "bad"):
        raw.setdefault(side, {})  # a spec for diff/bisect may have no factors at all
        _need(isinstance(raw.get(side), dict), path, side, "must be a table (the working/broken configuration)")
        for k, v in raw[side].items():
            _need(isinstance(v, (str, int, float, bool)), path, f"{side}.{k}",
                  f"must be a string, number or boolean, got {type(v).__name__}" + _misplaced([k], side))
            _need(not isinstance(v, str) or "\0" not in v, path, f"{side}.{k}",
                  "contains a NUL byte (it could not reach argv or the environment)")
    good, bad = raw["good"], raw["bad"]
    for k in [*good, *(k for k in bad if k not in good)]:
        _need(_FACTOR_NAME.fullmatch(k) is not None, path, "good" if k in good else "bad",
              f"factor name {clip(k, 40)} cannot be written as a {{placeholder}}: use letters, digits and _, "
              "not starting with a digit")
    for k in sorted(good.keys() ^ bad.keys()):
        have, lack = ("good", "bad") if k in good else ("bad", "good")
        _need(False, path, lack, f"factor {k!r} is missing (it is in [{have}]; both sides need every factor)"
              + _misplaced([k], have))

    subject = raw.get("subject")
    _need(isinstance(subject, dict), path, "subject", "missing table")
    unknown = set(subject) - _SUBJECT_KEYS
    _need(not unknown, path, "subject." + ",".join(sorted(unknown)), "unknown key" + _misplaced(unknown, "subject"))
    _need("command" in subject, path, "subject.command", "missing")
    command = _strings(subject["command"], path, "subject.command")
    build = _strings(subject["build"], path, "subject.build") if "build" in subject else None
    env = subject.get("env", {})
    _need(isinstance(env, dict), path, "subject.env", "must be a table of strings")
    for k, v in env.items():        # OMP_NUM_THREADS = 1: which variable, and how to write it
        _need(isinstance(v, str), path, f"subject.env.{k}", f"must be a string (an environment value), got "
                                                            f"{_kind(v)} {_show(v)}; write it in quotes")
    for k, v in env.items():
        _need(k != "" and "=" not in k and "\0" not in k, path, "subject.env",
              f"{clip(k, 40)} is not a valid environment variable name (empty, or contains '=' or NUL)")
        _need("\0" not in v, path, f"subject.env.{k}", "contains a NUL byte")
    for key, templates in (("subject.command", command), ("subject.build", build or []),
                           ("subject.env", list(env.values()))):
        for t in templates:
            for name in placeholders(t):
                _need(name in good, path, key, f"placeholder {{{name}}} names no factor")
    cwd_raw = subject.get("cwd", ".")
    _need(isinstance(cwd_raw, str), path, "subject.cwd", "must be a string")
    _need("\0" not in cwd_raw, path, "subject.cwd", "contains a NUL byte")
    try:
        cwd = (project_root(path) / cwd_raw).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise SpecError(path, "subject.cwd", f"cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None
    timeout = (_number(subject["timeout"], path, "subject.timeout", True, MAX_TIMEOUT_S, least=MIN_TIMEOUT_S)
               if "timeout" in subject else None)
    build_timeout = (_number(subject["build_timeout"], path, "subject.build_timeout", True, MAX_TIMEOUT_S)
                     if "build_timeout" in subject else None)
    floor = (_number(subject["timeout_floor"], path, "subject.timeout_floor", True, MAX_TIMEOUT_S)
             if "timeout_floor" in subject else None)
    repeat = subject.get("repeat", 1)
    _need(isinstance(repeat, int) and not isinstance(repeat, bool) and 1 <= repeat <= MAX_REPEAT,
          path, "subject.repeat", f"must be an integer from 1 to {MAX_REPEAT}, got {_show(repeat)}")

    thresholds, slow_factor, slow_metric, slow_better = _oracle(path, raw.get("oracle", {}))
    ordinal = _ordinal(path, raw.get("factors", {}), good, bad)
    constraints = raw.get("constraints", [])
    _need(isinstance(constraints, list) and all(isinstance(c, str) for c in constraints),
          path, "constraints", "must be a list of expression strings")
    _need(len(constraints) <= MAX_CONSTRAINTS, path, "constraints", f"more than {MAX_CONSTRAINTS} constraints")
    # a factor named as a Python keyword (True, None, in, ...) is read in a constraint as the keyword:
    # `True >= 1` always holds, whatever the factor's value, and nothing would say so
    keywords = sorted(n for n in good if keyword.iskeyword(n)) if constraints else []
    _need(not keywords, path, "constraints",
          f"factor {clip(keywords[0] if keywords else '', 40)} cannot be named in a constraint: the expression "
          f"reads it as Python's own keyword; rename the factor")
    # Python reads an identifier in its NFKC form: `ﬁ` (a ligature) or a fullwidth `ａ` as `fi` or `a`,
    # another factor's name or none, so a constraint would read another value or refuse its own factor
    renamed = [n for n in good if unicodedata.normalize("NFKC", n) != n] if constraints else []
    _need(not renamed, path, "constraints",
          f"factor {clip(renamed[0] if renamed else '', 40)} cannot be named in a constraint: the expression reads "
          f"it as {clip(unicodedata.normalize('NFKC', renamed[0]) if renamed else '', 40)} (Python reads names in "
          f"their NFKC form); rename the factor")
    exprs = []
    for c in constraints:
        try:
            e = Expr(c)
        except ExprError as exc:
            raise SpecError(path, "constraints", str(exc)) from None
        unknown = e.names - good.keys()
        _need(not unknown, path, "constraints",
              f"{clip(c)} names unknown factor(s) {clip(', '.join(sorted(unknown)), 80)}")
        for side in ("good", "bad"):  # one that cannot even be evaluated on an endpoint is a typo
            try:
                e.evaluate(raw[side])
            except ExprError as exc:
                raise SpecError(path, "constraints", f"{exc} (evaluated on [{side}])") from None
        exprs.append(e)
    name = raw.get("name", path.stem)
    _need(isinstance(name, str), path, "name", "must be a string")
    description = raw.get("description", "")
    _need(isinstance(description, str), path, "description", "must be a string")
    return Spec(path=path, name=name, description=description, command=command, build=build, cwd=cwd,
                env=dict(env), timeout=timeout, build_timeout=build_timeout, repeat=repeat,
                thresholds=thresholds, slow_factor=slow_factor, slow_metric=slow_metric, slow_better=slow_better,
                good=dict(good), bad=dict(bad), ordinal=ordinal, constraints=exprs, timeout_floor=floor)


def _oracle(path: Path, oracle: Any) -> tuple[list[Threshold], float | None, str | None, str]:
    _need(isinstance(oracle, dict), path, "oracle", "must be a table")
    unknown = set(oracle) - _ORACLE_KEYS
    _need(not unknown, path, "oracle." + ",".join(sorted(unknown)),
          f"unknown key (expected {', '.join(sorted(_ORACLE_KEYS))})" + _misplaced(unknown, "oracle"))
    thresholds = []
    if "metric" in oracle:
        _need(isinstance(oracle["metric"], str) and oracle["metric"].strip() != "", path, "oracle.metric",
              "must be a metric name (a key of the BISECTK_RESULT line)")
        _need("min" in oracle or "max" in oracle, path, "oracle", "a metric needs min or max")
        thresholds.append(Threshold(oracle["metric"],
                                    _number(oracle["min"], path, "oracle.min") if "min" in oracle else None,
                                    _number(oracle["max"], path, "oracle.max") if "max" in oracle else None))
    else:
        _need("min" not in oracle and "max" not in oracle, path, "oracle", "min/max given without metric")
    metrics = oracle.get("metrics", {})
    _need(isinstance(metrics, dict), path, "oracle.metrics", "must be a table: metric = { min = ..., max = ... }")
    _need(metrics != {} or "metrics" not in oracle, path, "oracle.metrics", "is empty, so it judges nothing: name "
          "each metric with its bounds (metrics = { rel_err = { max = 0.001 } }), or leave it out")
    for metric, rng in metrics.items():
        key = f"oracle.metrics.{metric}"
        _need(metric.strip() != "", path, "oracle.metrics", f"{metric!r} is no metric name: every run would be "
                                                            "UNRESOLVED, the metric not reported")
        _need(isinstance(rng, dict) and rng and set(rng) <= {"min", "max"}, path, key, "must be a table with min and/or max")
        thresholds.append(Threshold(metric, _number(rng["min"], path, key + ".min") if "min" in rng else None,
                                    _number(rng["max"], path, key + ".max") if "max" in rng else None))
    for t in thresholds:        # no value passes min > max: every run, good included, would be WRONG
        if t.min is not None and t.max is not None and t.min > t.max:
            _need(False, path, "oracle" if t.metric == oracle.get("metric") else f"oracle.metrics.{t.metric}",
                  f"min {t.min:g} is above max {t.max:g}: no value of {t.metric} could pass")
    slow_factor = _number(oracle["slow_factor"], path, "oracle.slow_factor", True) if "slow_factor" in oracle else None
    _need(slow_factor is None or slow_factor > 1, path, "oracle.slow_factor", "must be greater than 1")
    slow_metric = oracle.get("slow_metric")
    _need(slow_metric is None or (isinstance(slow_metric, str) and slow_metric.strip() != ""), path,
          "oracle.slow_metric", "must be a metric name (a key of the BISECTK_RESULT line)")
    # a throughput (TFLOP/s, GB/s) is slower when lower: judged as a time, its regression passed and
    # the factor that made it faster was named the SLOW culprit
    slow_better = oracle.get("slow_better", "lower")
    _need(slow_better in ("lower", "higher"), path, "oracle.slow_better",
          f"must be \"lower\" (a time, the default) or \"higher\" (a throughput), got {_show(slow_better)}")
    _need(slow_better == "lower" or slow_metric is not None, path, "oracle.slow_better",
          "\"higher\" needs a slow_metric (wall time is better lower)")
    # without slow_factor there is no SLOW rule: the metric named was never judged, silently
    for key in ("slow_metric", "slow_better"):
        _need(key not in oracle or slow_factor is not None, path, f"oracle.{key}",
              "needs slow_factor (SLOW: a run slower than slow_factor x the good endpoint's); without it nothing "
              "is judged slow")
    return thresholds, slow_factor, slow_metric, slow_better


def _ordinal(path: Path, factors: Any, good: dict, bad: dict) -> dict[str, list[Scalar]]:
    _need(isinstance(factors, dict), path, "factors", "must be a table of ordered value lists")
    out = {}
    for name, values in factors.items():
        key = f"factors.{name}"
        _need(name in good, path, key, "is not a factor of [good]/[bad]")
        _need(isinstance(values, list) and len(values) >= 2 and all(isinstance(v, (str, int, float, bool)) for v in values),
              path, key, "must be a list of at least two values, in order")
        # by the text the subject receives (same_value), as differences are: `3` listed twice (or `3`
        # and "3") made one step of the threshold's bisection no step at all, and `true` was found in
        # [1, 2] by Python's ==, though the subject receives "true", never "1"
        for i, v in enumerate(values):
            twin = next((j for j in range(i) if same_value(values[j], v)), None)
            if twin is not None:
                raise SpecError(path, key, f"lists {_written(v)} twice (values {twin + 1} and {i + 1}, as "
                                           "the subject receives them): each value once, in order")
        _need(not (mixed := mixed_order(values)), path, key, mixed or "")
        for side, cfg in (("good", good), ("bad", bad)):
            _need(any(same_value(v, cfg[name]) for v in values), path, key,
                  f"does not contain the {side} value {_written(cfg[name])} (a value is matched by "
                  f"the text the subject receives: 4 and 4.0 differ, 4 and \"4\" do not)")
        out[name] = list(values)
    return out
