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

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.api.devices import DevicePool
from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import fit_floor, less_equal
from pyvolcano.api.status import Code, Status
from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import Snapshot
from pyvolcano.conf.loader import PluginOption, SchedulerConf
from pyvolcano.conf.registration import slots
from pyvolcano.errors import ConfigError
from pyvolcano.framework import registry
from pyvolcano.framework.closing import GANG_READY, SCHEDULED, UNSCHEDULABLE, build_result, job_phase
from pyvolcano.framework.explain import score_breakdown
from pyvolcano.framework.incremental.contracts import NONE, Contract, Contracts, VictimCondition
from pyvolcano.framework.incremental.memo import SessionMemo
from pyvolcano.framework.incremental.plan import Plan
from pyvolcano.framework.incremental.records import CloseCounts
from pyvolcano.framework.incremental.state import CarriedValues
from pyvolcano.framework.node_select import NodeSelector, PredicateReg, ScoreGroups, ScoreReg
from pyvolcano.framework.order import job_order_key
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import (
    ALLOCATABLE,
    BATCH_NODE_ORDER,
    BEST_NODE,
    CLUSTER_ORDER,
    DEVICE_CHOICE,
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
    DeviceChoiceFn,
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
    vote,
)
from pyvolcano.framework.result import (
    Eviction,
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    SessionStats,
)
from pyvolcano.framework.state import PROPORTION_QUEUES, SessionState
from pyvolcano.framework.topology import SessionTopology
from pyvolcano.framework.uids import session_uid


@dataclass
class EventHandler:
    """Volcano's Allocate/Deallocate event handlers: called as tasks gain or lose node resources."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


class Session:
    """One scheduling cycle (Volcano's framework.Session)."""

    def __init__(self, snapshot: Snapshot, conf: SchedulerConf, engine: str = "vector") -> None:
        self.uid = session_uid()
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
        self.predicates: list[PredicateReg] = []
        self.scores: list[ScoreReg] = []
        self.batch_scores: list[BatchNodeOrderFn] = []
        self.event_handlers: list[EventHandler] = []
        self.plugins: dict[str, Plugin] = {}
        #: the contracts each plugin's class declares, by conf name and by the name it registers under
        #: (``framework/incremental/contracts.py``): what the incremental layer may rely on
        self.contracts: dict[str, Contracts] = {}
        self.victim_conditions: dict[Callable[..., Any], VictimCondition] = {}  # by callback: victim_ledger.py
        self.binds: dict[str, str] = {}
        self.bind_tasks: list[TaskInfo] = []
        #: called with each task as it is dispatched, while the session goes on (Volcano's ``Statement.Commit`` ->
        #: ``cache.AddBindTask``, whose binder starts at once); the Kubernetes scheduler starts its ``pods/binding``
        #: there instead of after the whole session.  None: the binds are only recorded (``SessionResult.binds``)
        self.on_dispatch: Callable[[TaskInfo], None] | None = None
        self.evictions: list[Eviction] = []
        self.invalid: dict[str, str] = {}
        self.pg_conditions: dict[str, dict[str, Any]] = {}
        #: jobs one of whose tasks was evicted (or its eviction undone) in this session: the only change a settled
        #: job can see in a session (it has no pending, allocated or pipelined task to place or take back)
        self.touched: set[str] = set()
        #: what this session leaves alone (settled, parked, blocked jobs) and what it looks at, made by ``open``
        #: (``framework/incremental/plan.py``); the actions change it (``unpark``, ``unblock``, ``repark``)
        self.plan = Plan(self.jobs, snapshot.carry, self.touched)
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
        carry = snapshot.carry
        self.memo: SessionMemo | None = (
            SessionMemo(carry.state.memo, conf, carry.free_epoch, carry.use_epoch, carry.alloc_epoch, carry.room)
            if carry is not None else None)
        #: carry per-job values between sessions (``framework/incremental/carry.py``): with the memo, not with
        #: ``--full-sessions``
        self.carry = carry is not None

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
        lists = self.fns[point.name]
        if type(lists) is tuple:  # the shared empty tiers: this point's first registration
            lists = self.fns[point.name] = [*map(list, lists)]
        lists[ti].append((plugin, fn))  # type: ignore[attr-defined]  # a list of lists once made here

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

    def add_preemptable_fn(self, plugin: str, fn: EvictableFn, condition: VictimCondition | None = None) -> None:
        self._add(PREEMPTABLE, plugin, fn)
        if condition is not None:  # what ``fn`` never offers a victim without (``contracts.VictimCondition``)
            self.victim_conditions[fn] = condition

    def add_reclaimable_fn(self, plugin: str, fn: EvictableFn, condition: VictimCondition | None = None) -> None:
        self._add(RECLAIMABLE, plugin, fn)
        if condition is not None:
            self.victim_conditions[fn] = condition

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

    def add_device_choice_fn(self, plugin: str, fn: DeviceChoiceFn) -> None:
        self._add(DEVICE_CHOICE, plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def registered_only_by(self, point: Point[Any], contract: Contract) -> bool:
        """Whether every callback on ``point`` comes from a plugin whose class declares ``contract``."""
        contracts = self.contracts
        return all(contract in contracts.get(name, NONE) for tier in self.fns[point.name] for name, _ in tier)

    def unsettled_jobs(self) -> Iterable[JobInfo]:
        """The jobs a pass over the session's jobs must look at, in ``jobs`` order: all but the settled jobs the
        session has not changed (``Plan.unsettled_jobs``)."""
        return self.plan.unsettled_jobs()

    def carried_values(self) -> CarriedValues | None:
        """The values plugins carry whole from one session to the next under typed keys
        (``framework/incremental/state.py: CarryKey``); None when this session does not carry (``carry``)."""
        carry = self.snapshot.carry
        return carry.state.values if self.carry and carry is not None else None

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

    def job_enqueueable(self, job: JobInfo) -> bool:  # asked in every enqueue turn: ``points.vote``, not ``call``
        return vote(self.fns["jobEnqueueable"], job)

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

    def device_choice(self, task: TaskInfo, node: int, pool: DevicePool) -> list[int] | None:
        """A plugin's GPUs (device rows) for the task on the node, None for deviceshare's own (pyvolcano's point)."""
        return self.call("deviceChoice", task, node, pool) if self.has("deviceChoice") else None

    def best_node(self, task: TaskInfo, cand: np.ndarray, total: np.ndarray) -> int | None:
        """A plugin's bestNode choice among candidate nodes (index), or None to take the top score."""
        if not self.has("bestNode"):
            return None
        chosen = self.call("bestNode", task, ScoreGroups(self.nodes, np.nonzero(cand)[0], total))
        return None if chosen is None else chosen.index

    # --- node choice -------------------------------------------------------------------------------------
    def select_node(self, task: TaskInfo, job: JobInfo | None = None,
                    within: np.ndarray | None = None) -> tuple[int | None, bool]:
        """Best node for the task: (index, True) if it fits idle now, (index, False) if only future idle.
        ``within``: a node mask (the nodes of a hypernode) outside which no node is considered.  The pod's
        nominated node (``status.nominatedNodeName``, set after a previous session evicted for it) is tried first,
        as Volcano's ``allocateResourcesForTasks`` (actions/allocate/allocate.go) does: if it is a node of the
        session (and of ``within``), the pod's request fits its future idle and it passes every predicate, it is
        the pod's node whatever the scores; otherwise every node is considered."""
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

    # --- primitive state changes (``framework/statement.py: StatementHost``, and the session-level operations) --
    def _fire(self, task: TaskInfo, allocate: bool) -> None:
        for h in self.event_handlers:
            fn = h.allocate if allocate else h.deallocate
            if fn is not None:
                fn(task)

    def place(self, task: TaskInfo, i: int, status: TaskStatus) -> None:
        self.touched.add(task.job)
        job = self.jobs[task.job]
        job.update_task_status(task, status)
        task.node_name = self.nodes.names[i]
        self.nodes.add_task(i, task)
        self._fire(task, True)

    def unplace(self, task: TaskInfo) -> None:
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.remove_task(i, task)
        self.jobs[task.job].update_task_status(task, TaskStatus.Pending)
        task.node_name = ""
        self._fire(task, False)

    def start_eviction(self, task: TaskInfo) -> TaskStatus:
        old = task.status
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, TaskStatus.Releasing, self.jobs.get(task.job))
        self._fire(task, False)
        return old

    def undo_eviction(self, task: TaskInfo, old: TaskStatus, *, hide: bool = True) -> None:
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, old, self.jobs.get(task.job))
        if hide:
            self.unevicted[task.uid] = task
        self._fire(task, True)

    def dispatch(self, task: TaskInfo) -> None:
        """Hand an allocated task to the binder (recorded; the caller binds)."""
        self.touched.add(task.job)
        i = self.nodes.pos[task.node_name]
        self.nodes.update_task(i, task, TaskStatus.Binding, self.jobs[task.job])
        self.binds[task.uid] = task.node_name
        self.bind_tasks.append(task)
        if self.on_dispatch is not None:
            self.on_dispatch(task)

    def record_eviction(self, task: TaskInfo, reason: str) -> None:
        self.evictions.append(Eviction(task, reason))

    # --- session-level operations (Volcano's ssn.Allocate/Pipeline/Evict, used outside statements) ----
    def allocate(self, task: TaskInfo, i: int, *, check_binds: bool = False) -> str | None:
        """Volcano's ``ssn.Allocate`` (``framework/session.go``): place the task as Allocated; once the job is
        ready, dispatch its Allocated tasks.  ``check_binds``, for a caller that places regardless of the node's
        idle resources (backfill): stop at the first task whose bind the scheduler cache refuses (returned: why),
        which stays Allocated on its node, never bound (``dispatch``, ``cache.AddBindTask``)."""
        self.place(task, i, TaskStatus.Allocated)
        job = self.jobs[task.job]
        if not self.job_ready(job):
            return None
        for t in job.tasks_in(TaskStatus.Allocated):
            why = self._bind_fails(t) if check_binds else None
            if why is not None:
                return why
            self.dispatch(t)
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
        self.place(task, i, TaskStatus.Pipelined)

    def unpipeline(self, task: TaskInfo) -> None:
        """Volcano's ``Statement.UnPipeline`` outside a statement: the task is Pending again, off its node."""
        self.unplace(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.start_eviction(task)
        self.record_eviction(task, reason)

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
        return job_phase(pg, CloseCounts(job), UNSCHEDULABLE in self.pg_conditions.get(job.uid, {}))

    # --- lifecycle ---------------------------------------------------------------------------------------
    def open(self) -> Session:
        """Build every configured plugin (a fresh instance per session, as Volcano does).

        Jobs that fail jobValid stay in the session: Volcano's open-time JobValid check runs before any
        plugin has registered, so it never drops a job.  That matters: a PodGroup whose pods do not exist
        yet (a vcjob before its controller creates them) must still be enqueued.  allocate, backfill,
        preempt and reclaim ask ``job_valid`` themselves and skip such jobs."""
        plugins, seconds, contracts = self.plugins, self.plugin_seconds, self.contracts
        clock = time.perf_counter
        for ti, opt, args, cls, declared in self._reg.built():  # the conf's entries in order, resolved once
            name = opt.name
            try:
                plugin = cls(args)
                contracts[name] = contracts[plugin.name or name] = declared
            except ConfigError as exc:
                raise args.located(exc) from None
            plugins[name] = plugin
            # a plugin named ``module:Class`` in the conf registers under its own ``name``: same tier, flags
            alias = plugin.name
            if alias and alias not in self.options:
                if self.options is self._reg.options:  # this session's own copy, the conf's stays as it is
                    self.options, self._at = dict(self.options), dict(self._at)
                self.options[alias] = (ti, opt)
                self._at.update(slots(alias, ti, opt))
            t0 = clock()
            try:
                plugin.on_session_open(self)
            except ConfigError as exc:  # an argument read when the plugin opens: name the conf's file and line
                raise args.located(exc) from None
            seconds[(name, "OnSessionOpen")] = clock() - t0
        self.selector.reset()
        # the plan: what this session leaves alone (``framework/incremental/plan.py``)
        settle_ok = any(Contract.READY_CONDITION in c for c in self.contracts.values()) and \
            self.registered_only_by(JOB_VALID, Contract.VALID_BY_VERSION)
        self.plan.open(self._reg, self.carry, self.memo, settle_ok,
                       self._reg.action_contracts(self.conf.actions), lambda: job_order_key(self))
        return self

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
        updater's PodGroup statuses and ``RecordJobStatusEvent``, then ``updateQueueStatus``:
        ``framework/closing.py``)."""
        for name, plugin in self.plugins.items():
            t0 = time.perf_counter()
            plugin.on_session_close(self)
            self.plugin_seconds[(name, "OnSessionClose")] = time.perf_counter() - t0
        return build_result(self)


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


__all__ = ["GANG_READY", "SCHEDULED", "UNSCHEDULABLE", "EventHandler", "Eviction",
           "PodGroupStatus", "QueueStatus", "Rule", "Session", "SessionResult",
           "SessionStats", "open_session"]
