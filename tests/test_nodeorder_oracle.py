"""nodeorder against the real Volcano: random small clusters with one pending pod (PreferNoSchedule taints,
preferred node affinity, pods without requests, init-free multi-container pods, GPUs, random nodeorder weights,
sometimes binpack), run through ``vc-oracle`` (Volcano master ed72c7c8) and pyvolcano's two engines.  The pod
must land on a node pyvolcano scores best (``record_ties``): Volcano picks among equal nodes at random.

Slow (about a second per case, the oracle's run): ``make bench``.  Skipped without the oracle."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import cycle_objects

ORACLE = Path(__file__).resolve().parents[1] / ".." / "shared" / "tools" / "volcano" / "vc-oracle"


def requests(cpu_m: int | None = None, mem_mi: int | None = None, gpu: int | None = None) -> dict[str, str]:
    """A container's requests; None leaves the resource out (Kubernetes' score defaults then apply)."""
    r = {}
    if cpu_m is not None:
        r["cpu"] = f"{cpu_m}m"
    if mem_mi is not None:
        r["memory"] = f"{mem_mi}Mi"
    if gpu:
        r["nvidia.com/gpu"] = str(gpu)
    return r


def running_pod(rng: random.Random, node: str, name: str, gpus: bool) -> dict[str, Any]:
    containers = []
    for c in range(rng.randint(1, 2)):
        req = requests(rng.choice([None, 0, 100, 250, 500, 1000, 1500]),
                       rng.choice([None, 0, 128, 512, 1024, 3000]),
                       rng.choice([None, None, 1]) if gpus else None)
        containers.append({"name": f"c{c}", "resources": {"requests": req}})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "other", "uid": name},
            "spec": {"schedulerName": "default-scheduler", "nodeName": node, "containers": containers},
            "status": {"phase": "Running"}}


def case(rng: random.Random) -> dict[str, Any]:
    objs: list[dict[str, Any]] = []
    gpu_cluster = rng.random() < 0.3
    for i in range(rng.randint(2, 4)):
        alloc = {"cpu": str(rng.choice([2, 4, 8, 16])), "memory": f"{rng.choice([4, 8, 16, 32])}Gi", "pods": "110"}
        if gpu_cluster and rng.random() < 0.7:
            alloc["nvidia.com/gpu"] = str(rng.choice([2, 4, 8]))
        spec: dict[str, Any] = {}
        if rng.random() < 0.4:
            keys = rng.sample(["t1", "t2", "t3"], rng.randint(1, 3))
            spec["taints"] = [{"key": k, "value": "v", "effect": "PreferNoSchedule"} for k in keys]
        labels = {"zone": rng.choice("ab"), "kind": rng.choice(["kx", "ky"])}
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
                     "spec": spec, "status": {"allocatable": alloc, "capacity": dict(alloc)}})
        for j in range(rng.randint(0, 3)):
            objs.append(running_pod(rng, f"n{i}", f"r{i}-{j}", "nvidia.com/gpu" in alloc))
    containers = [{"name": f"c{c}", "resources": {"requests": requests(
        rng.choice([None, 100, 500, 1000]), rng.choice([None, 256, 1024, 2048]),
        rng.choice([None, 1, 2]) if gpu_cluster else None)}} for c in range(rng.randint(1, 2))]
    if all(not c["resources"]["requests"] for c in containers):
        containers[0]["resources"]["requests"] = {"cpu": "200m"}
    pod_spec: dict[str, Any] = {"schedulerName": "volcano", "containers": containers}
    if rng.random() < 0.4:
        prefs = rng.sample([("zone", "a"), ("zone", "b"), ("kind", "kx")], rng.randint(1, 2))
        pod_spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": k, "operator": "In", "values": [v]}]}} for k, v in prefs]}}
    if rng.random() < 0.3:
        pod_spec["tolerations"] = [{"key": rng.choice(["t1", "t2"]), "operator": "Exists",
                                    "effect": "PreferNoSchedule"}]
    objs += [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"},
         "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Inqueue"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "p",
         "annotations": {"scheduling.k8s.io/group-name": "pg"}}, "spec": pod_spec, "status": {"phase": "Pending"}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}, "status": {"state": "Open"}},
    ]
    weights = ["leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
               "tainttoleration.weight"]
    args = {k: rng.randint(0, 5) for k in weights if rng.random() < 0.4}
    plugins = "  - name: predicates\n  - name: nodeorder\n"
    if args:
        plugins += "    arguments:\n" + "".join(f"      {k}: {v}\n" for k, v in args.items())
    if rng.random() < 0.3:
        plugins += f"  - name: binpack\n    arguments:\n      binpack.weight: {rng.randint(1, 10)}\n"
    conf = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n' + plugins
    return {"name": "random nodeorder case", "config": conf, "objects": objs}


def oracle(path: Path) -> dict[str, Any]:
    out = json.loads(subprocess.run([str(ORACLE), str(path)], capture_output=True, text=True, check=False).stdout)
    if not out["binds"] and not out["pipelined"]:  # under load the oracle can stop waiting before the bind
        out = json.loads(subprocess.run([str(ORACLE), "-quiet", "2s", str(path)], capture_output=True, text=True,
                                        check=False).stdout)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not ORACLE.exists(), reason="vc-oracle not found at ../shared/tools/volcano")
@pytest.mark.parametrize("seed", range(40))
def test_one_pod_lands_where_volcano_puts_it(seed: int, tmp_path: Path) -> None:
    sc = case(random.Random(seed))
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(sc))
    want = oracle(path)
    volcano = want["binds"].get("ns/p") or want["pipelined"].get("ns/p")
    conf = load_conf(sc["config"])
    for engine in ("vector", "scalar"):
        result, _ = cycle_objects(sc["objects"], conf, engine=engine, record_ties=True)
        ours = result.binds.get("ns/p") or result.pipelined.get("ns/p")
        assert (ours is None) == (volcano is None), f"{engine}: Volcano {volcano}, pyvolcano {ours}"
        if volcano is not None:
            assert volcano in result.ties["ns/p"], f"{engine}: Volcano {volcano}, best here {result.ties['ns/p']}"
