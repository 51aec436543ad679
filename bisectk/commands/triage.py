"""`bisectk triage`: one command for CI -- classify the failure, bisect history to the first bad
commit, then isolate the culprit hunks inside that commit's diff.

Abstractions
------------
export_tree  -- a commit's tree as plain files (`git archive`), outside the user's checkout.
TriageRun    -- the bisection (endpoints, first bad commit) and the diff isolation inside it.
run_triage   -- the three steps; each later step runs only if the earlier one found something.
verdict_code -- the CI exit code: 0 nothing to triage (bad does not fail), 1 culprit found,
                2 inconclusive (endpoints unusable, ambiguous history, interrupted).
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bisectk.commands.bisect import BisectRun, CommitOracle, run_bisect
from bisectk.commands.diffiso import DiffRun, HunkSpace, run_diff
from bisectk.errors import BisectkError
from bisectk.events import PhaseStarted
from bisectk.outcome import Outcome
from bisectk.spaces.commits import SpaceError, _env


def export_tree(repo: Path, sha: str, dest: Path) -> Path:
    proc = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "archive", "--format=tar", sha], cwd=repo,
                          env=_env(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise SpaceError(f"git archive {sha[:10]} failed: {proc.stderr.decode(errors='replace').strip()[-200:]}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="tar")
    return dest


@dataclass
class TriageRun:
    bisect: BisectRun
    diff: DiffRun | None = None
    diff_error: str | None = None

    @property
    def nothing_to_triage(self) -> bool:
        b = self.bisect.check.bad
        return (not self.bisect.check.ok and self.bisect.check.good.outcome is Outcome.PASS
                and b.outcome is Outcome.PASS)

    @property
    def found(self) -> bool:
        r = self.bisect.result
        return bool(self.bisect.ok and r and r.complete and not r.ambiguous and not self.bisect.interrupted)


def verdict_code(t: TriageRun) -> int:
    if t.nothing_to_triage:
        return 0
    return 1 if t.found else 2


def run_triage(oracle: CommitOracle, *, workspace, scratch_root: Path, repeat: int = 1, flaky: bool | None = None,
               jobs: int = 1, confidence: float = 0.99, subdir: Path = Path(".")) -> TriageRun:
    bis = run_bisect(oracle, repeat=repeat, flaky=flaky, jobs=jobs, confidence=confidence)
    out = TriageRun(bis)
    if not out.found:
        return out
    res, commits = bis.result, bis.commits
    good_sha, bad_sha = commits[res.last_good].sha, commits[res.first_bad].sha
    oracle.events.emit(PhaseStarted("triage", f"isolating hunks of {commits[res.first_bad].short} "
                                              f"against {commits[res.last_good].short}"))
    with tempfile.TemporaryDirectory(prefix="bisectk-triage-") as tmp:
        try:
            good_tree = export_tree(commits.repo, good_sha, Path(tmp) / "good")
            bad_tree = export_tree(commits.repo, bad_sha, Path(tmp) / "bad")
            space = HunkSpace(good_tree, bad_tree, scratch_root)
        except BisectkError as exc:
            out.diff_error = str(exc)
            return out
        try:
            runner = workspace.runner(oracle.session, cwd=space.workdir / subdir, revision=f"triage-{space.digest}",
                                      prepare=space.prepare, extra_env={"BISECTK_TREE": str(space.workdir)})
            runner.timeout, runner.judge.baseline = oracle.timeout, oracle.baseline
            out.diff = run_diff(runner, space, oracle.config, repeat=repeat)
        finally:
            space.close()
    return out

