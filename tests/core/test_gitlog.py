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
