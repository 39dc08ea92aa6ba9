"""Numatopology (``nodeinfo.volcano.sh/v1alpha1``): one node's NUMA layout, as Volcano's resource exporter reports it.

The object is cluster-scoped and named after its node.  ``spec.policies`` holds the kubelet's
``CPUManagerPolicy`` and ``TopologyManagerPolicy``; ``spec.numares`` each NUMA-managed resource's ``allocatable``
set (a cpuset string such as ``0-3,8``) and ``capacity``; ``spec.cpuDetail`` each CPU id's ``numa``, ``socket``
and ``core``; ``spec.resReserved`` the kubelet's reserved amounts (``cpu: "1"``).  This is Volcano's
``cache/event_handlers.go: getNumaInfo``, with the checks Volcano leaves to the CRD schema (ids and capacities
not negative) and to logging (a cpuset that does not parse) made errors naming the object and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BeforeValidator

from pyvolcano.api.models import _M, Metadata, Quantity, Text, _integer, validate_model
from pyvolcano.api.quantity import to_milli

CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
#: ASCII digits only (``\d`` would take "٣" as 3, which Go's ``strconv.Atoi`` in ``cpuset.Parse`` refuses)
_RANGE = re.compile(r"^\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?$")
#: CPU ids above this are a mistake, not a machine (Linux's NR_CPUS is at most 8192); ``0-999999999`` would
#: otherwise build a set of a billion ids
MAX_CPU_ID = 65_535


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
        if hi > MAX_CPU_ID:
            raise ValueError(f"{text[:80]!r}: CPU id {hi} is above {MAX_CPU_ID}")
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


#: a count or an id of the object: an integer >= 0 (the CRD's schema; Volcano reads them as Go ints)
_NonNegative = Annotated[int, _integer(0, 2**31 - 1)]


def _cpuset(v: Any) -> frozenset[int]:
    if not isinstance(v, str):
        raise ValueError(f"must be a string, got {v!r}")
    return parse_cpuset(v)


class _NumaResource(_M):
    """One of ``spec.numares`` (``ResourceInfo``): the allocatable ids as a cpuset string, and the capacity."""

    allocatable: Annotated[frozenset[int], BeforeValidator(_cpuset)] = frozenset()
    capacity: _NonNegative = 0


class _CPUDetail(_M):
    numa: _NonNegative = 0
    socket: _NonNegative = 0
    core: _NonNegative = 0


class _PodAllocation(_M):
    uid: Text | None = None
    namespace: Text | None = None
    name: Text | None = None


class _NumatopoSpec(_M):
    policies: dict[str, Text] | None = None
    numares: dict[str, _NumaResource] | None = None
    #: CPU id (a key of ASCII digits, at most ``MAX_CPU_ID``) -> where the CPU is
    cpuDetail: dict[Annotated[int, _integer(0, MAX_CPU_ID)], _CPUDetail] | None = None
    resReserved: dict[str, Quantity] | None = None
    podAllocations: list[_PodAllocation] | None = None


class _Numatopology(_M):
    """The typed ``Numatopology`` (``nodeinfo.volcano.sh/v1alpha1``, Volcano's ``apis nodeinfo/v1alpha1``)."""

    metadata: Metadata
    spec: _NumatopoSpec | None = None


def parse_numatopology(obj: dict[str, Any]) -> NumaInfo:
    """The object as the plugin reads it, through the typed model; ``ManifestError`` naming the object and field
    when it is malformed."""
    md = obj.get("metadata")
    name = md.get("name") if isinstance(md, dict) else None
    where = f"Numatopology {name}" if isinstance(name, str) and name else "Numatopology <unnamed>"
    m: _Numatopology = validate_model(_Numatopology, obj, where)
    spec = m.spec or _NumatopoSpec()
    info = NumaInfo(m.metadata.name)
    info.policies = dict(spec.policies or {})
    for res, ri in (spec.numares or {}).items():
        info.allocatable[res] = ri.allocatable
        info.capacity[res] = ri.capacity
    for cpu, d in (spec.cpuDetail or {}).items():
        info.cpus[cpu] = CPUInfo(d.numa, d.socket, d.core)
    if spec.resReserved and "cpu" in spec.resReserved:
        info.reserved_cpu = to_milli(spec.resReserved["cpu"])
    info.assigned = [(pa.uid or "", pa.namespace or "", pa.name or "") for pa in spec.podAllocations or []]
    return info
