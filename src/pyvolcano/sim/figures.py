"""The figures that answer "what changes if I turn on preempt/reclaim?": each queue's exact allocated, deserved and
share over the window, what preemption cost (evictions by cause, restarts, failed jobs, the resource-hours thrown
away by evicted pods), and the wait split into admission (submit until the PodGroup left Pending: ``enqueue``) and
placement (from then until the gang had started).  ``summary.json`` carries them (``metrics.summary``) and the
report pages show them (``sim/report.py``)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.sim.engine import SimResult

#: job phases that end a job without completing it (Volcano's job controller, ``pkg/controllers/job/state``)
FAILED = ("Failed", "Aborted", "Terminated")


def stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "p99": None}
    a = np.asarray(values, dtype=float)
    return {"mean": round(float(a.mean()), 3), "p50": round(float(np.percentile(a, 50)), 3),
            "p95": round(float(np.percentile(a, 95)), 3), "p99": round(float(np.percentile(a, 99)), 3)}


def stage_waits(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per queue: admission wait (``enqueued - submit``) and placement wait (``all_started - enqueued``) of the
    jobs that reached each point, and how many never did (still Pending, or failed/aborted before)."""
    out: dict[str, dict[str, Any]] = {}
    for q in sorted({r["queue"] for r in rows}):
        qr = [r for r in rows if r["queue"] == q]
        adm = [r["enqueued"] - r["submit"] for r in qr if r["enqueued"] is not None]
        pla = [r["all_started"] - r["enqueued"] for r in qr
               if r["enqueued"] is not None and r["all_started"] is not None]
        out[q] = {"admission": stats(adm), "placement": stats(pla), "never_enqueued": len(qr) - len(adm),
                  "never_started": sum(r["all_started"] is None for r in qr)}
    return out


def outcomes(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How the jobs ended: completed + failed + aborted (Aborted or Terminated) + unfinished = all of them; and
    apart from that, how many never had their gang started (they have no wait)."""
    unfinished = sum(r["finished"] is None for r in rows)
    done = [r for r in rows if r["finished"] is not None]
    completed = sum(r["phase"] == "Completed" for r in done)
    failed = sum(r["phase"] == "Failed" for r in done)
    return {"completed": completed, "failed": failed, "aborted": len(done) - completed - failed,
            "unfinished": unfinished, "never_started": sum(r["wait"] is None for r in rows)}


def failed_or_aborted(counts: dict[str, int]) -> int:
    """The jobs that ended without completing, of ``outcomes``' counts: failed + aborted (summary.json's
    ``failed_or_aborted``, the sweep's ``failed``, the pages' "failed / aborted")."""
    return counts["failed"] + counts["aborted"]


def cost(result: SimResult, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What evictions cost: how many (by cause), restarts, jobs that failed or were aborted, and the cpu- and
    GPU-hours held by pods deleted before they succeeded (``UsageLedger.lost``: from their bind to their deletion;
    "deleted by its job" is a pod the job controller deleted itself, e.g. a restart's siblings)."""
    by_cause: dict[str, int] = {}
    for e in result.eviction_log:
        by_cause[e.cause] = by_cause.get(e.cause, 0) + 1
    lost = result.usage.lost
    total = sum(lost.values(), np.zeros(3))
    ended = outcomes(rows)  # the same counts as the summary table's (failed and aborted apart here)
    return {
        "evictions": len(result.eviction_log), "evictions_by_cause": dict(sorted(by_cause.items())),
        "restarts": sum(r["restarts"] for r in rows),
        "jobs_restarted": sum(r["restarts"] > 0 for r in rows),
        "failed": ended["failed"],
        "aborted_or_terminated": ended["aborted"],
        "gpu_hours_lost": round(float(total[2]) / 3600, 3), "cpu_hours_lost": round(float(total[0]) / 3600, 3),
        "gpu_hours_lost_by_cause": {k: round(float(v[2]) / 3600, 3) for k, v in sorted(lost.items())},
        "gpu_hours_lost_by_queue": {k: round(float(v[2]) / 3600, 3) for k, v in sorted(result.usage.lost_queues.items())},
    }


def queue_shares(result: SimResult, window: float) -> dict[str, dict[str, float | None]]:
    """Each queue's exact time averages over [0, ``window``] (``UsageLedger.queue_shares``), rounded."""
    shares = result.usage.queue_shares(result.capacity, 0.0, window) if window > 0 else {}
    return {q: {k: (None if v is None else round(v, 4)) for k, v in d.items()} for q, d in shares.items()}


def summary_extra(result: SimResult, rows: list[dict[str, Any]], window: float) -> dict[str, Any]:
    """The keys ``metrics.summary`` adds for these figures."""
    return {"queue_shares": queue_shares(result, window), "wait_stages_s": stage_waits(rows),
            "cost": cost(result, rows)}


EVICTION_COLUMNS = ("t", "cause", "pod", "job", "queue", "node", "displaced_by", "cpu_seconds_lost",
                    "gpu_seconds_lost")


def write_evictions(path: Path, result: SimResult) -> None:
    """``evictions.csv``: one row per evicted pod (``sim/evictions.py``); ``displaced_by`` lists the jobs the
    eviction made room for, separated by spaces."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(EVICTION_COLUMNS)
        for e in result.eviction_log:
            lost = e.lost if e.lost is not None else np.zeros(3)
            w.writerow([round(e.t, 3), e.cause, e.pod, e.job, e.queue, e.node, " ".join(e.by),
                        round(float(lost[0]), 3), round(float(lost[2]), 3)])
