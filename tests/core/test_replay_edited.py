"""`bisectk replay` of logs a person edited or brought from elsewhere: each says what is wrong
with the log in one line (exit 2), never an answer the log does not hold."""
import sys
from pathlib import Path

from tests.conftest import ROOT, bisectk

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from gitrepo import counter_repo  # noqa: E402


def _log(repo: Path, shas: list[str], lines: list[str]) -> str:
    return "\n".join([f"# bisectk bisect --repo {repo} --good {shas[0]} --bad {shas[-1]}", *lines]) + "\n"


def test_a_log_whose_bad_end_only_passed_holds_no_failure_to_bisect(tmp_path):
    """Before: the log of a triage whose bad revision passed its 10 runs ('nothing to triage')
    replayed as 'not determined yet; 1 candidate remains; next commit to test: c1' (exit 1), a
    bisection the log never started. Now it says the bad end never failed (exit 2)."""
    repo = tmp_path / "r"
    shas = counter_repo(repo, 4)
    log = tmp_path / "b.log"
    log.write_text(_log(repo, shas, [f"observe {shas[0]} pass"] + [f"observe {shas[-1]} pass"] * 3))
    p = bisectk("replay", log)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("bisectk: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert shas[-1][:10] in p.stderr and "never failed" in p.stderr, p.stderr
    # a bad end that failed once among its passes is an intermittent failure: replayed as before
    log.write_text(_log(repo, shas, [f"observe {shas[0]} pass", f"observe {shas[-1]} pass",
                                     f"observe {shas[-1]} fail"]))
    p = bisectk("replay", log)
    assert p.returncode == 1 and "next commit to test" in p.stdout, (p.returncode, p.stdout, p.stderr)


def test_a_full_sha_of_no_commit_in_the_repository_is_named_as_such(tmp_path):
    """Before: an `observe SHA` line whose full sha is no commit here (a log edited by hand, or
    replayed in a clone that lacks it) was called 'not between the log's ends (an ancestor of a
    good commit): the log contradicts itself'. Now: not a commit in the repository."""
    repo = tmp_path / "r"
    shas = counter_repo(repo, 4)
    log = tmp_path / "u.log"
    log.write_text(_log(repo, shas, [f"observe {shas[0]} pass", f"observe {shas[-1]} fail", f"observe {'d' * 40} fail"]))
    p = bisectk("replay", log)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stdout, p.stderr)
    assert "is not a commit in" in p.stderr and "contradicts" not in p.stderr, p.stderr
    # a commit of the repository outside the range is still the log contradicting itself
    log.write_text(_log(repo, shas[1:], [f"observe {shas[1]} pass", f"observe {shas[-1]} fail", f"observe {shas[0]} fail"]))
    p = bisectk("replay", log)
    assert p.returncode == 2 and "contradicts itself" in p.stderr, (p.returncode, p.stdout, p.stderr)
