"""network-topology-aware (``pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go``).

Three things, all over the session's HyperNode tree (``framework/topology.py``):

* **Hypernode gradients** (``hyperNodeGradientFn``): for a job (or the job's default sub-group) with a hard tier,
  the hypernodes at or below the search root whose tier is at most the allowed one and whose idle or future idle
  resources, *as they were when the session opened*, cover the minimum asked (the PodGroup's ``minResources``
  for the job, the pending pods' requests for the sub-group), grouped by tier, lowest first.  Once the job has
  an allocated hypernode the search root is its highest ancestor still within the tier, and resources are not
  checked.  Allocate tries the gradients in order (``actions/_hypernode.py``).
* **Hypernode scores** (``HyperNodeOrderFn``): hypernode-level bin-packing of the sub-group's pods (all of them,
  placed or not): per weighted resource (used + request) / allocatable, 0 if over; ties at the top score get
  the share of the sub-group's pods already under the hypernode.  Times 100 times ``weight``.
* **Node scores** (``batchNodeOrderFn``): for a pod of a job with a topology constraint, by the tier of the
  lowest common ancestor of the node's lowest-tier hypernode and the hypernode the job's pods sit under so far
  ((max tier - LCA tier) / (max tier - min tier), 1 in that very hypernode, 0 outside any), ties going to the
  hypernode holding more of the job's pods; for other pods (``hypernode.binpack.normal-pod.enable``, default
  true) the hypernode bin-packing score of the pod at every tier, weighted ``fading ** (tier - 1)``.

Arguments (Volcano's names): ``weight`` (1), ``hypernode.binpack.cpu`` (1), ``hypernode.binpack.memory`` (1),
``hypernode.binpack.resources`` (extra names, comma separated) with ``hypernode.binpack.resources.<name>`` (1),
``hypernode.binpack.normal-pod.enable`` (true), ``hypernode.binpack.normal-pod.fading`` (0.8),
``hypernode.gradient.evict.max-hypernodes`` (8).  Negative weights mean 1, a negative fading 0.8.
Flags: ``enabledHyperNodeOrder``, ``enabledHyperNodeGradient``, ``enableNodeOrder``.

Hypernode amounts come from the membership matrix times the node arrays (``Topology.sums``) once per session;
only ``used`` is kept up to date, by the allocate/deallocate events, as Volcano's ``hyperNodeResourceCache``.
"""

from __future__ import annotations

import math

import numpy as np

from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.resource import EPS
from pyvolcano.framework.incremental.contracts import Contract
from pyvolcano.framework.plugin import Plugin
from pyvolcano.framework.registry import register_plugin
from pyvolcano.framework.scores import MAX_NODE_SCORE
from pyvolcano.framework.session import EventHandler, Session
from pyvolcano.framework.topology import PURPOSE_EVICT, add_hypernode_gradient, add_hypernode_order

NAME = "network-topology-aware"


@register_plugin
class NetworkTopologyAware(Plugin):
    name = NAME
    #: it refuses nothing the blocked-job memo keeps (docs/extending.md, "Contracts"): its gradients and hypernode
    #: scores are asked only for jobs that take the hypernode path (a networkTopology constraint or sub-groups,
    #: ``actions/_hypernode.py``), whose turns the memo never records, nor are they parked or blocked; for every
    #: other pod it gives a node score from node usage summed per hypernode, and no memo rule reads scores (one pod
    #: fits somewhere or not; a gang is keyed on node usage).  The HyperNodes themselves move the cache's epochs.
    contracts = frozenset({Contract.FINGERPRINTED})

    def on_session_open(self, ssn: Session) -> None:
        a, res = self.arguments, ssn.res

        def weight_of(key: str) -> float:
            w = a.get_int(key, 1)
            return float(w) if w >= 0 else 1.0  # Volcano: a negative weight means the default

        self.global_weight = weight_of("weight")
        weights = np.zeros(res.size)
        #: resources that have a weight (even 0): Volcano's getBinPackWeight "ok"
        weighted = np.zeros(res.size, dtype=bool)
        for name, key in (("cpu", "hypernode.binpack.cpu"), ("memory", "hypernode.binpack.memory")):
            weights[res.pos[name]], weighted[res.pos[name]] = weight_of(key), True
        for name in (n.strip() for n in a.get_str("hypernode.binpack.resources", "").split(",")):
            if name and name in res.pos:
                weights[res.pos[name]], weighted[res.pos[name]] = weight_of(f"hypernode.binpack.resources.{name}"), True
        self.weights, self.weighted = weights, weighted
        self.normal_enable = a.get_bool("hypernode.binpack.normal-pod.enable", True)
        fading = a.get_float("hypernode.binpack.normal-pod.fading", 0.8)
        self.fading = fading if fading >= 0 else 0.8
        self.max_evict = a.get_int("hypernode.gradient.evict.max-hypernodes", 8)
        if self.max_evict <= 0:
            self.max_evict = 8

        st = ssn.topology
        topo, nodes = st.topo, ssn.nodes
        self.ssn, self.st = ssn, st
        self.min_tier, self.max_tier = (st.tiers[0], st.tiers[-1]) if st.tiers else (0, 0)
        self.alloc = topo.sums(nodes.allocatable)
        self.used = topo.sums(nodes.used)
        self.idle0 = topo.sums(nodes.idle)
        self.future0 = topo.sums(nodes.future)
        #: every resource counts in the gradient's "idle covers the request", the pod count too: a task's request
        #: carries pods=1 and a node's idle its free pod slots (Volcano's ``Resource.LessEqual`` over scalars)
        self.dims = np.arange(res.size)
        members = topo.members
        above: dict[int, np.ndarray] = {}  # per node index: the hypernodes holding it (a column of members)

        def holding(i: int) -> np.ndarray:
            got = above.get(i)
            if got is None:
                got = above[i] = np.flatnonzero(members[:, i])
            return got

        where: dict[str, int] = {}  # the session clears a task's node before its deallocate event
        #: per sub-group whose tie-break share was asked: its tasks on a node (uid -> node index) and how many of
        #: them each hypernode holds, kept as tasks get or lose a node (``_task_share``)
        self.on_nodes: dict[str, tuple[dict[str, int], np.ndarray]] = {}

        def counted(task: TaskInfo) -> tuple[dict[str, int], np.ndarray] | None:
            """The counts of ``task``'s sub-group, when its share was asked this session."""
            if not self.on_nodes:
                return None
            job = ssn.jobs.get(task.job)
            sid = job.sub_id(task.uid) if job is not None else None
            return self.on_nodes.get(sid) if sid is not None else None
        self.holding = holding

        def allocate(task: TaskInfo) -> None:
            i = nodes.pos.get(task.node_name)
            if i is not None:
                where[task.uid] = i
                self.used[holding(i)] += task.resreq
                got = counted(task)
                if got is not None and task.uid not in got[0]:  # placed (an eviction undone keeps its node)
                    got[0][task.uid] = i
                    got[1][holding(i)] += 1

        def deallocate(task: TaskInfo) -> None:
            i = where.pop(task.uid, None)
            if i is None:
                i = nodes.pos.get(task.node_name)
            if i is not None:
                self.used[holding(i)] -= task.resreq
            got = counted(task)
            if got is not None and not task.node_name:  # unplaced (an evicted task keeps its node)
                k = got[0].pop(task.uid, None)
                if k is not None:
                    got[1][holding(k)] -= 1

        ssn.add_event_handler(EventHandler(allocate, deallocate))
        add_hypernode_gradient(ssn, NAME, self.gradient)
        add_hypernode_order(ssn, NAME, self.hypernode_order, self.hypernode_order_alone)
        ssn.add_node_order(NAME, vector=self.node_scores, batch=True)

    # --- gradients ---------------------------------------------------------------------------------------
    def gradient(self, job: JobInfo, root: int, purpose: str, tier: int, allocated: int,
                 min_res: np.ndarray) -> list[list[int]]:
        """Volcano's ``hyperNodeGradientFn`` (see module docstring); [] when the job's allocated hypernode is above
        the tier or outside ``root`` (Volcano logs the error and returns no gradient)."""
        st = self.st
        search = self._search_root(root, tier, allocated)
        if search < 0:
            return []
        cand = np.array(st.subtree(search), dtype=np.int64)
        ok = st.topo.tier[cand] <= tier
        if allocated < 0:
            d = self.dims
            need = min_res[d] - EPS
            if purpose == PURPOSE_EVICT:
                ok &= (self.alloc[cand][:, d] > need).all(axis=1)
            else:
                ok &= (self.idle0[cand][:, d] > need).all(axis=1) | (self.future0[cand][:, d] > need).all(axis=1)
        by_tier: dict[int, list[int]] = {}
        for h in cand[ok].tolist():
            by_tier.setdefault(int(st.topo.tier[h]), []).append(h)
        out = [by_tier[t] for t in sorted(by_tier)]
        if purpose == PURPOSE_EVICT:  # reverseAndCapEvictionGradients: widest first, at most max_evict hypernodes
            left, capped = self.max_evict, []
            for g in reversed(out):
                if left == 0:
                    break
                capped.append(g if len(g) <= left else g[len(g) - left:])
                left -= min(left, len(g))
            out = capped
        return out

    def _search_root(self, root: int, tier: int, allocated: int) -> int:
        """``getSearchRoot``: ``root`` intersected with the highest ancestor of ``allocated`` within ``tier``."""
        if allocated < 0:
            return root
        topo = self.st.topo
        highest = -1
        for h in topo.ancestors(allocated):
            if topo.tier[h] > tier:
                break
            highest = h
        if highest < 0:
            return -1
        lca = topo.lca(root, highest)
        if lca == highest:
            return root
        if lca == root:
            return highest
        return -1

    # --- hypernode scores --------------------------------------------------------------------------------
    def _binpack(self, request: np.ndarray, hs: np.ndarray) -> np.ndarray:
        """Hypernode-level bin-packing of ``request`` on each hypernode in ``hs``: the weighted mean over the
        requested weighted resources of (used + request) / allocatable, 0 where any would exceed allocatable."""
        dims = np.flatnonzero(self.weighted & (request >= EPS))
        if not len(dims):
            return np.zeros(len(hs))
        used = self.used[hs][:, dims] + request[dims]
        alloc = self.alloc[hs][:, dims]
        over = (used > alloc).any(axis=1)
        w = self.weights[dims]
        total_w = float(w.sum())
        if total_w <= 0:
            return np.zeros(len(hs))
        ratio = used / np.where(alloc > 0, alloc, 1.0)
        return np.where(over, 0.0, (ratio * w).sum(axis=1) / total_w)

    def _task_share(self, sub: SubJob, hs: np.ndarray) -> np.ndarray:
        """Share of the sub-group's pods on nodes under each hypernode (``scoreWithTaskNum``): its tasks with a
        node are counted per hypernode once, from its tasks, then kept by the allocate/deallocate events."""
        total = len(sub.tasks)
        if not total:
            return np.ones(len(hs))
        got = self.on_nodes.get(sub.uid)
        if got is None:
            pos = self.ssn.nodes.pos
            on = {t.uid: pos[t.node_name] for t in sub.tasks.values() if t.node_name in pos}
            counts = np.zeros(len(self.st.topo.names), dtype=np.int64)
            for i in on.values():
                counts[self.holding(i)] += 1
            got = self.on_nodes[sub.uid] = (on, counts)
        if not got[0]:
            return np.zeros(len(hs))
        return got[1][hs] / total

    def _request(self, tasks: dict[str, TaskInfo]) -> np.ndarray:
        request = np.zeros(len(self.weights))
        for t in tasks.values():
            request += t.resreq
        return request

    def hypernode_order(self, job: JobInfo, sub: SubJob, hypernodes: list[int]) -> dict[int, float]:
        """``HyperNodeOrderFn`` for placing sub-group ``sub`` (``getSubJobHyperNodeBinPackingScore``: all of its
        pods, placed or not; ties to the share of its pods already under the hypernode)."""
        hs = np.array(hypernodes, dtype=np.int64)
        score = self._binpack(self._request(sub.tasks), hs)
        best = np.flatnonzero(score == score.max()) if len(hs) else hs
        if len(best) > 1:
            score = score.copy()
            score[best] += self._task_share(sub, hs[best])
        scaled = MAX_NODE_SCORE * self.global_weight * score
        return {int(h): float(s) for h, s in zip(hs.tolist(), scaled.tolist(), strict=True)}

    def hypernode_order_alone(self, job: JobInfo, hs: np.ndarray) -> np.ndarray:
        """``hypernode_order(job, [h])[h]`` for every ``h`` at once: a hypernode scored alone gets no tie-break
        share, and ``_binpack`` computes each row independently of the others.  For the job's default sub-group
        (all its tasks): ``ordered_trials`` asks it only of jobs without a ``subGroupPolicy``."""
        return MAX_NODE_SCORE * self.global_weight * self._binpack(self._request(job.tasks), hs)

    # --- node scores -------------------------------------------------------------------------------------
    def node_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return np.zeros(len(idx))
        jt = self.st.of(job)
        sid = job.sub_id(task.uid) if jt is not None else None
        sub_t = jt.subs.get(sid) if jt is not None and sid is not None else None
        if sid is not None and sub_t is not None and sub_t.constrained:  # WithNetworkTopology of its sub-group
            score = self._network_aware(task, job, job.sub_jobs()[sid], idx)
        else:
            score = self._normal(task, idx)
        return MAX_NODE_SCORE * self.global_weight * score

    def _tier_score(self, tiers: np.ndarray) -> np.ndarray:
        lo, hi = self.min_tier, self.max_tier
        if lo == hi:
            return np.ones(len(tiers))
        inside = (tiers >= lo) & (tiers <= hi)
        return np.where(inside, (hi - tiers) / (hi - lo), 0.0)

    def _network_aware(self, task: TaskInfo, job: JobInfo, sub: SubJob, idx: np.ndarray) -> np.ndarray:
        """``batchNodeOrderFnForNetworkAwarePods``: 0 everywhere until the job's pods sit under a hypernode; ties
        to the hypernode holding more of the sub-group's pods.
        Each node's score is its lowest-tier hypernode's, looked up in a per-session table for the job's
        hypernode (``_tier_table``); the tie-break share is computed only for the hypernodes of the top nodes."""
        st = self.st
        allocated = st.placing.get(job.uid, -1)
        if allocated < 0:
            return np.zeros(len(idx))
        leaf = st.leaf_of_nodes()[idx]
        score = self._tier_table(allocated)[leaf]  # a node under no hypernode (-1) reads the table's last entry, 0
        best = np.flatnonzero(score == score.max())
        if len(best) > 1:
            top = leaf[best]
            first = int(top[0])
            if (top == first).all():  # the top nodes under one hypernode (a leaf candidate): one share
                if first >= 0:
                    score[best] += self._task_share(sub, top[:1])[0]
                return score
            uniq, inv = np.unique(top, return_inverse=True)
            share = np.zeros(len(uniq))
            has = uniq >= 0
            if has.any():
                share[has] = self._task_share(sub, uniq[has])
            score[best] += share[inv]
        return score

    def _tier_table(self, allocated: int) -> np.ndarray:
        """Per hypernode ``h`` (and a last entry 0 for nodes under none), the node score by the tier of
        LCA(h, allocated): 1 for ``allocated`` itself; computed once per session and allocated hypernode, element by
        element as the per-call form would (every entry is independent of the others)."""
        tables: dict[int, np.ndarray] = self.__dict__.setdefault("_tier_tables", {})
        got = tables.get(allocated)
        if got is None:
            hs = np.arange(len(self.st.topo.names), dtype=np.int64)
            got = np.zeros(len(hs) + 1)
            got[:-1] = self._tier_score(self.st.lca_tiers(hs, allocated).astype(float))
            got[allocated] = 1.0
            tables[allocated] = got
        return got

    def _normal(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """``batchNodeOrderFnForNormalPods``: hypernode bin-packing of the pod at every tier, fading upwards."""
        if not self.normal_enable:
            return np.zeros(len(idx))
        per_tier = self._tier_nodes()
        hs = np.arange(len(self.st.topo.names))
        hn_score = self._binpack_pod(task.resreq, hs)
        total_w, acc = 0.0, np.zeros(len(idx))
        for tier in range(self.min_tier, self.max_tier + 1):
            try:
                w = math.pow(self.fading, tier - 1)
            except (ValueError, ZeroDivisionError):
                w = math.inf
            total_w += w
            owner = per_tier.get(tier)
            if owner is None:
                acc += w
                continue
            h = owner[idx]
            acc += w * np.where(h >= 0, hn_score[np.maximum(h, 0)], 1.0)
        if total_w <= 0:
            return np.zeros(len(idx))
        return acc / total_w

    def _binpack_pod(self, request: np.ndarray, hs: np.ndarray) -> np.ndarray:
        """``getPodHyperNodeBinPackingScore`` for every hypernode: as ``_binpack`` (0 when the pod asks for no
        weighted resource)."""
        return self._binpack(request, hs)

    def _tier_nodes(self) -> dict[int, np.ndarray]:
        """Per tier, each node's hypernode of that tier (-1: none), from the membership matrix, once."""
        got: dict[int, np.ndarray] | None = self.__dict__.get("_per_tier")
        if got is None:
            topo = self.st.topo
            got = {}
            for h in range(len(topo.names) - 1, -1, -1):
                t = int(topo.tier[h])
                arr = got.setdefault(t, np.full(topo.members.shape[1], -1, dtype=np.int64))
                arr[topo.members[h]] = h
            self.__dict__["_per_tier"] = got
        return got
