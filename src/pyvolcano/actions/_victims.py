"""Helpers shared by preempt and reclaim: the victim order, the per-node greedy eviction both actions use by
default, the vectorised node pre-filter, and the candidate dry run of preempt's
``enableTopologyAwarePreemption`` path (Volcano master ed72c7c8, ``actions/preempt/preempt.go``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pyvolcano.api.convert import parse_time
from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.resource import EPS, fit_floor, is_empty, less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental import deltas
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.victim_ledger import Stamp, while_unchanged
from pyvolcano.framework.victims import victims_queue

PREEMPTABLE_STATUS = TaskStatus.Running | TaskStatus.Bound

__all__ = ["victims_queue"]  # the victim order lives in the framework (Session.BuildVictimsPriorityQueue)

#: ``fits(node)``: may the task be placed on the node as it is now (after the evictions so far)?
Fits = Callable[[int], bool]


def victim_bound(ssn: Session, tasks: Iterable[TaskInfo]) -> np.ndarray:
    """Per node (rows), the resources of ``tasks`` on it: an upper bound on what evicting candidates there can
    free, taken when the action starts.  The candidates of preempt and reclaim only shrink during an action
    (evicted or pipelined tasks are no candidates; a discarded statement gives back only tasks that were), and
    ``future`` grows with each eviction, so a stale bound stays an upper bound."""
    bound = np.zeros((len(ssn.nodes), ssn.res.size))
    pos = ssn.nodes.pos
    for t in tasks:
        i = pos.get(t.node_name)
        if i is not None:
            bound[i] += t.resreq
    return bound


def reachable(ssn: Session, need: np.ndarray, order: np.ndarray, bound: np.ndarray | None) -> np.ndarray:
    """The nodes of ``order`` (same order) where the task could fit once every candidate is gone: any other
    node fails Volcano's ``util.ValidateVictims`` (scheduler_helper.go) whatever the plugins offer, so
    skipping it in one NumPy pass changes no decision but spares the per-node candidate filter and the
    plugins' votes.  One extra EPS of slack keeps float summation order from ever dropping a node the exact
    check would keep."""
    if bound is None or not len(order):
        return order
    ok = np.all(ssn.nodes.future + bound > fit_floor(need) - EPS, axis=1)  # whole arrays: no gather of rows
    return order[ok[order]]


def fitting(ssn: Session, need: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``reachable`` with a bound of zero (no candidate anywhere): the nodes of ``order`` whose future idle alone
    could hold the task, the only ones where ``validate`` of no victims can pass."""
    if not len(order):
        return order
    ok = np.all(ssn.nodes.future > fit_floor(need) - EPS, axis=1)
    return order[ok[order]]


def validate(ssn: Session, task: TaskInfo, node: int, victims: list[TaskInfo]) -> bool:
    """Volcano's ``util.ValidateVictims``: the task fits the node's future idle with every victim gone
    (an empty victim list is valid when it already fits)."""
    room = ssn.nodes.future[node].copy()
    for v in victims:
        room += v.resreq
    return less_equal(task.init_resreq, room)


def evict_greedily(ssn: Session, stmt: Statement, task: TaskInfo, nodes: np.ndarray,
                   offer: Callable[[int], list[TaskInfo] | None], fits: Fits, reason: str,
                   bound: np.ndarray | None = None, blocked: Callable[[], bool] | None = None,
                   freed_only: bool = False) -> int | None:
    """The eviction loop of Volcano's ``normalPreempt`` (preempt.go) and ``reclaimForTask`` (reclaim.go):
    on each node in turn, the victims ``offer`` gives (the plugins' vote; None skips the node, as reclaim
    skips a node without reclaimees) must pass ``validate``; they are evicted in ``victims_queue`` order, in a
    statement of the node's own, until ``fits`` says the task may go there, and the task is pipelined onto
    that node.  A node where it still does not fit is rolled back and the next node tried.  The node's
    operations join ``stmt``; returns the node, or None.

    ``blocked`` (preempt: the queue has no room for the task, ``allocatable`` false) is a condition that
    only more evictions can lift: proportion's and capacity's ``allocatable`` compare the queue's allocated
    resources, which each eviction lowers.  When a node fails with every victim gone and ``blocked`` still
    true, having freed ``R``, any node whose candidates (``bound``) hold no more than ``R`` in every
    resource must fail the same way, so those nodes are dropped in one NumPy pass instead of each being
    evicted and rolled back (Volcano tries them all).

    The pipeline records whether evictions made room (``evictionOccurred``, which nominates the pod to the
    node): for reclaim any eviction; for preempt (``freed_only``) only victims whose requests are not empty
    (``!preempted.IsEmpty()``: the pod slot alone does not count)."""
    order = np.asarray(nodes)
    k = 0
    while k < len(order):
        i = int(order[k])
        k += 1
        victims = offer(i)
        if victims is None or not validate(ssn, task, i, victims):
            continue
        node_stmt = Statement(ssn)
        queue = victims_queue(ssn, victims, task)
        ok = fits(i)
        while not ok and not queue.empty():
            node_stmt.evict(queue.pop(), reason)
            ok = fits(i)
        if ok:
            evicted = bool(node_stmt.ops)
            if evicted and freed_only:
                freed = np.zeros(ssn.res.size)
                for op in node_stmt.ops:
                    freed += op.task.resreq
                evicted = not is_empty(freed)
            node_stmt.pipeline(task, i, evicted)
            stmt.merge(node_stmt)
            return i
        if bound is not None and blocked is not None and blocked():
            freed = np.zeros(ssn.res.size)
            for op in node_stmt.ops:
                freed += op.task.resreq
            rest = order[k:]
            order, k = rest[~np.all(bound[rest] <= freed, axis=1)], 0
        node_stmt.discard(rollback=False)
    return None


# --- enableTopologyAwarePreemption: the dry run over candidate nodes -------------------------------------

@dataclass(frozen=True)
class CandidateLimits:
    """How many candidate nodes preempt's topology-aware dry run collects before choosing (Volcano's
    ``calculateNumCandidates``, preempt.go): ``percentage`` of the feasible nodes, at least ``minimum`` and
    at most ``maximum``, never more than there are.  Volcano's defaults are 10 %, 1 and 100."""

    percentage: int = 10
    minimum: int = 1
    maximum: int = 100

    @classmethod
    def of(cls, args: Arguments) -> CandidateLimits:
        return cls(args.get_int("minCandidateNodesPercentage", cls.percentage),
                   args.get_int("minCandidateNodesAbsolute", cls.minimum),
                   args.get_int("maxCandidateNodesAbsolute", cls.maximum))

    def count(self, feasible: int) -> int:
        return max(1, min(max(feasible * self.percentage // 100, self.minimum), self.maximum, feasible))


@dataclass
class Candidate:
    """One node's victims as ``select_victims_on_node`` leaves them (in reprieve order) and its place in
    the dry run (the tie-break of last resort)."""

    node: int
    victims: list[TaskInfo]
    rank: int

    def key(self) -> tuple[int, int, int, float, int]:
        """``pickOneNodeForPreemption`` (preempt.go), smallest first: the priority of the first victim (the
        list's head is taken as the highest), the sum of victim priorities, the number of victims, then the
        latest start time of the highest-priority victims (negated), then dry-run order."""
        prios = [v.priority for v in self.victims]
        top = max(prios)
        earliest = min(_start_time(v) for v in self.victims if v.priority == top)
        return (prios[0], sum(prios), len(prios), -earliest, self.rank)


def _start_time(task: TaskInfo) -> float:
    """The pod's ``status.startTime`` as seconds (Volcano's ``GetPodStartTime``); a pod without one counts
    as started now, i.e. later than any that has one."""
    raw = (task.pod.get("status") or {}).get("startTime")
    try:
        return parse_time(raw) if raw else float("inf")
    except ValueError:  # an unreadable start time counts as none (status is not part of the validated boundary)
        return float("inf")


def select_victims_on_node(ssn: Session, task: TaskInfo, node: int, victims: list[TaskInfo], fits: Fits,
                           reason: str) -> list[TaskInfo] | None:
    """Volcano's ``SelectVictimsOnNode`` (preempt.go), simulated on the session and undone before return:
    the offered victims must pass ``validate``; they are removed in ``victims_queue`` order until the task
    fits (queue room, future idle, predicates); the task must then pass the predicates; the removed ones
    are given back highest first (reverse removal order), each staying given back if the task still fits.
    Those that cannot be given back are the node's victims (None: the node is no candidate)."""
    if not validate(ssn, task, node, victims):
        return None
    queue = victims_queue(ssn, victims, task)
    trial = Statement(ssn, simulated=True)
    removed: list[TaskInfo] = []
    try:
        while not queue.empty():
            v = queue.pop()
            trial.evict(v, reason)
            removed.append(v)
            if fits(node):
                break
        if not removed or not ssn.selector.passes_at(task, ssn.jobs.get(task.job), node):
            return None
        chosen: list[TaskInfo] = []
        for v in reversed(removed):
            trial.restore(v)
            if not fits(node):
                trial.evict(v, reason)
                chosen.append(v)
        return chosen
    finally:
        trial.discard(rollback=False)


def dry_run(ssn: Session, task: TaskInfo, nodes: list[int], offer: Callable[[int], list[TaskInfo]], fits: Fits,
            limits: CandidateLimits, reason: str, feasible: int) -> Candidate | None:
    """Volcano's ``findCandidates`` + ``SelectCandidate`` (preempt.go): nodes are dry-run until
    ``limits.count(feasible)`` of them (``feasible``: how many nodes pass the predicates) are candidates
    with victims, and the best is picked by ``Candidate.key``.  Volcano starts at a random offset and checks
    nodes in parallel; here the nodes are checked in the order given from the first, so a decision is
    reproducible."""
    want = limits.count(feasible)
    found: list[Candidate] = []
    for rank, i in enumerate(nodes):
        chosen = select_victims_on_node(ssn, task, i, offer(i), fits, reason)
        if chosen:
            found.append(Candidate(i, chosen, rank))
            if len(found) >= want:
                break
    return min(found, key=Candidate.key) if found else None


# --- turns that yield nothing: the whole action skipped -------------------------------------------------------

#: ``idle(job, task)``: the task's turn in the action, at the action's start, provably evicts and pipelines nothing
IdleTask = Callable[[JobInfo, TaskInfo], bool]


def turns_idle(ssn: Session, jobs: Sequence[JobInfo], idle: IdleTask,
               idle_job: Callable[[JobInfo], bool] | None = None) -> bool:
    """Whether preempt's or reclaim's turns for ``jobs`` (the starving jobs it would push) can all be skipped: each
    pending task of each of them takes a turn that provably evicts and pipelines nothing (``idle``, judged on the
    session as the action starts).  Then no turn changes the session, so each one meets the very state ``idle``
    judged (by induction over the turns, whatever their order): the job and queue heaps, the turns and their
    statements are all no-ops, and so is skipping them.

    What a skipped turn would have asked besides: jobStarving, jobPipelined, prePredicate, the predicates for
    preemption, preemptive, overused and the order callbacks.  Skipping them is exact only when none has an effect
    besides its answer: the same promise the blocked-job memo relies on when it skips an allocate turn, so the
    conf's allocate memo must be allowed (every plugin declares ``Contract.FINGERPRINTED``: ``SessionMemo.allocate_ok``).
    The one effect the session itself keeps, a task's note in ``Session.prepredicated``, is read only for a pod with
    a nominated node (``actions/preempt.py: nominated_allows``): ``idle`` answers False for such a pod.  A batch node
    score (the extender's: it may warn) would be asked by preempt's greedy path: ``idle`` answers False then too.
    ``--full-sessions`` carries no ledger and no proof, so it never gets here: the reference.

    ``idle_job``, when given, answers for a whole job what the loop over its tasks with ``idle`` would (preempt's
    carried answer for a job that waits through many sessions: ``actions/preempt.py: IdleJobs``)."""
    memo = ssn.memo
    if memo is None or not memo.allocate_ok:
        return False
    if idle_job is not None:
        return all(idle_job(job) for job in jobs)
    pending = TaskStatus.Pending
    for job in jobs:
        for t in job.index.get(pending, {}).values():
            if not t.sch_gated and not idle(job, t):
                return False
    return True


class FitsNowhere:
    """Per request, whether no node's future idle can hold it (``fitting`` over every node empty): a turn with no
    victims can then pipeline the task nowhere.  Asked for many tasks of few shapes against one unchanging
    session state (``turns_idle``), so each request is checked once, and first against the largest future idle of
    any node in each resource (taken once): a request above it in some resource fits no node, by the very
    comparisons ``fitting`` makes (a node's value is at most the largest); only the others go to ``fitting``."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.seen: dict[bytes, bool] = {}
        self.top: list[float] | None = None
        #: with ``deltas.CHECK``, the future idle the answers are of (``shared`` checks it is still the nodes')
        self.future = ssn.nodes.future.copy() if deltas.CHECK else None

    @classmethod
    def shared(cls, ssn: Session) -> FitsNowhere:
        """The session's instance while its nodes have not changed (``while_unchanged``): preempt's answers are
        reclaim's when preempt's turns changed nothing between them."""
        got = while_unchanged(ssn, _FITS, lambda: cls(ssn))
        if got.future is not None:
            assert np.array_equal(got.future, ssn.nodes.future), "FitsNowhere: shared over a change of the nodes"
        return got

    def __call__(self, task: TaskInfo) -> bool:
        need = task.init_resreq
        return self.of(need.tobytes(), need)

    def of(self, key: bytes, need: np.ndarray) -> bool:
        """The answer for a request given with its bytes (``key``)."""
        got = self.seen.get(key)
        if got is None:
            got = self.seen[key] = self._above_top(key, need) \
                or not len(fitting(self.ssn, need, np.arange(len(self.ssn.nodes))))
        return got

    def _above_top(self, key: bytes, need: np.ndarray) -> bool:
        """Some resource of ``need`` (``key``: its bytes) that every node's future idle fails."""
        top = self.top
        if top is None:
            future = self.ssn.nodes.future
            top = self.top = future.max(axis=0).tolist() if len(future) else []
        if not top:
            return False
        floors = _FLOORS.get(key)
        if floors is None:
            floors = _floors(key, need)
        return any(top[d] <= floor for d, floor in floors)


#: the session's ``FitsNowhere`` (``FitsNowhere.shared``)
_FITS: StateKey[tuple[Stamp, FitsNowhere]] = StateKey("fits-nowhere")

#: per request (its bytes), the resources ``fitting`` compares and what a node's future idle must exceed in each:
#: ``fit_floor(need) - EPS`` where it is finite (cpu and memory always, the others when requested), as ``fitting``
#: computes it; a function of the request alone, so kept across sessions
_FLOORS: dict[bytes, tuple[tuple[int, float], ...]] = {}


def _floors(key: bytes, need: np.ndarray) -> tuple[tuple[int, float], ...]:
    if len(_FLOORS) > 4096:  # requests of workloads gone by
        _FLOORS.clear()
    got = _FLOORS[key] = tuple((d, x) for d, x in enumerate((fit_floor(need) - EPS).tolist()) if x != -math.inf)
    return got


def take_turns(action: str, ssn: Session, starving: list[JobInfo], idle: bool,
               turns: Callable[[list[JobInfo]], None]) -> None:
    """The action's ``turns`` for the ``starving`` jobs, or for none when ``idle`` (``turns_idle`` proved every one
    evicts and pipelines nothing); with ``deltas.CHECK`` proved turns are taken anyway and must change nothing
    (``NoChange``)."""
    unchanged = NoChange(ssn, starving) if idle and deltas.CHECK else None
    if starving and (not idle or unchanged is not None):  # no starving job: no queue takes a turn
        turns(starving)
    if unchanged is not None:
        unchanged.check(action)


class NoChange:
    """With ``deltas.CHECK``: the turns ``turns_idle`` proved idle are taken anyway, and must leave the session as
    they found it (no eviction, no pipeline, node future idle the same)."""

    def __init__(self, ssn: Session, jobs: Sequence[JobInfo]) -> None:
        self.ssn = ssn
        self.jobs = list(jobs)
        self.evictions = len(ssn.evictions)
        self.future = ssn.nodes.future.copy()
        self.pending = [len(j.index.get(TaskStatus.Pending, {})) for j in self.jobs]

    def check(self, action: str) -> None:
        ssn = self.ssn
        assert len(ssn.evictions) == self.evictions, f"{action}: evictions in turns proven idle"
        assert np.array_equal(ssn.nodes.future, self.future), f"{action}: future idle moved in turns proven idle"
        assert self.pending == [len(j.index.get(TaskStatus.Pending, {})) for j in self.jobs], \
            f"{action}: a task placed in turns proven idle"
