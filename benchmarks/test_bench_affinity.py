"""Inter-pod anti-affinity and topology spread at scale (issue 13 rule 9), run by ``make bench`` only.

Target on the 2-core machine: allocate of 2,000 pending pods, each with a required pod anti-affinity (and a
soft zone spread), on 1,000 nodes takes seconds, not minutes.  The counts per selector are kept incrementally
(``plugins/_podaffinity.py``), so each pod costs a few NumPy passes over the nodes, not a walk over every
placed pod.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.framework.session import Session

Obj = dict[str, Any]


def affinity_cluster(nodes: int, pods: int, gang: int) -> list[Obj]:
    """``nodes`` nodes over 10 zones; ``pods`` pending pods in gangs of ``gang``: each pod keeps off nodes that
    already hold a pod of its gang (hostname anti-affinity) and spreads its gang over zones (ScheduleAnyway),
    and every fifth gang also may not share a zone with more than one pod of its gang beyond the others
    (DoNotSchedule, maxSkew 1)."""
    objs: list[Obj] = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}]
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    for i in range(nodes):
        objs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": f"n{i:05d}",
                                  "labels": {"kubernetes.io/hostname": f"n{i:05d}", "zone": f"z{i % 10}"}},
                     "status": {"allocatable": alloc, "capacity": dict(alloc)}})
    for g in range(pods // gang):
        name = f"g{g:05d}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
                     "spec": {"minMember": gang}, "status": {"phase": "Inqueue"}})
        sel = {"matchLabels": {"gang": name}}
        spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}]
        if g % 5 == 0:
            spread.append({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                           "labelSelector": sel})
        for k in range(gang):
            objs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{name}-{k}", "namespace": "ns", "labels": {"gang": name},
                                      "creationTimestamp": "2026-01-01T00:00:00Z",
                                      "annotations": {"scheduling.k8s.io/group-name": name}},
                         "spec": {"schedulerName": "volcano",
                                  "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                      {"topologyKey": "kubernetes.io/hostname", "labelSelector": sel}]}},
                                  "topologySpreadConstraints": spread,
                                  "containers": [{"name": "c", "resources": {"requests": {"cpu": "1",
                                                                                        "memory": "1Gi"}}}]},
                         "status": {"phase": "Pending"}})
    return objs


def allocate(objs: list[Obj]) -> tuple[float, dict[str, str]]:
    ssn = Session(SchedulerCache.from_objects(objs).snapshot(), load_conf_file(None))
    t0 = time.perf_counter()
    result = ssn.run()
    return time.perf_counter() - t0, result.binds


@pytest.mark.slow
def test_2000_anti_affinity_pods_on_1000_nodes(benchmark: Any) -> None:
    objs = affinity_cluster(1000, 2000, 10)
    seconds, binds = benchmark.pedantic(allocate, args=(objs,), rounds=1, iterations=1)
    print(f"\n2,000 anti-affinity pods on 1,000 nodes: {seconds:.2f} s, {len(binds)} bound")
    assert len(binds) == 2000
    by_gang: dict[str, set[str]] = {}
    for pod, node in binds.items():
        by_gang.setdefault(pod.rsplit("-", 1)[0], set()).add(node)
    assert all(len(nodes) == 10 for nodes in by_gang.values())  # the anti-affinity held
    assert seconds < 30.0
