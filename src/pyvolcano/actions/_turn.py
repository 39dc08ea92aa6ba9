"""One task's turn in allocate, shared by the plain path (``actions/allocate.py``) and the hypernode path
(``actions/_hypernode.py``), as Volcano's ``allocateResourcesForTasks`` serves both
(``pkg/scheduler/actions/allocate/allocate.go``).

Before any node is looked at, a task is passed over when its queue has no room (``ssn.Allocatable``) or its role
already failed (``JobInfo.TaskHasFitErrors``), and fails when a prePredicate refuses it.  A failed task records its
fit errors against its role; the job's turn goes on while ``JobInfo.NeedContinueAllocating`` says the gang can
still be met.
"""

from __future__ import annotations

from enum import Enum

from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.framework.session import Session


class Turn(Enum):
    PLACE = "look for a node"
    NEXT = "go on with the job's next task"
    END = "end the job's turn"


def fail_task(job: JobInfo, task: TaskInfo, fe: FitErrors) -> Turn:
    """Record why ``task`` found no node (its role fails) and say whether the job's turn goes on."""
    job.nodes_fit_errors[task.uid] = fe
    job.record_fit_failure(task)
    return Turn.NEXT if job.need_continue_allocating(task) else Turn.END


def check_task(ssn: Session, job: JobInfo, queue: QueueInfo, task: TaskInfo) -> Turn:
    """The checks before node selection; ``Turn.PLACE`` when the task may look for a node."""
    n = len(ssn.nodes)
    if not ssn.allocatable(queue, task):
        fe = FitErrors(n)
        fe.set_error(f"queue {queue.name} has no room for the task (allocatable check failed)")
        job.nodes_fit_errors[task.uid] = fe
        return Turn.NEXT
    if job.task_has_fit_errors(task):
        fe = FitErrors(n)
        fe.set_error(f"Task {task.name} with role spec {task.task_spec} has already predicated failed, skip")
        job.nodes_fit_errors[task.uid] = fe
        return Turn.NEXT
    objection = ssn.pre_predicate(task)
    if objection is not None:  # Volcano: every node fails with the prePredicate error
        fe = FitErrors(n)
        fe.add(str(objection), n)
        return fail_task(job, task, fe)
    return Turn.PLACE
