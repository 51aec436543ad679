"""Small result records built by hand for the report tests (no subject is run)."""
from __future__ import annotations

from bisectk.engine.records import (AblationRecord, AttemptRecord, BisectRecord, DiffRecord, EndpointCheck, Rate,
                                    SubjectRecord)
from bisectk.outcome import FailKind, Outcome, Run, Target, Verdict
from bisectk.run.runner import TimeoutPolicy


def check(good_runs, bad_runs) -> EndpointCheck:
    bad = Verdict.fold(bad_runs)
    return EndpointCheck(Verdict.fold(good_runs), bad, TimeoutPolicy(2.0, "calibrated", "max(1 s, 5 x 0.4 s) = 2.00 s"),
                         None, Target.of(bad_runs), False, Rate(bad.n_fail, len(bad_runs)),
                         Rate(0, len(good_runs)))


def wrong(value: float = 0.6) -> Run:
    return Run(Outcome.FAIL, FailKind.WRONG, signature=f"rel_err {value} > 0.0001", metrics={"rel_err": value},
               duration_s=0.1, failed=("rel_err <= 0.0001",))


def ok(**metrics) -> Run:
    return Run(Outcome.PASS, metrics=metrics, duration_s=0.1)


def subject(factors, **kw) -> SubjectRecord:
    return SubjectRecord("toy", "/tmp/spec.toml", ("python", "k.py"), {f: 0 for f in factors}, {f: 1 for f in factors},
                         tuple(factors), **kw)


def attempt(i, applied, outcome, *, phase="split", metrics=None, label="hybrid", runs=1, time_s=0.1) -> AttemptRecord:
    verdict = {"pass": "PASS", "fail": "FAIL wrong (rel_err 0.6 > 0.0001)", "unresolved": "UNRESOLVED build"}[outcome]
    return AttemptRecord(i, phase, tuple(applied), label, outcome, verdict, None, runs, time_s, metrics=metrics or {})


def ablation(factors, culprits, attempts, *, interaction=False, proof=(), endpoints=None, **kw) -> AblationRecord:
    return AblationRecord(command="ablate", endpoints=endpoints or check([ok()], [wrong()]), ok=True, complete=True,
                          interrupted=False, runs=len(attempts) + 2, observations=len(attempts) + 2, wall_s=1.0,
                          subject=kw.pop("subject", None) or subject(factors), strategy="adaptive",
                          culprits=tuple(culprits), interaction=interaction, attempts=tuple(attempts),
                          proof=tuple(proof),
                          differences=tuple({"factor": f, "good": 0, "bad": 1, "alone": "-", "removed": "-",
                                             "verdict": "CULPRIT" if f in culprits else "cleared"} for f in factors),
                          **kw)


def interaction_record() -> AblationRecord:
    """The 6-vs-10-warps story: warps and mma_warp fail only together, tile and seed are benign."""
    factors = ["warps", "mma_warp", "tile", "seed"]
    return ablation(factors, ["warps", "mma_warp"], [
        attempt(1, ["warps", "mma_warp"], "fail"),
        attempt(2, ["warps"], "pass"),
        attempt(3, ["mma_warp", "tile"], "pass", phase="split-check"),
        attempt(4, ["warps", "tile", "seed"], "pass", phase="confirm-removal"),
    ], interaction=True, proof=[{"config": ["warps"], "outcome": "pass"}])


def commit(i: int) -> dict:
    sha = f"{i:02d}" + "ab" * 19
    return {"index": i, "sha": sha, "short": sha[:10], "subject": f"tune stage {i}", "author": "A <a@x>",
            "date": "2026-11-01"}


def bisect_record(n=12, first_bad=7, *, flaky=False, marginal=(), posterior=(), tested=None, skipped=()) -> BisectRecord:
    tested = tested if tested is not None else [
        {**commit(0), "index": None, "pass": 1, "fail": 0, "unresolved": 0},          # --good: not a candidate
        {**commit(n - 1), "pass": 0, "fail": 1, "unresolved": 0},
        {**commit(first_bad), "pass": 0, "fail": 2, "unresolved": 0},
        {**commit(first_bad - 1), "pass": 3, "fail": 0, "unresolved": 0}]
    hang = Run(Outcome.FAIL, FailKind.HANG, signature="timeout after 2.0 s", duration_s=2.0, timed_out=True)
    return BisectRecord(command="bisect", endpoints=check([ok()], [hang]), ok=True, complete=True, interrupted=False,
                        runs=7, observations=7, wall_s=3.0, subject=subject([]), repo="/r", good=commit(0)["sha"],
                        bad=commit(n - 1)["sha"], commits=n, flaky=flaky, mode="bayes" if flaky else "binary",
                        first_bad={**commit(first_bad), "files": ["kernel.py"]},
                        candidates=({**commit(first_bad), "files": ["kernel.py"]},),
                        last_good=({**commit(first_bad - 1), "verdict": "PASS"},), confidence=0.99,
                        skipped=tuple(commit(i) for i in skipped), posterior=tuple(posterior),
                        marginal=tuple(marginal), tested=tuple(sorted(tested, key=lambda t: -1 if t["index"] is None else t["index"])))


def hunk(file, start, end, kind="text") -> dict:
    hid = f"{file}:{start}-{end - 1}" if kind == "text" else f"{file}:{kind}"
    return {"id": hid, "file": file, "kind": kind, "good_lines": [start, end] if kind == "text" else [0, 0],
            "bad_lines": [start, end] if kind == "text" else [0, 0]}


def diff_record(index, culprits) -> DiffRecord:
    return DiffRecord(command="diff", endpoints=check([ok()], [wrong()]), ok=True, complete=True, interrupted=False,
                      runs=5, observations=5, wall_s=1.0, subject=subject([]), good="good", bad="bad",
                      hunks=len(index), hunk_index=tuple(index),
                      culprit_hunks=tuple({**h, "text": f"--- a/{h['file']}\n+++ b/{h['file']}\n-x = 1\n+x = 2\n"}
                                          for h in index if h["id"] in culprits),
                      diff="".join(f"--- a/{h['file']}\n+++ b/{h['file']}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
                                   for h in index if h["id"] in culprits))
