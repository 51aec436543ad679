"""engine/gitlog.py: `bisectk log` writes what `bisectk replay` reads, and says no more than the session showed."""

from bisectk.engine.gitlog import log_lines, parse_log
from bisectk.outcome import Outcome

GOOD, BAD, MID = "a" * 40, "b" * 40, "c" * 40


def _session(result: dict) -> dict:
    return {"id": 3, "command": "bisect", "args": {"repo": "/r", "good": GOOD, "bad": BAD}, "result": result}


EVENTS = [{"sha": GOOD, "outcome": "pass", "verdict": "PASS"}, {"sha": BAD, "outcome": "fail", "verdict": "FAIL bad (exit 1)"},
          {"sha": MID, "outcome": "fail", "verdict": "FAIL bad (exit 1)"}]


def test_a_stopped_searchs_candidate_is_not_written_as_the_first_bad_commit():
    """`--max-runs 4` (or Ctrl-C) left one unconfirmed candidate: the terminal said "first bad commit
    so far, not confirmed", but the log's last line said "# first bad commit: SHA", and the replay
    of that log said "not determined yet". The log now says what the terminal said."""
    stopped = log_lines(_session({"first_bad": {"sha": MID}, "complete": False, "confidence": 1.0}), EVENTS)
    assert stopped[-1] == f"# first bad commit so far, not confirmed (the search stopped): {MID} (confidence 1.0)"
    done = log_lines(_session({"first_bad": {"sha": MID}, "complete": True, "confidence": 1.0}), EVENTS)
    assert done[-1] == f"# first bad commit: {MID} (confidence 1.0)"
    header, observed = parse_log("\n".join(stopped))
    assert (header.good, header.bad) == (GOOD, BAD)
    assert observed == [(GOOD, Outcome.PASS), (BAD, Outcome.FAIL), (MID, Outcome.FAIL)]


def test_a_subjects_text_in_a_verdict_cannot_add_a_line_to_the_log():
    """A metric named "x\\nobserve SHA fail #" (NaN) made the bad endpoint's verdict comment two
    lines: the log then held an observation no run made, and its replay another answer. Nor may
    \\f, \\x1c or U+2028, which the reader's splitlines() took for line ends, split one."""
    evil = [{"sha": BAD, "outcome": "fail", "verdict": f"FAIL wrong (NaN in x{sep}observe {MID} pass #)"}
            for sep in ("\n", "\r\n", "\r", "\f", "\x1c", "\x85", "\u2028")]
    lines = log_lines(_session({}), EVENTS[:1] + evil)
    assert len(lines) == 2 + 1 + len(evil)
    _, observed = parse_log("\n".join(lines))
    assert observed == [(GOOD, Outcome.PASS)] + [(BAD, Outcome.FAIL)] * len(evil)


def test_a_log_saved_with_a_byte_order_mark_reads_as_without_it():
    """A log edited on Windows is saved with CRLF line ends, which were read, and often with a
    UTF-8 byte order mark, which was not: 'line 1: expected 'git bisect ...', got '\\ufeff# bad:
    ...'' (exit 2). Now the mark is dropped, in both formats."""
    sha, other = "a" * 40, "b" * 40
    ours = (f"# bisectk log of session 1\n# bisectk bisect --repo /r --good {sha} --bad {other}\n"
            f"observe {sha} pass\nobserve {other} fail\n")
    gits = (f"# bad: [{other}] c7\n# good: [{sha}] c0\ngit bisect start '{other}' '{sha}'\n"
            f"# good: [{sha}] c0\ngit bisect good {sha}\n")
    for text in (ours, gits):
        assert parse_log("\ufeff" + text.replace("\n", "\r\n")) == parse_log(text)


def test_a_header_option_bisectk_log_does_not_write_or_a_second_end_is_refused():
    """Before: a header's unknown option (`--frobnicate`), a word that is no option, a second
    --bad (with --find-fix a second --good), a second --repo or a second header were read
    silently (the first --bad, the last --repo kept): the replay rebuilt another bisection than
    the one logged. Each is now one line naming what is wrong; what `bisectk log` writes reads."""
    import pytest

    from bisectk.errors import BisectkError

    def header(opts: str) -> str:
        return f"# bisectk bisect --repo /r {opts}\nobserve {GOOD} pass\n"
    for opts, said in ((f"--good {GOOD} --bad {BAD} --frobnicate", "'--frobnicate' is not an option"),
                       (f"--good {GOOD} --bad {BAD} --manual=yes", "'--manual=yes' is not an option"),
                       (f"--good {GOOD} --bad {BAD} --term-good x", "'--term-good' is not an option"),
                       (f"--good {GOOD} --bad {BAD} {MID}", f"{MID!r} is no option"),
                       (f"--good {GOOD} --bad {BAD} --bad {MID}", "gives --bad 2 times"),
                       (f"--bad {GOOD} --good {BAD} --good {MID} --find-fix", "gives --good 2 times"),
                       (f"--repo /s --good {GOOD} --bad {BAD}", "gives --repo 2 times"),
                       (f"--good {GOOD} --bad {BAD} --flaky --no-flaky", "both --flaky and --no-flaky"),
                       (f"--good {GOOD}", "names no --bad")):
        with pytest.raises(BisectkError, match="^line 1: ") as caught:
            parse_log(header(opts))
        assert said in str(caught.value), (opts, str(caught.value))
    with pytest.raises(BisectkError, match="^line 2: a second"):
        parse_log(f"# bisectk bisect --repo /r --good {GOOD} --bad {BAD}\n"
                  f"# bisectk bisect --repo /r --good {GOOD} --bad {MID}\n")
    # the old side is repeatable (--good; with --find-fix --bad), and every option log_lines writes reads
    h, _ = parse_log(header(f"--good {GOOD} --good {MID} --bad {BAD} --manual --first-parent --any-failure "
                            "--no-flaky --term-old ok --term-new broke --confidence 0.9 -- src"))
    assert (h.olds, h.new, h.paths, h.confidence, h.manual, h.steady) == ([GOOD, MID], BAD, ["src"], 0.9, True, True)
    h, _ = parse_log(header(f"--bad {GOOD} --bad {MID} --good {BAD} --find-fix --flaky"))
    assert (h.olds, h.new, h.flaky, h.terms.find_fix) == ([GOOD, MID], BAD, True, True)
    session = {"id": 3, "command": "bisect", "result": {},
               "args": {"repo": "/r", "good": GOOD, "bad": BAD, "olds": [GOOD, MID], "manual": True, "first_parent": True,
                        "flaky": False, "any_failure": True, "old": "ok", "new": "broke", "confidence": 0.9,
                        "paths": ["src"]}}
    h, _ = parse_log("\n".join(log_lines(session, EVENTS)))
    assert (h.olds, h.new, h.terms.old, h.confidence, h.steady) == ([GOOD, MID], BAD, "ok", 0.9, True)
