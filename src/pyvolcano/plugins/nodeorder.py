"""nodeorder: Kubernetes 1.36's node scores, weighted and added, as Volcano master's nodeorder plugin computes them.

Volcano (``pkg/scheduler/plugins/nodeorder/nodeorder.go``) runs the vendored Kubernetes score plugins in its
BatchNodeOrderFn over the candidate nodes of one decision; each plugin's whole-number score (0..100) is
multiplied by its integer weight (``nodescore.CalculatePluginScore``) and the products are added.  The scores
(``k8s.io/kubernetes/pkg/scheduler/framework/plugins``, v1.36):

- ``leastrequested`` (NodeResourcesFit, LeastAllocated; weight 1): per resource (cpu, memory; weight 50 each)
  ``(allocatable - requested) * 100 / allocatable`` in integers (0 when requested exceeds allocatable), then the
  weighted mean, again an integer division.  "requested" is the node's pods plus this one, counted with
  Kubernetes' non-zero defaults (a container without a cpu / memory request counts 100m / 200Mi).
- ``mostrequested`` (NodeResourcesFit, MostAllocated; weight 0): ``min(requested, allocatable) * 100 /
  allocatable`` per resource, integer mean over cpu and memory; same "requested".
- ``balancedresource`` (NodeResourcesBalancedAllocation; weight 1): over cpu, memory and ``nvidia.com/gpu`` (the
  GPU only when the pod asks for it), each fraction requested / allocatable capped at 1, the balance is
  ``int((1 - std) * 100)`` (std of two fractions is half their difference).  Kubernetes 1.36 scores the *change*
  the pod makes: ``50 + (50 + balance with the pod - balance without it) / 2``.  Actual requests, no defaults;
  a pod requesting none of them is not scored (PreScore Skip).
- ``nodeaffinity`` (NodeAffinity; weight 2): the sum of the weights of the matching preferred terms, normalised
  over the compared nodes so the best has 100 (``DefaultNormalizeScore``).
- ``tainttoleration`` (TaintToleration; weight 3): the number of PreferNoSchedule taints the pod does not
  tolerate, normalised reversed over the compared nodes (100 for the fewest; 100 everywhere when none has any).

Resources "on the node" are those of the pods in Volcano's session nodeMap: the node's pods when the session
opened, plus pods allocated or pipelined in the session and minus pods evicted, the last two only when the
``predicates`` plugin is configured (its event handlers are what update that map in Volcano).
Inter-pod affinity, topology spread and image locality scores are registered by their own modules.
"""

from __future__ import annotations

import math

import numpy as np

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.k8s_requests import GPU
from pyvolcano.api.node_info import NodeInfo
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.scores import MAX_NODE_SCORE as K8S_MAX_NODE_SCORE
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.plugins._k8s import LABELS, LabelIndex, preferred_score, untolerated
from pyvolcano.plugins._podaffinity import register_scores, reserve_fails

MAX_NODE_SCORE = float(K8S_MAX_NODE_SCORE)  # float: the scores are computed in NumPy floats
HALF = MAX_NODE_SCORE / 2


#: ``K8sNodeRequests``' gather index per column set (read-only)
_COLS: dict[tuple[int, ...], np.ndarray] = {}


class K8sNodeRequests:
    """Per node, what Kubernetes' ``NodeInfo`` in Volcano's session nodeMap holds: ``Requested`` (cpu, memory,
    GPU; columns of ``req``) and ``NonZeroRequested`` (cpu, memory; ``nz``), kept up to date by allocate /
    deallocate events when ``track`` (Volcano's predicates plugin updates the map; without it the map stays as
    the session opened).

    Built from the node accounting (``NodeArrays.used``, every pod on the node) corrected by the few pods whose
    Kubernetes view differs (``TaskInfo.k8s_extra``), found on the nodes the snapshot lists for them
    (``NodeArrays.extra_at``): no per-pod work for the usual pod, not even a look.

    Built when first read, not at session open: most sessions score no node (a backlog that waits places nothing),
    and those need none of it.  What it is built from is taken as the session opens (a copy of the accounting, the
    corrections), and an allocate / deallocate event before the first read builds it first, so that it is, read
    after read and event after event, the map built at open and kept by the events."""

    def __init__(self, ssn: Session, track: bool) -> None:
        nodes, pos = ssn.nodes, ssn.res.pos
        self.ssn = ssn
        self.dims = [pos["cpu"], pos["memory"]] + ([pos[GPU]] if GPU in pos else [])
        self._where: dict[str, int] = {}
        self._gone: set[str] = set()
        self._vec: dict[object, np.ndarray] = {}
        #: the node accounting as the session opens (the session's placements change ``nodes.used`` in place)
        self._used = nodes.used.copy()
        # only the nodes listed as holding such a pod (``NodeArrays.extra_at``, kept by the cache), in node order
        maps, listed = nodes.tasks, nodes.extra_at
        self._fix = [] if listed is not None and not listed else [
            (i, t.k8s_extra) for i in nodes.special_nodes(listed) for t in maps[i].values() if t.k8s_extra]
        self._both: np.ndarray | None = None
        if track:
            ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    def _build(self) -> np.ndarray:
        """One row per node: Requested cpu, memory, GPU, then NonZeroRequested cpu, memory (one NumPy update per
        event); ``req`` and ``nz`` are views of it."""
        used, n, k = self._used, self._used.shape[0], len(self.dims)
        if k == 3:  # one gather of the five columns (the node accounting's copies, exact), by an index array
            cols = tuple(self.dims + self.dims[:2])  # made once per column set: a list is converted at every take
            at = _COLS.get(cols)
            if at is None:
                at = _COLS[cols] = np.array(cols, dtype=np.intp)
                at.flags.writeable = False
            both = used.take(at, axis=1)
        else:  # no GPU resource: Requested GPU stays 0
            both = np.zeros((n, 5))
            both[:, :k] = used[:, self.dims]
            both[:, 3:] = used[:, self.dims[:2]]
        fix = self._fix
        if fix:
            at = np.fromiter((i for i, _ in fix), np.int64, len(fix))
            np.add.at(both, at, np.array([e for _, e in fix]))
        self._both, self._req, self._nz = both, both[:, :3], both[:, 3:]
        del self._used, self._fix
        return both

    @property
    def both(self) -> np.ndarray:
        both = self._both
        return both if both is not None else self._build()

    @property
    def req(self) -> np.ndarray:
        """Requested cpu, memory, GPU per node (a view of ``both``)."""
        if self._both is None:
            self._build()
        return self._req

    @property
    def nz(self) -> np.ndarray:
        """NonZeroRequested cpu, memory per node (a view of ``both``)."""
        if self._both is None:
            self._build()
        return self._nz

    def pod_req(self, task: TaskInfo) -> list[float]:
        """The pod's (cpu, memory, GPU) request as Kubernetes' PodRequests counts it (init containers and
        overhead included: pyvolcano's ``init_resreq``)."""
        r = task.init_resreq
        d = self.dims
        return [float(r[d[0]]), float(r[d[1]]), float(r[d[2]]) if len(d) > 2 else 0.0]

    def pod_nz(self, task: TaskInfo) -> tuple[float, float]:
        """The pod's (cpu, memory) with Kubernetes' defaults for containers stating none."""
        r, d, e = task.resreq, self.dims, task.k8s_extra
        if e is None:
            return float(r[d[0]]), float(r[d[1]])
        return float(r[d[0]]) + e[3], float(r[d[1]]) + e[4]

    def pod_key(self, task: TaskInfo) -> object:
        """Pods of one template see the same requests unless Kubernetes sees them differently."""
        return task.template_key if task.k8s_extra is None else task.uid

    def _add(self, i: int, task: TaskInfo, sign: float) -> None:
        key = self.pod_key(task)
        v = self._vec.get(key)
        if v is None:
            v = self._vec[key] = np.array([*self.pod_req(task), *self.pod_nz(task)])
        both = self.both
        if sign > 0:
            both[i] += v
        else:
            both[i] -= v

    def _on_allocate(self, task: TaskInfo) -> None:
        i = self.ssn.nodes.pos.get(task.node_name)
        if i is None:
            return
        if reserve_fails(task):  # an undone eviction stays out of the view (``reserve_fails``)
            self._gone.add(task.uid)
            return
        self._where[task.uid] = i
        self._add(i, task, 1.0)

    def _on_deallocate(self, task: TaskInfo) -> None:
        if task.uid in self._gone:  # not in the view: Volcano's RemovePod finds nothing to remove
            return
        i = self._where.pop(task.uid, None)
        if i is None:
            i = self.ssn.nodes.pos.get(task.node_name)
        if i is not None:
            self._add(i, task, -1.0)


# --- the score formulas, vector (many nodes) and per node, doing the same float operations in the same order ---
def least_allocated(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """NodeResourcesFit LeastAllocated over cpu and memory (columns), weights 50/50; resources a node does not
    have (allocatable 0) are left out of the mean."""
    num = np.zeros(len(alloc))
    wsum = np.zeros(len(alloc))
    for d in (0, 1):
        a, r = alloc[:, d], req[:, d]
        has = a > 0
        per = np.where(r > a, 0.0, np.floor_divide((a - r) * MAX_NODE_SCORE, np.where(has, a, 1.0)))
        num += np.where(has, per * 50, 0.0)
        wsum += np.where(has, 50.0, 0.0)
    return np.where(wsum > 0, np.floor_divide(num, np.where(wsum > 0, wsum, 1.0)), 0.0)


def least_allocated1(alloc: list[float], req: list[float]) -> float:
    num = wsum = 0.0
    for a, r in zip(alloc, req, strict=True):
        if a > 0:
            num += (0.0 if r > a else ((a - r) * MAX_NODE_SCORE) // a) * 50
            wsum += 50.0
    return num // wsum if wsum > 0 else 0.0


def most_allocated(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """NodeResourcesFit MostAllocated over cpu and memory, weights 1/1."""
    num = np.zeros(len(alloc))
    cnt = np.zeros(len(alloc))
    for d in (0, 1):
        a = alloc[:, d]
        has = a > 0
        per = np.floor_divide(np.minimum(req[:, d], a) * MAX_NODE_SCORE, np.where(has, a, 1.0))
        num += np.where(has, per, 0.0)
        cnt += has
    return np.where(cnt > 0, np.floor_divide(num, np.where(cnt > 0, cnt, 1.0)), 0.0)


def most_allocated1(alloc: list[float], req: list[float]) -> float:
    num = cnt = 0.0
    for a, r in zip(alloc, req, strict=True):
        if a > 0:
            num += (min(r, a) * MAX_NODE_SCORE) // a
            cnt += 1
    return num // cnt if cnt > 0 else 0.0


def balance(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """Kubernetes' balancedResourceScore: ``int((1 - std(fractions)) * 100)`` over the resources the node has
    (2 or 3 columns)."""
    k = alloc.shape[1]
    has = alloc > 0
    f = np.where(has, np.minimum(req / np.where(has, alloc, 1.0), 1.0), 0.0)
    cnt = has.sum(axis=1)
    if k == 2:
        first, second = f[:, 0], f[:, 1]
    else:
        first = np.where(has[:, 0], f[:, 0], f[:, 1])
        second = np.where(has[:, 0] & has[:, 1], f[:, 1], f[:, 2])
    std = np.where(cnt == 2, np.abs((first - second) / 2), 0.0)
    if k == 3:
        total = f[:, 0] + f[:, 1] + f[:, 2]
        mean = total / 3
        dev = (f[:, 0] - mean) * (f[:, 0] - mean) + (f[:, 1] - mean) * (f[:, 1] - mean)
        dev = dev + (f[:, 2] - mean) * (f[:, 2] - mean)
        std = np.where(cnt == 3, np.sqrt(dev / 3), std)
    return np.floor((1 - std) * MAX_NODE_SCORE)


def balance1(alloc: list[float], req: list[float]) -> float:
    fr = [min(r / a, 1.0) for a, r in zip(alloc, req, strict=True) if a > 0]
    std = 0.0
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) == 3:
        mean = (fr[0] + fr[1] + fr[2]) / 3
        dev = (fr[0] - mean) * (fr[0] - mean) + (fr[1] - mean) * (fr[1] - mean)
        dev = dev + (fr[2] - mean) * (fr[2] - mean)
        std = math.sqrt(dev / 3)
    return float(math.floor((1 - std) * MAX_NODE_SCORE))


def balance_change(with_pod: np.ndarray, without: np.ndarray) -> np.ndarray:
    """Kubernetes 1.36 BalancedAllocation: ``MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2`` in
    integers (Go's division truncates toward zero)."""
    return HALF + np.trunc((HALF + with_pod - without) / 2)


@register_plugin
class NodeOrder(Plugin):
    name = "nodeorder"
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        a = self.arguments
        least = a.get_int("leastrequested.weight", 1)
        most = a.get_int("mostrequested.weight", 0)
        balanced = a.get_int("balancedresource.weight", 1)
        affinity = a.get_int("nodeaffinity.weight", 2)
        taint = a.get_int("tainttoleration.weight", 3)
        li = ssn.state.read_or_init(LABELS, lambda: LabelIndex(ssn.nodes))
        if least or most or balanced:
            self._resource_scores(ssn, least, most, balanced)
        if affinity:
            ssn.add_node_order(self.name, vector=lambda t, idx: preferred_score(li, t.pod, idx), static=True,
                               normalize="max", weight=affinity, carry=("nodeaffinity",))
        if taint:
            self._taint_score(ssn, li, taint)
        # Kubernetes' InterPodAffinity, PodTopologySpread and ImageLocality scores (plugins/_podaffinity.py)
        register_scores(ssn, self.name, a.get_float("podaffinity.weight", 2),
                        a.get_float("podtopologyspread.weight", 2), a.get_float("imagelocality.weight", 1))

    def _resource_scores(self, ssn: Session, least: int, most: int, balanced: int) -> None:
        """LeastAllocated, MostAllocated and BalancedAllocation: per node, from the node's requests."""
        kr = K8sNodeRequests(ssn, track="predicates" in ssn.conf.registration.options)  # the conf's names
        alloc_all = ssn.nodes.allocatable
        dims = kr.dims

        # node facts from the specs alone, kept per node set (``NodeStatic.derived``) rather than per session:
        # allocatable cpu and memory as an array and as two lists (the per-node form), and whether every node has
        # both (the usual case: fewer NumPy calls, the same float operations)
        derived = ssn.nodes.static.derived
        facts = derived.get(f"nodeorder-alloc-{dims[0]}-{dims[1]}")
        if facts is None:
            cm = np.ascontiguousarray(alloc_all[:, dims[:2]])
            cm.flags.writeable = False
            facts = derived[f"nodeorder-alloc-{dims[0]}-{dims[1]}"] = (
                cm, bool((cm > 0).all()), alloc_all[:, dims[0]].tolist(), alloc_all[:, dims[1]].tolist())
        alloc_cm, cm_ok, col_c, col_m = facts

        def scores(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            s = np.zeros(len(idx))
            c, m, p, k = prep(task)
            a = alloc_cm[idx]
            if least or most:
                req = kr.nz[idx] + (c, m)
                if least and cm_ok:
                    per = np.floor_divide((a - req) * MAX_NODE_SCORE, a)
                    per[req > a] = 0.0
                    s += least * np.floor_divide(per[:, 0] * 50 + per[:, 1] * 50, 100.0)
                elif least:
                    s += least * least_allocated(a, req)
                if most:
                    s += most * most_allocated(a, req)
            if balanced and k == 2 and cm_ok:
                before = kr.req[idx, :2]
                fa = np.minimum((before + np.array(p[:2])) / a, 1.0)
                fb = np.minimum(before / a, 1.0)
                w = np.floor((1 - np.abs((fa[:, 0] - fa[:, 1]) / 2)) * MAX_NODE_SCORE)
                wo = np.floor((1 - np.abs((fb[:, 0] - fb[:, 1]) / 2)) * MAX_NODE_SCORE)
                s += balanced * balance_change(w, wo)
            elif balanced and k:
                alloc = alloc_all[idx][:, dims[:k]]
                before = kr.req[idx][:, :k]
                after = before + np.array(p[:k])
                s += balanced * balance_change(balance(alloc, after), balance(alloc, before))
            return s

        # The per-node form: the same float operations as the vector form, inlined for the usual case (a node
        # with cpu and memory, a pod without GPUs) since it runs for every node a placement changes.
        prepared: dict[object, tuple[float, float, list[float], int]] = {}

        def prep(task: TaskInfo) -> tuple[float, float, list[float], int]:
            """(cpu and memory with Kubernetes' defaults, the actual request, balance columns: 0 = no score)."""
            key = kr.pod_key(task)
            got = prepared.get(key)
            if got is None:
                c, m = kr.pod_nz(task)
                p = kr.pod_req(task)
                got = prepared[key] = (c, m, p, (3 if p[2] else 2) if (p[0] or p[1] or p[2]) else 0)
            return got

        def score(task: TaskInfo, node: NodeInfo) -> float:
            i = node.index
            c, m, p, k = prep(task)
            a0, a1 = col_c[i], col_m[i]
            simple = a0 > 0 and a1 > 0
            row = kr.both[i].tolist()  # Requested cpu, memory, GPU, NonZeroRequested cpu, memory
            s = 0.0
            if least or most:
                r0, r1 = row[3] + c, row[4] + m
                if least:
                    if simple:
                        l0 = 0.0 if r0 > a0 else ((a0 - r0) * MAX_NODE_SCORE) // a0
                        l1 = 0.0 if r1 > a1 else ((a1 - r1) * MAX_NODE_SCORE) // a1
                        s += least * ((l0 * 50 + l1 * 50) // 100.0)
                    else:
                        s += least * least_allocated1([a0, a1], [r0, r1])
                if most:
                    s += most * most_allocated1([a0, a1], [r0, r1])
            if balanced and k:
                if k == 2 and simple:
                    b0, b1 = row[0], row[1]
                    w = math.floor((1 - abs((min((b0 + p[0]) / a0, 1.0) - min((b1 + p[1]) / a1, 1.0)) / 2))
                                   * MAX_NODE_SCORE)
                    wo = math.floor((1 - abs((min(b0 / a0, 1.0) - min(b1 / a1, 1.0)) / 2)) * MAX_NODE_SCORE)
                else:
                    alloc = [float(alloc_all[i, d]) for d in dims[:k]]
                    before = row[:k]
                    w = balance1(alloc, [b + q for b, q in zip(before, p[:k], strict=True)])
                    wo = balance1(alloc, before)
                s += balanced * (HALF + math.trunc((HALF + w - wo) / 2))
            return s

        # carried between sessions: a function of the template and the node's row of ``kr.both``; a pod Kubernetes
        # sees differently (``k8s_extra``) is scored afresh, as its requests are not its template's
        ssn.add_node_order(self.name, vector=scores, scalar=score, carry=("resources", least, most, balanced, *dims),
                           carry_task=lambda t: t.k8s_extra is None, carry_rows=lambda: kr.both)

    def _taint_score(self, ssn: Session, li: LabelIndex, weight: int) -> None:
        """TaintToleration: raw = untolerated PreferNoSchedule taints, normalised reversed per decision."""
        nodes = ssn.nodes

        def count(task: TaskInfo, i: int) -> float:
            return float(len(untolerated(task.pod, nodes.specs[i].taints, ("PreferNoSchedule",))))

        def counts(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            out = np.zeros(len(idx))
            if len(li.tainted):
                for j in np.nonzero(np.isin(idx, li.tainted))[0]:
                    out[j] = count(task, int(idx[j]))
            return out

        ssn.add_node_order(self.name, vector=counts, scalar=lambda t, node: count(t, node.index), static=True,
                           normalize="max-reverse", weight=weight, carry=("tainttoleration",))
