"""Status write-back (Volcano's ``StatusUpdater``, ``pkg/scheduler/cache/interface.go``: UpdatePodGroup,
UpdateQueueStatus, UpdatePodStatus; and ``cache.RecordJobStatusEvent`` / ``taskUnschedulable`` in
``cache/cache.go``).

A session's ``PodGroupStatus`` becomes the PodGroup object's status through ``framework.result.
podgroup_status_body`` (the simulator uses the same function), pending pods get ``PodScheduled=False/
Unschedulable`` (what cluster autoscalers look for), Queues get ``status.allocated``, and Events are recorded.
Every write runs in the background (``Writer``) and only when it changes something: what was sent and not yet
seen in an informer event is remembered (``pg_sent``, ``cond_sent``, ``queue_sent``), and a PodGroup with
nothing to write (no pending pods, same verdict, same job version) is skipped cheaply (``pg_quiet``).

Events per scheduled pod: the pod's ``Scheduled`` Event (``kube/binder.py``; Volcano's ``DefaultBinder`` in
``cache/cache.go``, kube-scheduler's ``Scheduled``), and for a PodGroup the Events of ``RecordJobStatusEvent``.
With ``one_pod_ready_events=False`` (the default) a PodGroup of one pod that is ready at its first try gets no
``Scheduled`` / "pod group is ready" Event: its pod's own ``Scheduled`` Event says the same, the PodGroup's
status says it too (phase ``Running``, condition ``Scheduled``), and a backlog of one-pod groups then costs one
Event POST per pod, as kube-scheduler's does, instead of two.  Gangs (more than one pod, or minMember above 1)
and any group that had an ``Unschedulable`` condition or Event get Volcano's ready Event as before
(``pyvolcano scheduler --podgroup-ready-events all``: every group, as Volcano).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from pyvolcano.api.job_info import JobInfo
from pyvolcano.api.types import PodGroupPhase, TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.framework.result import PodGroupStatus, QueueStatus, conditions_key, podgroup_status_body, same_status
from pyvolcano.framework.session import SCHEDULED, UNSCHEDULABLE
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.metrics import SchedulerMetrics
from pyvolcano.kube.objects import now_iso
from pyvolcano.kube.resources import POD, PODGROUP, QUEUE
from pyvolcano.kube.writer import EventRecorder, Writer


class StatusUpdater:
    def __init__(self, api: Any, cache: SchedulerCache, lock: threading.RLock, writer: Writer,
                 recorder: EventRecorder, metrics: SchedulerMetrics, one_pod_ready_events: bool = False) -> None:
        self.api = api
        self.cache = cache
        self.lock = lock
        self.writer = writer
        self.recorder = recorder
        self.metrics = metrics
        self.pg_sent: dict[str, dict[str, Any]] = {}
        #: PodGroups whose status write-back had nothing to do, with what that depended on: while it stays the same
        #: (no pending pods, same session verdict, same job and PodGroup versions), later sessions skip them
        self.pg_quiet: dict[str, tuple[Any, ...]] = {}
        #: the session status each quiet PodGroup was found quiet with: ``framework/result.py: apply`` does not
        #: hand that very object over again (a session reuses it while the job's verdict is unchanged)
        self.settled: dict[str, PodGroupStatus] = {}
        self.cond_sent: dict[str, str] = {}
        #: nominated nodes sent and not yet seen in an informer event
        self.nom_sent: dict[str, str] = {}
        self.queue_sent: dict[str, dict[str, str]] = {}
        self._stamp = ""
        self._unschedulable_tasks: dict[str, int] = {}
        #: send the "pod group is ready" Event for one-pod groups ready at their first try too (as Volcano)
        self.one_pod_ready_events = one_pod_ready_events

    # --- one session ---------------------------------------------------------------------------------
    def begin(self) -> None:
        """Before a session's result is applied (under the lock)."""
        self._stamp = now_iso()
        self._unschedulable_tasks = {}

    def end(self) -> None:
        """After it: the unschedulable-task gauges."""
        self.metrics.set_unschedulable(self._unschedulable_tasks)
        n = sum(self._unschedulable_tasks.values())
        if n:
            self.metrics.attempts.labels("unschedulable").inc(n)

    # --- ClusterWriter (under the lock) -------------------------------------------------------------------
    def update_podgroup_status(self, uid: str, st: PodGroupStatus) -> bool:
        pg = self.cache.podgroups.get(uid)
        job = self.cache.jobs.get(uid)
        if pg is None or job is None or pg.synthetic or pg.manifest is None:
            return False
        # a running gang that nothing happened to is most of a busy cluster: skip it cheaply (the cache's job
        # version moves with every change to its pods and to its PodGroup object)
        quiet = (st.phase, conditions_key(st.conditions), job.version, st.event)
        if self.pg_quiet.get(uid) == quiet and not st.nominated:
            return False
        old = dict(pg.manifest.get("status") or {})
        new = podgroup_status_body(old, st, self._stamp)
        if old.get("phase") != PodGroupPhase.Running and new["phase"] == PodGroupPhase.Running and job.creation:
            self.metrics.e2e_job.observe(max(0.0, time.time() - job.creation) * 1000)
        if not (same_status(new, old) or same_status(new, self.pg_sent.get(uid))):
            self.pg_sent[uid] = new
            self.cache.set_podgroup_phase(pg, PodGroupPhase(new["phase"]))
            self.writer.submit(("podgroup", uid), self._pg_writer(uid, pg.namespace, pg.name, new))
        if st.event is not None and not self._said_by_its_pod(job, st, new, pg.manifest):
            self.recorder.event(pg.manifest, *st.event)
        if uid not in self.pg_sent and not st.pod_conditions and not st.nominated:  # nothing in flight or waiting
            self.pg_quiet[uid] = quiet
            # a job that is not scheduled (``st.reason``: refused by enqueue, fit errors, an objection) is handed
            # over every session even when ``Session.close`` hands the same object again: the quiet check above,
            # against the cache's job version now, decides, as it did when such a status was rebuilt each session
            if not st.reason:
                self.settled[uid] = st
        else:
            self.unquiet(uid)
        if st.pod_conditions:
            self._unschedulable_tasks[uid] = len(st.pod_conditions)
        return True

    def _said_by_its_pod(self, job: JobInfo, st: PodGroupStatus, new: dict[str, Any], manifest: dict[str, Any]) -> bool:
        """Whether ``st.event`` is the ready Event of a one-pod group that was never unschedulable: the pod's
        ``Scheduled`` Event (sent by the binder) already tells the user what it would say."""
        if self.one_pod_ready_events or st.event is None or st.event[1] != SCHEDULED:
            return False
        if len(job.tasks) != 1 or job.min_available > 1:
            return False
        if any(c.get("type") == UNSCHEDULABLE for c in new.get("conditions") or []):
            return False  # "Unschedulable" is in its status: say that it is ready now, as Volcano does
        # a Warning Event said it could not be scheduled: then the ready Event closes that story
        return not self.recorder.recorded(manifest, UNSCHEDULABLE)

    def unquiet(self, uid: str) -> None:
        """The PodGroup has something to write again (a write in flight or failed, the object deleted)."""
        self.pg_quiet.pop(uid, None)
        self.settled.pop(uid, None)

    def pod_condition(self, key: str, message: str, nominated: str = "") -> None:
        """The pod's ``PodScheduled=False/Unschedulable`` condition and, with ``nominated``, its
        ``status.nominatedNodeName``: one status patch when either changed (Volcano's ``taskUnschedulable``)."""
        raw = self.cache.raw.get(("Pod", key))
        if raw is None:
            return
        # the node goes into every write while the pod does not show it (a queued write replaced by a later one
        # must not lose it); a write is needed for it only when it was not sent yet
        carry = bool(nominated) and (raw.get("status") or {}).get("nominatedNodeName") != nominated
        nominate = carry and self.nom_sent.get(key) != nominated
        same = self.cond_sent.get(key) == message
        if not same:
            for c in (raw.get("status") or {}).get("conditions") or []:
                if (c.get("type") == "PodScheduled" and c.get("status") == "False"
                        and c.get("reason") == "Unschedulable" and c.get("message") == message):
                    same = True
                    break
        if same and not nominate:
            return
        body: dict[str, Any] = {}
        if not same:
            self.cond_sent[key] = message
            body["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                   "message": message, "lastTransitionTime": self._stamp, "lastProbeTime": None}]
        if carry:
            self.nom_sent[key] = nominated
            body["nominatedNodeName"] = nominated
        ns, name = key.split("/", 1)

        def write() -> None:
            try:
                self.api.patch(POD, name, {"status": body}, ns, subresource="status", strategic=True)
            except ApiError as exc:
                with self.lock:
                    if not same and self.cond_sent.get(key) == message:
                        del self.cond_sent[key]
                    if carry and self.nom_sent.get(key) == nominated:
                        del self.nom_sent[key]
                if not exc.not_found:
                    raise

        self.writer.submit(("podcond", key), write)
        self.recorder.event(raw, "Warning", "FailedScheduling", message)

    def nominate(self, key: str, node: str) -> None:
        """``status.nominatedNodeName`` of a pipelined pod (its only status write here)."""
        raw = self.cache.raw.get(("Pod", key))
        if raw is None or not self._nominate_needed(key, raw, node):
            return
        self.nom_sent[key] = node
        ns, name = key.split("/", 1)

        def write() -> None:
            try:
                self.api.patch(POD, name, {"status": {"nominatedNodeName": node}}, ns, subresource="status",
                               strategic=True)
            except ApiError as exc:
                with self.lock:
                    if self.nom_sent.get(key) == node:
                        del self.nom_sent[key]
                if not exc.not_found:
                    raise

        self.writer.submit(("podnom", key), write)

    def _nominate_needed(self, key: str, raw: dict[str, Any], node: str) -> bool:
        """Not already the pod's nominated node, nor sent and not yet seen (``podNominatedNodeNameNeedUpdate``)."""
        return (raw.get("status") or {}).get("nominatedNodeName") != node and self.nom_sent.get(key) != node

    def update_queue_status(self, status: QueueStatus) -> None:
        """``status.allocated`` of a Queue object (Volcano's ``updateQueueStatus`` writes only that; the queue
        controller owns the PodGroup counts)."""
        name = status.name
        q = self.cache.queues.get(name)
        if q is None:
            return
        want = status.allocated
        have = ((q.manifest or {}).get("status") or {}).get("allocated")
        if have == want or self.queue_sent.get(name) == want:
            return
        self.queue_sent[name] = want
        self.writer.submit(("queue", name), self._queue_writer(name, want))

    def event(self, kind: str, key: str, etype: str, reason: str, message: str) -> None:
        raw = self.cache.raw.get((kind, key))
        if raw is not None:
            if kind == "Pod":
                t = self.cache.tasks.get(key)
                if t is not None and t.status != TaskStatus.Pending:
                    return
            self.recorder.event(raw, etype, reason, message)

    # --- the API calls -------------------------------------------------------------------------------------
    def _pg_writer(self, uid: str, ns: str, name: str, status: dict[str, Any]) -> Callable[[], None]:
        def write() -> None:
            try:
                # Volcano's PodGroup CRD has no status subresource: the status is part of the object
                self.api.patch(PODGROUP, name, {"status": status}, ns)
            except ApiError as exc:
                with self.lock:
                    self.unquiet(uid)
                    if self.pg_sent.get(uid) is status:
                        del self.pg_sent[uid]  # retry next session
                if not exc.not_found:
                    raise
        return write

    def _queue_writer(self, name: str, allocated: dict[str, str]) -> Callable[[], None]:
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
