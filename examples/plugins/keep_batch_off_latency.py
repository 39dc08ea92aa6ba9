"""The plugin example of docs/extending.md: keep pods of the ``batch`` queue off nodes labelled ``tier: latency``
and prefer nodes with fewer running pods.

It registers a node filter and a node score in both forms (vector: all nodes at once; scalar: Volcano's per-node
signature), answering the filter with a ``Status`` whose reason shows in the fit errors.  Typed, so ``mypy`` checks
every registration against the point's declared signature.  Use it by naming ``module:Class`` in the conf::

    tiers:
    - plugins:
      - name: keep_batch_off_latency:KeepBatchOffLatency
        arguments: {penalty: 10}

with ``examples/plugins`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.status import Code, Status
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.session import Session

REASON = "node(s) are kept for latency work"


class KeepBatchOffLatency(Plugin):
    name = "keep-batch-off-latency"

    def on_session_open(self, ssn: Session) -> None:
        penalty = self.arguments.get_float("penalty", 10)
        latency = np.array([s.labels.get("tier") == "latency" for s in ssn.nodes.specs], dtype=bool)
        queue_of = {uid: job.queue for uid, job in ssn.jobs.items()}
        # labels cannot change within a session, so no eviction would help: Volcano's UnschedulableAndUnresolvable
        rejected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,), self.name)

        def allowed(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if queue_of.get(task.job) != "batch":
                return np.ones(len(idx), dtype=bool)
            return ~latency[idx]

        def allowed_one(task: TaskInfo, node: NodeInfo) -> Status | None:
            return None if allowed(task, np.array([node.index]))[0] else rejected

        # static: labels do not change in a session; template-safe: the queue is part of the template key
        ssn.add_predicate(self.name, vector=allowed, scalar=allowed_one, static=True)
        pods = ssn.res.pos["pods"]
        ssn.add_node_order(self.name, vector=lambda task, idx: -penalty * ssn.nodes.used[idx, pods])
