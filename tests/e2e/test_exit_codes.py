"""A `--run` script's exit status as waitpid gives it: exit 0, 125, 1-127 (git bisect run's
protocol), 128-255 (where git bisect run aborts: a crash here) and a death by a signal, told apart
from the exit a shell reports for one (`exit 139` is not the script killed by SIGSEGV)."""

from __future__ import annotations

import json

from tests.conftest import bisectk
from tests.e2e.test_interrupts import _counting_repo

# c1-c8 pass; c9-c12 exit 139 (a shell's report of a child's SIGSEGV); from c13 the script itself dies
MIXED = """#!/bin/sh
v=$(cat v)
[ "$v" -lt 9 ] && exit 0
[ "$v" -lt 13 ] && exit 139
kill -SEGV $$
"""


def test_exit_139_is_not_taken_for_the_scripts_own_sigsegv(tmp_path):
    """The bad endpoint dies by SIGSEGV; commits that exit 139 are another failure, not this one:
    before, both were `SIGSEGV`, and c9 (which exits 139) was named the first bad commit at exit 0."""
    r = _counting_repo(tmp_path, 16)
    script = tmp_path / "t.sh"
    script.write_text(MIXED)
    script.chmod(0o755)
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~15", "--bad", "HEAD", "--run", str(script), "--json",
                cwd=tmp_path, timeout=300)
    data = json.loads(p.stdout)
    named = {c["subject"] for c in data["candidates"]} if data["first_bad"] is None else {data["first_bad"]["subject"]}
    assert "c13" in named and p.returncode in (0, 1), (p.returncode, named)
    if data["first_bad"] is not None:
        assert data["first_bad"]["subject"] == "c13"
