"""tdm (``pkg/scheduler/plugins/tdm/tdm.go``): time-division multiplexing of *revocable* nodes.

A node labelled ``volcano.sh/revocable-zone: <zone>`` belongs to a revocable zone; the plugin argument
``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`` says when the zone is lent to preemptable work.  While a zone is
active, only pods that may use revocable nodes (pod annotation ``volcano.sh/revocable-zone: "*"``, or
``volcano.sh/preemptable: "true"``: Volcano's ``GetPodRevocableZone``) go there, and they prefer it (node score
100); outside the window nobody goes there, and the ``shuffle`` action evicts the preemptable running pods still
on it, at most every ``tdm.evict.period`` (default 1m) and at most a job's disruption budget per job.

Extension points (``OnSessionOpen``):

- ``predicate``: a node of no zone passes; of a zone not configured: "revocable zone <zone> not support"; of an
  inactive zone: "current time beyond revocable zone <zone>:<window>"; of an active zone, a pod without a
  revocable zone: "not allow to dispatch to revocable node"; all ``UnschedulableAndUnresolvable``.
- ``nodeOrder``: 100 on an active revocable node for a pod with a revocable zone, else 0.
- ``preemptable``: a preemptable preemptor, or one with a revocable zone, rejects (no victims); otherwise the
  running preemptable candidates on non-revocable nodes, per job at most its budget (``maxVictims``).
- ``victimTasks``: for each configured zone that is inactive, the running preemptable pods on its nodes, per job
  at most its budget; not again before ``tdm.evict.period`` has passed since the last time (Volcano keeps that
  time in a process-wide variable, ``lastEvictAt``; so does pyvolcano, and it starts afresh when the clock goes
  back, i.e. a new simulation).
- ``jobOrder``: non-preemptable jobs first; ``jobPipelined``: Permit when the job is pipelined, else Reject;
  ``jobStarving``: a non-preemptable job with pending pods.

A job's budget (``getMaxPodEvictNum``) comes from the PodGroup annotation ``volcano.sh/jdb-max-unavailable``
(the number or percentage of its pods that may be unavailable: that minus those already not running, never below
0) or else ``volcano.sh/jdb-min-available`` (running minus that, when at least that many run); otherwise 1.

Time: a window is read on the day of the session's clock, ``now`` (the simulated time in ``pyvolcano simulate``,
the wall clock in ``pyvolcano cycle``), in UTC; a window whose end is not after its start ends the next day.
As in Volcano, the part of an overnight window after midnight is never active (the window of *today* has not
begun).  A window that is not ``HH:MM-HH:MM`` (hours 0-23, two-digit minutes) is refused when the session opens,
where Volcano treats the zone as inactive (docs/volcano-differences.md).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import TaskStatus
from pyvolcano.errors import ConfigError
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.victims import mark_node_copy_victims
from pyvolcano.plugins._clock import session_clock

ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
MAX_NODE_SCORE = 100.0
DAY = 86400.0
_PART = re.compile(r"(\d{1,2}):(\d{2})")
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}

#: ``Snapshot.plugin_memory`` key of Volcano's package variable ``lastEvictAt``: when victimTasks last ran
LAST_EVICT_AT: CarryKey[float] = CarryKey("tdm.lastEvictAt")


def parse_window(zone: str, raw: Any) -> tuple[float, float]:
    """``parseRevocableZone``: the window's (start, end) as seconds after midnight; an end not after the start
    is on the next day (end + 1 day).  A bad window is a ConfigError naming the argument."""
    key = ZONE_PREFIX + zone
    if not isinstance(raw, str):
        raise ConfigError(f"plugin tdm: argument {key!r} = {raw!r} is not a time window (e.g. 10:00-21:00)")
    parts = raw.strip().split("-")
    if len(parts) != 2:
        raise ConfigError(f"plugin tdm: argument {key!r} = {raw!r} is not a time window HH:MM-HH:MM "
                          "(e.g. 10:00-21:00)")
    out = []
    for p in parts:
        m = _PART.fullmatch(p)
        if m is None:
            raise ConfigError(f"plugin tdm: argument {key!r} = {raw!r}: {p!r} is not a time HH:MM (e.g. 21:00)")
        h, mi = int(m.group(1)), int(m.group(2))
        if h > 23 or mi > 59:
            raise ConfigError(f"plugin tdm: argument {key!r} = {raw!r}: {p!r} is out of range "
                              "(hours 0-23, minutes 00-59)")
        out.append(h * 3600.0 + mi * 60.0)
    start, end = out
    return start, end if end > start else end + DAY


def pod_revocable_zone(pod: dict[str, Any]) -> str:
    """``GetPodRevocableZone`` (api/pod_info.go): "*" from the annotation ``volcano.sh/revocable-zone: "*"``
    (any other value: none), or from ``volcano.sh/preemptable`` true; else ""."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    if REVOCABLE_ZONE in ann:
        return "*" if ann[REVOCABLE_ZONE] == "*" else ""
    return "*" if str(ann.get(PREEMPTABLE, "")) in _GO_TRUE else ""


def int_or_percent(raw: str, total: int) -> int:
    """``parseIntStr``: an integer, or a percentage of ``total`` rounded up; anything else is 0 (Volcano warns)."""
    s = raw.strip()
    try:
        return int(s)
    except ValueError:
        pass
    if s.endswith("%"):
        try:
            return math.ceil(int(s[:-1]) * total / 100)
        except ValueError:
            return 0
    return 0


def max_evict_num(job: JobInfo) -> int:
    """``getMaxPodEvictNum``: how many of the job's pods tdm may evict at once (the job's disruption budget)."""
    ann = job.podgroup.annotations if job.podgroup is not None else {}
    running = len(job.index.get(TaskStatus.Running, {}))
    total = len(job.tasks)
    if JDB_MIN_AVAILABLE in ann:  # extractBudget reads min-available first
        min_available = int_or_percent(str(ann[JDB_MIN_AVAILABLE]), total)
        if running >= min_available:
            return running - min_available
        return 1
    if JDB_MAX_UNAVAILABLE in ann:
        max_unavailable = int_or_percent(str(ann[JDB_MAX_UNAVAILABLE]), total)
        final = len(job.index.get(TaskStatus.Succeeded, {})) + len(job.index.get(TaskStatus.Failed, {}))
        unavailable = total - final - running
        return 0 if unavailable >= max_unavailable else max_unavailable - unavailable
    return 1


def max_victims(job: JobInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    """``maxVictims``: the first ``max_evict_num`` of the job's candidate victims."""
    return victims[:max(0, min(max_evict_num(job), len(victims)))]


@register_plugin
class TDM(Plugin):
    name = "tdm"

    def on_session_open(self, ssn: Session) -> None:
        zones = {k[len(ZONE_PREFIX):]: parse_window(k[len(ZONE_PREFIX):], v)
                 for k, v in self.arguments.items() if k.startswith(ZONE_PREFIX)}
        raw = {k[len(ZONE_PREFIX):]: str(v).strip() for k, v in self.arguments.items() if k.startswith(ZONE_PREFIX)}
        period = self.arguments.get_duration(EVICT_PERIOD, 60.0)
        assert period is not None
        now = session_clock(ssn)
        day = math.floor(now) % DAY  # whole seconds since midnight UTC of the session's clock (Go's Unix())
        #: zone -> None when active, else why not
        inactive = {z: None if start <= day <= end else f"current time beyond revocable zone {z}:{raw[z]}"
                    for z, (start, end) in zones.items()}
        node_zone = [s.labels.get(REVOCABLE_ZONE, "") for s in ssn.nodes.specs]
        #: per node: 0 not revocable, 1 revocable and active, 2 revocable but closed (or an unknown zone)
        state = np.array([0 if not z else (1 if z in inactive and inactive[z] is None else 2) for z in node_zone],
                         dtype=np.int8)
        zone_of: dict[str, str] = {}

        def task_zone(task: TaskInfo) -> str:
            z = zone_of.get(task.uid)
            if z is None:
                z = zone_of[task.uid] = pod_revocable_zone(task.pod)
            return z

        def reason(task: TaskInfo, i: int) -> str | None:
            z = node_zone[i]
            if not z:
                return None
            if z not in inactive:
                return f"revocable zone {z} not support"
            if inactive[z] is not None:
                return inactive[z]
            return None if task_zone(task) else "not allow to dispatch to revocable node"

        def vector_pred(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            s = state[idx]
            return (s == 0) | ((s == 1) & bool(task_zone(task)))

        def scalar_pred(task: TaskInfo, node: NodeInfo) -> Status | None:
            why = reason(task, node.index)
            return None if why is None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (why,), self.name)

        def vector_score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if not task_zone(task):
                return np.zeros(len(idx))
            return np.where(state[idx] == 1, MAX_NODE_SCORE, 0.0)

        def scalar_score(task: TaskInfo, node: NodeInfo) -> float:
            return float(vector_score(task, np.array([node.index]))[0])

        # the answer reads the pod's annotations, which the template key does not hold: evaluated per task
        ssn.add_predicate(self.name, vector=vector_pred, scalar=scalar_pred, template_safe=False)
        ssn.add_node_order(self.name, vector=vector_score, scalar=scalar_score, template_safe=False)

        def by_job(tasks: list[TaskInfo]) -> list[TaskInfo]:
            groups: dict[str, list[TaskInfo]] = {}
            for t in tasks:
                groups.setdefault(t.job, []).append(t)
            out: list[TaskInfo] = []
            for uid, ts in groups.items():
                job = ssn.jobs.get(uid)
                if job is not None:
                    out.extend(max_victims(job, ts))
            return out

        pos = ssn.nodes.pos

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            if preemptor.preemptable or task_zone(preemptor):
                return [], REJECT
            cands = [t for t in preemptees if t.preemptable and t.status == TaskStatus.Running
                     and t.node_name in pos and not node_zone[pos[t.node_name]]]
            return by_job(cands), PERMIT
        ssn.add_preemptable_fn(self.name, preemptable)

        memory = ssn.snapshot.plugin_memory

        def victims(_tasks: list[TaskInfo]) -> list[TaskInfo]:
            last = memory.get(LAST_EVICT_AT)
            if last is not None and last + period > now:
                return []
            out: list[TaskInfo] = []
            for z, why in inactive.items():
                if why is None:
                    continue
                cands = [t for i, nz in enumerate(node_zone) if nz == z for t in ssn.nodes.tasks[i].values()
                         if t.preemptable and t.status == TaskStatus.Running]
                out.extend(by_job(cands))
            memory.put(LAST_EVICT_AT, now)
            # Volcano's victims here are the nodes' own copies of the tasks: see mark_node_copy_victims
            mark_node_copy_victims(ssn, out)
            return out
        ssn.add_victim_tasks_fn(self.name, victims)

        def job_order(left: JobInfo, right: JobInfo) -> int:
            if left.preemptable == right.preemptable:
                return 0
            return 1 if left.preemptable else -1
        ssn.add_job_order_fn(self.name, job_order)
        ssn.add_job_pipelined_fn(self.name, lambda job: PERMIT if job.is_pipelined() else REJECT)
        ssn.add_job_starving_fn(self.name, lambda job: not job.preemptable
                                and bool(job.index.get(TaskStatus.Pending)))

