"""Network topology in the simulator: a cluster's HyperNodes, workloads with ``networkTopology``, and how spread
each job ran.

* **The cluster's topology**: HyperNode manifests from a file (``--hypernodes``, every one through the scheduler's
  validated boundary ``api/hypernode.py: parse_hypernode``, the tree checked with ``Topology.build`` over the
  simulated nodes) or a compact spec (``--topology leaf=16,spine=8``: 16 nodes per tier-1 hypernode, 8 tier-1
  hypernodes per tier-2 one, and so on up) that :func:`tree_hypernodes` turns into HyperNode manifests.
* **Constraints on the workload**: :func:`parse_constraint` reads ``none``, ``hard:TIER``, ``hard:TIERNAME`` or
  ``soft``, and :func:`with_constraint` gives a share of a workload's gangs that ``spec.networkTopology`` (the vcjob
  field Volcano's job controller copies to the PodGroup: ``pkg/controllers/job/job_controller_actions.go:
  createOrUpdatePodGroup``).  The gangs chosen depend only on the seed and the jobs, so runs that differ only in
  the constraint replay exactly the same jobs.
* **Spread**: :class:`SpreadLog` follows every job's pods on their nodes (bind until deletion or success) and
  records the tier of the lowest common ancestor (LCA) of their nodes in the HyperNode tree, as Volcano's session
  computes it (``framework/session.go: recoverAllocatedHyperNode``, ``api/hyper_node_info.go: GetLCAHyperNode``):
  when the gang first started (what its wait bought) and the widest it ever was.  Tier 0 means every pod on one
  node; the virtual top's tier (highest real tier + 1) means "above every real hypernode".
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.hypernode import HyperNode, Topology, parse_hypernode
from pyvolcano.api.models import ascii_int
from pyvolcano.errors import ManifestError, UserError

#: tiers a compact spec may describe (Volcano's deployments use 2 or 3)
MAX_TIERS = 8
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
API_VERSION = "topology.volcano.sh/v1alpha1"


# --- the cluster's topology ---------------------------------------------------------------------------------
def parse_topology_spec(spec: str) -> list[tuple[str, int]]:
    """``leaf=16,spine=8``: (tier name, fan-out) from tier 1 up.  The first count is nodes per tier-1 hypernode,
    each next one the hypernodes of the tier below per hypernode of its tier.  UserError naming the part when a
    part is not ``NAME=COUNT``, a count is not an integer >= 1, a name is not a lowercase DNS label or repeats, or
    there are more than ``MAX_TIERS`` tiers."""
    where = f"--topology {spec!r}"
    parts = [p.strip() for p in spec.split(",")]
    if not spec.strip() or any(not p for p in parts):
        raise UserError(f"{where}: expected NAME=COUNT,... from the lowest tier up, e.g. leaf=16,spine=8 "
                        "(16 nodes per leaf, 8 leaves per spine)")
    out: list[tuple[str, int]] = []
    for i, part in enumerate(parts):
        name, eq, count = part.partition("=")
        name, count = name.strip(), count.strip()
        what = "nodes per hypernode" if i == 0 else f"tier-{i} hypernodes per hypernode"
        if not eq or not name:
            raise UserError(f"{where}: {part!r}: expected NAME=COUNT (tier {i + 1}: {what})")
        if not _NAME.fullmatch(name) or len(name) > 50:
            raise UserError(f"{where}: {part!r}: the tier name must be a lowercase DNS label such as leaf or spine")
        if any(n == name for n, _ in out):
            raise UserError(f"{where}: tier name {name!r} is used twice")
        try:
            n = ascii_int(count)  # ASCII digits: int("٣") is 3 in Python
        except ValueError:
            raise UserError(f"{where}: {part!r}: {count!r} is not an integer ({what})") from None
        if n < 1:
            raise UserError(f"{where}: {part!r}: the count must be at least 1 ({what})")
        out.append((name, n))
    if len(out) > MAX_TIERS:
        raise UserError(f"{where}: {len(out)} tiers, at most {MAX_TIERS}")
    return out


def _hypernode(name: str, tier: int, tier_name: str | None, kind: str, members: Iterable[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier,
                            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members]}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": API_VERSION, "kind": "HyperNode", "metadata": {"name": name}, "spec": spec}


def tree_hypernodes(node_names: Sequence[str], nodes_per_leaf: int, *per_parent: int,
                    tier_names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """HyperNode manifests of a regular tree over ``node_names`` (in their order): tier 1 groups every
    ``nodes_per_leaf`` consecutive nodes, tier 2 every ``per_parent[0]`` consecutive tier-1 hypernodes, tier 3 every
    ``per_parent[1]`` tier-2 ones, and so on; the last group of a tier may be smaller.  Hypernodes are named
    ``NAME-I`` with the tier's name (``tier_names``, default ``tier1``, ``tier2``, ...), which is also its
    ``tierName``; node members by exact name, hypernode members by exact name (Volcano's HyperNode CRD).

    ``tree_hypernodes(names, 16, 8)``: leaves of 16 nodes, one spine per 8 leaves (the issue's 3-tier cluster
    counting the virtual top)."""
    fanouts = (nodes_per_leaf, *per_parent)
    if any(isinstance(f, bool) or not isinstance(f, int) or f < 1 for f in fanouts):
        raise ValueError(f"fan-outs must be integers >= 1, got {fanouts}")
    names = list(tier_names) if tier_names is not None else [f"tier{t + 1}" for t in range(len(fanouts))]
    if len(names) != len(fanouts):
        raise ValueError(f"{len(names)} tier names for {len(fanouts)} tiers")
    out: list[dict[str, Any]] = []
    below, kind = list(node_names), "Node"
    for tier, (fan, tname) in enumerate(zip(fanouts, names, strict=True), start=1):
        groups = [below[i:i + fan] for i in range(0, len(below), fan)]
        here = [f"{tname}-{i}" for i in range(len(groups))]
        out += [_hypernode(n, tier, tname, kind, g) for n, g in zip(here, groups, strict=True)]
        below, kind = here, "HyperNode"
    return out


def spec_hypernodes(spec: str, node_names: Sequence[str]) -> list[dict[str, Any]]:
    """The HyperNodes of a compact ``--topology`` spec over the cluster's nodes."""
    tiers = parse_topology_spec(spec)
    return tree_hypernodes(node_names, *(n for _, n in tiers), tier_names=[t for t, _ in tiers])


def load_hypernodes(path: str, nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The HyperNode objects of a YAML file (other kinds are ignored, so the cluster's Node file may hold them
    too), each validated by ``parse_hypernode``; the tree is built over ``nodes`` and must be ready (no hypernode
    with two parents, no cycle), or Volcano would keep every job with a constraint waiting.  UserError naming the
    HyperNode and field otherwise."""
    from pyvolcano.cache.manifests import load_objects

    objs = [o for o in load_objects(path) if isinstance(o, dict) and o.get("kind") == "HyperNode"]
    if not objs:
        raise UserError(f"--hypernodes {path}: no HyperNode objects")
    seen: set[str] = set()
    for o in objs:
        try:
            hn = parse_hypernode(o)
        except ManifestError as exc:
            raise UserError(f"--hypernodes {path}: {exc}") from None
        if hn.name in seen:
            raise UserError(f"--hypernodes {path}: HyperNode {hn.name} appears twice")
        seen.add(hn.name)
    build_topology(objs, nodes, f"--hypernodes {path}")
    return objs


def build_topology(hypernodes: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                   where: str = "topology") -> Topology:
    """The tree of these HyperNode manifests over the cluster's Node manifests, as the scheduler's cache builds it
    (``Topology.build``); UserError when it is not ready."""
    hns: list[HyperNode] = []
    for o in hypernodes:
        try:
            hns.append(parse_hypernode(o))
        except ManifestError as exc:
            raise UserError(f"{where}: {exc}") from None
    names = [str(n["metadata"]["name"]) for n in nodes]
    labels = [dict((n.get("metadata") or {}).get("labels") or {}) for n in nodes]
    topo = Topology.build(hns, names, labels)
    if not topo.ready:
        raise UserError(f"{where}: the HyperNode tree is not usable (Volcano would keep every job with a "
                        f"network topology constraint waiting): {'; '.join(topo.problems)}")
    return topo


def describe_topology(topo: Topology) -> str:
    """One line for the report's settings: hypernodes per tier, and nodes under none."""
    parts = []
    for t in topo.tiers()[:-1] if len(topo.names) > 1 else []:
        idx = topo.at_tier(t)
        sizes = topo.members[idx].sum(axis=1)
        tname = next((topo.tier_name[i] for i in idx if topo.tier_name[i]), None)
        label = f"tier {t}" + (f" ({tname})" if tname else "")
        span = f"{int(sizes.min())}" if sizes.min() == sizes.max() else f"{int(sizes.min())}-{int(sizes.max())}"
        parts.append(f"{label}: {len(idx)} hypernode{'s' if len(idx) != 1 else ''} of {span} nodes")
    real = topo.members[:-1].any(axis=0) if len(topo.names) > 1 else np.zeros(topo.members.shape[1], dtype=bool)
    loose = int((~real).sum())
    return "; ".join(parts) + (f"; {loose} nodes under no hypernode" if loose else "") if parts else "none"


# --- constraints on the workload ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Constraint:
    """A ``--network-topology`` value: ``none`` (``mode`` None), ``hard:TIER``, ``hard:TIERNAME`` or ``soft``."""

    mode: str | None
    tier: int | None = None
    tier_name: str | None = None

    def spec(self) -> dict[str, Any] | None:
        """The vcjob ``spec.networkTopology`` it sets (None: none)."""
        if self.mode is None:
            return None
        out: dict[str, Any] = {"mode": self.mode}
        if self.tier is not None:
            out["highestTierAllowed"] = self.tier
        elif self.tier_name:
            out["highestTierName"] = self.tier_name
        return out

    def __str__(self) -> str:
        if self.mode is None:
            return "none"
        return self.mode + (f":{self.tier}" if self.tier is not None else f":{self.tier_name}" if self.tier_name
                            else "")


def parse_constraint(arg: str, where: str | None = None) -> Constraint:
    """``none``, ``hard:1`` (highestTierAllowed), ``hard:leaf`` (highestTierName) or ``soft`` (Volcano turns soft
    mode into "the lowest tier that holds the job", ignoring any tier: ``adjustNetworkTopologySpec``, so a tier
    after ``soft`` is refused rather than silently ignored).  UserError otherwise, starting with ``where``
    (default ``--network-topology 'ARG'``)."""
    a = arg.strip()
    where = where or f"--network-topology {arg!r}"
    if a == "none":
        return Constraint(None)
    if a == "soft":
        return Constraint("soft")
    mode, _, tier = a.partition(":")
    if mode == "soft":
        raise UserError(f"{where}: soft mode takes no tier (Volcano places a soft job as close "
                        "as it can, whatever the tier); use soft, or hard:TIER")
    if mode != "hard" or not tier.strip():
        raise UserError(f"{where}: expected none, soft, hard:TIER (e.g. hard:1) or "
                        "hard:TIERNAME (e.g. hard:leaf)")
    tier = tier.strip()
    if tier.lstrip("-").isascii() and tier.lstrip("-").isdigit():  # "٣" is a tier name, not tier 3
        if int(tier) < 0 or int(tier) > 1_000:
            raise UserError(f"{where}: the tier must be between 0 and 1000")
        return Constraint("hard", int(tier))
    if len(tier) > 253:
        raise UserError(f"{where}: a tier name has at most 253 characters")
    return Constraint("hard", tier_name=tier)


def gang_size(job: Mapping[str, Any]) -> int:
    """A vcjob's minAvailable (all its pods when unset); the Job passed the typed boundary when it was read
    (``sim/workload.py: from_manifests``, ``api/job_model.py``), so its counts are integers (perhaps written as
    ``"3"``), read here without checking again."""
    spec = job.get("spec") or {}
    tasks = spec.get("tasks") or []
    total = sum(int(t.get("replicas", 1)) for t in tasks)
    ma = spec.get("minAvailable")
    return int(ma) if ma is not None else total


def constrained_gangs(jobs: Sequence[tuple[float, dict[str, Any]]], fraction: float, seed: int) -> set[str]:
    """``namespace/name`` of the gangs (minAvailable > 1) that get the constraint: each with probability
    ``fraction``, drawn in job order from a generator of its own (seeded by ``seed``), so it does not change the
    workload's other draws and every constraint of a comparison picks the same gangs."""
    rnd = random.Random(f"network-topology/{seed}")
    out = set()
    for _, job in jobs:
        if gang_size(job) <= 1:
            continue
        if rnd.random() < fraction:
            md = job.get("metadata") or {}
            out.add(f"{md.get('namespace') or 'default'}/{md.get('name')}")
    return out


def with_constraint(jobs: Sequence[tuple[float, dict[str, Any]]], constraint: Constraint, fraction: float = 1.0,
                    seed: int = 0) -> list[tuple[float, dict[str, Any]]]:
    """The jobs (copied) with ``spec.networkTopology`` set to ``constraint`` on the gangs
    :func:`constrained_gangs` picks and removed from every other job: the option decides every job's constraint,
    whatever the workload said (``none`` removes them all)."""
    import copy

    if not 0.0 <= fraction <= 1.0:
        raise UserError(f"--network-topology-fraction {fraction:g}: expected a share between 0 and 1")
    chosen = constrained_gangs(jobs, fraction, seed) if constraint.mode is not None else set()
    spec = constraint.spec()
    out = []
    for t, job in jobs:
        j = copy.deepcopy(job)
        md = j.get("metadata") or {}
        js = j.setdefault("spec", {})
        js.pop("networkTopology", None)
        if spec is not None and f"{md.get('namespace') or 'default'}/{md.get('name')}" in chosen:
            js["networkTopology"] = dict(spec)
        out.append((t, j))
    return out


#: pods a partition may hold (the simulator's largest Job)
MAX_PARTITION_SIZE = 100_000


@dataclass(frozen=True)
class Partitions:
    """A ``--partitions SIZE[:CONSTRAINT]`` value: gangs' tasks cut into partitions of ``size`` pods, each under
    ``constraint`` (``none``: sub-groups without a constraint of their own)."""

    size: int
    constraint: Constraint = Constraint(None)

    def policy(self, replicas: int) -> dict[str, Any]:
        """The vcjob task ``partitionPolicy`` for a task of ``replicas`` pods (a multiple of the size): every
        partition needed (``minPartitions`` = ``totalPartitions``, so the task's ``minAvailable`` stays its
        replicas, as Volcano's webhook requires: ``validatePartitionPolicy``)."""
        n = replicas // self.size
        out: dict[str, Any] = {"totalPartitions": n, "partitionSize": self.size, "minPartitions": n}
        spec = self.constraint.spec()
        if spec is not None:
            out["networkTopology"] = spec
        return out

    def __str__(self) -> str:
        return f"{self.size}" + (f":{self.constraint}" if self.constraint.mode is not None else "")


def parse_partitions(arg: str) -> Partitions:
    """``SIZE`` or ``SIZE:CONSTRAINT`` (``4``, ``4:hard:leaf``, ``8:hard:1``, ``4:soft``; the constraint as
    ``--network-topology`` takes it).  UserError naming the value otherwise."""
    where = f"--partitions {arg!r}"
    size, _, rest = arg.strip().partition(":")
    try:
        n = ascii_int(size)
    except ValueError:
        raise UserError(f"{where}: expected SIZE[:CONSTRAINT], e.g. 4 or 4:hard:leaf (SIZE: pods per partition, "
                        f"an integer; {size.strip()!r} is not)") from None
    if not 1 <= n <= MAX_PARTITION_SIZE:
        raise UserError(f"{where}: the partition size must be between 1 and {MAX_PARTITION_SIZE}, got {n}")
    if _ and not rest.strip():
        raise UserError(f"{where}: expected a constraint after the colon: none, soft, hard:TIER or hard:TIERNAME")
    return Partitions(n, parse_constraint(rest, where) if rest.strip() else Constraint(None))


def with_partitions(jobs: Sequence[tuple[float, dict[str, Any]]], parts: Partitions) \
        -> tuple[list[tuple[float, dict[str, Any]]], int]:
    """The jobs (copied) with a task ``partitionPolicy`` (Volcano's vcjob field, which the job controller turns
    into the PodGroup's ``subGroupPolicy`` and the pods' ``volcano.sh/partition-id`` labels) on every task of every
    full gang (minAvailable > 1 and equal to all its pods) that has none yet, no ``minAvailable`` of its own below
    its replicas, and replicas a multiple of ``parts.size`` of at least two partitions; and how many jobs got one.
    Other jobs and tasks are left as they are (a manifest's own partitionPolicy is kept)."""
    import copy

    out, changed = [], 0
    for t, job in jobs:
        spec = job.get("spec") or {}
        tasks = spec.get("tasks") or []
        total = sum(int(x.get("replicas", 1)) for x in tasks)
        gang = gang_size(job)
        fit = [i for i, x in enumerate(tasks)
               if gang > 1 and gang == total and "partitionPolicy" not in x
               and (x.get("minAvailable") is None or int(x["minAvailable"]) == int(x.get("replicas", 1)))
               and int(x.get("replicas", 1)) % parts.size == 0 and int(x.get("replicas", 1)) >= 2 * parts.size]
        if not fit:
            out.append((t, job))
            continue
        j = copy.deepcopy(job)
        for i in fit:
            task = j["spec"]["tasks"][i]
            task["partitionPolicy"] = parts.policy(int(task.get("replicas", 1)))
        out.append((t, j))
        changed += 1
    return out, changed


def constraint_label(job: Mapping[str, Any]) -> str:
    """How a vcjob's ``spec.networkTopology`` reads in the report: ``none``, ``soft``, ``hard:1`` or
    ``hard:leaf``."""
    return _nt_label((job.get("spec") or {}).get("networkTopology"))


def partition_labels(job: Mapping[str, Any]) -> dict[str, str]:
    """Per task of a vcjob with a ``partitionPolicy`` (named as the job controller names it), its partitions'
    ``networkTopology`` as :func:`constraint_label` reads it; empty for a job without sub-groups."""
    tasks = (job.get("spec") or {}).get("tasks") or []
    return {str(t.get("name") or f"task{i}"): _nt_label(t["partitionPolicy"].get("networkTopology"))
            for i, t in enumerate(tasks) if t.get("partitionPolicy") is not None}


def _nt_label(nt: Mapping[str, Any] | None) -> str:
    if nt is None:
        return "none"
    mode = str(nt.get("mode") or "hard")
    if mode == "soft":
        return "soft"
    if nt.get("highestTierAllowed") is not None:
        return f"{mode}:{nt['highestTierAllowed']}"
    if nt.get("highestTierName"):
        return f"{mode}:{nt['highestTierName']}"
    return mode


# --- spread -------------------------------------------------------------------------------------------------
@dataclass
class _Group:
    """The live pods of one job or one sub-group, by pod, on their node positions, and the boolean vector of the
    hypernodes holding all of their nodes (None: stale, rebuilt at the next bind from the live nodes)."""

    live: dict[str, int] = field(default_factory=dict)
    holds: np.ndarray | None = None

    def add(self, topo: Topology, pod: str, n: int) -> None:
        self.live[pod] = n
        if self.holds is not None:
            self.holds &= topo.members[:, n]
        elif len(self.live) == 1:
            self.holds = topo.members[:, n].copy()

    def remove(self, pod: str) -> bool:
        """Drop the pod; whether it was live."""
        if self.live.pop(pod, None) is None:
            return False
        self.holds = None
        return True

    def tier(self, topo: Topology) -> int | None:
        """The LCA tier of the live pods' nodes (0: one node; None without pods)."""
        if not self.live:
            return None
        nodes = set(self.live.values())
        if len(nodes) == 1:
            return 0
        if self.holds is None:
            self.holds = np.asarray(topo.members[:, sorted(nodes)].all(axis=1))
        return int(topo.tier[np.flatnonzero(self.holds)].min())


def sub_group_of(labels: Mapping[str, Any] | None) -> str | None:
    """The sub-group of a vcjob pod: ``TASK/PARTITION`` for a pod of a task with a ``partitionPolicy`` (labels
    ``volcano.sh/task-spec`` and ``volcano.sh/partition-id``, which the job controller sets and the PodGroup's
    ``subGroupPolicy`` groups by: ``controllers/vcjob.py: sub_group_policy``); None for any other pod (the job's
    default sub-group)."""
    if not labels:
        return None
    part = labels.get("volcano.sh/partition-id")
    if part is None:
        return None
    return f"{labels.get('volcano.sh/task-spec', '')}/{part}"


@dataclass
class SpreadLog:
    """Per job, the tier of the LCA of the nodes its live pods (bound, not yet succeeded or deleted: evicted pods
    count until their grace period ends, as they hold their node) sit on: when its gang first started
    (``at_start``) and the widest it ever was (``widest``).  Tier 0: one node; ``top_tier``: above every real
    hypernode (or a node under none).

    The same per **sub-group** (a partition of a task with a ``partitionPolicy``, Volcano's sub-job: the pods a
    PodGroup ``subGroupPolicy`` entry groups by ``volcano.sh/partition-id``): ``sub_at_start[job]`` holds, when the
    job's gang first started, the LCA tier of each sub-group with pods then, and ``sub_widest[(job, sub)]`` the
    widest each ever was.  A job's tier is at least each of its sub-groups' (the LCA of a superset).

    Kept incrementally: a job's (sub-group's) live nodes and the boolean vector of hypernodes holding all of them
    (one AND with a membership column per bind, never a per-node loop); a pod leaving marks the vector stale and
    the next bind rebuilds it from the live nodes."""

    topo: Topology
    node_pos: dict[str, int]
    constraint: dict[str, str] = field(default_factory=dict)
    at_start: dict[str, int] = field(default_factory=dict)
    widest: dict[str, int] = field(default_factory=dict)
    #: per job with sub-groups, per task with a partitionPolicy, the partition's constraint label (``hard:1``, ...)
    sub_constraint: dict[str, dict[str, str]] = field(default_factory=dict)
    sub_at_start: dict[str, dict[str, int]] = field(default_factory=dict)
    sub_widest: dict[tuple[str, str], int] = field(default_factory=dict)
    #: per job, the widest any of its sub-groups ever was
    sub_widest_any: dict[str, int] = field(default_factory=dict)
    _jobs: dict[str, _Group] = field(default_factory=dict)
    _subs: dict[tuple[str, str], _Group] = field(default_factory=dict)
    #: per job, its sub-groups with live pods; per pod, its sub-group
    _job_subs: dict[str, set[str]] = field(default_factory=dict)
    _pod_sub: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, topo: Topology, node_names: Sequence[str]) -> SpreadLog:
        return cls(topo, {n: i for i, n in enumerate(node_names)})

    @property
    def top_tier(self) -> int:
        return int(self.topo.tier[self.topo.top])

    def hard_tier(self, label: str) -> int | None:
        """The highest tier a ``hard:...`` label allows (a tier name through the tree's tierNames; None for an
        unknown name, no hard limit as in Volcano, or a label that is not hard)."""
        mode, _, tier = label.partition(":")
        if mode != "hard" or not tier:
            return None
        return int(tier) if tier.isascii() and tier.isdigit() else self.topo.tier_names().get(tier)

    def arrived(self, job: str, manifest: Mapping[str, Any]) -> None:
        self.constraint[job] = constraint_label(manifest)
        subs = partition_labels(manifest)
        if subs:
            self.sub_constraint[job] = subs

    def tier_of(self, job: str) -> int | None:
        """The LCA tier of the job's live pods now (None without any)."""
        g = self._jobs.get(job)
        return g.tier(self.topo) if g is not None else None

    def sub_tier_of(self, job: str, sub: str) -> int | None:
        """The LCA tier of one sub-group's live pods now (None without any)."""
        g = self._subs.get((job, sub))
        return g.tier(self.topo) if g is not None else None

    def bound(self, job: str, pod: str, node: str, sub: str | None = None) -> None:
        """A pod of ``job`` (of its sub-group ``sub``, see :func:`sub_group_of`) was bound to ``node``."""
        n = self.node_pos.get(node)
        if n is None:
            return
        self._jobs.setdefault(job, _Group()).add(self.topo, pod, n)
        tier = self.tier_of(job)
        if tier is not None and tier > self.widest.get(job, -1):
            self.widest[job] = tier
        if sub is None:
            return
        key = (job, sub)
        g = self._subs.setdefault(key, _Group())
        g.add(self.topo, pod, n)
        self._pod_sub[pod] = sub
        self._job_subs.setdefault(job, set()).add(sub)
        st = g.tier(self.topo)
        if st is not None and st > self.sub_widest.get(key, -1):
            self.sub_widest[key] = st
            self.sub_widest_any[job] = max(st, self.sub_widest_any.get(job, -1))

    def gone(self, job: str, pod: str) -> None:
        g = self._jobs.get(job)
        if g is not None and g.remove(pod) and not g.live:
            del self._jobs[job]
        sub = self._pod_sub.pop(pod, None)
        if sub is not None:
            sg = self._subs.get((job, sub))
            if sg is not None and sg.remove(pod) and not sg.live:
                del self._subs[(job, sub)]
                subs = self._job_subs.get(job)
                if subs is not None:
                    subs.discard(sub)
                    if not subs:
                        del self._job_subs[job]

    def started(self, job: str) -> None:
        """The job's gang started (first time): its spread now, and each sub-group's, is what its wait bought."""
        tier = self.tier_of(job)
        if tier is not None and job not in self.at_start:
            self.at_start[job] = tier
            subs = self._job_subs.get(job)
            if subs:
                self.sub_at_start[job] = {s: t for s in sorted(subs)
                                          if (t := self.sub_tier_of(job, s)) is not None}

    def violations(self) -> list[str]:
        """Jobs with a hard tier whose live pods ever spanned above it (none if the scheduler kept its word)."""
        out = []
        for job, label in sorted(self.constraint.items()):
            tier = self.hard_tier(label)
            if tier is not None and self.widest.get(job, -1) > tier:
                out.append(job)
        return out

    def sub_violations(self) -> list[str]:
        """``JOB/TASK/PARTITION`` of the sub-groups whose partition has a hard tier and whose live pods ever spanned
        above it."""
        out = []
        for (job, sub), widest in sorted(self.sub_widest.items()):
            label = self.sub_constraint.get(job, {}).get(sub.rsplit("/", 1)[0])
            tier = self.hard_tier(label) if label else None
            if tier is not None and widest > tier:
                out.append(f"{job}/{sub}")
        return out


def load_or_build(hypernodes: str | None, topology: str | None, nodes: Sequence[Mapping[str, Any]]) \
        -> tuple[list[dict[str, Any]], str | None]:
    """The HyperNodes of ``--hypernodes FILE`` or ``--topology SPEC`` (not both) over ``nodes``, and their
    description for the report (None without a topology)."""
    if hypernodes and topology:
        raise UserError("give --hypernodes FILE or --topology SPEC, not both")
    if hypernodes:
        if not Path(hypernodes).is_file() and hypernodes != "-":
            raise UserError(f"--hypernodes {hypernodes}: no such file")
        objs = load_hypernodes(hypernodes, nodes)
    elif topology:
        objs = spec_hypernodes(topology, [str(n["metadata"]["name"]) for n in nodes])
    else:
        return [], None
    return objs, describe_topology(build_topology(objs, nodes))


# --- metrics ------------------------------------------------------------------------------------------------
def job_columns(spread: SpreadLog | None, job: str) -> dict[str, Any]:
    """The jobs.csv columns of one job: its constraint, the LCA tier of its pods when its gang first started and
    the widest its live pods ever were (empty without a topology or before the gang started); for a job with
    sub-groups (partitions) also the partitions' constraint, how many sub-groups had pods when its gang started,
    the largest and the mean of their LCA tiers then, and the widest any of them ever was."""
    out: dict[str, Any] = dict.fromkeys(("network_topology", "lca_tier", "max_lca_tier", *SUB_COLUMNS))
    if spread is None:
        return out
    out.update(network_topology=spread.constraint.get(job, "none"), lca_tier=spread.at_start.get(job),
               max_lca_tier=spread.widest.get(job))
    labels = spread.sub_constraint.get(job)
    if labels:
        at = spread.sub_at_start.get(job) or {}
        out.update(sub_network_topology=",".join(sorted(set(labels.values()))),
                   sub_groups=len(at) if job in spread.at_start else None,
                   sub_lca_tier_max=max(at.values()) if at else None,
                   sub_lca_tier_mean=round(float(np.mean(list(at.values()))), 4) if at else None,
                   sub_max_lca_tier=spread.sub_widest_any.get(job))
    return out


#: the per-sub-group columns of :func:`job_columns` (jobs.csv has them when a job of the run has sub-groups)
SUB_COLUMNS = ("sub_network_topology", "sub_groups", "sub_lca_tier_max", "sub_lca_tier_mean", "sub_max_lca_tier")


def _tier_counts(tiers: Iterable[int | None]) -> dict[str, int]:
    out: dict[int, int] = {}
    for t in tiers:
        if t is not None:
            out[t] = out.get(t, 0) + 1
    return {str(k): v for k, v in sorted(out.items())}


def summary(spread: SpreadLog, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``summary.json``'s ``topology``: the tiers, the distribution of LCA tiers at gang start of the jobs with more
    than one pod (a one-pod job is always tier 0), their mean and the share within one tier-1 hypernode (or one
    node), and per constraint (``none``, ``soft``, ``hard:1``, ...) the
    jobs, how many never started, their wait statistics and LCA tiers; hard-constrained jobs whose pods ever
    spanned above their tier (``hard_violations``: 0 unless the scheduler broke its constraint)."""
    from pyvolcano.sim.figures import stats

    multi = [r for r in rows if r["tasks"] > 1]
    by: dict[str, dict[str, Any]] = {}
    for label in sorted({r["network_topology"] or "none" for r in rows}):
        rs = [r for r in rows if (r["network_topology"] or "none") == label]
        by[label] = {"jobs": len(rs), "never_started": sum(r["wait"] is None for r in rs),
                     "wait": stats([r["wait"] for r in rs if r["wait"] is not None]),
                     "lca_tier_at_start": _tier_counts(r["lca_tier"] for r in rs)}
    bad = spread.violations()
    tiers = [r["lca_tier"] for r in multi if r["lca_tier"] is not None]
    out = {"top_tier": spread.top_tier, "tier_names": spread.topo.tier_names(),
           "lca_tier_mean": _mean(tiers),
           "within_tier1": round(sum(t <= 1 for t in tiers) / len(tiers), 4) if tiers else None,
           "lca_tier_at_start": _tier_counts(r["lca_tier"] for r in multi),
           "max_lca_tier": _tier_counts(r["max_lca_tier"] for r in multi),
           "by_constraint": by, "hard_violations": len(bad), "hard_violation_jobs": bad[:20]}
    if spread.sub_constraint:
        out["sub_groups"] = sub_group_summary(spread, rows)
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return round(float(np.mean(xs)), 4) if len(xs) else None


def sub_group_summary(spread: SpreadLog, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``summary.json``'s ``topology.sub_groups``: over the jobs with sub-groups (partitions), how many never
    started, their wait, and, over those whose gang started, the job's LCA tier beside its sub-groups' (per job
    the largest and the mean over its sub-groups, then averaged over the jobs), the distribution of the largest,
    the share of jobs whose every sub-group started within one tier-1 hypernode (or one node), how many
    sub-groups there were, and the sub-groups whose partition had a hard tier and whose pods ever spanned above it
    (``hard_violations``: 0 unless the scheduler broke a partition's constraint); per partition constraint the
    same in short."""
    from pyvolcano.sim.figures import stats

    def block(rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        started = [r for r in rs if r["sub_lca_tier_max"] is not None]
        maxes = [r["sub_lca_tier_max"] for r in started]
        return {"jobs": len(rs), "never_started": sum(r["wait"] is None for r in rs),
                "wait": stats([r["wait"] for r in rs if r["wait"] is not None]),
                "sub_groups_at_start": sum(r["sub_groups"] or 0 for r in started),
                "lca_tier_mean": _mean([r["lca_tier"] for r in started]),
                "sub_lca_tier_max_mean": _mean(maxes),
                "sub_lca_tier_mean": _mean([r["sub_lca_tier_mean"] for r in started]),
                "within_tier1": round(sum(t <= 1 for t in maxes) / len(maxes), 4) if maxes else None,
                "sub_lca_tier_max_at_start": _tier_counts(maxes)}

    subs = [r for r in rows if r.get("sub_network_topology")]
    bad = spread.sub_violations()
    by = {label: block([r for r in subs if r["sub_network_topology"] == label])
          for label in sorted({r["sub_network_topology"] for r in subs})}
    return {**block(subs), "by_constraint": by, "hard_violations": len(bad),
            "hard_violation_sub_groups": bad[:20]}
