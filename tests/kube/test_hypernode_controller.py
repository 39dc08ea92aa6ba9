"""HyperNodes in the Kubernetes mode, against the in-memory API: the HyperNode controller (label discovery from the
discovery ConfigMap, ``status.nodeCount``) and the scheduler's HyperNode informer."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.commands.controller import KNOWN_CONTROLLERS, controller_enabled, parse_gates
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.hypernode_controller import HyperNodeControllerRunner, default_configmap
from pyvolcano.kube.resources import CONFIGMAP, HYPERNODE, NODE, POD, PODGROUP, QUEUE
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from tests.confs import TOPO_CONF
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, node, pod, podgroup, queue

LABEL_CONF = """networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      rack: [{nodeLabel: example.com/spine}, {nodeLabel: example.com/tor}, {nodeLabel: kubernetes.io/hostname}]
"""



def configmap(text: str, name: str = "volcano-controller-configmap") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "volcano-system"},
            "data": {"volcano-controller.conf": text}}


def rack_node(name: str, tor: str, spine: str = "s", cpu: str = "4") -> dict[str, Any]:
    return node(name, cpu=cpu, labels={"example.com/tor": tor, "example.com/spine": spine,
                                       "kubernetes.io/hostname": name})


def hypernodes(api: FakeApi) -> dict[str, dict[str, Any]]:
    return {h["metadata"]["name"]: h for h in api.objects(HYPERNODE)}


def leaves(api: FakeApi) -> dict[str, tuple[list[str], int]]:
    """tor label value -> (member names, status.nodeCount) of the discovered tier-1 HyperNodes."""
    out = {}
    for h in api.objects(HYPERNODE):
        tor = (h["metadata"].get("labels") or {}).get("example.com/tor")
        if tor:
            out[tor] = ([m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]],
                        (h.get("status") or {}).get("nodeCount"))
    return out


@pytest.fixture
def runner() -> Iterator[Any]:
    made: list[HyperNodeControllerRunner] = []

    def make(api: FakeApi) -> HyperNodeControllerRunner:
        r = HyperNodeControllerRunner(api, settle=0.01, retry=0.1)
        made.append(r)
        assert r.start(5)
        return r

    yield make
    for r in made:
        r.stop()


def test_default_configmap_follows_volcanos_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBE_POD_NAMESPACE", raising=False)
    monkeypatch.delenv("HELM_RELEASE_NAME", raising=False)
    assert default_configmap() == ("volcano-system", "volcano-controller-configmap")
    monkeypatch.setenv("KUBE_POD_NAMESPACE", "vc")
    monkeypatch.setenv("HELM_RELEASE_NAME", "prod")
    assert default_configmap() == ("vc", "prod-controller-configmap")


def test_label_discovery_creates_counts_follows_and_stops(runner: Any) -> None:
    api = FakeApi()
    for i in range(4):
        api.create(NODE, rack_node(f"n{i}", tor=f"t{i // 2}"))
    api.create(NODE, node("plain"))  # no topology labels: in no HyperNode
    hand = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "by-hand"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}}]}}
    api.create(HYPERNODE, hand)
    r = runner(api)
    eventually(lambda: (hypernodes(api)["by-hand"].get("status") or {}).get("nodeCount") == 2,
               what="the hand-made HyperNode's nodeCount")
    assert len(hypernodes(api)) == 1  # no ConfigMap: no discovery
    api.create(CONFIGMAP, configmap(LABEL_CONF), "volcano-system")
    eventually(lambda: leaves(api) == {"t0": (["n0", "n1"], 2), "t1": (["n2", "n3"], 2)},
               what="two leaves with their nodeCount")
    (spine,) = [h for h in api.objects(HYPERNODE) if h["spec"]["tier"] == 2]
    assert spine["metadata"]["name"].startswith("hypernode-rack-tier2-")
    assert spine["metadata"]["labels"] == {"volcano.sh/network-topology-source": "label", "example.com/spine": "s"}
    assert spine["spec"]["tierName"] == "example.com/spine" and spine["status"]["nodeCount"] == 2
    names = set(hypernodes(api))

    # a node moves to the other leaf: same HyperNodes, new members and counts
    api.patch(NODE, "n1", {"metadata": {"labels": {"example.com/tor": "t1"}}})
    eventually(lambda: leaves(api) == {"t0": (["n0"], 1), "t1": (["n1", "n2", "n3"], 3)}, what="n1 in t1")
    assert set(hypernodes(api)) == names
    # a new node matching the hand-made HyperNode's regex is counted (Volcano would wait for a HyperNode event)
    api.delete(NODE, "n0")
    eventually(lambda: "t0" not in leaves(api), what="the emptied leaf to go")
    eventually(lambda: hypernodes(api)["by-hand"]["status"]["nodeCount"] == 1, what="the regex count")
    # a discovered HyperNode deleted by hand is made again
    leaf = next(n for n, h in hypernodes(api).items() if (h["metadata"].get("labels") or {}).get("example.com/tor") == "t1")
    api.delete(HYPERNODE, leaf)
    eventually(lambda: leaves(api).get("t1") == (["n1", "n2", "n3"], 3), what="the leaf to come back")

    # an invalid conf is reported and the previous one stays in force
    bad = {"data": {"volcano-controller.conf": "networkTopologyDiscovery: 3"}}
    api.patch(CONFIGMAP, "volcano-controller-configmap", bad, "volcano-system")
    eventually(lambda: r._bad_conf is not None, what="the bad conf to be seen")
    assert "field networkTopologyDiscovery: must be a list" in r._bad_conf
    assert r.ctrl.conf.label_types == {"rack": ["example.com/tor", "example.com/spine"]}
    # the ConfigMap deleted: discovery is off, and what it made stays (as in Volcano)
    api.delete(CONFIGMAP, "volcano-controller-configmap", "volcano-system")
    eventually(lambda: r.ctrl.conf.label_types is None, what="discovery off")
    before = set(hypernodes(api))
    api.patch(NODE, "n2", {"metadata": {"labels": {"example.com/tor": "t9"}}})
    api.create(NODE, rack_node("n7", tor="t7"))
    eventually(lambda: "n7" in r.ctrl.nodes, what="the controller to see n7")
    r.run_once()
    assert set(hypernodes(api)) == before
    assert r.alive


def test_other_configmaps_are_ignored_and_api_errors_retried(runner: Any, caplog: pytest.LogCaptureFixture) -> None:
    api = FakeApi()
    api.create(NODE, rack_node("n0", tor="t0"))
    api.create(CONFIGMAP, configmap(LABEL_CONF, name="something-else"), "volcano-system")
    api.fail("create", ApiError(500, "InternalError", "etcd is down"), times=2,
             when=lambda res, ns, name: res == HYPERNODE)
    r = runner(api)
    assert r.ctrl.conf.label_types is None
    with caplog.at_level(logging.WARNING):
        api.create(CONFIGMAP, configmap(LABEL_CONF), "volcano-system")
        eventually(lambda: leaves(api) == {"t0": (["n0"], 1)}, what="the leaf after two failed creates")
    assert r.errors >= 2 and "etcd is down" in caplog.text


def test_without_the_crd_the_controller_and_scheduler_still_start() -> None:
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    api.create(NODE, node("n1"))
    api.fail("list", ApiError(404, "NotFound", "the server could not find the requested resource"), times=1000,
             when=lambda res, ns, name: res == HYPERNODE)
    r = HyperNodeControllerRunner(api, settle=0.01)
    s = KubeScheduler(api, ConfFile(None), SchedulerOptions(period=0.05))
    try:
        assert r.start(5)
        assert s.start_informers(timeout=5)
        assert next(x for x in s.reflectors if x.res == HYPERNODE).missing
        api.create(PODGROUP, podgroup("g", "ns", 1))
        api.create(POD, pod("g-0", "g", "ns"))
        eventually(lambda: "ns/g-0" in s.cache.tasks, what="the pod in the cache")
        s.run_once()
        assert s.wait_binds(5)
        assert api.obj(POD, "g-0", "ns")["spec"].get("nodeName") == "n1"
    finally:
        s.stop()
        r.stop()


def test_scheduler_watches_hypernodes_and_keeps_a_hard_gang_in_one_leaf(tmp_path: Any) -> None:
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    for i in range(4):
        api.create(NODE, rack_node(f"n{i}", tor=f"t{i // 2}"))
    api.create(POD, {**pod("busy-0", "busy", "ns", cpu="1", node_name="n3", phase="Running")})
    api.create(PODGROUP, podgroup("busy", "ns", 1))
    conf = tmp_path / "sched.conf"
    conf.write_text(TOPO_CONF)
    s = KubeScheduler(api, ConfFile(str(conf)), SchedulerOptions(period=0.05))
    r = HyperNodeControllerRunner(api, settle=0.01)
    try:
        assert r.start(5)
        api.create(CONFIGMAP, configmap(LABEL_CONF), "volcano-system")
        eventually(lambda: len(leaves(api)) == 2, what="discovery")
        assert s.start_informers(timeout=5)
        eventually(lambda: len(s.cache.hypernodes) == 3, what="the scheduler's HyperNode informer")
        # a hard tier-1 gang of two 3-cpu pods fits in either leaf; bin-packing by hypernode picks the fuller t1
        gang = podgroup("a", "ns", 2)
        gang["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        api.create(PODGROUP, gang)
        for i in range(2):
            api.create(POD, pod(f"a-{i}", "a", "ns", cpu="3"))
        eventually(lambda: len(s.cache.tasks) == 3, what="the gang in the cache")
        s.run_once()
        assert s.wait_binds(5)
        placed = {api.obj(POD, f"a-{i}", "ns")["spec"].get("nodeName") for i in range(2)}
        assert placed == {"n2", "n3"}, placed
        # a gang bigger than any leaf waits under hard tier 1; deleting the HyperNodes lifts the limit (no tree:
        # the virtual top alone)
        # (9 one-cpu pods: t0 has 8 cpus free, t1 one)
        big = podgroup("b", "ns", 9)
        big["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        api.create(PODGROUP, big)
        for i in range(9):
            api.create(POD, pod(f"b-{i}", "b", "ns", cpu="1"))
        eventually(lambda: len(s.cache.tasks) == 12, what="the second gang in the cache")
        api.patch(CONFIGMAP, "volcano-controller-configmap", {"data": {"volcano-controller.conf": ""}},
                  "volcano-system")
        eventually(lambda: r.ctrl.conf.label_types is None, what="discovery off")
        s.run_once()
        assert s.wait_binds(5)
        assert not any(api.obj(POD, f"b-{i}", "ns")["spec"].get("nodeName") for i in range(9))
        for name in list(hypernodes(api)):
            api.delete(HYPERNODE, name)
        eventually(lambda: not s.cache.hypernodes, what="the deletes in the scheduler's cache")
        s.run_once()
        assert s.wait_binds(5)
        assert all(api.obj(POD, f"b-{i}", "ns")["spec"].get("nodeName") for i in range(9))
    finally:
        s.stop()
        r.stop()


@pytest.mark.parametrize(("gates", "on"), [
    ([], set(KNOWN_CONTROLLERS)),
    (["*"], set(KNOWN_CONTROLLERS)),
    (["*", "-hyperNode-controller"], set(KNOWN_CONTROLLERS) - {"hyperNode-controller"}),
    (["-hyperNode-controller", "*"], set(KNOWN_CONTROLLERS) - {"hyperNode-controller"}),
    (["hyperNode-controller"], {"hyperNode-controller"}),
    (["+job-controller", "-job-controller"], {"job-controller"}),  # the first mention wins
])
def test_controllers_gate_is_volcanos(gates: list[str], on: set[str]) -> None:
    assert {n for n in KNOWN_CONTROLLERS if controller_enabled(n, gates)} == on


def test_unknown_controller_is_refused_before_connecting() -> None:
    r = CliRunner().invoke(main, ["controller", "--controllers", "*,-sharding-controller", "--kubeconfig",
                                  "/nonexistent"])
    assert r.exit_code != 0 and "unknown controller 'sharding-controller'" in r.output
    assert parse_gates(("*,-queue-controller", "hyperNode-controller")) == ["*", "-queue-controller",
                                                                            "hyperNode-controller"]
