"""Volcano's ``Resource`` comparisons that the queue plugins (proportion, capacity) use, on pyvolcano's dense
resource vectors (cpu, memory, pods, then scalars; see ``api/resource.py``).

Each comparison in Volcano's ``pkg/scheduler/api/resource_info.go`` has its own treatment of three things
that a dense vector does not show by itself, so each is spelled out here:

* the ``pods`` scalar: every task requests one pod.  ``LessEqual``, ``ResourceNames`` and ``Intersection``
  count it like any other scalar; the ``...WithDimension...`` helpers, ``IsEmpty`` and
  ``IntersectionWithIgnoredScalarResources`` skip it (``IsIgnoredScalarResource``);
* tolerance: ``LessEqual``-style helpers accept a difference below ``minResource`` (0.1), while
  ``LessEqualWithDimensionAndResourcesName`` and ``GreaterPartlyWithDimension`` compare strictly;
* presence: a scalar that a ``ResourceList`` names with amount 0 is still *present* in Volcano's map, which
  ``GreaterPartlyWithRelevantDimensions`` tells apart from an absent one (``present`` below).

All functions take 1-D float vectors of one ``ResourceIndex``; they are called per task or per victim on a
handful of entries, so plain loops over ``tolist()`` are used where NumPy's call overhead would dominate.
"""

from __future__ import annotations

import numpy as np

from pyvolcano.api.resource import EPS

#: Position of the ``pods`` count in every resource vector (``ResourceIndex`` puts cpu, memory, pods first).
PODS = 2


def le_with_dimension(left: np.ndarray, right: np.ndarray, req: np.ndarray) -> list[int]:
    """Volcano's ``LessEqualWithDimensionAndResourcesName(left, right, req)``: the positions where ``left``
    exceeds ``right`` (strictly, no tolerance), among the dimensions ``req`` asks for (> 0), pods skipped.
    An empty list means "fits"."""
    out = []
    for i, (a, b, r) in enumerate(zip(left.tolist(), right.tolist(), req.tolist(), strict=True)):
        if i != PODS and r > 0 and a > b:
            out.append(i)
    return out


def le_partly_zero_filtered(left: np.ndarray, right: np.ndarray, req: np.ndarray) -> bool:
    """Volcano's ``LessEqualPartlyWithDimensionZeroFiltered(left, right, req)``: among the dimensions ``req``
    asks for (pods skipped), leaving out those below ``minResource`` on both sides, is there one where
    ``left <= right`` (within ``minResource``)?"""
    for i, (a, b, r) in enumerate(zip(left.tolist(), right.tolist(), req.tolist(), strict=True)):
        if i == PODS or r <= 0 or (a < EPS and b < EPS):
            continue
        if a < b or abs(a - b) < EPS:
            return True
    return False


def gt_partly_relevant(left: np.ndarray, right: np.ndarray, req: np.ndarray, present: np.ndarray) -> bool:
    """Volcano's ``GreaterPartlyWithRelevantDimensions(left, right, req)``: is ``left`` strictly above
    ``right`` on a dimension that ``req`` asks for and that ``right`` defines?  cpu and memory count as
    defined from ``minResource`` on; a scalar counts when ``right``'s map names it (``present``), even at 0.
    Pods are skipped."""
    pres = present.tolist()
    for i, (a, b, r) in enumerate(zip(left.tolist(), right.tolist(), req.tolist(), strict=True)):
        if i == PODS or r <= 0:
            continue
        defined = b >= EPS if i < PODS else pres[i]
        if defined and a > b:
            return True
    return False


def intersects(a: np.ndarray, b: np.ndarray, *, ignore_pods: bool) -> bool:
    """Volcano's ``Intersection`` (``ignore_pods=False``) or ``IntersectionWithIgnoredScalarResources``
    (``ignore_pods=True``) is non-empty: some dimension is at least ``minResource`` in both."""
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        if ignore_pods and i == PODS:
            continue
        if x >= EPS and y >= EPS:
            return True
    return False


def deserved_share(allocated: np.ndarray, deserved: np.ndarray) -> float:
    """Volcano's ``updateQueueAttrShare`` core: max of allocated/deserved over ``deserved.ResourceNames()``
    (every dimension of at least ``minResource``, the pod count included); 0 when it names none."""
    best = 0.0
    for x, y in zip(allocated.tolist(), deserved.tolist(), strict=True):
        if y >= EPS:
            r = x / y
            if r > best:
                best = r
    return best
