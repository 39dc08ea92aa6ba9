"""nodegroup (``pkg/scheduler/plugins/nodegroup/nodegroup.go``): bind queues to groups of nodes labelled
``volcano.sh/nodegroup-name``.

A queue's ``spec.affinity`` lists groups under ``nodeGroupAffinity`` / ``nodeGroupAntiAffinity``, each with
``requiredDuringSchedulingIgnoredDuringExecution`` and ``preferredDuringSchedulingIgnoredDuringExecution``.
Once the plugin is enabled a node passes only if it carries the label and the queue's group lists admit it:
its group is in required or preferred affinity, or in preferred anti-affinity (a soft "rather not"), and is
not in required anti-affinity.  A queue without affinity (or a node without the label) therefore gets no
node, as in Volcano.  Scores: +100 for required affinity, +50 for preferred affinity, and a preferred
anti-affinity group scores -1 outright.  With ``enableHierarchy`` a queue without affinity inherits its
nearest ancestor's; with the argument ``strict: false`` a queue without affinity may use nodes that carry no
group label.  This is Volcano 1.13's plugin (the queue is the PodGroup's); Volcano 1.9 read the queue from the
pod's ``volcano.sh/queue-name`` label or annotation and left pods without one unconstrained.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.status import Status, reject_if
from pyvolcano.api.types import NODEGROUP_LABEL
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._shared import hierarchy_enabled, queue_tree

BASE_SCORE = 100.0


@dataclass
class GroupAffinity:
    required: set[str] = field(default_factory=set)
    preferred: set[str] = field(default_factory=set)
    anti_required: set[str] = field(default_factory=set)
    anti_preferred: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, q: QueueInfo) -> GroupAffinity | None:
        if not q.affinity:
            return None
        aff = q.affinity.get("nodeGroupAffinity") or {}
        anti = q.affinity.get("nodeGroupAntiAffinity") or {}
        req, pref = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
        # the lists hold group names (non-empty strings): ``api/models.py: QueueAffinity`` typed them
        return cls(set(aff.get(req) or ()), set(aff.get(pref) or ()), set(anti.get(req) or ()),
                   set(anti.get(pref) or ()))

    def reject(self, group: str) -> str | None:
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True
        if ok:
            return None
        if group in self.anti_required:
            return f"node group {group} is in the queue's required anti-affinity"
        return f"node group {group} is not in the queue's node group affinity"

    def score(self, group: str) -> float:
        s = 0.0
        if group in self.required:
            s += BASE_SCORE
        if group in self.preferred:
            s += 0.5 * BASE_SCORE
        if group in self.anti_preferred:
            s = -1.0
        return s


def queue_affinities(ssn: Session, hierarchy: bool) -> dict[str, GroupAffinity | None]:
    out = {name: GroupAffinity.of(q) for name, q in ssn.queues.items()}
    if hierarchy:
        tree = queue_tree(ssn.queues)
        for name in out:
            if out[name] is None:
                for anc in tree.ancestors(name):
                    if out.get(anc) is not None:
                        out[name] = out[anc]
                        break
    return out


@register_plugin
class NodeGroup(Plugin):
    name = "nodegroup"
    # a static predicate on the queue's node-group affinity (a Queue change moves the cache's epochs) and the
    # node's label (a Node change moves them); its scores read the same
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        affinity = queue_affinities(ssn, hierarchy_enabled(ssn, self.name))
        groups = [s.labels.get(NODEGROUP_LABEL) for s in ssn.nodes.specs]
        strict = self.arguments.get_bool("strict", True)

        def queue_of(task: TaskInfo) -> GroupAffinity | None:
            job = ssn.jobs.get(task.job)
            a = affinity.get(job.queue) if job else None
            return a if a is not None and (a.required or a.preferred or a.anti_required or a.anti_preferred) else None

        def reject(task: TaskInfo, node: NodeInfo) -> str | None:
            group = groups[node.index]
            a = queue_of(task)
            if group is None:
                return None if not strict and a is None else f"node has no {NODEGROUP_LABEL} label"
            if a is None:
                job = ssn.jobs.get(task.job)
                return f"queue {job.queue if job else '?'} has no node group affinity"
            return a.reject(group)

        def vector_pred(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            a = queue_of(task)
            if a is None:  # only unlabelled nodes, and only when not strict
                return np.fromiter((not strict and groups[i] is None for i in idx), bool, len(idx))
            return np.fromiter((groups[i] is not None and a.reject(groups[i]) is None for i in idx), bool, len(idx))

        def vector_score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            a = queue_of(task)
            if a is None:
                return np.zeros(len(idx))
            return np.fromiter((0.0 if groups[i] is None else a.score(groups[i]) for i in idx), float, len(idx))

        def scalar_score(task: TaskInfo, node: NodeInfo) -> float:
            return float(vector_score(task, np.array([node.index]))[0])

        def scalar_pred(task: TaskInfo, node: NodeInfo) -> Status | None:
            return reject_if(reject(task, node), self.name)

        # depends only on the task's queue and the node's labels: static, and the cache key includes the queue
        ssn.add_predicate(self.name, vector=vector_pred, scalar=scalar_pred, static=True)
        ssn.add_node_order(self.name, vector=vector_score, scalar=scalar_score, static=True)
