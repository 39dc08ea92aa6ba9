"""nodeorder (``pkg/scheduler/plugins/nodeorder/nodeorder.go``): Kubernetes' node scores, weighted and added.

Scores are on Kubernetes' 0..100 scale, times the ``<name>.weight`` argument:
``leastrequested`` (default weight 1): mean over cpu and memory of (allocatable - requested) / allocatable;
``mostrequested`` (0): mean of requested / allocatable; ``balancedresource`` (1): 1 - |cpu fraction -
memory fraction| / 2 (the standard deviation of two fractions); ``nodeaffinity`` (2): the raw sum of matching
preferred-term weights, as Volcano adds it without normalising; ``tainttoleration`` (3): fewer untolerated
PreferNoSchedule taints is better, normalised by the largest count (100 when none has any) over every node of the
session, where Kubernetes and Volcano take the nodes that passed the filters (a fixed scale keeps it a per-node
score, cached per template, with an exact per-node form).
"requested" is what the node's pods request plus this pod; pods requesting nothing count as nothing
(Kubernetes' non-zero defaults of 100m/200MB are not applied).
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._k8s import LabelIndex, preferred_score, untolerated
from pyvolcano.plugins._podaffinity import register_scores

MAX_NODE_SCORE = 100.0


def _fractions(ssn: Session, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """requested/allocatable for cpu and memory (each of len(idx)), including the task; 1 where nothing is
    allocatable.  Column by column: this runs for every placed pod, usually on one node."""
    nodes = ssn.nodes
    out = []
    for d in (0, 1):
        alloc = nodes.allocatable[idx, d]
        req = nodes.used[idx, d] + task.resreq[d]
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(np.where(alloc > 0, req / np.where(alloc > 0, alloc, 1), 1.0))
    return out[0], out[1]


def _unit(x: np.ndarray) -> np.ndarray:
    """Clip to [0, 1] (np.clip costs twice as much on tiny arrays)."""
    return np.minimum(np.maximum(x, 0.0), 1.0)


def _unit1(x: float) -> float:
    return min(max(x, 0.0), 1.0)


@register_plugin
class NodeOrder(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        a = self.arguments
        least = a.get_float("leastrequested.weight", 1)
        most = a.get_float("mostrequested.weight", 0)
        balanced = a.get_float("balancedresource.weight", 1)
        affinity = a.get_float("nodeaffinity.weight", 2)
        taint = a.get_float("tainttoleration.weight", 3)
        li: LabelIndex = ssn.state.setdefault("labels", LabelIndex(ssn.nodes))

        if least or most or balanced:
            # The vector and the per-node form do the same float operations in the same order, so they agree
            # exactly (the vector engine uses the per-node form when only a few nodes changed).
            def resource_scores(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                fcpu, fmem = _fractions(ssn, task, idx)
                s = np.zeros(len(idx))
                if least:
                    s += least * MAX_NODE_SCORE * ((_unit(1 - fcpu) + _unit(1 - fmem)) / 2)
                if most:
                    s += most * MAX_NODE_SCORE * ((_unit(fcpu) + _unit(fmem)) / 2)
                if balanced:
                    s += balanced * MAX_NODE_SCORE * (1 - np.abs(_unit(fcpu) - _unit(fmem)) / 2)
                return s

            alloc_all, used_all = ssn.nodes.allocatable, ssn.nodes.used

            def resource_score(task: TaskInfo, node: NodeInfo) -> float:
                i = node.index
                a, b = float(alloc_all[i, 0]), float(alloc_all[i, 1])
                fc = (float(used_all[i, 0]) + float(task.resreq[0])) / a if a > 0 else 1.0
                fm = (float(used_all[i, 1]) + float(task.resreq[1])) / b if b > 0 else 1.0
                s = 0.0
                if least:
                    s += least * MAX_NODE_SCORE * ((_unit1(1 - fc) + _unit1(1 - fm)) / 2)
                if most:
                    s += most * MAX_NODE_SCORE * ((_unit1(fc) + _unit1(fm)) / 2)
                if balanced:
                    s += balanced * MAX_NODE_SCORE * (1 - abs(_unit1(fc) - _unit1(fm)) / 2)
                return s
            ssn.add_node_order(self.name, vector=resource_scores, scalar=resource_score)

        if affinity:
            ssn.add_node_order(self.name, vector=lambda t, idx: affinity * preferred_score(li, t.pod, idx),
                               static=True)

        if taint and len(li.tainted):
            nodes = ssn.nodes
            top_count: dict[object, float] = {}  # per pod template: the largest untolerated count of the session

            def count(task: TaskInfo, i: int) -> float:
                return float(len(untolerated(task.pod, nodes.specs[i].taints, ("PreferNoSchedule",))))

            def top(task: TaskInfo) -> float:
                """Kubernetes normalises this score by the largest count among the nodes; here over every node
                of the session, once per template, so the vector and the per-node form agree."""
                key = task.template_key
                if key not in top_count:
                    top_count[key] = max((count(task, int(i)) for i in li.tainted), default=0.0)
                return top_count[key]

            def taint_scores(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                counts = np.zeros(len(idx))
                for j in np.nonzero(np.isin(idx, li.tainted))[0]:
                    counts[j] = count(task, int(idx[j]))
                t = top(task)
                if t == 0:
                    return np.full(len(idx), taint * MAX_NODE_SCORE)
                return taint * (MAX_NODE_SCORE - counts * MAX_NODE_SCORE / t)

            def taint_score(task: TaskInfo, node: NodeInfo) -> float:
                t = top(task)
                return taint * (MAX_NODE_SCORE - count(task, node.index) * MAX_NODE_SCORE / t) if t else \
                    taint * MAX_NODE_SCORE
            ssn.add_node_order(self.name, vector=taint_scores, scalar=taint_score, static=True)

        # Kubernetes' InterPodAffinity, PodTopologySpread and ImageLocality scores (plugins/_podaffinity.py)
        register_scores(ssn, self.name, a.get_float("podaffinity.weight", 2),
                        a.get_float("podtopologyspread.weight", 2), a.get_float("imagelocality.weight", 1))
