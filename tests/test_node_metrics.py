"""Node usage from Prometheus in Kubernetes mode (``kube/node_metrics.py``; Volcano's
``metrics_client_prometheus.go`` and ``cache.go: GetMetricsData``): Volcano's queries against Prometheus' HTTP API,
served by the test on 127.0.0.1 (a stand-in answering the query API; and, marked slow, a real Prometheus scraping a
small exporter when the ``prometheus`` binary is installed), the poller, and the usage plugin reading what it
found."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.cycle import result_json, run_session
from pyvolcano.kube.node_metrics import NodeMetricsPoller, PrometheusSource, cpu_query, memory_query, metrics_conf

#: node -> (cpu %, memory %) the stand-in Prometheus answers
USAGE = {"n1": 85.0, "n2": 10.0}


class FakePrometheus:
    def __init__(self) -> None:
        self.queries: list[str] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                promql = q["query"][0]
                outer.queries.append(promql)
                node = next((n for n in USAGE if f'instance="{n}"' in promql), None)
                value = USAGE[node] if node and "node_cpu_seconds_total" in promql else 20.0
                result = [] if node is None else [{"metric": {"instance": node}, "value": [time.time(), str(value)]}]
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)


@pytest.fixture
def prom() -> Iterator[FakePrometheus]:
    p = FakePrometheus()
    p.thread.start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def test_queries_are_volcanos(prom: FakePrometheus) -> None:
    cpu, mem, at = PrometheusSource({"address": prom.url}).node("n1")
    assert (cpu, mem) == (85.0, 20.0) and abs(at - time.time()) < 60
    assert prom.queries == [cpu_query("n1"), memory_query("n1")]
    assert prom.queries[0] == ('avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total'
                               '{mode="idle",instance="n1"}[5m])) * 100), 0)[10m:30s])')
    assert PrometheusSource({"address": prom.url}).node("unknown")[:2] == (0.0, 0.0)  # no data: 0, as Volcano


def test_unreachable_source_gives_zeros() -> None:
    assert PrometheusSource({"address": "http://127.0.0.1:9"}).node("n1")[:2] == (0.0, 0.0)
    with pytest.raises(ValueError, match="address is empty"):
        PrometheusSource({})


def test_poller_and_conf(prom: FakePrometheus) -> None:
    conf = load_conf(f'actions: "allocate"\nmetrics:\n  type: prometheus\n  address: {prom.url}\n  interval: 1h\n'
                     'tiers:\n- plugins:\n  - name: usage\n')
    mc = metrics_conf(conf)
    assert mc == {"type": "prometheus", "address": prom.url, "interval": "1h"}
    poller = NodeMetricsPoller(lambda: ["n1", "n2"])
    try:
        poller.configure(mc)
        deadline = time.time() + 10
        while len(poller.latest() or {}) < 2 and time.time() < deadline:
            time.sleep(0.01)
        got = poller.latest()
        assert got is not None and {k: v[:2] for k, v in got.items()} == {"n1": (85.0, 20.0), "n2": (10.0, 20.0)}
        assert poller.interval == 3600.0
    finally:
        poller.stop()
    assert poller.latest() is None
    poller.configure({"type": "elasticsearch", "address": prom.url})
    assert poller.latest() is None  # not read: no source


def node(name: str) -> dict[str, Any]:
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": res,
                                                                                        "allocatable": res}}


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "a-0", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "a"}},
       "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
       "status": {"phase": "Pending"}}
OBJECTS = [node("n1"), node("n2"), POD,
           {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}]


@pytest.mark.parametrize(("age", "where"), [(10.0, "n2"), (400.0, "n1")])
def test_usage_plugin_reads_the_source(age: float, where: str) -> None:
    """n1 at 85% cpu is refused by thresholds.cpu 80 while its metrics are fresh (5 minutes, MetricsActiveTime);
    with stale metrics every node passes and scores 0, and the tie goes to the first node."""
    cache = SchedulerCache.from_objects(OBJECTS)
    now = time.time()
    cache.now = now
    cache.node_metrics = {"n1": (85.0, 20.0, now - age), "n2": (10.0, 20.0, now - age)}
    text = ('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: usage\n'
            '    arguments: {thresholds: {cpu: 80}}\n')
    assert result_json(run_session(cache, load_conf(text)))["binds"] == {"ns/a-0": where}


EXPORTER = """# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{{cpu="0",mode="idle",instance="n1"}} {idle}
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes{{instance="n1"}} 25
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes{{instance="n1"}} 100
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="no prometheus binary (Debian's package) installed")
def test_real_prometheus(tmp_path: Path) -> None:
    """A real Prometheus scraping an exporter served here: n1's cpu is idle 20% of the time (busy 80%), its memory
    75% used (the exporter's own ``instance`` labels are kept: ``honor_labels``).  Volcano's queries average over
    30s steps of the last 10m, so the first answer can take up to one step after two scrapes: slow."""
    start = time.time()

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = EXPORTER.format(idle=0.2 * (time.time() - start)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    exporter = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=exporter.serve_forever, args=(0.05,), daemon=True).start()
    with tempfile.TemporaryDirectory() as data:
        port = _free_port()
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(f"global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n- job_name: node\n"
                       f"  honor_labels: true\n  static_configs:\n  - targets: ['127.0.0.1:{exporter.server_address[1]}']\n")
        proc = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            src = PrometheusSource({"address": f"http://127.0.0.1:{port}"})
            got = (0.0, 0.0, 0.0)
            deadline = time.time() + 90
            while time.time() < deadline:
                got = src.node("n1")
                if got[0] > 0 and got[1] > 0:
                    break
                time.sleep(1)
            # memory: 1 - 25/100 exactly; cpu: rate() over [5m] divides by the whole window, so with seconds of data
            # the busy share reads high (it settles at 80 after 5 minutes)
            assert got[1] == pytest.approx(75.0, abs=0.01) and 80.0 - 2 <= got[0] <= 100.0
        finally:
            proc.terminate()
            proc.wait(10)
            exporter.shutdown()


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_fake_answers_are_json(prom: FakePrometheus) -> None:
    with urllib.request.urlopen(f"{prom.url}/api/v1/query?query=up") as resp:
        assert json.loads(resp.read())["status"] == "success"
