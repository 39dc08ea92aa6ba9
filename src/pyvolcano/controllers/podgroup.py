"""The podgroup controller's rule: a pod for a Volcano scheduler without a PodGroup gets one.

Volcano does this so that Deployments, StatefulSets and bare pods can use ``schedulerName: volcano``: a PodGroup
``podgroup-<owner uid>`` (or ``podgroup-<pod uid>`` for a bare pod) with minMember 1, the pod's queue annotation
(or ``default``), its priority class and the pod's requests as minResources; the pod is then annotated with the
group name.  The scheduler cache makes the same one-pod group on its own until the object exists, so scheduling
does not wait for this controller.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.convert import pod_requests
from pyvolcano.api.types import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from pyvolcano.controllers.vcjob import qty_string
from pyvolcano.errors import ManifestError


def needs_podgroup(pod: dict[str, Any], scheduler_names: tuple[str, ...] = ("volcano",)) -> bool:
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    return (spec.get("schedulerName") in scheduler_names and not (md.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            and not spec.get("nodeName") and not md.get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase", "Pending") == "Pending")


def podgroup_name(pod: dict[str, Any]) -> str:
    md = pod.get("metadata") or {}
    owners = [o for o in md.get("ownerReferences") or [] if o.get("controller")]
    return f"podgroup-{owners[0].get('uid') if owners else md.get('uid') or md.get('name')}"


def podgroup_for_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup Volcano's podgroup controller makes for ``pod`` (raises ManifestError for a bad pod)."""
    md = pod.get("metadata") or {}
    req, _ = pod_requests(pod)
    owners = [o for o in md.get("ownerReferences") or [] if o.get("controller")]
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": podgroup_name(pod), "namespace": md.get("namespace") or "default"},
        "spec": {"minMember": 1, "queue": (md.get("annotations") or {}).get(QUEUE_NAME_ANNOTATION) or "default",
                 "minResources": {k: qty_string(k, v) for k, v in req.items() if k != "pods"}},
        "status": {"phase": "Pending"},
    }
    if owners:
        pg["metadata"]["ownerReferences"] = [dict(owners[0], controller=False)]
    elif md.get("uid"):
        pg["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": md.get("name"),
                                              "uid": md["uid"]}]
    pc = (pod.get("spec") or {}).get("priorityClassName")
    if pc:
        pg["spec"]["priorityClassName"] = pc
    return pg


__all__ = ["ManifestError", "needs_podgroup", "podgroup_for_pod", "podgroup_name"]
