"""preempt: starving jobs take resources from lower-priority work in their queue (Volcano master ed72c7c8,
``pkg/scheduler/actions/preempt/preempt.go``).

Queues with starving jobs are taken in queue order.  First between jobs of one queue: each starving job (in
job order) pops its pending tasks (in task order) while it is starving; each task preempts on one node; the
job's evictions are kept only if the job is then pipelined.  Then within each starving job: its pending tasks
take from its own lower-ranked tasks, each kept only if the task was placed, stopping at the first that was
not.  A job with a network topology constraint (``networkTopology`` on its PodGroup, any mode) is skipped
altogether, as Volcano's preempt does (``ContainsNetworkTopology``); the ``gangpreempt`` action serves it.

For one task, by default (Volcano's ``normalPreempt``): nodes passing the predicates, or failing only resolvable
ones (host ports, pod anti-affinity, spread skew: ``PredicateForPreemptAction``), are tried best score first;
on each, the plugins' ``preemptable`` answer gives the victims, which are evicted in victim order until the task
fits (its queue's room, the node's future idle and the predicates, pod affinity and spread judged as
they were when the task's turn began: Volcano's PrePredicate state); a node where it still does not fit is
rolled back.  With the argument ``enableTopologyAwarePreemption: true`` (Volcano's
``topologyAwarePreempt``), nodes are dry-run instead, a minimal victim set found per node, and the best
candidate node chosen as kube-scheduler ranks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, partial

import numpy as np

from pyvolcano.actions._victims import (
    PREEMPTABLE_STATUS,
    CandidateLimits,
    FitsNowhere,
    dry_run,
    evict_greedily,
    fitting,
    reachable,
    take_turns,
    turns_idle,
    victim_bound,
)
from pyvolcano.api.job_info import JobInfo, TaskInfo, pod_priority, terminating_by_preemption
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.carry import unchanged
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.points import PREEMPTABLE, BatchScoreError
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import PriorityQueue
from pyvolcano.framework.victim_ledger import (
    Stamp,
    VictimProof,
    session_ledger,
    victim_proof,
    walk_by_version,
    while_unchanged,
)


@dataclass(frozen=True)
class PreemptOptions:
    """preempt's arguments (Volcano's ``parseArguments``, preempt.go): ``enableTopologyAwarePreemption``
    (default false) switches to the dry-run path, whose candidate sampling ``limits`` takes
    ``minCandidateNodesPercentage`` / ``minCandidateNodesAbsolute`` / ``maxCandidateNodesAbsolute``."""

    topology_aware: bool = False
    limits: CandidateLimits = field(default_factory=CandidateLimits)

    @classmethod
    def of(cls, args: Arguments) -> PreemptOptions:
        return cls(args.get_bool("enableTopologyAwarePreemption", False), CandidateLimits.of(args))


def preemptor_fits(ssn: Session, queue: QueueInfo, job: JobInfo, preemptor: TaskInfo) -> Callable[[int], bool]:
    """Volcano's ``preemptorFitsOnNode`` (preempt.go): the preemptor's queue has room for it
    (``allocatable``; evicting victims of the same queue gives room back), it fits the node's future idle,
    and it passes the predicates on the node as it is now."""
    def fits(i: int) -> bool:
        return (ssn.allocatable(queue, preemptor) and less_equal(preemptor.init_resreq, ssn.nodes.future[i])
                and ssn.selector.passes_at(preemptor, job, i))
    return fits


#: a victim bound (``victim_bound``), or a function giving it when first needed, or None (no bound)
Bound = np.ndarray | Callable[[], np.ndarray] | None


def preempt_task(ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: Callable[[TaskInfo], bool],
                 opts: PreemptOptions, bound_of: Bound = None, reason: str = "preempt",
                 no_victims: bool = False) -> bool:
    """Volcano's ``preempt`` for one task (preempt.go): a pod with ``preemptionPolicy: Never`` or a
    prePredicate objection preempts nothing; otherwise the nodes passing the predicates go to
    ``normalPreempt`` (best score first, greedy eviction per node) or, with ``enableTopologyAwarePreemption``,
    to ``topologyAwarePreempt`` (dry run in node order, best candidate).  ``keep`` filters the node's tasks
    before the plugins' preemptable vote; ``bound`` (``victim_bound`` of a superset of what ``keep`` admits)
    lets nodes that cannot make room even with every candidate gone be skipped in one NumPy pass; given as a
    function it is taken only when a node is to be tried (a bound taken later in the action is still one: the
    candidates only shrink during an action, ``victim_bound``).

    ``no_victims``: the plugins' declared victim conditions prove that every node's preemptable answer is empty
    (``framework/victim_ledger.py``).  The search then keeps what it does without victims: the dry run finds
    no candidate node (a node's victims must not be empty), and the greedy path pipelines the task onto the first
    node, best score first, where it already fits (``validate`` of no victims, then ``fits_now``); only the nodes
    where its request fits the future idle can be that node (a bound of zero; when there is none, the nodes are
    not scored or ordered at all, unless a batch score would be asked), and no victim is asked for.  With
    ``deltas.CHECK`` the search runs as without the proof, and every answer must be empty."""
    job = ssn.jobs[preemptor.job]
    if never_preempts(preemptor) or not nominated_allows(ssn, preemptor, job) \
            or ssn.pre_predicate(preemptor) is not None:
        return False
    queue = ssn.queues[job.queue]
    feasible = ssn.preempt_nodes(preemptor, job)
    idx = np.nonzero(feasible)[0]
    if not len(idx):
        return False
    shortcut = no_victims and not deltas.CHECK
    if shortcut and opts.topology_aware:
        return False  # dry_run: select_victims_on_node makes no node a candidate without victims
    if shortcut and not ssn.batch_scores and not len(fitting(ssn, preemptor.init_resreq, idx)):
        # no node can take the task without victims: the node order below decides nothing (a batch score, the
        # extender's, is still asked: it may fail and warn)
        return False
    bound = np.zeros((len(ssn.nodes), ssn.res.size)) if shortcut else (bound_of() if callable(bound_of) else bound_of)

    def offer(i: int) -> list[TaskInfo]:
        if shortcut:
            return []
        preemptees = [t for t in ssn.nodes.tasks[i].values() if keep(t)]
        got = ssn.preemptable(preemptor, preemptees) if preemptees else []
        assert not (no_victims and got), f"preempt: victims on node {i} where none was proven possible"
        return got

    if opts.topology_aware:
        order = reachable(ssn, preemptor.init_resreq, idx, bound)
        fits = preemptor_fits(ssn, queue, job, preemptor)
        best = dry_run(ssn, preemptor, order.tolist(), offer, fits, opts.limits, reason, len(idx))
        if best is None:
            return False
        node_stmt = Statement(ssn)
        for v in best.victims:
            node_stmt.evict(v, reason)
        node_stmt.pipeline(preemptor, best.node, True)  # topologyAwarePreempt: always "eviction occurred"
        stmt.merge(node_stmt)
        return True
    # Volcano runs PrePredicate once for this call: pod affinity and spread are judged by the counts as they were
    # now, whatever this call evicts (an eviction does not lift an anti-affinity conflict within the call)
    frozen = ssn.selector.prefilter_mask(preemptor)

    def fits_now(i: int) -> bool:
        return (bool(frozen[i]) and ssn.allocatable(queue, preemptor)
                and less_equal(preemptor.init_resreq, ssn.nodes.future[i])
                and ssn.selector.passes_at(preemptor, job, i, skip_prefilter=True))
    try:
        scores = ssn.node_scores(preemptor, feasible, job)[idx]
    except BatchScoreError:  # Volcano's PrioritizeNodes returns no scores: SortNodes gives no node to try
        return False
    order = idx[np.argsort(-scores, kind="stable")]  # best score first, ties by node index
    order = reachable(ssn, preemptor.init_resreq, order, bound)
    return evict_greedily(ssn, stmt, preemptor, order, offer, fits_now, reason, bound,
                          lambda: not ssn.allocatable(queue, preemptor), freed_only=True) is not None


def candidate_preemptors(ssn: Session) -> Iterable[JobInfo]:
    """The jobs preempt and reclaim ask whether they are starving.  Volcano walks every job of the session
    (preempt.go, reclaim.go: ``for _, job := range ssn.Jobs``); a job the session leaves settled
    (``framework/incremental/plan.py``) but not blocked has no pending pod, so as a preemptor it would pop no task
    and leave its statement empty, and its jobValid passes (it closed the last session without an objection, and
    the answer is a function of its version: ``Contract.VALID_BY_VERSION``), so asking changes nothing.  Only the
    others are walked (``Session.unsettled_jobs``, in ``jobs`` order), and the blocked ones apart
    (``blocked_starving``): the month of services keeps thousands of settled jobs and a handful of starving ones.
    With ``deltas.CHECK`` the skipped jobs but the blocked ones are checked to have no pod to offer."""
    jobs = ssn.unsettled_jobs()
    if deltas.CHECK and jobs is not ssn.jobs.values():
        looked = {j.uid for j in jobs}
        blocked = ssn.plan.blocked  # walked apart (``blocked_starving``)
        for uid, job in ssn.jobs.items():
            if uid not in looked and uid not in blocked:
                assert job.is_pending() or not any(not t.sch_gated for t in
                                                   job.index.get(TaskStatus.Pending, {}).values()), \
                    f"preempt/reclaim: settled job {uid} has a pending pod"
    return jobs


#: the name ``valid_starving`` carries its answers under (``JobInfo.derived``)
_WALK = "preempt-walk"


def valid_starving(ssn: Session, job: JobInfo, by_version: bool) -> bool:
    """jobValid passes and jobStarving says yes: the job is one preempt and reclaim push (preempt.go, reclaim.go:
    ``ssn.JobValid`` then ``ssn.JobStarving``).  With ``by_version`` (``walk_by_version``) both answers are functions
    of the job's version, so for a clone the session has not changed (``incremental/carry.py: unchanged``) they are
    carried in ``JobInfo.derived`` under its version and the conf (the same object: the same callbacks): a job that
    waits through many sessions is asked once.  An objection is asked again, so that the session records its
    message (``Session.invalid``) as the ask does; with ``deltas.CHECK`` a carried answer is asked again and must
    agree."""
    if by_version and unchanged(job):
        hit = job.derived.get(_WALK)
        if hit is not None and hit[0][0] == job.version and hit[0][1] is ssn.conf:
            valid, starving = hit[1]
            if not valid or deltas.CHECK:
                asked = ssn.job_valid(job) is None
                assert asked == valid, f"preempt: the carried jobValid answer of {job.uid} is stale"
                assert not deltas.CHECK or not valid or ssn.job_starving(job) == starving, \
                    f"preempt: the carried jobStarving answer of {job.uid} is stale"
            return valid and starving
        valid = ssn.job_valid(job) is None
        starving = valid and ssn.job_starving(job)
        job.derived[_WALK] = ((job.version, ssn.conf), (valid, starving))
        return starving
    return ssn.job_valid(job) is None and ssn.job_starving(job)


def blocked_starving(ssn: Session, by_version: bool) -> list[JobInfo]:
    """The blocked jobs the session leaves alone (``Plan.blocked_jobs``: admitted, pods pending, memo-blocked, left out
    of ``candidate_preemptors``) that preempt and reclaim would push (``pushed``).  They may stay left alone only when
    every turn of the action, theirs included, is proved idle; else ``turn_jobs`` looks at them as at any other job
    before the turns (``Contract.LEAVES_BLOCKED``)."""
    if not ssn.plan.blocked:
        return []
    return [job for job in ssn.plan.blocked_jobs() if pushed(ssn, job, by_version)]


def walk(ssn: Session, by_version: bool) -> tuple[list[JobInfo], list[JobInfo]]:
    """``starving_jobs`` and ``blocked_starving``: the same for preempt and reclaim while the session has not changed
    between them (``while_unchanged``) and the answers are functions of the jobs' versions (``by_version``: nothing
    else of the session is read); with ``deltas.CHECK`` a kept walk is made again and must agree.  Read-only lists."""
    if not by_version:
        return starving_jobs(ssn, False), blocked_starving(ssn, False)
    got = while_unchanged(ssn, _STARVING, lambda: (starving_jobs(ssn, True), blocked_starving(ssn, True)))
    if deltas.CHECK:
        again = starving_jobs(ssn, True), blocked_starving(ssn, True)
        assert [[j.uid for j in part] for part in again] == [[j.uid for j in part] for part in got], \
            "preempt/reclaim: a kept walk is stale"
    return got


#: the walk preempt leaves to reclaim (``walk``)
_STARVING: StateKey[tuple[Stamp, tuple[list[JobInfo], list[JobInfo]]]] = StateKey("starving-walk")


def turn_jobs(ssn: Session, by_version: bool, starving: list[JobInfo], held: list[JobInfo],
              idle: bool) -> list[JobInfo]:
    """The jobs whose turns the action takes (or, with ``idle``, proved idle, checks under ``deltas.CHECK``): the
    starving ones, and the blocked ones that would take a turn (``held``).  When the turns are not all idle, those
    are looked at as at any other job from now on (``Plan.release``), and the starving jobs are walked again, in
    ``jobs`` order, with them (the answers are carried: a job is asked again only for an objection, which records the
    same message)."""
    if not held:
        return starving
    if idle:
        return [*starving, *held]
    ssn.plan.release([job.uid for job in held])
    return starving_jobs(ssn, by_version)


def pushed(ssn: Session, job: JobInfo, by_version: bool) -> bool:
    """A job preempt and reclaim push: not Pending, of a queue the session knows, passing jobValid and starving
    (``valid_starving``); the queue's state is not looked at here (preempt never looks at it: a Closed queue's
    running jobs still preempt; reclaim skips a Closed queue's turn)."""
    return not job.is_pending() and job.queue in ssn.queues and valid_starving(ssn, job, by_version)


def starving_jobs(ssn: Session, by_version: bool) -> list[JobInfo]:
    """The jobs preempt and reclaim push (``pushed``), of the ``candidate_preemptors``, in ``jobs`` order."""
    return [job for job in candidate_preemptors(ssn) if pushed(ssn, job, by_version)]


class _QueueBounds:
    """Per queue with preemptors, what its preemptable candidates hold on each node (``victim_bound`` of a
    superset of every ``keep`` of the between-jobs phase): one pass over every job's tasks, made when a
    preemptor first gets to try nodes, not when the action starts (most sessions of a backlog never do).

    In a session of one queue every candidate is a Running or Bound task on the node, whose request the node's
    ``used`` holds (``NodeArrays.account``: every task but a pipelined one, requests never negative): that row
    is an upper bound as good as the walk over the cluster's jobs, which it spares (the month of services)."""

    def __init__(self, ssn: Session, queues: Iterable[str]) -> None:
        self.ssn = ssn
        self.queues = list(queues)
        self.bounds: dict[str, np.ndarray] | None = None

    def of(self, queue: str) -> np.ndarray:
        if self.bounds is None and len(self.ssn.queues) == 1:
            self.bounds = dict.fromkeys(self.queues, self.ssn.nodes.used.copy())
        if self.bounds is None:
            by_queue: dict[str, list[TaskInfo]] = {q: [] for q in self.queues}
            for job in self.ssn.jobs.values():
                group = by_queue.get(job.queue)
                if group is not None:
                    group.extend(t for t in job.tasks_in(PREEMPTABLE_STATUS) if t.preemptable)
            self.bounds = {q: victim_bound(self.ssn, ts) for q, ts in by_queue.items()}
        return self.bounds[queue]


def _own_bound(ssn: Session, job: JobInfo) -> Callable[[], np.ndarray]:
    """The within-job phase's bound: what the job's own preemptable tasks hold per node, taken when first needed
    and kept for the job's later tasks."""
    return cache(lambda: victim_bound(ssn, [t for t in job.tasks_in(PREEMPTABLE_STATUS) if t.preemptable]))


def never_preempts(task: TaskInfo) -> bool:
    """A pod with ``spec.preemptionPolicy: Never`` waits instead of evicting anyone (Volcano's
    ``taskEligibleToPreempt``, preempt.go; reclaim.go checks the same)."""
    return (task.pod.get("spec") or {}).get("preemptionPolicy") == "Never"


def nominated_allows(ssn: Session, task: TaskInfo, job: JobInfo) -> bool:
    """The nominated-node half of Volcano's ``taskEligibleToPreempt`` (preempt.go): a pod nominated to a node
    (``status.nominatedNodeName``) may preempt again only if that node is in the session, the pod does not pass
    the predicates there, and either a failure there cannot be resolved by evictions or no lower-priority pod on
    it is already terminating because a scheduler preempted it (``podTerminatingByPreemption``: its victims
    are still leaving, so it waits for them).  Priorities are the pods' ``spec.priority`` (``PodPriority``).

    "Passes the predicates" is ``ssn.PredicateFn``, asked before this call's PrePredicate: the predicates plugin's
    Filters read what its PreFilters left in the task's cycle state, and fail with an Error (not unresolvable)
    where none ran yet in the session (allocate runs them only for a task it got to: one whose queue had room), so
    such a pod is treated as failing there.  Volcano looks at the first failing plugin's statuses; here a node
    counts as unresolvable when any predicate failing there is (``preempt_nodes``), the same answer unless
    plugins in different tiers disagree."""
    nom = task.nominated_node
    if not nom:
        return True
    i = ssn.nodes.pos.get(nom)
    if i is None:
        return False
    passes = ssn.selector.passes_at(task, job, i)
    if passes and (task.uid in ssn.prepredicated or not _stateful_filters(ssn)):
        return False  # "the pod's nominated node is already schedulable"
    if not passes and not ssn.preempt_nodes(task, job)[i]:
        return True
    prio = pod_priority(task.pod)
    return not any(pod_priority(t.pod) < prio and terminating_by_preemption(t.pod)
                   for t in ssn.nodes.tasks[i].values())


def _stateful_filters(ssn: Session) -> bool:
    """Does the predicates plugin filter nodes in this session (its Filters need their PreFilter state)?"""
    return any(p.plugin == "predicates" for p in ssn.predicates)


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_cmp, [t for t in job.index.get(TaskStatus.Pending, {}).values() if not t.sch_gated])


_PREEMPTABLE = frozenset((TaskStatus.Running, TaskStatus.Bound))


def may_evict(preemptor: TaskInfo, task: TaskInfo) -> bool:
    """The victim filter both preempt phases share (preempt.go): a running or bound, preemptable task; a
    BestEffort preemptor may evict only BestEffort pods, any other preemptor may evict BestEffort pods too
    (a node full by pod count needs that)."""
    return (task.status in _PREEMPTABLE and task.preemptable  # set lookup: IntFlag "&" is slow here
            and (task.best_effort or not preemptor.best_effort))


@register_action
class Preempt(Action):
    name = "preempt"
    #: blocked jobs are read, and looked at as any job before a turn that is not proved idle (``blocked_starving``)
    contracts = frozenset({Contract.LEAVES_BLOCKED})

    def execute(self, ssn: Session) -> None:
        opts = self.arguments.derived("preempt", PreemptOptions.of)  # read once per conf
        by_version = walk_by_version(ssn)
        # the blocked jobs the session leaves alone (``held``): their turns too must be idle for them to stay so
        starving, held = walk(ssn, by_version)
        # Volcano: "jobs containing networkTopology do not support preemption" (issue 4374); such a job neither
        # preempts other jobs nor its own lower-priority tasks; gangpreempt serves it
        topology = ssn.topology
        starving = [job for job in starving if topology.of(job) is None]
        # (a blocked job has no topology constraint: ``Closer.note``)
        assert not deltas.CHECK or all(topology.of(job) is None for job in held), "preempt: a blocked job with topology"
        # whether the plugins' declared victim conditions can prove a scope empty (None: a tier starts with a plugin
        # that declares none); the ledger is synced in every session, so that it follows the jobs that change
        ledger = session_ledger(ssn)
        proof = victim_proof(ssn, PREEMPTABLE) if (starving or held) and ledger is not None else None
        idle = False
        if proof is not None:
            nowhere = FitsNowhere.shared(ssn)
            one = partial(_idle_preemptor, ssn, proof, opts, nowhere)
            idle = turns_idle(ssn, [*starving, *held], one,
                              IdleJobs(ssn, proof, opts, nowhere, one) if by_version else None)
        jobs = turn_jobs(ssn, by_version, starving, held, idle)
        if held and not idle:  # walked again, with the blocked jobs: the topology filter again
            jobs = [job for job in jobs if topology.of(job) is None]
        take_turns("preempt", ssn, jobs, idle, lambda turns: self._turns(ssn, opts, turns, proof))
        if not ssn.has("victimTasks"):  # no plugin names victims (rescheduling, tdm): nothing to ask about
            return
        victims = ssn.victim_tasks([t for j in ssn.jobs.values() for t in j.tasks_in(PREEMPTABLE_STATUS)])
        for t in victims:
            if t.status & PREEMPTABLE_STATUS:
                ssn.evict(t, "evicted by a victimTasks plugin")

    @staticmethod
    def _turns(ssn: Session, opts: PreemptOptions, starving: list[JobInfo], proof: VictimProof | None) -> None:
        """The starving jobs' turns, queue by queue (preempt.go's loops over ``preemptorsMap``): between jobs,
        then within each job."""
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under: dict[str, list[JobInfo]] = {}
        for job in starving:
            preemptors.setdefault(job.queue, PriorityQueue(ssn.job_cmp)).push(job)
            under.setdefault(job.queue, []).append(job)
            tasks[job.uid] = pending_tasks(ssn, job)
        queues = PriorityQueue(ssn.queue_cmp, [ssn.queues[q] for q in preemptors])
        jobs_now = ssn.jobs
        bounds = _QueueBounds(ssn, preemptors)
        while not queues.empty():
            qname = queues.pop().name
            jobs = preemptors[qname]
            while not jobs.empty():  # between jobs of the queue: each job's evictions kept only if pipelined
                pj = jobs.pop()
                stmt = Statement(ssn)
                while ssn.job_starving(pj) and not tasks[pj.uid].empty():
                    preemptor = tasks[pj.uid].pop()

                    def keep(t: TaskInfo, p: TaskInfo = preemptor, pj: JobInfo = pj) -> bool:
                        return t.job != pj.uid and may_evict(p, t) and (j := jobs_now.get(t.job)) is not None \
                            and j.queue == pj.queue
                    # the queue's candidates less the job's own (a superset of every node's ``keep``)
                    none = proof is not None and proof.none(preemptor, [qname], less=pj.uid)
                    preempt_task(ssn, stmt, preemptor, keep, opts, partial(bounds.of, qname), no_victims=none)
                if ssn.job_pipelined(pj):
                    stmt.commit()
                else:
                    stmt.discard()
            for job in under[qname]:  # within each job: kept per task, stop at the first that fails
                own = pending_tasks(ssn, job)
                bound = _own_bound(ssn, job) if not own.empty() else None
                while not own.empty():
                    preemptor = own.pop()
                    stmt = Statement(ssn)

                    def same_job(t: TaskInfo, p: TaskInfo = preemptor) -> bool:
                        return t.job == p.job and may_evict(p, t)
                    none = proof is not None and proof.none(preemptor, job=job.uid, own=True)
                    if not preempt_task(ssn, stmt, preemptor, same_job, opts, bound, no_victims=none):
                        stmt.discard()
                        break
                    stmt.commit()


def _idle_preemptor(ssn: Session, proof: VictimProof, opts: PreemptOptions, nowhere: FitsNowhere, job: JobInfo,
                    task: TaskInfo) -> bool:
    """The task's two turns (between jobs, within its job) provably evict and pipeline nothing (``turns_idle``):
    it never preempts; or it has no nominated node (its prePredicate note is never read), no candidate of either
    scope can be a victim (``VictimProof.verdict``: the queue less the job, the job's own), and without victims
    ``preempt_task`` places it nowhere -- the dry run makes no node a candidate, and the greedy path pipelines it
    only onto a node whose future idle holds it, of which there is none (with no batch score to ask first)."""
    if never_preempts(task):
        return True
    if task.nominated_node or not proof.verdict(task, [job.queue], less=job.uid, job=job.uid):
        return False
    return opts.topology_aware or (not ssn.batch_scores and nowhere(task))


#: the name ``IdleJobs`` carries a waiting job's proof under (``JobInfo.derived``)
_IDLE = "preempt-idle"
#: what ``IdleJobs`` carries: the key (the job's version, its queue's ``VictimLedger.present`` stamp, the conf, the
#: proof's registration shape, the actors' session part), and the bytes and arrays of the requests of the tasks
#: whose turns need no node's future idle to hold them (None: a task's turn is not proved idle whatever the nodes)
_Idle = tuple[tuple[int, int | None, object, object, object], tuple[tuple[bytes, np.ndarray], ...] | None]


class IdleJobs:
    """``turns_idle`` for a whole job, carried with the job (``JobInfo.derived``) while it waits unchanged: a
    waiting job's tasks are proved (``_idle_preemptor``) once, and later sessions only ask whether the nodes' future
    idle holds one of their requests (``FitsNowhere``, once per request shape and session).

    What ``_idle_preemptor`` reads of a task besides the nodes' future idle: ``preemptionPolicy``, the nominated node
    and the verdict (``VictimProof.verdict``).  For a job the session has not changed (``carry.unchanged``: the
    jobValid/jobStarving answers are carried on the same condition, ``walk_by_version``) and that has no candidate
    of its own (its ledger entry counts none: a waiting job), the first two are its pods' at its version, and the
    verdict reads the classes present in its queue (the queue's ``present`` stamp), the registration's shape, the
    conf (the ledger's verdicts are of one conf) and each condition's ``actor`` of the task -- which, when every
    condition declares ``actor_session``, is a function of the job at its version, the task and that session part.
    So the key is those values; any other job, or a proof whose conditions do not all declare it, is checked task
    by task as before.  With ``deltas.CHECK`` a carried answer is proved again and must agree."""

    def __init__(self, ssn: Session, proof: VictimProof, opts: PreemptOptions, nowhere: FitsNowhere,
                 one: Callable[[JobInfo, TaskInfo], bool]) -> None:
        self.ssn, self.proof, self.opts, self.nowhere, self.one = ssn, proof, opts, nowhere, one
        self.session = proof.actor_session
        if self.session is not None:
            proof.ledger.refresh(ssn)  # the entries and stamps as the turns would meet them (nothing moves meanwhile)

    def __call__(self, job: JobInfo) -> bool:
        sess = self.session
        if sess is None or job.version != job.cloned_from or job.cloned_from < 0:
            return self._tasks(job)
        ssn, ledger = self.ssn, self.proof.ledger
        stamp = ledger.present.get(job.queue)
        hit: _Idle | None = job.derived.get(_IDLE)
        if hit is not None:
            k = hit[0]
            if not (k[0] == job.version and k[1] == stamp and k[2] is ssn.conf and k[3] == self.proof.shape
                    and k[4] == sess):
                hit = None
        # a proof is made only for a job without candidates of its own, and one of the same version has the same
        # (its own tasks): only a job without a carried proof is looked up in the ledger
        if hit is None and ledger.of_job(job.uid) is not None:
            return self._tasks(job)
        if hit is None:
            hit = ((job.version, stamp, ssn.conf, self.proof.shape, sess), self._proved(job))
            job.derived[_IDLE] = hit
        elif deltas.CHECK:
            assert ledger.of_job(job.uid) is None, f"preempt: a carried idle proof for {job.uid}, which has candidates"
            again = self._proved(job)
            assert (hit[1] is None) == (again is None) and (again is None or [b for b, _ in hit[1] or ()] ==
                                                            [b for b, _ in again]), \
                f"preempt: the carried idle proof of {job.uid} is stale"
        fit = hit[1]
        if fit is None:
            return False
        if self.opts.topology_aware:
            return True
        if ssn.batch_scores:
            return not fit
        of = self.nowhere.of
        return all(of(b, need) for b, need in fit)

    def _tasks(self, job: JobInfo) -> bool:
        one = self.one
        return all(one(job, t) for t in job.index.get(TaskStatus.Pending, {}).values() if not t.sch_gated)

    def _proved(self, job: JobInfo) -> tuple[tuple[bytes, np.ndarray], ...] | None:
        """``_idle_preemptor`` without its last step: the requests of the tasks that must fit no node's future
        idle, or None when some task's turn is not idle however the nodes stand."""
        proof = self.proof
        out = []
        for t in job.index.get(TaskStatus.Pending, {}).values():
            if t.sch_gated or never_preempts(t):
                continue
            if t.nominated_node or not proof.verdict(t, [job.queue], less=job.uid, job=job.uid):
                return None
            out.append((t.init_resreq.tobytes(), t.init_resreq))
        return tuple(out)
