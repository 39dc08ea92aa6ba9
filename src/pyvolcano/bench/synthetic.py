"""A synthetic cluster and backlog as Kubernetes-shaped dicts, deterministic for a seed.

Nodes come in a few shapes with zone labels, a GPU pool and some tainted nodes; pods come from several
templates (plain, with a nodeSelector, with a toleration, GPU) so predicates and per-template caches are
exercised as on a real cluster.  ``preempt_backlog`` adds running low-priority pods and starving high-priority
gangs in the same queues.
"""

from __future__ import annotations

import random
from typing import Any

SHAPES = [({"cpu": "32", "memory": "128Gi", "pods": "110"}, {}),
          ({"cpu": "64", "memory": "256Gi", "pods": "110"}, {}),
          ({"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}, {"pool": "gpu"})]
TEMPLATES: list[tuple[dict[str, str], dict[str, Any]]] = [
    ({"cpu": "1", "memory": "2Gi"}, {}),
    ({"cpu": "2", "memory": "4Gi"}, {"nodeSelector": {"zone": "z1"}}),
    ({"cpu": "500m", "memory": "1Gi"}, {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
    ({"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}, {"nodeSelector": {"pool": "gpu"}}),
]


def nodes(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        alloc, labels = SHAPES[i % len(SHAPES)]
        spec: dict[str, Any] = {}
        if rnd.random() < 0.05:
            spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 4}", **labels}},
                    "spec": spec, "status": {"allocatable": dict(alloc), "capacity": dict(alloc)}})
    return out


def queues(q: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": f"q{i}"},
             "spec": {"weight": 1 + i % 3, "reclaimable": True}, "status": {"state": "Open"}} for i in range(q)]


def priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
            for n, v in (("low", 10), ("high", 1000))]


def _pod(name: str, ns: str, group: str, tmpl: int, *, node: str = "", priority: str = "",
         phase: str = "Pending") -> dict[str, Any]:
    req, extra = TEMPLATES[tmpl]
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "main", "resources": {"requests": dict(req)}}], **extra}
    if node:
        spec["nodeName"] = node
    if priority:
        spec["priorityClassName"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": group},
                         "creationTimestamp": 0},
            "spec": spec, "status": {"phase": phase}}


def backlog(pods: int, gang: int, n_queues: int, seed: int = 0, *, priority: str = "",
            prefix: str = "job", phase: str = "Pending", templates: tuple[int, ...] = (0, 1, 2, 3),
            weights: tuple[int, ...] = (6, 2, 1, 1)) -> list[dict[str, Any]]:
    """``pods`` pending pods in gangs of ``gang`` spread over ``n_queues`` queues."""
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    for j in range(pods // gang):
        ns = f"ns{j % 10}"
        name = f"{prefix}-{j:06d}"
        tmpl = rnd.choices(templates, weights[: len(templates)])[0]
        pg: dict[str, Any] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "metadata": {"name": name, "namespace": ns, "creationTimestamp": j},
                              "spec": {"minMember": gang, "queue": f"q{j % n_queues}"}, "status": {"phase": phase}}
        if priority:
            pg["spec"]["priorityClassName"] = priority
        out.append(pg)
        out.extend(_pod(f"{name}-{k}", ns, name, tmpl, priority=priority) for k in range(gang))
    return out


def running(node_objs: list[dict[str, Any]], pods: int, gang: int, n_queues: int) -> list[dict[str, Any]]:
    """``pods`` low-priority pods already running, in jobs of ``gang`` (minMember 1), spread evenly over the
    nodes and each sized to an equal part of its node's cpu and memory, so the cluster is full and every
    pending pod must preempt."""
    out: list[dict[str, Any]] = []
    n = len(node_objs)
    per_node = max(1, -(-pods // n))
    for j in range(pods // gang):
        ns, name = f"ns{j % 10}", f"run-{j:06d}"
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": ns, "creationTimestamp": j},
                    "spec": {"minMember": 1, "queue": f"q{j % n_queues}", "priorityClassName": "low"},
                    "status": {"phase": "Running"}})
        for k in range(gang):
            node = node_objs[(j * gang + k) % n]
            alloc = node["status"]["allocatable"]
            cpu_m = int(alloc["cpu"]) * 1000 // per_node
            mem_mi = int(alloc["memory"].removesuffix("Gi")) * 1024 // per_node
            pod = _pod(f"{name}-{k}", ns, name, 0, node=node["metadata"]["name"], priority="low", phase="Running")
            pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}
            out.append(pod)
    return out
