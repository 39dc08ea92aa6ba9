"""Reading Kubernetes manifests from YAML: multi-document files, ``kind: List`` (what kubectl prints) or stdin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyvolcano import safeyaml
from pyvolcano.errors import UserError


def parse_objects(text: str, source: str) -> list[dict[str, Any]]:
    docs = safeyaml.load_all(text, source)
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise UserError(f"{source}: document {i + 1} is a {type(doc).__name__}, expected a Kubernetes object")
        kind = doc.get("kind")
        if isinstance(kind, str) and (kind == "List" or (kind.endswith("List") and "items" in doc)):
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
    text, source = safeyaml.read_text(path)
    return parse_objects(text, source)


@dataclass
class SnapshotFile:
    """What a snapshot file holds: its objects, and the ``config:`` of a scenario file (the format of
    shared/scenarios/README.md: ``objects:``, ``config:``, ``expect:``) when it is one."""

    objects: list[dict[str, Any]]
    source: str
    config: str | None = None
    scenario: bool = False

    def require_cluster(self) -> None:
        """Refuse (UserError, exit 2) a file that holds no object a session reads and is no scenario file: every
        command that reads a snapshot (``cycle``, ``queues``) applies this one rule."""
        from pyvolcano.cache.cache import KINDS

        if not self.scenario and not any(isinstance(o.get("kind"), str) and o["kind"] in KINDS for o in self.objects):
            raise UserError(f"{self.source}: not a cluster snapshot: no Node, Pod, PodGroup or Queue objects "
                            "(expected YAML manifests, a kind: List, or a scenario file with objects:)")


def load_snapshot(path: str) -> SnapshotFile:
    """The objects of ``path`` (``-`` for stdin) and, for a scenario file, its embedded scheduler conf."""
    text, source = safeyaml.read_text(path)
    objects = parse_objects(text, source)
    docs = safeyaml.load_all(text, source) if "config:" in text and "objects:" in text else []
    scen = next((d for d in docs if isinstance(d, dict) and "objects" in d and "kind" not in d), None)
    if scen is None:
        return SnapshotFile(objects, source)
    conf = scen.get("config")
    if conf is not None and not isinstance(conf, str):
        if not isinstance(conf, dict):
            raise UserError(f"{source}: field config: must be the scheduler conf (a string or a mapping), "
                            f"got {type(conf).__name__}")
        import yaml

        conf = yaml.safe_dump(conf)
    return SnapshotFile(objects, source, conf, scenario=True)
