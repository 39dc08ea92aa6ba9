"""The extender plugin against a real HTTP extender served by the test on 127.0.0.1 (``http.server`` in a thread):
Volcano's URLs, verbs and JSON bodies (``pkg/scheduler/plugins/extender``), a slow extender (the session does not
wait more than one timeout), a failing one (ignorable or not) and one that does not answer at all."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pyvolcano.conf.loader import load_conf
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import cycle_objects, result_json
from tests import oracle

#: verb -> fn(body) -> (HTTP status, answer or None, seconds to wait before answering)
Handler = Callable[[dict[str, Any]], tuple[int, Any, float]]


class Extender:
    def __init__(self) -> None:
        self.verbs: dict[str, Handler] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []  # (path, content type, body)
        self.release = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
                outer.calls.append((self.path, self.headers["Content-Type"], body))
                fn = outer.verbs.get(self.path.lstrip("/"))
                status, answer, delay = fn(body) if fn else (404, None, 0.0)
                if delay:
                    outer.release.wait(delay)
                data = json.dumps(answer).encode() if answer is not None else b""
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the scheduler gave up waiting
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    def paths(self) -> list[str]:
        return [p for p, _, _ in self.calls]


@pytest.fixture
def ext() -> Iterator[Extender]:
    e = Extender()
    e.thread.start()
    yield e
    e.release.set()
    e.server.shutdown()
    e.server.server_close()


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, group: str, cpu: str = "1", node_name: str = "", priority: int = 0,
        gpu: bool = False) -> dict[str, Any]:
    req: dict[str, str] = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        req["nvidia.com/gpu"] = "1"
    spec: dict[str, Any] = {"schedulerName": "volcano", "priority": priority,
                            "containers": [{"name": "c", "resources": {"requests": req}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def group(name: str, phase: str = "Inqueue", min_member: int = 1) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": min_member, "minResources": {"cpu": "1"}},
            "status": {"phase": phase}}


def conf(url: str, actions: str = "allocate", **args: Any) -> str:
    lines = "".join(f"        extender.{k}: {json.dumps(v)}\n" for k, v in args.items())
    return (f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
            f"- plugins:\n  - name: predicates\n  - name: extender\n    arguments:\n"
            f"        extender.urlPrefix: {url}\n{lines}")


def run(objects: list[dict[str, Any]], text: str) -> dict[str, Any]:
    result, _ = cycle_objects(objects, load_conf(text), "volcano", "vector")
    return result_json(result)


BASIC = [node("n1"), node("n2"), group("a"), pod("a-0", "a")]


def test_predicate_request_and_rejection(ext: Extender) -> None:
    ext.verbs["filter"] = lambda b: (200, {"status": "no" if b["node"]["Name"] == "n1" else "", "code": 3}, 0.0)
    out = run(BASIC, conf(ext.url, predicateVerb="filter"))
    assert out["binds"] == {"ns/a-0": "n2"}
    path, ctype, body = ext.calls[0]
    assert path == "/filter" and ctype == "application/json"
    assert body["task"]["Name"] == "a-0" and body["task"]["Namespace"] == "ns"
    assert body["task"]["Resreq"]["MilliCPU"] == 1000.0 and body["task"]["Pod"]["metadata"]["name"] == "a-0"
    assert body["node"]["Node"]["metadata"]["name"] in ("n1", "n2")
    assert body["node"]["Allocatable"]["MilliCPU"] == 4000.0


def test_predicate_message_without_code_is_an_error_reason(ext: Extender) -> None:
    ext.verbs["filter"] = lambda b: (200, {"status": "gpu busy"}, 0.0)
    out = run(BASIC, conf(ext.url, predicateVerb="filter"))
    assert out["binds"] == {}
    assert "2 gpu busy" in out["unschedulable"]["ns/a"]


def test_prioritize_scores_pick_the_node(ext: Extender) -> None:
    ext.verbs["score"] = lambda b: (200, {"nodeScore": {"n2": 50.0}}, 0.0)
    out = run(BASIC, conf(ext.url, prioritizeVerb="score"))
    assert out["binds"] == {"ns/a-0": "n2"}
    assert sorted(n["Name"] for n in ext.calls[0][2]["nodes"]) == ["n1", "n2"]


@pytest.mark.parametrize("ignorable", [False, True])
def test_prioritize_error_leaves_no_best_node_unless_ignorable(ext: Extender, ignorable: bool) -> None:
    """util.PrioritizeNodes returns no scores when the batch score fails: allocate finds no node."""
    ext.verbs["score"] = lambda b: (200, {"errorMessage": "broken"}, 0.0)
    out = run(BASIC, conf(ext.url, prioritizeVerb="score", ignorable=ignorable))
    # an error *answer* is not a failed call: ignorable does not cover it (extender.go)
    assert out["binds"] == {}
    ext.verbs["score"] = lambda b: (500, None, 0.0)
    out = run(BASIC, conf(ext.url, prioritizeVerb="score", ignorable=ignorable))
    assert out["binds"] == ({"ns/a-0": "n1"} if ignorable else {})


@pytest.mark.parametrize("ignorable", [False, True])
def test_failing_extender(ext: Extender, ignorable: bool) -> None:
    ext.verbs["filter"] = lambda b: (500, {"status": "?"}, 0.0)
    out = run(BASIC, conf(ext.url, predicateVerb="filter", ignorable=ignorable))
    if ignorable:
        assert out["binds"] == {"ns/a-0": "n1"}
    else:
        assert out["binds"] == {}
        assert f"failed filter with extender at URL {ext.url}filter, code 500" in out["unschedulable"]["ns/a"]
    assert len(ext.calls) > 1  # an HTTP answer, even an error, does not stop later calls


@pytest.mark.parametrize("ignorable", [False, True])
def test_slow_extender_is_waited_for_once(ext: Extender, ignorable: bool) -> None:
    """A slow extender costs one timeout per session: the first call times out, the later ones fail at once; the
    failure is one session warning naming the extender and the error."""
    ext.verbs["filter"] = lambda b: (200, {"status": ""}, 30.0)
    objects = [node("n1"), node("n2"), node("n3"), group("a"), pod("a-0", "a"), pod("a-1", "a")]
    result, _ = cycle_objects(objects, load_conf(conf(ext.url, predicateVerb="filter", httpTimeout="50ms",
                                                      ignorable=ignorable)), "volcano", "vector")
    out = result_json(result)
    assert len(ext.calls) == 1
    assert len(out["binds"]) == (2 if ignorable else 0)
    if not ignorable:
        assert "no answer within 0.05s" in out["unschedulable"]["ns/a"]
    assert result.warnings == [
        f"extender: Predicate failed: extender {ext.url}filter: no answer within 0.05s (extender.httpTimeout)"]


def test_unreachable_extender_names_url_and_error() -> None:
    out = run(BASIC, conf("http://127.0.0.1:9", predicateVerb="filter"))
    msg = out["unschedulable"]["ns/a"]
    assert "extender http://127.0.0.1:9/filter:" in msg and "refused" in msg.lower()


def test_preemptable_victims_from_extender(ext: Extender) -> None:
    ext.verbs["victims"] = lambda b: (200, {"status": 1, "victims": [
        t for t in b["evictees"] if t["Name"] == "b-1"]}, 0.0)
    objects = [node("n1", cpu="2"), group("b", "Running"), pod("b-0", "b", node_name="n1"),
               pod("b-1", "b", node_name="n1"), group("a"), pod("a-0", "a", priority=100)]
    ext.verbs["dealloc"] = lambda b: (200, {}, 0.0)
    out = run(objects, conf(ext.url, actions="allocate, preempt", preemptableVerb="victims",
                            deallocateFuncVerb="dealloc"))
    assert out["evictions"] == ["ns/b-1"]
    assert [c[2]["task"]["Name"] for c in ext.calls if c[0] == "/dealloc"] == ["b-1"]
    body = ext.calls[0][2]
    assert body["evictor"]["Name"] == "a-0" and sorted(t["Name"] for t in body["evictees"]) == ["b-0", "b-1"]


def test_enqueueable_vote_and_session_open_close(ext: Extender) -> None:
    ext.verbs["open"] = lambda b: (200, None, 0.0)
    ext.verbs["close"] = lambda b: (200, None, 0.0)
    ext.verbs["enq"] = lambda b: (200, {"status": -1 if b["job"]["Name"] == "a" else 1}, 0.0)
    objects = [node("n1"), group("a", "Pending"), pod("a-0", "a"), group("b", "Pending"), pod("b-0", "b")]
    out = run(objects, conf(ext.url, actions="enqueue, allocate", onSessionOpenVerb="open",
                            onSessionCloseVerb="close", jobEnqueueableVerb="enq"))
    assert out["binds"] == {"ns/b-0": "n1"}
    assert ext.paths()[0] == "/open" and ext.paths()[-1] == "/close"
    opened = ext.calls[0][2]
    assert set(opened["Jobs"]) == {"ns/a", "ns/b"} and set(opened["Nodes"]) == {"n1"} and "default" in opened["Queues"]


def test_job_ready_and_allocate_event(ext: Extender) -> None:
    ext.verbs["ready"] = lambda b: (200, {"status": False}, 0.0)
    ext.verbs["alloc"] = lambda b: (200, {}, 0.0)
    out = run(BASIC, conf(ext.url, jobReadyVerb="ready", allocateFuncVerb="alloc"))
    assert out["binds"] == {}  # never ready: allocated (gang keeps it pipelined), never dispatched
    assert ext.paths()[0] == "/alloc" and "/ready" in ext.paths()


def test_managed_resources_only_interested_tasks_are_sent(ext: Extender) -> None:
    ext.verbs["filter"] = lambda b: (200, {"status": ""}, 0.0)
    objects = [node("n1"), group("a"), pod("a-0", "a"), group("g"), pod("g-0", "g", gpu=True)]
    objects[0]["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    out = run(objects, conf(ext.url, predicateVerb="filter", managedResources=["nvidia.com/gpu"]))
    assert set(out["binds"]) == {"ns/a-0", "ns/g-0"}
    assert {c[2]["task"]["Name"] for c in ext.calls} == {"g-0"}


@pytest.mark.parametrize(("args", "msg"), [
    ({"httpTimeout": "soon"}, "extender.httpTimeout"),
    ({"httpTimeout": "0s"}, "positive duration"),
    ({"managedResources": "nvidia.com/gpu"}, "not a list of resource names"),
    ({"predicateVerb": 3}, "'extender.predicateVerb' = 3 is not a string"),
    ({"ignorable": "maybe"}, "extender.ignorable"),
])
def test_bad_arguments(args: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        run(BASIC, conf("http://127.0.0.1:9", **args))


def test_verbs_need_a_url() -> None:
    text = conf("x", predicateVerb="filter").replace("extender.urlPrefix: x", "extender.ignorable: true")
    with pytest.raises(ConfigError, match="urlPrefix' is required"):
        run(BASIC, text)
    with pytest.raises(ConfigError, match="is not an http"):
        run(BASIC, conf("ftp://h", predicateVerb="filter"))


@pytest.mark.slow
@pytest.mark.skipif(not oracle.available(), reason=oracle.SKIP_REASON)
def test_live_extender_agrees_with_volcano(ext: Extender) -> None:
    """The real Volcano (vc-oracle) asks the same server: same decisions (slow: one oracle run per case)."""
    ext.verbs["filter"] = lambda b: (200, {"status": "no" if b["node"]["Name"] == "n1" else "", "code": 3}, 0.0)
    ext.verbs["broken"] = lambda b: (200, {"errorMessage": "broken"}, 0.0)
    ext.verbs["victims"] = lambda b: (200, {"status": 1, "victims": [
        t for t in b["evictees"] if t["Name"] == "b-1"]}, 0.0)
    preempt = [node("n1", cpu="2"), group("b", "Running"), pod("b-0", "b", node_name="n1"),
               pod("b-1", "b", node_name="n1"), group("a"), pod("a-0", "a", priority=100)]
    for objects, text in [(BASIC, conf(ext.url, predicateVerb="filter")),
                          (BASIC, conf(ext.url, prioritizeVerb="broken", ignorable=True)),
                          (preempt, conf(ext.url, actions="allocate, preempt", preemptableVerb="victims"))]:
        want = oracle.run(objects, text)
        got = run(objects, text)
        assert (got["binds"], got["evictions"]) == (want["binds"], want["evictions"])
