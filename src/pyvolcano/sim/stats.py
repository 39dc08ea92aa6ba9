"""The statistics of what-if comparisons (sweeps, ``simulate --compare``): intervals kept within a metric's range,
paired differences on common random numbers, and a verdict a person can act on.

Why paired: two confs run on the same seed see the same jobs (the same arrivals, sizes and durations), so most of
the run-to-run noise is common to both; the per-seed difference ``b - a`` removes it, and a handful of seeds tells
apart confs whose unpaired intervals overlap (common random numbers).  The interval of a mean is a percentile
bootstrap (resampling the seeds, or the jobs, with replacement) drawn from a generator with a fixed seed, so a page
and its ``sweep.json`` come out the same on every run.  A bootstrap interval of a mean lies within the values' own
range, and every interval is also clipped to the metric's range (``sim/metric_registry.py``: ``low``, ``high``):
a count, a wait or a utilisation never gets an interval below zero, a fraction never one above 1.

The verdict: a difference is *clear* when the interval of the mean difference leaves out zero and at least
:data:`MIN_SEEDS` seeds were paired; it then reads "better on 9 of 10 seeds, wait p95 (s) -31 % [-40, -22]" (the
change and its interval relative to ``a``'s mean); otherwise "no clear difference".  docs/simulator.md,
"Comparisons and sweeps: the statistics", says the same for users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.sim.metric_registry import Metric

#: bootstrap resamples per interval (the 2.5th and 97.5th percentiles of the resampled means)
RESAMPLES = 2000
#: the bootstrap generator's seed: intervals are reproducible, page to page and run to run
SEED = 20_260
#: fewer paired seeds than this never give a clear verdict (a bootstrap over two values is far too narrow)
MIN_SEEDS = 3
LEVEL = 0.95


def bootstrap_mean(values: Sequence[float] | np.ndarray, level: float = LEVEL, resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of ``values`` and the percentile bootstrap interval of the mean at ``level``
    (resampling ``values`` with replacement ``resamples`` times from a generator seeded with ``seed``).  One value
    (or all equal): the interval is that value."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise ValueError("no values")
    mean = float(a.mean())
    if a.size == 1 or float(a.min()) == float(a.max()):
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return mean, float(lo), float(hi)


def interval(values: Sequence[float], metric: Metric) -> tuple[float, float, float]:
    """(mean, lo, hi) of ``metric`` over runs: the bootstrap interval clipped to the metric's range."""
    mean, lo, hi = bootstrap_mean(values)
    return mean, metric.clip(lo), metric.clip(hi)


def diff_range(metric: Metric) -> tuple[float, float]:
    """The range a difference of two values of ``metric`` lies in: [low - high, high - low]."""
    return metric.low - metric.high, metric.high - metric.low


@dataclass(frozen=True)
class Paired:
    """``b`` against ``a`` on the same seeds (or the same jobs): the per-pair differences ``b - a``."""

    metric: Metric
    #: the pairs' keys (seeds), in order
    seeds: tuple[int, ...]
    a: tuple[float, ...]
    b: tuple[float, ...]
    diff_mean: float
    diff_ci: tuple[float, float]
    #: pairs where ``b`` is better than ``a`` (the metric's direction), and where worse
    b_better: int
    b_worse: int
    #: False for a statistic of all pairs at once (a p95): its verdict counts no pairs
    counted: bool = True
    #: what a relative change is relative to (default: ``a``'s mean; a quantile's: ``a``'s quantile)
    base: float | None = None

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def a_mean(self) -> float:
        return float(np.mean(self.a)) if self.a else 0.0

    @property
    def clear(self) -> bool:
        """The interval leaves out zero, with enough pairs, on a metric that has a better direction."""
        lo, hi = self.diff_ci
        return self.metric.better is not None and self.n >= MIN_SEEDS and (lo > 0 or hi < 0)

    @property
    def b_is_better(self) -> bool | None:
        """Whether the clear difference favours ``b`` (None when it is not clear)."""
        if not self.clear:
            return None
        return (self.diff_mean < 0) == (self.metric.better == "lower")

    def relative(self) -> tuple[float, float, float] | None:
        """The difference and its interval in per cent of ``a``'s mean (or ``base``; None when it is 0)."""
        base = self.a_mean if self.base is None else self.base
        if base == 0:
            return None
        return (self.diff_mean / abs(base) * 100, self.diff_ci[0] / abs(base) * 100,
                self.diff_ci[1] / abs(base) * 100)

    def change_text(self) -> str:
        """"wait p95 (s) -31 % [-40, -22]", or the absolute change in the metric's unit when ``a``'s mean is 0."""
        rel = self.relative()
        if rel is not None:
            m, lo, hi = rel
            return f"{self.metric.label} {_signed(m)} % [{_signed(lo)}, {_signed(hi)}]"
        lo, hi = self.diff_ci
        if self.metric.unit == "fraction":
            return (f"{self.metric.label} {self.diff_mean * 100:+.1f} points [{lo * 100:+.1f}, {hi * 100:+.1f}]")
        return f"{self.metric.label} {self.diff_mean:+.3g} [{lo:+.3g}, {hi:+.3g}]"

    def verdict(self, unit: str = "seeds") -> str:
        """One line: "better on 9 of 10 seeds, wait p95 (s) -31 % [-40, -22]" when the difference is clear (worse
        likewise), else "no clear difference" with the counts and the change, so the reader sees why."""
        if self.metric.better is None:
            return f"no direction ({self.change_text()})"
        if self.n == 0:
            return "no paired " + unit
        if self.a == self.b:
            return f"the same on all {self.n} {unit}"
        if self.b_is_better is not None:
            k = self.b_better if self.b_is_better else self.b_worse
            if not self.counted:
                return f"{'better' if self.b_is_better else 'worse'} over {self.n} {unit}, {self.change_text()}"
            return f"{'better' if self.b_is_better else 'worse'} on {k} of {self.n} {unit}, {self.change_text()}"
        if not self.counted:
            few = f"only {self.n} {unit}; " if self.n < MIN_SEEDS else ""
            return f"no clear difference ({few}{self.change_text()})"
        why = f"only {self.n} {unit}" if self.n < MIN_SEEDS else \
            f"better on {self.b_better}, worse on {self.b_worse} of {self.n} {unit}"
        return f"no clear difference ({why}; {self.change_text()})"

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric.name, "seeds": list(self.seeds), "diff_mean": round(self.diff_mean, 4),
                "diff_ci": [round(self.diff_ci[0], 4), round(self.diff_ci[1], 4)], "b_better_seeds": self.b_better,
                "verdict": self.verdict()}


def _signed(x: float) -> str:
    """A per cent with its sign: whole ("+8", "-31"), one decimal below 1 ("-0.4"), "0" only for zero."""
    if round(x, 1) == 0:
        return "0"
    return f"{round(x):+d}" if abs(x) >= 1 else f"{x:+.1f}"


def paired(metric: Metric, a: Mapping[int, float | None], b: Mapping[int, float | None]) -> Paired:
    """``b`` against ``a``, each a value per seed (None: the run has no value, e.g. no wait): the differences on
    the seeds both have, their mean and its bootstrap interval clipped to the range a difference can take."""
    seeds = tuple(s for s in a if s in b and a[s] is not None and b[s] is not None)
    av = tuple(float(a[s]) for s in seeds)  # type: ignore[arg-type]
    bv = tuple(float(b[s]) for s in seeds)  # type: ignore[arg-type]
    if not seeds:
        return Paired(metric, (), (), (), 0.0, (0.0, 0.0), 0, 0)
    d = np.asarray(bv) - np.asarray(av)
    mean, lo, hi = bootstrap_mean(d)
    dlo, dhi = diff_range(metric)
    better = [metric.improved(y, x) for x, y in zip(av, bv, strict=True)]
    return Paired(metric, seeds, av, bv, mean, (min(max(lo, dlo), dhi), min(max(hi, dlo), dhi)),
                  sum(v is True for v in better), sum(v is False for v in better))


def paired_quantile(metric: Metric, a: Sequence[float], b: Sequence[float], q: float,
                    resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL) -> Paired:
    """``b``'s ``q``-th percentile minus ``a``'s, where ``a[i]`` and ``b[i]`` belong together (the same job in two
    runs of one workload), and its bootstrap interval: the pairs are resampled together, so what is common to both
    runs (the job's size, its arrival in a busy hour) cancels out.  The resamples are drawn in chunks, so memory
    stays small for many jobs."""
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = av.size
    if n == 0:
        return Paired(metric, (), (), (), 0.0, (0.0, 0.0), 0, 0, counted=False)
    diff = float(np.percentile(bv, q) - np.percentile(av, q))
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // n)
    out = []
    for start in range(0, resamples, chunk):
        idx = rng.integers(0, n, size=(min(chunk, resamples - start), n))
        out.append(np.percentile(bv[idx], q, axis=1) - np.percentile(av[idx], q, axis=1))
    diffs = np.concatenate(out)
    tail = (1 - level) / 2 * 100
    lo, hi = (float(x) for x in np.percentile(diffs, [tail, 100 - tail]))
    dlo, dhi = diff_range(metric)
    better = [metric.improved(y, x) for x, y in zip(av.tolist(), bv.tolist(), strict=True)]
    return Paired(metric, tuple(range(n)), tuple(av.tolist()), tuple(bv.tolist()), diff,
                  (min(max(lo, dlo), dhi), min(max(hi, dlo), dhi)), sum(v is True for v in better),
                  sum(v is False for v in better), counted=False, base=float(np.percentile(av, q)))
