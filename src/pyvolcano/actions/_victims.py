"""Helpers shared by preempt and reclaim: victim validation, victim order, and kube-scheduler's choice of
node and minimal victims (kube-scheduler's ``pkg/scheduler/framework/preemption/preemption.go``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cmp_to_key

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.resource import EPS, fits
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue

PREEMPTABLE_STATUS = TaskStatus.Running | TaskStatus.Bound


def _room(ssn: Session, node: int, victims: list[TaskInfo]) -> list[float]:
    """The node's future idle with every victim gone, as a list (these vectors have a handful of entries)."""
    room = ssn.nodes.future[node].tolist()
    for v in victims:
        room = [a + b for a, b in zip(room, v.resreq.tolist(), strict=True)]
    return room


def victims_queue(ssn: Session, victims: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """Volcano's BuildVictimsPriorityQueue: within a job the last in task order first, across jobs the
    last in job order first."""
    def cmp(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -ssn.task_cmp(left, right)
        return -ssn.job_cmp(ssn.jobs[left.job], ssn.jobs[right.job])
    return PriorityQueue(cmp, victims)


@dataclass
class Choice:
    """One node's minimal victim set and kube-scheduler's ranking key for it."""

    node: int
    victims: list[TaskInfo]
    violations: int
    rank: int
    candidates: list[TaskInfo] = field(default_factory=list)

    def key(self) -> tuple[int, int, int, int, int]:
        prios = [v.priority for v in self.victims]
        return (self.violations, max(prios, default=-(2**31)), sum(prios), len(prios), self.rank)


def minimal_victims(ssn: Session, preemptor: TaskInfo, node: int, victims: list[TaskInfo]) -> Choice | None:
    """kube-scheduler's SelectVictimsOnNode: assume every candidate gone; if the preemptor then fits, give
    candidates back (reprieve) highest priority first -- those breaking a PodDisruptionBudget first -- as
    long as it still fits.  What cannot be given back is the victim set."""
    if not victims:
        return None
    need = preemptor.init_resreq.tolist()
    room = _room(ssn, node, victims)
    if not fits(need, room):  # Volcano's ValidateVictims
        return None
    from pyvolcano.plugins.pdb import session_budgets
    base = session_budgets(ssn)
    budgets = base.copy() if base is not None else None
    def reverse_victim_order(a: TaskInfo, b: TaskInfo) -> int:
        return -ssn.victim_cmp(a, b)

    ordered = sorted(victims, key=cmp_to_key(reverse_victim_order)) if len(victims) > 1 else victims
    ordered.sort(key=lambda t: -t.priority)  # stable: priority first, then the plugins' victim order
    violating: list[TaskInfo] = []
    fine: list[TaskInfo] = []
    for t in ordered:
        (fine if budgets is None or budgets.take(t) else violating).append(t)
    chosen: list[TaskInfo] = []
    n_violating = 0
    for group, counts in ((violating, True), (fine, False)):
        for t in group:
            without = [a - b for a, b in zip(room, t.resreq.tolist(), strict=True)]
            if fits(need, without):
                room = without  # reprieved: it stays
            else:
                chosen.append(t)
                n_violating += int(counts)
    return Choice(node, chosen, n_violating, 0)


def pick_node(choices: list[Choice]) -> Choice | None:
    """kube-scheduler's pickOneNodeForPreemption: fewest PDB violations, then the lowest highest-victim
    priority, the smallest priority sum, the fewest victims; remaining ties keep the node score order."""
    return min(choices, key=Choice.key) if choices else None


@dataclass(frozen=True)
class CandidateLimits:
    """How many candidate nodes a dry run collects before choosing (kube-scheduler's DefaultPreemption args,
    which Volcano's topology-aware preempt/reclaim also take): ``percentage`` of the feasible nodes, at least
    ``minimum`` and at most ``maximum``, never more than there are.  The defaults (10 %, 100, 100) try every
    node of a cluster up to 100 nodes, like kube-scheduler, and stop at 100 candidates on big ones, like
    Volcano; nodes are tried in the action's order (best score first), not from kube-scheduler's random
    offset, so a decision is reproducible."""

    percentage: int = 10
    minimum: int = 100
    maximum: int = 100

    @classmethod
    def of(cls, args: Arguments) -> CandidateLimits:
        return cls(args.get_int("minCandidateNodesPercentage", cls.percentage),
                   args.get_int("minCandidateNodesAbsolute", cls.minimum),
                   args.get_int("maxCandidateNodesAbsolute", cls.maximum))

    def count(self, feasible: int) -> int:
        return max(1, min(max(feasible * self.percentage // 100, self.minimum), self.maximum, feasible))


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
    """The nodes of ``order`` (same order) where the task could fit once every candidate is gone: on any other
    node ``minimal_victims`` finds nothing (Volcano's ValidateVictims), so skipping it in one NumPy pass changes
    no decision but spares the per-node candidate filter and the plugins' votes.  One extra EPS of slack keeps
    float summation order from ever dropping a node the exact check would keep."""
    if bound is None or not len(order):
        return order
    room = ssn.nodes.future[order] + bound[order]
    return order[np.all(need < room + 2 * EPS, axis=1)]


def find_choice(ssn: Session, task: TaskInfo, nodes: Iterable[int], offer: Callable[[int], list[TaskInfo]],
                limits: CandidateLimits, feasible: int) -> Choice | None:
    """kube-scheduler's dry run: on each node (in the given order) the victims ``offer`` gives are reduced to
    a minimal set; once ``limits`` candidates are found, at least one of them breaking no
    PodDisruptionBudget, the best is picked by ``pick_node``."""
    want = limits.count(feasible)
    choices: list[Choice] = []
    clean = 0
    for rank, i in enumerate(nodes):
        victims = offer(i)
        c = minimal_victims(ssn, task, i, victims)
        if c is None:
            continue
        c.rank = rank
        c.candidates = victims
        choices.append(c)
        clean += c.violations == 0
        if clean and len(choices) >= want:
            break
    return pick_node(choices)
