"""backfill (``pkg/scheduler/actions/backfill/backfill.go``): place BestEffort tasks (no requests) of admitted jobs.

They need no resources, only predicates (and a pod slot), so each goes to its best-scored feasible node.
Tasks are taken queue by queue (queue order), job by job (job order), task by task (task order), as
Volcano's pickUpPendingTasks lists them; BestEffort tasks that an earlier action (preempt) pipelined are
unpipelined and placed again like pending ones.  A task that fits no node records why and the next is tried
(Volcano master's ``Execute`` goes on; Volcano 1.9 stopped at the first).

The node is chosen by the predicates alone, not by the node's idle resources: with the ``predicates`` plugin on,
a pod slot is judged by Kubernetes' node view (``plugins/predicates/predicates.go: Predicate``, "NodePodNumber"),
from which pods evicted earlier in the session are gone.  The placement then charges the session's node, where
those pods still hold their slots (``framework/session.go: Allocate``, ``api/node_info.go: AddTask`` lets idle go
negative), and the bind (``dispatch``, ``cache.AddBindTask``) checks the node as the scheduler cache sees it, where
they hold them too: it fails, the task is left allocated on that node in the session (still counted by the plugins,
never bound, not tried elsewhere) and the next task is tried.  docs/volcano-differences.md, "Volcano looks wrong".
"""

from __future__ import annotations

import numpy as np

from pyvolcano.actions.allocate import schedulable_jobs
from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import PODS
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.incremental.carry import carried
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue


def _best_effort(job: JobInfo) -> list[TaskInfo]:
    pending = [t for t in job.index.get(TaskStatus.Pending, {}).values() if t.best_effort and not t.sch_gated]
    return pending + [t for t in job.index.get(TaskStatus.Pipelined, {}).values() if t.best_effort]


def _has_best_effort(job: JobInfo) -> bool:
    """``_best_effort(job)`` is not empty."""
    pending = job.index.get(TaskStatus.Pending)
    if pending and any(t.best_effort and not t.sch_gated for t in pending.values()):
        return True
    pipelined = job.index.get(TaskStatus.Pipelined)
    return pipelined is not None and any(t.best_effort for t in pipelined.values())


def best_effort_tasks(ssn: Session) -> list[TaskInfo]:
    """Pending BestEffort tasks of schedulable jobs, in queue, job, then task order.  Pipelined BestEffort tasks
    of those jobs are unpipelined first and listed with them (``actions/backfill/backfill.go:
    pickUpPendingTasks``, ``stmt.UnPipeline``), so they are bound now instead of waiting for a later session."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, list[TaskInfo]] = {}
    found: dict[str, list[TaskInfo]] = {}
    carry = ssn.carry

    def wanted(j: JobInfo) -> bool:
        # most jobs have no BestEffort pod waiting: carried while the job is unchanged (framework/incremental/carry.py)
        if not carried(j, "best-effort", j.version, _has_best_effort, carry):
            return False
        return bool(found.setdefault(j.uid, _best_effort(j)))
    for job in schedulable_jobs(ssn, promote=False, wanted=wanted):
        tasks[job.uid] = found[job.uid]
        for t in tasks[job.uid]:
            if t.status == TaskStatus.Pipelined:
                ssn.unpipeline(t)
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


def pods_in_view(ssn: Session) -> np.ndarray:
    """Per node, the pods the predicates plugin's Kubernetes node view holds: every task on the node (running,
    placed, pipelined, releasing since before the session) except those evicted in this session, which its
    Deallocate handler removed, and those whose eviction was undone, which its Allocate handler did not put back
    (``plugins/predicates/predicates.go``, the event handlers; ``Session.unevicted``)."""
    nodes = ssn.nodes
    count = np.fromiter((len(t) for t in nodes.tasks), float, len(nodes))
    # an undone eviction (a discarded statement or dry run) does not put the pod back into the view either
    gone = {**ssn.unevicted, **{ev.task.uid: ev.task for ev in ssn.evictions}}
    for t in gone.values():
        i = nodes.pos.get(t.node_name)
        if i is not None and t.uid in nodes.tasks[i]:
            count[i] -= 1
    return count


@register_action
class Backfill(Action):
    name = "backfill"
    contracts = frozenset({Contract.LEAVES_BLOCKED})

    def execute(self, ssn: Session) -> None:
        pending = best_effort_tasks(ssn)
        if not pending:
            return
        nodes = ssn.nodes
        # Volcano's pod-count predicate (only with the predicates plugin): Kubernetes' node view, kept up to date
        # here as backfill places tasks (placements that fail to bind stay in it, as in Volcano)
        in_view = pods_in_view(ssn) if "predicates" in ssn.plugins else None
        max_pods = nodes.allocatable[:, ssn.res.pos[PODS]]
        for task in pending:
            job = ssn.jobs[task.job]
            objection = ssn.pre_predicate(task)
            if objection is not None:
                fe = FitErrors(len(ssn.nodes))
                fe.add(str(objection), len(ssn.nodes))
                job.nodes_fit_errors[task.uid] = fe
                continue
            e, cand = ssn.selector.feasible(task, job)
            if in_view is not None:
                cand = cand & (in_view < max_pods)
            node = ssn.selector.pick(task, e, cand)
            if node is None:
                job.nodes_fit_errors[task.uid] = ssn.explain(task, job)
                continue
            failed = ssn.allocate(task, node, check_binds=True)
            if in_view is not None:
                in_view[node] += 1
            if failed is not None:
                fe = FitErrors(len(ssn.nodes))
                fe.add(failed)
                job.nodes_fit_errors[task.uid] = fe
