"""TaskInfo (one pod) and JobInfo (one PodGroup and its pods), with Volcano's status functions."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.hypernode import NetworkTopology
from pyvolcano.api.resource import is_empty
from pyvolcano.api.types import ALLOCATED, READY, VALID, PodGroupPhase, TaskStatus

_PIPELINED_OK = READY | TaskStatus.Pipelined
_STARVING_OK = READY | TaskStatus.Pipelined


@cache
def _members(statuses: TaskStatus) -> tuple[TaskStatus, ...]:
    """The single statuses in a set (IntFlag arithmetic is slow; counting is on every job comparison)."""
    return tuple(s for s in TaskStatus if s & statuses)


_ALLOCATED_SET = frozenset(_members(ALLOCATED))


class TaskInfo:
    """One pod as the scheduler sees it.

    ``resreq``/``init_resreq`` are read-only vectors shared between clones; ``template_key`` groups pods
    that any template-safe predicate or score treats alike, so their node masks and scores are cached once.
    """

    __slots__ = (
        "best_effort",
        "creation",
        "init_resreq",
        "job",
        "k8s_extra",
        "last_status",
        "name",
        "namespace",
        "node_name",
        "pod",
        "preemptable",
        "priority",
        "resreq",
        "sch_gated",
        "status",
        "task_spec",
        "template_key",
        "uid",
    )

    def __init__(
        self, *, uid: str, name: str, namespace: str, job: str, resreq: np.ndarray, init_resreq: np.ndarray,
        status: TaskStatus = TaskStatus.Pending, node_name: str = "", priority: int = 0,
        preemptable: bool = True, task_spec: str = "", pod: dict[str, Any] | None = None,
        template_key: Any = None, creation: float = 0.0, sch_gated: bool = False,
        k8s_extra: tuple[float, float, float, float, float] | None = None,
    ) -> None:
        self.uid = uid
        self.name = name
        self.namespace = namespace
        self.job = job
        self.resreq = resreq
        self.init_resreq = init_resreq
        self.best_effort = is_empty(init_resreq)
        self.status = status
        self.node_name = node_name
        self.priority = priority
        self.preemptable = preemptable
        self.task_spec = task_spec
        self.pod = pod if pod is not None else {}
        self.template_key = template_key if template_key is not None else uid
        self.creation = creation
        self.sch_gated = sch_gated
        #: how Kubernetes' scores see the pod's requests, relative to ``resreq`` (``api/k8s_requests.py``); None
        #: when the same
        self.k8s_extra = k8s_extra
        self.last_status: TaskStatus | None = None

    def clone(self) -> TaskInfo:
        """Every slot copied by name: each session clones every task of the cluster, and a getattr/setattr
        loop costs several times more."""
        t = TaskInfo.__new__(TaskInfo)
        t.best_effort, t.creation, t.init_resreq, t.job = self.best_effort, self.creation, self.init_resreq, self.job
        t.last_status, t.name, t.namespace, t.node_name = self.last_status, self.name, self.namespace, self.node_name
        t.pod, t.preemptable, t.priority, t.resreq = self.pod, self.preemptable, self.priority, self.resreq
        t.sch_gated, t.status, t.task_spec, t.k8s_extra = self.sch_gated, self.status, self.task_spec, self.k8s_extra
        t.template_key, t.uid = self.template_key, self.uid
        return t

    @property
    def uses_pod_constraints(self) -> bool:
        """A quick look: does the pod have pod (anti-)affinity terms or topology spread constraints?  (Another
        pod's placement can then change whether and where it fits.)"""
        spec = (self.pod or {}).get("spec") or {}
        aff = spec.get("affinity") or {}
        return bool(spec.get("topologySpreadConstraints") or aff.get("podAffinity") or aff.get("podAntiAffinity"))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"Task({self.key} {self.status.name} node={self.node_name or '-'})"


@dataclass
class PodGroup:
    """The parts of a ``scheduling.volcano.sh/v1beta1`` PodGroup that scheduling reads and writes."""

    name: str
    namespace: str
    min_member: int = 1
    min_task_member: dict[str, int] = field(default_factory=dict)
    queue: str = "default"
    priority_class: str = ""
    min_resources: np.ndarray | None = None
    phase: PodGroupPhase = PodGroupPhase.Pending
    conditions: list[dict[str, Any]] = field(default_factory=list)
    creation: float = 0.0
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    #: ``spec.networkTopology`` (None: no topology constraint)
    network_topology: NetworkTopology | None = None
    synthetic: bool = False  # made for a volcano pod without a PodGroup, as Volcano's podgroup controller does
    manifest: dict[str, Any] | None = None

    def clone(self) -> PodGroup:
        """A shallow copy, for every job of every session: a session changes only ``phase``; the containers
        (conditions, minTaskMember, annotations...) are read-only there and shared (new conditions go to
        ``Session.pg_conditions``)."""
        p = PodGroup.__new__(PodGroup)
        p.__dict__.update(self.__dict__)
        return p


class JobInfo:
    """A PodGroup with its tasks, indexed by status so Volcano's counting functions are O(1)."""

    def __init__(self, uid: str, podgroup: PodGroup | None, res_size: int) -> None:
        self.uid = uid
        self.podgroup = podgroup
        self.name = podgroup.name if podgroup else uid.split("/", 1)[-1]
        self.namespace = podgroup.namespace if podgroup else uid.split("/", 1)[0]
        self.queue = podgroup.queue if podgroup else "default"
        self.priority = 0
        self.min_available = podgroup.min_member if podgroup else 1
        self.task_min_available: dict[str, int] = dict(podgroup.min_task_member) if podgroup else {}
        self.creation = podgroup.creation if podgroup else 0.0
        self.preemptable = False
        self.waiting_time: float | None = None
        self.tasks: dict[str, TaskInfo] = {}
        self.index: dict[TaskStatus, dict[str, TaskInfo]] = defaultdict(dict)
        self.allocated = np.zeros(res_size)
        self.total_request = np.zeros(res_size)
        self.nodes_fit_errors: dict[str, FitErrors] = {}
        #: task roles (``volcano.sh/task-spec``) with a task that found no node in this session (Volcano derives
        #: them from NodesFitErrors, ``FitFailedRoles``; kept apart here because pyvolcano also records
        #: queue-allocatable refusals as fit errors, which Volcano does not count as a failed role)
        self.fit_failed_roles: set[str] = set()
        self.job_fit_errors = ""
        self.enqueue_reason = ""
        #: bumped by every change to the tasks or their statuses (and by the cache when it changes the job), so a
        #: snapshot can tell an unchanged job, and a session's clone that the session left alone
        self.version = 0
        #: the ``version`` of the job this one was cloned from (-1: not a clone), for ``reuse``
        self.cloned_from = -1

    # --- membership -----------------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.version += 1
        self.tasks[task.uid] = task
        self.index[task.status][task.uid] = task
        self.total_request += task.resreq
        if task.status & ALLOCATED:
            self.allocated += task.resreq

    def delete_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        self.version += 1
        self.index[t.status].pop(t.uid, None)
        self.total_request -= t.resreq
        if t.status & ALLOCATED:
            self.allocated -= t.resreq

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task between status buckets, keeping ``allocated`` exact."""
        old = task.status
        if old == status:
            return
        self.version += 1
        self.index[old].pop(task.uid, None)
        if old in _ALLOCATED_SET:  # set lookups: IntFlag "&" runs Python code, and this is per task placed
            self.allocated -= task.resreq
        task.status = status
        self.index[status][task.uid] = task
        if status in _ALLOCATED_SET:
            self.allocated += task.resreq

    def clone(self) -> JobInfo:
        j = JobInfo.__new__(JobInfo)
        j.__dict__.update(self.__dict__)
        j.podgroup = self.podgroup.clone() if self.podgroup else None
        j.task_min_available = dict(self.task_min_available)
        j.tasks = {}
        j.index = defaultdict(dict)
        for uid, t in self.tasks.items():
            c = t.clone()
            j.tasks[uid] = c
            j.index[c.status][uid] = c
        j.allocated = self.allocated.copy()
        j.total_request = self.total_request.copy()
        j.nodes_fit_errors = {}
        j.fit_failed_roles = set()
        j.cloned_from = self.version
        return j

    def reuse(self, src: JobInfo) -> bool:
        """Turn this clone of ``src`` back into what ``src.clone()`` would give, cheaply, if neither has changed
        since it was made (same version on both sides): False, and nothing done, otherwise.

        Every change to the tasks, their statuses or the job's spec moves a version, so with equal versions the
        tasks, their index, the totals and the spec fields are still ``src``'s; what a session changes on a job
        without moving its version is put back: the enqueue reason, the fit errors, the failed roles and the
        PodGroup's phase (the cache also writes that phase without a new version: ``set_podgroup_phase``).
        ``tests/sim/test_snapshot.py`` checks, after every snapshot of contended simulations, that a reused
        clone equals a fresh one field by field, so a new field a session writes cannot slip through."""
        if not (self.version == src.version == self.cloned_from):
            return False
        self.enqueue_reason = src.enqueue_reason
        self.job_fit_errors = src.job_fit_errors
        self.nodes_fit_errors = {}
        self.fit_failed_roles = set()
        pg, spg = self.podgroup, src.podgroup
        if pg is not None and spg is not None:
            pg.phase = spg.phase
        else:
            self.podgroup = spg.clone() if spg is not None else None
        return True

    # --- Volcano's status functions (pkg/scheduler/api/job_info.go) ----------------------------------------------
    def count(self, statuses: TaskStatus) -> int:
        idx = self.index
        n = 0
        for s in _members(statuses):
            d = idx.get(s)
            if d:
                n += len(d)
        return n

    def tasks_in(self, statuses: TaskStatus) -> list[TaskInfo]:
        idx = self.index
        return [t for s in _members(statuses) if s in idx for t in idx[s].values()]

    def ready_task_num(self) -> int:
        return self.count(READY)

    def waiting_task_num(self) -> int:
        return len(self.index.get(TaskStatus.Pipelined, ()))

    def pending_best_effort_task_num(self) -> int:
        pending = self.index.get(TaskStatus.Pending)
        return sum(1 for t in pending.values() if t.best_effort) if pending else 0

    def valid_task_num(self) -> int:
        return self.count(VALID)

    def role_counts(self, statuses: TaskStatus, pending_best_effort: bool) -> dict[str, int]:
        """Tasks per role (task spec) in ``statuses``, plus pending BestEffort ones if asked (Volcano's
        ``getJobAllocatedRoles`` with ``READY`` and ``True``)."""
        counts: dict[str, int] = defaultdict(int)
        for s, bucket in self.index.items():
            if s & statuses:
                for t in bucket.values():
                    counts[t.task_spec] += 1
            elif pending_best_effort and s == TaskStatus.Pending:
                for t in bucket.values():
                    if t.best_effort:
                        counts[t.task_spec] += 1
        return counts

    # --- allocation continuation (Volcano api/job_info.go) ------------------------------------------------
    def record_fit_failure(self, task: TaskInfo) -> None:
        """The task found no node (or a prePredicate refused it): its role counts as failed for the session."""
        self.fit_failed_roles.add(task.task_spec)

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """Volcano's ``TaskHasFitErrors``: a task of a role that already failed is skipped without trying nodes,
        since its siblings would fail the same way.  Tasks without a role are always tried."""
        return bool(task.task_spec) and task.task_spec in self.fit_failed_roles

    def need_continue_allocating(self) -> bool:
        """Volcano's ``NeedContinueAllocating``: after a task found no node, can the gang still be met by the
        job's other tasks?

        No when minMember is at least the number of tasks (every task is needed; Volcano's default sub-job
        check ``subJob.MinAvailable >= len(subJob.Tasks)``).  When the per-role minimums add up to more than
        minMember (so they do not bind), yes only if ready tasks plus pending tasks of roles that have not
        failed still reach minMember.  Otherwise no only if a failed role has a minimum it does not yet hold
        (allocated or finished tasks, plus its pending BestEffort ones); a job without per-role minimums
        always goes on."""
        if self.min_available >= len(self.tasks):
            return False
        failed = self.fit_failed_roles
        if self.min_available < sum(self.task_min_available.values()):
            pending = self.index.get(TaskStatus.Pending) or {}
            left = sum(1 for t in pending.values() if t.task_spec not in failed)
            return self.ready_task_num() + left >= self.min_available
        held: dict[str, int] | None = None
        for role in failed:
            need = self.task_min_available.get(role, 0)
            if need:
                if held is None:
                    held = self.role_counts(READY, True)
                if held.get(role, 0) < need:
                    return False
        return True

    def _check_per_spec(self, statuses: TaskStatus, pending_best_effort: bool) -> bool:
        """Every task spec (pod annotation volcano.sh/task-spec) has at least its minTaskMember tasks in
        ``statuses`` (plus pending BestEffort ones if asked).  Like Volcano, the check is skipped when the
        per-spec minimums add up to more than minMember, since such a group could never be judged by them."""
        if not self.task_min_available or self.min_available < sum(self.task_min_available.values()):
            return True
        counts = self.role_counts(statuses, pending_best_effort)
        return all(counts[spec] >= n for spec, n in self.task_min_available.items())

    def check_task_valid(self) -> bool:
        return self._check_per_spec(VALID, False)

    def check_task_ready(self) -> bool:
        return self._check_per_spec(READY, True)

    def check_task_pipelined(self) -> bool:
        return self._check_per_spec(_PIPELINED_OK, True)

    def check_task_starving(self) -> bool:
        """True when some task spec holds fewer than its minimum (Volcano's CheckTaskStarving: note the
        polarity is the opposite of the other three checks)."""
        return not self._check_per_spec(_STARVING_OK, False)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
                >= self.min_available)

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.podgroup is not None and self.podgroup.phase == PodGroupPhase.Pending

    def min_resources(self, res_size: int) -> np.ndarray:
        pg = self.podgroup
        if pg is None or pg.min_resources is None:
            return np.zeros(res_size)
        return pg.min_resources

    def has_min_resources(self) -> bool:
        return self.podgroup is not None and self.podgroup.min_resources is not None

    def elastic_resources(self) -> np.ndarray:
        """Allocated beyond minResources (Volcano's GetElasticResources): without minResources the minimum is
        empty (``GetMinResources``), so all of the allocation is elastic."""
        floor = self.podgroup.min_resources if self.podgroup is not None else None
        if floor is None:
            return np.maximum(self.allocated, 0.0)
        return np.maximum(self.allocated - floor, 0.0)

    def fit_error(self) -> str:
        """Volcano's JobInfo.FitError(): the job-level summary of why it is not ready."""
        by_status: dict[str, int] = defaultdict(int)
        for s, bucket in self.index.items():
            if bucket:
                by_status[s.name or str(s)] += len(bucket)
        parts = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        msg = f"pod group is not ready, {parts}, {self.min_available} minAvailable"
        reasons: dict[str, int] = defaultdict(int)
        for fe in self.nodes_fit_errors.values():
            reasons[str(fe)] += 1
        if reasons:
            msg += "; " + "; ".join(r for r, _ in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return msg

    def first_fit_error(self) -> str:
        """The most common per-task fit error (what ``cycle`` shows as the reason)."""
        reasons: dict[str, int] = defaultdict(int)
        for fe in self.nodes_fit_errors.values():
            reasons[str(fe)] += 1
        if not reasons:
            return ""
        return max(sorted(reasons.items()), key=lambda kv: kv[1])[0]

    def __repr__(self) -> str:
        return f"Job({self.uid} q={self.queue} min={self.min_available} tasks={len(self.tasks)})"
