"""preempt (seed 000 §5.3, seed 002): starving jobs take resources from lower-priority work in their queue.

First between jobs of one queue: each starving job (in job order) pops its pending tasks (in task order);
for each, nodes passing the predicates are tried best score first; the plugins' preemptable answer (the
intersection within a tier) gives the victims; if they would free enough, they are evicted lowest first
until the task fits the node's future idle, and the task is pipelined there.  A job's evictions are kept
only if the job is then pipelined.  Then between tasks of one job, by task priority.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._victims import PREEMPTABLE_STATUS, victims_enough, victims_queue
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import PriorityQueue


def preempt_task(ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: Callable[[TaskInfo], bool],
                 reason: str = "preempt") -> bool:
    job = ssn.jobs[preemptor.job]
    queue = ssn.queues[job.queue]
    feasible = ssn.feasible_nodes(preemptor, job)
    if not feasible.any():
        return False
    scores = ssn.node_scores(preemptor, feasible, job)
    order = [int(i) for i in sorted(np.nonzero(feasible)[0], key=lambda i: (-scores[i], i))]
    for i in order:
        preemptees = [t for t in ssn.nodes.tasks[i].values() if keep(t)]
        victims = ssn.preemptable(preemptor, preemptees)
        if not victims_enough(ssn, preemptor, i, victims):
            continue
        vq = victims_queue(ssn, victims)
        while not vq.empty():
            if not ssn.overused(queue) and less_equal(preemptor.init_resreq, ssn.nodes.future_idle(i)):
                break
            stmt.evict(vq.pop(), reason)
        if not ssn.overused(queue) and less_equal(preemptor.init_resreq, ssn.nodes.future_idle(i)):
            stmt.pipeline(preemptor, i)
            return True
    return False


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_cmp, list(job.index.get(TaskStatus.Pending, {}).values()))


def candidate(task: TaskInfo) -> bool:
    return bool(task.status & PREEMPTABLE_STATUS) and not task.best_effort


@register_action
class Preempt(Action):
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under: list[JobInfo] = []
        queues: list[str] = []
        for job in ssn.jobs.values():
            if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job) is not None:
                continue
            if job.queue not in queues:
                queues.append(job.queue)
            if ssn.job_starving(job):
                preemptors.setdefault(job.queue, PriorityQueue(ssn.job_cmp)).push(job)
                under.append(job)
                tasks[job.uid] = pending_tasks(ssn, job)
        for qname in queues:
            jobs = preemptors.get(qname)
            while jobs is not None and not jobs.empty():
                pj = jobs.pop()
                stmt = Statement(ssn)
                assigned = False
                while ssn.job_starving(pj) and not tasks[pj.uid].empty():
                    preemptor = tasks[pj.uid].pop()

                    def keep(t: TaskInfo, pj: JobInfo = pj) -> bool:
                        j = ssn.jobs.get(t.job)
                        return (candidate(t) and t.preemptable and j is not None and j.queue == pj.queue
                                and t.job != pj.uid)
                    if preempt_task(ssn, stmt, preemptor, keep):
                        assigned = True
                if ssn.job_pipelined(pj):
                    stmt.commit()
                else:
                    stmt.discard()
                    continue
                if assigned:
                    jobs.push(pj)
            for job in under:
                if job.queue != qname:
                    continue
                own = pending_tasks(ssn, job)
                while not own.empty():
                    preemptor = own.pop()
                    stmt = Statement(ssn)
                    ok = preempt_task(ssn, stmt, preemptor,
                                      lambda t, preemptor=preemptor: candidate(t) and t.job == preemptor.job)
                    stmt.commit()
                    if not ok:
                        break
        victims = ssn.victim_tasks([t for j in ssn.jobs.values() for t in j.tasks_in(PREEMPTABLE_STATUS)])
        for t in victims:
            if t.status & PREEMPTABLE_STATUS:
                ssn.evict(t, "evicted by a victimTasks plugin")
