"""What a session decided, as a plain record, and the one way it reaches a cluster.

``SessionResult`` is built once, when the session closes (``Session.close``), and is everything a front-end needs:
the binds, evictions and pipelined pods; every PodGroup's full status (phase, conditions, running/succeeded/failed
counts, the event to record and each pending pod's ``PodScheduled`` condition); every queue's status; one human
reason per job that is not fully placed; and the session's statistics.  No front-end reads the closed session,
``ssn.state`` or a plugin's internals.

``apply(result, writer)`` hands the result to a ``ClusterWriter`` -- the simulator's in-memory API
(``sim/engine.py: SimWriter``) or the Kubernetes writer (``kube/cluster_writer.py: KubeWriter``, joining
``kube/binder.py`` and ``kube/status.py``) -- in the order Volcano's session does it (binds and evictions as the
statements commit, then ``closeSession``: ``JobUpdater.UpdateAll`` for the PodGroups and their pods, then
``updateQueueStatus``; ``pkg/scheduler/framework/session.go``, ``job_updater.go``).  The status of a PodGroup
object is built by ``podgroup_status_body`` for both writers, so it is the same in a simulation and on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.explain import ScoreBreakdown

#: Volcano's ``api.AllNodeUnavailableMsg`` (``pkg/scheduler/api/unschedule_info.go``): the pod condition's message
#: when nothing more specific is known
ALL_NODES_UNAVAILABLE = "all nodes are unavailable"


@dataclass
class Eviction:
    task: TaskInfo
    reason: str


@dataclass
class PodGroupStatus:
    """A PodGroup's status after the session (Volcano's ``jobStatus`` in ``framework/session.go``), with what
    ``cache.RecordJobStatusEvent`` (``pkg/scheduler/cache/cache.go``) records for it."""

    phase: str
    #: this session's conditions (type, status, transitionID, reason, message); merged into the object's by type
    conditions: list[dict[str, Any]] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    #: the PodGroup event: ("Warning", "Unschedulable", msg) or ("Normal", "Scheduled", "pod group is ready")
    event: tuple[str, str, str] | None = None
    #: each pending, not scheduling-gated pod -> the message of its ``PodScheduled=False/Unschedulable`` condition
    pod_conditions: dict[str, str] = field(default_factory=dict)
    #: pods to nominate: pod -> node for its ``status.nominatedNodeName`` (pipelined after evictions; only when
    #: it differs from the pod's, Volcano's ``cache.taskUnschedulable``); written with the pod's condition
    nominated: dict[str, str] = field(default_factory=dict)
    #: why the job is not (fully) placed, for people ("" when it is): the ``unschedulable`` reason, or for a
    #: satisfied gang whose extra tasks found no node, how many and the first Kubernetes-style fit-error summary
    reason: str = ""

    def __getitem__(self, key: str) -> Any:
        """``status["phase"]`` as for the PodGroup object's status dict."""
        return getattr(self, key)


@dataclass
class FairShare:
    """A queue as the proportion or capacity plugin sees it after the session (Volcano's ``queueAttr``,
    ``pkg/scheduler/plugins/proportion/proportion.go`` and ``plugins/capacity/capacity.go``); vectors in the
    cache's internal units, +inf where unlimited."""

    weight: int
    deserved: np.ndarray
    allocated: np.ndarray
    request: np.ndarray
    guarantee: np.ndarray
    capability: np.ndarray
    real_capability: np.ndarray
    share: float


@dataclass
class QueueStatus:
    """A queue after the session: ``allocated`` is what Volcano's ``updateQueueStatus`` (framework/session.go)
    writes to ``status.allocated`` (the resources of the queue's tasks in an allocated status); the PodGroup
    counts by phase are what Volcano's queue controller writes (``pkg/controllers/queue``); ``fair`` is the
    proportion or capacity plugin's view (None without either, or for a queue it leaves out)."""

    name: str
    allocated: dict[str, str] = field(default_factory=dict)
    allocated_vector: np.ndarray | None = None
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0
    #: tasks holding resources (Volcano's allocated statuses) and pending tasks
    allocated_tasks: int = 0
    pending_tasks: int = 0
    fair: FairShare | None = None


@dataclass
class SessionStats:
    """Session statistics: gang roll-backs (statements discarded) and wall time per action and per plugin hook."""

    rollbacks: int = 0
    #: opening (plugins' OnSessionOpen) and closing (close hooks and this result) the session
    open_seconds: float = 0.0
    close_seconds: float = 0.0
    action_seconds: dict[str, float] = field(default_factory=dict)
    plugin_seconds: dict[tuple[str, str], float] = field(default_factory=dict)


@dataclass
class SessionResult:
    """Everything one session decided (see the module docstring).  ``podgroups``, ``unschedulable`` and the
    pod conditions are keyed by job uid (``namespace/podgroup``) and pod uid (``namespace/pod``)."""

    binds: dict[str, str] = field(default_factory=dict)
    bind_tasks: list[TaskInfo] = field(default_factory=list)
    #: pod -> the annotations its Binding carries (``TaskInfo.pod_annotations``: deviceshare's chosen GPUs,
    #: ``volcano.sh/vgpu-ids-new`` and the others), for the pods bound that have any
    bind_annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    evictions: list[Eviction] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    #: pipelined pod -> its job
    pipelined_jobs: dict[str, str] = field(default_factory=dict)
    #: every job's status, in no particular order (Volcano's job updater walks a Go map): a plain dict, or, when the
    #: session carried statuses, a ``ChainMap`` of ``changed_podgroups`` over ``carried_podgroups``
    podgroups: MutableMapping[str, PodGroupStatus] = field(default_factory=dict)
    #: the statuses the session carried unchanged from the last one for the jobs it left alone (settled and parked
    #: jobs, ``Plan.settled_jobs``: the very objects the last session handed over), and the others; ``apply``
    #: hands a writer that settles every status it writes (``ClusterWriter.settles_every_status``) only the others
    #: and those carried ones it did not write.  The carried map is the one the next session moves on: it is lent
    #: to this result, and copied before it changes only while this result is alive (``framework/incremental/deltas.py``)
    carried_podgroups: Mapping[str, PodGroupStatus] = field(default_factory=dict)
    changed_podgroups: dict[str, PodGroupStatus] = field(default_factory=dict)
    #: job -> why it is not scheduled (the Unschedulable condition's message, why it was not enqueued, or the
    #: jobValid objection); the ``pyvolcano cycle -o json`` contract.  With parked jobs, a ``ChainMap`` of the
    #: session's own over the parked jobs' carried reasons (lent as ``carried_podgroups`` is)
    unschedulable: MutableMapping[str, str] = field(default_factory=dict)
    #: jobs the snapshot left out (no PodGroup, unknown queue) -> why; and their pending pods -> why
    skipped: dict[str, str] = field(default_factory=dict)
    skipped_pods: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueStatus] = field(default_factory=dict)
    #: every pod whose ``status.nominatedNodeName`` the session sets (pod -> node; the ``nominated`` of the
    #: PodGroup statuses together)
    nominated: dict[str, str] = field(default_factory=dict)
    #: what the capacity plugin found wrong with the queue tree (``api.queue_validate.Problem``)
    queue_problems: list[Any] = field(default_factory=list)
    #: input a plugin left out, naming the object and field (``framework/state.py: PLUGIN_WARNINGS``)
    warnings: list[str] = field(default_factory=list)
    stats: SessionStats = field(default_factory=SessionStats)
    #: the cluster after the session: resource names, total allocatable, resources held on nodes, the resources
    #: fairness is computed over (``ResourceIndex.fair_mask``); vectors are in the cache's internal units
    resource_names: list[str] = field(default_factory=list)
    total: np.ndarray | None = None
    used: np.ndarray | None = None
    fair_mask: np.ndarray | None = None
    nodes: int = 0
    pods: int = 0
    #: with ``run_session(record_ties=True)``: per placed task, the nodes that scored as well as the chosen one
    ties: dict[str, list[str]] = field(default_factory=dict)
    #: with ``run_session(record_ties=True)``: per job, every hypernode that scored as well as the one chosen for
    #: it (or one of its sub-groups), with the nodes under it
    hypernode_ties: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: with ``run_session(explain=N)``: per pending pod, the N best nodes with each plugin's score
    #: (``framework/explain.py``, what ``pyvolcano cycle -v`` shows)
    scores: dict[str, ScoreBreakdown] = field(default_factory=dict)

    @property
    def action_seconds(self) -> dict[str, float]:
        return self.stats.action_seconds

    @property
    def plugin_seconds(self) -> dict[tuple[str, str], float]:
        return self.stats.plugin_seconds


class ClusterWriter(Protocol):
    """Where a session's decisions go: Volcano's Binder, Evictor and StatusUpdater (``pkg/scheduler/cache/
    interface.go``) plus its event recorder.  Each call is one intent; the writer decides how (an in-memory
    object store, or API calls in the background) and whether anything changed.  Two implementations: the
    simulator's ``sim/engine.py: SimWriter`` and the Kubernetes ``kube/cluster_writer.py: KubeWriter``.

    Besides the calls, a writer tells ``apply`` which statuses it has no need to be handed again (``settled``,
    ``settles_every_status``, ``unwritten``): a writer that keeps none has an empty ``settled``, is handed every
    status, and loses nothing but time."""

    # --- Binder and Evictor ------------------------------------------------------------------------------
    def bind(self, task: TaskInfo, node: str) -> None: ...

    def evict(self, task: TaskInfo, reason: str) -> None: ...

    # --- StatusUpdater ---------------------------------------------------------------------------------
    def update_podgroup_status(self, uid: str, status: PodGroupStatus) -> bool:
        """Write the PodGroup's status and record its event; False when there is no PodGroup object to write
        (its pods then get no condition either)."""
        ...

    @property
    def settled(self) -> Mapping[str, PodGroupStatus]:
        """Per PodGroup, the status object the writer last applied with nothing left in flight or to retry;
        ``apply`` does not hand it that object again (empty: every status is handed over)."""
        ...

    @property
    def settles_every_status(self) -> bool:
        """True when every status ``update_podgroup_status`` returns True for is settled at once (a synchronous
        writer): ``apply`` then hands it, of the statuses a session carried from the last one
        (``SessionResult.carried_podgroups``), only the ``unwritten`` ones, without walking the others."""
        ...

    @property
    def unwritten(self) -> AbstractSet[str]:
        """The PodGroups ``update_podgroup_status`` returned False for, or whose settled status the writer
        dropped since; read only when ``settles_every_status``."""
        ...

    def pod_condition(self, pod: str, message: str, nominated: str = "") -> None:
        """``PodScheduled=False``, reason ``Unschedulable``, with ``message`` (what cluster autoscalers read);
        with ``nominated``, ``status.nominatedNodeName`` too, in the same write (Volcano's one ``UpdatePodStatus``
        in ``cache.taskUnschedulable``)."""
        ...

    def nominate(self, pod: str, node: str) -> None:
        """``status.nominatedNodeName`` of a pod that gets no condition here (pipelined)."""
        ...

    def update_queue_status(self, status: QueueStatus) -> None: ...

    # --- the event recorder ----------------------------------------------------------------------------
    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None: ...


def apply(result: SessionResult, writer: ClusterWriter) -> None:
    """Hand every decision of ``result`` to ``writer``, in Volcano's order.

    A PodGroup whose status is the very object the writer last settled (``ClusterWriter.settled``) is skipped:
    ``Session.close`` hands a job the last session's status object only when its verdict is unchanged (same
    job version and PodGroup phase, same conditions, no pending pod, no fit error or objection; or, for a
    waiting job, the same enqueue reason, fit errors and objections too), so there is nothing new to write for
    it.  A writer settles a status only when nothing about it is left to write: the simulator's not while its
    pods wait (their conditions are written each session), the Kubernetes writer not while the job is not
    scheduled (``kube/status.py``)."""
    for task in result.bind_tasks:
        writer.bind(task, task.node_name)
    for ev in result.evictions:
        writer.evict(ev.task, ev.reason)
    settled = writer.settled
    carried = result.carried_podgroups
    todo: Iterable[tuple[str, PodGroupStatus]] = result.podgroups.items()
    if carried and writer.settles_every_status:
        # a carried status is the very object the last session handed over: settled then unless unwritten
        unwritten = writer.unwritten
        todo = [*result.changed_podgroups.items(), *((u, carried[u]) for u in unwritten if u in carried)]
    for uid, st in todo:
        if settled.get(uid) is st:
            continue
        if writer.update_podgroup_status(uid, st):
            nominated = st.nominated
            for pod, message in st.pod_conditions.items():
                writer.pod_condition(pod, message, nominated.get(pod, "") if nominated else "")
            for pod, node in nominated.items():
                if pod not in st.pod_conditions:
                    writer.nominate(pod, node)
    for pod, why in result.skipped_pods.items():
        writer.event("Pod", pod, "Warning", "FailedScheduling", why)
    for q in result.queues.values():
        writer.update_queue_status(q)


def conditions_key(conds: list[dict[str, Any]] | None) -> tuple[Any, ...]:
    return tuple((c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in conds or ())


def same_status(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """PodGroup status equality ignoring condition times and transition ids (as Volcano's job updater compares
    with ``isPodGroupStatusUpdated``, ``framework/job_updater.go``)."""
    if a is None or b is None:
        return False

    def norm(s: dict[str, Any]) -> tuple[Any, ...]:
        conds = tuple(sorted((c.get("type"), c.get("status"), c.get("reason") or "", c.get("message") or "")
                             for c in s.get("conditions") or []))
        return (s.get("phase") or "Pending", int(s.get("running") or 0), int(s.get("succeeded") or 0),
                int(s.get("failed") or 0), conds)

    return norm(a) == norm(b)


def merge_conditions(old: list[dict[str, Any]], new: list[dict[str, Any]], stamp: str) -> list[dict[str, Any]]:
    """Volcano's ``UpdatePodGroupCondition`` (framework/session.go): replace the condition of each type, keeping
    its ``lastTransitionTime`` when status, reason and message are unchanged."""
    out = [dict(c) for c in old]
    for c in new:
        c = {k: v for k, v in c.items() if v is not None}
        for i, o in enumerate(out):
            if o.get("type") == c.get("type"):
                same = all(o.get(k) == c.get(k) for k in ("status", "reason", "message"))
                c["lastTransitionTime"] = o.get("lastTransitionTime", stamp) if same else stamp
                out[i] = c
                break
        else:
            c["lastTransitionTime"] = stamp
            out.append(c)
    return out


def podgroup_status_body(old: dict[str, Any], st: PodGroupStatus, stamp: str) -> dict[str, Any]:
    """The PodGroup object's new ``status`` from its old one and the session's verdict (both writers use it)."""
    return {"phase": st.phase, "conditions": merge_conditions(old.get("conditions") or [], st.conditions, stamp),
            "running": st.running, "succeeded": st.succeeded, "failed": st.failed}


__all__ = ["ALL_NODES_UNAVAILABLE", "ClusterWriter", "Eviction", "FairShare", "PodGroupStatus", "QueueStatus",
           "SessionResult", "SessionStats", "apply", "conditions_key", "merge_conditions", "podgroup_status_body",
           "same_status"]
