"""pdb (``pkg/scheduler/plugins/pdb/pdb.go``): never pick victims that would break a policy/v1 PodDisruptionBudget.

A PDB in the pod's namespace whose selector matches the pod allows ``status.disruptionsAllowed`` evictions
(computed from ``spec.minAvailable``/``maxUnavailable`` and the matching running pods when the status is
absent, as the disruption controller would).  As in kube-scheduler's ``filterPodsWithPDBViolation`` (which
Volcano copies): an empty selector matches nothing, a pod listed in ``status.disruptedPods`` is not counted,
and every matching budget is charged for a pod, which breaks a budget once one of them goes below zero.
``session_budgets`` is shared with preempt/reclaim, which prefer nodes whose victims break the fewest budgets.

The plugin's preemptable/reclaimable vote keeps the candidates that break no budget -- and, exactly as
Volcano's code does, drops every pod *without labels* (Volcano's copy of kube-scheduler's "a pod with no labels
matches no PDB" skips the pod instead of keeping it).  With the pdb plugin on, unlabelled pods are never
victims; docs/queues.md lists this among Volcano's quirks.
"""

from __future__ import annotations

import math
from typing import Any

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.labels import selector_matches
from pyvolcano.api.types import TaskStatus
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition, anyone, nothing
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.framework.state import StateKey


def _labels(task: TaskInfo) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((task.pod.get("metadata") or {}).get("labels") or {}).items()}


def _count(value: Any, expected: int, round_up: bool) -> int:
    s = str(value)
    if s.endswith("%"):
        x = float(s[:-1]) * expected / 100
        return math.ceil(x) if round_up else math.floor(x)
    return int(float(s))


class Budgets:
    """Disruptions left per PDB for one answer (or one node's victim set)."""

    def __init__(self, pdbs: list[dict[str, Any]], tasks: list[TaskInfo]) -> None:
        self.pdbs = pdbs
        self.left: dict[int, int] = {}
        for i, p in enumerate(pdbs):
            status = p.get("status") or {}
            if "disruptionsAllowed" in status:
                self.left[i] = int(status["disruptionsAllowed"])
                continue
            ns = (p.get("metadata") or {}).get("namespace") or "default"
            sel = (p.get("spec") or {}).get("selector")
            match = [t for t in tasks if t.namespace == ns and selector_matches(sel, _labels(t))]
            healthy = sum(1 for t in match if t.status & (TaskStatus.Running | TaskStatus.Bound))
            spec = p.get("spec") or {}
            if spec.get("minAvailable") is not None:
                self.left[i] = healthy - _count(spec["minAvailable"], len(match), True)
            elif spec.get("maxUnavailable") is not None:
                self.left[i] = _count(spec["maxUnavailable"], len(match), True) - (len(match) - healthy)
            else:
                self.left[i] = 1 << 30
        self.left = {i: max(v, 0) if v < (1 << 30) else v for i, v in self.left.items()}

    def copy(self) -> Budgets:
        b = Budgets.__new__(Budgets)
        b.pdbs, b.left = self.pdbs, dict(self.left)
        return b

    def matching(self, task: TaskInfo) -> list[int]:
        out = []
        for i, p in enumerate(self.pdbs):
            ns = (p.get("metadata") or {}).get("namespace") or "default"
            if ns == task.namespace and selector_matches((p.get("spec") or {}).get("selector"), _labels(task)):
                out.append(i)
        return out

    def take(self, task: TaskInfo) -> bool:
        """Charge ``task``'s eviction to every budget that counts it; False if one of them goes below zero.

        kube-scheduler's order: a pod without labels matches no budget; a pod the budget already lists in
        ``status.disruptedPods`` is not charged again."""
        if not _labels(task):
            return True
        ok = True
        for i in self.matching(task):
            if task.name in ((self.pdbs[i].get("status") or {}).get("disruptedPods") or {}):
                continue
            self.left[i] -= 1
            ok = ok and self.left[i] >= 0
        return ok


def all_tasks(ssn: Session) -> list[TaskInfo]:
    return [t for j in ssn.jobs.values() for t in j.tasks.values()]


#: the session's disruption budgets (``session_budgets``)
BUDGETS: StateKey[Budgets] = StateKey("pdb-budgets")


def session_budgets(ssn: Session) -> Budgets | None:
    """The budgets as the snapshot shows them, computed once per session (like Volcano, which reads the PDB
    status from the API server, evictions decided in this session do not change them)."""
    if not ssn.snapshot.pdbs:
        return None
    return ssn.state.read_or_init(BUDGETS, lambda: Budgets(ssn.snapshot.pdbs, all_tasks(ssn)))


def victim_class(_: JobInfo, task: TaskInfo) -> bool:
    """A candidate's class for pdb's victim condition: whether its pod has labels."""
    return bool(_labels(task))


def _labelled(_: TaskInfo, cls: object, own: bool) -> bool:
    """pdb.go's pdbFilterFn skips a pod without labels ("a pod with no labels will not match any PDB": skipped, not
    kept), with or without budgets."""
    return bool(cls)


#: pdb's victim condition, the same for preempt and reclaim
CONDITION = VictimCondition(victim_class, _labelled, anyone, nothing)


@register_plugin
class PDB(Plugin):
    name = "pdb"
    # registers preemptable/reclaimable only: enqueue and allocate never ask it (no refusal the memo skips)
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        def victims(_: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            base = session_budgets(ssn)
            if base is None:  # Volcano lists no PDB: every labelled pod passes, unlabelled ones never do
                return [t for t in preemptees if _labels(t)], PERMIT
            b = base.copy()
            return [t for t in preemptees if _labels(t) and b.take(t)], PERMIT
        ssn.add_preemptable_fn(self.name, victims, CONDITION)
        ssn.add_reclaimable_fn(self.name, victims, CONDITION)
