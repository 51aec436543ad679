"""`bisectk diff`: which hunks of the difference between two source trees cause the failure.

Abstractions
------------
HunkSpace   -- the hunks between GOOD and BAD (files or trees), a scratch copy of GOOD that a
               configuration (a set of hunk ids) is materialised into before each run, and the
               mapping between hunk ids and runner configurations.
DiffRun     -- the endpoint check, the hunk-level ablation, and the line-level refinement of the
               culprit hunks (the second, finer pass), with the culprit hunks and lines.
run_diff    -- verify (GOOD passes, BAD fails), ablate over hunks, then over the line-level
               sub-hunks of the culprits.

A hybrid that does not build is UNRESOLVED(BUILD), never a failure: the search routes around it.
The subject runs with the scratch tree as its working directory (BISECTK_TREE names it too), so
a command such as `python run.py` runs the hybrid.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.commands.ablate import FactorOracle
from bisectk.endpoints import EndpointCheck, verify
from bisectk.events import PhaseStarted
from bisectk.search import AblationResult, SearchInterrupted, ablate
from bisectk.spaces.hunks import Hunk, Scratch, diff_paths, split_lines
from bisectk.spec import Config

HUNKS_KEY = "__hunks__"


class HunkSpace:
    def __init__(self, good: Path, bad: Path, scratch_root: Path):
        self.good, self.bad = Path(good), Path(bad)
        self.hunks: list[Hunk] = diff_paths(good, bad)
        self.by_id: dict[str, Hunk] = {h.id: h for h in self.hunks}
        self.order: dict[str, int] = {h.id: i for i, h in enumerate(self.hunks)}
        self.scratch = Scratch(good, scratch_root)
        digest = hashlib.sha256()
        for h in self.hunks:
            digest.update(h.unified().encode("utf-8", "surrogateescape"))
        self.digest = digest.hexdigest()[:16]

    @property
    def workdir(self) -> Path:
        return self.scratch.root

    def add(self, hunks: list[Hunk]) -> None:
        for h in hunks:
            self.by_id[h.id] = h
            self.order.setdefault(h.id, len(self.order))

    def config(self, base: Config, ids) -> Config:
        ordered = sorted(ids, key=self.order.__getitem__)
        return {**base, HUNKS_KEY: "\n".join(ordered)}

    def prepare(self, config: Config) -> None:
        ids = [i for i in config.get(HUNKS_KEY, "").split("\n") if i]
        self.scratch.apply([self.by_id[i] for i in ids])

    def close(self) -> None:
        shutil.rmtree(self.scratch.root, ignore_errors=True)


@dataclass
class DiffRun:
    check: EndpointCheck
    space: HunkSpace
    result: AblationResult | None = None
    lines: AblationResult | None = None
    oracle: FactorOracle | None = None
    interrupted: bool = False
    wall_s: float = 0.0
    executed: int = 0
    culprit_hunks: list[Hunk] = field(default_factory=list)
    culprit_lines: list[Hunk] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.check.ok and self.result is not None


def run_diff(runner, space: HunkSpace, base: Config, *, repeat: int | None = None,
             strategy: str = "adaptive", refine: bool = True, max_runs: int | None = None) -> DiffRun:
    start = time.monotonic()
    all_ids = [h.id for h in space.hunks]
    check = verify(runner, repeat, space.config(base, []), space.config(base, all_ids))
    out = DiffRun(check, space)
    if not check.ok:
        out.wall_s = time.monotonic() - start
        return out
    oracle = FactorOracle(runner, check.target, make_config=lambda applied: space.config(base, applied),
                          label="hunks")
    out.oracle = oracle
    runner.events.emit(PhaseStarted("hunks", f"{strategy} over {len(all_ids)} hunks"))
    try:
        out.result = ablate(all_ids, oracle, strategy=strategy, max_runs=max_runs)
    except SearchInterrupted as stop:
        out.result, out.interrupted = stop.result, True
    out.culprit_hunks = [space.by_id[i] for i in out.result.culprits]
    if refine and not out.interrupted:
        _refine(runner, space, base, out, strategy)
    out.executed = runner.executed
    out.wall_s = time.monotonic() - start
    return out


def _refine(runner, space: HunkSpace, base: Config, out: DiffRun, strategy: str) -> None:
    """Second pass: split the culprit hunks into line-level sub-hunks and isolate those."""
    units: list[Hunk] = []
    whole: list[str] = []
    for h in out.culprit_hunks:
        parts = split_lines(h)
        if len(parts) > 1:
            units += parts
        else:
            whole.append(h.id)
    if not units:
        out.culprit_lines = list(out.culprit_hunks)
        return
    space.add(units)
    unit_ids = [u.id for u in units]
    runner.events.emit(PhaseStarted("lines", f"{strategy} over {len(unit_ids)} line-level units of the culprit hunks"))
    oracle = FactorOracle(runner, out.check.target,
                          make_config=lambda applied: space.config(base, [*whole, *applied]), label="lines")
    oracle.verdicts = out.oracle.verdicts  # one record of every configuration run
    try:
        out.lines = ablate(unit_ids, oracle, strategy=strategy)
    except SearchInterrupted as stop:
        out.lines, out.interrupted = stop.result, True
    out.culprit_lines = [space.by_id[i] for i in whole] + [space.by_id[i] for i in out.lines.culprits]
