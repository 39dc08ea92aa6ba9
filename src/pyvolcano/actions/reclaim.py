"""reclaim (``pkg/scheduler/actions/reclaim/reclaim.go``): a queue below its deserved share takes resources back from
other queues.

Queues take turns in queue order (overused ones, and queues that are not Open, are skipped); the best starving
job pops its best pending task; a task whose pod says ``preemptionPolicy: Never`` reclaims nothing (its job and
queue keep their turn); if the queue is preemptive for the task (Volcano 1.11: proportion's and capacity's
"allocated + task fits deserved"), every node passing the predicates is tried: running, preemptable tasks
of *other*, reclaimable queues are offered to the plugins' reclaimable answer; victims are evicted (at once,
as Volcano does) until what they free covers the task, which is then pipelined on that node.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.actions._victims import CandidateLimits, find_choice, reachable, victim_bound
from pyvolcano.actions.preempt import never_preempts, pending_tasks
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
        limits = CandidateLimits.of(self.arguments)
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
        # what the candidates of every reclaimable queue hold per node: a superset of each task's reclaimees
        bound = victim_bound(ssn, [t for j in ssn.jobs.values() if (q := ssn.queues.get(j.queue)) and q.reclaimable
                                   for t in j.index.get(TaskStatus.Running, {}).values()
                                   if t.preemptable and not t.best_effort]) if preemptors else None
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue) or not queue.is_open():  # a Closed queue's jobs wait, as in allocate
                continue
            jobs = preemptors.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            pending = tasks.get(job.uid)
            if pending is None or pending.empty() or not ssn.job_starving(job):
                continue
            task = pending.pop()
            if never_preempts(task):
                jobs.push(job)
                queues.push(queue)
                continue
            if not ssn.preemptive(queue, task):
                continue
            if self.reclaim_for(ssn, job, task, limits, bound):
                jobs.push(job)
            queues.push(queue)

    def reclaim_for(self, ssn: Session, job: JobInfo, task: TaskInfo, limits: CandidateLimits,
                    bound: np.ndarray | None = None) -> bool:
        """Running, preemptable tasks of other, reclaimable queues on each feasible node go to the plugins'
        reclaimable vote (which keeps every victim queue at what it deserves); the node and the minimal
        victims are chosen as kube-scheduler does, evicted at once, and the task pipelined there."""
        feasible = np.nonzero(ssn.feasible_nodes(task, job))[0]

        def offer(i: int) -> list[TaskInfo]:
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
            return ssn.reclaimable(task, reclaimees) if reclaimees else []
        order = reachable(ssn, task.init_resreq, feasible, bound)
        best = find_choice(ssn, task, order.tolist(), offer, limits, len(feasible))
        if best is None:
            return False
        for v in best.victims:
            ssn.evict(v, "reclaim")
        if less_equal(task.init_resreq, ssn.nodes.future[best.node]):
            ssn.pipeline(task, best.node)
            return True
        return False
