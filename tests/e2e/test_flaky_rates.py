"""End-to-end: a race that got more frequent (issue 23). The subject fails at one rate before the
culprit and a higher one from it on; the answer is right, or says the two rates could not be
told apart (exit 2, both rates), never a wrong commit at exit 0."""
import json
import sys

import pytest

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import make_dag_repo  # noqa: E402


RATE_RACE = """import os, random, sys
from pathlib import Path
seed, p_old, p_new, counts = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
name = open('id.txt').read().strip()
count = counts / name                    # the k-th run of each commit draws its own number
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
p = p_new if os.path.exists('BUG') else p_old
sys.exit(1 if random.Random(f"{seed}:{name}:{k}").random() < p else 0)
"""


def rate_run(tmp_path, p_old: float, p_new: float, seed: int = 0) -> list[str]:
    """A subject that fails with p_new where the BUG marker is (the culprit and after), else p_old.
    Its draws are seeded by `seed`, the commit and the run's number at that commit (counted in a
    directory of its own): one history per seed, the same at every run of the test. Unseeded, a
    test's outcome was a draw of its own (a 95% interval misses its rate one run in twenty)."""
    (tmp_path / "race.py").write_text(RATE_RACE)
    counts = tmp_path / f"counts-{seed}-{p_old}-{p_new}"
    counts.mkdir(exist_ok=True)
    return ["--run", f"{sys.executable} {tmp_path / 'race.py'} {seed} {p_old} {p_new} {counts}"]


def chain(n: int) -> list[tuple[int, ...]]:
    return [()] + [(i - 1,) for i in range(1, n)]


@pytest.mark.parametrize("seed", [0, 1])
def test_rate_change_under_flaky_is_right_and_shows_both_rates(tmp_path, seed):
    """0.1 -> 0.7 over 16 commits, two seeded histories: each is answered (exit 0, the culprit at
    0.99) and its two 95% intervals hold the true rates, apart. The subject drew unseeded, so the
    test allowed a 'not separable' exit 2 and gave each bound 0.05 of slack (a 95% interval misses
    one draw in twenty): a history of its own at every run of the suite."""
    good, shas = make_dag_repo(tmp_path / "r", chain(16), culprit=9)
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], *rate_run(tmp_path, 0.1, 0.7, seed),
                "--flaky", "--json", timeout=600, check=None)
    doc = json.loads(p.stdout)
    assert doc["ok"], p.stderr
    assert p.returncode == 0 and doc["first_bad"]["sha"] == shas[9] and doc["confidence"] >= 0.99, doc["rates"]
    r = doc["rates"]
    assert r["p_old_ci95"][0] <= 0.1 <= r["p_old_ci95"][1] and r["p_new_ci95"][0] <= 0.7 <= r["p_new_ci95"][1], r
    assert r["p_old_ci95"][1] < r["p_new_ci95"][0]
    # the culprit's parent ran often enough to fail at 0.1: its failures are the old side's rate,
    # where its line read 'last good: ... [bad (exit 1) [7/60 failed]]', a contradiction in words
    (parent,) = doc["last_good"]
    assert parent["sha"] == shas[8] and "bad (" not in parent["verdict"], parent
    assert "PASS" in parent["verdict"] or "the rate before the first bad commit" in parent["verdict"], parent


def test_rates_too_close_for_the_budget_are_not_separable(tmp_path):
    good, shas = make_dag_repo(tmp_path / "r", chain(16), culprit=9)
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], *rate_run(tmp_path, 0.35, 0.45),
                "--flaky", "--max-runs", "25", "--json", timeout=600, check=None)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["ok"] and doc["separable"] is False and doc["first_bad"] is None, p.stderr
    assert doc["more_runs"] and doc["more_runs"] > 0
    assert 0 <= doc["rates"]["p_old"] <= doc["rates"]["p_new"] <= 1
    text = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1],
                   *rate_run(tmp_path, 0.35, 0.45), "--flaky", "--max-runs", "25", timeout=600, check=None)
    assert text.returncode == 2 and "not separable" in text.stdout and "more runs" in text.stdout


def test_undeclared_half_flake_is_never_wrong_at_exit_0(tmp_path):
    good, shas = make_dag_repo(tmp_path / "r", chain(24), culprit=11)
    for seed in range(3):   # three histories, each its own ledger (fresh runs)
        p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], *rate_run(tmp_path, 0.0, 0.5, seed),
                    "--json", "--ledger", tmp_path / f"{seed}.db", timeout=600, check=None)
        doc = json.loads(p.stdout)      # seeded: each history is answered, and rightly
        assert p.returncode == 0 and doc["first_bad"]["sha"] == shas[11], (p.returncode, doc["first_bad"], p.stderr[-2000:])


SEEDED_RACE = """import os, random, sys
from pathlib import Path
name = open('id.txt').read().strip()
count = Path(sys.argv[1]) / name         # the k-th run of each commit draws its own number
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
p = 0.6 if os.path.exists('BUG') else 0.1
sys.exit(1 if random.Random(f"13:{name}:{k}").random() < p else 0)
"""


def test_an_undeclared_race_whose_bad_endpoint_passed_first_is_not_named_wrongly(tmp_path):
    """A race that the culprit made more frequent (0.1 -> 0.6), no --flaky: the good endpoint
    passed its one run, the bad one passed before it failed, so the search started flake-aware.
    It read the first old-side failure as proof (the good side never fails) and named c0 at
    confidence 1.0, exit 0. The draws are seeded per commit and run, so this history is that one."""
    good, shas = make_dag_repo(tmp_path / "r", chain(12), culprit=6)
    (tmp_path / "race.py").write_text(SEEDED_RACE)
    (tmp_path / "counts").mkdir()
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1],
                "--run", f"{sys.executable} {tmp_path / 'race.py'} {tmp_path / 'counts'}", "--json",
                timeout=600, check=None)
    doc = json.loads(p.stdout)
    assert doc["flaky"], "bad did not pass first: the case tests nothing"
    assert p.returncode in (0, 2) and "Traceback" not in p.stderr, p.stderr
    if p.returncode == 0:
        assert doc["first_bad"]["sha"] == shas[6], (doc["first_bad"], doc["confidence"])


FLAKY_SUBJECT = '''import json, os, random, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
name = "".join(args[f"--f{i}"] for i in range(8))
count = os.path.join("counts", name)    # the k-th run of each configuration draws its own number
k = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(k + 1))
draw = random.Random(f"{os.path.basename(os.getcwd())}:{name}:{k}").random()
bad = args["--f3"] == "1" and draw < 0.5     # a race: half the runs with f3 fail
print("BISECTK_RESULT " + json.dumps({"rel_err": 1.0 if bad else 0.0}))
'''


def test_ablate_with_an_undeclared_half_flake_is_never_wrong_at_exit_0(tmp_path):
    names = [f"f{i}" for i in range(8)]
    for k in range(3):      # each in its own directory: its own ledger, fresh runs
        d = tmp_path / f"r{k}"
        d.mkdir()
        (d / "subject.py").write_text(FLAKY_SUBJECT)   # seeded by its directory's name, r0 to r2
        (d / "counts").mkdir()
        argv = [sys.executable, str(d / "subject.py")]
        for n in names:
            argv += [f"--{n}", "{" + n + "}"]
        (d / "spec.toml").write_text(f'name = "race"\n[subject]\ncommand = {json.dumps(argv)}\n[oracle]\n'
                                     'metric = "rel_err"\nmax = 1e-4\n[good]\n' + "\n".join(f"{n} = 0" for n in names)
                                     + "\n[bad]\n" + "\n".join(f"{n} = 1" for n in names) + "\n")
        (d / "pyproject.toml").touch()
        p = bisectk("ablate", d / "spec.toml", "--json", cwd=d, timeout=600, check=None)
        assert p.returncode == 0, p.stderr[-2000:]      # seeded: each history is answered, and rightly
        doc = json.loads(p.stdout)
        assert doc["culprits"] == ["f3"] and doc["runs"] > 0, doc["culprits"]


def test_one_spurious_failure_of_a_good_commit_is_not_the_answer(tmp_path):
    """The culprit's parent fails on its first run only (a run starved past its watchdog, the OOM
    killer): the confirmation's re-run passes, and the search that goes on from there must find
    the real first bad commit, not name the parent at 0.99 (docs/debug/flake-switch-prior.md)."""
    good, shas = make_dag_repo(tmp_path / "r", chain(24), culprit=11)
    once = tmp_path / "failed-once"
    code = ("import os, sys; bad = os.path.exists('BUG'); name = open('id.txt').read().strip(); "
            f"first = name == 'c10' and not os.path.exists({str(once)!r}); "
            f"first and open({str(once)!r}, 'w').close(); sys.exit(1 if bad or first else 0)")
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1],
                "--run", f"{sys.executable} -c \"{code}\"", "--json", timeout=600, check=None)
    doc = json.loads(p.stdout)
    assert once.exists(), "the parent was never run: the case tests nothing"
    assert doc["switched"], doc
    assert p.returncode == 0 and doc["first_bad"]["sha"] == shas[11] and doc["confidence"] >= 0.99, \
        (doc["first_bad"], doc["confidence"])


def test_no_flaky_confirms_once_and_its_log_replays_the_same(tmp_path):
    """--no-flaky: the failure is declared deterministic; the first bad commit and its parent are
    run once more each (not the ~14 runs an unknown rate asks for), the report says what the
    answer rests on, and the log carries the declaration, so replay gives the same answer."""
    good, shas = make_dag_repo(tmp_path / "r", chain(24), culprit=11)
    run = ["--run", f"{sys.executable} -c \"import os, sys; sys.exit(1 if os.path.exists('BUG') else 0)\""]
    common = ["bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], *run]
    default = json.loads(bisectk(*common, "--json", "--ledger", tmp_path / "a.db").stdout)
    steady = json.loads(bisectk(*common, "--no-flaky", "--json", "--ledger", tmp_path / "b.db").stdout)
    assert default["first_bad"]["sha"] == steady["first_bad"]["sha"] == shas[11]
    made = steady["confirmation"]["runs"]
    assert sorted(i for i, _ in made) == [10, 11] and steady["confirmation"]["steady"], made
    assert steady["runs"] <= default["runs"] - 8, (steady["runs"], default["runs"])
    text = bisectk(*common, "--no-flaky", "--ledger", tmp_path / "b.db").stdout
    assert "--no-flaky declared the failure deterministic" in text
    log = bisectk("log", "--repo", tmp_path / "r", "--ledger", tmp_path / "b.db").stdout
    assert "--no-flaky" in log.splitlines()[1]
    (tmp_path / "b.log").write_text(log)
    again = bisectk("replay", tmp_path / "b.log", "--json", cwd=tmp_path / "r")
    assert json.loads(again.stdout)["first_bad"]["sha"] == shas[11]


def alternating_run(count) -> list[str]:
    """A subject that fails every other run where the BUG marker is, its first such run passing:
    the bad endpoint passes, then fails (an intermittent failure, known to the run)."""
    code = (f"import os, sys; p = {str(count)!r}; n = int(open(p).read()) if os.path.exists(p) else 0; "
            "bug = os.path.exists('BUG'); bug and open(p, 'w').write(str(n + 1)); sys.exit(1 if bug and n % 2 else 0)")
    return ["--run", f"{sys.executable} -c \"{code}\""]


@pytest.mark.parametrize("flags", [[], ["--flaky", "--confidence", "0.95"]], ids=["intermittent", "declared"])
def test_a_flaky_bisections_log_replays_to_the_same_answer(tmp_path, flags):
    """The log said nothing of the model the search ran in: a bisection made flake-aware by an
    intermittent bad endpoint replayed as a deterministic one ("not determined yet", exit 1, where
    the command had said 0.997), --flaky's replayed with one rate and no good-endpoint runs, and
    --confidence was lost. Now the log carries all three and the replay rebuilds the answer."""
    good, shas = make_dag_repo(tmp_path / "r", chain(12), culprit=7)
    p = bisectk("bisect", "--repo", tmp_path / "r", "--good", good, "--bad", shas[-1], *alternating_run(tmp_path / "n"),
                *flags, "--json", timeout=300, check=None)
    doc = json.loads(p.stdout)
    assert doc["flaky"] and doc["first_bad"] and doc["complete"], (p.returncode, p.stderr[-2000:])
    log = bisectk("log", "--repo", tmp_path / "r").stdout
    (tmp_path / "b.log").write_text(log)
    again = json.loads(bisectk("replay", tmp_path / "b.log", "--json", check=None).stdout)
    assert (again["first_bad"]["sha"], again["complete"]) == (doc["first_bad"]["sha"], True)
    assert again["confidence"] == pytest.approx(doc["confidence"], abs=1e-6)


def test_a_fix_found_with_an_intermittent_broken_side_replays_to_the_same_answer(tmp_path):
    """--find-fix where the broken side fails every other run: each pass is confirmed by repeated
    runs (direction.FixOracle). The replay read the log run by run, so the broken end's own passes
    were "the old end recorded as fixed": exit 2 on the log of a search that had answered. Now the
    runs are folded as the search made them, and the answer and its confidence are the command's."""
    good, shas = make_dag_repo(tmp_path / "r", chain(12), culprit=7)
    count = tmp_path / "n"
    code = (f"import os, sys; p = {str(count)!r}; n = int(open(p).read()) if os.path.exists(p) else 0; "
            "fixed = os.path.exists('BUG'); fixed or open(p, 'w').write(str(n + 1)); "
            "sys.exit(1 if not fixed and n % 2 else 0)")
    p = bisectk("bisect", "--repo", tmp_path / "r", "--find-fix", "--bad", good, "--good", shas[-1],
                "--run", f"{sys.executable} -c \"{code}\"", "--json", timeout=300, check=None)
    doc = json.loads(p.stdout)
    assert doc["flaky"] and doc["first_bad"]["sha"] == shas[7] and doc["complete"], (p.returncode, p.stderr[-2000:])
    log = bisectk("log", "--repo", tmp_path / "r").stdout
    (tmp_path / "b.log").write_text(log)
    again = bisectk("replay", tmp_path / "b.log", "--json", check=None)
    assert again.returncode == 0, again.stderr
    doc_again = json.loads(again.stdout)
    assert (doc_again["first_bad"]["sha"], doc_again["complete"]) == (shas[7], True)
    assert doc_again["confidence"] == pytest.approx(doc["confidence"], abs=1e-6)


def test_a_fix_search_reports_the_subjects_failure_rates(tmp_path):
    """--find-fix where the broken side fails 2 runs in 3 and the fixed side never: the rates line
    said "failure rate before the culprit 0.34 ..., from it on 0.90", the search's own FAIL (a pass
    of the subject) read as the failure, so the fixed side was said to fail 9 runs in 10. The rates
    (line and --json) are the subject's failures: high before the fix, low from it on."""
    good, shas = make_dag_repo(tmp_path / "r", chain(12), culprit=7)
    count = tmp_path / "n"
    code = (f"import os, sys; p = {str(count)!r}; n = int(open(p).read()) if os.path.exists(p) else 0; "
            "fixed = os.path.exists('BUG'); fixed or open(p, 'w').write(str(n + 1)); "
            "sys.exit(1 if not fixed and n % 3 else 0)")
    p = bisectk("bisect", "--repo", tmp_path / "r", "--find-fix", "--flaky", "--bad", good, "--good", shas[-1],
                "--run", f"{sys.executable} -c \"{code}\"", "--json", "--ledger", tmp_path / "l.db", timeout=300,
                check=None)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["sha"] == shas[7] and doc["rates"], (p.returncode, p.stderr[-2000:])
    r = doc["rates"]
    assert r["p_old"] > 0.5 > r["p_new"] and r["p_old_ci95"][0] <= r["p_old"] <= r["p_old_ci95"][1], r
    assert r["p_new_ci95"][0] <= r["p_new"] <= r["p_new_ci95"][1] and r["p_new_ci95"][0] == 0, r
    said = bisectk("report", tmp_path / "l.db").stdout
    line = next(line for line in said.splitlines() if line.startswith("failure rate"))
    assert line.startswith(f"failure rate before the first fixed commit {r['p_old']:.2f}"), line
    assert f"from it on {r['p_new']:.2f}" in line, line
