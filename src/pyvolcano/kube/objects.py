"""Small helpers over Kubernetes objects as plain dicts (names, references, times, resource lists)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pyvolcano.api.resource import quantity, resource_list

__all__ = ["quantity", "resource_list"]


def now_iso() -> str:
    """An RFC 3339 time in seconds, as metav1.Time serialises."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> float | None:
    """An RFC 3339 time (``metav1.Time``) as seconds since the epoch; None when unset; ValueError when it does
    not parse."""
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def name_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def uid_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def key_of(obj: dict[str, Any]) -> str:
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def object_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """An ``ObjectReference`` (Event.involvedObject) to ``obj``."""
    md = obj.get("metadata") or {}
    ref = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""), "name": md.get("name", "")}
    for src, dst in (("namespace", "namespace"), ("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if md.get(src):
            ref[dst] = md[src]
    return ref


def owner_ref(obj: dict[str, Any], controller: bool = True) -> dict[str, Any]:
    """An ``OwnerReference`` to ``obj`` (garbage collection deletes the dependent with its owner)."""
    return {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""), "name": name_of(obj),
            "uid": uid_of(obj), "controller": controller, "blockOwnerDeletion": True}


