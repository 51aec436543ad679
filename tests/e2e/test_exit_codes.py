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


SKIPS_C1 = """#!/bin/sh
v=$(cat v)
[ "$v" -eq 1 ] && { echo "cannot build c1: toolchain too old" >&2; exit 125; }
[ "$v" -lt 5 ]
"""


def test_a_good_commit_the_test_skips_is_said_as_a_skip_naming_the_commit(tmp_path):
    """The test exits 125 on the good commit: what happened is said (the test asked to skip it,
    which commit, its reason, what to do), where it was "cannot be tested: UNRESOLVED build (skip
    (exit 125): ...)", a build failure that never was."""
    r = _counting_repo(tmp_path, 8)
    script = tmp_path / "t.sh"
    script.write_text(SKIPS_C1)
    script.chmod(0o755)
    p = bisectk("bisect", "--repo", str(r), "--good", "HEAD~7", "--bad", "HEAD", "--run", str(script),
                cwd=tmp_path, timeout=300)
    problem = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    c1 = git_short(r, "HEAD~7")
    assert p.returncode == 2 and problem == [
        f"problem: the test asked to skip the good commit {c1} c1 (exit 125: cannot build c1: toolchain too old); "
        "a bisection needs a good commit that the test runs and that passes: give --good another commit, or have "
        "the test exit 125 only where it cannot test"], (p.returncode, p.stdout[-1500:], p.stderr[-1500:])


def git_short(r, ref: str) -> str:
    from tests.fixtures.gitrepo import git
    return git(r, "rev-parse", "--short=10", ref)
