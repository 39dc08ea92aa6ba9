"""gang's session close: which jobs get the Unschedulable condition (``plugins/gang/gang.go: OnSessionClose``)."""

from __future__ import annotations

from typing import Any

from pyvolcano.conf.loader import DEFAULT_CONF, load_conf
from pyvolcano.framework.cycle import cycle_objects, result_json


def _objects(terminating: list[bool], pending: int = 0) -> list[dict[str, Any]]:
    """One node; gang ``j`` (minMember = its pods) with a running pod per entry (terminating: a deletionTimestamp,
    so Releasing on its node) and ``pending`` pods without a node."""
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}, "status": {"state": "Open"}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "j", "namespace": "ns"},
         "spec": {"minMember": len(terminating) + pending}, "status": {"phase": "Running"}}]
    for i, term in enumerate([*terminating, *[None] * pending]):
        meta: dict[str, Any] = {"name": f"j-{i}", "namespace": "ns",
                                "annotations": {"scheduling.k8s.io/group-name": "j"}}
        spec: dict[str, Any] = {"schedulerName": "volcano",
                                "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
        if term is not None:
            spec["nodeName"] = "n1"
            if term:
                meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                     "status": {"phase": "Running" if term is not None else "Pending"}})
    return objs


def _job(objs: list[dict[str, Any]]) -> tuple[str, str | None]:
    result, _ = cycle_objects(objs, load_conf(DEFAULT_CONF, "default"))
    out = result_json(result)
    return out["podgroups"]["ns/j"]["phase"], out["unschedulable"].get("ns/j")


def test_a_gang_short_only_by_pods_leaving_their_node_keeps_running() -> None:
    """Volcano's ``shouldSkipUnschedulableForReleasing``: one pod running, one terminating on its node, nothing
    pending: no Unschedulable condition, and getPodGroupPhase counts the leaving pod as scheduled."""
    phase, message = _job(_objects([False, True]))
    assert phase == "Running"  # Unknown before (gang's condition with a running pod)
    assert "tasks in gang unschedulable" not in (message or "")  # (jobValid's own reason may remain)


def test_a_gang_with_a_pending_pod_is_still_unschedulable() -> None:
    """A pending pod (here too big for the node) keeps the condition: Unknown, with the running pod."""
    phase, message = _job(_objects([False, True], pending=1))
    assert phase == "Unknown" and "tasks in gang unschedulable" in (message or "")
