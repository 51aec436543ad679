"""How a result record is kept in the ledger (engine/records.py stored_form, full_form): ofat's
reversals from bad kept as what they leave out, read back whole; a record stored in the older
form (every attempt's `applied` written out) still read and printed."""

from __future__ import annotations

import io
import json
import sqlite3

from rich.console import Console

from bisectk.engine.records import full_form, load_record, stored_form
from bisectk.report import render
from tests.conftest import bisectk, err_spec
from tests.report.records import ablation, attempt

NAMES = [f"f{i:02d}" for i in range(40)]


def ofat(names=NAMES):
    adds = [attempt(i, (x,), "pass", phase="ofat-add") for i, x in enumerate(names, 1)]
    removes = [attempt(len(names) + i, tuple(y for y in names if y != x), "fail" if x != names[3] else "pass",
                       phase="ofat-remove") for i, x in enumerate(names, 1)]
    return ablation(names, [names[3]], adds + removes)


def test_ofat_attempts_are_kept_as_their_complement_and_read_back_whole():
    rec = ofat()
    doc = json.loads(json.dumps(render.stored(rec), default=str))
    kept = json.loads(json.dumps(stored_form(doc)))
    removes = [a for a in kept["attempts"] if a["phase"] == "ofat-remove"]
    assert all("applied" not in a and len(a["applied_except"]) == 1 for a in removes)
    assert [a["applied"] for a in kept["attempts"] if a["phase"] == "ofat-add"] == [[x] for x in NAMES]
    names_kept = sum(len(a.get("applied", a.get("applied_except", []))) for a in kept["attempts"])
    assert names_kept == 2 * len(NAMES)                       # O(n), where the full form holds n^2
    assert load_record(kept).attempts == rec.attempts
    assert full_form(kept) == doc and list(full_form(kept)["attempts"][-1]) == list(doc["attempts"][-1])
    assert doc["attempts"][-1]["applied"] == NAMES[:-1]       # stored_form left its input alone


def test_an_attempt_is_kept_as_it_is_where_its_complement_would_not_say_it_exactly():
    odd = [attempt(1, tuple(reversed(NAMES[:30])), "fail"),       # not in the differences' order
           attempt(2, (*NAMES[:30], "elsewhere"), "fail"),         # a name that is no difference
           attempt(3, NAMES[:5], "pass")]                          # fewer than half: its list is shorter
    doc = render.stored(ablation(NAMES, [], odd))
    assert stored_form(doc)["attempts"] == doc["attempts"]


def test_a_record_stored_in_the_older_form_still_reads_and_prints():
    rec = ofat()
    old = json.loads(json.dumps(render.stored(rec), default=str))      # every `applied` written out
    assert full_form(old) is old
    back = load_record(old)
    assert back.attempts == rec.attempts
    buf = io.StringIO()
    render.summary(Console(file=buf, width=200, color_system=None), back)
    assert "f03" in buf.getvalue()
    log = render.debuglog(back)
    assert len(log.attempts) == 2 * len(NAMES) and "f39" in log.to_markdown()


FACTORS = "abcdefgh"
CODE = ("import json, sys\ncfg = dict(a.split('=') for a in sys.argv[1:])\n"
        "print('BISECTK_RESULT ' + json.dumps({'err': float(cfg['c'] == '1')}))\n")


def test_ablate_ofat_stores_the_short_form_and_report_prints_what_the_command_printed(tmp_path):
    spec = err_spec(tmp_path, "wide", CODE, factors=FACTORS)
    ledger = tmp_path / "ledger.db"
    live = json.loads(bisectk("ablate", spec, "--strategy", "ofat", "--json", "--ledger", ledger, check=0).stdout)
    assert live["culprits"] == ["c"]
    assert any(len(a["applied"]) == len(FACTORS) - 1 for a in live["attempts"])
    (stored,) = sqlite3.connect(ledger).execute("SELECT result_json FROM sessions WHERE result_json IS NOT NULL").fetchone()
    kept = json.loads(stored)["attempts"]
    assert any("applied_except" in a for a in kept)
    assert max(len(a.get("applied", a.get("applied_except", []))) for a in kept) <= len(FACTORS) // 2
    again = json.loads(bisectk("report", ledger, "--json", check=0).stdout)
    assert again["attempts"] == live["attempts"]
    assert "culprit: c" in bisectk("report", ledger, check=0).stdout
