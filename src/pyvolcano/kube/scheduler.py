"""The scheduler on a real cluster: informers feed a ``SchedulerCache``; every period one session runs through
``framework.cycle.run_session`` (the code path of ``pyvolcano cycle`` and the simulator) and its decisions are
applied to the API server.

Applying a ``SessionResult``:

* binds: the task becomes ``Binding`` in the cache at once (so the next session counts its resources) and is
  *assumed* until an informer event shows the pod's ``spec.nodeName``.  The ``pods/binding`` calls run on a
  thread pool, so a slow API server never holds up the next session.  A failed bind rolls the task back to
  what the pod object says (404: the pod is gone and leaves the cache; 409: the pod is re-read, e.g. another
  scheduler bound it) and the next session retries.  A pod is never bound twice: an assumed pod is never
  handed to the binder again, and the bind carries the pod's uid as a precondition.
* evictions: the victim becomes ``Releasing`` and is evicted through the Eviction API (policy/v1).
* status: PodGroup phase/conditions/counts, the ``PodScheduled=False/Unschedulable`` pod condition (what
  cluster autoscalers look for), Queue ``status.allocated`` and Events are written in the background, only
  when they change.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.types import DEFAULT_QUEUE, PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import SchedulerCache, Snapshot
from pyvolcano.conf.loader import SchedulerConf, load_conf, load_conf_file
from pyvolcano.errors import ConfigError
from pyvolcano.framework.cycle import run_session
from pyvolcano.framework.gc_tuning import quiet_gc
from pyvolcano.framework.session import SessionResult
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.leader import LeaderElector
from pyvolcano.kube.metrics import SchedulerMetrics
from pyvolcano.kube.objects import now_iso, resource_list
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import NODE, PDB, POD, PODGROUP, PRIORITYCLASS, QUEUE, RESOURCEQUOTA, Resource
from pyvolcano.kube.writer import EventRecorder, Writer

log = logging.getLogger(__name__)

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"
_TERMINAL = TaskStatus.Succeeded | TaskStatus.Failed | TaskStatus.Releasing


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


@dataclass
class SchedulerOptions:
    scheduler_name: str = "volcano"
    period: float = 1.0
    node_selector: str = ""
    bind_workers: int = 16
    status_workers: int = 4
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


class ConfFile:
    """The scheduler conf file, re-read when its content changes (a ConfigMap update swaps a symlink, so the
    content, not the mtime of one path, is what is compared).  A broken new version is reported once and the
    last good conf stays in force."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.conf: SchedulerConf = load_conf_file(path)
        self._digest = self._read_digest()[1] if path else ""
        self._bad = ""
        self.reloads = 0

    def _read_digest(self) -> tuple[str, str]:
        text = Path(self.path).read_text() if self.path else ""
        return text, hashlib.sha256(text.encode()).hexdigest()

    def poll(self) -> bool:
        """True when a changed, valid conf was loaded."""
        if not self.path:
            return False
        try:
            text, digest = self._read_digest()
        except OSError as exc:
            if self._bad != str(exc):
                self._bad = str(exc)
                log.error("cannot read scheduler conf %s: %s; keeping the previous conf", self.path, exc)
            return False
        if digest == self._digest or digest == self._bad:
            return False
        try:
            conf = load_conf(text, self.path)
        except ConfigError as exc:
            self._bad = digest
            log.error("scheduler conf %s changed but is invalid, keeping the previous conf: %s", self.path, exc)
            return False
        self.conf, self._digest, self._bad = conf, digest, ""
        self.reloads += 1
        log.info("scheduler conf %s reloaded: actions %s", self.path, ", ".join(conf.actions))
        return True


@dataclass
class Assumed:
    """A bind handed to the binder and not yet seen in an informer event."""

    node: str
    uid: str
    since: float
    bound: bool = False


class _LockedCache:
    """What ``run_session`` needs from a cache: a snapshot, taken under the informers' lock."""

    def __init__(self, owner: KubeScheduler) -> None:
        self.owner = owner

    def snapshot(self) -> Snapshot:
        with self.owner.lock:
            self.owner.cache.now = time.time()
            return self.owner.cache.snapshot()


def _same_status(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """PodGroup status equality ignoring condition times and transition ids (as Volcano compares)."""
    if a is None or b is None:
        return False

    def norm(s: dict[str, Any]) -> tuple[Any, ...]:
        conds = tuple(sorted((c.get("type"), c.get("status"), c.get("reason") or "", c.get("message") or "")
                             for c in s.get("conditions") or []))
        return (s.get("phase") or "Pending", int(s.get("running") or 0), int(s.get("succeeded") or 0),
                int(s.get("failed") or 0), conds)

    return norm(a) == norm(b)


def _conditions_key(conds: list[dict[str, Any]] | None) -> tuple[Any, ...]:
    return tuple((c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in conds or ())


def _merge_conditions(old: list[dict[str, Any]], new: list[dict[str, Any]], stamp: str) -> list[dict[str, Any]]:
    """Volcano's UpdatePodGroupCondition: replace the condition of each type, keeping its time if unchanged."""
    out = [dict(c) for c in old]
    for c in new:
        c = {k: v for k, v in c.items() if v is not None}
        for i, o in enumerate(out):
            if o.get("type") == c.get("type"):
                same = all(o.get(k) == c.get(k) for k in ("status", "reason", "message"))
                c["lastTransitionTime"] = o.get("lastTransitionTime", stamp) if same else stamp
                out[i] = c
                break
        else:
            c["lastTransitionTime"] = stamp
            out.append(c)
    return out


class KubeScheduler:
    def __init__(self, api: Any, conf: ConfFile, options: SchedulerOptions | None = None,
                 metrics: SchedulerMetrics | None = None, elector: LeaderElector | None = None) -> None:
        self.api = api
        self.conf = conf
        self.opts = options or SchedulerOptions()
        self.metrics = metrics or SchedulerMetrics()
        self.elector = elector
        self.cache = SchedulerCache(self.opts.scheduler_name, reuse_clones=self.opts.reuse_clones)
        self.lock = threading.RLock()
        self.assumed: dict[str, Assumed] = {}
        self.evicting: dict[str, str] = {}
        self.pg_sent: dict[str, dict[str, Any]] = {}
        #: PodGroups whose status write-back had nothing to do, with what that depended on: while it stays the same
        #: (no pending pods, same session verdict, same job and PodGroup versions), later sessions skip them
        self.pg_quiet: dict[str, tuple[Any, ...]] = {}
        self.cond_sent: dict[str, str] = {}
        self.queue_sent: dict[str, dict[str, str]] = {}
        self._problems_seen: set[str] = set()
        self.binder = ThreadPoolExecutor(self.opts.bind_workers, thread_name_prefix="bind")
        self.writer = Writer(self.opts.status_workers, "status")
        self.recorder = EventRecorder(api, self.writer, "volcano", self.opts.identity)
        self.stats = {"binds": 0, "bind_errors": 0, "evictions": 0, "evict_errors": 0, "sessions": 0}
        self.heartbeat = time.monotonic()
        self.last_result: SessionResult | None = None
        self._inflight = 0
        self._inflight_cv = threading.Condition()
        self._stop = threading.Event()
        self._leading = False
        #: called when leadership is lost after having been held (the command exits, as Volcano does)
        self.on_deposed: Any = None
        sel = self.opts.node_selector
        wt = self.opts.watch_timeout

        def refl(res: Resource, label_selector: str = "") -> Reflector:
            return Reflector(api, res, self.on_event, label_selector=label_selector, watch_timeout=wt)

        # order matters at start: priorities and queues before the pods and groups that refer to them
        self.first = [refl(PRIORITYCLASS), refl(QUEUE), refl(NODE, sel)]
        self.second = [refl(PODGROUP), refl(POD), refl(PDB), refl(RESOURCEQUOTA)]
        self.reflectors = self.first + self.second

    # --- informer events -------------------------------------------------------------------------------
    def on_event(self, typ: str, obj: dict[str, Any]) -> None:
        kind = obj.get("kind", "")
        with self.lock:
            if typ == "DELETED":
                self.cache.delete(obj)
                key = self.cache._key(obj)[1]
                if kind == "Pod":
                    self.assumed.pop(key, None)
                    self.evicting.pop(key, None)
                    self.cond_sent.pop(key, None)
                elif kind == "PodGroup":
                    self.pg_sent.pop(key, None)
                    self.pg_quiet.pop(key, None)
                elif kind == "Queue":
                    self.queue_sent.pop(key, None)
            elif kind == "Pod":
                self._upsert_pod(obj)
            else:
                self.cache.upsert(obj)
                if kind == "PodGroup":
                    self._reapply_pg(obj)
                elif kind == "PriorityClass":  # a PodGroup's priority is resolved from its class on upsert
                    for (k, _), raw in list(self.cache.raw.items()):
                        if k == "PodGroup" and (raw.get("spec") or {}).get("priorityClassName") == \
                                obj["metadata"]["name"]:
                            self.cache.upsert(raw)
            self._report_problems()

    def _upsert_pod(self, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        key = f"{md.get('namespace') or 'default'}/{md.get('name')}"
        self.cache.upsert(pod)
        uid = md.get("uid") or ""
        gone = bool(md.get("deletionTimestamp"))
        a = self.assumed.get(key)
        if a is not None:
            if a.uid != uid or (pod.get("spec") or {}).get("nodeName") or gone:
                del self.assumed[key]  # confirmed bound, or the pod we decided about no longer exists
            else:
                t = self.cache.tasks.get(key)
                if t is not None and t.status == TaskStatus.Pending:
                    self.cache.set_task_status(t, TaskStatus.Binding, a.node)
        e = self.evicting.get(key)
        if e is not None:
            if e != uid or gone:
                del self.evicting[key]
            else:
                t = self.cache.tasks.get(key)
                if t is not None and t.status & (TaskStatus.Running | TaskStatus.Bound):
                    self.cache.set_task_status(t, TaskStatus.Releasing)

    def _reapply_pg(self, obj: dict[str, Any]) -> None:
        """Keep the phase we wrote until the informer shows it (a stale event must not undo Inqueue)."""
        key = self.cache._key(obj)[1]
        sent = self.pg_sent.get(key)
        if sent is None:
            return
        if _same_status(obj.get("status") or {}, sent):
            del self.pg_sent[key]
            return
        pg = self.cache.podgroups.get(key)
        if pg is not None:
            pg.phase = PodGroupPhase(sent["phase"])

    def _report_problems(self) -> None:
        if not self.cache.problems:
            return
        for p in self.cache.problems:
            if p not in self._problems_seen:
                self._problems_seen.add(p)
                log.warning("skipped object: %s", p)
        self.cache.problems.clear()
        if len(self._problems_seen) > 10_000:
            self._problems_seen.clear()

    def _resync_pod(self, key: str) -> None:
        """Rebuild one task from its pod object (Volcano's resyncTask), dropping our in-memory decision."""
        raw = self.cache.raw.get(("Pod", key))
        if raw is not None:
            self._upsert_pod(raw)

    def _forget_pod(self, key: str, uid: str) -> None:
        raw = self.cache.raw.get(("Pod", key))
        if raw is not None and (raw.get("metadata") or {}).get("uid") == uid:
            self.cache.delete(raw)

    # --- startup -----------------------------------------------------------------------------------------
    def start_informers(self, timeout: float | None = None) -> bool:
        """Start the reflectors and wait for their first lists, in dependency order."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for group in (self.first, self.second):
            for r in group:
                r.start()
            for r in group:
                while not r.synced.wait(1.0):
                    if self._stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                        return False
                    log.info("waiting for the %s informer to sync", r.res)
        return True

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
        if not self.start_informers():
            return
        log.info("informers synced: %d nodes, %d pods, %d podgroups, %d queues", len(self.cache.nodes),
                 len(self.cache.tasks) + len(self.cache.other_tasks), len(self.cache.podgroups),
                 len(self.cache.queues))
        with quiet_gc():
            self._loop()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            if self.may_schedule:
                if not self._leading:
                    self._leading = True
                    self.ensure_default_queue()
                try:
                    self.run_once()
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

    def stop(self) -> None:
        self._stop.set()
        for r in self.reflectors:
            r.stop()
        self.wait_binds(10)
        self.binder.shutdown(wait=False, cancel_futures=True)
        self.writer.shutdown(5)
        if self.elector is not None:  # its loop releases the Lease once it sees the stop: wait for that
            self.elector.join(self.elector.retry_period + 15)

    def healthy(self) -> tuple[bool, str]:
        dead = [str(r.res) for r in self.reflectors if r._thread is not None and not r.alive]
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
        with self.lock:
            self._expire_assumed()
            c, cache_gauge = self.cache, self.metrics.cache_objects
            for kind, n in (("pods", len(c.tasks)), ("other_pods", len(c.other_tasks)), ("nodes", len(c.nodes)),
                            ("podgroups", len(c.podgroups)), ("queues", len(c.queues))):
                cache_gauge.labels(kind).set(n)
        result = run_session(_LockedCache(self), self.conf.conf)  # type: ignore[arg-type]
        self.apply(result)
        log.debug("session %d: %d binds, %d evictions, %d unschedulable jobs in %.1f ms", self.stats["sessions"],
                  len(result.binds), len(result.evictions), len(result.unschedulable),
                  (time.perf_counter() - t0) * 1000)
        self.stats["sessions"] += 1
        self.last_result = result
        m = self.metrics
        m.sessions.inc()
        m.e2e.observe((time.perf_counter() - t0) * 1000)
        for name, sec in result.action_seconds.items():
            m.action.labels(name).observe(sec * 1000)
        for (name, when), sec in result.plugin_seconds.items():
            m.plugin.labels(name, when).observe(sec * 1000)
        for r in self.reflectors:
            m.relists.labels(str(r.res)).set(r.lists)
        return result

    def _expire_assumed(self) -> None:
        now = time.monotonic()
        for key, a in list(self.assumed.items()):
            if now - a.since > self.opts.assume_ttl:
                log.warning("bind of %s to %s never showed up in the pod informer; resyncing", key, a.node)
                del self.assumed[key]
                self._resync_pod(key)

    # --- applying a session --------------------------------------------------------------------------
    def apply(self, result: SessionResult) -> None:
        now = time.monotonic()
        binds: list[tuple[str, str, str, str, str, float]] = []
        evicts: list[tuple[str, str, str, str, str, str]] = []
        with self.lock:
            for task in result.bind_tasks:
                key, node = task.uid, task.node_name
                uid = (task.pod.get("metadata") or {}).get("uid") or ""
                cur = self.cache.tasks.get(key)
                if (key in self.assumed or cur is None or cur.status != TaskStatus.Pending
                        or (cur.pod.get("metadata") or {}).get("uid", "") != uid):
                    log.debug("not binding %s: it changed since the session's snapshot", key)
                    continue
                self.cache.set_task_status(cur, TaskStatus.Binding, node)
                self.assumed[key] = Assumed(node, uid, now)
                binds.append((key, task.namespace, task.name, uid, node, task.creation))
            for ev in result.evictions:
                key = ev.task.uid
                cur = self.cache.tasks.get(key)
                if cur is None or key in self.evicting or cur.status & _TERMINAL:
                    continue
                uid = (cur.pod.get("metadata") or {}).get("uid") or ""
                self.cache.set_task_status(cur, TaskStatus.Releasing)
                self.evicting[key] = uid
                evicts.append((key, cur.namespace, cur.name, uid, ev.reason, cur.job))
            self._write_status(result)
        for b in binds:
            self._submit(self._bind, *b)
        for e in evicts:
            self._submit(self._evict, *e)
        if evicts:
            self.metrics.preemption_attempts.inc()
        self.metrics.victims.set(len(evicts))

    def _submit(self, fn: Any, *args: Any) -> None:
        with self._inflight_cv:
            self._inflight += 1

        def run() -> None:
            try:
                fn(*args)
            finally:
                with self._inflight_cv:
                    self._inflight -= 1
                    self._inflight_cv.notify_all()

        self.binder.submit(run)

    def wait_binds(self, timeout: float = 10.0) -> bool:
        """Wait for every issued bind and eviction to finish (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._inflight_cv:
            while self._inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._inflight_cv.wait(left)
        return True

    def _bind(self, key: str, ns: str, name: str, uid: str, node: str, created: float) -> None:
        if not self.may_schedule:  # deposed between the session and this bind: leave it to the new leader
            with self.lock:
                self.assumed.pop(key, None)
                self._resync_pod(key)
            return
        try:
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
        with self.lock:
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
                self._forget_pod(key, uid)
                return
            self._resync_pod(key)
        if exc.conflict:  # bound elsewhere or recreated: read the pod now rather than wait for the watch
            try:
                self.on_event("MODIFIED", self.api.get(POD, name, ns))
            except ApiError as exc2:
                if exc2.not_found:
                    with self.lock:
                        self._forget_pod(key, uid)

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
                    self._forget_pod(key, uid)
                else:
                    self._resync_pod(key)
            return
        self.stats["evictions"] += 1
        log.info("evicted %s: %s", key, reason)
        with self.lock:
            pg = self.cache.podgroups.get(job_uid)
            target = (pg.manifest if pg is not None and pg.manifest else None) or self.cache.raw.get(("Pod", key))
        if target:
            self.recorder.event(target, "Normal", "Evict", f"Evict pod {key}: {reason}")

    # --- status write-back -------------------------------------------------------------------------------
    def _write_status(self, result: SessionResult) -> None:
        """Queue PodGroup/pod/Queue status writes and events for what changed (called under the lock)."""
        stamp = now_iso()
        unschedulable_tasks: dict[str, int] = {}
        for uid, st in result.podgroups.items():
            pg = self.cache.podgroups.get(uid)
            job = self.cache.jobs.get(uid)
            if pg is None or job is None or pg.synthetic or pg.manifest is None:
                continue
            # a running gang that nothing happened to is most of a busy cluster: skip it cheaply (the cache's
            # job version moves with every change to its pods and to its PodGroup object)
            quiet = (st["phase"], _conditions_key(st.get("conditions")), job.version, uid in result.unschedulable)
            if self.pg_quiet.get(uid) == quiet:
                continue
            old = dict(pg.manifest.get("status") or {})
            new = {"phase": st["phase"],
                   "conditions": _merge_conditions(old.get("conditions") or [], st.get("conditions") or [], stamp),
                   "running": job.count(TaskStatus.Running), "succeeded": job.count(TaskStatus.Succeeded),
                   "failed": job.count(TaskStatus.Failed)}
            if old.get("phase") != PodGroupPhase.Running and new["phase"] == PodGroupPhase.Running and job.creation:
                self.metrics.e2e_job.observe(max(0.0, time.time() - job.creation) * 1000)
            if not (_same_status(new, old) or _same_status(new, self.pg_sent.get(uid))):
                self.pg_sent[uid] = new
                pg.phase = PodGroupPhase(new["phase"])
                self.writer.submit(("podgroup", uid), self._pg_writer(uid, pg.namespace, pg.name, new))
            sjob = result.jobs.get(uid)
            pending = [t for t in (sjob or job).tasks.values() if t.status == TaskStatus.Pending and not t.sch_gated]
            if uid in result.unschedulable or (pending and new["phase"] != PodGroupPhase.Running):
                msg = result.unschedulable.get(uid) or (sjob.job_fit_errors if sjob else "") or \
                    ALL_NODES_UNAVAILABLE
                self.recorder.event(pg.manifest, "Warning", "Unschedulable", msg)
            elif new["phase"] == PodGroupPhase.Running:
                self.recorder.event(pg.manifest, "Normal", "Scheduled", "pod group is ready")
            if uid not in self.pg_sent and not pending:  # nothing in flight, nothing waiting: quiet until it changes
                self.pg_quiet[uid] = quiet
            else:
                self.pg_quiet.pop(uid, None)
            if pending:
                unschedulable_tasks[uid] = len(pending)
                base = result.unschedulable.get(uid) or (sjob.job_fit_errors if sjob else "") or \
                    ALL_NODES_UNAVAILABLE
                for t in pending:
                    fe = sjob.nodes_fit_errors.get(t.uid) if sjob else None
                    self._pod_unschedulable(t.uid, str(fe) if fe else base, stamp)
        for uid, why in result.skipped.items():
            job = self.cache.jobs.get(uid)
            for t in (job.tasks.values() if job else ()):
                raw = self.cache.raw.get(("Pod", t.uid))
                if raw is not None and t.status == TaskStatus.Pending:
                    self.recorder.event(raw, "Warning", "FailedScheduling", why)
        self.metrics.set_unschedulable(unschedulable_tasks)
        n_unsched = sum(unschedulable_tasks.values())
        if n_unsched:
            self.metrics.attempts.labels("unschedulable").inc(n_unsched)
        self._write_queue_status()

    def _pg_writer(self, uid: str, ns: str, name: str, status: dict[str, Any]) -> Any:
        def write() -> None:
            try:
                # Volcano's PodGroup CRD has no status subresource: the status is part of the object
                self.api.patch(PODGROUP, name, {"status": status}, ns)
            except ApiError as exc:
                with self.lock:
                    self.pg_quiet.pop(uid, None)
                    if self.pg_sent.get(uid) is status:
                        del self.pg_sent[uid]  # retry next session
                if not exc.not_found:
                    raise
        return write

    def _pod_unschedulable(self, key: str, message: str, stamp: str) -> None:
        raw = self.cache.raw.get(("Pod", key))
        if raw is None or self.cond_sent.get(key) == message:
            return
        for c in (raw.get("status") or {}).get("conditions") or []:
            if (c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
                    and c.get("message") == message):
                return
        self.cond_sent[key] = message
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                "lastTransitionTime": stamp, "lastProbeTime": None}
        ns, name = key.split("/", 1)

        def write() -> None:
            try:
                self.api.patch(POD, name, {"status": {"conditions": [cond]}}, ns, subresource="status",
                               strategic=True)
            except ApiError as exc:
                with self.lock:
                    if self.cond_sent.get(key) == message:
                        del self.cond_sent[key]
                if not exc.not_found:
                    raise

        self.writer.submit(("podcond", key), write)
        self.recorder.event(raw, "Warning", "FailedScheduling", message)

    def _write_queue_status(self) -> None:
        """``status.allocated`` of every Queue object: the resources its jobs hold (incl. binds in flight)."""
        res = self.cache.res
        alloc: dict[str, np.ndarray] = {}
        for job in self.cache.jobs.values():
            if job.podgroup is not None:
                alloc[job.queue] = alloc.get(job.queue, res.zeros()) + job.allocated
        for name, q in self.cache.queues.items():
            want = resource_list(res, alloc.get(name, res.zeros()))
            have = ((q.manifest or {}).get("status") or {}).get("allocated")
            if have == want or self.queue_sent.get(name) == want:
                continue
            self.queue_sent[name] = want
            self.writer.submit(("queue", name), self._queue_writer(name, want))

    def _queue_writer(self, name: str, allocated: dict[str, str]) -> Any:
        def write() -> None:
            try:
                self.api.patch(QUEUE, name, {"status": {"allocated": allocated}}, subresource="status")
            except ApiError as exc:
                with self.lock:
                    if self.queue_sent.get(name) is allocated:
                        del self.queue_sent[name]
                if not exc.not_found:
                    raise
        return write
