"""allocate (Volcano ``pkg/scheduler/actions/allocate/allocate.go``): place pending tasks of admitted jobs, a
whole gang or nothing.

Namespaces (only when a plugin orders them), then queues (re-chosen every round, skipping overused ones, so
shares shift as tasks land), then jobs, then tasks.  Each task goes to the best node whose idle resources
fit (Allocate) or, failing that, whose future idle fits (Pipeline).  A task that finds no node does not stop
the job while its gang can still be met (see ``Allocate.allocate_job``).  A job's tasks go into one statement:
committed when the job is ready, kept (not bound) when it is pipelined, discarded otherwise.  A ready job
with tasks left goes back in its queue so other jobs get a turn.  A job whose last turn placed nothing, under the
same fingerprint (``framework/incremental/memo.py``), gets no turn: that turn would be a no-op again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._hypernode import allocate_topology_job, takes_hypernode_path, topology_waits
from pyvolcano.actions._turn import Turn, check_task, fail_task
from pyvolcano.api.fit_errors import FitErrors
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import EPS, fit_floor
from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.incremental.memo import SessionMemo
from pyvolcano.framework.order import job_order_key, task_order_key
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import KeyedQueue, PriorityQueue


def schedulable_jobs(ssn: Session, *, promote: bool, wanted: Callable[[JobInfo], bool] | None = None) -> list[JobInfo]:
    """Jobs allocate may work on: admitted (Inqueue or later), valid (jobValid), in a known, open queue.
    Without the enqueue action, Pending jobs are promoted to Inqueue first, as Volcano does.  ``wanted``
    drops jobs before the plugins are asked whether they are valid (backfill wants only a few)."""
    out = []
    queues, job_valid, waiting = ssn.queues, ssn.job_valid, PodGroupPhase.Pending
    # every job of every session but the settled ones (valid, nothing to place: ``Plan.settled_jobs``), twice
    # (allocate, backfill): kept lean
    for job in ssn.unsettled_jobs():
        pg = job.podgroup
        if pg is None:
            continue
        if pg.phase == waiting:  # ``JobInfo.is_pending``
            if not promote:
                continue
            pg.phase = PodGroupPhase.Inqueue
        if (wanted is not None and not wanted(job)) or job_valid(job) is not None:
            continue
        q = queues.get(job.queue)
        if q is None or not q.is_open():
            continue
        out.append(job)
    return out


class _MemoChecks:
    """The blocked-job memo's checks of one allocate run (``SessionMemo``), with the answers they keep for it: the
    one-node rule's ``fits``, the gang bound's ``short``, the filter of ``schedulable_jobs`` (``unblocked``) and
    the one-node rule again at a job's turn (``room_taken``)."""

    def __init__(self, ssn: Session, live: SessionMemo, deserved: dict[str, np.ndarray]) -> None:
        self.live, self.deserved, self.nodes = live, deserved, ssn.nodes
        self.blocked_now = ssn.plan.blocked_now
        self.answers: dict[tuple[object, frozenset[str], int], bool] = {}
        self.rows: dict[frozenset[str], list[int]] = {}
        self.fitting: dict[tuple[object, int], frozenset[int]] = {}
        # gang alone says whether a job is ready or pipelined (the memo's plugins: no other registers them)
        self.gang_decides = ssn.has("jobReady") and ssn.has("jobPipelined")
        self.slots: dict[object, int] = {}

    def fits(self, task: TaskInfo, names: frozenset[str]) -> bool:
        """Whether ``task`` could fit on one of these nodes by resources (its smaller request against their
        future idle): the one-node rule of ``SessionMemo.allocate_blocked``.  One answer per pod template, set of
        nodes and length of the node log (nodes change only by the turns, which log them)."""
        nodes = self.nodes
        stamp = len(nodes.log)
        k = (task.template_key, names, stamp)
        got = self.answers.get(k)
        if got is None:
            # the nodes the template fits now, once per template and node change: on a full cluster none, and then
            # no set of nodes needs looking at
            fk = (task.template_key, stamp)
            where = self.fitting.get(fk)
            if where is None:
                need = fit_floor(np.minimum(task.resreq, task.init_resreq))
                where = self.fitting[fk] = frozenset(np.flatnonzero((nodes.future > need).all(axis=1)).tolist())
            if not where:
                got = False
            else:
                idx = self.rows.get(names)
                if idx is None:  # the positions of a set of nodes: asked again at later turns
                    pos = nodes.pos
                    idx = self.rows[names] = [pos[n] for n in names if n in pos]
                got = not where.isdisjoint(idx)
            self.answers[k] = got
        return got

    def short(self, job: JobInfo) -> bool:
        """The gang bound of ``SessionMemo.allocate_blocked``: even placed on every node as many times as its idle
        resources allow, the job's pending pods cannot bring it to ``minAvailable``."""
        if not self.gang_decides:
            return False
        pending = job.index.get(TaskStatus.Pending)
        if not pending:
            return False
        # what gang counts for ready or pipelined besides the placements (``is_pipelined`` also counts tasks
        # already pipelined, which this turn's statement does not undo)
        need = job.min_available - job.ready_task_num() - job.pending_best_effort_task_num() - job.waiting_task_num()
        by_template: dict[object, list[TaskInfo]] = {}
        for t in pending.values():
            if not t.best_effort:
                by_template.setdefault(t.template_key, []).append(t)
        for k, tasks in by_template.items():
            got = self.slots.get(k)
            if got is None:  # nodes do not change before the first turn: once per template and run
                got = self.slots[k] = pod_slots(self.nodes.idle, tasks[0])
            need -= min(len(tasks), got)
            if need <= 0:
                return False
        return True

    def unblocked(self, job: JobInfo) -> bool:
        """``schedulable_jobs``' filter, before jobValid (a blocked job's last turn found it valid): False for a
        job the memo finds still blocked."""
        if self.live.allocate_blocked(job, self.deserved.get(job.queue), self.fits, self.short):
            self.blocked_now.add(job.uid)
            return False
        return True

    def room_taken(self, job: JobInfo, placed: set[str]) -> bool:
        """At the job's turn, before it: True (the job kept blocked) when the one-node rule looked at it again
        for room that the turns before took (``SessionMemo.room_taken``)."""
        if job.uid in placed or job.uid not in self.live.roomed or not self.live.room_taken(job, self.fits):
            return False
        self.blocked_now.add(job.uid)
        return True


def _nominated_pending(job: JobInfo) -> bool:
    """A pending pod of the job carries a nominated node: its allocate turn is never skipped by the memo, because
    the turn's PrePredicate is what preempt's eligibility check for such a pod reads (``Session.prepredicated``,
    ``actions/preempt.py: nominated_allows``); such pods are few (pipelined after evictions, not yet bound)."""
    pending = job.index.get(TaskStatus.Pending)
    return pending is not None and any(t.nominated_node for t in pending.values())


def pod_slots(idle: np.ndarray, task: TaskInfo) -> int:
    """At most how many pods like ``task`` the nodes of ``idle`` (nodes x resources) can take one after another,
    counted by resources alone: a placement needs ``idle > init_resreq - EPS`` on each dimension it requests and
    takes ``resreq`` away, so node i takes at most ``floor((idle_i + EPS) / r)`` of them on every dimension where
    ``r = min(resreq, init_resreq)`` is positive (Volcano's ``LessEqual`` with its epsilon,
    ``pkg/scheduler/api/resource_info.go``).  An upper bound: predicates, scores and the queue only refuse more.
    The quotient is rounded up by 1e-6 so that float division never makes it smaller."""
    r = np.minimum(task.resreq, task.init_resreq)
    on = r > 0
    if not on.any():
        return np.iinfo(np.int64).max
    per_node = np.floor((idle[:, on] + EPS) / r[on] + 1e-6).min(axis=1)
    return int(np.clip(per_node, 0, None).sum())


@register_action
class Allocate(Action):
    name = "allocate"
    contracts = frozenset({Contract.CHECKS_BLOCKED, Contract.LEAVES_BLOCKED})
    #: the blocked-job memo for this session (None: every job gets its turn), the jobs that placed something,
    #: and each queue's deserved share (the memo's key)
    memo: SessionMemo | None = None
    placed: set[str]
    deserved: dict[str, np.ndarray]

    def execute(self, ssn: Session) -> None:
        by_ns: dict[str, dict[str, PriorityQueue[JobInfo]]] = {}
        ns_enabled = ssn.has("namespaceOrder")
        memo = ssn.memo
        # the memo needs "no future idle": with releasing or pipelined resources the order of turns decides who
        # gets them (framework/incremental/memo.py)
        if memo is not None and (ssn.nodes.releasing.any() or ssn.nodes.pipelined.any()):
            memo = None
        self.memo = memo
        self.placed: set[str] = set()
        #: per pod template and queue, the last "why no node" and the node log's length then (``_explain``)
        self.explained: dict[object, tuple[int, FitErrors]] = {}
        self.deserved = ssn.proportion_deserved()
        ssn.topology.new_allocate()  # worksheets and the recorder are per allocate run (NewRecorder, buildAllocateContext)
        checks: _MemoChecks | None = None
        if memo is not None:
            checks = _MemoChecks(ssn, memo, self.deserved)
            # the blocked jobs the session left alone (``Plan.settled_jobs``): still blocked under the memo, or
            # looked at with the others (the same check, before any turn: nodes and deserved are as they will be
            # when ``schedulable_jobs`` asks it)
            if ssn.plan.blocked:
                ssn.plan.unblock(memo.still_blocked(ssn.plan.blocked, ssn.jobs, self.deserved, checks.fits,
                                                    checks.short, ssn.plan.blocked_now, ssn.plan.made_again()))
                ssn.plan.blocked_checked = True  # (``Plan.release``)
        elif ssn.plan.blocked:  # no memo in this session (future idle): every job takes its turn
            ssn.plan.unblock(list(ssn.plan.blocked))
        key, tkey = job_order_key(ssn), task_order_key(ssn)
        wanted = checks.unblocked if checks is not None else None
        for job in schedulable_jobs(ssn, promote="enqueue" not in ssn.conf.actions, wanted=wanted):
            if not job.index.get(TaskStatus.Pending):  # nothing to place: its turn would commit nothing
                continue
            if topology_waits(ssn, job):  # a topology constraint and the HyperNode tree is not ready
                continue
            ns = job.namespace if ns_enabled else ""
            got = by_ns.setdefault(ns, {}).get(job.queue)
            if got is None:
                # by key when every jobOrder function has one (framework/order.py): a job's order moves only in
                # its own turn, after which it is pushed again
                got = by_ns[ns][job.queue] = KeyedQueue(key) if key is not None else PriorityQueue(ssn.job_cmp)
            got.push(job)
        namespaces: PriorityQueue[str] = PriorityQueue(ssn.namespace_cmp, by_ns)
        pending: dict[str, PriorityQueue[TaskInfo]] = {}
        while not namespaces.empty():
            ns = namespaces.pop()
            queues = by_ns[ns]
            best = None
            for qname in list(queues):
                q = ssn.queues[qname]
                if ssn.overused(q):
                    del queues[qname]
                    continue
                if queues[qname].empty():
                    continue
                if best is None or ssn.queue_cmp(q, best) < 0:
                    best = q
            if best is None:
                continue
            job = queues[best.name].pop()
            if checks is not None and checks.live.roomed and checks.room_taken(job, self.placed):
                namespaces.push(ns)  # still blocked: no turn (``SessionMemo.room_taken``)
                continue
            if job.uid not in pending:
                todo = [t for t in job.index.get(TaskStatus.Pending, {}).values() if not t.best_effort and not t.sch_gated]
                # by key when every taskOrder function has one (framework/order.py): a task's order is fixed
                pending[job.uid] = KeyedQueue(tkey, todo) if tkey is not None else PriorityQueue(ssn.task_cmp, todo)
            if takes_hypernode_path(ssn, job):  # networkTopology or sub-groups: actions/_hypernode.py
                allocate_topology_job(ssn, job, best, pending[job.uid], queues[best.name])
            else:
                self.allocate_job(ssn, job, best, pending[job.uid], queues[best.name])
            namespaces.push(ns)

    def allocate_job(self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo],
                     jobs: PriorityQueue[JobInfo]) -> None:
        """One turn of a job (Volcano ``allocateResourcesForTasks``).

        A task that finds no node (or that a prePredicate refuses) does not end the turn: its role is recorded
        as failed and, while ``JobInfo.need_continue_allocating`` says the gang can still be met, the job's
        other tasks are tried; later tasks of a failed role are skipped without looking at nodes
        (``TaskHasFitErrors``).  A task the queue has no room for is passed over without failing its role."""
        stmt = Statement(ssn)
        explained = self.explained
        one = len(tasks) == 1  # a job of one pod to place: refused by every node, its memo has the one-node rule
        by_nodes = False
        while not tasks.empty():
            task = tasks.pop()
            turn = check_task(ssn, job, queue, task)
            if turn is Turn.PLACE:
                node, now = ssn.select_node(task, job)
                if node is None:
                    by_nodes = one
                    turn = fail_task(job, task, self._explain(ssn, task, job, explained))
            if turn is not Turn.PLACE:
                if turn is Turn.END:
                    break
                continue
            assert node is not None
            if now:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if ssn.job_ready(job) and not tasks.empty():
                jobs.push(job)
                break
        if ssn.job_ready(job):
            placed = bool(stmt.ops)
            stmt.commit()
        elif not ssn.job_pipelined(job):
            placed = False
            stmt.discard()
        else:
            placed = True
        memo = self.memo
        if memo is not None:
            if deltas.CHECK:
                assert not (placed and job.uid in memo.must_fail), f"memo: {job.uid} was placed, found blocked"
            if placed:
                self.placed.add(job.uid)
                memo.forget_allocate(job)
            elif job.uid not in self.placed and not _nominated_pending(job) \
                    and memo.record_allocate(job, self.deserved.get(job.queue), by_nodes):
                ssn.plan.blocked_now.add(job.uid)  # recorded blocked: close may leave it alone (``Plan.settled_jobs``)

    @staticmethod
    def _explain(ssn: Session, task: TaskInfo, job: JobInfo, explained: dict[object, tuple[int, FitErrors]]
                 ) -> FitErrors:
        """``ssn.explain`` for a task that found no node, reused for the next task of the same pod template (and
        queue) while no node has changed since, in this job's turn or a later one of the session: a gang of
        identical pods that fits nowhere, or a backlog of admitted jobs of a few shapes, would otherwise ask every
        node why, once per pod (the answer reads only the task's template and the nodes)."""
        key = (task.template_key, job.queue)
        stamp = len(ssn.nodes.log)
        got = explained.get(key)
        if got is not None and got[0] == stamp:
            return got[1]
        fe = ssn.explain(task, job)
        explained[key] = (stamp, fe)
        return fe
