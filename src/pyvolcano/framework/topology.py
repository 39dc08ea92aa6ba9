"""The session's view of the network topology: HyperNodes, each job's constraint and its allocated hypernode.

Volcano's session opens with the HyperNode tree of the snapshot plus a virtual top above every root
(``framework/session.go: openSession``, ``addClusterTopHyperNode``), translates every job's ``highestTierName``
into a tier and turns soft mode into hard mode up to the virtual top (``adjustNetworkTopologySpec``,
``convertSoftToHardTopology``: "as close as possible" is "the lowest tier that holds the job, at worst the whole
cluster"), and recovers each job's allocated hypernode from the nodes its placed pods run on
(``recoverAllocatedHyperNode``: the lowest-tier hypernode holding all of them).  The same is done per sub-group
(``JobInfo.sub_jobs``: a PodGroup's ``subGroupPolicy``): each has the constraint of its policy (the default
sub-group the job's), a soft one capped by the job's tier, and its own allocated hypernode; the job's is the
lowest common ancestor of its constrained sub-groups'.  All of that is here, computed
once per session, plus the two extension points the ``network-topology-aware`` plugin fills
(``HyperNodeGradientForJobFn`` and ``HyperNodeOrderMapFn`` of ``framework/session_plugins.go``).

Everything is indexed like :class:`pyvolcano.api.hypernode.Topology` (hypernode indices, the top last), and
every per-node quantity comes from the session's node arrays through the membership matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.hypernode import NetworkTopology, Topology
from pyvolcano.api.job_info import JobInfo, SubJob, TaskInfo
from pyvolcano.api.types import ALLOCATED
from pyvolcano.framework.incremental.state import CarryKey

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

#: what a gradient is searched for (Volcano's ``api.SearchPurpose``)
#: (``SnapshotCarry.seq``, the uids of the jobs with a topology constraint) of the last session
_CONSTRAINED: CarryKey[tuple[int, set[str]]] = CarryKey("topology-constrained")
PURPOSE_ALLOCATE, PURPOSE_EVICT = "allocate", "evict"

#: ``fn(job, search_root, purpose, highest_tier, allocated_hypernode, min_resources) -> [[hypernode index]]``:
#: candidate hypernodes grouped by tier, lowest first
GradientFn = Callable[[JobInfo, int, str, int, int, np.ndarray], list[list[int]]]
#: ``fn(job, sub-group, [hypernode index]) -> {hypernode index: score}``
OrderFn = Callable[[JobInfo, SubJob, list[int]], dict[int, float]]


@dataclass
class SubTopology:
    """A sub-group's network topology constraint after the session's adjustment (Volcano's
    ``SubJobInfo.NetworkTopology``: the job's for the default sub-group, the policy's for the others).

    ``constrained``: it has one (``WithNetworkTopology``); ``hard``/``tier`` as in ``JobTopology``."""

    constrained: bool
    hard: bool
    tier: int | None
    #: the lowest hypernode holding the sub-group's placed pods (-1: none); ``SubJobInfo.AllocatedHyperNode``
    allocated: int = -1
    #: soft mode turned into hard mode (for explanations)
    soft: bool = False
#: ``fn(job, hypernode indices) -> scores``: what ``OrderFn`` gives each hypernode scored on its own for the job's
#: default sub-group (``fn(job, default, [h])[h]`` for every ``h``), in one vectorised call
AloneFn = Callable[[JobInfo, np.ndarray], np.ndarray]


@dataclass
class JobTopology:
    """A job's network topology constraint after the session's adjustment, for a job with a constraint of its
    own or on one of its sub-groups (Volcano's ``ContainsNetworkTopology``).

    ``tier`` is the highest tier allowed (None: no hard limit, e.g. an unknown ``highestTierName``); ``hard`` is
    Volcano's ``IsHardTopologyMode`` after soft mode was turned into hard mode up to the virtual top."""

    hard: bool
    tier: int | None
    #: the lowest hypernode holding the job's placed pods (-1: none yet); Volcano's ``JobInfo.AllocatedHyperNode``
    allocated: int = -1
    #: per sub-group id, its constraint and allocated hypernode (every sub-group of the job)
    subs: dict[str, SubTopology] = field(default_factory=dict)
    #: whether the job has a constraint of its own (``WithNetworkTopology``), not only on sub-groups
    own: bool = True
    #: the job's uid, which is also its default sub-group's id
    uid: str = ""

    @property
    def sub_allocated(self) -> int:
        """The default sub-group's allocated hypernode (-1 without one)."""
        sub = self.subs.get(self.uid)
        return sub.allocated if sub is not None else -1


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
    #: when a dict (``run_session(record_ties=True)``): per job, every hypernode that scored as well as the one
    #: chosen for it or one of its sub-groups (Volcano picks among them at random: ``selectBestHyperNodeForJob``
    #: ranges over a Go map, ``util.SelectBestHyperNodeAndScore`` shuffles), for the differential compare
    ties: dict[str, set[int]] | None = None
    #: per sub-group id (a job without policies: the job's uid) that gangpreempt or gangreclaim made room for: the
    #: hypernode it was pipelined in (Volcano's ``SubJobInfo.NominatedHyperNode``, which lives in the session's
    #: copy of the job only)
    nominated: dict[str, int] = field(default_factory=dict)
    #: per job with sub-groups or a hard constraint: allocate's worksheet (``actions/_hypernode.py: Worksheet``),
    #: built on the job's first turn of the session
    worksheets: dict[str, Any] = field(default_factory=dict)
    #: allocate's recorder (``recorder.go: subJobDecisions``): job -> job candidate -> sub-group -> hypernode
    decisions: dict[str, dict[int, dict[str, int]]] = field(default_factory=dict)
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
        # the jobs with a constraint of their own or on a sub-group: usually none, and then nothing below runs.
        # The snapshot's settled jobs are the last snapshot's clones, unchanged (``SchedulerCache.snapshot``): when
        # none of them had a constraint in the last session, only the others are looked at
        carry = ssn.snapshot.carry  # sessions with the incremental layer carry what they can
        look: Iterable[JobInfo] = ssn.jobs.values()
        if carry is not None and carry.settled and carry.seq >= 1:
            last = carry.state.values.get(_CONSTRAINED)
            settled = carry.settled  # ``set.isdisjoint(mapping)`` would walk every settled job: the few constrained
            if last is not None and last[0] == carry.seq - 1 and not any(uid in settled for uid in last[1]):
                look = carry.unsettled
        constrained = [job for job in look if (pg := job.podgroup) is not None and (
            pg.network_topology is not None
            or (pg.sub_group_policy and any(p.network_topology is not None for p in pg.sub_group_policy)))]
        if carry is not None:
            carry.state.values.put(_CONSTRAINED, (carry.seq, {job.uid for job in constrained}))
        if not constrained:
            return st
        top_tier = int(topo.tier[topo.top])
        names = topo.tier_names()

        def adjust(spec: NetworkTopology, soft_tier: int) -> tuple[bool, int | None]:
            """``translateHighestTierNameToAllowed`` (an unknown name: no hard limit) and
            ``convertSoftToHardTopology`` (soft: hard up to ``soft_tier``)."""
            if spec.mode == "soft":
                return True, soft_tier
            tier = spec.highest_tier
            if tier is None and spec.tier_name:
                tier = names.get(spec.tier_name)
            return spec.mode == "hard" and tier is not None, tier

        for job in constrained:
            pg = job.podgroup
            assert pg is not None
            hard, tier = adjust(pg.network_topology, top_tier) if pg.network_topology else (False, None)
            jt = JobTopology(hard, tier, own=pg.network_topology is not None, uid=job.uid)
            if not pg.sub_group_policy:  # one sub-group, all the pods, the job's constraint: no grouping needed
                jt.subs[job.uid] = SubTopology(True, hard, tier, soft=pg.network_topology is not None
                                               and pg.network_topology.mode == "soft")
                if st.ready:
                    jt.allocated = jt.subs[job.uid].allocated = st.recover(job.tasks_in(ALLOCATED))
                st.jobs[job.uid] = jt
                continue
            subs = job.sub_jobs()
            if pg.network_topology is None and not any(s.network_topology is not None for s in subs.values()):
                continue  # the policies with a constraint select no pod (ContainsNetworkTopology is false)
            # a sub-group's soft mode is capped by the job's tier (convertSoftToHardTopology's subJobMaxTier)
            sub_soft = tier if pg.network_topology is not None and tier is not None else top_tier
            for sid, sj in subs.items():
                nt = sj.network_topology
                s_hard, s_tier = adjust(nt, sub_soft) if nt is not None else (False, None)
                jt.subs[sid] = SubTopology(nt is not None, s_hard, s_tier, soft=nt is not None and nt.mode == "soft")
            if st.ready:
                st.recover_job(job, jt)
            st.jobs[job.uid] = jt
        return st

    # --- queries ---------------------------------------------------------------------------------------
    def of(self, job: JobInfo) -> JobTopology | None:
        return self.jobs.get(job.uid)

    def recover_job(self, job: JobInfo, jt: JobTopology) -> None:
        """``session.go: recoverAllocatedHyperNode``: each constrained sub-group's allocated hypernode from the
        nodes its allocated pods run on, then the job's as the lowest common ancestor of those."""
        subs = job.sub_jobs()
        lca = -1
        for sid, s in jt.subs.items():
            if s.constrained:
                s.allocated = self.recover([t for t in subs[sid].tasks.values() if t.status & ALLOCATED])
                lca = self.lca(lca, s.allocated)
        jt.allocated = lca

    def recover(self, tasks: list[TaskInfo]) -> int:
        """The lowest-tier hypernode holding every node the given (allocated) pods are on, or -1 without any
        (``session.go: recoverAllocatedHyperNode`` / ``removeInvalidAllocatedHyperNode``)."""
        pos = self.topo_node_positions(tasks)
        if pos is None:
            return -1
        return self.topo.lca_of_nodes(pos)

    def topo_node_positions(self, tasks: list[TaskInfo]) -> np.ndarray | None:
        """Node positions of the given pods, None without any; a pod on a node the session does not have makes
        Volcano's search find no hypernode: -1 then."""
        names = {t.node_name for t in tasks if t.node_name}
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

    def new_allocate(self) -> None:
        """A new allocate run: forget the worksheets and the recorder of the previous one."""
        self.worksheets.clear()
        self.decisions.clear()

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

    def order(self, job: JobInfo, hypernodes: list[int], sub: SubJob | None = None) -> dict[int, float]:
        """Every plugin's hypernode scores for placing sub-group ``sub`` (default: the job's default sub-group,
        i.e. the whole job when it has no ``subGroupPolicy``) added up; a hypernode no plugin scores gets 0
        (``Session.HyperNodeOrderMapFn`` and ``util.PrioritizeHyperNodes``)."""
        if sub is None:
            subs = job.sub_jobs()
            sub = subs.get(job.uid) or next(iter(subs.values()))
        total = dict.fromkeys(hypernodes, 0.0)
        for tier in self.order_fns:
            for _, fn in tier:
                for h, s in fn(job, sub, hypernodes).items():
                    if h in total:
                        total[h] += s
        return total

    def order_alone(self, job: JobInfo, hypernodes: list[int]) -> np.ndarray:
        """``order(job, [h])[h]`` for every ``h`` in ``hypernodes``: each hypernode's score when it is the only
        one scored (so no plugin's tie-break among several applies), with the same float operations in the same
        order; through a plugin's vectorised form when it registered one (``add_hypernode_order(alone=...)``).
        Allocate's ordered dry runs rank a gradient's candidates by it (``actions/_hypernode.py``)."""
        hs = np.array(hypernodes, dtype=np.int64)
        subs = job.sub_jobs()
        default = subs.get(job.uid) or next(iter(subs.values()))
        total = np.zeros(len(hs))
        for tier in self.order_fns:
            for plugin, fn in tier:
                alone = self.alone_fns.get(plugin)
                if alone is not None:
                    total = total + alone(job, hs)
                else:
                    total = total + np.array([fn(job, default, [h]).get(h, 0.0) for h in hypernodes],
                                              dtype=float)
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


def visited_first(st: SessionTopology, job: JobInfo, order: list[int], chosen: int) -> None:
    """With ``st.ties`` recording: ``chosen`` was the first hypernode of ``order`` that worked for ``job`` in an
    eviction search (gangpreempt/gangreclaim's domains, ``GetCandidateDomains``, or a sub-group's hypernode in a
    domain, ``BuildNominationPlanInDomain``).  Volcano lists the hypernodes of one tier in Go map order (the
    children sets of ``hyperNodeGradientFn``'s breadth-first walk), so any later hypernode of ``chosen``'s tier in
    ``order`` could have come first there and been taken instead; those before it failed here and would fail there
    too (a failed try leaves the session as it was).  They are remembered for ``job`` with ``chosen``."""
    if st.ties is None:
        return
    tier = st.topo.tier
    k = order.index(chosen)
    later = {h for h in order[k + 1:] if tier[h] == tier[chosen]}
    if later:
        st.ties.setdefault(job.uid, set()).update(later | {chosen})


def best_of(scores: dict[int, float], st: SessionTopology, job: JobInfo) -> int:
    """The first (breadth-first, name order) of the best-scored hypernodes; with ``st.ties`` recording, every
    hypernode scoring as well is remembered for ``job`` (Volcano picks among them at random)."""
    best = max(scores, key=lambda k: scores[k])
    if st.ties is not None:
        top = scores[best]
        tied = {h for h, v in scores.items() if abs(v - top) <= 1e-9 * max(1.0, abs(top))}
        if len(tied) > 1:
            st.ties.setdefault(job.uid, set()).update(tied)
    return best
