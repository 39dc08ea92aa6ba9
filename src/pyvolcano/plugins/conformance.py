"""conformance (``pkg/scheduler/plugins/conformance/conformance.go``): never evict critical pods
(system-cluster-critical, system-node-critical, or anything in kube-system)."""

from __future__ import annotations

from pyvolcano.api.job_info import JobInfo, TaskInfo
from pyvolcano.api.types import SYSTEM_CRITICAL
from pyvolcano.framework.incremental.contracts import Contract, VictimCondition, anyone, nothing
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PERMIT, EvictionContext, Vote
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session


def is_critical(task: TaskInfo) -> bool:
    spec = task.pod.get("spec") or {}
    return spec.get("priorityClassName") in SYSTEM_CRITICAL or task.namespace == "kube-system"


def victim_class(_: JobInfo, task: TaskInfo) -> bool:
    """A candidate's class for conformance's victim condition: whether it is not critical (``VictimCondition``)."""
    return not is_critical(task)


def _not_critical(_: TaskInfo, cls: object, own: bool) -> bool:
    """conformance.go's evictableFn skips a pod of a system-critical priority class or of kube-system, whoever
    asks."""
    return bool(cls)


#: conformance's victim condition, the same for preempt and reclaim
CONDITION = VictimCondition(victim_class, _not_critical, anyone, nothing)


def _victims(_: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    return [t for t in preemptees if not is_critical(t)], PERMIT


def _unified(_: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    return [t for t in candidates if not is_critical(t)], PERMIT


@register_plugin
class Conformance(Plugin):
    name = "conformance"
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        # functions of their arguments alone: made once, not at every session's open
        ssn.add_preemptable_fn(self.name, _victims, CONDITION)
        ssn.add_reclaimable_fn(self.name, _victims, CONDITION)
        ssn.add_unified_evictable_fn(self.name, _unified)
