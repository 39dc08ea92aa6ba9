"""task-topology (``pkg/scheduler/plugins/task-topology``): place a job's tasks (roles) together or apart, by buckets.

A PodGroup names its roles (the pods' ``volcano.sh/task-spec``) in three annotations (``util.go``):
``volcano.sh/task-topology-affinity`` and ``volcano.sh/task-topology-anti-affinity`` (groups separated by ``;``,
roles within a group by ``,``: ``ps,worker;chief``; a group of one role is self-(anti-)affinity, a group of several
is affinity between them) and ``volcano.sh/task-topology-task-order`` (``ps,worker``: earlier roles first).  A role
the job has no pod of, or named twice in one group, makes Volcano ignore all three annotations of that job
(``topology.go: affinityCheck``); pyvolcano does the same and reports it among the session's warnings.

**Buckets** (``manager.go: ConstructBucket``), built when the session opens for each job with pending pods and
annotations: the pods whose ``volcano.sh/task-spec`` *annotation* names a role with (anti-)affinity are taken
in order -- pods on nodes first (by node name), then by the task order, then self-anti-affinity before
inter-affinity before self-affinity before inter-anti-affinity roles, then by pod name.  A pod on a node joins
the bucket of its node; a pending pod joins the bucket where its affinities minus anti-affinities with the roles
already there count most (on a tie, the bucket with the smaller pending request: 1 cpu, 1 GPU and 1 Mi of memory
count alike), or a new bucket when the best count is negative or there is none.

**Task order** (``TaskOrderFn``): pods in a bucket before pods in none; within a job, bigger buckets (by pending
pods) first, then older buckets, and within a bucket by the task order and the affinity kinds above.

**Node score** (``NodeOrderFn``, ``calcBucketScore``): 0 when the pod does not fit the node's idle plus releasing
resources or is in no bucket; else the bucket's pods already placed on the node (before and during the session),
minus the pods placed on it in this session whose roles the pod's role is anti-affine to, plus the bucket's
pending pods, minus one for each other pending pod that has to be left out (in bucket order) until the rest fit
the node.  Times ``task-topology.weight`` (default 1), times 100 over the largest bucket.

Volcano's bucket state follows the session's allocations (its allocate event handler) and is not rolled back
when a statement is discarded; pyvolcano follows that.  Where Volcano takes bucket pods out "randomly (by map)"
pyvolcano takes them in bucket order (they differ only when the bucket's pods request different amounts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.resource import EPS
from pyvolcano.api.types import TASK_SPEC_ANNOTATION, TaskStatus
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.state import warn

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
WEIGHT = "task-topology.weight"
MAX_NODE_SCORE = 100.0
#: ``manager.go: affinityPriority``: the larger, the earlier
SELF_ANTI, INTER_AFF, SELF_AFF, INTER_ANTI = 4, 3, 2, 1


class TopologyError(ValueError):
    """An annotation names a role the job does not have, or one twice in a group."""


def role_of(task: TaskInfo) -> str:
    """``util.go: getTaskName``: the pod's ``volcano.sh/task-spec`` annotation only (the label does not count)."""
    ann = (task.pod.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(TASK_SPEC_ANNOTATION) or "")


def check_groups(job: JobInfo, groups: list[list[str]]) -> None:
    """``affinityCheck``: every non-empty role exists in the job (its pods' task roles), none twice in a group."""
    roles = {t.task_spec for t in job.tasks.values()}
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(f"task {name} does not exist in job {job.uid}")
            if name in seen:
                raise TopologyError(f"task {name} is duplicate in job {job.uid}")
            seen.add(name)


@dataclass
class Topology:
    affinity: list[list[str]] = field(default_factory=list)
    anti_affinity: list[list[str]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)


def read_topology(job: JobInfo) -> Topology | None:
    """``readTopologyFromPgAnnotations``: None without any of the annotations; ``TopologyError`` (its message
    naming the annotation) when one of them is invalid."""
    ann = job.podgroup.annotations if job.podgroup is not None else {}
    if not any(k in ann for k in (AFFINITY, ANTI_AFFINITY, TASK_ORDER)):
        return None
    topo = Topology()
    for key, attr in ((AFFINITY, "affinity"), (ANTI_AFFINITY, "anti_affinity")):
        if key in ann:
            groups = [part.split(",") for part in str(ann[key]).split(";")]
            try:
                check_groups(job, groups)
            except TopologyError as exc:
                raise TopologyError(f"metadata.annotations.{key}: {exc}") from None
            setattr(topo, attr, groups)
    if TASK_ORDER in ann:
        topo.order = str(ann[TASK_ORDER]).split(",")
        try:
            check_groups(job, [topo.order])
        except TopologyError as exc:
            raise TopologyError(f"metadata.annotations.{TASK_ORDER}: {exc}") from None
    return topo


def req_score(req: np.ndarray) -> float:
    """``Bucket.CalcResReq``: millicores + MiB of memory + every other resource (``pods`` and milli-GPUs too)."""
    return float(req[0] + req[1] / 1024 / 1024 + req[2:].sum())


class Bucket:
    def __init__(self, index: int, n_nodes: int, n_res: int) -> None:
        self.index = index
        #: pending pods (uid -> task), in the order they joined
        self.tasks: dict[str, TaskInfo] = {}
        self.roles: dict[str, int] = {}
        self.req_score = 0.0
        self.request = np.zeros(n_res)
        self.bound = 0
        #: the bucket's pods placed on each node
        self.on_node = np.zeros(n_nodes)

    def add(self, role: str, task: TaskInfo, node: int | None) -> None:
        """``Bucket.AddTask``; ``node``: the position of the task's node (None for a node not in the snapshot)."""
        self.roles[role] = self.roles.get(role, 0) + 1
        if task.node_name:
            if node is not None:
                self.on_node[node] += 1
            self.bound += 1
            return
        self.tasks[task.uid] = task
        self.req_score += req_score(task.resreq)
        self.request = self.request + task.resreq

    def task_bound(self, task: TaskInfo, node: int) -> None:
        """``Bucket.TaskBound`` (called whatever the task's earlier state, as in Volcano)."""
        self.on_node[node] += 1
        self.bound += 1
        self.tasks.pop(task.uid, None)
        self.req_score -= req_score(task.resreq)
        self.request = self.request - task.resreq


class JobManager:
    """``manager.go: JobManager``: one job's roles, relations and buckets."""

    def __init__(self, topo: Topology, n_nodes: int, n_res: int) -> None:
        self.n_nodes, self.n_res = n_nodes, n_res
        self.buckets: list[Bucket] = []
        self.bucket_of: dict[str, int] = {}
        self.role_of: dict[str, str] = {}
        self.priority: dict[str, int] = {}
        self.order: dict[str, int] = {}
        self.inter_aff: dict[str, set[str]] = {}
        self.self_aff: set[str] = set()
        self.inter_anti: dict[str, set[str]] = {}
        self.self_anti: set[str] = set()
        self.max_size = 0
        #: role -> pods of that role placed on each node in this session (``nodeTaskSet``)
        self.placed: dict[str, np.ndarray] = {}
        for groups, self_set, inter, one, many in ((topo.affinity, self.self_aff, self.inter_aff, SELF_AFF, INTER_AFF),
                                                   (topo.anti_affinity, self.self_anti, self.inter_anti, SELF_ANTI,
                                                    INTER_ANTI)):
            for group in groups:
                if len(group) == 1:
                    self_set.add(group[0])
                    self._mark(group[0], one)
                    continue
                for i, src in enumerate(group):
                    for dst in group[:i]:
                        inter.setdefault(src, set()).add(dst)
                        inter.setdefault(dst, set()).add(src)
                    self._mark(src, many)
        for i, name in enumerate(topo.order):
            self.order[name] = len(topo.order) - i

    def _mark(self, role: str, priority: int) -> None:
        if priority > self.priority.get(role, 0):
            self.priority[role] = priority

    def affinity(self, role: str, roles: dict[str, int], only_anti: bool) -> int:
        """``checkTaskSetAffinity``: +count for each affine role present, -count for each anti-affine one."""
        if not role:
            return 0
        total = 0
        for other, count in roles.items():
            same = other == role
            if not only_anti and (role in self.self_aff if same else other in self.inter_aff.get(role, ())):
                total += count
            if role in self.self_anti if same else other in self.inter_anti.get(role, ()):
                total -= count
        return total

    def affinity_order(self, left: TaskInfo, right: TaskInfo) -> int:
        """``taskAffinityOrder``: 1 when ``left``'s role comes first by task order, then by affinity kind."""
        lr, rr = self.role_of.get(left.uid, ""), self.role_of.get(right.uid, "")
        if lr == rr:
            return 0
        lo, ro = self.order.get(lr, 0), self.order.get(rr, 0)
        if lo != ro:
            return 1 if lo > ro else -1
        lp, rp = self.priority.get(lr, 0), self.priority.get(rr, 0)
        if lp != rp:
            return 1 if lp > rp else -1
        return 0

    def build(self, job: JobInfo, node_pos: dict[str, int]) -> None:
        """``ConstructBucket``: the pods with a role that has (anti-)affinity, in Volcano's order, into buckets."""
        todo: list[TaskInfo] = []
        for t in job.tasks.values():
            role = role_of(t)
            if role and role in self.priority:
                self.role_of[t.uid] = role
                todo.append(t)

        def key(t: TaskInfo) -> tuple[Any, ...]:
            if t.node_name:
                return (0, t.node_name)
            role = self.role_of[t.uid]
            return (1, -self.order.get(role, 0), -self.priority.get(role, 0), t.name)
        todo.sort(key=key)
        by_node: dict[str, Bucket] = {}
        for t in todo:
            role = self.role_of[t.uid]
            chosen: Bucket | None = None
            best = -(1 << 31)
            if t.node_name:
                best = 0
                chosen = by_node.get(t.node_name)
            else:
                for b in self.buckets:
                    aff = self.affinity(role, b.roles, False)
                    if aff > best:
                        best, chosen = aff, b
                    elif aff == best and chosen is not None and b.req_score < chosen.req_score:
                        chosen = b
            if best < 0 or chosen is None:
                chosen = Bucket(len(self.buckets), self.n_nodes, self.n_res)
                self.buckets.append(chosen)
                if t.node_name:
                    by_node[t.node_name] = chosen
            self.bucket_of[t.uid] = chosen.index
            chosen.add(role, t, node_pos.get(t.node_name))
            self.max_size = max(self.max_size, len(chosen.tasks) + chosen.bound)

    def bucket(self, task: TaskInfo) -> Bucket | None:
        i = self.bucket_of.get(task.uid)
        return None if i is None else self.buckets[i]

    def task_bound(self, task: TaskInfo, node: int) -> None:
        """``JobManager.TaskBound``, from the session's allocate events."""
        role = role_of(task)
        if role:
            got = self.placed.get(role)
            if got is None:
                got = self.placed[role] = np.zeros(self.n_nodes)
            got[node] += 1
        b = self.bucket(task)
        if b is not None:
            b.task_bound(task, node)


@register_plugin
class TaskTopology(Plugin):
    name = "task-topology"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arguments.get_int(WEIGHT, 1)
        nodes = ssn.nodes
        n, r = len(nodes.names), ssn.res.size
        managers: dict[str, JobManager] = {}
        for uid, job in ssn.jobs.items():
            if not job.index.get(TaskStatus.Pending):
                continue
            try:
                topo = read_topology(job)
            except TopologyError as exc:
                warn(ssn.state, f"PodGroup {uid}: {exc}; task-topology ignores the job's annotations")
                continue
            if topo is None:
                continue
            m = JobManager(topo, n, r)
            m.build(job, nodes.pos)
            managers[uid] = m
        if not managers:
            return  # every callback would answer 0 (no order, no score) and the events would find no manager

        def task_order(left: TaskInfo, right: TaskInfo) -> int:
            lm, rm = managers.get(left.job), managers.get(right.job)
            if lm is None or rm is None:
                return 0
            lb, rb = lm.bucket(left), rm.bucket(right)
            if (lb is None) != (rb is None):
                return -1 if lb is not None else 1
            if left.job != right.job or lb is None or rb is None:
                return 0
            if len(lb.tasks) != len(rb.tasks):
                return -1 if len(lb.tasks) > len(rb.tasks) else 1
            if lb.index == rb.index:
                return -lm.affinity_order(left, right)
            return -1 if lb.index < rb.index else 1
        ssn.add_task_order_fn(self.name, task_order)

        def score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            m = managers.get(task.job)
            b = m.bucket(task) if m is not None else None
            if m is None or b is None:
                return np.zeros(len(idx))
            room = nodes.idle[idx] + nodes.releasing[idx]
            fits = ~(room < task.resreq).any(axis=1)
            s = b.on_node[idx].copy()
            role = role_of(task)
            if role:  # anti-affinity with the roles placed on the node in this session
                anti = ({role} if role in m.self_anti else set()) | m.inter_anti.get(role, set())
                for other in anti:
                    placed = m.placed.get(other)
                    if placed is not None:
                        s -= placed[idx]
            s += len(b.tasks)
            short = ~(b.request <= room + EPS).all(axis=1)  # LessEqual with Volcano's minResource tolerance
            if short.any():
                others = [t.resreq for u, t in b.tasks.items() if u != task.uid]
                rows = np.nonzero(short)[0]
                if others:
                    left = b.request - np.cumsum(np.array(others), axis=0)  # after taking out 1, 2, ... pods
                    ok = (left[None, :, :] <= room[rows][:, None, :] + EPS).all(axis=2)
                    taken = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, len(others))
                    s[rows] -= taken
            out = s * weight
            if m.max_size:
                out = out * MAX_NODE_SCORE / m.max_size
            return np.where(fits, out, 0.0)

        def score_one(task: TaskInfo, node: NodeInfo) -> float:
            return float(score(task, np.array([node.index]))[0])
        # reads the job's buckets, which this session's placements change, and the node's idle and releasing
        ssn.add_node_order(self.name, vector=score, scalar=score_one, template_safe=False)

        def allocated(task: TaskInfo) -> None:
            m = managers.get(task.job)
            if m is not None and task.node_name:
                m.task_bound(task, nodes.pos[task.node_name])
        ssn.add_event_handler(EventHandler(allocate=allocated))
