"""Helpers shared by preempt and reclaim: victim validation, victim order, and kube-scheduler's choice of
node and minimal victims (seed 002)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cmp_to_key

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.resource import less_equal
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.session import Session
from pyvolcano.framework.util import PriorityQueue

PREEMPTABLE_STATUS = TaskStatus.Running | TaskStatus.Bound


def victims_enough(ssn: Session, preemptor: TaskInfo, node: int, victims: list[TaskInfo]) -> bool:
    """Volcano's ValidateVictims: some victims, and the node's future idle plus all of them fits the task."""
    if not victims:
        return False
    future = ssn.nodes.future_idle(node).copy()
    for v in victims:
        future += v.resreq
    return less_equal(preemptor.init_resreq, future)


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
    if not victims_enough(ssn, preemptor, node, victims):
        return None
    from pyvolcano.plugins.pdb import session_budgets
    base = session_budgets(ssn)
    budgets = base.copy() if base is not None else None
    ordered = sorted(victims, key=cmp_to_key(lambda a, b: -ssn.victim_cmp(a, b)))
    ordered.sort(key=lambda t: -t.priority)  # stable: priority first, then the plugins' victim order
    violating, fine = [], []
    for t in ordered:
        (fine if budgets is None or budgets.take(t) else violating).append(t)
    room = ssn.nodes.future_idle(node).copy()
    for v in victims:
        room += v.resreq
    need = preemptor.init_resreq
    chosen: list[TaskInfo] = []
    n_violating = 0
    for group, counts in ((violating, True), (fine, False)):
        for t in group:
            if less_equal(need, room - t.resreq):
                room -= t.resreq  # reprieved: it stays
            else:
                chosen.append(t)
                n_violating += int(counts)
    return Choice(node, chosen, n_violating, 0)


def pick_node(choices: list[Choice]) -> Choice | None:
    """kube-scheduler's pickOneNodeForPreemption: fewest PDB violations, then the lowest highest-victim
    priority, the smallest priority sum, the fewest victims; remaining ties keep the node score order."""
    return min(choices, key=Choice.key) if choices else None
