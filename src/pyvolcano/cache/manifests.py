"""Reading Kubernetes manifests from YAML: multi-document files, ``kind: List`` (what kubectl prints) or stdin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from pyvolcano.errors import UserError, yaml_problem

try:  # the C loader is ~10x faster on large snapshots
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


def parse_objects(text: str, source: str) -> list[dict[str, Any]]:
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise UserError(yaml_problem(exc, source)) from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise UserError(f"{source}: document {i + 1} is a {type(doc).__name__}, expected a Kubernetes object")
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise UserError(f"{source}: document {i + 1}: items must be a list")
            out.extend(o for o in items if isinstance(o, dict))
            continue
        if "objects" in doc and "kind" not in doc and isinstance(doc["objects"], list):  # a scenario file
            out.extend(o for o in doc["objects"] if isinstance(o, dict))
            continue
        out.append(doc)
    return out


def load_objects(path: str) -> list[dict[str, Any]]:
    """Objects from ``path`` (``-`` for stdin)."""
    if path == "-":
        return parse_objects(sys.stdin.read(), "<stdin>")
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a text file (byte {exc.start} is not UTF-8)") from None
    return parse_objects(text, path)
