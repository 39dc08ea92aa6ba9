"""SchedulerCache: the cluster as the scheduler knows it, fed by manifests (cycle), the simulator or informers.

It keeps TaskInfo/JobInfo/NodeSpec/QueueInfo objects up to date object by object (``upsert``/``delete``), and
``snapshot()`` hands a session private copies of what it may change (jobs and tasks) plus fresh node arrays.
A bad object is reported in ``problems`` and skipped; the rest of the cluster is still scheduled.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api import convert, models
from pyvolcano.api.hypernode import HyperNode, Topology, parse_hypernode
from pyvolcano.api.job_info import JobInfo, PodGroup, TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeSpec
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import ResourceIndex
from pyvolcano.api.types import (
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER,
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    PodGroupPhase,
    TaskStatus,
)
from pyvolcano.cache.memo import BlockedMemo
from pyvolcano.errors import ManifestError

#: statuses that hold nothing on a node; a set: membership is cheap, IntFlag "&" runs Python code (the snapshot
#: tests every task)
_OFF_NODE = frozenset((TaskStatus.Pending, TaskStatus.Succeeded, TaskStatus.Failed))
#: statuses in which a pod holds its node's resources for good; moving between them gives nothing back
_HOLDING = frozenset((TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running))
KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "PodDisruptionBudget", "ResourceQuota",
         "Namespace", "HyperNode")


#: Volcano's per-pod override of the task priority (``api/job_info.go: TaskPriorityAnnotation``)
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
#: a task's priority when the pod has no ``spec.priority`` (``NewTaskInfo`` starts from 1)
DEFAULT_TASK_PRIORITY = 1
_GO_INT = re.compile(r"[+-]?[0-9]+")


def task_priority(pod: dict[str, Any], spec: dict[str, Any]) -> int:
    """A task's priority as Volcano master's ``NewTaskInfo`` (``pkg/scheduler/api/job_info.go``) sets it: the
    pod's ``spec.priority``, else 1; the ``volcano.sh/task-priority`` annotation wins when it is a 32-bit
    integer.  ``spec.priorityClassName`` is not read: in a cluster the API server's Priority admission has
    already turned it into ``spec.priority`` (a hand-written pod with only a class name gets 1, as in Volcano;
    docs/volcano-differences.md)."""
    prio = spec.get("priority")
    prio = DEFAULT_TASK_PRIORITY if prio is None else int(prio)  # an int32 (api/models.py)
    note = ((pod.get("metadata") or {}).get("annotations") or {}).get(TASK_PRIORITY_ANNOTATION)
    if isinstance(note, str) and _GO_INT.fullmatch(note) and -(2 ** 31) <= int(note) < 2 ** 31:
        prio = int(note)  # strconv.ParseInt(s, 10, 32): optional sign, decimal digits, int32 range
    return prio


@dataclass
class Snapshot:
    """What one session starts from; jobs and tasks are private copies, safe to change."""

    res: ResourceIndex
    nodes: NodeArrays
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    priority_classes: dict[str, int]
    default_priority: int
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    skipped_jobs: dict[str, str] = field(default_factory=dict)
    #: the pending pods of the skipped jobs -> the job's reason (they get a FailedScheduling event)
    skipped_pods: dict[str, str] = field(default_factory=dict)
    now: float = 0.0
    #: the HyperNode tree over ``nodes`` (the virtual cluster top alone when there are no HyperNodes)
    topology: Topology | None = None
    #: the blocked-job memo (``framework/memo.py``) and the cache's epochs when the snapshot was taken; None:
    #: every job is examined every session (``--full-sessions``)
    memo: BlockedMemo | None = None
    free_epoch: int = 0
    use_epoch: int = 0


class SchedulerCache:
    """Cluster state between sessions.  ``scheduler_name`` selects the pods this scheduler places."""

    def __init__(self, scheduler_name: str = DEFAULT_SCHEDULER, res: ResourceIndex | None = None, *,
                 reuse_clones: bool = False, memo: bool = False) -> None:
        self.scheduler_name = scheduler_name
        #: blocked-job memo (``framework/memo.py``): only for a caller whose every change goes through
        #: ``upsert``/``delete``/``set_task_status`` (the simulator; the Kubernetes scheduler with ``incremental``)
        self.memo: BlockedMemo | None = BlockedMemo() if memo else None
        #: moves on every change that can give room back or change a rule's input other than by consuming it
        #: (see ``framework/memo.py``); ``use_epoch`` on every change of node usage at all
        self.free_epoch = 0
        self.use_epoch = 0
        #: hand a job's previous clone to the next snapshot when neither the job nor that clone has changed
        #: (``JobInfo.reuse``): most jobs of a busy cluster are untouched between two cycles.  Only for a caller
        #: that is done with a session's jobs before it takes the next snapshot (the simulator, and the Kubernetes
        #: scheduler, whose background binds and status writes get plain values, not session clones).
        self.reuse_clones = reuse_clones
        self.reused = 0  # clones handed on (tests and benchmarks check that reuse happens)
        self._clones: dict[str, tuple[JobInfo, JobInfo]] = {}
        self.res = res or ResourceIndex.of()
        self.nodes: dict[str, NodeSpec] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.other_tasks: dict[str, TaskInfo] = {}  # pods of other schedulers: they only take node resources
        self.podgroups: dict[str, PodGroup] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, int] = {}
        self.global_default: tuple[str, int] | None = None
        self.pdbs: dict[str, dict[str, Any]] = {}
        self.quotas: dict[str, dict[str, Any]] = {}
        self.raw: dict[tuple[str, str], dict[str, Any]] = {}
        #: HyperNodes by name (``topology.volcano.sh/v1alpha1``); the tree is built per snapshot over its nodes
        self.hypernodes: dict[str, HyperNode] = {}
        #: bumped by every Node or HyperNode change, so a snapshot rebuilds the topology only when it changed
        self._topo_version = 0
        self._topo_memo: tuple[tuple[int, tuple[str, ...]], Topology] | None = None
        self.problems: list[str] = []
        self.now = 0.0

    # --- bulk load ------------------------------------------------------------------------------------
    @classmethod
    def from_objects(cls, objects: Iterable[dict[str, Any]], scheduler_name: str = DEFAULT_SCHEDULER,
                     extra_resources: Iterable[str] = ()) -> SchedulerCache:
        objs = [o for o in objects if isinstance(o, dict)]
        cache = cls(scheduler_name, ResourceIndex.of(set(convert.resource_names(objs)) | set(extra_resources)))
        order = {k: i for i, k in enumerate(("PriorityClass", "Queue", "Node", "PodGroup", "Pod"))}
        for o in sorted(objs, key=lambda o: _rank(order, o)):
            cache.upsert(o)
        return cache

    def _problem(self, msg: str) -> None:
        self.problems.append(msg)

    def _key(self, obj: dict[str, Any]) -> tuple[str, str]:
        md = obj.get("metadata") or {}
        ns = md.get("namespace") or ("default" if obj.get("kind") in ("Pod", "PodGroup") else "")
        return obj.get("kind", ""), f"{ns}/{md.get('name')}" if ns else str(md.get("name"))

    def upsert(self, obj: dict[str, Any]) -> bool:
        """Add or replace one object; a bad one is recorded in ``problems`` and skipped (returns False)."""
        kind = obj.get("kind")
        if not isinstance(kind, str):
            self._problem(f"{models.ref(obj)}: field kind: must be a string, got {kind!r}")
            return False
        if kind not in KINDS:
            return False
        try:
            models.validate(obj)  # the typed boundary: shapes and numbers are trusted after this
            convert.meta(obj)
            if kind in ("Node", "Pod", "PodGroup", "Queue") and not self.res.covers(
                    convert.resource_names([obj])):
                self._grow(convert.resource_names([obj]))
            if kind not in ("Pod", "PodGroup"):
                self.freed()
            getattr(self, f"_upsert_{kind.lower()}")(obj)
        except ManifestError as exc:
            self._problem(str(exc))
            return False
        self.raw[self._key(obj)] = obj
        return True

    def freed(self) -> None:
        """Something that may give room back (or change a rule's input) changed: blocked jobs are re-examined."""
        self.free_epoch += 1
        self.use_epoch += 1

    def delete(self, obj: dict[str, Any]) -> None:
        kind, key = self._key(obj)
        if kind in KINDS:
            self.freed()
        self.raw.pop((kind, key), None)
        if kind in ("Node", "HyperNode"):
            self._topo_version += 1
        if kind == "HyperNode":
            self.hypernodes.pop(key, None)
        elif kind == "Node":
            self.nodes.pop(key, None)
        elif kind == "Pod":
            self._remove_task(key)
        elif kind == "PodGroup":
            self.podgroups.pop(key, None)
            job = self.jobs.get(key)
            if job is not None:
                job.podgroup = None
                job.version += 1
                if not job.tasks:
                    del self.jobs[key]
        elif kind == "Queue":
            self.queues.pop(key, None)
        elif kind == "PriorityClass":
            self.priority_classes.pop(key, None)
            if self.global_default and self.global_default[0] == key:
                self.global_default = None
        elif kind == "PodDisruptionBudget":
            self.pdbs.pop(key, None)
        elif kind == "ResourceQuota":
            self.quotas.pop(key, None)

    def _grow(self, names: Iterable[str]) -> None:
        """A new resource name appeared: widen every vector by rebuilding from the raw objects."""
        self.res = ResourceIndex.of(set(self.res.names) | set(names))
        self.freed()
        raw = list(self.raw.values())
        statuses = {uid: (t.status, t.node_name) for uid, t in self.tasks.items()}
        for store in (self.nodes, self.jobs, self.tasks, self.other_tasks, self.podgroups, self.queues):
            store.clear()
        order = {k: i for i, k in enumerate(("PriorityClass", "Queue", "Node", "PodGroup", "Pod"))}
        for o in sorted(raw, key=lambda o: _rank(order, o)):
            kind = o.get("kind", "")
            if kind in ("Node", "Pod", "PodGroup", "Queue"):
                getattr(self, f"_upsert_{kind.lower()}")(o)
        for uid, (st, node) in statuses.items():  # keep what the scheduler decided since the objects were read
            t = self.tasks.get(uid)
            if t is not None and (t.status, t.node_name) != (st, node):
                self.set_task_status(t, st, node)

    # --- per kind -------------------------------------------------------------------------------------
    def _upsert_node(self, obj: dict[str, Any]) -> None:
        spec = convert.node_spec(obj, self.res)
        self.nodes[spec.name] = spec
        self._topo_version += 1

    def _upsert_hypernode(self, obj: dict[str, Any]) -> None:
        """A HyperNode through its validated boundary (``api/hypernode.py: parse_hypernode``)."""
        hn = parse_hypernode(obj)
        self.hypernodes[hn.name] = hn
        self._topo_version += 1

    def topology(self, specs: list[NodeSpec]) -> Topology:
        """The HyperNode tree over these nodes (Volcano's ``HyperNodesInfo`` as the snapshot copies it), rebuilt
        only when a Node or HyperNode changed since the last snapshot."""
        key = (self._topo_version, tuple(s.name for s in specs))
        if self._topo_memo is not None and self._topo_memo[0] == key:
            return self._topo_memo[1]
        topo = Topology.build(list(self.hypernodes.values()), [s.name for s in specs], [s.labels for s in specs])
        self._topo_memo = (key, topo)
        return topo

    def _upsert_queue(self, obj: dict[str, Any]) -> None:
        q = convert.queue(obj, self.res)
        self.queues[q.name] = q

    def _upsert_priorityclass(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        value = int(obj.get("value", 0))
        self.priority_classes[name] = value
        if obj.get("globalDefault"):
            self.global_default = (name, value)

    def _upsert_poddisruptionbudget(self, obj: dict[str, Any]) -> None:
        self.pdbs[self._key(obj)[1]] = obj

    def _upsert_resourcequota(self, obj: dict[str, Any]) -> None:
        self.quotas[self._key(obj)[1]] = obj

    def _upsert_namespace(self, obj: dict[str, Any]) -> None:
        return None

    @property
    def default_priority(self) -> int:
        return self.global_default[1] if self.global_default else 0

    def _class_priority(self, name: str) -> int:
        if name and name in self.priority_classes:
            return self.priority_classes[name]
        return self.default_priority

    def admit_pod_priority(self, pod: dict[str, Any]) -> None:
        """What Kubernetes' Priority admission plugin (``plugin/pkg/admission/priority/admission.go``) does when
        a pod is created: ``spec.priority`` from ``spec.priorityClassName``, else from the global default class
        (else 0).  For the simulator, whose in-memory API server creates pods itself; a real API server has
        already done it, and the scheduler reads ``spec.priority`` only (:func:`task_priority`)."""
        spec = pod.setdefault("spec", {})
        if spec.get("priority") is None:
            spec["priority"] = self._class_priority(spec.get("priorityClassName") or "")

    def _upsert_podgroup(self, obj: dict[str, Any]) -> None:
        pg = convert.podgroup(obj, self.res)
        uid = f"{pg.namespace}/{pg.name}"
        old = self.podgroups.get(uid)
        if old is not None and not _consumes(old, pg):
            self.freed()
        self.podgroups[uid] = pg
        job = self.jobs.get(uid)
        if job is None:
            job = self.jobs[uid] = JobInfo(uid, pg, self.res.size)
        self._set_podgroup(job, pg)

    def _set_podgroup(self, job: JobInfo, pg: PodGroup) -> None:
        job.version += 1
        job.podgroup = pg
        job.name, job.namespace, job.queue = pg.name, pg.namespace, pg.queue
        job.min_available = pg.min_member
        job.task_min_available = dict(pg.min_task_member)
        job.creation = pg.creation
        job.priority = self._class_priority(pg.priority_class)
        job.preemptable = str(pg.annotations.get("volcano.sh/preemptable",
                                                 pg.labels.get("volcano.sh/preemptable", "false"))).lower() == "true"

    def _upsert_pod(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        uid = f"{ns}/{md['name']}"
        spec = pod["spec"]
        convert.normalise_pod_spec(spec)
        req, init = convert.pod_requests(pod)
        prio = task_priority(pod, spec)
        before = self.tasks.get(uid)
        was = (before.status, before.node_name) if before is not None else None
        self._remove_task(uid, quiet=True)
        ours = (spec.get("schedulerName") or "default-scheduler") == self.scheduler_name
        if not ours:
            self.freed()
            t = convert.make_task(pod, self.res, "", prio, req, init, "")
            if t.node_name:
                self.other_tasks[uid] = t
            return
        annotations = md.get("annotations") or {}
        group = annotations.get(GROUP_NAME_ANNOTATION)
        if group:
            job_uid = f"{ns}/{group}"
        else:  # Volcano's podgroup controller makes a one-pod PodGroup for a volcano pod without one
            job_uid = f"{ns}/podgroup-{md.get('uid') or md['name']}"
            if job_uid not in self.podgroups:
                pg = PodGroup(name=job_uid.split("/", 1)[1], namespace=ns, min_member=1,
                              queue=annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE,
                              priority_class=spec.get("priorityClassName") or "",
                              min_resources=self.res.vector(req) * self.res.fair_mask,
                              creation=convert.parse_time(md.get("creationTimestamp")), synthetic=True)
                self.podgroups[job_uid] = pg
                self.jobs[job_uid] = JobInfo(job_uid, None, self.res.size)
                self._set_podgroup(self.jobs[job_uid], pg)
        job = self.jobs.get(job_uid)
        if job is None:
            job = self.jobs[job_uid] = JobInfo(job_uid, None, self.res.size)
        task = convert.make_task(pod, self.res, job_uid, prio, req, init, job.queue)
        job.add_task(task)
        self.tasks[uid] = task
        self._moved(was, task.status, task.node_name)

    def _moved(self, was: tuple[TaskStatus, str] | None, status: TaskStatus, node: str) -> None:
        """Epochs for a pod that went from ``was`` (None: new) to ``status`` on ``node``: a new pending pod or a
        bind only consumes; leaving a holding status (finished, failed, Releasing, Pending again) or moving
        nodes may give room back."""
        if was is None:
            if status != TaskStatus.Pending:
                self.use_epoch += 1
                if status not in _HOLDING:
                    self.free_epoch += 1
            return
        old, old_node = was
        if old == status and old_node == node:
            return
        self.use_epoch += 1
        if old == TaskStatus.Pending and status in _HOLDING:
            return
        if old in _HOLDING and status in _HOLDING and old_node == node:
            return
        self.free_epoch += 1

    def _remove_task(self, uid: str, quiet: bool = False) -> None:
        if not quiet:
            self.freed()
        self.other_tasks.pop(uid, None)
        t = self.tasks.pop(uid, None)
        if t is None:
            return
        job = self.jobs.get(t.job)
        if job is not None:
            job.delete_task(t)
            if not job.tasks and job.podgroup is None:
                del self.jobs[t.job]

    # --- scheduler decisions written back -------------------------------------------------------------
    def set_podgroup_phase(self, pg: PodGroup, phase: PodGroupPhase) -> None:
        """The phase the scheduler wrote, kept until the API server shows it (Kubernetes mode), with the epochs
        moved as an informer update of that phase would move them."""
        if pg.phase != phase and not (pg.phase == PodGroupPhase.Pending and phase == PodGroupPhase.Inqueue):
            self.freed()
        pg.phase = phase

    def set_task_status(self, task: TaskInfo, status: TaskStatus, node: str | None = None) -> None:
        job = self.jobs.get(task.job)
        self._moved((task.status, task.node_name), status, task.node_name if node is None else node)
        if node is not None:
            task.node_name = node
        if job is not None:
            job.version += 1
            job.update_task_status(task, status)
        else:
            task.status = status

    # --- snapshot ------------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Private copies for one session.  Jobs without a PodGroup or with an unknown queue are left out
        (with the reason in ``skipped_jobs``), as Volcano's snapshot does; their pods still use nodes."""
        queues = dict(self.queues)
        if DEFAULT_QUEUE not in queues:  # Volcano always has the default queue (its controller creates it)
            queues[DEFAULT_QUEUE] = QueueInfo(name=DEFAULT_QUEUE)
        # every node, whatever its conditions: Volcano's NodeInfo.setNodeState (api/node_info.go) marks every
        # node Ready and leaves a NotReady kubelet to the node.kubernetes.io/not-ready taint
        specs = list(self.nodes.values())
        arrays = NodeArrays(self.res, specs)
        jobs: dict[str, JobInfo] = {}
        skipped: dict[str, str] = {}
        skipped_pods: dict[str, str] = {}
        placed: list[TaskInfo] = []
        for uid, job in self.jobs.items():
            if job.podgroup is None:
                group = uid.split("/", 1)[1]
                skipped[uid] = (f"PodGroup {uid} does not exist "
                               f"(named by pod annotation {GROUP_NAME_ANNOTATION}={group})")
                placed.extend(t for t in job.tasks.values() if t.node_name and t.status not in _OFF_NODE)
                skipped_pods.update((t.uid, skipped[uid]) for t in job.tasks_in(TaskStatus.Pending))
                continue
            if job.queue not in queues:
                skipped[uid] = f"queue {job.queue!r} of PodGroup {uid} does not exist"
                placed.extend(t for t in job.tasks.values() if t.node_name and t.status not in _OFF_NODE)
                skipped_pods.update((t.uid, skipped[uid]) for t in job.tasks_in(TaskStatus.Pending))
                continue
            prev = self._clones.get(uid) if self.reuse_clones else None
            if prev is not None and prev[0] is job and prev[1].reuse(job):
                c = prev[1]
                self.reused += 1
            else:
                c = job.clone()
            jobs[uid] = c
            placed.extend(t for t in c.tasks.values() if t.node_name and t.status not in _OFF_NODE)
        placed.extend(t for t in self.other_tasks.values() if t.status not in _OFF_NODE)
        if self.reuse_clones:
            self._clones = {uid: (self.jobs[uid], c) for uid, c in jobs.items()}
        pos = arrays.pos
        arrays.add_tasks([(pos[t.node_name], t) for t in placed if t.node_name in pos])
        if self.memo is not None and len(self.memo.enqueue) + len(self.memo.allocate) > 2 * len(jobs) + 64:
            self.memo.prune(jobs)
        return Snapshot(
            res=self.res, nodes=arrays, jobs=jobs, queues=queues, priority_classes=dict(self.priority_classes),
            default_priority=self.default_priority, pdbs=list(self.pdbs.values()), quotas=list(self.quotas.values()),
            skipped_jobs=skipped, skipped_pods=skipped_pods, now=self.now, topology=self.topology(specs),
            memo=self.memo, free_epoch=self.free_epoch, use_epoch=self.use_epoch,
        )

    def warn_problems(self) -> None:
        for p in self.problems:
            print(f"pyvolcano: skipped: {p}", file=sys.stderr)


def _consumes(old: PodGroup, new: PodGroup) -> bool:
    """A PodGroup change that gives no room back: re-sent unchanged, or admitted (Pending -> Inqueue), with the
    same spec (see ``framework/memo.py``)."""
    same = (old.min_member == new.min_member and old.queue == new.queue and old.min_task_member == new.min_task_member
            and old.priority_class == new.priority_class and _same_vec(old.min_resources, new.min_resources))
    return same and (old.phase == new.phase
                     or (old.phase == PodGroupPhase.Pending and new.phase == PodGroupPhase.Inqueue))


def _same_vec(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _rank(order: dict[str, int], obj: dict[str, Any]) -> int:
    """Load order of an object's kind; a kind that is not a string (``kind: []``) sorts last and is reported
    by ``upsert``."""
    kind = obj.get("kind")
    return order.get(kind, 9) if isinstance(kind, str) else 9


def empty_vector(res: ResourceIndex) -> np.ndarray:
    return res.zeros()
