"""Issue 21, a new user on a fresh machine: every message names options that exist, a subject's
usage error is a diagnosis, values read as they are substituted, help is whole. One test per
surprise found, through the CLI as a user runs it."""
import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT, bisectk

COMMANDS = ("run", "check", "ablate", "diff", "bisect", "triage", "log", "replay", "report", "ptx", "env",
            "ledger", "demo")
RUNS_THINGS = ("run", "check", "ablate", "diff", "bisect", "triage")   # commands that run a subject

ARGPARSE_SUBJECT = """import argparse, json
ap = argparse.ArgumentParser()
ap.add_argument("--fast", choices=["true", "false"], required=True)
ap.add_argument("--n", type=int, default=1)
a = ap.parse_args()
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if a.fast == "true" else 0.0}))
"""


def argparse_spec(tmp_path, bad_n="2"):
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "subject.py").write_text(ARGPARSE_SUBJECT)
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "subject.py", "--fast", "{fast}", "--n", "{n}"]\n'
                                     '[oracle]\nmetric = "err"\nmax = 0\n[good]\nfast = false\nn = 1\n'
                                     f'[bad]\nfast = true\nn = {bad_n}\n')
    return tmp_path / "s.toml"


def cli(*args, cwd=ROOT, columns=80):
    return subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, "COLUMNS": str(columns)})


# -- help ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("columns", [80, 200])
def test_the_command_list_is_whole(columns):
    p = cli("--help", columns=columns)
    assert p.returncode == 0
    listed = p.stdout.split("Commands:", 1)[1].splitlines()
    assert sorted(line.split()[0] for line in listed if line.strip()) == sorted(COMMANDS)
    assert not any(line.rstrip().endswith("...") for line in listed), p.stdout
    assert all(len(line) <= columns for line in p.stdout.splitlines())


def test_dash_h_is_help_everywhere():
    assert cli("-h").stdout == cli("--help").stdout
    for command in COMMANDS:
        p = cli(command, "-h")
        assert p.returncode == 0 and p.stdout.startswith(f"Usage: bisectk {command} "), (command, p.stderr)
        # plain value names whatever typer writes by itself ({SPEC}, <list[Path]>, TEXT for a number)
        assert "{" not in p.stdout.splitlines()[0] and "<list" not in p.stdout, (command, p.stdout)
        for flag in ("--jobs", "--repeat", "--max-runs", "--snapshots"):
            assert f"{flag} TEXT" not in p.stdout, (command, flag)


def test_every_command_that_runs_things_takes_timeout(tmp_path):
    for command in RUNS_THINGS:
        assert "--timeout SECONDS" in cli(command, "--help").stdout, command
    # the message that names it is true: ablate and check accept it, and it fixes the watchdog
    spec = ROOT / "variants" / "cpu" / "pipeline-hang.toml"
    p = bisectk("check", spec, "--timeout", "3", "--json", "--ledger", tmp_path / "l.db", check=0)
    assert json.loads(p.stdout)["timeout"]["detail"] == "3 s from --timeout"
    p = bisectk("ablate", spec, "--timeout", "3", "--json", "--ledger", tmp_path / "l.db", "--fresh", check=0,
                timeout=300)
    doc = json.loads(p.stdout)
    assert doc["culprits"] == ["producer_phase"] and doc["endpoints"]["bad"]["signature"].startswith("timeout after 3")


OPTION = re.compile(r"(?<![\w(-])(--[a-z][a-z-]+)")


def bisectk_options() -> set[str]:
    known = set(OPTION.findall(cli("--help").stdout))
    for command in COMMANDS:
        known |= set(OPTION.findall(cli(command, "--help").stdout))
    return known


def test_every_option_a_message_or_the_readme_names_exists():
    """`--name` quoted in the modules that word messages (cli, engine, report, the runner) and in
    the README is an option of some bisectk command -- or, in the README, plainly another tool's."""
    known = bisectk_options()
    talkers = [*(ROOT / "bisectk").glob("cli*.py"), ROOT / "bisectk" / "spec.py", ROOT / "bisectk" / "errors.py",
               ROOT / "bisectk" / "run" / "runner.py", *(ROOT / "bisectk" / "engine").glob("*.py"),
               *(p for p in (ROOT / "bisectk" / "report").glob("*.py") if p.name != "html.py")]   # html.py: CSS
    named = set().union(*(OPTION.findall(p.read_text()) for p in talkers))
    # git's: the synonyms a `git bisect log` may hold (engine/gitlog.py); "--term-" is the head of
    # "--term-old"/"--term-new" written with the side's word; `git submodule update --init`, the
    # command a problem names for a submodule the checkout never cloned (engine/environment.py);
    # `diff --git`, a patch's header, which report/diff.py looks for to find a patch's last file;
    # pytest's own `--color=no` and `--verbosity=-1`, which --pytest runs it with (engine/subject.py)
    assert named - known == {"--term-good", "--term-bad", "--term-", "--init", "--git", "--color", "--verbosity"}
    readme = set(OPTION.findall((ROOT / "README.md").read_text()))
    others = {"--arch", "--arrive", "--consumers", "--depth",     # the README spec's subject's own arguments
              "--head", "--port", "--address",                    # ray start
              "--git", "--binary",                                # diff --git, a diff's header; git diff --binary
              "--parents", "--unshallow", "--no-checkout",        # git rev-list --parents, git fetch --unshallow, git bisect start
              "--seeds", "--base", "--fork",                      # bench/diff_vs_picire.py, ahead_bench.py, spare_bench.py
              "--fixed", "--history", "--tree", "--drop",         # bench/startup_ab.py, scale_bench.py
              "--trials",                                         # bench/flaky_calibration.py
              "--repeats",                                        # bench/per_run_bench.py
              "--dist",                                           # pytest-xdist: the test command
              "--color",                                          # pytest --color=no, which --pytest runs
              "--init",                                           # git submodule update --init
              "--filter"}                                         # git clone --filter=blob:none
    assert readme - known - others == set()


def test_kernels_never_point_at_a_non_option():
    for path in (ROOT / "kernels").rglob("*.py"):
        assert "use --compile-only" not in path.read_text(), path
    assert "use --compile-only" not in (ROOT / "README.md").read_text()


def test_triage_takes_max_runs_resume_and_confidence():
    text = cli("triage", "--help").stdout
    assert "--max-runs N" in text and "--resume" in text and "--confidence P" in text


def test_value_names_say_what_to_give():
    text = cli("bisect", "--help").stdout
    assert "--executor local|ray" in text and "--ray-address HOST:PORT" in text and "--ray-repo PATH" in text
    assert " TEXT " not in text


def test_env_says_what_its_arguments_are():
    p = cli("env", "--help")
    assert p.stdout.startswith("Usage: bisectk env [OPTIONS] [CAPTURE]...")
    assert "CAPTURE  Two saved captures to compare: the same as --diff A.json B.json." in p.stdout


def test_diff_usage_reads_as_typed():
    assert cli("diff", "--help").stdout.startswith("Usage: bisectk diff [OPTIONS] GOOD BAD [SPEC]")


# -- a subject that rejects its arguments ----------------------------------------------------------

def test_a_usage_error_is_a_diagnosis_not_a_crash(tmp_path):
    s = argparse_spec(tmp_path)
    p = bisectk("run", s, "--set", "fast=yes", "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 125, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[1].startswith("verdict: UNRESOLVED usage (the subject rejected its arguments: argument --fast: "
                               "invalid choice: 'yes' (choose from 'true', 'false') (usage: subject.py [-h] --fast")
    assert "crash" not in p.stdout
    assert lines[2] == "command: python subject.py --fast yes --n 2"      # as substituted
    doc = json.loads(bisectk("run", s, "--set", "fast=yes", "--json", "--ledger", tmp_path / "l.db", cwd=tmp_path,
                             check=125).stdout)
    assert doc["outcome"] == "unresolved" and doc["reason"] == "usage"


def test_an_endpoint_that_is_refused_says_what_it_ran(tmp_path):
    s = argparse_spec(tmp_path, bad_n='"two"')
    p = bisectk("ablate", s, "--ledger", tmp_path / "l.db", cwd=tmp_path)
    assert p.returncode == 2
    i = next(i for i, line in enumerate(p.stdout.splitlines()) if line.startswith("problem: "))
    assert p.stdout.splitlines()[i:i + 2] == [
        "problem: the bad configuration cannot be tested: UNRESOLVED usage (the subject rejected its arguments: "
        "argument --n: invalid int value: 'two' (usage: subject.py [-h] --fast {true,false} [--n N]))",
        "  bad ran: python subject.py --fast true --n two"]


def test_booleans_read_as_they_are_substituted(tmp_path):
    s = argparse_spec(tmp_path)
    p = bisectk("ablate", s, "--ledger", tmp_path / "l.db", cwd=tmp_path, check=0)
    assert "fast false -> true" in p.stdout and "True" not in p.stdout and "False" not in p.stdout
    assert re.search(r"│ fast +│ false +│ true +│", p.stdout), p.stdout
    p = bisectk("run", s, "--set", "fast=true", "--ledger", tmp_path / "l.db", cwd=tmp_path, check=1)
    assert p.stdout.splitlines()[0] == "s: fast=true n=2"


# -- counts ----------------------------------------------------------------------------------------

def test_one_hunk_is_one_hunk(tmp_path):
    for side, x in (("a", 1), ("b", 2)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k.py").write_text(f"x = {x}\n")
    p = bisectk("diff", "a", "b", "--run", "python -c 'import k, sys; sys.exit(k.x - 1)'", "--ledger",
                tmp_path / "l.db", cwd=tmp_path, check=0)
    assert p.stdout.splitlines()[0] == "1 hunk between a and b" and "1 hunks" not in p.stdout
    assert "1 hunk; culprit hunk(s): k.py:1" in p.stdout
    # git bisect run's protocol, worded as bisect words it
    assert "failure: bad (exit 1); the bad endpoint showed it" in p.stdout and "FAIL bad" not in p.stdout


def test_a_report_answered_from_the_ledger_says_what_its_runs_took(tmp_path):
    """A second ablation answers from the ledger in no time: its record keeps what the runs took
    when they ran (`run_s`), and `bisectk report` rebuilds the same words and numbers."""
    spec, db = ROOT / "variants" / "cpu" / "crash-oob.toml", tmp_path / "l.db"
    first = json.loads(bisectk("ablate", spec, "--json", "--ledger", db, check=0).stdout)
    again = bisectk("ablate", spec, "--ledger", db, check=0)
    line = next(ln for ln in again.stdout.splitlines() if ln.startswith("runs: "))
    assert line.startswith(f"runs: 0 executed, {first['observations']} answered from the ledger")
    assert f"(its {first['observations']} runs took {first['run_s']:.1f} s, the ledger's included)" in line
    rebuilt = bisectk("report", db, check=0)
    assert line in rebuilt.stdout.splitlines()
    doc = json.loads(bisectk("report", db, "--json", check=0).stdout)
    assert doc["run_s"] == first["run_s"] > 0 and doc["observations"] == first["observations"] and doc["runs"] == 0


def test_the_suite_runs_in_a_home_of_its_own():
    """tests/conftest.py: HOME, the XDG directories and matplotlib's point into the session's
    temporary directory (no ~/.ray, no user ledger), and hypothesis keeps nothing in the checkout."""
    import tempfile
    from pathlib import Path
    home = Path(os.environ["HOME"])
    assert home.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert not (home / ".ray").exists()
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR"):
        assert Path(os.environ[var]).is_relative_to(home), var
    assert "RAY_AUTH_TOKEN" not in os.environ and "RAY_ADDRESS" not in os.environ
    from hypothesis.configuration import storage_directory
    assert not storage_directory("x", intent_to_write=False).path.resolve().is_relative_to(ROOT)
