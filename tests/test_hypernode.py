"""HyperNode objects and the topology tree (api/hypernode.py), against Volcano's hyper_node_info.go rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.api.hypernode import CLUSTER_TOP, Topology, parse_hypernode
from pyvolcano.errors import ManifestError


def hn(name: str, tier: int, *members: dict[str, Any], tier_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier, "members": list(members)}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def node(name: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def regex(pattern: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}


def labels(**kv: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"labelMatch": {"matchLabels": kv}}}


def child(name: str) -> dict[str, Any]:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


NODES = ["n0", "n1", "n2", "n3", "n4", "n5", "n6"]
LABELS = [{}, {}, {}, {}, {"rack": "c"}, {"rack": "c"}, {"rack": "d"}]


def build(*objs: dict[str, Any]) -> Topology:
    return Topology.build([parse_hypernode(o) for o in objs], NODES, LABELS)


def tree() -> Topology:
    """s0 {n0, n1} and s1 {n2, n3} under spine a; s2 {rack=c: n4, n5} under spine b; n6 under no hypernode."""
    return build(hn("s0", 1, node("n0"), node("n1"), tier_name="leaf"), hn("s1", 1, regex("^n[23]$"), tier_name="leaf"),
                 hn("s2", 1, labels(rack="c"), tier_name="leaf"), hn("a", 2, child("s0"), child("s1"), tier_name="spine"),
                 hn("b", 2, child("s2"), tier_name="spine"))


def under(t: Topology, name: str) -> list[str]:
    return [NODES[i] for i in t.nodes_of(t.idx(name))]


def test_members_by_exact_name_regex_and_labels_roll_up_to_ancestors() -> None:
    t = tree()
    assert t.ready and not t.problems
    assert under(t, "s0") == ["n0", "n1"]
    assert under(t, "s1") == ["n2", "n3"]
    assert under(t, "s2") == ["n4", "n5"]
    assert under(t, "a") == ["n0", "n1", "n2", "n3"]
    assert under(t, "b") == ["n4", "n5"]
    assert under(t, CLUSTER_TOP) == NODES  # the virtual top holds every node, n6 too
    assert t.node_count(t.idx("a")) == 4


def test_tiers_parents_and_the_virtual_top() -> None:
    t = tree()
    assert t.tiers() == [1, 2, 3]  # the top is one above the highest real tier
    assert int(t.tier[t.top]) == 3 and t.names[t.top] == CLUSTER_TOP
    assert [t.names[i] for i in t.ancestors(t.idx("s1"))] == ["s1", "a", CLUSTER_TOP]
    assert sorted(t.names[i] for i in t.children[t.top]) == ["a", "b"]
    assert t.tier_names() == {"leaf": 1, "spine": 2}
    assert sorted(t.names[i] for i in t.at_tier(1)) == ["s0", "s1", "s2"]


def test_lowest_common_ancestors() -> None:
    t = tree()
    assert t.names[t.lca(t.idx("s0"), t.idx("s1"))] == "a"
    assert t.names[t.lca(t.idx("s0"), t.idx("s2"))] == CLUSTER_TOP
    assert t.names[t.lca_of_nodes(np.array([0, 1]))] == "s0"
    assert t.names[t.lca_of_nodes(np.array([1, 3]))] == "a"
    assert t.names[t.lca_of_nodes(np.array([3, 4]))] == CLUSTER_TOP
    assert t.names[t.lca_of_nodes(np.array([6]))] == CLUSTER_TOP  # under no real hypernode


def test_free_resources_under_every_hypernode_are_one_matrix_product() -> None:
    t = tree()
    idle = np.arange(len(NODES) * 2, dtype=float).reshape(len(NODES), 2)
    sums = t.sums(idle)
    for h, name in enumerate(t.names):
        assert sums[h].tolist() == idle[t.nodes_of(h)].sum(axis=0).tolist(), name


def test_without_hypernodes_the_top_has_tier_one_and_every_node() -> None:
    t = build()
    assert t.names == [CLUSTER_TOP] and t.tiers() == [1] and under(t, CLUSTER_TOP) == NODES


def test_volcano_selector_rules() -> None:
    # an exact name not in the session's nodes is dropped; an empty label selector matches nothing; a regex is an
    # unanchored search (Go's MatchString); a member hypernode that does not exist yet is skipped
    t = build(hn("x", 1, node("ghost"), node("n0")), hn("y", 1, {"type": "Node", "selector": {"labelMatch": {}}}),
              hn("z", 1, regex("5")), hn("w", 2, child("x"), child("not-yet")))
    assert t.ready
    assert under(t, "x") == ["n0"] and under(t, "y") == [] and under(t, "z") == ["n5"] and under(t, "w") == ["n0"]


def test_a_hypernode_with_two_parents_or_a_cycle_makes_the_topology_not_ready() -> None:
    t = build(hn("s0", 1, node("n0")), hn("a", 2, child("s0")), hn("b", 2, child("s0")))
    assert not t.ready and "s0 is a member of both a and b" in t.problems[0]
    t = build(hn("p", 1, child("q"), node("n0")), hn("q", 2, child("p"), node("n1")))
    assert not t.ready and any("cycle" in p for p in t.problems)


@pytest.mark.parametrize(("obj", "field"), [
    (hn("s", -1, node("n0")), "spec.tier"),
    (hn("s", 1), "spec.members"),
    (hn("s", 1, {"type": "Node", "selector": {"exactMatch": {"name": "n0"}, "regexMatch": {"pattern": "n"}}}),
     "spec.members[0].selector"),
    (hn("s", 1, {"type": "Node", "selector": {}}), "spec.members[0].selector"),
    (hn("s", 1, {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "s.*"}}}), "spec.members[0]"),
    (hn("s", 1, regex("n[0-")), "spec.members[0].selector.regexMatch.pattern"),
    (hn("s", 1, {"type": "Switch", "selector": {"exactMatch": {"name": "n0"}}}), "spec.members[0].type"),
    (hn("s", 1, {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [
        {"key": "rack", "operator": "In"}]}}}), "spec.members[0].selector.labelMatch.matchExpressions[0]"),
    (hn("s", "high", node("n0")), "spec.tier"),  # type: ignore[arg-type]
    # an integer, as the CRD's schema types it: YAML's true is not tier 1
    (hn("s", True, node("n0")), "spec.tier"),
    # RE2 (Go's regexp) has no backreferences or lookaround: refused, never run by a backtracking engine
    (hn("s", 1, regex(r"(a)\1")), "spec.members[0].selector.regexMatch.pattern"),
    (hn("s", 1, regex("n(?=0)")), "spec.members[0].selector.regexMatch.pattern"),
    (hn("S_1", 1, node("n0")), "metadata.name"),
    (hn("s\n", 1, node("n0")), "metadata.name"),  # Python's $ matches before a final newline; fullmatch does not
    ({"kind": "HyperNode", "metadata": {"name": "s"}, "spec": 5}, "spec"),
])
def test_malformed_hypernodes_name_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_hypernode(obj)
    assert err.value.field == field, str(err.value)
    assert str(err.value).startswith("HyperNode ")


def test_a_backtracking_pattern_runs_in_linear_time() -> None:
    """``(a+)+$`` takes exponential time in Python's ``re`` on ``aaa...b``; RE2, as Go's regexp, is linear: the
    topology over nodes with long such names builds at once (a hang otherwise, well past any test timeout)."""
    names = ["a" * 40 + "b", "a" * 5000 + "b", "aaa"]
    t = Topology.build([parse_hypernode(hn("s", 1, regex("(a+)+$")))], names, [{} for _ in names])
    assert [names[i] for i in t.nodes_of(t.idx("s"))] == ["aaa"]


def test_a_pattern_matches_as_gos_regexp() -> None:
    """RE2's ``\\d`` is ASCII only, as Go's; a Unicode digit in a node name is not a digit."""
    names = ["node-3", "node-\u0663"]
    t = Topology.build([parse_hypernode(hn("s", 1, regex(r"node-\d$")))], names, [{} for _ in names])
    assert [names[i] for i in t.nodes_of(t.idx("s"))] == ["node-3"]
