"""Topology-aware scheduling around the allocate action: HyperNodes in the cache, ``networkTopology`` on PodGroups,
the session's adjusted constraints (framework/topology.py), the network-topology-aware plugin's gradients and the
hypernode path of allocate (actions/_hypernode.py).  Decisions against Volcano are in tests/scenarios/topology."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import cycle_objects, result_json
from pyvolcano.framework.session import Session

CONF = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


def node(name: str, cpu: int = 4) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": str(cpu), "memory": "8Gi",
                                                                                    "pods": "110"}}}


def hn(name: str, tier: int, nodes: tuple[str, ...] = (), kids: tuple[str, ...] = (),
       tier_name: str | None = None) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": k}}} for k in kids]
    spec: dict[str, Any] = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def pg(name: str, min_member: int, nt: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"minMember": min_member, **spec}
    if nt is not None:
        s["networkTopology"] = nt
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"}, "spec": s,
            "status": {"phase": "Inqueue"}}


def pod(name: str, group: str, cpu: int = 1, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}
    status = {"phase": "Pending"}
    if node_name:
        spec["nodeName"], status = node_name, {"phase": "Running"}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                                        "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": status}


TOPO = [hn("s0", 1, ("n0", "n1"), tier_name="leaf"), hn("s1", 1, ("n2", "n3"), tier_name="leaf"),
        hn("spine", 2, kids=("s0", "s1"), tier_name="spine")]
NODES = [node(f"n{i}") for i in range(4)]


def session(objects: list[dict[str, Any]], conf: str = CONF) -> Session:
    cache = SchedulerCache.from_objects(objects)
    assert not cache.problems, cache.problems
    return Session(cache.snapshot(), load_conf(conf, "test")).open()


@pytest.mark.parametrize(("nt", "field"), [
    ({"highestTierAllowed": 1, "highestTierName": "leaf"}, "spec.networkTopology"),
    ({"mode": "medium"}, "spec.networkTopology.mode"),
    ({"highestTierAllowed": -1}, "spec.networkTopology.highestTierAllowed"),
    ({"highestTierAllowed": "one"}, "spec.networkTopology.highestTierAllowed"),
    ("hard", "spec.networkTopology"),
])
def test_bad_network_topology_is_refused_naming_the_field(nt: Any, field: str) -> None:
    cache = SchedulerCache.from_objects([*NODES, pg("a", 1, nt)])
    assert len(cache.problems) == 1 and "PodGroup ns/a" in cache.problems[0] and field in cache.problems[0], \
        cache.problems
    assert "ns/a" not in cache.jobs


def test_bad_hypernode_is_skipped_and_the_rest_scheduled() -> None:
    bad = hn("s9", -1, ("n0",))
    result, cache = cycle_objects([*NODES, *TOPO, bad, pg("b", 1), pod("b-0", "b")], load_conf(CONF, "t"))
    assert any("HyperNode s9" in p and "spec.tier" in p for p in cache.problems)
    assert set(result_json(result)["binds"]) == {"ns/b-0"}


def test_topology_rebuilt_only_when_nodes_or_hypernodes_change() -> None:
    cache = SchedulerCache.from_objects([*NODES, *TOPO])
    first = cache.snapshot().topology
    assert first is not None and cache.snapshot().topology is first
    cache.upsert(hn("s2", 1, ("n3",)))
    second = cache.snapshot().topology
    assert second is not first and second is not None and "s2" in second.names
    cache.delete(hn("s2", 1))
    assert "s2" not in (cache.snapshot().topology or second).names


def test_session_adjusts_constraints_and_recovers_the_allocated_hypernode() -> None:
    ssn = session([*NODES, *TOPO,
                   pg("hard", 1, {"highestTierAllowed": 1}), pod("hard-0", "hard"),
                   pg("named", 1, {"mode": "hard", "highestTierName": "spine"}), pod("named-0", "named"),
                   pg("unknown", 1, {"highestTierName": "rack"}), pod("unknown-0", "unknown"),
                   pg("soft", 1, {"mode": "soft"}), pod("soft-0", "soft"),
                   pg("running", 1, {"highestTierAllowed": 2}), pod("r-0", "running", node_name="n2"),
                   pod("r-1", "running", node_name="n3"), pod("r-2", "running"),
                   pg("plain", 1), pod("plain-0", "plain")])
    st = ssn.topology
    names = st.topo.names
    assert st.ready and st.tiers == [1, 2, 3]
    jt = {k.split("/")[1]: v for k, v in st.jobs.items()}
    assert (jt["hard"].hard, jt["hard"].tier) == (True, 1)
    assert (jt["named"].hard, jt["named"].tier) == (True, 2)
    assert (jt["unknown"].hard, jt["unknown"].tier) == (False, None)  # unknown tier name: no hard limit
    assert (jt["soft"].hard, jt["soft"].tier) == (True, 3)  # soft: hard up to the virtual top
    assert names[jt["running"].allocated] == "s1" and jt["hard"].allocated == -1
    assert "ns/plain" not in st.jobs


def test_gradient_keeps_hypernodes_whose_idle_covers_the_minimum_lowest_tier_first() -> None:
    ssn = session([*NODES, *TOPO, pg("busy", 1), pod("busy-0", "busy", 3, node_name="n0"),
                   pg("a", 1, {"highestTierAllowed": 2}), pod("a-0", "a")])
    st = ssn.topology
    job = ssn.jobs["ns/a"]
    idx = {n: i for i, n in enumerate(st.topo.names)}
    need = np.zeros(ssn.res.size)
    need[ssn.res.pos["cpu"]] = 6000.0  # millicores: s0 has 5 cpu free, s1 8, the spine 13
    got = st.gradient(job, st.topo.top, 2, -1, need)
    assert got == [[idx["s1"]], [idx["spine"]]]
    # once the job has pods under s0, the search starts from s0's highest ancestor within the tier, unfiltered
    assert st.gradient(job, st.topo.top, 1, idx["s0"], need) == [[idx["s0"]]]
    assert st.gradient(job, st.topo.top, 2, idx["s0"], need) == [[idx["s0"], idx["s1"]], [idx["spine"]]]


def test_not_ready_topology_holds_constrained_jobs_only() -> None:
    two_parents = [*TOPO, hn("spine2", 2, kids=("s1",))]
    result, _ = cycle_objects([*NODES, *two_parents, pg("a", 1, {"highestTierAllowed": 1}), pod("a-0", "a"),
                               pg("b", 1), pod("b-0", "b")], load_conf(CONF, "t"))
    assert set(result_json(result)["binds"]) == {"ns/b-0"}


def test_dry_runs_leave_no_trace_and_the_gang_lands_in_one_leaf() -> None:
    """Each candidate hypernode is tried and undone: node arrays and the plugin's hypernode usage end exactly as
    the committed placement leaves them."""
    ssn = session([*NODES, *TOPO, pg("a", 3, {"highestTierAllowed": 1}), *[pod(f"a-{i}", "a", 2) for i in range(3)]])
    from pyvolcano.framework import registry

    registry.action_class("allocate")(ssn.conf.action_args("allocate")).execute(ssn)
    placed = {t.node_name for t in ssn.jobs["ns/a"].tasks.values()}
    assert placed <= {"n0", "n1"} or placed <= {"n2", "n3"}
    plugin: Any = ssn.plugins["network-topology-aware"]
    assert np.allclose(plugin.used, ssn.topology.topo.sums(ssn.nodes.used))
    used = ssn.nodes.used[:, ssn.res.pos["cpu"]].sum()
    assert used == 6000.0


def test_cycle_explains_a_topology_unschedulable_job() -> None:
    result, _ = cycle_objects([*NODES, *TOPO, pg("a", 5, {"highestTierAllowed": 1}),
                               *[pod(f"a-{i}", "a", 2) for i in range(5)]], load_conf(CONF, "t"))
    why = result_json(result)["unschedulable"]["ns/a"]
    assert "highest tier 1" in why and "no candidate hypernode holds the gang" in why and "s0 (tier 1)" in why
    assert "network topology" not in result.podgroups["ns/a"].conditions[0]["message"]


def test_plugin_arguments_and_flags() -> None:
    conf = CONF.replace("  - name: network-topology-aware\n", "  - name: network-topology-aware\n"
                        "    enabledHyperNodeGradient: false\n    arguments:\n      weight: 3\n"
                        "      hypernode.binpack.cpu: -2\n      hypernode.binpack.normal-pod.fading: -1\n")
    ssn = session([*NODES, *TOPO, pg("a", 1, {"highestTierAllowed": 1}), pod("a-0", "a")], conf)
    plugin: Any = ssn.plugins["network-topology-aware"]
    assert plugin.global_weight == 3 and plugin.weights[ssn.res.pos["cpu"]] == 1.0 and plugin.fading == 0.8
    st = ssn.topology
    assert st.gradient(ssn.jobs["ns/a"], st.topo.top, 1, -1, ssn.res.zeros()) == [[st.topo.top]]


def test_vcjob_network_topology_is_copied_to_its_podgroup() -> None:
    """Volcano's job controller (``createOrUpdatePodGroup``): mode, then the tier, else the tier name."""
    import yaml

    from pyvolcano.controllers.vcjob import JobController
    from tests.kube.test_vcctl import TF_JOB
    from tests.test_vcjob_ending import GracefulAPI

    for nt, want in (({"mode": "soft", "highestTierAllowed": 2}, {"mode": "soft", "highestTierAllowed": 2}),
                     ({"highestTierName": "spine"}, {"mode": "hard", "highestTierName": "spine"})):
        api = GracefulAPI()
        job = yaml.safe_load(TF_JOB)
        job["metadata"].setdefault("namespace", "default")
        job["spec"]["networkTopology"] = nt
        JobController(api).add_job(job)
        got = api.objs[("PodGroup", "default", job["metadata"]["name"])]["spec"]["networkTopology"]
        assert got == want


def test_a_pod_that_fits_no_node_of_the_hypernode_says_which_hypernode() -> None:
    """Volcano's ``FitErrors.SetHyperNode``: reasons counted over the hypernode's nodes only."""
    objs = [*NODES, *TOPO, pg("busy", 1), *[pod(f"busy-{i}", "busy", 1, node_name=f"n{i}") for i in range(4)],
            pg("a", 1, {"highestTierAllowed": 1}), pod("a-0", "a", 4)]
    result, _ = cycle_objects(objs, load_conf(CONF, "t"))
    why = result_json(result)["unschedulable"]["ns/a"]
    assert "In hyperNode s" in why and "0/2 nodes are available: 2 Insufficient cpu." in why, why


def test_equally_scored_hypernodes_are_recorded_as_ties_for_the_differential_compare() -> None:
    """Volcano picks among equally scored hypernodes at random (``selectBestHyperNodeForJob`` over a Go map), so
    ``record_ties`` lists every best one with its nodes; with one leaf fuller the gang's choice is no tie."""
    gang = [pg("a", 2, {"mode": "hard", "highestTierAllowed": 1}), pod("a-0", "a", 2), pod("a-1", "a", 2)]
    conf = load_conf(CONF, "test")
    result, _ = cycle_objects(NODES + TOPO + gang, conf, record_ties=True)
    assert len(result.binds) == 2
    assert result.hypernode_ties == {"ns/a": {"s0": ["n0", "n1"], "s1": ["n2", "n3"]}}
    busy = [pg("b", 1), pod("b-0", "b", 1, node_name="n2")]
    result, _ = cycle_objects(NODES + TOPO + gang + busy, conf, record_ties=True)
    assert {result.binds["ns/a-0"], result.binds["ns/a-1"]} <= {"n2", "n3"}  # bin-packing: the fuller leaf
    assert "ns/a" not in result.hypernode_ties
    result, _ = cycle_objects(NODES + TOPO + gang, conf)
    assert result.hypernode_ties == {}
