"""gangreclaim: a starving gang of a queue below its share takes a whole domain's worth of room from other,
reclaimable queues at once (Volcano master ed72c7c8, ``pkg/scheduler/actions/gangreclaim/gangreclaim.go``); the
shared loop, bundles, domains and dry run are in ``actions/_gang_evict.py``.

Overused queues are skipped; a job tries only if its queue may reclaim for all its pending tasks together
(``preemptive``).  Candidates: running, preemptable tasks of jobs of *other* queues that are reclaimable and whose
job may lose tasks (``volcano.sh/preemptable``, when the PodGroup says it); no priority test.  Bundles of the
queue that the victim queue order puts first go first.  Arguments: ``maxDomains`` (8), ``allowWholeBundle``
(true).
"""

from __future__ import annotations

from collections.abc import Callable

from pyvolcano.actions._gang_evict import Bundle, GangEviction, preemptable_for_gang_eviction
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.points import GANG_RECLAIM
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session


@register_action
class GangReclaim(GangEviction):
    name = "gangreclaim"
    kind = GANG_RECLAIM

    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return ssn.overused(queue)

    def may_try(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return ssn.preemptive_all(queue, pending)

    def candidates(self, ssn: Session, job: JobInfo) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for victim in ssn.jobs.values():
            if victim.queue == job.queue or not preemptable_for_gang_eviction(victim):
                continue
            q = ssn.queues.get(victim.queue)
            if q is None or not q.reclaimable:
                continue
            out.extend(t for t in victim.index.get(TaskStatus.Running, {}).values() if t.preemptable)
        return out

    def first(self, ssn: Session, job: JobInfo) -> Callable[[Bundle, Bundle], int]:
        pq = ssn.queues.get(job.queue)

        def victim_queue_first(a: Bundle, b: Bundle) -> int:
            lq, rq = ssn.queues.get(a.job.queue), ssn.queues.get(b.job.queue)
            if lq is None or rq is None or lq.name == rq.name:
                return 0

            def before(x: QueueInfo, y: QueueInfo) -> bool:
                if pq is None:
                    return ssn.queue_cmp(x, y) < 0
                r = ssn.call("victimQueueOrder", x, y, pq)
                return r < 0 if r else ssn.queue_cmp(x, y) >= 0
            ij, ji = before(lq, rq), before(rq, lq)
            if ij == ji:
                return 0
            return -1 if ij else 1
        return victim_queue_first
