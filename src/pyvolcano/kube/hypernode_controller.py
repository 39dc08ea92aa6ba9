"""The HyperNode controller on a cluster (Volcano's ``pkg/controllers/hypernode/``): informers on Nodes, HyperNodes
and the one discovery ConfigMap feed ``controllers.hypernode.HyperNodeController`` (the rules: label discovery and
``status.nodeCount``), and one worker thread writes its plans through ``KubeHyperNodes``.

The ConfigMap is Volcano's: ``<release>-controller-configmap`` (``$HELM_RELEASE_NAME``, default ``volcano``) in the
controller's namespace (``$KUBE_POD_NAMESPACE``, default ``volcano-system``), key ``volcano-controller.conf``
(``configmap_handler.go: setConfigMapNamespaceAndName``).  A deleted ConfigMap turns discovery off (the HyperNodes it
made stay, as in Volcano); a ConfigMap whose conf is invalid is reported once, naming the field, and the previous
conf stays in force (Volcano would keep retrying it; a typo never deletes the discovered HyperNodes).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from pyvolcano.controllers.hypernode import (
    CONF_KEY,
    DEFAULT_NAMESPACE,
    DiscoveryConf,
    HyperNodeController,
    parse_discovery_conf,
)
from pyvolcano.errors import UserError
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import CONFIGMAP, HYPERNODE, NODE

log = logging.getLogger(__name__)


def default_configmap() -> tuple[str, str]:
    """(namespace, name) of the discovery ConfigMap, from the environment as Volcano's controller reads it."""
    ns = os.environ.get("KUBE_POD_NAMESPACE") or DEFAULT_NAMESPACE
    release = os.environ.get("HELM_RELEASE_NAME") or "volcano"
    return ns, f"{release}-controller-configmap"


class KubeHyperNodes:
    """``controllers.hypernode.HyperNodeClient`` on the API server (Volcano's ``utils.go``: Create/Update/Delete
    HyperNode, and ``UpdateStatus`` for nodeCount, here a merge patch of the status subresource)."""

    def __init__(self, api: Any) -> None:
        self.api = api

    def create_hypernode(self, obj: dict[str, Any]) -> None:
        try:
            self.api.create(HYPERNODE, obj)
        except ApiError as exc:
            if not exc.conflict:  # already there (a restarted controller): the next round updates it
                raise

    def update_hypernode(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        for _ in range(5):  # retry.RetryOnConflict
            cur = self.api.get(HYPERNODE, name)
            cur["spec"] = obj["spec"]
            md = cur.setdefault("metadata", {})
            md["labels"] = {**(md.get("labels") or {}), **(obj["metadata"].get("labels") or {})}
            try:
                self.api.replace(HYPERNODE, cur)
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise
        raise ApiError(409, "Conflict", f"HyperNode {name}: repeated conflicts")

    def delete_hypernode(self, name: str) -> None:
        try:
            self.api.delete(HYPERNODE, name)
        except ApiError as exc:
            if not exc.not_found:
                raise

    def set_node_count(self, name: str, count: int) -> None:
        try:
            self.api.patch(HYPERNODE, name, {"status": {"nodeCount": count}}, subresource="status")
        except ApiError as exc:
            if not exc.not_found:
                raise


class HyperNodeControllerRunner:
    """Informers, the lock, and the worker thread around ``HyperNodeController``."""

    def __init__(self, api: Any, configmap: tuple[str, str] | None = None, *, settle: float = 0.05,
                 retry: float = 2.0, ctrl: HyperNodeController | None = None) -> None:
        self.api = api
        self.namespace, self.configmap = configmap or default_configmap()
        self.settle = settle
        self.retry = retry
        self.ctrl = ctrl or HyperNodeController()
        self.client = KubeHyperNodes(api)
        self.cond = threading.Condition(threading.Lock())
        self.errors = 0
        self._bad_conf: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reflectors = [
            Reflector(api, CONFIGMAP, self.on_configmap, namespace=self.namespace,
                      field_selector=f"metadata.name={self.configmap}"),
            Reflector(api, NODE, self.on_node),
            Reflector(api, HYPERNODE, self.on_hypernode, optional=True),
        ]

    # --- events ----------------------------------------------------------------------------------------
    def on_configmap(self, typ: str, obj: dict[str, Any]) -> None:
        if (obj.get("metadata") or {}).get("name") != self.configmap:
            return
        where = f"ConfigMap {self.namespace}/{self.configmap}"
        if typ == "DELETED":
            conf = DiscoveryConf()
        else:
            data = obj.get("data") or {}
            if CONF_KEY not in data:
                self._report(f"{where}: no key {CONF_KEY}; the HyperNode discovery conf is unchanged")
                return
            try:
                conf = parse_discovery_conf(data[CONF_KEY], where)
            except UserError as exc:
                self._report(f"{exc}; the HyperNode discovery conf is unchanged")
                return
        self._bad_conf = None
        with self.cond:
            self.ctrl.set_conf(conf)
            self.cond.notify_all()
        log.info("HyperNode discovery: %s", "label source with types " + ", ".join(sorted(conf.label_types))
                 if conf.label_types is not None else "off (no enabled label source)")

    def _report(self, msg: str) -> None:
        if msg != self._bad_conf:
            self._bad_conf = msg
            log.error("%s", msg)

    def on_node(self, typ: str, obj: dict[str, Any]) -> None:
        with self.cond:
            self.ctrl.on_node(typ, obj)
            self.cond.notify_all()

    def on_hypernode(self, typ: str, obj: dict[str, Any]) -> None:
        with self.cond:
            self.ctrl.on_hypernode(typ, obj)
            self.cond.notify_all()

    # --- the worker ------------------------------------------------------------------------------------
    def _due(self) -> bool:
        return self.ctrl.discover_pending or bool(self.ctrl.count_pending)

    def run_once(self) -> list[str]:
        """Plan under the lock, write outside it; returns the failed writes (retried later)."""
        with self.cond:
            plan = self.ctrl.plan()
        if not plan:
            return []
        failed = self.ctrl.apply(plan, self.client, self.cond)
        for f in failed:
            log.warning("HyperNode controller: %s", f)
        self.errors += len(failed)
        return failed

    def _loop(self) -> None:
        delay = self.retry
        while not self._stop.is_set():
            with self.cond:
                while not self._due() and not self._stop.is_set():
                    self.cond.wait(1.0)
            if self._stop.is_set():
                return
            time.sleep(self.settle)  # let a burst of node events settle into one round
            try:
                failed = self.run_once()
            except Exception:
                log.exception("HyperNode controller round failed")
                failed = ["round"]
            if failed:  # retried with exponential backoff (a missing CRD, an unreachable server)
                self._stop.wait(delay)
                delay = min(delay * 2, 60.0)
            else:
                delay = self.retry

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> bool:
        for r in self.reflectors:
            r.start()
        if not all(r.synced.wait(timeout) for r in self.reflectors):
            return False
        self._thread = threading.Thread(target=self._loop, name="hypernode-controller", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        for r in self.reflectors:
            r.stop()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def alive(self) -> bool:
        return all(r.alive for r in self.reflectors) and (self._thread is None or self._thread.is_alive())
