"""KubeClient at the HTTP boundary: paths, bodies, content types, paging, watch streams and error mapping,
checked against a tiny local HTTP server standing in for the API server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client as k8s

from pyvolcano.kube.client import ApiError, KubeClient, Unavailable
from pyvolcano.kube.resources import NODE, POD, PODGROUP, QUEUE


class Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.routes: dict[tuple[str, str], Any] = {}
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                u = urlparse(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                req = {"method": self.command, "path": u.path, "query": parse_qs(u.query),
                       "ctype": self.headers.get("Content-Type"), "body": json.loads(body) if body else None}
                outer.requests.append(req)
                route = outer.routes.get((self.command, u.path))
                if route is None:
                    return self._json(404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                            "message": f"{u.path} not found"})
                route(self, req)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def chunks(self, parts: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for p in parts:
                    self.wfile.write(f"{len(p):x}\r\n".encode() + p + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, *a: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def json(self, method: str, path: str, code: int, obj: Any) -> None:
        self.routes[(method, path)] = lambda h, req: h._json(code, obj)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.httpd.shutdown()


@pytest.fixture
def kc(server: Server) -> KubeClient:
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{server.port}"
    return KubeClient(k8s.ApiClient(cfg))


def test_list_pages_and_types_items(server: Server, kc: KubeClient) -> None:
    pages = iter([
        {"metadata": {"continue": "tok", "resourceVersion": "5"}, "items": [{"metadata": {"name": "a"}}]},
        {"metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "b"}}]},
    ])
    server.routes[("GET", "/api/v1/nodes")] = lambda h, req: h._json(200, next(pages))
    items, rv = kc.list(NODE, label_selector="role=x", page_size=1)
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and rv == "7"
    assert all(i["kind"] == "Node" and i["apiVersion"] == "v1" for i in items)
    q1, q2 = server.requests[0]["query"], server.requests[1]["query"]
    assert q1["labelSelector"] == ["role=x"] and q1["limit"] == ["1"] and "continue" not in q1
    assert q2["continue"] == ["tok"]
    assert "resourceVersion" not in q1  # a consistent read unless asked otherwise


def test_list_from_the_watch_cache_sends_resource_version_0_on_the_first_page_only(server: Server,
                                                                                   kc: KubeClient) -> None:
    pages = iter([
        {"metadata": {"continue": "tok", "resourceVersion": "5"}, "items": [{"metadata": {"name": "a"}}]},
        {"metadata": {"resourceVersion": "5"}, "items": [{"metadata": {"name": "b"}}]},
    ])
    server.routes[("GET", "/api/v1/nodes")] = lambda h, req: h._json(200, next(pages))
    items, rv = kc.list(NODE, resource_version="0")
    assert len(items) == 2 and rv == "5"
    q1, q2 = server.requests[0]["query"], server.requests[1]["query"]
    assert q1["resourceVersion"] == ["0"]
    assert "resourceVersion" not in q2 and q2["continue"] == ["tok"]  # the token carries the version


def test_watch_parses_events_split_across_chunks_and_raises_gone(server: Server, kc: KubeClient) -> None:
    ev1 = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "q1", "resourceVersion": "8"}}}).encode()
    ev2 = json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}).encode()
    err = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                  "message": "too old resource version"}}).encode()
    stream = ev1 + b"\n" + ev2 + b"\n" + err + b"\n"
    server.routes[("GET", "/apis/scheduling.volcano.sh/v1beta1/queues")] = \
        lambda h, req: h.chunks([stream[:10], stream[10:70], stream[70:]])
    w = kc.watch(QUEUE, "7", timeout_seconds=5)
    got = []
    with pytest.raises(ApiError) as exc:
        for typ, obj in w:
            got.append((typ, obj["metadata"]["resourceVersion"]))
    assert got == [("ADDED", "8"), ("BOOKMARK", "9")]
    assert exc.value.gone and "too old" in exc.value.message
    q = server.requests[0]["query"]
    assert q["watch"] == ["true"] and q["resourceVersion"] == ["7"] and q["allowWatchBookmarks"] == ["true"]


def test_errors_carry_status_and_message(server: Server, kc: KubeClient) -> None:
    server.json("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups", 409,
                {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": 'podgroups "g" already exists'})
    with pytest.raises(ApiError) as exc:
        kc.create(PODGROUP, {"metadata": {"name": "g", "namespace": "ns"}})
    assert exc.value.conflict and exc.value.reason == "AlreadyExists" and "already exists" in str(exc.value)
    with pytest.raises(ApiError) as exc2:
        kc.get(POD, "missing", "ns")
    assert exc2.value.not_found


def test_bind_posts_a_binding_with_the_uid_precondition(server: Server, kc: KubeClient) -> None:
    server.json("POST", "/api/v1/namespaces/ns/pods/p/binding", 201, {"kind": "Status", "status": "Success"})
    kc.bind("ns", "p", "uid-1", "n1")
    req = server.requests[0]
    assert req["body"]["kind"] == "Binding" and req["body"]["target"] == {"apiVersion": "v1", "kind": "Node",
                                                                        "name": "n1"}
    assert req["body"]["metadata"]["uid"] == "uid-1"
    server.json("POST", "/api/v1/namespaces/ns/pods/q/binding", 409,
                {"kind": "Status", "code": 409, "reason": "Conflict", "message": "pod q is already assigned"})
    with pytest.raises(ApiError) as exc:
        kc.bind("ns", "q", "", "n1")
    assert exc.value.conflict and "already assigned" in exc.value.message


def test_evict_uses_the_policy_v1_eviction_subresource(server: Server, kc: KubeClient) -> None:
    server.json("POST", "/api/v1/namespaces/ns/pods/p/eviction", 201, {"kind": "Status", "status": "Success"})
    kc.evict("ns", "p", uid="u")
    body = server.requests[0]["body"]
    assert body["apiVersion"] == "policy/v1" and body["kind"] == "Eviction"
    assert body["deleteOptions"]["preconditions"] == {"uid": "u"}
    server.json("POST", "/api/v1/namespaces/ns/pods/b/eviction", 429,
                {"kind": "Status", "code": 429, "reason": "TooManyRequests",
                 "message": "Cannot evict pod as it would violate the pod's disruption budget."})
    with pytest.raises(ApiError) as exc:
        kc.evict("ns", "b")
    assert exc.value.status == 429


def test_patch_content_types(server: Server, kc: KubeClient) -> None:
    server.json("PATCH", "/apis/scheduling.volcano.sh/v1beta1/queues/q/status", 200, {"metadata": {"name": "q"}})
    server.json("PATCH", "/api/v1/namespaces/ns/pods/p/status", 200, {"metadata": {"name": "p"}})
    out = kc.patch(QUEUE, "q", {"status": {"allocated": {"cpu": "1"}}}, subresource="status")
    assert out["kind"] == "Queue"
    kc.patch(POD, "p", {"status": {"conditions": []}}, "ns", subresource="status", strategic=True)
    assert server.requests[0]["ctype"] == "application/merge-patch+json"
    assert server.requests[1]["ctype"] == "application/strategic-merge-patch+json"


def test_unreachable_server_is_unavailable() -> None:
    cfg = k8s.Configuration()
    cfg.host = "http://127.0.0.1:9"  # discard port: nothing listens
    cfg.retries = 0
    kc = KubeClient(k8s.ApiClient(cfg))
    with pytest.raises(Unavailable):
        kc.list(NODE)
    with pytest.raises(Unavailable):
        kc.bind("ns", "p", "", "n")


def test_requests_reuse_one_connection_and_survive_the_server_closing_it(server: Server, kc: KubeClient) -> None:
    """The kept-alive path (``KeepAlive``): one connection per thread for consecutive requests; a connection the
    server closed meanwhile is replaced, and the request is sent again, once."""
    ports: list[int] = []

    def ok(h: Any, req: dict[str, Any]) -> None:
        ports.append(h.client_address[1])
        h._json(200, {"metadata": {"name": "n"}})

    def ok_then_hang_up(h: Any, req: dict[str, Any]) -> None:
        ok(h, req)
        h.close_connection = True  # no "Connection: close" header: the client finds out on its next request

    server.routes[("GET", "/api/v1/nodes/n")] = ok
    server.routes[("GET", "/api/v1/nodes/bye")] = ok_then_hang_up
    assert kc.fast is not None
    kc.get(NODE, "n")
    kc.get(NODE, "n")
    assert len(ports) == 2 and ports[0] == ports[1]
    kc.get(NODE, "bye")
    kc.get(NODE, "n")  # the kept connection is closed by now: a new one, and the request still succeeds
    assert len(ports) == 4 and ports[3] != ports[2]
    assert [r["path"] for r in server.requests] == ["/api/v1/nodes/n", "/api/v1/nodes/n", "/api/v1/nodes/bye",
                                                    "/api/v1/nodes/n"]


def test_kept_alive_answers_chunked_closing_or_without_a_length(server: Server, kc: KubeClient) -> None:
    """The kept-alive path reads the API server's answers itself (``_Conn``): a chunked body (kube-apiserver's
    lists), an answer with ``Connection: close`` (the next request opens a new connection), and one without a
    length, which ends with the connection."""
    ports: list[int] = []
    items = [{"metadata": {"name": f"n{i}"}} for i in range(3)]
    body = json.dumps({"metadata": {"resourceVersion": "7"}, "items": items}).encode()

    def chunked(h: Any, req: dict[str, Any]) -> None:
        ports.append(h.client_address[1])
        h.chunks([body[:10], body[10:11], body[11:]])

    def closing(h: Any, req: dict[str, Any]) -> None:
        ports.append(h.client_address[1])
        data = json.dumps({"metadata": {"name": "c"}}).encode()
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(data)

    def no_length(h: Any, req: dict[str, Any]) -> None:
        ports.append(h.client_address[1])
        h.send_response(200)
        h.end_headers()
        h.wfile.write(json.dumps({"metadata": {"name": "u"}}).encode())
        h.close_connection = True

    server.routes[("GET", "/api/v1/nodes")] = chunked
    server.routes[("GET", "/api/v1/nodes/c")] = closing
    server.routes[("GET", "/api/v1/nodes/u")] = no_length
    assert kc.fast is not None
    got, rv = kc.list(NODE)
    assert [o["metadata"]["name"] for o in got] == ["n0", "n1", "n2"] and rv == "7"
    assert kc.get(NODE, "c")["metadata"]["name"] == "c"
    assert kc.get(NODE, "u")["metadata"]["name"] == "u"
    assert [o["metadata"]["name"] for o in kc.list(NODE)[0]] == ["n0", "n1", "n2"]
    assert ports[0] == ports[1] and ports[2] != ports[1] and ports[3] != ports[2]


def test_a_proxy_keeps_the_official_client_path() -> None:
    cfg = k8s.Configuration()
    cfg.host = "http://127.0.0.1:9"
    cfg.proxy = "http://127.0.0.1:3128"
    assert KubeClient(k8s.ApiClient(cfg)).fast is None
