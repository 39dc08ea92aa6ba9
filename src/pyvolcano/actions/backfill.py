"""backfill (``pkg/scheduler/actions/backfill/backfill.go``): place BestEffort tasks (no requests) of admitted jobs.

They need no resources, only predicates (and a pod slot), so each goes to its best-scored feasible node.
Tasks are taken queue by queue (queue order), job by job (job order), task by task (task order), as
Volcano's pickUpPendingTasks lists them; BestEffort tasks that an earlier action (preempt) pipelined are
unpipelined and placed again like pending ones.  A task that fits no node records why and the next is tried
(Volcano master's ``Execute`` goes on; Volcano 1.9 stopped at the first).
"""

from __future__ import annotations

from pyvolcano.actions.allocate import schedulable_jobs
from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


def _best_effort(job: JobInfo) -> list[TaskInfo]:
    pending = [t for t in job.index.get(TaskStatus.Pending, {}).values() if t.best_effort and not t.sch_gated]
    return pending + [t for t in job.index.get(TaskStatus.Pipelined, {}).values() if t.best_effort]


def best_effort_tasks(ssn: Session) -> list[TaskInfo]:
    """Pending BestEffort tasks of schedulable jobs, in queue, job, then task order.  Pipelined BestEffort tasks
    of those jobs are unpipelined first and listed with them (``actions/backfill/backfill.go:
    pickUpPendingTasks``, ``stmt.UnPipeline``), so they are bound now instead of waiting for a later session."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, list[TaskInfo]] = {}
    found: dict[str, list[TaskInfo]] = {}
    for job in schedulable_jobs(ssn, promote=False,
                                wanted=lambda j: bool(found.setdefault(j.uid, _best_effort(j)))):
        tasks[job.uid] = found[job.uid]
        for t in tasks[job.uid]:
            if t.status == TaskStatus.Pipelined:
                ssn._unplace(t)
        if job.queue not in jobs:
            jobs[job.queue] = PriorityQueue(ssn.job_cmp)
            queues.push(ssn.queues[job.queue])
        jobs[job.queue].push(job)
    out: list[TaskInfo] = []
    while not queues.empty():
        q = queues.pop()
        while not jobs[q.name].empty():
            job = jobs[q.name].pop()
            ordered = PriorityQueue(ssn.task_cmp, tasks[job.uid])
            while not ordered.empty():
                out.append(ordered.pop())
    return out


@register_action
class Backfill(Action):
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        for task in best_effort_tasks(ssn):
            job = ssn.jobs[task.job]
            objection = ssn.pre_predicate(task)
            if objection is not None:
                fe = FitErrors(len(ssn.nodes))
                fe.add(str(objection), len(ssn.nodes))
                job.nodes_fit_errors[task.uid] = fe
                continue
            node, now = ssn.select_node(task, job)
            if node is None or not now:
                job.nodes_fit_errors[task.uid] = ssn.explain(task, job)
                continue
            ssn.allocate(task, node)
