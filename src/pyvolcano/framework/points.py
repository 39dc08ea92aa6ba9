"""Extension points, each declared once: its name, the PluginOption flag that switches it, the rule that combines
its plugins' answers and the signature of its callbacks.

Volcano's session_plugins.go writes one tier loop per extension point and one ``Add...Fn`` per point.  Here a point
is a typed constant (``JOB_ORDER: Point[JobOrderFn]``): the ``Point``'s type parameter is the callback's signature,
so ``Session.add_fn(JOB_ORDER, name, fn)`` and the per-point ``Session.add_job_order_fn(name, fn)`` reject a
wrong-shaped ``fn`` under mypy.  ``combine`` implements each rule once.  ``tiers`` is always a list of tiers, each a
list of ``(plugin_name, fn)`` in conf order, already filtered by the plugin's enable flag.

The node points (``predicate``, ``nodeOrder``, ``batchNodeOrder``) are declared here too, with Volcano's per-node
signatures; their vector forms (``VectorPredicateFn``, ``VectorScoreFn``: all nodes at once) are registered with
``Session.add_predicate`` / ``add_node_order`` and combined by ``framework/node_select.py`` with the same rules,
element-wise (``ALL_PASS``: the masks are and-ed; ``SUM``: the score arrays are added), which that module checks
against this table when it is imported.

Answers come in four shapes, each Volcano's: an ``int`` comparison (orders), a ``bool`` (jobReady, allocatable,
overused ...), a ``Vote`` (jobPipelined, jobEnqueueable; with a victim list for preemptable/reclaimable) and a
``Status`` (``predicate``, ``prePredicate``, ``jobValid``: ``api/status.py``; ``None`` is a success).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any, Generic, TypeVar

import numpy as np

from pyvolcano.api.devices import DevicePool
from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.status import Code, Status
from pyvolcano.conf.flags import FLAGS


class Vote(IntEnum):
    """Volcano's ``util.Permit`` / ``Abstain`` / ``Reject`` (``pkg/scheduler/util/scheduler_helper.go``)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


PERMIT, ABSTAIN, REJECT = Vote.PERMIT, Vote.ABSTAIN, Vote.REJECT

# --- callback signatures (Volcano's api/types.go: CompareFn, ValidateFn, VoteFn, EvictableFn, PredicateFn ...) ----
#: orders: negative puts ``left`` first, 0 is no opinion
JobOrderFn = Callable[[JobInfo, JobInfo], int]
QueueOrderFn = Callable[[QueueInfo, QueueInfo], int]
TaskOrderFn = Callable[[TaskInfo, TaskInfo], int]
NamespaceOrderFn = Callable[[str, str], int]
ClusterOrderFn = Callable[[object, object], int]
#: (left, right, the preemptor's queue): negative evicts ``left``'s victims first
VictimQueueOrderFn = Callable[[QueueInfo, QueueInfo, QueueInfo], int]
#: Volcano's per-node filter: ``None`` or a success passes, any other status rejects with its reasons
PredicateFn = Callable[[TaskInfo, NodeInfo], Status | None]
#: a filter over the nodes at positions ``idx``: a boolean array, True where the node passes
VectorPredicateFn = Callable[[TaskInfo, np.ndarray], np.ndarray]
#: a status that is not a success rejects the task on every node
PrePredicateFn = Callable[[TaskInfo], Status | None]
#: Volcano's per-node score
NodeOrderFn = Callable[[TaskInfo, NodeInfo], float]
#: scores of the nodes at positions ``idx``: a float array
VectorScoreFn = Callable[[TaskInfo, np.ndarray], np.ndarray]
#: scores of the given nodes by node name (Volcano's BatchNodeOrderFn); raise ``BatchScoreError`` for its error
BatchNodeOrderFn = Callable[[TaskInfo, list[NodeInfo]], dict[str, float]]


class BatchScoreError(Exception):
    """A batchNodeOrder function failed (Volcano's ``BatchNodeOrderFn`` returning an error): as in Volcano's
    ``util.PrioritizeNodes``, the nodes being scored get no scores at all, so allocate finds no best node among
    that gradient of candidates and preempt no node to evict on (the extender plugin raises it)."""
#: the node to take among the candidates grouped by total score (Volcano's ``map[float64][]*NodeInfo``, read-only:
#: a group's ``NodeInfo`` views are made when read), or None for the top score
BestNodeFn = Callable[[TaskInfo, Mapping[float, Sequence[NodeInfo]]], NodeInfo | None]
#: a status that is not a success makes every action skip the job (Volcano's ValidateExFn)
JobValidFn = Callable[[JobInfo], Status | None]
JobReadyFn = Callable[[JobInfo], bool]
JobStarvingFn = Callable[[JobInfo], bool]
JobVoteFn = Callable[[JobInfo], Vote]
JobEnqueuedFn = Callable[[JobInfo], None]
#: sub-groups (Volcano's SubJobReady / SubJobPipelined / SubJobOrder, asked only for jobs with a subGroupPolicy)
SubJobReadyFn = Callable[[SubJob], bool]
SubJobVoteFn = Callable[[SubJob], Vote]
SubJobOrderFn = Callable[[SubJob, SubJob], int]
#: may the queue take this task (allocatable), may the queue reclaim for it (preemptive)
QueueTaskFn = Callable[[QueueInfo, TaskInfo], bool]
OverusedFn = Callable[[QueueInfo], bool]
#: (preemptor or reclaimer, candidates) -> (the candidates this plugin lets go, PERMIT or ABSTAIN)
EvictableFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], Vote]]
VictimTasksFn = Callable[[list[TaskInfo]], list[TaskInfo]]


@dataclass(frozen=True)
class EvictionContext:
    """Who asks a ``unifiedEvictable`` plugin for victims (Volcano's ``api.EvictionContext``, api/types.go): the
    kind of eviction (``GANG_PREEMPT`` / ``GANG_RECLAIM``), the starving job the victims make room for and the
    hypernode (name) whose nodes the candidates run on."""

    kind: str
    job: JobInfo
    hypernode: str


GANG_PREEMPT, GANG_RECLAIM = "gangpreempt", "gangreclaim"
#: (who asks, candidates in bundle order) -> (the candidates this plugin lets go, PERMIT, ABSTAIN or REJECT)
UnifiedEvictableFn = Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], Vote]]
TargetJobFn = Callable[[list[JobInfo]], JobInfo | None]
ReservedNodesFn = Callable[[], None]

#: pyvolcano's own point (not in Volcano): the GPUs deviceshare gives a gpushare task on the node at position
#: ``node`` (device rows of ``pool`` on that node), or None for Volcano's own choice (``gpushare.Allocate``)
DeviceChoiceFn = Callable[[TaskInfo, int, DevicePool], list[int] | None]

F = TypeVar("F", bound=Callable[..., Any])

Tiers = Sequence[Sequence[tuple[str, Callable[..., Any]]]]


class Rule(Enum):
    FIRST_DECIDES = "first non-zero answer across tiers wins (orders)"
    ALL_PASS = "every plugin must pass (predicates, allocatable, jobReady, preemptive)"
    SUM = "answers add up (node scores)"
    VOTE = "permit/abstain/reject: a reject wins, else the first tier with a permit permits; default permit"
    TIER_ALL = "the first tier with any plugin decides; all of that tier must say yes; default no"
    ANY = "any plugin saying yes makes it yes (overused)"
    INTERSECT = "victims: intersect within a tier; the first tier ending with victims wins, an empty tier defers"
    UNION = "victims: union within a tier, first tier with any wins"
    FIRST_RESULT = "first non-None answer wins (bestNode, targetJob, deviceChoice)"
    FIRST_FAILURE = "first Status that is not a success wins (jobValid, prePredicate); None and Success pass on"
    CALL_ALL = "every plugin is called; no answer (events, jobEnqueued, reservedNodes)"


@dataclass(frozen=True)
class Point(Generic[F]):
    """One extension point; ``F`` is its callbacks' signature (checked by mypy where they are registered)."""

    name: str
    flag: str | None
    rule: Rule


JOB_ORDER: Point[JobOrderFn] = Point("jobOrder", "enableJobOrder", Rule.FIRST_DECIDES)
QUEUE_ORDER: Point[QueueOrderFn] = Point("queueOrder", "enableQueueOrder", Rule.FIRST_DECIDES)
TASK_ORDER: Point[TaskOrderFn] = Point("taskOrder", "enableTaskOrder", Rule.FIRST_DECIDES)
NAMESPACE_ORDER: Point[NamespaceOrderFn] = Point("namespaceOrder", "enableNamespaceOrder", Rule.FIRST_DECIDES)
CLUSTER_ORDER: Point[ClusterOrderFn] = Point("clusterOrder", "enableClusterOrder", Rule.FIRST_DECIDES)
VICTIM_ORDER: Point[TaskOrderFn] = Point("victimOrder", "enableTaskOrder", Rule.FIRST_DECIDES)
VICTIM_QUEUE_ORDER: Point[VictimQueueOrderFn] = Point("victimQueueOrder", None, Rule.FIRST_DECIDES)
PREDICATE: Point[PredicateFn] = Point("predicate", "enablePredicate", Rule.ALL_PASS)
PRE_PREDICATE: Point[PrePredicateFn] = Point("prePredicate", "enablePredicate", Rule.FIRST_FAILURE)
NODE_ORDER: Point[NodeOrderFn] = Point("nodeOrder", "enableNodeOrder", Rule.SUM)
BATCH_NODE_ORDER: Point[BatchNodeOrderFn] = Point("batchNodeOrder", "enableNodeOrder", Rule.SUM)
BEST_NODE: Point[BestNodeFn] = Point("bestNode", "enableBestNode", Rule.FIRST_RESULT)
JOB_VALID: Point[JobValidFn] = Point("jobValid", None, Rule.FIRST_FAILURE)
JOB_READY: Point[JobReadyFn] = Point("jobReady", "enableJobReady", Rule.ALL_PASS)
JOB_PIPELINED: Point[JobVoteFn] = Point("jobPipelined", "enableJobPipelined", Rule.VOTE)
JOB_STARVING: Point[JobStarvingFn] = Point("jobStarving", "enableJobStarving", Rule.TIER_ALL)
JOB_ENQUEUEABLE: Point[JobVoteFn] = Point("jobEnqueueable", "enableJobEnqueued", Rule.VOTE)
JOB_ENQUEUED: Point[JobEnqueuedFn] = Point("jobEnqueued", "enableJobEnqueued", Rule.CALL_ALL)
ALLOCATABLE: Point[QueueTaskFn] = Point("allocatable", "enabledAllocatable", Rule.ALL_PASS)
OVERUSED: Point[OverusedFn] = Point("overused", "enabledOverused", Rule.ANY)
PREEMPTABLE: Point[EvictableFn] = Point("preemptable", "enablePreemptable", Rule.INTERSECT)
RECLAIMABLE: Point[EvictableFn] = Point("reclaimable", "enableReclaimable", Rule.INTERSECT)
PREEMPTIVE: Point[QueueTaskFn] = Point("preemptive", "enablePreemptive", Rule.ALL_PASS)
#: Volcano's ``Session.UnifiedEvictable`` (gangpreempt, gangreclaim): the same tier rule as preemptable, but no
#: enable flag switches it off
UNIFIED_EVICTABLE: Point[UnifiedEvictableFn] = Point("unifiedEvictable", None, Rule.INTERSECT)
VICTIM_TASKS: Point[VictimTasksFn] = Point("victimTasks", "enabledVictim", Rule.UNION)
TARGET_JOB: Point[TargetJobFn] = Point("targetJob", "enableTargetJob", Rule.FIRST_RESULT)
RESERVED_NODES: Point[ReservedNodesFn] = Point("reservedNodes", "enableReservedNodes", Rule.CALL_ALL)
SUB_JOB_READY: Point[SubJobReadyFn] = Point("subJobReady", "enabledSubJobReady", Rule.ALL_PASS)
SUB_JOB_PIPELINED: Point[SubJobVoteFn] = Point("subJobPipelined", "enabledSubJobPipelined", Rule.VOTE)
SUB_JOB_ORDER: Point[SubJobOrderFn] = Point("subJobOrder", "enabledSubJobOrder", Rule.FIRST_DECIDES)
#: pyvolcano's extension (Volcano chooses a task's GPUs inside deviceshare, with no plugin asked): no flag
DEVICE_CHOICE: Point[DeviceChoiceFn] = Point("deviceChoice", None, Rule.FIRST_RESULT)

_DECLARED: list[Point[Any]] = [
    JOB_ORDER, QUEUE_ORDER, TASK_ORDER, NAMESPACE_ORDER, CLUSTER_ORDER, VICTIM_ORDER, VICTIM_QUEUE_ORDER,
    PREDICATE, PRE_PREDICATE, NODE_ORDER, BATCH_NODE_ORDER, BEST_NODE, JOB_VALID, JOB_READY, JOB_PIPELINED,
    JOB_STARVING, JOB_ENQUEUEABLE, JOB_ENQUEUED, ALLOCATABLE, OVERUSED, PREEMPTABLE, RECLAIMABLE, PREEMPTIVE,
    UNIFIED_EVICTABLE, VICTIM_TASKS, TARGET_JOB, RESERVED_NODES, SUB_JOB_READY, SUB_JOB_PIPELINED, SUB_JOB_ORDER,
    DEVICE_CHOICE,
]
POINTS: dict[str, Point[Any]] = {p.name: p for p in _DECLARED}

_unknown = sorted({p.flag for p in POINTS.values() if p.flag} - set(FLAGS))
if _unknown:  # a point switched by a flag the conf loader would reject as unknown
    raise ImportError(f"extension point flags missing from pyvolcano.conf.flags.FLAGS: {', '.join(_unknown)}")


def combine(rule: Rule, tiers: Tiers, *args: Any) -> Any:
    """Apply ``rule`` to the registered functions with ``args`` (see ``Rule`` for each meaning)."""
    if rule is Rule.FIRST_DECIDES:
        for tier in tiers:
            for _, fn in tier:
                r = fn(*args)
                if r:
                    return r
        return 0
    if rule is Rule.ALL_PASS:
        for tier in tiers:
            for _, fn in tier:
                if not fn(*args):
                    return False
        return True
    if rule is Rule.SUM:
        return sum(fn(*args) for tier in tiers for _, fn in tier)
    if rule is Rule.VOTE:
        return vote(tiers, *args)
    if rule is Rule.TIER_ALL:
        for tier in tiers:
            if tier:
                return all(fn(*args) for _, fn in tier)
        return False
    if rule is Rule.ANY:
        return any(fn(*args) for tier in tiers for _, fn in tier)
    if rule is Rule.INTERSECT:
        return _intersect(tiers, *args)
    if rule is Rule.UNION:
        for tier in tiers:
            found: dict[str, Any] = {}
            for _, fn in tier:
                for t in fn(*args) or ():
                    found[t.uid] = t
            if found:
                return list(found.values())
        return []
    if rule is Rule.FIRST_RESULT:
        for tier in tiers:
            for _, fn in tier:
                r = fn(*args)
                if r is not None:
                    return r
        return None
    if rule is Rule.FIRST_FAILURE:
        for tier in tiers:
            for _, fn in tier:
                r = fn(*args)
                if r is not None and r.code != Code.SUCCESS:
                    return r
        return None
    for tier in tiers:  # CALL_ALL
        for _, fn in tier:
            fn(*args)
    return None


def vote(tiers: Tiers, *args: Any) -> bool:
    """``Rule.VOTE``: the first reject denies; a tier with a permit (and no reject) allows without asking the next
    tier; abstentions everywhere allow.  ``Session.job_enqueueable`` calls it directly (enqueue asks it in every
    turn, parked groups' checks included)."""
    for tier in tiers:
        permitted = False
        for _, fn in tier:
            r = fn(*args)
            if r < 0:
                return False
            if r > 0:
                permitted = True
        if permitted:
            return True
    return True


if JOB_ENQUEUEABLE.rule is not Rule.VOTE:  # ``Session.job_enqueueable`` calls ``vote`` itself
    raise ImportError(f"Session.job_enqueueable votes (Rule.VOTE); the table says {JOB_ENQUEUEABLE.rule.name}")


def _intersect(tiers: Tiers, actor: Any, candidates: list[Any]) -> list[Any]:
    """Volcano's ``Session.Preemptable`` / ``Session.Reclaimable`` (framework/session_plugins.go, master
    ed72c7c8): a plugin returns (victims, vote) and ABSTAIN skips it.  An empty answer resets the victim
    list and ends the tier; otherwise the answer is intersected with the tier's list so far (an empty
    intersection is Go's nil slice: the list is reset, and a later plugin of the tier starts it afresh).
    A tier that ends with victims gives them; a tier that ends with none leaves the decision to the next
    tier, which starts from scratch (since Volcano v1.11 an earlier empty answer no longer vetoes later
    tiers)."""
    for tier in tiers:
        victims: list[Any] | None = None
        for _, fn in tier:
            cands, vote = fn(actor, candidates)
            if vote == ABSTAIN:
                continue
            if not cands:
                victims = None
                break
            if victims is None:
                victims = list(cands)
            else:
                keep = {t.uid for t in cands}
                victims = [t for t in victims if t.uid in keep] or None
        if victims:
            return victims
    return []
