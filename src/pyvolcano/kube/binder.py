"""Binding and evicting on the API server (Volcano's ``Binder`` and ``Evictor``, ``pkg/scheduler/cache/
interface.go``; ``defaultBinder.Bind`` and ``defaultEvictor.Evict`` in ``cache/cache.go``).

* a bind: the task becomes ``Binding`` in the cache at once (so the next session counts its resources) and is
  *assumed* until an informer event shows the pod's ``spec.nodeName``.  The ``pods/binding`` calls run on
  worker threads, so a slow API server never holds up the next session.  They start while the session that
  decided them still runs (``bind_now``, from ``Session.on_dispatch``), as Volcano's binder starts on each
  ``cache.AddBindTask``: on a backlog of 5,000 one-pod groups the first session takes seconds, and the binds
  no longer wait for its end.  A failed bind rolls the task back to
  what the pod object says (404: the pod is gone and leaves the cache; 409: the pod is re-read, e.g. another
  scheduler bound it) and the next session retries.  A pod is never bound twice: an assumed pod is never
  handed to the binder again, and the bind carries the pod's uid as a precondition.
* an eviction: the victim becomes ``Releasing`` and is evicted through the Eviction API (policy/v1).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job_info import TaskInfo
from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.metrics import SchedulerMetrics
from pyvolcano.kube.resources import POD
from pyvolcano.kube.writer import EventRecorder

if TYPE_CHECKING:
    from pyvolcano.kube.event_handlers import EventHandlers

log = logging.getLogger(__name__)

_TERMINAL = TaskStatus.Succeeded | TaskStatus.Failed | TaskStatus.Releasing


@dataclass
class Assumed:
    """A bind handed to the binder and not yet seen in an informer event."""

    node: str
    uid: str
    since: float
    bound: bool = False


class Binder:
    """Binds and evicts in the background; ``bind``/``evict`` are called under the cache lock while a session's
    result is applied, ``submit`` afterwards, outside the lock."""

    def __init__(self, api: Any, cache: SchedulerCache, lock: threading.RLock, recorder: EventRecorder,
                 metrics: SchedulerMetrics, stats: dict[str, int], workers: int,
                 may_schedule: Callable[[], bool]) -> None:
        self.api = api
        self.cache = cache
        self.lock = lock
        self.recorder = recorder
        self.metrics = metrics
        self.stats = stats
        self.may_schedule = may_schedule
        self.handlers: EventHandlers | None = None  # set by the scheduler once the handlers exist
        #: binds handed to the API server and not yet confirmed by the pod informer, oldest first (insertion order:
        #: ``expire_assumed`` stops at the first one that is young enough)
        self.assumed: dict[str, Assumed] = {}
        self.evicting: dict[str, str] = {}
        #: tasks of the running session whose bind already started (``bind_now``); ``bind`` skips them when the
        #: session's result is applied
        self.streamed: set[str] = set()
        self.workers = workers
        # plain worker threads on one queue: a ThreadPoolExecutor's Future and Condition per call cost more
        # Python CPU than the rest of a bind's bookkeeping, thousands of times per drain
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._binds: list[tuple[str, str, str, str, str, float]] = []
        #: per pod whose bind is pending, the annotations its Binding carries (``TaskInfo.pod_annotations``:
        #: deviceshare's GPUs); set when the bind is assumed, taken by the bind worker
        self._annotations: dict[str, dict[str, str]] = {}
        self._evicts: list[tuple[str, str, str, str, str, str]] = []
        self._inflight = 0
        self._inflight_cv = threading.Condition()

    def _resync(self, key: str) -> None:
        if self.handlers is not None:
            self.handlers.resync_pod(key)

    def _forget(self, key: str, uid: str) -> None:
        if self.handlers is not None:
            self.handlers.forget_pod(key, uid)

    # --- a session's decisions (under the lock) --------------------------------------------------------
    def bind(self, task: TaskInfo, node: str) -> None:
        if task.uid in self.streamed:
            return
        b = self._assume(task, node)
        if b is not None:
            self._binds.append(b)

    def _assume(self, task: TaskInfo, node: str) -> tuple[str, str, str, str, str, float] | None:
        """Mark the task Binding and assumed (under the lock); the bind's arguments, or None when the pod changed
        since the session's snapshot (the next session decides again)."""
        key = task.uid
        uid = (task.pod.get("metadata") or {}).get("uid") or ""
        cur = self.cache.tasks.get(key)
        if (key in self.assumed or cur is None or cur.status != TaskStatus.Pending
                or (cur.pod.get("metadata") or {}).get("uid", "") != uid):
            log.debug("not binding %s: it changed since the session's snapshot", key)
            return None
        self.cache.set_task_status(cur, TaskStatus.Binding, node)
        self.assumed[key] = Assumed(node, uid, time.monotonic())
        if task.pod_annotations:
            self._annotations[key] = dict(task.pod_annotations)
        return (key, task.namespace, task.name, uid, node, task.creation)

    def bind_now(self, task: TaskInfo) -> None:
        """A task the running session just dispatched (``Session.on_dispatch``, called outside the lock): assume
        it and start its bind at once, rather than when the session's result is applied."""
        with self.lock:
            self.streamed.add(task.uid)
            b = self._assume(task, task.node_name)
        if b is not None:
            self._submit(self._bind, *b)

    def session_applied(self) -> None:
        """The session's result was applied: its streamed binds need no more skipping (under the lock)."""
        self.streamed.clear()

    def evict(self, task: TaskInfo, reason: str) -> None:
        key = task.uid
        cur = self.cache.tasks.get(key)
        if cur is None or key in self.evicting or cur.status & _TERMINAL:
            return
        uid = (cur.pod.get("metadata") or {}).get("uid") or ""
        self.cache.set_task_status(cur, TaskStatus.Releasing)
        self.evicting[key] = uid
        self._evicts.append((key, cur.namespace, cur.name, uid, reason, cur.job))

    def expire_assumed(self, ttl: float) -> None:
        """Drop binds the informers never confirmed within ``ttl`` seconds (a safety net; under the lock)."""
        now = time.monotonic()
        old: list[tuple[str, Assumed]] = []
        for key, a in self.assumed.items():  # oldest first: stop at the first young one
            if now - a.since <= ttl:
                break
            old.append((key, a))
        for key, a in old:
            log.warning("bind of %s to %s never showed up in the pod informer; resyncing", key, a.node)
            del self.assumed[key]
            self._resync(key)

    # --- the API calls (outside the lock) -------------------------------------------------------------
    def submit(self) -> int:
        """Start the API calls collected since the last ``submit``; returns the number of evictions."""
        with self.lock:
            binds, self._binds = self._binds, []
            evicts, self._evicts = self._evicts, []
        for b in binds:
            self._submit(self._bind, *b)
        for e in evicts:
            self._submit(self._evict, *e)
        return len(evicts)

    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._inflight_cv:
            if self._closed:
                return
            self._inflight += 1
            if len(self._threads) < self.workers and self._inflight > len(self._threads):
                t = threading.Thread(target=self._work, name=f"bind_{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
        self._queue.put((fn, args))

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, args = item
            try:
                if not self._closed:
                    fn(*args)
            except Exception:  # a bug in one call must not end the worker
                log.exception("bind worker: %s failed", getattr(fn, "__name__", fn))
            finally:
                with self._inflight_cv:
                    self._inflight -= 1
                    if self._inflight == 0:
                        self._inflight_cv.notify_all()

    def wait(self, timeout: float = 10.0) -> bool:
        """Wait for every issued bind and eviction to finish (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._inflight_cv:
            while self._inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._inflight_cv.wait(left)
        return True

    def shutdown(self) -> None:
        """Stop the workers; calls still queued are dropped (as a cancelled executor's would be)."""
        with self._inflight_cv:
            self._closed = True
            n = len(self._threads)
        for _ in range(n):
            self._queue.put(None)

    def _bind(self, key: str, ns: str, name: str, uid: str, node: str, created: float) -> None:
        annotations = self._annotations.pop(key, None)
        if not self.may_schedule():  # deposed between the session and this bind: leave it to the new leader
            with self.lock:
                self.assumed.pop(key, None)
                self._resync(key)
            return
        try:
            if annotations:
                self.api.bind(ns, name, uid, node, annotations)
            else:
                self.api.bind(ns, name, uid, node)
        except ApiError as exc:
            self.stats["bind_errors"] += 1
            self.metrics.attempts.labels("error").inc()
            log.warning("bind %s to %s failed: %s", key, node, exc)
            self._bind_failed(key, ns, name, uid, exc)
            return
        self.stats["binds"] += 1
        log.debug("bound %s to %s", key, node)
        self.metrics.attempts.labels("scheduled").inc()
        if created:
            self.metrics.task.observe(max(0.0, time.time() - created) * 1000)
        # no cache lock here: two dict reads and a flag are atomic under the GIL, and a session holding the
        # lock (its snapshot, its apply) would otherwise stall every bind worker at this point
        a = self.assumed.get(key)
        if a is not None and a.uid == uid:
            a.bound = True
        raw = self.cache.raw.get(("Pod", key))
        pod = raw or {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": uid}}
        self.recorder.event(pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}")

    def _bind_failed(self, key: str, ns: str, name: str, uid: str, exc: ApiError) -> None:
        with self.lock:
            a = self.assumed.get(key)
            if a is not None and a.uid == uid:
                del self.assumed[key]
            if exc.not_found:
                self._forget(key, uid)
                return
            self._resync(key)
        if exc.conflict and self.handlers is not None:  # bound elsewhere or recreated: read the pod now
            try:
                self.handlers.on_event("MODIFIED", self.api.get(POD, name, ns))
            except ApiError as exc2:
                if exc2.not_found:
                    with self.lock:
                        self._forget(key, uid)

    def _evict(self, key: str, ns: str, name: str, uid: str, reason: str, job_uid: str) -> None:
        try:
            self.api.evict(ns, name, uid)
        except ApiError as exc:
            self.stats["evict_errors"] += 1
            log.warning("evict %s failed: %s", key, exc)
            with self.lock:
                if self.evicting.get(key) == uid:
                    del self.evicting[key]
                if exc.not_found:
                    self._forget(key, uid)
                else:
                    self._resync(key)
            return
        self.stats["evictions"] += 1
        log.info("evicted %s: %s", key, reason)
        with self.lock:
            pg = self.cache.podgroups.get(job_uid)
            target = (pg.manifest if pg is not None and pg.manifest else None) or self.cache.raw.get(("Pod", key))
        if target:
            self.recorder.event(target, "Normal", "Evict", f"Evict pod {key}: {reason}")
