"""Why a node wins: each pending pod's best nodes with every plugin's score, for ``pyvolcano cycle -v``.

kube-scheduler-simulator shows a per-plugin score breakdown for each pod; this is the same for a Volcano session.
The breakdown is taken when the session opens, before any action places a pod, from the same node-order
registrations the actions use (``Session.scores`` and ``batch_scores``; Volcano's ``Session.NodeOrderFn`` /
``BatchNodeOrderFn`` in ``pkg/scheduler/framework/session_plugins.go``), over the nodes that pass every predicate
(``framework/node_select.py``).  It reaches the front-end as ``SessionResult.scores``, like every other output
of a session: no front-end opens a session itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.fit_errors import insufficient_reason
from pyvolcano.api.resource import fit_floor
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.points import BatchScoreError

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session


@dataclass
class NodeScore:
    node: str
    total: float
    #: plugin name -> its weighted score on this node ("batch" for the batch node-order plugins together)
    plugins: dict[str, float] = field(default_factory=dict)


@dataclass
class ScoreBreakdown:
    """One pending pod: how many nodes pass every check (the predicates and the resources), the best of them,
    best first, and the others counted under the first check each fails (the fit-error summary's count)."""

    feasible_nodes: int
    best: list[NodeScore] = field(default_factory=list)
    #: reason -> how many nodes refuse the pod for it (each node once, under its first failure)
    failed: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"feasibleNodes": self.feasible_nodes,
                "best": [{"node": b.node, "total": b.total, "plugins": dict(b.plugins)} for b in self.best],
                "failed": dict(self.failed)}


def score_breakdown(ssn: Session, top: int) -> dict[str, ScoreBreakdown]:
    """Per pending pod uid, the ``top`` best nodes that pass every predicate and have the resources the pod
    requests (future idle, as allocate takes them), with each plugin's score (ties kept in node order, as the
    selector keeps them); the nodes refused are counted by reason (``NodeSelector.explain``), not ranked."""
    out: dict[str, ScoreBreakdown] = {}
    names = ssn.nodes.names
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.status != TaskStatus.Pending:
                continue
            _, mask = ssn.selector.feasible(task, job)
            if len(names):
                mask = mask & (ssn.nodes.future_idle() > fit_floor(task.init_resreq)).all(axis=1)
            failed = dict(ssn.selector.explain(task, job).reasons) if not mask.all() else {}
            idx = np.nonzero(mask)[0]
            per: dict[str, np.ndarray] = {}
            for sc in ssn.scores:
                per[sc.plugin] = per.get(sc.plugin, np.zeros(len(idx))) + sc.scores(ssn, task, idx, ssn.engine)
            views = [ssn.nodes.views[i] for i in idx]
            for fn in ssn.batch_scores:
                try:
                    got = fn(task, views) or {}
                except BatchScoreError:  # a failed batch score counts nothing here (allocate finds no node)
                    got = {}
                per["batch"] = per.get("batch", np.zeros(len(idx))) + np.array(
                    [float(got.get(v.name, 0.0)) for v in views])
            total = sum(per.values(), np.zeros(len(idx)))
            best = np.argsort(-total, kind="stable")[:top]
            out[task.uid] = ScoreBreakdown(len(idx), [
                NodeScore(names[idx[k]], round(float(total[k]), 4),
                          {p: round(float(v[k]), 4) for p, v in per.items()}) for k in best], failed)
    return out


# --- why one job waits: its path through the session as it opens ------------------------------------------------

#: what the resources check is called in a path (Volcano's allocate checks the node's idle and future idle
#: resources itself, ``actions/allocate/allocate.go``, before the predicates)
RESOURCES = "resources"


@dataclass
class EnqueueVote:
    """One plugin's answer to ``jobEnqueueable`` (Volcano's ``Session.JobEnqueueable``,
    ``framework/session_plugins.go``) and the reason it recorded when it refused."""

    plugin: str
    vote: str  # "permit", "reject" or "abstain"
    reason: str = ""


@dataclass
class NodeGroup:
    """Nodes that refuse a task for the same reasons, each reason as (plugin, text)."""

    reasons: tuple[tuple[str, str], ...]
    nodes: list[str]


@dataclass
class TaskPath:
    """Pods of one job that the nodes treat alike: which nodes pass every check, and why the others refuse."""

    pods: list[str]
    request: dict[str, float]
    feasible: list[str]
    refused: list[NodeGroup]
    #: resource -> (the pod's request, the largest node's allocatable), for each resource no node has enough of
    too_big: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class JobPath:
    uid: str
    phase: str
    queue: str
    min_member: int
    pods: int
    pending: list[str]
    nodes: int
    enqueue: list[EnqueueVote] = field(default_factory=list)
    tasks: list[TaskPath] = field(default_factory=list)


def find_job(ssn: Session, target: str) -> str | None:
    """The job uid of ``target``: a job (``ns/podgroup``) or one of its pods (``ns/pod``)."""
    if target in ssn.jobs:
        return target
    for uid, job in ssn.jobs.items():
        if target in job.tasks:
            return uid
    return None


def _vote_name(v: int) -> str:
    return "permit" if v > 0 else ("reject" if v < 0 else "abstain")


def job_path(ssn: Session, uid: str) -> JobPath:
    """The job ``uid`` as the session sees it when it opens: each enqueue plugin's vote (asked one by one, as
    Volcano's ``JobEnqueueable`` asks them in tier order), and for its pending pods, per node, every check that
    refuses them: the resources first (future idle, as allocate and the fit errors count them,
    ``node_select.NodeSelector.explain``), then each predicate plugin's own reason.  Unlike the fit-error
    summary, which charges each node to its first failure, every failure of every node is listed."""
    job = ssn.jobs[uid]
    pg = job.podgroup
    phase = str(pg.phase.value if pg is not None and hasattr(pg.phase, "value") else (pg.phase if pg else "Pending"))
    pending = sorted(t.uid for t in job.tasks.values() if t.status == TaskStatus.Pending)
    out = JobPath(uid, phase, job.queue, job.min_available, len(job.tasks), pending, len(ssn.nodes))
    if phase == "Pending":
        for tier in ssn.fns.get("jobEnqueueable", ()):
            for plugin, fn in tier:
                job.enqueue_reason = ""
                vote = int(fn(job))
                out.enqueue.append(EnqueueVote(plugin, _vote_name(vote), job.enqueue_reason if vote < 0 else ""))
        job.enqueue_reason = ""
    nodes, names, res = ssn.nodes, ssn.nodes.names, ssn.res.names
    sel = ssn.selector
    preds = (*sel.static_preds, *sel.dyn_preds, *sel.fresh_preds)
    alloc = nodes.allocatable if len(nodes) else None
    seen: dict[tuple[Any, ...], TaskPath] = {}
    all_idx = np.arange(len(nodes))
    for tuid in pending:
        task = job.tasks[tuid]
        per_node: list[list[tuple[str, str]]] = [[] for _ in names]
        if len(nodes):
            lack = ~(nodes.future_idle() > fit_floor(task.init_resreq))
            for i, d in zip(*np.nonzero(lack), strict=True):
                per_node[int(i)].append((RESOURCES, insufficient_reason(res[int(d)])))
            for p in preds:
                ok = p.mask(ssn, task, all_idx, ssn.engine)
                for i in np.nonzero(~ok)[0].tolist():
                    texts = (p.reason,) if p.reason is not None else p.explain(ssn, task, i)
                    per_node[i].extend((p.plugin, t) for t in texts or (f"node(s) rejected by {p.plugin}",))
        groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
        for i, rs in enumerate(per_node):
            groups.setdefault(tuple(rs), []).append(names[i])
        too_big: dict[str, tuple[float, float]] = {}
        if alloc is not None:
            biggest = alloc.max(axis=0)
            for d, name in enumerate(res):
                if task.init_resreq[d] > biggest[d] + 1e-9 and task.init_resreq[d] > 0:
                    too_big[name] = (float(task.init_resreq[d]), float(biggest[d]))
        request = {name: float(task.init_resreq[d]) for d, name in enumerate(res)
                   if task.init_resreq[d] > 0 and name != "pods"}
        key = (tuple(sorted((k, tuple(v)) for k, v in groups.items())), tuple(sorted(request.items())))
        if key in seen:
            seen[key].pods.append(tuid)
            continue
        tp = TaskPath([tuid], request, groups.pop((), []),
                      [NodeGroup(r, n) for r, n in sorted(groups.items(), key=lambda kv: -len(kv[1]))], too_big)
        seen[key] = tp
        out.tasks.append(tp)
    return out
