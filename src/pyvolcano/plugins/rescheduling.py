"""rescheduling (``pkg/scheduler/plugins/rescheduling``): name pods to move off overloaded nodes; the ``shuffle``
action evicts them.

Every ``interval`` (default 5m, counted from the scheduler's start: ``rescheduling_util.go: timeToRun``) the plugin
registers the ``victimTasks`` function of each configured strategy.  Volcano implements one strategy,
``lowNodeUtilization`` (``low_node_utilization.go``, ``node_utilization_util.go``), on the nodes' *measured* usage
(``NodeInfo.ResourceUsage``: here ``plugins/_usage.py``):

1. nodes whose cpu and memory usage are all below ``thresholds`` (and that are schedulable) are *low*; the others
   with any usage above ``targetThresholds`` are *high*.  No low node, all nodes low, or no high node: no victims.
2. the room left on the low nodes up to ``targetThresholds`` (per resource, ``target% x allocatable - usage% x
   allocatable``, in whole millicores and bytes) is what may move.
3. high nodes, most used first (cpu% + memory%), give up their pods lowest priority first (no priority before any,
   then BestEffort before Burstable before Guaranteed), while the node still has a usage at or above its target
   and no resource of the room is exactly 0; each victim takes its request from the room and from the node's usage
   (as a share of the node's ``status.capacity``).  A pod is a victim only if it is a running task of a job (matched
   by pod *name*, as Volcano does).

Arguments, Volcano's names (``rescheduling.go: parseArguments``): ``interval`` (Go duration), ``metricsPeriod``
(which average of the node usage is read, default ``5m``; Volcano's cache fills only ``10m``, so the default reads
no usage at all and names no victims: set ``metricsPeriod: 10m``), ``strategies`` (a list of ``{name, params}``; params of
lowNodeUtilization: ``thresholds`` and ``targetThresholds``, maps of whole percentages for ``cpu``, ``memory``
and ``pod``; both default to 100).  As in Volcano, a strategy listed without ``params`` names no victims, and
``pods`` thresholds are ignored (Volcano reads the key ``pod``, and measures no pod usage anyway).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.quantity import to_milli, to_units
from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.types import TaskStatus
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._clock import session_clock
from pyvolcano.plugins._usage import usage_for_period

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 300.0
DEFAULT_STRATEGY = "lowNodeUtilization"
STRATEGIES = frozenset({DEFAULT_STRATEGY})
#: ``Snapshot.plugin_memory`` key of Volcano's package variable ``lastRescheduleTime``
LAST_RUN: CarryKey[float] = CarryKey("rescheduling.lastRescheduleTime")


@dataclass
class LowNodeConf:
    """``LowNodeUtilizationConf``: percentages per resource."""

    thresholds: dict[str, float] = field(default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})
    targets: dict[str, float] = field(default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})


def _thresholds(raw: Any, where: str) -> dict[str, float]:
    """A ``thresholds`` map: Volcano asserts every value is a YAML integer (``v.(int)``; a float crashes it)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"plugin rescheduling: {where} = {raw!r} is not a map of resource: percentage")
    out: dict[str, float] = {}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"plugin rescheduling: {where}.{k} = {v!r} is not a whole percentage")
        out[str(k)] = float(v)
    return out


def parse_low_node_conf(params: Mapping[str, Any], where: str) -> LowNodeConf:
    """``LowNodeUtilizationConf.parse``: only ``cpu``, ``memory`` and ``pod`` of each map are read."""
    conf = LowNodeConf()
    for key, dest in (("thresholds", conf.thresholds), ("targetThresholds", conf.targets)):
        if key in params:
            got = _thresholds(params[key], f"{where}.{key}")
            for r in ("cpu", "memory", "pod"):
                if r in got:
                    dest[r] = got[r]
    return conf


@dataclass
class Strategy:
    name: str
    #: None: listed without params (Volcano's victim function then finds no parameters and names no victims)
    conf: LowNodeConf | None


def parse_strategies(raw: Any) -> list[Strategy]:
    """``parseArguments``'s ``strategies``: a list of ``{name, params}``; absent or empty: lowNodeUtilization
    with its defaults."""
    if raw is None or raw == []:
        return [Strategy(DEFAULT_STRATEGY, LowNodeConf())]
    if not isinstance(raw, list):
        raise ConfigError(f"plugin rescheduling: argument 'strategies' = {raw!r} is not a list of "
                          "{name, params}")
    out = []
    for i, s in enumerate(raw):
        if not isinstance(s, Mapping) or not isinstance(s.get("name"), str):
            raise ConfigError(f"plugin rescheduling: strategies[{i}] = {s!r} has no name")
        name, params = s["name"], s.get("params")
        if name not in STRATEGIES:
            log.warning("rescheduling: strategy %r is not implemented (Volcano has only %s); ignored",
                        name, ", ".join(sorted(STRATEGIES)))
        if params is not None and not isinstance(params, Mapping):
            raise ConfigError(f"plugin rescheduling: strategies[{i}].params = {params!r} is not a map")
        out.append(Strategy(name, None if params is None else parse_low_node_conf(params, f"strategies[{i}].params")))
    return out


def qos_rank(pod: dict[str, Any]) -> int:
    """0 BestEffort, 1 Burstable, 2 Guaranteed (Kubernetes' ``GetPodQOS``, on cpu and memory)."""
    qos = (pod.get("status") or {}).get("qosClass")
    if qos in ("BestEffort", "Burstable", "Guaranteed"):
        return {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}[qos]
    spec = pod.get("spec") or {}
    any_set, guaranteed = False, True
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = (c or {}).get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for r in (CPU, MEMORY):
            if r in req or r in lim:
                any_set = True
            conv = to_milli if r == CPU else to_units
            if r not in lim or (r in req and conv(req[r]) != conv(lim[r])):
                guaranteed = False
    if not any_set:
        return 0
    return 2 if guaranteed else 1


def _pod_order(task: TaskInfo) -> tuple[int, int, int]:
    """``sortPods``: pods without a priority first, then lower priority, then BestEffort, Burstable, Guaranteed."""
    p = (task.pod.get("spec") or {}).get("priority")
    return (0, 0, qos_rank(task.pod)) if p is None else (1, int(p), qos_rank(task.pod))


def _capacity(manifest: dict[str, Any]) -> tuple[float, float]:
    """The node's ``status.capacity`` cpu (millicores) and memory (bytes); 0 when missing."""
    cap = (manifest.get("status") or {}).get("capacity") or {}
    return (to_milli(cap[CPU]) if CPU in cap else 0.0, to_units(cap[MEMORY]) if MEMORY in cap else 0.0)


def low_node_victims(ssn: Session, conf: LowNodeConf, tasks: list[TaskInfo], period: str = "10m") -> list[TaskInfo]:
    """``victimsFnForLnu``: the victims of lowNodeUtilization (see the module docstring), on the usage averaged
    over ``period`` (``metricsPeriod``)."""
    usage = usage_for_period(ssn, period)
    nodes = ssn.nodes
    n = len(nodes.names)
    util = np.stack([usage.cpu, usage.memory], axis=1)  # percent, one row per node
    unsched = np.array([s.unschedulable for s in nodes.specs], dtype=bool)
    low_t = np.array([conf.thresholds["cpu"], conf.thresholds["memory"]])
    high_t = np.array([conf.targets["cpu"], conf.targets["memory"]])
    low = ~unsched & (util < low_t).all(axis=1)
    high = ~low & (util > high_t).any(axis=1)
    if not low.any() or int(low.sum()) == n or not high.any():
        return []
    c, m = ssn.res.pos[CPU], ssn.res.pos[MEMORY]
    alloc = nodes.allocatable
    # convertPercentToQuan truncates each amount to whole millicores / bytes
    room = np.zeros(2)
    for li in np.nonzero(low)[0].tolist():
        for j, col in enumerate((c, m)):
            room[j] += math.trunc(high_t[j] * alloc[li, col] * 0.01) - math.trunc(util[li, j] * alloc[li, col] * 0.01)
    by_name: dict[str, TaskInfo] = {}
    for t in tasks:
        by_name.setdefault(t.name, t)
    order = sorted(np.nonzero(high)[0].tolist(), key=lambda i: -(util[i, 0] + util[i, 1]))
    victims: list[TaskInfo] = []
    for i in order:
        pods = sorted(nodes.tasks[i].values(), key=_pod_order)
        cap = _capacity(nodes.specs[i].manifest)
        u = util[i].copy()
        for pod in pods:
            # isContinueEvictPods: a usage still at or above its target, and no room amount exactly 0
            if not (u >= high_t).any() or (room == 0).any():
                break
            task = by_name.get(pod.name)
            if task is None:
                continue
            req = (math.trunc(float(task.resreq[c])), math.trunc(float(task.resreq[m])))
            room -= req
            for j in range(2):
                u[j] -= (req[j] * 100.0 / cap[j]) if cap[j] > 0 else (math.inf if req[j] > 0 else math.nan)
            victims.append(task)
    return victims


@register_plugin
class Rescheduling(Plugin):
    name = "rescheduling"
    # registers victimTasks only (the shuffle action's): enqueue and allocate never ask it, so its clock, interval
    # and node usage decide no refusal the memo skips; its evictions make Releasing pods, which move the cache's
    # epochs and turn allocate's memo off while they release
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        interval = self.arguments.get_duration("interval", DEFAULT_INTERVAL)
        assert interval is not None
        period = self.arguments.get_str("metricsPeriod", "5m") or "5m"
        strategies = parse_strategies(self.arguments.get("strategies"))
        memory = ssn.snapshot.plugin_memory
        now = session_clock(ssn)
        # Volcano sets lastRescheduleTime when the scheduler starts, just before its first session
        last = memory.setdefault(LAST_RUN, lambda: now - 1e-6)
        if not last + interval < now:
            return
        memory.put(LAST_RUN, now)
        for s in strategies:
            if s.name not in STRATEGIES:
                continue
            conf = s.conf

            def victims(tasks: list[TaskInfo], conf: LowNodeConf | None = conf) -> list[TaskInfo]:
                if conf is None:  # "parameters parse error for lowNodeUtilization"
                    return []
                return low_node_victims(ssn, conf, [t for t in tasks if t.status == TaskStatus.Running], period)
            ssn.add_victim_tasks_fn(self.name, victims)
