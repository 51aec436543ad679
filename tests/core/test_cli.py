import json
import os
import signal
import subprocess
import sys

from tests.conftest import bisectk


def test_run_exit_codes_and_json(make_spec):
    spec = make_spec({"mode": "ok"}, {"mode": "segv"})
    bisectk("run", spec, "--config", "good", check=0)
    p = bisectk("run", spec, "--json", check=1)
    v = json.loads(p.stdout)
    assert v["outcome"] == "fail" and v["kind"] == "crash" and v["signature"] == "SIGSEGV"
    assert {"metrics", "runs", "duration_s"} <= v.keys() and v["runs"][0]["signal"] == "SIGSEGV"
    assert {"gpu", "python", "packages"} <= v["environment"].keys()
    p = bisectk("run", spec, "--set", "mode=skip", "--json", check=125)
    assert json.loads(p.stdout)["reason"] == "build"


def test_cuda_crash_and_wrong_and_nan(make_spec):
    spec = make_spec({"mode": "ok"}, {"mode": "cuda"})
    v = json.loads(bisectk("run", spec, "--json", check=1).stdout)
    assert v["signature"] == "CUDA: an illegal memory access was encountered"
    v = json.loads(bisectk("run", spec, "--set", "mode=wrong", "--json", check=1).stdout)
    assert v["kind"] == "wrong" and v["signature"].startswith("rel_err 0.5 >")
    v = json.loads(bisectk("run", spec, "--set", "mode=nan", "--json", check=1).stdout)
    assert v["signature"] == "NaN in rel_err"


def test_set_values_with_metacharacters_arrive_literally(make_spec):
    spec = make_spec({"mode": "ok", "echo": "plain"}, {"mode": "wrong", "echo": "x"})
    evil = "a;b $(id) `id` | > 'q'"
    v = json.loads(bisectk("run", spec, "--config", "good", "--set", f"echo={evil}", "--json", check=0).stdout)
    assert v["metrics"]["echo"] == evil


def test_check_reports_and_diagnoses(make_spec, tmp_path):
    spec = make_spec({"mode": "ok"}, {"mode": "hang"})
    p = bisectk("check", spec, "--json", check=0)
    r = json.loads(p.stdout)
    assert r["ok"] and r["target"] == "hang" and r["timeout"]["source"] == "calibrated"
    assert r["bad"]["runs"][0]["duration_s"] <= r["timeout"]["seconds"] + 0.5
    inverted = tmp_path / "inv"
    inverted.mkdir()
    from tests.conftest import toy_spec
    p = bisectk("check", toy_spec(inverted, {"mode": "wrong"}, {"mode": "ok"}), check=2)
    assert "inverted" in p.stdout


def test_bad_input_is_one_line_no_traceback(tmp_path, make_spec):
    bad = tmp_path / "bad.toml"
    bad.write_text('[subject]\ncommand = ["x"]\n[good]\na = 1\n[bad]\nb = 2\n')
    for args in (["run", bad], ["check", tmp_path / "missing.toml"], ["run", make_spec({"mode": "ok"}, {"mode": "wrong"}), "--set", "nope=1"]):
        p = bisectk(*args)
        assert p.returncode == 2 and "Traceback" not in p.stderr
        assert p.stderr.startswith("bisectk: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr
    missing_cmd = tmp_path / "m"
    missing_cmd.mkdir()
    (missing_cmd / "pyproject.toml").touch()
    (missing_cmd / "s.toml").write_text('[subject]\ncommand = ["/no/such/binary", "{a}"]\n[good]\na = 1\n[bad]\na = 2\n')
    p = bisectk("run", missing_cmd / "s.toml", "--json", check=125)
    assert json.loads(p.stdout)["reason"] == "infra"


def test_ledger_survives_sigkill(make_spec, tmp_path):
    """SIGKILL while the 4th of 6 runs is in flight (held there, so the kill lands at that run
    however loaded the machine): the 3 finished runs are answered from the ledger afterwards."""
    from tests.conftest import wait_until
    counter, hold = tmp_path / "n.txt", tmp_path / "hold"
    hold.touch()
    spec = make_spec({"mode": "ok", "sleep": 0.0}, {"mode": "wrong", "sleep": 0.0},
                     args=["--counter", str(counter), "--hold", str(hold), "--hold-from", "4"])
    proc = subprocess.Popen([sys.executable, "-m", "bisectk", "run", str(spec), "--repeat", "6", "--timeout", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    assert wait_until(lambda: (tmp_path / "hold.held").exists() or proc.poll() is not None, timeout=120)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    hold.unlink()
    done_before = len(counter.read_text().splitlines())
    assert 3 <= done_before < 6
    bisectk("run", spec, "--repeat", "6", "--timeout", "120", check=1)
    total = len(counter.read_text().splitlines())
    # every run completed before the kill is answered from the ledger; the one in flight re-runs
    assert total <= 6 + 1 and total - done_before <= 6 - (done_before - 1)


def test_a_command_run_by_name_is_built_alone_and_reads_as_in_the_whole_app():
    """cli.command(NAME) builds the click group with that command alone (building all of them is
    ~30 ms of every start): its options, help and parsing are the whole app's; a group or an
    unknown name builds the whole app."""
    from bisectk import cli
    whole = cli.command()
    from typer import Context       # typer's click (it carries its own copy)
    plain = [n for n, c in whole.commands.items() if not hasattr(c, "commands")]
    assert {"run", "ablate", "diff", "bisect", "triage"} <= set(plain)
    for name in plain:
        alone = cli.command(name)
        assert list(alone.commands) == [name]
        a, b = alone.commands[name], whole.commands[name]
        with Context(alone, info_name="bisectk") as pa, Context(whole, info_name="bisectk") as pb:
            assert a.get_help(Context(a, info_name=name, parent=pa)) == b.get_help(Context(b, info_name=name, parent=pb))
        assert [p.opts for p in a.params] == [p.opts for p in b.params]
    for name in ("ledger", "demo", "bisec", None):
        assert set(cli.command(name).commands) == set(whole.commands)
