"""Network topology on a real kube-apiserver (marker ``kube``): the HyperNode CRD as Volcano ships it, HyperNodes
discovered from node labels by ``pyvolcano controller`` (the session's controller process, configured through the
``volcano-controller-configmap`` ConfigMap as Volcano's is), and ``pyvolcano scheduler`` keeping a hard-constrained
gang inside one of them."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import CONFIGMAP, CRD, HYPERNODE, NAMESPACE, NODE, PODGROUP
from tests.confs import TOPO_CONF
from tests.kube.cluster import Env, bound, mk_pod, scheduler, wait

pytestmark = [pytest.mark.kube]

TOR, SPINE = "topology.pyvolcano.test/tor", "topology.pyvolcano.test/spine"
SOURCE = "volcano.sh/network-topology-source"



def discovery_conf(type_name: str) -> str:
    return (f"networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n    networkTopologyTypes:\n"
            f"      {type_name}: [{{nodeLabel: {SPINE}}}, {{nodeLabel: {TOR}}}, "
            f"{{nodeLabel: kubernetes.io/hostname}}]\n")


def set_discovery_conf(api: KubeClient, text: str) -> None:
    """Write the controllers' ConfigMap (volcano-system/volcano-controller-configmap), creating what is missing."""
    with contextlib.suppress(ApiError):
        api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-controller-configmap", "namespace": "volcano-system"},
            "data": {"volcano-controller.conf": text}}
    try:
        api.create(CONFIGMAP, body, "volcano-system")
    except ApiError as exc:
        if not exc.conflict:
            raise
        api.patch(CONFIGMAP, "volcano-controller-configmap", {"data": body["data"]}, "volcano-system")


def ours(api: KubeClient, spine: str) -> list[dict[str, Any]]:
    """The label source's HyperNodes of this test: tier 1 carry the tor label, tier 2 the spine label."""
    hns = api.list(HYPERNODE, label_selector=f"{SOURCE}=label")[0]
    return [h for h in hns if (h["metadata"].get("labels") or {}).get(SPINE) == spine
            or (h["metadata"].get("labels") or {}).get(TOR, "").startswith(f"{spine}-")]


def leaves(api: KubeClient, spine: str) -> dict[str, tuple[list[str], int | None]]:
    return {h["metadata"]["labels"][TOR]: (sorted(m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]),
                                           (h.get("status") or {}).get("nodeCount"))
            for h in ours(api, spine) if h["spec"]["tier"] == 1}


def test_hypernode_crd_is_installed_with_volcanos_validation(api: KubeClient) -> None:
    crd = api.get(CRD, "hypernodes.topology.volcano.sh")
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds.get("Established") == "True"
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["versions"][0]["name"] == "v1alpha1"
    bad = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "pv-bad-hn"},
           "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "a"},
                                                                         "regexMatch": {"pattern": "b"}}}]}}
    with pytest.raises(ApiError) as e:  # the CRD's CEL rule: one selector per member
        api.create(HYPERNODE, bad)
    assert e.value.status == 422 and "Only one of ExactMatch, RegexMatch, or LabelMatch" in str(e.value)


def test_label_discovery_then_a_hard_gang_stays_in_one_hypernode(api: KubeClient, env: Env, procs, controller,
                                                                 tmp_path: Path) -> None:
    spine = env.id
    nodes = {}
    for i in range(4):
        name = env.node(f"n{i}", cpu="4", memory="16Gi")
        api.patch(NODE, name, {"metadata": {"labels": {TOR: f"{spine}-{'ab'[i // 2]}", SPINE: spine}}})
        nodes[i] = name
    try:
        set_discovery_conf(api, discovery_conf(f"t{env.id}"))
        a, b = sorted(nodes.values())[:2], sorted(nodes.values())[2:]
        want = {f"{spine}-a": (a, 2), f"{spine}-b": (b, 2)}
        wait(lambda: leaves(api, spine) == want, 60, "the controller to discover two leaves with their nodeCount")
        (top,) = [h for h in ours(api, spine) if h["spec"]["tier"] == 2]
        assert top["metadata"]["name"].startswith(f"hypernode-t{env.id}-tier2-")
        assert top["spec"]["tierName"] == SPINE
        assert sorted(m["selector"]["exactMatch"]["name"] for m in top["spec"]["members"]) == sorted(
            h["metadata"]["name"] for h in ours(api, spine) if h["spec"]["tier"] == 1)
        wait(lambda: (api.get(HYPERNODE, top["metadata"]["name"]).get("status") or {}).get("nodeCount") == 2, 30,
             "the spine's nodeCount (its two leaves)")

        # four 2-cpu pods on four empty 4-cpu nodes: nodeorder alone would spread them over both leaves; hard
        # tier 1 keeps the gang in one leaf (two pods per node)
        api.create(*_podgroup(env, "gang", 4, {"mode": "hard", "highestTierAllowed": 1}))
        for i in range(4):
            mk_pod(api, env, f"gang-{i}", "gang", cpu="2")
        procs.append(scheduler(tmp_path, "sched", env=env, conf=TOPO_CONF))
        placed = wait(lambda: (lambda b_: b_ if len(b_) == 4 else None)(bound(api, env.ns)), 60,
                      "the gang's four pods to be bound")
        used = set(placed.values())
        assert used == set(a) or used == set(b), placed
    finally:
        with contextlib.suppress(ApiError):
            api.delete(CONFIGMAP, "volcano-controller-configmap", "volcano-system")
        env.cleanup()

        def gone() -> bool:
            left = ours(api, spine)
            for h in left:
                with contextlib.suppress(ApiError):
                    api.delete(HYPERNODE, h["metadata"]["name"])
            return not left
        wait(gone, 30, "this test's HyperNodes to be deleted")


def _podgroup(env: Env, name: str, min_member: int, topology: dict[str, Any]) -> tuple[Any, ...]:
    return (PODGROUP, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": name, "namespace": env.ns},
                       "spec": {"minMember": min_member, "queue": "default", "networkTopology": topology}}, env.ns)
