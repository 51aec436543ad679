"""The subject of a command: a spec file, or a command line given with --run / --pytest.

Abstractions
------------
apply_sets    -- `--set NAME=VALUE` overrides applied to a configuration, validated.
split_command -- a quoted command line (`--run`, `--build`) split into argv, or a one-line error.
load_subject  -- (Spec, configuration) for any command: a spec (with the endpoint to run and
                 overrides), `--run CMD` (git bisect run's exit codes), or `--pytest NODEID`
                 (pytest's exit codes); exactly one of them. `build_timeout` (--build-timeout)
                 is the build step's limit, as the spec's `build_timeout` is.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from bisectk.errors import BisectkError
from bisectk.spaces.shellwords import runs_shell, shell_syntax, split_command  # noqa: F401 (this module's API)
from bisectk.spaces.command import one_path
from bisectk.spec import Config, Spec, adhoc_spec, load_spec, placeholders
from bisectk.specvalues import parse_value
from bisectk.timeouts import limit_problem

PYTEST_COLUMNS = "4000"   # a --pytest run's terminal width: the summary line whole (_load_subject)


def apply_sets(spec: Spec, config: Config, sets: list[str] | None) -> Config:
    config, given = dict(config), {}
    for item in sets or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BisectkError(f"--set {item!r}: expected NAME=VALUE")
        if name not in spec.good:
            known = ", ".join(spec.factors) or "none: its [good] and [bad] tables name no factor"
            raise BisectkError(f"--set {item!r}: {name!r} is not a factor of {spec.path} (factors: {known})")
        if name in given and given[name] != item:      # the last silently won: a typo of another name
            raise BisectkError(f"--set {item!r}: {name!r} is set twice (--set {given[name]!r} before it); give each factor once")
        given[name] = item
        config[name] = parse_value(value)
    return config


def _escapes_kept(text: str) -> str:
    """`text` with each backslash, quote and space inside an id's unquoted brackets escaped, so
    that the shell-rule split keeps it as the id's: pytest prints a parameter's non-ASCII or
    control characters as escapes (`test_x[z\\xe9]`), its quotes and runs of spaces as they are
    (`test_x[it's]`, `test_x[a  b]`), and the id matches only with them, where the split would
    read `z\\xe9` as `zxe9`, refuse the lone quote and squeeze the spaces. A backslash before a
    space stays the shell's (`test_x[a\\ b]`)."""
    out, quote, depth, k = [], "", 0, 0
    while k < len(text):
        c = text[k]
        if quote:
            quote = "" if c == quote else quote
        elif c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        elif depth and c == "\\" and text[k + 1:k + 2].isspace():
            c, k = c + text[k + 1], k + 1       # the shell's own escape of a space
        elif depth and c in "\\'\" \t":
            c = "\\" + c
        elif c in "'\"":
            quote = c
        out.append(c)
        k += 1
    return "".join(out)


def pytest_args(text: str) -> list[str]:
    """`--pytest`'s value as pytest's arguments: node ids and options, split as a shell would
    (`tests/k.py -k 'tile and not slow'`, two node ids), except that a parametrized id's brackets
    keep what is inside them whole (`tests/k.py::test_x[a b]`, as pytest prints it), its escapes
    included (`tests/k.py::test_x[z\\xe9]`, _escapes_kept)."""
    try:
        words = shlex.split(_escapes_kept(text))
    except ValueError as exc:
        raise BisectkError(f"--pytest {text!r}: {exc}") from None
    args: list[str] = []
    for word in words:
        if args and args[-1].count("[") > args[-1].count("]"):
            args[-1] += " " + word      # inside an id's [...]: the space was the id's
        else:
            args.append(word)
    if not args or all(a.startswith("-") for a in args):
        raise BisectkError(f"--pytest {text!r}: expected a test node id such as tests/test_k.py::test_x "
                           "(pytest's options may follow it: tests/test_k.py -k tile)")
    return args


def load_subject(spec_path: Path | None, run: str | None = None, pytest_id: str | None = None, *,
                 build: str | None = None, cwd: Path, config: str = "bad", sets: list[str] | None = None,
                 timeout: float | None = None, repeat: int | None = None, name: str = "subject",
                 build_timeout: float | None = None) -> tuple[Spec, Config]:
    spec, config_ = _load_subject(spec_path, run, pytest_id, build=build, cwd=cwd, config=config, sets=sets,
                                  timeout=timeout, repeat=repeat, name=name)
    if build_timeout is not None:   # --build-timeout: the spec's `build_timeout` as the command line gives it
        if problem := limit_problem("--build-timeout", build_timeout):
            raise BisectkError(problem)
        if not spec.build:
            raise BisectkError("--build-timeout: there is no build step to limit (give --build 'CMD', or a spec "
                               "with `build`)")
        spec.build_timeout = float(build_timeout)
    return spec, config_


def _load_subject(spec_path: Path | None, run: str | None, pytest_id: str | None, *, build: str | None,
                  cwd: Path, config: str, sets: list[str] | None, timeout: float | None, repeat: int | None,
                  name: str) -> tuple[Spec, Config]:
    given = [x for x in (spec_path, run, pytest_id) if x is not None]
    if len(given) != 1:
        raise BisectkError("give exactly one subject: a SPEC file, --run 'CMD' or --pytest NODEID")
    if config not in ("good", "bad"):
        raise BisectkError(f"--config must be good or bad, not {config!r}")
    # `--run "$PWD/t.sh"` under `my proj's`: the path, one word (bisect's are so already)
    run, build = (one_path(text, cwd) if text else text for text in (run, build))
    build_argv = split_command(build, "--build") if build is not None else None
    if spec_path is None:
        if sets:
            raise BisectkError("--set needs a SPEC (a --run or --pytest command has no factors)")
        if pytest_id is not None:
            words = pytest_args(pytest_id)
            end = words.index("--") if "--" in words else len(words)
            argv = ["python", "-m", "pytest", "-x", "-rfEsx", "--color=no", "-p", "no:cacheprovider",
                    *words[:end], "--verbosity=-1", *words[end:]]
            # --verbosity=-1, after the user's options: -q, whatever addopts or a -q typed in
            # --pytest add to it (`-ra -q`, pytest's own example, made it -qq, which drops the
            # counts line a run that judged nothing is read by); -rfEsx:
            # pytest's default report (fE: the failures read as the signature) and why a test was
            # skipped or xfailed, the words of a run that judged nothing (run/classify.py);
            # --color=no: the summary read without escapes, whatever FORCE_COLOR, PY_COLORS or addopts say
            # pytest cuts its short summary line to the terminal's width (80 through a pipe): a long
            # node id left no room for the message, which is the failure's signature
            return adhoc_spec(argv, name=f"pytest {pytest_id}", cwd=cwd, build=build_argv, timeout=timeout,
                              repeat=repeat or 1, protocol="pytest", env={"COLUMNS": PYTEST_COLUMNS}), {}
        return adhoc_spec(split_command(run, "--run"), name=name, cwd=cwd, build=build_argv, timeout=timeout,
                          repeat=repeat or 1, protocol="git"), {}
    spec = load_spec(spec_path)
    if build_argv:
        # a template as the spec's own build is: a placeholder naming no factor is refused, as
        # load_spec refuses one there (it ended the first run in an internal error)
        unknown = sorted({n for word in build_argv for n in placeholders(word)} - set(spec.good))
        if unknown:
            raise BisectkError(f"--build: placeholder {{{unknown[0]}}} names no factor of {spec.path} "
                               f"(factors: {', '.join(spec.factors) or 'none'}); write {{{{ and }}}} for a literal brace")
        spec.build = build_argv
    if timeout:
        spec.timeout = timeout
    if repeat:
        spec.repeat = repeat
    return spec, apply_sets(spec, spec.endpoint(config), sets)
