"""Environment capture: keys, speed, fake nvidia-smi, save/load, diff, env differences as factors."""

import re
import json
import os
import stat
import sys
import time
import tomllib

import pytest

from bisectk.spaces import env
from bisectk.spaces.env import EnvError, as_factors, capture, diff, factor_name, factors_toml, load, save
from bisectk.spaces.commits import SpaceError
from bisectk.spec import load_spec
from tests.fixtures.gitrepo import counter_repo


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "nvidia-smi", 'echo "NVIDIA H100 80GB HBM3, 9.0, 550.54.15"\n'
                                    'echo "NVIDIA H100 80GB HBM3, 9.0, 550.54.15"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def _cpu_s() -> float:
    """CPU seconds of this process and of its children waited for (capture's git, nvidia-smi): the
    work done, where the wall clock also counted waiting for a core on a loaded machine (CI: 3
    workers on 2 cores; 0.8 s of wall for 0.07 s of CPU here at a load of 17)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def test_capture_keys_and_speed(monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    monkeypatch.setenv("NVIDIA_API_KEY", "hunter2")
    monkeypatch.setenv("UNRELATED_THING", "x")
    imported = "torch" in sys.modules
    t = _cpu_s()
    data = capture()
    assert _cpu_s() - t < 3.0
    assert {"bisectk_env", "captured_at", "host", "python", "gpu", "cuda_toolkit", "packages",
            "modules", "env", "git"} <= data.keys()
    assert data["python"]["executable"] == sys.executable
    assert data["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert data["host"]["hostname"]
    assert data["env"]["CUDA_LAUNCH_BLOCKING"] == "1" and data["env"]["CUTE_DSL_ARCH"] == "sm_100a"
    assert "UNRELATED_THING" not in data["env"]
    assert "hunter2" not in json.dumps(data) and data["env"]["NVIDIA_API_KEY"].startswith("<redacted ")
    assert "numpy" in data["packages"] and "numpy" in data["modules"]
    assert ("torch" in sys.modules) == imported       # versions come from metadata, not imports
    json.dumps(data)                                  # JSON-ready


def test_capture_parses_nvidia_smi(fake_smi):
    data = capture(torch=False)
    gpu = data["gpu"]
    assert gpu["count"] == 2 and gpu["driver"] == "550.54.15"
    assert gpu["devices"][0] == {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                                 "driver": "550.54.15"}
    assert "torch" not in data


def test_nvidia_smi_failure_is_recorded(tmp_path, monkeypatch):
    _script(tmp_path / "nvidia-smi", 'echo "NVIDIA-SMI has failed because it couldn\'t communicate" >&2\nexit 9\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpu = capture(torch=False)["gpu"]
    assert gpu["count"] == 0 and "exit 9" in gpu["error"] and "communicate" in gpu["error"]


def test_torch_probe_runs_out_of_process(tmp_path):
    fake = _script(tmp_path / "python", 'echo noise\necho \'{"version": "2.5.1", "cuda": "12.4", "available": false}\'\n')
    assert env.torch_probe(str(fake)) == {"version": "2.5.1", "cuda": "12.4", "available": False}
    broken = _script(tmp_path / "broken", 'echo "ImportError: libcudart.so.12" >&2\nexit 1\n')
    assert "libcudart" in env.torch_probe(str(broken))["error"]
    slow = _script(tmp_path / "slow", "sleep 5\n")
    assert "no answer" in env.torch_probe(str(slow), timeout=0.2)["error"]


def test_save_load_roundtrip_and_errors(tmp_path):
    data = capture(torch=False)
    path = tmp_path / "sub" / "a.json"
    assert save(path, data) == data
    assert load(path) == data
    with pytest.raises(EnvError, match="no such file"):
        load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(EnvError, match="not JSON"):
        load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(SpaceError, match="not an environment capture"):
        load(tmp_path / "other.json")


def test_diff_on_two_saved_captures(tmp_path):
    a = capture(torch=False)
    b = json.loads(json.dumps(a))
    b["captured_at"] = "2000-01-01T00:00:00Z"
    b["packages"]["nvidia-cutlass-dsl"] = "9.9.9"
    b["gpu"]["devices"] = [{"name": "NVIDIA B200", "compute_capability": "10.0", "driver": "570.1"}]
    b["env"] = dict(a["env"], CUDA_LAUNCH_BLOCKING="1", CUTE_DSL_ARCH="sm_100a")
    a["env"] = dict(a["env"], CUTE_DSL_ARCH="sm_90a")
    a["env"].pop("CUDA_LAUNCH_BLOCKING", None)
    save(tmp_path / "a.json", a)
    save(tmp_path / "b.json", b)
    d = diff(load(tmp_path / "a.json"), load(tmp_path / "b.json"))
    keys = {k: (x, y) for k, x, y in d}
    assert keys["env.CUDA_LAUNCH_BLOCKING"] == (None, "1")
    assert keys["env.CUTE_DSL_ARCH"] == ("sm_90a", "sm_100a")
    assert keys["packages.nvidia-cutlass-dsl"][1] == "9.9.9"
    assert keys["gpu.devices.0.name"][1] == "NVIDIA B200"
    assert "captured_at" not in keys
    assert [k for k, _, _ in d] == sorted(keys)
    assert diff(a, a) == []


def test_env_differences_become_spec_factors(tmp_path):
    d = [("env.CUDA_LAUNCH_BLOCKING", None, "1"), ("env.CUTE_DSL_ARCH", "sm_90a", "sm_100a"),
         ("env.cute_dsl_arch", "x", 'quote " back\\ slash\x01'), ("gpu.devices.0.name", "A", "B"),
         ("env.NVIDIA_API_KEY", "<redacted 1234abcd>", "<redacted 99999999>")]
    factors = as_factors(d)
    assert factors == {"cuda_launch_blocking": ("", "1"), "cute_dsl_arch": ("sm_90a", "sm_100a"),
                       "cute_dsl_arch_2": ("x", 'quote " back\\ slash\x01')}
    snippet = factors_toml(d)
    parsed = tomllib.loads(snippet)
    assert parsed["subject"]["env"] == {"CUDA_LAUNCH_BLOCKING": "{cuda_launch_blocking}",
                                        "CUTE_DSL_ARCH": "{cute_dsl_arch}", "cute_dsl_arch": "{cute_dsl_arch_2}"}
    assert parsed["good"]["cute_dsl_arch_2"] == "x" and parsed["bad"]["cute_dsl_arch_2"].endswith("\x01")
    # the snippet is a valid part of a spec: the loader accepts env placeholders naming the factors
    (tmp_path / "pyproject.toml").touch()
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text('name = "env"\n[oracle]\nmetric = "err"\nmax = 0\n'
                         + snippet.replace("[subject]\n", '[subject]\ncommand = ["python", "-c", "pass"]\n'))
    spec = load_spec(spec_path)
    assert spec.environment(spec.bad)["CUTE_DSL_ARCH"] == "sm_100a"
    assert spec.environment(spec.good)["CUDA_LAUNCH_BLOCKING"] == ""
    assert factor_name("9LIVES-X") == "_9lives_x"
    assert factors_toml([("packages.torch", "2.4", "2.5")]).startswith("#")


def test_a_difference_that_empty_for_unset_would_change_is_no_factor_and_the_snippet_says_why():
    """A spec cannot unset a variable, so unset becomes "": a variable set empty against unset made a
    factor whose good and bad were both "", and CUDA_VISIBLE_DEVICES unset on the bad side made a
    bad value "" that hides every GPU, so the ablation would have blamed it for any failure."""
    d = [("env.CUDA_E", "", None), ("env.CUDA_LAUNCH_BLOCKING", None, "1"),
         ("env.CUDA_VISIBLE_DEVICES", "0,1", None), ("env.NVIDIA_VISIBLE_DEVICES", None, "0")]
    assert as_factors(d) == {"cuda_launch_blocking": ("", "1")}
    snippet = factors_toml(d)
    parsed = tomllib.loads(snippet)
    assert parsed["subject"]["env"] == {"CUDA_LAUNCH_BLOCKING": "{cuda_launch_blocking}"}
    notes = [line for line in snippet.splitlines() if line.startswith("# not a factor: ")]
    assert len(notes) == 3 and "CUDA_E is set empty on one side and unset on the other" in notes[0]
    assert "CUDA_VISIBLE_DEVICES is unset on one side" in notes[1] and "hides every GPU" in notes[1]
    assert as_factors([("env.CUDA_VISIBLE_DEVICES", "0", "1")]) == {"cuda_visible_devices": ("0", "1")}
    only = factors_toml([("env.CUDA_VISIBLE_DEVICES", None, "0")])
    assert only.startswith("# not a factor: CUDA_VISIBLE_DEVICES") and "[subject]" not in only


def test_a_redacted_variable_that_differs_is_named_as_no_factor_not_hidden():
    """A secret's values are hashed in a capture, so they cannot be factors; the snippet said
    "# no environment-variable differences" under a table listing that very difference."""
    d = [("env.CUDA_AUTH_TOKEN", "<redacted 1234abcd>", "<redacted 99999999>")]
    assert as_factors(d) == {}
    snippet = factors_toml(d)
    assert "no environment-variable differences" not in snippet
    assert snippet.startswith("# not a factor: CUDA_AUTH_TOKEN is redacted") and "[subject]" not in snippet
    assert "CUDA_AUTH_TOKEN is redacted" in factors_toml([("env.CUDA_AUTH_TOKEN", None, "<redacted 99999999>")])


def test_package_versions_read_from_headers_match_a_full_metadata_parse():
    import importlib.metadata

    from bisectk.spaces import env
    full = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in env.PACKAGES or name.startswith(env.PACKAGE_PREFIXES):
            full[name] = dist.version
    assert env._packages() == dict(sorted(full.items()))
    assert "numpy" in full      # the environment has at least one package that matters


def _stamping_smi(bin_dir, log):
    """An nvidia-smi first on PATH that stamps when it was asked and finds no device."""
    _script(bin_dir / "nvidia-smi", f'echo "smi $(date +%s.%N)" >> {log}\necho "No devices were found"\nexit 6\n')


def test_a_bisections_capture_begins_once_its_first_run_has_ended(tmp_path):
    """The capture's Python shares the GIL with the path to the first run's launch (issue 27): it
    starts once that run has ended, and still reaches the record. Its first step asks nvidia-smi:
    a fake one says when it was asked."""
    from tests.conftest import bisectk
    repo, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "when.log"
    bin_dir.mkdir()
    shas = counter_repo(repo, 3)
    _stamping_smi(bin_dir, log)
    test = _script(tmp_path / "test.sh", f'[ "$(cat v.txt)" = 2 ] && r=1 || r=0\necho "end $(date +%s.%N)" >> {log}\nexit $r\n')
    p = bisectk("bisect", "--repo", repo, "--good", shas[0], "--bad", shas[2], "--run", test, "--json",
                "--ledger", tmp_path / "l.db", env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[2]
    assert "No devices were found" in doc["environment"]["gpu"]["error"]     # captured, as before
    when = [line.split() for line in log.read_text().splitlines()]
    first_end = min(float(t) for what, t in when if what == "end")
    smi = [float(t) for what, t in when if what == "smi"]
    assert smi and min(smi) >= first_end        # asked only once the first run was over


def test_a_probe_that_hangs_is_ended_with_what_it_started(tmp_path, monkeypatch):
    """A probe is not a run (no supervisor, no spare taken from the runs), but it leaves nothing
    behind either: an nvidia-smi stuck with a child of its own is ended, children too."""
    import uuid

    import psutil

    from tests.conftest import wait_until
    # a duration of this test's own: another session's run of it, at once on the machine, is not ours
    nap = f"37.{uuid.uuid4().int % 10**9:09d}"
    _script(tmp_path / "nvidia-smi", f"sleep {nap} &\nsleep {nap}\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    t = time.monotonic()
    gpu = capture(torch=False, timeout=0.3)["gpu"]
    assert "no answer in 0.3 s" in gpu["error"] and time.monotonic() - t < 5

    def left():     # killed ones are gone once the kernel has ended them (a wait, not a sleep(0.2))
        return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", nap]]
    assert wait_until(lambda: not left(), timeout=30), left()


@pytest.mark.parametrize("command", ["ablate", "diff", "triage"])
def test_ablate_diff_and_triage_capture_once_their_first_run_has_ended(tmp_path, command):
    """As a bisection: the capture (a fake nvidia-smi says when it was asked) comes after the first
    run's end, and reaches the record (triage's own, which holds its bisection's and diff's)."""
    from tests.conftest import bisectk
    bin_dir, log = tmp_path / "bin", tmp_path / "when.log"
    bin_dir.mkdir()
    _stamping_smi(bin_dir, log)
    stamp = f'echo "end $(date +%s.%N)" >> {log}\n'
    if command == "ablate":
        _script(tmp_path / "run.sh", f'{stamp}echo "BISECTK_RESULT {{\\"err\\": $1}}"\n')
        (tmp_path / "pyproject.toml").touch()
        (tmp_path / "s.toml").write_text('[subject]\ncommand = ["sh", "run.sh", "{a}", "{b}"]\n'
                                         '[oracle]\nmetric = "err"\nmax = 0\n'
                                         '[good]\na = 0\nb = 0\n[bad]\na = 1\nb = 1\n')
        args = ["ablate", tmp_path / "s.toml"]
    elif command == "triage":
        repo = tmp_path / "repo"
        shas = counter_repo(repo, 3)
        check = _script(tmp_path / "check.sh", f'{stamp}[ "$(cat v.txt)" = 2 ] && exit 1\nexit 0\n')
        args = ["triage", "--repo", repo, "--good", shas[0], "--bad", shas[2], "--run", str(check)]
    else:
        for side, v in (("good", "0"), ("bad", "1")):
            (tmp_path / side).mkdir()
            (tmp_path / side / "a.txt").write_text(f"a {v}\n")
            (tmp_path / side / "b.txt").write_text(f"b {v}\n")
        check = _script(tmp_path / "check.sh", f'{stamp}grep -q "a 1" a.txt && exit 1\nexit 0\n')
        args = ["diff", tmp_path / "good", tmp_path / "bad", "--run", f"sh {check}"]
    p = bisectk(*args, "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path,
                env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert p.returncode == (1 if command == "triage" else 0), p.stderr     # triage: 1, a culprit found
    doc = json.loads(p.stdout)
    assert "No devices were found" in doc["environment"]["gpu"]["error"]
    when = [line.split() for line in log.read_text().splitlines()]
    first_end = min(float(t) for what, t in when if what == "end")
    smi = [float(t) for what, t in when if what == "smi"]
    assert smi and min(smi) >= first_end


@pytest.mark.parametrize("env, said", [({"A": {"b": 1}}, "variable 'A' in 'env' is a JSON object"),
                                       ({"A": 1}, "variable 'A' in 'env' is a JSON number"),
                                       ([1], "'env' is a JSON array")])
def test_a_hand_edited_capture_whose_env_is_not_text_is_refused_in_one_line(tmp_path, env, said):
    """A nested object or a list under `env` was flattened into variables named `A.b` or `0` and
    offered as spec factors; a variable's value is text, and a capture that says otherwise is
    refused by name."""
    import json
    from bisectk.spaces.env import EnvError, load
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"bisectk_env": 1, "env": env}))
    with pytest.raises(EnvError, match=re.escape(said)):
        load(path)


def test_env_diff_table_never_shows_two_different_values_alike(tmp_path):
    """A variable set to the text "None" beside one that is unset, and 2 beside "2", were printed
    as the same cell text: the table said they differ and showed them equal (--json was right)."""
    import subprocess
    a = {"bisectk_env": env.SCHEMA, "env": {"X": "None", "W": "(unset)", "Y": "2", "Z": "a"}, "n": 2}
    b = {"bisectk_env": env.SCHEMA, "env": {"Y": "3", "Z": "b"}, "n": "2"}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    p = subprocess.run([sys.executable, "-m", "bisectk", "env", "--diff", str(tmp_path / "a.json"),
                        str(tmp_path / "b.json")], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 1, p.stderr
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in p.stdout.splitlines() if line.count("│") >= 4}
    assert rows["env.X"] == ["None", "(unset)"], rows          # no value is said in words, not as None
    assert rows["env.W"] == ['"(unset)"', "(unset)"], rows     # and a value that reads as those words is quoted
    assert rows["n"] == ["2", '"2"'], rows
    assert rows["env.Z"] == ["a", "b"], rows       # plain text stays plain where nothing is alike
