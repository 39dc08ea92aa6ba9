"""The victim order (Volcano's ``Session.BuildVictimsPriorityQueue``, ``framework/session_plugins.go``): a session
service used by preempt and reclaim and by plugins that walk candidates in victim order (capacity's reclaimable);
and the eviction of ``victimTasks``' victims (the shuffle action)."""

from __future__ import annotations

from collections.abc import Iterable

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey
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


#: the victims a victimTasks plugin handed out as the *nodes' own copies* of the tasks (tdm's, which walks
#: ``ssn.RevocableNodes``), by task uid: ``evict_victim`` evicts them as Volcano's ``Session.Evict`` does such a copy
NODE_COPY_VICTIMS: StateKey[set[str]] = StateKey("node-copy-victims")


def mark_node_copy_victims(ssn: Session, tasks: Iterable[TaskInfo]) -> None:
    """Say that ``tasks`` (victims of a victimTasks function) are, in Volcano, the nodes' own task objects."""
    ssn.state.read_or_init(NODE_COPY_VICTIMS, set).update(t.uid for t in tasks)


def evict_victim(ssn: Session, task: TaskInfo, reason: str) -> None:
    """Volcano's ``Session.Evict`` (framework/session.go) for a victim of ``victimTasks`` (the shuffle action).

    A victim that is the node's own copy of the task (``mark_node_copy_victims``) is evicted as Volcano does
    with ``PANIC_ON_ERROR=false``: ``job.UpdateTaskStatus`` makes that very object Releasing, then
    ``node.UpdateTask`` removes it *as Releasing* (``Releasing.Sub``: the assertion that panics by default) and adds
    it back as Releasing, so the node's idle, used and releasing amounts end where they were; the eviction is
    made, the job counts the pod as Releasing and the deallocate handlers run.  Any other victim is evicted
    normally (its node gains releasing resources)."""
    copies = ssn.state.get(NODE_COPY_VICTIMS)
    if copies is None or task.uid not in copies:
        ssn.evict(task, reason)
        return
    job = ssn.jobs.get(task.job)
    if job is None:
        return
    job.update_task_status(task, TaskStatus.Releasing)
    ssn.touched.add(task.job)
    ssn._fire(task, False)
    ssn.record_eviction(task, reason)
