"""Helpers shared by preempt and reclaim: victim validation and victim order."""

from __future__ import annotations

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue

PREEMPTABLE_STATUS = TaskStatus.Running | TaskStatus.Bound


def victims_enough(ssn: Session, preemptor: TaskInfo, node: int, victims: list[TaskInfo]) -> bool:
    """Volcano's ValidateVictims: some victims, and the node's future idle plus all of them fits the task."""
    if not victims:
        return False
    future = ssn.nodes.future_idle(node).copy()
    for v in victims:
        future += v.resreq
    return less_equal(preemptor.init_resreq, future)


def victims_queue(ssn: Session, victims: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """Volcano's BuildVictimsPriorityQueue: within a job the last in task order first, across jobs the
    last in job order first."""
    def cmp(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -ssn.task_cmp(left, right)
        return -ssn.job_cmp(ssn.jobs[left.job], ssn.jobs[right.job])
    return PriorityQueue(cmp, victims)
