"""Prometheus metrics (Volcano's names, so existing dashboards keep working) and the /healthz endpoint.

Each scheduler owns its registry: several schedulers in one process (tests) do not collide, and
``/metrics`` shows exactly this scheduler's series plus the process collectors.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

log = logging.getLogger(__name__)

_MS_BUCKETS = tuple(5 * 2**i for i in range(15))
_JOB_BUCKETS = tuple(32 * 2**i for i in range(10))


class SchedulerMetrics:
    """The series Volcano's scheduler exports (``volcano_*``), in milliseconds as Volcano does."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        self.e2e = Histogram("volcano_e2e_scheduling_latency_milliseconds",
                             "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
                             buckets=_MS_BUCKETS, registry=r)
        self.e2e_job = Histogram("volcano_e2e_job_scheduling_latency_milliseconds",
                                 "E2e job scheduling latency in milliseconds (creation to all binds issued)",
                                 buckets=_JOB_BUCKETS, registry=r)
        self.action = Histogram("volcano_action_scheduling_latency_milliseconds",
                                "Action scheduling latency in milliseconds", ["action"], buckets=_MS_BUCKETS,
                                registry=r)
        self.plugin = Histogram("volcano_plugin_scheduling_latency_milliseconds",
                                "Plugin scheduling latency in milliseconds", ["plugin", "OnSession"],
                                buckets=_MS_BUCKETS, registry=r)
        self.task = Histogram("volcano_task_scheduling_latency_milliseconds",
                              "Task scheduling latency in milliseconds (task create to task bound to a node)",
                              buckets=_MS_BUCKETS, registry=r)
        self.attempts = Counter("volcano_schedule_attempts", "Number of attempts to schedule pods, by the "
                                "result: scheduled, unschedulable, or error (the bind failed)", ["result"],
                                registry=r)
        self.victims = Gauge("volcano_pod_preemption_victims", "Number of selected preemption victims",
                             registry=r)
        self.preemption_attempts = Counter("volcano_total_preemption_attempts",
                                           "Total preemption attempts in the cluster till now", registry=r)
        self.unschedulable_tasks = Gauge("volcano_unschedule_task_count", "Number of tasks could not be scheduled",
                                         ["job_id"], registry=r)
        self.unschedulable_jobs = Gauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled",
                                        registry=r)
        self.sessions = Counter("pyvolcano_sessions", "Scheduling sessions run", registry=r)
        self.relists = Gauge("pyvolcano_informer_lists", "Full lists done by each informer (1 + re-lists)",
                             ["resource"], registry=r)
        self.is_leader = Gauge("pyvolcano_leader", "1 while this replica holds the leader lease", registry=r)
        #: what the scheduler's cache holds at each session: lets an operator (and the fault tests) check that
        #: no pod or node went missing from the cache after watches expired or the API server came back
        self.cache_objects = Gauge("pyvolcano_cache_objects", "Objects in the scheduler's cache at the last "
                                   "session, by kind (pods: this scheduler's)", ["kind"],
                                   registry=r)
        self._job_series: set[str] = set()

    def observe_session(self, e2e_ms: float, action_seconds: Mapping[str, float],
                        plugin_seconds: Mapping[tuple[str, str], float], lists: Mapping[str, int]) -> None:
        """One session's latencies (Volcano's ``metrics.UpdateE2eDuration``, ``UpdateActionDuration``,
        ``UpdatePluginDuration``) and each informer's list count."""
        self.sessions.inc()
        self.e2e.observe(e2e_ms)
        for name, sec in action_seconds.items():
            self.action.labels(name).observe(sec * 1000)
        for (name, when), sec in plugin_seconds.items():
            self.plugin.labels(name, when).observe(sec * 1000)
        for res, n in lists.items():
            self.relists.labels(res).set(n)

    def set_unschedulable(self, per_job: dict[str, int]) -> None:
        """Replace the per-job gauge: jobs that became schedulable drop out instead of staying stale."""
        for job in self._job_series - set(per_job):
            self.unschedulable_tasks.remove(job)
        for job, n in per_job.items():
            self.unschedulable_tasks.labels(job).set(n)
        self._job_series = set(per_job)
        self.unschedulable_jobs.set(len(per_job))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class Exposition(Protocol):
    """What ``/metrics`` serves: ``SchedulerMetrics`` or ``ControllerMetrics`` (each owns its registry)."""

    def exposition(self) -> bytes: ...


class HealthServer:
    """``/metrics`` and ``/healthz`` on one port (``--listen-address``), in a daemon thread."""

    def __init__(self, address: str, metrics: Exposition, healthy: Callable[[], tuple[bool, str]]) -> None:
        host, _, port = address.rpartition(":")
        metrics_ref, healthy_ref = metrics, healthy

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, metrics_ref.exposition(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez", "/readyz"):
                    ok, why = healthy_ref()
                    self._send(200 if ok else 500, (why or "ok").encode(), "text/plain")
                else:
                    self._send(404, b"not found", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="healthz", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ControllerMetrics:
    """The controller manager's few series (process collectors, jobs by phase, events handled)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        self.jobs = Gauge("pyvolcano_controller_jobs", "Jobs the job controller tracks, by phase", ["phase"],
                          registry=r)
        self.handled = Gauge("pyvolcano_controller_events_handled", "Informer events the job controller handled",
                             registry=r)
        self.invalid = Gauge("pyvolcano_controller_invalid_jobs", "Jobs held back by validation", registry=r)
        self.is_leader = Gauge("pyvolcano_leader", "1 while this replica holds the leader lease", registry=r)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
