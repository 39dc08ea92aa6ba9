"""Builders for Kubernetes objects and a polling wait, shared by the Kubernetes-mode tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyvolcano.kube.resources import COMMAND, VCJOB


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def podgroup(name: str, ns: str = "ns", min_member: int = 1, queue: str = "default",
             priority_class: str = "", min_resources: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_resources:
        spec["minResources"] = min_resources
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(name: str, group: str, ns: str = "ns", cpu: str = "1", memory: str = "1Gi", scheduler: str = "volcano",
        node_name: str = "", phase: str = "Pending", priority: int | None = None,
        priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": phase}}


def queue(name: str, weight: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True, **spec}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def eventually(cond: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> Any:
    """Poll ``cond`` until it returns something truthy (informer threads deliver asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or cond}")
        time.sleep(interval)




def job_command(api: Any, name: str, action: str, job: str = "tensorflow-benchmark", ns: str = "default") -> None:
    """A bus.volcano.sh Command (what vcctl suspend/resume create) aimed at a vcjob."""
    uid = api.obj(VCJOB, job, ns)["metadata"]["uid"]
    api.create(COMMAND, {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                         "metadata": {"name": name, "namespace": ns}, "action": action,
                         "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job,
                                    "uid": uid}}, ns)
