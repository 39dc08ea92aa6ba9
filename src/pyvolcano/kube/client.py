"""A thin, fast REST client over the official ``kubernetes`` package's connection and auth handling.

Why not the generated ``CoreV1Api`` methods: they deserialise every response into model objects, which is
slow for big lists and watch streams, and they raise on a successful ``create_namespaced_binding`` unless
``_preload_content=False``.  Here every call asks for the raw response and parses it with orjson; the
official client still does kubeconfig/in-cluster loading, TLS, tokens and proxies.

Errors: any non-2xx answer raises ``ApiError`` (with the HTTP status and the server's ``Status`` message);
a server that cannot be reached raises ``Unavailable`` (status 0).  Callers branch on ``status``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import orjson
import urllib3

from pyvolcano.errors import UserError
from pyvolcano.kube.resources import POD, Resource

log = logging.getLogger(__name__)

#: default read timeout for ordinary requests (seconds); watches get their own
REQUEST_TIMEOUT = (10.0, 60.0)
_NET_ERRORS = (urllib3.exceptions.HTTPError, OSError)


class ApiError(Exception):
    """The API server answered with an error ``status`` (409 Conflict, 404 NotFound, 410 Gone, ...)."""

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404


class Unavailable(ApiError):
    """The API server could not be reached (connection refused or reset, timeout)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Unavailable", message)

    def __str__(self) -> str:
        return f"API server unavailable: {self.message}"


def error_from_body(status: int, reason: str, body: bytes) -> ApiError:
    """An ``ApiError`` from a ``Status`` object body (falls back to the raw text)."""
    message = body.decode("utf-8", "replace")[:500]
    try:
        st = orjson.loads(body)
        if isinstance(st, dict):
            message = st.get("message") or message
            reason = st.get("reason") or reason
            status = int(st.get("code") or status)
    except orjson.JSONDecodeError:
        pass
    return ApiError(status, reason, message)


class Watch:
    """One watch stream: iterate to get ``(type, object)`` pairs; ``close()`` ends it from another thread.

    An ``ERROR`` event (e.g. 410 Gone when the resource version is too old) raises ``ApiError``; a cut
    connection raises ``Unavailable``; the server ending the watch at ``timeoutSeconds`` just stops the
    iteration.
    """

    def __init__(self, response: Any, resource: Resource) -> None:
        self._resp = response
        self.resource = resource
        self.closed = False

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        try:
            for line in self._lines():
                if not line.strip():
                    continue
                ev = orjson.loads(line)
                typ = ev.get("type", "")
                obj = ev.get("object") or {}
                if typ == "ERROR":
                    raise ApiError(int(obj.get("code") or 500), obj.get("reason", ""), obj.get("message", ""))
                yield typ, obj
        except _NET_ERRORS as exc:
            if not self.closed:
                raise Unavailable(f"watch {self.resource}: {exc}") from exc
        finally:
            self.close()

    def _lines(self) -> Iterator[bytes]:
        buf = b""
        for chunk in self._resp.stream(65536, decode_content=True):
            buf += chunk
            if b"\n" not in buf:
                continue
            *lines, buf = buf.split(b"\n")
            yield from lines
        if buf:
            yield buf

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        shutdown = getattr(self._resp, "shutdown", None)  # urllib3 >= 2.3: unblocks a read in another thread
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        with contextlib.suppress(Exception):  # a half-read stream must not be reused: close, then hand back
            self._resp.close()
        with contextlib.suppress(Exception):
            self._resp.release_conn()


class KubeClient:
    """The API calls pyvolcano makes, on top of a ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client

    # --- construction ----------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, kubeconfig: str | None = None, context: str | None = None,
                    master: str | None = None, pool_size: int = 64) -> KubeClient:
        """From a kubeconfig file, or the in-cluster service account when ``kubeconfig`` is None."""
        from kubernetes import client, config

        cfg = client.Configuration()
        try:
            if kubeconfig:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
            else:
                config.load_incluster_config(client_configuration=cfg)
        except (config.ConfigException, OSError, TypeError, ValueError) as exc:
            where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster config (no --kubeconfig given)"
            raise UserError(f"cannot load {where}: {exc}") from None
        if master:
            cfg.host = master
        if not cfg.verify_ssl:  # say it once, not on every request as urllib3 would
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            log.warning("TLS verification of the API server %s is off (insecure-skip-tls-verify)", cfg.host)
        cfg.connection_pool_maxsize = pool_size
        return cls(client.ApiClient(cfg))

    # --- raw requests ----------------------------------------------------------------------------------
    def _send(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
              content_type: str = "application/json", timeout: Any = REQUEST_TIMEOUT) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        q = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
        try:
            req = self.api.param_serialize(method, path, query_params=q, header_params=headers, body=body,
                                           auth_settings=["BearerToken"])
            resp = self.api.call_api(*req, _request_timeout=timeout)
        except _NET_ERRORS as exc:
            raise Unavailable(f"{method} {path}: {exc}") from exc
        except Exception as exc:  # the client wraps TLS and protocol failures in ApiException(status=0)
            if getattr(exc, "status", None) == 0:
                raise Unavailable(f"{method} {path}: {getattr(exc, 'reason', exc)}") from exc
            raise
        return resp.response

    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str = "application/json") -> Any:
        """One request, JSON in and out; non-2xx raises ``ApiError``."""
        raw = self._send(method, path, query, body, content_type)
        try:
            data = raw.data
        except _NET_ERRORS as exc:
            raise Unavailable(f"{method} {path}: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                raw.release_conn()
        if not 200 <= raw.status < 300:
            raise error_from_body(raw.status, raw.reason or "", data or b"")
        return orjson.loads(data) if data else None

    # --- reads -----------------------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "", page_size: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Every object (paged), typed with kind/apiVersion, and the list's resourceVersion to watch from."""
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            data = self.request("GET", res.path(namespace), {
                "labelSelector": label_selector, "fieldSelector": field_selector, "limit": page_size,
                "continue": cont})
            items.extend(res.typed(o) for o in data.get("items") or [])
            md = data.get("metadata") or {}
            cont = md.get("continue") or ""
            if not cont:
                return items, md.get("resourceVersion", "")

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None, *,
              label_selector: str = "", field_selector: str = "", timeout_seconds: int = 300) -> Watch:
        """A watch from ``resource_version``; the read timeout leaves room for the server's own timeout."""
        query = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": timeout_seconds, "labelSelector": label_selector,
                 "fieldSelector": field_selector}
        raw = self._send("GET", res.path(namespace), query, timeout=(10.0, timeout_seconds + 30.0))
        if not 200 <= raw.status < 300:
            try:
                data = raw.data
            finally:
                raw.release_conn()
            raise error_from_body(raw.status, raw.reason or "", data or b"")
        return Watch(raw, res)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return res.typed(self.request("GET", res.path(namespace, name)))

    # --- writes ----------------------------------------------------------------------------------------
    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        return res.typed(self.request("POST", res.path(ns), body=body))

    def replace(self, res: Resource, body: dict[str, Any], namespace: str | None = None,
                subresource: str | None = None) -> dict[str, Any]:
        """PUT: fails with 409 when ``metadata.resourceVersion`` is stale (optimistic concurrency)."""
        md = body.get("metadata") or {}
        ns = namespace or md.get("namespace")
        return res.typed(self.request("PUT", res.path(ns, md["name"], subresource), body=body))

    def patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None,
              subresource: str | None = None, strategic: bool = False) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386), the same on built-in and custom resources; ``strategic`` sends a
        strategic merge patch instead (built-in kinds only), which merges lists such as pod conditions."""
        ctype = "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        return res.typed(self.request("PATCH", res.path(namespace, name, subresource), body=patch,
                                      content_type=ctype))

    def apply(self, res: Resource, body: dict[str, Any], field_manager: str = "pyvolcano") -> dict[str, Any]:
        """Server-side apply (create or update to exactly these fields), as ``kubectl apply --server-side``."""
        md = body.get("metadata") or {}
        path = res.path(md.get("namespace"), md["name"])
        return res.typed(self.request("PATCH", path, {"fieldManager": field_manager, "force": "true"}, body=body,
                                      content_type="application/apply-patch+yaml"))

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               grace_period: int | None = None, propagation: str | None = None, uid: str | None = None) -> None:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if propagation:
            body["propagationPolicy"] = propagation
        if uid:
            body["preconditions"] = {"uid": uid}
        self.request("DELETE", res.path(namespace, name), body=body)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST the pods/binding subresource.  The pod's uid is a precondition, so a pod deleted and recreated
        under the same name is not bound on the strength of a decision about its predecessor (409 instead).

        The request goes through the same ApiClient path as ``CoreV1Api.create_namespaced_pod_binding(...,
        _preload_content=False)`` but without that class: its module takes over a second to import, which a
        restarted scheduler would otherwise spend before its first bind."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.request("POST", POD.path(namespace, name, "binding"), body=body)

    def evict(self, namespace: str, name: str, uid: str | None = None, grace_period: int | None = None) -> None:
        """POST pods/eviction (policy/v1): honours PodDisruptionBudgets (429 when one forbids it)."""
        body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                                "metadata": {"name": name, "namespace": namespace}}
        opts: dict[str, Any] = {}
        if uid:
            opts["preconditions"] = {"uid": uid}
        if grace_period is not None:
            opts["gracePeriodSeconds"] = grace_period
        if opts:
            body["deleteOptions"] = opts
        self.request("POST", POD.path(namespace, name, "eviction"), body=body)

    def server_version(self) -> str:
        v = self.request("GET", "/version")
        return str(v.get("gitVersion", "?"))
