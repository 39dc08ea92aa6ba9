"""drf (seed 000 §6.3): Dominant Resource Fairness between jobs.

A job's share is the largest fraction of the cluster it holds in any resource (the pod count aside).  Jobs
with a smaller share go first; a task may take resources from a job whose share, after losing the victim,
is still at least the preemptor's share after gaining its task.  Shares follow allocations and evictions
through the session's event handlers.

With ``enableHierarchy: true`` (Volcano's hierarchical DRF) queues also sit in a tree given by their
annotations ``volcano.sh/hierarchy`` (``root/eng/prod``) and ``volcano.sh/hierarchy-weights`` (``1/2/8``): a
tree node holds what its subtree holds; queues are compared at the first level where their paths part, a
saturated node (its whole demand met) after an unsaturated one, then by share / weight, smaller first; a
task may reclaim from another queue while, after moving the task's resources, its own side still compares
smaller.  pyvolcano's node share is the dominant share of the subtree's sum (Volcano scales children by their
minimum dominant share); docs/queues.md says where that differs.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import less_equal, share
from pyvolcano.errors import ManifestError
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins.capacity import hierarchy_enabled

SHARE_DELTA = 1e-6


@register_plugin
class DRF(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        mask = ssn.res.fair_mask
        alloc: dict[str, np.ndarray] = {uid: j.allocated.copy() for uid, j in ssn.jobs.items()}
        shares: dict[str, float] = {uid: share(a, total, mask) for uid, a in alloc.items()}
        self.shares = shares

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = shares.get(left.uid, 0.0), shares.get(right.uid, 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_fn("jobOrder", self.name, job_order)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            ls = share(alloc.get(preemptor.job, ssn.res.zeros()) + preemptor.resreq, total, mask)
            left: dict[str, np.ndarray] = {}
            out = []
            for t in preemptees:
                if t.job not in left:
                    left[t.job] = alloc.get(t.job, ssn.res.zeros()).copy()
                left[t.job] -= t.resreq
                rs = share(left[t.job], total, mask)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    out.append(t)
            return out, PERMIT
        ssn.add_fn("preemptable", self.name, victims)

        def change(task: TaskInfo, sign: float) -> None:
            a = alloc.get(task.job)
            if a is None:
                a = alloc[task.job] = ssn.res.zeros()
            a += sign * task.resreq
            shares[task.job] = share(a, total, mask)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
        if hierarchy_enabled(ssn, self.name):
            self._open_hierarchy(ssn)

    def _open_hierarchy(self, ssn: Session) -> None:
        total, mask = ssn.total_resource, ssn.res.fair_mask
        paths = {name: queue_path(q) for name, q in ssn.queues.items()}
        alloc: dict[str, np.ndarray] = {}
        request: dict[str, np.ndarray] = {}
        weight: dict[str, float] = {}
        for path in paths.values():
            for depth, (_, w) in enumerate(path):
                key = "/".join(n for n, _ in path[:depth + 1])
                weight[key] = w
                alloc.setdefault(key, ssn.res.zeros())
                request.setdefault(key, ssn.res.zeros())
        for job in ssn.jobs.values():
            path = paths.get(job.queue)
            if path is None:
                continue
            for depth in range(len(path)):
                key = "/".join(n for n, _ in path[:depth + 1])
                alloc[key] += job.allocated * mask
                request[key] += job.total_request * mask
        self.h_alloc, self.h_weight = alloc, weight

        def keys(queue: str) -> list[str]:
            path = paths.get(queue, [("root", 1.0), (queue, 1.0)])
            return ["/".join(n for n, _ in path[:d + 1]) for d in range(len(path))]

        def compare(lq: str, rq: str, delta: dict[str, np.ndarray] | None = None) -> int:
            delta = delta or {}
            for lk, rk in zip(keys(lq), keys(rq), strict=False):
                if lk == rk:
                    continue
                la = alloc.get(lk, ssn.res.zeros()) + delta.get(lk, 0)
                ra = alloc.get(rk, ssn.res.zeros()) + delta.get(rk, 0)
                lsat = less_equal(request.get(lk, ssn.res.zeros()), la)
                rsat = less_equal(request.get(rk, ssn.res.zeros()), ra)
                if lsat != rsat:
                    return 1 if lsat else -1
                ls = share(la, total, mask) / max(weight.get(lk, 1.0), 1e-9)
                rs = share(ra, total, mask) / max(weight.get(rk, 1.0), 1e-9)
                if abs(ls - rs) > SHARE_DELTA:
                    return -1 if ls < rs else 1
                return 0
            return 0

        ssn.add_fn("queueOrder", self.name, lambda a, b: compare(a.name, b.name))

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            rj = ssn.jobs.get(reclaimer.job)
            if rj is None:
                return [], PERMIT
            out = []
            taken: dict[str, np.ndarray] = {}
            for t in reclaimees:
                tj = ssn.jobs.get(t.job)
                if tj is None:
                    continue
                delta: dict[str, np.ndarray] = {k: v.copy() for k, v in taken.items()}
                for k in keys(rj.queue):
                    delta[k] = delta.get(k, 0) + reclaimer.resreq * mask
                for k in keys(tj.queue):
                    delta[k] = delta.get(k, 0) - t.resreq * mask
                if compare(rj.queue, tj.queue, delta) < 0:
                    for k in keys(tj.queue):
                        taken[k] = taken.get(k, 0) - t.resreq * mask
                    out.append(t)
            return out, PERMIT
        ssn.add_fn("reclaimable", self.name, reclaimable)

        def change(task: TaskInfo, sign: float) -> None:
            job = ssn.jobs.get(task.job)
            if job is not None:
                for k in keys(job.queue):
                    alloc[k] = alloc.get(k, ssn.res.zeros()) + sign * task.resreq * mask
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))


def queue_path(q: QueueInfo) -> list[tuple[str, float]]:
    """(name, weight) from the root down, from the hierarchy annotations; ``root/<queue>`` when unset."""
    names = [n for n in q.hierarchy.split("/") if n] if q.hierarchy else ["root", q.name]
    if names[0] != "root":
        names = ["root", *names]
    raw = [w for w in q.weights.split("/") if w] if q.weights else []
    weights: list[float] = []
    for w in raw:
        try:
            weights.append(float(w))
        except ValueError:
            raise ManifestError(f"Queue {q.name}", "metadata.annotations.volcano.sh/hierarchy-weights",
                                f"{w!r} is not a number") from None
    if len(weights) == len(names) - 1:
        weights = [1.0, *weights]
    weights += [1.0] * (len(names) - len(weights))
    return list(zip(names, weights, strict=False))
