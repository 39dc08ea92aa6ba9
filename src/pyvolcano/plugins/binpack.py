"""binpack (``pkg/scheduler/plugins/binpack/binpack.go``): prefer nodes that the task fills most.

For each resource the task requests and that has a weight: weight * (used + request) / allocatable; a node
where any of them would exceed allocatable scores 0.  The sum is divided by the weights used, then scaled
to 0..100 times ``binpack.weight``.  Arguments: ``binpack.weight`` (1), ``binpack.cpu`` (1),
``binpack.memory`` (1), ``binpack.resources`` (extra names) and ``binpack.resources.<name>`` (their weight).
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.resource import ResourceIndex
from pyvolcano.conf.arguments import Arguments
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session

MAX_NODE_SCORE = 100.0


def _weights(a: Arguments, res: ResourceIndex) -> tuple[float, np.ndarray]:
    """binpack's weight and per-resource weights from its arguments (a read-only array)."""
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
    weights.flags.writeable = False
    return weight, weights


@register_plugin
class Binpack(Plugin):
    name = "binpack"
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        a, res = self.arguments, ssn.res
        nodes = ssn.nodes
        # from the specs alone: kept per node set (``NodeStatic.derived``), not recomputed every session; the
        # weights from the arguments (one read-only ``Arguments`` per conf) and the resource index likewise
        derived = nodes.static.derived
        got = derived.get("binpack-weights")
        if got is not None and got[0] is a and got[1] is res:
            weight, weights, carry, off, zero_key = got[2]
        else:
            weight, weights = _weights(a, res)
            carry = (weight, *weights.tolist())
            off = weight <= 0 or not weights.any()
            zero_key = "binpack-has-zero-" + "".join("1" if w > 0 else "0" for w in weights)
            derived["binpack-weights"] = (a, res, (weight, weights, carry, off, zero_key))
        if off:
            return
        alloc_all = nodes.allocatable
        safe_alloc = derived.get("binpack-safe-alloc")
        if safe_alloc is None:
            safe_alloc = derived["binpack-safe-alloc"] = np.where(alloc_all > 0, alloc_all, 1.0)
            safe_alloc.flags.writeable = False
        has_zero = derived.get(zero_key)
        if has_zero is None:
            has_zero = derived[zero_key] = bool((alloc_all[:, weights > 0] <= 0).any())
        top = MAX_NODE_SCORE * weight
        per_template: dict[object, tuple[np.ndarray, np.ndarray, float, list[tuple[int, float, float]]] | None] = {}

        def prepared(task: TaskInfo) -> tuple[np.ndarray, np.ndarray, float, list[tuple[int, float, float]]] | None:
            """(dims, the task's request in them, sum of their weights, [(dim, weight, request)]), once per
            pod template; None when the task asks for none of the weighted resources."""
            key = task.template_key
            if key not in per_template:
                dims = np.nonzero((task.resreq > 0) & (weights > 0))[0]
                per_template[key] = None if not len(dims) else (
                    dims, task.resreq[dims], float(weights[dims].sum()),
                    [(int(d), float(weights[d]), float(task.resreq[d])) for d in dims])
            return per_template[key]

        # Both forms compute Volcano's used * weight / allocatable per resource and add the resources left to
        # right, so they agree to the last bit (the vector engine uses the scalar one when few nodes changed).
        def score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            p = prepared(task)
            if p is None:
                return np.zeros(len(idx))
            dims, req, wsum, _ = p
            cells = (idx[:, None], dims)
            final = nodes.used[cells] + req
            per = final * weights[dims] / safe_alloc[cells]
            if has_zero:
                per = np.where(alloc_all[cells] > 0, per, 0.0)
            total = per[:, 0]
            for j in range(1, len(dims)):
                total = total + per[:, j]
            return np.where((final > alloc_all[cells] + 0.1).any(axis=1), 0.0, total / wsum * top)

        def score_one(task: TaskInfo, node: NodeInfo) -> float:
            p = prepared(task)
            if p is None:
                return 0.0
            used, alloc = nodes.used[node.index], alloc_all[node.index]
            total = 0.0
            for j, (d, w, r) in enumerate(p[3]):
                final, a = float(used[d]) + r, float(alloc[d])
                if final > a + 0.1:
                    return 0.0
                per = final * w / a if a > 0 else 0.0
                total = per if j == 0 else total + per
            return total / p[2] * top
        # a function of the template and the node's used row (and its allocatable): carried between sessions
        ssn.add_node_order(self.name, vector=score, scalar=score_one, carry=carry)
