"""``controllers.api.ClusterAPI`` on a real API server: what the job controller's calls mean on a cluster.

The job controller was written for the simulator, where a deleted pod is gone at once.  On a cluster a pod
being deleted lingers until its kubelet finishes it, so a pod re-created under the same name (a restarted job,
a replaced evicted pod) would collide with its predecessor: such a create is parked and done as soon as the
old pod is gone.  Deletions the controller itself asks for are remembered, so the informer does not mistake
them for evictions.  Pods get the job's ``env``/``svc`` plugins applied, PodGroups an owner reference to their
Job (so garbage collection removes them with it).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from typing import Any

from pyvolcano.controllers.cronjob import running_duration
from pyvolcano.kube import job_plugins
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.objects import now_iso, owner_ref
from pyvolcano.kube.resources import (
    CONFIGMAP,
    CRONJOB,
    JOBFLOW,
    JOBTEMPLATE,
    NETWORKPOLICY,
    POD,
    PODGROUP,
    QUEUE,
    SECRET,
    SERVICE,
    VCJOB,
    Resource,
)
from pyvolcano.kube.writer import EventRecorder

log = logging.getLogger(__name__)

KINDS: dict[str, Resource] = {"Pod": POD, "PodGroup": PODGROUP, "Job": VCJOB, "Queue": QUEUE,
                              "ConfigMap": CONFIGMAP, "Service": SERVICE, "Secret": SECRET,
                              "NetworkPolicy": NETWORKPOLICY,
                              "CronJob": CRONJOB, "JobFlow": JOBFLOW, "JobTemplate": JOBTEMPLATE}
_STATUS_SUBRESOURCE = {"Job", "Queue", "Pod", "CronJob", "JobFlow", "JobTemplate"}


#: the phases Volcano's ``killJob``/``killTarget`` write (``state/*.go``); a kill also writes Completed or Failed
#: reached from elsewhere than Pending or Running (Completing, Restarting, or a finished phase again: a finished
#: Job is killed on each later event, ``state/finished.go``) and Pending after Restarting
_KILL_PHASES = frozenset({"Restarting", "Aborting", "Aborted", "Terminating", "Terminated", "Completing"})
_SYNC_FROM = frozenset({"", "Pending", "Running"})


def _by_kill(phase: str, was: str) -> bool:
    return (phase in _KILL_PHASES or (phase in ("Completed", "Failed") and was not in _SYNC_FROM)
            or (phase == "Pending" and was == "Restarting"))


def _stamp_transition(old: dict[str, Any], new: dict[str, Any], created: Any = None,
                      admitted: Callable[[], bool] | None = None) -> dict[str, Any]:
    """A Job status with ``state.lastTransitionTime``: now when the phase changes, else the time it had (Volcano's
    syncJob stamps it; ``ttlSecondsAfterFinished`` counts from it); and ``runningDuration`` as Volcano's job
    controller leaves it (``job_controller_actions.go``): a kill's write (``killPods``) sets it to that time minus
    the Job's ``creationTimestamp``; ``syncJob``'s write with an admitted PodGroup (``admitted()``) builds a new
    status without it; its early write while the PodGroup is Pending keeps the one there was."""
    state = dict(new.get("state") or {})
    before = old.get("state") or {}
    if not state.get("lastTransitionTime"):
        if before.get("phase") == state.get("phase") and before.get("lastTransitionTime"):
            state["lastTransitionTime"] = before["lastTransitionTime"]
        else:
            state["lastTransitionTime"] = now_iso()
    out = {k: v for k, v in new.items() if k != "runningDuration"}
    out["state"] = state
    if _by_kill(state.get("phase") or "", before.get("phase") or ""):
        duration = running_duration(created, state["lastTransitionTime"])
    elif admitted is not None and admitted():
        duration = None
    else:
        duration = old.get("runningDuration")
    if duration:
        out["runningDuration"] = duration
    return out


class KubeClusterAPI:
    """Implements ``ClusterAPI`` (create, delete, get, update_status, event) with a ``KubeClient``."""

    def __init__(self, api: Any, recorder: EventRecorder, jobs: dict[str, dict[str, Any]] | None = None) -> None:
        self.api = api
        self.recorder = recorder
        #: the Job objects by ``ns/name`` (kept by the controller's informer) for plugins and owner references
        self.jobs = jobs if jobs is not None else {}
        self.lock = threading.Lock()
        #: (namespace, name) of pods whose creation waits for a predecessor of the same name to go away
        self.parked: dict[tuple[str, str], dict[str, Any]] = {}
        #: uids of pods the controller deleted (their deletion is not an eviction)
        self.deleted_uids: set[str] = set()
        self.creates = 0

    def _res(self, kind: str) -> Resource:
        try:
            return KINDS[kind]
        except KeyError:
            raise ValueError(f"kind {kind!r} is not handled by the controller") from None

    # --- ClusterAPI ------------------------------------------------------------------------------------
    def create(self, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        kind = obj.get("kind", "")
        res = self._res(kind)
        md = obj.setdefault("metadata", {})
        ns = md.get("namespace") or "default"
        md.pop("creationTimestamp", None)
        if kind in ("Pod", "PodGroup"):
            job = self.jobs.get(f"{ns}/{self._job_name(obj)}")
            if job is not None:
                md["ownerReferences"] = [owner_ref(job)]
                if kind == "Pod":
                    job_plugins.mutate_pod(job, obj)
        if kind == "Pod":
            obj.pop("status", None)
        self._create(res, obj, ns)

    def _job_name(self, obj: dict[str, Any]) -> str:
        md = obj["metadata"]
        if obj["kind"] == "PodGroup":
            return md["name"]
        return (md.get("labels") or {}).get("volcano.sh/job-name") or ""

    def _create(self, res: Resource, obj: dict[str, Any], ns: str) -> None:
        name = obj["metadata"]["name"]
        try:
            self.api.create(res, obj, ns)
            self.creates += 1
        except ApiError as exc:
            if not exc.conflict:
                raise
            if res != POD:
                return  # already there (a restarted controller re-creating its PodGroup): nothing to do
            try:
                old = self.api.get(POD, name, ns)
            except ApiError as exc2:
                if exc2.not_found:  # gone in the meantime
                    self.api.create(res, obj, ns)
                    return
                raise
            if old["metadata"].get("deletionTimestamp") or old["metadata"].get("uid") in self.deleted_uids:
                with self.lock:
                    self.parked[(ns, name)] = obj
                log.info("pod %s/%s still terminating: it is re-created when it is gone", ns, name)

    def pod_gone(self, ns: str, name: str, uid: str) -> None:
        """The informer saw a pod disappear: create its parked successor, if any."""
        with self.lock:
            self.deleted_uids.discard(uid)
            obj = self.parked.pop((ns, name), None)
        if obj is not None:
            self._create(POD, obj, ns)

    def mark_deleted(self, uid: str) -> None:
        """The controller deleted this pod: its going away is not an eviction."""
        with self.lock:
            self.deleted_uids.add(uid)

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        """A pod is gone only when the informer says so (``pod_gone``): a bound pod terminates gracefully."""
        res = self._res(kind)
        with self.lock:
            self.parked.pop((namespace, name), None)
        try:
            if kind == "Pod":
                self.mark_deleted(self.api.get(POD, name, namespace)["metadata"].get("uid", ""))
            self.api.delete(res, name, namespace, propagation="Background")
        except ApiError as exc:
            if not exc.not_found:
                raise
            return True
        return kind != "Pod"

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        res = self._res(kind)
        try:
            return self.api.get(res, name, namespace if res.namespaced else None)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Replace the status (read-modify-write with the resourceVersion; retried on conflict)."""
        res = self._res(kind)
        sub = "status" if kind in _STATUS_SUBRESOURCE else None
        for _ in range(5):
            obj = self.get(kind, namespace, name)
            if obj is None:
                return
            if obj.get("status") == status:
                return
            if kind == "Job":
                status = _stamp_transition(obj.get("status") or {}, status,
                                           (obj.get("metadata") or {}).get("creationTimestamp"),
                                           lambda: self._podgroup_admitted(namespace, name))
                controlled = job_plugins.controlled_resources(obj)
                if controlled:  # the plugins' OnJobAdd records itself there
                    status = {**status, "controlledResources": controlled}
                if obj.get("status") == status:
                    return
            obj["status"] = status
            try:
                self.api.replace(res, obj, namespace, subresource=sub)
                return
            except ApiError as exc:
                if exc.not_found:
                    return
                if not exc.conflict:
                    raise
        log.warning("status of %s %s/%s: gave up after repeated conflicts", kind, namespace, name)

    def _podgroup_admitted(self, namespace: str, job: str) -> bool:
        """The Job's PodGroup (named after it) has left Pending: Volcano's syncJob then syncs the pods and writes
        the full status."""
        try:
            pg = self.get("PodGroup", namespace, job)
        except ApiError:
            return False
        return ((pg or {}).get("status") or {}).get("phase") not in (None, "", "Pending")

    def patch_spec(self, kind: str, namespace: str, name: str, fields: dict[str, Any]) -> None:
        """A JSON merge patch of the spec (a map such as ``minTaskMember`` merges key by key)."""
        try:
            self.api.patch(self._res(kind), name, {"spec": fields}, namespace)
        except ApiError as exc:
            if not exc.not_found:
                raise

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        self.recorder.event(obj, etype, reason, message)
