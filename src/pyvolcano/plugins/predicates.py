"""predicates (``pkg/scheduler/plugins/predicates/predicates.go``): which nodes may run a task at all.

Each check is registered separately so a rejection is explained with Kubernetes' own phrase; each has a
vector form over many nodes and a per-node form that returns the reason.  Node labels and taints do not
change within a session, so those checks are *static* (computed once per pod template); host ports and the
pod affinity and spread depend on what is on the node, so they are recomputed for changed nodes only.

Arguments (Volcano's): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``, ``predicate.PodTopologySpreadEnable``
(default true).  ``predicate.ProportionalEnable`` and ``predicate.resources*`` are ignored, as Volcano master
ignores them: the proportional GPU check moved to the ``resource-strategy-fit`` plugin
(``plugins/resource-strategy-fit/proportional.go``), which pyvolcano implements in ``plugins/resource_strategy_fit.py``.

``enablePredicate: false`` on this plugin stops every placement, as in Volcano master (docs/volcano-differences.md):
see :func:`refuse_every_placement`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.status import Code, Status, reject_if
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.node_select import PredicateReg
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PredicateFn, VectorPredicateFn
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._k8s import LABELS, LabelIndex, selector_mask, taint_reason, untolerated
from pyvolcano.plugins._podaffinity import counted, register_predicates
from pyvolcano.plugins._shared import option_flags

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# Kubernetes' own phrases for the rejections whose text does not depend on the node
UNSCHEDULABLE_REASON = "node(s) were unschedulable"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
#: Kubernetes' NodeUnschedulable, NodeAffinity and TaintToleration filters reject with this code: evicting pods
#: cannot change labels or taints
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def host_ports(pod: dict[str, Any]) -> set[tuple[int, str, str]]:
    spec = pod.get("spec") or {}
    return {(int(p["hostPort"]), p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0")
            for c in spec.get("containers") or [] for p in (c or {}).get("ports") or [] if p.get("hostPort")}


def ports_conflict(want: set[tuple[int, str, str]], used: set[tuple[int, str, str]]) -> bool:
    for port, proto, ip in want:
        for uport, uproto, uip in used:
            if port == uport and proto == uproto and (ip == uip or "0.0.0.0" in (ip, uip)):
                return True
    return False


def _per_node(check: Callable[[TaskInfo, int], str | None], code: Code = Code.UNSCHEDULABLE
              ) -> tuple[VectorPredicateFn, PredicateFn]:
    """(vector, scalar) forms from one per-node check returning a reason or None; the scalar form answers with a
    ``Status`` of ``code``."""
    def vector(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        return np.fromiter((check(task, int(i)) is None for i in idx), bool, len(idx))

    def scalar(task: TaskInfo, node: NodeInfo) -> Status | None:
        return reject_if(check(task, node.index), Predicates.name, code)
    return vector, scalar


#: what Volcano logs when a placement fails this way (``predicates.go: runReservePlugins``)
RESERVE_REASON = "Reserve plugin {} failed: not found (predicates has enablePredicate: false)"


def refuse_every_placement(ssn: Session, plugin: str, args: Arguments) -> None:
    """With ``enablePredicate: false`` on predicates, Volcano master places nothing.

    The flag switches off the plugin's PrePredicate and Predicate functions (``framework/session_plugins.go:
    PrePredicateFn``, ``PredicateFn``), but not its allocate event handler (``predicates.go: OnSessionOpen``), which
    runs the Kubernetes Reserve plugins (``runReservePlugins``: VolumeBinding unless
    ``predicate.VolumeBindingEnable: false``, DynamicResources unless ``predicate.DynamicResourceAllocationEnable:
    false``). Their Reserve reads the state their PreFilter would have written and fails with "not found", so every
    ``Statement.Allocate``/``Pipeline`` and ``ssn.Allocate`` is rolled back: no bind, no pipelined task, and no
    eviction is ever committed (preempt and reclaim discard a node's evictions when the pipeline fails).

    pyvolcano reaches the same decisions by a filter that rejects every node, registered whatever the flag says:
    no node is found, so nothing is placed or evicted (only the "why" text differs from Volcano's)."""
    if option_flags(ssn, plugin).get("enablePredicate", True):  # Volcano's isEnabled: unset means on
        return
    reserve = [name for name, key in (("VolumeBinding", "predicate.VolumeBindingEnable"),
                                      ("DynamicResources", "predicate.DynamicResourceAllocationEnable"))
               if args.get_bool(key, True)]
    if not reserve:
        return
    reason = RESERVE_REASON.format(reserve[0])

    def none(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        return np.zeros(len(idx), dtype=bool)

    def why(task: TaskInfo, node: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, (reason,), plugin)
    ssn.predicates.append(PredicateReg(plugin, none, why, True, True, reason, carry=("refuse",)))


@register_plugin
class Predicates(Plugin):
    name = "predicates"
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        a = self.arguments
        nodes = ssn.nodes
        refuse_every_placement(ssn, self.name, a)
        li = ssn.state.read_or_init(LABELS, lambda: LabelIndex(nodes))

        def unschedulable(task: TaskInfo, i: int) -> str | None:
            if not nodes.unschedulable[i]:
                return None
            taint = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
            return UNSCHEDULABLE_REASON if untolerated(task.pod, [taint], ("NoSchedule",)) else None

        def unsched_vec(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            m = ~nodes.unschedulable[idx]
            if not m.all() and not untolerated(task.pod, [{"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}],
                                               ("NoSchedule",)):
                m[:] = True
            return m

        ssn.add_predicate(self.name, vector=unsched_vec, scalar=_per_node(unschedulable, UNRESOLVABLE)[1], static=True,
                          reason=UNSCHEDULABLE_REASON, carry=("unschedulable",))

        if a.get_bool("predicate.NodeAffinityEnable", True):
            def affinity(task: TaskInfo, i: int) -> str | None:
                ok = selector_mask(li, task.pod, np.array([i]))[0]
                return None if ok else AFFINITY_REASON
            ssn.add_predicate(self.name, vector=lambda t, idx: selector_mask(li, t.pod, idx),
                              scalar=_per_node(affinity, UNRESOLVABLE)[1], static=True, reason=AFFINITY_REASON,
                              carry=("nodeaffinity",))

        if a.get_bool("predicate.TaintTolerationEnable", True):
            def taints(task: TaskInfo, i: int) -> str | None:
                bad = untolerated(task.pod, nodes.specs[i].taints, ("NoSchedule", "NoExecute"))
                return taint_reason(bad[0]) if bad else None

            def taints_vec(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                m = np.ones(len(idx), dtype=bool)
                if len(li.tainted):
                    pos = np.nonzero(np.isin(idx, li.tainted))[0]
                    for j in pos:
                        m[j] = taints(task, int(idx[j])) is None
                return m
            ssn.add_predicate(self.name, vector=taints_vec, scalar=_per_node(taints, UNRESOLVABLE)[1],
                              static=True, carry=("taints",))

        if a.get_bool("predicate.NodePortsEnable", True):
            wanted: dict[object, set[tuple[int, str, str]]] = {}  # host ports are part of the template key

            def ports(task: TaskInfo, i: int) -> str | None:
                want = wanted.get(task.template_key)
                if want is None:
                    want = wanted[task.template_key] = host_ports(task.pod)
                if not want:
                    return None
                used: set[tuple[int, str, str]] = set()
                unevicted = ssn.unevicted
                for t in nodes.tasks[i].values():
                    # Kubernetes' NodeInfo as Volcano's event handlers keep it: a pod evicted in this session has
                    # left it (so evicting the pod holding the port lifts the conflict), one undone stays out
                    if counted(t) and t.uid not in unevicted:
                        used |= host_ports(t.pod)
                return PORTS_REASON if ports_conflict(want, used) \
                    else None

            def ports_vec(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                if ports(task, -1) is None and not wanted[task.template_key]:
                    return np.ones(len(idx), dtype=bool)
                return _per_node(ports)[0](task, idx)
            def no_ports(task: TaskInfo) -> bool:
                """Carried only for pods without host ports (true everywhere): the others read the node's pods."""
                return ports(task, -1) is None and not wanted[task.template_key]
            # NodePorts' conflict is Unschedulable (evicting the pod holding the port lifts it)
            ssn.add_predicate(self.name, vector=ports_vec, scalar=_per_node(ports)[1], reason=PORTS_REASON,
                              resolvable=True, carry=("ports",), carry_task=no_ports)

        # Kubernetes' InterPodAffinity and PodTopologySpread filters (plugins/_podaffinity.py)
        register_predicates(ssn, self.name, a.get_bool("predicate.PodAffinityEnable", True),
                            a.get_bool("predicate.PodTopologySpreadEnable", True))
