"""enqueue (``pkg/scheduler/actions/enqueue/enqueue.go``): admit Pending PodGroups to Inqueue when the plugins' vote
allows it.

Queues take turns in queue order; each turn admits (or skips) the queue's best Pending job, until every
queue has run out.  A job without ``minResources`` is always admitted, as in Volcano; so is every job when
no plugin votes.  A job in a queue that is not Open stays Pending.  A job refused under the same fingerprint as
in an earlier session is not pushed at all (``cache/memo.py``): a refusal changes nothing, so skipping it changes
no other job's turn.  Within one pass, a job with the same queue and minResources as one refused since the last
admission is refused without asking the plugins again (``_Refusals``), and each queue's jobs are sorted by
key rather than heap-compared when the jobOrder plugins allow it (``framework/order.py``).
"""

from __future__ import annotations

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import PodGroupPhase
from pyvolcano.framework.action import Action
from pyvolcano.framework.order import job_order_key, ordered
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


@register_action
class Enqueue(Action):
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
        waiting: dict[str, list[JobInfo]] = {}
        memo = ssn.memo
        queues_of, waits = ssn.queues, PodGroupPhase.Pending
        # every live job of every session but the settled ones (never Pending): the phase first (``is_pending``)
        for job in ssn.unsettled_jobs():
            pg = job.podgroup
            if pg is None or pg.phase != waits:
                continue
            q = queues_of.get(job.queue)
            if q is None:
                continue
            if not q.is_open():
                job.enqueue_reason = f"queue {q.name} is {q.state}"
                continue
            if memo is not None and memo.enqueue_blocked(job):  # refused under the same fingerprint
                continue
            got = waiting.get(q.name)
            if got is None:
                got = waiting[q.name] = []
                queues.push(q)
            got.append(job)
        if not waiting:
            return
        # each queue's jobs in job order: sorted by key when every jobOrder function has one (framework/order.py;
        # admitting a job changes no other job's order), else a heap over the comparison
        key = job_order_key(ssn)
        jobs: dict[str, list[JobInfo] | PriorityQueue[JobInfo]] = {
            name: ordered(lst, key) if key is not None else PriorityQueue(ssn.job_cmp, lst)
            for name, lst in waiting.items()}
        # a refusal seen in this pass, per queue and minResources (see ``_Refusals``)
        refused = _Refusals() if memo is not None and memo.enqueue_ok else None

        def turn(q: QueueInfo, job: JobInfo) -> None:
            shape = refused.shape(job) if refused is not None else None
            reason = refused.seen.get(shape) if refused is not None and shape is not None else None
            if reason is not None:  # refused again, exactly as the plugins would refuse it
                job.enqueue_reason = reason
                if memo is not None:
                    memo.record_enqueue(job)
            elif not job.has_min_resources() or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                assert job.podgroup is not None
                job.podgroup.phase = PodGroupPhase.Inqueue
                job.enqueue_reason = ""
                if memo is not None:
                    memo.admitted(job)
                if refused is not None:
                    refused.seen.clear()
            else:
                if not job.enqueue_reason:
                    job.enqueue_reason = (f"queue {q.name} resource quota insufficient: PodGroup minResources "
                                          f"{ssn.res.format(job.min_resources(ssn.res.size))} cannot be admitted")
                if refused is not None and shape is not None:
                    refused.seen[shape] = job.enqueue_reason
                if memo is not None:
                    memo.record_enqueue(job)

        if len(jobs) == 1:  # one queue: the queue heap would hand it back after every job
            q = queues.pop()
            pending = jobs[q.name]
            if isinstance(pending, list):
                while pending:
                    turn(q, pending.pop())
            else:
                while not pending.empty():
                    turn(q, pending.pop())
            return
        while not queues.empty():
            q = queues.pop()
            pending = jobs[q.name]
            if (not pending) if isinstance(pending, list) else pending.empty():
                continue
            turn(q, pending.pop())
            queues.push(q)


class _Refusals:
    """The jobs refused since the last admission of this enqueue pass, by queue and minResources.

    Used only when the blocked-job memo allows the conf (``SessionMemo.enqueue_ok``: the only jobEnqueueable
    voters are overcommit and proportion, proportion last in its tier).  Their answers, and the reasons they write,
    read nothing of the job but its queue and its minResources, and of the session only what an admission changes
    (proportion's ``inqueue`` per queue, overcommit's ``inqueue``).  So, until the next admission, a job with the
    same queue and minResources as one refused gets the same "no" with the same reason, and asking the plugins again
    would be a no-op (a refusal changes no state, ``cache/memo.py``): a backlog of thousands of jobs of a few shapes
    costs a few votes per admission, not one per job."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: dict[tuple[str, bytes], str] = {}

    @staticmethod
    def shape(job: JobInfo) -> tuple[str, bytes] | None:
        """What the votes read of the job: its queue and minResources (None: no minResources, always admitted)."""
        pg = job.podgroup
        if pg is None or pg.min_resources is None:
            return None
        return (job.queue, pg.min_resources.tobytes())
