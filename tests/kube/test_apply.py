"""The Kubernetes writer writes what the session's result says, through the same podgroup_status_body the
simulator uses: a PodGroup's status is the same in a simulation and on a cluster."""

from __future__ import annotations

from typing import Any

from pyvolcano.framework.result import podgroup_status_body
from pyvolcano.kube.resources import NODE, POD, PODGROUP, QUEUE
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import node, pod, podgroup, queue


def _plain(status: dict[str, Any]) -> dict[str, Any]:
    """A status without the times and transition ids (they depend on when it was written)."""
    conds = [{k: v for k, v in c.items() if k not in ("lastTransitionTime", "transitionID")}
             for c in status.get("conditions") or []]
    return {**status, "conditions": conds}


def test_the_cluster_gets_the_results_podgroup_status_and_pod_conditions() -> None:
    api = FakeApi()
    api.create(QUEUE, queue("default"))
    api.create(NODE, node("n1", cpu="2"))
    api.create(PODGROUP, podgroup("fits", min_member=2), "ns")
    for i in range(2):
        api.create(POD, pod(f"fits-{i}", "fits"), "ns")
    api.create(PODGROUP, podgroup("big"), "ns")
    api.create(POD, pod("big-0", "big", cpu="8"), "ns")
    s = KubeScheduler(api, ConfFile(None), SchedulerOptions(period=0.05))
    try:
        assert s.start_informers(timeout=5)
        result = s.run_once()
        assert s.wait_binds(5) and s.flush(5)
        for uid in ("ns/fits", "ns/big"):
            name = uid.split("/", 1)[1]
            written = api.obj(PODGROUP, name, "ns")["status"]
            assert _plain(written) == _plain(podgroup_status_body({}, result.podgroups[uid], "t"))
        big = result.podgroups["ns/big"]
        conds = api.obj(POD, "big-0", "ns")["status"]["conditions"]
        assert [(c["type"], c["reason"], c["message"]) for c in conds] == [
            ("PodScheduled", "Unschedulable", big.pod_conditions["ns/big-0"])]
    finally:
        s.stop()
