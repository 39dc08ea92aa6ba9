"""The discrete-event simulator.

A heap of timed events (job arrivals, pods starting, finishing, being released after eviction, node failures,
cancellations) drives an in-memory cluster (``SimAPI``: the object store, feeding the real ``SchedulerCache``),
the real vcjob controller, and the real scheduler: every ``period`` seconds after something changed, one
``Session`` runs the configured actions on a snapshot, and its decisions are applied as a kubelet would:
bound pods run after ``start_latency`` and succeed after their duration; evicted pods keep their node for
``grace`` seconds (Releasing, so other pods can be Pipelined onto it) and are then deleted, which the controller
answers with its lifecycle policy.  A cycle that changes nothing is not repeated until the next event, so quiet
stretches cost nothing; time-driven policies therefore react at the next event rather than mid-gap.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, assert_never

import numpy as np

from pyvolcano.api import models
from pyvolcano.api.convert import pod_requests
from pyvolcano.api.devices import GPU_MEMORY, GPU_NUMBER
from pyvolcano.api.job_info import PREEMPTION_BY_SCHEDULER, TaskInfo
from pyvolcano.api.job_model import WorkloadJob
from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.resource import EPS, ResourceIndex
from pyvolcano.api.types import TASK_SPEC_ANNOTATION
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import SchedulerConf
from pyvolcano.controllers.vcjob import FINAL, TTL_PHASES, JobController, validate_job
from pyvolcano.errors import ManifestError, UserError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.gc_tuning import quiet_gc
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.result import (
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    apply,
    podgroup_status_body,
)
from pyvolcano.sim.evictions import EvictionLog, EvictionRecord
from pyvolcano.sim.flows import SimFlows
from pyvolcano.sim.gpus import GpuLedger
from pyvolcano.sim.topology import SpreadLog, build_topology, sub_group_of
from pyvolcano.sim.usage import UsageLedger
from pyvolcano.sim.workload import DURATION, Workload, job_ref

#: the taint Kubernetes' node lifecycle controller puts on a node whose kubelet is not Ready
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


# --- events ----------------------------------------------------------------------------------------------------
# One frozen dataclass per kind of timed event.  The heap holds ``(time, sequence, event)``: the sequence number is
# unique, so events at the same time run in the order they were pushed and an event itself is never compared.


@dataclass(frozen=True, slots=True)
class Arrive:
    """A vcjob from the workload is submitted (``Simulator._arrive``)."""

    job: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PodRunning:
    """A bound pod starts, ``start_latency`` after its bind (``Simulator._running``); ``uid`` tells a re-created
    pod of the same name apart."""

    key: str
    uid: str


@dataclass(frozen=True, slots=True)
class PodFinish:
    """A running pod succeeds, its duration after it started (``Simulator._finish``)."""

    key: str
    uid: str


@dataclass(frozen=True, slots=True)
class PodRelease:
    """An evicted pod (or one on a failed node) is deleted and frees its node (``Simulator._release``)."""

    key: str
    uid: str


@dataclass(frozen=True, slots=True)
class NodeFail:
    """A node turns NotReady for ``down`` seconds (``Simulator._node_fail``)."""

    node: str
    down: float


@dataclass(frozen=True, slots=True)
class NodeUp:
    """A failed node is Ready again (``Simulator._node_up``)."""

    node: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """A job is aborted (``Simulator._cancel``)."""

    key: str


@dataclass(frozen=True, slots=True)
class JobTTL:
    """A finished Job's ``ttlSecondsAfterFinished`` ran out (``Simulator._ttl``); ``state`` is the controller's
    record of the job then (a Job made again under the name since is left alone)."""

    key: str
    state: Any


@dataclass(frozen=True, slots=True)
class FlowArrive:
    """A CronJob, JobFlow or JobTemplate from the workload is created (``sim/flows.py``)."""

    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CronTick:
    """A CronJob's next schedule time is due (``SimFlows.tick``)."""

    key: str


Event = Arrive | PodRunning | PodFinish | PodRelease | NodeFail | NodeUp | Cancel | JobTTL | FlowArrive | CronTick


@dataclass
class JobRecord:
    key: str
    queue: str
    tasks: int
    min_available: int
    submit: float
    enqueued: float | None = None
    first_start: float | None = None
    all_started: float | None = None
    finished: float | None = None
    phase: str = "Pending"
    restarts: int = 0
    preempted: int = 0
    running: int = 0
    #: for a job whose gang never started: why, and the best fix, at the end of the run (``why_waiting``)
    why: str = ""


@dataclass
class Sample:
    t: float
    used: np.ndarray  # cpu, memory, gpu held by bound/running/releasing pods
    queues: dict[str, tuple[float, float]]  # queue -> (allocated dominant share of cluster, deserved share)
    #: FGD's fragmentation of the cluster in GPUs (``sim/gpus.py``), None when not known
    gpu_frag: float | None = None


@dataclass
class SimResult:
    records: dict[str, JobRecord]
    samples: list[Sample]
    capacity: np.ndarray
    cycles: int
    cycle_seconds: list[float]
    events: int
    rollbacks: int
    evictions: int
    wall_seconds: float
    end_time: float
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)
    #: what pods held (cpu cores, memory GiB, gpus), recorded at every bind, finish and deletion: utilisation is
    #: its exact integral (``samples`` are taken only after sessions)
    usage: UsageLedger = field(default_factory=lambda: UsageLedger(3))
    #: every evicted pod: when, why, the job it was evicted for (``sim/evictions.py``) and what it threw away
    eviction_log: list[EvictionRecord] = field(default_factory=list)
    #: with HyperNodes: how spread each job's pods ran (``sim/topology.py``)
    spread: SpreadLog | None = None
    #: a fill run (``--fill``): per job in arrival order, (milli-GPU asked, placed at its try), and the cluster's
    #: milli-GPU (``sim/metrics.py: fill_curve``)
    fill: tuple[list[int], list[bool], int] | None = None
    #: with gpushare GPUs: the ledger's (time, milli-GPU allocated, fragmentation) at every change
    #: (``sim/gpus.py: GpuLedger.record``), and the cluster's milli-GPU
    gpu_series: tuple[list[tuple[float, int, float | None]], int] | None = None


#: PodGroup fields the job controller copies from the Job, by the Job field they come from
_PG_FROM_JOB = {"spec.minMember": "spec.minAvailable", "spec.queue": "spec.queue",
                "spec.priorityClassName": "spec.priorityClassName", "spec.networkTopology": "spec.networkTopology"}
#: pod fields the job controller sets from the Job when the template leaves them unset
_POD_FROM_JOB = ("spec.schedulerName", "spec.priorityClassName")


def _job_field(job: dict[str, Any], task: int | None, field: str) -> str:
    """The Job field behind ``field`` of the PodGroup (``task`` None) or of task ``task``'s pod that the job
    controller builds from ``job`` (``Simulator._built_problem``)."""
    if field.startswith(("metadata.name", "metadata.namespace")):
        return field
    if task is None:
        if field.startswith("metadata."):
            return field
        for pg_field, job_field in _PG_FROM_JOB.items():
            if field == pg_field or field.startswith(pg_field + "."):
                return job_field + field[len(pg_field):]
        return f"spec (its PodGroup's {field})"
    template = job["spec"]["tasks"][task].get("template") or {}
    for pod_field in _POD_FROM_JOB:
        if field.startswith(pod_field) and not (template.get("spec") or {}).get(pod_field.split(".")[1]):
            return pod_field
    return f"spec.tasks[{task}].template.{field}"


class SimAPI:
    """The in-memory API server: objects by (kind, namespace/name), mirrored into the scheduler cache."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    @staticmethod
    def _k(kind: str, ns: str, name: str) -> tuple[str, str]:
        return kind, f"{ns}/{name}" if ns else name

    def create(self, obj: dict[str, Any], *, trusted: bool = True) -> None:
        """Create ``obj`` and show it to the scheduler cache.  ``trusted`` (the default: the caller is the job
        controller, building Pods and PodGroups from a Job that ``Simulator.job_problem`` admitted after
        validating what it builds) skips the cache's validation; the cluster's own objects, read from outside,
        are created with ``trusted=False``."""
        md = obj["metadata"]
        cluster_scoped = ("Node", "Queue", "PriorityClass", "HyperNode", "Numatopology")
        ns = md.get("namespace") or ("" if obj["kind"] in cluster_scoped else "default")
        md.setdefault("creationTimestamp", self.sim.now)
        md.setdefault("uid", f"{obj['kind'].lower()}-{next(self.sim.uids)}")
        if obj["kind"] == "Pod":
            self.sim.cache.admit_pod_priority(obj)
        self.objects[self._k(obj["kind"], ns, md["name"])] = obj
        if obj["kind"] == "PodGroup" and hasattr(self.sim, "writer"):  # a re-created group (RestartJob) starts over
            self.sim.writer._last.pop(f"{ns}/{md['name']}", None)
            self.sim.writer.settled.pop(f"{ns}/{md['name']}", None)
            self.sim.writer.unwritten.add(f"{ns}/{md['name']}")
        self.sim.cache.upsert(obj, trusted=trusted)
        self.sim.changed = True

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(self._k(kind, namespace, name))

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        obj = self.objects.pop(self._k(kind, namespace, name), None)
        if obj is not None:
            if kind == "Pod":  # deleted while holding resources (not succeeded): its work is thrown away
                key = f"{namespace}/{name}"
                if self.sim.spread is not None:
                    self.sim.spread.gone(self.sim._job_of(obj)[0], key)
                log = self.sim.eviction_log
                log.released(key, self.sim.usage.release(self.sim.now, key, log.cause(key) or "deleted by its job"))
                if self.sim.gpus is not None:
                    self.sim.gpus.release(key)
            self.sim.cache.delete(obj)
            self.sim.changed = True
        return True  # the simulator has no graceful termination

    def update(self, obj: dict[str, Any], *, trusted: bool) -> None:
        """Show the changed ``obj`` to the scheduler cache.  ``trusted``: the simulator changed, in place, only
        what a binder, kubelet, evictor or status writer changes (``SchedulerCache.upsert``), with values it
        built itself."""
        self.sim.cache.upsert(obj, trusted=trusted)
        self.sim.changed = True

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        obj = self.get(kind, namespace, name)
        if obj is not None:
            obj["status"] = status
            if kind != "Job":
                self.update(obj, trusted=False)

    def patch_spec(self, kind: str, namespace: str, name: str, fields: dict[str, Any]) -> None:
        obj = self.get(kind, namespace, name)
        if obj is not None:
            obj["spec"] = {**(obj.get("spec") or {}), **fields}
            self.update(obj, trusted=False)

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        self.sim.event_log.append((self.sim.now, etype, reason, message))


#: "00" to "59": the two-digit fields of a stamp (``SimWriter._stamp``)
_TWO_DIGITS = tuple(f"{i:02d}" for i in range(60))


class SimWriter:
    """The simulator's ``ClusterWriter`` (``framework/result.py``): decisions land in the in-memory API as a
    kubelet and the API server would make them visible.  A bound pod starts after ``start_latency``; an evicted
    one keeps its node for ``grace`` seconds (Releasing) and is then deleted.  PodGroup status is built by
    ``podgroup_status_body`` as on a cluster; only a phase change is fed back to the scheduler cache and the job
    controller (conditions and counts do not take part in scheduling), so a quiet PodGroup costs one comparison."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        #: per PodGroup, what its status was last built from
        self._last: dict[str, tuple[Any, ...]] = {}
        #: per PodGroup, the status object last applied (``framework/result.py: apply`` skips it when a session
        #: hands the same object again: an unchanged verdict); writes here are synchronous, so nothing is in flight
        self.settled: dict[str, PodGroupStatus] = {}
        #: every status written is settled (``ClusterWriter.settles_every_status``); the PodGroups a status could
        #: not be written to (no object), or whose settled status was dropped, are ``unwritten``
        self.settles_every_status = True
        self.unwritten: set[str] = set()
        self._events: dict[tuple[str, str, str], str] = {}
        self._stamped: tuple[float, str] = (float("nan"), "")
        #: the day of the last whole-second stamp and its date part (``_stamp``)
        self._day: tuple[int, str] = (-1, "")

    def _stamp(self) -> str:
        """The current time as an RFC 3339 stamp, formatted once per simulated instant (every PodGroup status
        and pod condition written after a session carries it)."""
        now = self.sim.now
        if self._stamped[0] != now:
            t = float(now)
            if t.is_integer() and t >= 0:  # a whole second (every session's time): the day's date, once a day
                day, sec = divmod(int(t), 86400)
                if self._day[0] != day:
                    self._day = (day, datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%dT"))
                two = _TWO_DIGITS  # (indexing a table of "00".."59" costs less than a format spec)
                self._stamped = (now, f"{self._day[1]}{two[sec // 3600]}:{two[sec // 60 % 60]}:{two[sec % 60]}Z")
            else:
                self._stamped = (now, datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        return self._stamped[1]

    def bind(self, task: TaskInfo, node: str) -> None:
        sim = self.sim
        pod = sim._pod(task.uid)
        if pod is None or pod["spec"].get("nodeName"):
            return
        pod["spec"]["nodeName"] = node
        if task.pod_annotations:  # the Binding's annotations (deviceshare's GPUs), merged as the API server does
            md = pod["metadata"]
            md["annotations"] = {**(md.get("annotations") or {}), **task.pod_annotations}
        sim.api.update(pod, trusted=True)
        if sim.gpus is not None:
            sim.gpus.hold(task, node)
        rec = sim.records.get(sim._job_of(pod)[0])
        if sim.one_try:
            sim._trying.pop(sim._job_of(pod)[0], None)
        if sim.spread is not None:
            sim.spread.bound(sim._job_of(pod)[0], task.uid, node, sub_group_of(pod["metadata"].get("labels")))
        sim.usage.hold(sim.now, task.uid, rec.queue if rec is not None else "", sim._pick(task.resreq))
        sim._push(sim.now + sim.start_latency, PodRunning(task.uid, pod["metadata"]["uid"]))

    def evict(self, task: TaskInfo, reason: str) -> None:
        sim = self.sim
        pod = sim._pod(task.uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        pod["metadata"]["deletionTimestamp"] = sim.now
        # what Volcano's evictor (cache.go: defaultEvictor.Evict) writes before deleting: preempt reads it
        # (podTerminatingByPreemption) for a pod nominated to this node
        st = pod.setdefault("status", {})
        st["conditions"] = [c for c in st.get("conditions") or () if c.get("type") != "DisruptionTarget"] + [
            {"type": "DisruptionTarget", "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
             "message": f"{pod['spec'].get('schedulerName') or 'volcano'}: preempting to accommodate a higher "
                        "priority pod"}]
        sim.api.update(pod, trusted=True)
        sim.evictions += 1
        job_key, _ = sim._job_of(pod)
        if job_key in sim.records:
            sim.records[job_key].preempted += 1
        sim._log_eviction(task.uid, pod, reason)
        sim._push(sim.now + sim.grace, PodRelease(task.uid, pod["metadata"]["uid"]))

    def update_podgroup_status(self, uid: str, status: PodGroupStatus) -> bool:
        sim = self.sim
        if self.settled.get(uid) is status:  # the very object written last time: nothing to write
            return True
        sig = (status.phase, status.running, status.succeeded, status.failed, status.event,
               *[(c["type"], c["reason"], c["message"]) for c in status.conditions])
        # every status is settled once applied: the simulator writes synchronously, and a waiting job's carried
        # status carries the same pod conditions, which Volcano does not write again (``taskUnschedulable`` only
        # when ``podConditionHaveUpdate``, pkg/scheduler/cache/cache.go), so they keep their first stamp
        if self._last.get(uid) == sig:
            self.settled[uid] = status
            self.unwritten.discard(uid)
            return True
        ns, name = uid.split("/", 1)
        pg = sim.api.get("PodGroup", ns, name)
        if pg is None:
            self.unwritten.add(uid)
            return False
        self._last[uid] = sig
        self.settled[uid] = status
        self.unwritten.discard(uid)
        old = pg.get("status") or {}
        pg["status"] = podgroup_status_body(old, status, self._stamp())
        if status.event is not None:
            self.event("PodGroup", uid, *status.event)
        if old.get("phase") != status.phase:
            sim.api.update(pg, trusted=True)
            rec = sim.records.get(uid)
            if rec is not None and rec.enqueued is None and status.phase != "Pending":
                rec.enqueued = sim.now
            sim.controller.on_podgroup(uid, status.phase)
        return True

    def pod_condition(self, pod: str, message: str, nominated: str = "") -> None:
        obj = self.sim._pod(pod)
        if obj is None:
            return
        st = obj.get("status")
        if st is None:
            st = obj["status"] = {}
        st["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                             "message": message, "lastTransitionTime": self._stamp()}]
        if nominated:
            self.nominate(pod, nominated)

    def nominate(self, pod: str, node: str) -> None:
        """``status.nominatedNodeName``: it takes part in scheduling (allocate tries the node first), so the
        change goes through the API to the scheduler cache, as an informer event would bring it."""
        obj = self.sim._pod(pod)
        if obj is None:
            return
        st = obj.setdefault("status", {})
        if st.get("nominatedNodeName") == node:
            return
        st["nominatedNodeName"] = node
        self.sim.api.update(obj, trusted=False)  # a node name may be longer than the 253 characters the field allows

    def update_queue_status(self, status: QueueStatus) -> None:
        q = self.sim.api.get("Queue", "", status.name)
        if q is not None:
            q.setdefault("status", {})["allocated"] = status.allocated

    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None:
        """Recorded in ``event_log`` unless it repeats the last event of that reason about that object."""
        k = (kind, key, reason)
        if self._events.get(k) == message:
            return
        self._events[k] = message
        self.sim.event_log.append((self.sim.now, etype, reason, message))


def _largest(row: list[float], cols: list[tuple[int, float]]) -> float:
    """``np.max(row[cols] / totals, initial=0.0)`` in plain floats: ``np.maximum(best, r)`` keeps ``best`` only
    when it is larger (the second operand on a tie)."""
    best = 0.0
    for j, t in cols:
        r = row[j] / t
        best = best if best > r else r
    return best


class Simulator:
    def __init__(self, nodes: list[dict[str, Any]], queues: list[dict[str, Any]], workload: Workload,
                 conf: SchedulerConf, *, period: float = 1.0, start_latency: float = 1.0, grace: float = 5.0,
                 node_failures: list[tuple[float, str, float]] | None = None,
                 cancellations: list[tuple[float, str]] | None = None, sample_every: float = 0.0,
                 full_sessions: bool = False, hypernodes: list[dict[str, Any]] | None = None,
                 numatopologies: list[dict[str, Any]] | None = None, one_try: bool = False) -> None:
        self.conf = conf
        #: the FGD fill protocol: a job not placed at its try (the session after its PodGroup was enqueued, or the
        #: first one if enqueue refused it) is failed and deleted, never tried again (``_judge_tries``)
        self.one_try = one_try
        #: one_try: the jobs not yet placed -> the sessions they have been through
        self._trying: dict[str, int] = {}
        #: the conf acts on the clock (shuffle: tdm's windows, rescheduling's interval): a session every period
        #: while anything is still to happen, not only when something changed
        self.time_driven = "shuffle" in conf.actions
        self.period = period
        self.start_latency = start_latency
        self.grace = grace
        self.sample_every = sample_every or period
        self.now = 0.0
        self.uids = itertools.count()
        self.seq = itertools.count()
        self.heap: list[tuple[float, int, Event]] = []
        # each session's result is applied before the next (clone reuse); every change goes through the cache's
        # upsert/delete, so its epochs are exact and blocked jobs can wait for a change
        # (framework/incremental/memo.py) unless ``full_sessions``
        self.cache = SchedulerCache(reuse_clones=True, memo=not full_sessions)
        self.cache.has_clock = True  # sessions read the simulated time (tdm's windows, rescheduling's interval)
        self.cache.task_mix = workload.task_mix  # the workload's task mix (``Snapshot.task_mix``: fgd's)
        self.api = SimAPI(self)
        self.controller = JobController(self.api, keep_finished_pods=False)
        self.writer = SimWriter(self)
        self.records: dict[str, JobRecord] = {}
        self.samples: list[Sample] = []
        self.usage = UsageLedger(3)
        #: proportion (not capacity) gives queues their deserved: between sessions it follows the queues' holdings
        #: (``_deserved_between_sessions``); each queue's guarantee as its last session had it
        names = conf.plugin_names
        self._deserved_follows = "proportion" in names and "capacity" not in names
        self._guarantee: dict[str, np.ndarray] = {}
        #: (``usage.changes``, samples taken) when ``_deserved_between_sessions`` last set every queue
        self._between_seen: tuple[int, int] = (-1, -1)
        self.eviction_log = EvictionLog()
        self.event_log: list[tuple[float, str, str, str]] = []
        self.problems: list[str] = list(workload.problems)
        #: the cluster's gpushare GPUs, for the GPU metrics (None: no node has any)
        self.gpus = GpuLedger(nodes, workload.task_mix) \
            if any(GPU_NUMBER in ((n.get("status") or {}).get("allocatable") or {}) for n in nodes) else None
        #: the sessions' warnings already among ``problems`` (input a plugin left out: each listed once)
        self._warned: set[str] = set()
        self.changed = True
        self.events = 0
        self.cycles = 0
        self.cycle_seconds: list[float] = []
        self.rollbacks = 0
        self.evictions = 0
        self.stop = False
        # Numatopology objects (the --cluster file's) are the nodes' NUMA layout as the snapshot shows it; nothing in
        # the simulator plays Volcano's resource exporter, so they do not follow the pods placed
        for obj in [*workload.priority_classes, *queues, *nodes, *(hypernodes or []), *(numatopologies or [])]:
            self.api.create(obj, trusted=False)
        #: the topology's tree over the cluster (the sessions build the same one from the cache's HyperNodes)
        self.spread = SpreadLog.of(build_topology(hypernodes, nodes), [n["metadata"]["name"] for n in nodes]) \
            if hypernodes else None
        for p in list(self.cache.problems):
            self.problems.append(p)
        self.cache.problems.clear()
        self.queue_names = {q["metadata"]["name"] for q in queues} | {"default"}
        caps = [self.cache.nodes[n["metadata"]["name"]].allocatable for n in nodes
                if n["metadata"]["name"] in self.cache.nodes]
        self.res = self.cache.res
        total = np.sum(caps, axis=0) if caps else self.res.zeros()
        pos = self.res.pos
        #: gpushare: one GPU's memory (the cluster's mean), to count a share of one in GPUs (0: none)
        self._gpu_memory_each = float(total[pos[GPU_MEMORY]] / total[pos[GPU_NUMBER]]) \
            if GPU_MEMORY in pos and GPU_NUMBER in pos and total[pos[GPU_NUMBER]] > 0 else 0.0
        self.capacity = self._pick(total, capacity=True)
        self._capacity = self.capacity.tolist()
        #: every node's allocatable by resource name, for the "fits no node at all" check
        self.node_alloc = [{n: float(v) for n, v in zip(self.res.names, spec.allocatable, strict=True)}
                           for spec in self.cache.nodes.values()]
        #: ``_unfit``'s answer per distinct request (a trace's pods ask for a few shapes; each answer walks every
        #: node's allocatable, which does not change after this)
        self._unfit_memo: dict[tuple[tuple[str, float], ...], str | None] = {}
        admitted = 0
        for t, job in workload.jobs:
            bad = self.job_problem(job)
            if bad:
                self.problems.append(f"{bad}; job skipped")
                continue
            self._push(t, Arrive(job))
            admitted += 1
        #: CronJobs, JobFlows and JobTemplates (``sim/flows.py``); ``until`` is ``run``'s, a CronJob's default end
        self.flows = SimFlows(self)
        self.until: float | None = None
        for t, obj in workload.flows:
            self._push(t, FlowArrive(obj))
        for t, node, down in node_failures or []:
            self._push(t, NodeFail(node, down))
        for t, key in cancellations or []:
            self._push(t, Cancel(key))
        self.total_jobs = admitted
        #: ``_sample``'s last fair columns and cluster use, by the bytes they were made from
        self._sample_cols: tuple[tuple[bytes, bytes] | None, list[tuple[int, float]]] = (None, [])
        self._sample_used: tuple[ResourceIndex | None, bytes, np.ndarray] = (None, b"", np.zeros(3))

    # --- helpers ---------------------------------------------------------------------------------------------
    def _pick(self, v: np.ndarray, capacity: bool = False) -> np.ndarray:
        """cpu (cores), memory (GiB), gpu (devices) out of a cache vector (the cache's resource layout may
        have grown since the start when a workload names a new resource).  GPUs: ``nvidia.com/gpu``, plus gpushare's:
        held, ``volcano.sh/gpu-number`` and ``volcano.sh/gpu-memory`` over one GPU's memory (the cluster's
        gpu-memory / gpu-number: 1000 in the openb mapping, ``sim/alibaba.py``); a node's ``capacity``, its
        ``gpu-number`` (its memory is the same GPUs)."""
        res = self.cache.res
        if len(v) != res.size:
            return np.array([v[0] / 1000, v[1] / 2**30, 0.0])
        pos = res.pos
        gpu = v[pos["nvidia.com/gpu"]] / 1000 if "nvidia.com/gpu" in pos else 0.0
        if GPU_NUMBER in pos:
            gpu += v[pos[GPU_NUMBER]] / 1000
        if GPU_MEMORY in pos and not capacity and self._gpu_memory_each:
            gpu += v[pos[GPU_MEMORY]] / 1000 / self._gpu_memory_each
        return np.array([v[0] / 1000, v[1] / 2**30, gpu])

    def _push(self, t: float, event: Event) -> None:
        """Schedule ``event`` at time ``t``: events run by time, then in the order they were pushed."""
        heapq.heappush(self.heap, (t, next(self.seq), event))

    def _pod(self, key: str) -> dict[str, Any] | None:
        return self.api.objects.get(("Pod", key))

    def _job_of(self, pod: dict[str, Any]) -> tuple[str, str]:
        md = pod["metadata"]
        return f"{md['namespace']}/{md['labels']['volcano.sh/job-name']}", md["annotations"][TASK_SPEC_ANNOTATION]

    def _log_eviction(self, key: str, pod: dict[str, Any], cause: str) -> None:
        job_key = self._job_of(pod)[0]
        rec = self.records.get(job_key)
        self.eviction_log.evicted(self.now, key, job_key, rec.queue if rec is not None else "",
                                  pod["spec"].get("nodeName") or "", cause)

    # --- checks ----------------------------------------------------------------------------------------------
    def job_problem(self, job: dict[str, Any]) -> str | None:
        """Why ``job`` cannot run on this cluster at all, as a message naming the job and field, or None:
        Volcano's admission checks (minAvailable <= replicas, a known queue, ...), a duration that is not a number
        of seconds >= 0, a request that does not parse, or a pod request that no node's allocatable could ever
        hold (more of a resource than the largest node has, a resource no node has, or a combination no single
        node has)."""
        try:
            validate_job(job, self.queue_names, WorkloadJob)
        except UserError as exc:
            return str(exc)
        ref = job_ref(job)
        for i, t in enumerate(job["spec"]["tasks"]):
            if int(t.get("replicas", 1)) == 0:
                continue
            name = t.get("name") or f"task{i}"
            try:
                _, req = pod_requests({"kind": "Pod", "metadata": {"name": name}, "spec": t["template"].get("spec")})
            except ManifestError as exc:
                return f"{ref}: field spec.tasks[{i}].template.{exc.field}: {exc.problem}"
            bad = self._unfit(req)
            if bad:
                return f"{ref}: task {name}: {bad}"
        return self._built_problem(job)

    def _built_problem(self, job: dict[str, Any]) -> str | None:
        """The validated boundary for what the job controller will build from ``job``: its PodGroup and one pod
        per task (``JobController.built_objects``) through ``api/models.py: validate``, so that the Pods and
        PodGroups built from an admitted job enter the cache without a second validation (``SimAPI.create``).
        A mistake names the job's field it comes from: the pod template's, or the job's own for what the
        controller copies from it (name, namespace, schedulerName, priorityClassName, queue, ...)."""
        ref = job_ref(job)
        for i, obj in self.controller.built_objects(job):
            try:
                models.validate(obj)
            except ManifestError as exc:
                return f"{ref}: field {_job_field(job, i, exc.field)}: {exc.problem}"
        return None

    def _unfit(self, req: dict[str, float]) -> str | None:
        """Why a pod requesting ``req`` (internal amounts) fits no node's allocatable, or None; answered once per
        distinct request (``_unfit_memo``: the nodes' allocatable is fixed when the simulator is made)."""
        req = {n: v for n, v in req.items() if v > 0 and n != "ephemeral-storage-limit"}
        key = tuple(req.items())
        try:
            return self._unfit_memo[key]
        except KeyError:
            bad = self._unfit_memo[key] = self._unfit_walk(req)
            return bad

    def _unfit_walk(self, req: dict[str, float]) -> str | None:
        if not self.node_alloc:
            return "the cluster has no nodes"
        if any(all(v < alloc.get(n, 0.0) + EPS for n, v in req.items()) for alloc in self.node_alloc):
            return None
        for n, v in sorted(req.items()):
            largest = max(alloc.get(n, 0.0) for alloc in self.node_alloc)
            if largest <= 0:
                return f"requests {n} {format_quantity(n, v)} per pod, a resource no node has"
            if v >= largest + EPS:
                return (f"requests {n} {format_quantity(n, v)} per pod, more than any node's allocatable "
                        f"(largest: {format_quantity(n, largest)})")
        want = ", ".join(f"{n}: {format_quantity(n, v)}" for n, v in sorted(req.items()) if n != "pods")
        return f"requests {{{want}}} per pod, which no single node's allocatable holds (each resource fits some node)"

    # --- event handlers --------------------------------------------------------------------------------------
    def _arrive(self, job: dict[str, Any]) -> None:
        md = job["metadata"]
        ns = md.setdefault("namespace", "default")
        key = f"{ns}/{md.get('name')}"
        if key in self.controller.jobs:
            self.problems.append(f"Job {key}: a job of that name already exists; skipped")
            return
        md["creationTimestamp"] = self.now
        tasks = sum(int(t.get("replicas", 1)) for t in job["spec"]["tasks"])
        self.records[key] = JobRecord(key, job["spec"].get("queue") or "default", tasks,
                                      int(job["spec"].get("minAvailable", tasks)), self.now)
        if self.spread is not None:
            self.spread.arrived(key, job)
        if self.one_try:
            self._trying[key] = 0
        self.controller.add_job(job)

    def _running(self, key: str, uid: str) -> None:
        pod = self._pod(key)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        # the scheduler's bind sets PodScheduled=True (cdp's cooldown counts from its lastTransitionTime)
        pod["status"] = {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": self.writer._stamp()}]}
        self.api.update(pod, trusted=True)
        job_key, task = self._job_of(pod)
        rec = self.records.get(job_key)
        if rec is not None:
            rec.running += 1
            if rec.first_start is None:
                rec.first_start = self.now
            if rec.all_started is None and rec.running >= max(rec.min_available, 1):
                rec.all_started = self.now
                if self.spread is not None:
                    self.spread.started(job_key)
        dur = float(((pod["metadata"].get("annotations") or {}).get(DURATION)) or 0)
        self._push(self.now + dur, PodFinish(key, uid))
        self.controller.on_pod(job_key, pod["metadata"]["name"], task, "Running")
        self._after_controller(job_key)

    def _finish(self, key: str, uid: str) -> None:
        pod = self._pod(key)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        pod["status"] = {"phase": "Succeeded"}
        self.api.update(pod, trusted=True)
        self.usage.release(self.now, key)  # a finished pod holds nothing on its node
        if self.gpus is not None:
            self.gpus.release(key)
        if self.spread is not None:
            self.spread.gone(self._job_of(pod)[0], key)
        job_key, task = self._job_of(pod)
        rec = self.records.get(job_key)
        if rec is not None:
            rec.running -= 1
        self.controller.on_pod(job_key, pod["metadata"]["name"], task, "Succeeded")
        self._after_controller(job_key)

    def _release(self, key: str, uid: str) -> None:
        pod = self._pod(key)
        if pod is None or pod["metadata"]["uid"] != uid:
            return
        job_key, task = self._job_of(pod)
        was_running = (pod.get("status") or {}).get("phase") == "Running"
        self.api.delete("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        rec = self.records.get(job_key)
        if rec is not None and was_running:
            rec.running -= 1
        st = self.controller.jobs.get(job_key)
        before = st.retries if st else 0
        self.controller.on_pod(job_key, pod["metadata"]["name"], task, "Failed", evicted=True)
        if rec is not None and st is not None and st.retries > before:
            rec.restarts += st.retries - before
            # the pods the restart deleted no longer run (all_started keeps the gang's first start: wait ends there)
            rec.running = sum(1 for p in st.pods.values() if p == "Running")
        self._after_controller(job_key)

    def _after_controller(self, job_key: str) -> None:
        st = self.controller.jobs.get(job_key)
        rec = self.records.get(job_key)
        if st is None or rec is None:
            return
        changed = rec.phase != st.phase
        rec.phase = st.phase
        if st.phase in FINAL and rec.finished is None:
            rec.finished = self.now
            rec.running = 0
            ttl = st.job["spec"].get("ttlSecondsAfterFinished")
            if ttl is not None and st.phase in TTL_PHASES:
                self._push(self.now + float(ttl), JobTTL(job_key, st))
        if changed and self.flows.flow_of:
            self.flows.job_changed(job_key)

    def _ttl(self, key: str, st: Any) -> None:
        """``ttlSecondsAfterFinished`` ran out (Volcano's garbagecollector controller): the Job is deleted, with
        what is left of its pods and its PodGroup; a Job of the same name may arrive again."""
        if self.controller.jobs.get(key) is st:
            self.controller.delete_job(key)

    def _node_fail(self, node: str, down: float) -> None:
        n = self.api.get("Node", "", node)
        if n is None:
            return
        n["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        # what Kubernetes' node lifecycle controller does: schedulers (Volcano included, which ignores node
        # conditions) keep off a NotReady node only because of this taint
        spec = n.setdefault("spec", {})
        spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != NOT_READY_TAINT] + [
            {"key": NOT_READY_TAINT, "effect": "NoSchedule"}]
        self.api.update(n, trusted=True)
        for (kind, key), pod in list(self.api.objects.items()):
            if kind == "Pod" and (pod.get("spec") or {}).get("nodeName") == node and \
                    (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):  # finished pods lose nothing
                if not pod["metadata"].get("deletionTimestamp"):
                    self._log_eviction(key, pod, "node failure")
                pod["metadata"]["deletionTimestamp"] = self.now
                self.api.update(pod, trusted=True)
                self._push(self.now, PodRelease(key, pod["metadata"]["uid"]))
        self._push(self.now + down, NodeUp(node))

    def _node_up(self, node: str) -> None:
        n = self.api.get("Node", "", node)
        if n is not None:
            n["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            spec = n.setdefault("spec", {})
            spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != NOT_READY_TAINT]
            self.api.update(n, trusted=True)

    def _cancel(self, key: str) -> None:
        st = self.controller.jobs.get(key)
        if st is None:
            self.problems.append(f"cancel {key} at {self.now:g} s: the job has not arrived yet; nothing cancelled")
            return
        if st.phase in FINAL:
            return
        self.controller.execute(st, "AbortJob")
        self._after_controller(key)

    # --- the scheduler ---------------------------------------------------------------------------------------
    def _has_pending(self) -> bool:
        """Some pod or PodGroup is pending (``SchedulerCache.has_pending``: kept by the cache's changes, no walk
        over the jobs)."""
        return self.cache.has_pending()

    def _cycle(self) -> None:
        """One session through ``run_session`` (the code path of ``cycle`` and the Kubernetes mode), applied to
        the in-memory API by ``SimWriter`` through ``framework.result.apply``."""
        self.cache.now = self.now
        t0 = time.perf_counter()
        result = run_session(self.cache, self.conf)
        self.cycle_seconds.append(time.perf_counter() - t0)
        self.cycles += 1
        self.rollbacks += result.stats.rollbacks
        self.changed = False
        self.eviction_log.on_session(result)
        for w in result.warnings:  # e.g. a task-topology annotation naming no task, an extender that fails
            if w not in self._warned:
                self._warned.add(w)
                self.problems.append(w)
        apply(result, self.writer)
        if self.one_try:
            self._judge_tries()
        self._sample(result)

    def _judge_tries(self) -> None:
        """One try each: a job whose PodGroup a session left Pending, or whose pod the session after enqueue did
        not bind, is failed and deleted with its pods and PodGroup (so nothing it asked for stays counted)."""
        for key in list(self._trying):
            n = self._trying[key] + 1
            if n < 2 and self.controller.pg_phase.get(key) not in (None, "Pending"):
                self._trying[key] = n
                continue
            del self._trying[key]
            rec = self.records.get(key)
            if rec is not None and rec.first_start is None:
                rec.phase, rec.finished = "Failed", self.now
            self.controller.delete_job(key)

    def _sample(self, result: SessionResult | None) -> None:
        """Cluster use and each queue's (allocated, deserved) dominant share of the cluster, as the fairness plugin
        saw them in the session (none without proportion or capacity)."""
        queues: dict[str, tuple[float, float]] = {}
        if result is not None and result.used is not None:
            used = result.used
            total, fair = result.total, result.fair_mask
            if total is not None and fair is not None:
                # a handful of queues and resources: plain floats, the operations NumPy made on the rows (a
                # share is the largest allocated / total over the fair dimensions the cluster has, from 0.0);
                # the columns as for the last session while the total and the fair dimensions are the same
                ckey = (total.tobytes(), fair.tobytes())
                if self._sample_cols[0] == ckey:
                    cols = self._sample_cols[1]
                else:
                    tot = total.tolist()
                    cols = [(j, t) for j, (t, f) in enumerate(zip(tot, fair.tolist(), strict=True)) if f and t > 0]
                    self._sample_cols = (ckey, cols)
                res = self.cache.res
                g = res.pos.get("nvidia.com/gpu")
                cap = self._capacity
                for name, q in result.queues.items():
                    f = q.fair
                    if f is not None:
                        alloc, des = f.allocated.tolist(), f.deserved.tolist()
                        queues[name] = (_largest(alloc, cols), _largest(des, cols))
                        gpu = des[g] / 1000 if g is not None and len(des) == res.size else 0.0
                        picked = (des[0] / 1000, des[1] / 2**30, gpu)
                        capped = [x if x < c else c for x, c in zip(picked, cap, strict=True)]
                        self.usage.set_deserved(self.now, name, capped)
                        if self._deserved_follows:
                            gua = f.guarantee.tolist()
                            self._guarantee[name] = np.array([gua[0] / 1000, gua[1] / 2**30, gua[g] / 1000 if
                                                              g is not None and len(gua) == res.size else 0.0])
                    elif name in self.usage.deserved:  # no job of it in the session: proportion deserves it nothing
                        self.usage.set_deserved(self.now, name, np.zeros(3))
                        self._guarantee.pop(name, None)
        else:
            nodes = self.cache.snapshot().nodes
            used = nodes.used.sum(axis=0) if len(nodes) else self.cache.res.zeros()
        # the cluster's use as for the last sample while the amounts are the same (most sessions place nothing):
        # the same values, a copy of them
        res, ub = self.cache.res, used.tobytes()
        last_res, last_ub, last_use = self._sample_used
        if last_res is res and last_ub == ub:
            use = last_use.copy()
        else:
            use = self._pick(used)
            self._sample_used = (res, ub, use.copy())
        self.samples.append(Sample(self.now, use, queues, self.gpus.frag() if self.gpus is not None else None))
        if self.gpus is not None:
            self.gpus.record(self.now)

    def _deserved_between_sessions(self) -> None:
        """Each queue's deserved amount while no session runs because nothing is pending: what a session would
        compute, without running one (the report's series only; no decision reads it).  With nothing pending a
        queue's request is what its jobs hold (proportion's OnSessionOpen adds allocated and pending tasks, Volcano
        ``pkg/scheduler/plugins/proportion/proportion.go``), every request fits the cluster, so the water-filling
        meets every queue at its request (``deserved.MinDimensionResource(request)``) and raises it to its
        guarantee (``helpers.Max(deserved, guarantee)``); a queue that holds nothing has no job left, and a session
        gives it nothing (as ``_sample`` does).  Without this the series held a session's deserved (e.g. 95 %
        of the cluster, while a queue was still asking) through hours in which nothing ran.

        Work in proportion to change: when no holding and no deserved amount has changed since its last call
        (``UsageLedger.changes``) and no session has sampled since (the guarantees are a session's), every queue
        would be set to the very amount it has, which ``Steps.set`` does not record: the call is skipped."""
        seen = (self.usage.changes, len(self.samples))
        if seen == self._between_seen and not deltas.CHECK:
            return
        cap = self.capacity
        for name, steps in list(self.usage.deserved.items()):
            held = self.usage.held(name)
            if held.any():
                g = self._guarantee.get(name)
                held = np.minimum(held if g is None else np.maximum(held, g), cap)
            if seen == self._between_seen:  # check mode: the skip above holds
                assert steps.values[-1].tolist() == held.tolist(), f"deserved between sessions: queue {name}"
                continue
            self.usage.set_deserved(self.now, name, held)
        self._between_seen = (self.usage.changes, len(self.samples))

    # --- main loop --------------------------------------------------------------------------------------------
    def run(self, until: float | None = None, progress: Callable[[Simulator], None] | None = None) -> SimResult:
        self.until = until
        with quiet_gc():
            return self._run(until, progress)

    def _run(self, until: float | None, progress: Callable[[Simulator], None] | None) -> SimResult:
        wall = time.perf_counter()
        next_cycle = 0.0
        interrupted = False
        try:
            while not self.stop:
                t_event = self.heap[0][0] if self.heap else float("inf")
                # a cycle is due before the next event only if something changed and something is pending; the
                # pending check walks every job, so it is made only when a cycle could come first
                t_cycle = max(next_cycle, self.now)
                if t_cycle > t_event or not ((self.changed and self._has_pending()) or (self.time_driven and self.heap)):
                    t_cycle = float("inf")
                if t_cycle == float("inf") and t_event == float("inf"):
                    break
                if until is not None and min(t_cycle, t_event) > until:
                    break
                if t_cycle <= t_event:
                    self.now = t_cycle
                    self._cycle()
                    next_cycle = self.now + self.period
                else:
                    self.now = t_event
                    while self.heap and self.heap[0][0] == t_event:
                        _, _, event = heapq.heappop(self.heap)
                        self.events += 1
                        self._dispatch(event)
                    if self._deserved_follows and self.usage.deserved and not self._has_pending():
                        self._deserved_between_sessions()
                    if self.gpus is not None:
                        self.gpus.record(self.now)
                    if next_cycle < self.now:  # align cycles to the period grid
                        next_cycle = self.now if self.period <= 0 else \
                            (self.now // self.period + (self.now % self.period > 0)) * self.period
                if progress is not None:
                    progress(self)
        except KeyboardInterrupt:
            interrupted = True
        self._sample(None)
        return SimResult(self.records, self.samples, self.capacity, self.cycles, self.cycle_seconds, self.events,
                         self.rollbacks, self.evictions, time.perf_counter() - wall, self.now, interrupted,
                         self.problems + [f"skipped {p}" for p in self.cache.problems], self.usage,
                         self.eviction_log.records, self.spread,
                         gpu_series=(self.gpus.series, self.gpus.total) if self.gpus is not None else None)

    #: ``why_waiting`` explains at most this many never-started jobs (the first submitted) ...
    WHY_JOBS = 10
    #: ... each with this many sessions re-run to find a fix
    WHY_RUNS = 3

    def why_waiting(self) -> None:
        """For jobs whose gang never started and that still wait when the run ends, the short reason and the
        best verified fix (``analysis/whatif.py``) on the cluster as the run left it, into ``JobRecord.why``
        (the ``why`` column of jobs.csv); called by ``sim/run.py: run_one`` after the run, outside its timing.
        Bounded: ``WHY_JOBS`` jobs, ``WHY_RUNS`` re-runs each, one shared
        session on the final state; the others keep an empty ``why``."""
        from pyvolcano.analysis.whatif import explain

        waiting = [r for r in sorted(self.records.values(), key=lambda r: (r.submit, r.key))
                   if r.all_started is None and r.finished is None]
        if not waiting:
            return
        objects = list(self.cache.raw.values())
        names = {(o.get("kind"), "/".join(((o.get("metadata") or {}).get("namespace") or "default",
                                            str((o.get("metadata") or {}).get("name"))))) for o in objects}
        t0 = time.perf_counter()
        base = run_session(SchedulerCache.from_objects(objects, self.cache.scheduler_name), self.conf)
        pace = time.perf_counter() - t0
        for r in [r for r in waiting if ("PodGroup", r.key) in names][:self.WHY_JOBS]:
            try:
                e = explain(objects, self.conf, r.key, scheduler_name=self.cache.scheduler_name,
                            max_runs=self.WHY_RUNS, base=base, pace=pace)
            except UserError:
                continue
            r.why = e.short() if not e.schedulable else e.reason

    def _dispatch(self, event: Event) -> None:
        """Run one event's handler, chosen by the event's type."""
        match event:
            case Arrive(job):
                self._arrive(job)
            case PodRunning(key, uid):
                self._running(key, uid)
            case PodFinish(key, uid):
                self._finish(key, uid)
            case PodRelease(key, uid):
                self._release(key, uid)
            case NodeFail(node, down):
                self._node_fail(node, down)
            case NodeUp(node):
                self._node_up(node)
            case Cancel(key):
                self._cancel(key)
            case JobTTL(key, state):
                self._ttl(key, state)
            case FlowArrive(obj):
                self.flows.arrive(obj)
            case CronTick(key):
                self.flows.tick(key)
            case _:
                assert_never(event)
