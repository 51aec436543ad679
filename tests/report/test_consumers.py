"""The reports as their consumers read them, fed hostile content through real runs: JSON read by a
strict parser (jq, JavaScript's JSON.parse), JUnit XML read by a CI system, the Markdown debug log,
the HTML report and the `bisectk ledger` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bisectk.report.safe import json_text
from tests.conftest import bisectk, err_spec


def _strict(text: str):
    """json.loads as a strict reader (jq, JSON.parse) reads: NaN and the infinities are no JSON."""
    def refuse(word):
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def test_json_text_writes_a_float_that_is_no_number_as_a_string():
    doc = {"metrics": {"err": float("nan"), "hi": float("inf"), "lo": float("-inf"), "ok": 0.5},
           "runs": [[float("nan")]], "name": "lat\udce9"}
    for kw in ({}, {"indent": 2, "default": str}):
        assert _strict(json_text(doc, **kw)) == {"metrics": {"err": "NaN", "hi": "Infinity", "lo": "-Infinity",
                                                             "ok": 0.5}, "runs": [["NaN"]], "name": "lat\\xe9"}


def test_a_subjects_nan_metric_leaves_json_and_json_out_valid(tmp_path):
    """A subject printing `{"err": NaN, "peak": Infinity}` (Python's json.dumps writes that): `run
    --json` and `ablate --json-out` wrote bare NaN and Infinity, which jq and every strict parser
    reject, so CI lost the whole document."""
    spec = err_spec(tmp_path, "nan", 'import sys\nbad = "a=1" in sys.argv\n'
                    'print("BISECTK_RESULT {\\"err\\": %s, \\"peak\\": Infinity}" % ("NaN" if bad else "0.0"))\n')
    p = bisectk("run", spec, "--config", "bad", "--json", cwd=tmp_path, check=1)
    doc = _strict(p.stdout)
    assert doc["metrics"] == {"err": "NaN", "peak": "Infinity"} and doc["signature"] == "NaN in err"
    bisectk("ablate", spec, "--json-out", "r.json", cwd=tmp_path, check=0)
    doc = _strict((tmp_path / "r.json").read_text())
    assert doc["culprits"] == ["a"]
    p = bisectk("report", tmp_path / ".bisectk" / "ledger.db", "--json", cwd=tmp_path, check=0)
    assert _strict(p.stdout)["culprits"] == ["a"]


def test_ledger_gc_on_an_empty_file_says_so_and_leaves_it_empty(tmp_path):
    """`bisectk ledger gc --ledger x.db` on an empty file (a `touch`, a mistyped name made by a
    redirect): gc opened it for writing, which made it a bisectk ledger of six tables, and said
    `pruned the run logs of 0 commands` (exit 0), where `report` and `ledger check` say there is no
    ledger there."""
    (tmp_path / "x.db").touch()
    p = bisectk("ledger", "gc", "--ledger", "x.db", cwd=tmp_path, check=2)
    assert p.stderr == "bisectk: no ledger at x.db: an empty file, nothing has been recorded there\n", p.stderr
    assert p.stdout == "" and (tmp_path / "x.db").stat().st_size == 0
    assert sorted(q.name for q in tmp_path.iterdir()) == ["x.db"]


@pytest.mark.parametrize("session", ["0", "99999999999999999999"])
@pytest.mark.parametrize("command", ["report", "log"])
def test_a_session_id_that_names_no_row_is_one_line(tmp_path, command, session):
    """`--session 0` was read as no --session: `report` printed the last session's result, exit 0,
    as if it were session 0's; an id past SQLite's integers was an internal error (exit 3)."""
    spec = err_spec(tmp_path, "s", 'import sys\nprint("BISECTK_RESULT {\\"err\\": %d}" % ("a=1" in sys.argv))\n', "a")
    bisectk("ablate", spec, cwd=tmp_path, check=0)
    where = [".bisectk/ledger.db"] if command == "report" else ["--ledger", ".bisectk/ledger.db"]
    p = bisectk(command, *where, "--session", session, cwd=tmp_path, check=2)
    assert p.stdout == "" and p.stderr == (f"bisectk: Invalid value for '--session': {session} is no session id "
                                           f"(ids count from 1) (see 'bisectk {command} --help')\n"), p.stderr


@pytest.mark.parametrize("journal", ["-wal", "-journal"])
def test_salvage_into_the_ledgers_own_journal_is_refused(tmp_path, journal):
    """`ledger check L --salvage L-wal` wrote the salvaged ledger where SQLite keeps L's journal:
    the next command on L took it for its write-ahead log and deleted it, the salvage lost."""
    spec = err_spec(tmp_path, "s", 'import sys\nprint("BISECTK_RESULT {\\"err\\": %d}" % ("a=1" in sys.argv))\n', "a")
    bisectk("ablate", spec, cwd=tmp_path, check=0)
    dest = f".bisectk/ledger.db{journal}"
    p = bisectk("ledger", "check", ".bisectk/ledger.db", "--salvage", dest, cwd=tmp_path, check=2)
    assert p.stderr == (f"bisectk: {dest} is where SQLite keeps .bisectk/ledger.db's journal ({journal}); the "
                        "salvaged ledger would be lost at the next command on it: name another file\n"), p.stderr
    assert not (tmp_path / dest).exists()
    bisectk("ledger", "check", ".bisectk/ledger.db", "--salvage", "saved.db", cwd=tmp_path, check=0)


def test_a_long_factor_value_is_cut_on_the_terminal_and_whole_in_the_reports(tmp_path):
    """A factor whose value is 20,000 characters (a list of flags, an inlined source): the
    key-differences table folded it into 1,400 lines, which scrolled the culprit away, and the
    differences line was 20 kB; `check`'s table the same. The debug log and --json keep it whole."""
    long = "Q" * 20000
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "s.py").write_text('import sys\nprint("BISECTK_RESULT {\\"err\\": %d}" % ("a=1" in sys.argv))\n')
    (tmp_path / "spec.toml").write_text(
        'name = "v"\n[subject]\ncommand = ["python", "s.py", "a={a}", "c={c}"]\n[oracle]\nmetric = "err"\nmax = 0.5\n'
        f'[good]\na = 0\nc = "{long}"\n[bad]\na = 1\nc = "short"\n')
    for command, reports in (("ablate", ["--report", "r.md", "--json-out", "r.json"]), ("check", [])):
        p = bisectk(command, "spec.toml", *reports, cwd=tmp_path, check=0)
        lines = p.stdout.splitlines()
        assert len(lines) < 60 and max(map(len, lines)) < 400, (len(lines), max(map(len, lines)))
        assert "(20,000 characters)" in p.stdout and (command == "check" or "culprit: a" in p.stdout)
        assert max(map(len, p.stderr.splitlines())) < 400
    assert long in (tmp_path / "r.md").read_text() and long in (tmp_path / "r.json").read_text()


def _ablate_into(tmp_path: Path, *, stdout, stderr, extra=()) -> subprocess.CompletedProcess:
    spec = err_spec(tmp_path, "s", 'import sys\nprint("BISECTK_RESULT {\\"err\\": %d}" % ("a=1" in sys.argv))\n', "ab")
    return subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(spec), "--json-out", "r.json", *extra],
                          cwd=tmp_path, stdout=stdout, stderr=stderr, text=True, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_progress_on_a_full_disk_stops_and_the_search_and_its_result_go_on(tmp_path):
    """`bisectk ablate 2>ci.log` with the log's disk full: the first progress line's ENOSPC ended
    the command (exit 1, as if interrupted) after the differences line: no result, no report."""
    with open("/dev/full", "w") as full:
        p = _ablate_into(tmp_path, stdout=subprocess.PIPE, stderr=full)
    assert p.returncode == 0 and "culprit: a" in p.stdout, (p.returncode, p.stdout)
    assert json.loads((tmp_path / "r.json").read_text())["culprits"] == ["a"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_a_result_that_cannot_be_printed_still_gets_its_report_files(tmp_path, as_json):
    """`bisectk ablate > out.txt --json-out r.json` with the disk full: the first stdout line's
    ENOSPC was an internal error (exit 3) before the search, and --json's document failed unseen
    at the exit; now the search runs, the report files are written and the failure is one line."""
    with open("/dev/full", "w") as full:
        p = _ablate_into(tmp_path, stdout=full, stderr=subprocess.PIPE, extra=[*as_json, "--report", "r.md"])
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.splitlines()[-1] == "bisectk: could not write the result to stdout: No space left on device"
    assert json.loads((tmp_path / "r.json").read_text())["culprits"] == ["a"]
    assert "culprit: a" in (tmp_path / "r.md").read_text()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_the_commands_that_run_nothing_say_a_full_stdout_too(tmp_path):
    """`bisectk report L > f` on a full disk was an internal error (exit 3); `ledger check L > f`
    printed nothing and said it was well (exit 0) once the console dropped what it could not write."""
    _ablate_into(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for args in (["report", ".bisectk/ledger.db"], ["report", ".bisectk/ledger.db", "--json"],
                 ["ledger", "check", ".bisectk/ledger.db"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([sys.executable, "-m", "bisectk", *args], cwd=tmp_path, stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=120)
        assert p.returncode == 2 and p.stderr == "bisectk: could not write the output to stdout: No space left on " \
                                                 "device\n", (args, p.returncode, p.stderr)
