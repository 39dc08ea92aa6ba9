"""preempt (``pkg/scheduler/actions/preempt/preempt.go``): starving jobs take resources from lower-priority work in
their queue.

First between jobs of one queue: each starving job (in job order) pops its pending tasks (in task order);
for each, nodes passing the predicates are tried best score first; the plugins' preemptable answer (the
intersection within a tier) gives the victims; if they would free enough, they are evicted lowest first
until the task fits the node's future idle, and the task is pipelined there.  A job's evictions are kept
only if the job is then pipelined.  Then between tasks of one job, by task priority.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._victims import (
    PREEMPTABLE_STATUS,
    CandidateLimits,
    find_choice,
    reachable,
    victim_bound,
    victims_queue,
)
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import PriorityQueue


def preempt_task(ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: Callable[[TaskInfo], bool],
                 limits: CandidateLimits, bound: np.ndarray | None = None, reason: str = "preempt") -> bool:
    """Preempt for one task: nodes passing the predicates are tried best score first; on each the plugins'
    preemptable answer gives the candidates and ``find_choice`` keeps what the task needs and ranks the nodes
    as kube-scheduler does; the chosen victims are evicted (more, lowest first, while the task still does not
    fit its queue: Volcano 1.9 checks ``allocatable``, and victims of the same queue give room back) and the
    task is pipelined onto the node being freed.  ``bound`` (``victim_bound`` of a superset of what ``keep``
    admits) lets nodes that cannot make room even with every candidate gone be skipped up front."""
    if never_preempts(preemptor):
        return False
    job = ssn.jobs[preemptor.job]
    queue = ssn.queues[job.queue]
    feasible = ssn.feasible_nodes(preemptor, job)
    idx = np.nonzero(feasible)[0]
    if not len(idx):
        return False
    scores = ssn.node_scores(preemptor, feasible, job)[idx]
    order = idx[np.argsort(-scores, kind="stable")]  # best score first, ties by node index

    def offer(i: int) -> list[TaskInfo]:
        preemptees = [t for t in ssn.nodes.tasks[i].values() if keep(t)]
        return ssn.preemptable(preemptor, preemptees) if preemptees else []
    order = reachable(ssn, preemptor.init_resreq, order, bound)
    best = find_choice(ssn, preemptor, order.tolist(), offer, limits, len(idx))
    if best is None:
        return False
    i = best.node
    vq = victims_queue(ssn, best.victims)
    while not vq.empty():
        stmt.evict(vq.pop(), reason)
    spare = victims_queue(ssn, [t for t in best.candidates if t not in best.victims])
    while not ssn.allocatable(queue, preemptor) and not spare.empty():
        stmt.evict(spare.pop(), reason)
    if ssn.allocatable(queue, preemptor) and less_equal(preemptor.init_resreq, ssn.nodes.future[i]):
        stmt.pipeline(preemptor, i)
        return True
    return False


def never_preempts(task: TaskInfo) -> bool:
    """A pod with ``spec.preemptionPolicy: Never`` waits instead of evicting anyone (Kubernetes; Volcano 1.11)."""
    return (task.pod.get("spec") or {}).get("preemptionPolicy") == "Never"


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_cmp, [t for t in job.index.get(TaskStatus.Pending, {}).values() if not t.sch_gated])


_PREEMPTABLE = frozenset((TaskStatus.Running, TaskStatus.Bound))


def candidate(task: TaskInfo) -> bool:
    return task.status in _PREEMPTABLE and not task.best_effort  # set lookup: IntFlag "&" is slow here


@register_action
class Preempt(Action):
    name = "preempt"

    def execute(self, ssn: Session) -> None:
        limits = CandidateLimits.of(self.arguments)
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under: list[JobInfo] = []
        queues: list[str] = []
        for job in ssn.jobs.values():
            q = ssn.queues.get(job.queue)
            # a Closed queue's jobs wait, as in allocate
            if job.is_pending() or q is None or not q.is_open() or ssn.job_valid(job) is not None:
                continue
            if job.queue not in queues:
                queues.append(job.queue)
            if ssn.job_starving(job):
                preemptors.setdefault(job.queue, PriorityQueue(ssn.job_cmp)).push(job)
                under.append(job)
                tasks[job.uid] = pending_tasks(ssn, job)
        queue_of = {uid: j.queue for uid, j in ssn.jobs.items()}
        # per queue, what its preemptable candidates hold on each node (a superset of every `keep` below)
        by_queue: dict[str, list[TaskInfo]] = {q: [] for q in preemptors}
        for job in ssn.jobs.values():
            group = by_queue.get(job.queue)
            if group is not None:
                group.extend(t for t in job.tasks_in(PREEMPTABLE_STATUS) if t.preemptable and candidate(t))
        bounds = {q: victim_bound(ssn, ts) for q, ts in by_queue.items()}
        for qname in queues:
            jobs = preemptors.get(qname)
            while jobs is not None and not jobs.empty():
                pj = jobs.pop()
                stmt = Statement(ssn)
                assigned = False
                while ssn.job_starving(pj) and not tasks[pj.uid].empty():
                    preemptor = tasks[pj.uid].pop()

                    def keep(t: TaskInfo, pj: JobInfo = pj) -> bool:  # per task per node tried: cheapest test first
                        return (queue_of.get(t.job) == pj.queue and t.job != pj.uid and t.preemptable
                                and candidate(t))
                    if preempt_task(ssn, stmt, preemptor, keep, limits, bounds[pj.queue]):
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
                bound = victim_bound(ssn, [t for t in job.tasks_in(PREEMPTABLE_STATUS) if candidate(t)]) \
                    if not own.empty() else None
                while not own.empty():
                    preemptor = own.pop()
                    stmt = Statement(ssn)
                    def own_job(t: TaskInfo, preemptor: TaskInfo = preemptor) -> bool:
                        return candidate(t) and t.job == preemptor.job

                    ok = preempt_task(ssn, stmt, preemptor, own_job, limits, bound)
                    stmt.commit()
                    if not ok:
                        break
        victims = ssn.victim_tasks([t for j in ssn.jobs.values() for t in j.tasks_in(PREEMPTABLE_STATUS)])
        for t in victims:
            if t.status & PREEMPTABLE_STATUS:
                ssn.evict(t, "evicted by a victimTasks plugin")
