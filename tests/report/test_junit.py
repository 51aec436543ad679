"""The triage's JUnit cases say what each step showed: a stopped step is never a passed one."""

import xml.etree.ElementTree as ET
from dataclasses import replace

from bisectk.engine.records import TriageRecord
from bisectk.report.junit import to_xml
from bisectk.report.triage import to_cases
from tests.report.records import bisect_record, diff_record, hunk


def triage(diff) -> TriageRecord:
    bis = bisect_record()
    return TriageRecord(command="triage", endpoints=bis.endpoints, ok=True, complete=diff.complete,
                        interrupted=diff.interrupted, runs=9, observations=9, wall_s=2.0, verdict="culprit found",
                        exit_code=1, bisect=bis.to_dict(), diff=diff.to_dict(), first_bad=bis.first_bad)


def test_an_interrupted_hunk_isolation_is_an_error_case_not_a_passed_one():
    """Ctrl-C during the triage's hunk isolation: its JUnit case was 'passed' (no element under
    it), where the terminal said 'search stopped (interrupted) ... no verdict yet'."""
    index = [hunk("k.py", 1, 2), hunk("k.py", 9, 10)]
    stopped = replace(diff_record(index, {"k.py:1-1"}), complete=False, interrupted=True, stop_reason="interrupted",
                      phase_runs={"endpoints": 2, "search": 3})
    root = ET.fromstring(to_xml("bisectk triage", to_cases(triage(stopped), "python k.py")))
    case = next(c for c in root.iter("testcase") if c.get("name") == "isolate hunks")
    error = case.find("error")
    assert error is not None, ET.tostring(case)
    assert error.get("message") == "search stopped (interrupted) after 3 search run(s): no verdict yet"
    assert root.find("testsuite").get("errors") == "1"
    done = ET.fromstring(to_xml("t", to_cases(triage(diff_record(index, {"k.py:1-1"})), "python k.py")))
    case = next(c for c in done.iter("testcase") if c.get("name") == "isolate hunks")
    assert case.find("error") is None and case.find("system-out") is not None


def test_a_hunk_isolation_that_never_had_a_result_is_an_error_case_not_left_out():
    """A CI timeout (SIGTERM) while the isolation verified its endpoints, or a root commit as the
    first bad: the terminal said 'hunk isolation stopped: ...', but the JUnit file had no case for
    the step at all, and every case but the subject's passed."""
    bis = bisect_record()
    for error, words in (("interrupted while it verified its endpoints (the runs so far are in the ledger)", "stopped"),
                         ("abc is a root commit: it has no parent", "could not start")):
        t = TriageRecord(command="triage", endpoints=bis.endpoints, ok=True, complete=words != "stopped",
                         interrupted=words == "stopped", runs=9, observations=9, wall_s=2.0,
                         verdict="culprit found", exit_code=1, bisect=bis.to_dict(), diff=None, diff_error=error,
                         first_bad=bis.first_bad)
        root = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py")))
        case = next((c for c in root.iter("testcase") if c.get("name") == "isolate hunks"), None)
        assert case is not None and case.find("error") is not None, to_xml("t", to_cases(t, "python k.py"))
        assert case.find("error").get("message") == f"hunk isolation {words}: {error}"
        assert root.find("testsuite").get("errors") == "1"


def test_the_cases_times_add_up_to_the_triage_not_the_endpoints_twice():
    """The bisect case's time was the bisection's whole wall time, the endpoints' runs included,
    which the endpoints case counts too: the suite's time exceeded the triage's."""
    index = [hunk("k.py", 1, 2)]
    t = triage(replace(diff_record(index, {"k.py:1-1"}), wall_s=1.0))
    bis_wall = t.bisect_record().wall_s
    suite = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py"))).find("testsuite")
    times = {c.get("name"): float(c.get("time")) for c in suite.iter("testcase")}
    assert times["endpoints"] > 0 and abs(times["endpoints"] + times["bisect"] - bis_wall) < 0.002, times
    assert abs(float(suite.get("time")) - (bis_wall + 1.0)) < 0.002, (suite.get("time"), times)



def test_endpoint_runs_answered_from_the_ledger_take_no_time_in_the_suite():
    """A triage answered from the ledger (a CI job's retry, the next job with the cache restored)
    took 0.4 s, but its `endpoints` case took the time those runs took when they ran (1.1 s) and
    the suite read 1.1 s: every case but that one is the wall time of this command."""
    from tests.report.records import check, ok
    from bisectk.outcome import FailKind, Outcome, Run
    index = [hunk("k.py", 1, 2)]
    t = triage(replace(diff_record(index, {"k.py:1-1"}), wall_s=0.01))
    hang = Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 2.0 s", duration_s=2.0, timed_out=True)
    e = check([ok()], [hang])
    e = replace(e, good=replace(e.good, cached=True), bad=replace(e.bad, cached=True))
    bis = replace(t.bisect_record(), endpoints=e, wall_s=0.3)
    t = replace(t, bisect=bis.to_dict(), endpoints=bis.endpoints, wall_s=0.4)
    suite = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py"))).find("testsuite")
    times = {c.get("name"): float(c.get("time")) for c in suite.iter("testcase")}
    assert times["endpoints"] == 0.0 and abs(times["bisect"] - 0.3) < 0.002, times
    assert float(suite.get("time")) <= t.wall_s, (suite.get("time"), times)

def test_the_failure_body_shows_a_subjects_markup_as_written_not_as_entities():
    """The failing case's body is the debug log, whose Markdown has `<` and `&` written as entities
    for Markdown viewers; the XML writer escaped them again, so every CI page read `Kernel Author
    &lt;ka@example.com&gt;` and a subject `a < b && c` as `a &lt; b &amp;&amp; c`."""
    index = [hunk("k.py", 1, 2)]
    t = triage(diff_record(index, {"k.py:1-1"}))
    bis = t.bisect_record()
    fb = {**bis.first_bad, "subject": "fix a < b && c ]]> \x1b[2J", "author": "K <k@x>"}
    t = replace(t, bisect=replace(bis, first_bad=fb).to_dict(), first_bad=fb)
    root = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py")))
    body = next(c for c in root.iter("testcase") if c.get("name") == "python k.py").find("failure").text
    assert "fix a < b && c ]]> \\x1b[2J" in body and "K <k@x>" in body, body
    assert "&lt;" not in body and "&amp;" not in body and "\x1b" not in body, body


def test_a_bisection_stopped_by_its_budget_says_so_not_ambiguous_or_interrupted():
    """`triage --max-runs 3`: the terminal said "search stopped (run budget spent) after 3 search
    run(s)", the JUnit bisect case "ambiguous or interrupted", which neither happened. A bisection
    left ambiguous by skips names its candidates instead."""
    bis = bisect_record()
    stopped = replace(bis, complete=False, interrupted=True, stop_reason="run budget spent", first_bad=None,
                      candidates=tuple(bis.candidates) * 3, phase_runs={"endpoints": 2, "search": 3})
    skipped = replace(bis, complete=False, first_bad=None, candidates=tuple(bis.candidates) * 2)
    messages = []
    for rec in (stopped, skipped):
        t = replace(triage(diff_record([hunk("k.py", 1, 2)], {"k.py:1-1"})), bisect=rec.to_dict(), diff=None,
                    first_bad=None, complete=False, exit_code=2, verdict="inconclusive")
        root = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py")))
        case = next(c for c in root.iter("testcase") if c.get("name") == "bisect")
        messages.append(case.find("error").get("message"))
    assert messages == ["search stopped (run budget spent) after 3 search run(s): no verdict yet",
                        "ambiguous: the first bad commit is one of 2 candidates"], messages


def test_inverted_endpoints_fail_the_subjects_case_with_the_problem_not_with_pass():
    """--good fails and --bad passes (swapped refs): the case named after the subject failed with
    the message "PASS", what the bad endpoint did; a CI page read "python t.sh failed: PASS"."""
    from tests.report.records import check, ok, wrong
    inverted = replace(check([wrong()], [ok()]), problem="endpoints are inverted: good fails and bad passes")
    bis = replace(bisect_record(), endpoints=inverted, ok=False, complete=False, first_bad=None)
    t = replace(triage(diff_record([hunk("k.py", 1, 2)], {"k.py:1-1"})), endpoints=inverted, ok=False,
                bisect=bis.to_dict(), diff=None, first_bad=None, complete=False, exit_code=2, verdict="inconclusive")
    root = ET.fromstring(to_xml("bisectk triage", to_cases(t, "python k.py")))
    failure = next(c for c in root.iter("testcase") if c.get("name") == "python k.py").find("failure")
    assert failure.get("message") == "inconclusive: endpoints are inverted: good fails and bad passes", failure.attrib
