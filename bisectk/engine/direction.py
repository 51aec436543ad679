"""Which way a bisection looks: for the commit that broke something (the default), or for the one
that fixed it (`--find-fix`), and the words for its two sides (git's `--term-old/--term-new`).

git's model, kept here: the candidates lie between the *old* side (the goods) and the *new* one
(bad); the search names the first *new* commit, the first whose behaviour is the new side's. What
changes between a regression and a fix is only which behaviour is new:

- a regression: old = the subject passes, new = it fails (the target failure): "first bad commit";
- a fix (`--find-fix`): old = it fails, new = it passes: "first fixed commit". The user gives
  `--bad` (the older commit, where it fails) and `--good` (the newer one, where it passes), as
  mozregression's --find-fix does, and never inverts their script.

git's `--term-old/--term-new` only name the two sides ("first <new> commit"); as in git, a run's
exit 0 is the old side and a failure the new one, unless `--find-fix` says the failure is the old
behaviour.

Abstractions
------------
Terms        -- the two names and the direction; `new_side(outcome)` turns a judged run of the
                subject into the search's outcome (FAIL = the new side), and `of()` validates the
                options as git does (one line, never a traceback).
FixOracle    -- the search's oracle for a fix: a run that passes is the new side, one that shows
                the target failure the old. When that failure is intermittent, a pass proves
                nothing by itself (the old side also passes sometimes) while a failure proves the
                commit is still broken, so each probe is run until it fails, or `repeats` times:
                R = ceil(log(1 - confidence) / log(1 - q)) for the old side's failure rate q.
                The one-rate Bayesian model (search/dag_bayes.py) assumes the opposite (a failure
                is proof of the new side), so it is not used for a fix; `confidence()` is the
                probability that no probe called fixed was a broken commit passing R times;
                `more_runs()` the repeats beyond one a probe, which --max-runs counts too.
repeats_for  -- that R, clamped to [2, MAX_REPEATS], for the commits a bisection calls fixed together.
fix_confidence -- FixOracle.confidence() from the calls made (a replayed log's too).
fix_base     -- the broken end's runs as the search's old-end counts (its confirmation weighs them).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bisectk.errors import BisectkError
from bisectk.outcome import Outcome

MAX_REPEATS = 50
# git bisect's subcommands cannot be terms (git refuses them too); nor the manual mode's words
RESERVED = {"help", "start", "skip", "next", "reset", "visualize", "view", "replay", "log", "run", "terms",
            "undo", "quit"}
_TERM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


@dataclass(frozen=True)
class Terms:
    old: str = "good"
    new: str = "bad"
    find_fix: bool = False

    @classmethod
    def of(cls, find_fix: bool = False, term_old: str | None = None, term_new: str | None = None) -> Terms:
        for opt, given in (("--term-old", term_old), ("--term-new", term_new)):
            if given is not None and not given:     # '' is not "the default"
                raise BisectkError(f"{opt} is empty: a term is one word")
        old = term_old or ("broken" if find_fix else "good")
        new = term_new or ("fixed" if find_fix else "bad")
        for opt, term in (("--term-old", old), ("--term-new", new)):
            if not _TERM.match(term):
                raise BisectkError(f"{opt} {term!r}: a term is one word of letters, digits, '.', '_' or '-', "
                                  "starting with a letter or digit, at most 40 characters")
            if term in RESERVED:
                raise BisectkError(f"{opt} {term!r}: that word is a command of git bisect; choose another term")
        if old == new:
            raise BisectkError(f"--term-old and --term-new are the same word ({old!r})")
        # git refuses to change the meaning of good/old and bad/new: 'bad' and 'new' can only name
        # the new side, 'good' and 'old' only the old one
        if old in ("bad", "new") or new in ("good", "old"):
            word = old if old in ("bad", "new") else new
            raise BisectkError(f"--term-{'old' if old == word else 'new'} {word!r}: git's meaning of that word cannot "
                               "change ('good'/'old' name the old side, 'bad'/'new' the new one); for a fix use --find-fix")
        return cls(old, new, find_fix)

    @property
    def default(self) -> bool:
        return (self.old, self.new) == ("good", "bad") and not self.find_fix

    def new_side(self, outcome: Outcome) -> Outcome:
        """A judged run of the subject as the search sees it: FAIL = the new side."""
        if not self.find_fix or outcome is Outcome.UNRESOLVED:
            return outcome
        return Outcome.PASS if outcome is Outcome.FAIL else Outcome.FAIL

    def subject(self, side: Outcome) -> Outcome:
        """The inverse of new_side: the subject's outcome that a side stands for."""
        return self.new_side(side)

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "find_fix": self.find_fix}


def repeats_for(fail_rate: float, confidence: float, candidates: int = 1) -> int:
    """Runs of a probe that make R passes of a broken commit (failing at `fail_rate`) less likely
    than 1 - confidence, over the commits a bisection of `candidates` calls fixed: about
    log2(candidates + 1) of them, each held to confidence^(1 / that), so that all of them together
    hold `confidence` (each held to `confidence` alone, a bisection over 16 commits answered at
    0.86-0.95 where 0.99 was asked)."""
    if fail_rate >= 1.0:
        return 1
    if fail_rate <= 0.0:
        return MAX_REPEATS
    each = confidence ** (1.0 / max(1, math.ceil(math.log2(candidates + 1))))
    r = math.ceil(math.log(1.0 - each) / math.log(1.0 - fail_rate))
    return max(2, min(MAX_REPEATS, r))


def fix_confidence(fail_rate: float, repeats: int, calls: Iterable[int]) -> float:
    """P(no commit called fixed was a broken one that passed every run): `calls` holds, for each
    commit called fixed, how often (a confirmation calls the fixed commit again: R more passes of
    the same commit, which a broken one gives with the chance of R passes squared, not another
    commit's chance)."""
    if repeats <= 1:
        return 1.0
    miss = (1.0 - fail_rate) ** repeats
    return math.prod(1.0 - miss ** c for c in calls)


def fix_base(broken) -> tuple[int, int]:
    """The broken end's runs (a Rate: its failures of `runs`) as the search counts them: the old
    end's (FAILs, PASSes), where a pass of the subject is the search's FAIL."""
    return broken.runs - broken.fails, broken.fails


class FixOracle:
    """The search's oracle when it looks for a fix (see the module docstring). `oracle` is the
    Oracle of engine/oracle.py (it judges each run against the target; its trials record it)."""

    def __init__(self, oracle, terms: Terms, repeats: int = 1, fail_rate: float = 1.0):
        self.oracle, self.terms, self.repeats, self.fail_rate = oracle, terms, max(1, repeats), fail_rate
        self.called: dict[Any, int] = {}    # commits judged the new side (fixed) by `repeats` passes: how often
        self.repeated = 0               # runs made beyond one a probe: --max-runs counts them too
        self._lock = threading.Lock()

    def __call__(self, point: Any) -> Outcome:
        outcome = Outcome.UNRESOLVED
        for made in range(self.repeats):
            if made:
                with self._lock:
                    self.repeated += 1
            outcome = self.oracle(point)
            if outcome is not Outcome.PASS:
                break           # still broken (a failure proves it), or untestable
        side = self.terms.new_side(outcome)
        if side is Outcome.FAIL and self.repeats > 1:
            with self._lock:
                self.called[point] = self.called.get(point, 0) + 1
        return side

    def more_runs(self) -> int:
        """The runs made beyond one a probe (the repeats here, and the oracle's own): what the
        search's run budget counts besides its probes (SearchOptions.more_runs)."""
        with self._lock:
            return self.repeated + self.oracle.more_runs()

    def batch(self, points: Sequence[Any]) -> list[Outcome]:
        if len(points) <= 1:
            return [self(p) for p in points]
        with ThreadPoolExecutor(max_workers=len(points)) as ex:
            return list(ex.map(self, points))

    def confidence(self) -> float:
        """P(no commit called fixed was a broken one that passed all its runs): fix_confidence."""
        with self._lock:
            return fix_confidence(self.fail_rate, self.repeats, list(self.called.values()))
