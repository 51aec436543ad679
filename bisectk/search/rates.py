"""The one model of intermittent failure that every search shares: a race that got more frequent.

Model
-----
A run fails at one of two rates. Before the change that matters (a commit that does not descend
from the culprit, a configuration without the culprit set) it fails at p_old; from it on, at
p_new > p_old. p_old may be 0: the good side never fails (the one-sided case, where a failure is
proof that the culprit is among the run's ancestors). The runs are independent given the rates.

Prior (RatePrior): p_old is 0 with probability `old_zero`, a rare spurious failure (Beta(1, 100),
mean 0.01) with probability `rare`, else Beta(old); p_new is Beta(new); the pair is conditioned on
p_old < p_new. The presets are the modes of the commands:

- ONE_SIDED (old_zero = 1): p_old = 0, so a failure is proof and only passes are evidence
  (Beta(1, 2) on p_new: a few lucky early failures must not make passes read as proof). No
  command searches in it any more: the search's own default, and the base of a known p_new.
- TWO_RATE (--flaky): half the prior mass on p_old = 0, half on Beta(1, 4) (mean 0.2; a good side
  that fails more than half the time gets little prior belief), p_new Beta(1, 2) above it. A
  failure on the old side is evidence, not proof.
- SWITCHED: the model of an intermittent failure nobody declared (flake_model): the one a
  deterministic bisection goes on in once its own confirmation contradicted it
  (search/history.py), and the one a bisection starts in when the bad endpoint passed sometimes
  and --flaky was not given. Nothing was declared, and neither the contradiction nor bad's passes
  say which side is unsteady: a good commit's one spurious failure (a run starved past its
  watchdog, the OOM killer), a flaky culprit, or an undeclared race on both sides (the good
  endpoint's one passing run says little). 0.4 on p_old = 0, 0.4 on a rare spurious failure, 0.2
  on Beta(1, 4). Under ONE_SIDED there, one spurious failure of the culprit's parent was named the
  culprit at 0.99 in 40 of 40 simulated histories, and a race (0.3 -> 0.9) at 1.0 in 20 of 20
  (bench/switch_prior_sim.py, docs/debug/flake-switch-prior.md); a race (0.1 -> 0.4) whose bad
  endpoint passed first was named wrongly at >= 0.99 in 487 of 802 answers, 8 of 380 under
  SWITCHED (bench/flaky_calibration.py).

Rates are kept on a grid of (p_old, p_new) pairs (RateGrid): midpoints of `grid` cells for each,
p_old also at 0, pairs with p_old below p_new. A posterior is a weight per pair; everything a
search or a report says about the rates (means, 95% intervals) is read from those weights.

Abstractions
------------
RatePrior        -- the prior above; ONE_SIDED, TWO_RATE and SWITCHED.
flake_model      -- the prior a Bayesian bisection starts in: TWO_RATE under --flaky, else SWITCHED.
RateGrid         -- the prior on the grid, and the log likelihood of (fails, passes) counts on each
                    side for every pair (an outer product: U count rows x K pairs).
Rates            -- both rates as a posterior states them: means and 95% intervals, and the runs
                    that estimate them; `separated` says whether the intervals are apart.
rates_of         -- Rates from grid weights (a Bayesian search) or from counts (a deterministic
                    answer and endpoint runs: Wilson intervals).
RateRule         -- the verdict on one configuration of a factor or hunk search under two rates
                    measured at the endpoints (the Tester's rule with --flaky).
capacity         -- the bits one run can carry about which side a configuration is on, at the
                    best split (the channel capacity of "old side fails at p_old, new at p_new").
runs_to_separate -- how many more runs would probably locate the culprit at the asked
                    confidence, from the bits still missing and that capacity; and for two
                    endpoints, how many runs each would put their intervals apart.
runs_to_confirm  -- runs_to_separate, or where more, the runs that give the leading commit the
                    log-odds the confidence asks (what a Bayesian search reports as more_runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bisectk.outcome import Outcome
from bisectk.search.flaky import wilson

EFFICIENCY = 0.5    # share of capacity the searches get per run (bench/runs_bench.py: about 0.5-0.7)


def _entr(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, -x * np.log(safe), 0.0)


def _h2(p: np.ndarray | float) -> np.ndarray:
    """Binary entropy in bits."""
    p = np.asarray(p, dtype=float)
    return (_entr(p) + _entr(1.0 - p)) / math.log(2.0)


def _log_beta_pdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
    norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    with np.errstate(divide="ignore"):
        return norm + (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x)


def _xlogy(x: np.ndarray, logy: np.ndarray) -> np.ndarray:
    """x * log y as an outer product (rows of x, columns of y), 0 where x = 0."""
    with np.errstate(invalid="ignore"):
        out = np.asarray(x, dtype=float)[:, None] * logy[None, :]
    return np.where(np.asarray(x)[:, None] > 0, out, 0.0)


@dataclass(frozen=True)
class RatePrior:
    """The prior over (p_old, p_new). `known_new`: p_new is given (and p_old = 0)."""

    old_zero: float = 1.0                       # P(p_old = 0)
    old: tuple[float, float] = (1.0, 4.0)       # Beta of p_old when it is not 0 and not rare
    rare: float = 0.0                           # P(p_old is a rare spurious failure: Beta(rare_beta))
    rare_beta: tuple[float, float] = (1.0, 100.0)
    new: tuple[float, float] = (1.0, 2.0)       # Beta of p_new
    grid: int = 100                             # cells per rate
    known_new: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.old_zero <= 1.0:
            raise ValueError(f"old_zero must be in [0, 1], got {self.old_zero}")
        if not 0.0 <= self.rare <= 1.0 - self.old_zero:
            raise ValueError(f"rare must be in [0, 1 - old_zero], got {self.rare}")
        if self.known_new is not None and not 0.0 < self.known_new <= 1.0:
            raise ValueError(f"fail_prob must be in (0, 1], got {self.known_new}")
        if self.grid < 2:
            raise ValueError("a rate grid needs at least 2 cells")

    @property
    def one_sided(self) -> bool:
        return self.old_zero >= 1.0 or self.known_new is not None

    def build(self) -> RateGrid:
        return RateGrid(self)


ONE_SIDED = RatePrior()
TWO_RATE = RatePrior(old_zero=0.5, grid=50)
SWITCHED = RatePrior(old_zero=0.4, rare=0.4, grid=50)


def flake_model(declared: bool) -> RatePrior:
    """The prior of a flake-aware bisection: TWO_RATE when --flaky declared a race that got more
    frequent, else SWITCHED (the bad endpoint passed sometimes, and nothing says the good side
    never fails: ONE_SIDED would read an undeclared race's first old-side failure as proof)."""
    return TWO_RATE if declared else SWITCHED


class RateGrid:
    """The prior on a grid of (p_old, p_new) pairs: `old`, `new` and `log_prior`, K entries each."""

    def __init__(self, prior: RatePrior):
        self.prior = prior
        if prior.known_new is not None:
            old, new, logp = np.zeros(1), np.array([float(prior.known_new)]), np.zeros(1)
        else:
            g = prior.grid
            mids = (np.arange(g) + 0.5) / g
            log_new = _log_beta_pdf(mids, *prior.new) - math.log(g)
            olds, news, logs = [np.zeros(g)], [mids], [np.full(g, -np.inf) if prior.old_zero <= 0
                                                        else math.log(prior.old_zero) + log_new]
            if prior.old_zero < 1.0:
                wide = 1.0 - prior.old_zero - prior.rare
                with np.errstate(divide="ignore"):
                    log_old = np.logaddexp(_log_beta_pdf(mids, *prior.old) + math.log(wide) if wide > 0 else -np.inf,
                                           _log_beta_pdf(mids, *prior.rare_beta) + math.log(prior.rare)
                                           if prior.rare > 0 else -np.inf) - math.log(g)
                i_old, i_new = np.triu_indices(g, k=1)     # p_old cell strictly below p_new's
                olds.append(mids[i_old])
                news.append(mids[i_new])
                logs.append(log_old[i_old] + log_new[i_new])
            old, new, logp = np.concatenate(olds), np.concatenate(news), np.concatenate(logs)
            keep = np.isfinite(logp)
            old, new, logp = old[keep], new[keep], logp[keep]
        self.old, self.new = old, new
        self.log_prior = logp - np.logaddexp.reduce(logp)
        with np.errstate(divide="ignore"):
            self.log_old, self.log1m_old = np.log(old), np.log1p(-old)
            self.log_new, self.log1m_new = np.log(new), np.log1p(-new)

    def __len__(self) -> int:
        return self.old.size

    def loglik(self, new_fails: np.ndarray, new_passes: np.ndarray, old_fails: np.ndarray,
               old_passes: np.ndarray) -> np.ndarray:
        """log p(counts | pair) + log prior(pair): one row per count vector entry, one column per pair."""
        return (_xlogy(new_fails, self.log_new) + _xlogy(new_passes, self.log1m_new)
                + _xlogy(old_fails, self.log_old) + _xlogy(old_passes, self.log1m_old)
                + self.log_prior[None, :])


@dataclass(frozen=True)
class Rates:
    """Both failure rates: posterior means (or observed fractions) and 95% intervals."""

    old: float
    old_lo: float
    old_hi: float
    new: float
    new_lo: float
    new_hi: float
    old_runs: int = 0       # the runs that estimate each rate (old side: the good endpoint included)
    new_runs: int = 0
    kind: str = "posterior"     # 'posterior' (credible intervals) or 'observed' (Wilson intervals)

    @property
    def separated(self) -> bool:
        """The two 95% intervals do not overlap."""
        return self.old_hi < self.new_lo

    def to_dict(self) -> dict[str, object]:
        return {"p_old": round(self.old, 4), "p_old_ci95": [round(self.old_lo, 4), round(self.old_hi, 4)],
                "p_new": round(self.new, 4), "p_new_ci95": [round(self.new_lo, 4), round(self.new_hi, 4)],
                "old_runs": self.old_runs, "new_runs": self.new_runs, "kind": self.kind}


def _quantiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cdf = np.cumsum(w) / w.sum()
    return [float(v[min(int(np.searchsorted(cdf, q)), v.size - 1)]) for q in qs]


def rates_of(grid: RateGrid, weights: np.ndarray, old_runs: int = 0, new_runs: int = 0) -> Rates:
    """Rates from posterior weights over the grid's pairs (they need not be normalised)."""
    w = np.asarray(weights, dtype=float)
    total = w.sum()
    if not total > 0:
        raise ValueError("no posterior mass on any pair of rates")
    lo_o, hi_o = _quantiles(grid.old, w, (0.025, 0.975))
    lo_n, hi_n = _quantiles(grid.new, w, (0.025, 0.975))
    # a grid point is the middle of its cell: the interval spans the cells it reaches
    half = 0.5 / grid.prior.grid if grid.prior.known_new is None else 0.0
    return Rates(float(w @ grid.old / total), max(0.0, lo_o - half) if hi_o > 0 else 0.0,
                 min(1.0, hi_o + half) if hi_o > 0 else 0.0, float(w @ grid.new / total),
                 max(0.0, lo_n - half), min(1.0, hi_n + half), old_runs, new_runs)


def observed_rates(old_fails: int, old_runs: int, new_fails: int, new_runs: int) -> Rates:
    """Rates as counted (a deterministic answer, endpoint runs), with Wilson 95% intervals."""
    lo_o, hi_o = wilson(old_fails, old_runs)
    lo_n, hi_n = wilson(new_fails, new_runs)
    return Rates(old_fails / old_runs if old_runs else 0.0, lo_o, hi_o,
                 new_fails / new_runs if new_runs else 0.0, lo_n, hi_n, old_runs, new_runs, "observed")


def capacity(p_old: float, p_new: float) -> float:
    """Bits per run at the best split: max over pi of I(side; outcome) when a run on the new side
    (probability pi) fails at p_new and one on the old side at p_old."""
    if not p_new > p_old:
        return 0.0
    pi = np.linspace(0.001, 0.999, 999)
    mixed = pi * p_new + (1.0 - pi) * p_old
    info = _h2(mixed) - pi * _h2(p_new) - (1.0 - pi) * _h2(p_old)
    return float(max(info.max(), 0.0))


def runs_to_separate(bits: float, p_old: float, p_new: float) -> int | None:
    """About how many runs would gather `bits` more bits about the culprit at these rates (the
    capacity, at the share of it the searches reach); None when the rates do not differ."""
    c = capacity(p_old, p_new) * EFFICIENCY
    if c <= 1e-9:
        return None
    return max(1, math.ceil(max(bits, 0.0) / c))


def runs_to_confirm(marginal: np.ndarray, confidence: float, p_old: float, p_new: float) -> int | None:
    """About how many more runs would locate the culprit at `confidence`: the larger of the runs
    that gather the bits still missing (runs_to_separate) and those that give the leading commit
    the evidence it lacks. The bits alone ran low at high confidence (0.9999: about a third of
    the runs a search then made): reaching 0.9999 from 0.99 is 0.08 bits of entropy, but its
    log-odds must still grow by log(100), and a run adds on average only KL(p_new || p_old) nats
    at the commit and KL(p_old || p_new) at its parent, both of which the answer rests on. None
    when the rates do not differ."""
    located = runs_to_separate(bits_missing(marginal, confidence), p_old, p_new)
    if located is None:
        return None
    top = min(float(np.max(marginal)), 1.0 - 1e-12) if np.size(marginal) else 0.0
    gap = _logit(confidence) - _logit(max(top, 1e-12))
    if gap <= 0:
        return located
    confirm = gap * (1.0 / _kl(p_new, p_old) + 1.0 / _kl(p_old, p_new))
    return max(located, math.ceil(confirm))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _kl(p: float, q: float) -> float:
    """KL(Bernoulli(p) || Bernoulli(q)) in nats, the rates kept off 0 and 1 (a rate measured as 0
    is no proof that the side never fails)."""
    p, q = (min(max(x, 1e-6), 1.0 - 1e-6) for x in (p, q))
    return p * math.log(p / q) + (1.0 - p) * math.log((1.0 - p) / (1.0 - q))


def endpoint_runs_to_separate(old_fails: int, old_runs: int, new_fails: int, new_runs: int,
                              z: float = 1.96) -> int | None:
    """About how many runs of each endpoint would put the two 95% intervals apart, if the rates
    stay as measured; 0 when they are apart already, None when bad does not fail more often."""
    p0 = old_fails / old_runs if old_runs else 0.0
    p1 = new_fails / new_runs if new_runs else 0.0
    if wilson(old_fails, old_runs)[1] < wilson(new_fails, new_runs)[0]:
        return 0
    if not p1 > p0:
        return None
    spread = math.sqrt(p0 * (1 - p0)) + math.sqrt(p1 * (1 - p1)) + 0.5 / z   # keeps 0 and 1 honest
    need = math.ceil((z * spread / (p1 - p0)) ** 2)
    return max(1, need - min(old_runs, new_runs))


def bits_missing(marginal: np.ndarray, confidence: float) -> float:
    """Bits between the culprit posterior now and one that holds `confidence` on one commit:
    its entropy minus the entropy left at the stop (confidence on one, the rest spread)."""
    m = np.asarray(marginal, dtype=float)
    m = m[m > 0]
    h_now = float(_entr(m).sum()) / math.log(2.0)
    rest = max(m.size - 1, 1)
    h_stop = float(_h2(confidence)) + (1.0 - confidence) * math.log2(rest)
    return max(h_now - h_stop, 0.0)


class RateRule:
    """Two-rate verdicts on one configuration of a factor or hunk search (the Tester's rule).

    The endpoints measure both rates: the good endpoint's runs are old-side runs, the bad
    endpoint's new-side runs, and the prior (TWO_RATE) turns them into a posterior over the pair.
    A configuration is on the new side (it holds the culprit set: FAIL) or the old side (PASS),
    each a priori as likely. After f failures and s passes of it,

        P(new side | runs) = E[p_new^f (1-p_new)^s] / (E[p_new^f (1-p_new)^s] + E[p_old^f (1-p_old)^s]),

    expectations under that posterior. The verdict is FAIL when this reaches 1 - alpha, PASS when
    it falls to alpha, and UNRESOLVED after `max_runs` runs without either (a configuration whose
    rate lies between the two: neither side explains it). With p_old = 0 certain this is the
    one-sided rule: one failure decides. A run that is UNRESOLVED is taken as it is.
    """

    def __init__(self, good_fails: int, good_runs: int, bad_fails: int, bad_runs: int, *,
                 alpha: float = 0.01, prior: RatePrior = TWO_RATE, max_runs: int = 60):
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
        self.good_fails, self.good_runs, self.fails, self.runs = good_fails, good_runs, bad_fails, bad_runs
        self.alpha, self.prior, self.max_runs = alpha, prior, max_runs
        self.grid = prior.build()
        log = self.grid.loglik(np.array([bad_fails]), np.array([bad_runs - bad_fails]),
                               np.array([good_fails]), np.array([good_runs - good_fails]))[0]
        if not np.isfinite(log.max()):
            raise ValueError("the endpoint runs fit no pair of rates of this prior")
        self._weights = np.exp(log - log.max())
        self._weights /= self._weights.sum()
        self.rates = rates_of(self.grid, self._weights, good_runs, bad_runs)
        self.repeats = next((s for s in range(1, max_runs + 1)
                             if self.verdict([Outcome.PASS] * s) is not None), max_runs)

    def new_side(self, fails: int, passes: int) -> float:
        """P(the configuration is on the new side | its fails and passes)."""
        g = self.grid
        with np.errstate(divide="ignore", invalid="ignore"):
            ln = fails * g.log_new + passes * g.log1m_new
            lo = np.where(g.old > 0, fails * g.log_old, 0.0 if fails == 0 else -np.inf) + passes * g.log1m_old
        top = max(ln.max(), lo.max())
        l_new = float(self._weights @ np.exp(ln - top))
        l_old = float(self._weights @ np.exp(lo - top))
        return l_new / (l_new + l_old) if l_new + l_old > 0 else 0.5

    def verdict(self, runs) -> Outcome | None:
        fails = passes = 0
        for outcome in runs:
            if outcome is Outcome.UNRESOLVED:
                return outcome
            fails += outcome is Outcome.FAIL
            passes += outcome is Outcome.PASS
        if not runs:
            return None
        p = self.new_side(fails, passes)
        if p >= 1.0 - self.alpha:
            return Outcome.FAIL
        if p <= self.alpha:
            return Outcome.PASS
        return Outcome.UNRESOLVED if len(runs) >= self.max_runs else None

    def describe(self) -> str:
        r = self.rates
        return (f"two rates: good fails {self.good_fails}/{self.good_runs}, bad {self.fails}/{self.runs} "
                f"(p_old {r.old:.2f} [{r.old_lo:.2f}, {r.old_hi:.2f}], p_new {r.new:.2f} [{r.new_lo:.2f}, "
                f"{r.new_hi:.2f}]); a configuration is cleared after {self.repeats} passes in a row")

    def to_dict(self) -> dict[str, object]:
        """Facts for the records (report/ words them)."""
        return {"kind": "two-rate", "text": self.describe(), "good_fails": self.good_fails, "good_runs": self.good_runs,
                "fails": self.fails, "runs": self.runs, "alpha": self.alpha, "repeats": self.repeats,
                "max_runs": self.max_runs, "rates": self.rates.to_dict(),
                "fails_to_convict": next((f for f in range(1, self.max_runs + 1)
                                          if self.new_side(f, 0) >= 1.0 - self.alpha), None)}
