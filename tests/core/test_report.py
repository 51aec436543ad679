import io
import time
import xml.etree.ElementTree as ET

from rich.console import Console

from bisectk.events import Note, PhaseStarted, RunFinished, RunStarted
from bisectk.outcome import FailKind, Outcome, Run
from bisectk.report.debuglog import AttemptEntry, DebugLog, short_environment
from bisectk.report.junit import Case, to_xml
from bisectk.report.terminal import ProgressLines, TerminalReporter, fmt_config


def test_terminal_reporter_shows_elapsed_and_verdicts():
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    rep = TerminalReporter(console, reference={"depth": 4, "phase": 1})
    rep(PhaseStarted("endpoints", "verifying"))
    rep(RunStarted("hybrid", {"depth": 4, "phase": 0}, 0, 2.0))
    time.sleep(0.4)
    rep(RunFinished("hybrid", {"depth": 4, "phase": 0}, 0, Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 2.0 s", duration_s=2.0)))
    rep(Note("done"))
    text = console.file.getvalue()
    assert "running hybrid phase=0 (run 1)" in text and "watchdog 2 s" in text
    assert "FAIL hang (timeout after 2.0 s)" in text and "== endpoints" in text and "done" in text
    assert fmt_config({"a": 1, "b": 2}, {"a": 1, "b": 3}) == "b=2"


def test_status_line_is_one_line_at_80_columns_and_never_a_passed_limit():
    """Issue 21: at 80 columns the live status line wrapped, and a run whose watchdog follows its
    progress showed '1.3 s / watchdog 1.0 s' (the rule for a silent subject, read as a limit
    already passed). Now: one line, cut with an ellipsis, and the watchdog in true words."""
    from rich.spinner import Spinner

    from bisectk.report.terminal import _Running
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    config = {f"factor_{i}": i for i in range(8)}
    running = _Running("hybrid " + fmt_config(config), 0, 1.0, follows_progress=True)
    running.start -= 1.3
    lines = console.render_lines(Spinner("dots", running), console.options, pad=False)
    text = ["".join(seg.text for seg in line).rstrip() for line in lines]
    assert len(text) == 1 and len(text[0]) <= 80 and text[0].endswith("…"), text
    assert "1.3 s (watchdog follows progress): running hybrid factor_0=0" in text[0]
    assert "watchdog 1.0 s" not in text[0] and "watchdog 1 s" not in text[0]
    fixed = _Running("good", 0, 120.0)
    assert fixed.__rich__().plain.endswith("s (watchdog 120 s): running good (run 1)")


def test_progress_lines_for_a_log_one_line_per_run():
    """Issue 16: when stderr is not a terminal, progress is plain lines (label, what differs,
    verdict, time or 'from the ledger'), and a run that may wait long is announced first."""
    stream = io.StringIO()
    rep = ProgressLines(stream, reference={"depth": 4, "phase": 1})
    rep(PhaseStarted("endpoints", "verifying"))
    rep(RunStarted("good", {"depth": 4, "phase": 1}, 0, 120.0))      # the uncalibrated cap: announced
    rep(RunFinished("good", {"depth": 4, "phase": 1}, 0, Run(Outcome.PASS, duration_s=0.25)))
    rep(RunStarted("hybrid", {"depth": 4, "phase": 0}, 0, 1.5))      # calibrated: no start line
    rep(RunFinished("hybrid", {"depth": 4, "phase": 0}, 0,
                    Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 1.5 s", duration_s=1.5)))
    rep(RunFinished("hybrid", {"depth": 2, "phase": 1, "__hunks__": "a.py:1\nb.py:2"}, 1,
                    Run(Outcome.PASS, duration_s=0.1), cached=True))
    assert stream.getvalue().splitlines() == [
        "== endpoints verifying",
        "  ... running good (run 1); watchdog 120 s",
        "  PASS  good  (0.25 s)",
        "  FAIL hang (timeout after 1.5 s)  hybrid phase=0  (1.50 s)",
        "  PASS  hybrid depth=2  (from the ledger)",
    ]


def test_a_signature_with_a_newline_is_still_one_progress_line():
    """A metric named "x\\n# heading" (NaN) gave the run's progress line a second line."""
    stream = io.StringIO()
    ProgressLines(stream)(RunFinished("bad", {}, 0, Run(Outcome.FAIL, FailKind.WRONG, signature="NaN in x\n# heading\r\nz",
                                                         duration_s=0.5)))
    assert stream.getvalue() == "  FAIL wrong (NaN in x # heading z)  bad  (0.50 s)\n"


def test_debuglog_has_the_protocol_sections():
    log = DebugLog("k: hang", "Resolved", "consumer waits forever",
                   {"gpu": {"devices": [{"name": "NVIDIA H200", "compute_capability": "9.0"}], "driver": "580"},
                    "python": {"version": "3.12"}, "packages": {"torch": "2.11"}, "env": {"CUDA_LAUNCH_BLOCKING": "1"}},
                   differences_header=["factor", "good", "bad"], differences=[["stages", "4", "1 | 2"]],
                   attempts=[AttemptEntry("phase", "h", "w", "r", "c")], next_steps=["look at the phase"])
    md = log.to_markdown()
    for part in ("### k: hang", "**Status:** Resolved", "**Environment:** NVIDIA H200 (sm_90)", "CUDA_LAUNCH_BLOCKING=1",
                 "| stages | 4 | 1 \\| 2 |", "#### Attempt 1: phase", "**Hypothesis:** h", "**Conclusion:** c",
                 "#### What to Try Next", "1. look at the phase", "#### Environment (captured)"):
        assert part in md, part
    assert short_environment({}) == "no GPU"


def test_junit_parses_and_counts():
    xml = to_xml("s", [Case("a", "passed", details="ok"), Case("b <&>", "failed", message="m \"q\"", details="d"),
                       Case("c", "error", message="e")])
    suite = ET.fromstring(xml.split("\n", 1)[1]).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    failed = [c for c in suite if c.find("failure") is not None]
    assert failed[0].get("name") == "b <&>" and failed[0].find("failure").get("message") == 'm "q"'


def test_watchdog_limit_is_rounded_like_other_times():
    """Review j: the live status line printed 'watchdog 1.21282 s' (a calibrated limit shown
    with :g, six significant digits). It is rounded to hundredths, as run times are; a whole
    number stays whole and a long limit is never in exponent form."""
    from bisectk.report.terminal import _Running, watchdog_words
    assert watchdog_words(1.21282, False) == "watchdog 1.21 s"
    assert watchdog_words(120.0, False) == "watchdog 120 s"
    assert watchdog_words(0.5, False) == "watchdog 0.5 s"
    assert watchdog_words(12345678.9, False) == "watchdog 12345678.9 s"
    assert "watchdog 1.21 s)" in _Running("good", 0, 1.21282).__rich__().plain
