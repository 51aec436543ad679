"""Issue 16, "the first hour": every message tells the truth. One test per fix, each through the
CLI as a new user runs it (stdout and stderr piped, as in a CI log)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, toy_spec

SUBJECT = '''import json, os, sys, time
mode = sys.argv[1]
if os.environ.get("COUNTER"):
    with open(os.environ["COUNTER"], "a") as f:
        f.write(mode + "\\n")
if mode == "nogpu":
    print("BISECTK_RESULT " + json.dumps({"ok": False, "error": "no CUDA device: this kernel needs a GPU "
                                                                "(without one, `bisectk ptx SPEC` compiles it)"}))
    sys.exit(125)
if mode == "skipquiet":
    print("probing the device...", file=sys.stderr)
    print("cannot open /dev/nvidia0", file=sys.stderr)
    sys.exit(125)
if mode == "segv":
    os.kill(os.getpid(), 11)
print("BISECTK_RESULT " + json.dumps({"err": 0.0 if mode == "ok" else 1.0}))
'''


def cli(*args, cwd, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env={**os.environ, "COLUMNS": "100", **(env or {})})


def spec(tmp_path, good, bad, extra_factor=None, name="s.toml"):
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "subject.py").write_text(SUBJECT)
    text = ('[subject]\ncommand = ["python", "subject.py", "{mode}"]\n[oracle]\nmetric = "err"\nmax = 0\n'
            f'[good]\nmode = "{good}"\n' + (f"{extra_factor} = 1\n" if extra_factor else "")
            + f'[bad]\nmode = "{bad}"\n' + (f"{extra_factor} = 2\n" if extra_factor else ""))
    (tmp_path / name).write_text(text)
    return tmp_path / name


# -- the reason an endpoint cannot be tested -------------------------------------------------

@pytest.mark.parametrize("mode, reason", [
    # its BISECTK_RESULT error
    ("nogpu", "no CUDA device: this kernel needs a GPU (without one, `bisectk ptx SPEC` compiles it)"),
    ("skipquiet", "cannot open /dev/nvidia0"),                                 # its last stderr line
])
def test_untestable_endpoint_says_why(tmp_path, mode, reason):
    s = spec(tmp_path, mode, "bad")
    p = cli("check", s, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert problem == [f"problem: the subject asked to skip the good configuration (exit 125: {reason}); the search "
                       "needs a good configuration that runs and passes"]
    doc = json.loads(cli("check", s, "--json", cwd=tmp_path).stdout)
    assert reason in doc["problem"] and doc["good"]["signature"] == f"skip (exit 125): {reason}"


# -- progress and the watchdog ---------------------------------------------------------------

def test_progress_on_stderr_when_piped_never_in_json(tmp_path):
    s = spec(tmp_path, "ok", "bad")
    p = cli("check", s, cwd=tmp_path)
    assert p.returncode == 0
    lines = p.stderr.splitlines()
    note = "watchdog: 120 s until the good endpoint has passed once"
    first_good = next(i for i, ln in enumerate(lines) if ln.startswith("  PASS  good"))
    assert any(ln.startswith(note) for ln in lines[:first_good]), p.stderr   # said before the long wait
    assert any(ln.startswith(note) and ln.endswith("or the spec's `timeout` sets it") for ln in lines), p.stderr
    assert lines[first_good - 1] == "  ... running good (run 1); watchdog 120 s"
    assert any(ln.startswith("  FAIL wrong (err 1 > 0)  bad  (") for ln in lines), p.stderr
    assert "==" not in p.stdout and "running" not in p.stdout          # progress never on stdout
    again = cli("check", s, cwd=tmp_path)                               # answered from the ledger
    assert "  PASS  good  (from the ledger)" in again.stderr.splitlines() and note not in again.stderr
    assert "(from the ledger)" in again.stdout
    j = cli("check", s, "--json", "--fresh", cwd=tmp_path)
    assert j.stderr == "" and json.loads(j.stdout)["ok"]                # --json: one document, nothing else


def test_the_watchdog_note_of_a_run_command_names_only_the_option(tmp_path):
    """`diff GOOD BAD --run CMD` has no spec: its first note named "the spec's `timeout`" beside
    --timeout, a file the user never wrote."""
    for side, code in (("g", 0), ("b", 1)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "t.sh").write_text(f"exit {code}\n")
    p = cli("diff", "g", "b", "--run", "sh t.sh", cwd=tmp_path)
    notes = [ln for ln in p.stderr.splitlines() if ln.startswith("watchdog: 120 s until the good endpoint")]
    assert notes and all(ln.endswith("; --timeout SECONDS sets it") for ln in notes), p.stderr
    assert "spec" not in notes[0]


def test_good_endpoint_with_the_target_failure_is_not_rechecked(tmp_path):
    """Both sides crash the same way: unusable at once, without re-running good up to
    --calibrate-runs times (with a hanging good side, each re-run would wait out the watchdog).
    (A difference the subject ignores: identical endpoints are refused before any run.)"""
    counter = tmp_path / "runs.txt"
    s = spec(tmp_path, "segv", "segv", extra_factor="seed")
    p = cli("check", s, "--json", cwd=tmp_path, env={"COUNTER": str(counter)})
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and "fails too" in doc["problem"]
    assert len(doc["good"]["runs"]) == 1 and counter.read_text().count("segv") == 2


# -- from the ledger, and --fresh on every command that runs things ---------------------------

@pytest.mark.parametrize("command", ["run", "check", "ablate", "diff", "bisect", "triage"])
def test_fresh_on_every_command_that_runs(command, tmp_path):
    p = cli(command, "--help", cwd=tmp_path)
    assert "--fresh" in p.stdout and "Ignore runs stored in the ledger" in " ".join(p.stdout.split())


def test_run_fresh_runs_again_and_reuse_is_labelled(tmp_path):
    counter = tmp_path / "runs.txt"
    s = spec(tmp_path, "ok", "bad")
    env = {"COUNTER": str(counter)}
    first = cli("run", s, "--config", "good", cwd=tmp_path, env=env)
    assert first.returncode == 0 and "from the ledger" not in first.stdout
    second = cli("run", s, "--config", "good", cwd=tmp_path, env=env)
    assert second.stdout.splitlines()[-1].endswith(", from the ledger)"), second.stdout
    assert counter.read_text().count("ok") == 1
    fresh = cli("run", s, "--config", "good", "--fresh", cwd=tmp_path, env=env)
    assert fresh.returncode == 0 and "from the ledger" not in fresh.stdout
    assert counter.read_text().count("ok") == 2


def test_ablate_report_counts_ledger_answers(tmp_path):
    s = toy_spec(tmp_path, {"mode": "ok", "sleep": 0.0, "err": 0.0}, {"mode": "wrong", "sleep": 0.01, "err": 0.5})
    first = cli("ablate", s, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    executed = int(first.stdout.split("runs: ")[1].split()[0])
    md = tmp_path / "again.md"
    p = cli("ablate", s, "--report", md, cwd=tmp_path)
    assert p.returncode == 0
    assert f"runs: 0 executed, {executed} answered from the ledger" in p.stdout
    text = md.read_text()
    assert f"0 runs executed, {executed} answered from the ledger" in text
    results = [ln for ln in text.splitlines() if ln.startswith("**Result:**")]
    assert results and all(ln.endswith(", from the ledger)") for ln in results), results


# -- inputs that do nothing are said to do nothing --------------------------------------------

def test_unused_factor_is_warned_and_check_says_so(tmp_path):
    s = spec(tmp_path, "ok", "bad", extra_factor="seed")
    p = cli("check", s, cwd=tmp_path)
    warning = "factor 'seed' is used by no placeholder of [subject] command, build or env"
    assert p.returncode == 0 and f"bisectk: warning: {warning}" in p.stderr
    assert any(ln.startswith(f"warning: {warning}") for ln in p.stdout.splitlines())
    doc = json.loads(cli("check", s, "--json", cwd=tmp_path).stdout)
    assert len(doc["warnings"]) == 1 and warning in doc["warnings"][0]
    p = cli("run", s, cwd=tmp_path)
    assert f"bisectk: warning: {warning}" in p.stderr
    ok = spec(tmp_path, "ok", "bad", name="t.toml")
    assert "warning" not in cli("check", ok, cwd=tmp_path).stderr


def test_ablates_warnings_reach_its_json_and_debug_log(tmp_path):
    """A CI job reads `ablate --json` (or --json-out) and the debug log, not stderr: the warnings
    said there (an unused factor; --jobs runs sharing a directory the endpoint runs wrote in)
    were in neither. They are `warnings` in the document and lines of the log's summary."""
    s = spec(tmp_path, "ok", "bad", extra_factor="seed")
    md, out = tmp_path / "a.md", tmp_path / "a.json"
    p = cli("ablate", s, "--json", "--jobs", "2", "--json-out", out, "--report", md, "--ledger", tmp_path / "l.db",
            cwd=tmp_path, env={"COUNTER": str(tmp_path / "counter")})
    assert p.returncode == 0, p.stderr[-2000:]
    unused = "factor 'seed' is used by no placeholder of [subject] command, build or env"
    shared = "--jobs 2: the endpoint runs wrote counter in "
    for doc in (json.loads(p.stdout), json.loads(out.read_text())):
        assert doc["culprits"] == ["mode"]
        assert len(doc["warnings"]) == 2 and unused in doc["warnings"][0], doc["warnings"]
        assert doc["warnings"][1].startswith(shared), doc["warnings"]
    assert f"bisectk: warning: {unused}" in p.stderr
    text = md.read_text()
    assert f"- Warning: {unused}" in text and f"- Warning: {shared}" in text, text[:3000]


def test_ptx_on_a_cpu_variant_says_why_it_did_nothing(tmp_path):
    p = cli("ablate", ROOT / "variants" / "cpu" / "crash-oob.toml", "--ptx", "--ledger", tmp_path / "l.db",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert ("ptx: nothing compared (crash.py does not take --compile-only/--ptx-out: not a CuTe DSL kernel, "
            "so there is no PTX to compare)") in p.stdout


# -- diff: closed line ranges, progress without internal names --------------------------------

def test_diff_pair_progress_and_closed_ranges(tmp_path):
    pair = ROOT / "variants" / "cpu" / "diff-softmax"
    p = cli("diff", pair / "good", pair / "bad", pair / "spec.toml", "--json-out", tmp_path / "d.json",
            "--report", tmp_path / "d.md", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stderr
    assert "culprit hunk(s): kernel/softmax.py:13" in p.stdout
    assert "__hunks__" not in p.stderr and "of 9 hunk(s)" in p.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    (h,) = doc["culprit_hunks"]
    assert h["where"] == "kernel/softmax.py:13" and h["id"] == "kernel/softmax.py:13"
    assert h["good_lines"] == [13, 14] and h["bad_lines"] == [13, 14]     # half-open, as documented
    md = (tmp_path / "d.md").read_text()
    assert "| kernel/softmax.py:13 | text | 13 | 13 | CULPRIT |" in md
    fails = [ln for ln in md.splitlines() if ln.startswith("**Result:** FAIL")]
    assert fails and all(ln.startswith("**Result:** FAIL wrong (") for ln in fails), fails
    assert not (pair / "good" / "__pycache__").exists() and not (pair / "bad" / "__pycache__").exists()


# -- the demo history: bisect, triage, log ------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo") / "repo"
    p = cli("demo", "history", root, cwd=root.parent)
    assert p.returncode == 0, p.stderr
    return root


RUN = ["--run", "python kernel.py", "--build", "python build.py"]


def git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def test_demo_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    for target in (tmp_path / "x", tmp_path / "x" / "keep.txt"):
        p = cli("demo", "history", target, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith("bisectk: ") and len(p.stderr.splitlines()) == 1
    assert sorted(os.listdir(tmp_path / "x")) == ["keep.txt"]


def test_demo_history_is_the_same_everywhere(demo, tmp_path):
    other = tmp_path / "again"
    assert cli("demo", "history", other, cwd=tmp_path).returncode == 0
    assert git(demo, "rev-parse", "main", "v1.0") == git(other, "rev-parse", "main", "v1.0")
    log = git(demo, "log", "--format=%p|%s", "v1.0..main").splitlines()
    assert len(log) == 15 and sum(1 for line in log if len(line.split("|")[0].split()) == 2) == 1   # one merge
    assert sum(1 for line in log if "wip:" in line) == 2


def test_bisect_demo_attempts_in_the_order_run(demo, tmp_path):
    p = cli("bisect", "--repo", demo, "--good", "v1.0", "--bad", "main", *RUN, "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["subject"] == "barrier: count arrivals per thread, as the CUDA kernel does"
    # the demo's broken commit and its fix beside it: the skip-aware search (search/dag.py stretch)
    # splits that stretch once it is most of what is left, so both are tried
    assert [c["subject"] for c in doc["skipped"]] == ["wip: split the consumer", "wip: checksum epilogue"]
    observed = [ln.split()[1] for ln in cli("log", "--repo", demo, cwd=tmp_path).stdout.splitlines()
                if ln.startswith("observe ")]
    assert [a["applied"][0] for a in doc["attempts"]] == observed
    order = git(demo, "rev-list", "--topo-order", "--reverse", "v1.0..main").split()
    probes = [order.index(sha) for sha in observed[2:]]
    assert probes != sorted(probes), "the probes happen to be in commit order: the test proves nothing"


def test_first_parent_last_good_is_the_first_parent_only(demo, tmp_path):
    p = cli("bisect", "--repo", demo, "--good", "v1.0", "--bad", "main", *RUN, "--first-parent", "--json",
            cwd=tmp_path)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["subject"] == "Merge branch 'barrier-refactor'"
    assert [c["sha"] for c in doc["last_good"]] == [git(demo, "rev-parse", doc["first_bad"]["sha"] + "^1")]


def test_triage_summary_is_short_and_the_report_has_it_all(demo, tmp_path):
    md, js = tmp_path / "t.md", tmp_path / "t.json"
    p = cli("triage", "--repo", demo, "--good", "v1.0", "--bad", "main", *RUN, "--report", md, "--json-out", js,
            cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    out = p.stdout
    assert out.startswith("triage: culprit found\n") and "culprit hunk(s) of " in out and "kernel.py:19" in out
    assert "#### " not in out and len(out.splitlines()) < 30 and f"debug log written to {md}" in out
    text = md.read_text()
    assert text.count("Watchdog:") == 1 and "#### Attempt 1:" in text and "**Status:** Resolved" in text
    hunk_results = [ln for ln in text.split("#### Culprit diff")[0].splitlines() if ln.startswith("**Result:** FAIL")]
    assert hunk_results and all(ln.startswith("**Result:** FAIL hang (timeout after ") for ln in hunk_results)
    doc = json.loads(js.read_text())
    assert [h["where"] for h in doc["culprit_hunks"]] == ["kernel.py:19"]
    again = cli("report", demo / ".git" / "bisectk" / "ledger.db", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("triage: culprit found\n") and "#### " not in again.stdout


def test_nothing_to_triage_says_the_bad_ref_passed(demo, tmp_path):
    passing = git(demo, "rev-parse", "v1.0~0^{commit}")
    bad = git(demo, "log", "--format=%H", "--grep", "stream 96 tiles", "main")
    p = cli("triage", "--repo", demo, "--good", passing, "--bad", bad, *RUN, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"triage: nothing to triage -- the bad revision {bad[:10]} passed (10 runs), "
                               "so there is no failure to bisect"), p.stdout   # re-run up to --calibrate-runs
