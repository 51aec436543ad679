"""The factor space: a point's memo key is the configuration's canonical JSON, however it is made."""

from __future__ import annotations

import random

from bisectk.spaces.factors import FactorSpace
from bisectk.spec import config_key, load_spec


def test_a_points_key_is_its_configurations_canonical_json(tmp_path):
    """The key is joined from per-factor pieces (fast at thousands of factors); it must be the very
    string config_key makes of the configuration, or the ledger's memo would miss (or collide)."""
    good = {"b_warps": 4, "a_name": "plain", "c_eps": 1e-6, "d_flag": False, "e_text": "caf\u00e9 \"q\"",
            "f_same": 7, **{f"z{k:03d}": k for k in range(40)}}
    bad = {"b_warps": 10, "a_name": "fast \u2192 path", "c_eps": float("inf"), "d_flag": True, "e_text": "x\\y",
           "f_same": 7, **{f"z{k:03d}": -k - 0.5 for k in range(40)}}
    lines = ["[subject]", 'command = ["true"]', "[good]"]
    lines += [f"{k} = {_toml(v)}" for k, v in good.items()]
    lines += ["[bad]"]
    lines += [f"{k} = {_toml(v)}" for k, v in bad.items()]
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.toml").write_text("\n".join(lines) + "\n")
    spec = load_spec(tmp_path / "s.toml")
    space = FactorSpace(spec)
    diffs = space.differences()
    assert "f_same" not in diffs and len(diffs) == len(good) - 1
    rng = random.Random(3)
    for _ in range(200):
        point = frozenset(rng.sample(diffs, rng.randrange(len(diffs) + 1)))
        assert space.key(point) == config_key(space.config(point))
    base = FactorSpace(spec, base={**spec.good, "b_warps": 6})    # a base that is not good
    point = frozenset(diffs[:3])
    assert base.key(point) == config_key(base.config(point))


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == float("inf"):
        return "inf"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v)


def test_missing_names_a_path_of_the_command_that_is_nowhere(tmp_path):
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "here.py").write_text("")
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "gone.py", "here.py", "{n}"]\n'
                                     '[good]\nn = 1\n[bad]\nn = 2\n')
    space = FactorSpace(load_spec(tmp_path / "s.toml"))
    assert space.missing(str(tmp_path / "gone.py")) == str(tmp_path / "gone.py")
    assert space.missing("gone.py") == str(tmp_path / "gone.py")
    assert space.missing("here.py") is None             # it is there
    assert space.missing("out/result.txt") is None      # the command does not name it
