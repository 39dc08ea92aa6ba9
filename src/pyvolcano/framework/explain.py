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
    """One pending pod: how many nodes pass the predicates, and the best of them, best first."""

    feasible_nodes: int
    best: list[NodeScore] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"feasibleNodes": self.feasible_nodes,
                "best": [{"node": b.node, "total": b.total, "plugins": dict(b.plugins)} for b in self.best]}


def score_breakdown(ssn: Session, top: int) -> dict[str, ScoreBreakdown]:
    """Per pending pod uid, the ``top`` best nodes that pass every predicate, with each plugin's score (ties
    kept in node order, as the selector keeps them)."""
    out: dict[str, ScoreBreakdown] = {}
    names = ssn.nodes.names
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.status != TaskStatus.Pending:
                continue
            _, mask = ssn.selector.feasible(task, job)
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
                          {p: round(float(v[k]), 4) for p, v in per.items()}) for k in best])
    return out
