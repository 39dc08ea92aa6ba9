"""numa-aware (``pkg/scheduler/plugins/numaaware``): place Guaranteed pods where the kubelet's topology manager will
admit them, and prefer nodes where their CPUs span the fewest NUMA nodes.

The plugin's conf name is Volcano's ``numa-aware``.  It reads each node's ``Numatopology``
(``api/numatopology.py``) and the pod annotation ``volcano.sh/numa-topology-policy`` (``none``, ``best-effort``,
``restricted``, ``single-numa-node``).

**Predicate** (``numaaware.go: predicateFn``), for Guaranteed pods only (``v1qos.GetPodQOS``).  A pod with a
policy needs a node with a Numatopology, ``CPUManagerPolicy: static``, the same ``TopologyManagerPolicy`` as the
pod and some allocatable CPU; a pod without one is checked only on nodes with a static CPU manager and a topology
policy other than ``none``.  Then, container by container, the CPU manager's hints (``cpu_mng.go:
GetTopologyHints``: every set of NUMA nodes with enough free CPUs for the container's whole-CPU request, those of
the smallest size that could hold it preferred; reserved CPUs left out) are merged by the node's policy
(``policy/*.go``: best-effort admits anything, restricted needs a preferred hint, single-numa-node needs a preferred
hint of one NUMA node) and the CPUs are taken as the kubelet's ``takeByTopology`` would (``cpu_assignment.go``).
A container the policy refuses rejects the node: "container <name> cannot be assigned by numa".

**Batch score** (``batchNodeOrderFn``), for pods with a policy other than ``none``: the number of NUMA nodes the
pod's CPUs would span on each node, normalised in reverse to 0..100 (fewest best), times ``weight`` (default 1).

The CPUs chosen on the node a pod is placed on are taken from that node for the rest of the session (and given
back when the placement is undone), as Volcano's event handlers do.  **Across sessions** Volcano keeps them as
its cache keeps them (``OnSessionClose`` -> ``SchedulerCache.AddUnassignedNumaPods``: per node, pod -> CPUs, for
every task whose placement, allocated or pipelined, stands at the close), and each snapshot
(``NodeInfo.RefreshNumaSchedulerInfoByCrd``) starts the node's free CPUs from its Numatopology: when every pod
kept for the node is listed in the Numatopology's ``podAllocations`` (by uid, or namespace and name: the
resource exporter has seen the kubelet assign it), the node's entries are dropped; otherwise *all* of them, listed
or not, are taken from the allocatable CPUs again.  An entry goes when its pod is deleted (``DeletePod`` ->
``clearUnassignedNumaPod``), not when it finishes.  pyvolcano keeps the entries in ``Snapshot.plugin_memory``
(``UNASSIGNED``), so the simulator and the Kubernetes scheduler carry them from one session to the next as
Volcano does; a ``cycle`` is one session, with none.

Volcano's copy of ``takeByTopology`` intersects socket and core ids with CPU ids (``freeSockets``, ``freeCores``)
and sorts with comparisons that are not orders; pyvolcano follows the code, with Go's insertion sort for the sorts
(what Go's ``sort.Slice`` does on up to 12 elements).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from itertools import combinations
from typing import Any

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.api.numatopology import CPU_MANAGER_POLICY, TOPOLOGY_MANAGER_POLICY, CPUInfo, NumaInfo
from pyvolcano.api.quantity import to_milli
from pyvolcano.api.status import Code, Status
from pyvolcano.framework.incremental.state import CarryKey
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.session import EventHandler, Session

NAME = "numa-aware"
#: Volcano's ``api.PodMeta``: (pod uid, namespace, name)
PodMeta = tuple[str, str, str]
#: node name -> pod -> (task uid, job uid, resource -> ids): ``NodeInfo.UnassignedNumaPods`` of Volcano's cache
Unassigned = dict[str, dict[PodMeta, tuple[str, str, dict[str, frozenset[int]]]]]
#: ``Snapshot.plugin_memory`` key of the pods placed with NUMA resources that no Numatopology lists yet
UNASSIGNED: CarryKey[Unassigned] = CarryKey("numa-aware.UnassignedNumaPods")
#: ``volcano.sh/apis`` ``scheduling/v1beta1.NumaPolicyKey``
NUMA_POLICY = "volcano.sh/numa-topology-policy"
NONE, BEST_EFFORT, RESTRICTED, SINGLE = "none", "best-effort", "restricted", "single-numa-node"
MAX_SCORE = 100

#: a hint: (NUMA node ids or None for "any", preferred)
Hint = tuple[frozenset[int] | None, bool]


def _mask(ids: Iterable[int]) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


def qos_guaranteed(pod: dict[str, Any]) -> bool:
    """Kubernetes' ``GetPodQOS`` is Guaranteed: ``status.qosClass`` when set, else every container (init ones too)
    limits cpu and memory and the summed requests equal the summed limits."""
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "Guaranteed")
    spec = pod.get("spec") or {}
    requests: dict[str, float] = {}
    limits: dict[str, float] = {}
    guaranteed = True
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = (c or {}).get("resources") or {}
        for name, q in (res.get("requests") or {}).items():
            if name in ("cpu", "memory") and to_milli(q) > 0:
                requests[name] = requests.get(name, 0.0) + to_milli(q)
        found = set()
        for name, q in (res.get("limits") or {}).items():
            if name in ("cpu", "memory") and to_milli(q) > 0:
                found.add(name)
                limits[name] = limits.get(name, 0.0) + to_milli(q)
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return False
    if guaranteed and any(limits.get(k) != v for k, v in requests.items()):
        guaranteed = False
    return guaranteed and len(requests) == len(limits)


def guaranteed_cpus(container: dict[str, Any]) -> int | None:
    """``guaranteedCPUs``: the whole CPUs the container requests (0 for a fraction); None without a cpu request."""
    req = ((container.get("resources") or {}).get("requests") or {})
    if "cpu" not in req:
        return None
    milli = to_milli(req["cpu"])
    value = math.ceil(milli / 1000)
    return value if value * 1000 == milli else 0


class Topo:
    """Kubernetes' ``topology.CPUTopology`` / ``CPUDetails`` over one node's CPUs."""

    def __init__(self, cpus: dict[int, CPUInfo]) -> None:
        self.cpus = cpus
        self.n_cpus = len(cpus)
        self.n_cores = len({(c.socket, c.core) for c in cpus.values()})  # getPhysicalCoresNum
        self.n_sockets = len({c.socket for c in cpus.values()})

    def per_socket(self) -> int:
        return self.n_cpus // self.n_sockets if self.n_sockets else 0

    def per_core(self) -> int:
        return self.n_cpus // self.n_cores if self.n_cores else 0

    def in_numa(self, ids: Iterable[int], among: Iterable[int] | None = None) -> set[int]:
        want = set(ids)
        return {c for c in (self.cpus if among is None else among) if c in self.cpus and self.cpus[c].numa in want}


def _insertion_sort(items: list[int], less: Callable[[int, int], bool]) -> list[int]:
    """Go's ``insertionSortCmpFunc`` (what ``sort.Slice`` does on short slices)."""
    out = list(items)
    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out


def take_by_topology(topo: Topo, available: Iterable[int], n: int) -> frozenset[int] | None:
    """``cpu_assignment.go: takeByTopology`` (None: Volcano's error)."""
    full = topo.cpus
    details = {c: full[c] for c in available if c in full}
    result: set[int] = set()
    need = n

    def take(cpus: Iterable[int]) -> None:
        nonlocal need
        got = set(cpus)
        result.update(got)
        for c in got:
            details.pop(c, None)
        need -= len(got)

    if need < 1:
        return frozenset(result)
    if need > len(details):
        return None
    per_socket, per_core = topo.per_socket(), topo.per_core()
    if need >= per_socket:
        # freeSockets: Sockets().Intersection(CPUs()), socket ids that are also free CPU ids
        for s in sorted({d.socket for d in details.values()} & set(details)):
            take([c for c, d in details.items() if d.socket == s])
            if need < 1:
                return frozenset(result)
            if need < per_socket:
                break
    if need >= per_core:
        sockets = sorted({d.socket for d in details.values()})

        def cores_in(s: int) -> set[int]:  # CoresInSockets(s).Intersection(CPUs())
            return {d.core for d in details.values() if d.socket == s} & set(details)
        sockets = _insertion_sort(sockets, lambda i, j: len(cores_in(i)) < len(cores_in(j)) or i < j)
        core_ids = [c for s in sockets for c in sorted(cores_in(s))]
        for core in core_ids:
            take([c for c, d in details.items() if d.core == core])
            if need < 1:
                return frozenset(result)
            if need < per_core:
                break

    def socket_of(core: int) -> int:
        return full[min(c for c, d in full.items() if d.core == core)].socket

    def less(i: int, j: int) -> bool:
        si, sj = socket_of(i), socket_of(j)
        coi = sum(1 for c in result if full[c].socket == si)
        coj = sum(1 for c in result if full[c].socket == sj)
        fi = sum(1 for d in details.values() if d.socket == si)
        fj = sum(1 for d in details.values() if d.socket == sj)
        ci = sum(1 for d in details.values() if d.core == i)
        cj = sum(1 for d in details.values() if d.core == j)
        return coi > coj or fi < fj or ci < cj or si < sj or i < j
    cores = _insertion_sort(sorted({d.core for d in details.values()}), less)
    order = [c for core in cores for c in sorted(c for c, d in details.items() if d.core == core)]
    for c in order:
        if need >= 1:
            take([c])
        if need < 1:
            return frozenset(result)
    return None


def _reserved(info: NumaInfo, topo: Topo) -> frozenset[int]:
    if info.reserved_cpu is None:
        return frozenset()
    got = take_by_topology(topo, topo.cpus, math.ceil(info.reserved_cpu / 1000))
    return got if got is not None else frozenset()


def cpu_hints(container: dict[str, Any], info: NumaInfo, topo: Topo, sets: dict[str, frozenset[int]]) -> list[Hint] | None:
    """``GetTopologyHints``: None is "no preference"; an empty list is "no NUMA affinity can hold it"."""
    request = guaranteed_cpus(container)
    if not request:
        return None
    if "cpu" not in sets:
        return None
    available = sets["cpu"] - _reserved(info, topo)
    numa = info.numa_nodes()
    min_size = len(numa)
    found: list[frozenset[int]] = []
    for size in range(1, len(numa) + 1):
        for ids in combinations(numa, size):
            if len(topo.in_numa(ids)) >= request and size < min_size:
                min_size = size
            if len(topo.in_numa(ids, available)) >= request:
                found.append(frozenset(ids))
    return [(m, len(m) == min_size) for m in found]


def merge(numa: list[int], hints: list[Hint] | None, single: bool) -> Hint:
    """``filterProvidersHints`` and ``mergeFilteredHints`` for the one provider (the CPU manager); ``single``: the
    single-numa-node policy's ``filterSingleNumaHints`` first."""
    options: list[Hint] = [(None, True)] if hints is None else (hints or [(None, False)])
    if single:
        options = [h for h in options if h[1] and (h[0] is None or len(h[0]) == 1)]
    default = frozenset(numa)
    best: Hint = (default, False)
    for ids, preferred in options:
        merged = default if ids is None else default & ids
        if not merged:
            continue
        if preferred and not best[1]:
            best = (merged, preferred)
            continue
        if not preferred and best[1]:
            continue
        b = best[0] or frozenset()
        narrower = _mask(merged) < _mask(b) if len(merged) == len(b) else len(merged) < len(b)
        if narrower:
            best = (merged, preferred)
    return best


def allocate_cpus(container: dict[str, Any], hint: Hint, info: NumaInfo, topo: Topo,
                  sets: dict[str, frozenset[int]]) -> frozenset[int]:
    """``cpu_mng.go: Allocate``: CPUs in the hint's NUMA nodes first, then any; empty when they do not suffice."""
    request = guaranteed_cpus(container) or 0
    available = sets.get("cpu", frozenset()) - _reserved(info, topo)
    result: frozenset[int] = frozenset()
    if hint[0] is not None:
        aligned = topo.in_numa(hint[0], available)
        got = take_by_topology(topo, aligned, min(request, len(aligned)))
        if got is None:
            return frozenset()
        result = got
    rest = take_by_topology(topo, available - result, request - len(result))
    return frozenset() if rest is None else result | rest


def task_policy(task: TaskInfo) -> str:
    return str(((task.pod.get("metadata") or {}).get("annotations") or {}).get(NUMA_POLICY) or "")


@register_plugin
class NumaAware(Plugin):
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arguments.get_int("weight", 1)
        nodes = ssn.nodes
        infos: dict[int, NumaInfo] = {}
        for name, info in ssn.snapshot.numatopo.items():
            i = nodes.pos.get(name)
            if i is not None:
                infos[i] = info
        if not infos:  # no node has NUMA information: no Guaranteed pod with a policy fits anywhere
            numa_at = np.zeros(len(nodes.names), dtype=bool)
        else:
            numa_at = np.zeros(len(nodes.names), dtype=bool)
            numa_at[list(infos)] = True
        topos = {i: Topo(info.cpus) for i, info in infos.items()}
        #: per node, the resources' free ids (``nodeResSets``), less the CPUs kept for pods placed before
        free: dict[int, dict[str, frozenset[int]]] = {i: dict(info.allocatable) for i, info in infos.items()}
        self._unassigned = ssn.snapshot.plugin_memory.setdefault(UNASSIGNED, dict)
        self._refresh(ssn, infos, free)
        #: task uid -> (node it is placed on in this session, the task) (``taskBindNodeMap``, ``taskPodMetaMap``)
        self._placed: dict[str, tuple[int, TaskInfo]] = {}
        #: task uid -> node -> resource -> ids chosen by the predicate (``assignRes``)
        assigned: dict[str, dict[int, dict[str, frozenset[int]]]] = {}
        guaranteed: dict[str, bool] = {}

        def is_guaranteed(task: TaskInfo) -> bool:
            got = guaranteed.get(task.uid)
            if got is None:
                got = guaranteed[task.uid] = qos_guaranteed(task.pod)
            return got

        def by_policy(task: TaskInfo, i: int) -> tuple[bool, str | None]:
            """``filterNodeByPolicy``: (go on, the rejection or None)."""
            policy = task_policy(task)
            info = infos.get(i)
            if policy not in ("", NONE):
                if info is None:
                    return False, "numa info is empty"
                if info.policies.get(CPU_MANAGER_POLICY) != "static":
                    return False, "cpu manager policy isn't static"
                node_policy = info.policies.get(TOPOLOGY_MANAGER_POLICY, "")
                if policy != node_policy:
                    return False, f"task topology policy[{policy}] is different with node[{node_policy}]"
                if not free[i].get("cpu"):
                    return False, "cpu allocatable map is empty"
                return True, None
            if info is None or info.policies.get(CPU_MANAGER_POLICY) != "static":
                return False, None
            return info.policies.get(TOPOLOGY_MANAGER_POLICY, "") not in ("", NONE), None

        def predicate(task: TaskInfo, node: NodeInfo) -> Status | None:
            if not is_guaranteed(task):
                return None
            i = node.index
            go_on, why = by_policy(task, i)
            if not go_on:
                return None if why is None else Status(Code.ERROR, (why,), self.name)
            info, topo = infos[i], topos[i]
            sets = dict(free[i])
            node_policy = info.policies.get(TOPOLOGY_MANAGER_POLICY, "")
            numa = info.numa_nodes() if node_policy in (BEST_EFFORT, RESTRICTED, SINGLE, NONE) else []
            chosen: dict[str, frozenset[int]] = {}
            for c in (task.pod.get("spec") or {}).get("containers") or []:
                if node_policy in (BEST_EFFORT, RESTRICTED, SINGLE):
                    hint = merge(numa, cpu_hints(c, info, topo, sets), node_policy == SINGLE)
                    if node_policy != BEST_EFFORT and not hint[1]:
                        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                      (f"container {c.get('name')} cannot be assigned by numa",), self.name)
                else:  # policyNone (and an unknown policy): admit, no NUMA preference
                    hint = (None, False)
                got = allocate_cpus(c, hint, info, topo, sets)
                chosen["cpu"] = chosen.get("cpu", frozenset()) | got
                sets["cpu"] = sets.get("cpu", frozenset()) - got
            assigned.setdefault(task.uid, {})[i] = chosen
            return None

        def vector(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            if not is_guaranteed(task):
                return np.ones(len(idx), dtype=bool)
            out = np.ones(len(idx), dtype=bool) if task_policy(task) in ("", NONE) else numa_at[idx].copy()
            for k in np.nonzero(numa_at[idx])[0]:
                st = predicate(task, nodes.views[int(idx[k])])
                out[k] = st is None
            return out
        # reads the node's NUMA sets, which this session's placements change, and the pod's containers and QoS
        ssn.add_predicate(self.name, vector=vector, scalar=predicate, template_safe=False)

        def batch(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            mine = assigned.get(task.uid)
            if mine is None or task_policy(task) in ("", NONE):
                return np.zeros(len(idx))
            counts = np.array([len({infos[int(i)].cpus[c].numa for c in mine.get(int(i), {}).get("cpu", ())
                                    if c in infos[int(i)].cpus}) if int(i) in infos else 0 for i in idx],
                              dtype=np.int64)
            top = int(counts.max()) if len(counts) else 0
            if top == 0:
                return np.full(len(idx), float(MAX_SCORE * weight))
            return ((MAX_SCORE - MAX_SCORE * counts // top) * weight).astype(float)
        ssn.add_node_order(self.name, vector=batch, batch=True)

        def allocated(task: TaskInfo) -> None:
            i = nodes.pos.get(task.node_name)
            got = assigned.get(task.uid, {}).get(i) if i is not None else None
            if got is not None and i is not None:
                for res, ids in got.items():
                    if res in free[i]:
                        free[i][res] = free[i][res] - ids
                self._placed[task.uid] = (i, task)

        def deallocated(task: TaskInfo) -> None:
            i = nodes.pos.get(task.node_name)
            got = assigned.get(task.uid, {}).get(i) if i is not None else None
            if got is not None and i is not None:
                for res, ids in got.items():
                    if res in free[i]:
                        free[i][res] = free[i][res] | ids
                self._placed.pop(task.uid, None)
        ssn.add_event_handler(EventHandler(allocate=allocated, deallocate=deallocated))
        self._assigned = assigned

    def _refresh(self, ssn: Session, infos: dict[int, NumaInfo], free: dict[int, dict[str, frozenset[int]]]) -> None:
        """``RefreshNumaSchedulerInfoByCrd`` over the kept entries: drop those of deleted pods and gone nodes; per
        node with a Numatopology, drop them all when it lists every one, else take all of them from its free ids
        (a node without one keeps its entries: Volcano sets no NUMA info then)."""
        kept = self._unassigned
        if not kept:
            return
        pos, pods = ssn.nodes.pos, ssn.snapshot.pods
        for name in list(kept):
            i = pos.get(name)
            entries = kept[name]
            for meta in [m for m, (tid, _, _) in entries.items() if not _same_pod(pods.get(tid), m)]:
                del entries[meta]  # the pod is deleted
            if i is None or not entries:
                del kept[name]
                continue
            info = infos.get(i)
            if info is None:
                continue
            if all(_listed(info, m) for m in entries):
                del kept[name]
                continue
            for _, _, sets in entries.values():
                for res, ids in sets.items():
                    if res in free[i]:
                        free[i][res] = free[i][res] - ids

    def on_session_close(self, ssn: Session) -> None:
        """``OnSessionClose`` -> ``AddUnassignedNumaPods``: every task whose placement stands keeps its ids on its
        node (a pod's entry replaces its older one)."""
        placed = getattr(self, "_placed", None)
        if not placed:
            return
        names = ssn.nodes.names
        for uid, (i, task) in placed.items():
            sets = self._assigned.get(uid, {}).get(i)
            if sets is None:
                continue
            md = task.pod.get("metadata") or {}
            meta = (str(md.get("uid") or ""), str(md.get("namespace") or ""), str(md.get("name") or ""))
            self._unassigned.setdefault(names[i], {})[meta] = (uid, task.job, dict(sets))


def _same_pod(t: TaskInfo | None, meta: PodMeta) -> bool:
    """The pod of ``meta`` still exists: the cache has a pod of that name with the same uid (a pod deleted and made
    again under its name is another pod)."""
    return t is not None and str((t.pod.get("metadata") or {}).get("uid") or "") == meta[0]


def _listed(info: NumaInfo, meta: PodMeta) -> bool:
    """``NumatopoInfo.CheckNumaPodAssigned``: the Numatopology's ``podAllocations`` name the pod, by uid or by
    namespace and name."""
    uid, ns, name = meta
    return any(a_uid == uid or (a_name == name and a_ns == ns) for a_uid, a_ns, a_name in info.assigned)
