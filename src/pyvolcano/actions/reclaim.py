"""reclaim (seed 000 §5.4): a queue below its deserved share takes resources back from other queues.

Queues take turns in queue order (overused ones are skipped); the best starving job pops its best pending
task; if the queue is preemptive, every node passing the predicates is tried: running, preemptable tasks
of *other*, reclaimable queues are offered to the plugins' reclaimable answer; victims are evicted (at once,
as Volcano does) until what they free covers the task, which is then pipelined on that node.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.actions._victims import victims_enough
from pyvolcano.actions.preempt import pending_tasks
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


@register_action
class Reclaim(Action):
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        queues = PriorityQueue(ssn.queue_cmp)
        seen: set[str] = set()
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            q = ssn.queues.get(job.queue)
            if job.is_pending() or q is None or ssn.job_valid(job) is not None:
                continue
            if q.name not in seen:
                seen.add(q.name)
                queues.push(q)
            if ssn.job_starving(job):
                preemptors.setdefault(q.name, PriorityQueue(ssn.job_cmp)).push(job)
                tasks[job.uid] = pending_tasks(ssn, job)
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            pending = tasks.get(job.uid)
            if pending is None or pending.empty() or not ssn.job_starving(job):
                continue
            task = pending.pop()
            if not ssn.preemptive(queue, task):
                continue
            if self.reclaim_for(ssn, job, task):
                jobs.push(job)
            queues.push(queue)

    def reclaim_for(self, ssn: Session, job: JobInfo, task: TaskInfo) -> bool:
        feasible = ssn.feasible_nodes(task, job)
        for i in np.nonzero(feasible)[0]:
            i = int(i)
            reclaimees = []
            for t in ssn.nodes.tasks[i].values():
                if t.status != TaskStatus.Running or t.best_effort or not t.preemptable:
                    continue
                j = ssn.jobs.get(t.job)
                if j is None or j.queue == job.queue:
                    continue
                q = ssn.queues.get(j.queue)
                if q is None or not q.reclaimable:
                    continue
                reclaimees.append(t)
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not victims_enough(ssn, task, i, victims):
                continue
            reclaimed = ssn.res.zeros()
            for v in victims:
                ssn.evict(v, "reclaim")
                reclaimed += v.resreq
                if less_equal(task.init_resreq, reclaimed):
                    break
            if less_equal(task.init_resreq, reclaimed):
                ssn.pipeline(task, i)
                return True
        return False
