"""What a simulation produced: jobs.csv and summary.json.

Definitions (docs/simulator.md, "Metrics"): a job's **wait** is the time from its submission until its gang first
started (minAvailable pods Running at once, ``all_started``); a job whose gang never started has no wait and is
counted in ``never_started`` instead of the wait statistics, whatever its end.  **JCT** is submission to completion
of Completed jobs.  Every job is in exactly one of ``completed``, ``failed``, ``aborted`` (Aborted or Terminated) and
``unfinished`` (still pending or running when the run stopped), overall and per queue.  Utilisation is the exact
time average of what bound pods held over the window [0, ``window_s``].
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.sim import figures, topology
from pyvolcano.sim.engine import SimResult
from pyvolcano.sim.figures import outcomes

JOB_COLUMNS = ("job", "queue", "tasks", "min_available", "phase", "submit", "enqueued", "first_start", "all_started",
               "finished", "wait", "jct", "restarts", "preempted")
#: the last column of jobs.csv whatever the cluster: why a job that never started waits, and the best fix
#: (``analysis/whatif.py``; empty for the others)
WHY_COLUMN = "why"
#: the columns jobs.csv adds for a cluster with a network topology (``sim/topology.py: job_columns``; with
#: sub-groups in the workload also ``topology.SUB_COLUMNS``)
TOPOLOGY_COLUMNS = ("network_topology", "lca_tier", "max_lca_tier")


def job_rows(result: SimResult) -> list[dict[str, Any]]:
    rows = []
    for r in sorted(result.records.values(), key=lambda r: (r.submit, r.key)):
        wait = None if r.all_started is None else r.all_started - r.submit
        jct = None if r.finished is None or r.phase != "Completed" else r.finished - r.submit
        rows.append({"job": r.key, "queue": r.queue, "tasks": r.tasks, "min_available": r.min_available,
                     "phase": r.phase, "submit": r.submit, "enqueued": r.enqueued, "first_start": r.first_start,
                     "all_started": r.all_started, "finished": r.finished, "wait": wait, "jct": jct,
                     "restarts": r.restarts, "preempted": r.preempted,
                     **topology.job_columns(result.spread, r.key), WHY_COLUMN: r.why})
    return rows


def window(result: SimResult, horizon: float | None = None) -> float:
    """The end of the averaging window: ``horizon`` when given (``--horizon``, or the longest run when runs are
    compared side by side), else the end of the run."""
    return float(horizon) if horizon is not None else result.end_time


def time_weighted(result: SimResult, horizon: float | None = None) -> tuple[np.ndarray, float, list[float]]:
    """(mean utilisation of cpu/memory/gpu, mean Jain index over time, per-sample Jain values).

    Utilisation is exact: what pods held (``result.usage``, recorded at every bind, finish and deletion) integrated
    over [0, end of the run] (or [0, ``horizon``]: runs compared side by side share one window; what happens after
    it does not count) and divided by the cluster's capacity; it does not depend on when sessions ran.  The Jain
    index of queue shares is time-weighted over the session samples (shares change only in sessions)."""
    end = window(result, horizon)
    util = result.usage.utilisation(result.capacity, 0.0, end) if end > 0 else np.zeros(3)
    s = result.samples
    if len(s) < 2:
        return util, 1.0, []
    t = np.array([x.t for x in s])
    dt = np.diff(t)
    span = t[-1] - t[0]
    jains = []
    for x in s[:-1]:
        shares = [a / d for a, d in x.queues.values() if d > 0]
        jains.append(jain(shares) if shares else 1.0)
    jv = float((np.array(jains) * dt).sum() / span) if span > 0 else float(np.mean(jains))
    return util, jv, jains


def jain(x: list[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one has everything."""
    a = np.asarray(x, dtype=float)
    den = len(a) * float((a * a).sum())
    return float(a.sum() ** 2 / den) if den > 0 else 1.0


def summary(result: SimResult, rows: list[dict[str, Any]], conf_name: str = "",
            horizon: float | None = None) -> dict[str, Any]:
    """The run's figures; utilisation over [0, max(end of run, ``horizon``)] (``window_s``)."""
    util, fairness, _ = time_weighted(result, horizon)
    per_queue: dict[str, Any] = {}
    for q in sorted({r["queue"] for r in rows}):
        qr = [r for r in rows if r["queue"] == q]
        per_queue[q] = {"jobs": len(qr), **outcomes(qr),
                        "wait": figures.stats([r["wait"] for r in qr if r["wait"] is not None]),
                        "jct": figures.stats([r["jct"] for r in qr if r["jct"] is not None])}
    cs = result.cycle_seconds
    out = outcomes(rows)
    return {
        "config": conf_name, "jobs": len(rows), **out,
        "failed_or_aborted": figures.failed_or_aborted(out),
        "makespan_s": makespan(rows),
        "wait_s": figures.stats([r["wait"] for r in rows if r["wait"] is not None]),
        "jct_s": figures.stats([r["jct"] for r in rows if r["jct"] is not None]),
        "per_queue": per_queue,
        "window_s": round(window(result, horizon), 3),
        "utilisation": {"cpu": round(float(util[0]), 4), "memory": round(float(util[1]), 4),
                        "gpu": round(float(util[2]), 4)},
        "jain_fairness_queue_shares": round(fairness, 4),
        "gangs_rolled_back": result.rollbacks, "evictions": result.evictions,
        "restarts": sum(r["restarts"] for r in rows),
        "cycles": result.cycles,
        "scheduler_seconds_per_cycle": {"mean": round(float(np.mean(cs)), 5) if cs else 0.0,
                                        "max": round(float(np.max(cs)), 5) if cs else 0.0,
                                        "total": round(float(np.sum(cs)), 3)},
        "events": result.events, "simulated_seconds": round(result.end_time, 3),
        "wall_seconds": round(result.wall_seconds, 3),
        "events_per_second": round(result.events / result.wall_seconds, 1) if result.wall_seconds else None,
        "interrupted": result.interrupted, "problems": result.problems[:50], "problem_count": len(result.problems),
        **figures.summary_extra(result, rows, max(result.end_time, horizon or 0.0)),  # per-queue shares, cost
        **({"topology": topology.summary(result.spread, rows)} if result.spread is not None else {}),
        **({"gpu": g} if (g := gpu_summary(result, float(util[2]))) is not None else {}),
        **({"fill_curve": fill_curve(*result.fill)} if result.fill is not None else {}),
    }


#: the GPU series of summary.json keep at most this many points (every k-th sample, the last one always)
GPU_SERIES_POINTS = 200


def _step_mean(t: np.ndarray, v: np.ndarray) -> float:
    """The time average of a value that holds from each sample to the next (the last sample's time ends it); the
    plain mean when the samples span no time."""
    if len(v) == 1 or t[-1] <= t[0]:
        return float(v.mean())
    return float((v[:-1] * np.diff(t)).sum() / (t[-1] - t[0]))


def gpu_summary(result: SimResult, util_gpu: float) -> dict[str, Any] | None:
    """The GPU figures of a run on a cluster with GPUs (None without): the allocation rate (allocated GPUs over
    the cluster's: at the end, and its time average, ``utilisation.gpu``), the GPUs left unallocated (the cluster's
    minus the allocated, in GPUs: at the end and on average), FGD's fragmentation in GPUs (``sim/gpus.py``: at the
    end and its time average; None when not known: no task mix, or GPUs deviceshare did not choose) and the series
    over time (``GPU_SERIES_POINTS`` at most).  With the gpushare ledger (``result.gpu_series``) the allocation and
    fragmentation are its exact step functions, recorded at every change, sessions or not; otherwise (the pooled
    mapping) the session samples."""
    cap = float(result.capacity[2])
    s = result.samples
    if cap <= 0 or not s:
        return None
    if result.gpu_series is not None and result.gpu_series[0]:
        points, total = result.gpu_series
        t = np.array([p[0] for p in points])
        alloc = np.array([p[1] for p in points], dtype=float) / total
        frags = [p[2] for p in points]
        if result.end_time > t[-1]:  # the last state lasts until the run's end
            t, alloc, frags = np.append(t, result.end_time), np.append(alloc, alloc[-1]), [*frags, frags[-1]]
    else:
        t = np.array([x.t for x in s])
        alloc = np.array([float(x.used[2]) for x in s]) / cap
        frags = [x.gpu_frag for x in s]
    known = all(f is not None for f in frags)
    fv = np.array([f if f is not None else 0.0 for f in frags])
    keep = np.unique(np.r_[np.arange(0, len(t), max(1, -(-len(t) // GPU_SERIES_POINTS))), len(t) - 1])
    return {
        "gpus": round(cap, 3),
        "allocation_final": round(float(alloc[-1]), 4), "allocation_mean": round(util_gpu, 4),
        "unallocated_gpus_final": round(cap * (1 - float(alloc[-1])), 3),
        "unallocated_gpus_mean": round(cap * (1 - util_gpu), 3),
        "frag_gpus_final": round(float(fv[-1]), 3) if known else None,
        "frag_gpus_mean": round(_step_mean(t, fv), 3) if known else None,
        "series": {"t": [round(float(x), 3) for x in t[keep]],
                   "allocation": [round(float(x), 4) for x in alloc[keep]],
                   "frag_gpus": [round(float(x), 3) for x in fv[keep]] if known else None},
    }


#: the fill curve's points: every whole percent of arrived GPU demand, as the FGD paper's analysis takes them
FILL_PERCENTS = range(0, 131)


def fill_curve(milli: list[int], placed: list[bool], total: int) -> dict[str, Any]:
    """GPU allocation against arrived GPU demand, as the FGD paper's analysis computes it
    (``experiments/analysis/merge_alloc_discrete.py``): after each arrival, arrived = the milli-GPU asked by the
    pods arrived so far and allocated = the milli-GPU held by those placed (nothing leaves), both in percent of the
    cluster's ``total``; arrived rounded to a whole percent, allocated to two decimals.  At each whole percent
    p of ``FILL_PERCENTS`` the point is the mean allocated over the arrivals whose arrived rounds to p, else over
    those within p +- 1, else None (no arrival near p)."""
    m = np.asarray(milli, dtype=np.int64)
    arrived = np.round(np.cumsum(m) * 100.0 / total)
    alloc = np.round(np.cumsum(np.where(np.asarray(placed, dtype=bool), m, 0)) * 100.0 / total, 2)
    out: list[float | None] = []
    for p in FILL_PERCENTS:
        sel = alloc[arrived == p]
        if not len(sel):
            sel = alloc[(arrived >= p - 1) & (arrived <= p + 1)]
        out.append(round(float(sel.mean()), 2) if len(sel) else None)
    return {"arrived_gpu_pct": list(FILL_PERCENTS), "allocated_gpu_pct": out,
            "allocated_at_100": out[100], "allocated_at_130": out[130]}


def makespan(rows: list[dict[str, Any]]) -> float:
    """First submission to last finish (0 when no job finished)."""
    ends = [r["finished"] for r in rows if r["finished"] is not None]
    return round(max(ends) - min(r["submit"] for r in rows), 3) if ends else 0.0


def write(out: Path, result: SimResult, conf_name: str = "", horizon: float | None = None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    rows = job_rows(result)
    with (out / "jobs.csv").open("w", newline="") as f:
        cols = JOB_COLUMNS + (TOPOLOGY_COLUMNS if result.spread is not None else ()) \
            + (topology.SUB_COLUMNS if result.spread is not None and result.spread.sub_constraint else ()) \
            + (WHY_COLUMN,)
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else (round(v, 3) if isinstance(v, float) else v)) for k, v in r.items()})
    s = summary(result, rows, conf_name, horizon)
    (out / "summary.json").write_text(json.dumps(s, indent=2))
    return s
