"""An in-memory API server with the same methods as ``KubeClient``, for testing the adapters without a server.

It keeps objects per resource with increasing resourceVersions and an event history, so list+watch,
410 Gone after compaction, dropped watches, the server going away (``down``), optimistic concurrency on
replace, pods/binding preconditions and graceful pod deletion behave like a real kube-apiserver in the ways
the scheduler depends on.  ``fail()`` injects an error into the next matching calls.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyvolcano.kube.client import ApiError, Unavailable
from pyvolcano.kube.resources import HYPERNODE, NODE, POD, QUEUE, VCJOB, Resource

STATUS_SUBRESOURCE = {POD, NODE, QUEUE, VCJOB, HYPERNODE}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    """RFC 7386 merge patch; ``strategic`` also merges lists of dicts by their ``type`` key (conditions)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif (strategic and isinstance(v, list) and isinstance(out.get(k), list)
              and all(isinstance(x, dict) and "type" in x for x in v + out[k])):
            merged = {x["type"]: dict(x) for x in out[k]}
            for x in v:
                merged[x["type"]] = {**merged.get(x["type"], {}), **x}
            out[k] = list(merged.values())
        else:
            out[k] = merge_patch(out.get(k), v, strategic)
    return out


def _selector_ok(obj: dict[str, Any], label_selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in label_selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


@dataclass
class Fault:
    op: str
    error: ApiError
    times: int
    when: Callable[[Resource | None, str | None, str | None], bool] | None


class FakeWatch:
    def __init__(self, api: FakeApi, res: Resource, rv: int, namespace: str | None, selector: str,
                 timeout: float) -> None:
        self.api = api
        self.res = res
        self.rv = rv
        self.namespace = namespace
        self.selector = selector
        self.deadline = time.monotonic() + timeout
        self.closed = False
        self.dropped = False

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        api = self.api
        pos = 0
        with api.cond:
            while pos < len(api.history) and api.history[pos][0] <= self.rv:
                pos += 1
        try:
            while True:
                with api.cond:
                    while (not self.closed and not self.dropped and not api.down and pos >= len(api.history)
                           and time.monotonic() < self.deadline):
                        api.cond.wait(max(0.0, min(0.05, self.deadline - time.monotonic())))
                    if self.dropped or api.down:
                        raise Unavailable(f"watch {self.res}: connection reset")
                    if self.closed or pos >= len(api.history):
                        return
                    batch = api.history[pos:]
                    pos = len(api.history)
                for _rv, res, typ, obj in batch:
                    if res != self.res:
                        continue
                    md = obj.get("metadata") or {}
                    if self.namespace and md.get("namespace") != self.namespace:
                        continue
                    if not _selector_ok(obj, self.selector):
                        continue
                    yield typ, copy.deepcopy(obj)
        finally:
            with api.cond:
                if self in api.watches:
                    api.watches.remove(self)

    def close(self) -> None:
        with self.api.cond:
            self.closed = True
            self.api.cond.notify_all()


class FakeApi:
    """In-memory stand-in for ``KubeClient`` (same method names and signatures)."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.RLock())
        self.store: dict[Resource, dict[tuple[str, str], dict[str, Any]]] = {}
        self.rv = 1000
        self.history: list[tuple[int, Resource, str, dict[str, Any]]] = []
        self.compacted = 0
        self.down = False
        self.faults: list[Fault] = []
        self.calls: list[tuple[str, str, str | None, str | None]] = []
        self.watches: list[FakeWatch] = []
        self.bind_delay = 0.0
        #: the resourceVersion each list asked for ("0": any, from the watch cache; "": a consistent read)
        self.list_versions: list[str] = []

    # --- test controls ---------------------------------------------------------------------------------
    def fail(self, op: str, error: ApiError, times: int = 1,
             when: Callable[[Resource | None, str | None, str | None], bool] | None = None) -> None:
        """The next ``times`` calls of ``op`` (matching ``when(res, namespace, name)``) raise ``error``."""
        with self.cond:
            self.faults.append(Fault(op, error, times, when))

    def drop_watches(self) -> None:
        """Cut every open watch, as a load balancer or a restarting API server does."""
        with self.cond:
            for w in list(self.watches):
                w.dropped = True
            self.cond.notify_all()

    def set_down(self, down: bool) -> None:
        with self.cond:
            self.down = down
            self.cond.notify_all()

    def compact(self) -> None:
        """Forget history: watching from any older resourceVersion now gets 410 Gone."""
        with self.cond:
            self.compacted = self.rv
            self.history.clear()

    def count(self, op: str) -> int:
        return sum(1 for c in self.calls if c[0] == op)

    def objects(self, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        with self.cond:
            return [copy.deepcopy(o) for (ns, _), o in self.store.get(res, {}).items()
                    if namespace is None or ns == namespace]

    def obj(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self.cond:
            o = self.store.get(res, {}).get((namespace or "" if res.namespaced else "", name))
            return copy.deepcopy(o) if o else None

    # --- internals -------------------------------------------------------------------------------------
    def _enter(self, op: str, res: Resource | None, namespace: str | None, name: str | None) -> None:
        self.calls.append((op, str(res) if res else "", namespace, name))
        if self.down:
            raise Unavailable(f"{op}: connection refused")
        for f in self.faults:
            if f.op == op and f.times > 0 and (f.when is None or f.when(res, namespace, name)):
                f.times -= 1
                raise f.error

    def _key(self, res: Resource, namespace: str | None, name: str) -> tuple[str, str]:
        return (namespace or "default") if res.namespaced else "", name

    def _record(self, res: Resource, typ: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        if typ != "DELETED":
            obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, res, typ, copy.deepcopy(obj)))
        self.cond.notify_all()
        return copy.deepcopy(obj)

    def _get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        o = self.store.get(res, {}).get(self._key(res, namespace, name))
        if o is None:
            raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
        return o

    # --- KubeClient interface --------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "", page_size: int = 500,
             resource_version: str = "") -> tuple[list[dict[str, Any]], str]:
        with self.cond:
            self._enter("list", res, namespace, None)
            self.list_versions.append(resource_version)
            items = [res.typed(copy.deepcopy(o)) for (ns, _), o in sorted(self.store.get(res, {}).items())
                     if (not namespace or ns == namespace) and _selector_ok(o, label_selector)]
            return items, str(self.rv)

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None, *,
              label_selector: str = "", field_selector: str = "", timeout_seconds: int = 300) -> FakeWatch:
        with self.cond:
            self._enter("watch", res, namespace, None)
            rv = int(resource_version or self.rv)
            if rv < self.compacted:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.compacted})")
            w = FakeWatch(self, res, rv, namespace, label_selector, timeout_seconds)
            self.watches.append(w)
            return w

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        with self.cond:
            self._enter("get", res, namespace, name)
            return res.typed(copy.deepcopy(self._get(res, namespace, name)))

    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        with self.cond:
            obj = res.typed(copy.deepcopy(body))
            md = obj.setdefault("metadata", {})
            if not md.get("name") and md.get("generateName"):
                md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
            ns = (namespace or md.get("namespace") or "default") if res.namespaced else None
            self._enter("create", res, ns, md.get("name"))
            if ns:
                md["namespace"] = ns
            key = self._key(res, ns, md["name"])
            bucket = self.store.setdefault(res, {})
            if key in bucket:
                raise ApiError(409, "AlreadyExists", f'{res.plural} "{md["name"]}" already exists')
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_iso()
            md["generation"] = 1
            if res == POD:
                obj.setdefault("status", {}).setdefault("phase", "Pending")
                obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
            bucket[key] = obj
            return self._record(res, "ADDED", obj)

    def _write(self, res: Resource, key: tuple[str, str], old: dict[str, Any], new: dict[str, Any],
               subresource: str | None) -> dict[str, Any]:
        if subresource == "status":
            new = {**old, "status": new.get("status", old.get("status"))}
        elif res in STATUS_SUBRESOURCE and "status" in old:
            new = {**new, "status": old["status"]}
        new["metadata"] = {**old["metadata"], **{k: v for k, v in (new.get("metadata") or {}).items()
                                                  if k not in ("uid", "creationTimestamp")}}
        self.store[res][key] = new
        return self._record(res, "MODIFIED", new)

    def replace(self, res: Resource, body: dict[str, Any], namespace: str | None = None,
                subresource: str | None = None) -> dict[str, Any]:
        with self.cond:
            md = body.get("metadata") or {}
            ns = namespace or md.get("namespace")
            self._enter("replace", res, ns, md.get("name"))
            old = self._get(res, ns, md["name"])
            want = md.get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified; please apply your changes to the "
                               "latest version and try again")
            return self._write(res, self._key(res, ns, md["name"]), old, res.typed(copy.deepcopy(body)),
                               subresource)

    def patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None,
              subresource: str | None = None, strategic: bool = False) -> dict[str, Any]:
        with self.cond:
            self._enter("patch", res, namespace, name)
            old = self._get(res, namespace, name)
            new = merge_patch(old, patch, strategic)
            return self._write(res, self._key(res, namespace, name), old, new, subresource)

    def apply(self, res: Resource, body: dict[str, Any], field_manager: str = "pyvolcano") -> dict[str, Any]:
        md = body.get("metadata") or {}
        with self.cond:
            if self.store.get(res, {}).get(self._key(res, md.get("namespace"), md["name"])) is None:
                return self.create(res, body)
            return self.patch(res, md["name"], body, md.get("namespace"))

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               grace_period: int | None = None, propagation: str | None = None, uid: str | None = None) -> None:
        with self.cond:
            self._enter("delete", res, namespace, name)
            self._delete(res, name, namespace, grace_period, uid)

    def _delete(self, res: Resource, name: str, namespace: str | None, grace_period: int | None,
                uid: str | None) -> None:
        old = self._get(res, namespace, name)
        if uid and old["metadata"]["uid"] != uid:
            raise ApiError(409, "Conflict", "Precondition failed: UID in precondition does not match")
        key = self._key(res, namespace, name)
        graceful = (res == POD and grace_period != 0 and (old.get("spec") or {}).get("nodeName")
                    and (old.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
        if graceful:
            if not old["metadata"].get("deletionTimestamp"):
                new = copy.deepcopy(old)
                new["metadata"]["deletionTimestamp"] = now_iso()
                new["metadata"]["deletionGracePeriodSeconds"] = 30 if grace_period is None else grace_period
                self.store[res][key] = new
                self._record(res, "MODIFIED", new)
            return
        del self.store[res][key]
        self._record(res, "DELETED", old)

    def bind(self, namespace: str, name: str, uid: str, node: str,
             annotations: dict[str, str] | None = None) -> None:
        """The pods/binding subresource; the Binding's ``annotations`` are merged into the pod's (the API server's
        ``setPodNodeAndMetadata``)."""
        if self.bind_delay:
            time.sleep(self.bind_delay)
        with self.cond:
            self._enter("bind", POD, namespace, name)
            pod = self._get(POD, namespace, name)
            if uid and pod["metadata"]["uid"] != uid:
                raise ApiError(409, "Conflict", "Precondition failed: UID in precondition does not match")
            if pod.get("metadata", {}).get("deletionTimestamp"):
                raise ApiError(409, "Conflict", f"pod {name} is being deleted, cannot be assigned to a host")
            if (pod.get("spec") or {}).get("nodeName"):
                raise ApiError(409, "Conflict", f"pod {name} is already assigned to node "
                               f"\"{pod['spec']['nodeName']}\"")
            new = copy.deepcopy(pod)
            new["spec"]["nodeName"] = node
            if annotations:
                new["metadata"]["annotations"] = {**(new["metadata"].get("annotations") or {}), **annotations}
            conds = [c for c in new.setdefault("status", {}).get("conditions") or [] if c["type"] != "PodScheduled"]
            new["status"]["conditions"] = [*conds, {"type": "PodScheduled", "status": "True"}]
            self.store[POD][self._key(POD, namespace, name)] = new
            self._record(POD, "MODIFIED", new)

    def evict(self, namespace: str, name: str, uid: str | None = None, grace_period: int | None = None) -> None:
        with self.cond:
            self._enter("evict", POD, namespace, name)
            self._delete(POD, name, namespace, grace_period, uid)

    def server_version(self) -> str:
        return "fake"

    # --- test helpers playing the kubelet --------------------------------------------------------------
    def run_bound_pods(self) -> int:
        """Mark bound Pending pods Running and finish terminating ones, as a kubelet would."""
        n = 0
        with self.cond:
            for key, pod in list(self.store.get(POD, {}).items()):
                if pod["metadata"].get("deletionTimestamp"):
                    del self.store[POD][key]
                    self._record(POD, "DELETED", pod)
                elif (pod.get("spec") or {}).get("nodeName") and pod["status"].get("phase") == "Pending":
                    new = copy.deepcopy(pod)
                    new["status"]["phase"] = "Running"
                    self.store[POD][key] = new
                    self._record(POD, "MODIFIED", new)
                    n += 1
        return n
