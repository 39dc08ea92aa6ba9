"""A seeded random generator of small clusters for the differential test against the real Volcano.

Each case is a scenario (``config`` + ``objects``, the ``../shared/scenarios`` format) drawn from one *family*: a
scheduler conf (Volcano's default, binpack, preempt, reclaim, capacity, capacity with a hierarchy) plus the kind
of objects that conf exercises. The same seed always gives the same case (``random.Random(seed)``, no global
state), so a failing case is reproduced from its family and seed alone.

What a case holds, all drawn at random within small bounds:
- 2-4 nodes with cpu/memory/pods and sometimes ``nvidia.com/gpu``, a ``zone`` label, sometimes a NoSchedule taint;
  node sizes are distinct so that equal scores (Volcano picks among them at random) are rare;
- 1-3 queues (plus ``default``) with weight, capability, reclaimable, and for capacity deserved / guarantee and
  (hierarchy family) parents under ``root``;
- 1-5 PodGroups in every phase (Pending, Inqueue, Running, Unknown; sometimes a Completed one whose Succeeded pods
  are still bound to a node), with minMember, sometimes minResources, a
  PriorityClass, and 1-4 pods each: running pods placed on nodes where they fit, pending pods with cpu/memory
  (sometimes gpu) requests, sometimes a nodeSelector on ``zone`` or a toleration for the taint.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pyvolcano.conf.loader import DEFAULT_CONF

PG_API = "scheduling.volcano.sh/v1beta1"
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
GI = 1024**3

_TIER1 = """- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
"""

#: the first tier with gang voting on victims (preempt, reclaim, capacity), and the preempt/reclaim second tier
_TIER1_VOTING = """- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""
_TIER2 = """- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

CONFS: dict[str, str] = {
    # Volcano's installer conf (../shared/tools/volcano/volcano-scheduler.conf) without binpack.
    "default": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + _TIER1 + """- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
""",
    # The installer conf as shipped, binpack included: pyvolcano's own default (conf/loader.py).
    "binpack": DEFAULT_CONF,
    "preempt": 'actions: "enqueue, allocate, preempt, backfill"\ntiers:\n' + _TIER1_VOTING + _TIER2,
    "reclaim": 'actions: "enqueue, allocate, reclaim, backfill"\ntiers:\n' + _TIER1_VOTING + _TIER2,
    "capacity": 'actions: "enqueue, allocate, reclaim, backfill"\ntiers:\n' + _TIER1_VOTING + """- plugins:
  - name: drf
  - name: predicates
  - name: capacity
  - name: nodeorder
""",
    "hierarchy": 'actions: "enqueue, allocate, reclaim, backfill"\ntiers:\n' + _TIER1_VOTING + """- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
""",
}
# Network topology: the default conf with network-topology-aware (issue 14), HyperNodes and networkTopology.
CONFS["topology"] = CONFS["default"] + "  - name: network-topology-aware\n"
# Gang-aware eviction by domain (issue 14 item 7): the preempt/reclaim tiers with network-topology-aware, the same
# HyperNodes and networkTopology as the topology family.
CONFS["gangpreempt"] = ('actions: "enqueue, allocate, gangpreempt, backfill"\ntiers:\n' + _TIER1_VOTING + _TIER2
                        + "  - name: network-topology-aware\n")
CONFS["gangreclaim"] = ('actions: "enqueue, allocate, gangreclaim, backfill"\ntiers:\n' + _TIER1_VOTING + _TIER2
                        + "  - name: network-topology-aware\n")

#: families that reuse a conf above with more kinds of object: multi-role gangs (``volcano.sh/task-spec``),
#: inter-pod (anti-)affinity and topology spread, queues with ``spec.priority``.
#: ``one-node*``: a single node, so that node scores play no part (gang, queues, enqueue, priorities, victims);
#: ``one-node`` never fills a node by pod count and always sets PodGroup minResources, ``one-node-pods`` may not.
#: ``subgroups``: the topology family with PodGroup ``subGroupPolicy`` (pods labelled with a partition, as the
#: vcjob controller does for a ``partitionPolicy``).
EXTRA: dict[str, str] = {"roles": "default", "affinity": "default", "queue-priority": "reclaim",
                         "one-node": "default", "one-node-pods": "default", "one-node-preempt": "preempt",
                         "one-node-reclaim": "reclaim", "subgroups": "topology"}
#: families whose cases carry HyperNodes and PodGroups with networkTopology (the sub-groups merge had dropped the
#: two gang-eviction families from this list, so their cases had no HyperNodes for a while)
TOPOLOGY_FAMILIES = ("topology", "subgroups", "gangpreempt", "gangreclaim")
FAMILIES = (*CONFS, *EXTRA)


@dataclass
class Case:
    family: str
    seed: int
    config: str
    objects: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return f"{self.family}-{self.seed}"

    def scenario(self) -> dict[str, Any]:
        return {"name": f"differential {self.name}", "config": self.config, "objects": self.objects,
                "expect": {}}


def _ts(i: int) -> str:
    return f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"


def _res(cpu_m: int, mem: int, gpu: int = 0) -> dict[str, str]:
    out = {"cpu": f"{cpu_m}m", "memory": str(mem)}
    if gpu:
        out["nvidia.com/gpu"] = str(gpu)
    return out


def generate(family: str, seed: int) -> Case:
    """One case of ``family`` from ``seed``."""
    rnd = random.Random(f"{family}:{seed}")
    conf = EXTRA.get(family, family)
    capacity = conf in ("capacity", "hierarchy")
    objects: list[dict[str, Any]] = []

    # Nodes: distinct cpu sizes so that the nodeorder/binpack scores rarely tie.
    n_nodes = 1 if family.startswith("one-node") else rnd.randint(2, 4)
    if family in TOPOLOGY_FAMILIES:  # room for two or three leaves
        n_nodes = rnd.randint(3, 6)
    cpus = rnd.sample([2, 3, 4, 6, 8, 12, 16], n_nodes)
    nodes: list[dict[str, Any]] = []
    for i, cpu in enumerate(cpus):
        mem = cpu * rnd.choice([1, 2, 4]) * GI
        gpu = rnd.choice([0, 0, 0, 1, 2, 4])
        pods = rnd.choice([110, 110, 110, 3])
        if family == "one-node":
            pods = 110  # a node full by pod count brings in rule 13 (pods in queue shares): one-node-pods has it
        alloc = {"cpu": str(cpu), "memory": str(mem), "pods": str(pods)}
        if gpu:
            alloc["nvidia.com/gpu"] = str(gpu)
        spec: dict[str, Any] = {}
        if rnd.random() < 0.15:
            spec["taints"] = [dict(TAINT)]
        name = f"n{i + 1}"
        objects.append({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": name, "labels": {"zone": rnd.choice(["a", "b"]),
                                                              "kubernetes.io/hostname": name}},
                        "spec": spec, "status": {"capacity": dict(alloc), "allocatable": alloc}})
        nodes.append({"name": name, "free": [cpu * 1000, mem, gpu, pods], "taint": bool(spec)})
    total_cpu = sum(cpus)
    gpus_total = sum(n["free"][2] for n in nodes)

    # Priority classes.
    objects.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "low"}, "value": 10})
    objects.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "high"}, "value": 1000})

    # Queues.
    n_queues = rnd.randint(1, 3)
    if family == "gangreclaim":  # a queue to reclaim from
        n_queues = max(2, n_queues)
    queue_names = [f"q{i + 1}" for i in range(n_queues)]
    parents: dict[str, str] = {}
    # Hierarchy: q1 is the parent of the others, or they are all under root.
    if conf == "hierarchy" and n_queues >= 2 and rnd.random() < 0.6:
        for q in queue_names[1:]:
            parents[q] = "q1"
    for q in queue_names:
        qspec: dict[str, Any] = {"weight": rnd.randint(1, 4), "reclaimable": rnd.random() < 0.85}
        if capacity:
            share = rnd.choice([0.25, 0.4, 0.5, 0.75])
            if gpus_total and rnd.random() < 0.15:
                qspec["deserved"] = {"nvidia.com/gpu": str(max(1, int(gpus_total * share)))}
            elif rnd.random() < 0.8:
                qspec["deserved"] = {"cpu": str(max(1, int(total_cpu * share))),
                                     "memory": f"{max(1, int(total_cpu * share * 2))}Gi"}
            if rnd.random() < 0.3:
                qspec["guarantee"] = {"resource": {"cpu": str(max(1, int(total_cpu * share / 2)))}}
            if rnd.random() < 0.3:
                qspec["capability"] = {"cpu": str(max(1, int(total_cpu * min(1.0, share * 1.5))))}
            if q in parents:
                qspec["parent"] = parents[q]
        elif rnd.random() < 0.25:
            qspec["capability"] = {"cpu": str(max(1, total_cpu // rnd.choice([2, 3])))}
        if family == "queue-priority":
            qspec["priority"] = rnd.randint(0, 3)
        objects.append({"apiVersion": PG_API, "kind": "Queue",
                        "metadata": {"name": q, "creationTimestamp": _ts(0)},
                        "spec": qspec, "status": {"state": "Open"}})
    if conf == "hierarchy":
        objects.append({"apiVersion": PG_API, "kind": "Queue", "metadata": {"name": "root"},
                        "spec": {"weight": 1, "reclaimable": True}, "status": {"state": "Open"}})
    # Jobs go only to leaf queues (a job in a parent queue disables the hierarchy).
    leaf_queues = [q for q in queue_names if q not in set(parents.values())] or ["default"]

    # Jobs.
    topo_rnd = random.Random(f"{family}:{seed}:topology")  # its own stream: other families' cases are unchanged
    gang_rnd = random.Random(f"{family}:{seed}:gang")
    sub_rnd = random.Random(f"{family}:{seed}:subgroups")
    n_jobs = rnd.randint(1, 5)
    if family in ("gangpreempt", "gangreclaim"):
        n_jobs = gang_rnd.randint(3, 6)
    t = 1
    for j in range(n_jobs):
        ns = rnd.choice(["team-a", "team-b"])
        pg = f"j{j + 1}"
        n_pods = rnd.randint(1, 4)
        if family == "subgroups":  # bigger gangs, several sub-groups each
            n_pods = sub_rnd.randint(2, 6)
        min_member = rnd.randint(1, n_pods)
        sub_policy = _sub_group_policy(sub_rnd, pg, n_pods) if family == "subgroups" else None
        pclass = rnd.choice(["", "", "low", "high"])
        queue = rnd.choice(leaf_queues)
        cpu_m = rnd.choice([250, 500, 1000, 1000, 2000, 3000, 4000])
        mem = rnd.choice([256, 512, 1024, 2048, 4096]) * 1024**2
        gpu = rnd.choice([0, 0, 0, 0, 1]) if any(n["free"][2] for n in nodes) else 0
        selector = {"zone": rnd.choice(["a", "b"])} if rnd.random() < 0.2 else None
        tolerate = rnd.random() < 0.3
        besteffort = rnd.random() < 0.07
        state = rnd.choice(["pending", "inqueue", "running", "running", "partial"])
        if family in ("gangpreempt", "gangreclaim"):  # fill the nodes with low jobs, then starving high ones
            hungry = j == n_jobs - 1 or gang_rnd.random() < 0.25
            state = gang_rnd.choice(["inqueue", "partial"]) if hungry else "running"
            pclass = "high" if hungry else gang_rnd.choice(["low", "low", ""])
            n_pods = gang_rnd.randint(1, 3) if hungry else gang_rnd.randint(2, 4)
            min_member = gang_rnd.randint(1, n_pods)
            cpu_m = gang_rnd.choice([1000, 2000, 3000] if hungry else [2000, 3000, 4000])
            if family == "gangreclaim" and len(leaf_queues) > 1:
                queue = leaf_queues[-1] if hungry else gang_rnd.choice(leaf_queues[:-1])
            # sub-groups on about half of the jobs, starving or victims (CreateJobBundles, the eviction worksheet)
            sub_policy = _sub_group_policy(sub_rnd, pg, n_pods, none=0.5)
        created = _ts(t)
        t += 1
        running = 0
        roles = family == "roles" and n_pods >= 2
        affinity = _affinity(rnd, pg, j) if family == "affinity" else {}
        min_task: dict[str, int] = {}
        if roles and rnd.random() < 0.4:
            min_task = {"ps": 1, "worker": rnd.randint(1, n_pods - 1)}
        for k in range(n_pods):
            role = ("ps" if k == 0 else "worker") if roles else ""
            p_cpu = cpu_m // 2 if role == "ps" else cpu_m * (2 if roles and rnd.random() < 0.3 else 1)
            pod_spec: dict[str, Any] = {"schedulerName": "volcano",
                                        "containers": [{"name": "c", "image": "busybox", "resources": (
                                            {} if besteffort else {"requests": _res(p_cpu, mem, gpu)})}]}
            pod_spec.update(affinity)
            if pclass:
                pod_spec["priorityClassName"] = pclass
                pod_spec["priority"] = 1000 if pclass == "high" else 10
            if selector:
                pod_spec["nodeSelector"] = dict(selector)
            if tolerate:
                pod_spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "batch",
                                            "effect": "NoSchedule"}]
            phase = "Pending"
            want_running = state == "running" or (state == "partial" and k < max(1, min_member - 1))
            if want_running:
                need = [0 if besteffort else p_cpu, 0 if besteffort else mem, gpu, 1]
                fits = [n for n in nodes
                        if all(n["free"][i] >= need[i] for i in range(4))
                        and (not n["taint"] or tolerate)
                        and (not selector or _label(objects, n["name"]) == selector["zone"])]
                if fits:
                    node = rnd.choice(fits)
                    node["free"] = [node["free"][i] - need[i] for i in range(4)]
                    pod_spec["nodeName"] = node["name"]
                    phase = "Running"
                    running += 1
            annotations = {"scheduling.k8s.io/group-name": pg}
            if role:
                annotations["volcano.sh/task-spec"] = role
            labels = {"app": pg}
            if sub_policy is not None and k < sub_policy[1]:  # the first pods are partitioned
                labels["volcano.sh/partition-id"] = str(k // sub_policy[0]["subGroupSize"])
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"{pg}-{k}", "namespace": ns, "creationTimestamp": created,
                                         "labels": labels, "annotations": annotations},
                            "spec": pod_spec, "status": {"phase": phase}})
        if running >= min_member:
            pg_phase = "Running"
        elif running:
            pg_phase = rnd.choice(["Running", "Unknown"])
        else:
            pg_phase = "Pending" if state == "pending" else "Inqueue"
        pg_spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
        if pclass:
            pg_spec["priorityClassName"] = pclass
        if min_task:
            pg_spec["minTaskMember"] = min_task
        # Volcano's job controller always sets minResources; hand-made PodGroups often do not (and without it
        # every allocated pod counts as elastic in proportion's enqueue). one-node keeps to the controller's way.
        if (rnd.random() < 0.5 or family == "one-node") and not besteffort:
            pg_spec["minResources"] = _res(cpu_m * min_member, mem * min_member, gpu * min_member)
        if family in TOPOLOGY_FAMILIES:
            nt = _network_topology(topo_rnd)
            if nt is not None:
                pg_spec["networkTopology"] = nt
        if sub_policy is not None:
            pg_spec["subGroupPolicy"] = [sub_policy[0]]
        objects.append({"apiVersion": PG_API, "kind": "PodGroup",
                        "metadata": {"name": pg, "namespace": ns, "creationTimestamp": created},
                        "spec": pg_spec, "status": {"phase": pg_phase}})
    if family in TOPOLOGY_FAMILIES:
        objects += _hypernodes(topo_rnd, [n["name"] for n in nodes])
    # A finished job (Completed PodGroup, Succeeded pods still bound to a node), drawn from its own stream so
    # that adding it left every other object of every seed unchanged.
    done = random.Random(f"{family}:{seed}:completed")
    if done.random() < 0.2:
        node = done.choice(nodes)["name"]
        ns, pg = "team-a", "done"
        for k in range(done.randint(1, 2)):
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"{pg}-{k}", "namespace": ns, "creationTimestamp": _ts(0),
                                         "labels": {"app": pg}, "annotations": {"scheduling.k8s.io/group-name": pg}},
                            "spec": {"schedulerName": "volcano", "nodeName": node, "containers": [
                                {"name": "c", "image": "busybox", "resources": {"requests": _res(1000, GI)}}]},
                            "status": {"phase": "Succeeded"}})
        objects.append({"apiVersion": PG_API, "kind": "PodGroup",
                        "metadata": {"name": pg, "namespace": ns, "creationTimestamp": _ts(0)},
                        "spec": {"minMember": 1, "queue": done.choice(leaf_queues)},
                        "status": {"phase": "Completed"}})
    config = CONFS[conf]
    if family in ("gangpreempt", "gangreclaim") and random.Random(f"{family}:{seed}:starving").random() < 0.3:
        # priority's jobStarving decides (fewer pods placed than the job has): a ready job with pods pending is
        # starving too and asks room for its first sub-group only (CollectPendingTasksForGangEviction). Without
        # allocate: a job allocate placed through its hypernode path keeps those pods as pending in Volcano's
        # sub-group index too, which gang eviction then tries to place again (docs/volcano-differences.md)
        config = config.replace("  - name: gang\n", "  - name: gang\n    enableJobStarving: false\n", 1)
        config = config.replace("enqueue, allocate, ", "enqueue, ", 1)
    return Case(family, seed, config, objects)


def _affinity(rnd: random.Random, app: str, j: int) -> dict[str, Any]:
    """Pod spec fields for the affinity family: required anti-affinity between a job's own pods (one per node),
    required affinity to an earlier job's pods in the same zone, or a hard zone spread."""
    kind = rnd.choice(["none", "anti", "anti", "affinity", "spread"])
    selector = {"matchLabels": {"app": app}}
    if kind == "anti":
        return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}}}
    if kind == "affinity" and j > 0:
        return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": f"j{rnd.randint(1, j)}"}}, "topologyKey": "zone"}]}}}
    if kind == "spread":
        return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]}
    return {}


def _label(objects: list[dict[str, Any]], node: str) -> str:
    for o in objects:
        if o.get("kind") == "Node" and o["metadata"]["name"] == node:
            return str(o["metadata"]["labels"]["zone"])
    return ""


def _network_topology(rnd: random.Random) -> dict[str, Any] | None:
    """A PodGroup's networkTopology for the topology family: none, hard up to tier 1 or 2 (by number or tier
    name), or soft."""
    kind = rnd.choice(["none", "hard1", "hard2", "leaf", "soft"])
    if kind == "none":
        return None
    if kind == "soft":
        return {"mode": "soft"}
    if kind == "leaf":
        return {"mode": "hard", "highestTierName": "leaf"}
    return {"mode": "hard", "highestTierAllowed": 1 if kind == "hard1" else 2}


def _sub_group_policy(rnd: random.Random, pg: str, n_pods: int,
                      none: float = 0.25) -> tuple[dict[str, Any], int] | None:
    """For the sub-group families: none (with probability ``none``), or a policy over the job's first pods (all,
    or all but one, which then fall in the default sub-group), grouped by ``volcano.sh/partition-id`` in
    partitions of 1-3 pods, needing 0 to all of them, with its own networkTopology; returns the policy and how
    many pods it covers."""
    if rnd.random() < none:
        return None
    covered = n_pods if n_pods == 1 or rnd.random() < 0.7 else n_pods - 1
    size = rnd.randint(1, min(3, covered))
    parts = -(-covered // size)
    policy: dict[str, Any] = {"name": "w", "subGroupSize": size, "minSubGroups": rnd.randint(0, parts),
                              "matchLabelKeys": ["volcano.sh/partition-id"]}
    if rnd.random() < 0.5:
        policy["labelSelector"] = {"matchLabels": {"app": pg}}
    nt = _network_topology(rnd)
    if nt is not None:
        policy["networkTopology"] = nt
    return policy, covered


def _hypernodes(rnd: random.Random, nodes: list[str]) -> list[dict[str, Any]]:
    """Leaves (tier 1, tierName leaf) of one to three consecutive nodes, some nodes in none, and a spine (tier 2)
    over all leaves or all but one."""
    out: list[dict[str, Any]] = []
    leaves: list[str] = []
    i = 0
    while i < len(nodes):
        size = rnd.randint(1, 3)
        members = nodes[i:i + size]
        i += size
        if rnd.random() < 0.15:  # nodes under no leaf
            continue
        name = f"leaf{len(leaves)}"
        leaves.append(name)
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                    "spec": {"tier": 1, "tierName": "leaf", "members": [
                        {"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in members]}})
    under = leaves if len(leaves) < 3 or rnd.random() < 0.5 else leaves[:-1]
    if under:
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "spine"},
                    "spec": {"tier": 2, "tierName": "spine", "members": [
                        {"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in under]}})
    return out
