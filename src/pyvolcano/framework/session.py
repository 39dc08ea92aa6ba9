"""Session: one scheduling cycle over a snapshot, with the plugins' callbacks and the decisions made.

Plugins register callbacks on extension points (``add_job_order_fn`` ..., one typed method per point, or
``add_fn(points.JOB_ORDER, ...)``) when the session opens; actions ask the session (``job_ready``,
``preemptable``, ``select_node`` ...) and the session combines the callbacks with the rule declared for that point
in ``points.POINTS`` -- one mechanism for every point.  Plugins share per-session data through ``state``, a
``SessionState`` of typed keys (``framework/state.py``).  Decisions are collected in
``binds``/``evictions`` and handed back by ``close()``; the caller (``cycle``, the simulator or the
Kubernetes binder) applies them.  Nothing here knows where the snapshot came from.
"""

from __future__ import annotations

import bisect
import time
import uuid
from collections import ChainMap
from collections.abc import Callable, Hashable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, PodGroup, SubJob, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import ResourceIndex, fit_floor, less_equal, resource_list
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import COMPLETED, PodGroupPhase, TaskStatus
from pyvolcano.api.types import SCHEDULED as SCHEDULED_STATUS
from pyvolcano.cache.cache import Snapshot
from pyvolcano.conf.loader import PluginOption, SchedulerConf
from pyvolcano.conf.registration import slots
from pyvolcano.framework import registry
from pyvolcano.framework.explain import score_breakdown
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import NONE, Contract, Contracts
from pyvolcano.framework.incremental.deltas import Lender
from pyvolcano.framework.incremental.memo import SessionMemo
from pyvolcano.framework.node_select import NodeSelector, PredicateReg, ScoreReg
from pyvolcano.framework.order import job_order_key
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import (
    ALLOCATABLE,
    BATCH_NODE_ORDER,
    BEST_NODE,
    CLUSTER_ORDER,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    NAMESPACE_ORDER,
    NODE_ORDER,
    OVERUSED,
    POINTS,
    PRE_PREDICATE,
    PREDICATE,
    PREEMPTABLE,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    RESERVED_NODES,
    SUB_JOB_ORDER,
    SUB_JOB_PIPELINED,
    SUB_JOB_READY,
    TARGET_JOB,
    TASK_ORDER,
    UNIFIED_EVICTABLE,
    VICTIM_ORDER,
    VICTIM_QUEUE_ORDER,
    VICTIM_TASKS,
    BatchNodeOrderFn,
    BestNodeFn,
    ClusterOrderFn,
    EvictableFn,
    EvictionContext,
    F,
    JobEnqueuedFn,
    JobOrderFn,
    JobReadyFn,
    JobStarvingFn,
    JobValidFn,
    JobVoteFn,
    NamespaceOrderFn,
    NodeOrderFn,
    OverusedFn,
    Point,
    PredicateFn,
    PrePredicateFn,
    QueueOrderFn,
    QueueTaskFn,
    ReservedNodesFn,
    Rule,
    SubJobOrderFn,
    SubJobReadyFn,
    SubJobVoteFn,
    TargetJobFn,
    TaskOrderFn,
    UnifiedEvictableFn,
    VectorPredicateFn,
    VectorScoreFn,
    VictimQueueOrderFn,
    VictimTasksFn,
    combine,
)
from pyvolcano.framework.result import (
    ALL_NODES_UNAVAILABLE,
    Eviction,
    FairShare,
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    SessionStats,
)
from pyvolcano.framework.state import PROPORTION_QUEUES, QUEUE_PROBLEMS, QUEUE_SHARES, SessionState
from pyvolcano.framework.topology import SessionTopology

UNSCHEDULABLE = "Unschedulable"
#: the conditions a parked job may have: gang's Unschedulable alone (``Session._settled_jobs``, parked jobs)
_GANG_WAITING = frozenset({UNSCHEDULABLE})
SCHEDULED = "Scheduled"
#: gang's reason on the Scheduled condition of a ready job (``gang.go``: OnSessionClose)
GANG_READY = "tasks in gang are ready to be scheduled"


@dataclass
class EventHandler:
    """Volcano's Allocate/Deallocate event handlers: called as tasks gain or lose node resources."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


class Session:
    """One scheduling cycle (Volcano's framework.Session)."""

    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, engine: str = "vector") -> None:
        self.uid = str(uuid.uuid4())
        self.snapshot = snapshot
        self.conf = conf
        self.res = snapshot.res
        self.nodes = snapshot.nodes
        #: the snapshot's own dict (a snapshot serves one session, and nothing adds or removes a job in it)
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.now = snapshot.now
        self.total_resource = self.nodes.total_allocatable()
        reg = conf.registration
        #: each plugin of the conf: (tier, option); shared with the conf's registration (``conf/registration.py``)
        #: unless a plugin registers under another name than its conf entry's (``open`` copies it then)
        self.options: dict[str, tuple[int, PluginOption]] = reg.options
        self._reg = reg
        self._at = reg.at
        #: per point, the registered ``(plugin, fn)`` of each tier in conf order; a point nobody registered on
        #: shares one empty tuple of tiers, and gets its own lists at its first registration (``_add``)
        self.fns: dict[str, Sequence[Sequence[tuple[str, Callable[..., Any]]]]] = dict(_no_fns(reg.n_tiers))
        self._fn_lists: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        self.predicates: list[PredicateReg] = []
        self.scores: list[ScoreReg] = []
        self.batch_scores: list[BatchNodeOrderFn] = []
        self.event_handlers: list[EventHandler] = []
        self.plugins: dict[str, Plugin] = {}
        #: the contracts each plugin's class declares, by conf name and by the name it registers under
        #: (``framework/incremental/contracts.py``): what the incremental layer may rely on
        self.contracts: dict[str, Contracts] = {}
        self.binds: dict[str, str] = {}
        self.bind_tasks: list[TaskInfo] = []
        #: called with each task as it is dispatched, while the session goes on (Volcano's ``Statement.Commit`` ->
        #: ``cache.AddBindTask``, whose binder starts at once); the Kubernetes scheduler starts its ``pods/binding``
        #: there instead of after the whole session.  None: the binds are only recorded (``SessionResult.binds``)
        self.on_dispatch: Callable[[TaskInfo], None] | None = None
        self.evictions: list[Eviction] = []
        self.invalid: dict[str, str] = {}
        self.pg_conditions: dict[str, dict[str, Any]] = {}
        #: jobs this session leaves alone, with what ``close`` carries for them (``_settled_jobs``, set by ``open``)
        self.settled: MutableMapping[str, tuple[PodGroupStatus, _CloseCounts]] = {}
        #: this session may record jobs as settled for the next one (``_settled_jobs``)
        self._can_settle = False
        #: the jobs of ``settled`` that are parked (Pending, refused by enqueue under this session's epoch:
        #: ``_settled_jobs``), and whether this session may park jobs for the next one
        self.parked: dict[str, tuple[PodGroupStatus, _CloseCounts]] = {}
        self._can_park = False
        #: the parked jobs were parked under another epoch (room came back since): enqueue checks them again,
        #: group by group (``actions/enqueue.py``), unparking (``unpark``) those it looks at
        self.parked_stale = False
        #: the parked jobs unparked since ``_unsettled`` was made
        self._unparked: list[JobInfo] = []
        #: every job unparked in this session (``close`` moves the settled sums and parked groups by them)
        self.unparked_uids: list[str] = []
        #: the jobs that are not settled, in ``jobs`` order (``unsettled_jobs``)
        self._unsettled: list[JobInfo] = []
        #: the settled jobs that are *blocked* (``_settled_jobs``): allocate checks each against the blocked-job memo
        #: before its first turn and looks again at those it cannot keep blocked (``unblock``); an ordered set
        self.blocked: dict[str, None] = {}
        #: whether this session may leave blocked jobs for the next one, and the jobs allocate found blocked in it
        #: (its memo skipped their turn or recorded their failed one: ``actions/allocate.py``)
        self._can_block = False
        self.blocked_now: set[str] = set()
        #: jobs one of whose tasks was evicted (or its eviction undone) in this session: the only change a settled
        #: job can see in a session (it has no pending, allocated or pipelined task to place or take back)
        self.touched: set[str] = set()
        self._plain_conditions: dict[tuple[str, str], dict[str, Any]] = {}
        self.selector = NodeSelector(self, engine)
        self.engine = engine
        #: HyperNodes, each job's adjusted topology constraint and allocated hypernode (framework/topology.py)
        self.topology = SessionTopology.open(self)
        #: per-session state plugins share, under typed keys (e.g. proportion's queue attributes under
        #: ``state.PROPORTION_QUEUES``); read only inside the framework and the plugins: ``close`` turns what a
        #: front-end needs into the ``SessionResult``
        self.state = SessionState()
        #: statements discarded (gang roll-backs)
        self.rollbacks = 0
        #: tasks whose eviction was undone in this session (a discarded statement, a dry run): Volcano's predicates
        #: plugin does not put them back into its Kubernetes node view (its Reserve plugins fail for a pod that
        #: PrePredicate never saw, ``plugins/_podaffinity.py: reserve_fails``), so they no longer count there
        self.unevicted: dict[str, TaskInfo] = {}
        #: Volcano's ``TaskInfo.EvictionOccurred`` (``Statement.Pipeline``'s argument): tasks whose last pipeline
        #: in a statement followed evictions made for them (preempt, reclaim, gangpreempt, gangreclaim), with
        #: their job
        self.evicted_for: dict[str, str] = {}
        #: Volcano's ``TaskInfo.LastTransaction``: a task's (status, node, eviction occurred) when a statement
        #: holding its allocate or pipeline was discarded (``Statement.Discard`` -> ``GenerateLastTxContext``),
        #: cleared when a statement holding it commits; with its job.  ``close`` reads both for the pods'
        #: ``status.nominatedNodeName`` (``JobInfo.TaskSchedulingReason``)
        self.last_tx: dict[str, tuple[TaskStatus, str, bool, str]] = {}
        #: tasks whose prePredicate ran in this session (``pre_predicate``)
        self.prepredicated: set[str] = set()
        self.action_seconds: dict[str, float] = {}
        self.plugin_seconds: dict[tuple[str, str], float] = {}
        #: the blocked-job memo as this session sees it (``framework/incremental/memo.py``); None: examine every job
        self.memo: SessionMemo | None = (
            SessionMemo(snapshot.memo, conf, snapshot.free_epoch, snapshot.use_epoch, snapshot.alloc_epoch,
                        snapshot.room)
            if snapshot.memo is not None else None)
        #: carry per-job values between sessions (``framework/incremental/carry.py``): with the memo, not with
        #: ``--full-sessions``
        self.carry = snapshot.memo is not None

    # --- registration -----------------------------------------------------------------------------------
    def _tier(self, plugin: str, flag: str | None) -> int | None:
        """The tier ``plugin``'s callbacks on a point switched by ``flag`` go to, or None when its option
        switches the flag off (Volcano's ``isEnabled``, framework/util.go), as resolved once for the conf
        (``conf/registration.py``)."""
        ti = self._at.get((plugin, flag), -1)
        if ti is None or ti >= 0:
            return ti
        return self._reg.tier(plugin, flag) if self._at is self._reg.at else _tier_of(self.options, plugin, flag)

    def _add(self, point: Point[F], plugin: str, fn: F) -> None:
        """Append ``fn`` to the point's list of the plugin's tier, unless the plugin's option switches the point
        off: one lookup in the conf's resolved registration (the typed ``add_*_fn`` methods come here)."""
        ti = self._at.get((plugin, point.flag), -1)
        if ti is None:
            return
        if ti < 0:
            got = self._tier(plugin, point.flag)
            if got is None:
                return
            ti = got
        name = point.name
        lists = self._fn_lists.get(name)
        if lists is None:
            lists = self._fn_lists[name] = [[] for _ in range(self._reg.n_tiers)]
            self.fns[name] = lists
        lists[ti].append((plugin, fn))

    def add_fn(self, point: Point[F], plugin: str, fn: F) -> None:
        """Register ``fn`` on extension point ``point`` (a ``points`` constant, whose type parameter is the
        callback's signature) unless the plugin's enable flag switches it off.  The typed ``add_*_fn`` methods
        below are the same with the signature spelled out, which lets mypy check a lambda's body too.

        Volcano-style per-node functions go to the node selector: ``PREDICATE`` and ``NODE_ORDER`` take
        ``fn(task, NodeInfo)`` (registered as scalar, not template-safe, so evaluated for every task), and
        ``BATCH_NODE_ORDER`` takes ``fn(task, [NodeInfo]) -> {node name: score}``."""
        if not isinstance(point, Point):  # a plugin written for the untyped ``add_fn("jobOrder", ...)``
            known = POINTS.get(str(point))
            hint = f"ssn.add_fn(points.{_constant(known.name)}, ...)" if known else "a pyvolcano.framework.points.Point"
            raise TypeError(f"plugin {plugin}: add_fn takes {hint}, not {point!r}")
        if point is PREDICATE:
            return self.add_predicate(plugin, scalar=fn, template_safe=False)
        if point is NODE_ORDER:
            return self.add_node_order(plugin, scalar=fn, template_safe=False)
        if point is BATCH_NODE_ORDER:
            if self._tier(plugin, point.flag) is not None:
                self.batch_scores.append(fn)
            return None
        self._add(point, plugin, fn)

    # one typed registration per point (Volcano's ``Session.Add...Fn``, framework/session_plugins.go)
    def add_job_order_fn(self, plugin: str, fn: JobOrderFn) -> None:
        self._add(JOB_ORDER, plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: QueueOrderFn) -> None:
        self._add(QUEUE_ORDER, plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: TaskOrderFn) -> None:
        self._add(TASK_ORDER, plugin, fn)

    def add_namespace_order_fn(self, plugin: str, fn: NamespaceOrderFn) -> None:
        self._add(NAMESPACE_ORDER, plugin, fn)

    def add_cluster_order_fn(self, plugin: str, fn: ClusterOrderFn) -> None:
        self._add(CLUSTER_ORDER, plugin, fn)

    def add_victim_order_fn(self, plugin: str, fn: TaskOrderFn) -> None:
        self._add(VICTIM_ORDER, plugin, fn)

    def add_victim_queue_order_fn(self, plugin: str, fn: VictimQueueOrderFn) -> None:
        self._add(VICTIM_QUEUE_ORDER, plugin, fn)

    def add_predicate_fn(self, plugin: str, fn: PredicateFn) -> None:
        """Volcano's per-node filter (not template-safe); ``add_predicate`` takes the vectorised form."""
        self.add_fn(PREDICATE, plugin, fn)

    def add_pre_predicate_fn(self, plugin: str, fn: PrePredicateFn) -> None:
        self._add(PRE_PREDICATE, plugin, fn)

    def add_node_order_fn(self, plugin: str, fn: NodeOrderFn) -> None:
        """Volcano's per-node score (not template-safe); ``add_node_order`` takes the vectorised form."""
        self.add_fn(NODE_ORDER, plugin, fn)

    def add_batch_node_order_fn(self, plugin: str, fn: BatchNodeOrderFn) -> None:
        self.add_fn(BATCH_NODE_ORDER, plugin, fn)

    def add_best_node_fn(self, plugin: str, fn: BestNodeFn) -> None:
        self._add(BEST_NODE, plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: JobValidFn) -> None:
        self._add(JOB_VALID, plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: JobReadyFn) -> None:
        self._add(JOB_READY, plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self._add(JOB_PIPELINED, plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: JobStarvingFn) -> None:
        self._add(JOB_STARVING, plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self._add(JOB_ENQUEUEABLE, plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: JobEnqueuedFn) -> None:
        self._add(JOB_ENQUEUED, plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: QueueTaskFn) -> None:
        self._add(ALLOCATABLE, plugin, fn)

    def add_overused_fn(self, plugin: str, fn: OverusedFn) -> None:
        self._add(OVERUSED, plugin, fn)

    def add_preemptable_fn(self, plugin: str, fn: EvictableFn) -> None:
        self._add(PREEMPTABLE, plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: EvictableFn) -> None:
        self._add(RECLAIMABLE, plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: QueueTaskFn) -> None:
        self._add(PREEMPTIVE, plugin, fn)

    def add_unified_evictable_fn(self, plugin: str, fn: UnifiedEvictableFn) -> None:
        self._add(UNIFIED_EVICTABLE, plugin, fn)

    def add_victim_tasks_fn(self, plugin: str, fn: VictimTasksFn) -> None:
        self._add(VICTIM_TASKS, plugin, fn)

    def add_target_job_fn(self, plugin: str, fn: TargetJobFn) -> None:
        self._add(TARGET_JOB, plugin, fn)

    def add_reserved_nodes_fn(self, plugin: str, fn: ReservedNodesFn) -> None:
        self._add(RESERVED_NODES, plugin, fn)

    # the node points' vectorised forms
    def add_predicate(self, plugin: str, *, vector: VectorPredicateFn | None = None,
                      scalar: PredicateFn | None = None, static: bool = False, template_safe: bool = True,
                      reason: str | None = None, resolvable: bool = False, prefilter: bool = False,
                      carry: Hashable | None = None, carry_task: Callable[[TaskInfo], bool] | None = None) -> None:
        """A node filter (point ``PREDICATE``): ``vector(task, idx) -> bool array`` and/or Volcano's
        ``scalar(task, NodeInfo) -> Status | None`` (``None`` or a success passes; a rejection's reasons go into
        the fit errors).  ``reason``: the rejection's text when it never depends on the node (fit errors are then
        counted without asking the scalar form node by node).  ``resolvable``/``prefilter``: see
        ``PredicateReg``; ``carry``/``carry_task``: see ``ScoreReg`` (results carried between sessions)."""
        if self._tier(plugin, PREDICATE.flag) is not None:
            self.predicates.append(PredicateReg(plugin, vector, scalar, static, template_safe, reason, resolvable,
                                                prefilter, carry, carry_task))

    def add_node_order(self, plugin: str, *, vector: VectorScoreFn | None = None, scalar: NodeOrderFn | None = None,
                       static: bool = False, template_safe: bool = True, batch: bool = False, normalize: str = "",
                       weight: float = 1.0, carry: Hashable | None = None,
                       carry_task: Callable[[TaskInfo], bool] | None = None,
                       carry_rows: Callable[[], np.ndarray] | None = None) -> None:
        """A node score (point ``NODE_ORDER``): ``vector(task, idx) -> float array`` and/or
        ``scalar(task, NodeInfo) -> float``.
        ``batch``: normalised over the candidate nodes by the plugin itself (Volcano's BatchNodeOrderFn, point
        ``BATCH_NODE_ORDER``), so not template-safe and always called through ``vector`` with every candidate.
        ``normalize`` ("max" / "max-reverse"): the callbacks give a static raw score that the framework normalises
        over the nodes compared in each decision and multiplies by ``weight`` (see ``ScoreReg``).
        ``carry``/``carry_task``/``carry_rows``: the results may be carried between sessions (see ``ScoreReg``)."""
        if batch:
            template_safe = False
        if normalize and not (static and template_safe):
            raise ValueError("a normalised node score must be static and template-safe")
        if self._tier(plugin, (BATCH_NODE_ORDER if batch else NODE_ORDER).flag) is not None:
            self.scores.append(ScoreReg(plugin, vector, scalar, static, template_safe, batch, normalize, weight,
                                        carry, carry_task, carry_rows))

    def add_sub_job_ready_fn(self, plugin: str, fn: SubJobReadyFn) -> None:
        self._add(SUB_JOB_READY, plugin, fn)

    def add_sub_job_pipelined_fn(self, plugin: str, fn: SubJobVoteFn) -> None:
        self._add(SUB_JOB_PIPELINED, plugin, fn)

    def add_sub_job_order_fn(self, plugin: str, fn: SubJobOrderFn) -> None:
        self._add(SUB_JOB_ORDER, plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def registered_only_by(self, point: Point[Any], contract: Contract) -> bool:
        """Whether every callback on ``point`` comes from a plugin whose class declares ``contract``."""
        contracts = self.contracts
        return all(contract in contracts.get(name, NONE) for tier in self.fns[point.name] for name, _ in tier)

    def has(self, point: str) -> bool:
        return any(self.fns[point])

    def call(self, point: str, *args: Any) -> Any:
        return combine(POINTS[point].rule, self.fns[point], *args)

    # --- orders (negative: left first) ------------------------------------------------------------------
    def job_cmp(self, left: JobInfo, right: JobInfo) -> int:
        r = self.call("jobOrder", left, right)
        if r:
            return r
        return _fallback(left.creation, right.creation, left.uid, right.uid)

    def queue_cmp(self, left: QueueInfo, right: QueueInfo) -> int:
        r = self.call("queueOrder", left, right)
        if r:
            return r
        return _fallback(left.creation, right.creation, left.name, right.name)

    def task_cmp(self, left: TaskInfo, right: TaskInfo) -> int:
        r = self.call("taskOrder", left, right)
        if r:
            return r
        return _fallback(left.creation, right.creation, left.uid, right.uid)

    def namespace_cmp(self, left: str, right: str) -> int:
        r = self.call("namespaceOrder", left, right)
        return r if r else (-1 if left < right else (1 if left > right else 0))

    def victim_cmp(self, left: TaskInfo, right: TaskInfo) -> int:
        """Victims: the task that task order puts last goes first."""
        r = self.call("victimOrder", left, right)
        return r if r else -self.task_cmp(left, right)

    # --- job and queue predicates ----------------------------------------------------------------------
    def job_valid(self, job: JobInfo) -> Status | None:
        """The first jobValid plugin's objection (a Status that is not a success), or None (Volcano's
        ``Session.JobValid``).  Actions skip a job with an objection; its message is remembered and added to the
        job's unschedulable reason when the session closes."""
        # Rule.FIRST_FAILURE (``points.combine``) spelled out: allocate asks it of every job of every session
        for tier in self.fns["jobValid"]:
            for _, fn in tier:
                st: Status | None = fn(job)
                if st is not None and st.code != Code.SUCCESS:
                    self.invalid[job.uid] = st.message
                    return st
        return None

    def pre_predicate(self, task: TaskInfo) -> Status | None:
        """The first prePredicate objection to the task (a Status that is not a success; every node then fails
        with its message, ``str(status)``), or None (Volcano's ``Session.PrePredicateFn``).  The task is noted in
        ``prepredicated``: Volcano's predicates plugin keeps what its PreFilters found in the task's cycle state, and
        its Filters fail (an Error) on a task whose PreFilters have not run in the session (preempt reads that,
        ``actions/preempt.py: nominated_allows``)."""
        self.prepredicated.add(task.uid)
        return self.call("prePredicate", task)

    def job_ready(self, job: JobInfo) -> bool:
        return self.call("jobReady", job)

    def job_pipelined(self, job: JobInfo) -> bool:
        return self.call("jobPipelined", job)

    def sub_job_ready(self, job: JobInfo, sub: SubJob) -> bool:
        """Volcano's ``Session.SubJobReady``: for a job without a ``subGroupPolicy``, whether the job is ready."""
        if not job.has_sub_policy():
            return self.job_ready(job)
        return self.call("subJobReady", sub)

    def sub_job_pipelined(self, job: JobInfo, sub: SubJob) -> bool:
        """Volcano's ``Session.SubJobPipelined``: for a job without a ``subGroupPolicy``, the job's answer."""
        if not job.has_sub_policy():
            return self.job_pipelined(job)
        return self.call("subJobPipelined", sub)

    def sub_job_cmp(self, left: SubJob, right: SubJob) -> int:
        """Volcano's ``Session.SubJobOrderFn``: the plugins, then the first match value, then the id."""
        r = self.call("subJobOrder", left, right)
        if r:
            return r
        if left.match_index != right.match_index:
            return -1 if left.match_index < right.match_index else 1
        return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)

    def job_starving(self, job: JobInfo) -> bool:
        return self.call("jobStarving", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self.call("jobEnqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        self.call("jobEnqueued", job)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.call("allocatable", queue, task)

    def proportion_deserved(self) -> dict[str, np.ndarray]:
        """Each queue's deserved share as the proportion plugin computed it at open (empty without proportion):
        the blocked-job memo's key (``framework/incremental/memo.py``), so that actions need not read the plugin's state."""
        fair = self.state.get(PROPORTION_QUEUES)
        return {} if fair is None else {name: a.deserved for name, a in fair.items()}

    def overused(self, queue: QueueInfo) -> bool:
        return self.call("overused", queue)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.call("preemptive", queue, task)

    def preemptive_all(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """Volcano's ``Session.Preemptive(queue, candidates)`` for several tasks at once (gangreclaim asks for a
        job's pending tasks together): proportion and capacity judge the candidates' summed request, so the
        plugins are asked about one task carrying the sum."""
        if len(tasks) == 1:
            return self.preemptive(queue, tasks[0])
        first = tasks[0]
        whole = TaskInfo(uid=first.uid, name=first.name, namespace=first.namespace, job=first.job,
                         resreq=np.sum([t.resreq for t in tasks], axis=0),
                         init_resreq=np.sum([t.init_resreq for t in tasks], axis=0), pod=first.pod,
                         task_spec=first.task_spec, priority=first.priority)
        return self.preemptive(queue, whole)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.call("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.call("reclaimable", reclaimer, candidates)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates the plugins let gangpreempt/gangreclaim evict (Volcano's ``Session.UnifiedEvictable``,
        framework/session_plugins.go): intersected within a tier, the first tier ending with victims decides."""
        return self.call("unifiedEvictable", ctx, candidates)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        return self.call("victimTasks", tasks)

    def target_job(self, jobs: list[JobInfo]) -> JobInfo | None:
        return self.call("targetJob", jobs)

    def best_node(self, task: TaskInfo, cand: np.ndarray, total: np.ndarray) -> int | None:
        """A plugin's bestNode choice among candidate nodes (index), or None to take the top score."""
        if not self.has("bestNode"):
            return None
        idx = np.nonzero(cand)[0]
        scores: dict[float, list[NodeInfo]] = {}
        for i in idx:
            scores.setdefault(float(total[i]), []).append(self.nodes.views[i])
        chosen = self.call("bestNode", task, scores)
        return None if chosen is None else chosen.index

    # --- node choice -------------------------------------------------------------------------------------
    def select_node(self, task: TaskInfo, job: JobInfo | None = None,
                    within: np.ndarray | None = None) -> tuple[int | None, bool]:
        """Best node for the task: (index, True) if it fits idle now, (index, False) if only future idle.
        ``within``: a node mask (the nodes of a hypernode) outside which no node is considered.

        The pod's nominated node (``status.nominatedNodeName``, set after a previous session evicted for it)
        is tried first, as Volcano's ``allocateResourcesForTasks`` (actions/allocate/allocate.go) does: if it is
        a node of the session (and of ``within``), the pod's request fits its future idle and it passes every
        predicate, it is the pod's node whatever the scores; otherwise every node is considered."""
        nom = task.nominated_node
        if nom:
            nodes = self.nodes
            i = nodes.pos.get(nom)
            if (i is not None and (within is None or within[i]) and less_equal(task.init_resreq, nodes.future[i])
                    and self.selector.passes_at(task, job, i)):
                if self.selector.ties is not None:
                    self.selector.ties[task.uid] = [i]
                return i, less_equal(task.init_resreq, nodes.idle[i])
        return self.selector.select(task, job, within)

    def explain(self, task: TaskInfo, job: JobInfo | None = None, within: np.ndarray | None = None) -> FitErrors:
        return self.selector.explain(task, job, within)

    def feasible_nodes(self, task: TaskInfo, job: JobInfo | None = None) -> np.ndarray:
        """Mask of nodes passing every predicate (resources not considered)."""
        return self.selector.feasible(task, job)[1]

    def preempt_nodes(self, task: TaskInfo, job: JobInfo | None = None) -> np.ndarray:
        """Mask of nodes preempt and reclaim try: failing no predicate, or only resolvable ones (Volcano's
        ``PredicateForPreemptAction``)."""
        return self.selector.preempt_candidates(task, job)

    def node_scores(self, task: TaskInfo, cand: np.ndarray, job: JobInfo | None = None) -> np.ndarray:
        e = self.selector.entry(task, job)
        return self.selector.total_scores(task, e, cand)

    # --- primitive state changes (shared by Statement and the session-level operations) ---------------
    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        for h in self.event_handlers:
            fn = h.allocate if allocate else h.deallocate
            if fn is not None:
                fn(task)

    def _place(self, task: TaskInfo, i: int, status: TaskStatus) -> None:
        self.touched.add(task.job)
        job = self.jobs[task.job]
        job.update_task_status(task, status)
        task.node_name = self.nodes.names[i]
        self.nodes.add_task(i, task)
        self._fire(task, True)

    def _unplace(self, task: TaskInfo) -> None:
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.remove_task(i, task)
        self.jobs[task.job].update_task_status(task, TaskStatus.Pending)
        task.node_name = ""
        self._fire(task, False)

    def _evict(self, task: TaskInfo) -> TaskStatus:
        old = task.status
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, TaskStatus.Releasing, self.jobs.get(task.job))
        self._fire(task, False)
        return old

    def _unevict(self, task: TaskInfo, old: TaskStatus, *, hide: bool = True) -> None:
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, old, self.jobs.get(task.job))
        if hide:
            self.unevicted[task.uid] = task
        self._fire(task, True)

    def _dispatch(self, task: TaskInfo) -> None:
        """Hand an allocated task to the binder (recorded; the caller binds)."""
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, TaskStatus.Binding, self.jobs[task.job])
        self.binds[task.uid] = task.node_name
        self.bind_tasks.append(task)
        if self.on_dispatch is not None:
            self.on_dispatch(task)

    def _record_eviction(self, task: TaskInfo, reason: str) -> None:
        self.evictions.append(Eviction(task, reason))

    # --- session-level operations (Volcano's ssn.Allocate/Pipeline/Evict, used outside statements) ----
    def allocate(self, task: TaskInfo, i: int, *, check_binds: bool = False) -> str | None:
        """Volcano's ``ssn.Allocate`` (``framework/session.go``): place the task as Allocated; once the job is
        ready, dispatch its Allocated tasks.  ``check_binds``, for a caller that places regardless of the node's
        idle resources (backfill): stop at the first task whose bind the scheduler cache refuses (returned: why),
        which stays Allocated on its node, never bound (``dispatch``, ``cache.AddBindTask``)."""
        self._place(task, i, TaskStatus.Allocated)
        job = self.jobs[task.job]
        if not self.job_ready(job):
            return None
        for t in job.tasks_in(TaskStatus.Allocated):
            why = self._bind_fails(t) if check_binds else None
            if why is not None:
                return why
            self._dispatch(t)
        return None

    def _bind_fails(self, task: TaskInfo) -> str | None:
        """Why the bind of an allocated task fails, or None.  The scheduler cache's node has what the session's
        node has, except the session's still undispatched (Allocated) tasks: ``cache.AddBindTask`` adds the task
        to it as Binding, which needs its request within that node's idle (``api/node_info.go: AddTask``).  The
        session's node may be over-full when a placement ignored idle resources (backfill: the predicates' pod
        count already leaves out pods evicted in the session, the node does not)."""
        nodes = self.nodes
        i = nodes.pos[task.node_name]
        idle = nodes.idle[i]
        if (idle >= 0).all():  # the task itself is among the Allocated tasks: the cache has room for it
            return None
        idle = idle.copy()
        for t in nodes.tasks[i].values():
            if t.status == TaskStatus.Allocated:
                idle += t.resreq
        lack = ~(idle > fit_floor(task.resreq))
        if not lack.any():
            return None
        names = [self.res.names[d] for d in np.flatnonzero(lack)]
        return f"node {task.node_name} resources {names} are not enough to put task <{task.namespace}/{task.name}>"

    def pipeline(self, task: TaskInfo, i: int) -> None:
        self._place(task, i, TaskStatus.Pipelined)

    def unpipeline(self, task: TaskInfo) -> None:
        """Volcano's ``Statement.UnPipeline`` outside a statement: the task is Pending again, off its node."""
        self._unplace(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self._evict(task)
        self._record_eviction(task, reason)

    # --- podgroup status ---------------------------------------------------------------------------------
    def update_podgroup_condition(self, job: JobInfo, ctype: str, reason: str, message: str) -> None:
        """Set the job's condition of this type for this session (Volcano's UpdatePodGroupCondition)."""
        cond: dict[str, Any] | None
        if message:
            cond = {"type": ctype, "status": "True", "transitionID": self.uid, "reason": reason, "message": message}
        else:  # gang's "ready" on most jobs of every session: one read-only dict shared by them
            key = (ctype, reason)
            cond = self._plain_conditions.get(key)
            if cond is None:
                cond = self._plain_conditions[key] = {"type": ctype, "status": "True", "transitionID": self.uid,
                                                      "reason": reason, "message": message}
        self.pg_conditions.setdefault(job.uid, {})[ctype] = cond

    def job_phase(self, job: JobInfo) -> PodGroupPhase:
        """Volcano's ``getPodGroupPhase`` (framework/session.go, called by ``jobStatus``).

        Unknown when some task runs and the job was found unschedulable in this session.  Otherwise only
        *scheduled* tasks count (``api.ScheduledStatus``: Running, Bound, Failed, Succeeded) plus Releasing
        tasks that are on a node (``ReleasingScheduledTaskNum``): a gang allocated or binding in this session
        stays Inqueue until its pods are bound.  Enough of them makes it Running, Completed when every one of
        them has finished; else Pending unless it is already Inqueue."""
        pg = job.podgroup
        assert pg is not None
        return _phase(pg, _CloseCounts(job), UNSCHEDULABLE in self.pg_conditions.get(job.uid, {}))

    # --- lifecycle ---------------------------------------------------------------------------------------
    def open(self) -> Session:
        """Build every configured plugin (a fresh instance per session, as Volcano does).

        Jobs that fail jobValid stay in the session: Volcano's open-time JobValid check runs before any
        plugin has registered, so it never drops a job.  That matters: a PodGroup whose pods do not exist
        yet (a vcjob before its controller creates them) must still be enqueued.  allocate, backfill,
        preempt and reclaim ask ``job_valid`` themselves and skip such jobs."""
        plugin_class, plugins, seconds = registry.plugin_class, self.plugins, self.plugin_seconds
        clock = time.perf_counter
        for ti, opt, args in self._reg.plugins:  # the conf's entries in order, their arguments parsed once
            name = opt.name
            plugin = plugin_class(name)(args)
            plugins[name] = plugin
            self.contracts[name] = self.contracts[plugin.name or name] = type(plugin).contracts
            # a plugin named ``module:Class`` in the conf registers under its own ``name``: same tier, flags
            alias = plugin.name
            if alias and alias not in self.options:
                if self.options is self._reg.options:  # this session's own copy, the conf's stays as it is
                    self.options, self._at = dict(self.options), dict(self._at)
                self.options[alias] = (ti, opt)
                self._at.update(slots(alias, ti, opt))
            t0 = clock()
            plugin.on_session_open(self)
            seconds[(name, "OnSessionOpen")] = clock() - t0
        self.selector.reset()
        self.settled = settled = self._settled_jobs()
        self._unsettled = self.snapshot.unsettled if settled else []
        self.parked = parked = self.snapshot.parked if settled else {}
        if parked and self.snapshot.parked_epoch != self.snapshot.free_epoch:
            # room came back since they were parked: enqueue checks them group by group when it goes first and
            # has the groups of the last session (``parked_groups``), else every one is looked at again
            if self.parked_groups() is None:
                self.unpark(list(parked))
            else:
                self.parked_stale = True
        elif parked and self.memo is not None:  # enqueue does not even look at them: skipped as blocked
            self.memo.memo.skipped += len(parked)
        if settled and self.snapshot.blocked:  # (the snapshot lists only jobs of its ``settled``)
            self.blocked = dict.fromkeys(self.snapshot.blocked)
            if not self._can_block:  # (never under the registration that left them: looked at like any job)
                self.unblock(list(self.blocked))
        if deltas.CHECK and settled:
            assert all(uid in self.blocked or uid in parked or not rec[1].pending for uid, rec in settled.items()), \
                "a settled job with pods pending that no pass checks"
        return self

    def parked_groups(self) -> dict[tuple[Any, ...], list[tuple[Any, ...]]] | None:
        """The last session's parked jobs by queue, minResources and enqueue reason, each group's job-order keys
        sorted (``BlockedMemo.park_groups``, kept by ``close``), when enqueue can check this session's stale
        parked jobs with them: it is the first action (nothing before it changes what its votes read) and the
        job order is a key (``framework/order.py``); else None."""
        memo = self.snapshot.memo
        if memo is None or memo.park_groups is None or memo.park_groups_seq != self.snapshot.seq - 1 \
                or memo.park_groups_reg is not self._reg:
            return None
        actions = self.conf.actions
        if not actions or Contract.ADMITS not in registry.action_class(actions[0]).contracts \
                or job_order_key(self) is None:
            return None
        return memo.park_groups

    def unpark(self, uids: Iterable[str]) -> None:
        """Look at these parked jobs in this session as at any other job: out of ``settled`` and ``parked``, their
        clones put back as a fresh clone has them (the last session left enqueue's reason and gang's message on
        them; nothing else of a parked job is written), and into ``unsettled_jobs``."""
        parked = self.parked
        for uid in uids:
            if parked.pop(uid, None) is None:  # ``settled`` is a ``SettledView`` over ``parked``: out of both
                continue
            self._look_again(uid)

    def _look_again(self, uid: str) -> JobInfo:
        """A job left alone until now, taken out of ``settled`` by ``unpark`` or ``unblock``: into
        ``unsettled_jobs`` (and ``unparked_uids``, by which close moves its sums), its clone without the enqueue
        reason and gang's message the sessions that left it alone wrote on it."""
        self.unparked_uids.append(uid)
        job = self.jobs[uid]
        job.enqueue_reason = ""
        job.job_fit_errors = ""
        self._unparked.append(job)
        return job

    def unblock(self, uids: Iterable[str]) -> None:
        """Look at these blocked jobs (``blocked``) in this session as at any other job: out of ``settled`` and
        ``blocked``, their clones put back as ``JobInfo.reuse`` makes them (the sessions that kept them blocked
        wrote the memo's fit errors and failed roles and gang's message on them, nothing else), their settled
        record dropped (only a new close parks them again), and into ``unsettled_jobs``."""
        settled, blocked = self.settled, self.blocked
        for uid in uids:
            blocked.pop(uid, None)
            if settled.pop(uid, None) is None:
                continue
            job = self._look_again(uid)
            job.nodes_fit_errors = {}
            job.fit_failed_roles = set()
            job.derived.pop("settled", None)

    def repark(self, job: JobInfo, record: tuple[PodGroupStatus, _CloseCounts], fit_errors: str) -> None:
        """Undo ``unpark`` for a job whose check turn refused it again for the reason it was parked with
        (enqueue's group checks, ``actions/enqueue.py``): its parked record stands as it stood (the status close
        would build again is that one but for gang's transition id, as for every parked job left alone), so it
        goes back to ``parked`` with gang's message on its clone, and out of the jobs looked at."""
        self.parked[job.uid] = record  # into ``settled`` too: a ``SettledView`` over ``parked``
        job.job_fit_errors = fit_errors
        unparked = self._unparked
        if unparked and unparked[-1] is job:  # unparked for this very turn (``_Stream.next``)
            unparked.pop()
        else:
            self._unparked = [j for j in unparked if j is not job]
            self._unsettled = [j for j in self._unsettled if j is not job]

    def unsettled_jobs(self) -> Iterable[JobInfo]:
        """The jobs a pass over the session's jobs must look at, in ``jobs`` order: all of them but the settled
        jobs the session has not changed (``_settled_jobs``).  A settled job changes in a session only by an
        eviction (``_evict``/``_unevict`` note it in ``touched``); after one, the list is made again."""
        settled = self.settled
        if not settled:
            return self.jobs.values()
        if self.touched and any(uid in settled for uid in self.touched):  # not ``isdisjoint``: it walks ``settled``
            return [job for uid, job in self.jobs.items()
                    if not (uid in settled and job.version == job.cloned_from)]
        if self._unparked:  # parked jobs enqueue looked at (``unpark``): put in, in ``jobs`` order
            pos = self.snapshot.pos
            if pos is not None:
                self._unsettled = sorted([*self._unsettled, *self._unparked], key=lambda j: pos[j.uid])
            else:
                self._unsettled = [job for uid, job in self.jobs.items() if uid not in settled]
            self._unparked = []
        return self._unsettled

    def _settled_jobs(self) -> MutableMapping[str, tuple[PodGroupStatus, _CloseCounts]]:
        """The jobs this session can leave alone (issue 15: sessions whose cost follows what changed), with the
        status and counts ``close`` carries for them.

        A *settled* job closed the last session it was in with nothing pending or pipelined, no fit error, enqueue
        reason, objection or topology reason, gang's ready condition as its only condition and a quiet status (the
        very object of the session before); it is settled in this session if its clone is the one reused from the last
        snapshot (same cache version), its PodGroup phase is the same and the conf's registration is the same
        object (a reloaded conf settles nothing); the snapshot finds them as it reuses the clones
        (``SchedulerCache.snapshot``).  For such a job every action's answer is known without asking: enqueue looks only at
        Pending PodGroups; allocate and backfill would find it valid (gang's jobValid is a function of the job's
        version, ``plugins/gang.py``) with nothing to place; gang's close would give it the ready condition; and
        close would hand back the carried status.  So ``schedulable_jobs`` and gang's close skip it and ``close``
        takes the carried status and counts -- as long as the session did not change its clone (an eviction by
        preempt or reclaim moves the clone's version, and such a job is treated as any other from then on).

        *Parked* jobs are left alone the same way: a Pending job that enqueue refused in the last session it was in,
        under the blocked-job memo's fingerprint of that session (``framework/incremental/memo.py``: the same
        ``free_epoch``, the same job version), with gang's Unschedulable condition as its only condition, no pod
        holding anything, no topology constraint and the carried waiting status (the very object of the session
        before).  While no room came back (the snapshot's ``free_epoch`` is the one it was parked under,
        ``SchedulerCache.snapshot``) and the job is unchanged, enqueue would skip it as blocked and restore the same
        reason, allocate and backfill skip Pending jobs when enqueue is configured, gang's close would give it the
        same condition (but for the transition id, which no writer compares: Volcano's ``isPodGroupStatusUpdated``)
        and close would hand back the same status; so no pass looks at it.  A backlog of refused jobs then costs a
        session nothing until room comes back.  Only with enqueue in the conf and its memo allowed
        (``SessionMemo.enqueue_ok``).

        *Blocked* jobs are settled jobs with pods pending: an admitted (Inqueue) job holding nothing, with no
        best-effort or pipelined pod, no topology constraint and no sub-groups, whose allocate turn in the last session
        it was in was skipped by the blocked-job memo or failed and was recorded there (``blocked_now``), with gang's
        Unschedulable condition as its only condition and the carried waiting status.  Such a job's answer in this
        session hangs on allocate's memo check alone (``SessionMemo.allocate_blocked``): enqueue looks only at
        Pending jobs, backfill only at best-effort pods, and while the check holds allocate would skip it, hand its
        fit errors back as they are on the clone, gang's close would give it the same condition (but for the
        transition id) and close the same status.  So allocate makes that check for each of ``blocked`` before any
        turn (the nodes and the queues' deserved are then what ``schedulable_jobs`` would see) and looks at the
        others again (``unblock``); no other pass looks at the ones it keeps.  An oversubscribed backlog of admitted
        jobs waiting for room then costs a session one memo check per job.  Only when the conf's actions are among
        enqueue, allocate and backfill (preempt and reclaim look at starving jobs) and allocate's memo is allowed;
        in a session without the memo (releasing or pipelined resources) allocate looks at them all.  The snapshot
        lists them (``Snapshot.blocked``: those left alone, ``BlockedMemo.blocked_left``, and those it finds by
        their settled record, which has pods pending).

        Only when every jobValid function is gang's (a third-party jobValid may read more than the job) and gang
        is configured (its ready condition is part of the carried status); never with ``--full-sessions``.
        ``tests/test_settled.py`` compares sessions with and without it (parked and blocked jobs included),
        ``tests/test_waiting_status_carry.py`` checks each parked and blocked job's status against gang's message,
        ``tests/sim/test_snapshot.py`` each left-alone clone against a fresh one."""
        self._can_settle = False
        snap = self.snapshot
        memo = snap.memo
        if memo is not None:
            memo.settled_reg = None
        if not self.carry or not any(Contract.READY_CONDITION in c for c in self.contracts.values()):
            return {}
        if not self.registered_only_by(JOB_VALID, Contract.VALID_BY_VERSION):
            return {}
        self._can_settle = True
        # parking (``_settled_jobs``) needs enqueue's memo: enqueue records the refusals that make a job parked, and
        # without enqueue allocate would promote a Pending job instead of leaving it alone
        sm = self.memo
        actions = [registry.action_class(a).contracts for a in self.conf.actions]
        self._can_park = sm is not None and sm.enqueue_ok and any(Contract.ADMITS in c for c in actions)
        # blocked jobs (``_settled_jobs``, blocked): the actions that would look at them are allocate, which checks
        # them against its memo, and backfill, which has nothing for them; preempt and reclaim would ask whether
        # they starve, and other actions may read anything
        self._can_block = sm is not None and sm.allocate_ok and any(Contract.CHECKS_BLOCKED in c for c in actions) \
            and all(Contract.LEAVES_BLOCKED in c for c in actions)
        if memo is not None:
            memo.settled_reg = self._reg  # what this session records is under its registration
        return snap.settled if snap.settled_reg is self._reg else {}

    def run(self, explain: int = 0) -> SessionResult:
        """Open, run every configured action in order, close.  ``explain``: also report, per pending pod, the
        ``explain`` best nodes with each plugin's score as the session opens (``SessionResult.scores``)."""
        t0 = time.perf_counter()
        self.open()
        opened = time.perf_counter() - t0
        scores = score_breakdown(self, explain) if explain > 0 else {}
        for name in self.conf.actions:
            action = registry.action_class(name)(self.conf.action_args(name))
            t0 = time.perf_counter()
            action.execute(self)
            self.action_seconds[name] = self.action_seconds.get(name, 0.0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        out = self.close()
        out.stats.open_seconds, out.stats.close_seconds = opened, time.perf_counter() - t0
        out.scores = scores
        return out

    def _settled_sums(self, out_of: set[str]) -> _SettledSums:
        """The sums of the settled jobs this session leaves alone (``settled`` but ``out_of``): those of the last
        session moved by the jobs that joined or left the set, and by those the snapshot handed over again (their
        record may be new), when the last session made them under this conf and every amount is whole; else
        summed afresh."""
        settled, snap, jobs = self.settled, self.snapshot, self.jobs
        memo = snap.memo
        prev = memo.settled_sums if memo is not None else None
        redone, changed = snap.redone, snap.changed
        if (isinstance(prev, _SettledSums) and prev.seq == snap.seq - 1 and prev.reg is self._reg and prev.whole
                and redone is not None and changed is not None):
            # the members were the last session's settled jobs but its ``out_of``; only these can have joined,
            # left or got a new record since: those the snapshot handed over again or that changed in the cache
            # (the only ones it took out of the carried maps), those parked after a look in the last session, those
            # unparked in this one, and this one's ``out_of``
            sums = prev
            if sums.lender.borrowed():  # a result still reads the last maps handed out: they are its now
                sums.statuses, sums.said = dict(sums.statuses), dict(sums.said)
                sums.lender.returned()
            members = sums.members
            for uid in {*redone, *changed, *out_of, *sums.joining, *self.unparked_uids}:
                kept = uid in settled and uid not in out_of
                was = uid in members
                if was and (not kept or uid in redone):
                    sums.remove(uid)
                if kept and (not was or uid in redone):
                    sums.add(uid, jobs[uid], settled[uid])
            if deltas.CHECK:
                keep = settled.keys() - out_of
                assert members.keys() == keep and all(members[uid][5] is settled[uid] for uid in keep), \
                    "_SettledSums moved by deltas"
        else:
            sums = _SettledSums()
            for uid in settled:
                if uid not in out_of:
                    sums.add(uid, jobs[uid], settled[uid])
        sums.joining = []
        sums.seq, sums.reg = snap.seq, self._reg
        if memo is not None:
            memo.settled_sums = sums
        return sums

    def release(self) -> None:
        """Drop what the session holds once its result is built (``run_session`` calls it; a caller that keeps
        the session to look into it, like the tests, does not).  The plugins' callbacks are closures over the
        session and their plugin, and the session holds them: every session is a knot of reference cycles around
        its snapshot (node arrays of every node), which only the cyclic collector could free, about 0.3 MB a
        session on the 1,523-node trace and a quarter of a simulation's CPU in collector passes.  Cutting the
        session's and its plugins' references lets reference counting free it all at once."""
        for plugin in self.plugins.values():
            plugin.__dict__.clear()
        self.nodes.drop_views()
        self.__dict__.clear()

    def close(self) -> SessionResult:
        """Run the plugins' close hooks, then build the ``SessionResult`` (Volcano's ``closeSession``: the job
        updater's PodGroup statuses and ``RecordJobStatusEvent``, then ``updateQueueStatus``)."""
        for name, plugin in self.plugins.items():
            t0 = time.perf_counter()
            plugin.on_session_close(self)
            self.plugin_seconds[(name, "OnSessionClose")] = time.perf_counter() - t0
        nodes = self.nodes
        out = SessionResult(binds=dict(self.binds), bind_tasks=list(self.bind_tasks),
                            evictions=list(self.evictions), skipped=dict(self.snapshot.skipped_jobs),
                            skipped_pods=dict(self.snapshot.skipped_pods),
                            stats=SessionStats(rollbacks=self.rollbacks, action_seconds=dict(self.action_seconds),
                                               plugin_seconds=dict(self.plugin_seconds)),
                            resource_names=list(self.res.names), total=self.total_resource,
                            used=nodes.used_total(),
                            fair_mask=self.res.fair_mask, nodes=len(nodes))
        if self.selector.ties is not None:
            names = self.nodes.names
            out.ties = {uid: [names[i] for i in idx] for uid, idx in self.selector.ties.items()}
        if self.topology.ties is not None:
            topo = self.topology.topo
            out.hypernode_ties = {uid: {topo.names[h]: [self.nodes.names[i] for i in
                                                       np.flatnonzero(topo.members[h, :len(self.nodes)])]
                                        for h in sorted(hs)} for uid, hs in self.topology.ties.items()}
        #: per queue, the allocated vector of each of its jobs holding something, in job order (``_held``)
        held_rows: dict[str, list[np.ndarray]] = {}
        carry = self.carry
        phases: dict[str, dict[str, int]] = {}
        tasks: dict[str, list[int]] = {}
        pods = 0
        invalid, pg_conditions = self.invalid, self.pg_conditions
        no_conds: dict[str, dict[str, Any]] = {}
        topology_why = self.topology.why
        settled = self.settled
        ready_sig = (SCHEDULED, "True", GANG_READY, "")
        settle = self._can_settle
        left: dict[str, tuple[PodGroupStatus, _CloseCounts]] = {}
        # with settled jobs, the others are done first; with a few, every status is put in job order at the end,
        # with many, the changed ones over those carried (``SessionResult.podgroups``)
        podgroups: dict[str, PodGroupStatus] = {}
        if not settled:
            out.podgroups = podgroups
        held_of: dict[str, np.ndarray] | None = {} if settled else None
        pending = PodGroupPhase.Pending  # a Pending PodGroup is enqueue's (or allocate's to promote): never settled
        # parked jobs (``_settled_jobs``): Pending jobs enqueue refused under this session's epoch, status carried
        park = self._can_park
        parked = self.parked
        blocked = self.blocked
        block, blocked_now = self._can_block, self.blocked_now
        inqueue = PodGroupPhase.Inqueue
        parked_now: dict[str, tuple[PodGroupStatus, _CloseCounts]] = {}
        looked_at: list[str] = []  # the jobs parked after a look in this session (their group may be new)
        sm = self.memo
        free_epoch = sm.free_epoch if sm is not None else -1
        refusals = sm.memo.enqueue if sm is not None else {}

        def one(job: JobInfo) -> int:
            """The job's status and its part of its queue's counts; its pods."""
            uid = job.uid
            pg = job.podgroup
            assert pg is not None
            conds = pg_conditions.get(uid, no_conds)
            # carried while the job is unchanged (framework/incremental/carry.py: ``carried``, spelled out on this hot path)
            quiet: tuple[tuple[int, str], tuple[Any, ...]] | None = None
            waiting: tuple[Any, ...] | None = None
            st: PodGroupStatus | None = None
            if carry and job.version == job.cloned_from >= 0:
                key = (job.version, pg.phase)
                hit = job.derived.get("close")
                if hit is not None and hit[0] == key:
                    c = hit[1]
                else:
                    c = _CloseCounts(job)
                    job.derived["close"] = (key, c)
                # a job with nothing waiting, no fit error, no objection and the same conditions as in the last
                # session gets the very status object of the last session: the writers skip it (``apply``)
                if not (c.waiting or c.pipelined or job.nodes_fit_errors or job.enqueue_reason or uid in invalid
                        or (topology_why and uid in topology_why)):
                    quiet = (key, _conditions_sig(conds))
                    last = job.derived.get("status")
                    if last is not None and last[0] == quiet:
                        st = last[1]
                elif not c.pipelined:
                    # a waiting job (pending pods, refused by enqueue, fit errors, an objection): its status is
                    # rebuilt from exactly these inputs, so with the same ones it is last session's object again,
                    # conditions and all (equal dicts, transition id included: gang hands back its own condition
                    # with this session's id); what ``_podgroup_status`` adds to ``out`` is added again
                    waiting = (key, job.enqueue_reason, job.job_fit_errors, tuple(job.nodes_fit_errors.items()),
                               invalid.get(uid), topology_why.get(uid) if topology_why else None)
                    last = job.derived.get("waiting-status")
                    if last is not None and last[0] == waiting and last[1][0].conditions == list(conds.values()):
                        st, said = last[1]
                        if said is not None:
                            out.unschedulable[uid] = said
            else:
                c = _CloseCounts(job)
            if st is None:
                st, why = self._podgroup_status(out, job, c, conds)
                if quiet is not None and not why:
                    job.derived["status"] = (quiet, st)
                elif waiting is not None:
                    job.derived["waiting-status"] = (waiting, (st, out.unschedulable.get(uid)))
            if settle and quiet is not None and not c.pending and quiet[1] == ready_sig and pg.phase != pending and \
                    job.derived.get("status", (None,))[0] == quiet and job.derived["status"][1] is st:
                # nothing pending, ready, valid, quiet: the next session may leave it alone (``_settled_jobs``)
                job.derived["settled"] = ((job.version, pg.phase, self._reg), (st, c))
            elif park and waiting is not None and pg.phase == pending and not c.held and job.enqueue_reason \
                    and not job.fit_failed_roles and pg.network_topology is None and not pg.sub_group_policy:
                # refused by enqueue under this session's epoch, with the status of last session: parked
                e = refusals.get(uid)
                if e is not None and e.key[0] == free_epoch and e.key[1] == job.cloned_from \
                        and e.enqueue_reason == job.enqueue_reason and conds.keys() <= _GANG_WAITING:
                    # (``st`` is the job's carried waiting status: a waiting job's status is always kept there)
                    parked_now[uid] = (st, c)
                    looked_at.append(uid)
            elif block and waiting is not None and uid in blocked_now and pg.phase == inqueue and not c.held \
                    and not job.enqueue_reason and UNSCHEDULABLE in conds and conds.keys() <= _GANG_WAITING \
                    and pg.network_topology is None and not pg.sub_group_policy \
                    and not job.pending_best_effort_task_num():
                # allocate found it blocked under the memo, with its carried waiting status: left alone as a
                # settled job that the next session's allocate checks first (``_settled_jobs``, blocked jobs)
                job.derived["settled"] = ((job.version, pg.phase, self._reg), (st, c))
            podgroups[uid] = st
            phase = st.phase
            counts = phases.get(job.queue)
            if counts is None:
                counts = phases[job.queue] = {}
                tasks[job.queue] = [0, 0]
            counts[phase] = counts.get(phase, 0) + 1
            tc = tasks[job.queue]
            tc[0] += c.held
            tc[1] += c.pending
            if c.held:
                r = held_rows.get(job.queue)
                if r is None:
                    held_rows[job.queue] = [job.allocated]
                else:
                    r.append(job.allocated)
                if held_of is not None:
                    held_of[uid] = job.allocated
            return c.pods

        looked: list[str] = []  # the jobs looked at one by one (the next snapshot hands them over again)
        for job in (self.unsettled_jobs() if settled else self.jobs.values()):
            pods += one(job)
            looked.append(job.uid)

        def misfit(uid: str, job: JobInfo) -> bool:
            """Whether the session changed or wrote on this settled (or parked) job, so that its carried record
            no longer stands (a parked job carries its own enqueue reason)."""
            return bool(job.version != job.cloned_from or uid in pg_conditions
                        or (job.nodes_fit_errors and uid not in blocked)
                        or (job.enqueue_reason and uid not in parked) or uid in invalid
                        or (topology_why and uid in topology_why))
        held_of_settled: Callable[[str], np.ndarray | None] = _no_row
        carried_statuses: dict[str, PodGroupStatus] | None = None
        #: beside ``looked``, the jobs of the map that may not be left alone: out of ``left`` and ``parked_now``
        extra: Iterable[str] = ()
        #: the jobs that may have left the parked map since the last session (None: not known, all compared)
        leavers: list[str] | None = None
        if settled:
            jobs = self.jobs
            assert held_of is not None
            if len(settled) >= _SUMS_FROM:
                # the settled jobs the session left alone (``_settled_jobs``): last session's status and counts.  Only
                # a job the session touched, or with a condition, an objection or a topology reason, can be otherwise
                # (nothing else in a session writes on a job it does not look at): those are checked one by one
                misfits: list[JobInfo] = []
                out_of: set[str] = set()
                odd = self.touched.union(pg_conditions, invalid, topology_why or ())
                for uid in odd:
                    if uid not in settled or uid in podgroups:
                        continue
                    job = jobs[uid]
                    if misfit(uid, job):
                        misfits.append(job)
                        out_of.add(uid)
                out_of.update(uid for uid in podgroups if uid in settled)
                sums = self._settled_sums(out_of)
                pods += sums.pods
                for q, counts_q in sums.counts.items():
                    counts = phases.get(q)
                    if counts is None:
                        counts = phases[q] = {}
                        tasks[q] = [0, 0]
                    for ph, n in counts_q.items():
                        if n:
                            counts[ph] = counts.get(ph, 0) + n
                    tasks[q][0] += sums.held_n.get(q, 0)
                    tasks[q][1] += sums.pending_n.get(q, 0)
                if sums.said:  # the parked jobs' reasons, as their carried statuses give them (not copied: lent)
                    out.unschedulable = ChainMap(out.unschedulable, sums.said)
                if sums.whole:  # one row per queue: exact in any order
                    for q, row in sums.held.items():
                        if sums.held_n.get(q):
                            held_rows.setdefault(q, []).append(row)
                else:  # each job's row, so that ``_held`` sees the fractions and adds them in job order
                    for q, _, _, _, mrow, _ in sums.members.values():
                        if mrow is not None:
                            held_rows.setdefault(q, []).append(mrow)
                # the parked jobs go to the next snapshot apart (left alone only under the same epoch), the
                # settled ones in ``Snapshot.settled_only``: the snapshot's maps, in place (the session that made
                # them is over)
                only = self.snapshot.settled_only
                for uid in out_of:
                    only.pop(uid, None)
                left = only
                if parked:  # the jobs parked after a look join them (they were not settled: no key in common)
                    parked.update(parked_now)
                    for uid in out_of:
                        parked.pop(uid, None)
                    parked_now = parked
                    changed = self.snapshot.changed
                    leavers = [*changed, *self.unparked_uids, *out_of] if changed is not None else None
                for job in misfits:
                    pods += one(job)
                extra = out_of
                members = sums.members
                carried_statuses = sums.statuses
                sums.joining = looked_at
                sums.lender.lend(out)

                def settled_row(uid: str) -> np.ndarray | None:
                    m = members.get(uid)
                    return m[4] if m is not None else None
                held_of_settled = settled_row
            else:
                # a few settled jobs (the trace's sessions): one by one, cheaper than keeping sums
                misfits = []
                for uid, hit in settled.items():
                    if uid in podgroups:  # changed in the session (an eviction): done above
                        continue
                    job = jobs[uid]
                    if misfit(uid, job):
                        misfits.append(job)
                        continue
                    sst, sc = hit
                    if uid in parked:  # parked: its reason, its pending pods, and parked again
                        parked_now[uid] = hit
                        if sst.reason:
                            out.unschedulable[uid] = sst.reason
                    else:
                        if uid in blocked and sst.reason:  # blocked: its reason (gang's message), its pending pods
                            out.unschedulable[uid] = sst.reason
                        if not job.fit_failed_roles:  # nothing written on the clone: the next snapshot may keep it
                            left[uid] = hit
                    pods += sc.pods
                    podgroups[uid] = sst
                    q = job.queue
                    counts = phases.get(q)
                    if counts is None:
                        counts = phases[q] = {}
                        tasks[q] = [0, 0]
                    sphase = sst.phase
                    counts[sphase] = counts.get(sphase, 0) + 1
                    if sc.pending:
                        tasks[q][1] += sc.pending
                    if sc.held:
                        tasks[q][0] += sc.held
                        r = held_rows.get(q)
                        if r is None:
                            held_rows[q] = [job.allocated]
                        else:
                            r.append(job.allocated)
                        held_of[uid] = job.allocated
                for job in misfits:
                    pods += one(job)
                extra = settled
            if carried_statuses is None:
                out.podgroups = {uid: podgroups[uid] if uid in podgroups else settled[uid][0] for uid in jobs}
            else:  # the changed statuses over the carried ones (lent, not copied: ``_settled_sums`` copies them
                # before it moves them if this result is still alive then)
                out.changed_podgroups, out.carried_podgroups = podgroups, carried_statuses
                out.podgroups = ChainMap(podgroups, carried_statuses)
        out.pods = pods
        memo = self.snapshot.memo
        if memo is not None and settle:
            seq = self.snapshot.seq
            memo.left_alone = (seq, left)
            # the jobs of the map the session did not leave alone: the next snapshot hands them over again
            exclude = parked_now if park else {}
            not_left = [uid for uid in looked if uid not in exclude]
            not_left.extend(uid for uid in extra if uid not in left and uid not in exclude)
            if deltas.CHECK:
                assert set(not_left) == {uid for uid in self.jobs if uid not in left and uid not in exclude}, \
                    "BlockedMemo.not_left"
            memo.not_left = (seq, not_left)
            # the blocked jobs left alone (those newly blocked the next snapshot finds by their settled record)
            memo.blocked_left = (seq, [uid for uid in blocked if uid in left])
            if park:
                memo.parked_left = (seq, free_epoch, parked_now)
                self._keep_park_groups(parked_now, looked_at, leavers)
        if self.evicted_for or self.last_tx:
            self._nominations(out)
        if held_of is not None:  # with settled jobs the rows are not in job order: ``_held`` may need that order
            order = held_of
            by_job = self.jobs

            def in_order(q: str) -> list[np.ndarray]:
                rows = []
                for uid, j in by_job.items():
                    if j.queue != q:
                        continue
                    r = order.get(uid)
                    if r is None:
                        r = held_of_settled(uid)
                    if r is not None:
                        rows.append(r)
                return rows
            out.queues = self._queue_statuses(_held(held_rows, in_order), phases, tasks)
        else:
            out.queues = self._queue_statuses(_held(held_rows), phases, tasks)
        problems = self.state.get(QUEUE_PROBLEMS)
        out.queue_problems = list(problems) if problems else []
        return out

    def _keep_park_groups(self, parked: dict[str, Any], looked_at: list[str], leavers: list[str] | None) -> None:
        """Bring ``BlockedMemo.park_groups`` to the jobs this session parks: those of the last session's groups
        that left taken out, those it parked after a look (new, or maybe under another reason) put in their group,
        each at its place in job order.  Kept only with a job-order key (``framework/order.py``).  ``leavers``:
        the only jobs that can have left since the last session's groups (None: found by comparing the maps);
        then only ``looked_at`` can have joined."""
        memo = self.snapshot.memo
        assert memo is not None
        key = job_order_key(self)
        if key is None:
            memo.park_groups, memo.park_where = None, {}
            return
        groups, where = memo.park_groups, memo.park_where
        if groups is None or memo.park_groups_seq != self.snapshot.seq - 1 or memo.park_groups_reg is not self._reg:
            groups, where = {}, {}
            leavers = None

        def leave(uid: str) -> None:
            g, k = where.pop(uid)
            lst = groups[g]
            del lst[bisect.bisect_left(lst, k)]
            if not lst:
                del groups[g]
        if leavers is None:
            for uid in where.keys() - parked.keys():
                leave(uid)
            joiners = dict.fromkeys((*looked_at, *(parked.keys() - where.keys())))
        else:
            for uid in dict.fromkeys(leavers):
                if uid in where and uid not in parked:
                    leave(uid)
            joiners = dict.fromkeys(looked_at)
        jobs = self.jobs
        for uid in joiners:
            if uid in where:
                leave(uid)
            job = jobs[uid]
            pg = job.podgroup
            assert pg is not None and pg.min_resources is not None  # refused by enqueue: it has minResources
            g = (job.queue, pg.min_resources.tobytes(), job.enqueue_reason)
            k = key(job)
            bisect.insort(groups.setdefault(g, []), k)
            where[uid] = (g, k)
        if deltas.CHECK:
            assert where.keys() == parked.keys(), "BlockedMemo.park_where moved by deltas"
        memo.park_groups, memo.park_where = groups, where
        memo.park_groups_seq, memo.park_groups_reg = self.snapshot.seq, self._reg

    def _nominations(self, out: SessionResult) -> None:
        """Each pod's ``status.nominatedNodeName`` to write: Volcano's ``RecordJobStatusEvent`` asks
        ``JobInfo.TaskSchedulingReason`` (pkg/scheduler/api/job_info.go) about every allocated, pending and
        pipelined pod that is not scheduling-gated; from the pod's last discarded transaction if it has one, else
        from its state now, a pod *pipelined after evictions* is nominated to that node.  ``cache.taskUnschedulable``
        (cache/cache.go) writes it only when it is not empty and differs from the pod's (never clearing one)."""
        last = self.last_tx
        copied: set[str] = set()
        jobs_of = dict(self.evicted_for)
        for uid, tx in last.items():
            jobs_of[uid] = tx[3]
        for uid, job_uid in jobs_of.items():
            job = self.jobs.get(job_uid)
            task = job.tasks.get(uid) if job is not None else None
            if task is None or task.sch_gated or task.status not in _REASONED:
                continue
            ctx = last.get(uid)
            status, node, evicted = (ctx[0], ctx[1], ctx[2]) if ctx is not None else (
                task.status, task.node_name, uid in self.evicted_for)
            if status != TaskStatus.Pipelined or not evicted or not node or node == task.nominated_node:
                continue
            st = out.podgroups.get(job_uid)
            if st is not None:
                if job_uid not in copied:  # the status may be carried to later sessions: this one's own copy
                    copied.add(job_uid)
                    st = out.podgroups[job_uid] = replace(st, conditions=list(st.conditions),
                                                          pod_conditions=dict(st.pod_conditions),
                                                          nominated=dict(st.nominated))
                st.nominated[uid] = node
                out.nominated[uid] = node

    def _podgroup_status(self, out: SessionResult, job: JobInfo, c: _CloseCounts,
                         conds: dict[str, dict[str, Any]]) -> tuple[PodGroupStatus, str]:
        """The job's ``PodGroupStatus`` from its counts and this session's verdict (Volcano's ``jobStatus``,
        framework/session.go, and ``cache.RecordJobStatusEvent``), with why it is not scheduled ("" when it is);
        adds its pipelined pods and reason to ``out``."""
        uid = job.uid
        pg = job.podgroup
        assert pg is not None
        for t_uid, node in c.pipelined:
            out.pipelined[t_uid] = node
            out.pipelined_jobs[t_uid] = uid
        phase = str(_phase(pg, c, UNSCHEDULABLE in conds))
        st = PodGroupStatus(phase, list(conds.values()), c.running, c.succeeded, c.failed)
        why = ""
        if UNSCHEDULABLE in conds:
            why = conds[UNSCHEDULABLE]["message"]
        elif job.enqueue_reason and phase == PodGroupPhase.Pending:
            why = job.enqueue_reason
        invalid = self.invalid
        if uid in invalid:
            why = f"{why}; {invalid[uid]}" if why else invalid[uid]
        if why:
            out.unschedulable[uid] = why
            st.reason = why
        elif job.nodes_fit_errors:
            st.reason = f"{len(job.nodes_fit_errors)} task(s) not placed: {job.first_fit_error()}"
        # cache.RecordJobStatusEvent (pkg/scheduler/cache/cache.go): the PodGroup event, and each pending pod's
        # PodScheduled condition with its own fit errors, else the job's
        waiting = c.waiting
        if why or (waiting and phase != PodGroupPhase.Running):
            st.event = ("Warning", UNSCHEDULABLE, why or job.job_fit_errors or ALL_NODES_UNAVAILABLE)
        elif phase == PodGroupPhase.Running:
            st.event = _READY_EVENT
        if waiting:
            base = why or job.job_fit_errors or ALL_NODES_UNAVAILABLE
            fit = job.nodes_fit_errors
            for t_uid in waiting:
                fe = fit.get(t_uid)
                st.pod_conditions[t_uid] = str(fe) if fe else base
        topology_why = self.topology.why
        if topology_why:
            note = topology_why.get(uid)
            if note and uid in out.unschedulable:  # cycle's explanation only: Volcano's condition text is unchanged
                out.unschedulable[uid] = st.reason = f"{out.unschedulable[uid]}; {note}"
            elif note and st.reason:  # a ready job whose later sub-groups (or pods) found no hypernode
                st.reason = f"{st.reason}; {note}"
        return st, why

    def _queue_statuses(self, held: dict[str, np.ndarray], phases: dict[str, dict[str, int]],
                        tasks: dict[str, list[int]]) -> dict[str, QueueStatus]:
        """Each queue's status: ``allocated`` as Volcano's ``updateQueueStatus`` (framework/session.go) sums it,
        PodGroup counts by phase, and the fairness plugin's deserved/allocated/share (proportion's or
        capacity's queue attributes, which they keep in ``state`` under the key their class declares in
        ``Plugin.queue_share``, the first of ``state.QUEUE_SHARES`` a configured plugin declares)."""
        fair = None
        shares = {plugin.queue_share for plugin in self.plugins.values()}
        for key in QUEUE_SHARES:  # the first kind of queue share a configured plugin declares it keeps
            if key in shares:
                fair = self.state.get(key)
                break
        res = self.res
        zeros: np.ndarray | None = None
        no_counts: dict[str, int] = {}
        lists = _RESOURCE_LISTS.get(res)
        if lists is None or len(lists) > 4096:
            lists = _RESOURCE_LISTS[res] = {}
        out: dict[str, QueueStatus] = {}
        for name in self.queues:
            v = held.get(name)
            if v is None:
                v = zeros = res.zeros() if zeros is None else zeros
            # the same allocation as in an earlier session (most queues, most sessions): its list again
            vkey = v.tobytes()
            rl = lists.get(vkey)
            if rl is None:
                rl = lists[vkey] = resource_list(res, v)
            c = phases.get(name, no_counts)
            tc = tasks.get(name, _NO_TASKS)
            q = QueueStatus(name, dict(rl), v, pending=c.get(PodGroupPhase.Pending, 0),
                            inqueue=c.get(PodGroupPhase.Inqueue, 0), running=c.get(PodGroupPhase.Running, 0),
                            unknown=c.get(PodGroupPhase.Unknown, 0), completed=c.get(PodGroupPhase.Completed, 0),
                            allocated_tasks=tc[0], pending_tasks=tc[1])
            if fair:
                a = fair.get(name)
                if a is not None:
                    q.fair = FairShare(a.weight, a.deserved, a.allocated, a.request, a.guarantee, a.capability,
                                       a.real_capability, a.share)
            out[name] = q
        return out


_READY_EVENT = ("Normal", SCHEDULED, "pod group is ready")
_NO_TASKS = (0, 0)
#: per resource index, a queue allocation's bytes -> its ``resource_list`` (``_queue_statuses``; each status gets
#: its own copy of the dict); emptied when it grows past a few thousand allocations
_RESOURCE_LISTS: dict[ResourceIndex, dict[bytes, dict[str, str]]] = {}


class _CloseCounts:
    """What ``Session.close`` reads of a job's tasks, counted once; carried between sessions while the job is
    unchanged (``framework/incremental/carry.py``)."""

    __slots__ = ("completed", "failed", "held", "pending", "pipelined", "pods", "running", "scheduled",
                 "succeeded", "waiting")

    def __init__(self, job: JobInfo) -> None:
        index = job.index
        running, succeeded, failed = (index.get(TaskStatus.Running), index.get(TaskStatus.Succeeded),
                                      index.get(TaskStatus.Failed))
        self.pods = len(job.tasks)
        self.running = len(running) if running else 0
        self.succeeded = len(succeeded) if succeeded else 0
        self.failed = len(failed) if failed else 0
        # Volcano's getPodGroupPhase: scheduled tasks (api.ScheduledStatus) plus Releasing ones still on a node
        scheduled = job.count(SCHEDULED_STATUS)
        releasing = index.get(TaskStatus.Releasing)
        if releasing:
            scheduled += sum(1 for t in releasing.values() if t.node_name)
        self.scheduled = scheduled
        self.completed = job.count(COMPLETED)
        held = self.running
        for s in _HELD:
            b = index.get(s)
            if b:
                held += len(b)
        self.held = held
        pending = index.get(TaskStatus.Pending)
        self.pending = len(pending) if pending else 0
        #: pending pods that are not scheduling-gated (each gets a PodScheduled condition)
        self.waiting = tuple(t.uid for t in pending.values() if not t.sch_gated) if pending else ()
        pipelined = index.get(TaskStatus.Pipelined)
        self.pipelined = tuple((t.uid, t.node_name) for t in pipelined.values()) if pipelined else ()


def _no_row(uid: str) -> np.ndarray | None:
    return None


#: from this many settled jobs on, close keeps their sums between sessions (``_SettledSums``); below it the sets
#: and sums cost more than adding the few jobs one by one (the bundled trace's sessions)
_SUMS_FROM = 64


class _SettledSums:
    """What ``close`` adds for the settled jobs a session left alone, kept from one session to the next and moved
    only by the jobs that join or leave that set (``Session._settled_sums``): pods, PodGroups per queue and phase,
    held pods and held resources per queue.  Exact: counts are integers, and resource sums are used only while
    every amount is a whole number and the sums of their magnitudes stay below 2**53 (``whole``)."""

    __slots__ = ("bound", "counts", "held", "held_n", "joining", "lender", "members", "pending_n", "pods", "reg",
                 "said", "seq", "statuses", "whole")

    def __init__(self) -> None:
        self.seq = -1
        self.reg: Any = None
        #: uid -> (queue, phase, held pods, pods, allocated row or None, the settled record)
        self.members: dict[str, tuple[str, str, int, int, np.ndarray | None, Any]] = {}
        self.pods = 0
        self.counts: dict[str, dict[str, int]] = {}
        self.held_n: dict[str, int] = {}
        self.held: dict[str, np.ndarray] = {}
        #: pending pods per queue, and each parked job's reason (``SessionResult.unschedulable``)
        self.pending_n: dict[str, int] = {}
        self.said: dict[str, str] = {}
        #: each member's carried status (``SessionResult.carried_podgroups``)
        self.statuses: dict[str, PodGroupStatus] = {}
        self.bound = 0.0
        self.whole = True
        #: the jobs the session that kept these sums parked after a look: settled in the next one, not members yet
        self.joining: list[str] = []
        #: ``statuses`` and ``said`` are handed to that session's result as they are (``framework/incremental/deltas.py``)
        self.lender = Lender()

    def add(self, uid: str, job: JobInfo, rec: tuple[PodGroupStatus, _CloseCounts]) -> None:
        st, c = rec
        q, phase = job.queue, st.phase
        row = job.allocated.copy() if c.held else None  # a copy: a later session may change the clone's in place
        self.members[uid] = (q, phase, c.held, c.pods, row, rec)
        self.statuses[uid] = st
        self.pods += c.pods
        counts = self.counts.get(q)
        if counts is None:
            counts = self.counts[q] = {}
        counts[phase] = counts.get(phase, 0) + 1
        if phase == PodGroupPhase.Pending or c.pending:  # a parked or blocked job (settled ones have no pending pod)
            if c.pending:
                self.pending_n[q] = self.pending_n.get(q, 0) + c.pending
            if st.reason:
                self.said[uid] = st.reason
        if row is not None:
            self.held_n[q] = self.held_n.get(q, 0) + c.held
            h = self.held.get(q)
            self.held[q] = row.copy() if h is None else h + row
            if self.whole:
                mag = float(np.abs(row).max(initial=0.0))
                self.bound += mag
                if self.bound >= _EXACT or not np.array_equal(row, np.rint(row)):
                    self.whole = False

    def remove(self, uid: str) -> None:
        q, phase, held, pods, row, rec = self.members.pop(uid)
        del self.statuses[uid]
        self.pods -= pods
        self.counts[q][phase] -= 1
        pending = rec[1].pending
        if phase == PodGroupPhase.Pending or pending:
            if pending:
                self.pending_n[q] -= pending
            self.said.pop(uid, None)
        if row is not None:
            self.held_n[q] -= held
            self.held[q] = self.held[q] - row


def _held(rows: dict[str, list[np.ndarray]],
          in_order: Callable[[str], list[np.ndarray]] | None = None) -> dict[str, np.ndarray]:
    """Each queue's sum of its jobs' allocated vectors, exactly what adding them one after the other in job order
    gives: in one NumPy sum when every amount is a whole number and the sums stay below 2**53 (then every order of
    addition is exact), else one after the other, in job order (``in_order(queue)`` gives the rows in that order
    when ``rows`` are not)."""
    out: dict[str, np.ndarray] = {}
    for q, rs in rows.items():
        if len(rs) == 1:
            out[q] = rs[0].copy()
            continue
        m = np.concatenate(rs).reshape(len(rs), -1)  # faster than np.array on a list of vectors
        if np.array_equal(m, np.rint(m)) and float(np.abs(m).sum(axis=0).max(initial=0.0)) < _EXACT:
            out[q] = m.sum(axis=0)
        else:
            if in_order is not None:
                rs = in_order(q)
            h = rs[0].copy()
            for r in rs[1:]:
                h += r
            out[q] = h
    return out


#: below this every partial sum of whole numbers is exact in a float64
_EXACT = float(2**53)


def _phase(pg: PodGroup, c: _CloseCounts, unschedulable: bool) -> PodGroupPhase:
    """Volcano's ``getPodGroupPhase`` from the job's counts (see ``Session.job_phase``)."""
    if c.running and unschedulable:
        return PodGroupPhase.Unknown
    if c.scheduled >= pg.min_member:
        return PodGroupPhase.Completed if c.scheduled == c.completed else PodGroupPhase.Running
    if pg.phase != PodGroupPhase.Inqueue:
        return PodGroupPhase.Pending
    return pg.phase


#: the pods ``RecordJobStatusEvent`` writes a condition (and nominated node) for
_REASONED = (TaskStatus.Allocated, TaskStatus.Pending, TaskStatus.Pipelined)

#: Volcano's AllocatedStatus (api/helpers.go) besides Running: what a queue's ``status.allocated`` counts
_HELD = (TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Allocated)


def _conditions_sig(conds: dict[str, dict[str, Any]]) -> tuple[Any, ...]:
    """What a writer compares of a job's session conditions: type, status, reason and message of each, in order
    (the transition id and times are the session's own; ``framework/result.py: conditions_key``)."""
    if len(conds) == 1:
        for c in conds.values():
            return (c["type"], c["status"], c["reason"], c["message"])
    return tuple((c["type"], c["status"], c["reason"], c["message"]) for c in conds.values())


_NO_FNS: dict[int, dict[str, tuple[tuple[()], ...]]] = {}


def _no_fns(n_tiers: int) -> dict[str, tuple[tuple[()], ...]]:
    """Every point with ``n_tiers`` empty tiers (one shared read-only value per tier count)."""
    got = _NO_FNS.get(n_tiers)
    if got is None:
        empty = ((),) * n_tiers
        got = _NO_FNS[n_tiers] = {p: empty for p in POINTS}
    return got


def _tier_of(options: dict[str, tuple[int, PluginOption]], plugin: str, flag: str | None) -> int | None:
    """``Registration.tier`` over a session's own ``options`` (after a plugin registered under an alias)."""
    got = options.get(plugin)
    if got is None:
        return 0
    return got[0] if got[1].enabled(flag) else None


def _constant(name: str) -> str:
    """``jobOrder`` -> ``JOB_ORDER``: a point's constant in ``points``."""
    return "".join(f"_{c}" if c.isupper() else c.upper() for c in name)


def _fallback(lc: float, rc: float, lu: str, ru: str) -> int:
    """Volcano's default when no plugin decides: older first, then by name."""
    if lc != rc:
        return -1 if lc < rc else 1
    return -1 if lu < ru else (1 if lu > ru else 0)


def open_session(snapshot: Snapshot, conf: SchedulerConf, engine: str = "vector") -> Session:
    return Session(snapshot, conf, engine).open()


__all__ = ["EventHandler", "Eviction", "PodGroupStatus", "QueueStatus", "Rule", "Session", "SessionResult",
           "SessionStats", "open_session"]
