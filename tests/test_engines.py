"""The two node-selection engines, ``vector`` (NumPy, per-template caches) and ``scalar`` (Volcano's per-node
callbacks, nothing cached), must make the same decisions: property tests on random small clusters under several
confs, plus a few fixed sizes from the bench's synthetic generator.

Each engine run gets its own cache and snapshot (a session mutates its snapshot), and decisions are compared by
pod and podgroup names, never by object identity.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.bench.run import build
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.framework.session import Session, SessionResult
from tests.confs import conf as base_conf

Obj = dict[str, Any]

# --- confs ---------------------------------------------------------------------------------------------------

BINPACK_CONF = base_conf("enqueue, allocate, backfill", """\
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 2
      balancedresource.weight: 1
      nodeaffinity.weight: 3
      tainttoleration.weight: 1
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 3
      binpack.memory: 1
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 5
""")

PREEMPT_CONF = base_conf("enqueue, allocate, preempt, reclaim, backfill", "  - name: binpack\n")

CONFS: dict[str, SchedulerConf] = {
    "default": load_conf_file(None),
    "binpack": load_conf(BINPACK_CONF, "binpack-heavy conf"),
    "preempt": load_conf(PREEMPT_CONF, "preempt/reclaim conf"),
}

# --- running both engines ------------------------------------------------------------------------------------


def decide(objs: list[Obj], conf: SchedulerConf, engine: str) -> dict[str, Any]:
    """One session with ``engine`` on a fresh cache: what it decided, keyed by names."""
    cache = SchedulerCache.from_objects(objs)
    result: SessionResult = Session(cache.snapshot(), conf, engine).run()
    return {
        "binds": dict(sorted(result.binds.items())),
        "evictions": sorted(e.task.uid for e in result.evictions),
        "pipelined": dict(sorted(result.pipelined.items())),
        "podgroups": {uid: pg["phase"] for uid, pg in sorted(result.podgroups.items())},
    }


def assert_same(objs: list[Obj], conf: SchedulerConf) -> dict[str, Any]:
    vector = decide(objs, conf, "vector")
    scalar = decide(objs, conf, "scalar")
    for key in ("binds", "evictions", "pipelined", "podgroups"):
        assert vector[key] == scalar[key], f"{key} differ:\n vector: {vector[key]}\n scalar: {scalar[key]}"
    return vector


# --- random snapshots ----------------------------------------------------------------------------------------

GI = 1024  # Mi per Gi
PRIORITY_CLASSES = {"low": 10, "mid": 100, "high": 1000}
NAMESPACES = ("ns-a", "ns-b")
GROUP = "scheduling.k8s.io/group-name"

#: pending pod templates: (cpu milli, memory Mi, gpu, extra spec)
TEMPLATES: list[tuple[int, int, int, Obj]] = [
    (1000, 1 * GI, 0, {}),
    (2000, 4 * GI, 0, {"nodeSelector": {"zone": "z1"}}),
    (500, 512, 0, {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
    (1000, 2 * GI, 1, {}),
    (1000, 1 * GI, 0, {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}},
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}]}}}),
    (4000, 8 * GI, 0, {}),
    (250, 256, 0, {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra",
                                    "effect": "NoSchedule"},
                                   {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]}),
    (3000, 2 * GI, 0, {"nodeSelector": {"disk": "ssd"},
                       "tolerations": [{"key": "spot", "operator": "Exists"}]}),
    # inter-pod affinity and topology spread (plugins/_podaffinity.py); "labels" become the pod's labels
    (1000, 1 * GI, 0, {"labels": {"app": "a"}, "affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "a"}}}]}}}),
    (500, 512, 0, {"labels": {"app": "b"}, "affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "b"}}}]}}}),
    (1000, 1 * GI, 0, {"labels": {"app": "c"}, "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "c"}}}]}),
    (500, 512, 0, {"labels": {"app": "c"}, "topologySpreadConstraints": [
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "c"}}},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["c", "b"]}]}}],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 20, "podAffinityTerm": {"topologyKey": "zone",
                                               "labelSelector": {"matchLabels": {"app": "a"}}}}]},
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                   "labelSelector": {"matchLabels": {"app": "b"}}}}]}}}),
]
#: running pod requests: (cpu milli, memory Mi, gpu)
RUNNING_SIZES: list[tuple[int, int, int]] = [(500, 512, 0), (1000, 1 * GI, 0), (2000, 2 * GI, 0),
                                             (1000, 2 * GI, 1), (3000, 6 * GI, 0)]
#: node taints, up to two PreferNoSchedule ones on a node (tainttoleration's score is normalised by the largest
#: count: test_engines_agree_on_prefer_no_schedule_counts).
TAINTS: list[list[Obj]] = [
    [],
    [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
    [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
    [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
     {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
    [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
     {"key": "old-kernel", "value": "true", "effect": "PreferNoSchedule"}],
]


def requests(cpu: int, mem: int, gpu: int) -> dict[str, str]:
    req = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    return req


def pod(name: str, ns: str, group: str, created: int, req: dict[str, str], extra: Obj, *, priority: str,
        node: str = "") -> Obj:
    extra = dict(extra)
    labels = extra.pop("labels", {})
    spec: Obj = {"schedulerName": "volcano", "priorityClassName": priority,
                 "containers": [{"name": "main", "resources": {"requests": req}}], **extra}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "annotations": {GROUP: group}, "creationTimestamp": created,
                         "labels": labels},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


#: running pods' labels and pod-affinity terms (existing pods' anti-affinity and preferred terms)
RUNNING_EXTRAS: list[Obj] = [
    {}, {}, {"labels": {"app": "a"}}, {"labels": {"app": "b"}}, {"labels": {"app": "c"}},
    {"labels": {"app": "d"}, "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "c"}}}]}}},
    {"labels": {"app": "d"}, "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 40, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "b"}}}}]}}},
]


def podgroup(name: str, ns: str, created: int, min_member: int, queue: str, priority: str, phase: str) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
            "spec": {"minMember": min_member, "queue": queue, "priorityClassName": priority},
            "status": {"phase": phase}}


@st.composite
def node_objs(draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 12) -> list[Obj]:
    out = []
    for i in range(draw(st.integers(min_nodes, max_nodes))):
        cpu = draw(st.sampled_from([8, 4, 16, 2]))
        mem = draw(st.sampled_from([16, 8, 32, 4]))
        alloc = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(draw(st.sampled_from([110, 8, 3])))}
        gpu = draw(st.sampled_from([0, 0, 0, 2, 4]))
        if gpu:
            alloc["nvidia.com/gpu"] = str(gpu)
        labels = {"zone": draw(st.sampled_from(["z0", "z1", "z2"])), "kubernetes.io/hostname": f"n{i:02d}"}
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        spec: Obj = {}
        taints = TAINTS[draw(st.sampled_from([0, 0, 0, 1, 2, 3]))]
        if taints:
            spec["taints"] = taints
        if draw(st.integers(0, 9)) == 0:
            spec["unschedulable"] = True
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}", "labels": labels},
                    "spec": spec, "status": {"allocatable": alloc, "capacity": dict(alloc)}})
    return out


@st.composite
def snapshots(draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 12, max_jobs: int = 6) -> list[Obj]:
    """A small random cluster: nodes, queues, priority classes, pending gangs and running low-priority pods."""
    nodes = draw(node_objs(min_nodes, max_nodes))
    objs: list[Obj] = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
                        "value": v} for n, v in PRIORITY_CLASSES.items()]
    queue_names = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    for q in queue_names:
        spec: Obj = {"weight": draw(st.integers(1, 4)), "reclaimable": draw(st.sampled_from([True, True, False]))}
        if draw(st.integers(0, 3)) == 0:
            spec["capability"] = {"cpu": str(draw(st.sampled_from([4, 8, 16]))), "memory": "64Gi"}
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q},
                     "spec": spec, "status": {"state": "Open"}})
    objs += nodes

    # running low-priority jobs, each pod placed only where it still fits (no node is overcommitted)
    free = {n["metadata"]["name"]: [int(n["status"]["allocatable"]["cpu"]) * 1000,
                                    int(n["status"]["allocatable"]["memory"].removesuffix("Gi")) * GI,
                                    int(n["status"]["allocatable"].get("nvidia.com/gpu", 0)),
                                    int(n["status"]["allocatable"]["pods"])] for n in nodes}
    names = sorted(free)
    for j in range(draw(st.integers(0, max_jobs))):
        ns, name = draw(st.sampled_from(NAMESPACES)), f"run{j}"
        prio = draw(st.sampled_from(["low", "low", "mid"]))
        pods: list[Obj] = []
        for k in range(draw(st.integers(1, 8))):
            cpu, mem, gpu = draw(st.sampled_from(RUNNING_SIZES))
            start = draw(st.integers(0, len(names) - 1))
            # the drawn node, or the next one round the list with room for the pod
            node = next((n for n in names[start:] + names[:start]
                         if free[n][0] >= cpu and free[n][1] >= mem and free[n][2] >= gpu and free[n][3] >= 1), "")
            if not node:
                continue
            f = free[node]
            f[0], f[1], f[2], f[3] = f[0] - cpu, f[1] - mem, f[2] - gpu, f[3] - 1
            pods.append(pod(f"{name}-{k}", ns, name, j, requests(cpu, mem, gpu), draw(st.sampled_from(RUNNING_EXTRAS)),
                            priority=prio, node=node))
        if pods:
            objs.append(podgroup(name, ns, j, 1, draw(st.sampled_from(queue_names)), prio, "Running"))
            objs += pods

    # pending gangs
    for j in range(draw(st.integers(1, max_jobs))):
        ns, name = draw(st.sampled_from(NAMESPACES)), f"job{j}"
        size = draw(st.integers(1, 5))
        min_member = draw(st.integers(1, size))
        prio = draw(st.sampled_from(["high", "high", "mid", "low"]))
        created = 10 + draw(st.integers(0, 3))  # equal timestamps too: ties go to the name
        pg = podgroup(name, ns, created, min_member, draw(st.sampled_from(queue_names)), prio,
                      draw(st.sampled_from(["Pending", "Inqueue"])))
        objs.append(pg)
        mixed = draw(st.booleans())  # one template for the whole gang, or one per pod
        tmpl = draw(st.integers(0, len(TEMPLATES) - 1))
        total = [0, 0, 0]
        for k in range(size):
            if mixed:
                tmpl = draw(st.integers(0, len(TEMPLATES) - 1))
            cpu, mem, gpu, extra = TEMPLATES[tmpl]
            if k < min_member:
                total = [total[0] + cpu, total[1] + mem, total[2] + gpu]
            objs.append(pod(f"{name}-{k}", ns, name, created, requests(cpu, mem, gpu), extra, priority=prio))
        if draw(st.booleans()):  # as Volcano's controllers set it: what minMember pods request, which enqueue checks
            pg["spec"]["minResources"] = requests(*total)
    return objs


#: deterministic in CI: examples derived from the test itself, no example database
DETERMINISTIC = {"deadline": None, "derandomize": True, "database": None,
                 "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@pytest.mark.parametrize("conf_name", list(CONFS))
@settings(max_examples=200, **DETERMINISTIC)
@given(objs=snapshots())
def test_engines_agree_on_random_snapshots(conf_name: str, objs: list[Obj]) -> None:
    assert_same(objs, CONFS[conf_name])


@settings(max_examples=25, **DETERMINISTIC)
@given(objs=snapshots(min_nodes=30, max_nodes=60, max_jobs=12))
def test_engines_agree_on_larger_random_clusters(objs: list[Obj]) -> None:
    """Enough nodes that the vector engine's cache updates take each path: one changed node, a few through the
    per-node forms, more than PER_NODE_MAX through the vector forms, and all nodes at once."""
    for conf in CONFS.values():
        assert_same(objs, conf)


# --- fixed sizes from the bench's generator --------------------------------------------------------------


@pytest.mark.parametrize(("nodes", "pods", "gang", "queues", "seed"), [(50, 200, 10, 4, 0), (12, 60, 3, 2, 7)])
@pytest.mark.parametrize("conf_name", list(CONFS))
def test_engines_agree_on_bench_backlog(conf_name: str, nodes: int, pods: int, gang: int, queues: int,
                                        seed: int) -> None:
    got = assert_same(build(nodes, pods, gang, queues, seed=seed), CONFS[conf_name])
    assert got["binds"]  # the comparison is not vacuous


def test_engines_agree_when_preempting() -> None:
    objs = build(20, 20, 10, 2, running=80)
    got = assert_same(objs, CONFS["preempt"])
    assert got["evictions"] and got["pipelined"]


# --- known disagreement ----------------------------------------------------------------------------------


def _node(name: str, taints: list[Obj]) -> Obj:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def test_engines_agree_on_prefer_no_schedule_counts() -> None:
    objs: list[Obj] = [
        _node("n0", [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]),
        _node("n1", [{"key": "a", "effect": "PreferNoSchedule"}]),
        podgroup("pg", "ns", 0, 1, "default", "", "Inqueue"),
        pod("p", "ns", "pg", 0, {"cpu": "1"}, {}, priority=""),
    ]
    assert decide(objs, CONFS["default"], "vector")["binds"] == {"ns/p": "n1"}  # fewer untolerated taints
    assert_same(objs, CONFS["default"])
