"""The Kubernetes scheduler list-watches Numatopology objects (Volcano's numaInfoInformer) for numa-aware: a pod
that no NUMA node can hold waits, and is bound once the node's Numatopology shows free CPUs."""

from __future__ import annotations

from pathlib import Path

from pyvolcano.kube.conf_watch import ConfFile
from pyvolcano.kube.resources import NODE, NUMATOPOLOGY, POD, PODGROUP
from pyvolcano.kube.resources import QUEUE as QUEUE_RES
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import node, pod, podgroup, queue
from tests.kube.test_scheduler import Harness
from tests.test_numaaware import NT

CONF = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: numa-aware
"""


def test_numatopology_is_watched(tmp_path: Path) -> None:
    api = FakeApi()
    api.create(QUEUE_RES, queue("default"))
    api.create(NODE, node("n1", cpu="8"))
    nt = {**NT, "spec": {**NT["spec"], "numares": {"cpu": {"allocatable": "2-3,6-7", "capacity": 8}}}}
    api.create(NUMATOPOLOGY, nt)
    api.create(PODGROUP, podgroup("a"))
    p = pod("a-0", "a", cpu="3")
    p["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = "single-numa-node"
    p["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "3", "memory": "1Gi"}
    api.create(POD, p, "ns")
    (tmp_path / "conf.yaml").write_text(CONF)
    h = Harness(api, ConfFile(str(tmp_path / "conf.yaml")))
    try:
        assert h.session().binds == {}  # two free CPUs per NUMA node: no single one holds 3
        cur = api.obj(NUMATOPOLOGY, "n1")
        assert cur is not None
        cur["spec"]["numares"]["cpu"]["allocatable"] = "0-7"
        api.replace(NUMATOPOLOGY, cur)
        h.settle(lambda: h.s.cache.numatopo["n1"].allocatable["cpu"] == frozenset(range(8)))
        assert h.session().binds == {"ns/a-0": "n1"}
    finally:
        h.stop()


def test_the_scheduler_keeps_placed_cpus_until_the_numatopology_lists_the_pods(tmp_path: Path) -> None:
    """Volcano's cache keeps the CPUs it gave bound pods (``AddUnassignedNumaPods``) until the node's Numatopology
    lists every one of them in ``podAllocations`` (``RefreshNumaSchedulerInfoByCrd``): so does the scheduler."""
    api = FakeApi()
    api.create(QUEUE_RES, queue("default"))
    api.create(NODE, node("n1", cpu="16"))
    nt = {**NT, "spec": {**NT["spec"], "numares": {"cpu": {"allocatable": "0-7", "capacity": 8}}}}
    nt["spec"].pop("resReserved", None)
    api.create(NUMATOPOLOGY, nt)
    (tmp_path / "conf.yaml").write_text(CONF)
    h = Harness(api, ConfFile(str(tmp_path / "conf.yaml")))

    def add(name: str) -> None:
        api.create(PODGROUP, podgroup(name))
        p = pod(f"{name}-0", name, cpu="3")
        p["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = "single-numa-node"
        p["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "3", "memory": "1Gi"}
        api.create(POD, p, "ns")
        h.settle(lambda: f"ns/{name}-0" in h.s.cache.tasks)

    try:
        for name in ("a", "b"):
            add(name)
            assert h.session().binds == {f"ns/{name}-0": "n1"}
        add("c")
        assert h.session().binds == {}  # a and b each hold one NUMA node, which the Numatopology does not show
        cur = api.obj(NUMATOPOLOGY, "n1")
        assert cur is not None
        cur["spec"]["podAllocations"] = [{"namespace": "ns", "name": "a-0"}, {"namespace": "ns", "name": "b-0"}]
        api.replace(NUMATOPOLOGY, cur)
        h.settle(lambda: len(h.s.cache.numatopo["n1"].assigned) == 2)
        assert h.session().binds == {"ns/c-0": "n1"}  # both listed: the Numatopology alone counts
    finally:
        h.stop()
