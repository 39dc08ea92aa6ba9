"""The session's view of the network topology: HyperNodes, each job's constraint and its allocated hypernode.

Volcano's session opens with the HyperNode tree of the snapshot plus a virtual top above every root
(``framework/session.go: openSession``, ``addClusterTopHyperNode``), translates every job's ``highestTierName``
into a tier and turns soft mode into hard mode up to the virtual top (``adjustNetworkTopologySpec``,
``convertSoftToHardTopology``: "as close as possible" is "the lowest tier that holds the job, at worst the whole
cluster"), and recovers each job's allocated hypernode from the nodes its placed pods run on
(``recoverAllocatedHyperNode``: the lowest-tier hypernode holding all of them).  All of that is here, computed
once per session, plus the two extension points the ``network-topology-aware`` plugin fills
(``HyperNodeGradientForJobFn`` and ``HyperNodeOrderMapFn`` of ``framework/session_plugins.go``).

Everything is indexed like :class:`pyvolcano.api.hypernode.Topology` (hypernode indices, the top last), and
every per-node quantity comes from the session's node arrays through the membership matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.hypernode import Topology
from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import ALLOCATED

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

#: what a gradient is searched for (Volcano's ``api.SearchPurpose``)
PURPOSE_ALLOCATE, PURPOSE_EVICT = "allocate", "evict"

#: ``fn(job, search_root, purpose, highest_tier, allocated_hypernode, min_resources) -> [[hypernode index]]``:
#: candidate hypernodes grouped by tier, lowest first
GradientFn = Callable[[JobInfo, int, str, int, int, np.ndarray], list[list[int]]]
#: ``fn(job, [hypernode index]) -> {hypernode index: score}``
OrderFn = Callable[[JobInfo, list[int]], dict[int, float]]
#: ``fn(job, hypernode indices) -> scores``: what ``OrderFn`` gives each hypernode scored on its own
#: (``fn(job, [h])[h]`` for every ``h``), in one vectorised call
AloneFn = Callable[[JobInfo, np.ndarray], np.ndarray]


@dataclass
class JobTopology:
    """A job's network topology constraint after the session's adjustment.

    ``tier`` is the highest tier allowed (None: no hard limit, e.g. an unknown ``highestTierName``); ``hard`` is
    Volcano's ``IsHardTopologyMode`` after soft mode was turned into hard mode up to the virtual top."""

    hard: bool
    tier: int | None
    #: the lowest hypernode holding the job's placed pods (-1: none yet); Volcano's ``JobInfo.AllocatedHyperNode``
    allocated: int = -1
    #: the same for the job's default sub-group (``SubJobInfo.AllocatedHyperNode``), which the sub-group search
    #: starts from; recovered alike, but moved by the sub-group's own choices
    sub_allocated: int = -1


@dataclass
class SessionTopology:
    """Per-session topology state (see module docstring)."""

    topo: Topology
    ready: bool
    #: every tier present, lowest first, the virtual top's included (Volcano's ``HyperNodesTiers``)
    tiers: list[int]
    node_pos: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, JobTopology] = field(default_factory=dict)
    #: per job being placed: the hypernode its pods so far sit under (Volcano's ``task.JobAllocatedHyperNode``,
    #: which node scores read); set by the allocate loop around each node choice
    placing: dict[str, int] = field(default_factory=dict)
    #: per job that found no placement because of its topology constraint: why, for ``cycle`` (not Volcano's
    #: condition message, which stays Volcano's)
    why: dict[str, str] = field(default_factory=dict)
    gradient_fns: list[list[tuple[str, GradientFn]]] = field(default_factory=list)
    order_fns: list[list[tuple[str, OrderFn]]] = field(default_factory=list)
    #: per registered order function (same plugin name), its vectorised form for hypernodes scored alone
    alone_fns: dict[str, AloneFn] = field(default_factory=dict)

    @classmethod
    def open(cls, ssn: Session) -> SessionTopology:
        topo = ssn.snapshot.topology
        if topo is None or topo.members.shape[1] != len(ssn.nodes):
            topo = Topology.build([], ssn.nodes.names, [s.labels for s in ssn.nodes.specs])
        n_tiers = max(1, len(ssn.conf.tiers))
        st = cls(topo, topo.ready, topo.tiers(), ssn.nodes.pos, gradient_fns=[[] for _ in range(n_tiers)],
                 order_fns=[[] for _ in range(n_tiers)])
        top_tier = int(topo.tier[topo.top])
        names = topo.tier_names()
        for job in ssn.jobs.values():
            spec = job.podgroup.network_topology if job.podgroup is not None else None
            if spec is None:
                continue
            tier = spec.highest_tier
            if tier is None and spec.tier_name:
                tier = names.get(spec.tier_name)  # unknown name: no hard limit (translateHighestTierNameToAllowed)
            hard = spec.mode == "hard"
            if spec.mode == "soft":
                hard, tier = True, top_tier
            jt = JobTopology(hard and tier is not None, tier)
            if st.ready:
                jt.allocated = jt.sub_allocated = st.recover(job)
            st.jobs[job.uid] = jt
        return st

    # --- queries ---------------------------------------------------------------------------------------
    def of(self, job: JobInfo) -> JobTopology | None:
        return self.jobs.get(job.uid)

    def recover(self, job: JobInfo) -> int:
        """The lowest-tier hypernode holding every node the job's allocated pods are on, or -1 without any
        (``session.go: recoverAllocatedHyperNode`` / ``removeInvalidAllocatedHyperNode``)."""
        pos = self.topo_node_positions(job)
        if pos is None:
            return -1
        return self.topo.lca_of_nodes(pos)

    def topo_node_positions(self, job: JobInfo) -> np.ndarray | None:
        """Node positions of the job's allocated pods (Volcano's ``AllocatedStatus``), None without any; a pod on
        a node the session does not have makes Volcano's search find no hypernode: -1 then."""
        names = {t.node_name for t in job.tasks_in(ALLOCATED) if t.node_name}
        if not names:
            return None
        index = self.node_pos
        if not all(n in index for n in names):
            return None
        return np.array(sorted(index[n] for n in names), dtype=np.int64)

    def lca(self, a: int, b: int) -> int:
        """Volcano's ``GetLCAHyperNode`` with "" as -1: the other one when either is unset."""
        if a < 0:
            return b
        if b < 0:
            return a
        cache: dict[tuple[int, int], int] = self.__dict__.setdefault("_lca", {})
        got = cache.get((a, b))
        if got is None:  # the tree is fixed for the session; allocate asks once per placement
            got = cache[a, b] = self.topo.lca(a, b)
        return got

    def leaf_of_nodes(self) -> np.ndarray:
        """Per node, the hypernode of the lowest tier holding it, or -1 (Volcano's ``FindHyperNodeForNode``,
        which looks only at the lowest tier)."""
        got = self.__dict__.get("_leaf")
        if got is None:
            topo = self.topo
            got = np.full(topo.members.shape[1], -1, dtype=np.int64)
            low = topo.at_tier(self.tiers[0]) if self.tiers else np.zeros(0, dtype=np.int64)
            for h in low[::-1].tolist():
                got[topo.members[h]] = h
            self.__dict__["_leaf"] = got
        return got

    def ancestor_matrix(self) -> np.ndarray:
        """``m[a, h]``: hypernode ``a`` is ``h`` or one of its ancestors."""
        got = self.__dict__.get("_anc")
        if got is None:
            n = len(self.topo.names)
            got = np.zeros((n, n), dtype=bool)
            for h in range(n):
                got[self.topo.ancestors(h), h] = True
            self.__dict__["_anc"] = got
        return got

    def lca_tiers(self, hs: np.ndarray, a: int) -> np.ndarray:
        """The tier of LCA(h, a) for every hypernode index in ``hs`` (all >= 0)."""
        anc = self.ancestor_matrix()
        common = anc[:, hs] & anc[:, a][:, None]
        tiers = np.where(common, self.topo.tier[:, None], np.iinfo(np.int64).max)
        return tiers.min(axis=0)

    def subtree(self, root: int) -> list[int]:
        """``root`` and every hypernode below it, breadth first (Volcano's gradient search order)."""
        out, k = [root], 0
        while k < len(out):
            out.extend(self.topo.children[out[k]])
            k += 1
        return out

    # --- extension points --------------------------------------------------------------------------------
    def gradient(self, job: JobInfo, root: int, tier: int, allocated: int, min_res: np.ndarray,
                 purpose: str = PURPOSE_ALLOCATE) -> list[list[int]]:
        """The first plugin's hypernode gradients under ``root`` for a job (or sub-group) in hard mode up to
        ``tier``; without such a plugin, ``root`` alone (``Session.HyperNodeGradientForJobFn`` /
        ``HyperNodeGradientForSubJobFn``)."""
        for fns in self.gradient_fns:
            for _, fn in fns:
                return fn(job, root, purpose, tier, allocated, min_res)
        return [[root]]

    def order(self, job: JobInfo, hypernodes: list[int]) -> dict[int, float]:
        """Every plugin's hypernode scores added up; a hypernode no plugin scores gets 0
        (``Session.HyperNodeOrderMapFn`` and ``util.PrioritizeHyperNodes``)."""
        total = dict.fromkeys(hypernodes, 0.0)
        for tier in self.order_fns:
            for _, fn in tier:
                for h, s in fn(job, hypernodes).items():
                    if h in total:
                        total[h] += s
        return total

    def order_alone(self, job: JobInfo, hypernodes: list[int]) -> np.ndarray:
        """``order(job, [h])[h]`` for every ``h`` in ``hypernodes``: each hypernode's score when it is the only
        one scored (so no plugin's tie-break among several applies), with the same float operations in the same
        order; through a plugin's vectorised form when it registered one (``add_hypernode_order(alone=...)``).
        Allocate's ordered dry runs rank a gradient's candidates by it (``actions/_hypernode.py``)."""
        hs = np.array(hypernodes, dtype=np.int64)
        total = np.zeros(len(hs))
        for tier in self.order_fns:
            for plugin, fn in tier:
                alone = self.alone_fns.get(plugin)
                if alone is not None:
                    total = total + alone(job, hs)
                else:
                    total = total + np.array([fn(job, [h]).get(h, 0.0) for h in hypernodes], dtype=float)
        return total


def add_hypernode_gradient(ssn: Session, plugin: str, fn: GradientFn) -> None:
    """Register a hypernode gradient function, switched by the plugin's ``enabledHyperNodeGradient``."""
    ti = ssn._tier(plugin, "enabledHyperNodeGradient")
    if ti is not None:
        ssn.topology.gradient_fns[ti].append((plugin, fn))


def add_hypernode_order(ssn: Session, plugin: str, fn: OrderFn, alone: AloneFn | None = None) -> None:
    """Register a hypernode score function, switched by the plugin's ``enabledHyperNodeOrder``; ``alone``: its
    vectorised form for hypernodes scored one by one (see ``SessionTopology.order_alone``)."""
    ti = ssn._tier(plugin, "enabledHyperNodeOrder")
    if ti is not None:
        ssn.topology.order_fns[ti].append((plugin, fn))
        if alone is not None:
            ssn.topology.alone_fns[plugin] = alone

