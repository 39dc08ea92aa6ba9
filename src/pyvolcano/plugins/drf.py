"""drf (``pkg/scheduler/plugins/drf/drf.go``): Dominant Resource Fairness between jobs.

A job's share is the largest fraction of the cluster it holds in any resource, the pod count included (Volcano's
``calculateShare`` walks ``totalResource.ResourceNames()``, and the session's total names ``pods``).  Jobs
with a smaller share go first; a task may take resources from a job whose share, after losing the victim,
is still at least the preemptor's share after gaining its task.  Shares follow allocations and evictions
through the session's event handlers.

With ``enableHierarchy: true`` queues are also ordered, and reclaimed from, by Volcano's hierarchical DRF over
the queue annotations ``volcano.sh/hierarchy`` / ``volcano.sh/hierarchy-weights`` (``plugins/_hdrf.py``).
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import share
from pyvolcano.framework.order import keyed
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins._hdrf import HierarchicalDRF
from pyvolcano.plugins.capacity import hierarchy_enabled
from pyvolcano.plugins.overcommit import session_sums

SHARE_DELTA = 1e-6


def _job_shares(ssn: Session, total: np.ndarray, mask: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every job's allocation (its own row, changed in place as tasks move) and dominant share, in one NumPy pass:
    ``share`` per job costs more than the arithmetic, and a session opens on every job of the cluster.  The same
    divisions as ``share``, so the same numbers."""
    uids = list(ssn.jobs)
    if not uids:
        return {}, {}
    rows = session_sums(ssn).rows[:, 0].copy()  # every job's ``allocated`` at open, stacked once per session
    t, x = total[mask], rows[:, mask]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(t > 0, x / np.where(t > 0, t, 1.0), np.where(x > 0, 1.0, 0.0))
    best = np.maximum(r.max(axis=1, initial=0.0), 0.0) if r.shape[1] else np.zeros(len(uids))
    return dict(zip(uids, rows, strict=True)), dict(zip(uids, best.tolist(), strict=True))


@register_plugin
class DRF(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        mask = np.ones(ssn.res.size, dtype=bool)  # every dimension, pods too (drf.go: calculateShare)
        alloc, shares = _job_shares(ssn, total, mask)
        self.shares = shares

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = shares.get(left.uid, 0.0), shares.get(right.uid, 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_job_order_fn(self.name, keyed(job_order, lambda j: shares.get(j.uid, 0.0)))  # framework/order.py

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
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
        ssn.add_preemptable_fn(self.name, victims)

        def change(task: TaskInfo, sign: float) -> None:
            a = alloc.get(task.job)
            if a is None:
                a = alloc[task.job] = ssn.res.zeros()
            a += sign * task.resreq
            shares[task.job] = share(a, total, mask)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
        if hierarchy_enabled(ssn, self.name):
            self._open_hierarchy(ssn, alloc)

    def _open_hierarchy(self, ssn: Session, alloc: dict[str, np.ndarray]) -> None:
        """Queue order and reclaim by Volcano's hierarchical DRF; the tree is recomputed lazily after changes."""
        tree = HierarchicalDRF(ssn.total_resource, ssn.res.fair_mask)
        for uid, job in ssn.jobs.items():
            q = ssn.queues.get(job.queue)
            if q is not None:
                tree.add_job(uid, q, job.total_request)
        self.tree = tree
        dirty = [True]

        def fresh() -> HierarchicalDRF:
            if dirty[0]:
                tree.recompute(alloc)
                dirty[0] = False
            return tree

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            r = fresh().compare(left.name, right.name)
            return -1 if r < 0 else (1 if r > 0 else 0)
        ssn.add_queue_order_fn(self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            rj = ssn.jobs.get(reclaimer.job)
            out: list[TaskInfo] = []
            if rj is None:
                return out, PERMIT
            trial = dict(alloc)
            trial[rj.uid] = alloc.get(rj.uid, ssn.res.zeros()) + reclaimer.resreq
            for t in reclaimees:
                tj = ssn.jobs.get(t.job)
                if tj is None or t.job == rj.uid:
                    continue
                before = trial.get(t.job)
                trial[t.job] = alloc.get(t.job, ssn.res.zeros()) - t.resreq
                tree.recompute(trial)
                if tree.compare(rj.queue, tj.queue) < 0:
                    out.append(t)
                if before is None:
                    del trial[t.job]
                else:
                    trial[t.job] = before
            dirty[0] = True
            return out, PERMIT
        ssn.add_reclaimable_fn(self.name, reclaimable)
        ssn.add_event_handler(EventHandler(lambda t: dirty.__setitem__(0, True),
                                           lambda t: dirty.__setitem__(0, True)))
