import os

import pytest

from bisectk.outcome import FailKind, Outcome, Reason
from bisectk.run.classify import Judge, classify_build, classify_run, last_exception, parse_result, recognise
from bisectk.run.process import RawRun
from bisectk.specvalues import Threshold

JUDGE = Judge([Threshold("rel_err", max=1e-4)])


def raw(**kw):
    base = dict(started=True, exit_code=0, duration_s=0.1)
    base.update(kw)
    return RawRun(**base)


def test_pass_and_wrong_and_nan():
    assert classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 1e-7}\n'), JUDGE).outcome is Outcome.PASS
    r = classify_run(raw(stdout='noise\nBISECTK_RESULT {"rel_err": 2.7}\n'), JUDGE)
    assert (r.outcome, r.kind, r.signature) == (Outcome.FAIL, FailKind.WRONG, "rel_err 2.7 > 0.0001")
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": NaN}\n'), JUDGE)
    assert r.kind is FailKind.WRONG and r.signature == "NaN in rel_err"
    r = classify_run(raw(stdout='BISECTK_RESULT {"ok": false, "error": "row stripes 128-255 wrong"}'), Judge([]))
    assert r.kind is FailKind.WRONG and "row stripes" in r.signature


def test_a_subjects_own_error_is_one_line_of_at_most_200_characters():
    """`"ok": false` with a 1 MB or multi-line `error` became the signature whole: 45 MB of ledger,
    7 MB of debug log and 6 MB of progress for an 18-run ablation, and a `# heading` line of its
    own in every progress line. Now it is cut and flattened as an exit 125's reason is."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"ok": false, "error": "%s"}' % ("E" * 1_000_000)), Judge([]))
    assert r.kind is FailKind.WRONG and r.signature == "E" * 200
    r = classify_run(raw(stdout='BISECTK_RESULT {"ok": false, "error": "rows\\n# wrong\\r\\n  here"}'), Judge([]))
    assert r.signature == "rows # wrong here"


def test_a_metrics_name_is_one_line():
    """A NaN metric named "x\\nobserve SHA fail #" made its signature and its failure line two lines."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"x\\nobserve abc fail #": NaN, "v": 1}'), Judge([]))
    assert r.kind is FailKind.WRONG and r.signature == "NaN in x observe abc fail #", r.signature
    assert all("\n" not in c for c in r.failed), r.failed


def test_hang_crash_signals_and_cuda_texts():
    r = classify_run(raw(timed_out=True, exit_code=None, duration_s=2.1), JUDGE)
    assert (r.kind, r.signature) == (FailKind.HANG, "timeout after 2.1 s")
    r = classify_run(raw(exit_code=-11, signal="SIGSEGV"), JUDGE)
    assert (r.kind, r.signature) == (FailKind.CRASH, "SIGSEGV")
    for text, sig in [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "illegal memory access"),
        ("cudaErrorMisalignedAddress: misaligned address", "misaligned address"),
        ("CUDA_ERROR_INVALID_ADDRESS_SPACE: operation not supported on global/shared address space", "global/shared"),
        ("CUDA error: unspecified launch failure", "unspecified launch failure"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out of memory"),
        ("CUDA error: too many resources requested for launch", "too many resources"),
    ]:
        r = classify_run(raw(exit_code=1, stderr=text), JUDGE)
        assert r.kind is FailKind.CRASH and sig in r.signature and r.signature.startswith(("CUDA", "launch")), text



def test_cuda_errors_by_their_driver_names_as_the_cute_dsl_reports_them():
    """The CuTe DSL (nvidia-cutlass-dsl 4.8's DSLCudaRuntimeError) and cuda-python name a CUDA error
    by its enum, with no text of the error string: `error: CUDA_ERROR_ILLEGAL_ADDRESS (error code:
    700)`. Before, none of these was recognised: an illegal address and a misaligned address were
    both `exit 1`, one failure to a search hunting either. Now each is the CUDA error it names."""
    dsl = ("\x1b[91m\x1b[1merror:\x1b[0m {name} (error code: {code}) \n \n\n\x1b[0m\n"
           "  \x1b[94m= note:\x1b[0m error code {code}\n- \x1b[1mError name: {name}\n- Error code: {code}\n")
    for name, code, sig in [
        ("CUDA_ERROR_ILLEGAL_ADDRESS", 700, "CUDA: an illegal memory access was encountered"),
        ("CUDA_ERROR_MISALIGNED_ADDRESS", 716, "CUDA: misaligned address"),
        ("CUDA_ERROR_INVALID_ADDRESS_SPACE", 717, "CUDA: operation not supported on global/shared address space"),
        ("CUDA_ERROR_LAUNCH_FAILED", 719, "CUDA: unspecified launch failure"),
        ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 701, "CUDA: too many resources requested for launch"),
        ("CUDA_ERROR_ILLEGAL_INSTRUCTION", 715, "CUDA: an illegal instruction was encountered"),
        ("CUDA_ERROR_ASSERT", 710, "CUDA: device-side assert triggered"),
        ("CUDA_ERROR_LAUNCH_TIMEOUT", 702, "CUDA: the launch timed out"),
        ("cudaErrorIllegalAddress", 700, "CUDA: an illegal memory access was encountered"),
        ("CUresult.CUDA_ERROR_MISALIGNED_ADDRESS", 716, "CUDA: misaligned address"),
    ]:
        r = classify_run(raw(exit_code=1, stderr=dsl.format(name=name, code=code)), JUDGE)
        assert (r.kind, r.signature, r.failed) == (FailKind.CRASH, sig, (sig,)), name

def test_python_exception_signature_and_build_and_skip():
    tb = "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: tile index 7 out of range\n"
    r = classify_run(raw(exit_code=1, stderr=tb), JUDGE)
    assert r.signature == "ValueError: tile index 7 out of range"
    r = classify_run(raw(exit_code=1, stderr="cutlass.base_dsl.CompilerDiagnosticError: bad layout"), JUDGE)
    assert r.outcome is Outcome.UNRESOLVED and r.reason is Reason.BUILD
    r = classify_run(raw(exit_code=125), JUDGE)
    assert r.outcome is Outcome.UNRESOLVED and r.reason is Reason.BUILD
    r = classify_run(raw(started=False, error="cannot start 'x'"), JUDGE)
    assert r.reason is Reason.INFRA
    assert classify_build(raw(exit_code=0)) is None
    b = classify_build(raw(exit_code=2, stderr="error: sm_80 is not supported\n"))
    assert b.reason is Reason.BUILD and "sm_80" in b.signature


def test_build_timeout_signature_names_the_limit():
    """The measured duration overshoots the limit by the watchdog's poll and kill (1.1 s for a 1 s
    limit under load): the signature names the limit, the same for every build that hit it."""
    for took in (1.0, 1.14, 1.37):
        b = classify_build(raw(timed_out=True, duration_s=took), limit_s=1.0)
        assert b.reason is Reason.BUILD and b.signature == "build timed out after 1.0 s", b.signature


def test_missing_result_line_is_unresolved_when_judged():
    r = classify_run(raw(stdout="done\n"), JUDGE)
    assert r.outcome is Outcome.UNRESOLVED and r.reason is Reason.INFRA
    assert classify_run(raw(stdout="done\n"), Judge([])).outcome is Outcome.PASS


def test_slow_against_baseline():
    j = Judge([], slow_factor=2.0, slow_metric="time_ms", baseline=1.0)
    assert classify_run(raw(stdout='BISECTK_RESULT {"time_ms": 1.9}'), j).outcome is Outcome.PASS
    r = classify_run(raw(stdout='BISECTK_RESULT {"time_ms": 3.0}'), j)
    assert r.kind is FailKind.SLOW and "3.00x" in r.signature
    wall = Judge([], slow_factor=1.5, baseline=0.1)
    assert classify_run(raw(duration_s=0.5), wall).kind is FailKind.SLOW


def test_slow_of_a_throughput_is_a_lower_value():
    """slow_better = "higher" (TFLOP/s, GB/s): SLOW below baseline / slow_factor. Judged as a time,
    the throughput's regression passed and a speed-up was called SLOW."""
    j = Judge([], slow_factor=1.1, slow_metric="tflops", baseline=1000.0, higher=True)
    assert classify_run(raw(stdout='BISECTK_RESULT {"tflops": 1400}'), j).outcome is Outcome.PASS
    assert classify_run(raw(stdout='BISECTK_RESULT {"tflops": 950}'), j).outcome is Outcome.PASS
    r = classify_run(raw(stdout='BISECTK_RESULT {"tflops": 770}'), j)
    assert r.kind is FailKind.SLOW and r.signature == "tflops 770 < baseline 1e+03 / 1.1 (1.30x slower)", r.signature
    assert classify_run(raw(stdout='BISECTK_RESULT {"tflops": 0}'), j).kind is FailKind.SLOW


def test_helpers():
    assert parse_result("BISECTK_RESULT [1]") is None and parse_result("BISECTK_RESULT {bad") is None
    assert recognise("all fine") is None
    assert last_exception("nothing here") is None


def test_poisoned_warm_context_is_a_crash():
    """Bug: a warm worker's run that exits 0 but leaves the CUDA context poisoned was judged PASS."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 1e-7}\n',
                         poisoned="CUDA context poisoned after the run: CUDA error: an illegal memory access was encountered"),
                     JUDGE)
    assert r.outcome is Outcome.FAIL and r.kind is FailKind.CRASH
    assert r.failed == ("CUDA: an illegal memory access was encountered",)
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 1e-7}\n', poisoned="CUDA context poisoned after the run"), JUDGE)
    assert r.outcome is Outcome.FAIL and r.kind is FailKind.CRASH
    # a note from the harness that is not a verdict (a full log disk) leaves a passing run a pass
    ok = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 1e-7}\n', error="log not written: /x: No space left"), JUDGE)
    assert ok.outcome is Outcome.PASS


def test_failed_names_what_failed_without_values():
    two = Judge([Threshold("rel_err", max=1e-3), Threshold("cos", min=0.9999)])
    for text in ('{"rel_err": NaN, "cos": NaN}', '{"rel_err": Infinity, "cos": NaN}',
                 '{"rel_err": 2.5e33, "cos": 0.1}', '{"rel_err": "inf", "cos": -0.2}'):
        r = classify_run(raw(stdout=f"BISECTK_RESULT {text}"), two)
        assert r.kind is FailKind.WRONG and r.failed == ("cos >= 0.9999", "rel_err <= 0.001"), text
    r = classify_run(raw(exit_code=-11, signal="SIGSEGV"), JUDGE)
    assert r.failed == ("SIGSEGV",)
    tb = "Traceback (most recent call last):\nValueError: tile index 7 out of range\n"
    assert classify_run(raw(exit_code=1, stderr=tb), JUDGE).failed == ("ValueError",)
    git = Judge([], protocol="git")
    r = classify_run(raw(exit_code=3), git)
    assert r.kind is FailKind.BAD and r.failed == () and r.signature == "exit 3"


def test_a_usage_error_is_unresolved_not_a_crash():
    """argparse (and click) refusing the arguments: exit 2 with a `usage:` line. A wrapped usage is
    read whole; exit 2 without a usage line stays a crash; a git-protocol `--run` is no exception."""
    argparse_err = ("usage: kernel.py [-h] [--block BLOCK] [--rows ROWS]\n"
                    "                 [--fast-exp {true,false}]\n"
                    "kernel.py: error: argument --fast-exp: invalid choice: 'yes' (choose from 'true', 'false')\n")
    for protocol in ("bisectk", "git"):
        r = classify_run(raw(exit_code=2, stderr=argparse_err), Judge([], protocol=protocol))
        assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.USAGE)
        assert r.signature == ("the subject rejected its arguments: argument --fast-exp: invalid choice: 'yes' "
                               "(choose from 'true', 'false') (usage: kernel.py [-h] [--block BLOCK] [--rows ROWS] "
                               "[--fast-exp {true,false}])")
    click_err = "Usage: run.py [OPTIONS]\nTry 'run.py --help' for help.\n\nError: No such option: --fast\n"
    r = classify_run(raw(exit_code=2, stderr=click_err), JUDGE)
    assert r.reason is Reason.USAGE and r.signature.startswith("the subject rejected its arguments: No such option: "
                                                               "--fast (Usage: run.py [OPTIONS])")
    r = classify_run(raw(exit_code=2, stderr="kernel.py: error: bad tile\n"), JUDGE)
    assert r.outcome is Outcome.FAIL and r.kind is FailKind.CRASH
def test_pythons_cant_open_file_is_no_crash_of_the_kernel():
    """`python3 k/b.py` where k/b.py is not there: the interpreter's own "can't open file" (exit 2,
    its only line) was FAIL(CRASH) 'exit 2', so an ablation whose bad side names a script that is
    missing called the factor naming it the culprit of a crash. Nothing of the subject ran: the
    run is untestable (INFRA) and says which file, under a spec and under a git-protocol `--run`."""
    text = "python3: can't open file '/w/k/b.py': [Errno 2] No such file or directory\n"
    for protocol in ("bisectk", "git"):
        r = classify_run(raw(exit_code=2, stderr=text), Judge([], protocol=protocol))
        assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA), (protocol, r)
        assert r.signature == "cannot start the script /w/k/b.py: No such file or directory (python3: can't open file)"
    r = classify_run(raw(exit_code=2, stderr="/usr/bin/python3.12: can't open file '/w/d': [Errno 21] Is a directory"),
                     JUDGE)
    assert r.reason is Reason.INFRA and r.signature.startswith("cannot start the script /w/d: Is a directory"), r
    # a subject that ran and printed it (a subprocess of its own), or its own open() failing: its story
    for stderr in ("loading\n" + text, "Traceback (most recent call last):\nFileNotFoundError: [Errno 2] "
                   "No such file or directory: 'w.bin'\n"):
        r = classify_run(raw(exit_code=2, stderr=stderr), JUDGE)
        assert (r.outcome, r.kind) == (Outcome.FAIL, FailKind.CRASH), stderr
    assert classify_run(raw(exit_code=1, stderr=text), JUDGE).kind is FailKind.CRASH


def test_infinities_violate_every_bound():
    """-inf is no measurement below `max`, +inf none above `min`: both violate, like NaN (issue 22)."""
    judge = Judge([Threshold("mismatches", max=0), Threshold("cos", min=0.9999)])
    for line, what in [('{"mismatches": -Infinity, "cos": 1.0}', "-inf in mismatches"),
                       ('{"mismatches": 0, "cos": Infinity}', "+inf in cos"),
                       ('{"mismatches": 0, "cos": -Infinity}', "-inf in cos"),
                       ('{"mismatches": 1e400, "cos": 1.0}', "+inf in mismatches")]:
        r = classify_run(raw(stdout=f"BISECTK_RESULT {line}\n"), judge)
        assert (r.outcome, r.kind) == (Outcome.FAIL, FailKind.WRONG), line
        assert what in r.signature, (line, r.signature)
    r = classify_run(raw(stdout='BISECTK_RESULT {"mismatches": -Infinity, "cos": 1.0}'), judge)
    assert r.failed == ("mismatches <= 0",)     # the same violation as any other value past the bound
    both = Threshold("x", min=0.0, max=1.0)
    assert both.violation(float("inf")) and both.violation(float("-inf")) and both.violation(0.5) is None


def test_huge_integer_metrics_are_judged_not_fatal():
    """A 5,000-digit integer (past Python's 4,300-digit conversion limit) is a value past every
    bound; a 400-digit one (past a float) too; an ordinary integer stays exact."""
    judge = Judge([Threshold("mismatches", max=0)])
    for digits in (5000, 400):
        r = classify_run(raw(stdout="BISECTK_RESULT {\"mismatches\": " + "9" * digits + "}\n"), judge)
        assert (r.outcome, r.kind) == (Outcome.FAIL, FailKind.WRONG) and "inf in mismatches" in r.signature
        r = classify_run(raw(stdout="BISECTK_RESULT {\"mismatches\": -" + "9" * digits + "}\n"), judge)
        assert r.kind is FailKind.WRONG and "-inf in mismatches" in r.signature
    assert parse_result('BISECTK_RESULT {"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert parse_result("BISECTK_RESULT " + '{"a": ' * 100000 + "1" + "}" * 100000) is None   # too deep: malformed


@pytest.mark.parametrize("wt", ["/home/u/.cache/bisectk/worktrees/repo-0123456789ab/wt-0",   # the cache
                                "/tmp/bisectk-1000/worktrees/repo-0123456789ab-2/wt-3",    # its fallback
                                "/home/u/repo/.git/bisectk-worktrees/wt-0"])               # older versions'
def test_a_pytest_node_the_commit_does_not_have_is_said_in_pytests_words(wt):
    pytest = Judge([], protocol="pytest")
    missing = (f"ERROR: not found: {wt}/tests/test_k.py::test_tile\n"
               "(no match in any of [<Module test_k.py>])\n")
    r = classify_run(raw(exit_code=4, stdout="\nno tests ran in 0.14s\n", stderr=missing), pytest)
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA)
    assert r.signature == ("pytest: usage error: not found: tests/test_k.py::test_tile "
                           "(the test may not exist at this commit)"), r.signature
    r = classify_run(raw(exit_code=4, stderr="ERROR: file or directory not found: tests/test_new.py\n"), pytest)
    assert "file or directory not found: tests/test_new.py (the test may not exist at this commit)" in r.signature
    r = classify_run(raw(exit_code=4, stderr="ERROR: usage: pytest [options]\nunrecognized arguments: --bogus\n"), pytest)
    assert r.outcome is Outcome.UNRESOLVED and "not exist at this commit" not in r.signature


def test_under_git_bisect_runs_protocol_a_source_that_does_not_parse_is_a_failure_of_its_own():
    """exit 1 is bad by the protocol; an exit 1 whose output shows the source did not parse (a
    diff hybrid with an `if` line and not its body) is not the failure a test that ran saw,
    unless the bad endpoint's own failure was that (a bisection of a broken build)."""
    from bisectk.outcome import Target
    git = Judge([], protocol="git")
    plain = classify_run(raw(exit_code=1, stdout="check failed\n"), git)
    broken = classify_run(raw(exit_code=1, stderr='  File "pkg/rates.py", line 95\n    if self.known_new:\n'
                                                  "IndentationError: expected an indented block after 'if' "
                                                  "statement on line 94\n"), git)
    assert plain.outcome is broken.outcome is Outcome.FAIL and plain.kind is broken.kind is FailKind.BAD
    assert broken.signature.startswith("exit 1: IndentationError") and broken.failed
    assert not Target.of([plain]).matches(broken) and Target.of([plain]).matches(plain)
    assert Target.of([broken]).matches(broken) and not Target.of([broken]).matches(plain)
    ptxas = classify_run(raw(exit_code=2, stderr="ptxas error   : Entry function uses too much shared data\n"), git)
    assert ptxas.failed == broken.failed


@pytest.mark.parametrize("value, bound, kind, shown", [
    (1.0003e-4, 1e-4, "max", "rel_err 0.00010003 > 0.0001"),
    (0.0010000000000000002, 1e-3, "max", "rel_err 0.0010000000000000002 > 0.001"),
    (0.99989, 0.9999, "min", "rel_err 0.99989 < 0.9999"),
    (0.01000000002, 0.01000000001, "max", "rel_err 0.01000000002 > 0.01000000001"),
    (2.7, 1e-4, "max", "rel_err 2.7 > 0.0001"),
])
def test_a_value_just_past_its_bound_is_shown_with_the_digits_that_tell_them_apart(value, bound, kind, shown):
    """'rel_err 0.0001 > 0.0001' says nothing: a value near the tolerance gets the digits it needs."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": %r}\n' % value), Judge([Threshold("rel_err", **{kind: bound})]))
    assert r.kind is FailKind.WRONG and r.signature == shown


@pytest.mark.parametrize("ok", ["false", "0", 0, 0.0, '"false"', '"False"', '"0"'])
def test_a_subject_that_says_not_ok_in_another_spelling_is_wrong_not_a_pass(ok):
    """`"ok": 0` (a C or C++ subject's printf of a bool) and `"ok": "false"` say what `"ok": false`
    says: a wrong result, never a pass."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 0, "ok": %s}\n' % ok), JUDGE)
    assert r.kind is FailKind.WRONG, r


@pytest.mark.parametrize("ok", ["true", "1", '"true"', "null"])
def test_a_subject_that_says_ok_passes(ok):
    assert classify_run(raw(stdout='BISECTK_RESULT {"rel_err": 0, "ok": %s}\n' % ok), JUDGE).outcome is Outcome.PASS


@pytest.mark.parametrize("line", ['BISECTK_RESULT {"rel_err": 0', "BISECTK_RESULT []", "BISECTK_RESULT rel_err=0"])
def test_a_result_line_that_is_no_json_object_is_said_as_such_not_missing(line):
    r = classify_run(raw(stdout=line + "\n"), JUDGE)
    assert r.reason is Reason.INFRA and "not a JSON object" in r.signature and "no BISECTK_RESULT" not in r.signature


def test_a_metric_the_oracle_judges_by_that_the_run_did_not_report_names_what_it_did_report():
    """A typo in the spec's metric (`errr`) or slow_metric (`t_mss`): unresolved, and the names the
    run reported make the typo plain. A slow_metric no run reports once left SLOW undecidable:
    the slow bad side 'did not reproduce'."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"err": 0.0, "t_ms": 3}'), Judge([Threshold("errr", max=1)]))
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA)
    assert r.signature == "metric errr not reported (it reported err, t_ms)"
    slow = Judge([], slow_factor=2.0, slow_metric="t_mss", baseline=None)
    r = classify_run(raw(stdout='BISECTK_RESULT {"err": 0.0, "t_ms": 3}'), slow)
    assert r.outcome is Outcome.UNRESOLVED and r.signature == "metric t_mss not reported (it reported err, t_ms)"
    r = classify_run(raw(stdout='BISECTK_RESULT {"ok": true}'), Judge([Threshold("err", max=1)]))
    assert r.signature == "metric err not reported (it reported none)"
    wrong = Judge([Threshold("err", max=0.5)], slow_factor=2.0, slow_metric="t_ms", baseline=1.0)
    assert classify_run(raw(stdout='BISECTK_RESULT {"err": 1.0}'), wrong).kind is FailKind.WRONG   # untimed garbage


def test_under_git_bisect_runs_protocol_an_import_that_fails_is_a_failure_of_its_own():
    """A diff hybrid with a rename's use and not its file (`from helpers2 import f`, helpers2.py
    still only in BAD) dies at the import with exit 1: not the assertion the bad endpoint failed,
    which named these two hunks the failing sets."""
    from bisectk.outcome import Target
    git = Judge([], protocol="git")
    bad = classify_run(raw(exit_code=1, stderr='Traceback (most recent call last):\n  File "run.py", line 4\n'
                                               "AssertionError: wrong\n"), git)
    hybrid = classify_run(raw(exit_code=1, stderr='Traceback (most recent call last):\n  File "run.py", line 3\n'
                                                  "ModuleNotFoundError: No module named 'helpers2'\n"), git)
    assert hybrid.signature == "exit 1: ModuleNotFoundError: No module named 'helpers2'" and hybrid.failed
    assert not Target.of([bad]).matches(hybrid) and Target.of([hybrid]).matches(hybrid)
    said = classify_run(raw(exit_code=1, stdout="ImportError: not a traceback, a message\n"), git)
    assert said.signature == "exit 1" and Target.of([bad]).matches(said)


def test_under_git_bisect_runs_protocol_a_name_used_without_its_definition_is_a_failure_of_its_own():
    """The line pass of a hunk that renames `x = 1` to `xx = 3` and its use `y = x + 1` to
    `y = xx + 1` tries the definition alone: `NameError: name 'x' is not defined`, exit 1. It
    counted as the bad endpoint's plain exit 1, and the culprit 'line' was half a rename. A name
    without its definition is a source that does not link, as an ImportError is."""
    from bisectk.outcome import Target
    git = Judge([], protocol="git")
    bad = classify_run(raw(exit_code=1), git)
    for last in ("NameError: name 'x' is not defined. Did you mean: 'xx'?",
                 "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value"):
        hybrid = classify_run(raw(exit_code=1, stderr='Traceback (most recent call last):\n  File "r.py", line 3\n'
                                                      f"{last}\n"), git)
        assert hybrid.signature.startswith(f"exit 1: {last[:40]}") and hybrid.failed, hybrid.signature
        assert not Target.of([bad]).matches(hybrid) and Target.of([hybrid]).matches(hybrid)


def test_under_git_bisect_runs_protocol_a_module_or_class_attribute_only_another_hunk_defines_is_a_failure_of_its_own():
    """A rename across two files (`def f` -> `def g` in a.py, `a.f(3)` -> `a.g(3)` in b.py) tried one
    half at a time dies of `AttributeError: module 'a' has no attribute 'f'` (exit 1). Under --run
    that counted as the bad endpoint's own exit 1, and diff answered each half of the rename as a
    failing set of its own beside the real culprit. A module's or a class's missing attribute is a
    source that does not link, as a NameError is; an instance's missing attribute (None.shape) is
    the program's own failure and stays the protocol's plain exit 1."""
    from bisectk.outcome import Target
    git = Judge([], protocol="git")
    bad = classify_run(raw(exit_code=1), git)
    for last in ("AttributeError: module 'a' has no attribute 'f'",
                 "AttributeError: module 'pkg.ops' has no attribute 'scale'. Did you mean: 'scales'?",
                 "AttributeError: type object 'Kernel' has no attribute 'launch'"):
        hybrid = classify_run(raw(exit_code=1, stderr='Traceback (most recent call last):\n  File "b.py", line 5\n'
                                                      f"{last}\n"), git)
        assert hybrid.signature.startswith(f"exit 1: {last[:40]}") and hybrid.failed, hybrid.signature
        assert not Target.of([bad]).matches(hybrid) and Target.of([hybrid]).matches(hybrid)
    own = classify_run(raw(exit_code=1, stderr='Traceback (most recent call last):\n  File "b.py", line 5\n'
                                               "AttributeError: 'NoneType' object has no attribute 'shape'\n"), git)
    assert own.signature == "exit 1" and Target.of([bad]).matches(own)
    # where bad itself did not link (a removed function it calls), its test never ran: a hybrid whose
    # test ran and exited 1 is that failure too, as git bisect run would say
    assert Target.of([hybrid]).matches(bad) and Target.of([hybrid]).matches(own)
    syntax = classify_run(raw(exit_code=1, stderr='  File "b.py", line 5\n    def f(\nSyntaxError: invalid syntax\n'), git)
    assert not Target.of([syntax]).matches(bad)       # "when did the build break" stays the build


def test_a_metric_printed_in_quotes_is_the_subjects_printing_not_a_wrong_result():
    """`{"err": "1e-9"}` (a string: a printf with quotes) on both sides made good 'fail too' with a
    wrong result, and the problem said the failure did not depend on the differences."""
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": "1e-9"}'), JUDGE)
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA)
    assert r.signature == "metric rel_err is the string '1e-9', not a number: print it without quotes"
    r = classify_run(raw(stdout='BISECTK_RESULT {"rel_err": "garbage"}'), JUDGE)
    assert r.kind is FailKind.WRONG        # not a number at all: what the kernel gave
    assert classify_run(raw(stdout='BISECTK_RESULT {"rel_err": "nan"}'), JUDGE).kind is FailKind.WRONG


def _pytest_run(tmp_path, source: str, *args: str) -> RawRun:
    """A real pytest run with the core of what --pytest gives (`-q -x -p no:cacheprovider`), as a RawRun."""
    import subprocess
    import sys
    (tmp_path / "test_k.py").write_text(source)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return raw(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr)


PARAMETRIZED = ('import pytest\n@pytest.mark.parametrize("s", ["a b - c", "d"])\n'
                'def test_x(s):\n    assert s == "d", "wrong [x]"\n'
                '@pytest.mark.parametrize("s", ["e f"])\ndef test_y(s):\n    assert 0, "other"\n')


def test_a_failed_parametrized_id_with_spaces_is_named_whole(tmp_path):
    """`FAILED tests/k.py::test_x[a b - c] - ...`: the summary line was read with `\\S+` and did not
    match at all, so the failure was named 'pytest' ("wrong result (pytest violated)") and any
    two failing tests with a space in their ids were taken for the same failure."""
    from bisectk.outcome import Target
    pytest = Judge([], protocol="pytest")
    x = classify_run(_pytest_run(tmp_path, PARAMETRIZED, "test_k.py::test_x"), pytest)
    y = classify_run(_pytest_run(tmp_path, PARAMETRIZED, "test_k.py::test_y"), pytest)
    assert (x.outcome, x.kind) == (Outcome.FAIL, FailKind.WRONG)
    assert x.failed == ("test_k.py::test_x[a b - c]",), x.failed
    assert x.signature.startswith("AssertionError: wrong [x]"), x.signature
    assert y.failed == ("test_k.py::test_y[e f]",)
    assert not Target.of([x]).matches(y)


def test_a_test_whose_fixture_raises_is_not_the_failure_of_one_that_ran(tmp_path):
    """exit 1 with `ERROR tests/k.py::test_x` (a fixture that raised, a conftest's fixture gone at
    an old commit): named as that test's error, not as 'pytest', nor as its failure."""
    from bisectk.outcome import Target
    pytest = Judge([], protocol="pytest")
    source = ("import os, pytest\n@pytest.fixture\ndef f():\n    if os.environ.get('SETUP_FAILS'):\n"
              "        raise RuntimeError('no device')\ndef test_x(f):\n    assert 0\n")
    failed = classify_run(_pytest_run(tmp_path, source, "test_k.py::test_x"), pytest)
    os.environ["SETUP_FAILS"] = "1"
    try:
        errored = classify_run(_pytest_run(tmp_path, source, "test_k.py::test_x"), pytest)
    finally:
        del os.environ["SETUP_FAILS"]
    assert failed.failed == ("test_k.py::test_x",)
    assert (errored.outcome, errored.failed) == (Outcome.FAIL, ("test_k.py::test_x (error)",)), errored.failed
    assert "RuntimeError: no device" in errored.signature
    assert not Target.of([failed]).matches(errored)


def test_a_failing_test_under_xdist_is_a_failure_not_an_interruption(tmp_path):
    """A project's `addopts = -n auto`: with --pytest's `-x`, pytest-xdist ends a failing test's run
    as interrupted (exit 2), which was read as a collection error: the bad endpoint "cannot be
    tested" in every such project. A file that does not collect stays unresolved."""
    pytest_ = Judge([], protocol="pytest")
    pytest.importorskip("xdist")
    failing = _pytest_run(tmp_path, "def test_x():\n    assert 0, 'boom'\n", "-n", "2", "test_k.py::test_x")
    assert failing.exit_code == 2
    r = classify_run(failing, pytest_)
    assert (r.outcome, r.kind, r.failed) == (Outcome.FAIL, FailKind.WRONG, ("test_k.py::test_x",)), r
    broken = _pytest_run(tmp_path, "import no_such_module_here\ndef test_x():\n    pass\n", "-n", "2", "test_k.py")
    r = classify_run(broken, pytest_)
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.BUILD), r


def test_a_usage_error_says_what_pytest_refused(tmp_path):
    """exit 4 was said as 'pytest: usage error' alone: a -k expression pytest cannot read, or an
    addopts option whose plugin a commit lacks, left the user guessing at every endpoint."""
    pytest_ = Judge([], protocol="pytest")
    r = classify_run(_pytest_run(tmp_path, "def test_x():\n    pass\n", "test_k.py", "-k", "a-b c"), pytest_)
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA)
    assert r.signature.startswith("pytest: usage error: Wrong expression passed to '-k': a-b c"), r.signature
    r = classify_run(_pytest_run(tmp_path, "def test_x():\n    pass\n", "test_k.py", "--no-such-option"), pytest_)
    assert r.signature == "pytest: usage error: unrecognized arguments: --no-such-option", r.signature
    for prog in ("pytest", "python -m pytest", "__main__.py"):   # pytest 9.2 names the program as it was run
        r = classify_run(raw(exit_code=4, stderr=f"ERROR: usage: {prog} [options] [file_or_dir]\n"
                                                 f"{prog}: error: unrecognized arguments: -n\n  inifile: None\n"), pytest_)
        assert r.signature == "pytest: usage error: unrecognized arguments: -n", (prog, r.signature)
    wt = "/home/u/.cache/bisectk/worktrees/repo-0123456789ab/wt-1"
    r = classify_run(raw(exit_code=4, stderr=f"ImportError while loading conftest '{wt}/tests/conftest.py'.\n"
                                             "E   SyntaxError: invalid syntax\n"), pytest_)
    assert r.signature == "pytest: usage error: ImportError: while loading conftest 'tests/conftest.py'.", r.signature


def test_a_parametrized_id_keeps_pytests_escapes(tmp_path):
    """pytest prints a parameter's non-ASCII characters as escapes (`test_x[z\\xe9]`) and selects the
    test by that id; --pytest split the id with shell rules, read `z\\xe9` as `zxe9`, and every
    commit said 'not found'. A backslash the shell would keep (in double quotes) or one before a
    space (`[a\\ b]`) reads as it did."""
    from bisectk.engine.subject import pytest_args
    assert pytest_args(r"t.py::test_x[z\xe9]") == [r"t.py::test_x[z\xe9]"]
    assert pytest_args(r"t.py::test_x[a\\b] -k x") == [r"t.py::test_x[a\\b]", "-k", "x"]
    assert pytest_args(r'"t.py::test_x[z\xe9]"') == [r"t.py::test_x[z\xe9]"]
    assert pytest_args(r"t.py::test_x[a\ b]") == ["t.py::test_x[a b]"]
    source = 'import pytest\n@pytest.mark.parametrize("s", ["z\\u00e9"])\ndef test_x(s):\n    assert 0\n'
    r = classify_run(_pytest_run(tmp_path, source, *pytest_args(r"test_k.py::test_x[z\xe9]")),
                     Judge([], protocol="pytest"))
    assert (r.outcome, r.failed) == (Outcome.FAIL, (r"test_k.py::test_x[z\xe9]",)), r.signature


def test_a_strict_xfail_that_passed_is_not_the_failure_of_its_body(tmp_path):
    """`FAILED t.py::test_x - [XPASS(strict)]`: the body passed under a strict xfail mark (a fix
    committed before the mark was removed). It was named test_x, as a body that fails is, so
    such a commit counted as the failure hunted."""
    from bisectk.outcome import Target
    pytest_ = Judge([], protocol="pytest")
    xpass = classify_run(_pytest_run(tmp_path, "import pytest\n@pytest.mark.xfail(strict=True)\n"
                                               "def test_x():\n    pass\n", "test_k.py::test_x"), pytest_)
    fails = classify_run(_pytest_run(tmp_path, "def test_x():\n    assert 0\n", "test_k.py::test_x"), pytest_)
    assert (xpass.outcome, xpass.failed) == (Outcome.FAIL, ("test_k.py::test_x (XPASS(strict))",)), xpass.failed
    assert fails.failed == ("test_k.py::test_x",)
    assert not Target.of([fails]).matches(xpass)
    passes = classify_run(_pytest_run(tmp_path, "import pytest\n@pytest.mark.xfail\ndef test_x():\n    pass\n",
                                      "test_k.py::test_x"), pytest_)
    assert passes.outcome is Outcome.PASS       # not strict: an XPASS passes, as pytest says


def test_no_slow_against_a_baseline_of_zero_or_below():
    """time_ms printed as 0 (too coarse a unit): no multiple of the baseline to exceed. Against
    -5 x 1.5, good's own -5 was SLOW: "good fails intermittently" in 9/10 runs. A value below zero
    is no time (a subject's "not measured"): its run is unresolved, good's too, whatever the
    baseline (it passed before, judged by nothing)."""
    for base, value, outcome in ((0.0, 1, Outcome.PASS), (-5.0, -5, Outcome.UNRESOLVED), (-5.0, -4, Outcome.UNRESOLVED)):
        j = Judge([], slow_factor=1.5, slow_metric="time_ms", baseline=base)
        assert classify_run(raw(stdout=f'BISECTK_RESULT {{"time_ms": {value}}}'), j).outcome is outcome


@pytest.mark.parametrize("said, line", [
    ("cc -o build/t a.c\n", "a.c:2:30: error: expected ';' before 'return'"),
    ("", "src/k.cpp:7:1: fatal error: k.h: No such file or directory"),
    ("", "kernel.cu(12): error: identifier \"warps\" is undefined"),
    ("", "collect2: error: ld returned 1 exit status"),
])
def test_a_c_compilers_error_is_a_source_that_does_not_compile(said, line):
    """`--run "sh -c 'make && ./t'"`: a commit whose C, C++ or CUDA source gcc, clang or nvcc
    rejects made make exit 2, read as bad by git's protocol, and was named the first bad commit
    (as a Python SyntaxError or a ptxas error is not); a --build that fails so says the
    compiler's line, not the command make echoed last."""
    from bisectk.outcome import Target
    git = Judge([], protocol="git")
    text = f"{line}\nmake: *** [Makefile:3: build/t] Error 1\n"
    broken = classify_run(raw(exit_code=2, stdout=said, stderr=text), git)
    plain = classify_run(raw(exit_code=1, stdout="f=43\n"), git)
    assert broken.kind is FailKind.BAD and broken.signature == f"exit 2: {line}"
    assert not Target.of([plain]).matches(broken)
    b = classify_build(raw(exit_code=2, stdout=said, stderr=text))
    assert b.reason is Reason.BUILD and b.signature == f"build failed: {line}"
    spec = classify_run(raw(exit_code=1, stdout=said, stderr=text), Judge([]))     # sh -c 'cc ... && ./k'
    assert spec.reason is Reason.BUILD and spec.signature == f"compile failed: {line}"


def test_a_test_that_prints_error_words_is_not_a_compile_failure():
    """`error: 3 mismatches` or `k.c:12: check failed` is a test's own words, not a compiler's."""
    git = Judge([], protocol="git")
    for text in ("error: 3 mismatches\n", "k.c:12: check failed\n", "result: error: 0.5\n"):
        assert classify_run(raw(exit_code=1, stderr=text), git).signature == "exit 1"


@pytest.mark.parametrize("said", ["make: 'k' is up to date.\n", "make[1]: Nothing to be done for 'all'.\n",
                                  "ninja: no work to do.\n"])
def test_a_build_that_made_nothing_is_unresolved_where_a_factor_reaches_the_run_through_it_alone(said):
    """`make CFLAGS=-DWARPS={warps}`: make does not rebuild for a changed variable, so the run
    would get the last configuration's binary. Where the build takes no factor of its own (bisect's
    `--build make` at a commit that changed nothing it builds), nothing built is a build."""
    assert classify_build(raw(exit_code=0, stdout=said)) is None
    b = classify_build(raw(exit_code=0, stdout=said), carries_config=True)
    assert b.reason is Reason.BUILD and said.strip() in b.signature and "make -B" in b.signature
    assert classify_build(raw(exit_code=0, stdout="cc -DWARPS=10 -o k k.c\n"), carries_config=True) is None


@pytest.mark.parametrize("printed, said", [
    ('"130"', "the string '130'"), ('"fast"', "the string 'fast'"), ("true", "bool True"), ("null", "null"),
    ("NaN", "NaN"), ("[130]", "list [130]"),
    *((v, f'{v.replace("Infinity", "inf")}, below zero (no time or throughput is: a subject\'s "not measured")')
      for v in ("-1", "-Infinity", "-0.5")),
])
def test_a_slow_metric_that_is_no_number_is_unresolved_not_a_pass(printed, said):
    """time_ms printed in quotes (or as null, NaN, a list): read as no value, the run passed; a
    hybrid holding the culprit cleared it, and ablate named every factor as an interaction at rc 0.
    With a threshold on another metric too (NaN alone in a run without thresholds is WRONG)."""
    j = Judge([Threshold("err", max=0.5)], slow_factor=1.1, slow_metric="time_ms", baseline=100.0)
    r = classify_run(raw(stdout=f'BISECTK_RESULT {{"err": 0, "time_ms": {printed}}}'), j)
    assert r.outcome is Outcome.UNRESOLVED and r.reason is Reason.INFRA, (r.outcome, r.signature)
    assert r.signature.startswith(f"slow_metric time_ms is {said}, not a value SLOW can judge"), r.signature
    for fine in ("130", "Infinity", "0"):     # a number (the slowest time of all, none at all) is judged
        assert classify_run(raw(stdout=f'BISECTK_RESULT {{"err": 0, "time_ms": {fine}}}'), j).outcome \
            is not Outcome.UNRESOLVED
    # a throughput below zero is no measurement either (-1 passed a time's every threshold; judged
    # against a throughput's, it was SLOW, a failure made of a missing number)
    higher = Judge([], slow_factor=1.1, slow_metric="time_ms", baseline=100.0, higher=True)
    if printed != "NaN":    # NaN where no threshold judges a metric is WRONG (its own rule)
        assert classify_run(raw(stdout=f'BISECTK_RESULT {{"time_ms": {printed}}}'), higher).outcome is Outcome.UNRESOLVED


@pytest.mark.parametrize("protocol", ["git", "bisectk"])
def test_a_script_killed_by_a_signal_and_one_that_exits_128_plus_n_are_two_failures(protocol):
    """`kill -SEGV $$` (waitpid: killed by SIGSEGV) and `exit 139` (waitpid: exited 139, as a shell
    reports a child's SIGSEGV): both crashes, git bisect run would abort on either, but not one
    failure. Both were `SIGSEGV`, so a bisection hunting the script's own SIGSEGV took a commit
    that exits 139 for it (and named the first bad commit too early)."""
    from bisectk.outcome import Target
    judge = Judge([], protocol=protocol)
    killed = classify_run(raw(exit_code=-11, signal="SIGSEGV"), judge)
    exited = classify_run(raw(exit_code=139), judge)
    assert (killed.kind, killed.failed, killed.signature) == (FailKind.CRASH, ("SIGSEGV",), "SIGSEGV")
    assert (exited.kind, exited.failed, exited.signature) == (FailKind.CRASH, ("exit 139 = 128+SIGSEGV",),
                                                             "exit 139 = 128+SIGSEGV")
    assert not Target.of([killed]).matches(exited) and not Target.of([exited]).matches(killed)
    assert Target.of([exited]).matches(classify_run(raw(exit_code=139), judge))
    assert classify_run(raw(exit_code=200), judge).failed == ("exit 200",)
    assert classify_run(raw(exit_code=128), judge).failed == ("exit 128",)


def test_under_a_spec_a_crash_whose_source_does_not_link_is_unbuilt_by_the_rule_run_reads():
    """Under --run a traceback ending in an ImportError, a NameError or a module's missing attribute
    is LINK_FAILED, and the oracle runs such a hybrid once; under a spec the same crash was a plain
    CRASH, re-run twice as a different failure though its tree says the same every time. It is
    unbuilt now by the same rule, and still the crash of its exception type (a bad endpoint whose
    bug is a NameError hunts that crash: Target.matches is unchanged)."""
    from bisectk.outcome import Target
    tb = 'Traceback (most recent call last):\n  File "run.py", line 2, in <module>\n    import kern\n'
    git = Judge([], protocol="git")
    for last, name in (("NameError: name 'width' is not defined", "NameError"),
                       ("UnboundLocalError: cannot access local variable 'x' where it is not associated with a value",
                        "UnboundLocalError"),
                       ("ModuleNotFoundError: No module named 'tiles'", "ModuleNotFoundError"),
                       ("ImportError: cannot import name 'WIDTH' from 'tiles' (/w/tiles.py)", "ImportError"),
                       ("AttributeError: module 'tiles' has no attribute 'WIDTH'", "AttributeError")):
        spec = classify_run(raw(exit_code=1, stderr=tb + last + "\n"), JUDGE)
        assert (spec.kind, spec.failed) == (FailKind.CRASH, (name,)) and spec.unbuilt, (last, spec)
        assert Target.of([spec]).matches(spec)
        run = classify_run(raw(exit_code=1, stderr=tb + last + "\n"), git)
        assert run.unbuilt, last                                       # the same rule under --run
    for last in ("AttributeError: 'NoneType' object has no attribute 'shape'", "ValueError: bad tile",
                 "RuntimeError: name 'x' is not defined"):
        for judge in (JUDGE, git):
            assert not classify_run(raw(exit_code=1, stderr=tb + last + "\n"), judge).unbuilt, last


def test_a_pytest_run_whose_tests_were_all_skipped_judges_nothing(tmp_path):
    """exit 0 with `1 skipped`: the test's body never ran (a skipif on a dependency's version, an
    importorskip of a module a commit lacks), and the commit was taken for a good one. Only a
    test that ran and passed passes; a skip or an expected failure alone is unresolved, in
    pytest's words where its `-r` report gives them."""
    pytest_ = Judge([], protocol="pytest")
    skips = "import pytest\n@pytest.mark.skip(reason='needs sm_90a')\ndef test_x():\n    assert 0\n"
    r = classify_run(_pytest_run(tmp_path, skips, "test_k.py::test_x"), pytest_)
    assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA), r
    assert r.signature.startswith("pytest: no test was judged (1 skipped)"), r.signature
    import subprocess
    from bisectk.engine.subject import load_subject
    spec, _ = load_subject(None, pytest_id="test_k.py::test_x", cwd=tmp_path)   # as --pytest runs it
    p = subprocess.run(spec.argv({}), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    r = classify_run(raw(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr), pytest_)
    assert r.signature == "pytest: no test was judged (1 skipped): needs sm_90a", r.signature
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -ra -q\n")     # pytest's own example: -qq drops the counts
    p = subprocess.run(spec.argv({}), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    r = classify_run(raw(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr), pytest_)
    assert r.signature == "pytest: no test was judged (1 skipped): needs sm_90a", (r.signature, p.stdout)
    (tmp_path / "pytest.ini").unlink()
    for typed in ("test_k.py::test_x -q", "test_k.py::test_x -qq --quiet"):   # typed inside --pytest: -qq again
        spec, _ = load_subject(None, pytest_id=typed, cwd=tmp_path)
        p = subprocess.run(spec.argv({}), cwd=tmp_path, capture_output=True, text=True, timeout=120)
        r = classify_run(raw(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr), pytest_)
        assert r.signature == "pytest: no test was judged (1 skipped): needs sm_90a", (typed, r.signature, p.stdout)
    xfails = "import pytest\n@pytest.mark.xfail\ndef test_x():\n    assert 0\n"
    r = classify_run(_pytest_run(tmp_path, xfails, "test_k.py::test_x"), pytest_)
    assert (r.outcome, r.signature) == (Outcome.UNRESOLVED, "pytest: no test was judged (1 xfailed)"), r
    both = skips + "def test_y():\n    pass\n"
    assert classify_run(_pytest_run(tmp_path, both, "test_k.py"), pytest_).outcome is Outcome.PASS


def test_pytest_missing_from_the_interpreter_is_no_failing_test():
    """`python -m pytest` in an interpreter without pytest (bisectk installed with pipx) exits 1
    with `python: No module named pytest`: read as a failing test ('test failed'), so the good
    endpoint "failed" and a commit was judged by an interpreter that never ran it."""
    for protocol in ("pytest", "git"):
        r = classify_run(raw(exit_code=1, stderr="/opt/venv/bin/python3: No module named pytest\n"),
                         Judge([], protocol=protocol))
        assert (r.outcome, r.reason) == (Outcome.UNRESOLVED, Reason.INFRA), (protocol, r)
        assert r.signature == "/opt/venv/bin/python3: No module named pytest (install it in that interpreter)", r


def test_a_parametrized_id_keeps_its_quotes_and_spaces(tmp_path):
    """pytest prints `test_x[it's]` and `test_x[a  b]` as the ids it selects by; --pytest refused
    the first ('No closing quotation') and squeezed the second to `test_x[a b]`, which no commit
    has: every run 'not found'. Inside an id's brackets each character is the id's."""
    from bisectk.engine.subject import pytest_args
    assert pytest_args("t.py::test_x[it's] -k 'a or b'") == ["t.py::test_x[it's]", "-k", "a or b"]
    assert pytest_args('t.py::test_x[a"b]') == ['t.py::test_x[a"b]']
    assert pytest_args("t.py::test_x[a  b] t.py::test_y") == ["t.py::test_x[a  b]", "t.py::test_y"]
    assert pytest_args("'t.py::test_x[a  b]'") == ["t.py::test_x[a  b]"]
    source = 'import pytest\n@pytest.mark.parametrize("s", ["it\'s", "a  b"])\ndef test_x(s):\n    assert 0, s\n'
    for node in ("test_k.py::test_x[it's]", "test_k.py::test_x[a  b]"):
        r = classify_run(_pytest_run(tmp_path, source, *pytest_args(node)), Judge([], protocol="pytest"))
        assert (r.outcome, r.failed) == (Outcome.FAIL, (node,)), r.signature


def test_a_pytest_run_in_colour_is_read_as_one_without(tmp_path):
    """`FORCE_COLOR=1` or `PY_COLORS=1` (a CI's setting) or `addopts = --color=yes` wrapped
    pytest's summary in escapes: a failing test was named 'pytest' with 'test failed', and a
    skipped one passed. --pytest's run asks pytest for no colour, whatever the environment."""
    import subprocess
    import sys
    from bisectk.engine.subject import load_subject
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --color=yes\n")
    (tmp_path / "test_k.py").write_text('import pytest\n@pytest.mark.parametrize("s", ["a b"])\n'
                                        'def test_x(s):\n    assert 0, "boom"\n')
    spec, _ = load_subject(None, pytest_id="test_k.py::test_x", cwd=tmp_path)
    env = {**os.environ, **spec.environment({}), "PY_COLORS": "1", "FORCE_COLOR": "1"}
    p = subprocess.run([sys.executable, *spec.argv({})[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    r = classify_run(raw(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr), Judge([], protocol="pytest"))
    assert (r.outcome, r.failed) == (Outcome.FAIL, ("test_k.py::test_x[a b]",)), (r.failed, p.stdout[-300:])
    assert r.signature == "AssertionError: boom", r.signature


def test_a_test_that_pytest_timeout_stopped_is_a_hang():
    """pytest-timeout (`addopts = --timeout=300`, common where kernels hang) ends a hung test as
    failed, exit 1: read as a wrong result ('Failed: Timeout ...', or 'test failed' where its
    thread method dumps the stacks and exits with no summary). Its words as pytest-timeout 2.4
    prints them."""
    pytest_ = Judge([], protocol="pytest")
    summary = ("E       Failed: Timeout (>2.0s) from pytest-timeout.\n"
               "=========================== short test summary info ============================\n"
               "FAILED test_k.py::test_x - Failed: Timeout (>2.0s) from pytest-timeout.\n"
               "!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!\n1 failed in 2.84s\n")
    r = classify_run(raw(exit_code=1, stdout=summary), pytest_)
    assert (r.outcome, r.kind, r.failed) == (Outcome.FAIL, FailKind.HANG, ("test_k.py::test_x",)), r
    assert r.signature == "pytest-timeout: Timeout (>2.0s)", r.signature
    r = classify_run(raw(exit_code=1, stdout=summary.split("\n", 2)[2]), pytest_)    # --tb=no: the summary alone
    assert (r.kind, r.signature) == (FailKind.HANG, "pytest-timeout: Timeout (>2.0s)"), r
    dump = ("+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++\n"
            "~~~~~~~~~~~~~~~~~~~~ Stack of MainThread (140174895958912) ~~~~~~~~~~~~~~~~~~~~~\n"
            '  File "/w/test_k.py", line 3, in test_x\n    time.sleep(30)\n'
            "+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++\n")
    r = classify_run(raw(exit_code=1, stdout=dump), pytest_)
    assert (r.outcome, r.kind, r.signature) == (Outcome.FAIL, FailKind.HANG, "pytest-timeout: Timeout"), r
    assert classify_run(raw(exit_code=1, stdout="FAILED test_k.py::test_x - assert 0\n"), pytest_).kind is FailKind.WRONG
