from bisectk.outcome import FailKind, Outcome, Reason, Run, Target, Verdict, signature_family


def test_family_blanks_numbers_and_addresses():
    assert signature_family(FailKind.HANG, "timeout after 2.1 s") == signature_family(FailKind.HANG, "timeout after 13 s")
    assert signature_family(FailKind.CRASH, "fault at 0xdeadbeef") == signature_family(FailKind.CRASH, "fault at 0x10")
    assert signature_family(FailKind.WRONG, "rel_err 2.7 > 1e-4") != signature_family(FailKind.WRONG, "NaN in rel_err")
    assert signature_family(FailKind.HANG, "x") != signature_family(FailKind.CRASH, "x")


def test_fold_counts_and_prefers_failure():
    runs = [Run(Outcome.PASS, duration_s=1), Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 5.0 s", duration_s=5)]
    v = Verdict.fold(runs)
    assert v.outcome is Outcome.FAIL and v.kind is FailKind.HANG
    assert v.n_fail == 1 and v.n_pass == 1 and v.fail_rate == 0.5
    assert v.duration_s == 6
    assert "1/2 failed" in v.describe()


def test_fold_unresolved_only_without_observations():
    v = Verdict.fold([Run(Outcome.UNRESOLVED, reason=Reason.BUILD, signature="build failed")])
    assert v.outcome is Outcome.UNRESOLVED and v.reason is Reason.BUILD


def test_against_maps_other_family_to_unresolved():
    target = Target.of([Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 2.0 s")])
    same = Verdict.fold([Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 9.0 s")])
    other = Verdict.fold([Run(Outcome.FAIL, FailKind.CRASH, signature="SIGSEGV")])
    ok = Verdict.fold([Run(Outcome.PASS)])
    assert same.against(target) is Outcome.FAIL
    assert other.against(target) is Outcome.UNRESOLVED
    assert ok.against(target) is Outcome.PASS


def test_roundtrip_dict():
    v = Verdict.fold([Run(Outcome.FAIL, FailKind.WRONG, signature="rel_err 3 > 1e-4", metrics={"rel_err": 3.0})])
    again = Verdict.from_dict(v.to_dict())
    assert again.outcome is v.outcome and again.kind is v.kind and again.runs == v.runs


def wrong(*checks, value="x"):
    return Run(Outcome.FAIL, FailKind.WRONG, signature=f"rel_err {value} > 0.001", failed=tuple(checks))


def test_garbage_in_any_form_is_one_failure():
    """Bug: NaN, inf and 2.5e+33 past the same bound were split into 'different failures'."""
    target = Target.of([wrong("rel_err <= 0.001", "cos >= 0.9999", value="nan")])
    for run in (wrong("rel_err <= 0.001", "cos >= 0.9999", value="inf"), wrong("rel_err <= 0.001", value="2.5e+33"),
                wrong("rel_err <= 0.001", "the subject's own check (ok = false)")):
        assert Verdict.fold([run]).against(target) is Outcome.FAIL
    assert Verdict.fold([wrong("max_abs <= 1")]).against(target) is Outcome.UNRESOLVED
    segv = Target.of([Run(Outcome.FAIL, FailKind.CRASH, signature="SIGSEGV", failed=("SIGSEGV",))])
    abrt = Run(Outcome.FAIL, FailKind.CRASH, signature="SIGABRT", failed=("SIGABRT",))
    assert Verdict.fold([abrt]).against(segv) is Outcome.UNRESOLVED
    kind_only = Target.of([Run(Outcome.FAIL, FailKind.CRASH, signature="SIGSEGV", failed=("SIGSEGV",))], "kind")
    assert Verdict.fold([abrt]).against(kind_only) is Outcome.FAIL


def test_signature_mode_is_strict_and_target_roundtrips():
    a = Run(Outcome.FAIL, FailKind.WRONG, signature="NaN in rel_err", failed=("rel_err <= 0.001",))
    b = Run(Outcome.FAIL, FailKind.WRONG, signature="rel_err 3 > 0.001", failed=("rel_err <= 0.001",))
    strict = Target.of([a], "signature")
    assert Verdict.fold([b]).against(strict) is Outcome.UNRESOLVED
    assert Target.from_dict(strict.to_dict()) == strict
    assert "wrong result (rel_err <= 0.001 violated)" == Target.of([a]).describe()


def test_a_nan_where_the_spec_has_no_thresholds_is_said_as_a_nan():
    """A subject that reports metrics without thresholds fails on a NaN (run/classify.py): the
    check it broke was said 'wrong result (x is a number violated)'."""
    from bisectk.run.classify import Judge, classify_run
    from bisectk.run.process import RawRun
    raw = RawRun(started=True, exit_code=0, stdout='BISECTK_RESULT {"x": NaN, "y": 1.0, "z": NaN}\n', duration_s=0.1)
    run = classify_run(raw, Judge([]))
    assert run.outcome is Outcome.FAIL and run.kind is FailKind.WRONG, run
    assert Target.of([run]).describe() == "wrong result (NaN in x, z)"
    mixed = Target.of([wrong("rel_err <= 0.001", "x is a number")])
    assert mixed.describe() == "wrong result (rel_err <= 0.001 violated; NaN in x)"


def test_a_run_whose_source_did_not_compile_parse_or_link_is_unbuilt():
    """The oracle re-runs a different failure (garbage that changes form); not an unbuilt one."""
    from bisectk.outcome import COMPILE_FAILED, LINK_FAILED
    git = dict(kind=FailKind.BAD, signature="exit 1: ...")
    assert Run(Outcome.FAIL, failed=(COMPILE_FAILED,), **git).unbuilt
    assert Run(Outcome.FAIL, failed=(LINK_FAILED,), **git).unbuilt
    assert Run(Outcome.FAIL, FailKind.CRASH, signature="IndentationError: expected an indented block",
               failed=("IndentationError",)).unbuilt
    # a spec's crash of a source that does not link, read by --run's rule (classify does_not_build)
    assert Run(Outcome.FAIL, FailKind.CRASH, signature="NameError: name 'width' is not defined",
               failed=("NameError",)).unbuilt
    assert Run(Outcome.FAIL, FailKind.CRASH, signature="AttributeError: module 'tiles' has no attribute 'WIDTH'",
               failed=("AttributeError",)).unbuilt
    assert not Run(Outcome.FAIL, FailKind.CRASH, signature="AttributeError: 'NoneType' object has no attribute 'x'",
                   failed=("AttributeError",)).unbuilt
    assert not Run(Outcome.FAIL, FailKind.CRASH, signature="SIGSEGV: NameError: x", failed=("SIGSEGV",)).unbuilt
    assert not Run(Outcome.FAIL, **git).unbuilt                      # bad's own exit 1
    assert not Run(Outcome.FAIL, FailKind.CRASH, signature="ValueError: x", failed=("ValueError",)).unbuilt
    assert not Run(Outcome.FAIL, FailKind.CRASH, signature="SIGSEGV", failed=("SIGSEGV",)).unbuilt
    assert not Run(Outcome.PASS).unbuilt
