"""Bad input never reaches an internal error (issue 12).

Hand-made hostile specs, one per case the issue lists; a property-based fuzz of whole spec files
(Hypothesis, 1,000 examples, in-process: load, validate, evaluate constraints, substitute, check that
what loads can be started); and a smaller sample through the real CLI, asserting exit codes in
{0, 1, 2}, one `bisectk:` line on failure, and never "internal error"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bisectk.errors import SpecError
from bisectk.run.startcheck import invalid_command
from bisectk.spec import config_key, load_spec
from bisectk.specvalues import parse_value

SUBJECT = '[subject]\ncommand = ["python", "-c", "print(1)"]\n'
ENDPOINTS = "[good]\nv = 1\n[bad]\nv = 2\n"

HOSTILE = {
    "50,000 + terms": 'constraints = ["' + "+".join(["v"] * 50_000) + ' > 0"]\n' + SUBJECT + ENDPOINTS,
    "deep negation": 'constraints = ["' + "-" * 100_000 + 'v > 0"]\n' + SUBJECT + ENDPOINTS,
    "deep not": 'constraints = ["' + "not " * 400 + 'v"]\n' + SUBJECT + ENDPOINTS,
    "deep parentheses": 'constraints = ["' + "(" * 250 + "v" + ")" * 250 + ' > 0"]\n' + SUBJECT + ENDPOINTS,
    "nested powers": 'constraints = ["(((((9**64)**64)**64)**64)**64) > v"]\n' + SUBJECT + ENDPOINTS,
    "power tower of a factor": 'constraints = ["v ** v ** v ** v ** v > 0"]\n' + SUBJECT
                               + "[good]\nv = 9\n[bad]\nv = 8\n",
    "string formatting": "constraints = [\"'%0999999999d' % v == 'x'\"]\n" + SUBJECT + ENDPOINTS,
    "a function as a value": 'constraints = ["min > 3"]\n' + SUBJECT + ENDPOINTS,
    "oracle metrics a string": SUBJECT + '[oracle]\nmetrics = "x"\n' + ENDPOINTS,
    "oracle metrics a number": SUBJECT + "[oracle]\nmetrics = 3\n" + ENDPOINTS,
    "oracle metrics empty": SUBJECT + "[oracle]\nmetrics = {}\n" + ENDPOINTS,     # judged nothing, silently
    "400-digit timeout": SUBJECT + "timeout = " + "9" * 400 + "\n" + ENDPOINTS,
    "huge float timeout": SUBJECT + "timeout = 1e300\n" + ENDPOINTS,
    "400-digit bound": SUBJECT + '[oracle]\nmetric = "x"\nmax = ' + "9" * 400 + "\n" + ENDPOINTS,
    "400-digit metric bound": SUBJECT + "[oracle]\nmetrics = { x = { min = -" + "9" * 400 + " } }\n" + ENDPOINTS,
    "400-digit slow factor": SUBJECT + "[oracle]\nslow_factor = " + "9" * 400 + "\n" + ENDPOINTS,
    "400-digit repeat": SUBJECT + "repeat = " + "9" * 400 + "\n" + ENDPOINTS,
    "factor past the int-string limit": SUBJECT + "[good]\nv = " + "9" * 5000 + "\n[bad]\nv = 2\n",
    "NUL in argv": '[subject]\ncommand = ["python", "-c", "print(1)", "a\\u0000b"]\n' + ENDPOINTS,
    "NUL in the program": '[subject]\ncommand = ["pyth\\u0000on"]\n' + ENDPOINTS,
    "NUL in cwd": SUBJECT + 'cwd = "a\\u0000b"\n' + ENDPOINTS,
    "NUL in a factor value": SUBJECT + '[good]\nv = "a\\u0000"\n[bad]\nv = "b"\n',
    "NUL in an env value": SUBJECT + 'env = { A = "x\\u0000" }\n' + ENDPOINTS,
    "= in an env name": SUBJECT + 'env = { "A=B" = "x" }\n' + ENDPOINTS,
    "empty env name": SUBJECT + 'env = { "" = "x" }\n' + ENDPOINTS,
    "empty program": '[subject]\ncommand = [""]\n' + ENDPOINTS,
    "deep arrays": "x = " + "[" * 5000 + "]" * 5000 + "\n" + SUBJECT + ENDPOINTS,
    "deep inline tables": "x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n" + SUBJECT + ENDPOINTS,
    "deep nesting in good": SUBJECT + "[good]\nv = " + "[" * 3000 + "]" * 3000 + "\n[bad]\nv = 1\n",
    "a datetime factor": SUBJECT + "[good]\nv = 1979-05-27T07:32:00Z\n[bad]\nv = 1\n",
    "too many constraints": "constraints = [" + ", ".join(['"v > 0"'] * 1001) + "]\n" + SUBJECT + ENDPOINTS,
    "constraint that fails on good": 'constraints = ["v / 0 > 1"]\n' + SUBJECT + ENDPOINTS,
    "not UTF-8": None,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_each_hostile_spec_is_one_spec_error(tmp_path, name):
    (tmp_path / "pyproject.toml").touch()
    path = tmp_path / "spec.toml"
    text = HOSTILE[name]
    path.write_bytes(text.encode() if text is not None else b"\xff\xfe" + os.urandom(200))
    t = time.process_time()      # the work done (a loaded machine adds waiting, not CPU): ~0.01 s
    with pytest.raises(SpecError) as err:
        load_spec(path)
    message = str(err.value)
    assert time.process_time() - t < 2
    assert "\n" not in message and message.startswith(str(path)) and len(message) < 700


@pytest.mark.parametrize("name", ["nested powers", "400-digit timeout", "NUL in argv", "= in an env name",
                                  "oracle metrics a string", "deep arrays", "factor past the int-string limit"])
def test_hostile_specs_through_the_cli_exit_2_with_one_line(tmp_path, name):
    from tests.conftest import bisectk
    (tmp_path / "pyproject.toml").touch()
    path = tmp_path / "spec.toml"
    path.write_text(HOSTILE[name])
    p = bisectk("run", path, "--ledger", tmp_path / "l.db", timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("bisectk: ") and "internal error" not in p.stderr


# -- the fuzz -----------------------------------------------------------------------------------
class Raw(str):
    """A token written into the TOML text as it is (not quoted): what a careless hand types."""


RAW_TOKENS = [Raw("9" * 5000), Raw("9" * 400), Raw("-" + "9" * 400), Raw("[" * 3000 + "]" * 3000),
              Raw("{a=" * 500 + "1" + "}" * 500), Raw("1979-05-27T07:32:00Z"), Raw("07:32:00"), Raw("inf"),
              Raw("-nan"), Raw("0x7fffffff"), Raw("1e999"), Raw("'literal'"), Raw('"\\u0000"'), Raw('"a\\u0000b"')]
HOSTILE_TEXT = ["{v}", "{w}", "{{", "}}", "{nosuch}", "{v}{w}", "a\0b", "=", "A=B", "", " ", "x" * 5000,
                "$(touch pwned)", "; rm -rf /tmp/nothing", "\u202e", "ä", "-", "--", "..", "/"]
HOSTILE_EXPR = ["(((((9**64)**64)**64)**64)**64) > v", "+".join(["v"] * 3000), "-" * 3000 + "v",
                "'%0999999999d' % v == 'x'", "v ** v ** v ** v", "min > 3", "v.real", "__import__('os')",
                "v / 0 > 1", "2 ** -100000", "v in (1, 2, 3)", "max(v, w) % 2 == 0", "(" * 60 + "v" + ")" * 60,
                "9" * 1999, "v and", "v if w else 3", "abs()", "min(v)", "'a' + v"]

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.sampled_from(["v", "w", "x", "warps", "min", "a b", "", "ä", "__class__", "v-1"]) | text
numbers = st.one_of(st.integers(), st.floats(), st.sampled_from([0, -1, 2 ** 63, 10 ** 400, -(10 ** 400),
                                                                10 ** 4000, 1e308, 0.0, -0.0, 1e-320]))
scalars = st.one_of(st.booleans(), numbers, text, st.sampled_from(HOSTILE_TEXT), st.sampled_from(RAW_TOKENS))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
                      max_leaves=8)
ops = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", ">=", "and", "or", "in"])
atoms = st.sampled_from(["v", "w", "x", "0", "1", "64", "9", "2.5", "'a'", "True", "(1, 2)", "[3]", "nosuch"])
expressions = st.recursive(atoms, lambda e: st.one_of(
    st.tuples(e, ops, e).map(" ".join), e.map(lambda s: f"({s})"), e.map(lambda s: f"not {s}"),
    e.map(lambda s: f"-{s}"), st.tuples(st.sampled_from(["min", "max", "abs"]), e, e).map(
        lambda t: f"{t[0]}({t[1]}, {t[2]})")), max_leaves=12) | st.sampled_from(HOSTILE_EXPR)
SAFE = "import sys; print('BISECTK_RESULT {\"err\": 0.0, \"x\": 1}')"


def toml(value) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value > 0 else "-inf") if value in (float("inf"), float("-inf")) \
            else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml(v)}" for k, v in value.items()) + " }"


FACTOR_NAMES = ["v", "w", "x", "warps", "stages"]
clean_scalars = st.one_of(st.integers(-3, 300), st.sampled_from([0.5, 1e-4, 2.0]), st.booleans(),
                          st.sampled_from(["a", "b", "fp16", "bf16", "x y"]))
clean_exprs = st.recursive(st.sampled_from(FACTOR_NAMES[:3] + ["0", "1", "2", "32", "'a'", "(1, 2)"]),
                           lambda e: st.one_of(st.tuples(e, st.sampled_from(["+", "*", "-", "%", "<", "<=", "==",
                                                                              "!=", "and", "or"]), e).map(" ".join),
                                               e.map(lambda s: f"({s})"), e.map(lambda s: f"not {s}")),
                           max_leaves=6)


@st.composite
def spec_docs(draw, safe_command: bool = False):
    """A spec document: half clean, the rest with one or more hostile values, wrong types and junk."""
    hostility = draw(st.sampled_from([0, 0, 0, 1, 1, 2]))

    def mixed(clean, hostile):
        """A strategy: `clean` values, with hostile ones mixed in as this document's hostility says."""
        tenths = {0: 0, 1: 1, 2: 5}[hostility]
        return st.integers(0, 9).flatmap(lambda i: hostile if i < tenths else clean)

    def pick(clean, hostile):
        return draw(mixed(clean, hostile))

    factors = draw(st.lists(mixed(st.sampled_from(FACTOR_NAMES), names), max_size=4, unique=True))
    good = {f: pick(clean_scalars, scalars) for f in factors}
    bad = {f: pick(clean_scalars, scalars) for f in factors}
    if factors and hostility == 2 and draw(st.booleans()):
        bad.pop(draw(st.sampled_from(factors)))
    placeholders = st.sampled_from([f"{{{f}}}" for f in factors] or ["plain"])
    args = draw(st.lists(mixed(placeholders | st.sampled_from(["--n", "3", "x=1"]), st.sampled_from(HOSTILE_TEXT) | text),
                         max_size=4))
    command = ["python", "-c", SAFE, *args]
    if not safe_command:
        command = pick(st.just(command), values)
    subject = {"command": command}
    for key, clean, hostile in [("timeout", st.sampled_from([5, 30.0, 60]), numbers | values),
                                ("repeat", st.integers(1, 3), numbers | values),
                                ("timeout_floor", st.sampled_from([0.5, 1]), numbers),
                                ("build_timeout", st.sampled_from([60]), numbers),
                                ("env", st.dictionaries(st.sampled_from(["A", "FLAVOUR", "N"]),
                                                        placeholders | st.sampled_from(["1", "x"]), max_size=2),
                                 st.dictionaries(names, text | st.sampled_from(HOSTILE_TEXT), max_size=3) | values),
                                ("cwd", st.sampled_from([".", "sub/..", "/tmp"]),
                                 st.sampled_from(["/nonexistent", "a\0b", "x" * 300]) | values)]:
        if draw(st.integers(0, 3)) == 0:
            subject[key] = pick(clean, hostile)
    if not safe_command and draw(st.integers(0, 5)) == 0:
        subject["build"] = pick(st.just(["python", "-c", "pass"]), values)
    doc: dict = {"subject": pick(st.just(subject), values), "good": good, "bad": bad}
    if draw(st.booleans()):
        doc["oracle"] = pick(st.sampled_from([{"metric": "err", "max": 0.5}, {"metric": "x", "min": 1},
                                              {"metrics": {"err": {"max": 1}}}, {"slow_factor": 2.0}]),
                             st.sampled_from([{"metric": "err"}, {"min": 1}, {"metrics": "x"}, {"metrics": 3},
                                              {"metric": "err", "max": Raw("9" * 400)},
                                              {"slow_factor": Raw("9" * 400)}]) | values)
    if draw(st.booleans()):
        doc["constraints"] = pick(st.lists(clean_exprs, max_size=3), st.lists(expressions, max_size=3) | values)
    if factors and draw(st.integers(0, 3)) == 0:
        f = draw(st.sampled_from(factors))
        doc["factors"] = {f: pick(st.lists(clean_scalars, max_size=3), st.lists(scalars, max_size=4))
                          + [good.get(f, 1), bad.get(f, 1)]}
    if hostility and draw(st.integers(0, 10)) == 0:
        doc[draw(names)] = draw(values)
    return doc


def write_doc(path: Path, doc: dict) -> None:
    lines = []
    for key, value in doc.items():
        lines.append(f"{json.dumps(str(key), ensure_ascii=False)} = {toml(value)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    """One directory for every example of a module (hypothesis runs many examples per test; a
    function's tmp_path would be one per test, not per example), under pytest's own temp root."""
    d = tmp_path_factory.mktemp("fuzz")
    (d / "pyproject.toml").touch()
    return d


def exercise(path: Path) -> None:
    """What every command does with a spec before running it; anything but SpecError is a bug."""
    try:
        spec = load_spec(path)
    except SpecError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path)) and len(str(exc)) < 800
        return
    configs = [spec.good, spec.bad] + [spec.hybrid({f}) for f in spec.differences()[:3]]
    for config in configs:
        verdict = spec.violated(config)
        assert verdict is None or isinstance(verdict, str)
        argv, env = spec.argv(config), spec.environment(config)
        problem = invalid_command(argv, spec.cwd, {**env, "PATH": "/bin"})
        assert problem is None, (problem, argv, env)  # what loads can be handed to the kernel
        for build in [spec.build] if spec.build else []:
            assert invalid_command(spec.argv(config, build), spec.cwd, env) is None
        config_key(config)
    spec.fingerprint()


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(spec_docs())
def test_fuzzed_specs_load_or_fail_with_one_spec_error(fuzz_dir, doc):
    path = fuzz_dir / "spec.toml"
    write_doc(path, doc)
    exercise(path)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_as_a_spec(fuzz_dir, data):
    path = fuzz_dir / "junk.toml"
    path.write_bytes(data)
    exercise(path)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=60) | st.sampled_from([r.__str__() for r in RAW_TOKENS] + HOSTILE_TEXT))
def test_set_values_never_raise(text):
    value = parse_value(text)
    assert isinstance(value, (str, int, float, bool))


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(spec_docs(safe_command=True))
def test_fuzzed_specs_through_the_cli(tmp_path, doc):
    write_doc(tmp_path / "spec.toml", doc)
    (tmp_path / "pyproject.toml").touch()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-m", "bisectk", "check", str(tmp_path / "spec.toml"), "--repeat", "1",
                        "--ledger", str(tmp_path / "l.db")], capture_output=True, text=True, timeout=120, env=env,
                       cwd=tmp_path)
    assert p.returncode in (0, 1, 2), (p.returncode, p.stderr[-2000:])
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    # stderr also carries progress lines (one per run) when it is not a terminal; an error is one
    # `bisectk:` line, last, and only when nothing was printed on stdout (bad input)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("bisectk: ") and not ln.startswith("bisectk: warning:")]
    if p.returncode == 2 and not p.stdout:
        assert len(errors) == 1 and p.stderr.endswith(errors[0] + "\n"), p.stderr
    else:
        assert not errors, p.stderr
