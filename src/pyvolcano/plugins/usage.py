"""usage (``pkg/scheduler/plugins/usage``: ``usage.go``, ``estimator.go``, ``shadow_cache.go``): keep pods off nodes
whose *measured* load is high, and prefer the least loaded nodes.

The measured load is the node's cpu and memory usage in percent (Volcano's ``NodeInfo.ResourceUsage``, from its
metrics source; here ``plugins/_usage.py``: Node annotations or the pods' used shares).  A node without fresh
metrics (Volcano: ``MetricsTime`` older than 5 minutes, or none) passes the predicate and scores 0.

- ``predicate``: a node whose measured cpu usage is above ``thresholds.cpu`` fails with "the CPU load of the node
  exceeds the upper limit."; then memory against ``thresholds.mem`` ("the memory load of the node exceeds the upper
  limit."); both ``UnschedulableAndUnresolvable``.  Only the measured usage counts here.
- ``nodeOrder``: ``((1 - cpu) x cpu.weight + (1 - mem) x memory.weight) / (cpu.weight + memory.weight) x 100 x
  usage.weight``, where ``cpu`` and ``mem`` are *composite* utilisations: measured usage plus the *shadow load* of
  pods the metrics cannot show yet, as a share of the node's ``status.capacity`` (clamped to 0..1; 0 without a
  capacity).  The shadow load (``ShadowLoadCache``) is, per node, an estimate for each pod that is Allocated,
  Binding or Bound there, or Running but started less than the metrics interval (30s) ago or without a start time,
  plus each pod allocated in this session (the allocate/deallocate events): a BestEffort pod counts ``be_cpu`` /
  ``be_mem``, any other ``request x request_ratio + (limit - request) x burst_ratio`` (limit at least the request,
  the estimate at most the limit), each times ``risk_factor`` when the node's composite load (the weighted mean of
  the two, in 0..1) has reached ``risk_threshold``.

In Kubernetes mode the usage comes from the conf's metrics source (Prometheus: ``kube/node_metrics.py``), as in
Volcano; otherwise from the snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.quantity import to_milli, to_units
from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import TaskStatus
from pyvolcano.conf.arguments import Arguments
from pyvolcano.errors import ConfigError
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins._clock import session_clock
from pyvolcano.plugins._usage import NODE_METRICS_PERIOD, usage_for_period

log = logging.getLogger(__name__)

CPU_EXCEEDED = "the CPU load of the node exceeds the upper limit."
MEMORY_EXCEEDED = "the memory load of the node exceeds the upper limit."
MAX_NODE_SCORE = 100.0
#: Volcano's ``defaultMetricsInterval``: a pod started less than this ago is not in the metrics yet
METRICS_INTERVAL = 30.0


def _section(args: Arguments, name: str) -> Mapping[str, Any] | None:
    raw = args.get(name)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"plugin usage: argument {name!r} = {raw!r} is not a map")
    return raw


def _int(where: str, raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError(f"plugin usage: argument {where} = {raw!r} is not an integer")
    return raw


def _float(where: str, raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ConfigError(f"plugin usage: argument {where} = {raw!r} is not a number")
    return float(raw)


def _best_effort(where: str, raw: Any, default: float, unit_mib: bool) -> float:
    """``parseBestEffortCPU`` / ``parseBestEffortMemory``: an integer (millicores, or MiB for memory) or a
    quantity string; a negative amount keeps the default."""
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ConfigError(f"plugin usage: argument {where} = {raw!r} is not an integer or a quantity")
    if isinstance(raw, int):
        return default if raw < 0 else float(raw) * (1024 * 1024 if unit_mib else 1)
    try:
        v = to_units(raw) if unit_mib else to_milli(raw)
    except (ValueError, TypeError):
        raise ConfigError(f"plugin usage: argument {where} = {raw!r} is not a quantity") from None
    return default if v < 0 else float(v)


class UsageConfig:
    """``New``: the weights, thresholds and estimator settings, Volcano's defaults and ranges (a value out of
    range keeps the default, with a warning)."""

    def __init__(self, args: Arguments) -> None:
        self.usage_weight, self.cpu_weight, self.memory_weight = 5, 1, 1
        for attr, key in (("usage_weight", "usage.weight"), ("cpu_weight", "cpu.weight"),
                          ("memory_weight", "memory.weight")):
            if key in args:
                v = _int(repr(key), args[key])
                if v >= 0:
                    setattr(self, attr, v)
                else:
                    log.warning("usage: %s = %d is negative; using %d", key, v, getattr(self, attr))
        self.cpu_threshold, self.mem_threshold = 80.0, 80.0
        th = _section(args, "thresholds")
        if th is not None:
            for attr, key in (("cpu_threshold", "cpu"), ("mem_threshold", "mem")):
                if key in th:
                    v = _int(f"thresholds.{key}", th[key])
                    if 0 <= v <= 100:
                        setattr(self, attr, float(v))
                    else:
                        log.warning("usage: thresholds.%s = %d is not a percentage; using %g", key, v,
                                    getattr(self, attr))
        self.request_ratio, self.burst_ratio, self.risk_threshold, self.risk_factor = 0.7, 0.0, 0.6, 1.2
        self.be_cpu, self.be_mem = 250.0, float(200 * 1024 * 1024)
        est = _section(args, "estimator")
        if est is not None:
            for attr, key, ok in (("request_ratio", "request_ratio", lambda x: 0 <= x <= 1),
                                  ("burst_ratio", "burst_ratio", lambda x: 0 <= x <= 1),
                                  ("risk_threshold", "risk_threshold", lambda x: 0 <= x <= 1),
                                  ("risk_factor", "risk_factor", lambda x: x >= 1)):
                if key in est:
                    f = _float(f"estimator.{key}", est[key])
                    if ok(f):
                        setattr(self, attr, f)
                    else:
                        log.warning("usage: estimator.%s = %g is out of range; using %g", key, f,
                                    getattr(self, attr))
            self.be_cpu = _best_effort("estimator.be_cpu", est.get("be_cpu"), self.be_cpu, False)
            self.be_mem = _best_effort("estimator.be_mem", est.get("be_mem"), self.be_mem, True)


def pod_limits(pod: dict[str, Any]) -> tuple[float, float]:
    """``api.GetPodResourceLimit``'s cpu (millicores) and memory (bytes): the containers' limits summed, at least
    each init container's, plus the pod overhead."""
    spec = pod.get("spec") or {}

    def lim(c: Any) -> tuple[float, float]:
        lm = (((c or {}).get("resources") or {}).get("limits")) or {}
        return (to_milli(lm[CPU]) if CPU in lm else 0.0, to_units(lm[MEMORY]) if MEMORY in lm else 0.0)
    cpu = mem = 0.0
    for c in spec.get("containers") or []:
        a, b = lim(c)
        cpu, mem = cpu + a, mem + b
    for c in spec.get("initContainers") or []:
        a, b = lim(c)
        cpu, mem = max(cpu, a), max(mem, b)
    over = spec.get("overhead") or {}
    return (cpu + (to_milli(over[CPU]) if CPU in over else 0.0), mem + (to_units(over[MEMORY]) if MEMORY in over else 0.0))


def estimate_pod(request: float, limit: float, request_ratio: float, burst_ratio: float, rf: float) -> float:
    """``EstimatePodResource``."""
    request = max(request, 0.0)
    eff = request if limit <= 0 or limit < request else limit
    est = (request * request_ratio + max(eff - request, 0.0) * burst_ratio) * rf
    return min(max(est, 0.0), eff)


def _started(pod: dict[str, Any]) -> float | None:
    raw = (pod.get("status") or {}).get("startTime")
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@register_plugin
class Usage(Plugin):
    name = "usage"

    def on_session_open(self, ssn: Session) -> None:
        cfg = UsageConfig(self.arguments)
        usage = usage_for_period(ssn, NODE_METRICS_PERIOD)  # usage.go reads source.NODE_METRICS_PERIOD
        nodes = ssn.nodes
        n = len(nodes.names)
        now = session_clock(ssn)
        cap = np.zeros((n, 2))  # status.capacity: cpu millicores, memory bytes (0 when missing)
        for i, spec in enumerate(nodes.specs):
            c = (spec.manifest.get("status") or {}).get("capacity") or {}
            cap[i] = (to_milli(c[CPU]) if CPU in c else 0.0, to_units(c[MEMORY]) if MEMORY in c else 0.0)
        real = np.stack([usage.cpu, usage.memory], axis=1)
        real_abs = real / 100.0 * cap
        est = np.zeros((n, 2))  # the shadow load per node
        snaps: dict[str, tuple[int, float, float]] = {}  # task uid -> (node, cpu, memory) it added
        cw, mw, total_w = cfg.cpu_weight, cfg.memory_weight, cfg.cpu_weight + cfg.memory_weight
        ci, mi = ssn.res.pos[CPU], ssn.res.pos[MEMORY]

        def composite(idx: np.ndarray | int) -> np.ndarray:
            """``CalcCompositeUtilization`` for cpu and memory of the nodes ``idx``."""
            c = cap[idx]
            with np.errstate(divide="ignore", invalid="ignore"):
                comp = np.clip((real_abs[idx] + est[idx]) / c, 0.0, 1.0)
            return np.where(c > 0, comp, 0.0)

        def risk_factor(i: int) -> float:
            comp = composite(i)
            load = 0.0 if total_w == 0 else (comp[0] * cw + comp[1] * mw) / total_w
            return cfg.risk_factor if cfg.risk_factor >= 1.0 and load >= cfg.risk_threshold else 1.0

        def add(task: TaskInfo) -> None:
            i = nodes.pos.get(task.node_name)
            if i is None:
                return
            rf = risk_factor(i)
            if task.best_effort:
                e = (max(cfg.be_cpu, 0.0) * rf, max(cfg.be_mem, 0.0) * rf)
            else:
                lc, lm = pod_limits(task.pod)
                e = (estimate_pod(float(task.init_resreq[ci]), lc, cfg.request_ratio, cfg.burst_ratio, rf),
                     estimate_pod(float(task.init_resreq[mi]), lm, cfg.request_ratio, cfg.burst_ratio, rf))
            sub(task)
            est[i] += e
            snaps[task.uid] = (i, e[0], e[1])

        def sub(task: TaskInfo) -> None:
            old = snaps.pop(task.uid, None)
            if old is not None:
                j = old[0]
                est[j] = np.maximum(est[j] - old[1:], 0.0)

        shadow = (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound)
        for i in range(n):  # warmUpShadowCache
            for t in nodes.tasks[i].values():
                if t.status in shadow:
                    add(t)
                elif t.status == TaskStatus.Running:
                    started = _started(t.pod)
                    if started is None or now - started < METRICS_INTERVAL:
                        add(t)
        ssn.add_event_handler(EventHandler(allocate=add, deallocate=sub))

        fresh = usage.fresh
        over_cpu = fresh & (usage.cpu > cfg.cpu_threshold)
        over_mem = fresh & ~over_cpu & (usage.memory > cfg.mem_threshold)

        def vector_pred(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            return ~(over_cpu[idx] | over_mem[idx])

        def scalar_pred(task: TaskInfo, node: NodeInfo) -> Status | None:
            i = node.index
            if over_cpu[i]:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CPU_EXCEEDED,), self.name)
            if over_mem[i]:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (MEMORY_EXCEEDED,), self.name)
            return None

        def vector_score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if total_w == 0:
                return np.zeros(len(idx))
            comp = composite(idx)
            score = ((1.0 - comp[:, 0]) * cw + (1.0 - comp[:, 1]) * mw) / total_w * MAX_NODE_SCORE * cfg.usage_weight
            return np.where(fresh[idx], score, 0.0)

        def scalar_score(task: TaskInfo, node: NodeInfo) -> float:
            return float(vector_score(task, np.array([node.index]))[0])

        # the measured usage does not change within a session; the score reads the shadow load, which changes as
        # this session places pods: evaluated afresh for every task
        ssn.add_predicate(self.name, vector=vector_pred, scalar=scalar_pred, static=True)
        ssn.add_node_order(self.name, vector=vector_score, scalar=scalar_score, template_safe=False)
