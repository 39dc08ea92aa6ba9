"""Kubernetes manifests (dicts, as ``kubectl get -o yaml`` prints them) to scheduler info objects.

Conversion only: every object reaching here has passed ``api/models.py: validate`` (the one validated boundary,
which names the object and the field of a mistake), so shapes and numbers are trusted and nothing is re-checked.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import orjson

from pyvolcano.api.hypernode import NetworkTopology
from pyvolcano.api.job_info import PodGroup, SubGroupPolicy, TaskInfo
from pyvolcano.api.k8s_requests import k8s_extra
from pyvolcano.api.node_info import NodeSpec
from pyvolcano.api.queue_info import QueueInfo
from pyvolcano.api.resource import PODS, ResourceIndex, amount
from pyvolcano.api.types import (
    DEFAULT_QUEUE,
    PREEMPTABLE_ANNOTATION,
    RESOURCE_STRATEGY_TYPE,
    RESOURCE_STRATEGY_WEIGHT,
    TASK_SPEC_ANNOTATION,
    PodGroupPhase,
    QueueState,
    TaskStatus,
)

DEFAULT_NODE_PODS = 110  # kubelet's default --max-pods, used when a Node reports no pods allocatable


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    md: dict[str, Any] = obj["metadata"]
    return md


def _d(value: Any) -> dict[str, Any]:
    return value or {}


def label_value(value: Any) -> str:
    """A label or selector value as Kubernetes stores it (YAML ``true`` -> ``"true"``, ``4`` -> ``"4"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_map(value: Any) -> dict[str, str]:
    """Labels, annotations or a nodeSelector as the strings the API server stores (the model allows scalars)."""
    return {str(k): label_value(v) for k, v in _d(value).items()}


def normalise_pod_spec(spec: dict[str, Any]) -> None:
    """Selector values written without quotes (``ssd: true``, ``values: [4]``) become the strings Kubernetes
    would store, so that predicates compare strings with node labels.  Shapes were checked by ``api/models.py``."""
    if spec.get("nodeSelector") is not None:
        spec["nodeSelector"] = string_map(spec["nodeSelector"])
    na = _d(_d(spec.get("affinity")).get("nodeAffinity"))
    terms = list(_d(na.get("requiredDuringSchedulingIgnoredDuringExecution")).get("nodeSelectorTerms") or [])
    terms += [_d(p).get("preference") for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
    for term in terms:
        for field in ("matchExpressions", "matchFields"):
            for e in _d(term).get(field) or []:
                if e.get("values") is not None:
                    e["values"] = [label_value(v) for v in e["values"]]


def parse_time(value: Any) -> float:
    """A time as seconds; ``api/models.py`` (``_time``) has checked it is RFC 3339 or a finite number."""
    if value in (None, ""):
        return 0.0
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _parse_stamp(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


@functools.lru_cache(maxsize=4096)
def _parse_stamp(value: str) -> float:
    """An RFC 3339 string as seconds, remembered: objects created together share their stamps (whole seconds), and
    every pod and PodGroup the cache converts has one (10,000 in a first list of 5,000 one-pod groups)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def resource_list(rl: Any) -> dict[str, float]:
    """A ResourceList in internal amounts (quantities checked by ``api/models.py``)."""
    return {str(name): _amount(str(name), q) for name, q in _d(rl).items()}


def _amount(name: str, q: Any) -> float:
    """``resource.amount``, remembered for the quantities a cluster repeats (``1``, ``500m``, ``4Gi``) across all
    its pods, so that a job's pods, built from one template, parse each quantity once: Decimal parsing is the
    costly part of converting a pod.  The value's type is part of the key (``1 == 1.0 == True`` hash alike)."""
    if isinstance(q, str | int | float) and not isinstance(q, bool):
        return _cached_amount(name, type(q).__name__, q)
    return amount(name, q)


@functools.lru_cache(maxsize=4096)
def _cached_amount(name: str, kind: str, q: Any) -> float:
    del kind
    return amount(name, q)


def _add(a: dict[str, float], b: Mapping[str, float]) -> None:
    for k, v in b.items():
        a[k] = a.get(k, 0.0) + v


def pod_requests(pod: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(Resreq, InitResreq), which at Volcano master are one and the same: ``NewTaskInfo``
    (``pkg/scheduler/api/job_info.go``) sets both to ``GetPodResourceRequest`` (``api/pod_info.go:
    aggregateAllContainerResourceRequests``), Kubernetes' ``PodRequests`` rule. Regular containers are summed;
    a restartable init container (``restartPolicy: Always``, a sidecar) is added to that sum and stays running
    under the init containers after it; each other init container needs itself plus the sidecars started before
    it; the pod needs the larger of the sum and the largest init step, plus ``spec.overhead`` and one ``pods``.
    The node is charged the same amount (Volcano 1.9 charged the node without init containers; master does not).
    Shapes and quantities were checked by ``api/models.py``.
    """
    spec = pod["spec"]
    req: dict[str, float] = {}
    for c in spec["containers"]:
        _add(req, resource_list(_d(_d(c).get("resources")).get("requests")))
    sidecars: dict[str, float] = {}
    init_max: dict[str, float] = {}
    for c in spec.get("initContainers") or []:
        r = resource_list(_d(_d(c).get("resources")).get("requests"))
        if _d(c).get("restartPolicy") == "Always":
            _add(req, r)
            _add(sidecars, r)
            step = dict(sidecars)
        else:
            step = dict(r)
            _add(step, sidecars)
        for k, v in step.items():
            init_max[k] = max(init_max.get(k, 0.0), v)
    for k, v in init_max.items():
        req[k] = max(req.get(k, 0.0), v)
    _add(req, resource_list(spec.get("overhead")))
    req[PODS] = 1.0
    return req, dict(req)


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


_KEY_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def constraints_key(pod: Mapping[str, Any]) -> str:
    """What template-safe predicates and scores read of a pod, as a stable string."""
    spec = pod.get("spec") or {}
    ports = sorted(
        (p.get("hostPort"), p.get("protocol", "TCP"), p.get("hostIP", ""))
        for c in spec.get("containers") or [] for p in (c or {}).get("ports") or [] if p.get("hostPort")
    )
    aff = spec.get("affinity") or {}
    md = pod.get("metadata") or {}
    parts = [spec.get("nodeSelector"), aff.get("nodeAffinity"), spec.get("tolerations"), ports, md.get("namespace")]
    ann = md.get("annotations")
    if ann and (RESOURCE_STRATEGY_TYPE in ann or RESOURCE_STRATEGY_WEIGHT in ann):  # a pod's own scoring strategy
        parts.append([ann.get(RESOURCE_STRATEGY_TYPE), ann.get(RESOURCE_STRATEGY_WEIGHT)])
    # orjson's canonical form (sorted keys) where it can write the parts, json's otherwise: either way equal parts
    # give equal strings and different parts different ones, which is all a template key needs.  orjson takes a
    # few microseconds where json took about 7 per pod, on every pod the cache converts (5,000 in a first list)
    try:
        return orjson.dumps(parts, default=str, option=_KEY_OPTIONS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(parts, sort_keys=True, default=str)


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
    extra = k8s_extra(pod, res.pos, resreq, init_resreq)
    # Kubernetes' view of the requests (``extra``: non-zero defaults, init containers) is part of what node scores
    # read, so two pods with equal ``resreq`` but different container layouts must not share a template's scores
    key = hash((resreq.tobytes(), init_resreq.tobytes(), constraints_key(pod), queue, extra))
    return TaskInfo(
        uid=f"{ns}/{md['name']}", name=md["name"], namespace=ns, job=job_uid, resreq=resreq,
        init_resreq=init_resreq, status=task_status(pod), node_name=spec.get("nodeName") or "",
        priority=priority, preemptable=str(preempt).lower() != "false",
        task_spec=task_role(annotations, labels), pod=pod, template_key=key,
        creation=parse_time(md.get("creationTimestamp")),
        sch_gated=bool(spec.get("schedulingGates")),
        k8s_extra=extra,
    )


def node_spec(node: dict[str, Any], res: ResourceIndex) -> NodeSpec:
    md = meta(node)
    spec = _d(node.get("spec"))
    status = _d(node.get("status"))
    alloc = resource_list(status.get("allocatable") or status.get("capacity"))
    cap = resource_list(status.get("capacity") or status.get("allocatable"))
    alloc.setdefault(PODS, DEFAULT_NODE_PODS)
    cap.setdefault(PODS, alloc[PODS])
    taints = spec.get("taints") or []
    ready = True
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and str(cond.get("status")) != "True":
            ready = False
    return NodeSpec(
        name=md["name"], allocatable=res.vector(alloc), capacity=res.vector(cap),
        labels=string_map(md.get("labels")), taints=list(taints),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready, manifest=node,
    )


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def podgroup(pg: dict[str, Any], res: ResourceIndex) -> PodGroup:
    md = meta(pg)
    spec = _d(pg.get("spec"))
    status = _d(pg.get("status"))
    min_res = spec.get("minResources")
    mtm = _d(spec.get("minTaskMember"))
    phase_v = PodGroupPhase(status.get("phase") or "Pending")
    return PodGroup(
        name=md["name"], namespace=md.get("namespace") or "default",
        min_member=_int(spec.get("minMember"), 1),
        min_task_member={str(k): _int(v, 0) for k, v in mtm.items()},
        queue=spec.get("queue") or DEFAULT_QUEUE, priority_class=spec.get("priorityClassName") or "",
        min_resources=None if min_res is None else res.vector(resource_list(min_res)),
        phase=phase_v, conditions=list(status.get("conditions") or []),
        creation=parse_time(md.get("creationTimestamp")), annotations=dict(md.get("annotations") or {}),
        labels=dict(md.get("labels") or {}), manifest=pg,
        network_topology=NetworkTopology.of(_d(spec.get("networkTopology"))
                                            if spec.get("networkTopology") is not None else None),
        sub_group_policy=tuple(_sub_group_policy(_d(p)) for p in spec.get("subGroupPolicy") or []),
    )


def _sub_group_policy(p: dict[str, Any]) -> SubGroupPolicy:
    """One validated ``spec.subGroupPolicy`` entry."""
    sel = p.get("labelSelector")
    return SubGroupPolicy(
        name=str(p.get("name") or ""),
        size=None if p.get("subGroupSize") is None else int(p["subGroupSize"]),
        min_sub_groups=None if p.get("minSubGroups") is None else int(p["minSubGroups"]),
        label_selector=None if sel is None else _d(sel),
        match_label_keys=tuple(str(k) for k in p.get("matchLabelKeys") or []),
        network_topology=NetworkTopology.of(_d(p["networkTopology"])) if p.get("networkTopology") is not None
        else None,
    )


def queue(q: dict[str, Any], res: ResourceIndex) -> QueueInfo:
    md = meta(q)
    spec = _d(q.get("spec"))
    status = _d(q.get("status"))
    cap = resource_list(spec.get("capability"))
    guar = resource_list(_d(spec.get("guarantee")).get("resource"))
    des = resource_list(spec.get("deserved"))
    state_v = QueueState(status.get("state") or spec.get("state") or "Open")
    reclaimable = spec.get("reclaimable")
    ann = md.get("annotations") or {}
    return QueueInfo(
        name=md["name"], weight=_int(spec.get("weight"), 1),
        capability=res.vector(cap, default=np.inf) if cap else None,
        guarantee=res.vector(guar) if guar else None,
        deserved=res.vector(des) if des else None,
        reclaimable=True if reclaimable is None else bool(reclaimable), state=state_v,
        parent=spec.get("parent") or "", hierarchy=ann.get("volcano.sh/hierarchy", ""),
        weights=ann.get("volcano.sh/hierarchy-weights", ""),
        priority=_int(spec.get("priority"), 0),
        affinity=_d(spec.get("affinity")),
        creation=parse_time(md.get("creationTimestamp")), manifest=q,
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
