"""reclaim: a queue below its deserved share takes resources back from other queues (Volcano master
ed72c7c8, ``pkg/scheduler/actions/reclaim/reclaim.go``).

Queues take turns in queue order (overused ones, and queues that are not Open, are skipped).  Each starving
job of the queue, in job order, runs in a statement of its own: while it is starving its pending tasks (task
order) reclaim one by one -- a task whose pod says ``preemptionPolicy: Never``, for which the queue is not
``preemptive`` (proportion's and capacity's "allocated + task fits deserved") or which a prePredicate rejects
is skipped -- and the job's evictions are kept only if the job is then pipelined (no partial evictions for a
gang that still cannot start).

For one task, nodes passing the predicates are tried in node order: running, preemptable tasks of *other*,
reclaimable queues on the node go to the plugins' ``reclaimable`` vote; the victims are evicted in victim
order until the task fits the node's future idle, and the task is pipelined there; a node where it still
does not fit is rolled back and the next one tried.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.actions._victims import evict_greedily, reachable, victim_bound
from pyvolcano.actions.preempt import never_preempts, pending_tasks
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
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
        # what the candidates of every reclaimable queue hold per node: a superset of each task's reclaimees
        bound = victim_bound(ssn, [t for j in ssn.jobs.values() if (q := ssn.queues.get(j.queue)) and q.reclaimable
                                   for t in j.index.get(TaskStatus.Running, {}).values()
                                   if t.preemptable]) if preemptors else None
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue) or not queue.is_open():  # a Closed queue's jobs wait, as in allocate
                continue
            jobs = preemptors.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                pending = tasks[job.uid]
                while ssn.job_starving(job) and not pending.empty():
                    task = pending.pop()
                    if never_preempts(task) or not ssn.preemptive(queue, task) \
                            or ssn.pre_predicate(task) is not None:
                        continue
                    self.reclaim_for(ssn, stmt, job, task, bound)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()

    def reclaim_for(self, ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo,
                    bound: np.ndarray | None = None) -> bool:
        """Volcano's ``reclaimForTask``: on each node passing the predicates, or failing only resolvable ones
        (``PredicateForPreemptAction``; node order), running,
        preemptable tasks of other, reclaimable queues go to the plugins' reclaimable vote; a node without
        any is skipped.  The victims are evicted greedily (``evict_greedily``) until the task fits the
        node's future idle, and the task is pipelined there."""
        feasible = np.nonzero(ssn.preempt_nodes(task, job))[0]

        def offer(i: int) -> list[TaskInfo] | None:
            reclaimees = []
            for t in ssn.nodes.tasks[i].values():
                if t.status != TaskStatus.Running or not t.preemptable:
                    continue
                j = ssn.jobs.get(t.job)
                if j is None or j.queue == job.queue:
                    continue
                q = ssn.queues.get(j.queue)
                if q is None or not q.reclaimable:
                    continue
                reclaimees.append(t)
            return ssn.reclaimable(task, reclaimees) if reclaimees else None

        def fits(i: int) -> bool:
            return less_equal(task.init_resreq, ssn.nodes.future[i])
        order = reachable(ssn, task.init_resreq, feasible, bound)
        return evict_greedily(ssn, stmt, task, order, offer, fits, "reclaim") is not None
