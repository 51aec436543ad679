"""search/separation.py: whether one run tells good from bad under a SLOW rule, on seeded samples."""
import random

from bisectk.search.separation import separate


def _sample(seed, n, centre, noise):
    rng = random.Random(seed)
    return [centre * (1 + rng.gauss(0, noise)) for _ in range(n)]


def test_a_regression_well_beyond_the_noise_is_clear():
    good, bad = _sample(1, 10, 100, 0.02), _sample(2, 10, 130, 0.02)
    found = separate(good, bad, 100, 1.15, higher=False)
    assert found.clear and found.crossed == (0, 0) and found.p_shift < 1e-3 and found.margin > 3


def test_a_shift_of_the_order_of_the_noise_is_not_separable_run_by_run():
    """+10% with 3% noise under slow_factor 1.05: the two differ as distributions (Mann-Whitney),
    but the threshold lies within 2 standard deviations of both medians; a factor halfway exists."""
    good, bad = _sample(3, 10, 100, 0.03), _sample(4, 10, 110, 0.03)
    found = separate(good, bad, 100, 1.05, higher=False)
    assert not found.clear and found.p_shift < 0.01 and found.margin < 2
    assert found.factor is None or 1.0 < found.factor < 1.1


def test_a_shift_inside_the_noise_is_not_told_apart():
    good, bad = _sample(5, 10, 100, 0.05), _sample(6, 10, 101, 0.05)
    found = separate(good, bad, 100, 1.02, higher=False)
    assert not found.clear and found.p_shift > 0.01 and found.factor is None


def test_a_throughput_is_worse_lower():
    good, bad = _sample(7, 10, 1000, 0.01), _sample(8, 10, 700, 0.01)
    assert separate(good, bad, 1000, 1.1, higher=True).clear
    assert not separate(bad, good, 700, 1.1, higher=True).clear     # "bad" faster: not this failure


def test_no_spread_settles_on_the_first_runs():
    found = separate([100.0] * 3, [130.0] * 3, 100, 1.1, higher=False, early=True)
    assert found.clear and found.p_shift is None
    assert not separate([100.0, 100, 112], [130.0] * 3, 100, 1.1, higher=False, early=True).clear


def test_an_infinite_value_is_past_the_threshold_not_a_spread():
    """slowrule: an infinity is a value (the slowest time, a throughput of none). In log space it
    made every deviation inf or NaN (inf - inf): a bad side that hung its timer at inf in most runs
    had margin NaN ('nan standard deviations') and was refused, one that did in a few had margin
    0.0. The spread is the finite values' noise; an infinite value is counted where it falls."""
    good = _sample(1, 10, 100, 0.02)
    for bad in ([float("inf")] * 10, [float("inf")] * 6 + _sample(2, 4, 200, 0.02),
                [float("inf")] * 2 + _sample(3, 8, 200, 0.02)):
        for early in (True, False):
            found = separate(good, bad, 100, 1.3, higher=False, early=early)
            assert found.clear and found.crossed == (0, 0) and found.margin > 4, (bad, found)
            assert found.factor is None or found.factor < float("inf"), found
    found = separate(good + [float("inf")], _sample(4, 10, 200, 0.02), 100, 1.3, higher=False)
    assert not found.clear and found.crossed == (1, 0) and found.margin == found.margin, found   # no NaN
    # a throughput: good's infinite rate is the best there is, bad's are finite and low
    found = separate([float("inf")] * 3 + _sample(5, 7, 100, 0.02), _sample(6, 10, 50, 0.02), 100, 1.3, higher=True)
    assert found.clear and found.margin > 4, found
