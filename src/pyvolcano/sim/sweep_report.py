"""sweep.html: one self-contained page (PNG plots embedded, no script, nothing fetched) for a sweep.

It answers the sweep's question: within each setting of the other knobs (load, cluster size, ...), which conf is
best for the objective, and is it clearly better: a verdict line per compared pair and metric from the per-seed
paired differences (``sim/stats.py``); a table of every group (conf and knob values) with each metric's mean and
bootstrap interval over the seeds (kept within the metric's range), the best conf of each setting highlighted; and
for every numeric knob a plot of the key metrics against it with one line per combination of the other parameters.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from pyvolcano.sim.metric_registry import METRICS, SWEPT

if TYPE_CHECKING:
    from pyvolcano.sim.sweep import Row, SweepSpec

#: metrics plotted against every knob (the objective comes first); names of ``sim/metric_registry.py``
PLOTTED = ("wait_p95", "util_gpu", "util_cpu", "evictions", "failed", "jct_mean")
#: metrics shown in the table (besides the objective)
SHOWN = ("wait_p50", "wait_p95", "jct_mean", "util_cpu", "util_gpu", "evictions", "failed", "unfinished", "fairness")
assert all(m in SWEPT for m in (*PLOTTED, *SHOWN)), "the sweep page shows swept metrics"


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def plots(spec: SweepSpec, rows: list[Row]) -> list[tuple[str, str]]:
    """(title, base64 PNG) for each numeric knob with two or more values; a bar chart per conf without one."""
    from pyvolcano.sim.sweep import describe, label

    metrics = list(dict.fromkeys((spec.objective.metric, *PLOTTED)))
    metrics = [m for m in metrics if any(r.metrics.get(m) is not None for r in rows)][:4]
    out: list[tuple[str, str]] = []
    knobs = [k for k, v in spec.grid.items() if len(v) > 1 and _numeric(v)]
    for knob in knobs:
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
        lines: dict[str, list[tuple[float, Row]]] = {}
        for r in rows:
            others = {"conf": r.conf, **{k: v for k, v in r.params.items() if k != knob}}
            lines.setdefault(describe(others), []).append((float(r.params[knob]), r))
        for ax, m in zip(axes[0], metrics, strict=True):
            for line, pts in lines.items():
                pts.sort(key=lambda p: p[0])
                xs = [x for x, r in pts if r.metrics.get(m) is not None]
                got = [v for _, r in pts if (v := r.metrics.get(m)) is not None]
                ys = [v[0] for v in got]
                es = [[v[0] - v[1] for v in got], [v[2] - v[0] for v in got]]  # the interval need not be symmetric
                if xs:
                    ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=line)
            ax.set(xlabel=label(knob), title=m)
            ax.grid(alpha=0.3)
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:  # below the axes, clear of their x labels (bbox_inches="tight" keeps it in the image)
            fig.legend(handles, labels, loc="upper center", ncol=min(3, len(labels)), fontsize=8,
                       bbox_to_anchor=(0.5, -0.02), frameon=False)
        fig.tight_layout()
        out.append((f"metrics against {label(knob)} (one line per other setting; bars: 95 % bootstrap interval over seeds)",
                    _png(fig)))
    if not knobs and rows:
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
        labels = [describe({"conf": r.conf, **r.params}) for r in rows]
        for ax, m in zip(axes[0], metrics, strict=True):
            vals = [r.metrics.get(m) for r in rows]
            ax.bar(range(len(rows)), [v[0] if v else 0 for v in vals],
                   yerr=[[v[0] - v[1] if v else 0 for v in vals], [v[2] - v[0] if v else 0 for v in vals]],
                   capsize=3, color="#4c78a8")
            ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=8)
            ax.set(title=m)
            ax.grid(alpha=0.3, axis="y")
        out.append(("metrics per setting (bars: 95 % bootstrap interval over seeds)", _png(fig)))
    return out


#: metrics whose paired verdicts the page lists (after the objective)
VERDICTS = ("wait_p50", "wait_p95", "jct_mean", "util_gpu", "util_cpu", "evictions", "failed", "unfinished")


def _verdicts(rows: list[Row], pairs: list[dict[str, Any]], objective: str) -> str:
    """Per setting of the other knobs, per two confs: one line per metric with its verdict."""
    from pyvolcano.sim.sweep import by_setting, describe, setting

    shown = list(dict.fromkeys((objective, *VERDICTS)))
    out = []
    for group in by_setting(rows).values():
        knobs = setting(group[0].params)
        mine = [p for p in pairs if p["knobs"] == knobs and p["metric"] in shown]
        if not mine:
            continue
        out.append(f"<h3>{html.escape(describe(knobs)) if knobs else 'All points'}</h3>")
        for a, b in dict.fromkeys((p["a"], p["b"]) for p in mine):
            lines = []
            for p in sorted((p for p in mine if (p["a"], p["b"]) == (a, b)), key=lambda p: shown.index(p["metric"])):
                v = p["verdict"]
                cls = "better" if v.startswith("better") else "worse" if v.startswith("worse") else "same"
                lines.append(f"<li class='{cls}'><b>{html.escape(p['metric'])}</b>: {html.escape(v)}</li>")
            out.append(f"<p><b>{html.escape(b)}</b> against <b>{html.escape(a)}</b> (paired on the same seeds):</p>"
                       f"<ul class='verdicts'>{''.join(lines)}</ul>")
    if not out:
        return "<p>Only one conf per setting: nothing to pair.</p>"
    return "".join(out)


def write_page(path: Path, spec: SweepSpec, rows: list[Row], tops: list[Row],
               pairs: list[dict[str, Any]] | None = None) -> None:
    from pyvolcano.sim.sweep import best_note, describe, fmt, setting

    obj = spec.objective
    shown = list(dict.fromkeys((obj.metric, *SHOWN)))
    head = "".join(f"<th title='{html.escape(METRICS[m].doc) if m in METRICS else ''}'>{html.escape(m)}</th>"
                   for m in shown)
    body = []
    best_ids = {id(t) for t in tops}
    for r in rows:
        cls = " class='best'" if id(r) in best_ids else ""
        cells = "".join(f"<td>{html.escape(fmt(r.metrics.get(m)))}</td>" for m in shown)
        body.append(f"<tr{cls}><td>{html.escape(r.conf)}</td><td>{html.escape(describe(r.params))}</td>"
                    f"<td>{len(r.seeds)}</td>{cells}</tr>")
    by_top = []
    for t in tops:
        knobs = setting(t.params)
        where = f"at {html.escape(describe(knobs))}" if knobs else "overall"
        note = best_note(t, pairs or [], obj.metric)
        by_top.append(f"<li>{where}: <b>{html.escape(t.variant)}</b> "
                      f"({html.escape(fmt(t.metrics.get(obj.metric)))})"
                      + (f"; <span class='{'clear' if note.startswith('clearly') else 'unclear'}'>"
                         f"{html.escape(note)}</span>" if note else "") + "</li>")
    best_line = (f"<p class='bestline'>Best for {obj.goal} {html.escape(obj.metric)}, within each setting of the other "
                 f"knobs:</p><ul class='bestline'>{''.join(by_top)}</ul>"
                 if tops else f"<p>No finished point has {html.escape(obj.metric)}.</p>")
    figs = "".join(f"<h2>{html.escape(t)}</h2><img alt='{html.escape(t)}' src='data:image/png;base64,{b}'>"
                   for t, b in plots(spec, rows))
    confs = "".join(f"<li><b>{html.escape(c.name)}</b>: {html.escape(c.file or 'Volcano default conf')}"
                    f"{(' with ' + html.escape(', '.join(f'{k}={v}' for k, v in c.set.items()))) if c.set else ''}"
                    f"</li>" for c in spec.confs)
    grid = "".join(f"<li>{html.escape(k)}: {html.escape(', '.join(map(str, v)))}</li>" for k, v in spec.grid.items())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(spec.name)}</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1400px}} table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}} td:nth-child(-n+2){{text-align:left}}
tr.best{{background:#e6f4ea;font-weight:bold}} img{{max-width:100%}} .bestline{{font-size:15px}}
ul.verdicts{{margin-top:0}} li.better{{color:#087a2a}} li.worse{{color:#b3261e}} li.same{{color:#555}}
.note{{color:#666;font-size:13px}} td{{white-space:nowrap}} .clear{{color:#087a2a}} .unclear{{color:#8a6d00}}
</style></head>
<body><h1>Sweep: {html.escape(spec.name)}</h1>{best_line}
<p>Workload: {html.escape(spec.workload.kind)}; cluster: {html.escape(spec.cluster or 'from the trace')};
seeds: {html.escape(', '.join(map(str, spec.seeds)))}. Every conf runs on the same seeds (the same jobs).</p>
<h2>Paired comparisons</h2><p class="note">Each line: the conf named first against the second, at the same other
knobs, from the per-seed differences (same seed: same jobs). A difference is clear when the 95 % bootstrap interval
of its mean leaves out zero and at least 3 seeds were paired; the change and its interval are in per cent of the
second conf's mean.</p>{_verdicts(rows, pairs or [], obj.metric)}
<h2>Confs</h2><ul>{confs}</ul><h2>Grid</h2><ul>{grid or '<li>(none: confs and seeds only)</li>'}</ul>
<h2>Results</h2><p class="note">Each cell: mean [95 % bootstrap interval over the seeds], kept within the metric's
range (a count or a wait is never below 0, a share never above 100 %). Highlighted: the best conf of each
setting.</p><table><tr><th>conf</th><th>knobs</th><th>seeds</th>{head}</tr>{''.join(body)}</table>
{figs}</body></html>"""
    path.write_text(page)
