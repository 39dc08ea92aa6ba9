"""Simulated clusters: Node manifests from a YAML file or a compact spec.

Compact spec: ``COUNTx{resources}`` groups joined by ``+``, e.g.
``100x{cpu: 32, memory: 256Gi, nvidia.com/gpu: 8} + 20x{cpu: 64, memory: 512Gi, labels: {pool: cpu}}``.
``labels`` and ``taints`` inside the braces apply to the group; ``pods`` defaults to 110.
"""

from __future__ import annotations

import re
from typing import Any

from pyvolcano import safeyaml
from pyvolcano.errors import UserError

#: nodes a compact spec may describe (``100000000x{...}`` would build that many manifests)
MAX_NODES = 100_000
_GROUP = re.compile(r"^\s*(\d+)\s*x\s*(\{.*\})\s*$", re.S | re.ASCII)


def parse_cluster_spec(spec: str, prefix: str = "node") -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for gi, part in enumerate(_split(spec)):
        m = _GROUP.match(part)
        if not m:
            raise UserError(f"cluster spec group {gi + 1} {part.strip()!r}: expected COUNTx{{cpu: .., memory: ..}}")
        res = safeyaml.load(m.group(2), f"cluster spec group {gi + 1}")
        if not isinstance(res, dict):
            raise UserError(f"cluster spec group {gi + 1}: expected a mapping of resources")
        if int(m.group(1)) > MAX_NODES or len(nodes) + int(m.group(1)) > MAX_NODES:
            raise UserError(f"cluster spec group {gi + 1}: more than {MAX_NODES} nodes in all")
        labels = res.pop("labels", {}) or {}
        taints = res.pop("taints", []) or []
        if not isinstance(labels, dict):
            raise UserError(f"cluster spec group {gi + 1}: labels: expected a mapping, e.g. {{pool: gpu}}, "
                            f"got {labels!r}")
        if int(m.group(1)) < 1:
            raise UserError(f"cluster spec group {gi + 1} {part.strip()!r}: the count must be at least 1")
        res.setdefault("pods", 110)
        alloc = {k: str(v) for k, v in res.items()}
        for _ in range(int(m.group(1))):
            name = f"{prefix}-{len(nodes):04d}"
            nodes.append({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
                          "spec": {"taints": taints} if taints else {},
                          "status": {"allocatable": dict(alloc), "capacity": dict(alloc),
                                     "conditions": [{"type": "Ready", "status": "True"}]}})
    if not nodes:
        raise UserError("cluster spec describes no nodes")
    return nodes


def _split(spec: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "+" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts
