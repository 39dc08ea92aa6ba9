"""Side-by-side comparison of several simulation summaries in the terminal: which metrics, in which order; what
each one is (label, unit, where summary.json has it) is ``sim/metric_registry.py``'s."""

from __future__ import annotations

from typing import Any

from pyvolcano.sim.metric_registry import METRICS


def compare_table(summaries: list[dict[str, Any]], wide: bool = True, names: list[str] | None = None) -> None:
    """The runs side by side, sized to the terminal; without ``wide`` only the headline metrics.  ``names`` head
    the columns (default: each conf's file name)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title="pyvolcano simulate" + (" --compare" if len(summaries) > 1 else ""))
    t.add_column("metric")
    for i, s in enumerate(summaries):  # the conf's file name: a long path would fold the header in a narrow terminal
        name = names[i] if names else str(s["config"])
        t.add_column(name.rsplit("/", 1)[-1] if "/" in name else name, overflow="fold")

    def row(name: str, indent: bool = False) -> None:
        m = METRICS[name]
        t.add_row(("  " if indent else "") + m.label, *(m.fmt(m.raw(s)) for s in summaries))
    row("jobs")
    for name in ("completed", "jobs_failed", "aborted", "unfinished"):  # these add up to the jobs
        row(name, indent=True)
    row("never_started")  # no wait: not in the wait rows
    for name in ("wait_mean", "wait_p50", "wait_p95", "wait_p99") if wide else ("wait_mean", "wait_p95"):
        row(name)
    for name in ("jct_mean", "jct_p95") if wide else ("jct_mean",):
        row(name)
    for name in ("makespan", "util_cpu", "util_memory", "util_gpu", "fairness", "evictions"):
        row(name)
    if any("gpu" in s for s in summaries):  # gpushare GPUs (sim/gpus.py): what is left, and how much is unusable
        for name in ("gpu_alloc_final", "gpu_unallocated", "gpu_frag") + (("gpu_frag_mean",) if wide else ()):
            row(name)
    if any("fill_curve" in s for s in summaries):  # the FGD paper's fill runs
        for name in ("fill_alloc_100", "fill_alloc_130"):
            row(name)
    if any("topology" in s for s in summaries):  # the multi-pod jobs' spread: share within one tier-1 hypernode
        row("within_tier1")
    if any("sub_groups" in (s.get("topology") or {}) for s in summaries):  # jobs whose every partition stayed local
        row("sub_within_tier1")
    if wide:
        for name in ("gangs_rolled_back", "scheduler_s_per_cycle", "wall_seconds"):
            row(name)
    Console().print(t)
