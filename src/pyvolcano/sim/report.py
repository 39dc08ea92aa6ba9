"""The pages a person opens: ``report.html`` for one run and ``compare.html`` for runs compared side by side
(``simulate --compare``, ``pyvolcano demo``).  Both are one page built by :func:`page`, so the single-run page has the
same plots as the comparison.

The page answers "what changes if I turn on preempt/reclaim?" at a glance: its headline leads with all jobs (mean and
p95 wait, failed jobs, and whether the change is clear, the runs paired job by job: ``sim/stats.py``), then each
queue's p95 wait per run (and the change against the first run; a queue too small to read a p95 is marked) beside
the cost (evictions by cause, restarts, failed and aborted jobs, the
GPU- and cpu-hours held by pods whose work was thrown away).  Below: the workload, cluster and simulation settings and
the conf diff; the overlaid utilisation of every run on one time axis (exact step functions, ``sim/usage.py``); each
queue's allocated vs deserved dominant share; wait CDFs per queue, one curve per run; jobs finished over time;
admission wait (until the PodGroup left Pending) split from placement wait (until the gang had started); an eviction
timeline saying which job displaced which (``sim/evictions.py``); every failed, aborted or unfinished job.  Failed and
aborted jobs are counted in every table.

Self-contained and offline: matplotlib PNGs embedded as data URIs, a little CSS, no script, nothing fetched
(``tests/sim/test_pages_in_browser.py`` checks it in headless chromium).
"""

from __future__ import annotations

import base64
import difflib
import html
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import yaml

from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.sim.engine import SimResult
from pyvolcano.sim.figures import FAILED, failed_or_aborted, outcomes, stage_waits, stats
from pyvolcano.sim.metric_registry import METRICS
from pyvolcano.sim.stats import Paired
from pyvolcano.sim.usage import dominant

RESOURCES = ("cpu", "memory", "gpu")
#: eviction-table rows shown per run (all of them are in evictions.csv)
MAX_EVICTION_ROWS = 200
MAX_JOB_ROWS = 300
#: runs first (blue, orange, green, ...), then queues in the eviction plot (matplotlib's tab10)
QUEUE_COLOURS = ("#d62728", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#e377c2", "#8c564b", "#000000")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


@dataclass
class RunData:
    """One run as a page shows it."""

    name: str
    result: SimResult
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    #: the conf as ``conf_text`` prints it
    conf: str = ""


def conf_text(conf: SchedulerConf) -> str:
    """The conf in volcano-scheduler.conf form, without defaults (what a diff between two runs should show)."""
    d = conf.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    d["actions"] = ", ".join(conf.actions)
    return yaml.safe_dump(d, sort_keys=False, default_flow_style=False)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _colour(i: int) -> str:
    return str(COLOURS[i % len(COLOURS)])


def _window(runs: list[RunData]) -> float:
    return max(max(float(r.summary.get("window_s") or 0.0), r.result.end_time) for r in runs)


def _queues(runs: list[RunData]) -> list[str]:
    return sorted({row["queue"] for r in runs for row in r.rows} | {q for r in runs for q in r.result.usage.queues
                                                                     if q})


# --- plots ------------------------------------------------------------------------------------------------------
def plot_utilisation(runs: list[RunData], window: float) -> str:
    """Cluster utilisation per resource, every run overlaid: the exact step functions of what pods held."""
    cap = runs[0].result.capacity
    shown = [i for i, _ in enumerate(RESOURCES) if cap[i] > 0]
    fig, axes = plt.subplots(len(shown), 1, figsize=(11, 1.9 * len(shown) + 0.6), sharex=True, squeeze=False)
    for ax, i in zip(axes[:, 0], shown, strict=True):
        for k, r in enumerate(runs):
            times, vals = r.result.usage.total.arrays()
            if not len(times):
                continue
            t = np.append(times, max(window, times[-1])) / 3600
            v = np.append(vals[:, i], vals[-1, i]) / cap[i] * 100
            mean = r.summary.get("utilisation", {}).get(RESOURCES[i])
            label = r.name + (f" (mean {mean * 100:.1f}%)" if isinstance(mean, float | int) else "")
            ax.step(t, v, where="post", color=_colour(k), label=label, linewidth=1.2)
        ax.set(ylabel=f"{RESOURCES[i]} %", ylim=(0, 105), xlim=(0, window / 3600 or None))
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    axes[0, 0].set_title("Utilisation over time: allocated share of the cluster, every run on one time axis")
    axes[-1, 0].set_xlabel("simulated time (h)")
    return _png(fig)


def plot_gpus(runs: list[RunData], window: float) -> str | None:
    """With per-device GPUs (issue 28): the GPU allocation rate and FGD's fragmentation over time (the summary's
    ``gpu.series``, the gpushare ledger's exact steps), and for a ``--fill`` run the fill curve (allocated against
    arrived GPU demand, as the FGD paper plots it); None when no run has either (pooled GPUs are in the
    utilisation plot)."""
    series: list[tuple[int, RunData, dict[str, Any]]] = [
        (k, r, sr) for k, r in enumerate(runs)
        if r.result.gpu_series is not None and (sr := (r.summary.get("gpu") or {}).get("series"))]
    fills = [(k, r, r.summary["fill_curve"]) for k, r in enumerate(runs) if r.summary.get("fill_curve")]
    if not series and not fills:
        return None
    panels = (1 if series else 0) + (1 if any(sr.get("frag_gpus") for _, _, sr in series) else 0) + (1 if fills else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(11, 2.4 * panels + 0.4), squeeze=False)
    ax_list = list(axes[:, 0])
    if series:
        ax = ax_list.pop(0)
        for k, r, sr in series:
            ax.step(np.array(sr["t"]) / 3600, np.array(sr["allocation"]) * 100, where="post", color=_colour(k),
                    label=r.name, linewidth=1.2)
        ax.set(ylabel="GPUs allocated %", ylim=(0, 105), xlim=(0, window / 3600 or None), xlabel="simulated time (h)")
        ax.set_title("GPU allocation over time (allocated share of the cluster's GPUs)")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        if any(sr.get("frag_gpus") for _, _, sr in series):
            ax = ax_list.pop(0)
            for k, r, sr in series:
                if sr.get("frag_gpus"):
                    ax.step(np.array(sr["t"]) / 3600, sr["frag_gpus"], where="post", color=_colour(k), label=r.name,
                            linewidth=1.2)
            ax.set(ylabel="GPUs", xlim=(0, window / 3600 or None), xlabel="simulated time (h)")
            ax.set_title("FGD fragmentation: GPUs the workload's task mix cannot use")
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
    if fills:
        ax = ax_list.pop(0)
        for k, r, fc in fills:
            pts = [(a, v) for a, v in zip(fc["arrived_gpu_pct"], fc["allocated_gpu_pct"], strict=True) if v is not None]
            ax.plot([a for a, _ in pts], [v for _, v in pts], color=_colour(k), label=r.name, linewidth=1.4)
        ax.plot([0, 100], [0, 100], color="grey", linestyle=":", linewidth=0.8)
        ax.set(xlabel="arrived GPU demand (% of the cluster's GPUs)", ylabel="allocated GPUs %", xlim=(0, 130),
               ylim=(0, 100))
        ax.set_title("Fill curve (--fill): GPU allocation as the pods arrive")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return _png(fig)


def plot_queues(runs: list[RunData], queues: list[str], window: float) -> str | None:
    """Each queue's allocated (solid) and deserved (dashed) dominant share of the cluster, every run overlaid."""
    if not queues:
        return None
    cap = runs[0].result.capacity
    fig, axes = plt.subplots(len(queues), 1, figsize=(11, 1.9 * len(queues) + 0.6), sharex=True, squeeze=False)
    for ax, q in zip(axes[:, 0], queues, strict=True):
        for k, r in enumerate(runs):
            led = r.result.usage
            times, alloc, des = led.queue_series(q)
            if not len(times):
                continue
            t = np.append(times, max(window, times[-1])) / 3600
            a = dominant(alloc, cap) * 100
            ax.step(t, np.append(a, a[-1]), where="post", color=_colour(k), linewidth=1.2,
                    label=f"{r.name}: allocated")
            if q in led.deserved:
                d = dominant(des, cap) * 100
                ax.step(t, np.append(d, d[-1]), where="post", color=_colour(k), linestyle="--", linewidth=1,
                        label=f"{r.name}: deserved")
        ax.set(ylabel="% of cluster", xlim=(0, window / 3600 or None))
        ax.set_title(f"queue {q}", fontsize=10, loc="left")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=7, ncol=2)
    fig.suptitle("Allocated (solid) vs deserved (dashed) share of the cluster, dominant resource", fontsize=11)
    axes[-1, 0].set_xlabel("simulated time (h)")
    fig.tight_layout()
    return _png(fig)


def plot_wait_cdfs(runs: list[RunData], queues: list[str]) -> str:
    """Per queue, the fraction of its jobs whose gang had started within t, one curve per run.  Jobs that never
    started are in the denominator, so a curve that stops below 1 shows them."""
    cols = 2 if len(queues) > 1 else 1
    nrows = max(1, (len(queues) + cols - 1) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(11, 2.8 * nrows + 0.4), squeeze=False)
    for j, q in enumerate(queues or [""]):
        ax = axes[j // cols, j % cols]
        for k, r in enumerate(runs):
            qr = [x for x in r.rows if x["queue"] == q]
            w = np.sort([x["wait"] for x in qr if x["wait"] is not None])
            if not qr:
                continue
            never = len(qr) - len(w)
            p95 = stats(list(w))["p95"]
            label = f"{r.name}: p95 {_f(p95)} s" + (f", {never} never started" if never else "")
            if len(w):
                ax.step(np.maximum(np.append(w, w[-1] * 1.5 + 1), 0.1), np.append(np.arange(1, len(w) + 1),
                        len(w)) / len(qr), where="post", color=_colour(k), label=label)
            else:
                ax.plot([], [], color=_colour(k), label=label)
        ax.set(xscale="log", ylim=(0, 1.02), ylabel="fraction of jobs")
        ax.set_title(f"queue {q}", fontsize=10, loc="left")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    for j in range(len(queues or [""]), nrows * cols):
        axes[j // cols, j % cols].axis("off")
    for ax in axes[-1, :]:
        ax.set_xlabel("wait until the gang started (s, log)")
    fig.suptitle("Wait-time CDF per queue, one curve per run", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def plot_throughput(runs: list[RunData], window: float) -> str:
    """Jobs finished over time: completed (solid) and failed or aborted (dashed), per run."""
    fig, ax = plt.subplots(figsize=(11, 3.0))
    for k, r in enumerate(runs):
        done = np.sort([x["finished"] for x in r.rows if x["finished"] is not None and x["phase"] == "Completed"])
        bad = np.sort([x["finished"] for x in r.rows if x["finished"] is not None and x["phase"] in FAILED])
        for ts, style, what in ((done, "-", "completed"), (bad, "--", "failed/aborted")):
            if len(ts) or what == "completed":
                t = np.concatenate([[0.0], ts, [max(window, ts[-1] if len(ts) else 0.0)]]) / 3600
                n = np.concatenate([[0], np.arange(1, len(ts) + 1), [len(ts)]])
                ax.step(t, n, where="post", color=_colour(k), linestyle=style, label=f"{r.name}: {what} ({len(ts)})")
    ax.set(xlabel="simulated time (h)", ylabel="jobs finished", xlim=(0, window / 3600 or None),
           title="Throughput: jobs finished over time")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return _png(fig)


def plot_wait_stages(runs: list[RunData], queues: list[str]) -> str:
    """Mean admission wait and mean placement wait, stacked, per queue and run."""
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(queues) * len(runs) + 1.2))
    labels, y = [], 0
    for q in queues:
        for k, r in enumerate(runs):
            st = stage_waits([x for x in r.rows if x["queue"] == q]).get(q)
            adm = (st["admission"]["mean"] or 0.0) if st else 0.0
            pla = (st["placement"]["mean"] or 0.0) if st else 0.0
            ax.barh(y, adm, color=_colour(k), alpha=0.45, edgecolor=_colour(k))
            ax.barh(y, pla, left=adm, color=_colour(k), edgecolor=_colour(k))
            labels.append(f"{q} / {r.name}")
            y += 1
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="mean wait (s): admission (light) + placement (dark)",
           title="Admission wait (until Inqueue) and placement wait (Inqueue until the gang started)")
    ax.grid(alpha=0.3, axis="x")
    return _png(fig)


def plot_evictions(runs: list[RunData], queues: list[str], window: float) -> str | None:
    """Every eviction as a point: when (x), the victim's queue and run (row), the preemptor's queue (colour), the
    cause (marker)."""
    if not any(r.result.eviction_log for r in runs):
        return None
    rows = [(k, q) for k, _ in enumerate(runs) for q in queues]
    ypos = {kq: i for i, kq in enumerate(rows)}
    qcol = {q: QUEUE_COLOURS[i % len(QUEUE_COLOURS)] for i, q in enumerate(queues)}
    times = [e.t for r in runs for e in r.result.eviction_log]
    pad = max((max(times) - min(times)) * 0.05, 60.0)
    lo, hi = max(min(times) - pad, 0.0), min(max(times) + pad, max(window, max(times)))
    markers = {"preempt": "o", "reclaim": "s", "node failure": "x"}
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(rows) + 1.4))
    groups: dict[tuple[str, str], tuple[list[float], list[int]]] = {}  # (cause, preemptor queue) -> points
    for k, r in enumerate(runs):
        qof = {key: rec.queue for key, rec in r.result.records.items()}
        for e in r.result.eviction_log:
            by = {qof.get(j, "?") for j in e.by}
            xs, ys = groups.setdefault((e.cause, next(iter(by)) if len(by) == 1 else ""), ([], []))
            xs.append(e.t / 3600)
            ys.append(ypos.get((k, e.queue), 0))
    for (cause, by_q), (xs, ys) in sorted(groups.items()):
        ax.scatter(xs, ys, color=qcol.get(by_q, "grey"), marker=markers.get(cause, "^"), s=22, alpha=0.7,
                   label=f"{cause}, " + (f"for queue {by_q}" if by_q else "for several jobs or none"))
    ax.set_yticks(range(len(rows)), [f"{runs[k].name}: victims in {q}" for k, q in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set(xlabel="simulated time (h; the span with evictions)", xlim=(lo / 3600, hi / 3600),
           title="Eviction timeline: victims' queue (row), the queue they were evicted for (colour)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    return _png(fig)


# --- network topology: spread vs wait ----------------------------------------------------------------------------
def _multi(r: RunData) -> list[dict[str, Any]]:
    """The run's jobs of more than one pod (a one-pod job always runs on one node: tier 0)."""
    return [x for x in r.rows if x["tasks"] > 1]


def _tiers(runs: list[RunData]) -> list[int]:
    """Every tier a page's spread columns show: 0 (one node) up to the highest virtual top."""
    top = max((r.result.spread.top_tier for r in runs if r.result.spread is not None), default=1)
    return list(range(top + 1))


def _tier_label(runs: list[RunData], t: int) -> str:
    """``0 (one node)``, ``1 (leaf)``, ..., ``3 (above all)`` for the virtual top."""
    for r in runs:
        sp = r.result.spread
        if sp is None:
            continue
        if t == 0:
            return "0 (one node)"
        if t == sp.top_tier:
            return f"{t} (above all)"
        name = next((n for n, k in sp.topo.tier_names().items() if k == t), None)
        if name:
            return f"{t} ({name})"
    return str(t)


def _spread(r: RunData, window: float) -> dict[str, Any]:
    """The multi-pod jobs' LCA-tier shares at gang start, mean tier, p95 wait (never started counted until the
    window's end, a lower bound) and how many never started."""
    rows = _multi(r)
    tiers = [x["lca_tier"] for x in rows if x["lca_tier"] is not None]
    counts: dict[int, int] = {}
    for t in tiers:
        counts[t] = counts.get(t, 0) + 1
    p95, never = p95_wait(rows, window) if rows else (None, 0)
    return {"jobs": len(rows), "started": len(tiers), "counts": counts,
            "mean_tier": float(np.mean(tiers)) if tiers else None, "p95": p95,
            "p50": stats([x["wait"] for x in rows if x["wait"] is not None])["p50"], "never": never,
            "violations": (r.summary.get("topology") or {}).get("hard_violations", 0)}


def _partitioned(r: RunData) -> list[dict[str, Any]]:
    """The run's jobs with sub-groups (a task with a ``partitionPolicy``)."""
    return [x for x in r.rows if x.get("sub_network_topology")]


def _sub_spread(r: RunData, window: float, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The jobs with sub-groups (or ``rows``): per job the largest LCA tier of its sub-groups at gang start
    (shares by tier, as ``counts``) and its mean; the mean over jobs of each job's mean sub-group tier and of the
    job's own tier; the share whose every sub-group was within one tier-1 hypernode; wait p50/p95 (never started
    counted until the window's end) and how many never started."""
    rows = _partitioned(r) if rows is None else rows
    started = [x for x in rows if x["sub_lca_tier_max"] is not None]
    maxes = [x["sub_lca_tier_max"] for x in started]
    counts: dict[int, int] = {}
    for t in maxes:
        counts[t] = counts.get(t, 0) + 1
    p95, never = p95_wait(rows, window) if rows else (None, 0)

    def mean(xs: list[Any]) -> float | None:
        return float(np.mean(xs)) if xs else None
    return {"jobs": len(rows), "started": len(started), "counts": counts, "max_tier": mean(maxes),
            "mean_tier": mean([x["sub_lca_tier_mean"] for x in started]),
            "job_tier": mean([x["lca_tier"] for x in started if x["lca_tier"] is not None]),
            "within1": sum(t <= 1 for t in maxes) / len(maxes) if maxes else None,
            "sub_groups": sum(x["sub_groups"] or 0 for x in started), "p95": p95,
            "p50": stats([x["wait"] for x in rows if x["wait"] is not None])["p50"], "never": never}


def plot_spread_wait(runs: list[RunData], window: float) -> str | None:
    """Left: where each run's multi-pod jobs ran (share by the tier of their pods' lowest common ancestor, when
    the gang started).  Right: the trade-off, one point per run: mean LCA tier (lower: more local) against p95
    wait of those jobs."""
    shown = [r for r in runs if r.result.spread is not None and _multi(r)]
    if not shown:
        return None
    tiers = _tiers(shown)
    cmap = plt.get_cmap("viridis")
    # one bar per run (its multi-pod jobs by LCA tier) and, for a run with sub-groups, one more: its partitioned
    # jobs by the largest LCA tier of their sub-groups
    bars: list[tuple[RunData, str, dict[str, Any], bool]] = []
    for r in shown:
        bars.append((r, r.name, _spread(r, window), False))
        if _partitioned(r):
            bars.append((r, f"{r.name}: sub-groups (widest)", _sub_spread(r, window), True))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 0.45 * len(bars) + 2.6),
                                 gridspec_kw={"width_ratios": [1.3, 1]})
    hatched = False
    for k, (r, _, sp, sub) in enumerate(bars):
        left = 0.0
        for t in tiers:
            share = sp["counts"].get(t, 0) / sp["jobs"] if sp["jobs"] else 0.0
            ax.barh(k, share, left=left, color=cmap(t / max(len(tiers) - 1, 1)), edgecolor="white",
                    label=_tier_label(shown, t) if k == 0 else None)
            if share >= 0.06:
                ax.text(left + share / 2, k, f"{share:.0%}", ha="center", va="center", fontsize=7,
                        color="white" if t < len(tiers) / 2 else "black")
            left += share
        if sp["never"]:
            ax.barh(k, sp["never"] / sp["jobs"], left=left, color="#dddddd", edgecolor="white",
                    hatch="//", label="never started" if not hatched else None)
            hatched = True
        y = sp["max_tier"] if sub else sp["mean_tier"]
        if sp["p95"] is not None and y is not None:  # sub-groups: a hollow marker of the run's colour
            bx.scatter(sp["p95"], y, s=50, zorder=3, **({"facecolors": "none", "edgecolors": _colour(runs.index(r))}
                                                         if sub else {"color": _colour(runs.index(r))}))
            bx.annotate(f"{r.name} (sub-groups)" if sub else r.name, (sp["p95"], y), textcoords="offset points",
                        xytext=(6, -11 if sub else 4), fontsize=8)
    ax.set_yticks(range(len(bars)), [label for _, label, _, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of multi-pod jobs" if len(bars) == len(shown) else
           "share of multi-pod jobs (sub-group bars: partitioned)",
           title="Where gangs ran: tier of their pods' LCA")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18 if len(bars) < 3 else -0.12), ncol=len(tiers) + 1,
              fontsize=7, frameon=False)
    bx.set(xlabel="p95 wait of multi-pod jobs (s; never started = until the end)",
           ylabel="mean LCA tier (lower: closer)" + ("\nhollow: widest sub-group per job" if len(bars) > len(shown)
                                                     else ""), title="Locality vs wait, one point per run")
    pts = [(sp["p95"], sp["max_tier"] if sub else sp["mean_tier"]) for _, _, sp, sub in bars]
    pts = [(x, y) for x, y in pts if x is not None and y is not None]
    if pts:  # room for the labels: the point furthest right or highest must not touch the frame
        bx.set_xlim(0, max(x for x, _ in pts) * 1.35 + 1)
        bx.set_ylim(-0.2, max(y for _, y in pts) + 0.4)  # a point at tier 0 clear of the frame
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def topology_section(runs: list[RunData], window: float) -> str:
    """The spread-vs-wait tables: per run, the multi-pod jobs' LCA tiers at gang start against their wait; then
    per run and constraint (``none``, ``soft``, ``hard:1``, ...) the jobs, wait and tiers."""
    if not any(r.result.spread is not None for r in runs):
        return ""
    tiers = _tiers(runs)
    head = ["run", "multi-pod jobs", *[f"tier {_e(_tier_label(runs, t))}" for t in tiers], "mean LCA tier",
            "wait p50 / p95 (s)", "never started", "hard constraint broken"]
    body = []
    for r in runs:
        if r.result.spread is None:
            body.append([_e(r.name), "no topology", *["-" for _ in tiers], "-", "-", "-", "-"])
            continue
        sp = _spread(r, window)
        n = sp["jobs"] or 1
        body.append([_e(r.name), _f(sp["jobs"]), *[f"{sp['counts'].get(t, 0)} ({sp['counts'].get(t, 0) / n:.0%})"
                                                    for t in tiers],
                     _f(sp["mean_tier"], 2), f"{_f(sp['p50'])} / " + ("&ge; " if sp["never"] else "") + _f(sp["p95"]),
                     _f(sp["never"]), _f(sp["violations"])])
    t1 = _table(head, body, "small")
    head2 = ["run", "constraint", "jobs", "never started", "wait p50 / p95 (s, started jobs)",
             "LCA tier at gang start"]
    body2 = []
    for r in runs:
        for label, d in ((r.summary.get("topology") or {}).get("by_constraint") or {}).items():
            w = d.get("wait") or {}
            tiers_txt = ", ".join(f"tier {t}: {n}" for t, n in (d.get("lca_tier_at_start") or {}).items())
            body2.append([_e(r.name), _e(label), _f(d.get("jobs")), _f(d.get("never_started")),
                          f"{_f(w.get('p50'))} / {_f(w.get('p95'))}", _e(tiers_txt or "-")])
    t2 = _table(head2, body2, "small")
    return (f"{t1}<p class=\"note\">Spread: the tier of the lowest common ancestor, in the HyperNode tree, of the "
            "nodes a job's pods were on when its gang first started (0: all on one node; the highest: above every "
            "real hypernode, or a node under none). Jobs of one pod are left out (always tier 0). Wait p95 counts a "
            "job that never started as waiting until the end of the window (&ge;). \"Hard constraint broken\": "
            "jobs with a hard tier whose pods ever spanned above it (0 with the network-topology-aware plugin; without "
            "it Volcano does not confine jobs).</p>"
            f"<h3>By constraint</h3>{t2}{sub_group_section(runs, window)}")


def sub_group_section(runs: list[RunData], window: float) -> str:
    """Per run and partition constraint, the jobs with sub-groups (vcjob ``partitionPolicy``): the job's LCA tier
    beside its sub-groups' (the widest and the mean per job, averaged over the jobs), the share whose every
    sub-group started within one tier-1 hypernode, the distribution of the widest, wait, and how many
    sub-groups broke a hard partition constraint.  Empty when no run has sub-groups."""
    if not any(_partitioned(r) for r in runs):
        return ""
    head = ["run", "partition constraint", "jobs (sub-groups at start)", "job LCA tier (mean)",
            "sub-group LCA tier: widest / mean (mean over jobs)", "all sub-groups within tier 1",
            "widest sub-group tier at gang start", "wait p50 / p95 (s)", "never started",
            "partition hard constraint broken"]
    body = []
    for r in runs:
        rows = _partitioned(r)
        if not rows:
            body.append([_e(r.name), "no sub-groups", *["-" for _ in head[2:]]])
            continue
        broken = ((r.summary.get("topology") or {}).get("sub_groups") or {}).get("hard_violations", 0)
        labels = sorted({x["sub_network_topology"] for x in rows})
        for label in ([None] if len(labels) == 1 else [None, *labels]):
            sp = _sub_spread(r, window, rows if label is None else
                             [x for x in rows if x["sub_network_topology"] == label])
            tiers_txt = ", ".join(f"tier {t}: {n}" for t, n in sorted(sp["counts"].items()))
            body.append([_e(r.name), _e(labels[0] if label is None and len(labels) == 1 else label or "all"),
                         f"{_f(sp['jobs'])} ({_f(sp['sub_groups'])})", _f(sp["job_tier"], 2),
                         f"{_f(sp['max_tier'], 2)} / {_f(sp['mean_tier'], 2)}",
                         "-" if sp["within1"] is None else f"{sp['within1']:.0%}", _e(tiers_txt or "-"),
                         f"{_f(sp['p50'])} / " + ("&ge; " if sp["never"] else "") + _f(sp["p95"]),
                         _f(sp["never"]), _f(broken) if label is None else ""])
    return (f"<h3>Sub-groups (partitions)</h3>{_table(head, body, 'small')}<p class=\"note\">A job with a "
            "<code>partitionPolicy</code> task has one sub-group per partition (the PodGroup's "
            "<code>subGroupPolicy</code>); a sub-group's spread is the LCA tier of its own pods when the job's gang "
            "first started. A job is never lower than its widest sub-group: a low sub-group tier under a high job "
            "tier is a job spread over switches whose partitions each stayed local. \"Partition hard constraint "
            "broken\": sub-groups whose pods ever spanned above their partition's hard tier.</p>")


# --- tables -----------------------------------------------------------------------------------------------------
def _f(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def _e(v: Any) -> str:
    return html.escape(str(v))


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """Cells are already escaped HTML."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{th}</tr>{body}</table>'


def _change(new: float | None, old: float | None, metric: str = "wait_p95") -> str:
    """The change of ``metric`` against the first run in per cent, green when better (the registry's direction)
    and red when worse by more than half a per cent."""
    if new is None or old is None:
        return "-"
    if old == 0:
        return "=" if new == 0 else "+"
    pct = (new - old) / old * 100
    verdict = METRICS[metric].improved(pct, 0.0, tolerance=0.5)
    cls = "" if verdict is None else ("better" if verdict else "worse")
    return f'<span class="{cls}">{pct:+.0f}%</span>'


def p95_wait(rows: list[dict[str, Any]], window: float) -> tuple[float | None, int]:
    """The p95 wait of ``rows`` counting a job whose gang never started as waiting until the end of the window (a
    lower bound: so a run that leaves jobs waiting forever cannot look better for it), and how many those are."""
    waits = [x["wait"] if x["wait"] is not None else window - x["submit"] for x in rows]
    return stats(waits)["p95"], sum(x["wait"] is None for x in rows)


def headline(runs: list[RunData], queues: list[str], window: float) -> str:
    """Per queue p95 wait per run (and its change against the first run), then the cost rows."""
    head = ["queue"] + [_e(r.name) + " p95 wait (s)" for r in runs] + [f"change {_e(r.name)}" for r in runs[1:]]
    body = []
    for q in [None, *queues]:  # all jobs first: a queue's move never hides the whole
        got = [p95_wait([x for x in r.rows if q is None or x["queue"] == q], window) for r in runs]
        p95s = [p for p, _ in got]
        size = max(sum(q is None or x["queue"] == q for x in r.rows) for r in runs)
        cells = [(f"<b>{_e(q)}</b>" + (f' <span class="warn">({size} job{"s" if size != 1 else ""}: too few for a '
                                       'p95)</span>'
                                       if size < MIN_P95_JOBS else "")) if q is not None else "<b>all jobs</b>"]
        cells += [("&ge; " if n else "") + _f(p) + (f' <span class="warn">({n} never started)</span>' if n else "")
                  for p, n in got]
        cells += [_change(p, p95s[0]) for p in p95s[1:]]
        body.append(cells)
    t1 = _table(head, body, "headline")
    costs = [r.summary.get("cost") or {} for r in runs]
    causes = sorted({c for x in costs for c in x.get("evictions_by_cause", {})})

    def row(label: str, get: Any) -> list[str]:
        return [label, *[_f(get(c)) for c in costs]]
    crow = [row("evictions", lambda c: c.get("evictions"))]
    crow += [row(f"&nbsp;&nbsp;by {_e(cause)}", lambda c, k=cause: c.get("evictions_by_cause", {}).get(k, 0))
             for cause in causes]
    crow += [row("job restarts", lambda c: c.get("restarts")),
             row("jobs failed", lambda c: c.get("failed")),
             row("jobs aborted or terminated", lambda c: c.get("aborted_or_terminated")),
             row("GPU-hours thrown away", lambda c: c.get("gpu_hours_lost")),
             row("cpu-hours thrown away", lambda c: c.get("cpu_hours_lost"))]
    t2 = _table(["cost"] + [_e(r.name) for r in runs], crow, "cost")
    return f'<div class="pair"><div>{t1}</div><div>{t2}</div></div>'


#: a queue with fewer jobs than this has no p95 worth reading: it is about its largest wait (the 95th percentile
#: of 19 values lies between the two largest)
MIN_P95_JOBS = 20


def _waits(r: RunData, window: float) -> dict[str, float]:
    """Every job's wait, a job whose gang never started counted until the end of the window (as ``p95_wait``)."""
    return {x["job"]: x["wait"] if x["wait"] is not None else window - x["submit"] for x in r.rows}


def paired_stats(base: RunData, r: RunData, window: float) -> list[tuple[str, Paired]]:
    """``r`` against ``base`` over the jobs both ran (one workload: the same jobs, the common random numbers of a
    single run): the mean wait from the per-job differences, and the p95 wait with the pairs resampled together
    (``sim/stats.py``)."""
    from pyvolcano.sim.stats import paired, paired_quantile

    wa, wb = _waits(base, window), _waits(r, window)
    jobs = [j for j in wa if j in wb]
    if not jobs:
        return []
    mean = paired(METRICS["wait_mean"], {i: wa[j] for i, j in enumerate(jobs)}, {i: wb[j] for i, j in enumerate(jobs)})
    p95 = paired_quantile(METRICS["wait_p95"], [wa[j] for j in jobs], [wb[j] for j in jobs], 95)
    return [("mean wait, job by job", mean), ("p95 wait", p95)]


def paired_verdicts(base: RunData, r: RunData, window: float) -> list[tuple[str, str]]:
    """(what, verdict) of :func:`paired_stats`."""
    return [(what, p.verdict("jobs")) for what, p in paired_stats(base, r, window)]


def headline_sentence(runs: list[RunData], queues: list[str], window: float) -> str:
    """Per compared run: first all jobs (mean and p95 wait, failed or aborted jobs, with the paired verdicts),
    then the queue whose p95 wait moved most among the queues with enough jobs to read a p95, and the cost."""
    if len(runs) < 2:
        return ""
    out = []
    base = runs[0]
    sizes = {q: max(sum(x["queue"] == q for x in run.rows) for run in runs) for q in queues}
    small = [q for q in queues if sizes[q] < MIN_P95_JOBS]
    for r in runs[1:]:
        all_a, na = p95_wait(base.rows, window)
        all_b, nb = p95_wait(r.rows, window)
        mean = [float(np.mean(list(_waits(run, window).values()))) if run.rows else None for run in (base, r)]
        failed = [METRICS["failed"].raw(run.summary) for run in (base, r)]
        lead = (f"<b>{_e(r.name)}</b> vs <b>{_e(base.name)}</b>, all {len(r.rows)} jobs: wait mean "
                f"{'&ge; ' if na else ''}{_f(mean[0], 0)} s &rarr; {'&ge; ' if nb else ''}{_f(mean[1], 0)} s "
                f"{_change(mean[1], mean[0], 'wait_mean')}, p95 "
                f"{'&ge; ' if na else ''}{_f(all_a, 0)} s &rarr; {'&ge; ' if nb else ''}{_f(all_b, 0)} s "
                f"{_change(all_b, all_a)}; failed or aborted jobs {_f(failed[0])} &rarr; "
                + (f'<span class="worse">{_f(failed[1])}</span>' if (failed[1] or 0) > (failed[0] or 0) else
                   f"{_f(failed[1])}") + ".")
        verdicts = "".join(f"<li>{_e(what)}: {_e(v)}</li>" for what, v in paired_verdicts(base, r, window))
        moves = []
        for q in queues:
            a, na = p95_wait([x for x in base.rows if x["queue"] == q], window)
            b, nb = p95_wait([x for x in r.rows if x["queue"] == q], window)
            if a is not None and b is not None:
                moves.append((sizes[q] >= MIN_P95_JOBS, abs(b - a), q, ("&ge; " if na else "") + _f(a, 0),
                              ("&ge; " if nb else "") + _f(b, 0)))
        c = r.summary.get("cost") or {}
        cost = (f"{c.get('evictions', 0)} evictions, {c.get('restarts', 0)} restarts, {c.get('failed', 0)} failed "
                f"jobs, {_f(c.get('gpu_hours_lost', 0.0))} GPU-hours thrown away")
        never = [sum(x["wait"] is None for x in run.rows) for run in (base, r)]
        if never != [0, 0]:
            cost += f'; <span class="warn">jobs never started: {never[0]} &rarr; {never[1]}</span>'
        if base.result.spread is not None and r.result.spread is not None:  # the locality the wait bought
            local = []
            for run in (base, r):
                sp = _spread(run, window)
                local.append(f"{(sp['counts'].get(0, 0) + sp['counts'].get(1, 0)) / sp['started']:.0%}"
                             if sp["started"] else "-")
            cost += f"; multi-pod jobs within one tier-1 hypernode: {local[0]} &rarr; {local[1]}"
            if _partitioned(base) or _partitioned(r):
                subs = [_sub_spread(run, window)["within1"] for run in (base, r)]
                cost += ("; partitioned jobs with every sub-group within one: "
                         + " &rarr; ".join("-" if x is None else f"{x:.0%}" for x in subs))
        if moves:
            enough, _, q, before, after = max(moves)
            few = "" if enough else (f' <span class="warn">(only {sizes[q]} job{"s" if sizes[q] != 1 else ""}: too '
                                     "few to read a p95, which is about their largest wait)</span>")
            queue = f"Queue that moved most: <b>{_e(q)}</b>, p95 wait {before} s &rarr; {after} s{few}. "
        else:
            queue = ""
        out.append(f'<p class="lead">{lead}</p><ul class="verdicts">{verdicts}</ul><p>{queue}Cost: {cost}.</p>')
    if small:
        out.append(f'<p class="warn">Too few jobs to read a p95 (fewer than {MIN_P95_JOBS}): queue'
                   f"{'s' if len(small) > 1 else ''} {', '.join(f'{_e(q)} ({sizes[q]})' for q in small)}.</p>")
    return "".join(out)


def summary_table(runs: list[RunData]) -> str:
    def stat(s: dict[str, Any], prefix: str) -> str:
        return " / ".join(_f(METRICS[f"{prefix}_{k}"].raw(s)) for k in ("mean", "p50", "p95", "p99"))

    def util(s: dict[str, Any]) -> str:
        return " / ".join(f"{(METRICS['util_' + k].raw(s) or 0) * 100:.1f}%" for k in RESOURCES)

    def one(name: str, digits: int = 1) -> list[str]:
        m = METRICS[name]
        return [m.label, *[_f(m.raw(r.summary), digits) for r in runs]]

    def outcome(s: dict[str, Any]) -> str:  # they add up to the jobs (sim/figures.py: outcomes)
        return " / ".join(str(METRICS[k].raw(s)) for k in ("completed", "failed", "unfinished", "jobs"))
    rows: list[list[str]] = [
        ["jobs: completed / failed or aborted / unfinished / total", *[outcome(r.summary) for r in runs]],
        ["jobs whose gang never started", *[_f(METRICS["never_started"].raw(r.summary)) for r in runs]],
        ["wait mean / p50 / p95 / p99 (s)", *[stat(r.summary, "wait") for r in runs]],
        ["JCT mean / p50 / p95 / p99 (s, completed)", *[stat(r.summary, "jct") for r in runs]],
        one("makespan"),
        ["window (s)", *[_f(r.summary.get("window_s")) for r in runs]],
        ["utilisation cpu / memory / gpu", *[util(r.summary) for r in runs]],
        one("fairness", 3),
        *([one(n, 2) for n in ("gpu_alloc_final", "gpu_unallocated", "gpu_unallocated_mean", "gpu_frag",
                               "gpu_frag_mean")] if any("gpu" in r.summary for r in runs) else []),
        *([one(n, 2) for n in ("fill_alloc_100", "fill_alloc_130")]
          if any("fill_curve" in r.summary for r in runs) else []),
        one("gangs_rolled_back"),
        one("cycles"),
        one("scheduler_s_per_cycle", 4),
        one("wall_seconds", 2),
    ]
    return _table(["metric"] + [_e(r.name) for r in runs], rows)


def queue_table(runs: list[RunData], queues: list[str]) -> str:
    head = ["queue", "run", "jobs", "completed", "failed / aborted", "unfinished", "never started",
            "wait p50 / p95 (s)", "admission p50 / p95 (s)", "placement p50 / p95 (s)", "JCT mean (s)",
            "allocated (mean % of cluster)", "deserved (mean %)", "share (mean)"]
    body = []
    for q in queues:
        for r in runs:
            qr = [x for x in r.rows if x["queue"] == q]
            c = outcomes(qr)
            w = stats([x["wait"] for x in qr if x["wait"] is not None])
            st = stage_waits(qr).get(q) or {"admission": stats([]), "placement": stats([])}
            sh = (r.summary.get("queue_shares") or {}).get(q) or {}

            def pct(v: Any) -> str:
                return "-" if v is None else f"{v * 100:.1f}%"
            body.append([_e(q), _e(r.name), _f(len(qr)), _f(c["completed"]), _f(failed_or_aborted(c)),
                         _f(c["unfinished"]),
                         _f(c["never_started"]), f"{_f(w['p50'])} / {_f(w['p95'])}",
                         f"{_f(st['admission']['p50'])} / {_f(st['admission']['p95'])}",
                         f"{_f(st['placement']['p50'])} / {_f(st['placement']['p95'])}",
                         _f(stats([x["jct"] for x in qr if x["jct"] is not None])["mean"]),
                         pct(sh.get("allocated")), pct(sh.get("deserved")), _f(sh.get("share"), 2)])
    return _table(head, body, "small")


def eviction_table(r: RunData) -> str:
    log = r.result.eviction_log
    if not log:
        return "<p>No evictions.</p>"
    qof = {key: rec.queue for key, rec in r.result.records.items()}
    phase = {key: rec.phase for key, rec in r.result.records.items()}
    body = []
    for e in log[:MAX_EVICTION_ROWS]:
        by = ", ".join(f"{_e(j)} ({_e(qof.get(j, '?'))})" for j in e.by) or "-"
        if len(e.by) > 1:
            by = "one of " + by
        lost = "-" if e.lost is None else _f(float(e.lost[2]) / 3600, 2)
        body.append([_f(e.t, 0), _e(e.cause), f"{_e(e.job)} ({_e(e.queue)})", _e(phase.get(e.job, "?")), by,
                     _e(e.node), lost])
    more = (f'<p class="note">First {MAX_EVICTION_ROWS} of {len(log)} evictions; every one is in '
            f"evictions.csv.</p>" if len(log) > MAX_EVICTION_ROWS else "")
    return _table(["t (s)", "cause", "victim job (queue)", "victim's final phase", "displaced by (queue)", "node",
                   "GPU-h thrown away"], body, "small") + more


def unfinished_table(r: RunData) -> str:
    bad = [x for x in r.rows if x["phase"] != "Completed"]
    if not bad:
        return "<p>Every job completed.</p>"
    body = [[_e(x["job"]), _e(x["queue"]), _e(x["phase"]), _f(x["submit"], 0), _f(x["enqueued"], 0),
             _f(x["all_started"], 0), _f(x["finished"], 0), _f(x["restarts"]), _f(x["preempted"])]
            for x in bad[:MAX_JOB_ROWS]]
    more = (f'<p class="note">First {MAX_JOB_ROWS} of {len(bad)}; all are in jobs.csv.</p>'
            if len(bad) > MAX_JOB_ROWS else "")
    return _table(["job", "queue", "phase", "submit", "enqueued", "gang started", "finished", "restarts",
                   "pods evicted"], body, "small") + more


def conf_section(runs: list[RunData]) -> str:
    if len(runs) == 1 or not runs[0].conf:
        return f"<h3>Conf: {_e(runs[0].name)}</h3><pre>{_e(runs[0].conf or '(not recorded)')}</pre>"
    out = []
    for r in runs[1:]:
        diff = list(difflib.unified_diff(runs[0].conf.splitlines(), r.conf.splitlines(), runs[0].name, r.name,
                                         lineterm="", n=2))
        lines = []
        for line in diff:
            cls = "add" if line.startswith("+") and not line.startswith("+++") else (
                "del" if line.startswith("-") and not line.startswith("---") else "")
            lines.append(f'<span class="{cls}">{_e(line)}</span>')
        body = "\n".join(lines) if diff else "(the same conf)"
        out.append(f"<h3>Conf diff: {_e(runs[0].name)} &rarr; {_e(r.name)}</h3><pre class=\"diff\">{body}</pre>")
    out.append(f"<details><summary>Full conf of {_e(runs[0].name)}</summary><pre>{_e(runs[0].conf)}</pre>"
               "</details>")
    return "".join(out)


CSS = """body{font-family:system-ui,sans-serif;max-width:1180px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}table.small{font-size:.85em}img{max-width:100%}
.pair{display:flex;gap:2em;flex-wrap:wrap}.better{color:#087a2a;font-weight:bold}.worse{color:#b3261e;font-weight:bold}
.note{color:#666;font-size:.85em}.warn{color:#b3261e;font-size:.9em}
.lead{font-size:1.1em;background:#f6f8fa;padding:.5em .8em;border-left:4px solid #4a7;margin-bottom:.2em}
ul.verdicts{margin-top:.2em}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}.add{color:#087a2a}.del{color:#b3261e}"""


def page(runs: list[RunData], title: str, settings: dict[str, Any] | None = None) -> str:
    """The page for one run or several compared runs (the first is the baseline)."""
    window = _window(runs)
    queues = _queues(runs)
    imgs: list[tuple[str, str, str | None]] = [
        ("utilisation", "Utilisation", plot_utilisation(runs, window)),
        ("queues", "Per-queue allocated vs deserved", plot_queues(runs, queues, window)),
        ("gpus", "GPU allocation and fragmentation", plot_gpus(runs, window)),
        ("wait_cdf", "Wait-time CDFs per queue", plot_wait_cdfs(runs, queues)),
        ("throughput", "Throughput", plot_throughput(runs, window)),
        ("wait_stages", "Admission vs placement wait", plot_wait_stages(runs, queues)),
    ]

    def fig(alt: str, data: str | None) -> str:
        return f'<img alt="{alt}" src="data:image/png;base64,{data}">' if data else ""
    ev_plot = plot_evictions(runs, queues, window)
    sett = settings or {}
    settings_html = _table(["setting", "value"], [[_e(k), _e(v)] for k, v in sett.items()]) if sett else ""
    problems = sorted({p for r in runs for p in r.summary.get("problems", [])})
    nprob = max((r.summary.get("problem_count", 0) for r in runs), default=0)
    names = ", ".join(_e(r.name) for r in runs)
    parts = [
        f"<h1>{_e(title)}</h1>",
        "<p>Simulated with pyvolcano: the real scheduler (same session, actions and plugins as <code>pyvolcano "
        "cycle</code>) driven by a simulated job controller and kubelet. "
        + (f"Runs compared: {names}, over one time window of {_f(window / 3600, 2)} h; the first is the baseline."
           if len(runs) > 1 else f"Conf: <code>{names}</code>; window {_f(window / 3600, 2)} h.") + "</p>",
        headline_sentence(runs, queues, window),
        "<h2>At a glance: p95 wait per queue, and what it cost</h2>", headline(runs, queues, window),
        '<p class="note">Wait: submit until minAvailable pods were running (the last start, after restarts); a job '
        "whose gang never started counts here as waiting until the end of the window (&ge;: a lower bound). "
        "Thrown away: resources held by pods deleted before they succeeded (evicted, lost with a node, deleted by a "
        "restart), from their bind to their deletion.</p>",
        "<h2>Settings</h2>", settings_html, conf_section(runs),
        "<h2>Summary</h2>", summary_table(runs),
        "<h2>Per queue</h2>", queue_table(runs, queues),
    ]
    topo_html = topology_section(runs, window)
    if topo_html:
        parts += ["<h2>Network topology: spread vs wait</h2>",
                  fig("spread_wait", plot_spread_wait(runs, window)), topo_html]
    for alt, head, data in imgs:
        if data:
            parts.append(f"<h2>{head}</h2>{fig(alt, data)}")
    parts.append("<h2>Evictions: who displaced whom</h2>")
    parts.append('<p class="note">The job an eviction made room for is the one its session pipelined onto the '
                 "victim's node (Volcano records only the reason); \"one of\" when several jobs were pipelined there "
                 "in that session.</p>")
    parts.append(fig("evictions", ev_plot))
    for r in runs:
        parts.append(f"<h3>{_e(r.name)}: {len(r.result.eviction_log)} evictions</h3>{eviction_table(r)}")
    parts.append("<h2>Jobs that did not complete (failed, aborted, unfinished)</h2>")
    for r in runs:
        n = sum(x["phase"] != "Completed" for x in r.rows)
        parts.append(f"<h3>{_e(r.name)}: {n}</h3>{unfinished_table(r)}")
    parts.append(f"<h2>Input problems ({nprob})</h2><ul>{''.join(f'<li>{_e(p)}</li>' for p in problems)}</ul>")
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>{_e(title)}</title><style>{CSS}</style>'
            f"</head><body>{''.join(parts)}</body></html>")


def write(out: Path, result: SimResult, rows: list[dict[str, Any]], summary: dict[str, Any], title: str,
          conf: str = "", settings: dict[str, Any] | None = None) -> Path:
    """``out/report.html`` for one run."""
    path = out / "report.html"
    name = str(summary.get("config") or "run").rsplit("/", 1)[-1]  # a conf's file name, not its whole path
    path.write_text(page([RunData(name, result, rows, summary, conf)], title, settings))
    return path


def write_comparison(path: Path, runs: list[RunData], title: str, settings: dict[str, Any] | None = None) -> Path:
    """The comparison page of runs compared side by side (the first is the baseline)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(runs, title, settings))
    return path
