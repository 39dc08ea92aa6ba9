"""What gangpreempt and gangreclaim share (Volcano master ed72c7c8, ``pkg/scheduler/actions/utils``: ``bundle.go``,
``simulate.go``, ``util.go``, and the common shape of ``gangpreempt.go`` / ``gangreclaim.go``).

Both actions make room for a whole starving gang at once, inside one *domain* (a hypernode) at a time, and pipeline
the gang there, sub-group by sub-group (a PodGroup's ``subGroupPolicy``; a job without one is its default
sub-group alone):

1. **Which jobs.**  Every job that is not Pending, passes jobValid, has a queue and is starving, per queue in queue
   order, jobs in job order.  Unlike preempt, a job with a network topology is not skipped, and a pod's
   ``preemptionPolicy: Never`` is not looked at.
2. **What it needs** (``CollectPendingTasksForGangEviction``).  The eviction worksheet
   (``organizeEvictionWorksheet``): the sub-groups with a pending task that is not scheduling-gated and requests
   something, those needed to reach each policy's ``minSubGroups`` first, then ``subJobOrder``; each one's such
   tasks in task order.  A job not yet ready needs every task of the worksheet; a ready one (e.g. minMember met,
   more replicas pending, a starving test that counts every pod) only the first sub-group's.  Their init requests
   summed are the need.
3. **Where.**  The candidate domains (``GetCandidateDomains``): for a job in hard mode (its own constraint; soft
   mode is hard mode up to the virtual top), the ``network-topology-aware`` plugin's eviction gradients --
   hypernodes at or below the job's tier whose *allocatable* covers the PodGroup's ``minResources`` (every one
   under the search root once the job has pods placed), the widest tier first, at most
   ``hypernode.gradient.evict.max-hypernodes`` of them -- then at most ``maxDomains``; any other job (a hard
   sub-group alone does not count, nor does a job without the plugin) has the whole cluster as its only domain.
4. **Victims, as bundles.**  In a domain, the candidate tasks (per action) are grouped per job into bundles
   (``CreateJobBundles``): a *safe* bundle of the tasks whose eviction keeps the job at its minMember, each role
   at its minimum and, for a job with sub-groups, each policy at its ``minSubGroups`` ready sub-groups (lowest
   task priority first, then UID), and a *whole* bundle of the rest, which breaks the gang.  Bundles are ordered
   safe first, then by job (gangpreempt: the job that job order puts last first) or by queue (gangreclaim: the
   victim queue order), then by return on investment (how much of the need a bundle frees over what its job
   holds; a safe bundle costs nothing), then by job UID.  The plugins' ``unifiedEvictable`` vote filters the
   tasks (a whole bundle survives only whole), and ``allowWholeBundle: false`` drops whole bundles.
5. **Trying.**  Bundles are added in order until the domain's idle + releasing resources plus the victims' cover
   the need; each time they do, a dry run (``BuildNominationPlanInDomain``) evicts the victims so far and places
   the worksheet's sub-groups in order, each one's tasks all in one hypernode -- for a job with a hard
   constraint anywhere (its own or a sub-group's), the first hypernode of *that sub-group's* eviction gradients
   under the domain where all fit (a sub-group without a hard tier: the domain) -- each task on the best node
   whose future idle fits it (idle-fitting nodes first) among those failing no unresolvable predicate,
   pipelined, until the job is pipelined (a job ready before: after one sub-group).  A sub-group that fits in no
   hypernode fails the dry run.  The first dry run that leaves the job pipelined is kept; the job's statement is
   committed if the job is pipelined, and the hypernode each sub-group went to is recorded as its nomination.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cmp_to_key
from typing import ClassVar

import numpy as np

from pyvolcano.actions._hypernode import _pending_request, worksheet_order
from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, is_empty, less_equal
from pyvolcano.api.types import ALLOCATED, TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.points import EvictionContext
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import OpKind, Statement
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
    a job already below minMember gives one safe bundle of all of them; otherwise a task is safe while the job
    keeps more ready tasks than minMember, its role (when the per-role minimums bind: minMember at least their
    sum) keeps more than its minimum, counting allocated, succeeded and pending BestEffort tasks, and -- for a job
    with a ``subGroupPolicy`` -- its sub-group either is already broken (not ready, or a safe task of it taken
    before) or its policy has more ready sub-groups than ``minSubGroups`` (the first task taken from a ready
    sub-group breaks it and costs its policy one).  Sub-group readiness here is the sub-group's own count
    (``SubJobInfo.IsReady``), not the plugins'; the default sub-group has no minimum."""
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
    # sub-groups (groupSurplus, subJobBroken): per policy, the ready sub-groups it can lose
    by_sub = job.has_sub_policy()
    subs = job.sub_jobs() if by_sub else {}
    group_surplus: dict[str, int] = {}
    broken: set[str] = set()
    if by_sub:
        for sj in subs.values():
            if sj.is_ready():
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) + 1
            else:
                broken.add(sj.uid)
        for gid, n in job.min_sub_jobs().items():
            group_surplus[gid] = group_surplus.get(gid, 0) - n
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        has_min = t.task_spec in role_surplus
        sid = job.sub_id(t.uid) if by_sub else None
        sub_ok = True
        if by_sub:
            sub_ok = sid is not None and (sid in broken or group_surplus.get(subs[sid].gid, 0) > 0)
        if surplus > 0 and (not has_min or role_surplus[t.task_spec] > 0) and sub_ok:
            safe.append(t)
            surplus -= 1
            if has_min:
                role_surplus[t.task_spec] -= 1
            if sid is not None and sid not in broken:
                broken.add(sid)
                gid = subs[sid].gid
                group_surplus[gid] = group_surplus.get(gid, 0) - 1
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


#: the eviction worksheet: each sub-group to place with its tasks in task order, in worksheet order
EvictionWorksheet = list[tuple[SubJob, list[TaskInfo]]]


def eviction_worksheet(ssn: Session, job: JobInfo) -> EvictionWorksheet:
    """``organizeEvictionWorksheet`` (simulate.go), allocate's ``organizeJobWorksheet`` order: of the sub-groups
    not ready (``subJobReady``), in ``subJobOrder``, the first ones needed to reach their policy's
    ``minSubGroups`` (counting the ready ones) are required; required sub-groups first, then ``subJobOrder``.
    Every sub-group (ready or not) with a pending task that is not scheduling-gated and requests something is
    in it, with those tasks in task order.  For a job without policies: its default sub-group, every such task."""
    subs = job.sub_jobs()
    queue: PriorityQueue[SubJob] = PriorityQueue(worksheet_order(ssn, job))
    tasks_of: dict[str, list[TaskInfo]] = {}
    for sid, sj in subs.items():
        pending = [t for t in sj.pending() if not t.sch_gated and not is_empty(t.resreq)]
        if pending:
            q = PriorityQueue(ssn.task_cmp, pending)
            tasks_of[sid] = [q.pop() for _ in range(len(pending))]
            queue.push(sj)
    out: EvictionWorksheet = []
    while not queue.empty():
        sj = queue.pop()
        out.append((sj, tasks_of[sj.uid]))
    return out


def pending_for_eviction(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """``CollectPendingTasksForGangEviction``: for a job that is not ready, every task of its eviction worksheet
    (sub-group by sub-group); for a ready one, the first sub-group's tasks only."""
    ws = eviction_worksheet(ssn, job)
    if not ws:
        return []
    if ssn.job_ready(job):
        return list(ws[0][1])
    return [t for _, tasks in ws for t in tasks]


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


def simulate_in(ssn: Session, queue: QueueInfo, job: JobInfo, sub: SubJob, tasks: list[TaskInfo],
                h: int, evicted: bool = False) -> Statement | None:
    """``runSimulateTrialAtHyperNode`` (simulate.go): every task of sub-group ``sub``, in order, pipelined to the
    node ``select_resolvable`` picks among hypernode ``h``'s nodes, or nothing (a task the queue has no room for,
    that a prePredicate rejects or that finds no node ends the trial); the trial counts only if the sub-group is
    then ready or pipelined (``subJobReady`` / ``subJobPipelined``: for a job without policies, the job).
    ``evicted`` (victims were evicted first): each pipeline records it (``victimsPresent``), which nominates the
    pods to their nodes (``Session.close``)."""
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
    if trial.ops and (ssn.sub_job_ready(job, sub) or ssn.sub_job_pipelined(job, sub)):
        return trial
    trial.discard(rollback=False)
    return None


def contains_hard_topology(ssn: Session, job: JobInfo) -> bool:
    """Volcano's ``ContainsHardTopology``: the job or one of its sub-groups is in hard mode with a tier (soft
    mode already turned into hard mode when the session opened)."""
    jt = ssn.topology.of(job)
    return jt is not None and (jt.hard or any(s.hard for s in jt.subs.values()))


def _sub_gradients(ssn: Session, job: JobInfo, sub: SubJob, domain: int, hard: bool) -> list[list[int]]:
    """Where sub-group ``sub`` may go in ``domain``: for a job with a hard constraint anywhere, the sub-group's
    eviction gradients under the domain (``HyperNodeGradientForSubJobFn``: for a sub-group in hard mode, the
    hypernodes within its tier whose allocatable covers its pending pods' init requests, or every one under its
    search root once it has pods placed, widest first; any other sub-group: the domain); otherwise the domain."""
    st = ssn.topology
    jt = st.of(job)
    s = jt.subs.get(sub.uid) if jt is not None and hard else None
    if s is None or not s.hard or s.tier is None:
        return [[domain]]
    return st.gradient(job, domain, s.tier, s.allocated, _pending_request(sub.pending(), ssn.res.size),
                       PURPOSE_EVICT)


def _record_row_ties(ssn: Session, queue: QueueInfo, job: JobInfo, sub: SubJob, tasks: list[TaskInfo],
                     row: list[int]) -> None:
    """For the differential compare (``run_session(record_ties=True)``): Volcano visits the hypernodes of one
    tier of a gradient in Go map order (``hyperNodeGradientFn`` ranges over ``Children``) and takes the first
    where the sub-group fits, so any of them where it fits may be chosen; each is dry-run here (and undone) and
    those that fit are recorded as ties of the job."""
    st = ssn.topology
    assert st.ties is not None
    fits = []
    for h in row:
        trial = simulate_in(ssn, queue, job, sub, tasks, h)
        if trial is not None:
            fits.append(h)
            trial.discard(rollback=False)
    if len(fits) > 1:
        st.ties.setdefault(job.uid, set()).update(fits)


def nomination_plan(ssn: Session, queue: QueueInfo, job: JobInfo, domain: int, victims: list[TaskInfo],
                    reason: str) -> tuple[Statement, dict[str, int]] | None:
    """``BuildNominationPlanInDomain`` (simulate.go): the victims evicted, then the job's eviction worksheet
    (built before the evictions) placed sub-group by sub-group by ``simulate_in``, each in the first hypernode
    of its gradients (``_sub_gradients``) where all its tasks fit; a sub-group that fits nowhere ends the dry
    run with nothing.  It stops once the job is pipelined, or after the first sub-group placed when the job was
    ready before; kept only if the job is then pipelined.  Returns the statement (its operations applied to the
    session) and the hypernode each sub-group placed went to, or None with the session as it was."""
    st = ssn.topology
    if domain != st.topo.top and not st.topo.members[domain].any():
        return None
    ws = eviction_worksheet(ssn, job)
    if not ws:
        return None
    was_ready = ssn.job_ready(job)
    hard = contains_hard_topology(ssn, job)
    chain = Statement(ssn)
    for v in victims:
        chain.evict(v, reason)
    placed: dict[str, int] = {}
    pipelined = False
    for sub, tasks in ws:
        won = -1
        for row in _sub_gradients(ssn, job, sub, domain, hard):
            if st.ties is not None and len(row) > 1:
                _record_row_ties(ssn, queue, job, sub, tasks, row)
            for h in row:
                trial = simulate_in(ssn, queue, job, sub, tasks, h, bool(victims))
                if trial is not None:
                    chain.merge(trial)
                    won = h
                    break
            if won >= 0:
                break
        if won < 0:
            chain.discard(rollback=False)
            return None
        placed[sub.uid] = won
        pipelined = ssn.job_pipelined(job)
        if was_ready or pipelined:
            break
    if not pipelined:
        chain.discard(rollback=False)
        return None
    return chain, placed


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
                    replayed = [(op.task, op.old if op.kind is OpKind.EVICT else TaskStatus.Pending) for op in stmt.ops]
                    stmt.commit()
                    for task, old in replayed:  # the plan was replayed from saved clones (RecoverOperations)
                        owner = ssn.jobs.get(task.job)
                        if owner is not None:
                            owner.mark_replayed(task, old)
                    if chosen:  # ApplySubJobNominations
                        ssn.topology.nominated.update(chosen)
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
                  opts: GangEvictOptions) -> dict[str, int] | None:
        """``preemptJobInDomains`` / ``reclaimJobInDomains``: the hypernode each sub-group placed went to (the
        operations joined to ``stmt``), or None."""
        pending = pending_for_eviction(ssn, job)
        if not pending or not self.may_try(ssn, queue, pending):
            return None
        need = _sum(pending, ssn.res.size, init=True)
        cands = self.candidates(ssn, job)
        domains = candidate_domains(ssn, job, opts.max_domains)
        for domain in domains:
            got = self.try_domain(ssn, queue, job, need, cands, domain, opts)
            if got is None:
                continue
            plan, placed = got
            # for the differential compare: Volcano lists the hypernodes of one tier in Go map order, so it may
            # visit any later domain of the chosen one's tier before it: a superset (trying them here would leave
            # undone evictions in the node views, which changes the rest of the session)
            visited_first(ssn.topology, job, domains, domain)
            stmt.merge(plan)
            return placed
        return None

    def try_domain(self, ssn: Session, queue: QueueInfo, job: JobInfo, need: np.ndarray,
                   cands: list[TaskInfo], domain: int, opts: GangEvictOptions,
                   ) -> tuple[Statement, dict[str, int]] | None:
        """One domain of ``preemptJobInDomains`` / ``reclaimJobInDomains``: its bundles added in order until the
        domain's idle + releasing resources plus the victims' cover ``need``, a dry run each time they do; the
        first that leaves the job pipelined (its statement applied to the session), or None."""
        nodes = ssn.nodes
        members = ssn.topology.topo.members[domain]
        if not members.any():
            return None
        local = [t for t in cands if (i := nodes.pos.get(t.node_name)) is not None and members[i]]
        bundles = self.bundles(ssn, job, need, domain, local, opts)
        if not bundles:
            return None
        room = (nodes.idle[members] + nodes.releasing[members]).sum(axis=0)
        victims: list[TaskInfo] = []
        for b in bundles:
            victims.extend(b.tasks)
            room = room + b.local
            if not less_equal(need, room):
                continue
            got = nomination_plan(ssn, queue, job, domain, list(victims), self.kind)
            if got is not None:
                return got
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
