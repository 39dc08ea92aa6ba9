"""enqueue (``pkg/scheduler/actions/enqueue/enqueue.go``): admit Pending PodGroups to Inqueue when the plugins' vote
allows it.

Queues take turns in queue order; each turn admits (or skips) the queue's best Pending job, until every
queue has run out.  A job without ``minResources`` is always admitted, as in Volcano; so is every job when
no plugin votes.  A job in a queue that is not Open stays Pending.  A job refused under the same fingerprint as
in an earlier session is not pushed at all (``cache/memo.py``): a refusal changes nothing, so skipping it changes
no other job's turn.
"""

from __future__ import annotations

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import PodGroupPhase
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


@register_action
class Enqueue(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        memo = ssn.memo
        for job in ssn.jobs.values():
            q = ssn.queues.get(job.queue)
            if q is None or not job.is_pending():
                continue
            if not q.is_open():
                job.enqueue_reason = f"queue {q.name} is {q.state}"
                continue
            if memo is not None and memo.enqueue_blocked(job):  # refused under the same fingerprint
                continue
            if q.name not in jobs:
                jobs[q.name] = PriorityQueue(ssn.job_cmp)
                queues.push(q)
            jobs[q.name].push(job)
        while not queues.empty():
            q = queues.pop()
            pending = jobs[q.name]
            if pending.empty():
                continue
            job = pending.pop()
            if not job.has_min_resources() or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                assert job.podgroup is not None
                job.podgroup.phase = PodGroupPhase.Inqueue
                job.enqueue_reason = ""
                if memo is not None:
                    memo.admitted(job)
            else:
                if not job.enqueue_reason:
                    job.enqueue_reason = (f"queue {q.name} resource quota insufficient: PodGroup minResources "
                                          f"{ssn.res.format(job.min_resources(ssn.res.size))} cannot be admitted")
                if memo is not None:
                    memo.record_enqueue(job)
            queues.push(q)
