"""The podgroup controller: a Volcano pod without a PodGroup gets one, then the group annotation."""

from __future__ import annotations

from typing import Any

from pyvolcano.controllers.podgroup import needs_podgroup, podgroup_for_pod
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.podgroup_controller import PodGroupController


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "annotations": {"scheduling.volcano.sh/queue-name": "q1"}},
            "spec": {"schedulerName": "volcano", "priorityClassName": "high",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                     **spec},
            "status": {"phase": "Pending"}}


def test_rule() -> None:
    p = pod("a")
    assert needs_podgroup(p)
    assert not needs_podgroup(pod("b", schedulerName="default-scheduler"))
    assert not needs_podgroup(pod("c", nodeName="n1"))
    pg = podgroup_for_pod(p)
    assert pg["metadata"]["name"] == "podgroup-uid-a"
    assert pg["spec"]["minMember"] == 1 and pg["spec"]["queue"] == "q1"
    assert pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["minResources"] == {"cpu": "500m", "memory": str(2**30)}
    owned = pod("d")
    owned["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "rs-1", "controller": True}]
    assert podgroup_for_pod(owned)["metadata"]["name"] == "podgroup-rs-1"


class RecordingAPI:
    def __init__(self, conflict: bool = False) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.conflict = conflict

    def create(self, res: Any, body: dict[str, Any], ns: str) -> dict[str, Any]:
        self.calls.append(("create", res.kind, body["metadata"]["name"]))
        if self.conflict:
            raise ApiError(409, "AlreadyExists")
        return body

    def patch(self, res: Any, name: str, patch: dict[str, Any], ns: str) -> dict[str, Any]:
        self.calls.append(("patch", res.kind, name, patch["metadata"]["annotations"]["scheduling.k8s.io/group-name"]))
        return {}


def test_controller_creates_then_annotates() -> None:
    api = RecordingAPI()
    c = PodGroupController(api)
    c.on_pod("ADDED", pod("a"))
    c.on_pod("ADDED", pod("x", schedulerName="other"))
    assert api.calls == [("create", "PodGroup", "podgroup-uid-a"), ("patch", "Pod", "a", "podgroup-uid-a")]


def test_existing_podgroup_is_fine() -> None:
    api = RecordingAPI(conflict=True)
    PodGroupController(api).on_pod("ADDED", pod("a"))
    assert api.calls[-1] == ("patch", "Pod", "a", "podgroup-uid-a")
