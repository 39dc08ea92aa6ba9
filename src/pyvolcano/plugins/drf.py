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

from collections import ChainMap
from collections.abc import MutableMapping

import numpy as np

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import share
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition
from pyvolcano.framework.order import keyed
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins._hdrf import HierarchicalDRF
from pyvolcano.plugins._shared import hierarchy_enabled, session_sums

SHARE_DELTA = 1e-6


def victim_class(job: JobInfo, task: TaskInfo) -> bool:
    """A candidate's class for drf's victim condition: whether its job would still hold something once the task is
    gone -- its allocated resources plus its pipelined tasks' requests, less the task's, positive in some
    resource.  drf's session allocation of a job is at most that sum: it starts at ``JobInfo.allocated`` and its
    event handlers also count the tasks pipelined in the session."""
    pipelined = job.index.get(TaskStatus.Pipelined)
    if not pipelined and job.allocated.tobytes() == task.resreq.tobytes():
        return False  # the job holds exactly the task (a one-pod job): nothing left, without the arithmetic
    left = job.allocated - task.resreq
    for t in (pipelined or {}).values():
        left = left + t.resreq
    return bool((left > 0).any())


@register_plugin
class DRF(Plugin):
    name = "drf"
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource  # shares over every dimension, pods too (drf.go: calculateShare): no mask
        # every job's allocation and dominant share at open, carried from the last session for unchanged jobs
        # (``_shared.JobSums``): copies of the ledger's dicts, whose rows ``change`` replaces, never alters
        sums = session_sums(ssn)
        hierarchy = hierarchy_enabled(ssn, self.name)
        alloc: MutableMapping[str, np.ndarray]
        shares: MutableMapping[str, float]
        if hierarchy:  # the tree reads every job's row: plain dicts
            alloc, shares = dict(sums.alloc), dict(sums.job_shares(total))
        else:
            # copy on write: the session's changes over the ledger's dicts (a backlog of thousands of jobs is not
            # copied each session for the few the session places or evicts)
            alloc, shares = ChainMap({}, sums.alloc), ChainMap({}, sums.job_shares(total))
        self.shares = shares

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = shares.get(left.uid, 0.0), shares.get(right.uid, 0.0)
            return 0 if ls == rs else (-1 if ls < rs else 1)
        ssn.add_job_order_fn(self.name, keyed(job_order, lambda j: shares.get(j.uid, 0.0)))  # framework/order.py

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            ls = share(alloc.get(preemptor.job, ssn.res.zeros()) + preemptor.resreq, total)
            left: dict[str, np.ndarray] = {}
            out = []
            for t in preemptees:
                if t.job not in left:
                    left[t.job] = alloc.get(t.job, ssn.res.zeros()).copy()
                left[t.job] -= t.resreq
                rs = share(left[t.job], total)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    out.append(t)
            return out, PERMIT

        def admits(preemptor: TaskInfo, cls: object, own: bool) -> bool:
            """drf.go's preemptableFn offers a task only when its job's share after losing it, ``rs``, is at least
            the preemptor job's share with the preemptor, ``ls``, less ``shareDelta``.  A job left holding nothing
            has ``rs = 0``, so its task is offered only while ``ls <= shareDelta`` (twice that here: a margin for
            the order of float sums)."""
            if cls:
                return True
            ls = share(alloc.get(preemptor.job, ssn.res.zeros()) + preemptor.resreq, total)
            return ls <= 2 * SHARE_DELTA

        def actor(preemptor: TaskInfo) -> tuple[bytes | None, bytes, bytes]:
            """What ``admits`` reads: the preemptor's job's allocation now (None: none recorded), its request and
            the cluster total (``ls``'s inputs)."""
            try:  # not ``get``: a ChainMap's asks every map twice
                row = alloc[preemptor.job].tobytes()
            except KeyError:
                row = None
            return row, preemptor.resreq.tobytes(), total.tobytes()

        def actor_session() -> bytes:
            """What ``actor`` reads of the session besides the preemptor's job: the cluster total.  The job's
            allocation is the carried row of its version (``_shared.JobSums``) while the session has not changed
            the job (each change goes through ``change`` below, and moves the job's version)."""
            return total.tobytes()
        ssn.add_preemptable_fn(self.name, victims, VictimCondition(victim_class, admits, actor, actor_session))

        def change(task: TaskInfo, sign: float) -> None:
            a = alloc.get(task.job)
            a = alloc[task.job] = (ssn.res.zeros() if a is None else a) + sign * task.resreq  # a new row
            shares[task.job] = share(a, total)
        ssn.add_event_handler(EventHandler(lambda t: change(t, 1.0), lambda t: change(t, -1.0)))
        if hierarchy:
            assert isinstance(alloc, dict)
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
