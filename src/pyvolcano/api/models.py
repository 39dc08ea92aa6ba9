"""Typed models of the parts of Kubernetes and Volcano objects that pyvolcano reads: the one validated boundary.

Every object that enters the scheduler cache (from a snapshot file, the simulator or the API server) is checked
here once, before it is converted (``api/convert.py``); after that, code may trust the shapes and numbers.  The
simulator checks what its job controller will build from a Job when it admits the Job, and hands the objects it
builds and changes itself to the cache as trusted (``SchedulerCache.upsert``, docs/architecture.md).
The API server would have rejected most of these mistakes (apimachinery's ``ValidateResourceRequirements``
refuses negative quantities, ``ValidatePodSpec`` refuses a hostPort outside 1..65535, and so on), but
snapshots are often written by hand and a fuzzer writes worse: a wrong type, a ``.nan``/``.inf``, a negative
request or a ``1e30`` count must be refused naming the object and the field, never reach the NumPy arrays
(a NaN guarantee made the proportion loop spin forever; a ``-8`` cpu running pod made room on a full node).

Only the fields pyvolcano uses are modelled; everything else is allowed and ignored (``extra="allow"``), as
kubectl does with fields it does not know.  The models validate; the dicts are kept as they were written
(conversion reads them), so validation adds no copy.  Pydantic v2 validates in Rust: a pod is ~10 µs.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from pyvolcano.api import devices
from pyvolcano.api.quantity import parse_quantity
from pyvolcano.errors import ManifestError, QuantityError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: kube-apiserver's bound on a PriorityClass value (HighestUserDefinablePriority is 10^9; system classes 2*10^9)
PRIORITY_MAX = 2_000_001_000
#: counts (minMember, replicas, minTaskMember) above this are a mistake, not a workload
MAX_COUNT = 1_000_000
#: the largest time in seconds (either side of 1970) an object or option may name: about the year 5138, so that
#: every accepted time, and a time plus an accepted duration (``sim/options.py``), stays within what ``datetime``
#: formats (the year 9999, 2.5e11 s) and a report can print it
MAX_TIME = 1e11

#: an integer as Go's ``strconv.Atoi`` and apimachinery read one: ASCII digits with an optional sign.  Python's
#: ``int`` also takes any Unicode digit (``int("٣") == 3``) and underscores (``int("1_0") == 10``), which no
#: Kubernetes field accepts
_ASCII_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def go_int(text: object) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it (ASCII digits, an optional sign, no blanks,
    within int64), or None: how Kubernetes reads a node label for a ``Gt``/``Lt`` selector."""
    if not isinstance(text, str) or not _ASCII_INT.fullmatch(text):
        return None
    n = int(text, 10)
    return n if -(2**63) <= n < 2**63 else None


def ascii_int(text: str) -> int:
    """``text`` (surrounding blanks allowed) as an integer of ASCII digits; ValueError naming it otherwise."""
    t = text.strip()
    if not _ASCII_INT.fullmatch(t):
        raise ValueError(f"{text[:80]!r} is not an integer")
    return int(t, 10)


def seconds(value: object) -> float:
    """A duration or time in seconds, as a workload, a CSV row or an annotation writes one: a finite number >= 0
    and at most ``MAX_TIME`` (beyond it float time stops advancing by a second), ASCII digits only; ValueError
    naming the value otherwise."""
    if isinstance(value, bool) or (isinstance(value, str) and (not value.isascii() or "_" in value)):
        raise ValueError(f"{str(value)[:80]!r} is not a number of seconds (ASCII digits)")
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(x):
        raise ValueError(f"{value!r} is not a finite number of seconds")
    if x < 0:
        raise ValueError(f"{value!r} is negative")
    if x > MAX_TIME:
        raise ValueError(f"{value!r} is more than {MAX_TIME:g} seconds")
    return x


def _quantity(v: Any) -> Any:
    """A resource quantity: a number or a string apimachinery's ParseQuantity accepts, finite and >= 0
    (apimachinery's ``ValidateNonnegativeQuantity``: requests, limits, allocatable, quotas are never negative)."""
    problem = _quantity_problem(type(v).__name__, v) if isinstance(v, str | int | float) else f"{v!r} is not a quantity"
    if problem:
        raise ValueError(problem)
    return v


@functools.lru_cache(maxsize=4096)
def _quantity_problem(kind: str, v: Any) -> str | None:
    """Why ``v`` is not a valid quantity, or None; cached: a cluster repeats a handful of quantities (``1``,
    ``500m``, ``4Gi``) across all its pods, and Decimal parsing is the costly part of validating a pod.
    ``kind`` (the value's type name) is in the key because ``1 == 1.0 == True`` hash alike."""
    del kind
    try:
        q = parse_quantity(v)
    except QuantityError as exc:
        return str(exc)
    if not q.is_finite():
        return f"{v!r} is not a finite quantity"
    if q < 0:
        return f"{v!r} is negative (quantities must be >= 0)"
    if q > 10**24:
        return f"{v!r} is absurdly large"
    return None


def _integer(lo: int, hi: int) -> Any:
    """An integer in [lo, hi]; also written as a string or an integral float (YAML ``1e3``), never bool, NaN or
    infinity (``int(float('inf'))`` is an OverflowError downstream)."""
    def check(v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"{v!r} is not an integer")
        if isinstance(v, float):
            if not math.isfinite(v) or v != int(v):
                raise ValueError(f"{v!r} is not an integer")
            n = int(v)
        elif isinstance(v, int):
            n = v
        elif isinstance(v, str):
            n = ascii_int(v)
        else:
            raise ValueError(f"{v!r} is not an integer")
        if not lo <= n <= hi:
            raise ValueError(f"{n} is not between {lo} and {hi}")
        return n
    return BeforeValidator(check)


def _scalar(v: Any) -> Any:
    """A label, annotation or selector value: a string or a scalar YAML turns into one (``true``, ``4``)."""
    if isinstance(v, dict | list):
        raise ValueError(f"must be a string, got a {type(v).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{v!r} is not a string")
    return v


def _time(v: Any) -> Any:
    """A time: an RFC 3339 string (or the datetime YAML makes of one), or seconds as a finite number."""
    if v is None or v == "" or isinstance(v, datetime | date):
        return v
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not an RFC 3339 time")
    if isinstance(v, int | float):
        if not math.isfinite(v) or abs(v) > MAX_TIME:
            raise ValueError(f"{v!r} is not a time")
        return v
    if isinstance(v, str):
        try:
            datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError):  # OverflowError: year 1 with a positive offset
            raise ValueError(f"{v[:80]!r} is not an RFC 3339 time") from None
        return v
    raise ValueError(f"{v!r} is not an RFC 3339 time")


Quantity = Annotated[Any, BeforeValidator(_quantity)]
ResourceList = dict[str, Quantity]
Int32 = Annotated[int, _integer(INT32_MIN, INT32_MAX)]
Count = Annotated[int, _integer(0, MAX_COUNT)]
Scalar = Annotated[Any, BeforeValidator(_scalar)]
StringMap = dict[str, Scalar]
Time = Annotated[Any, BeforeValidator(_time)]
#: true or false as JSON has them: not 1, not "yes" (pydantic's lax mode reads both as true; the API server does not)
Bool = Annotated[bool, Field(strict=True)]
#: a string as JSON has one: not a number YAML wrote unquoted
Text = Annotated[str, Field(strict=True)]


class _M(BaseModel):
    model_config = ConfigDict(extra="allow", strict=False, populate_by_name=True)


#: a namespace's name: a DNS-1123 label (apimachinery's ``ValidateNamespaceName``); null or "" is the default one
NamespaceName = Annotated[str, Field(max_length=63, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$")]


class Metadata(_M):
    name: str = Field(min_length=1)
    namespace: NamespaceName | None = None
    labels: StringMap | None = None
    annotations: StringMap | None = None
    creationTimestamp: Time = None
    deletionTimestamp: Time = None
    uid: Scalar = None


class _Obj(_M):
    kind: str
    metadata: Metadata


# --- Node ---------------------------------------------------------------------------------------------
class Taint(_M):
    key: str = Field(min_length=1)
    value: Scalar = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Condition(_M):
    type: str | None = None
    status: Scalar = None


class PodConditionM(_M):
    """One of a pod's ``status.conditions``: preempt reads ``DisruptionTarget`` (its ``reason``)."""

    type: str | None = None
    status: Scalar = None
    reason: str | None = None


class NodeSpecM(_M):
    taints: list[Taint] | None = None
    unschedulable: Bool | None = None


class NodeStatus(_M):
    allocatable: ResourceList | None = None
    capacity: ResourceList | None = None
    conditions: list[Condition] | None = None


class Node(_Obj):
    spec: NodeSpecM | None = None
    status: NodeStatus | None = None

    @model_validator(mode="after")
    def _has_resources(self) -> Node:
        if not (self.status and (self.status.allocatable or self.status.capacity)):
            raise ValueError("status.allocatable: is required (no resources to schedule on)")
        _device_annotations(self.metadata.annotations, (
            (devices.VGPU_REGISTER, devices.parse_vgpu_register),
            (devices.UNHEALTHY_GPU_IDS, devices.parse_unhealthy_ids)))
        return self


def _device_annotations(ann: dict[str, Any] | None, parsers: tuple[tuple[str, Any], ...]) -> None:
    """The GPU device annotations Volcano's deviceshare reads (``api/devices.py``) must parse: Volcano would drop
    the node's devices, or leave a pod's device use uncounted (so its GPU is given twice)."""
    if not ann:
        return
    for key, parse in parsers:
        if key in ann and ann[key] is not None:
            try:
                parse(str(ann[key]))
            except ValueError as exc:
                raise ValueError(f"metadata.annotations.{key}: {exc}") from None


# --- Pod ----------------------------------------------------------------------------------------------
class Requirement(_M):
    """A node selector requirement (``core/v1 NodeSelectorRequirement``), validated as apimachinery's
    ``ValidateNodeSelectorRequirement`` does: In/NotIn need values, Gt/Lt exactly one integer."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[Scalar] | None = None

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Requirement:
        values = self.values or []
        if self.operator in ("Gt", "Lt"):
            if len(values) != 1 or isinstance(values[0], bool) or go_int(str(values[0])) is None:
                raise ValueError(f"values: {self.operator} needs exactly one integer value")
        elif self.operator in ("In", "NotIn") and not values:
            raise ValueError(f"values: {self.operator} needs at least one value")
        return self


class LabelRequirement(_M):
    """A label selector requirement (``metav1.LabelSelectorRequirement``): no Gt/Lt, In/NotIn need values
    (apimachinery's ``ValidateLabelSelectorRequirement``)."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[Scalar] | None = None

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"values: {self.operator} needs at least one value")
        return self


class SelectorTerm(_M):
    matchExpressions: list[Requirement] | None = None
    matchFields: list[Requirement] | None = None


class NodeSelector(_M):
    nodeSelectorTerms: list[SelectorTerm] | None = None


class PreferredTerm(_M):
    weight: Annotated[int, _integer(-100, 100)] = 0
    preference: SelectorTerm | None = None


class NodeAffinity(_M):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredTerm] | None = None


class LabelSelector(_M):
    matchLabels: StringMap | None = None
    matchExpressions: list[LabelRequirement] | None = None


class PodAffinityTerm(_M):
    labelSelector: LabelSelector | None = None
    topologyKey: str | None = None
    namespaces: list[str] | None = None


class WeightedPodAffinityTerm(_M):
    weight: Annotated[int, _integer(-100, 100)] = 0
    podAffinityTerm: PodAffinityTerm | None = None


class PodAffinity(_M):
    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTerm] | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[WeightedPodAffinityTerm] | None = None


class Affinity(_M):
    nodeAffinity: NodeAffinity | None = None
    podAffinity: PodAffinity | None = None
    podAntiAffinity: PodAffinity | None = None


class Toleration(_M):
    key: str | None = None
    operator: Literal["Equal", "Exists", ""] | None = None
    value: Scalar = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    tolerationSeconds: Annotated[int, _integer(-(2**62), 2**62)] | None = None


class Port(_M):
    hostPort: Annotated[int, _integer(0, 65535)] | None = None
    containerPort: Annotated[int, _integer(0, 65535)] | None = None
    protocol: str | None = None
    hostIP: str | None = None


class Resources(_M):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class Container(_M):
    resources: Resources | None = None
    ports: list[Port] | None = None


class PodSpec(_M):
    containers: list[Container] = Field(min_length=1)
    initContainers: list[Container] | None = None
    overhead: ResourceList | None = None
    nodeName: str | None = None
    schedulerName: str | None = None
    priorityClassName: str | None = None
    priority: Int32 | None = None
    nodeSelector: StringMap | None = None
    tolerations: list[Toleration] | None = None
    affinity: Affinity | None = None
    schedulingGates: list[dict[str, Any]] | None = None


class PodStatus(_M):
    phase: str | None = None
    #: the node a scheduler nominated the pod to after evicting for it (allocate tries it first; preempt asks
    #: whether the pod may preempt again); a node name, at most 253 characters
    nominatedNodeName: Annotated[str, Field(max_length=253)] | None = None
    conditions: list[PodConditionM] | None = None


class Pod(_Obj):
    spec: PodSpec
    status: PodStatus | None = None

    @model_validator(mode="after")
    def _device_requests(self) -> Pod:
        """A device annotation that does not parse, and a ``volcano.sh/vgpu-number`` of 0 (Volcano would place the
        pod on no GPU at all, ``devices.ExtractResourceRequest``), are refused, naming the field."""
        _device_annotations(self.metadata.annotations, (
            (devices.VGPU_IDS, devices.decode_pod_devices), (devices.GPU_INDEX, devices.parse_gpu_index)))
        for k, c in enumerate(self.spec.containers):
            lim = c.resources.limits if c.resources else None
            if lim and devices.VGPU_NUMBER in lim and parse_quantity(lim[devices.VGPU_NUMBER]) < 1:
                raise ValueError(f"spec.containers[{k}].resources.limits.{devices.VGPU_NUMBER}: must be at least 1, "
                                 f"got {lim[devices.VGPU_NUMBER]!r}")
        return self


# --- Volcano: PodGroup, Queue -------------------------------------------------------------------------
class NetworkTopologySpec(_M):
    """``spec.networkTopology`` of a PodGroup (the CRD ``scheduling.volcano.sh_podgroups.yaml``): mode hard or
    soft (default hard), ``highestTierAllowed`` >= 0 or ``highestTierName`` (at most 253 characters), not both."""

    mode: Literal["hard", "soft"] | None = None
    highestTierAllowed: Annotated[int, _integer(0, 1_000)] | None = None
    highestTierName: Annotated[str, Field(max_length=253)] | None = None

    @model_validator(mode="after")
    def _not_both(self) -> NetworkTopologySpec:
        if self.highestTierAllowed is not None and self.highestTierName:
            raise ValueError("highestTierName and highestTierAllowed cannot be set simultaneously")
        return self


class SubGroupPolicySpec(_M):
    """One entry of a PodGroup's ``spec.subGroupPolicy`` (``volcano.sh/apis scheduling/v1beta1
    SubGroupPolicySpec`` and the CRD): ``name`` at most 253 characters, ``subGroupSize`` >= 1, ``minSubGroups``
    >= 0, a label selector, the label keys whose values group the selected pods, and a per-sub-group
    ``networkTopology`` (tier and tier name not both: the podgroup webhook's ``validateNetworkTopology``)."""

    name: Annotated[str, Field(max_length=253)] | None = None
    networkTopology: NetworkTopologySpec | None = None
    subGroupSize: Annotated[int, _integer(1, MAX_COUNT)] | None = None
    minSubGroups: Count | None = None
    labelSelector: LabelSelector | None = None
    matchLabelKeys: list[Annotated[str, Field(min_length=1)]] | None = None


class PodGroupSpec(_M):
    minMember: Count | None = None
    minTaskMember: dict[str, Count] | None = None
    queue: str | None = None
    priorityClassName: str | None = None
    minResources: ResourceList | None = None
    networkTopology: NetworkTopologySpec | None = None
    subGroupPolicy: list[SubGroupPolicySpec] | None = None


class PodGroupStatus(_M):
    phase: Literal["Pending", "Inqueue", "Running", "Unknown", "Completed", ""] | None = None
    conditions: list[dict[str, Any]] | None = None


class PodGroup(_Obj):
    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


class Guarantee(_M):
    resource: ResourceList | None = None


#: a node group's name: the value of a node's ``volcano.sh/nodegroup-name`` label (a label value: at most 63
#: characters), never null, a number or an empty string
NodeGroupName = Annotated[str, Field(strict=True, min_length=1, max_length=63)]


class NodeGroupTerms(_M):
    """One side of a Queue's node-group affinity (the Queue CRD's ``nodeGroupAffinity`` /
    ``nodeGroupAntiAffinity``, ``volcano.sh/apis scheduling/v1beta1 NodeGroupAffinity``): lists of group names."""

    requiredDuringSchedulingIgnoredDuringExecution: list[NodeGroupName] | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[NodeGroupName] | None = None


class QueueAffinity(_M):
    """A Queue's ``spec.affinity`` (``scheduling/v1beta1 Affinity``), read by the nodegroup plugin."""

    nodeGroupAffinity: NodeGroupTerms | None = None
    nodeGroupAntiAffinity: NodeGroupTerms | None = None


class QueueSpec(_M):
    weight: Annotated[int, _integer(0, MAX_COUNT)] | None = None
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: Guarantee | None = None
    reclaimable: Bool | None = None
    parent: str | None = None
    priority: Int32 | None = None
    affinity: QueueAffinity | None = None
    state: Literal["Open", "Closed", "Closing", "Unknown", ""] | None = None


class QueueStatus(_M):
    state: Literal["Open", "Closed", "Closing", "Unknown", ""] | None = None


class Queue(_Obj):
    spec: QueueSpec | None = None
    status: QueueStatus | None = None


# --- Volcano: a vcjob's lifecycle policies ------------------------------------------------------------


class LifecyclePolicy(_M):
    """One entry of a vcjob's ``spec.policies`` or a task's ``policies`` (``volcano.sh/apis batch/v1alpha1
    LifecyclePolicy``): ``event`` and ``events`` are event names (strings), ``action`` an action name,
    ``exitCode`` an int32, ``timeout`` a duration string.  Which names and combinations are allowed is the job
    webhook's ``validatePolicies`` (``api/job_validate.py``), which reads this typed entry."""

    event: Text | None = None
    events: list[Text] | None = None
    action: Text | None = None
    exitCode: Int32 | None = None
    timeout: Text | None = None


# --- PriorityClass, PodDisruptionBudget, ResourceQuota ------------------------------------------------
class PriorityClass(_Obj):
    value: Annotated[int, _integer(INT32_MIN, PRIORITY_MAX)] = 0
    globalDefault: Bool | None = None


class PDBSpec(_M):
    selector: LabelSelector | None = None
    minAvailable: Annotated[int, _integer(0, MAX_COUNT)] | str | None = None
    maxUnavailable: Annotated[int, _integer(0, MAX_COUNT)] | str | None = None


class PDBStatus(_M):
    disruptionsAllowed: Annotated[int, _integer(0, MAX_COUNT)] | None = None
    disruptedPods: dict[str, Any] | None = None


class PodDisruptionBudget(_Obj):
    spec: PDBSpec | None = None
    status: PDBStatus | None = None


class QuotaSpec(_M):
    hard: ResourceList | None = None


class QuotaStatus(_M):
    hard: ResourceList | None = None
    used: ResourceList | None = None


class ResourceQuota(_Obj):
    spec: QuotaSpec | None = None
    status: QuotaStatus | None = None


class Namespace(_Obj):
    """Only its labels are read (a pod affinity term's ``namespaceSelector``)."""


# --- volcano-controller.conf: HyperNode discovery ------------------------------------------------------
def _go_duration(v: Any) -> Any:
    """A Go ``time.Duration`` as gopkg.in/yaml.v2 decodes one: a ``time.ParseDuration`` string (``10m``) or an
    integer of nanoseconds; returned in seconds."""
    from pyvolcano.conf.arguments import parse_duration

    if v is None:
        return None
    if isinstance(v, bool) or (isinstance(v, float) and not math.isfinite(v)):
        raise ValueError(f"{v!r} is not a duration")
    if isinstance(v, int | float):
        return v / 1e9
    if isinstance(v, str):
        try:
            return parse_duration(v)
        except ValueError:
            raise ValueError(f"{v!r} is not a duration (e.g. 10m, 1h)") from None
    raise ValueError(f"{v!r} is not a duration")


class SecretRef(_M):
    name: str
    namespace: str


class DiscoveryCredentials(_M):
    secretRef: SecretRef | None = None


class DiscoveryConfig(_M):
    """One ``networkTopologyDiscovery`` entry (Volcano's ``pkg/controllers/hypernode/api/types.go:
    DiscoveryConfig``): a source (``label``, ``ufm``, ...), whether it is enabled, its interval, credentials and
    source-specific ``config``."""

    source: str
    enabled: Annotated[bool, Field(strict=True)] = False
    interval: Annotated[float | None, BeforeValidator(_go_duration)] = None
    credentials: DiscoveryCredentials | None = None
    config: dict[str, Any] | None = None


class NetworkTopologyConfig(_M):
    """The ``volcano-controller.conf`` key of the ``volcano-controller-configmap`` ConfigMap (Volcano's
    ``NetworkTopologyConfig``, read by ``pkg/controllers/hypernode/config/loader.go``)."""

    networkTopologyDiscovery: list[DiscoveryConfig] | None = None


def _weak_string(v: Any) -> Any:
    """mapstructure's WeakDecode into a string: numbers and booleans become their text."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    return v


class NodeLabel(_M):
    nodeLabel: Annotated[str, BeforeValidator(_weak_string)]


class LabelDiscoverySource(_M):
    """The ``config`` of the ``label`` source (``discovery/label/label.go: NetworkTopologyType``): topology types,
    each a list of node labels from the highest tier down to ``kubernetes.io/hostname``."""

    networkTopologyTypes: dict[str, list[NodeLabel]] | None = None


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The first mistake pydantic found: the field's path (``spec.tasks[0].replicas``, "" for the object itself)
    and the project's message for it."""
    err = exc.errors(include_url=False)[0]
    return _path(tuple(err["loc"])), _message(err)


def validate_model(model: type[BaseModel], data: Any, where: str, prefix: str = "") -> Any:
    """``model.model_validate(data)``; a mistake is a ManifestError naming ``where`` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = _path(tuple(err["loc"]))
        full = ".".join(p for p in (prefix, path) if p) or "(object)"
        raise ManifestError(where, full.replace(".[", "["), _message(err)) from None


MODELS: dict[str, type[_Obj]] = {
    "Node": Node, "Pod": Pod, "PodGroup": PodGroup, "Queue": Queue, "PriorityClass": PriorityClass,
    "PodDisruptionBudget": PodDisruptionBudget, "ResourceQuota": ResourceQuota, "Namespace": Namespace,
}


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for step in loc:
        if isinstance(step, int):
            out += f"[{step}]"
        elif "[" in step and "(" in step:
            continue  # pydantic's name of a validator step, not a field
        elif step in ("int", "str", "bool", "list", "dict", "literal"):
            continue
        else:
            out += f".{step}" if out else str(step)
    return out


def ref(obj: Mapping[str, Any]) -> str:
    got = obj.get("metadata")
    md: Mapping[str, Any] = got if isinstance(got, dict) else {}
    ns = md.get("namespace")
    name = md.get("name") or "<unnamed>"
    return f"{obj.get('kind', '?')} {f'{ns}/' if isinstance(ns, str) and ns else ''}{name}"


def validate(obj: Mapping[str, Any]) -> None:
    """Raise ManifestError naming the object and the first bad field; objects of kinds pyvolcano does not read
    pass.  Called once per object, where it enters the scheduler cache."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise ManifestError(ref(obj), "kind", f"must be a string, got {kind!r}")
    model = MODELS.get(kind)
    if model is None:
        return
    try:
        model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path, msg = _path(tuple(err["loc"])), _message(err)
        if err["type"] == "value_error" and ": " in msg and " " not in msg.split(": ", 1)[0]:
            # a model-level check names the field it is about: "status.allocatable: is required"
            sub, msg = msg.split(": ", 1)
            path = f"{path}.{sub}" if path else sub
        raise ManifestError(ref(obj), path or "(object)", msg) from None


_WANT = {"dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
         "list_type": "a list", "string_type": "a string", "bool_type": "true or false", "bool_parsing": "true or false",
         "int_type": "an integer", "int_parsing": "an integer"}


def _message(err: Any) -> str:
    """Pydantic's error as the project says it: what the field must be and what it got."""
    kind = err["type"]
    if kind == "missing":
        return "is required"
    if kind in _WANT:
        got = err.get("input")
        return f"must be {_WANT[kind]}, got {type(got).__name__ if isinstance(got, dict | list) else repr(got)[:80]}"
    if kind == "string_pattern_mismatch":
        return f"{str(err.get('input'))[:80]!r} does not match {err.get('ctx', {}).get('pattern', '?')}"
    if kind == "literal_error":
        return f"{err.get('input')!r} is not one of {err.get('ctx', {}).get('expected', '?')}"
    return str(err["msg"]).removeprefix("Value error, ")[:300]
