"""The watchdog follows progress end to end (issue 13): on a JIT-shaped subject, the hang is called
soon after the point where the good run had finished and says where it stopped, while a
configuration that only compiles 3 s longer is never called a hang."""
import json
import re
import sys

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "bench"))
from hang_bench import spec  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import git  # noqa: E402


def test_hang_called_after_launch_and_slow_compile_is_not_a_hang(tmp_path):
    doc = json.loads(bisectk("ablate", spec(tmp_path, 0.5, quiet=False), "--json", "--ledger", tmp_path / "l.db",
                             timeout=600, check=0).stdout)
    assert doc["culprits"] == ["hang"]
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    bad = doc["endpoints"]["bad"]["runs"][0]
    assert "hung after 'launch'" in bad["signature"]
    # the bad endpoint also compiles 3 s longer: measured at its own pace, the hang is called about a
    # second after the point where the good run had finished (2.5: under load, 3 suites on 2 cores, the
    # watchdog's polls came late and it read 1.6-1.8 s; the whole-run limit would be ~5 x good's run)
    past = float(re.search(r"([\d.]+) s past the point", bad["signature"]).group(1))
    assert past <= 2.5
    slow = [a for a in doc["attempts"] if "slow_compile" in a["applied"] and "hang" not in a["applied"]]
    assert all(a["outcome"] == "pass" for a in slow)
    # a hybrid with only the slow compile: run it directly, it passes
    p = bisectk("run", tmp_path / "hang.toml", "--config", "good", "--set", "slow_compile=1", "--json",
                "--ledger", tmp_path / "l.db", timeout=300)
    assert p.returncode == 0, p.stdout[-1500:]


def _cached_history(tmp_path, bad_from: int, commits: int, hang: bool, cost: float = 2.0, progress: bool = False):
    """A history whose test pays a first run's cost (a per-source 'JIT cache', as Triton's or the
    CuTe DSL's, filled in `cost` seconds), its endpoints run by hand first: the bench's."""
    from first_run_cost_bench import history
    return history(tmp_path, commits, bad_from, hang, cost, progress)


def test_a_first_runs_cost_is_given_longer_not_left_unresolved(tmp_path):
    """Hunting exit 1 with a watchdog calibrated from a cached good run (1 s), every commit in
    between paid its 2 s compile and was stopped, three times each at the same second, never
    filling its cache: every commit unresolved, no answer. A run called a hang is run once more
    given longer; it ends, and the watchdog is set from its time. No hang snapshots: gdb reading
    the stopped run's shell and its `sleep` before the kill took over a second on a loaded machine,
    the compile finished and filled its cache meanwhile, and the second chance ended at once
    (ended_s 0.03): what this test measures is the second chance, not the reading."""
    r, test = _cached_history(tmp_path, bad_from=6, commits=9, hang=False)
    p = bisectk("bisect", "--repo", r, "--good", "HEAD~8", "--bad", "HEAD", "--run", str(test), "--json",
                "--snapshots", "0", timeout=600, check=0)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["subject"] == "c6", doc.get("problem")
    assert [a["time_s"] < 1.5 for a in doc["attempts"][:2]] == [True, True]      # the endpoints: cached
    given_longer = [a for a in doc["attempts"][2:] if a["outcome"] != "fail" or a["failure"] != "hang"]
    assert any(a["time_s"] > 1.5 for a in given_longer)                            # a 2 s compile, not stopped
    assert not doc["skipped"] and not doc["ambiguous"]
    cost = [s for s in doc["advice"] if s["step"] == "first_run_cost"]      # the record says why, as advice
    assert len(cost) == 1 and cost[0]["ended_s"] > 1.5 and cost[0]["watchdog_s"] > 5
    assert any("a first run's cost" in words and "--timeout" in words for words in doc["next_steps"])


def test_a_first_runs_cost_is_not_taken_for_the_hang_hunted(tmp_path):
    """Hunting a silent hang with the same first-run cost: the first commit tested in between
    was stopped at 1 s, taken for the hang, and c2 was called the first bad commit with
    confidence 1. Its second chance ends; the watchdog is set from it, and the answer is c4."""
    r, test = _cached_history(tmp_path, bad_from=4, commits=5, hang=True, cost=1.3)
    p = bisectk("bisect", "--repo", r, "--good", "HEAD~4", "--bad", "HEAD", "--run", str(test), "--json",
                timeout=600, check=0)
    doc = json.loads(p.stdout)
    assert doc["first_bad"]["subject"] == "c4", doc.get("problem")
    assert doc["endpoints"]["bad"]["runs"][0]["kind"] == "hang"


def test_a_hang_stopped_short_of_where_the_bad_endpoint_hangs_is_given_longer(tmp_path):
    """The same history, the test printing `compiling kernel` and `launching kernel`: the watchdog
    follows the good run's progress, and each commit's first compile (2 s against the good run's
    0.01 s) was stopped after 'compiling kernel' and taken for the hang, which the bad endpoint
    showed after 'launching kernel': c2 at confidence 1. Stopped short of that point, a run is
    given longer; c4 is the answer, and c3 (last good) is shown as the pass it was."""
    r, test = _cached_history(tmp_path, bad_from=4, commits=6, hang=True, cost=1.3, progress=True)
    p = bisectk("bisect", "--repo", r, "--good", "HEAD~5", "--bad", "HEAD", "--run", str(test), "--json",
                "--snapshots", "0", timeout=600, check=0)
    doc = json.loads(p.stdout)
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    assert doc["first_bad"]["subject"] == "c4", doc.get("problem")
    assert [g["verdict"] for g in doc["last_good"]] == ["PASS"]


def _six_commits(tmp_path):
    """A repository of six commits c1..c6, each writing its number to kernel.txt (what the test reads)."""
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for i in range(1, 7):
        (r / "kernel.txt").write_text(f"{i}\n")
        git(r, "add", "kernel.txt")
        git(r, "commit", "-q", "-m", f"c{i}")
    return r


def test_a_hang_that_moved_earlier_is_still_the_hang_hunted(tmp_path):
    """A deadlock need not stop at one place: from c4 on the test hangs, at c4 and c5 before it
    prints 'launching kernel', at c6 (the bad endpoint) after it. A run stopped short of the bad
    endpoint's hang point is given longer (it may be a first run's compile); stopped short again,
    it is the hang hunted, and c4 is the answer (not skipped)."""
    r = _six_commits(tmp_path)
    test = tmp_path / "test.sh"
    test.write_text("#!/bin/sh\necho compiling kernel\nv=$(cat kernel.txt)\n[ $v -ge 4 ] && [ $v -lt 6 ] && exec sleep 1000\n"
                    "echo launching kernel\n[ $v -ge 6 ] && exec sleep 1000\nexit 0\n")
    test.chmod(0o755)
    p = bisectk("bisect", "--repo", r, "--good", "HEAD~5", "--bad", "HEAD", "--run", str(test), "--json",
                "--snapshots", "0", timeout=600, check=0)
    doc = json.loads(p.stdout)
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    assert doc["first_bad"]["subject"] == "c4", (doc.get("problem"), doc.get("skipped"))
    assert not doc["skipped"]


def test_a_fixed_timeout_below_the_good_runs_time_is_named_not_called_a_flaky_good_side(tmp_path):
    """A first spec that sets `timeout = 0.2` on a test taking 0.6 s: every run is a hang, good's
    too. The problem is the watchdog the spec fixed, not 'good fails too ... or the good side is
    flaky'; --timeout the same way."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "t.py").write_text("import sys, time\ntime.sleep(0.6)\nsys.exit(int(sys.argv[1]))\n")
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "t.py", "{code}"]\ntimeout = 0.2\n'
                                     '[good]\ncode = 0\n[bad]\ncode = 3\n')
    p = bisectk("check", tmp_path / "s.toml", "--ledger", tmp_path / "l.db", check=2)
    line = next(x for x in p.stdout.splitlines() if x.startswith("problem: "))
    assert "fails too" not in line and "within 0.2 s, the fixed watchdog set by the spec's `timeout`" in line, line
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["python", "t.py", "{code}"]\n'
                                     '[good]\ncode = 0\n[bad]\ncode = 3\n')
    p = bisectk("check", tmp_path / "s.toml", "--timeout", "0.2", "--ledger", tmp_path / "l.db", check=2)
    line = next(x for x in p.stdout.splitlines() if x.startswith("problem: "))
    assert "within 0.2 s, the fixed watchdog set by --timeout" in line, line


def test_a_timeout_below_the_good_runs_time_under_run_names_the_option_not_a_spec(tmp_path):
    """`bisectk diff GOOD BAD --run CMD --timeout 0.2` (or triage's): there is no spec, but the
    problem said 'the fixed watchdog set by the spec's `timeout`' and to check that '[good] and
    [bad]' (a spec's tables) were not swapped: --timeout puts its seconds into the command's
    stand-in spec. Now it names --timeout."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side, code in ((good, 0), (bad, 3)):
        side.mkdir()
        (side / "t.py").write_text(f"import sys, time\ntime.sleep(0.6)\nsys.exit({code})\n")
    p = bisectk("diff", good, bad, "--run", "python t.py", "--timeout", "0.2", "--ledger", tmp_path / "l.db", check=2)
    line = next(x for x in p.stdout.splitlines() if x.startswith("problem: "))
    assert "within 0.2 s, the fixed watchdog set by --timeout" in line and "spec" not in line, line
    assert "[good]" not in line, line
    r = tmp_path / "r"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    for k, code in enumerate((0, 3)):
        (r / "t.py").write_text(f"import sys, time\ntime.sleep(0.6)\nsys.exit({code})\n")
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", f"c{k}")
    p = bisectk("triage", "--repo", r, "--good", "HEAD~1", "--run", "python t.py", "--timeout", "0.2",
                "--json-out", tmp_path / "t.json", check=2)
    line = next(x for x in p.stdout.splitlines() if x.startswith("problem: "))
    assert "within 0.2 s, the fixed watchdog set by --timeout" in line and "spec" not in line, line
    # the record too: its watchdog came from --timeout, not 'from the spec'
    watchdog = json.loads((tmp_path / "t.json").read_text())["endpoints"]["timeout"]
    assert watchdog["source"] == "option" and "--timeout" in watchdog["detail"], watchdog


def test_a_run_stopped_past_where_the_bad_endpoint_hangs_is_given_longer(tmp_path):
    """From c4 on the test hangs after 'launching kernel'; c3, the last good commit, prints 'done'
    (the good run's last point) and on its first run takes 2.5 s more to end (a cache written at
    exit): the watchdog stopped it about a second past 'done', `hung after the line 'done'`, and
    that was taken for the hang hunted, though the bad endpoint never gets past 'launching
    kernel': c3 at confidence 1. A run stopped past the bad endpoint's hang point has not shown
    that hang; it is given longer, ends, and c4 is the answer."""
    r = _six_commits(tmp_path)
    test = tmp_path / "test.sh"
    test.write_text("#!/bin/sh\necho compiling kernel\nv=$(cat kernel.txt)\necho launching kernel\n"
                    "[ $v -ge 4 ] && exec sleep 1000\necho done\n"
                    f"[ $v -eq 3 ] && [ ! -e {tmp_path}/cache ] && sleep 2.5 && touch {tmp_path}/cache\nexit 0\n")
    test.chmod(0o755)
    p = bisectk("bisect", "--repo", r, "--good", "HEAD~5", "--bad", "HEAD", "--run", str(test), "--json",
                "--snapshots", "0", timeout=600, check=0)
    doc = json.loads(p.stdout)
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    assert "hung after the line 'launching kernel'" in doc["endpoints"]["bad"]["runs"][0]["signature"]
    assert doc["first_bad"]["subject"] == "c4", (doc.get("problem"), doc.get("skipped"))
    assert [g["verdict"] for g in doc["last_good"]] == ["PASS"]


def test_a_first_runs_cost_says_when_the_progress_watchdog_stopped_the_run(tmp_path):
    """A hybrid's first run compiles 3.5 s where the cached endpoints compile at once, after 0.8 s
    of start-up: the watchdog that follows progress stops it about a second after 'compiling
    kernel' (1.8 s), and given longer it ends in 4.3 s. The note said it "was called a hang after
    4.02 s, and ended in 4.3 s": the fixed fallback's seconds (5 x the good run), never used."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "k.sh").write_text('sleep 0.8\necho "compiling kernel"\nkey=".cache-$1-$2"\n'
                                   'if [ ! -e "$key" ]; then sleep 3.5; touch "$key"; fi\necho "launching kernel"\n'
                                   'if [ "$1" = 1 ]; then exec sleep 1000; fi\necho \'BISECTK_RESULT {"ok": true}\'\n')
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["sh", "k.sh", "{a}", "{b}"]\n'
                                     '[good]\na = 0\nb = 0\n[bad]\na = 1\nb = 1\n')
    for cached in (".cache-0-0", ".cache-1-1"):      # the endpoints, run by hand before
        (tmp_path / cached).touch()
    p = bisectk("ablate", tmp_path / "s.toml", "--json-out", tmp_path / "o.json", "--snapshots", "0",
                "--ledger", tmp_path / "l.db", timeout=300)
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["culprits"] == ["a"], doc["culprits"]
    cost = [s for s in doc["advice"] if s["step"] == "first_run_cost"]
    assert len(cost) == 1 and cost[0]["stopped_s"] < cost[0]["ended_s"] - 1.5, cost
    said = re.search(r"was called a hang after ([\d.]+) s, and ended in ([\d.]+) s", p.stderr)
    assert said and float(said.group(1)) == round(cost[0]["stopped_s"], 2), p.stderr[-2000:]


def test_a_slow_teardown_past_the_last_point_is_given_longer_once_not_at_every_run(tmp_path):
    """The bad endpoint hangs after 'launching kernel' (c); d makes the test take 1.5 s more after
    its last line, 'done' (a slow teardown: every run, not a first run's cost). The watchdog that
    follows progress stopped each run with d about a second past 'done'; given longer, it ended,
    and the watchdog was stretched before the first point only (Runner.stretch), so every run of
    the confirmation's passes was stopped and run again: 11 second chances, 50 s for a 25 s
    ablation. The time a run given longer took past the good run's last point now stretches the
    deadline there: one second chance, the same culprit."""
    (tmp_path / "k.sh").write_text('echo "compiling kernel"\necho "launching kernel"\n'
                                   'if [ "$1" = 1 ]; then exec sleep 1000; fi\necho done\n'
                                   'if [ "$2" = 1 ]; then sleep 1.5; fi\nexit 0\n')
    (tmp_path / "s.toml").write_text('[subject]\ncommand = ["sh", "k.sh", "{c}", "{d}", "{e}"]\n'
                                     '[good]\nc = 0\nd = 0\ne = 0\n[bad]\nc = 1\nd = 1\ne = 1\n')
    p = bisectk("ablate", tmp_path / "s.toml", "--json-out", tmp_path / "o.json", "--snapshots", "0",
                "--ledger", tmp_path / "l.db", timeout=300)
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["culprits"] == ["c"], doc["culprits"]
    assert doc["endpoints"]["timeout"]["source"] == "progress"
    given = re.findall(r"hung after the line 'done'", p.stderr)
    assert len(given) == 1, p.stderr[-3000:]
