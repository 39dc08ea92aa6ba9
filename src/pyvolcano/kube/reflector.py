"""List+watch one resource into a handler, forever: the informer of the Kubernetes mode.

A reflector lists (the first time from the API server's watch cache, later paged from etcd), hands the
handler every object that changed since it last looked (and a ``DELETED`` for every object that vanished
meanwhile), then watches from the list's resourceVersion.
A watch the server ends (timeout) is simply restarted from the last seen version; ``410 Gone`` (the
version was compacted away) re-lists at once; a connection error (server gone, watch cut) waits with
exponential backoff and re-lists, so nothing that happened while disconnected is lost.

An ``optional`` reflector (a CRD that may not be installed, such as HyperNodes) treats ``404`` on its list as an
empty list: it counts as synced, so the scheduler starts, and it lists again every ``backoff[1]`` seconds until the
resource appears.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.resources import Resource

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], None]


class ListWatcher(Protocol):
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "", page_size: int = 500,
             resource_version: str = "") -> tuple[list[dict[str, Any]], str]: ...

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None, *,
              label_selector: str = "", field_selector: str = "", timeout_seconds: int = 300) -> Any: ...


def obj_key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else str(md.get("name"))


def _rv(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Reflector:
    """Keeps ``store`` (key -> object) equal to the server's view and tells ``handler(type, obj)`` of
    every change; ``type`` is ``ADDED``, ``MODIFIED`` or ``DELETED``."""

    def __init__(self, api: ListWatcher, res: Resource, handler: Handler, *, namespace: str | None = None,
                 label_selector: str = "", field_selector: str = "", watch_timeout: int = 300,
                 backoff: tuple[float, float] = (0.5, 30.0), optional: bool = False,
                 after: Sequence[threading.Event] = ()) -> None:
        self.api = api
        #: the first list is handed to the handler only once these are set (other informers' ``synced``): the
        #: request goes out at once, so the API server prepares this list while the handler still takes the
        #: objects that must come first (the scheduler's queues and nodes before its pods), but the handler
        #: still sees them in that order
        self.after = tuple(after)
        self.optional = optional
        #: an optional resource the server does not serve (its CRD is not installed)
        self.missing = False
        self.res = res
        self.handler = handler
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.store: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.lists = 0
        self.watches = 0
        self.errors = 0
        self._stop = threading.Event()
        self._watch: Any = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Reflector:
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.res}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        w = self._watch
        if w is not None:
            w.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        delay = self.backoff[0]
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self.relist()
                    if self._stop.is_set():  # stopped while its first list waited for another informer's
                        return
                    if self.missing:
                        self._stop.wait(self.backoff[1])
                        continue
                    need_list = False
                    delay = self.backoff[0]
                self.watch_once()
            except ApiError as exc:
                self.errors += 1
                need_list = True
                if exc.gone:
                    log.info("%s: watch expired (%s); re-listing", self.res, exc.message)
                    continue
                log.warning("%s: %s; re-listing in %.1fs", self.res, exc, delay)
                self._stop.wait(delay * (0.8 + 0.4 * random.random()))
                delay = min(delay * 2, self.backoff[1])
            except Exception:  # a handler bug must not kill the informer: log, re-list, go on
                self.errors += 1
                need_list = True
                log.exception("%s: unexpected error; re-listing in %.1fs", self.res, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])

    # --- one list, one watch -----------------------------------------------------------------------
    def relist(self) -> None:
        # the first list takes what the API server's watch cache holds (resourceVersion "0", as client-go's
        # reflector does: one response, no etcd read); a re-list after a 410 or an outage reads etcd (a
        # consistent list), so that nothing that happened meanwhile is missed
        try:
            items, rv = self.api.list(self.res, self.namespace, label_selector=self.label_selector,
                                      field_selector=self.field_selector,
                                      resource_version="0" if self.lists == 0 else "")
        except ApiError as exc:
            if not (self.optional and exc.not_found):
                raise
            if not self.missing:
                log.info("%s: not served by the API server (CRD not installed?); treated as empty, listed again "
                         "every %.0fs", self.res, self.backoff[1])
            self.missing = True
            items, rv = [], ""
        else:
            self.missing = False
        if self.lists == 0:
            for ev in self.after:
                while not ev.wait(0.5):
                    if self._stop.is_set():
                        return
        self.lists += 1
        fresh = {obj_key(o): o for o in items}
        for key, old in list(self.store.items()):
            if key not in fresh:
                del self.store[key]
                self.handler("DELETED", old)
        for key, obj in fresh.items():
            prev = self.store.get(key)
            if prev is None or _rv(prev) != _rv(obj):
                self.store[key] = obj
                self.handler("ADDED" if prev is None else "MODIFIED", obj)
        self.resource_version = rv
        self.synced.set()

    def watch_once(self) -> None:
        w = self.api.watch(self.res, self.resource_version, self.namespace, label_selector=self.label_selector,
                           field_selector=self.field_selector, timeout_seconds=self.watch_timeout)
        self._watch = w
        self.watches += 1
        try:
            if self._stop.is_set():
                return
            for typ, obj in w:
                if self._stop.is_set():
                    return
                rv = _rv(obj)
                if typ == "BOOKMARK":
                    self.resource_version = rv or self.resource_version
                    continue
                self.res.typed(obj)
                key = obj_key(obj)
                if typ == "DELETED":
                    old = self.store.pop(key, None)
                    self.handler("DELETED", obj if old is None else {**old, **obj})
                elif typ in ("ADDED", "MODIFIED"):
                    self.store[key] = obj
                    self.handler(typ, obj)
                if rv:
                    self.resource_version = rv
        finally:
            self._watch = None
            w.close()
