"""TaskInfo (one pod) and JobInfo (one PodGroup and its pods), with Volcano's status functions."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.hypernode import NetworkTopology
from pyvolcano.api.labels import selector_matches
from pyvolcano.api.resource import is_empty
from pyvolcano.api.types import ALLOCATED, READY, VALID, PodGroupPhase, TaskStatus

_PIPELINED_OK = READY | TaskStatus.Pipelined
_STARVING_OK = READY | TaskStatus.Pipelined


@cache
def _members(statuses: TaskStatus) -> tuple[TaskStatus, ...]:
    """The single statuses in a set (IntFlag arithmetic is slow; counting is on every job comparison)."""
    return tuple(s for s in TaskStatus if s & statuses)


_ALLOCATED_SET = frozenset(_members(ALLOCATED))


def _uses_pod_constraints(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    aff = spec.get("affinity") or {}
    return bool(spec.get("topologySpreadConstraints") or aff.get("podAffinity") or aff.get("podAntiAffinity"))


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
        "pod_annotations",
        "preemptable",
        "priority",
        "resreq",
        "sch_gated",
        "status",
        "task_spec",
        "template_key",
        "uid",
        "uses_pod_constraints",
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
        #: annotations a plugin adds for the binder to write with the pod's Binding (Volcano's
        #: ``TaskInfo.PodAnnotations``: deviceshare's chosen devices, ``MergePodAnnotations``); None: none
        self.pod_annotations: dict[str, str] | None = None
        #: does the pod have pod (anti-)affinity terms or topology spread constraints?  (Another pod's placement
        #: can then change whether and where it fits.)  Read once here: the pod-affinity state and the memo ask it
        #: of every pod of every session, and ``pod`` is never changed in place (an update makes a new task)
        self.uses_pod_constraints = _uses_pod_constraints(self.pod)

    def clone(self) -> TaskInfo:
        """Every slot copied by name: each session clones every task of the cluster, and a getattr/setattr
        loop costs several times more."""
        t = TaskInfo.__new__(TaskInfo)
        t.best_effort, t.creation, t.init_resreq, t.job = self.best_effort, self.creation, self.init_resreq, self.job
        t.last_status, t.name, t.namespace, t.node_name = self.last_status, self.name, self.namespace, self.node_name
        t.pod, t.preemptable, t.priority, t.resreq = self.pod, self.preemptable, self.priority, self.resreq
        t.sch_gated, t.status, t.task_spec, t.k8s_extra = self.sch_gated, self.status, self.task_spec, self.k8s_extra
        t.template_key, t.uid, t.uses_pod_constraints = self.template_key, self.uid, self.uses_pod_constraints
        t.pod_annotations = self.pod_annotations
        return t

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def nominated_node(self) -> str:
        """The pod's ``status.nominatedNodeName`` ("" when unset): the node a previous session pipelined it to
        after evicting for it (Volcano's ``cache.taskUnschedulable`` writes it; allocate tries that node first,
        preempt's ``taskEligibleToPreempt`` reads it).  Read from the pod object, which an update replaces."""
        st = self.pod.get("status")
        return (st.get("nominatedNodeName") or "") if st else ""

    def __repr__(self) -> str:
        return f"Task({self.key} {self.status.name} node={self.node_name or '-'})"


@dataclass(frozen=True)
class SubGroupPolicy:
    """One entry of a PodGroup's ``spec.subGroupPolicy`` (``scheduling.volcano.sh/v1beta1 SubGroupPolicySpec``):
    the pods its ``label_selector`` selects (None: every pod) are grouped by the values of their
    ``match_label_keys`` labels; each group is a sub-group (Volcano's ``SubJobInfo``) that needs ``size`` of its
    pods placed together (default 1), under its own ``network_topology``; the job needs ``min_sub_groups`` of
    them ready (default 0)."""

    name: str = ""
    size: int | None = None
    min_sub_groups: int | None = None
    label_selector: dict[str, Any] | None = None
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None


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
    #: ``spec.subGroupPolicy`` (empty: the job is one sub-group, Volcano's default sub-job)
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()
    synthetic: bool = False  # made for a volcano pod without a PodGroup, as Volcano's podgroup controller does
    manifest: dict[str, Any] | None = None

    def clone(self) -> PodGroup:
        """A shallow copy, for every job of every session: a session changes only ``phase``; the containers
        (conditions, minTaskMember, annotations...) are read-only there and shared (new conditions go to
        ``Session.pg_conditions``)."""
        p = PodGroup.__new__(PodGroup)
        p.__dict__.update(self.__dict__)
        return p


_READY_SET = frozenset(_members(READY))
_PIPELINED_SET = frozenset((TaskStatus.Pipelined,))
_PENDING_SET = frozenset((TaskStatus.Pending,))
_INT = re.compile(r"[+-]?[0-9]+")
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def pod_priority(pod: dict[str, Any]) -> int:
    """Volcano's ``PodPriority`` (actions/preempt/preempt.go): the pod's ``spec.priority``, 0 when unset."""
    p = (pod.get("spec") or {}).get("priority")
    return int(p) if p is not None else 0


def terminating_by_preemption(pod: dict[str, Any]) -> bool:
    """Volcano's ``podTerminatingByPreemption`` (preempt.go): the pod is being deleted and its first
    ``DisruptionTarget`` condition is True with reason ``PreemptionByScheduler`` (what Volcano's evictor,
    ``cache.go: defaultEvictor.Evict``, writes before deleting a victim)."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "DisruptionTarget":
            return str(c.get("status")) == "True" and c.get("reason") == PREEMPTION_BY_SCHEDULER
    return False


#: ``v1.PodReasonPreemptionByScheduler``: the DisruptionTarget reason of a pod a scheduler evicted to preempt
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def sub_job_id(job: str, policy: str, values: list[str]) -> str:
    """Volcano's ``getSubJobID``: ``<job>/<policy>-<values joined by ->``, the values part replaced by a hash
    of it (FNV-32a, spelled with ``rand.SafeEncodeString``'s alphabet) when longer than 128 characters."""
    key = "-".join(values)
    if len(key) > 128:
        key = "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in str(_fnv32a(key.encode())))
    return f"{job}/{policy}-{key}"


def match_values(policy: SubGroupPolicy, labels: dict[str, str]) -> list[str] | None:
    """Volcano's ``getSubJobMatchValues``: None when the pod is not selected (the label selector does not match,
    or a match key is missing or empty), else the values of the match keys in order ([] without keys, which
    Volcano then treats as "not in this policy": the pod joins the default sub-group)."""
    sel = policy.label_selector
    # an empty selector (LabelSelectorAsSelector: Everything) selects every pod
    if sel is not None and (sel.get("matchLabels") or sel.get("matchExpressions")) and not selector_matches(sel, labels):
        return None
    out: list[str] = []
    for key in policy.match_label_keys:
        v = labels.get(key)
        if not v:
            return None
        out.append(v)
    return out


class SubJob:
    """A sub-group of a job (Volcano's ``SubJobInfo``, ``pkg/scheduler/api/sub_job_info.go``): the pods of one
    ``subGroupPolicy`` entry that share the values of its ``matchLabelKeys``, or the job's default sub-group (every
    pod no policy takes; for a job without policies, all of them, with the job's minMember and topology).

    ``tasks`` are the job's own TaskInfo objects, so the counts follow status changes; ``priority`` is the highest
    task priority (at least 0), ``match_index`` the first match value as an integer (0 if it is not one).

    ``stale``: task uid -> a status the sub-group's status index still files the task under besides its own,
    counted too (see ``JobInfo.mark_replayed``)."""

    __slots__ = ("gid", "job", "match_index", "min_available", "network_topology", "policy", "priority", "stale",
                 "tasks", "uid")

    def __init__(self, gid: str, uid: str, job: str, policy: SubGroupPolicy | None, min_available: int,
                 network_topology: NetworkTopology | None, values: list[str] | None = None) -> None:
        self.gid, self.uid, self.job, self.policy = gid, uid, job, policy
        self.min_available = min_available
        self.network_topology = network_topology
        self.tasks: dict[str, TaskInfo] = {}
        self.stale: dict[str, TaskStatus] = {}
        self.priority = 0
        self.match_index = int(values[0]) if values and _INT.fullmatch(values[0]) else 0
        if abs(self.match_index) >= 2**63:  # strconv.Atoi: out of range is an error, MatchIndex stays 0
            self.match_index = 0

    def add(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        if task.priority > self.priority:
            self.priority = task.priority

    def _stale_in(self, statuses: frozenset[TaskStatus], best_effort: bool = False) -> int:
        """Stale index entries (``stale``) under one of ``statuses`` that the task's own status does not repeat."""
        tasks = self.tasks
        return sum(1 for uid, st in self.stale.items()
                   if st in statuses and tasks[uid].status != st and (not best_effort or tasks[uid].best_effort))

    def ready_num(self) -> int:
        n = sum(1 for t in self.tasks.values() if t.status in _READY_SET)
        return n + self._stale_in(_READY_SET) if self.stale else n

    def waiting_num(self) -> int:
        n = sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pipelined)
        return n + self._stale_in(_PIPELINED_SET) if self.stale else n

    def pending_best_effort_num(self) -> int:
        n = sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pending and t.best_effort)
        return n + self._stale_in(_PENDING_SET, True) if self.stale else n

    def allocated_num(self) -> int:
        n = sum(1 for t in self.tasks.values() if t.status in _ALLOCATED_SET)
        return n + self._stale_in(_ALLOCATED_SET) if self.stale else n

    def is_ready(self) -> bool:
        return self.ready_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_num() + self.ready_num() + self.pending_best_effort_num() >= self.min_available

    def pending(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.status == TaskStatus.Pending]

    def __repr__(self) -> str:
        return f"SubJob({self.uid} min={self.min_available} tasks={len(self.tasks)})"


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
        #: the sub-groups and which task is in which, built when first asked (``sub_jobs``) and dropped when a
        #: task joins or leaves
        self._subs: tuple[dict[str, SubJob], dict[str, str], PodGroup | None, int] | None = None
        #: values sessions derive from the job, carried to later sessions (``framework/incremental/carry.py``): one dict per
        #: cache job, shared by all its clones (``clone`` and ``reuse`` copy the reference), each entry keyed by the
        #: version (and PodGroup phase) it was computed at
        self.derived: dict[str, tuple[Any, Any]] = {}

    # --- membership -----------------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.version += 1
        self._subs = None
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
        self._subs = None
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
        j._subs = None
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
        self._subs = None  # rebuilt when asked, as on a fresh clone
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

    # --- sub-groups (Volcano api/job_info.go: SubJobs, TaskToSubJob, MinSubJobs; sub_job_info.go) --------------
    def has_sub_policy(self) -> bool:
        """Volcano's ``ContainsSubJobPolicy``: the PodGroup has a ``subGroupPolicy``."""
        return self.podgroup is not None and bool(self.podgroup.sub_group_policy)

    def _build_subs(self) -> tuple[dict[str, SubJob], dict[str, str], PodGroup | None, int]:
        """Every task to its sub-group (``addTaskToSubJob``): the first policy that selects the pod with non-empty
        match values, else the default sub-group (id and group id: the job's uid)."""
        subs: dict[str, SubJob] = {}
        of: dict[str, str] = {}
        pg = self.podgroup
        policies = pg.sub_group_policy if pg is not None else ()
        for task in self.tasks.values():
            sj = None
            if policies:
                labels = (task.pod.get("metadata") or {}).get("labels") or {}
                for p in policies:
                    values = match_values(p, labels)
                    if values:
                        sid = sub_job_id(self.uid, p.name, values)
                        sj = subs.get(sid)
                        if sj is None:
                            sj = subs[sid] = SubJob(f"{self.uid}/{p.name}", sid, self.uid, p,
                                                    p.size if p.size is not None else 1, p.network_topology, values)
                        break
            if sj is None:
                sj = subs.get(self.uid)
                if sj is None:  # getOrCreateDefaultSubJob
                    sj = subs[self.uid] = SubJob(self.uid, self.uid, self.uid, None,
                                                 1 if policies else self.min_available,
                                                 pg.network_topology if pg is not None else None)
            sj.add(task)
            of[task.uid] = sj.uid
        return subs, of, pg, self.min_available

    def _sub_index(self) -> tuple[dict[str, SubJob], dict[str, str], PodGroup | None, int]:
        """The sub-groups, rebuilt when a task joined or left or the PodGroup (or minMember) changed (read through
        ``__dict__``: a JobInfo made without ``__init__`` has none yet)."""
        got = self.__dict__.get("_subs")
        if got is None or got[2] is not self.podgroup or got[3] != self.min_available:
            got = self._subs = self._build_subs()
        return got

    def sub_jobs(self) -> dict[str, SubJob]:
        """The job's sub-groups by id (only those with a task)."""
        return self._sub_index()[0]

    def sub_of(self, task: TaskInfo) -> SubJob:
        """The sub-group ``task`` is in (``TaskToSubJob``)."""
        got = self._sub_index()
        return got[0][got[1][task.uid]]

    def sub_id(self, task_uid: str) -> str | None:
        """The id of the sub-group a task is in, None for a task the job does not have."""
        return self._sub_index()[1].get(task_uid)

    def mark_replayed(self, task: TaskInfo, old: TaskStatus) -> None:
        """``task`` went from ``old`` to its status through a replayed operation (Volcano's
        ``Statement.RecoverOperations`` of a plan saved with ``SaveOperations``, as gangpreempt and gangreclaim
        commit their dry run).  Volcano replays a *clone* of the task taken after the dry run, which already has
        the new status, and ``JobInfo.DeleteTaskInfo`` removes a task from its sub-group's status index under the
        status of the object it is given: so the sub-group still files the task under ``old`` too, for the rest of
        the session (a pod evicted this way still counts as running in its sub-group's readiness; the job's own
        counts are right).  Recorded here so that ``SubJob``'s counts include it."""
        sid = self.sub_id(task.uid)
        if sid is not None and old != task.status:
            self.sub_jobs()[sid].stale[task.uid] = old

    def min_sub_jobs(self) -> dict[str, int]:
        """Volcano's ``MinSubJobs``: per policy (its group id ``<job>/<name>``), the ``minSubGroups``."""
        pg = self.podgroup
        if pg is None:
            return {}
        return {f"{self.uid}/{p.name}": p.min_sub_groups or 0 for p in pg.sub_group_policy}

    def _sub_counts(self, cond: Callable[[SubJob], bool] | None) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for sj in self.sub_jobs().values():
            if cond is None or cond(sj):
                counts[sj.gid] += 1
        return counts

    def check_sub_job_valid(self) -> bool:
        """Volcano's ``CheckSubJobValid``: every policy has at least its ``minSubGroups`` sub-groups."""
        if not self.has_sub_policy():
            return True
        counts = self._sub_counts(None)
        return all(counts[g] >= n for g, n in self.min_sub_jobs().items())

    def sub_jobs_short(self, cond: Callable[[SubJob], bool]) -> str:
        """Volcano's ``checkSubJobCondition``: "" when every policy has ``minSubGroups`` sub-groups meeting
        ``cond``, else Volcano's reason for the first one that does not."""
        if not self.has_sub_policy():
            return ""
        counts = self._sub_counts(cond)
        for g, n in self.min_sub_jobs().items():
            if n and counts[g] < n:
                return (f"the number of allocated subGroups {counts[g]} is less than the number of subGroups {n} "
                        f"with the minSubGroups attribute in subGroupPolicy {g}.")
        return ""

    def check_sub_job_ready(self) -> bool:
        return not self.sub_jobs_short(SubJob.is_ready)

    def check_sub_job_pipelined(self) -> bool:
        return not self.sub_jobs_short(SubJob.is_pipelined)

    # --- allocation continuation (Volcano api/job_info.go) ------------------------------------------------
    def _role_key(self, task: TaskInfo) -> str:
        """Failed roles are per sub-group (``FitFailedRoles(subJob)``); a job without policies has one."""
        return f"{self.sub_of(task).uid}\0{task.task_spec}" if self.has_sub_policy() else task.task_spec

    def record_fit_failure(self, task: TaskInfo) -> None:
        """The task found no node (or a prePredicate refused it): its role counts as failed for the session."""
        self.fit_failed_roles.add(self._role_key(task))

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """Volcano's ``TaskHasFitErrors``: a task of a role that already failed (in its sub-group) is skipped
        without trying nodes, since its siblings would fail the same way.  Tasks without a role are always
        tried."""
        return bool(task.task_spec) and self._role_key(task) in self.fit_failed_roles

    def reset_sub_job_fit_errors(self, sub: SubJob) -> None:
        """Volcano's ``ResetSubJobFitErr``: forget the fit errors and failed roles of one sub-group's tasks."""
        if not self.has_sub_policy():
            self.nodes_fit_errors = {}
            self.fit_failed_roles = set()
            return
        for uid in sub.tasks:
            self.nodes_fit_errors.pop(uid, None)
        prefix = f"{sub.uid}\0"
        self.fit_failed_roles = {r for r in self.fit_failed_roles if not r.startswith(prefix)}

    def need_continue_allocating(self, task: TaskInfo | None = None) -> bool:
        """Volcano's ``NeedContinueAllocating``: after ``task`` found no node, can the gang still be met by the
        job's other tasks?

        No when minMember is at least the number of tasks (every task is needed; Volcano's default sub-job check
        ``subJob.MinAvailable >= len(subJob.Tasks)``). A job with a ``subGroupPolicy`` goes on unless the failed
        task's sub- group needs every one of its pods (its size is at least its pod count). When the per-role minimums
        add up to more than minMember (so they do not bind), yes only if ready tasks plus pending tasks of roles that
        have not failed still reach minMember. Otherwise no only if a failed role has a minimum it does not yet hold
        (allocated or finished tasks, plus its pending BestEffort ones); a job without per-role minimums always goes
        on."""
        if self.min_available >= len(self.tasks):
            return False
        if task is not None and self.has_sub_policy():
            sub = self.sub_of(task)
            return sub.min_available < len(sub.tasks)
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
