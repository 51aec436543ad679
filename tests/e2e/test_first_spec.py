"""End-to-end: what a kernel author's first specs get wrong, and what bisectk says of them."""
import json
import re
import string

from tests.conftest import bisectk, err_spec

JUDGE = "import sys\nargs = dict(a.split('=') for a in sys.argv[1:])\nprint('BISECTK_RESULT {\"err\": %s}' % args['a'])\n"


def test_the_search_line_of_many_differences_stays_one_short_line(tmp_path):
    """40 factors: the progress line `== search adaptive over 40 differences: ...` named every one
    of them (3,000 factors made it a 20 kB line on stderr, the flakiness rule at its far end),
    where the differences line on stdout shows 12 and counts the rest."""
    factors = string.ascii_letters[:40]
    spec = err_spec(tmp_path, "many", JUDGE, factors)
    p = bisectk("ablate", spec, "--ledger", tmp_path / "l.db", timeout=300, check=0)
    line = next(x for x in p.stderr.splitlines() if x.startswith("== search"))
    assert "over 40 differences: a, b, c" in line and "+28 more" in line and ", z," not in line, line
    assert "culprit: a" in p.stdout


def test_an_unused_factors_warning_points_at_braces_meant_as_its_placeholder(tmp_path):
    """`"n={ n }"` or `"{n:>4}"` (Python's format habits) are left alone, so the subject receives
    them as typed; the warning said only that n is used by no placeholder, not where the spec
    meant one."""
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text("print('BISECTK_RESULT {\"err\": 0}')\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('[subject]\ncommand = ["python", "s.py", "n={ n }", "{n:>4}", "{{n}}", "{m}"]\n'
                    '[oracle]\nmetric = "err"\nmax = 0\n[good]\nn = 1\nm = 1\n[bad]\nn = 2\nm = 2\n')
    p = bisectk("run", spec, "--ledger", tmp_path / "l.db", timeout=120, check=0)
    warning = next(x for x in p.stderr.splitlines() if x.startswith("bisectk: warning: factor 'n'"))
    assert "'{ n }', '{n:>4}' are no placeholders, passed on as typed (a placeholder is {n}" in warning, warning
    assert "factor 'm'" not in p.stderr, p.stderr


def test_jobs_says_when_the_runs_write_files_in_the_directory_they_share(tmp_path):
    """`--jobs 2` with a subject that writes out.bin where it starts: the run beside it overwrites
    the file, and a run reads another configuration's (a wrong or crashing good endpoint now and
    then, different failures that come and go), with nothing said. The endpoint runs' writes are
    named before the search; a subject that writes nothing there (the ledger beside it is
    bisectk's) gets no such line."""
    writer = ("import sys\nargs = dict(a.split('=') for a in sys.argv[1:])\nopen('out.bin', 'w').write(str(args))\n"
              "print('BISECTK_RESULT {\"err\": %s}' % args['a'])\n")
    for code, said in ((JUDGE, False), (writer, True)):
        spec = err_spec(tmp_path, "shared", code)
        p = bisectk("ablate", spec, "--jobs", "2", "--fresh", "--ledger", tmp_path / "l.db", timeout=300, check=0)
        line = [x for x in p.stderr.splitlines() if x.startswith("warning: --jobs 2:")]
        assert bool(line) is said, p.stderr[-3000:]
        assert not said or f"wrote out.bin in {tmp_path}, the directory every run starts in" in line[0], line


def test_a_factor_set_twice_is_refused(tmp_path):
    """`run --set a=0 --set a=1` (a copy-paste meant for another factor) ran a=1 with nothing said."""
    spec = err_spec(tmp_path, "twice", JUDGE)
    p = bisectk("run", spec, "--set", "a=0", "--set", "a=1", "--ledger", tmp_path / "l.db", check=2)
    assert p.stderr == "bisectk: --set 'a=1': 'a' is set twice (--set 'a=0' before it); give each factor once\n", p.stderr
    bisectk("run", spec, "--set", "a=0", "--set", "a=0", "--ledger", tmp_path / "l.db", check=0)


def test_a_hang_that_ends_sooner_when_given_longer_is_no_first_runs_cost(tmp_path):
    """b=1 hangs on its first run only (a race, a lock held by chance), hunting a's crash: given
    10 s it ended in 0.1 s, and the report said it "was called a hang after 1.07482 s and ended
    in 0.10 s when given 10 s: a first run's cost (a JIT compile into a cache, a build)", set its
    hang aside and advised --timeout. A run that ends sooner than its stopped run had already run
    paid no first run's cost (unless that run filled its cache while it was read before the kill): it
    may hang only sometimes, is said so, and its hang is kept."""
    code = ("import os, sys, time\nargs = dict(a.split('=') for a in sys.argv[1:])\n"
            "if args['a'] == '1':\n    raise RuntimeError('a')\n"
            "if args['b'] == '1' and not os.path.exists('hung'):\n"
            "    open('hung', 'w').close()\n    time.sleep(60)\n"
            "print('BISECTK_RESULT {\"err\": 0}')\n")
    spec = err_spec(tmp_path, "sometimes", code, "ab")
    p = bisectk("ablate", spec, "--json-out", tmp_path / "o.json", "--snapshots", "0", "--ledger", tmp_path / "l.db",
                timeout=300, check=0)
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["culprits"] == ["a"], doc["culprits"]
    assert (tmp_path / "hung").exists()
    assert not [s for s in doc["advice"] if s["step"] == "first_run_cost"], doc["advice"]
    assert not any("first run's cost" in words for words in doc["next_steps"]), doc["next_steps"]
    assert "different failure (possible second bug): b -> FAIL hang" in p.stdout, p.stdout
    assert re.search(r"hybrid was called a hang after \d+\.\d\d s, and given 10 s it ended in \d+\.\d\d s, "
                     r"sooner: no slow first run \(unless the stopped run filled a cache before it was ended\), so it may hang "
                     r"only sometimes \(its hang is kept\)", p.stderr), p.stderr[-3000:]


def test_a_calibrated_watchdog_is_said_in_hundredths(tmp_path):
    """A silent bad endpoint called a hang by a calibrated watchdog (5 x the good run's 0.31496 s)
    was said to be "called a hang after 1.5748 s"."""
    code = ("import sys, time\nargs = dict(a.split('=') for a in sys.argv[1:])\n"
            "time.sleep(60 if args['a'] == '1' else 0.3)\nprint('BISECTK_RESULT {\"err\": 0}')\n")
    spec = err_spec(tmp_path, "silent", code, "a")      # good's 0.3 s: the watchdog is 5 x its time, above the 1 s floor
    p = bisectk("check", spec, "--snapshots", "0", "--ledger", tmp_path / "l.db", timeout=300)
    said = re.search(r"the bad endpoint was called a hang after ([\d.]+) s", p.stderr)
    assert said and re.fullmatch(r"\d+(\.\d{1,2})?", said.group(1)), p.stderr[-2000:]
