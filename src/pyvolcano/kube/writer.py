"""Background writes (status, conditions, events) that never hold up a scheduling session.

``Writer`` runs writes on a few threads, keyed by object: while a write for a key is queued, a newer one
replaces it (only the latest status matters), and writes for one key never run concurrently, so they
reach the server in order.

**Binds first.**  A writer may *defer to* something more urgent: the scheduler's status writer and its Event
writer both wait, before each write, until no bind is in flight (``Binder.wait``), but never longer than
``max_defer`` seconds after the write was first queued, so that on a cluster that always has a bind in flight
statuses and Events still go out, ``max_defer`` late at most.  Binds are what drains a backlog, and on a
saturated API server every other write in between delays them: in the race (docs/performance.md) a drain of
5,000 one-pod PodGroups sent 1,200-1,900 Events before its last bind, each costing kube-apiserver and etcd
about as much CPU as a bind.  Deferred, every Event and status is still written, after the binds of that burst.
A PodGroup status write that waits meanwhile often finds a newer status queued for the same group (Inqueue,
then Running once its pods are bound) and sends only that one.  Volcano's scheduler likewise writes PodGroup
status once per session for what changed (``JobUpdater.UpdateAll``, ``framework/job_updater.go``), after the
session has dispatched its binds; its binds run in their own goroutines.

``EventRecorder`` emits core/v1 Events, each (object, reason, message) once per ``repeat_after`` seconds, as the
client-go recorder's aggregation would, and remembers which (object, reason) it recorded (``recorded``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.objects import object_ref
from pyvolcano.kube.resources import EVENT

log = logging.getLogger(__name__)

#: the queue item that ends a worker
_STOP: Hashable = object()


class Writer:
    def __init__(self, workers: int = 4, name: str = "writer", defer_to: Callable[[float], object] | None = None,
                 max_defer: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        # worker threads on one queue of keys, started as needed: a ThreadPoolExecutor's Future and Condition
        # per write cost more Python CPU than the write's own bookkeeping (two Events per pod in a drain)
        self.workers = workers
        self.name = name
        self._queue: queue.SimpleQueue[Hashable] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: dict[Hashable, Callable[[], None]] = {}
        self._running: set[Hashable] = set()
        #: when each queued key's oldest unsent write was queued (a key rewritten again and again is not starved)
        self._since: dict[Hashable, float] = {}
        #: ``defer_to(seconds)`` returns once the more urgent work is done or ``seconds`` have passed
        self.defer_to = defer_to
        self.max_defer = max_defer
        #: the time source of ``max_defer`` (tests pass a fake one)
        self.clock = clock
        self.failures = 0

    def submit(self, key: Hashable, fn: Callable[[], None]) -> None:
        """Run ``fn`` soon; replaces a not-yet-started write with the same key."""
        with self._lock:
            queued = key in self._pending or key in self._running
            self._pending[key] = fn
            self._since.setdefault(key, self.clock())
            if not queued and not self._closed:
                self._running.add(key)
                if len(self._threads) < self.workers and len(self._running) > len(self._threads):
                    t = threading.Thread(target=self._work, name=f"{self.name}_{len(self._threads)}", daemon=True)
                    self._threads.append(t)
                    t.start()
                self._queue.put(key)

    def _work(self) -> None:
        while True:
            key = self._queue.get()
            if key is _STOP:
                return
            self._drain(key)

    def deferral(self, key: Hashable) -> float:
        """How long the next write of ``key`` may still wait for ``defer_to``: ``max_defer`` after its oldest
        unsent write was queued, minus the time since (0: write now)."""
        if self.defer_to is None or self.max_defer <= 0:
            return 0.0
        with self._lock:
            since = self._since.get(key)
        return max(0.0, since + self.max_defer - self.clock()) if since is not None else 0.0

    def _drain(self, key: Hashable) -> None:
        while True:
            left = self.deferral(key)
            if left > 0 and self.defer_to is not None:
                self.defer_to(left)
            with self._lock:
                self._since.pop(key, None)
                fn = self._pending.pop(key, None)
                if fn is None or self._closed:
                    self._running.discard(key)
                    self._idle.notify_all()
                    return
            try:
                fn()
            except ApiError as exc:
                self.failures += 1
                log.warning("write %s failed: %s", key, exc)
            except Exception:  # a bug in one write must not stop the others
                self.failures += 1
                log.exception("write %s failed", key)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued write ran (tests and shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def shutdown(self, timeout: float = 10.0) -> None:
        """Flush, then stop the workers; writes still queued after ``timeout`` are dropped."""
        self.flush(timeout)
        with self._lock:
            self._closed = True
            self._pending.clear()
            n = len(self._threads)
        for _ in range(n):
            self._queue.put(_STOP)


class EventRecorder:
    """core/v1 Events from ``component`` on ``host``; repeated identical events are suppressed."""

    def __init__(self, api: Any, writer: Writer, component: str = "volcano", host: str = "",
                 repeat_after: float = 600.0) -> None:
        self.api = api
        self.writer = writer
        self.component = component
        self.host = host
        self.repeat_after = repeat_after
        self._last: dict[tuple[str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.emitted = 0

    @staticmethod
    def _ident(ref: dict[str, Any]) -> str:
        return str(ref.get("uid") or f"{ref['kind']}/{ref.get('namespace', '')}/{ref['name']}")

    def recorded(self, obj: dict[str, Any], reason: str) -> bool:
        """Whether this recorder emitted an Event with ``reason`` about ``obj`` (within the last 100,000
        remembered (object, reason) pairs)."""
        ident = self._ident(object_ref(obj))
        with self._lock:
            return (ident, reason) in self._last

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> bool:
        """Record an event about ``obj``; False when an identical one was recorded recently."""
        ref = object_ref(obj)
        ident = self._ident(ref)
        now = time.monotonic()
        with self._lock:
            last = self._last.get((ident, reason))
            if last is not None and last[0] == message and now - last[1] < self.repeat_after:
                return False
            self._last[(ident, reason)] = (message, now)
            if len(self._last) > 100_000:  # forget the oldest half rather than grow without bound
                for k in sorted(self._last, key=lambda k: self._last[k][1])[:50_000]:
                    del self._last[k]
            self.emitted += 1
        ns = ref.get("namespace") or "default"
        # the name as client-go's recorder makes it (the object's name and the time in nanoseconds, in hex); the
        # body is built when the write runs, after the binds (binds first), with the time of this call
        at = time.time_ns()
        event_name = f"{ref['name']}.{at:x}"

        def write() -> None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at / 1e9))
            body = {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": event_name, "namespace": ns},
                "involvedObject": ref, "reason": reason, "message": message[:1024], "type": etype,
                "source": {"component": self.component, **({"host": self.host} if self.host else {})},
                "reportingComponent": self.component, "reportingInstance": self.host or self.component,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            }
            self.api.create(EVENT, body, ns)

        self.writer.submit(("event", ns, event_name), write)
        return True
