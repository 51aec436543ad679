import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bisectk.errors import SpecError
from bisectk.spec import load_spec, substitute
from bisectk.specvalues import format_value, parse_value

BASE = '''
name = "toy"
constraints = ["depth >= 1"]
[subject]
command = ["python", "prog.py", "--depth", "{depth}", "--name", "{label}"]
env = {TOY_MODE = "{mode}"}
[oracle]
metric = "rel_err"
max = 1e-4
[factors]
depth = [1, 2, 3, 4]
[good]
depth = 4
label = "a"
mode = "x"
[bad]
depth = 1
label = "a"
mode = "y"
'''


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    p = tmp_path / "variants" / "s.toml"
    p.parent.mkdir(exist_ok=True)
    p.write_text(text)
    return p


@pytest.mark.parametrize("good,bad", [("1", "1.0"), ("1", "true"), ("0", "false"), ("2.0", "2")])
def test_values_equal_in_python_but_written_differently_are_differences(tmp_path, good, bad):
    """The subject receives "1" and "1.0", "1" and "true": a difference, though Python's == says not."""
    text = BASE.replace('label = "a"\nmode = "x"', f'label = {good}\nmode = "x"').replace(
        'label = "a"\nmode = "y"', f'label = {bad}\nmode = "y"')
    spec = load_spec(write(tmp_path, text))
    assert spec.differences() == ["depth", "label", "mode"]
    assert substitute("{label}", spec.endpoint("bad")) == bad


def test_loads_and_derives(tmp_path):
    spec = load_spec(write(tmp_path, BASE))
    assert spec.differences() == ["depth", "mode"]
    assert spec.cwd == tmp_path.resolve()  # project root, not the spec's directory
    assert spec.ordinal == {"depth": [1, 2, 3, 4]}
    cfg = spec.hybrid({"mode"})
    assert cfg == {"depth": 4, "label": "a", "mode": "y"}
    assert spec.argv(cfg)[2:] == ["--depth", "4", "--name", "a"]
    assert spec.environment(cfg) == {"TOY_MODE": "y"}
    assert spec.violated({"depth": 0, "label": "a", "mode": "x"}) == "depth >= 1"
    assert spec.thresholds[0].violation(2.0) == "rel_err 2 > 0.0001"
    assert spec.thresholds[0].violation(float("nan")) == "NaN in rel_err"


def test_shell_metacharacters_are_literal(tmp_path):
    spec = load_spec(write(tmp_path, BASE))
    evil = "a; rm -rf / $(touch x) `id` 'q' \"d\" | & > <"
    assert spec.argv({"depth": 1, "label": evil, "mode": "x"})[-1] == evil
    assert substitute("{{depth}} {depth} {'a': 1}", {"depth": 3}) == "{depth} 3 {'a': 1}"


@pytest.mark.parametrize("edit,key", [
    (lambda s: s.replace('[bad]\ndepth = 1\n', '[bad]\n'), "bad]: factor 'depth' is missing"),
    (lambda s: s.replace('command = ["python", "prog.py", "--depth", "{depth}", "--name", "{label}"]', 'command = "python prog.py"'), "subject.command"),
    (lambda s: s.replace('"{depth}"', '"{deph}"'), "subject.command"),
    (lambda s: s.replace('max = 1e-4', 'max = "small"'), "oracle.max"),
    (lambda s: s.replace('depth >= 1', "depth >= __import__('os')"), "constraints"),
    (lambda s: s.replace('depth >= 1', 'stages > 1'), "constraints"),
    (lambda s: s.replace('depth = [1, 2, 3, 4]', 'depth = [2, 3]'), "factors.depth"),
    (lambda s: s + '\nfrobnicate = 1\n', "frobnicate"),
    (lambda s: s.replace('[subject]', '[subject]\ntimeout = -3'), "subject.timeout"),
    # below --timeout's 0.01: a watchdog that fires before any process can start
    (lambda s: s.replace('[subject]', '[subject]\ntimeout = 0.001'), "subject.timeout]: must be a number from 0.01"),
    # a number in argv or the environment: which element or variable, and how to write it
    (lambda s: s.replace('"--depth", "{depth}"', '"--depth", 4'), "subject.command]: must be a list of strings (argv, no shell): element 3 is an integer 4; write it in quotes"),
    (lambda s: s.replace('TOY_MODE = "{mode}"', 'TOY_MODE = "{mode}", OMP_NUM_THREADS = 1'), "subject.env.OMP_NUM_THREADS]: must be a string (an environment value), got an integer 1"),
    (lambda s: s.replace('command = ["python", "prog.py", "--depth", "{depth}", "--name", "{label}"]', 'command = "python prog.py {depth} {label}"'), "no shell: split it into its words"),
    # an empty metric name: every run UNRESOLVED, "metric  not reported"
    (lambda s: s.replace('metric = "rel_err"', 'metric = ""'), "oracle.metric]: must be a metric name"),
    (lambda s: s.replace('metric = "rel_err"\nmax = 1e-4', 'metrics = {"" = {max = 1}}'), "oracle.metrics]: '' is no"),
    (lambda s: s.replace('max = 1e-4', 'max = 1e-4\nslow_factor = 2\nslow_metric = " "'), "oracle.slow_metric]: must be"),
    # a SLOW metric without slow_factor was never judged, and nothing said so
    (lambda s: s.replace('max = 1e-4', 'max = 1e-4\nslow_metric = "t"'), "oracle.slow_metric]: needs slow_factor"),
    (lambda s: s.replace('max = 1e-4', 'max = 1e-4\nslow_better = "lower"'), "oracle.slow_better]: needs slow_factor"),
    (lambda s: s.replace('[subject]', '[subject]\nrepeat = 0'), "subject.repeat"),
    (lambda s: s.replace('label = "a"\nmode = "x"', 'label = ["a"]\nmode = "x"'), "good.label"),
])
def test_errors_name_file_and_key(tmp_path, edit, key):
    p = write(tmp_path, edit(BASE))
    with pytest.raises(SpecError) as err:
        load_spec(p)
    msg = str(err.value)
    assert str(p) in msg and key in msg and "\n" not in msg


@pytest.mark.parametrize("values,said", [
    ('[1, 2, 2, 3, 4]', "lists 2 twice (values 2 and 3"),
    ('[1, 2, "2", 3, 4]', 'lists "2" twice (values 2 and 3'),      # the subject receives "2" both times
    ('[1, 2, 3.0, 3.0, 4]', "lists 3.0 twice (values 3 and 4"),
])
def test_an_ordinal_value_listed_twice_is_refused(tmp_path, values, said):
    """`depth = [1, 2, 2, 3, 4]` was accepted: the threshold's bisection steps over the same value
    as over two, and its report names a value twice. Refused, naming the factor and the value."""
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, BASE.replace("depth = [1, 2, 3, 4]", f"depth = {values}")))
    msg = str(err.value)
    assert "[factors.depth]" in msg and said in msg and "\n" not in msg, msg


def test_an_ordinal_list_holds_the_endpoints_by_the_text_the_subject_receives(tmp_path):
    """`true` was found in [1, 2] by Python's == (True == 1), though the subject receives "true"
    and never "1"; 1 and 1.0 are two values to it. "4" and 4 are one."""
    with pytest.raises(SpecError, match=r"\[factors.depth\]: does not contain the bad value true"):
        load_spec(write(tmp_path, BASE.replace("[bad]\ndepth = 1", "[bad]\ndepth = true")))
    with pytest.raises(SpecError, match=r"does not contain the good value 4.0"):
        load_spec(write(tmp_path, BASE.replace("[good]\ndepth = 4", "[good]\ndepth = 4.0")))
    spec = load_spec(write(tmp_path, BASE.replace("depth = [1, 2, 3, 4]", 'depth = ["1", "2", "3", "4"]')))
    assert spec.ordinal["depth"] == ["1", "2", "3", "4"]


def test_a_factor_named_in_another_script_is_a_factor(tmp_path):
    """`"ñ" = 1` (TOML quotes a key outside ASCII): the docs name factors with letters, digits and
    _, and `{ñ}` is a placeholder as str.format reads one, but the name was refused with "use
    letters, digits and _". Placeholders, constraints and the unused-factor hint take it now."""
    text = ('constraints = ["ñ >= 1"]\n[subject]\ncommand = ["prog", "{ñ}", "{ α1 }"]\nenv = {N = "{α1}"}\n'
            '[good]\n"ñ" = 1\n"α1" = "a"\n"_x" = 0\n[bad]\n"ñ" = 2\n"α1" = "b"\n"_x" = 1\n')
    spec = load_spec(write(tmp_path, text))
    assert spec.differences() == ["ñ", "α1", "_x"] and spec.unused_factors() == ["_x"]
    assert spec.argv(spec.endpoint("bad")) == ["prog", "2", "{ α1 }"] and spec.environment(spec.endpoint("bad")) == {"N": "b"}
    assert spec.violated({"ñ": 0, "α1": "a", "_x": 0}) == "ñ >= 1"
    assert spec.near_placeholders("α1") == ["{ α1 }"]
    for bad in ("1ñ", "ñ-x", "x.ñ"):        # a digit first, or a character no placeholder holds
        with pytest.raises(SpecError, match="cannot be written as a"):
            load_spec(write(tmp_path, text.replace('"ñ" = 2', f'"ñ" = 2\n"{bad}" = 1').replace('"ñ" = 1', f'"ñ" = 1\n"{bad}" = 1')))


@pytest.mark.parametrize("move,key", [
    ('constraints = ["depth >= 1"]\n', "subject.constraints]: unknown key"),
    ('constraints = ["depth >= 1"]\n', "bad.constraints]: must be a string, number or boolean, got list"),
    ('name = "toy"\n', "good]: factor 'name' is missing (it is in [bad]"),
])
def test_a_top_level_key_written_below_a_table_says_where_it_belongs(tmp_path, move, key):
    """TOML puts every key after [subject] (or at the end, after [bad]) in that table: the problem
    said "unknown key", or took `name` for a factor missing from [good]; it says where it goes."""
    text = BASE.replace(move, "")
    text = text.replace("[subject]\n", "[subject]\n" + move) if key.startswith("subject") else text + move
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    msg = str(err.value)
    assert key in msg and f"{move.split()[0]} is a top-level key: write it above the first [table] header" in msg, msg


@pytest.mark.parametrize("name", ["True", "None", "in"])
def test_a_factor_named_as_a_python_keyword_is_refused_where_constraints_would_read_it(tmp_path, name):
    """`constraints = ["True >= 1"]` over a factor named True read Python's True (always >= 1): the
    constraint held for every value, silently. Without constraints the name is only a placeholder,
    which str.format reads by name, and stays allowed."""
    text = BASE.replace("depth", name)
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert f"factor '{name}' cannot be named in a constraint" in str(err.value), str(err.value)
    spec = load_spec(write(tmp_path, text.replace(f'constraints = ["{name} >= 1"]\n', "")))
    assert spec.good[name] == 4 and not spec.constraints


def test_a_factor_name_python_reads_as_another_is_refused_where_constraints_would_read_it(tmp_path):
    """Python reads an identifier in its NFKC form: in `constraints = ["ﬁ < 2"]` the ligature ﬁ is
    read as `fi`, so beside a factor `fi` the constraint judged every configuration by fi's value
    (good called invalid), and alone it was refused as naming an unknown factor 'fi'. The name is
    refused where constraints would read it, like a keyword; without constraints it stays allowed."""
    text = BASE.replace('"--name", "{label}"', '"--name", "{label}", "--x", "{ﬁ}", "--y", "{fi}"') \
        .replace('constraints = ["depth >= 1"]', 'constraints = ["ﬁ < 2"]') \
        .replace('label = "a"\n', 'label = "a"\n"ﬁ" = 1\nfi = 5\n')
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert "factor 'ﬁ' cannot be named in a constraint" in str(err.value) and "'fi'" in str(err.value), str(err.value)
    spec = load_spec(write(tmp_path, text.replace('constraints = ["ﬁ < 2"]\n', "")))
    assert spec.good["ﬁ"] == 1 and spec.good["fi"] == 5 and not spec.constraints


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.toml")
    bad = tmp_path / "x.toml"
    bad.write_text("name = [unterminated")
    with pytest.raises(SpecError, match="invalid TOML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="directory"):
        load_spec(tmp_path)


def test_parse_value():
    assert parse_value("3") == 3 and parse_value("1e-4") == 1e-4
    assert parse_value("true") is True and parse_value("hello world") == "hello world"
    assert parse_value('"3"') == "3"


@settings(max_examples=300)
@given(st.one_of(st.text(), st.sampled_from(["line1\nline2", "a\tb", "\x1b[2J", "x\x7fy", '"\U0001f600"', "1", "true"])))
def test_format_value_reads_back_unchanged_and_on_one_line(value):
    """The `--set` of a reproduction command (the debug log's "What we did", the terminal's next
    step) runs the value it names: a newline or another control character is written escaped, not
    raw (a Markdown code span or a one-line message would turn it into a space)."""
    text = format_value(value)
    assert parse_value(text) == value
    assert not any(c < " " or c == "\x7f" for c in text)


toml_values = st.recursive(
    st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.floats(allow_nan=False)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["name", "subject", "good", "bad", "oracle", "factors", "constraints", "x"]),
                       toml_values, max_size=6),
       st.binary(max_size=60))
def test_malformed_specs_give_spec_errors_only(tmp_path, doc, junk):
    """Whatever the file holds, loading either succeeds or raises SpecError with one line."""
    import json
    p = tmp_path / "fuzz.toml"
    lines = []
    for k, v in doc.items():
        lines.append(f"{k} = {json.dumps(v)}" if not isinstance(v, dict) else
                     f"{k} = {{ {', '.join(f'{json.dumps(a)} = {json.dumps(b)}' for a, b in v.items())} }}")
    p.write_bytes("\n".join(lines).encode() + (b"\n" + junk if junk and junk[0] % 2 else b""))
    try:
        load_spec(p)
    except SpecError as exc:
        assert "\n" not in str(exc).strip()


@settings(max_examples=60, deadline=None)
@given(st.integers(64, 160), st.integers(0, 10**6))
def test_many_factor_environment_equals_plain_substitution(n, seed):
    """Spec.environment renders a big env from the good and bad renderings (a hybrid costs dict
    updates, not a substitution per variable); any configuration must still get exactly what
    substituting every template gives: values in between, 1 vs 1.0 vs True, mixed templates."""
    import random
    from bisectk.spec import Spec
    from bisectk.spec import config_key
    rng = random.Random(seed)
    env = {f"F{k}": "{f%d}" % k for k in range(n)}
    env.update(MIX="a{f1}-{f2}", LIT="x{{y}}", PRE="p{f3}s")
    good = {f"f{k}": rng.choice([0, 1, "a", True, 1.5]) for k in range(n)}
    bad = {f"f{k}": rng.choice([0, 1, "b", False, 2.5]) for k in range(n)}
    spec = Spec(path=Path("s.toml"), name="s", description="", command=["true"], build=None, cwd=Path("."),
                env=env, timeout=None, build_timeout=None, repeat=1, thresholds=[], slow_factor=None,
                slow_metric=None, good=good, bad=bad)
    for _ in range(6):
        config = dict(good)
        for f in rng.sample(sorted(good), rng.randrange(n)):
            config[f] = rng.choice([bad[f], bad[f], 7, True, 1.0, "z"])
        assert spec.environment(config) == {k: substitute(v, config) for k, v in env.items()}
        # a hybrid proper (Spec.hybrid: good's or bad's very objects), with and without the
        # factors that share MIX: the C-level path, and its refusal, give the same environment
        applied = set(rng.sample(sorted(good), rng.randrange(n)))
        for hybrid in (spec.hybrid(applied), spec.hybrid(applied - {"f1", "f2"})):
            assert spec.environment(hybrid) == {k: substitute(v, hybrid) for k, v in env.items()}
        twin = {k: (float(v) if type(v) is int else v) for k, v in config.items()}
        assert (config_key(twin) == config_key(config)) == (twin == config and all(
            type(twin[k]) is type(config[k]) for k in config))


@pytest.mark.parametrize("name", ["x.y", "a b", "tile-m", "d\u00e9-x", "2nd", "\u0663x"])   # "٣x": an Arabic-Indic digit first
def test_factor_name_that_no_placeholder_can_name_is_an_error(tmp_path, name):
    """`{x.y}` is no placeholder (names are letters, digits and _): a factor so named never reaches
    the subject, whatever the command says, so the spec is refused at load rather than run with
    the literal text `{x.y}` and a warning that the factor is unused."""
    text = BASE.replace('"{label}"', f'"{{{name}}}"').replace("label = ", f'"{name}" = ')
    p = write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_spec(p)
    msg = str(err.value)
    assert repr(name) in msg and "placeholder" in msg and "\n" not in msg


@pytest.mark.parametrize("bound,value", [("max = 0.001", 0.0010000001), ("max = 1.0000001", 1.00000015),
                                         ("min = 0.9999", 0.99989999), ("max = 0.0010001", 0.0010004)])
def test_a_violation_just_past_its_bound_reads_as_one(tmp_path, bound, value):
    """A value just past the bound is written with the digits that show it past: never `err 0.001 >
    0.001`, a verdict that contradicts itself."""
    spec = load_spec(write(tmp_path, BASE.replace("max = 1e-4", bound)))
    text = spec.thresholds[0].violation(value)
    shown, limit = (float(x) for x in text.split()[1::2])
    assert (shown > limit) if bound.startswith("max") else (shown < limit), text


def test_nan_on_both_sides_is_no_difference(tmp_path):
    """`x = nan` in [good] and [bad]: the subject gets "nan" on both sides, yet `nan != nan` made x
    a difference ("x nan -> nan") that the search flipped for nothing."""
    text = BASE.replace('label = "a"\nmode = "x"', 'label = nan\nmode = "x"').replace(
        'label = "a"\nmode = "y"', 'label = nan\nmode = "y"')
    spec = load_spec(write(tmp_path, text))
    assert spec.differences() == ["depth", "mode"]


def test_negative_zero_and_zero_are_a_difference(tmp_path):
    """`alpha = 0.0` in [good], `-0.0` in [bad]: the subject receives "0.0" and "-0.0", yet
    `0.0 == -0.0` made them one value: `ablate` said "[good] and [bad] are identical" and `run
    --config bad` printed "(as good)" above a failing verdict."""
    text = BASE.replace('label = "a"\nmode = "x"', 'label = 0.0\nmode = "x"').replace(
        'label = "a"\nmode = "y"', 'label = -0.0\nmode = "y"')
    spec = load_spec(write(tmp_path, text))
    assert spec.differences() == ["depth", "label", "mode"]
    assert spec.written_alike() == []


@pytest.mark.parametrize("oracle", ['metric = "err"\nmin = 1.0\nmax = 0.5', 'metrics = { err = { min = 2, max = 1 } }'])
def test_a_range_no_value_can_be_in_is_refused_at_load(tmp_path, oracle):
    """min above max: every run, the good endpoint's too, would be WRONG, and the endpoints called
    unusable after the runs were paid for; the spec is refused as it loads, naming the bounds."""
    text = re.sub(r"\[oracle\][^\[]*", "[oracle]\n" + oracle + "\n\n", BASE, count=1)
    assert text != BASE
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert "is above max" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("good,bad", [("0", '"0"'), ("true", '"true"'), ("2.5", '"2.5"')])
def test_values_written_differently_that_reach_the_subject_as_the_same_text_are_no_difference(tmp_path, good, bad):
    """`0` and `"0"` differ in TOML, but the subject receives "0" twice: flipping it changes
    nothing, so it is no difference to search (a bad side differing only so "does not reproduce"
    after ten runs); written_alike names it for a warning."""
    text = BASE.replace('label = "a"\nmode = "x"', f'label = {good}\nmode = "x"').replace(
        'label = "a"\nmode = "y"', f'label = {bad}\nmode = "y"')
    spec = load_spec(write(tmp_path, text))
    assert spec.differences() == ["depth", "mode"]
    assert spec.written_alike() == ["label"]
    assert load_spec(write(tmp_path, BASE)).written_alike() == []


def test_a_spec_saved_with_a_byte_order_mark_loads(tmp_path):
    """An editor that saves UTF-8 with a BOM: tomllib called it 'Invalid statement (at line 1,
    column 1)', a line that names nothing the user can see."""
    p = write(tmp_path, BASE)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    assert load_spec(p).differences() == ["depth", "mode"]


def test_slow_better_is_lower_or_higher_and_higher_needs_a_metric(tmp_path):
    """A throughput's slow_better = "higher"; anything else, or "higher" on wall time (better lower
    by nature), is a one-line error; leaving it out keeps the spec's fingerprint (stored runs reused)."""
    def spec(oracle):
        p = tmp_path / "s.toml"
        p.write_text(f'[subject]\ncommand = ["true", "{{a}}"]\n[oracle]\nslow_factor = 1.1\n{oracle}\n'
                     '[good]\na = 0\n[bad]\na = 1\n')
        return p
    assert load_spec(spec('slow_metric = "tflops"\nslow_better = "higher"')).slow_better == "higher"
    plain = load_spec(spec('slow_metric = "tflops"'))
    assert plain.slow_better == "lower"
    lower = load_spec(spec('slow_metric = "tflops"\nslow_better = "lower"'))
    higher = load_spec(spec('slow_metric = "tflops"\nslow_better = "higher"'))
    assert plain.fingerprint(tmp_path) == lower.fingerprint(tmp_path) != higher.fingerprint(tmp_path)
    with pytest.raises(SpecError, match='oracle.slow_better.*must be "lower".*got \'up\''):
        load_spec(spec('slow_metric = "tflops"\nslow_better = "up"'))
    with pytest.raises(SpecError, match="needs a slow_metric"):
        load_spec(spec('slow_better = "higher"'))


def test_a_metrics_table_in_another_order_is_the_same_key_and_the_same_signature(tmp_path):
    """The thresholds kept the file's order: `metrics = {err = ..., cos = ...}` swapped re-ran every
    configuration (another fingerprint), and a run breaking both was 'err ...; cos ...' under one
    order and 'cos ...; err ...' under the other, two texts for one failure under --same-failure
    signature. Both follow the metric names now, whatever the file's order."""
    from bisectk.run.classify import Judge, classify_run
    from bisectk.run.process import RawRun
    found = []
    for order in ("err = {max = 0.5}, cos = {min = 0.9}", "cos = {min = 0.9}, err = {max = 0.5}"):
        text = BASE.replace('metric = "rel_err"\nmax = 1e-4', f"metrics = {{{order}}}")
        spec = load_spec(write(tmp_path, text))
        run = classify_run(RawRun(started=True, exit_code=0, duration_s=0.1,
                                  stdout='BISECTK_RESULT {"err": 1.0, "cos": 0.1}\n'), Judge(spec.thresholds))
        unreported = classify_run(RawRun(started=True, exit_code=0, duration_s=0.1, stdout='BISECTK_RESULT {}\n'),
                                  Judge(spec.thresholds))
        found.append((spec.fingerprint(), run.signature, unreported.signature))
    assert found[0] == found[1], found
    assert found[0][1] == "cos 0.1 < 0.9; err 1 > 0.5"


@pytest.mark.parametrize("lines,said", [
    ('timeout = 5\ntimeout_floor = 2', ["subject.timeout_floor = 2 is ignored: subject.timeout = 5 fixes the watchdog"]),
    ('build_timeout = 60', ["subject.build_timeout = 60 is ignored: the spec has no build step"]),
    ('timeout_floor = 2\nbuild = ["true"]\nbuild_timeout = 60', []),
])
def test_a_setting_nothing_uses_is_said_not_refused(tmp_path, lines, said):
    """`timeout_floor` beside a fixed `timeout`, and `build_timeout` without a build, were ignored
    without a word: the spec still loads (it worked before), and ignored_settings names them."""
    spec = load_spec(write(tmp_path, BASE.replace('[subject]', '[subject]\n' + lines)))
    got = spec.ignored_settings()
    assert len(got) == len(said) and all(g.startswith(w) and "\n" not in g for g, w in zip(got, said)), got
    if "timeout_floor = 2\n" in lines + "\n" and said == []:     # a floor, calibrated: --timeout fixes it
        assert spec.ignored_settings(timeout=3)[0].startswith("subject.timeout_floor = 2 is ignored: --timeout 3")


def test_a_values_names_are_imported_from_specvalues_where_they_are_defined():
    """spec.py re-exported specvalues' names (render, same_value, Threshold, ...) for eleven
    importers after they moved there (283e053): a second address for each, which the layer map
    could not tell from spec's own. Every importer names specvalues, and spec hands none out."""
    import ast

    import bisectk.specvalues as V
    import bisectk.spec as S
    values = {n for n in vars(V) if not n.startswith("_") and getattr(getattr(V, n), "__module__", "") == V.__name__}
    values.add("Scalar")
    assert values & set(S.__all__) == set(), values & set(S.__all__)
    root = Path(S.__file__).resolve().parents[1]
    wrong = []
    for path in [*(root / "bisectk").rglob("*.py"), *(root / "tests").rglob("*.py"), *(root / "bench").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "bisectk.spec":
                wrong += [f"{path.relative_to(root)}: {a.name}" for a in node.names if a.name in values]
    assert wrong == [], wrong


@pytest.mark.parametrize("values,said", [
    ('[1, true, 4]', "value 1 is a number (1), value 2 a boolean (true)"),
    ('[1, "2", 3.0, 4]', 'value 1 is a number (1), value 2 a string ("2")'),
    ('["a", 1, 4]', 'value 1 is a string ("a"), value 2 a number (1)'),
    ('[false, "x", 1, 4]', 'value 1 is a boolean (false), value 2 a string ("x")'),
])
def test_an_ordinal_list_of_mixed_kinds_is_refused(tmp_path, values, said):
    """`depth = [1, true, 4]` and `[1, "2", 3.0, 4]` were accepted as a list "in order", and a
    threshold's bisection (engine/ablate.py) takes the listed positions for their order. An ordinal list is
    of numbers (integers and floats together), strings or booleans; strings alone are the way to
    order any text as listed, and match an endpoint by its text."""
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, BASE.replace("depth = [1, 2, 3, 4]", f"depth = {values}")))
    msg = str(err.value)
    assert "[factors.depth]: mixes kinds of value" in msg and said in msg and "\n" not in msg, msg
    for fine in ('[1, 2.5, 3, 4]', '["1", "true", "3", "4"]'):
        spec = load_spec(write(tmp_path, BASE.replace("depth = [1, 2, 3, 4]", f"depth = {fine}")))
        assert len(spec.ordinal["depth"]) == 4


@pytest.mark.parametrize("written,said", [("1e400", "past a float's range: it would be read as inf"),
                                          ("-1.5e999", "past a float's range: it would be read as -inf"),
                                          ("2e-400", "too small for a float: it would be read as 0.0")])
def test_a_float_past_a_doubles_range_is_refused_not_sent_as_inf_or_zero(tmp_path, written, said):
    """tomllib reads 1e400 as inf and 1e-400 as 0.0: the spec loaded without a word and the subject
    received `--e inf`, a value no one wrote."""
    p = write(tmp_path, BASE.replace('label = "a"\nmode = "y"', f'label = {written}\nmode = "y"'))
    with pytest.raises(SpecError, match=re.escape(f"{written} is {said}")):
        load_spec(p)
    assert parse_value(written) == written      # --set e=1e400: the text as typed, not inf
    for fine in ("inf", "-inf", "nan", "0.0", "-0e5", "1e308", "5e-324"):
        assert parse_value(fine) == float(fine) or fine == "nan"
