"""Node usage from a metrics source in Kubernetes mode (Volcano's ``pkg/scheduler/metrics/source`` and
``cache.go: GetMetricsData``): what the ``usage`` and ``rescheduling`` plugins read as ``NodeInfo.ResourceUsage``.

The scheduler conf's ``metrics:`` section (Volcano's ``MetricsConfiguration``) names the source: ``type``
(``prometheus`` is read; Volcano's ``elasticsearch`` and ``prometheus_adaptor`` are refused with a warning, as
Volcano refuses an unknown type), ``address`` (the Prometheus server), ``interval`` (how often to query; default
30s) and ``tls.insecureSkipVerify``.  Every interval a background thread asks Prometheus' query API
(``GET <address>/api/v1/query``) for each node, with Volcano's two queries (``metrics_client_prometheus.go``):
the cpu busy percentage and the memory used percentage of ``instance="<node name>"``, averaged over the last 10m
(``NODE_METRICS_PERIOD``).  A query that fails or returns no sample leaves that value 0; the node's metrics time
is the time of the query either way (as Volcano's ``NodeMetricsAvg``).  Sessions read the last answers
(``SchedulerCache.node_metrics``, ``plugins/_usage.py``).
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from pyvolcano.conf.arguments import parse_duration

log = logging.getLogger(__name__)

NODE_METRICS_PERIOD = "10m"
DEFAULT_INTERVAL = 30.0
#: one query's timeout (Volcano: the whole round within 60s)
QUERY_TIMEOUT = 10.0


def cpu_query(node: str) -> str:
    return (f'avg_over_time(clamp_min(100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode="idle",'
            f'instance="{node}"}}[5m])) * 100), 0)[{NODE_METRICS_PERIOD}:30s])')


def memory_query(node: str) -> str:
    return (f'100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}/'
            f'node_memory_MemTotal_bytes{{instance="{node}"}}))[{NODE_METRICS_PERIOD}:30s])')


def metrics_conf(conf: Any) -> dict[str, str]:
    """The conf's ``metrics:`` section (``SchedulerConf.metrics``), as strings (Volcano's ``map[string]string``)."""
    raw = getattr(conf, "metrics", None)
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


class PrometheusSource:
    """``PrometheusMetricsClient``: the two queries per node against Prometheus' HTTP API."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        address = conf.get("address", "")
        if not address:
            raise ValueError("metrics address is empty")
        self.address = address.rstrip("/")
        self.context: ssl.SSLContext | None = None
        if conf.get("tls.insecureSkipVerify") == "true":
            log.warning("metrics: TLS certificate verification is disabled (tls.insecureSkipVerify)")
            self.context = ssl.create_default_context()
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE

    def query(self, promql: str, at: float) -> float | None:
        """The first sample of an instant vector, or None (no data, an error: logged)."""
        url = f"{self.address}/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        try:
            with urllib.request.urlopen(url, timeout=QUERY_TIMEOUT, context=self.context) as resp:
                body = json.loads(resp.read(10 << 20))
        except (OSError, ValueError) as exc:
            log.error("metrics: querying Prometheus at %s: %s", self.address, exc)
            return None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict) or data.get("resultType") != "vector" or not data.get("result"):
            log.warning("metrics: no data found for %s", promql)
            return None
        try:
            return float(data["result"][0]["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            log.warning("metrics: unexpected answer for %s", promql)
            return None

    def node(self, name: str) -> tuple[float, float, float]:
        """``NodeMetricsAvg``: (cpu %, memory %, metrics time)."""
        now = time.time()
        cpu = self.query(cpu_query(name), now)
        mem = self.query(memory_query(name), now)
        return (cpu or 0.0, mem or 0.0, now)


class NodeMetricsPoller:
    """Queries the configured source every interval on a thread of its own; ``latest`` is what sessions read."""

    def __init__(self, node_names: Callable[[], list[str]]) -> None:
        self.node_names = node_names
        self._conf: dict[str, str] = {}
        self._data: dict[str, tuple[float, float, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._source: PrometheusSource | None = None
        self.interval = DEFAULT_INTERVAL

    def configure(self, conf: dict[str, str]) -> None:
        """Start, restart or stop polling for the conf's ``metrics:`` section (a reloaded conf may change it)."""
        if conf == self._conf:
            return
        self.stop()
        self._conf = conf
        kind = conf.get("type", "")
        if not kind:
            return
        if kind != "prometheus":
            log.error("metrics: data cannot be collected from the %r monitoring system; pyvolcano reads prometheus",
                      kind)
            return
        try:
            self._source = PrometheusSource(conf)
        except ValueError as exc:
            log.error("metrics: %s", exc)
            return
        try:
            self.interval = parse_duration(conf.get("interval", "")) or DEFAULT_INTERVAL
        except ValueError:
            self.interval = DEFAULT_INTERVAL
        if self.interval <= 0:
            self.interval = DEFAULT_INTERVAL
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-metrics", daemon=True)
        self._thread.start()

    def poll_once(self) -> None:
        src = self._source
        if src is None:
            return
        got = {name: src.node(name) for name in self.node_names()}
        with self._lock:
            self._data.update(got)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:  # a bad answer must not end the polling
                log.exception("metrics: polling failed")
            self._stop.wait(self.interval)

    def latest(self) -> dict[str, tuple[float, float, float]] | None:
        """The last answers by node name, or None when no source is configured."""
        if self._source is None:
            return None
        with self._lock:
            return dict(self._data)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._thread, self._source = None, None
        with self._lock:
            self._data.clear()
