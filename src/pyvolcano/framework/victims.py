"""The victim order (Volcano's ``Session.BuildVictimsPriorityQueue``, ``framework/session_plugins.go``): a session
service used by preempt and reclaim and by plugins that walk candidates in victim order (capacity's reclaimable)."""

from __future__ import annotations

from collections.abc import Iterable

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


def victims_queue(ssn: Session, victims: Iterable[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
    """Volcano's ``Session.BuildVictimsPriorityQueue`` (framework/session_plugins.go): victims of different
    queues in reverse queue order (a plugin's ``victimQueueOrder`` first, relative to the preemptor's
    queue); of different jobs in one queue in reverse job order as the jobOrder plugins say, and when they
    have no opinion in reverse task order; within a job in reverse task order.  The first popped is evicted
    first."""
    jobs, queues = ssn.jobs, ssn.queues
    pjob = jobs.get(preemptor.job)
    pqueue = queues.get(pjob.queue) if pjob is not None else None

    def cmp(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -ssn.task_cmp(left, right)
        lj, rj = jobs.get(left.job), jobs.get(right.job)
        if lj is None or rj is None:  # a task whose job is gone goes first (Volcano: orphaned tasks)
            return -ssn.task_cmp(left, right) if lj is None and rj is None else (-1 if lj is None else 1)
        if pqueue is not None and lj.queue != rj.queue:
            lq, rq = queues.get(lj.queue), queues.get(rj.queue)
            if lq is not None and rq is not None:
                r = ssn.call("victimQueueOrder", lq, rq, pqueue)
                return r if r else -ssn.queue_cmp(lq, rq)
        r = ssn.call("jobOrder", lj, rj)
        return -r if r else -ssn.task_cmp(left, right)
    return PriorityQueue(cmp, victims)
