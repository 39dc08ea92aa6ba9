"""The HyperNode controller's rules (``controllers/hypernode.py``): the discovery conf, label discovery and
``status.nodeCount`` as Volcano master's ``pkg/controllers/hypernode`` has them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyvolcano.api.hypernode import Topology, parse_hypernode
from pyvolcano.controllers.hypernode import (
    SOURCE_LABEL,
    HyperNodeController,
    MemoryHyperNodes,
    discover_label_hypernodes,
    hypernodes_from_labels,
    member_count,
    parse_discovery_conf,
)
from pyvolcano.errors import UserError
from tests.confs import LABEL_DISCOVERY

# Volcano's docs/user-guide/how_to_use_hypernode_auto_discovery.md, both types
CONF = """
networkTopologyDiscovery:
  - source: ufm
    enabled: true
    interval: 10m
    credentials:
      secretRef: {name: ufm-credentials, namespace: volcano-system}
    config: {endpoint: "https://ufm-server:8080", insecureSkipVerify: true}
  - source: roce
    enabled: false
    interval: 15m
    config: {endpoint: "https://roce-server:9090"}
""" + LABEL_DISCOVERY


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def doc_nodes() -> list[dict[str, Any]]:
    """The eight nodes of Volcano's example: s0..s3 of two nodes each at tier 1, s4 over s0/s1, s5 over s2/s3."""
    return [node(f"node{i}", **{"volcano.sh/hypernode": f"s{i // 2}", "volcano.sh/hypercluster": f"s{4 + i // 4}"})
            for i in range(8)]


def members(hn: dict[str, Any]) -> list[str]:
    return [m["selector"]["exactMatch"]["name"] for m in hn["spec"]["members"]]


def by_label(hns: list[dict[str, Any]], key: str, value: str) -> dict[str, Any]:
    (hn,) = [h for h in hns if h["metadata"]["labels"].get(key) == value]
    return hn


# --- the conf ------------------------------------------------------------------------------------------
def test_conf_keeps_the_enabled_label_source_tier_one_first_without_the_hostname() -> None:
    conf = parse_discovery_conf(CONF)
    assert conf.label_types == {"topologyA2": ["volcano.sh/tor"],
                                "topologyA3": ["volcano.sh/hypernode", "volcano.sh/hypercluster"]}
    assert conf.unsupported == ("ufm",)  # enabled but not implemented: reported, ignored; roce is disabled


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "networkTopologyDiscovery: []",
                                  "networkTopologyDiscovery:\n- source: label\n  enabled: false\n"])
def test_no_enabled_label_source_is_no_discovery(text: str) -> None:
    assert parse_discovery_conf(text).label_types is None


@pytest.mark.parametrize(("text", "field", "says"), [
    ("networkTopologyDiscovery: 3", "networkTopologyDiscovery", "must be a list"),
    ("networkTopologyDiscovery:\n- enabled: true", "networkTopologyDiscovery[0].source", "is required"),
    ("networkTopologyDiscovery:\n- {source: label, enabled: 'true'}", "networkTopologyDiscovery[0].enabled",
     "true or false"),
    ("networkTopologyDiscovery:\n- {source: label, enabled: true, interval: 5x}",
     "networkTopologyDiscovery[0].interval", "not a duration"),
    ("networkTopologyDiscovery:\n- {source: label, enabled: true, config: {networkTopologyTypes: [a]}}",
     "networkTopologyDiscovery[0].config.networkTopologyTypes", "must be a mapping"),
    ("networkTopologyDiscovery:\n- {source: label, enabled: true, config: {networkTopologyTypes: {t: [{x: 1}]}}}",
     "networkTopologyDiscovery[0].config.networkTopologyTypes.t[0].nodeLabel", "is required"),
])
def test_a_bad_conf_names_the_configmap_and_the_field(text: str, field: str, says: str) -> None:
    with pytest.raises(UserError) as e:
        parse_discovery_conf(text, "ConfigMap ns/cm")
    msg = str(e.value)
    assert msg.startswith("ConfigMap ns/cm key volcano-controller.conf: ") and f"field {field}:" in msg, msg
    assert says in msg


def test_unreadable_yaml_is_a_user_error() -> None:
    with pytest.raises(UserError, match="ConfigMap ns/cm"):
        parse_discovery_conf("a: [", "ConfigMap ns/cm")


def test_a_long_type_name_or_a_repeated_label_skips_that_type_only() -> None:
    conf = parse_discovery_conf("""
networkTopologyDiscovery:
- source: label
  enabled: true
  interval: 5000000000
  config:
    networkTopologyTypes:
      aVeryLongTopologyTypeName: [{nodeLabel: a}, {nodeLabel: h}]
      twice: [{nodeLabel: a}, {nodeLabel: a}]
      ok: [{nodeLabel: 7}, {nodeLabel: h}]
""")
    assert conf.label_types == {"ok": ["7"]}  # mapstructure's weak decoding: 7 is the label "7"
    assert len(conf.warnings) == 2
    assert any("aVeryLongTopologyTypeName" in w and "20 characters" in w for w in conf.warnings)
    assert any("twice" in w and "repeated" in w for w in conf.warnings)


# --- discovery -----------------------------------------------------------------------------------------
def test_volcanos_example_two_tiers() -> None:
    hns = hypernodes_from_labels(doc_nodes(), CONF, seed=1)
    assert len(hns) == 6
    for hn in hns:
        parse_hypernode(hn)  # what the scheduler reads
        assert hn["metadata"]["labels"][SOURCE_LABEL] == "label"
    s0 = by_label(hns, "volcano.sh/hypernode", "s0")
    assert s0["metadata"]["name"].startswith("hypernode-topologya3-tier1-")
    assert len(s0["metadata"]["name"]) == len("hypernode-topologya3-tier1-") + 5
    assert s0["spec"]["tier"] == 1 and s0["spec"]["tierName"] == "volcano.sh/hypernode"
    assert members(s0) == ["node0", "node1"]
    assert {m["type"] for m in s0["spec"]["members"]} == {"Node"}
    s4 = by_label(hns, "volcano.sh/hypercluster", "s4")
    assert s4["spec"]["tier"] == 2 and s4["spec"]["tierName"] == "volcano.sh/hypercluster"
    assert s4["metadata"]["name"].startswith("hypernode-topologya3-tier2-")
    s1 = by_label(hns, "volcano.sh/hypernode", "s1")
    assert members(s4) == sorted([s0["metadata"]["name"], s1["metadata"]["name"]])
    assert {m["type"] for m in s4["spec"]["members"]} == {"HyperNode"}
    # Volcano's nodeCount counts member names: two nodes under s0, two HyperNodes under s4
    assert s0["status"]["nodeCount"] == 2 and s4["status"]["nodeCount"] == 2
    # the tree the scheduler builds from them
    topo = Topology.build([parse_hypernode(h) for h in hns], [f"node{i}" for i in range(8)], [{}] * 8)
    assert topo.ready
    assert topo.node_count(topo.idx(s4["metadata"]["name"])) == 4
    assert topo.parent[topo.idx(s0["metadata"]["name"])] == topo.idx(s4["metadata"]["name"])


def test_a_node_without_a_label_stops_its_chain_and_names_are_reused() -> None:
    types = {"t": ["tor", "spine"]}
    nodes = [("a", {"tor": "x", "spine": "p"}), ("b", {"tor": "x"}), ("c", {"spine": "p"}), ("d", {})]
    first = discover_label_hypernodes(nodes, types, rng=random.Random(3))
    assert [(h["spec"]["tier"], members(h)) for h in first] == [(1, ["a", "b"]), (2, [first[0]["metadata"]["name"]])]
    # a second round (another random generator) finds the same names through the existing HyperNodes' labels
    again = discover_label_hypernodes(nodes, types, first, rng=random.Random(99))
    assert [h["metadata"]["name"] for h in again] == [h["metadata"]["name"] for h in first]
    # HyperNodes that are not the label source's are not reused
    foreign = [{**h, "metadata": {**h["metadata"], "labels": {"tor": "x"}}} for h in first]
    other = discover_label_hypernodes(nodes, types, foreign, rng=random.Random(99))
    assert other[0]["metadata"]["name"] != first[0]["metadata"]["name"]


def test_types_sharing_a_label_share_its_hypernodes() -> None:
    """label.go caches the HyperNode of a label key=value across topology types."""
    hns = discover_label_hypernodes([("a", {"tor": "x"}), ("b", {"tor": "x"})], {"one": ["tor"], "two": ["tor"]},
                                    rng=random.Random(0))
    assert len(hns) == 1 and members(hns[0]) == ["a", "b"]
    assert hns[0]["metadata"]["name"].startswith("hypernode-one-tier1-")


def test_type_names_are_cleaned_into_hypernode_names() -> None:
    (hn,) = discover_label_hypernodes([("a", {"tor": "x"})], {"GPU_A100 x": ["tor"]}, rng=random.Random(0))
    assert hn["metadata"]["name"].startswith("hypernode-gpu-a100-x-tier1-")
    parse_hypernode(hn)


# --- nodeCount -----------------------------------------------------------------------------------------
def hypernode(name: str, *sels: dict[str, Any], mtype: str = "Node") -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": 1, "members": [{"type": mtype, "selector": s} for s in sels]}}


NODES = {"master": {}, "node1": {"zone": "east"}, "node2": {"zone": "east"}, "node3": {}, "node4": {}}


@pytest.mark.parametrize(("sels", "count"), [
    # Volcano's hypernode_handler_test.go "Exact & Label & Regex Match": master + east (1, 2) + node[1-3]
    ([{"exactMatch": {"name": "master"}}, {"labelMatch": {"matchLabels": {"zone": "east"}}},
      {"regexMatch": {"pattern": "node[1-3]"}}], 4),
    # an exact name counts even when no such node exists
    ([{"exactMatch": {"name": "gone-1"}}, {"exactMatch": {"name": "gone-2"}}], 2),
    # an empty label selector matches nothing; a regex searches anywhere in the name
    ([{"labelMatch": {}}, {"regexMatch": {"pattern": "de4"}}], 1),
])
def test_node_count_is_volcanos_member_count(sels: list[dict[str, Any]], count: int) -> None:
    assert member_count(parse_hypernode(hypernode("h", *sels)), NODES) == count


def test_node_count_of_hypernode_members_counts_the_members() -> None:
    spine = hypernode("spine", {"exactMatch": {"name": "leaf-a"}}, {"exactMatch": {"name": "leaf-b"}},
                      mtype="HyperNode")
    assert member_count(parse_hypernode(spine), NODES) == 2


# --- the controller ------------------------------------------------------------------------------------
def run(ctrl: HyperNodeController, store: MemoryHyperNodes) -> None:
    """Rounds until nothing is left to do, with the store's objects fed back as an informer would."""
    for _ in range(5):
        p = ctrl.plan()
        if not p:
            return
        assert ctrl.apply(p, store) == []
        for obj in store.objects.values():
            ctrl.on_hypernode("MODIFIED", obj)
        for name in set(ctrl.hypernodes) - set(store.objects):
            ctrl.on_hypernode("DELETED", {"metadata": {"name": name}})
    raise AssertionError("the controller does not settle")


def leaf_conf() -> str:
    return ("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n    networkTopologyTypes:\n"
            "      t: [{nodeLabel: spine}, {nodeLabel: tor}, {nodeLabel: kubernetes.io/hostname}]\n")


def test_relabelling_moves_a_node_and_stale_hypernodes_go() -> None:
    ctrl, store = HyperNodeController(random.Random(0)), MemoryHyperNodes()
    ctrl.set_conf(parse_discovery_conf(leaf_conf()))
    hand = hypernode("hand-made", {"exactMatch": {"name": "n1"}})
    store.objects["hand-made"] = hand
    ctrl.on_hypernode("ADDED", hand)
    for i in range(4):
        ctrl.on_node("ADDED", node(f"n{i}", tor=f"t{i // 2}", spine="s"))
    run(ctrl, store)
    leaves = {h["metadata"]["labels"]["tor"]: h for h in store.objects.values() if "tor" in h["metadata"].get("labels", {})}
    assert {k: members(h) for k, h in leaves.items()} == {"t0": ["n0", "n1"], "t1": ["n2", "n3"]}
    assert store.objects["hand-made"]["status"]["nodeCount"] == 1  # counted, never reconciled away
    names = set(store.objects)
    ctrl.on_node("MODIFIED", node("n1", tor="t1", spine="s"))
    assert ctrl.discover_pending
    run(ctrl, store)
    assert set(store.objects) == names  # same names, new members
    leaves = {h["metadata"]["labels"]["tor"]: h for h in store.objects.values() if "tor" in h["metadata"].get("labels", {})}
    assert members(leaves["t0"]) == ["n0"] and members(leaves["t1"]) == ["n1", "n2", "n3"]
    assert leaves["t1"]["status"]["nodeCount"] == 3
    ctrl.on_node("DELETED", node("n0", tor="t0", spine="s"))
    run(ctrl, store)
    assert "t0" not in {h["metadata"].get("labels", {}).get("tor") for h in store.objects.values()}
    assert "hand-made" in store.objects


def test_unrelated_label_changes_do_not_rediscover_and_a_deleted_hypernode_comes_back() -> None:
    ctrl, store = HyperNodeController(random.Random(0)), MemoryHyperNodes()
    ctrl.set_conf(parse_discovery_conf(leaf_conf()))
    ctrl.on_node("ADDED", node("n0", tor="t0"))
    run(ctrl, store)
    assert ctrl.rounds == 1 and len(store.objects) == 1
    ctrl.on_node("MODIFIED", node("n0", tor="t0", color="blue"))
    assert not ctrl.discover_pending
    (name,) = store.objects
    store.delete_hypernode(name)
    ctrl.on_hypernode("DELETED", {"metadata": {"name": name}})  # label.go: DeleteHyperNode rediscovers
    assert ctrl.discover_pending
    run(ctrl, store)
    (back,) = store.objects.values()  # made again (under a new random name: none carried the label any more)
    assert back["metadata"]["labels"]["tor"] == "t0" and members(back) == ["n0"]
    assert back["status"]["nodeCount"] == 1


def test_counts_follow_nodes_for_regex_members() -> None:
    ctrl, store = HyperNodeController(), MemoryHyperNodes()
    hn = hypernode("rx", {"regexMatch": {"pattern": "^gpu-"}})
    store.objects["rx"] = hn
    ctrl.on_hypernode("ADDED", hn)
    ctrl.on_node("ADDED", node("gpu-1"))
    run(ctrl, store)
    assert store.objects["rx"]["status"]["nodeCount"] == 1
    ctrl.on_node("ADDED", node("gpu-2"))
    ctrl.on_node("ADDED", node("cpu-1"))
    run(ctrl, store)
    assert store.objects["rx"]["status"]["nodeCount"] == 2


def test_a_failed_write_is_retried() -> None:
    class Flaky(MemoryHyperNodes):
        fails = 1

        def create_hypernode(self, obj: dict[str, Any]) -> None:
            if self.fails:
                self.fails -= 1
                raise OSError("connection refused")
            super().create_hypernode(obj)

    ctrl, store = HyperNodeController(random.Random(0)), Flaky()
    ctrl.set_conf(parse_discovery_conf(leaf_conf()))
    ctrl.on_node("ADDED", node("n0", tor="t0"))
    failed = ctrl.apply(ctrl.plan(), store)
    assert len(failed) == 1 and "connection refused" in failed[0] and ctrl.discover_pending
    run(ctrl, store)
    assert len(store.objects) == 1


def test_conf_off_leaves_discovered_hypernodes() -> None:
    """Volcano stops a source's discoverer when it is disabled; what it made stays."""
    ctrl, store = HyperNodeController(random.Random(0)), MemoryHyperNodes()
    ctrl.set_conf(parse_discovery_conf(leaf_conf()))
    ctrl.on_node("ADDED", node("n0", tor="t0"))
    run(ctrl, store)
    ctrl.set_conf(parse_discovery_conf(""))
    ctrl.on_node("DELETED", node("n0", tor="t0"))
    run(ctrl, store)
    assert len(store.objects) == 1


def test_a_node_whose_labels_disagree_gives_a_leaf_two_parents_as_volcano_does() -> None:
    """node3 moved to leaf s2 but still says hypercluster s4, while s2's other nodes say s5: Volcano's
    vc-controller-manager (ed72c7c8, run by hand on kube-apiserver v1.32.6) lists s2 as a member of both s4 and s5,
    and so does pyvolcano; the scheduler's tree is then not ready, so jobs with a constraint wait."""
    nodes = doc_nodes()
    nodes[3]["metadata"]["labels"]["volcano.sh/hypernode"] = "s2"
    hns = hypernodes_from_labels(nodes, CONF, seed=0)
    s2 = by_label(hns, "volcano.sh/hypernode", "s2")["metadata"]["name"]
    s4, s5 = by_label(hns, "volcano.sh/hypercluster", "s4"), by_label(hns, "volcano.sh/hypercluster", "s5")
    assert s2 in members(s4) and s2 in members(s5)
    assert s4["status"]["nodeCount"] == 3 and s5["status"]["nodeCount"] == 2  # s4: s0, s1, s2; s5: s2, s3
    assert members(by_label(hns, "volcano.sh/hypernode", "s2")) == ["node3", "node4", "node5"]
    topo = Topology.build([parse_hypernode(h) for h in hns], [f"node{i}" for i in range(8)], [{}] * 8)
    assert not topo.ready and "member of both" in topo.problems[0]
