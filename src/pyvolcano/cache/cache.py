"""SchedulerCache: the cluster as the scheduler knows it, fed by manifests (cycle), the simulator or informers.

It keeps TaskInfo/JobInfo/NodeSpec/QueueInfo objects up to date object by object (``upsert``/``delete``), and
``snapshot()`` hands a session private copies of what it may change (jobs and tasks) plus node arrays.
A bad object is reported in ``problems`` and skipped; the rest of the cluster is still scheduled.

The node amounts (idle, used, releasing, pipelined) are running totals kept by the pod changes themselves
(``_on_node``/``_off_node``), so a snapshot copies a few arrays instead of re-accounting every placed pod; with
``reuse_clones`` the per-node task maps of the last snapshot are carried too, and only the nodes that a pod
change, a new job clone or the last session touched are rebuilt (docs/architecture.md, "Snapshots that carry
the nodes").
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from pyvolcano.api import convert, models
from pyvolcano.api.gpufrag import TaskMix
from pyvolcano.api.hypernode import HyperNode, Topology, parse_hypernode
from pyvolcano.api.job_info import JobInfo, PodGroup, TaskInfo
from pyvolcano.api.node_info import NodeArrays, NodeSpec, NodeStatic
from pyvolcano.api.numatopology import NumaInfo, parse_numatopology
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
from pyvolcano.errors import ManifestError
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.deltas import Lender, SettledView
from pyvolcano.framework.incremental.records import Record
from pyvolcano.framework.incremental.state import CarriedValues, IncrementalState, LeftAlone, SnapshotCarry

#: statuses that hold nothing on a node; a set: membership is cheap, IntFlag "&" runs Python code (the snapshot
#: tests every task)
_OFF_NODE = frozenset((TaskStatus.Pending, TaskStatus.Succeeded, TaskStatus.Failed))
#: statuses in which a pod holds its node's resources for good; moving between them gives nothing back
_HOLDING = frozenset((TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running))
#: one-node room changes kept before the log starts again (``SchedulerCache._room``)
_ROOM_LOG = 1 << 16
KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "PodDisruptionBudget", "ResourceQuota",
         "Namespace", "HyperNode", "Numatopology")


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
    #: Numatopology objects by node name (``api/numatopology.py``; read by the numa-aware plugin)
    numatopo: dict[str, NumaInfo] = field(default_factory=dict)
    skipped_jobs: dict[str, str] = field(default_factory=dict)
    #: the pending pods of the skipped jobs -> the job's reason (they get a FailedScheduling event)
    skipped_pods: dict[str, str] = field(default_factory=dict)
    now: float = 0.0
    #: ``now`` is the cluster's clock (the simulator's time, even 0 at its start); False: ``now`` is unset and
    #: plugins that read the time use the wall clock (``session_clock``)
    has_clock: bool = False
    #: node usage from a metrics source (Kubernetes mode, ``kube/node_metrics.py``): node name -> (cpu %,
    #: memory %, metrics time); None: no source (``plugins/_usage.py`` reads the snapshot's annotations)
    node_metrics: Mapping[str, tuple[float, float, float]] | None = None
    #: what plugins keep from one session to the next of this cluster whatever the memo, under typed
    #: ``CarryKey`` slots (the cache's one object, shared by its snapshots, never read by the cache): what Volcano
    #: keeps in plugin package variables, e.g. tdm's ``lastEvictAt``
    plugin_memory: CarriedValues = field(default_factory=CarriedValues)
    #: every pod of the cache by namespace/name, finished ones too: the cache's own map, read-only and live (not
    #: a copy; numa-aware asks whether a pod it placed still exists, as Volcano's ``DeletePod`` tells its cache)
    pods: Mapping[str, TaskInfo] = field(default_factory=dict)
    #: the HyperNode tree over ``nodes`` (the virtual cluster top alone when there are no HyperNodes)
    topology: Topology | None = None
    #: the jobs of ``jobs`` with a pod that has pod (anti-)affinity or topology spread constraints
    #: (``TaskInfo.uses_pod_constraints``), kept by the cache; None: not known, every job is looked at
    constrained_jobs: set[str] | None = None
    #: what the incremental layer carries into this snapshot (``framework/incremental/state.py``): its state, the
    #: cache's epochs, the settled, parked and blocked jobs; None: every job is examined every session
    #: (``--full-sessions``, a cache without ``memo``)
    carry: SnapshotCarry | None = None
    #: the workload's typical tasks (``api/gpufrag.py``), set by whoever knows the workload (the simulator, from
    #: its trace); None: a plugin that needs one learns it from the snapshot's tasks (the ``fgd`` plugin)
    task_mix: TaskMix | None = None


class SchedulerCache:
    """Cluster state between sessions.  ``scheduler_name`` selects the pods this scheduler places."""

    def __init__(self, scheduler_name: str = DEFAULT_SCHEDULER, res: ResourceIndex | None = None, *,
                 reuse_clones: bool = False, memo: bool = False) -> None:
        self.scheduler_name = scheduler_name
        #: the incremental layer's state between sessions (``framework/incremental/``: the blocked-job memo, the
        #: jobs the last session left alone, carried values), kept without looking inside: only for a caller whose
        #: every change goes through ``upsert``/``delete``/``set_task_status`` (the simulator; the Kubernetes
        #: scheduler with ``incremental``)
        self.incremental: IncrementalState | None = IncrementalState() if memo else None
        #: moves on every change that can give room back or change a rule's input other than by consuming it
        #: (see ``framework/incremental/memo.py``); ``use_epoch`` on every change of node usage at all
        self.free_epoch = 0
        self.use_epoch = 0
        #: ``free_epoch`` but for the changes of a PodGroup's phase alone and those that give room back on one node
        #: only: what allocate's memo is keyed on
        self.alloc_epoch = 0
        #: the node of each such one-node change, in order (``_room``; "" for none); ``room_seq`` counts them all
        self.room_nodes: list[str] = []
        self.room_base = 0
        #: hand a job's previous clone to the next snapshot when neither the job nor that clone has changed
        #: (``JobInfo.reuse``): most jobs of a busy cluster are untouched between two cycles.  Only for a caller
        #: that is done with a session's jobs before it takes the next snapshot (the simulator, and the Kubernetes
        #: scheduler, whose background binds and status writes get plain values, not session clones).
        self.reuse_clones = reuse_clones
        self.reused = 0  # clones handed on (tests and benchmarks check that reuse happens)
        #: False: every snapshot re-accounts every placed pod onto fresh node arrays (``rebuilt_nodes``), the
        #: reference the running totals and carried task maps are tested against (tests/sim/test_snapshot.py)
        self.incremental_nodes = True
        self._clones: dict[str, tuple[JobInfo, JobInfo]] = {}
        #: the last snapshot, while it lives, holds ``_last_jobs``: a carried job map is then copied, else moved
        #: in place (``framework/incremental/deltas.py``)
        self._jobs_lender = Lender()
        #: snapshots taken so far (``SnapshotCarry.seq``)
        self._snap_seq = 0
        #: jobs whose cache ``JobInfo`` changed (version, PodGroup phase), appeared or went since the last snapshot;
        #: with the last snapshot's job map and queue names, for a snapshot that carries its job map (``snapshot``)
        self._changed_jobs: set[str] = set()
        self._last_jobs: dict[str, JobInfo] | None = None
        #: each job's position in ``_last_jobs`` (increasing in its order), to list a few of them in that order
        #: without a walk over all (``SnapshotCarry.pos``); made on a walk, moved by the jobs a carried map adds
        self._pos: dict[str, int] = {}
        self._pos_next = 0
        self._last_queues: frozenset[str] = frozenset()
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
        #: Numatopology objects by name (their node's name)
        self.numatopo: dict[str, NumaInfo] = {}
        self.raw: dict[tuple[str, str], dict[str, Any]] = {}
        #: HyperNodes by name (``topology.volcano.sh/v1alpha1``); the tree is built per snapshot over its nodes
        self.hypernodes: dict[str, HyperNode] = {}
        #: bumped by every Node or HyperNode change, so a snapshot rebuilds the topology only when it changed
        self._topo_version = 0
        self._topo_memo: tuple[int, list[str], Topology] | None = None
        #: the pods that hold something on each node (a status other than Pending, Succeeded, Failed), by node
        #: name and in the order they came; a node's task map in a snapshot follows this order
        self._node_tasks: dict[str, dict[str, TaskInfo]] = {}
        #: per node name, how many of ``_node_tasks``' pods have ``TaskInfo.k8s_extra`` and how many
        #: ``TaskInfo.uses_pod_constraints`` (usually none): a snapshot lists those nodes
        #: (``NodeArrays.extra_at`` / ``constrained_at``), so that nodeorder and the pod-affinity state read those
        #: pods at session open without a walk over every placed pod
        self._extra_on: dict[str, int] = {}
        self._constrained_on: dict[str, int] = {}
        #: per pod of this scheduler, the job queue its task was made for (``convert.make_task``'s template key
        #: names it): a trusted re-sent pod keeps its task's conversion only while the queue is the same
        self._made_for: dict[str, str] = {}
        #: the pods of this scheduler that are Pending and the PodGroups whose phase is Pending (``has_pending``)
        self._pending_tasks: set[str] = set()
        self._pending_groups: set[str] = set()
        #: per job, how many of its pods have ``TaskInfo.uses_pod_constraints`` (``Snapshot.constrained_jobs``)
        self._constrained_jobs: dict[str, int] = {}
        #: the cache's own running node amounts over the current node set (no tasks in its maps); None: rebuilt
        #: at the next snapshot (a Node changed, a resource name appeared)
        self._ledger: NodeArrays | None = None
        #: node names whose pods changed since the last snapshot
        self._dirty_nodes: set[str] = set()
        #: the last snapshot's node arrays, whose task maps the next snapshot carries (``reuse_clones`` only)
        self._last_nodes: NodeArrays | None = None
        self.problems: list[str] = []
        self.now = 0.0
        #: ``now`` is set by whoever drives the cache (the simulator): ``Snapshot.has_clock``
        self.has_clock = False
        #: ``Snapshot.node_metrics``, set by the Kubernetes scheduler before each snapshot
        self.node_metrics: Mapping[str, tuple[float, float, float]] | None = None
        #: ``Snapshot.plugin_memory`` of every snapshot of this cache
        self.plugin_memory = CarriedValues()
        #: ``Snapshot.task_mix``, set by the simulator when it knows the workload
        self.task_mix: TaskMix | None = None

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

    def upsert(self, obj: dict[str, Any], *, trusted: bool = False) -> bool:
        """Add or replace one object; a bad one is recorded in ``problems`` and skipped (returns False).

        ``trusted``: the object was built by code from inputs that already passed the validated boundary (the
        simulator's job controller builds Pods and PodGroups from Jobs whose pod templates and PodGroup were
        validated when the Job was admitted, ``sim/engine.py: Simulator.job_problem``; its binder, kubelet and
        status writer change objects already in the cache), so ``api/models.py: validate`` is not run again.
        A trusted writer that hands the very object the cache already holds (the same dict, changed in place)
        promises that it changed only what a binder, a kubelet, an evictor or a status writer changes: a pod's
        ``spec.nodeName``, ``status`` and ``metadata.deletionTimestamp``, a PodGroup's ``status``, a Node's
        conditions and taints; the pod's requests, priority and template, the PodGroup's spec and the object's
        resource names are then kept from the first conversion instead of being parsed again.  Everything read
        from outside (manifests, trace rows, API objects in Kubernetes mode) comes without ``trusted``."""
        kind = obj.get("kind")
        if not isinstance(kind, str):
            self._problem(f"{models.ref(obj)}: field kind: must be a string, got {kind!r}")
            return False
        if kind not in KINDS:
            return False
        key = self._key(obj) if trusted else None
        known = key is not None and self.raw.get(key) is obj  # (a trusted object's metadata is a mapping)
        try:
            if not trusted:
                models.validate(obj)  # the typed boundary: shapes and numbers are trusted after this
            convert.meta(obj)
            if not known and kind in ("Node", "Pod", "PodGroup", "Queue") and not self.res.covers(
                    convert.resource_names([obj])):
                self._grow(convert.resource_names([obj]))
            if kind == "Pod":
                self._upsert_pod(obj, known)
            elif kind == "PodGroup":
                self._upsert_podgroup(obj, known)
            else:
                self.freed()
                getattr(self, f"_upsert_{kind.lower()}")(obj)
        except ManifestError as exc:
            self._problem(str(exc))
            return False
        self.raw[key if key is not None else self._key(obj)] = obj  # the object's name cannot have changed
        return True

    def has_pending(self) -> bool:
        """Some pod of this scheduler is Pending or some PodGroup's phase is Pending: a session has something to
        do.  Kept by the changes themselves (``_pending_tasks``, ``_pending_groups``), so asking costs nothing
        whatever the number of jobs (the simulator asks after every event)."""
        return bool(self._pending_tasks) or bool(self._pending_groups)

    def _file_group(self, uid: str, pg: PodGroup) -> None:
        if pg.phase == PodGroupPhase.Pending:
            self._pending_groups.add(uid)
        else:
            self._pending_groups.discard(uid)

    def freed(self, spec: bool = True) -> None:
        """Something that may give room back (or change a rule's input) changed: blocked jobs are re-examined.
        ``spec=False``: only a PodGroup's phase moved, which gives back enqueue's reservations (proportion's and
        overcommit's inqueue) but no node room and no queue allocation: ``alloc_epoch`` stays
        (``framework/incremental/memo.py``)."""
        self.free_epoch += 1
        self.use_epoch += 1
        if spec:
            self.alloc_epoch += 1

    def _room(self, node: str) -> None:
        """Room came back on one node only (a pod of ours left a holding status there, or went), or nothing on
        any node changed (``node`` empty: a PodGroup or a finished pod went): enqueue's answers may change
        (``free_epoch``), and allocate's for a one-pod job that found no node only if the pod now fits on a node
        named in ``room_nodes`` since (``framework/incremental/memo.py``); ``alloc_epoch`` stays."""
        self.freed(spec=False)
        if len(self.room_nodes) >= _ROOM_LOG:  # a long-running scheduler: start the log again, every memo stale
            self.room_base += len(self.room_nodes)
            self.room_nodes = []
            self.alloc_epoch += 1
        self.room_nodes.append(node)

    @property
    def room_seq(self) -> int:
        return self.room_base + len(self.room_nodes)

    def delete(self, obj: dict[str, Any]) -> None:
        kind, key = self._key(obj)
        if kind == "Pod" and key in self.tasks and key not in self.other_tasks:
            t = self.tasks[key]  # ours: room back on its node if it held any there, else on none
            self._room(t.node_name if t.node_name and t.status not in _OFF_NODE else "")
        elif kind == "PodGroup":  # its pods, if any, still hold their nodes: no node gets room back
            self._room("")
        elif kind in KINDS:
            self.freed()
        self.raw.pop((kind, key), None)
        if kind in ("Node", "HyperNode"):
            self._topo_version += 1
        if kind == "HyperNode":
            self.hypernodes.pop(key, None)
        elif kind == "Node":
            self.nodes.pop(key, None)
            self._nodes_changed()
        elif kind == "Pod":
            self._remove_task(key)
        elif kind == "PodGroup":
            self.podgroups.pop(key, None)
            self._pending_groups.discard(key)
            job = self.jobs.get(key)
            if job is not None:
                self._changed_jobs.add(key)
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
        elif kind == "Numatopology":
            self.numatopo.pop(key, None)

    def _grow(self, names: Iterable[str]) -> None:
        """A new resource name appeared: widen every vector by rebuilding from the raw objects."""
        self.res = ResourceIndex.of(set(self.res.names) | set(names))
        self.freed()
        raw = list(self.raw.values())
        statuses = {uid: (t.status, t.node_name) for uid, t in self.tasks.items()}
        for store in (self.nodes, self.jobs, self.tasks, self.other_tasks, self.podgroups, self.queues, self._made_for,
                      self._pending_tasks, self._pending_groups,
                      self._node_tasks, self._extra_on, self._constrained_on, self._constrained_jobs):
            store.clear()
        self._nodes_changed()
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
        old = self.nodes.get(spec.name)
        self.nodes[spec.name] = spec
        self._topo_version += 1
        led = self._ledger
        if old is not None and led is not None and spec.name in led.pos:
            # an update keeps the node's place in the dict and the arrays: patch that row (a cluster's Nodes are
            # updated all the time by their kubelets' status reports)
            led.replace_spec(led.pos[spec.name], spec)
        else:
            self._nodes_changed()

    def _nodes_changed(self) -> None:
        """A Node (or the resource index) changed: the next snapshot rebuilds the node arrays from the pods."""
        self._ledger = None
        self._last_nodes = None

    def _upsert_hypernode(self, obj: dict[str, Any]) -> None:
        """A HyperNode through its validated boundary (``api/hypernode.py: parse_hypernode``)."""
        hn = parse_hypernode(obj)
        self.hypernodes[hn.name] = hn
        self._topo_version += 1

    def topology(self, specs: list[NodeSpec], names: list[str] | None = None) -> Topology:
        """The HyperNode tree over these nodes (Volcano's ``HyperNodesInfo`` as the snapshot copies it), rebuilt
        only when a Node or HyperNode changed since the last snapshot.  ``names``: the nodes' names, if known
        (a snapshot passes its arrays' list, so an unchanged node set is recognised without a walk)."""
        names = names if names is not None else [s.name for s in specs]
        memo = self._topo_memo
        if memo is not None and memo[0] == self._topo_version and (memo[1] is names or memo[1] == names):
            return memo[2]
        topo = Topology.build(list(self.hypernodes.values()), names, [s.labels for s in specs])
        self._topo_memo = (self._topo_version, names, topo)
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

    def _upsert_numatopology(self, obj: dict[str, Any]) -> None:
        """A Numatopology through its validated boundary (``api/numatopology.py: parse_numatopology``)."""
        info = parse_numatopology(obj)
        self.numatopo[info.name] = info

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

    def _upsert_podgroup(self, obj: dict[str, Any], known: bool = False) -> None:
        """``known``: ``obj`` is the object the cache converted last time, re-sent by a trusted writer that changed
        only its status (``upsert``): the spec's conversion is kept, the phase and conditions are read again."""
        last = self.podgroups.get(f"{meta_ns(obj)}/{obj['metadata']['name']}") if known else None
        if last is not None and last.manifest is obj:
            status = obj.get("status") or {}
            pg = last.clone()
            pg.phase = PodGroupPhase(status.get("phase") or "Pending")
            pg.conditions = list(status.get("conditions") or [])
        else:
            pg = convert.podgroup(obj, self.res)
            last = None
        uid = f"{pg.namespace}/{pg.name}"
        old = self.podgroups.get(uid)
        if old is not None:
            # a status written on the last conversion (``known``) keeps its very spec: the same without comparing
            same = (old is last) or _same_spec(old, pg)
            if not (same and (old.phase == pg.phase
                              or (old.phase == PodGroupPhase.Pending and pg.phase == PodGroupPhase.Inqueue))):
                self.freed(spec=not same or pg.phase == PodGroupPhase.Pending)
        self.podgroups[uid] = pg
        self._file_group(uid, pg)
        job = self.jobs.get(uid)
        if job is None:
            job = self.jobs[uid] = JobInfo(uid, pg, self.res.size)
        self._set_podgroup(job, pg)

    def _set_podgroup(self, job: JobInfo, pg: PodGroup) -> None:
        self._changed_jobs.add(job.uid)
        job.version += 1
        job.podgroup = pg
        job.name, job.namespace, job.queue = pg.name, pg.namespace, pg.queue
        job.min_available = pg.min_member
        job.task_min_available = dict(pg.min_task_member)
        job.creation = pg.creation
        job.priority = self._class_priority(pg.priority_class)
        job.preemptable = str(pg.annotations.get("volcano.sh/preemptable",
                                                 pg.labels.get("volcano.sh/preemptable", "false"))).lower() == "true"

    def _upsert_pod(self, pod: dict[str, Any], known: bool = False) -> None:
        """``known``: ``pod`` is the object the cache converted last time, re-sent by a trusted writer that changed
        only its node, phase, status or deletion stamp (``upsert``): the task is re-made from the last one
        (``_restated``) instead of parsing the pod again, when that one was made for the job's current queue."""
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        uid = f"{ns}/{md['name']}"
        spec = pod["spec"]
        before = self.tasks.get(uid)
        prev = (before if before is not None else self.other_tasks.get(uid)) if known else None
        if prev is not None and prev.pod is not pod:
            prev = None
        if prev is None:
            convert.normalise_pod_spec(spec)
            req, init = convert.pod_requests(pod)
            prio = task_priority(pod, spec)
        was = (before.status, before.node_name) if before is not None else None
        self._remove_task(uid, quiet=True)
        ours = (spec.get("schedulerName") or "default-scheduler") == self.scheduler_name
        if not ours:
            self.freed()
            t = _restated(prev, pod) if prev is not None else convert.make_task(pod, self.res, "", prio, req, init, "")
            if t.node_name:
                self.other_tasks[uid] = t
                self._on_node(t)
            return
        annotations = md.get("annotations") or {}
        group = annotations.get(GROUP_NAME_ANNOTATION)
        if group:
            job_uid = f"{ns}/{group}"
        else:  # Volcano's podgroup controller makes a one-pod PodGroup for a volcano pod without one
            job_uid = f"{ns}/podgroup-{md.get('uid') or md['name']}"
            if job_uid not in self.podgroups:
                if prev is not None:
                    req, _ = convert.pod_requests(pod)
                pg = PodGroup(name=job_uid.split("/", 1)[1], namespace=ns, min_member=1,
                              queue=annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE,
                              priority_class=spec.get("priorityClassName") or "",
                              min_resources=self.res.vector(req) * self.res.fair_mask,
                              creation=convert.parse_time(md.get("creationTimestamp")), synthetic=True)
                self.podgroups[job_uid] = pg
                self._file_group(job_uid, pg)
                self.jobs[job_uid] = JobInfo(job_uid, None, self.res.size)
                self._set_podgroup(self.jobs[job_uid], pg)
        job = self.jobs.get(job_uid)
        if job is None:
            job = self.jobs[job_uid] = JobInfo(job_uid, None, self.res.size)
        if prev is not None and self._made_for.get(uid) == job.queue:
            task = _restated(prev, pod)
        else:
            if prev is not None:  # made for another queue (its template key names the queue): convert again
                convert.normalise_pod_spec(spec)
                req, init = convert.pod_requests(pod)
                prio = task_priority(pod, spec)
            task = convert.make_task(pod, self.res, job_uid, prio, req, init, job.queue)
            self._made_for[uid] = job.queue
        self._changed_jobs.add(job_uid)
        job.add_task(task)
        if task.uses_pod_constraints:
            self._constrained_jobs[job_uid] = self._constrained_jobs.get(job_uid, 0) + 1
        self.tasks[uid] = task
        if task.status == TaskStatus.Pending:
            self._pending_tasks.add(uid)
        self._on_node(task)
        self._moved(was, task.status, task.node_name)

    def _moved(self, was: tuple[TaskStatus, str] | None, status: TaskStatus, node: str) -> None:
        """Epochs for a pod that went from ``was`` (None: new) to ``status`` on ``node``: a new pending pod or a
        bind only consumes; leaving a holding status (finished, failed, Releasing, Pending again) or moving
        nodes may give room back."""
        if was is None:
            if status != TaskStatus.Pending:
                self.use_epoch += 1
                if status not in _HOLDING:
                    self.freed()
            return
        old, old_node = was
        if old == status and old_node == node:
            return
        self.use_epoch += 1
        if old == TaskStatus.Pending and status in _HOLDING:
            return
        if old in _HOLDING and status in _HOLDING and old_node == node:
            return
        if old in _HOLDING and old_node:  # left its node, or moved: room back there only
            self._room(old_node)
        else:
            self.freed()

    def _remove_task(self, uid: str, quiet: bool = False) -> None:
        """The task out of the cache; the epochs are the caller's (``delete``).  ``quiet``: it is made again at
        once (an update), so what it was made for stays."""
        other = self.other_tasks.pop(uid, None)
        if other is not None:
            self._off_node(other)
        t = self.tasks.pop(uid, None)
        if t is None:
            return
        self._pending_tasks.discard(uid)
        if not quiet:
            self._made_for.pop(uid, None)
        self._off_node(t)
        if t.uses_pod_constraints:
            n = self._constrained_jobs.get(t.job, 0) - 1
            if n > 0:
                self._constrained_jobs[t.job] = n
            else:
                self._constrained_jobs.pop(t.job, None)
        job = self.jobs.get(t.job)
        if job is not None:
            self._changed_jobs.add(t.job)
            job.delete_task(t)
            if not job.tasks and job.podgroup is None:
                del self.jobs[t.job]

    # --- scheduler decisions written back -------------------------------------------------------------
    def set_podgroup_phase(self, pg: PodGroup, phase: PodGroupPhase) -> None:
        """The phase the scheduler wrote, kept until the API server shows it (Kubernetes mode), with the epochs
        moved as an informer update of that phase would move them."""
        if pg.phase != phase and not (pg.phase == PodGroupPhase.Pending and phase == PodGroupPhase.Inqueue):
            self.freed(spec=phase == PodGroupPhase.Pending)
        pg.phase = phase
        self._changed_jobs.add(f"{pg.namespace}/{pg.name}")
        if self.podgroups.get(f"{pg.namespace}/{pg.name}") is pg:
            self._file_group(f"{pg.namespace}/{pg.name}", pg)

    def set_task_status(self, task: TaskInfo, status: TaskStatus, node: str | None = None) -> None:
        job = self.jobs.get(task.job)
        self._moved((task.status, task.node_name), status, task.node_name if node is None else node)
        self._off_node(task)
        if node is not None:
            task.node_name = node
        if job is not None:
            self._changed_jobs.add(task.job)
            job.version += 1
            job.update_task_status(task, status)
        else:
            task.status = status
        if self.tasks.get(task.uid) is task:
            if status == TaskStatus.Pending:
                self._pending_tasks.add(task.uid)
            else:
                self._pending_tasks.discard(task.uid)
        self._on_node(task)

    # --- node amounts kept by the pod changes ---------------------------------------------------------
    def _on_node(self, t: TaskInfo) -> None:
        """``t`` (now in the cache) holds something on its node: count it there."""
        if t.node_name and t.status not in _OFF_NODE:
            on = self._node_tasks.setdefault(t.node_name, {})
            old = on.get(t.uid)
            if old is not None and (old.k8s_extra is not None or old.uses_pod_constraints):
                _count(self, old, t.node_name, -1)
            if t.k8s_extra is not None or t.uses_pod_constraints:
                _count(self, t, t.node_name, 1)
            on[t.uid] = t
            self._dirty_nodes.add(t.node_name)
            led = self._ledger
            if led is not None:
                i = led.pos.get(t.node_name)
                if i is not None:
                    led.account(i, t, 1.0)

    def _off_node(self, t: TaskInfo) -> None:
        """``t`` is about to change or leave the cache: take back what it counted on its node."""
        if t.node_name and t.status not in _OFF_NODE:
            on = self._node_tasks.get(t.node_name)
            if on is None:
                return
            gone = on.pop(t.uid, None)
            if gone is None:
                return
            if gone.k8s_extra is not None or gone.uses_pod_constraints:
                _count(self, gone, t.node_name, -1)
            if not on:
                del self._node_tasks[t.node_name]
            self._dirty_nodes.add(t.node_name)
            led = self._ledger
            if led is not None:
                i = led.pos.get(t.node_name)
                if i is not None:
                    led.account(i, t, -1.0)

    def _node_ledger(self) -> NodeArrays:
        """The running node amounts, rebuilt from every counted pod after a Node change."""
        if self._ledger is None:
            # every node, whatever its conditions: Volcano's NodeInfo.setNodeState (api/node_info.go) marks every
            # node Ready and leaves a NotReady kubelet to the node.kubernetes.io/not-ready taint
            specs = list(self.nodes.values())
            led = NodeArrays(self.res, specs, NodeStatic(self.res, specs))
            pos = led.pos
            led.add_tasks([(pos[name], t) for name, on in self._node_tasks.items() if name in pos
                           for t in on.values()], index=False)
            self._ledger = led
            self._last_nodes = None
        return self._ledger

    def rebuilt_nodes(self, jobs: dict[str, JobInfo]) -> NodeArrays:
        """The node arrays of a snapshot whose jobs are ``jobs``, re-accounted from every placed pod as they were
        before the running totals (the reference the incremental snapshot is tested against): the jobs' tasks
        (``jobs``' clones, the cache's own for jobs left out) and other schedulers' pods, each node's task map
        in the order the pods came to it."""
        specs = list(self.nodes.values())
        arrays = NodeArrays(self.res, specs)
        pos = arrays.pos
        placed: list[TaskInfo] = []
        for uid, job in self.jobs.items():
            src = jobs.get(uid, job)
            placed.extend(t for t in src.tasks.values() if t.node_name and t.status not in _OFF_NODE)
        placed.extend(t for t in self.other_tasks.values() if t.status not in _OFF_NODE)
        arrays.add_tasks([(pos[t.node_name], t) for t in placed if t.node_name in pos], index=False)
        arrays.tasks = [self._node_map(name, jobs) for name in arrays.names]
        arrays.extra_at = arrays.constrained_at = None  # not kept: readers walk every map, as before the counts
        return arrays

    def _node_map(self, name: str, jobs: dict[str, JobInfo]) -> dict[str, TaskInfo]:
        """A snapshot's task map of one node: the session's clone of each counted pod (the cache's own pod for a
        job the snapshot leaves out and for other schedulers' pods)."""
        out: dict[str, TaskInfo] = {}
        for uid, t in (self._node_tasks.get(name) or {}).items():
            c = jobs.get(t.job)
            out[uid] = c.tasks[uid] if c is not None else t
        return out

    # --- snapshot ------------------------------------------------------------------------------------
    def _carried_jobs(self, left: SettledView[Any], not_left: Iterable[str], changed: set[str],
                      queues: dict[str, QueueInfo]) -> \
            tuple[dict[str, JobInfo], list[str], list[str], list[str]] | None:
        """What a snapshot that carries the last one's job map must do again: (that map, the jobs in it to hand
        over again, the new jobs in cache order, the jobs gone), or None when the map cannot be carried and every
        job is looked at.  ``left``: the jobs the last session left alone (``Handover.left`` and
        ``parked_left``); every other job of the last map (``not_left``, as that session listed them:
        ``Handover.not_left``), and every job that ``changed`` in the cache since, is done again.

        The carried map must list the jobs in the cache's order, as a walk over ``self.jobs`` would: a job that
        went and came back, a job left out (no PodGroup, unknown queue) then or now, or other queues, and it is not
        carried."""
        last_jobs = self._last_jobs
        if last_jobs is None or self._last_queues != queues.keys():
            return None
        cur = self.jobs
        new = [uid for uid in changed if uid in cur and uid not in last_jobs]
        gone = [uid for uid in changed if uid not in cur and uid in last_jobs]
        if new:
            tail = list(itertools.islice(reversed(cur), len(new)))
            if set(tail) != set(new):  # not all at the end: a job came back, or a left-out one joined
                return None
            tail.reverse()
            new = tail
        if deltas.CHECK:
            listed = {uid for uid in not_left if uid in last_jobs}
            assert listed == {uid for uid in last_jobs if uid not in left}, "Handover.not_left"
        redo = [uid for uid in {*not_left, *changed} if uid in cur and uid in last_jobs]
        prev = self._clones
        for uid in redo:
            job = cur[uid]
            if prev[uid][0] is not job or job.podgroup is None or job.queue not in queues:
                return None  # made again (its place in the cache moved), or to be left out
        for uid in new:
            job = cur[uid]
            if job.podgroup is None or job.queue not in queues:
                return None
        return last_jobs, redo, new, gone

    def snapshot(self) -> Snapshot:
        """Private copies for one session.  Jobs without a PodGroup or with an unknown queue are left out
        (with the reason in ``skipped_jobs``), as Volcano's snapshot does; their pods still use nodes.

        The node amounts are copies of the cache's running totals.  With ``reuse_clones`` the last snapshot's
        per-node task maps are carried, and a node's map is rebuilt only if a pod on it changed in the cache, a
        job with pods on it got a new clone (or was left out, or came back), or the last session placed,
        removed or evicted a pod there (its ``NodeArrays.log``).

        With the incremental layer (``memo=True``) the jobs the last session left alone are handed over as the
        very clones they are (``IncrementalState.take_handover``) and the snapshot's ``carry`` says which jobs
        are settled; the cache keeps the layer's state without looking inside."""
        queues = dict(self.queues)
        if DEFAULT_QUEUE not in queues:  # Volcano always has the default queue (its controller creates it)
            queues[DEFAULT_QUEUE] = QueueInfo(name=DEFAULT_QUEUE)
        ledger = self._node_ledger()
        last = self._last_nodes if self.reuse_clones else None
        dirty = self._dirty_nodes
        self._dirty_nodes = set()
        state = self.incremental
        left = state.take_handover(self._snap_seq, self.reuse_clones) if state is not None else LeftAlone()
        self._snap_seq += 1
        changed = self._changed_jobs
        self._changed_jobs = set()
        if left.parked and changed and state is not None:
            state.refusals_stand(changed, left.parked, left.parked_epoch)
        got = _Jobs(self, queues, last is not None, dirty)
        # (close lists ``not_left`` whenever it leaves jobs alone)
        view: SettledView[Record] = SettledView(left.settled, left.parked)
        carried = self._carried_jobs(view, left.not_left, changed, queues) if view and left.not_left is not None \
            else None
        if carried is not None:
            got.carried(carried, left, changed)
        else:
            got.walk(view, left)
        jobs = got.jobs
        blocked: list[str] = []
        if left.blocked or got.found_blocked:
            # the blocked jobs handed over, then those found blocked, each once, if still settled: when all are in
            # the settled-only map (the usual case), by dict operations alone rather than a lookup per job
            keep = dict.fromkeys(left.blocked)
            keep.update(dict.fromkeys(got.found_blocked))
            blocked = list(keep) if keep.keys() <= got.settled_only.keys() else \
                [uid for uid in keep if uid in got.settled]
            if deltas.CHECK:
                assert blocked == [uid for uid in dict.fromkeys((*left.blocked, *got.found_blocked))
                                   if uid in got.settled], "SnapshotCarry.blocked"
        self._last_jobs = jobs if self.reuse_clones and not got.skipped else None
        self._last_queues = frozenset(queues)
        self._clones = got.clones
        arrays = self._snapshot_nodes(jobs, ledger, last, dirty)
        if state is not None:
            state.prune(jobs)
        carry = None if state is None else SnapshotCarry(
            state, free_epoch=self.free_epoch, use_epoch=self.use_epoch, alloc_epoch=self.alloc_epoch,
            room=(self.room_base, self.room_nodes, self.room_seq), seq=self._snap_seq, settled=got.settled,
            settled_reg=state.settled_reg if self.reuse_clones else None, parked=got.parked,
            settled_only=got.settled_only, blocked=blocked, parked_epoch=left.parked_epoch, unsettled=got.unsettled,
            pos=self._pos if self._last_jobs is not None else None, redone=got.redone,
            changed=changed if got.redone is not None else None)
        snap = Snapshot(
            res=self.res, nodes=arrays, jobs=jobs, queues=queues, priority_classes=dict(self.priority_classes),
            default_priority=self.default_priority, pdbs=list(self.pdbs.values()), quotas=list(self.quotas.values()),
            numatopo=dict(self.numatopo),
            skipped_jobs=got.skipped, skipped_pods=got.skipped_pods, now=self.now, has_clock=self.has_clock,
            node_metrics=self.node_metrics, plugin_memory=self.plugin_memory, task_mix=self.task_mix,
            pods=self.tasks,
            topology=self.topology(arrays.specs, arrays.names),
            constrained_jobs={uid for uid in self._constrained_jobs if uid in jobs}, carry=carry)
        self._jobs_lender.lend(snap)
        return snap

    def _snapshot_nodes(self, jobs: dict[str, JobInfo], ledger: NodeArrays, last: NodeArrays | None,
                        dirty: set[str]) -> NodeArrays:
        """The snapshot's node arrays: the ledger's amounts, each node's task map carried from the last snapshot
        unless a pod on it changed (``dirty``) or the last session touched it (its ``NodeArrays.log``)."""
        if not self.incremental_nodes:
            return self.rebuilt_nodes(jobs)
        arrays = ledger.copy_amounts()
        if last is None or last.names is not ledger.names:
            arrays.tasks = [self._node_map(name, jobs) for name in arrays.names]
        else:
            tasks = list(last.tasks)
            touched = set(last.log)
            pos = arrays.pos
            touched.update(pos[n] for n in dirty if n in pos)
            names = arrays.names
            for i in touched:
                tasks[i] = self._node_map(names[i], jobs)
            arrays.tasks = tasks
            arrays.rebuilt = (last.tasks, touched)
        pos = arrays.pos
        arrays.extra_at = {pos[n] for n in self._extra_on if n in pos}
        arrays.constrained_at = {pos[n] for n in self._constrained_on if n in pos}
        if self.reuse_clones:
            self._last_nodes = arrays
        return arrays

    def warn_problems(self) -> None:
        for p in self.problems:
            print(f"pyvolcano: skipped: {p}", file=sys.stderr)


class _Jobs:
    """The job map of one snapshot, being built: each job's clone (reused or made afresh) or its reason for being
    left out, and which clones are settled (handed over by the last session, or found by their settled record)."""

    def __init__(self, cache: SchedulerCache, queues: dict[str, QueueInfo], nodes_carried: bool,
                 dirty: set[str]) -> None:
        self.cache, self.queues, self.nodes_carried, self.dirty = cache, queues, nodes_carried, dirty
        self.jobs: dict[str, JobInfo] = {}
        self.skipped: dict[str, str] = {}
        self.skipped_pods: dict[str, str] = {}
        self.prev_clones = cache._clones
        self.clones: dict[str, tuple[JobInfo, JobInfo]] = {}
        self.settled: MutableMapping[str, Record] = {}
        self.settled_only: dict[str, Record] = {}
        self.parked: dict[str, Record] = {}
        self.found_blocked: list[str] = []
        self.unsettled: list[JobInfo] = []
        self.redone: set[str] | None = None

    def one(self, uid: str, job: JobInfo) -> None:
        """``job`` into the snapshot: its clone reused or made afresh, or the job left out with its reason."""
        cache, queues = self.cache, self.queues
        if job.podgroup is None or job.queue not in queues:
            if job.podgroup is None:
                group = uid.split("/", 1)[1]
                self.skipped[uid] = (f"PodGroup {uid} does not exist "
                                     f"(named by pod annotation {GROUP_NAME_ANNOTATION}={group})")
            else:
                self.skipped[uid] = f"queue {job.queue!r} of PodGroup {uid} does not exist"
            self.skipped_pods.update((t.uid, self.skipped[uid]) for t in job.tasks_in(TaskStatus.Pending))
            if self.nodes_carried and uid in self.prev_clones:  # its nodes held the last session's clones
                self.dirty.update(t.node_name for t in job.tasks.values() if t.node_name)
            return
        reuse = cache.reuse_clones
        prev = self.prev_clones.get(uid) if reuse else None
        if prev is not None and prev[0] is job and prev[1].reuse(job):
            c = prev[1]
            cache.reused += 1
            state = cache.incremental
            rec = state.settled_record(job, c, reuse) if state is not None else None
            if rec is not None:  # settled in the last session it was in and unchanged since
                self.settled[uid] = rec
                if rec[1].pending:  # settled with pods pending: blocked
                    self.found_blocked.append(uid)
        else:
            c = job.clone()
            if self.nodes_carried:  # its pods' nodes hold the old clones (or the cache's own pods)
                self.dirty.update(t.node_name for t in job.tasks.values() if t.node_name)
        self.jobs[uid] = c
        if reuse:
            self.clones[uid] = (job, c)

    def carried(self, carried: tuple[dict[str, JobInfo], list[str], list[str], list[str]], left: LeftAlone,
                changed: set[str]) -> None:
        """The last snapshot's job map, with only the jobs that changed or that the last session did not leave
        alone done again, the new ones appended in cache order: in place (a dict keeps a key's position), unless
        the last snapshot is still alive (a caller kept it), and then in a copy."""
        cache = self.cache
        last_jobs, redo, new, gone = carried
        jobs = self.jobs = dict(last_jobs) if cache._jobs_lender.borrowed() else last_jobs
        clones = self.clones = self.prev_clones  # the cache's own: in place
        # from here the maps are half moved: if anything fails, the next snapshot starts afresh
        cache._last_jobs, cache._clones = None, {}
        for uid in gone:
            del jobs[uid]
            del clones[uid]
        # the left-alone jobs but those that changed since: the handed-over maps are this snapshot's now (the
        # session that made them is over), so the few that changed are taken out in place; the settled jobs are
        # the two maps seen as one (what ``one`` finds settled again goes into ``settled_only``)
        settled_only, parked = self.settled_only, self.parked = left.settled, left.parked
        for uid in changed:
            settled_only.pop(uid, None)
            parked.pop(uid, None)
        self.settled = SettledView(settled_only, parked) if parked else settled_only
        cache.reused += len(self.settled)
        cur = cache.jobs
        for uid in redo:
            self.one(uid, cur[uid])
        for uid in new:
            self.one(uid, cur[uid])
        redone = self.redone = {*redo, *new}
        # the jobs not settled are among those done again (the others are left alone, settled): in map order
        pos = cache._pos
        for uid in gone:
            del pos[uid]
        for uid in new:
            pos[uid] = cache._pos_next
            cache._pos_next += 1
        settled = self.settled
        self.unsettled = [jobs[uid] for uid in sorted((uid for uid in redone if uid not in settled),
                                                      key=pos.__getitem__)]

    def walk(self, view: SettledView[Record], left: LeftAlone) -> None:
        """Every job of the cache in order: a left-alone one whose cache job is unchanged keeps its clone as it
        is; the others through ``one``."""
        cache, queues, jobs, settled = self.cache, self.queues, self.jobs, self.settled
        prev_clones, clones = self.prev_clones, self.clones
        for uid, job in cache.jobs.items():
            if view:
                rec = view.get(uid)
                if rec is not None:
                    kept = prev_clones[uid]
                    c = kept[1]
                    cpg, jpg = c.podgroup, job.podgroup
                    if (kept[0] is job and c.version == job.version and cpg is not None and jpg is not None
                            and cpg.phase == jpg.phase and job.queue in queues):
                        jobs[uid] = c
                        clones[uid] = kept
                        settled[uid] = rec
                        cache.reused += 1
                        continue
            self.one(uid, job)
        self.unsettled = [c for uid, c in jobs.items() if uid not in settled]
        cache._pos = {uid: i for i, uid in enumerate(jobs)}
        cache._pos_next = len(jobs)
        parked = left.parked
        self.parked = {uid: rec for uid, rec in parked.items() if uid in settled} if parked else {}
        if self.parked:  # the two maps seen as one, as on a carried map
            self.settled_only = {uid: rec for uid, rec in settled.items() if uid not in self.parked}
            self.settled = SettledView(self.settled_only, self.parked)
        else:
            self.settled_only = cast(dict[str, Record], settled)  # a plain map on a walk


def meta_ns(obj: dict[str, Any]) -> str:
    """The namespace of a namespaced object as the cache keys it (``default`` when unset)."""
    return obj["metadata"].get("namespace") or "default"


def _restated(prev: TaskInfo, pod: dict[str, Any]) -> TaskInfo:
    """What ``convert.make_task`` makes of ``pod`` when only its node, phase, status or deletion stamp changed
    since ``prev`` was made of it (the same object, changed in place by a trusted writer): ``prev``'s conversion
    (requests, priority, template key, role, ...) with the status and node read again, as a new task (session
    clones and the nodes' task maps keep the old one)."""
    t = prev.clone()
    t.status = convert.task_status(pod)
    t.node_name = pod["spec"].get("nodeName") or ""
    t.last_status = None
    return t


def _count(cache: SchedulerCache, t: TaskInfo, node: str, sign: int) -> None:
    """Move the per-node counts of special pods (``SchedulerCache._extra_on`` / ``_constrained_on``) as ``t``
    comes to (``sign`` 1) or leaves (-1) ``node``'s ``_node_tasks``."""
    for special, counts in ((t.k8s_extra is not None, cache._extra_on),
                            (t.uses_pod_constraints, cache._constrained_on)):
        if special:
            n = counts.get(node, 0) + sign
            if n:
                counts[node] = n
            else:
                del counts[node]


def _same_spec(old: PodGroup, new: PodGroup) -> bool:
    """The same queue, minimums and PriorityClass: a change of this PodGroup is then of its phase (or status)."""
    return (old.min_member == new.min_member and old.queue == new.queue and old.min_task_member == new.min_task_member
            and old.priority_class == new.priority_class and _same_vec(old.min_resources, new.min_resources))


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
