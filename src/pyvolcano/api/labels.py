"""Kubernetes label selectors (``metav1.LabelSelector``), shared by the pdb plugin and HyperNode members."""

from __future__ import annotations

from typing import Any


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).  A nil or empty
    selector matches nothing here, as kube-scheduler's and Volcano's PDB checks treat it."""
    selector = selector or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), [str(v) for v in e.get("values") or []]
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
