"""report.html: a self-contained page (plots embedded as PNG) that a person opens in a browser."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pyvolcano.sim.engine import SimResult


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _hours(t: np.ndarray) -> np.ndarray:
    return t / 3600.0


def plots(result: SimResult, rows: list[dict[str, Any]], window: float = 0.0) -> dict[str, str]:
    out: dict[str, str] = {}
    s = result.samples
    cap = np.where(result.capacity > 0, result.capacity, 1)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    steps = result.usage.total  # every bind, finish and deletion: the exact step function, to the run's end
    if steps.times:
        t = _hours(np.array([*steps.times, max(result.end_time, window, steps.times[-1])]))
        used = np.array([*steps.values, steps.values[-1]]).reshape(len(t), 3) / cap
        for i, name in enumerate(("cpu", "memory", "gpu")):
            if result.capacity[i] > 0:
                ax.step(t, used[:, i] * 100, where="post", label=name)
    ax.set(xlabel="simulated time (h)", ylabel="allocated (% of cluster)", ylim=(0, 105),
           title="Utilisation over time")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    out["utilisation"] = _png(fig)

    queues = sorted({q for x in s for q in x.queues})
    if queues:
        fig, axes = plt.subplots(len(queues), 1, figsize=(9, 2.2 * len(queues)), sharex=True, squeeze=False)
        for ax, q in zip(axes[:, 0], queues, strict=True):
            pts = [(x.t, *x.queues[q]) for x in s if q in x.queues]
            a = np.array(pts)
            ax.step(_hours(a[:, 0]), a[:, 1] * 100, where="post", label="allocated")
            ax.step(_hours(a[:, 0]), a[:, 2] * 100, where="post", label="deserved", linestyle="--")
            ax.set(ylabel="% of cluster", title=f"queue {q}: allocated vs deserved (dominant resource)")
            ax.grid(alpha=0.3)
            ax.legend(loc="upper right")
        axes[-1, 0].set_xlabel("simulated time (h)")
        out["queues"] = _png(fig)

    fig, ax = plt.subplots(figsize=(9, 3.2))
    for q in sorted({r["queue"] for r in rows}):
        w = np.sort([r["wait"] for r in rows if r["queue"] == q and r["wait"] is not None])
        if len(w):
            ax.step(np.maximum(w, 0.1), np.arange(1, len(w) + 1) / len(w), where="post", label=f"{q} ({len(w)})")
    ax.set(xscale="log", xlabel="wait until the gang started (s, log)", ylabel="fraction of jobs",
           title="Wait-time CDF per queue")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # no job started: nothing to label
        ax.legend(loc="lower right")
    out["wait_cdf"] = _png(fig)
    return out


def _table(summary: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "-" if v is None else (f"{v:,.1f}" if isinstance(v, float) else str(v))
    rows = [("jobs", summary["jobs"]), *((k, summary.get(k, 0)) for k in ("completed", "failed", "aborted", "unfinished")),
            ("never started (no wait)", summary.get("never_started", 0)),
            ("makespan (s)", summary["makespan_s"]), ("wait mean / p50 / p95 / p99 (s)",
             " / ".join(f(summary["wait_s"][k]) for k in ("mean", "p50", "p95", "p99"))),
            ("JCT mean / p50 / p95 / p99 (s)", " / ".join(f(summary["jct_s"][k]) for k in ("mean", "p50", "p95", "p99"))),
            ("utilisation cpu / memory / gpu", " / ".join(f"{summary['utilisation'][k] * 100:.1f}%"
                                                           for k in ("cpu", "memory", "gpu"))),
            ("Jain fairness of queue shares", summary["jain_fairness_queue_shares"]),
            ("gangs rolled back", summary["gangs_rolled_back"]), ("evictions", summary["evictions"]),
            ("restarts", summary["restarts"]), ("scheduling cycles", summary["cycles"]),
            ("scheduler seconds per cycle (mean)", summary["scheduler_seconds_per_cycle"]["mean"]),
            ("wall seconds", summary["wall_seconds"])]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(f(v))}</td></tr>" for k, v in rows)
    q = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{d['jobs']}</td><td>{d['completed']}</td>"
        f"<td>{d.get('failed', 0)}</td><td>{d.get('aborted', 0)}</td><td>{d.get('unfinished', 0)}</td>"
        f"<td>{f(d['wait']['mean'])}</td><td>{f(d['wait']['p95'])}</td><td>{f(d['jct']['mean'])}</td></tr>"
        for name, d in summary["per_queue"].items())
    return (f"<table>{body}</table><h2>Per queue</h2><table><tr><th>queue</th><th>jobs</th><th>completed</th>"
            f"<th>failed</th><th>aborted</th><th>unfinished</th><th>wait mean (s)</th><th>wait p95 (s)</th>"
            f"<th>JCT mean (s)</th></tr>{q}</table>")


def write(out: Path, result: SimResult, rows: list[dict[str, Any]], summary: dict[str, Any], title: str) -> Path:
    imgs = plots(result, rows, float(summary.get("window_s") or 0.0))
    figs = "".join(f'<h2>{html.escape(k.replace("_", " "))}</h2><img alt="{k}" src="data:image/png;base64,{v}">'
                   for k, v in imgs.items())
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in summary.get("problems", []))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}th,td{{border:1px solid #ccc;padding:4px 10px;text-align:left}}
img{{max-width:100%}}</style></head><body><h1>{html.escape(title)}</h1>
<p>Simulated with pyvolcano: the real scheduler (same session, actions and plugins as <code>pyvolcano cycle</code>)
driven by a simulated job controller and kubelet. Config: <code>{html.escape(str(summary.get("config")))}</code>.</p>
{_table(summary)}{figs}
<h2>Input problems ({summary.get("problem_count", 0)})</h2><ul>{problems}</ul></body></html>"""
    path = out / "report.html"
    path.write_text(page)
    return path
