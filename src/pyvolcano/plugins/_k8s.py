"""Kubernetes matching rules (node selectors, node affinity, taints) evaluated for many nodes at once.

Label columns are built once per session (``LabelIndex``), so a nodeSelector over 5,000 nodes is a few
NumPy comparisons instead of 5,000 dict lookups.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.k8s_requests import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, nonzero_requests, nonzero_requests_or
from pyvolcano.api.models import go_int
from pyvolcano.api.node_info import NodeArrays
from pyvolcano.framework.state import StateKey

__all__ = ["DEFAULT_MEMORY", "DEFAULT_MILLI_CPU", "nonzero_requests", "nonzero_requests_or"]



class LabelIndex:
    """Per-label-key columns of node label values (``None`` where a node lacks the key)."""

    def __init__(self, nodes: NodeArrays) -> None:
        self.nodes = nodes
        # both depend on the node specs only: kept on the snapshot's static part (``NodeStatic.derived``), shared
        # by every session until a Node changes, instead of a walk over every node per session
        derived = nodes.static.derived
        self._cols: dict[str, np.ndarray] = derived.setdefault("label-columns", {})
        tainted = derived.get("tainted")
        if tainted is None:
            tainted = derived["tainted"] = np.array([i for i, s in enumerate(nodes.specs) if s.taints],
                                                    dtype=np.int64)
            tainted.flags.writeable = False
        self.tainted: np.ndarray = tainted

    def col(self, key: str) -> np.ndarray:
        c = self._cols.get(key)
        if c is None:
            c = np.array([s.labels.get(key) for s in self.nodes.specs] + [None], dtype=object)[:-1]
            c.flags.writeable = False  # shared by later sessions on the same nodes
            self._cols[key] = c
        return c


#: the session's label index, shared by the node filters and scores that read labels
LABELS: StateKey[LabelIndex] = StateKey("labels")


def _expr_mask(li: LabelIndex, expr: dict[str, Any], idx: np.ndarray, field: bool = False) -> np.ndarray:
    key, op = expr.get("key", ""), expr.get("operator", "In")
    values = [str(v) for v in expr.get("values") or []]
    if field:  # matchFields: only metadata.name is supported by Kubernetes
        col = np.array(li.nodes.names, dtype=object)[idx] if key == "metadata.name" else np.full(len(idx), None)
    else:
        col = li.col(key)[idx]
    present = col != None  # noqa: E711 -- element-wise on an object array
    if op == "In":
        return present & np.isin(col.astype(str), values)
    if op == "NotIn":
        return ~(present & np.isin(col.astype(str), values))
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return ~present
    if op in ("Gt", "Lt"):
        # component-helpers' NodeSelectorRequirementsAsSelector and labels' Requirement.Matches read both sides
        # with strconv.ParseInt: ASCII digits only (Python's int() also takes "٣" and " 5")
        bound = go_int(values[0]) if values else None
        out = np.zeros(len(idx), dtype=bool)
        if bound is None:
            return out
        for j, v in enumerate(col):
            n = go_int(v)
            if n is not None:
                out[j] = n > bound if op == "Gt" else n < bound
        return out
    return np.zeros(len(idx), dtype=bool)


def term_mask(li: LabelIndex, term: dict[str, Any], idx: np.ndarray) -> np.ndarray:
    """A NodeSelectorTerm: all its expressions and fields must match (an empty term matches nothing)."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return np.zeros(len(idx), dtype=bool)
    m = np.ones(len(idx), dtype=bool)
    for e in exprs:
        m &= _expr_mask(li, e, idx)
    for e in fields:
        m &= _expr_mask(li, e, idx, field=True)
    return m


def selector_mask(li: LabelIndex, pod: dict[str, Any], idx: np.ndarray) -> np.ndarray:
    """nodeSelector and required node affinity (terms ORed), as the NodeAffinity filter does."""
    spec = pod.get("spec") or {}
    m = np.ones(len(idx), dtype=bool)
    for k, v in (spec.get("nodeSelector") or {}).items():
        m &= li.col(k)[idx] == str(v)
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = req.get("nodeSelectorTerms") or []
    if terms:
        any_term = np.zeros(len(idx), dtype=bool)
        for t in terms:
            any_term |= term_mask(li, t, idx)
        m &= any_term
    return m


def preferred_score(li: LabelIndex, pod: dict[str, Any], idx: np.ndarray) -> np.ndarray:
    """Sum of the weights of matching preferred node-affinity terms (Kubernetes' raw NodeAffinity score)."""
    spec = pod.get("spec") or {}
    prefs = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("preferredDuringSchedulingIgnoredDuringExecution") or [])
    s = np.zeros(len(idx))
    for p in prefs:
        w = float(p.get("weight") or 0)
        if w:
            s += w * term_mask(li, p.get("preference") or {}, idx)
    return s


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Kubernetes' Toleration.ToleratesTaint."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        key = t.get("key") or ""
        if key and key != taint.get("key"):
            continue
        if not key and op != "Exists":
            continue
        if op == "Exists" or str(t.get("value") or "") == str(taint.get("value") or ""):
            return True
    return False


def untolerated(pod: dict[str, Any], taints: list[dict[str, Any]], effects: tuple[str, ...]) -> list[dict[str, Any]]:
    tols = (pod.get("spec") or {}).get("tolerations") or []
    return [t for t in taints if t.get("effect") in effects and not tolerates(tols, t)]


def taint_reason(taint: dict[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"


