"""Shape checks for the parts of Pods and Nodes that the scheduler reads.

The API server would have rejected these objects, but snapshots are often written by hand.  Checking the
shapes once, when an object enters the cache, means a plugin never meets a ``tolerations: 5`` in the middle
of a session: the object is skipped with a message naming it and the field, and the rest is scheduled.
Label values and nodeSelector values written without quotes (``cores: 4``, ``ssd: true``) are accepted and
turned into the strings Kubernetes would store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.errors import ManifestError

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute", "")
_TOLERATION_OPS = ("Equal", "Exists", "")


def _fail(obj: Mapping[str, Any], path: str, problem: str) -> ManifestError:
    meta = obj.get("metadata")
    md: Mapping[str, Any] = meta if isinstance(meta, dict) else {}
    ns = md.get("namespace")
    return ManifestError(f"{obj.get('kind', '?')} {f'{ns}/' if ns else ''}{md.get('name') or '<unnamed>'}", path,
                         problem)


def _mapping(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(obj, path, f"must be a mapping, got {type(value).__name__}")
    return value


def _list(obj: Mapping[str, Any], path: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(obj, path, f"must be a list, got {type(value).__name__}")
    return value


def label_value(value: Any) -> str:
    """A label or selector value as Kubernetes stores it (YAML ``true`` -> ``"true"``, ``4`` -> ``"4"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_map(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, str]:
    """A map of strings (labels, annotations, nodeSelector); scalars are converted, nested values rejected."""
    out: dict[str, str] = {}
    for k, v in _mapping(obj, path, value).items():
        if isinstance(v, dict | list):
            raise _fail(obj, f"{path}.{k}", f"must be a string, got {type(v).__name__}")
        out[str(k)] = label_value(v)
    return out


def _selector_term(obj: Mapping[str, Any], path: str, term: Any) -> None:
    term = _mapping(obj, path, term)
    for field in ("matchExpressions", "matchFields"):
        for i, e in enumerate(_list(obj, f"{path}.{field}", term.get(field))):
            ep = f"{path}.{field}[{i}]"
            e = _mapping(obj, ep, e)
            if not isinstance(e.get("key"), str) or not e["key"]:
                raise _fail(obj, f"{ep}.key", "is required")
            op = e.get("operator")
            if op not in _OPERATORS:
                raise _fail(obj, f"{ep}.operator", f"{op!r} is not one of {', '.join(_OPERATORS)}")
            values = _list(obj, f"{ep}.values", e.get("values"))
            if op in ("Gt", "Lt"):
                if len(values) != 1 or not str(values[0]).lstrip("-").isdigit():
                    raise _fail(obj, f"{ep}.values", f"{op} needs exactly one integer value")
            elif op in ("In", "NotIn") and not values:
                raise _fail(obj, f"{ep}.values", f"{op} needs at least one value")
            e["values"] = [label_value(v) for v in values]


def check_pod_spec(pod: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Raise ManifestError for the first malformed field the scheduler would read; normalise selector values."""
    if "nodeSelector" in spec:
        spec["nodeSelector"] = string_map(pod, "spec.nodeSelector", spec.get("nodeSelector"))
    for i, t in enumerate(_list(pod, "spec.tolerations", spec.get("tolerations"))):
        t = _mapping(pod, f"spec.tolerations[{i}]", t)
        if t.get("operator", "") not in _TOLERATION_OPS:
            raise _fail(pod, f"spec.tolerations[{i}].operator", f"{t.get('operator')!r} is not Equal or Exists")
        if (t.get("effect") or "") not in _EFFECTS:
            raise _fail(pod, f"spec.tolerations[{i}].effect", f"{t.get('effect')!r} is not a taint effect")
    aff = _mapping(pod, "spec.affinity", spec.get("affinity"))
    na = _mapping(pod, "spec.affinity.nodeAffinity", aff.get("nodeAffinity"))
    base = "spec.affinity.nodeAffinity"
    req = _mapping(pod, f"{base}.requiredDuringSchedulingIgnoredDuringExecution",
                   na.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = req.get("nodeSelectorTerms")
    for i, term in enumerate(_list(pod, f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                                   terms)):
        _selector_term(pod, f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", term)
    prefs = _list(pod, f"{base}.preferredDuringSchedulingIgnoredDuringExecution",
                  na.get("preferredDuringSchedulingIgnoredDuringExecution"))
    for i, p in enumerate(prefs):
        pp = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        p = _mapping(pod, pp, p)
        try:
            int(p.get("weight") or 0)
        except (TypeError, ValueError):
            raise _fail(pod, f"{pp}.weight", f"{p.get('weight')!r} is not an integer") from None
        _selector_term(pod, f"{pp}.preference", p.get("preference"))
    for group in ("containers", "initContainers"):
        for i, c in enumerate(_list(pod, f"spec.{group}", spec.get(group))):
            c = _mapping(pod, f"spec.{group}[{i}]", c)
            _mapping(pod, f"spec.{group}[{i}].resources", c.get("resources"))
            for j, port in enumerate(_list(pod, f"spec.{group}[{i}].ports", c.get("ports"))):
                port = _mapping(pod, f"spec.{group}[{i}].ports[{j}]", port)
                hp = port.get("hostPort")
                if hp is not None and (isinstance(hp, bool) or not str(hp).isdigit()):
                    raise _fail(pod, f"spec.{group}[{i}].ports[{j}].hostPort", f"{hp!r} is not a port number")
    for field in ("schedulerName", "priorityClassName", "nodeName"):
        v = spec.get(field)
        if v is not None and not isinstance(v, str):
            raise _fail(pod, f"spec.{field}", f"must be a string, got {type(v).__name__}")
    _list(pod, "spec.schedulingGates", spec.get("schedulingGates"))


def check_node(node: Mapping[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> None:
    for i, t in enumerate(_list(node, "spec.taints", spec.get("taints"))):
        t = _mapping(node, f"spec.taints[{i}]", t)
        if not t.get("key"):
            raise _fail(node, f"spec.taints[{i}].key", "is required")
        if t.get("effect") not in _EFFECTS[:-1]:
            raise _fail(node, f"spec.taints[{i}].effect", f"{t.get('effect')!r} is not NoSchedule, "
                        "PreferNoSchedule or NoExecute")
    for i, c in enumerate(_list(node, "status.conditions", status.get("conditions"))):
        _mapping(node, f"status.conditions[{i}]", c)
