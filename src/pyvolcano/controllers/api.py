"""The narrow client interface the controllers use, so one controller runs on the simulator or a real API server.

Objects are plain Kubernetes-shaped dicts.  The simulator implements this in memory (``sim.cluster_api``); the
Kubernetes mode implements it with the official client.
"""

from __future__ import annotations

from typing import Any, Protocol


class ClusterAPI(Protocol):
    def create(self, obj: dict[str, Any]) -> None:
        """Create an object (kind, metadata.namespace/name set)."""

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        """Delete an object; a missing one is not an error.  True when it is gone at once; False when it goes
        away later (a pod terminating gracefully on a cluster), and the caller is told through
        ``JobController.on_pod_gone`` when it is."""

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The current object, or None."""

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Replace the object's status."""

    def patch_spec(self, kind: str, namespace: str, name: str, fields: dict[str, Any]) -> None:
        """Set these fields of the object's spec (a merge: fields not named stay)."""

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        """Record a Kubernetes Event about ``obj``."""
