"""Node resource usage for the plugins that read it (``rescheduling``, ``usage``): what Volcano's metrics client
puts in ``NodeInfo.ResourceUsage`` (``CPUUsageAvg`` / ``MEMUsageAvg``: percent of the node's capacity, averaged
over a metrics period, with ``MetricsTime``).

Volcano reads it from a metrics source (Prometheus, Elasticsearch, metrics-server).  So does the Kubernetes
scheduler when its conf has a ``metrics:`` section (``kube/node_metrics.py``: Prometheus; a node's metrics are
fresh for 5 minutes after their query, Volcano's ``MetricsActiveTime``).  Otherwise a snapshot or a simulation
carries it:

- a Node annotation ``usage.pyvolcano.io/cpu`` / ``usage.pyvolcano.io/memory``: the measured usage in percent
  (``"62.5"``) of the node's allocatable; a node with either annotation has fresh metrics;
- otherwise the pods on the node: each pod uses ``usage.pyvolcano.io/used-share`` (a fraction, ``"0.4"``) of its
  request, from the pod's annotation or else its PodGroup's (a per-job share, e.g. from a simulator workload);
  the node's usage is the sum over its pods, in percent of its allocatable; a node none of whose pods has a share
  has no metrics (Volcano without a metrics source: every amount 0, ``MetricsTime`` zero).

The measurement is the average over Volcano's ``NODE_METRICS_PERIOD``, ``10m``: Volcano's cache stores every
metrics source's answer under that period only (``cache.go: setMetricsData``), so a plugin reading another period
(rescheduling's default ``metricsPeriod: 5m``) finds nothing (``usage_for_period``).  A value that is not a
number is ignored with a warning naming the object and the annotation.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey

log = logging.getLogger(__name__)

NODE_CPU = "usage.pyvolcano.io/cpu"
NODE_MEMORY = "usage.pyvolcano.io/memory"
USED_SHARE = "usage.pyvolcano.io/used-share"


@dataclass(frozen=True)
class NodeUsage:
    """Per node (session node order): cpu and memory usage in percent, and whether the node has metrics."""

    cpu: np.ndarray
    memory: np.ndarray
    fresh: np.ndarray


USAGE: StateKey[NodeUsage] = StateKey("node-usage")
#: Volcano's ``MetricsActiveTime``: metrics older than this are stale
METRICS_ACTIVE_TIME = 300.0
#: Volcano's ``source.NODE_METRICS_PERIOD``: the only period its cache fills
NODE_METRICS_PERIOD = "10m"


def usage_for_period(ssn: Session, period: str) -> NodeUsage:
    """``NodeInfo.ResourceUsage.CPUUsageAvg[period]`` and ``MEMUsageAvg[period]``: the node usage for
    ``NODE_METRICS_PERIOD``, zeros (a Go map's missing key) for any other period; freshness is the node's
    ``MetricsTime``, whatever the period."""
    u = node_usage(ssn)
    if period == NODE_METRICS_PERIOD:
        return u
    return NodeUsage(np.zeros_like(u.cpu), np.zeros_like(u.memory), u.fresh)


def _number(raw: object, what: str) -> float | None:
    try:
        v = float(str(raw))
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        log.warning("%s: %r is not a non-negative number; ignored", what, raw)
        return None
    return v


def node_usage(ssn: Session) -> NodeUsage:
    """The session's node usage, computed once per session and shared by the plugins that read it."""
    return ssn.state.read_or_init(USAGE, lambda: _compute(ssn))


def _compute(ssn: Session) -> NodeUsage:
    nodes = ssn.nodes
    n = len(nodes.names)
    cpu, mem, fresh = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
    c, m = ssn.res.pos[CPU], ssn.res.pos[MEMORY]
    shares: dict[str, float | None] = {}

    def job_share(uid: str) -> float | None:
        if uid not in shares:
            job = ssn.jobs.get(uid)
            raw = job.podgroup.annotations.get(USED_SHARE) if job is not None and job.podgroup is not None else None
            shares[uid] = None if raw is None else _number(raw, f"PodGroup {uid}: metadata.annotations.{USED_SHARE}")
        return shares[uid]

    source = ssn.snapshot.node_metrics
    if source is not None:  # a metrics source: only it counts (Volcano's ResourceUsage)
        now = ssn.snapshot.now or time.time()
        for i, name in enumerate(nodes.names):
            got = source.get(name)
            if got is not None:
                cpu[i], mem[i] = got[0], got[1]
                fresh[i] = now - got[2] <= METRICS_ACTIVE_TIME
        return NodeUsage(cpu, mem, fresh)
    for i, spec in enumerate(nodes.specs):
        ann = (spec.manifest.get("metadata") or {}).get("annotations") or {}
        if NODE_CPU in ann or NODE_MEMORY in ann:
            for key, out in ((NODE_CPU, cpu), (NODE_MEMORY, mem)):
                if key in ann:
                    v = _number(ann[key], f"Node {spec.name}: metadata.annotations.{key}")
                    out[i] = v if v is not None else 0.0
            fresh[i] = True
            continue
        used_cpu = used_mem = 0.0
        for t in nodes.tasks[i].values():
            pann = (t.pod.get("metadata") or {}).get("annotations") or {}
            raw = pann.get(USED_SHARE)
            share = (_number(raw, f"Pod {t.key}: metadata.annotations.{USED_SHARE}") if raw is not None
                     else job_share(t.job))
            if share is None:
                continue
            fresh[i] = True
            used_cpu += share * float(t.resreq[c])
            used_mem += share * float(t.resreq[m])
        alloc = nodes.allocatable[i]
        cpu[i] = 100.0 * used_cpu / alloc[c] if alloc[c] > 0 else 0.0
        mem[i] = 100.0 * used_mem / alloc[m] if alloc[m] > 0 else 0.0
    return NodeUsage(cpu, mem, fresh)
