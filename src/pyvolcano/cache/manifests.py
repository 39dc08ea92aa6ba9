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


#: kinds that run pods through a controller: the scheduler reads their pods, never them
_CONTROLLERS = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "ReplicationController", "CronJob"})
#: kinds read by other parts of a cluster that have no bearing on one scheduling session
_INERT = frozenset({"Service", "Endpoints", "EndpointSlice", "ConfigMap", "Secret", "ServiceAccount", "Event",
                    "Ingress", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy",
                    "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "LimitRange",
                    "HorizontalPodAutoscaler", "Lease", "CustomResourceDefinition", "Command"})


def unused_kinds(objects: list[dict[str, Any]], read: tuple[str, ...], source: str) -> str | None:
    """One line naming the kinds in ``objects`` that the scheduler does not read (``read``: the kinds its cache
    takes, ``cache/cache.py: KINDS``), with what to do instead, or None when every object is read.  The cache
    passes such objects over without a word (Volcano's informers never list them); a user who put a Deployment
    or a Volcano Job in a snapshot expects it to count, so ``cycle`` and ``explain`` say it once."""
    import difflib
    from collections import Counter

    seen: Counter[str] = Counter()
    for o in objects:
        kind = o.get("kind")
        if isinstance(kind, str) and kind not in read:
            api = str(o.get("apiVersion") or "")
            seen["vcjob" if kind == "Job" and api.startswith("batch.volcano.sh") else kind] += 1
    if not seen:
        return None
    parts = []
    for kind, n in sorted(seen.items()):
        name = "Job (batch.volcano.sh)" if kind == "vcjob" else kind
        if kind == "vcjob":
            hint = ("a Volcano Job is run by its controller: give its pods and PodGroup (kubectl get pods,podgroups), "
                    "or simulate it with pyvolcano simulate --workload")
        elif kind in _CONTROLLERS or kind == "Job":
            hint = "the scheduler reads pods, not their controller: give the pods (kubectl get pods -A -o yaml)"
        elif kind in _INERT:
            hint = "not used in scheduling"
        else:
            close = difflib.get_close_matches(kind, read, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else "not a kind the scheduler reads (" + ", ".join(read) + ")"
        parts.append(f"{n} {name} ({hint})")
    return f"{source}: not read by the scheduler: " + "; ".join(parts)
