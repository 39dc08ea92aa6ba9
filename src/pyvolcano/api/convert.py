"""Kubernetes manifests (dicts, as ``kubectl get -o yaml`` prints them) to scheduler info objects.

Every check names the object and the field, so a bad manifest gives one clear line instead of a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from pyvolcano.api.hypernode import NetworkTopology
from pyvolcano.api.job_info import PodGroup, TaskInfo
from pyvolcano.api.k8s_requests import k8s_extra
from pyvolcano.api.node_info import NodeSpec
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import PODS, ResourceIndex, amount
from pyvolcano.api.types import (
    DEFAULT_QUEUE,
    PREEMPTABLE_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    PodGroupPhase,
    QueueState,
    TaskStatus,
)
from pyvolcano.api.validate import check_node, string_map
from pyvolcano.errors import ManifestError, QuantityError

DEFAULT_NODE_PODS = 110  # kubelet's default --max-pods, used when a Node reports no pods allocatable


def ref(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    md: Mapping[str, Any] = meta if isinstance(meta, dict) else {}
    ns = md.get("namespace")
    name = md.get("name") or "<unnamed>"
    return f"{obj.get('kind', '?')} {f'{ns}/' if ns else ''}{name}"


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        raise ManifestError(ref(obj), "metadata", "is required (a mapping with name)")
    for field in ("name", "namespace"):
        if field in md and md[field] is not None and not isinstance(md[field], str):
            raise ManifestError(ref(obj), f"metadata.{field}", f"must be a string, got {md[field]!r}")
    if not md.get("name"):
        raise ManifestError(ref(obj), "metadata.name", "is required")
    for field in ("labels", "annotations"):
        if md.get(field) is not None and not isinstance(md[field], dict):
            raise ManifestError(ref(obj), f"metadata.{field}", f"must be a mapping, got {type(md[field]).__name__}")
    return md


def _dict(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ManifestError(ref(obj), path, f"must be a mapping, got {type(value).__name__}")
    return value


def parse_time(obj: Mapping[str, Any], value: Any, field: str = "metadata.creationTimestamp") -> float:
    if value in (None, ""):
        return 0.0
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise ManifestError(ref(obj), field, f"{value!r} is not an RFC 3339 time") from exc


def resource_list(obj: Mapping[str, Any], path: str, rl: Any) -> dict[str, float]:
    """A ResourceList in internal amounts; a quantity that does not parse names its field."""
    out: dict[str, float] = {}
    for name, q in _dict(obj, path, rl).items():
        try:
            out[str(name)] = amount(str(name), q)
        except QuantityError as exc:
            raise ManifestError(ref(obj), f"{path}.{name}", str(exc)) from exc
    return out


def _add(a: dict[str, float], b: Mapping[str, float]) -> None:
    for k, v in b.items():
        a[k] = a.get(k, 0.0) + v


def pod_requests(pod: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(Resreq, InitResreq): containers summed; init containers' max; overhead added to both."""
    spec = _dict(pod, "spec", pod.get("spec"))
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ManifestError(ref(pod), "spec.containers", "must list at least one container")
    req: dict[str, float] = {}
    for i, c in enumerate(containers):
        res = _dict(pod, f"spec.containers[{i}].resources", (c or {}).get("resources"))
        _add(req, resource_list(pod, f"spec.containers[{i}].resources.requests", res.get("requests")))
    init = dict(req)
    for i, c in enumerate(spec.get("initContainers") or []):
        res = _dict(pod, f"spec.initContainers[{i}].resources", (c or {}).get("resources"))
        r = resource_list(pod, f"spec.initContainers[{i}].resources.requests", res.get("requests"))
        for k, v in r.items():
            init[k] = max(init.get(k, 0.0), v)
    overhead = resource_list(pod, "spec.overhead", spec.get("overhead"))
    _add(req, overhead)
    _add(init, overhead)
    req[PODS] = 1.0
    init[PODS] = 1.0
    return req, init


def task_status(pod: Mapping[str, Any]) -> TaskStatus:
    """Volcano's getTaskStatus: pod phase, nodeName and deletionTimestamp to a TaskStatus."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Running":
        return TaskStatus.Releasing if deleting else TaskStatus.Running
    if phase == "Pending":
        if deleting:
            return TaskStatus.Releasing
        return TaskStatus.Bound if node else TaskStatus.Pending
    if phase == "Succeeded":
        return TaskStatus.Succeeded
    if phase == "Failed":
        return TaskStatus.Failed
    return TaskStatus.Unknown


def constraints_key(pod: Mapping[str, Any]) -> str:
    """What template-safe predicates and scores read of a pod, as a stable string."""
    spec = pod.get("spec") or {}
    ports = sorted(
        (p.get("hostPort"), p.get("protocol", "TCP"), p.get("hostIP", ""))
        for c in spec.get("containers") or [] for p in (c or {}).get("ports") or [] if p.get("hostPort")
    )
    aff = spec.get("affinity") or {}
    return json.dumps(
        [spec.get("nodeSelector"), aff.get("nodeAffinity"), spec.get("tolerations"), ports,
         (pod.get("metadata") or {}).get("namespace")],
        sort_keys=True, default=str,
    )


def task_role(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> str:
    """The pod's role in its job: the ``volcano.sh/task-spec`` annotation, else the label of the same name (the
    vcjob controller sets both), as Volcano's ``getTaskRole`` (``pkg/scheduler/api/job_info.go``)."""
    return str(annotations.get(TASK_SPEC_ANNOTATION) or labels.get(TASK_SPEC_ANNOTATION) or "")


def make_task(pod: dict[str, Any], res: ResourceIndex, job_uid: str, priority: int,
              req: dict[str, float], init: dict[str, float], queue: str) -> TaskInfo:
    md = pod["metadata"]
    spec = pod.get("spec") or {}
    ns = md.get("namespace") or "default"
    annotations = md.get("annotations") or {}
    labels = md.get("labels") or {}
    preempt = annotations.get(PREEMPTABLE_ANNOTATION, labels.get(PREEMPTABLE_ANNOTATION, "true"))
    resreq = res.vector(req)
    init_resreq = res.vector(init)
    key = hash((resreq.tobytes(), init_resreq.tobytes(), constraints_key(pod), queue))
    return TaskInfo(
        uid=f"{ns}/{md['name']}", name=md["name"], namespace=ns, job=job_uid, resreq=resreq,
        init_resreq=init_resreq, status=task_status(pod), node_name=spec.get("nodeName") or "",
        priority=priority, preemptable=str(preempt).lower() != "false",
        task_spec=task_role(annotations, labels), pod=pod, template_key=key,
        creation=parse_time(pod, md.get("creationTimestamp")),
        sch_gated=bool(spec.get("schedulingGates")),
        k8s_extra=k8s_extra(pod, res.pos, resreq, init_resreq),
    )


def node_spec(node: dict[str, Any], res: ResourceIndex) -> NodeSpec:
    md = meta(node)
    spec = _dict(node, "spec", node.get("spec"))
    status = _dict(node, "status", node.get("status"))
    alloc = resource_list(node, "status.allocatable", status.get("allocatable") or status.get("capacity"))
    cap = resource_list(node, "status.capacity", status.get("capacity") or status.get("allocatable"))
    if not alloc:
        raise ManifestError(ref(node), "status.allocatable", "is required (no resources to schedule on)")
    alloc.setdefault(PODS, DEFAULT_NODE_PODS)
    cap.setdefault(PODS, alloc[PODS])
    check_node(node, spec, status)
    taints = spec.get("taints") or []
    ready = True
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and str(cond.get("status")) != "True":
            ready = False
    return NodeSpec(
        name=md["name"], allocatable=res.vector(alloc), capacity=res.vector(cap),
        labels=string_map(node, "metadata.labels", md.get("labels")), taints=list(taints),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready, manifest=node,
    )


def _int(obj: Mapping[str, Any], path: str, value: Any, default: int, minimum: int = 0) -> int:
    if value is None:
        return default
    try:
        v = int(value)
    except (TypeError, ValueError) as exc:
        raise ManifestError(ref(obj), path, f"{value!r} is not an integer") from exc
    if v < minimum:
        raise ManifestError(ref(obj), path, f"must be >= {minimum}, got {v}")
    return v


def podgroup(pg: dict[str, Any], res: ResourceIndex) -> PodGroup:
    md = meta(pg)
    spec = _dict(pg, "spec", pg.get("spec"))
    status = _dict(pg, "status", pg.get("status"))
    min_res = spec.get("minResources")
    mtm = _dict(pg, "spec.minTaskMember", spec.get("minTaskMember"))
    phase = status.get("phase") or "Pending"
    try:
        phase_v = PodGroupPhase(phase)
    except ValueError as exc:
        raise ManifestError(ref(pg), "status.phase", f"unknown phase {phase!r} (known: "
                            f"{', '.join(p.value for p in PodGroupPhase)})") from exc
    return PodGroup(
        name=md["name"], namespace=md.get("namespace") or "default",
        min_member=_int(pg, "spec.minMember", spec.get("minMember"), 1),
        min_task_member={str(k): _int(pg, f"spec.minTaskMember.{k}", v, 0) for k, v in mtm.items()},
        queue=spec.get("queue") or DEFAULT_QUEUE, priority_class=spec.get("priorityClassName") or "",
        min_resources=None if min_res is None else res.vector(resource_list(pg, "spec.minResources", min_res)),
        phase=phase_v, conditions=list(status.get("conditions") or []),
        creation=parse_time(pg, md.get("creationTimestamp")), annotations=dict(md.get("annotations") or {}),
        labels=dict(md.get("labels") or {}), manifest=pg,
        network_topology=NetworkTopology.of(_dict(pg, "spec.networkTopology", spec.get("networkTopology"))
                                            if spec.get("networkTopology") is not None else None),
    )


def queue(q: dict[str, Any], res: ResourceIndex) -> QueueInfo:
    md = meta(q)
    spec = _dict(q, "spec", q.get("spec"))
    status = _dict(q, "status", q.get("status"))
    cap = resource_list(q, "spec.capability", spec.get("capability"))
    guarantee_spec = _dict(q, "spec.guarantee", spec.get("guarantee"))
    guar = resource_list(q, "spec.guarantee.resource", guarantee_spec.get("resource"))
    des = resource_list(q, "spec.deserved", spec.get("deserved"))
    state = status.get("state") or spec.get("state") or "Open"
    try:
        state_v = QueueState(state)
    except ValueError as exc:
        raise ManifestError(ref(q), "status.state", f"unknown state {state!r}") from exc
    reclaimable = spec.get("reclaimable")
    ann = md.get("annotations") or {}
    return QueueInfo(
        name=md["name"], weight=_int(q, "spec.weight", spec.get("weight"), 1),
        capability=res.vector(cap, default=np.inf) if cap else None,
        guarantee=res.vector(guar) if guar else None,
        deserved=res.vector(des) if des else None,
        reclaimable=True if reclaimable is None else bool(reclaimable), state=state_v,
        parent=spec.get("parent") or "", hierarchy=ann.get("volcano.sh/hierarchy", ""),
        weights=ann.get("volcano.sh/hierarchy-weights", ""),
        priority=_int(q, "spec.priority", spec.get("priority"), 0, minimum=-(2**31)),
        affinity=_dict(q, "spec.affinity", spec.get("affinity")),
        creation=parse_time(q, md.get("creationTimestamp")), manifest=q,
        capability_set=frozenset(cap), guarantee_set=frozenset(guar), deserved_set=frozenset(des),
    )


def resource_names(objects: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every resource name that any object mentions, to size the resource vectors."""
    names: set[str] = set()

    def scan(rl: Any) -> None:
        if isinstance(rl, dict):
            names.update(str(k) for k in rl)

    def sub(d: Any, key: str) -> Any:  # malformed shapes are reported when the object is converted, not here
        return d.get(key) if isinstance(d, dict) else None

    def items(v: Any) -> list[Any]:
        return v if isinstance(v, list) else []

    for o in objects:
        kind = o.get("kind")
        spec = o.get("spec")
        if kind == "Node":
            scan(sub(o.get("status"), "allocatable"))
            scan(sub(o.get("status"), "capacity"))
        elif kind == "Pod":
            for c in items(sub(spec, "containers")) + items(sub(spec, "initContainers")):
                scan(sub(sub(c, "resources"), "requests"))
            scan(sub(spec, "overhead"))
        elif kind == "PodGroup":
            scan(sub(spec, "minResources"))
        elif kind == "Queue":
            scan(sub(spec, "capability"))
            scan(sub(spec, "deserved"))
            scan(sub(sub(spec, "guarantee"), "resource"))
    return names
