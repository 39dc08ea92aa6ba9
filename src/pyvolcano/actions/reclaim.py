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

from collections.abc import Callable
from functools import cache

import numpy as np

from pyvolcano.actions._victims import (
    FitsNowhere,
    IdleTask,
    evict_greedily,
    fitting,
    reachable,
    take_turns,
    turns_idle,
    victim_bound,
)
from pyvolcano.actions.preempt import never_preempts, pending_tasks, turn_jobs, walk
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.action import Action
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.points import RECLAIMABLE
from pyvolcano.framework.registry import register_action
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.util import PriorityQueue
from pyvolcano.framework.victim_ledger import VictimProof, session_ledger, victim_proof, walk_by_version


@register_action
class Reclaim(Action):
    name = "reclaim"
    #: blocked jobs are read, and looked at as any job before a turn that is not proved idle (``blocked_starving``)
    contracts = frozenset({Contract.LEAVES_BLOCKED})

    def execute(self, ssn: Session) -> None:
        # only the jobs that can starve are walked (``candidate_preemptors``: settled jobs have no pod to place), and
        # an unchanged job's answers are carried (``valid_starving``)
        by_version = walk_by_version(ssn)
        # the blocked jobs the session leaves alone (``held``): their turns too must be idle for them to stay so
        starving, held = walk(ssn, by_version)
        # the plugins' declared victim conditions (``framework/victim_ledger.py``); the ledger is synced in
        # every session, so that it follows the jobs that change
        ledger = session_ledger(ssn)
        # the proof, built when first needed (with one queue no turn needs it: no other queue to reclaim from); a
        # one-slot memo, not ``functools.cache``, whose wrapper costs more to make than most sessions spend here
        made: list[VictimProof | None] = []

        def proof() -> VictimProof | None:
            if not made:
                made.append(victim_proof(ssn, RECLAIMABLE) if (starving or held) and ledger is not None else None)
            return made[0]
        idle = ledger is not None and bool(starving or held) \
            and turns_idle(ssn, [*starving, *held], self._idle_reclaimer(ssn, proof))
        jobs = turn_jobs(ssn, by_version, starving, held, idle)
        take_turns("reclaim", ssn, jobs, idle, lambda turns: self._turns(ssn, turns, proof()))

    def _idle_reclaimer(self, ssn: Session, proof_of: Callable[[], VictimProof | None]) -> IdleTask:
        """The task's turn provably evicts and pipelines nothing (``turns_idle``): it never preempts; or it has no
        nominated node (its prePredicate note is never read) and either no other queue is reclaimable
        (``reclaim_for`` looks at no node) or no running task of those queues can be a victim (``VictimProof``, from
        ``proof_of``) and no node's future idle holds it (without victims ``reclaim_for`` pipelines it only onto such
        a node)."""
        others_of: dict[str, list[str]] = {}
        nowhere = FitsNowhere.shared(ssn)

        def idle(job: JobInfo, task: TaskInfo) -> bool:
            others = others_of.get(job.queue)
            if others is None:
                others = others_of[job.queue] = [n for n, q in ssn.queues.items() if q.reclaimable and n != job.queue]
            if task.nominated_node:
                return never_preempts(task)
            if not others or never_preempts(task):
                return True
            proof = proof_of()
            return proof is not None and proof.verdict(task, others) and nowhere(task)
        return idle

    def _turns(self, ssn: Session, starving: list[JobInfo], proof: VictimProof | None) -> None:
        """The starving jobs' turns, queue by queue (reclaim.go's loop over ``queues``).  When ``execute`` skips
        them all (``turns_idle``), the jobValid asks below go too: each is of a job ``candidate_preemptors`` just
        asked (the same answer, nothing changed since) or of a settled job, whose answer passes."""
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in starving:
            preemptors.setdefault(job.queue, PriorityQueue(ssn.job_cmp)).push(job)
            tasks[job.uid] = pending_tasks(ssn, job)
        queues = PriorityQueue(ssn.queue_cmp)
        if len(preemptors) == 1:  # the other queues' turns do nothing (``overused`` only reads)
            queues.push(ssn.queues[next(iter(preemptors))])
        elif preemptors:
            # Volcano pushes the queue of every job that is not Pending and valid, in the jobs' order, and the
            # queue order is asked again after each queue's evictions: which queues sit in the heap can decide
            # the order of those with starving jobs, so all of them are pushed as Volcano does
            seen: set[str] = set()
            for job in ssn.jobs.values():
                q = ssn.queues.get(job.queue)
                if q is None or q.name in seen or job.is_pending() or ssn.job_valid(job) is not None:
                    continue
                seen.add(q.name)
                queues.push(q)
        # what the running, preemptable tasks of every reclaimable queue hold per node (``victim_bound``): a
        # superset of each task's reclaimees, taken when a task first gets to try nodes (the candidates only
        # shrink during the action, so a bound taken then is one for every later task)
        bound = cache(lambda: victim_bound(ssn, [t for j in ssn.jobs.values()
                                                 if (q := ssn.queues.get(j.queue)) and q.reclaimable
                                                 for t in j.index.get(TaskStatus.Running, {}).values()
                                                 if t.preemptable]))
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
                    self.reclaim_for(ssn, stmt, job, task, bound, proof)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()

    def reclaim_for(self, ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo,
                    bound: Callable[[], np.ndarray] | None = None, proof: VictimProof | None = None) -> bool:
        """Volcano's ``reclaimForTask``: on each node passing the predicates, or failing only resolvable ones
        (``PredicateForPreemptAction``; node order), running,
        preemptable tasks of other, reclaimable queues go to the plugins' reclaimable vote; a node without
        any is skipped.  The victims are evicted greedily (``evict_greedily``) until the task fits the
        node's future idle, and the task is pipelined there.

        Reclaimees come from other queues only: when no other queue of the session is reclaimable, every node
        would be skipped for want of reclaimees, so none is looked at (a cluster of one queue).

        ``proof``: when the plugins' declared victim conditions show that no running task of the other reclaimable
        queues can be in the reclaimable answer, every node's answer is empty; the search then keeps what it does
        without victims -- the task is pipelined onto the first node, in node order, that has a reclaimee and where
        it already fits the future idle -- and only nodes where its request fits the future idle are looked at (a
        bound of zero), with no plugin asked.  With ``deltas.CHECK`` the search runs as without the proof, and every
        answer must be empty."""
        others = [name for name, q in ssn.queues.items() if q.reclaimable and name != job.queue]
        if not others:
            return False
        feasible = np.nonzero(ssn.preempt_nodes(task, job))[0]
        no_victims = proof is not None and proof.none(task, others)
        shortcut = no_victims and not deltas.CHECK

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
                if shortcut:  # the answer is proven empty: what matters is that the node has a reclaimee
                    return []
            if not reclaimees:
                return None
            got = ssn.reclaimable(task, reclaimees)
            assert not (no_victims and got), f"reclaim: victims on node {i} where none was proven possible"
            return got

        def fits(i: int) -> bool:
            return less_equal(task.init_resreq, ssn.nodes.future[i])
        if shortcut:
            order = fitting(ssn, task.init_resreq, feasible)
        else:
            order = reachable(ssn, task.init_resreq, feasible, bound() if bound is not None else None)
        return evict_greedily(ssn, stmt, task, order, offer, fits, "reclaim") is not None

