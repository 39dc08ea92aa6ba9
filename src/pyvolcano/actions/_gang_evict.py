"""What gangpreempt and gangreclaim share (Volcano master ed72c7c8, ``pkg/scheduler/actions/utils``: ``bundle.go``,
``simulate.go``, ``util.go``, and the common shape of ``gangpreempt.go`` / ``gangreclaim.go``).

Both actions make room for a whole starving gang at once, inside one *domain* (a hypernode) at a time, and pipeline
the gang there:

1. **Which jobs.**  Every job that is not Pending, passes jobValid, has a queue and is starving, per queue in queue
   order, jobs in job order.  Unlike preempt, a job with a network topology is not skipped, and a pod's
   ``preemptionPolicy: Never`` is not looked at.
2. **What it needs.**  The pending tasks of its (default) sub-group that are not scheduling-gated and request
   something (``CollectPendingTasksForGangEviction``), their init requests summed.
3. **Where.**  The candidate domains (``GetCandidateDomains``): for a job in hard mode (soft mode is hard mode up to
   the virtual top), the ``network-topology-aware`` plugin's eviction gradients -- hypernodes at or below the
   job's tier whose *allocatable* covers the PodGroup's ``minResources`` (every one under the search root once
   the job has pods placed), the widest tier first, at most ``hypernode.gradient.evict.max-hypernodes`` of them
   -- then at most ``maxDomains``; any other job (or without the plugin) has the whole cluster as its only
   domain.
4. **Victims, as bundles.**  In a domain, the candidate tasks (per action) are grouped per job into bundles
   (``CreateJobBundles``): a *safe* bundle of the tasks whose eviction keeps the job at its minMember and each
   role's minimum (lowest task priority first, then UID), and a *whole* bundle of the rest, which breaks the
   gang.  Bundles are ordered safe first, then by job (gangpreempt: the job that job order puts last first) or by
   queue (gangreclaim: the victim queue order), then by return on investment (how much of the need a bundle
   frees over what its job holds; a safe bundle costs nothing), then by job UID.  The plugins'
   ``unifiedEvictable`` vote filters the tasks (a whole bundle survives only whole), and ``allowWholeBundle:
   false`` drops whole bundles.
5. **Trying.**  Bundles are added in order until the domain's idle + releasing resources plus the victims' cover
   the need; each time they do, a dry run (``BuildNominationPlanInDomain``) evicts the victims so far and places
   every one of the gang's pending tasks in the domain (for a job in hard mode: in the first hypernode of the
   sub-group's eviction gradients under the domain where all fit), each on the best node whose future idle fits
   it (idle-fitting nodes first) among those failing no unresolvable predicate, pipelined.  The first dry run
   that leaves the job pipelined is kept; the job's statement is committed if the job is pipelined, and the
   hypernode the sub-group went to is recorded as its nomination.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cmp_to_key
from typing import ClassVar

import numpy as np

from pyvolcano.actions._hypernode import _pending_request
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, is_empty, less_equal
from pyvolcano.api.types import ALLOCATED, TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.points import EvictionContext
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.topology import PURPOSE_EVICT, visited_first
from pyvolcano.framework.util import PriorityQueue

SAFE, WHOLE = 0, 1
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"


@dataclass
class Bundle:
    """Volcano's ``utils.Bundle``: some of one job's candidate tasks in a domain.  ``local``: what they hold;
    ``cost``: what evicting them costs the job (``GlobalRes``: nothing for a safe bundle, every task's request of
    the job for a whole one)."""

    kind: int
    job: JobInfo
    tasks: list[TaskInfo]
    local: np.ndarray
    cost: np.ndarray


def _sum(tasks: list[TaskInfo], size: int, init: bool = False) -> np.ndarray:
    out = np.zeros(size)
    for t in tasks:
        out += t.init_resreq if init else t.resreq
    return out


def job_bundles(job: JobInfo, tasks: list[TaskInfo], size: int) -> list[Bundle]:
    """``CreateJobBundles`` (bundle.go): ``tasks`` (the job's candidates in the domain) by task priority, then UID;
    a job already below minMember gives one safe bundle of all of them; otherwise each task is safe while the job
    keeps more ready tasks than minMember and its role (when the per-role minimums bind: minMember at least
    their sum) keeps more than its minimum, counting allocated, succeeded and pending BestEffort tasks."""
    if not tasks:
        return []
    tasks = sorted(tasks, key=lambda t: (t.priority, t.uid))
    surplus = job.ready_task_num() - job.min_available
    if surplus < 0:
        return [Bundle(SAFE, job, tasks, _sum(tasks, size), np.zeros(size))]
    role_surplus: dict[str, int] = {}
    if job.min_available >= sum(job.task_min_available.values()):
        ready: dict[str, int] = {}
        for t in job.tasks.values():
            if t.status & ALLOCATED or t.status == TaskStatus.Succeeded or (
                    t.status == TaskStatus.Pending and is_empty(t.init_resreq)):
                ready[t.task_spec] = ready.get(t.task_spec, 0) + 1
        role_surplus = {role: ready.get(role, 0) - n for role, n in job.task_min_available.items()}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        has_min = t.task_spec in role_surplus
        if surplus > 0 and (not has_min or role_surplus[t.task_spec] > 0):
            safe.append(t)
            surplus -= 1
            if has_min:
                role_surplus[t.task_spec] -= 1
        else:
            whole.append(t)
    out = []
    if safe:
        out.append(Bundle(SAFE, job, safe, _sum(safe, size), np.zeros(size)))
    if whole:
        out.append(Bundle(WHOLE, job, whole, _sum(whole, size), job.total_request.copy()))
    return out


def _score(res: np.ndarray, need: np.ndarray, cap: bool) -> float:
    """``scoreAgainstNeed``: over the resources the need names, each one's share of the need (capped at 1)."""
    dims = need >= EPS
    n = need[dims]
    v = np.minimum(res[dims], n) if cap else res[dims]
    return float((v / n).sum())


def roi(b: Bundle, need: np.ndarray) -> float:
    """``bundleROI``: how much of the need the bundle frees over what it costs (infinite when it costs nothing)."""
    cost = _score(b.cost, need, False)
    return float("inf") if cost == 0 else _score(b.local, need, True) / cost


def sort_bundles(bundles: list[Bundle], need: np.ndarray, first: Callable[[Bundle, Bundle], int]) -> list[Bundle]:
    """``SortBundlesForPreempt`` / ``SortBundlesForReclaim``: safe before whole, then ``first`` (negative: the left
    bundle first; 0: no opinion), then return on investment (highest first), then job UID, first task UID and
    size."""
    rois = {id(b): roi(b, need) for b in bundles}

    def cmp(a: Bundle, b: Bundle) -> int:
        if a.kind != b.kind:
            return a.kind - b.kind
        r = first(a, b)
        if r:
            return r
        ra, rb = rois[id(a)], rois[id(b)]
        if ra != rb:
            return -1 if ra > rb else 1
        ka = (a.job.uid, a.tasks[0].uid if a.tasks else "", len(a.tasks))
        kb = (b.job.uid, b.tasks[0].uid if b.tasks else "", len(b.tasks))
        return -1 if ka < kb else (1 if ka > kb else 0)
    return sorted(bundles, key=cmp_to_key(cmp))


def allowed_bundles(bundles: list[Bundle], allowed: set[str], size: int) -> list[Bundle]:
    """``ApplyAllowedTasks``: a whole bundle survives only if every task of it is allowed; a safe one keeps its
    allowed tasks."""
    out = []
    for b in bundles:
        ok = [t for t in b.tasks if t.uid in allowed]
        if b.kind == WHOLE:
            if ok and len(ok) == len(b.tasks):
                out.append(b)
        elif ok:
            out.append(Bundle(SAFE, b.job, ok, _sum(ok, size), b.cost))
    return out


def preemptable_for_gang_eviction(job: JobInfo) -> bool:
    """``IsJobPreemptableForGangEviction`` (util.go): a job whose PodGroup does not say ``volcano.sh/preemptable``
    (annotation or label) may lose tasks; one that says it follows what it says."""
    pg = job.podgroup
    if pg is None:
        return True
    if PREEMPTABLE_ANNOTATION in pg.annotations or PREEMPTABLE_ANNOTATION in pg.labels:
        return job.preemptable
    return True


def pending_for_eviction(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """``CollectPendingTasksForGangEviction`` for the job's default sub-group: its pending tasks that are not
    scheduling-gated and request something, in task order."""
    tasks = [t for t in job.index.get(TaskStatus.Pending, {}).values() if not t.sch_gated and not is_empty(t.resreq)]
    q = PriorityQueue(ssn.task_cmp, tasks)
    return [q.pop() for _ in range(len(tasks))]


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[int]:
    """``GetCandidateDomains`` (util.go): the job-level eviction gradients from the virtual top, flattened, at most
    ``max_domains``; for a job not in hard mode (or without a gradient plugin) the virtual top; a job in hard mode
    whose gradients are empty (its pods already above its tier) gets none."""
    st = ssn.topology
    top = st.topo.top
    jt = st.of(job)
    if jt is None or not jt.hard or jt.tier is None:
        return [top]
    gradients = st.gradient(job, top, jt.tier, jt.allocated, job.min_resources(ssn.res.size), PURPOSE_EVICT)
    out: list[int] = []
    for row in gradients:
        for h in row:
            if h not in out:
                out.append(h)
                if len(out) >= max_domains:
                    return out
    return out


def simulate_in(ssn: Session, queue: QueueInfo, job: JobInfo, tasks: list[TaskInfo], h: int,
                evicted: bool = False) -> Statement | None:
    """``runSimulateTrialAtHyperNode`` (simulate.go): every task, in order, pipelined to the node
    ``select_resolvable`` picks among hypernode ``h``'s nodes, or nothing (a task the queue has no room for, that
    a prePredicate rejects or that finds no node ends the trial); the trial counts only if the job is then ready
    or pipelined.  ``evicted`` (victims were evicted first): each pipeline records it (``victimsPresent``), which
    nominates the pods to their nodes (``Session.close``)."""
    st = ssn.topology
    within = None if h == st.topo.top else st.topo.members[h]
    if within is not None and not within.any():
        return None
    trial = Statement(ssn)
    for task in tasks:
        node = None
        if ssn.allocatable(queue, task) and ssn.pre_predicate(task) is None:
            node = ssn.selector.select_resolvable(task, job, within)
        if node is None:
            trial.discard(rollback=False)
            return None
        trial.pipeline(task, node, evicted)
    if trial.ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
        return trial
    trial.discard(rollback=False)
    return None


def nomination_plan(ssn: Session, queue: QueueInfo, job: JobInfo, domain: int, victims: list[TaskInfo],
                    reason: str) -> tuple[Statement, int] | None:
    """``BuildNominationPlanInDomain`` (simulate.go) for the job's default sub-group: the victims evicted, then its
    pending tasks placed by ``simulate_in`` in the domain -- for a job in hard mode, in the first hypernode of the
    sub-group's eviction gradients under the domain (widest first) where all of them fit -- and kept only if the
    job is then pipelined.  Returns the statement (its operations applied to the session) and the hypernode the
    sub-group went to, or None with the session as it was."""
    st = ssn.topology
    if domain != st.topo.top and not st.topo.members[domain].any():
        return None
    tasks = pending_for_eviction(ssn, job)
    if not tasks:
        return None
    chain = Statement(ssn)
    for v in victims:
        chain.evict(v, reason)
    jt = st.of(job)
    if jt is not None and jt.hard and jt.tier is not None:
        pending = job.index.get(TaskStatus.Pending, {}).values()
        rows = st.gradient(job, domain, jt.tier, jt.sub_allocated, _pending_request(pending, ssn.res.size), PURPOSE_EVICT)
    else:
        rows = [[domain]]
    for row in rows:
        for h in row:
            trial = simulate_in(ssn, queue, job, tasks, h, bool(victims))
            if trial is None:
                continue
            chain.merge(trial)
            if ssn.job_pipelined(job):
                visited_first(st, job, list(row), h)  # the row's order is Go map order in Volcano
                return chain, h
            chain.discard(rollback=False)
            return None
    chain.discard(rollback=False)
    return None


@dataclass(frozen=True)
class GangEvictOptions:
    """The arguments of gangpreempt and gangreclaim: ``maxDomains`` (default 8; 0 or less means 8) and
    ``allowWholeBundle`` (default true)."""

    max_domains: int = 8
    allow_whole: bool = True

    @classmethod
    def of(cls, args: Arguments) -> GangEvictOptions:
        n = args.get_int("maxDomains", cls.max_domains)
        return cls(n if n > 0 else cls.max_domains, args.get_bool("allowWholeBundle", cls.allow_whole))


class GangEviction(Action):
    """The loop both actions share (``Execute`` and ``preemptJobInDomains`` / ``reclaimJobInDomains``); the
    subclasses say which tasks are candidates, how bundles are ordered, and whether a queue or a job may try."""

    kind: ClassVar[str] = ""

    def execute(self, ssn: Session) -> None:
        opts = GangEvictOptions.of(self.arguments)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_cmp)
        seen: set[str] = set()
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job) is not None:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if ssn.job_starving(job):
                starving.setdefault(queue.name, PriorityQueue(ssn.job_cmp)).push(job)
        while not queues.empty():
            queue = queues.pop()
            if self.skip_queue(ssn, queue):
                continue
            jobs = starving.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                chosen = self.evict_for(ssn, stmt, queue, job, opts)
                if ssn.job_pipelined(job):
                    stmt.commit()
                    if chosen is not None:  # ApplySubJobNominations
                        ssn.topology.nominated[job.uid] = chosen
                else:
                    stmt.discard()

    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return False

    def may_try(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return True

    def candidates(self, ssn: Session, job: JobInfo) -> list[TaskInfo]:
        """The running tasks of other jobs this action may take for ``job`` (anywhere; the domain is applied by
        the caller)."""
        raise NotImplementedError

    def first(self, ssn: Session, job: JobInfo) -> Callable[[Bundle, Bundle], int]:
        """The order between bundles of different jobs (negative: the left one first)."""
        raise NotImplementedError

    def evict_for(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo,
                  opts: GangEvictOptions) -> int | None:
        """``preemptJobInDomains`` / ``reclaimJobInDomains``: the hypernode the job's sub-group was placed in (its
        operations joined to ``stmt``), or None."""
        pending = pending_for_eviction(ssn, job)
        if not pending or not self.may_try(ssn, queue, pending):
            return None
        size = ssn.res.size
        need = _sum(pending, size, init=True)
        nodes, topo = ssn.nodes, ssn.topology.topo
        cands = self.candidates(ssn, job)
        domains = candidate_domains(ssn, job, opts.max_domains)
        for domain in domains:
            members = topo.members[domain]
            if not members.any():
                continue
            local = [t for t in cands if (i := nodes.pos.get(t.node_name)) is not None and members[i]]
            bundles = self.bundles(ssn, job, need, domain, local, opts)
            if not bundles:
                continue
            room = (nodes.idle[members] + nodes.releasing[members]).sum(axis=0)
            victims: list[TaskInfo] = []
            for b in bundles:
                victims.extend(b.tasks)
                room = room + b.local
                if not less_equal(need, room):
                    continue
                got = nomination_plan(ssn, queue, job, domain, list(victims), self.kind)
                if got is not None:
                    plan, h = got
                    stmt.merge(plan)
                    visited_first(ssn.topology, job, domains, domain)  # one tier's domains: Go map order
                    return h
        return None

    def bundles(self, ssn: Session, job: JobInfo, need: np.ndarray, domain: int, tasks: list[TaskInfo],
                opts: GangEvictOptions) -> list[Bundle]:
        """``selectDomainBundles``: the domain's candidates grouped into bundles per job, ordered, filtered by the
        plugins' ``unifiedEvictable`` vote, ordered again, whole bundles dropped unless allowed."""
        size = ssn.res.size
        by_job: dict[str, list[TaskInfo]] = {}
        for t in tasks:
            by_job.setdefault(t.job, []).append(t)
        bundles = [b for uid, ts in by_job.items() for b in job_bundles(ssn.jobs[uid], ts, size)]
        if not bundles:
            return []
        first = self.first(ssn, job)
        bundles = sort_bundles(bundles, need, first)
        ctx = EvictionContext(self.kind, job, ssn.topology.topo.names[domain])
        allowed = ssn.unified_evictable(ctx, [t for b in bundles for t in b.tasks])
        if not allowed:
            return []
        valid = sort_bundles(allowed_bundles(bundles, {t.uid for t in allowed}, size), need, first)
        return [b for b in valid if b.kind == SAFE or opts.allow_whole]
