"""The podgroup controller on a cluster: watch pending pods and give each Volcano pod without a PodGroup one
(``controllers.podgroup`` has the rule), then annotate the pod with the group's name."""

from __future__ import annotations

import logging
from typing import Any

from pyvolcano.api.types import GROUP_NAME_ANNOTATION
from pyvolcano.controllers.podgroup import needs_podgroup, podgroup_for_pod
from pyvolcano.errors import UserError
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import POD, PODGROUP

log = logging.getLogger(__name__)


class PodGroupController:
    def __init__(self, api: Any, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self.api = api
        self.scheduler_names = scheduler_names
        self.created: set[str] = set()
        self.reflectors = [Reflector(api, POD, self.on_pod, field_selector="spec.nodeName=")]

    def start(self, timeout: float | None = None) -> bool:
        for r in self.reflectors:
            r.start()
        return all(r.synced.wait(timeout) for r in self.reflectors)

    def stop(self) -> None:
        for r in self.reflectors:
            r.stop()

    @property
    def alive(self) -> bool:
        return all(r.alive for r in self.reflectors)

    def on_pod(self, typ: str, pod: dict[str, Any]) -> None:
        if typ == "DELETED" or not needs_podgroup(pod, self.scheduler_names):
            return
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        try:
            pg = podgroup_for_pod(pod)
        except UserError as exc:
            log.warning("pod %s/%s: no PodGroup made: %s", ns, md.get("name"), exc)
            return
        name = pg["metadata"]["name"]
        try:
            if f"{ns}/{name}" not in self.created:
                try:
                    self.api.create(PODGROUP, pg, ns)
                except ApiError as exc:
                    if exc.status != 409:  # another pod of the same owner made it already
                        raise
                self.created.add(f"{ns}/{name}")
            self.api.patch(POD, md["name"], {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: name}}}, ns)
        except ApiError as exc:
            log.warning("pod %s/%s: PodGroup %s: %s", ns, md.get("name"), name, exc)
