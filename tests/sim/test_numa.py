"""The simulator with Numatopology objects from the ``--cluster`` file (numa-aware plugin)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pyvolcano.conf.loader import load_conf
from pyvolcano.sim import metrics
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.run import load_cluster, load_numatopologies
from pyvolcano.sim.workload import from_manifests

QUEUE = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
NUMA_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: numa-aware
"""


def numatopo(name: str, allocatable: str, capacity: int = 8) -> dict[str, Any]:
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                     "numares": {"cpu": {"allocatable": allocatable, "capacity": capacity}},
                     "cpuDetail": {str(c): {"numa": c // 4, "socket": c // 4, "core": c} for c in range(8)}}}


def job(name: str) -> dict[str, Any]:
    res = {"cpu": "3", "memory": "1Gi"}
    tmpl = {"metadata": {"annotations": {"volcano.sh/numa-topology-policy": "single-numa-node",
                                         "pyvolcano.io/duration": "10"}},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": res, "limits": res}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"queue": "default", "minAvailable": 1, "tasks": [{"name": "w", "replicas": 1, "template": tmpl}]}}


def test_cluster_file_numatopologies_reach_the_simulator_and_a_bad_one_is_named(tmp_path: Path) -> None:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
              "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}} for n in ("n1", "n2")]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, numatopo("n1", "0-7"), numatopo("n2", "0-7", capacity=-8)]))
    assert [n["metadata"]["name"] for n in load_cluster(str(path))] == ["n1", "n2"]
    numa = load_numatopologies(str(path))
    assert [o["metadata"]["name"] for o in numa] == ["n1", "n2"]
    assert load_numatopologies("2x{cpu: 8, memory: 32Gi}") == []  # a compact spec has none
    sim = Simulator(load_cluster(str(path)), QUEUE, from_manifests([job("a")]), load_conf(NUMA_CONF),
                    numatopologies=numa)
    assert any("Numatopology n2" in p and "spec.numares.cpu.capacity" in p for p in sim.problems)
    rows = metrics.job_rows(sim.run())
    assert [r["phase"] for r in rows] == ["Completed"]  # on n1, the only node with NUMA information


def test_numatopology_decides_in_the_simulator() -> None:
    def completed(allocatable: str) -> int:
        nodes = parse_cluster_spec("1x{cpu: 8, memory: 32Gi}", prefix="n")
        sim = Simulator(nodes, QUEUE, from_manifests([job("a")]), load_conf(NUMA_CONF),
                        numatopologies=[numatopo(nodes[0]["metadata"]["name"], allocatable)])
        return sum(1 for r in metrics.job_rows(sim.run()) if r["phase"] == "Completed")
    assert completed("0-7") == 1
    assert completed("2-3,6-7") == 0  # no NUMA node has 3 free CPUs: the job waits for ever
