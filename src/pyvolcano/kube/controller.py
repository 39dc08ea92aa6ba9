"""The controllers on a real cluster: informers feed the vcjob controller (``controllers.vcjob.JobController``,
shared with the simulator) through one worker thread, next to the queue controller.

What this layer adds to the job controller, because it only exists on a cluster:

* controller-side admission: a Job that Volcano's webhook would reject (minAvailable above the replicas, an
  unknown or closed queue, a duplicate task name, a bad policy or quantity, an unsupported job plugin) is not
  started; its ``status.state`` says ``Pending``, reason ``Invalid`` and the first problem, naming the field.
  It is checked again whenever the Job or the queues change;
* recovery after a restart: jobs already running are rebuilt from their status and pods instead of being
  started again;
* pod events: phase changes, and deletions the controller did not ask for (evictions, preemption), become the
  controller's ``on_pod`` calls; PodGroup phase changes become ``on_podgroup`` (pods are created once the
  scheduler admits the PodGroup, as in Volcano);
* ``bus.volcano.sh`` Commands for Jobs (``pyvolcano job suspend/resume``, vcctl's AbortJob / ResumeJob,
  RestartJob, TerminateJob, CompleteJob);
* Volcano's job plugins (``kube/job_plugins.py``: env, svc, ssh, mpi, pytorch, tensorflow, ray, hcclrank), and
  cleanup when a Job is deleted (a cluster without a garbage collector would otherwise keep its pods);
* updates of a running Job (``_update``): the changes Volcano's webhook allows (replicas, minAvailable) are applied,
  the others refused with its message;
* ``ttlSecondsAfterFinished``: a finished Job is deleted that long after it finished (Volcano's garbagecollector).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from pyvolcano.api.job_validate import job_update_problems
from pyvolcano.controllers.vcjob import ENDED, FINAL, TTL_PHASES, JobController, JobState
from pyvolcano.kube import job_plugins
from pyvolcano.kube.client import ApiError
from pyvolcano.kube.cluster_api import KINDS, KubeClusterAPI
from pyvolcano.kube.objects import key_of, parse_time
from pyvolcano.kube.reflector import Reflector
from pyvolcano.kube.resources import COMMAND, POD, PODGROUP, QUEUE, VCJOB, for_object
from pyvolcano.kube.validation import validate_job
from pyvolcano.kube.writer import EventRecorder

log = logging.getLogger(__name__)

JOB_LABEL = "volcano.sh/job-name"
TASK_LABEL = "volcano.sh/task-spec"


class JobRunner:
    def __init__(self, api: Any, recorder: EventRecorder) -> None:
        self.api = api
        self.recorder = recorder
        self.jobs: dict[str, dict[str, Any]] = {}
        self.capi = KubeClusterAPI(api, recorder, self.jobs)
        self.ctrl = JobController(self.capi)
        self.queues: dict[str, dict[str, Any]] = {}
        self.pg_phase: dict[str, str] = {}
        self.pod_phase: dict[str, str] = {}
        self.evicted: set[str] = set()
        self.invalid: dict[str, str] = {}
        #: the update of a running Job last refused (``job_update_problems``), by job key: reported once
        self.refused: dict[str, str] = {}
        #: scaled jobs whose svc hosts ConfigMap is rewritten once they are past Pending (``_refresh_hosts``)
        self.stale_hosts: set[str] = set()
        #: pending ``ttlSecondsAfterFinished`` checks by Job uid
        self.ttl_timers: dict[str, threading.Timer] = {}
        self.events: queue.Queue[tuple[str, str, dict[str, Any]] | None] = queue.Queue()
        self.processed = 0
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None

        def feed(kind: str) -> Any:
            return lambda typ, obj: self.events.put((kind, typ, obj))

        self.first = [Reflector(api, QUEUE, feed("Queue")), Reflector(api, PODGROUP, feed("PodGroup")),
                      Reflector(api, POD, feed("Pod"), label_selector=JOB_LABEL),
                      Reflector(api, COMMAND, feed("Command"))]
        self.job_reflector = Reflector(api, VCJOB, feed("Job"))
        self.reflectors = [*self.first, self.job_reflector]

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> bool:
        """Informers for what jobs depend on first (so a restart can recover running jobs), then the jobs."""
        self._worker = threading.Thread(target=self._loop, name="vcjob-controller", daemon=True)
        self._worker.start()
        for r in self.first:
            r.start()
        for r in self.first:
            if not r.synced.wait(timeout):
                return False
        self.events.join()
        self.job_reflector.start()
        return self.job_reflector.synced.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        for timer in list(self.ttl_timers.values()):
            timer.cancel()
        for r in self.reflectors:
            r.stop()
        self.events.put(None)
        if self._worker is not None:
            self._worker.join(5)

    @property
    def alive(self) -> bool:
        return self._worker is not None and self._worker.is_alive() and all(r.alive for r in self.reflectors)

    def _loop(self) -> None:
        while not self._stop.is_set():
            item = self.events.get()
            try:
                if item is None:
                    return
                kind, typ, obj = item
                getattr(self, f"_on_{kind.lower()}")(typ, obj)
            except ApiError as exc:
                log.warning("%s %s: %s", item[0] if item else "", key_of(item[2]) if item else "", exc)
            except Exception:  # one bad object must not stop the controller
                log.exception("handling %s %s failed", item[0] if item else "", key_of(item[2]) if item else "")
            finally:
                if self.stale_hosts:
                    try:
                        self._refresh_hosts()
                    except ApiError as exc:
                        log.warning("rewriting a job's hosts ConfigMap: %s", exc)
                self.processed += 1
                self.events.task_done()

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until every event delivered so far was handled (tests)."""
        done = threading.Event()
        def wait() -> None:
            self.events.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    # --- jobs ----------------------------------------------------------------------------------------------
    def _on_job(self, typ: str, job: dict[str, Any]) -> None:
        key = key_of(job)
        if typ == "DELETED":
            self.jobs.pop(key, None)
            self.invalid.pop(key, None)
            self.refused.pop(key, None)
            timer = self.ttl_timers.pop(job["metadata"].get("uid", ""), None)
            if timer is not None:
                timer.cancel()
            if self.ctrl.jobs.pop(key, None) is not None:
                self._cleanup(job)
            return
        st = self.ctrl.jobs.get(key)
        if st is not None and st.job["metadata"].get("uid") == job["metadata"].get("uid"):
            self._update(st, job)
        else:
            self.jobs[key] = job
            self._admit(job)
        self._schedule_ttl(self.jobs.get(key) or job)

    def _update(self, st: JobState, job: dict[str, Any]) -> None:
        """A Job the controller runs changed.  A spec change Volcano's webhook allows (``job_update_problems``:
        replicas, minAvailable, priority class) is applied (``JobController.update_job``: the PodGroup follows,
        pods are created or deleted) and svc's hosts ConfigMap rewritten (``OnJobUpdate``); any other is refused
        with Volcano's message (a Warning event ``FailedUpdate``, once) and the controller keeps the spec it runs."""
        key = st.key
        if job.get("spec") == st.job.get("spec"):
            self.jobs[key] = job
            self.refused.pop(key, None)
            return
        problems = job_update_problems(st.job, job)
        if problems:
            self.jobs[key] = {**job, "spec": st.job["spec"]}
            msg = str(problems[0])
            if self.refused.get(key) != msg:
                self.refused[key] = msg
                log.info("job %s: update refused: %s", key, msg)
                self.recorder.event(job, "Warning", "FailedUpdate", msg)
            return
        self.refused.pop(key, None)
        self.jobs[key] = job
        log.info("job %s updated", key)
        self.ctrl.update_job(key, job)
        if job_plugins.updated_objects(job):
            self.stale_hosts.add(key)
            self._refresh_hosts()

    def _refresh_hosts(self) -> None:
        """svc's ``OnJobUpdate`` rewrites the hosts ConfigMap of a scaled job, but Volcano's syncJob calls it only
        for a job past Pending (``isInitiated``; a Pending job goes through ``initiateJob``, whose ``OnJobAdd`` sees
        the plugin's objects made and does nothing): a scaled Pending job keeps its old hosts until it runs."""
        for key in list(self.stale_hosts):
            st = self.ctrl.jobs.get(key)
            if st is None:
                self.stale_hosts.discard(key)
            elif st.phase not in ("", "Pending"):
                self.stale_hosts.discard(key)
                for obj in job_plugins.updated_objects(st.job):
                    self._create_or_update(obj)

    def _create_or_update(self, obj: dict[str, Any]) -> None:
        """``CreateOrUpdateConfigMap``: create, or replace the data of the one there when it differs."""
        res = for_object(obj)
        md = obj["metadata"]
        try:
            cur = self.api.get(res, md["name"], md["namespace"])
        except ApiError as exc:
            if not exc.not_found:
                raise
            self.capi.create(obj)
            return
        if cur.get("data") != obj.get("data"):
            cur["data"] = obj.get("data")
            self.api.replace(res, cur, md["namespace"])

    # --- ttlSecondsAfterFinished (Volcano's garbagecollector controller) ---------------------------------------
    def _schedule_ttl(self, job: dict[str, Any]) -> None:
        """A finished (Completed, Failed, Terminated) Job with ``ttlSecondsAfterFinished`` is deleted that many
        seconds after ``status.state.lastTransitionTime`` (garbagecollector.go: processTTL, timeLeft); a timer
        puts the check on the worker's queue, where ``_on_ttl`` looks again."""
        spec, state = job.get("spec") or {}, (job.get("status") or {}).get("state") or {}
        ttl = spec.get("ttlSecondsAfterFinished")
        uid = job["metadata"].get("uid", "")
        if ttl is None or state.get("phase") not in TTL_PHASES or job["metadata"].get("deletionTimestamp") or \
                uid in self.ttl_timers:
            return
        delay = self._ttl_left(job)
        if delay is None:
            return
        timer = threading.Timer(max(delay, 0.0), lambda: self.events.put(("Ttl", "EXPIRED", job)))
        timer.daemon = True
        self.ttl_timers[uid] = timer
        timer.start()

    @staticmethod
    def _ttl_left(job: dict[str, Any]) -> float | None:
        """Seconds until the Job's TTL runs out (negative: past); None without a finish time."""
        state = (job.get("status") or {}).get("state") or {}
        try:
            finished = parse_time(state.get("lastTransitionTime"))
        except ValueError:
            return None
        if finished is None:
            return None
        return finished + float(job["spec"]["ttlSecondsAfterFinished"]) - time.time()

    def _on_ttl(self, typ: str, job: dict[str, Any]) -> None:
        key, uid = key_of(job), job["metadata"].get("uid", "")
        self.ttl_timers.pop(uid, None)
        cur = self.jobs.get(key)
        if cur is None or cur["metadata"].get("uid") != uid:
            return  # deleted, or another Job of that name
        left = self._ttl_left(cur)
        if ((cur.get("status") or {}).get("state") or {}).get("phase") not in TTL_PHASES or left is None:
            return
        if left > 0:  # the finish time moved (a restarted job finished again)
            self._schedule_ttl(cur)
            return
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        log.info("job %s: ttlSecondsAfterFinished ran out, deleting it", key)
        try:
            self.api.delete(VCJOB, name, ns, propagation="Background", uid=uid)
        except ApiError as exc:
            if not (exc.not_found or exc.conflict):
                raise

    def _admit(self, job: dict[str, Any]) -> None:
        key = key_of(job)
        if key in self.ctrl.jobs:
            return
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        errs = validate_job(job, self.queues, job_plugins.SUPPORTED)
        if errs:
            msg = errs[0] + (f" (and {len(errs) - 1} more)" if len(errs) > 1 else "")
            if self.invalid.get(key) != msg:
                self.invalid[key] = msg
                log.info("job %s not started: %s", key, msg)
                self.capi.update_status("Job", ns, name, {"state": {"phase": "Pending", "reason": "Invalid",
                                                                    "message": msg}})
                self.recorder.event(job, "Warning", "FailedValidation", msg)
            return
        self.invalid.pop(key, None)
        pods = self._pods_of(ns, name)
        phase = ((job.get("status") or {}).get("state") or {}).get("phase") or ""
        if pods or phase not in ("", "Pending"):
            self._recover(job, pods)
            return
        self.ctrl.add_job(job)
        for obj in job_plugins.objects(job):  # OnJobAdd, before the PodGroup's pods exist
            self.capi.create(obj)
        pg = self.pg_phase.get(key)
        if pg and pg != "Pending":  # a PodGroup already admitted (it outlived a controller restart)
            self.ctrl.on_podgroup(key, pg)

    def _pods_of(self, ns: str, name: str) -> list[dict[str, Any]]:
        return [p for p in self.first[2].store.values()
                if p["metadata"].get("namespace") == ns and (p["metadata"].get("labels") or {}).get(JOB_LABEL) == name]

    def _recover(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """Rebuild a running job's controller state from the cluster (after a controller restart)."""
        st_obj = job.get("status") or {}
        st = JobState(job, phase=(st_obj.get("state") or {}).get("phase") or "Pending",
                      retries=int(st_obj.get("retryCount") or 0), version=int(st_obj.get("version") or 0))
        for p in pods:
            if not p["metadata"].get("deletionTimestamp"):
                st.pods[p["metadata"]["name"]] = (p.get("status") or {}).get("phase") or "Pending"
                self.pod_phase[p["metadata"].get("uid", "")] = st.pods[p["metadata"]["name"]]
            elif st.phase in ENDED:  # killed by the controller before it restarted: still going away
                st.terminating.add(p["metadata"]["name"])
                self.capi.mark_deleted(p["metadata"].get("uid", ""))
        self.ctrl.jobs[st.key] = st
        log.info("job %s recovered: phase %s, %d pods", st.key, st.phase, len(st.pods))
        if st.phase in ENDED and not st.terminating:  # its pods went while no controller watched
            st.phase = ENDED[st.phase]
            self.ctrl._status(st)
        if st.phase in FINAL or st.phase in ENDED:
            return
        pg = self.pg_phase.get(st.key)
        if pg is None:
            self.capi.create(self.ctrl._podgroup(st))
            self.ctrl.pg_phase[st.key] = "Pending"
        else:
            self.ctrl.on_podgroup(st.key, pg)

    def _cleanup(self, job: dict[str, Any]) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        for p in self._pods_of(ns, name):
            self.capi.delete("Pod", ns, p["metadata"]["name"])
        self.capi.delete("PodGroup", ns, name)
        for kind, n in job_plugins.owned(job):  # OnJobDelete
            try:
                self.api.delete(KINDS[kind], n, ns)
            except ApiError as exc:
                if not exc.not_found:
                    raise

    # --- queues, podgroups, pods ----------------------------------------------------------------------------
    def _on_queue(self, typ: str, q: dict[str, Any]) -> None:
        name = q["metadata"]["name"]
        if typ == "DELETED":
            self.queues.pop(name, None)
        else:
            self.queues[name] = q
        for key in list(self.invalid):  # a queue appearing or opening may make a waiting job valid
            if key in self.jobs:
                self._admit(self.jobs[key])

    def _on_podgroup(self, typ: str, pg: dict[str, Any]) -> None:
        key = key_of(pg)
        if typ == "DELETED":
            self.pg_phase.pop(key, None)
            return
        phase = (pg.get("status") or {}).get("phase") or "Pending"
        if self.pg_phase.get(key) != phase:
            self.pg_phase[key] = phase
            self.ctrl.on_podgroup(key, phase)

    def _on_pod(self, typ: str, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        labels = md.get("labels") or {}
        ns, name, uid = md.get("namespace") or "default", md["name"], md.get("uid", "")
        job_key = f"{ns}/{labels.get(JOB_LABEL, '')}"
        task = labels.get(TASK_LABEL) or (md.get("annotations") or {}).get("volcano.sh/task-spec", "")
        ours = uid in self.capi.deleted_uids
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if typ == "DELETED":
            self.pod_phase.pop(uid, None)
            if not ours and uid not in self.evicted and phase not in ("Succeeded", "Failed"):
                self.ctrl.on_pod(job_key, name, task, phase, evicted=True)
            self.evicted.discard(uid)
            self.capi.pod_gone(ns, name, uid)
            if ours:
                self.ctrl.on_pod_gone(job_key, name)
            return
        if md.get("deletionTimestamp"):
            if not ours and uid not in self.evicted and phase not in ("Succeeded", "Failed"):
                self.evicted.add(uid)  # evicted (preempted, drained): PodEvicted, once per pod
                self.ctrl.on_pod(job_key, name, task, phase, evicted=True)
            return
        if self.pod_phase.get(uid) != phase:
            self.pod_phase[uid] = phase
            if phase in ("Running", "Succeeded", "Failed"):
                self.ctrl.on_pod(job_key, name, task, phase)

    # --- commands ----------------------------------------------------------------------------------------
    def _on_command(self, typ: str, cmd: dict[str, Any]) -> None:
        target = cmd.get("target") or {}
        if typ == "DELETED" or target.get("kind") != "Job":
            return
        ns = cmd["metadata"].get("namespace") or "default"
        key = f"{ns}/{target.get('name')}"
        action = cmd.get("action") or ""
        st = self.ctrl.jobs.get(key)
        try:
            self.api.delete(COMMAND, cmd["metadata"]["name"], ns)
        except ApiError as exc:
            if not exc.not_found:
                raise
        if st is None or (target.get("uid") and st.job["metadata"].get("uid") != target["uid"]):
            log.info("command %s for unknown job %s ignored", action, key)
            return
        log.info("command %s on job %s (phase %s)", action, key, st.phase)
        self.ctrl.execute(st, action)  # Volcano's state machine: what an action does depends on the phase
        self.recorder.event(st.job, "Normal", "CommandIssued", f"{action} applied; job is {st.phase}")
