"""gang (``pkg/scheduler/plugins/gang/gang.go``): a job runs only when at least minMember of its tasks (and each task
spec's minimum) can.

jobValid drops jobs that cannot ever reach minMember (or a subGroupPolicy's minSubGroups); jobReady/jobPipelined/
jobStarving tell actions when a gang is complete (with every policy's minSubGroups sub-groups ready or pipelined);
subJobReady/subJobPipelined/subJobOrder do the same for one sub-group (its subGroupSize), unready ones first;
victims may only come from jobs that keep minMember afterwards; jobs not yet ready go first.
At session close every job that is not ready gets an Unschedulable condition with the fit errors, except a job
short only by pods still leaving their nodes (``releasing_keeps_gang``).
"""

from __future__ import annotations

from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.status import Status, unschedulable
from pyvolcano.api.types import SCHEDULED as SCHEDULED_STATUS
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.incremental.carry import carried
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition, anyone, nothing
from pyvolcano.framework.order import keyed
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, REJECT, EvictionContext, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import GANG_READY, SCHEDULED, UNSCHEDULABLE, Session


def _valid(job: JobInfo) -> Status | None:
    """gang's jobValid (``gang.go``: validJobFn)."""
    if not job.check_task_valid():
        return unschedulable("Not enough valid pods of each task for gang-scheduling", Gang.name)
    if not job.check_sub_job_valid():
        return unschedulable("Not enough valid subGroups of each task for gang-scheduling", Gang.name)
    vtn = job.valid_task_num()
    if vtn < job.min_available:
        return unschedulable(f"Not enough valid tasks for gang-scheduling, valid: {vtn}, "
                             f"min: {job.min_available}", Gang.name)
    return None


def releasing_keeps_gang(job: JobInfo) -> bool:
    """Volcano's ``shouldSkipUnschedulableForReleasing`` (``gang.go``): a job below minMember only because some of
    its pods are leaving their nodes (Releasing with a node: evicted in this session, or terminating) gets no
    Unschedulable condition at close, as long as it has nothing pending or pipelined and its scheduled pods plus
    those leaving still reach minMember.  Its phase then stays Running (``getPodGroupPhase`` counts such pods as
    scheduled) instead of becoming Unknown: reclaim can leave a job so when gang's vote finds no victim and
    the next tier's plugin picks one of its pods (the tiers' fall-through)."""
    index = job.index
    releasing = index.get(TaskStatus.Releasing)
    if not releasing:
        return False
    on_node = sum(1 for t in releasing.values() if t.node_name)
    if not on_node or index.get(TaskStatus.Pending) or index.get(TaskStatus.Pipelined):
        return False
    return job.count(SCHEDULED_STATUS) + on_node >= job.min_available


def victim_class(job: JobInfo, _: TaskInfo) -> bool:
    """A candidate's class for gang's victim condition: whether its job has more ready pods than minAvailable."""
    return job.ready_task_num() > job.min_available


def _above_min(_: TaskInfo, cls: object, own: bool) -> bool:
    """gang.go's preemptableFn (also its reclaimable) offers a task only while its job's ready count, less the
    victims already taken from it, is above ``MinAvailable``: never one of a job at or below it."""
    return bool(cls)


#: gang's victim condition, the same for preempt and reclaim
CONDITION = VictimCondition(victim_class, _above_min, anyone, nothing)


def _unified(_: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """gangpreempt/gangreclaim keep minMember through their safe/whole bundles: every candidate passes."""
    return candidates, PERMIT


def _by_readiness(lr: bool, rr: bool) -> int:
    if lr == rr:
        return 0
    return 1 if lr else -1


def _job_order(left: JobInfo, right: JobInfo) -> int:
    return _by_readiness(left.is_ready(), right.is_ready())


def _sub_job_order(left: SubJob, right: SubJob) -> int:
    return _by_readiness(left.is_ready(), right.is_ready())


def _job_ready(job: JobInfo) -> bool:
    return job.check_task_ready() and job.check_sub_job_ready() and job.is_ready()


def _sub_job_ready(sj: SubJob) -> bool:
    return sj.is_ready()


def _job_pipelined(job: JobInfo) -> Vote:
    return PERMIT if job.check_task_pipelined() and job.check_sub_job_pipelined() and job.is_pipelined() else REJECT


def _sub_job_pipelined(sj: SubJob) -> Vote:
    return PERMIT if sj.is_pipelined() else REJECT


def _starving(job: JobInfo) -> bool:
    # Volcano: in preemption only minMember matters, not the per-spec minimums
    return job.is_starving()


def _ready_carried(job: JobInfo) -> bool:
    return carried(job, "gang-ready", job.version, JobInfo.is_ready)


def _valid_carried(job: JobInfo) -> Status | None:
    # a function of the job's pods and minimums only: carried while the job is unchanged
    return carried(job, "gang-valid", job.version, _valid)


def _order_carried(left: JobInfo, right: JobInfo) -> int:
    return _job_order(left, right)


# The callbacks that read nothing of the session, made once rather than at every session's open: the job order keyed
# by readiness (a backlog is sorted without recounting per comparison, ``framework/order.py``), carried as close
# carries it with carry (``Session.carry``), computed afresh without
keyed(_order_carried, _ready_carried)
keyed(_job_order, JobInfo.is_ready)


@register_plugin
class Gang(Plugin):
    name = "gang"
    contracts = frozenset({Contract.FINGERPRINTED, Contract.GANG_READINESS, Contract.VALID_BY_VERSION,
                           Contract.READY_CONDITION, Contract.STARVING_BY_VERSION})

    def on_session_open(self, ssn: Session) -> None:
        carry = ssn.carry
        ssn.add_job_valid_fn(self.name, _valid_carried if carry else _valid)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            occupied: dict[str, int] = {}
            out = []
            for t in preemptees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue
                if t.job not in occupied:
                    occupied[t.job] = job.ready_task_num()
                if occupied[t.job] > job.min_available:
                    occupied[t.job] -= 1
                    out.append(t)
            return out, PERMIT
        ssn.add_preemptable_fn(self.name, victims, CONDITION)
        ssn.add_reclaimable_fn(self.name, victims, CONDITION)
        ssn.add_unified_evictable_fn(self.name, _unified)
        ssn.add_job_order_fn(self.name, _order_carried if carry else _job_order)
        ssn.add_sub_job_order_fn(self.name, _sub_job_order)
        ssn.add_job_ready_fn(self.name, _job_ready)
        ssn.add_sub_job_ready_fn(self.name, _sub_job_ready)
        ssn.add_job_pipelined_fn(self.name, _job_pipelined)
        ssn.add_sub_job_pipelined_fn(self.name, _sub_job_pipelined)
        ssn.add_job_starving_fn(self.name, _starving)

    def on_session_close(self, ssn: Session) -> None:
        """Every job gets a condition.  Most jobs of a session are ready and unchanged, so this loop runs over the
        whole cluster: ``carried`` is spelled out, and the ready condition (one read-only dict shared by the
        session's ready jobs, ``Session.update_podgroup_condition``) is set directly after the first."""
        carry = ssn.carry
        conds = ssn.pg_conditions
        ready_cond: dict[str, object] | None = None
        for job in ssn.unsettled_jobs():  # a settled job keeps the status close carries (``Plan.settled_jobs``)
            # Volcano's close looks at minMember only, not per-spec minimums
            v = job.version
            if carry and v == job.cloned_from >= 0:  # framework/incremental/carry.py: ``carried``
                hit = job.derived.get("gang-ready")
                if hit is not None and hit[0] == v:
                    ready = hit[1]
                else:
                    ready = job.is_ready()
                    job.derived["gang-ready"] = (v, ready)
            else:
                ready = job.is_ready()
            if ready:
                if ready_cond is None:
                    ssn.update_podgroup_condition(job, SCHEDULED, GANG_READY, "")
                    ready_cond = conds[job.uid][SCHEDULED]
                else:
                    c = conds.get(job.uid)
                    if c is None:
                        conds[job.uid] = {SCHEDULED: ready_cond}
                    else:
                        c[SCHEDULED] = ready_cond
                continue
            if releasing_keeps_gang(job):
                continue
            # a waiting job with the same inputs as in the last session (same version, enqueue reason and the
            # very fit-error objects the blocked-job memo handed back) gets last session's condition again, with
            # this session's transition id (``framework/incremental/carry.py``; the condition dict is this job's alone)
            key = None
            if carry and v == job.cloned_from >= 0:
                key = (v, job.enqueue_reason, tuple(job.nodes_fit_errors.items()))
                hit = job.derived.get("gang-unschedulable")
                if hit is not None and hit[0] == key:
                    cond = hit[1]
                    cond["transitionID"] = ssn.uid
                    job.job_fit_errors = cond["message"]
                    c = conds.get(job.uid)
                    if c is None:
                        conds[job.uid] = {UNSCHEDULABLE: cond}
                    else:
                        c[UNSCHEDULABLE] = cond
                    continue
            unready = max(job.min_available - job.ready_task_num(), 0)
            msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
            if job.enqueue_reason:
                msg += f"; not enqueued: {job.enqueue_reason}"
            job.job_fit_errors = msg
            ssn.update_podgroup_condition(job, UNSCHEDULABLE, "NotEnoughResources", msg)
            if key is not None:
                job.derived["gang-unschedulable"] = (key, conds[job.uid][UNSCHEDULABLE])
