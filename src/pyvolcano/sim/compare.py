"""Side-by-side comparison of several simulation summaries."""

from __future__ import annotations

from typing import Any


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

    def row(name: str, get: Any) -> None:
        vals = []
        for s in summaries:
            v = get(s)
            vals.append("-" if v is None else (f"{v:,.2f}" if isinstance(v, float) else str(v)))
        t.add_row(name, *vals)
    row("jobs", lambda s: s["jobs"])
    for k in ("completed", "failed", "aborted", "unfinished"):  # these add up to the jobs
        row(f"  {k}", lambda s, k=k: s.get(k, 0))
    row("never started", lambda s: s.get("never_started", 0))  # no wait: not in the wait rows
    for k in ("mean", "p50", "p95", "p99") if wide else ("mean", "p95"):
        row(f"wait {k} (s)", lambda s, k=k: s["wait_s"][k])
    for k in ("mean", "p95") if wide else ("mean",):
        row(f"JCT {k} (s)", lambda s, k=k: s["jct_s"][k])
    row("makespan (s)", lambda s: s["makespan_s"])
    for r in ("cpu", "memory", "gpu"):
        row(f"utilisation {r}", lambda s, r=r: f"{s['utilisation'][r] * 100:.1f}%")
    row("Jain fairness (queues)", lambda s: s["jain_fairness_queue_shares"])
    row("evictions", lambda s: s["evictions"])
    if any("topology" in s for s in summaries):  # the multi-pod jobs' spread: share within one tier-1 hypernode
        def local(s: dict[str, Any]) -> str | None:
            share = (s.get("topology") or {}).get("within_tier1")
            return None if share is None else f"{share * 100:.0f}%"
        row("gangs within tier 1", local)
    if any("sub_groups" in (s.get("topology") or {}) for s in summaries):  # jobs whose every partition stayed local
        def sub_local(s: dict[str, Any]) -> str | None:
            share = ((s.get("topology") or {}).get("sub_groups") or {}).get("within_tier1")
            return None if share is None else f"{share * 100:.0f}%"
        row("sub-groups within tier 1", sub_local)
    if wide:
        row("gangs rolled back", lambda s: s["gangs_rolled_back"])
        row("scheduler s/cycle", lambda s: s["scheduler_seconds_per_cycle"]["mean"])
        row("wall seconds", lambda s: s["wall_seconds"])
    Console().print(t)
