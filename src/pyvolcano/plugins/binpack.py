"""binpack (seed 000 §6.2): prefer nodes that the task fills most.

For each resource the task requests and that has a weight: weight * (used + request) / allocatable; a node
where any of them would exceed allocatable scores 0.  The sum is divided by the weights used, then scaled
to 0..100 times ``binpack.weight``.  Arguments: ``binpack.weight`` (1), ``binpack.cpu`` (1),
``binpack.memory`` (1), ``binpack.resources`` (extra names) and ``binpack.resources.<name>`` (their weight).
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session

MAX_NODE_SCORE = 100.0


@register_plugin
class Binpack(Plugin):
    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        a, res = self.arguments, ssn.res
        weight = a.get_float("binpack.weight", 1)
        weights = np.zeros(res.size)

        def weight_of(key: str) -> float:
            w = a.get_float(key, 1)
            return w if w >= 0 else 1.0  # Volcano: a negative resource weight means 1

        weights[res.pos["cpu"]] = weight_of("binpack.cpu")
        weights[res.pos["memory"]] = weight_of("binpack.memory")
        for name in (n.strip() for n in a.get_str("binpack.resources", "").split(",")):
            if name and name in res.pos:
                weights[res.pos[name]] = weight_of(f"binpack.resources.{name}")
        if weight <= 0 or not weights.any():
            return
        nodes = ssn.nodes

        def score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            dims = np.nonzero((task.resreq > 0) & (weights > 0))[0]
            if len(dims) == 0:
                return np.zeros(len(idx))
            alloc = nodes.allocatable[np.ix_(idx, dims)]
            final = nodes.used[np.ix_(idx, dims)] + task.resreq[dims]
            w = weights[dims]
            with np.errstate(divide="ignore", invalid="ignore"):
                per = np.where(alloc > 0, final * w / np.where(alloc > 0, alloc, 1), 0.0)
            over = (final > alloc + 0.1).any(axis=1)
            s = per.sum(axis=1) / w.sum() * MAX_NODE_SCORE * weight
            return np.where(over, 0.0, s)
        ssn.add_node_order(self.name, vector=score)
