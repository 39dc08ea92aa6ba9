"""Numatopology (``nodeinfo.volcano.sh/v1alpha1``): one node's NUMA layout, as Volcano's resource exporter reports it.

The object is cluster-scoped and named after its node.  ``spec.policies`` holds the kubelet's
``CPUManagerPolicy`` and ``TopologyManagerPolicy``; ``spec.numares`` each NUMA-managed resource's ``allocatable``
set (a cpuset string such as ``0-3,8``) and ``capacity``; ``spec.cpuDetail`` each CPU id's ``numa``, ``socket``
and ``core``; ``spec.resReserved`` the kubelet's reserved amounts (``cpu: "1"``).  This is Volcano's
``cache/event_handlers.go: getNumaInfo``, with the checks Volcano leaves to the CRD schema (ids and capacities
not negative) and to logging (a cpuset that does not parse) made errors naming the object and field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.quantity import to_milli
from pyvolcano.errors import ManifestError

CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_cpuset(text: str) -> frozenset[int]:
    """``cpuset.Parse``: ``0-3,8,10-11``; an empty string is the empty set."""
    out: set[int] = set()
    s = text.strip()
    if not s:
        return frozenset()
    for part in s.split(","):
        m = _RANGE.match(part)
        if m is None:
            raise ValueError(f"{text!r} is not a cpuset (e.g. 0-3,8)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"{text!r} is not a cpuset: range {lo}-{hi} runs backwards")
        out.update(range(lo, hi + 1))
    return frozenset(out)


@dataclass(frozen=True)
class CPUInfo:
    numa: int
    socket: int
    core: int


@dataclass
class NumaInfo:
    """Volcano's ``api.NumatopoInfo`` (what the plugin reads of it)."""

    name: str
    policies: dict[str, str] = field(default_factory=dict)
    #: resource name -> allocatable ids (CPUs for ``cpu``)
    allocatable: dict[str, frozenset[int]] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    cpus: dict[int, CPUInfo] = field(default_factory=dict)
    #: reserved cpu in millicores (None: not given)
    reserved_cpu: float | None = None
    #: pods the exporter reports as assigned (uid, namespace, name)
    assigned: list[tuple[str, str, str]] = field(default_factory=list)

    def numa_nodes(self) -> list[int]:
        """``CPUDetails.NUMANodes().List()``: the NUMA ids of the CPUs, sorted."""
        return sorted({c.numa for c in self.cpus.values()})


def _int(value: Any, where: str, fld: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise ManifestError(where, fld, f"must be an integer, got {value!r}")
    if value < 0:
        raise ManifestError(where, fld, f"must not be negative, got {value!r}")
    return int(value)


def _map(value: Any, where: str, fld: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ManifestError(where, fld, f"must be a mapping, got {type(value).__name__}")
    return value


def parse_numatopology(obj: dict[str, Any]) -> NumaInfo:
    """The object as the plugin reads it; ``ManifestError`` naming the object and field when it is malformed."""
    md = obj.get("metadata") or {}
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError("Numatopology <unnamed>", "metadata.name", "is required")
    where = f"Numatopology {name}"
    spec = _map(obj.get("spec"), where, "spec")
    info = NumaInfo(name)
    for k, v in _map(spec.get("policies"), where, "spec.policies").items():
        if not isinstance(v, str):
            raise ManifestError(where, f"spec.policies.{k}", f"must be a string, got {v!r}")
        info.policies[str(k)] = v
    for res, ri in _map(spec.get("numares"), where, "spec.numares").items():
        ri = _map(ri, where, f"spec.numares.{res}")
        text = ri.get("allocatable", "")
        if not isinstance(text, str):
            raise ManifestError(where, f"spec.numares.{res}.allocatable", f"must be a string, got {text!r}")
        try:
            info.allocatable[str(res)] = parse_cpuset(text)
        except ValueError as exc:
            raise ManifestError(where, f"spec.numares.{res}.allocatable", str(exc)) from None
        info.capacity[str(res)] = _int(ri.get("capacity", 0), where, f"spec.numares.{res}.capacity")
    for cid, d in _map(spec.get("cpuDetail"), where, "spec.cpuDetail").items():
        fld = f"spec.cpuDetail.{cid}"
        try:
            cpu = int(str(cid))
        except ValueError:
            raise ManifestError(where, fld, f"the key {cid!r} is not a CPU id") from None
        if cpu < 0:
            raise ManifestError(where, fld, f"the CPU id {cid!r} must not be negative")
        d = _map(d, where, fld)
        info.cpus[cpu] = CPUInfo(*(_int(d.get(k, 0), where, f"{fld}.{k}") for k in ("numa", "socket", "core")))
    reserved = _map(spec.get("resReserved"), where, "spec.resReserved")
    if "cpu" in reserved:
        try:
            info.reserved_cpu = to_milli(reserved["cpu"])
        except (TypeError, ValueError) as exc:
            raise ManifestError(where, "spec.resReserved.cpu", str(exc)) from None
        if info.reserved_cpu < 0:
            raise ManifestError(where, "spec.resReserved.cpu", f"must not be negative, got {reserved['cpu']!r}")
    for i, pa in enumerate(spec.get("podAllocations") or []):
        pa = _map(pa, where, f"spec.podAllocations[{i}]")
        info.assigned.append((str(pa.get("uid") or ""), str(pa.get("namespace") or ""), str(pa.get("name") or "")))
    return info
