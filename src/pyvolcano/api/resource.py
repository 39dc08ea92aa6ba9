"""Resources as dense NumPy vectors over a fixed list of resource names.

Volcano's ``Resource`` is a struct of MilliCPU, Memory and a map of scalar resources.  Here every amount is a
float64 vector whose positions are named by a ``ResourceIndex`` shared by the whole cache, so that node state
can live in (nodes x resources) arrays and a fit test over all nodes is one vectorised comparison.

Units follow Volcano: cpu in millicores, memory in bytes, scalar resources (``nvidia.com/gpu``...) in
thousandths (``MilliValue``), and ``pods`` in plain counts (every task requests one pod, so pod-count limits
are checked by the same comparison as cpu and memory).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from pyvolcano.api.quantity import format_quantity, to_milli, to_units

CPU, MEMORY, PODS = "cpu", "memory", "pods"
#: Volcano's ``minResource``: two amounts closer than this are equal.
EPS = 0.1
#: Resources that are never part of a pod's scheduling request.
_IGNORED = {"ephemeral-storage-limit"}


def amount(name: str, quantity: object) -> float:
    """Internal amount of one resource quantity (see the module docstring for units)."""
    if name in (MEMORY, PODS) or name.startswith("hugepages-") or name == "ephemeral-storage":
        return to_units(quantity)
    return to_milli(quantity)


@dataclass(frozen=True)
class ResourceIndex:
    """The names of vector positions; cpu, memory and pods always come first."""

    names: tuple[str, ...] = (CPU, MEMORY, PODS)
    pos: dict[str, int] = field(init=False, compare=False, repr=False)
    _fair_mask: np.ndarray = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pos", {n: i for i, n in enumerate(self.names)})
        mask = np.ones(len(self.names), dtype=bool)
        mask[2] = False
        mask.flags.writeable = False
        object.__setattr__(self, "_fair_mask", mask)

    @classmethod
    def of(cls, extra: Iterable[str] = ()) -> ResourceIndex:
        rest = sorted({n for n in extra if n not in (CPU, MEMORY, PODS) and n not in _IGNORED})
        return cls((CPU, MEMORY, PODS, *rest))

    @property
    def size(self) -> int:
        return len(self.names)

    def covers(self, names: Iterable[str]) -> bool:
        return all(n in self.pos or n in _IGNORED for n in names)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size)

    def infinite(self) -> np.ndarray:
        return np.full(self.size, np.inf)

    def vector(self, amounts: Mapping[str, float], default: float = 0.0) -> np.ndarray:
        """Vector from internal amounts; names missing from ``amounts`` get ``default``.

        Built as a list and made an array once: ``np.full`` and a NumPy item write per amount cost about twice
        as much, twice per pod the cache converts (docs/performance.md,
        "On a cluster: the drain"; the measurement is in the git history of that file)."""
        row = [default] * len(self.names)
        pos = self.pos
        for n, a in amounts.items():
            i = pos.get(n)
            if i is not None:
                row[i] = a
        return np.array(row, dtype=float)

    def from_list(self, rl: Mapping[str, object] | None, default: float = 0.0) -> np.ndarray:
        """Vector from a Kubernetes ResourceList (``{cpu: '2', memory: 4Gi}``)."""
        return self.vector({n: amount(n, q) for n, q in (rl or {}).items()}, default)

    def to_dict(self, v: np.ndarray, *, skip_zero: bool = True) -> dict[str, float]:
        return {n: float(v[i]) for i, n in enumerate(self.names) if not (skip_zero and v[i] == 0)}

    def format(self, v: np.ndarray, *, skip_zero: bool = True, skip_pods: bool = True) -> str:
        parts = []
        for i, n in enumerate(self.names):
            if (skip_zero and v[i] == 0) or (skip_pods and n == PODS):
                continue
            parts.append(f"{n}: {'inf' if np.isinf(v[i]) else format_quantity(n, float(v[i]))}")
        return "{" + ", ".join(parts) + "}"

    @property
    def fair_mask(self) -> np.ndarray:
        """Positions that count for shares and scores (everything but the pod count); read-only, one per index
        (every session's plugins and result ask for it)."""
        return self._fair_mask


def less_equal(left: np.ndarray, right: np.ndarray) -> bool:
    """Volcano's ``LessEqual(rr, Zero)``: every dimension of ``left`` within ``right`` (+EPS).

    A plain loop, like ``share``: a handful of entries, called for every task and victim considered."""
    return fits(left.tolist(), right.tolist())


def fits(left: list[float], right: list[float]) -> bool:
    """``less_equal`` on plain lists, for loops that keep their vectors as lists.

    Volcano's ``LessEqual`` (``api/resource_info.go``) always compares cpu and memory but other dimensions (the pod
    count, extended resources) only where ``left`` names them: a task asking no GPU fits a node whose idle GPU is
    negative (its running pods use more than it reports).  A zero here stands for "not named"."""
    if all(a < b + EPS for a, b in zip(left, right, strict=True)):
        return True
    return all(a < b + EPS or (k >= 2 and a == 0.0) for k, (a, b) in enumerate(zip(left, right, strict=True)))


def fit_floor(req: np.ndarray) -> np.ndarray:
    """What each dimension of a node must exceed for ``req`` to fit (``have > fit_floor(req)`` is ``fits``):
    ``req - EPS``, and ``-inf`` on the dimensions past cpu and memory that ``req`` does not name (zero)."""
    out = req - EPS
    tail = out[2:]
    tail[req[2:] == 0.0] = -np.inf
    return out


def less_equal_with_dimension(left: np.ndarray, right: np.ndarray, dims_of: np.ndarray) -> bool:
    """``LessEqualWithDimension``: compare only the dimensions that ``dims_of`` requests (non-zero)."""
    sel = dims_of > 0
    return bool(np.all(left[sel] < right[sel] + EPS))


def insufficient(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Indices of the dimensions where ``left`` does not fit ``right``."""
    return np.nonzero(~(left < right + EPS))[0]


def is_empty(v: np.ndarray) -> bool:
    """Volcano's ``IsEmpty``: every dimension but the pod count below EPS (a BestEffort request).

    A plain loop over the few entries (as ``share``): it runs once per pod the cache converts, where NumPy's
    per-call overhead was most of its cost (the first list of 5,000 pods, docs/performance.md, the race)."""
    row = v.tolist()
    return all(x < EPS for x in row[:2]) and all(x < EPS for x in row[3:])


def share(alloc: np.ndarray, total: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Volcano's dominant share: max over dimensions of alloc/total (0/0 is 0, x/0 is 1).

    A plain loop: the vectors have a handful of entries and this runs on every allocation event and victim
    check, where NumPy's per-call overhead dominates."""
    a = (alloc if mask is None else alloc[mask]).tolist()
    t = (total if mask is None else total[mask]).tolist()
    best = 0.0
    for x, y in zip(a, t, strict=True):
        r = x / y if y > 0 else (1.0 if x > 0 else 0.0)
        if r > best:
            best = r
    return best


def clip_sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` floored at zero per dimension (Volcano's ``Diff`` increased part, ``SubWithoutAssert``>=0)."""
    return np.maximum(a - b, 0.0)


def quantity(name: str, amount: float) -> str:
    """An exact Kubernetes quantity for an internal amount (cpu and scalars in milli, memory in bytes)."""
    if name in (MEMORY, PODS) or name.startswith("hugepages-") or name == "ephemeral-storage":
        return str(round(amount))
    milli = round(amount)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def resource_list(res: ResourceIndex, v: np.ndarray, *, skip_pods: bool = True) -> dict[str, str]:
    """A ResourceList for a resource vector; cpu and memory always present (Volcano's status shows both).
    Read as Python floats (``tolist``): every queue of every session gets one."""
    out: dict[str, str] = {}
    for n, x in zip(res.names, v.tolist(), strict=True):
        if (skip_pods and n == PODS) or (x == 0 and n not in (CPU, MEMORY)) or not math.isfinite(x):
            continue
        out[n] = quantity(n, x)
    return out
