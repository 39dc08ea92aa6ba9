"""priority (``pkg/scheduler/plugins/priority/priority.go``): higher PriorityClass value first, for jobs, tasks and
sub-groups; a task may preempt tasks of lower-priority jobs (or lower-priority tasks of its own job); a job starves
while it has tasks that hold nothing."""

from __future__ import annotations

from typing import cast

from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition, nothing
from pyvolcano.framework.order import keyed
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import GANG_RECLAIM, PERMIT, EvictionContext, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def _higher_first(lp: int, rp: int) -> int:
    return 0 if lp == rp else (-1 if lp > rp else 1)


def victim_class(job: JobInfo, task: TaskInfo) -> tuple[int, int]:
    """A candidate's class for priority's victim condition: its job's priority and its own (``VictimCondition``)."""
    return job.priority, task.priority


def _neg_priority(job: JobInfo) -> int:
    return -job.priority


def _neg_task_priority(task: TaskInfo) -> int:
    return -task.priority


def _task_order(a: TaskInfo, b: TaskInfo) -> int:
    return _higher_first(a.priority, b.priority)


def _job_order(a: JobInfo, b: JobInfo) -> int:
    return _higher_first(a.priority, b.priority)


def _sub_job_order(a: SubJob, b: SubJob) -> int:
    return _higher_first(a.priority, b.priority)


def _starving(job: JobInfo) -> bool:
    return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)


# keyed: allocate's task heaps and a backlog's sort compare the value instead of asking per comparison
# (framework/order.py); functions of their arguments alone, made once rather than at every session's open
keyed(_task_order, _neg_task_priority)
keyed(_job_order, _neg_priority)


@register_plugin
class Priority(Plugin):
    name = "priority"
    contracts = frozenset({Contract.FINGERPRINTED, Contract.STARVING_BY_VERSION})

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_task_order_fn(self.name, _task_order)
        ssn.add_job_order_fn(self.name, _job_order)
        # a sub-group's priority is its highest task priority (SubJobInfo.Priority)
        ssn.add_sub_job_order_fn(self.name, _sub_job_order)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            pj = ssn.jobs.get(preemptor.job)
            out = []
            for t in preemptees:
                tj = ssn.jobs.get(t.job)
                if pj is None or tj is None:
                    continue
                if tj.uid != pj.uid:
                    if tj.priority >= pj.priority:
                        continue
                elif t.priority >= preemptor.priority:
                    continue
                out.append(t)
            return out, PERMIT

        def admits(preemptor: TaskInfo, cls: object, own: bool) -> bool:
            """priority.go's preemptableFn: a task of another job only when that job's priority is lower than the
            preemptor's job's, a task of the preemptor's own job only when its priority is lower than the
            preemptor's (no victim at all when the preemptor's job is not in the session)."""
            pj = ssn.jobs.get(preemptor.job)
            if pj is None:
                return False
            job_prio, task_prio = cast("tuple[int, int]", cls)
            return task_prio < preemptor.priority if own else job_prio < pj.priority

        def actor(preemptor: TaskInfo) -> tuple[int | None, int]:
            """What ``admits`` reads: the preemptor's job's priority (None: not in the session) and its own."""
            pj = ssn.jobs.get(preemptor.job)
            return (None if pj is None else pj.priority), preemptor.priority
        # the session part of ``actor``: nothing (the job it reads is the preemptor's own, at its version)
        ssn.add_preemptable_fn(self.name, victims, VictimCondition(victim_class, admits, actor, nothing))

        def unified(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """gangpreempt: only tasks of jobs of lower priority than the starving job; gangreclaim: any
            (reclaim is about queues' fair shares, not priority)."""
            if ctx.kind == GANG_RECLAIM:
                return candidates, PERMIT
            jobs = ssn.jobs
            return [t for t in candidates if (j := jobs.get(t.job)) is not None and j.priority < ctx.job.priority], \
                PERMIT
        ssn.add_unified_evictable_fn(self.name, unified)
        ssn.add_job_starving_fn(self.name, _starving)
