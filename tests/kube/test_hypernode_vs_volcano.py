"""HyperNode label discovery against Volcano's own controller (marked ``slow``: ``make bench``).

On a fresh kube-apiserver (``kube-up``), Volcano's ``vc-controller-manager`` (``volcano-up``, Volcano ed72c7c8)
discovers HyperNodes from labelled nodes with Volcano's example conf; ``controllers/hypernode.py`` must make the same
ones from the same nodes (names equal up to the random suffix).  Then Volcano's controller is stopped and
``pyvolcano controller`` takes over: it must change nothing (every resourceVersion the same), and after further
relabelling keep every existing name and again agree with the rules.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.controllers.hypernode import hypernodes_from_labels
from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import CONFIGMAP, HYPERNODE, NAMESPACE, NODE
from tests.confs import LABEL_DISCOVERY
from tests.kube import cluster, kubeserver
from tests.kube.cluster import wait

pytestmark = [pytest.mark.slow, pytest.mark.kube]

VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"

# Volcano's docs/user-guide/how_to_use_hypernode_auto_discovery.md
CONF = "networkTopologyDiscovery:\n" + LABEL_DISCOVERY


def node_labels(i: int) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": f"node{i}", "volcano.sh/hypernode": f"s{i // 2}"}
    if i != 7:  # node7 has no tier-2 label: its chain stops at its leaf
        labels["volcano.sh/hypercluster"] = f"s{4 + i // 4}"
    if i < 2:
        labels["volcano.sh/tor"] = "tor0"
    if i == 2:
        labels["volcano.sh/tor"] = "tor1"
    return labels


def canon(hns: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """HyperNodes with their random suffixes taken out: members that are HyperNodes by their labels."""
    sig = {h["metadata"]["name"]: tuple(sorted((h["metadata"].get("labels") or {}).items())) for h in hns}
    return sorted((h["spec"]["tier"], h["spec"].get("tierName"), sig[h["metadata"]["name"]],
                   h["metadata"]["name"].rsplit("-", 1)[0],
                   tuple(sorted((m["type"], str(sig.get(m["selector"]["exactMatch"]["name"],
                                                        m["selector"]["exactMatch"]["name"])))
                                for m in h["spec"]["members"])),
                   (h.get("status") or {}).get("nodeCount")) for h in hns)


def agree(api: KubeClient) -> bool:
    """The cluster's HyperNodes are what the rules make from the cluster's nodes (and every count is written)."""
    have = api.list(HYPERNODE)[0]
    return bool(have) and canon(have) == canon(hypernodes_from_labels(api.list(NODE)[0], CONF))


def test_label_discovery_agrees_with_volcanos_controller_and_takes_over(tmp_path: Path) -> None:
    if not kubeserver.tools_available():
        pytest.skip(kubeserver.HOW_TO_RUN)
    srv = kubeserver.up(kubeserver.new_dir())
    vdir = tmp_path / "volcano"
    proc = None
    try:
        api = KubeClient.from_config(srv.kubeconfig)
        r = subprocess.run([str(VOLCANO_UP), srv.kubeconfig, str(vdir)], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        with contextlib.suppress(ApiError):
            api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}})
        api.create(CONFIGMAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "volcano-controller-configmap", "namespace": "volcano-system"},
            "data": {"volcano-controller.conf": CONF}}, "volcano-system")
        for i in range(8):
            api.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node{i}",
                                                                               "labels": node_labels(i)}})
        wait(lambda: agree(api), 120, "Volcano's controller to make the HyperNodes the rules make")
        assert len(api.list(HYPERNODE)[0]) == 8
        # a node moved to another leaf keeps its tier-2 label: the leaf is under two spines, in both
        api.patch(NODE, "node3", {"metadata": {"labels": {"volcano.sh/hypernode": "s2", "volcano.sh/tor": "tor1"}}})
        wait(lambda: agree(api), 60, "Volcano's controller after a relabel")

        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        before = {h["metadata"]["name"]: h["metadata"]["resourceVersion"] for h in api.list(HYPERNODE)[0]}
        proc = cluster.Proc(["controller", "--no-leader-elect", "--listen-address", "",
                             "--controllers", "hyperNode-controller"], tmp_path / "controller.log", srv.kubeconfig)
        wait(lambda: "label discovery:" in proc.text() or proc.p.poll() is not None, 60, "pyvolcano's first round")
        assert "8 HyperNodes found (0 to create, 0 to update, 0 to delete)" in proc.text(), proc.text()[-2000:]
        after = {h["metadata"]["name"]: h["metadata"]["resourceVersion"] for h in api.list(HYPERNODE)[0]}
        assert after == before  # nothing written

        api.patch(NODE, "node3", {"metadata": {"labels": {"volcano.sh/hypernode": "s1", "volcano.sh/tor": None}}})
        api.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node8", "labels": {
            "volcano.sh/hypernode": "s9", "volcano.sh/hypercluster": "s5"}}})
        wait(lambda: agree(api) and len(api.list(HYPERNODE)[0]) == 9, 60, "pyvolcano's controller after relabels")
        assert set(before) <= {h["metadata"]["name"] for h in api.list(HYPERNODE)[0]}  # every name kept
    finally:
        if proc is not None:
            proc.stop()
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        srv.down()
