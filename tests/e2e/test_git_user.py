"""A seasoned `git bisect` user's moves against bisectk bisect, each with what the user is told."""

from __future__ import annotations

from tests.conftest import bisectk
from tests.e2e.test_interrupts import _counting_repo


def test_resume_after_editing_the_test_script_says_why_it_cannot(tmp_path):
    """A bisection stopped by --max-runs, the test script edited, then --resume: 'git bisect run'
    would go on with the new script over the old marks; bisectk refuses (the runs were another
    test's), and now says that the script it ran has changed since, where it said only 'no
    earlier bisection ... with this subject', as if none had been made."""
    r = _counting_repo(tmp_path, 16)
    (r / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 9 ]\n")
    (r / "t.sh").chmod(0o755)
    args = ("bisect", "--good", "HEAD~15", "--run", "./t.sh")
    bisectk(*args, "--max-runs", "3", cwd=r, check=1)
    (r / "t.sh").write_text("#!/bin/sh\n[ $(cat v) -lt 5 ]\n")
    p = bisectk(*args, "--resume", cwd=r, check=2)
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("bisectk: --resume: no earlier bisection of HEAD~15..HEAD with this subject"), p.stderr
    assert "ran ./t.sh as it was then" in line and "an edited test script is another test" in line, line
    p = bisectk("bisect", "--good", "HEAD~14", "--run", "./t.sh", "--resume", cwd=r, check=2)
    assert "as it was then" not in p.stderr       # another range: no earlier bisection, plainly
