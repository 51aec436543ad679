"""What an incomplete search's line says stopped it: never 'interrupted' when nothing interrupted it."""

from types import SimpleNamespace

from bisectk.report.words import stop_reason_of, stopped_line


def rec(stop_reason="", advice=(), interrupted=False):
    return SimpleNamespace(stop_reason=stop_reason, advice=advice, interrupted=interrupted)


def test_the_reason_an_incomplete_search_gives():
    # a confirmation contradicted under the flake rule: incomplete, not interrupted
    unconfirmed = rec(advice=({"step": "stopped", "runs": 56, "reason": "unconfirmed"}, {"step": "intermittent"}))
    assert stopped_line(stop_reason_of(unconfirmed), 65).startswith("search stopped (unconfirmed) after 65")
    assert stop_reason_of(rec(stop_reason="run budget of 20 spent", advice=unconfirmed.advice)) == "run budget of 20 spent"
    assert stop_reason_of(rec(interrupted=True)) == "interrupted"
    assert stop_reason_of(rec()) == "incomplete"


def test_an_incomplete_answer_is_not_called_interrupted_in_the_debug_log_status():
    """The debug log's status line said 'Open (interrupted)' for an ablation or a diff that ended
    unconfirmed with nothing interrupting it, where the terminal said 'unconfirmed'; the record's
    stop_reason (the JSON's) was '' there. Both now come from records.stop_reason_of."""
    from bisectk.engine.records import stop_reason_of as reason
    from bisectk.report.ablation import status_words
    advice = ({"step": "stopped", "runs": 56, "reason": "unconfirmed"},)
    assert reason("", advice, False) == "unconfirmed" and reason("", (), True) == "interrupted"
    ablation = SimpleNamespace(complete=False, stop_reason="", advice=advice, interrupted=False, culprits=("a",),
                               unresolved_factors=(), sets=(), interaction=False)
    assert status_words(ablation).startswith("Open (unconfirmed)"), status_words(ablation)


def test_the_stuck_table_stays_aligned_when_a_thread_name_holds_a_control_character():
    """A subject names a thread with an ESC in it: the console writes it `\\x1b` (4 columns) after
    the table was padded by its raw length (1), pushing that row's columns 3 places right."""
    from bisectk.report.stuck import terminal_lines
    from bisectk.stuck import Group, Snapshot
    snap = Snapshot((Group("thr\x1b[31m", 1, "k.py:5 w", "ev.wait()", "event wait", "process 1 (python3)"),
                     Group("MainThread", 1, "k.py:8 <module>", "t.join()", "join", "process 1 (python3)")),
                    ("py-spy",), 0.02)
    facts = {"bad": {"label": "the bad endpoint", "snapshot": snap.to_dict(), "progress": "", "at_s": 1.0},
             "culprit": None, "others": [], "good_last_point": None, "bad_hung": True, "same": None}
    rows = [line for line in terminal_lines(facts) if "k.py:" in line]
    assert len(rows) == 2 and "\x1b" not in "".join(rows), rows
    assert rows[0].index("k.py:5") == rows[1].index("k.py:8"), rows


def test_a_factor_value_with_a_newline_stays_on_its_progress_line():
    """A string factor's value holding a newline broke the progress line (and the command's first
    line, 'N differences between good and bad: ...') in two: one-line text writes it escaped, as
    `--set` reads it back; a value without control characters is written as substituted."""
    from bisectk.report.terminal import fmt_config
    from bisectk.specvalues import one_line
    assert fmt_config({"m": "bad\nnew", "k": True}, {"m": "ok", "k": False}) == 'm="bad\\nnew" k=true'
    assert one_line("ok|<b>") == "ok|<b>" and one_line("1") == "1" and one_line(2) == "2"


def test_a_bisections_attempts_are_named_by_the_phase_that_made_them():
    """The --bad commit run again by the search was called 'endpoint (bad)', and the first bad
    commit run once more to read where it hangs was one more 'bisect' step."""
    from bisectk.engine.bisect import attempts_in_run_order
    from bisectk.engine.oracle import Trial
    from bisectk.outcome import Outcome
    from tests.report.records import ok, wrong
    graph = SimpleNamespace(good_sha="g" * 40, bad_sha="b" * 40, merge_bases=("m" * 40,))
    made = [("g" * 40, ok(), "endpoints"), ("b" * 40, wrong(), "endpoints"), ("m" * 40, ok(), "merge bases"),
            ("c" * 40, wrong(), "search"), ("b" * 40, wrong(), "search"), ("c" * 40, wrong(), "hang picture")]
    trials = SimpleNamespace(space=SimpleNamespace(commits=graph), trials=[
        Trial(key, key[:10], 0, run, run.outcome, False, phase) for key, run, phase in made])
    assert [a.phase for a in attempts_in_run_order(trials, "check")] == [
        "endpoint (good)", "endpoint (bad)", "merge base", "bisect", "bisect", "hang picture"]
    assert all(a.outcome in {o.value for o in Outcome} for a in attempts_in_run_order(trials, "check"))


def test_one_fix_of_two_differences_is_said_as_both_reverted_not_each():
    """Two failing sets, {leader_sync} and {release_before_read}: bad passed with both reverted
    at once, and still failed with either alone; 'fix: both ... (bad passed with each reverted)'
    and 'bad passed with each of these reverted' said the opposite."""
    from bisectk.report.ablation import sets_lines
    from bisectk.report.advice import WORDS
    rec = SimpleNamespace(sets=({"members": ["leader_sync"]}, {"members": ["release_before_read"]}),
                          fixes=(["leader_sync", "release_before_read"],), sets_complete=True, complete=True)
    assert sets_lines(rec)[-1] == "fix: both leader_sync and release_before_read (bad passed with both reverted)"
    assert WORDS["fixes"]({"fixes": [["leader_sync", "release_before_read"]]}).endswith(
        "bad passed with these reverted together.")
    assert WORDS["fixes"]({"fixes": [["a"], ["b"]]}).endswith("bad passed with each of these reverted.")


def test_a_long_factor_name_is_folded_in_the_key_differences_table_never_cut():
    """On an 80-column terminal pipeline-two-culprits' table showed 'release_befor…': the one
    factor the reader had to type next was cut."""
    import io
    from rich.console import Console
    from bisectk.report.ablation import print_summary
    from tests.report.records import ablation, attempt
    rec = ablation(["leader_sync", "release_before_read_with_a_long_name"], ["release_before_read_with_a_long_name"],
                   [attempt(1, ["release_before_read_with_a_long_name"], "fail")])
    buf = io.StringIO()
    print_summary(Console(file=buf, width=60, color_system=None), rec)
    cells = "".join(line.split("│")[1].strip() for line in buf.getvalue().splitlines() if line.startswith("│"))
    assert "release_before_read_with_a_long_name" in cells and "…" not in buf.getvalue(), buf.getvalue()


def test_a_terminal_too_narrow_for_the_key_differences_table_still_shows_every_cell():
    """At COLUMNS=20 (a split pane) rich gave five of the ablation table's six columns no width:
    the factor names, both values and 'FAILS' were gone, only the verdicts were left, one letter a
    line; at 24, 'removed from bad' was gone. `check`'s table of three columns the same at 10.
    Too narrow for a table, each row is a line of its own."""
    import io
    from dataclasses import replace
    from rich.console import Console
    from bisectk.engine.records import CheckRecord
    from bisectk.report.ablation import print_summary
    from bisectk.report.text import print_check
    from tests.report.records import ablation, attempt, check, ok, subject, wrong
    rec = ablation(["depth", "producer_phase"], ["producer_phase"], [attempt(1, ["producer_phase"], "fail")])
    rec = replace(rec, differences=(rec.differences[0], {**rec.differences[1], "alone": "FAILS", "removed": "passes"}))
    for width in (20, 24, 30):
        buf = io.StringIO()
        print_summary(Console(file=buf, width=width, color_system=None), rec)
        flat = " ".join(buf.getvalue().split())
        assert "producer_phase: good 0, bad 1, flipped alone on good FAILS, removed from bad passes, verdict CULPRIT" in flat, \
            buf.getvalue()
        assert "depth: good 0, bad 1" in flat
    checked = CheckRecord(command="check", endpoints=check([ok()], [wrong()]), ok=True, complete=True, interrupted=False,
                          runs=2, observations=2, wall_s=0.1, subject=subject(["n", "depth"]))
    buf = io.StringIO()
    print_check(Console(file=buf, width=10, color_system=None), checked)
    assert "depth: good 0, bad 1" in " ".join(buf.getvalue().split()), buf.getvalue()


def test_a_replay_that_stops_early_counts_its_candidates_in_words():
    """`bisectk replay` of a stopped bisection's log said 'not determined yet; 1 candidates remain'."""
    import io

    from rich.console import Console

    from bisectk.report.text import print_replay
    one = {"sha": "c" * 40, "subject": "barrier: count arrivals", "index": 3}
    for candidates, said in (((one,), "not determined yet; 1 candidate remains"),
                             ((one, one, one), "not determined yet; 3 candidates remain")):
        buf = io.StringIO()
        print_replay(Console(file=buf, width=200), SimpleNamespace(contradiction=None, first_bad=one, complete=False,
                                                                   candidates=candidates, terms=("good", "bad"), next=one))
        assert buf.getvalue().splitlines()[0] == said


def test_a_replay_whose_skips_leave_candidates_says_the_answer_is_one_of_them():
    """A complete log whose skips left two commits apart (bisect: "first bad commit is one of 2
    candidates", exit 1; git: "The first bad commit could be any of") replayed as 'not determined
    yet; 2 candidates remain', naming neither and no commit to test: as if the log stopped early."""
    import io

    from rich.console import Console

    from bisectk.report.text import print_replay
    a = {"sha": "a" * 40, "subject": "barrier: name the count", "index": 3}
    b = {"sha": "b" * 40, "subject": "barrier: count arrivals", "index": 4}
    buf = io.StringIO()
    print_replay(Console(file=buf, width=200), SimpleNamespace(contradiction=None, first_bad=None, complete=True,
                                                               candidates=(a, b), terms=("good", "bad"), next=None))
    assert buf.getvalue().splitlines() == ["first bad commit is one of 2 candidates:",
                                           f"  {a['sha']} {a['subject']}", f"  {b['sha']} {b['subject']}"]


def test_the_debug_log_of_a_removal_among_thousands_of_factors_compares_each_factor_once():
    """A 30,000-factor ablation's debug log took 7 s before a picture was drawn: each removal
    attempt (bad minus one factor) named what it reverted by scanning the 29,999 applied factors
    once per factor, twice. Counted: comparisons of factor names while the log is built."""
    from bisectk.report.ablation import to_debuglog
    from tests.report.records import ablation, attempt

    compared = [0]

    class Name(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared[0] += 1
            return str.__eq__(self, other)

    n = 1500
    factors = [Name(f"f{k}") for k in range(n)]
    culprit = factors[700]
    rec = ablation(factors, [culprit], [
        attempt(1, factors[:n // 2], "fail"),
        attempt(2, [culprit], "fail", phase="split-check"),
        attempt(3, [f for f in factors if f is not culprit], "pass", phase="confirm-removal")])
    compared[0] = 0
    log = to_debuglog(rec)
    assert log.attempts[2].hypothesis.startswith("Reverting f700 from bad fixes it")
    assert log.attempts[2].conclusion.startswith("Bad passes without f700")
    assert compared[0] <= 10 * n, compared[0]


def test_an_ablations_first_line_names_the_first_differences_and_counts_the_rest():
    """A spec of 30,000 factors printed every one of them on the command's first line (400 kB);
    a spec of a few still lists them all, as the README shows."""
    from bisectk.report.terminal import differences_line
    few = ["depth", "seed"]
    assert differences_line("toy", {"depth": 4, "seed": 0}, {"depth": 2, "seed": 1}, few) == \
        "toy: 2 differences between good and bad: depth 4 -> 2, seed 0 -> 1"
    many = [f"f{k}" for k in range(30_000)]
    line = differences_line("big", dict.fromkeys(many, 0), dict.fromkeys(many, 1), many)
    assert line.startswith("big: 30000 differences between good and bad: f0 0 -> 1, f1 0 -> 1, ")
    assert line.endswith(", f11 0 -> 1, +29988 more") and len(line) < 300


def test_a_huge_ablations_terminal_table_keeps_every_factor_that_matters_and_counts_the_cleared():
    """30,000 factors printed 30,000 rows (28 s, the answer scrolled away). Past TABLE_ROWS the
    table keeps the culprits and fills with cleared factors, then counts the rest; the debug log
    keeps every row."""
    import io

    from rich.console import Console

    from bisectk.report.ablation import TABLE_ROWS, print_summary, to_debuglog
    from tests.report.records import ablation, attempt
    factors = [f"f{k}" for k in range(3000)]
    culprits = ["f2999", "f1500"]
    rec = ablation(factors, culprits, [attempt(1, culprits, "fail")])
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200, color_system=None), rec)
    text = buf.getvalue()
    shown = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert "f2999" in shown and "f1500" in shown and len(shown) == TABLE_ROWS + 1, shown[-3:]
    assert shown[-1] == f"... {3000 - TABLE_ROWS} more", shown[-1]
    assert f"{3000 - TABLE_ROWS} more factors were cleared" in text
    assert len(to_debuglog(rec).differences) == 3000
    small = ablation(factors[:TABLE_ROWS], ["f3"], [attempt(1, ["f3"], "fail")])
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200, color_system=None), small)
    assert "more factors were cleared" not in buf.getvalue()
    assert sum(line.startswith("│") for line in buf.getvalue().splitlines()) == TABLE_ROWS


def test_checks_table_lists_fifty_factors_and_counts_the_rest():
    """`check` of a 30,000-factor spec printed 30,000 rows before the endpoints' verdicts."""
    import io

    from rich.console import Console

    from bisectk.engine.records import CheckRecord
    from bisectk.report.text import print_check
    from tests.report.records import check, ok, subject, wrong
    rec = CheckRecord(command="check", endpoints=check([ok()], [wrong()]), ok=True, complete=True, interrupted=False,
                      runs=2, observations=2, wall_s=0.1, subject=subject([f"f{k}" for k in range(120)]))
    buf = io.StringIO()
    print_check(Console(file=buf, width=200, color_system=None), rec)
    names = [line.split("│")[1].strip() for line in buf.getvalue().splitlines() if line.startswith("│")]
    assert names[:50] == [f"f{k}" for k in range(50)] and names[50:] == ["... 70 more"], names[-3:]


def test_an_unconfirmed_answer_says_what_did_not_hold_not_resume_to_finish():
    """An answer whose confirmation was contradicted said 'Resume to finish': a resume runs the
    same confirmation again, a new roll of the same dice. It names what did not hold, and --flaky
    (or, under --flaky, more endpoint runs)."""
    from bisectk.report.advice import WORDS
    step = {"step": "stopped", "runs": 123, "reason": "unconfirmed", "shown": ["f3"], "unsure": [], "of": 8,
            "contradicted": {"config": ["f7"], "got": "pass", "two_rate": False}}
    text = WORDS["stopped"](step)
    assert "Resume" not in text and "f7 passed when run again, where the answer needs it to fail" in text
    assert "--flaky" in text
    step["contradicted"] = {"config": ["f7"], "got": "unresolved", "two_rate": True}
    text = WORDS["stopped"](step)
    assert "f7 gave no clear verdict" in text and "--calibrate-runs" in text and "--flaky weighs" not in text
    del step["contradicted"]
    assert WORDS["stopped"](step).endswith("Resume to finish.")     # a stop: resuming does finish it


def test_an_empty_string_value_is_shown_as_one():
    """A factor set to "" on one side (an environment variable unset there, as `bisectk env --diff`
    writes it) was printed as nothing: `subj_x  -> 1` on the first line, a blank table cell."""
    import dataclasses
    import io

    from rich.console import Console

    from bisectk.report.ablation import print_summary
    from bisectk.report.terminal import differences_line
    from tests.report.records import ablation, attempt
    assert differences_line("toy", {"x": ""}, {"x": "1"}, ["x"]) == 'toy: 1 difference between good and bad: x "" -> 1'
    rec = ablation(["x"], ["x"], [attempt(1, ["x"], "fail")])
    rec = dataclasses.replace(rec, differences=({**rec.differences[0], "good": ""},))
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200, color_system=None), rec)
    (row,) = [line for line in buf.getvalue().splitlines() if line.startswith("│")]
    assert [c.strip() for c in row.split("│")[1:4]] == ["x", '""', "1"], row


def test_an_ablations_runs_line_keeps_the_breakdown_out_of_the_ledgers_share():
    """27 runs made now and the 2 endpoint runs answered from the ledger printed `2 answered from
    the ledger (...; 27 by the search, 2 endpoint runs)`: 27 of the 2 from the ledger."""
    import dataclasses
    import io

    from rich.console import Console

    from bisectk.report.ablation import print_summary
    from tests.report.records import ablation, attempt

    def runs_line(executed, observations):
        rec = dataclasses.replace(ablation(["x"], ["x"], [attempt(1, ["x"], "fail")]), runs=executed,
                                  observations=observations, phase_runs={"endpoints": 2, "search": 27})
        buf = io.StringIO()
        print_summary(Console(file=buf, width=400, color_system=None), rec)
        return next(line for line in buf.getvalue().splitlines() if line.startswith("runs: "))
    mixed = runs_line(27, 29)
    assert mixed.startswith("runs: 27 executed, 2 answered from the ledger (") and "; 27 by the search" not in mixed
    assert "), 29 in all (27 by the search, 2 endpoint runs), wall" in mixed, mixed
    assert "(27 by the search, 2 endpoint runs), wall" in runs_line(29, 29)
    every = runs_line(0, 29)
    assert every.startswith("runs: 0 executed, 29 answered from the ledger (") and "; 27 by the search, 2 endpoint runs)" in every


def test_an_ablations_debug_log_summary_says_how_many_in_all_before_the_breakdown():
    """The Markdown summary had the terminal line's old fault: `27 runs executed, 2 answered from
    the ledger (...) (27 by the search, 2 endpoint runs; ...)`, two parentheses, the second
    counting runs the first did not."""
    import dataclasses

    from bisectk.report.ablation import to_debuglog
    from tests.report.records import ablation, attempt

    def summary(executed, observations):
        rec = dataclasses.replace(ablation(["x"], ["x"], [attempt(1, ["x"], "fail")]), runs=executed,
                                  observations=observations, phase_runs={"endpoints": 2, "search": 27})
        return next(line for line in to_debuglog(rec).summary if "executed" in line)
    mixed = summary(27, 29)
    assert "), 29 in all (27 by the search, 2 endpoint runs; strategy" in mixed, mixed
    assert "in all" not in summary(29, 29) and "in all" not in summary(0, 29)


def test_a_diffs_terminal_output_ends_with_its_next_steps_as_ablates_does():
    """The record's next steps were in --json and --report only: diff's terminal printed none,
    where ablate's ends with numbered `next N.` lines."""
    import io
    from dataclasses import replace
    from rich.console import Console
    from bisectk.report.advice import next_steps
    from bisectk.report.diff import print_summary
    from tests.report.records import diff_record, hunk
    index = [hunk("a.py", 3, 4), hunk("b.py", 7, 9)]
    rec = replace(diff_record(index, ["a.py:3-3"]),
                  advice=({"step": "alone", "culprit": "a.py:3-3"}, {"step": "confirm_lines"}))
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200, color_system=None), rec)
    lines = buf.getvalue().splitlines()
    steps = next_steps(rec)
    assert len(steps) == 2
    assert lines[-2:] == [f"next 1. {steps[0]}", f"next 2. {steps[1]}"]
    assert lines[-3].startswith("runs: ")


def _run_text(runs) -> str:
    import io

    from rich.console import Console

    from bisectk.engine.records import RunRecord
    from bisectk.outcome import Verdict
    from bisectk.report.text import print_run
    from tests.report.records import subject
    rec = RunRecord(command="run", endpoints=None, ok=True, complete=True, interrupted=False, runs=len(runs),
                    observations=len(runs), wall_s=1.0, subject=subject(["x"]), config={"x": 1},
                    verdict=Verdict.fold(runs).to_dict())
    buf = io.StringIO()
    print_run(Console(file=buf, width=200, color_system=None), rec)
    return buf.getvalue()


def test_a_repeated_runs_verdict_says_when_its_runs_did_not_all_end_alike():
    """`run --repeat 10` of a subject that crashed 8 times and gave a wrong result twice said
    `FAIL crash (SIGABRT) [10/10 failed]`: ten crashes, in words. One that passed 3 times and
    then skipped (exit 125), which ends the repeats, said `PASS` at exit 0, as if the 10 runs asked
    had passed. The runs are counted by how each ended."""
    from bisectk.outcome import FailKind, Outcome, Reason, Run
    from tests.report.records import ok, wrong
    crash = Run(Outcome.FAIL, FailKind.CRASH, signature="SIGABRT", duration_s=0.1, failed=("SIGABRT",))
    text = _run_text([crash, wrong(), crash, crash])
    assert "runs: 3 crash (SIGABRT), 1 wrong result (rel_err <= 0.0001 violated)" in text, text
    skip = Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature="skip (exit 125)", duration_s=0.1)
    text = _run_text([ok(), ok(), ok(), skip])
    assert "verdict: PASS" in text and "runs: 3 pass, 1 unresolved build (skip (exit 125))" in text, text
    assert "no run was made after it" in text, text
    # runs that ended alike, or passes beside one failure ('[k/n failed]' says it), add no line
    assert "runs:" not in _run_text([crash, crash]) and "runs:" not in _run_text([ok(), wrong(), wrong(0.9)])
