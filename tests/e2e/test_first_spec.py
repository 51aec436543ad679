"""End-to-end: what a kernel author's first specs get wrong, and what bisectk says of them."""
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
