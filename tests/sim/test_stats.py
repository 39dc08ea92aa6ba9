"""``sim/stats.py`` by hand: a paired difference and its bootstrap interval, an interval kept within the metric's
range, the verdict's counting; and the sweep's paired comparisons and best conf per setting on hand-made rows."""

from __future__ import annotations

import pytest

from pyvolcano.sim import stats
from pyvolcano.sim import sweep as sw
from pyvolcano.sim.metric_registry import METRICS, Metric

WAIT = METRICS["wait_p95"]


def test_paired_difference_and_interval_by_hand() -> None:
    # differences b - a: -2, -4, -3; mean -3.  A resample of three is all -4 with probability 1/27 = 3.7 % (more
    # than the 2.5 % tail), all -2 likewise: the 95 % percentile interval is exactly [-4, -2]
    p = stats.paired(WAIT, {0: 10.0, 1: 20.0, 2: 30.0}, {0: 8.0, 1: 16.0, 2: 27.0})
    assert p.seeds == (0, 1, 2)
    assert p.diff_mean == pytest.approx(-3.0)
    assert p.diff_ci == (-4.0, -2.0)
    assert (p.b_better, p.b_worse) == (3, 0)
    # relative to a's mean (20): -15 % [-20, -10]
    assert p.verdict() == "better on 3 of 3 seeds, wait p95 (s) -15 % [-20, -10]"
    assert p.as_json() == {"metric": "wait_p95", "seeds": [0, 1, 2], "diff_mean": -3.0, "diff_ci": [-4.0, -2.0],
                           "b_better_seeds": 3, "verdict": p.verdict()}


def test_the_bootstrap_is_reproducible() -> None:
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    assert stats.bootstrap_mean(values) == stats.bootstrap_mean(values)
    m, lo, hi = stats.bootstrap_mean(values)
    assert m == pytest.approx(31 / 8) and 1.0 <= lo < m < hi <= 9.0


def test_interval_of_a_count_never_below_zero() -> None:
    # evictions 0, 0, 0, 9 (mean 2.25): Student's t gave 2.25 +- 7.16, i.e. down to -4.9.  The bootstrap: a
    # resample's mean is 9k/4 with k ~ Binomial(4, 1/4); P(k = 0) = 31.6 % so the 2.5th percentile is 0;
    # P(k >= 3) = 5.1 % and P(k = 4) = 0.4 %, so the 97.5th is 6.75
    assert stats.interval([0.0, 0.0, 0.0, 9.0], METRICS["evictions"]) == (2.25, 0.0, 6.75)
    # and an interval is clipped to the metric's range: a metric that cannot be below 1 (or above 5)
    floor = Metric("x", "x", "", "lower", ("x",), "a metric between 1 and 5", low=1.0, high=5.0)
    assert stats.interval([0.0, 0.0, 0.0, 9.0], floor) == (2.25, 1.0, 5.0)
    # a difference of two fractions lies in [-1, 1]
    assert stats.diff_range(METRICS["util_gpu"]) == (-1.0, 1.0)


def test_verdict_counts_seeds_and_needs_an_interval_clear_of_zero() -> None:
    # b better on seeds 0 and 2, worse on 1, equal on 3: differences -5, +2, -4, 0, the interval holds 0
    p = stats.paired(WAIT, {0: 10.0, 1: 10.0, 2: 10.0, 3: 10.0}, {0: 5.0, 1: 12.0, 2: 6.0, 3: 10.0})
    assert (p.b_better, p.b_worse, p.n) == (2, 1, 4)
    assert p.diff_ci[0] < 0 < p.diff_ci[1]
    assert p.verdict().startswith("no clear difference (better on 2, worse on 1 of 4 seeds; wait p95 (s) ")
    # two seeds both better: too few for a verdict
    two = stats.paired(WAIT, {0: 10.0, 1: 10.0}, {0: 5.0, 1: 6.0})
    assert two.verdict().startswith("no clear difference (only 2 seeds;")
    # higher is better for utilisation: b higher on every seed is better; from a mean of 0, points not per cent
    util = stats.paired(METRICS["util_gpu"], {0: 0.0, 1: 0.0, 2: 0.0}, {0: 0.5, 1: 0.5, 2: 0.5})
    assert util.verdict() == "better on 3 of 3 seeds, utilisation gpu +50.0 points [+50.0, +50.0]"
    worse = stats.paired(WAIT, {0: 10.0, 1: 10.0, 2: 10.0}, {0: 11.0, 1: 12.0, 2: 13.0})
    assert worse.verdict() == "worse on 3 of 3 seeds, wait p95 (s) +20 % [+10, +30]"
    # seeds missing from either side, or without a value, are not paired
    gaps = stats.paired(WAIT, {0: 1.0, 1: None, 2: 3.0}, {0: 1.0, 1: 2.0, 3: 4.0})
    assert gaps.seeds == (0,)
    assert stats.paired(METRICS["failed"], {0: 0.0, 1: 0.0, 2: 0.0}, {0: 0.0, 1: 0.0, 2: 0.0}).verdict() == \
        "the same on all 3 seeds"
    assert stats.paired(METRICS["jobs"], {0: 1.0}, {0: 2.0}).verdict().startswith("no direction")


def _row(conf: str, params: dict[str, sw.Scalar], waits: list[float]) -> sw.Row:
    per_seed: dict[int, dict[str, float | None]] = {s: {"wait_p95": w} for s, w in enumerate(waits)}
    return sw.Row(conf, params, list(per_seed), {"wait_p95": stats.interval(waits, WAIT)}, per_seed)


def test_best_and_pairs_stay_within_a_setting_of_the_other_knobs() -> None:
    """At low load every conf waits little: the best over all rows would be a low-load row whatever the confs
    do.  Within each rate the best is the conf that waits less there, and only confs at the same rate pair."""
    rows = [_row("a", {"rate": 0.1, "conf.actions": "x"}, [1.0, 2.0, 3.0]),
            _row("b", {"rate": 0.1, "conf.actions": "x"}, [2.0, 3.0, 4.0]),
            _row("a", {"rate": 1.0, "conf.actions": "x"}, [50.0, 60.0, 70.0]),
            _row("b", {"rate": 1.0, "conf.actions": "x"}, [30.0, 40.0, 50.0])]
    tops = sw.best_per_setting(rows, sw.Objective(metric="wait_p95", goal="min"))
    assert [(t.conf, t.params["rate"]) for t in tops] == [("a", 0.1), ("b", 1.0)]
    pairs = sw.paired_comparisons(rows, ["wait_p95"])
    assert [(p["a"], p["b"], p["knobs"], p["diff_mean"], p["b_better_seeds"]) for p in pairs] == [
        ("a (actions=x)", "b (actions=x)", {"rate": 0.1}, 1.0, 0),
        ("a (actions=x)", "b (actions=x)", {"rate": 1.0}, -20.0, 3)]
    assert pairs[1]["diff_ci"] == [-20.0, -20.0] and pairs[1]["verdict"].startswith("better on 3 of 3 seeds")
    # both bests are clearly better than the other conf at their rate (a waits 1 s less on every seed at 0.1)
    assert [sw.best_note(t, pairs, "wait_p95") for t in tops] == ["clearly better than every other conf"] * 2
    unclear = [{**pairs[0], "verdict": "no clear difference (only 2 seeds; ...)"}]
    assert sw.best_note(tops[0], unclear, "wait_p95") == "not clearly better than b (actions=x)"
    assert sw.best_note(tops[0], [], "wait_p95") == ""
