"""The scheduler on a real cluster (Volcano's ``pkg/scheduler/scheduler.go``): informers feed a ``SchedulerCache``;
every period one session runs through ``framework.cycle.run_session`` (the code path of ``pyvolcano cycle`` and
the simulator) and ``framework.result.apply`` hands its result to the API server.

The parts follow Volcano's seams (``pkg/scheduler/cache/interface.go``, ``event_handlers.go``), one module each:

* ``kube/event_handlers.py``: informer events into the cache, keeping our in-flight decisions;
* ``kube/binder.py``: the Binder and Evictor (``pods/binding`` and the Eviction API, on worker threads; a bind
  starts as soon as the session dispatches it);
* ``kube/status.py``: the StatusUpdater (PodGroup/Queue status, pod conditions, events, only when changed);
* ``kube/conf_watch.py``: the conf file, reloaded when it changes;
* ``kube/informers.py``: the reflectors, started in dependency order (``cache.Run``, ``WaitForCacheSync``);
* ``kube/cluster_writer.py``: ``KubeWriter``, the binder and the status updater joined into the
  ``ClusterWriter`` that ``apply`` writes to;
* ``kube/why.py``: the ``WhyPending`` Event (short reason and best verified fix) of unschedulable PodGroups.

What is left here is the loop and leadership (``Scheduler.Run`` and ``runOnce``).
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.types import DEFAULT_QUEUE
from pyvolcano.cache.cache import SchedulerCache, Snapshot
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.result import ALL_NODES_UNAVAILABLE, SessionResult, apply
from pyvolcano.kube.binder import Assumed, Binder
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.cluster_writer import KubeWriter
from pyvolcano.kube.conf_watch import ConfFile
from pyvolcano.kube.event_handlers import EventHandlers
from pyvolcano.kube.informers import Informers
from pyvolcano.kube.leader import LeaderElector
from pyvolcano.kube.metrics import SchedulerMetrics
from pyvolcano.kube.node_metrics import NodeMetricsPoller, metrics_conf
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import QUEUE
from pyvolcano.kube.status import StatusUpdater
from pyvolcano.kube.why import KubeWhy, WhyOptions
from pyvolcano.kube.writer import EventRecorder, Writer

__all__ = ["ALL_NODES_UNAVAILABLE", "Assumed", "ConfFile", "KubeScheduler", "KubeWriter", "SchedulerOptions",
           "default_identity"]

log = logging.getLogger(__name__)

#: the collector's thresholds from the first list on (``framework/gc_tuning.py``'s ``quiet_gc``): a young pass every
#: 100,000 allocations rather than 700, and the full passes that walk every live object rare
QUIET_GC = (100_000, 50, 100)


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


@dataclass
class SchedulerOptions:
    scheduler_name: str = "volcano"
    period: float = 1.0
    node_selector: str = ""
    bind_workers: int = 16
    status_workers: int = 4
    #: threads sending Events (their own, so that Events are not queued behind status writes)
    event_workers: int = 4
    #: binds first: a status write or an Event waits while binds are in flight, at most this long after it was
    #: queued (``kube/writer.py``: Writer); 0: no waiting
    write_defer: float = 30.0
    #: a session starts once the previous sessions' binds are done, or after waiting this long for them.  A
    #: session during a drain finds every decided pod Binding and has nothing to bind, but costs CPU and holds
    #: the cache lock that the informers need (on 5,000 pending PodGroups, 1-2 s each on 2 busy cores)
    bind_wait: float = 5.0
    #: start each bind as the session dispatches it (Volcano's binder starts on ``cache.AddBindTask``), not
    #: after the session; False: all of a session's binds start when its result is applied
    stream_binds: bool = True
    identity: str = field(default_factory=default_identity)
    default_queue: str = DEFAULT_QUEUE
    create_default_queue: bool = True
    watch_timeout: int = 300
    #: an assumed bind the informers never confirm is dropped after this long (safety net only)
    assume_ttl: float = 600.0
    #: hand an unchanged job's clone from the last session to the next one (``SchedulerCache.reuse_clones``);
    #: safe because ``apply`` is done with a session's jobs before the next snapshot: binds, evictions and status
    #: writes run in the background on plain values and raw objects, never on session clones
    reuse_clones: bool = True
    #: blocked-job memo (``framework/incremental/memo.py``): a pending job that could not be admitted or placed is not
    #: re-examined until something that could change its answer happens; every change reaches the cache through
    #: ``upsert``/``delete``/``set_task_status``/``set_podgroup_phase``, so its epochs are exact.  False: every
    #: pending job is examined every session (``pyvolcano scheduler --full-sessions``)
    incremental: bool = True
    #: the "pod group is ready" Event also for a one-pod PodGroup ready at its first try (as Volcano); False:
    #: its pod's ``Scheduled`` Event is the only one, one Event per pod as kube-scheduler (``kube/status.py``)
    one_pod_ready_events: bool = False
    #: the ``WhyPending`` Event's search, and what it may cost (``kube/why.py``)
    why: WhyOptions = field(default_factory=WhyOptions)


class _LockedCache:
    """What ``run_session`` needs from a cache: a snapshot, taken under the informers' lock."""

    def __init__(self, owner: KubeScheduler) -> None:
        self.owner = owner

    def snapshot(self) -> Snapshot:
        with self.owner.lock:
            self.owner.cache.now = time.time()
            self.owner.cache.node_metrics = self.owner.node_metrics.latest()
            return self.owner.cache.snapshot()


class KubeScheduler:
    """The scheduling loop and leadership, over informers that feed the cache; the work is done by the parts
    named in the module docstring."""

    def __init__(self, api: Any, conf: ConfFile, options: SchedulerOptions | None = None,
                 metrics: SchedulerMetrics | None = None, elector: LeaderElector | None = None) -> None:
        self.api = api
        self.conf = conf
        self.opts = options or SchedulerOptions()
        self.metrics = metrics or SchedulerMetrics()
        self.elector = elector
        self.cache = SchedulerCache(self.opts.scheduler_name, reuse_clones=self.opts.reuse_clones,
                                    memo=self.opts.incremental)
        self.lock = threading.RLock()
        #: node usage from the conf's ``metrics:`` source (``kube/node_metrics.py``), for usage and rescheduling
        self.node_metrics = NodeMetricsPoller(self._node_names)
        #: the background status writer (PodGroup/Queue/pod status); it lets the binds in flight go first
        self.writer = Writer(self.opts.status_workers, "status", max_defer=self.opts.write_defer)
        #: Events, on threads of their own (not queued behind status writes), queued as the binds succeed; they
        #: too let the binds in flight go first (docs/performance.md, "On a cluster: the drain")
        self.events = Writer(self.opts.event_workers, "events", max_defer=self.opts.write_defer)
        self.recorder = EventRecorder(api, self.events, "volcano", self.opts.identity)
        self.stats = {"binds": 0, "bind_errors": 0, "evictions": 0, "evict_errors": 0, "sessions": 0}
        self.binder = Binder(api, self.cache, self.lock, self.recorder, self.metrics, self.stats,
                             self.opts.bind_workers, lambda: self.may_schedule)
        self.status = StatusUpdater(api, self.cache, self.lock, self.writer, self.recorder, self.metrics,
                                     self.opts.one_pod_ready_events)
        self.handlers = EventHandlers(self.cache, self.lock, self.binder, self.status)
        self.binder.handlers = self.handlers
        if self.opts.write_defer > 0:  # binds first (kube/writer.py)
            self.writer.defer_to = self.binder.wait
            self.events.defer_to = self.binder.wait
        self.cluster = KubeWriter(self.binder, self.status)
        self.why = KubeWhy(self.opts.why, self.cache, self.lock, self.binder.assumed, lambda: self._inflight > 0,
                           self.recorder.event, lambda: self.conf.conf)
        self.heartbeat = time.monotonic()
        self.last_result: SessionResult | None = None
        #: the last session's warnings
        self._warnings: frozenset[str] = frozenset()
        self._stop = threading.Event()
        self._leading = False
        #: called when leadership is lost after having been held (the command exits, as Volcano does)
        self.on_deposed: Callable[[], None] | None = None
        self.informers = Informers(api, self.handlers.on_event, self.opts.node_selector, self.opts.watch_timeout)

    # --- the parts' state, by the names the tests and tools use ------------------------------------------
    @property
    def assumed(self) -> dict[str, Assumed]:
        return self.binder.assumed

    @property
    def evicting(self) -> dict[str, str]:
        return self.binder.evicting

    @property
    def pg_sent(self) -> dict[str, dict[str, Any]]:
        return self.status.pg_sent

    @property
    def pg_quiet(self) -> dict[str, tuple[Any, ...]]:
        return self.status.pg_quiet

    @property
    def reflectors(self) -> list[Reflector]:
        return self.informers.reflectors

    @property
    def _inflight(self) -> int:
        return self.binder._inflight

    def on_event(self, typ: str, obj: dict[str, Any]) -> None:
        self.handlers.on_event(typ, obj)

    # --- startup -----------------------------------------------------------------------------------------
    def start_informers(self, timeout: float | None = None) -> bool:
        """Start the informers and wait for their first lists (``kube/informers.py``)."""
        return self.informers.start(self._stop, timeout)

    def ensure_default_queue(self) -> None:
        """Volcano's scheduler creates the default queue when it is missing."""
        if not self.opts.create_default_queue:
            return
        with self.lock:
            present = self.opts.default_queue in self.cache.queues
        if present:
            return
        body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": self.opts.default_queue},
                "spec": {"weight": 1, "reclaimable": True}}
        try:
            self.api.create(QUEUE, body)
            log.info("created the default queue %r", self.opts.default_queue)
        except ApiError as exc:
            if not exc.conflict:
                log.warning("cannot create the default queue %r: %s", self.opts.default_queue, exc)

    # --- the loop ----------------------------------------------------------------------------------------
    @property
    def may_schedule(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def run(self, stop: threading.Event | None = None) -> None:
        """Sync the informers, then one session per period while leader, until ``stop`` is set."""
        if stop is not None:
            self._stop = stop
        if self.elector is not None:
            self.elector.start(self._stop, None, self._deposed)
        # framework.gc_tuning.quiet_gc, but from the first list on and without its first full collection.  The
        # first lists (5,000 pods, 5,000 PodGroups) allocate millions of objects into a heap that only grows: at
        # the default thresholds the collector's passes over it took 0.3-0.5 s of CPU out of about 1 s, before
        # the first bind; and quiet_gc's collection then walked the whole loaded state for another 0.1-0.2 s.
        # What is loaded is long-lived and the lists leave no cycles (plain dicts, freed by reference counting),
        # so freezing without collecting keeps at most the few cycles of the imports (docs/performance.md, the
        # drain)
        old = gc.get_threshold()
        gc.set_threshold(*QUIET_GC)
        try:
            if not self.start_informers():
                return
            log.info("informers synced: %d nodes, %d pods, %d podgroups, %d queues", len(self.cache.nodes),
                     len(self.cache.tasks) + len(self.cache.other_tasks), len(self.cache.podgroups),
                     len(self.cache.queues))
            gc.freeze()
            self._loop()
        finally:
            gc.set_threshold(*old)
            gc.unfreeze()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            if self.may_schedule:
                if not self._leading:
                    self._leading = True
                    self.ensure_default_queue()
                if self.opts.bind_wait > 0:
                    self.binder.wait(self.opts.bind_wait)
                if self.may_schedule and not self._stop.is_set():  # still leading after the wait
                    try:
                        self.run_once()
                    except ConfigError as exc:  # an argument read when a plugin opens
                        self.conf.reject(exc)
                    except Exception:  # one bad session must not stop the scheduler
                        log.exception("scheduling session failed")
            else:
                self._leading = False
            self.metrics.is_leader.set(1 if self._leading else 0)
            self._stop.wait(self.opts.period)

    def _deposed(self) -> None:
        log.error("leader election lost: this replica stops scheduling")
        self._leading = False
        if self.on_deposed is not None:
            self.on_deposed()

    def _node_names(self) -> list[str]:
        with self.lock:
            return list(self.cache.nodes)

    def stop(self) -> None:
        self._stop.set()
        self.node_metrics.stop()
        self.why.stop()
        self.informers.stop()
        self.wait_binds(10)
        self.binder.shutdown()
        self.writer.shutdown(5)
        self.events.shutdown(5)
        if self.elector is not None:  # its loop releases the Lease once it sees the stop: wait for that
            self.elector.join(self.elector.retry_period + 15)

    def healthy(self) -> tuple[bool, str]:
        dead = self.informers.dead()
        if dead:
            return False, f"informers stopped: {', '.join(dead)}"
        age = time.monotonic() - self.heartbeat
        limit = max(30.0, 10 * self.opts.period)
        if age > limit:
            return False, f"scheduling loop stalled for {age:.0f}s"
        return True, "ok"

    def run_once(self) -> SessionResult:
        """One session: snapshot, run, apply; returns the session's decisions."""
        t0 = time.perf_counter()
        if self.conf.poll():
            log.info("using the reloaded scheduler conf from the next session on")
        self.node_metrics.configure(metrics_conf(self.conf.conf))
        with self.lock:
            self.binder.expire_assumed(self.opts.assume_ttl)
            c, cache_gauge = self.cache, self.metrics.cache_objects
            for kind, n in (("pods", len(c.tasks)), ("other_pods", len(c.other_tasks)), ("nodes", len(c.nodes)),
                            ("podgroups", len(c.podgroups)), ("queues", len(c.queues)),
                            ("hypernodes", len(c.hypernodes))):
                cache_gauge.labels(kind).set(n)
        result = run_session(_LockedCache(self), self.conf.conf,
                             on_dispatch=self.binder.bind_now if self.opts.stream_binds else None)
        self.apply(result)
        log.debug("session %d: %d binds, %d evictions, %d unschedulable jobs in %.1f ms", self.stats["sessions"],
                  len(result.binds), len(result.evictions), len(result.unschedulable),
                  (time.perf_counter() - t0) * 1000)
        self.stats["sessions"] += 1
        self.last_result = result
        for w in set(result.warnings) - self._warnings:  # logged when it appears, not every session it stays
            log.warning("%s", w)
        self._warnings = frozenset(result.warnings)
        self.metrics.observe_session((time.perf_counter() - t0) * 1000, result.action_seconds,
                                     result.plugin_seconds, {str(r.res): r.lists for r in self.reflectors})
        return result

    def apply(self, result: SessionResult) -> None:
        """``framework.result.apply`` under the cache lock (the binder marks binds and evictions in the cache
        at once); the API calls start afterwards, outside the lock."""
        with self.lock:
            self.status.begin()
            apply(result, self.cluster)  # the binds already started during the session are skipped
            self.binder.session_applied()
            self.status.end()
            self.why.after_session(result)
        evicts = self.binder.submit()
        if evicts:
            self.metrics.preemption_attempts.inc()
        self.metrics.victims.set(evicts)

    def wait_binds(self, timeout: float = 10.0) -> bool:
        """Wait for every issued bind and eviction to finish (tests, shutdown)."""
        return self.binder.wait(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait for the status writes and then the Events queued so far (tests)."""
        deadline = time.monotonic() + timeout
        return self.writer.flush(timeout) and self.events.flush(max(0.0, deadline - time.monotonic()))
