"""numa-aware (``plugins/numaaware.py``) and Numatopology objects (``api/numatopology.py``): the parts of Volcano's
``plugins/numaaware`` and the kubelet's CPU manager it copies, and bad input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from pyvolcano.api.numatopology import CPUInfo, parse_cpuset, parse_numatopology
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ManifestError
from pyvolcano.framework.cycle import run_session
from pyvolcano.plugins.numaaware import Topo, cpu_hints, guaranteed_cpus, merge, qos_guaranteed, take_by_topology

NT = {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": "n1"},
      "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
               "numares": {"cpu": {"allocatable": "0-7", "capacity": 8}},
               "cpuDetail": {str(c): {"numa": c // 4, "socket": c // 4, "core": c} for c in range(8)},
               "resReserved": {"cpu": "1"}}}


def topo8() -> Topo:
    return Topo({c: CPUInfo(c // 4, c // 4, c) for c in range(8)})


def test_parse() -> None:
    info = parse_numatopology(NT)
    assert info.allocatable == {"cpu": frozenset(range(8))} and info.capacity == {"cpu": 8}
    assert info.numa_nodes() == [0, 1] and info.reserved_cpu == 1000.0
    assert parse_cpuset("0-2,5, 7") == frozenset({0, 1, 2, 5, 7}) and parse_cpuset("") == frozenset()


@pytest.mark.parametrize(("path", "value", "field"), [
    (("numares", "cpu", "capacity"), -4, "spec.numares.cpu.capacity"),
    (("numares", "cpu", "allocatable"), "0-x", "spec.numares.cpu.allocatable"),
    (("numares", "cpu", "allocatable"), "5-2", "spec.numares.cpu.allocatable"),
    (("cpuDetail", "3", "numa"), -1, "spec.cpuDetail.3.numa"),
    (("cpuDetail", "3", "core"), 1.5, "spec.cpuDetail.3.core"),
    (("resReserved", "cpu"), "lots", "spec.resReserved.cpu"),
    (("policies", "CPUManagerPolicy"), 3, "spec.policies.CPUManagerPolicy"),
    # the typed model (api/numatopology.py): ASCII digits only, CPU ids bounded (no set of a billion ids)
    (("numares", "cpu", "allocatable"), "0-\u0663", "spec.numares.cpu.allocatable"),
    (("numares", "cpu", "allocatable"), "0-999999999", "spec.numares.cpu.allocatable"),
    (("numares", "cpu", "capacity"), True, "spec.numares.cpu.capacity"),
    (("podAllocations",), [{"uid": ["x"]}], "spec.podAllocations[0].uid"),
])
def test_bad_numatopology_names_object_and_field(path: tuple[str, ...], value: Any, field: str) -> None:
    obj = copy.deepcopy(NT)
    at = obj["spec"]
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    with pytest.raises(ManifestError) as err:
        parse_numatopology(obj)
    assert "Numatopology n1" in str(err.value) and field in str(err.value)


def test_qos_and_whole_cpus() -> None:
    def pod(req: dict[str, str], lim: dict[str, str]) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "c", "resources": {"requests": req, "limits": lim}}]}}
    assert qos_guaranteed(pod({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}))
    assert not qos_guaranteed(pod({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}))
    assert not qos_guaranteed(pod({"cpu": "2"}, {"cpu": "2"}))  # no memory limit
    assert not qos_guaranteed(pod({}, {}))
    assert qos_guaranteed({"status": {"qosClass": "Guaranteed"}, "spec": {}})
    assert guaranteed_cpus({"resources": {"requests": {"cpu": "3"}}}) == 3
    assert guaranteed_cpus({"resources": {"requests": {"cpu": "1500m"}}}) == 0
    assert guaranteed_cpus({"resources": {}}) is None


def test_take_by_topology() -> None:
    t = topo8()
    # 4 CPUs = a whole socket: Volcano's freeSockets keeps socket ids that are also free CPU ids (0 and 1)
    assert take_by_topology(t, range(8), 4) == frozenset({0, 1, 2, 3})
    assert take_by_topology(t, {5, 6, 7}, 2) is not None
    assert take_by_topology(t, {5, 6}, 3) is None
    assert take_by_topology(t, range(8), 0) == frozenset()


def test_hints_and_policies() -> None:
    info = parse_numatopology(NT)
    t = Topo(info.cpus)
    c3 = {"name": "c", "resources": {"requests": {"cpu": "3"}}}
    # reserved cpu 1 takes CPU 0: NUMA 0 keeps 3 free, NUMA 1 4; both single nodes preferred
    hints = cpu_hints(c3, info, t, {"cpu": frozenset(range(8))})
    assert hints == [(frozenset({0}), True), (frozenset({1}), True), (frozenset({0, 1}), False)]
    assert merge([0, 1], hints, single=True) == (frozenset({0}), True)
    # two free CPUs per NUMA node: no single node holds 3; single-numa-node has no preferred hint left
    tight = cpu_hints(c3, info, t, {"cpu": frozenset({2, 3, 6, 7})})
    assert tight == [(frozenset({0, 1}), False)]
    assert merge([0, 1], tight, single=True) == (frozenset({0, 1}), False)
    assert merge([0, 1], tight, single=False) == (frozenset({0, 1}), False)
    assert merge([0, 1], None, single=True) == (frozenset({0, 1}), True)  # no preference


def test_negative_cpu_count_is_skipped_and_the_rest_scheduled() -> None:
    bad = copy.deepcopy(NT)
    bad["metadata"]["name"] = "n2"
    bad["spec"]["numares"]["cpu"]["capacity"] = -8
    objects = [NT, bad,
               {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}},
               {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "a", "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a-0", "namespace": "ns", "annotations": {
                   "scheduling.k8s.io/group-name": "a", "volcano.sh/numa-topology-policy": "single-numa-node"}},
                "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                    "requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"}}]
    cache = SchedulerCache.from_objects(objects)
    assert len(cache.problems) == 1 and "Numatopology n2" in cache.problems[0]
    assert "spec.numares.cpu.capacity" in cache.problems[0]
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "numa-aware"}]}]}))
    assert run_session(cache, conf).binds == {"ns/a-0": "n1"}


def test_cycle_wide_shows_the_reasons_with_their_brackets() -> None:
    from pathlib import Path

    from click.testing import CliRunner

    from pyvolcano.cli import main
    path = Path(__file__).parent / "scenarios" / "numaaware" / "numa-policy-must-match-node.yaml"
    r = CliRunner().invoke(main, ["cycle", str(path), "-o", "wide"], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert "task topology policy[single-numa-node] is different with node[best-effort]" in r.output


def _numa_pod(name: str, cpu: str = "4", node: str = "") -> dict[str, Any]:
    r = {"cpu": cpu, "memory": "1Gi"}
    p: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "annotations": {
            "scheduling.k8s.io/group-name": name, "volcano.sh/numa-topology-policy": "single-numa-node"}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": r, "limits": r}}]},
        "status": {"phase": "Pending"}}
    if node:
        p["spec"]["nodeName"], p["status"]["phase"] = node, "Running"
    return p


def _pg(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}


def test_cpus_placed_stay_taken_across_sessions_until_the_numatopology_lists_every_pod() -> None:
    """Volcano's cache keeps the CPUs a session gave a pod (``AddUnassignedNumaPods``) and takes them from the
    node's Numatopology in each later snapshot until it lists every such pod of the node
    (``RefreshNumaSchedulerInfoByCrd``); deleting a pod drops its entry (``clearUnassignedNumaPod``)."""
    nt = copy.deepcopy(NT)
    del nt["spec"]["resReserved"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "16", "memory": "16Gi", "pods": "10"}}}
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "predicates"}, {"name": "numa-aware"}]}]}))
    cache = SchedulerCache.from_objects([nt, node])

    def place(name: str) -> bool:
        cache.upsert(_pg(name))
        cache.upsert(_numa_pod(name))
        got = run_session(cache, conf).binds
        if got:
            cache.upsert(_numa_pod(name, node="n1"))  # the bind, as the API server echoes it
        return got == {f"ns/{name}": "n1"}

    assert place("a") and place("b")  # NUMA node 0, then 1: a's CPUs were still taken
    assert not place("c")  # both NUMA nodes are taken, although the Numatopology still shows 8 free CPUs
    listed = copy.deepcopy(nt)
    listed["spec"]["podAllocations"] = [{"uid": "uid-a", "namespace": "ns", "name": "a"}]
    cache.upsert(listed)  # the exporter has seen a, not b: both stay taken
    assert not place("c")
    listed["spec"]["podAllocations"].append({"uid": "other", "namespace": "ns", "name": "b"})  # b by its name
    cache.upsert(listed)  # every pod listed: the entries go, the Numatopology alone counts (all 8 free here)
    assert place("c")
    cache.upsert(nt)  # listing no pod again: c's entry, made in that last session, takes its CPUs again
    cache.delete(_numa_pod("c", node="n1"))
    # c deleted: its entry went with it, and the Numatopology shows 8 free CPUs: d and e take one NUMA node each
    assert place("d") and place("e") and not place("f")


def test_a_cycle_keeps_nothing() -> None:
    """Two ``cycle`` runs are two clusters: nothing is carried."""
    nt = copy.deepcopy(NT)
    del nt["spec"]["resReserved"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "16", "memory": "16Gi", "pods": "10"}}}
    conf = load_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "numa-aware"}]}]}))
    for _ in range(3):
        objs = [nt, node, _pg("a"), _numa_pod("a"), _pg("b"), _numa_pod("b"), _pg("c"), _numa_pod("c")]
        assert len(run_session(SchedulerCache.from_objects(objs), conf).binds) == 2


def test_simulator_carries_the_cpus_until_the_pods_go() -> None:
    """In the simulator (no exporter: the Numatopology stays as given) a pod's CPUs stay taken in later sessions
    until its job finishes and the job controller deletes its pods: the third job waits for the first."""
    from pyvolcano.sim.engine import Simulator
    from pyvolcano.sim.workload import JobSpec, from_specs

    nt = copy.deepcopy(NT)
    del nt["spec"]["resReserved"]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "16", "memory": "16Gi", "pods": "10"}}}
    wl = from_specs([JobSpec(f"j{k}", 30.0 * k, cpu="3", memory="1Gi", duration=100) for k in range(3)])
    for _, job in wl.jobs:
        tmpl = job["spec"]["tasks"][0]["template"]
        tmpl["metadata"].setdefault("annotations", {})["volcano.sh/numa-topology-policy"] = "single-numa-node"
        res = tmpl["spec"]["containers"][0]["resources"]
        res["limits"] = dict(res["requests"])
    conf = load_conf(yaml.safe_dump({"actions": "enqueue, allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"}, {"name": "numa-aware"}]}]}))
    queue = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}]
    res = Simulator([node, nt], queue, wl, conf, period=10.0).run(until=1000.0)
    starts = {k.split("/")[-1]: r.first_start for k, r in res.records.items()}
    assert starts["j0"] is not None and starts["j1"] is not None and starts["j2"] is not None
    assert starts["j0"] < starts["j1"] < 60.0 and starts["j2"] >= starts["j0"] + 100.0, starts
