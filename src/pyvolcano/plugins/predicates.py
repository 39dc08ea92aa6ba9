"""predicates (``pkg/scheduler/plugins/predicates/predicates.go``): which nodes may run a task at all.

Each check is registered separately so a rejection is explained with Kubernetes' own phrase; each has a
vector form over many nodes and a per-node form that returns the reason.  Node labels and taints do not
change within a session, so those checks are *static* (computed once per pod template); host ports and the
proportional GPU check depend on what is on the node, so they are recomputed for changed nodes only.

Arguments (Volcano's): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``, ``predicate.PodTopologySpreadEnable``
(default true), ``predicate.ProportionalEnable`` with
``predicate.resources`` (comma-separated names) and ``predicate.resources.<name>.cpu|memory`` (cores and
GB reserved per unit of the resource).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.status import Code, Status, reject_if
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.points import PredicateFn, VectorPredicateFn
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import Session
from pyvolcano.plugins._k8s import LABELS, LabelIndex, selector_mask, taint_reason, untolerated
from pyvolcano.plugins._podaffinity import register_predicates

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


@register_plugin
class Predicates(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        a = self.arguments
        nodes = ssn.nodes
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
                          reason=UNSCHEDULABLE_REASON)

        if a.get_bool("predicate.NodeAffinityEnable", True):
            def affinity(task: TaskInfo, i: int) -> str | None:
                ok = selector_mask(li, task.pod, np.array([i]))[0]
                return None if ok else AFFINITY_REASON
            ssn.add_predicate(self.name, vector=lambda t, idx: selector_mask(li, t.pod, idx),
                              scalar=_per_node(affinity, UNRESOLVABLE)[1], static=True, reason=AFFINITY_REASON)

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
                              static=True)

        if a.get_bool("predicate.NodePortsEnable", True):
            wanted: dict[object, set[tuple[int, str, str]]] = {}  # host ports are part of the template key

            def ports(task: TaskInfo, i: int) -> str | None:
                want = wanted.get(task.template_key)
                if want is None:
                    want = wanted[task.template_key] = host_ports(task.pod)
                if not want:
                    return None
                used: set[tuple[int, str, str]] = set()
                for t in nodes.tasks[i].values():
                    used |= host_ports(t.pod)
                return PORTS_REASON if ports_conflict(want, used) \
                    else None

            def ports_vec(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                if ports(task, -1) is None and not wanted[task.template_key]:
                    return np.ones(len(idx), dtype=bool)
                return _per_node(ports)[0](task, idx)
            ssn.add_predicate(self.name, vector=ports_vec, scalar=_per_node(ports)[1], reason=PORTS_REASON)

        # Kubernetes' InterPodAffinity and PodTopologySpread filters (plugins/_podaffinity.py)
        register_predicates(ssn, self.name, a.get_bool("predicate.PodAffinityEnable", True),
                            a.get_bool("predicate.PodTopologySpreadEnable", True))

        if a.get_bool("predicate.ProportionalEnable", False):
            self._proportional(ssn)

    def _proportional(self, ssn: Session) -> None:
        """Volcano's proportional predicate (``predicate.resources``; at the reference commit in
        ``plugins/resource-strategy-fit/proportional.go``): keep cpu/memory for GPU tasks: a task not asking for
        the resource may only use a node if, after it, idle cpu/memory still cover each idle GPU's reserved share."""
        a, res, nodes = self.arguments, ssn.res, ssn.nodes
        names = [n.strip() for n in a.get_str("predicate.resources", "").split(",") if n.strip()]
        rates = []
        for n in names:
            if n not in res.pos:
                continue
            cpu_rate = a.get_float(f"predicate.resources.{n}.cpu", 1.0)
            mem_rate = a.get_float(f"predicate.resources.{n}.memory", 1.0)
            # Volcano: a rate left out, or negative, is 1
            rates.append((n, res.pos[n], cpu_rate if cpu_rate >= 0 else 1.0, mem_rate if mem_rate >= 0 else 1.0))
        if not rates:
            return
        cpu, mem = res.pos["cpu"], res.pos["memory"]

        def vector(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if any(task.resreq[d] > 0 for _, d, _, _ in rates):
                return np.ones(len(idx), dtype=bool)
            idle = nodes.idle[idx]
            left = idle - task.resreq
            ok = np.ones(len(idx), dtype=bool)
            for _, d, c, m in rates:
                ok &= (left[:, cpu] >= idle[:, d] * c) & (left[:, mem] >= idle[:, d] * m * 1e6)
            return ok

        reason = f"proportional of resource {'/'.join(n for n, *_ in rates)} check failed"

        def scalar(task: TaskInfo, node: NodeInfo) -> Status | None:
            return None if vector(task, np.array([node.index]))[0] else Status(Code.UNSCHEDULABLE, (reason,), self.name)
        ssn.add_predicate(self.name, vector=vector, scalar=scalar, reason=reason)
