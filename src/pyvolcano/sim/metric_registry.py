"""The one place that says what a simulator metric is: its name, the label the tables show, its unit, which
direction is better, the range its values lie in, and how it is read from a run.

Every metric is a number of a run's ``summary.json`` (``sim/metrics.py: summary`` computes them from the run; the
definitions are in docs/simulator.md, "Metrics"): ``path`` is where.  ``compare`` (the terminal table),
``report`` (the pages), ``sweep`` (the aggregates, ``summary.csv``, the objective) and ``sweep_report`` (the sweep
page) read the metrics from here, so a metric's name, label, unit and direction are defined once.  ``low`` and
``high`` bound every value a run can give (a count is not negative, a fraction lies in [0, 1]): an interval around
a mean of such values can be clipped to them (``Metric.clip``).  The hand-computed value of every metric on a run
made by hand is in ``tests/sim/test_metrics.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

#: which way a metric is better; None: neither (the number of jobs)
Direction = Literal["lower", "higher"] | None


@dataclass(frozen=True)
class Metric:
    """One metric of a run."""

    name: str
    #: what the tables show in their metric column (the unit in brackets where it helps)
    label: str
    #: "s", "fraction" (of the cluster, or of the jobs), "jobs", "pods", "restarts", "tier", "cycles", "gpus",
    #: "%" (of the cluster's GPUs), "" (an index)
    unit: str
    better: Direction
    #: where the value is in summary.json (keys from the top)
    path: tuple[str, ...]
    #: what it means, one line (the sweep page's column tooltips)
    doc: str
    low: float = 0.0
    high: float = math.inf
    #: where the same figure is in each ``per_queue`` entry of summary.json, when it has one per queue
    queue_path: tuple[str, ...] | None = None
    #: decimals of a fraction shown as a percentage
    percent_digits: int = 1

    def raw(self, summary: dict[str, Any]) -> Any:
        """The value as summary.json has it (an int for a count), None when the run has none."""
        return _at(summary, self.path)

    def value(self, summary: dict[str, Any]) -> float | None:
        """The value as a float (None when the run has none, e.g. no wait when no gang started)."""
        return _number(self.raw(summary))

    def queue_value(self, queue_summary: dict[str, Any]) -> float | None:
        """The value for one queue, from its ``per_queue`` entry (None when the metric has none per queue)."""
        return None if self.queue_path is None else _number(_at(queue_summary, self.queue_path))

    def clip(self, x: float) -> float:
        """``x`` brought into the metric's range [``low``, ``high``]."""
        return min(max(x, self.low), self.high)

    def fmt(self, v: Any) -> str:
        """The terminal table's cell: "-" when missing, a fraction as a percentage, a float with two decimals and
        thousands separators, a count as it is."""
        if v is None:
            return "-"
        if self.unit == "fraction":
            return f"{v * 100:.{self.percent_digits}f}%"
        return f"{v:,.2f}" if isinstance(v, float) else str(v)

    def improved(self, new: float, old: float, tolerance: float = 0.0) -> bool | None:
        """True when ``new`` is better than ``old`` by more than ``tolerance``, False when worse by more, None
        when neither (or the metric has no better direction)."""
        if self.better is None or abs(new - old) <= tolerance:
            return None
        return (new < old) == (self.better == "lower")


def _at(d: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _m(name: str, label: str, unit: str, better: Direction, path: tuple[str, ...], doc: str,
       **kw: Any) -> Metric:
    return Metric(name, label, unit, better, path, doc, **kw)


_METRICS = (
    # what the sweep aggregates (its summary.csv columns, in this order; the names ``objective.metric`` takes)
    _m("wait_p50", "wait p50 (s)", "s", "lower", ("wait_s", "p50"), "median wait until the gang started (s)",
       queue_path=("wait", "p50")),
    _m("wait_p95", "wait p95 (s)", "s", "lower", ("wait_s", "p95"), "95th percentile wait (s)",
       queue_path=("wait", "p95")),
    _m("jct_mean", "JCT mean (s)", "s", "lower", ("jct_s", "mean"), "mean job completion time (s)"),
    _m("jct_p95", "JCT p95 (s)", "s", "lower", ("jct_s", "p95"), "95th percentile JCT (s)"),
    _m("util_cpu", "utilisation cpu", "fraction", "higher", ("utilisation", "cpu"),
       "time-averaged cpu allocation (fraction)", high=1.0),
    _m("util_gpu", "utilisation gpu", "fraction", "higher", ("utilisation", "gpu"),
       "time-averaged gpu allocation (fraction)", high=1.0),
    _m("evictions", "evictions", "pods", "lower", ("evictions",), "pods evicted"),
    _m("restarts", "job restarts", "restarts", "lower", ("restarts",), "job restarts"),
    _m("failed", "failed or aborted", "jobs", "lower", ("failed_or_aborted",), "jobs failed or aborted"),
    _m("unfinished", "unfinished", "jobs", "lower", ("unfinished",), "jobs unfinished at the end"),
    _m("never_started", "never started", "jobs", "lower", ("never_started",),
       "jobs whose gang never started (no wait)"),
    _m("completed", "completed", "jobs", "higher", ("completed",), "jobs completed"),
    _m("fairness", "Jain fairness (queues)", "", "higher", ("jain_fairness_queue_shares",),
       "Jain index of queue shares (1 = fair)", high=1.0),
    _m("makespan", "makespan (s)", "s", "lower", ("makespan_s",), "first arrival to last finish (s)"),
    _m("lca_tier_mean", "mean LCA tier", "tier", "lower", ("topology", "lca_tier_mean"),
       "mean LCA tier of multi-pod jobs at gang start (topology)"),
    _m("within_tier1", "gangs within tier 1", "fraction", "higher", ("topology", "within_tier1"),
       "share of multi-pod jobs started within one tier-1 hypernode", high=1.0, percent_digits=0),
    _m("sub_within_tier1", "sub-groups within tier 1", "fraction", "higher",
       ("topology", "sub_groups", "within_tier1"),
       "share of partitioned jobs whose every sub-group started within one tier-1 hypernode", high=1.0,
       percent_digits=0),
    _m("sub_lca_tier_max_mean", "widest sub-group's LCA tier (mean)", "tier", "lower",
       ("topology", "sub_groups", "sub_lca_tier_max_mean"),
       "mean over partitioned jobs of their widest sub-group's LCA tier at gang start"),
    _m("gpu_unallocated", "GPUs unallocated (end)", "gpus", "lower", ("gpu", "unallocated_gpus_final"),
       "GPUs no pod holds at the end of the run (the cluster's minus the allocated milli-GPU / 1000)"),
    _m("gpu_frag", "GPU fragmentation (end)", "gpus", "lower", ("gpu", "frag_gpus_final"),
       "FGD's fragmentation at the end of the run: GPUs left that the workload's task mix cannot use, in "
       "expectation (sum over nodes)"),
    _m("fill_alloc_100", "GPU allocated at 100% arrived", "%", "higher", ("fill_curve", "allocated_at_100"),
       "fill runs: allocated milli-GPU, % of the cluster, when the arrived demand is 100% of it", high=100.0),
    _m("fill_alloc_130", "GPU allocated at 130% arrived", "%", "higher", ("fill_curve", "allocated_at_130"),
       "fill runs: allocated milli-GPU, % of the cluster, when the arrived demand is 130% of it", high=100.0),
    # the rest of the terminal table and the report pages
    _m("gpu_alloc_final", "GPU allocation (end)", "fraction", "higher", ("gpu", "allocation_final"),
       "allocated milli-GPU over the cluster's at the end of the run (fraction)", high=1.0),
    _m("gpu_unallocated_mean", "GPUs unallocated (mean)", "gpus", "lower", ("gpu", "unallocated_gpus_mean"),
       "time-averaged GPUs no pod holds"),
    _m("gpu_frag_mean", "GPU fragmentation (mean)", "gpus", "lower", ("gpu", "frag_gpus_mean"),
       "FGD's fragmentation averaged over the session samples (GPUs)"),
    _m("jobs", "jobs", "jobs", None, ("jobs",), "jobs in the workload"),
    _m("jobs_failed", "failed", "jobs", "lower", ("failed",),
       "jobs that ended Failed (maxRetry reached, too few successes)"),
    _m("aborted", "aborted", "jobs", "lower", ("aborted",), "jobs that ended Aborted or Terminated"),
    _m("wait_mean", "wait mean (s)", "s", "lower", ("wait_s", "mean"), "mean wait until the gang started (s)"),
    _m("wait_p99", "wait p99 (s)", "s", "lower", ("wait_s", "p99"), "99th percentile wait (s)"),
    _m("jct_p50", "JCT p50 (s)", "s", "lower", ("jct_s", "p50"), "median job completion time (s)"),
    _m("jct_p99", "JCT p99 (s)", "s", "lower", ("jct_s", "p99"), "99th percentile JCT (s)"),
    _m("util_memory", "utilisation memory", "fraction", "higher", ("utilisation", "memory"),
       "time-averaged memory allocation (fraction)", high=1.0),
    _m("gangs_rolled_back", "gangs rolled back", "jobs", "lower", ("gangs_rolled_back",),
       "gangs whose placement a session discarded (too few tasks placed)"),
    _m("cycles", "scheduling cycles", "cycles", None, ("cycles",), "scheduling sessions run"),
    _m("scheduler_s_per_cycle", "scheduler s/cycle", "s", "lower", ("scheduler_seconds_per_cycle", "mean"),
       "mean wall seconds of one scheduling session (s)"),
    _m("wall_seconds", "wall seconds", "s", "lower", ("wall_seconds",), "wall seconds of the whole run (s)"),
)

#: every metric by name
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}
assert len(METRICS) == len(_METRICS), "metric names are unique"

#: the metrics a sweep aggregates over its seeds (``sim/sweep.py: point_metrics``), in summary.csv's order
SWEPT: tuple[str, ...] = ("wait_p50", "wait_p95", "jct_mean", "jct_p95", "util_cpu", "util_gpu", "evictions",
                          "restarts", "failed", "unfinished", "never_started", "completed", "fairness", "makespan",
                          "lca_tier_mean", "within_tier1", "sub_within_tier1", "sub_lca_tier_max_mean",
                          "gpu_unallocated", "gpu_frag", "fill_alloc_100", "fill_alloc_130")


def metric(name: str) -> Metric:
    """The metric called ``name``; a per-queue name ``wait_p95[QUEUE]`` gives its metric (``wait_p95``)."""
    return METRICS[name.split("[", 1)[0]]
