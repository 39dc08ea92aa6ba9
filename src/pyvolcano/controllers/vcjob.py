"""The vcjob controller: a ``batch.volcano.sh/v1alpha1`` Job becomes a PodGroup and its Pods (Volcano's
``pkg/controllers/job``: job_controller_actions.go syncJob/killJob, job_controller_util.go applyPolicies).

What Volcano's job controller does, reduced to what scheduling outcomes depend on:
- a PodGroup named after the job with minMember = minAvailable, minTaskMember per task, the queue, the
  priority class and minResources (the requests of the first minAvailable pods, tasks in spec order), the job's
  networkTopology, and one ``subGroupPolicy`` per task with a ``partitionPolicy`` (``setPgSubGroupPolicy``: the
  task's pods grouped by ``volcano.sh/partition-id``, ``partitionSize`` pods each, ``minPartitions`` of them
  needed, the partition's networkTopology); such a task's pods carry ``volcano.sh/partition-id`` = index //
  partitionSize;
- pods are created only once the PodGroup has left Pending (enqueue admitted it), named
  ``<job>-<task>-<index>`` with Volcano's labels/annotations and env ``VK_TASK_INDEX``;
- events: PodEvicted (a pod deleted by someone else: preemption, reclaim, a failed node), PodFailed, TaskCompleted
  (every replica of a task succeeded); the job's lifecycle policy (task level first, then job level, ``*`` for any)
  names the action, otherwise the job is synced (a missing pod is re-created);
- the actions as Volcano's state machine runs them (``state/*.go``, ``killJob``/``killTarget``):

  - RestartJob: every pod is deleted, Succeeded and Failed ones too (at the last retry, ``retryCount >= maxRetry
    - 1``, the finished ones stay); the PodGroup is deleted and re-created Pending, so the job is enqueued again;
    retryCount +1; Restarting, then Pending once the pods are re-created, or Failed when retryCount has reached
    maxRetry (default 3);
  - RestartTask / RestartPod / RestartPartition: the task's pods / the pod / the pods of its partition are
    deleted whatever their phase; the PodGroup stays; retryCount +1; Restarting, then Pending;
  - AbortJob / TerminateJob / CompleteJob: Pending and Running pods are deleted (Succeeded and Failed stay), the
    PodGroup too; Aborting / Terminating / Completing while pods terminate, then Aborted / Terminated / Completed;
  - ResumeJob (Aborting or Aborted): as a restart that keeps finished pods: retryCount +1, Restarting.

  In Restarting no further retry is counted; the job's version (pod annotation ``volcano.sh/job-version``) goes
  up with every whole-job kill;
- a Running job completes when all its pods have finished and at least minAvailable (or ``minSuccess``) succeeded,
  fails otherwise (or when a task with minAvailable has fewer successes), and goes back to Pending when more pods
  are pending than replicas - minAvailable.

- updates Volcano's webhook lets through on a running job (``admit_job.go: validateJobUpdate``, checked by
  ``api/job_validate.py: job_update_problems``): a task's replicas, a task's and the job's minAvailable and the
  priority class.  ``update_job`` takes the new spec and syncs, as Volcano's ``updateJob`` handler (an OutOfSync
  request, so a SyncJob) does: the PodGroup follows (``createOrUpdatePodGroup``/``shouldUpdateExistingPodGroup``:
  minMember, minResources, minTaskMember, priority class), missing pods are created and the pods past a task's
  replicas deleted once the PodGroup has left Pending;
- ``delete_job``: a Job deleted (by its user, or by ``ttlSecondsAfterFinished``: Volcano's garbagecollector
  controller, which the simulator runs on simulated time and ``kube/controller.py`` on the cluster's) takes its
  pods and PodGroup with it.

On a cluster, where deleted pods terminate gracefully, ``status.terminating`` counts them and the ending phases
last until they are gone; the simulator deletes at once (``ClusterAPI.delete`` returns True), so it passes through
them in the same step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pyvolcano.api.convert import pod_requests
from pyvolcano.api.job_model import Job
from pyvolcano.api.job_validate import job_problems, policy_events
from pyvolcano.api.types import GROUP_NAME_ANNOTATION, JOB_NAME_ANNOTATION, TASK_SPEC_ANNOTATION
from pyvolcano.controllers.api import ClusterAPI
from pyvolcano.errors import ManifestError

#: the pod annotation and label holding the pod's index in its task (``volcano.sh/apis batch/v1alpha1: TaskIndex``)
TASK_INDEX_KEY = "volcano.sh/task-index"
#: the pod label holding a partitioned task's partition (``volcano.sh/apis batch/v1alpha1: TaskPartitionID``)
PARTITION_ID_LABEL = "volcano.sh/partition-id"

FINAL = ("Completed", "Failed", "Aborted", "Terminated")
#: the finished phases ``ttlSecondsAfterFinished`` applies to (garbagecollector.go: isJobFinished; not Aborted)
TTL_PHASES = ("Completed", "Failed", "Terminated")
#: the phase a job shows while the pods it killed are still terminating, and the one it reaches when they are gone
ENDING = {"Aborted": "Aborting", "Terminated": "Terminating", "Completed": "Completing"}
ENDED = {v: k for k, v in ENDING.items()}
#: the job-level action that ends a job -> the phase it ends in (Volcano's ``state/running.go``, ``pending.go``)
END_ACTIONS = {"AbortJob": "Aborted", "TerminateJob": "Terminated", "CompleteJob": "Completed"}
#: the actions that kill a target (one task's pods, one pod, one partition) instead of the whole job (``killTarget``)
TARGET_ACTIONS = ("RestartTask", "RestartPod", "RestartPartition")
#: pod phases ``killJob`` keeps: none for a restart, the finished ones for abort/terminate/complete
#: (``state/factory.go``: PodRetainPhaseNone, PodRetainPhaseSoft)
RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT: frozenset[str] = frozenset({"Succeeded", "Failed"})
#: Volcano's webhook sets ``maxRetry`` to this when a Job leaves it 0 or unset (``mutate_job.go``: DefaultMaxRetry)
DEFAULT_MAX_RETRY = 3


def validate_job(job: dict[str, Any], queues: set[str] | None = None, model: type[Job] = Job) -> None:
    """The typed boundary (``model``: ``api/job_model.py: Job`` or the simulator's ``WorkloadJob``) and Volcano's
    admission checks (``api.job_validate``, shared with the controller and ``pyvolcano job run``); raises
    ManifestError naming the Job and the field of the first problem."""
    problems = job_problems(job, queues, model=model)
    if problems:
        p = problems[0]
        raise ManifestError(p.ref, p.field, p.problem)


def _matches(policy: dict[str, Any], event: str) -> bool:
    """A lifecycle policy answers ``event`` when it names it or Volcano's any-event ``*`` (``event`` or
    ``events``; Volcano's ``pkg/controllers/job/job_controller_util.go``: applyPolicies)."""
    events = policy_events(policy)
    return event in events or "*" in events


@dataclass
class JobState:
    """The controller's memory of one job (Volcano keeps it in the job's status and its cache)."""

    job: dict[str, Any]
    phase: str = "Pending"
    retries: int = 0
    version: int = 0
    pods: dict[str, str] = field(default_factory=dict)  # pod name -> phase
    evicted: int = 0
    terminating: set[str] = field(default_factory=set)  # pods deleted by the controller, not yet gone
    #: ``status.terminating`` as the last kill stored it: Volcano recounts it only when it syncs the pods, which it
    #: does not while the (re-created) PodGroup is Pending, so a Restarting job judges its restart by this number
    killed: int = 0
    #: the spec changed (``update_job``): the next sync with an admitted PodGroup deletes the pods past a task's
    #: replicas (Volcano's syncJob deletes every pod it did not expect)
    resized: bool = False

    #: the job's tasks, each with its name, and their replicas in all, read once (``tasks``, ``replicas``): a Job's
    #: spec does not change under the controller, and every sync and pod event asks
    _tasks: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    _replicas: int = field(default=-1, repr=False, compare=False)

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """``spec.tasks``, each with its name (``task<i>`` when unnamed); read-only."""
        if self._tasks is None:
            self._tasks = JobController._tasks(self.job)
        return self._tasks

    @property
    def replicas(self) -> int:
        if self._replicas < 0:
            self._replicas = JobController._replicas(self.job)
        return self._replicas

    @property
    def key(self) -> str:
        md = self.job["metadata"]
        return f"{md.get('namespace') or 'default'}/{md['name']}"

    @property
    def max_retry(self) -> int:
        return int(self.job["spec"].get("maxRetry") or DEFAULT_MAX_RETRY)


class JobController:
    """Reconciles vcjobs through a ClusterAPI.  Call ``add_job`` for a new Job, ``on_podgroup`` when a PodGroup's
    phase changes and ``on_pod`` when a pod changes phase or is evicted/deleted."""

    def __init__(self, api: ClusterAPI, keep_finished_pods: bool = True) -> None:
        self.api = api
        self.jobs: dict[str, JobState] = {}
        self.keep_finished_pods = keep_finished_pods
        #: each job's PodGroup phase as last reported (``on_podgroup``) or set by the controller creating or
        #: deleting it: Volcano reads its PodGroup lister, not the API server
        self.pg_phase: dict[str, str] = {}

    # --- helpers ------------------------------------------------------------------------------------------
    @staticmethod
    def _tasks(job: dict[str, Any]) -> list[dict[str, Any]]:
        return [dict(t, name=t.get("name") or f"task{i}") for i, t in enumerate(job["spec"]["tasks"])]

    def _pod(self, st: JobState, task: dict[str, Any], index: int) -> dict[str, Any]:
        md = st.job["metadata"]
        ns, jname = md.get("namespace") or "default", md["name"]
        tmpl = _tree_copy(task["template"])
        pmd = tmpl.setdefault("metadata", {})
        spec = tmpl.setdefault("spec", {})
        name = f"{jname}-{task['name']}-{index}"
        ann = dict(pmd.get("annotations") or {})
        queue = self._queue(st.job)
        ann.update({TASK_INDEX_KEY: str(index), TASK_SPEC_ANNOTATION: task["name"], GROUP_NAME_ANNOTATION: jname,
                    JOB_NAME_ANNOTATION: jname, "volcano.sh/queue-name": queue,
                    "volcano.sh/job-version": str(st.version), "volcano.sh/template-uid": f"{jname}-{task['name']}",
                    "volcano.sh/job-retry-count": str(st.retries)})
        labels = dict(pmd.get("labels") or {})
        labels.update({TASK_INDEX_KEY: str(index), JOB_NAME_ANNOTATION: jname, "volcano.sh/task-spec": task["name"],
                       "volcano.sh/job-namespace": ns, "volcano.sh/queue-name": queue})
        if task.get("partitionPolicy") is not None:  # createJobPod: the pod's partition as a label
            labels[PARTITION_ID_LABEL] = str(partition_of(name, task["partitionPolicy"].get("partitionSize")))
        pmd.update({"name": name, "namespace": ns, "annotations": ann, "labels": labels,
                    "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": jname,
                                         "uid": md.get("uid", ""), "controller": True}]})
        spec.setdefault("schedulerName", st.job["spec"].get("schedulerName") or "volcano")
        if st.job["spec"].get("priorityClassName") and not spec.get("priorityClassName"):
            spec["priorityClassName"] = st.job["spec"]["priorityClassName"]
        tmpl.update({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending"}})
        return tmpl

    def built_objects(self, job: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
        """What this controller builds from ``job`` as it will be when added (namespace ``default`` when unset,
        a numeric creation time): its PodGroup (task index None), and per task with replicas the pod of its
        highest index (the longest name), as ``(task index, object)``.  Every later object differs from these
        only in what the controller writes itself (a pod's index in its name, env and partition label, the job
        version annotation, a PodGroup's creation time), so a caller that validates these once when it admits
        the job (``sim/engine.py: Simulator.job_problem``) may hand the cache everything built from the job
        without validating it again."""
        md = dict(job.get("metadata") or {})
        md.setdefault("namespace", "default")  # as Simulator._arrive sets it
        md["creationTimestamp"] = 0.0
        st = JobState(dict(job, metadata=md))
        out: list[tuple[int | None, dict[str, Any]]] = [(None, self._podgroup(st))]
        for i, task in enumerate(st.tasks):
            replicas = int(task.get("replicas", 1))
            if replicas > 0:
                out.append((i, self._pod(st, task, replicas - 1)))
        return out

    @staticmethod
    def _queue(job: dict[str, Any]) -> str:
        return job["spec"].get("queue") or "default"

    def _podgroup(self, st: JobState) -> dict[str, Any]:
        job = st.job
        md, spec = job["metadata"], job["spec"]
        tasks = st.tasks
        total = sum(int(t.get("replicas", 1)) for t in tasks)
        min_av = int(spec.get("minAvailable", total))
        min_res: dict[str, float] = {}
        left = min_av
        for t in tasks:
            n = min(left, int(t.get("replicas", 1)))
            left -= n
            req, _ = pod_requests({"kind": "Pod", "metadata": {"name": "tmpl"}, "spec": t["template"].get("spec") or {}})
            for k, v in req.items():
                if k != "pods":
                    min_res[k] = min_res.get(k, 0.0) + v * n
        mtm = {t["name"]: m for t in tasks if (m := task_min_member(t)) is not None}
        pg_spec: dict[str, Any] = {"minMember": min_av, "queue": self._queue(job),
                                   "minResources": {k: qty_string(k, v) for k, v in min_res.items()}}
        if mtm:
            pg_spec["minTaskMember"] = mtm
        if spec.get("priorityClassName"):
            pg_spec["priorityClassName"] = spec["priorityClassName"]
        nt = spec.get("networkTopology")
        if nt is not None:  # Volcano's createOrUpdatePodGroup: mode, then the tier or else the tier name
            pg_spec["networkTopology"] = pg_network_topology(nt, tier_or_name=True)
        policies = [sub_group_policy(t) for t in tasks if t.get("partitionPolicy") is not None]
        if policies:  # setPgSubGroupPolicy
            pg_spec["subGroupPolicy"] = policies
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": md["name"], "namespace": md.get("namespace") or "default",
                             "creationTimestamp": md.get("creationTimestamp"),
                             "annotations": dict(md.get("annotations") or {}),
                             **({"labels": dict(md["labels"])} if md.get("labels") else {})},
                "spec": pg_spec, "status": {"phase": "Pending"}}

    def _status(self, st: JobState) -> None:
        counts: dict[str, int] = {}
        for ph in st.pods.values():
            counts[ph] = counts.get(ph, 0) + 1
        md = st.job["metadata"]
        self.api.update_status("Job", md.get("namespace") or "default", md["name"], {
            "state": {"phase": st.phase}, "retryCount": st.retries, "version": st.version,
            "pending": counts.get("Pending", 0), "running": counts.get("Running", 0),
            "succeeded": counts.get("Succeeded", 0), "failed": counts.get("Failed", 0),
            "terminating": len(st.terminating),
            "minAvailable": st.job["spec"].get("minAvailable")})

    # --- events --------------------------------------------------------------------------------------------
    def add_job(self, job: dict[str, Any]) -> JobState:
        st = JobState(job)
        self.jobs[st.key] = st
        self.api.create(self._podgroup(st))
        self.pg_phase[st.key] = "Pending"
        self._status(st)
        return st

    def on_podgroup(self, job_key: str, phase: str) -> None:
        """The PodGroup's phase changed: Volcano's controller syncs the job (pods are created once the scheduler
        has admitted the PodGroup, i.e. it left Pending)."""
        self.pg_phase[job_key] = phase or "Pending"
        st = self.jobs.get(job_key)
        if st is None or st.phase in FINAL or st.phase in ENDED:
            return
        self._settle(st)
        self._status(st)

    def on_pod(self, job_key: str, pod_name: str, task: str, phase: str, evicted: bool = False) -> str | None:
        """A pod reached ``phase`` (Running, Succeeded, Failed) or was evicted and is gone (``evicted``).  Raises
        Volcano's event for it (``job_controller_handler.go``: updatePod, deletePod): PodEvicted for a pod deleted
        by someone else, PodFailed, TaskCompleted when the pod's whole task has succeeded; the job's lifecycle
        policy picks the action (``applyPolicies``), otherwise the job is synced.  Returns the action taken."""
        st = self.jobs.get(job_key)
        if st is None or st.phase in FINAL or pod_name not in st.pods:
            return None
        event: str | None = None
        if evicted:
            st.evicted += 1
            st.pods.pop(pod_name, None)
            event = "PodEvicted"
        else:
            st.pods[pod_name] = phase
            if phase == "Failed":
                event = "PodFailed"
            elif phase == "Succeeded" and self._task_completed(st, task):
                event = "TaskCompleted"
        action = self._policy(st, event, task) if event else None
        self.execute(st, action or "SyncJob", task=task, pod=pod_name)
        return action

    def on_pod_gone(self, job_key: str, pod_name: str) -> None:
        """A pod the controller deleted has finished terminating (its DELETED event): Volcano syncs the job, so an
        ending job ends when its last one is gone and a restarting job takes its new pods."""
        st = self.jobs.get(job_key)
        if st is None or pod_name not in st.terminating:
            return
        st.terminating.discard(pod_name)
        if st.phase not in FINAL:
            self._settle(st)
        self._status(st)

    def update_job(self, job_key: str, job: dict[str, Any]) -> bool:
        """A running Job's spec changed (the caller checked the change with ``job_update_problems``): take the new
        spec, make the PodGroup follow and sync (Volcano's ``updateJob`` -> OutOfSync -> SyncJob ->
        ``initOnJobUpdate``).  A finished or ending job only takes the spec.  False for an unknown job."""
        st = self.jobs.get(job_key)
        if st is None:
            return False
        st.job = job
        st._tasks, st._replicas = None, -1
        st.resized = True
        if st.phase in FINAL or st.phase in ENDED:
            return True
        if self.pg_phase.get(st.key) is not None:
            md = job["metadata"]
            self.api.patch_spec("PodGroup", md.get("namespace") or "default", md["name"],
                                self._podgroup(st)["spec"])
        self._settle(st)
        self._status(st)
        return True

    def delete_job(self, job_key: str) -> None:
        """The Job is gone (deleted by its user or by ``ttlSecondsAfterFinished``): its pods and PodGroup go with
        it (on a cluster Kubernetes' garbage collector does this through their owner references)."""
        st = self.jobs.pop(job_key, None)
        if st is None:
            return
        md = st.job["metadata"]
        ns = md.get("namespace") or "default"
        for name in list(st.pods):
            self.api.delete("Pod", ns, name)
        st.pods.clear()
        self.pg_phase.pop(job_key, None)
        self.api.delete("PodGroup", ns, md["name"])

    def _task_completed(self, st: JobState, task: str) -> bool:
        """Volcano's ``jobCache.TaskCompleted``: every replica of the task has a Succeeded pod."""
        replicas = next((int(t.get("replicas", 1)) for t in st.tasks if t["name"] == task), 0)
        prefix = f"{st.job['metadata']['name']}-{task}-"
        done = sum(1 for n, p in st.pods.items() if p == "Succeeded" and n.startswith(prefix))
        return replicas > 0 and done >= replicas

    # --- Volcano's job state machine (pkg/controllers/job/state/*.go) --------------------------------------
    def execute(self, st: JobState, action: str, task: str | None = None, pod: str | None = None) -> None:
        """Run ``action`` (a lifecycle policy's, a bus Command's, or ``SyncJob``) in the job's current phase, as
        Volcano's ``State.Execute`` does, then let the job settle (the pod deletions and creations that follow
        reach the controller as further events, each a sync).  ``task``/``pod``: the event's pod, the target of
        RestartTask / RestartPod / RestartPartition."""
        ns = st.job["metadata"].get("namespace") or "default"
        phase = st.phase
        if action == "SyncJob":
            pass
        elif phase in ("Pending", "Running"):  # state/pending.go, state/running.go
            if action == "RestartJob":
                self._kill_job(st, ns, RETAIN_NONE)
                st.retries += 1
                st.phase = "Restarting"
            elif action in TARGET_ACTIONS:
                if self._kill_target(st, ns, action, task, pod):
                    st.retries += 1
                    st.phase = "Restarting"
            elif action in END_ACTIONS:
                self._kill_job(st, ns, RETAIN_SOFT)
                st.phase = ENDING[END_ACTIONS[action]]
            # ResumeJob and anything else: a sync
        elif phase == "Restarting":  # state/restarting.go: no further retry is counted while restarting
            if action in TARGET_ACTIONS:
                self._kill_target(st, ns, action, task, pod)
            else:
                self._kill_job(st, ns, RETAIN_NONE)
        elif phase in ("Aborting", "Aborted") and action == "ResumeJob":  # state/aborting.go, aborted.go
            self._kill_job(st, ns, RETAIN_SOFT)
            st.retries += 1
            st.phase = "Restarting"
        # Aborting, Terminating, Completing and the finished phases only kill (below, in _settle)
        self._settle(st)
        self._status(st)

    def _settle(self, st: JobState) -> None:
        """Sync the job until its phase stops changing (at most a few steps: each is one of Volcano's syncs)."""
        for _ in range(6):
            before = st.phase
            self._sync(st)
            if st.phase == before:
                return

    def _sync(self, st: JobState) -> None:
        """One sync in the job's phase: ``syncJob`` with the phase's status rule (Pending, Running, Restarting), or
        ``killJob`` keeping finished pods (ending and finished phases)."""
        ns = st.job["metadata"].get("namespace") or "default"
        phase = st.phase
        if phase in ENDED or phase in FINAL:
            self._kill_job(st, ns, RETAIN_SOFT)
            alive = st.terminating or any(p in ("Pending", "Running") for p in st.pods.values())
            if phase in ENDED and not alive:
                st.phase = ENDED[phase]
            if st.phase in FINAL:
                self._finished(st, ns)
            return
        if phase == "Restarting" and st.retries >= st.max_retry:  # restartingUpdateStatus
            st.phase = "Failed"
            self._sync(st)
            return
        synced = self._sync_pods(st, ns)
        phases = list(st.pods.values())
        running, succeeded, failed = phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")
        total = st.replicas
        min_av = int(st.job["spec"].get("minAvailable", total))
        if phase == "Restarting":
            terminating = len(st.terminating) if synced else st.killed
            if total - terminating >= min_av:
                st.phase = "Pending"
        elif phase == "Pending":
            if min_av <= running + succeeded + failed and synced:
                st.phase = "Running"
        elif phase == "Running" and synced:
            self._running_status(st, total, min_av, succeeded, failed, phases.count("Pending"))

    def _running_status(self, st: JobState, total: int, min_av: int, succeeded: int, failed: int,
                        pending: int) -> None:
        """``state/running.go``: complete or fail once every pod has finished, go back to Pending when more pods
        are pending than the job can spare."""
        if total == 0:
            return
        min_success = st.job["spec"].get("minSuccess")
        if min_success is not None and succeeded >= int(min_success):
            st.phase = "Completed"
            return
        if succeeded + failed >= total and not any(p in ("Pending", "Running") for p in st.pods.values()):
            tasks = st.tasks
            task_min = sum(int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas", 1))
                           for t in tasks)
            if min_av >= task_min:
                for t in tasks:
                    if t.get("minAvailable") is None:
                        continue
                    prefix = f"{st.job['metadata']['name']}-{t['name']}-"
                    ok = sum(1 for n, p in st.pods.items() if p == "Succeeded" and n.startswith(prefix))
                    if any(n.startswith(prefix) for n in st.pods) and ok < int(t["minAvailable"]):
                        st.phase = "Failed"
                        return
            if min_success is not None and succeeded < int(min_success):
                st.phase = "Failed"
            elif succeeded >= min_av:
                st.phase = "Completed"
            else:
                st.phase = "Failed"
        elif pending > total - min_av:
            st.phase = "Pending"

    def _sync_pods(self, st: JobState, ns: str) -> bool:
        """``syncJob``'s pod half: (re)create the PodGroup if a kill deleted it; once it has left Pending, create
        every missing pod (``<job>-<task>-<index>``).  False while the PodGroup waits for the scheduler (Volcano
        then only updates the status)."""
        phase = self.pg_phase.get(st.key)
        if phase is None:
            self.api.create(self._podgroup(st))
            self.pg_phase[st.key] = "Pending"
            return False
        if phase in ("", "Pending"):
            return False
        if st.resized:  # scaled down: the pods past their task's replicas go (syncJob's podToDelete)
            st.resized = False
            self._delete_extra_pods(st, ns)
        if len(st.pods) < st.replicas:  # every pod there: nothing to create (the common case)
            self._create_pods(st)
        return True

    def _delete_extra_pods(self, st: JobState, ns: str) -> None:
        want = {f"{st.job['metadata']['name']}-{t['name']}-{i}" for t in st.tasks
                for i in range(int(t.get("replicas", 1)))}
        for name in [n for n in st.pods if n not in want]:
            self._delete_pod(st, ns, name)

    @staticmethod
    def _replicas(job: dict[str, Any]) -> int:
        return sum(int(t.get("replicas", 1)) for t in job["spec"]["tasks"])

    def _create_pods(self, st: JobState) -> None:
        ns = st.job["metadata"].get("namespace") or "default"
        for task in st.tasks:
            for i in range(int(task.get("replicas", 1))):
                name = f"{st.job['metadata']['name']}-{task['name']}-{i}"
                if name in st.pods:
                    continue
                cur = self.api.get("Pod", ns, name)
                if cur is not None and not (cur["metadata"].get("deletionTimestamp") or name in st.terminating):
                    continue  # already there (a recovered job): a terminating predecessor is replaced instead
                st.pods[name] = "Pending"
                self.api.create(self._pod(st, task, i))

    def _policy(self, st: JobState, event: str, task: str) -> str | None:
        """``applyPolicies``: the task's policies first, then the job's; ``*`` matches every event."""
        for t in st.tasks:
            if t["name"] == task:
                for p in t.get("policies") or []:
                    if _matches(p, event):
                        return p.get("action")
        for p in st.job["spec"].get("policies") or []:
            if _matches(p, event):
                return p.get("action")
        return None

    # --- killing (job_controller_actions.go: killJob, killTarget, killPods) ---------------------------------
    def _delete_pod(self, st: JobState, ns: str, name: str) -> None:
        if not self.api.delete("Pod", ns, name):
            st.terminating.add(name)
        st.pods.pop(name, None)

    def _kill_job(self, st: JobState, ns: str, retain: frozenset[str]) -> None:
        """``killJob``: delete every pod whose phase is not retained (at the last retry, ``retryCount >=
        maxRetry - 1``, the finished ones are kept whatever the action), bump the job's version and delete its
        PodGroup (the next sync re-creates it, so a restarted job is enqueued again).  Pods already terminating
        count as terminating."""
        if st.retries >= st.max_retry - 1:
            retain = RETAIN_SOFT
        before = set(st.terminating)
        killed = 0
        for name, phase in list(st.pods.items()):
            if phase not in retain:
                self._delete_pod(st, ns, name)
                killed += 1
        st.killed = killed + len(before)
        st.version += 1
        self.pg_phase.pop(st.key, None)
        self.api.delete("PodGroup", ns, st.job["metadata"]["name"])

    def _kill_target(self, st: JobState, ns: str, action: str, task: str | None, pod: str | None) -> bool:
        """``killTarget``: delete the target's pods whatever their phase (RestartTask: every pod of the task;
        RestartPod: the pod; RestartPartition: the pods of the task in the pod's partition).  The version and the
        PodGroup stay.  False when a partition restart names a task without a partition policy (Volcano then
        does nothing at all)."""
        prefix = f"{st.job['metadata']['name']}-{task}-"
        if action == "RestartTask":
            names = [n for n in st.pods if n.startswith(prefix)]
        elif action == "RestartPod":
            names = [pod] if pod in st.pods else []
        else:
            spec = next((t for t in st.tasks if t["name"] == task), None)
            size = ((spec or {}).get("partitionPolicy") or {}).get("partitionSize")
            if spec is None or not (spec.get("partitionPolicy") or {}) or pod is None:
                return False
            part = partition_of(pod, size)
            names = [n for n in st.pods if n.startswith(prefix) and partition_of(n, size) == part]
        for name in names:
            self._delete_pod(st, ns, name)
        st.killed = len(names) + len(st.terminating - set(names))
        return True

    def _finished(self, st: JobState, ns: str) -> None:
        """A finished job keeps its Succeeded and Failed pods (Volcano deletes them with the Job); a controller
        made with ``keep_finished_pods=False`` (the simulator: nothing reads them afterwards, and every snapshot
        would carry them) deletes them at once, as ``ttlSecondsAfterFinished: 0`` would."""
        if not self.keep_finished_pods:
            for name in list(st.pods):
                self._delete_pod(st, ns, name)


def _tree_copy(v: Any) -> Any:
    """A deep copy of a manifest tree (dicts, lists and tuples of scalars), several times cheaper than
    ``copy.deepcopy``, which the controller would otherwise run for every pod it creates; anything else (strings,
    numbers, dates: immutable) is shared, other objects are deep-copied."""
    if isinstance(v, dict):
        return {k: _tree_copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_tree_copy(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_tree_copy(x) for x in v)
    if v is None or isinstance(v, str | int | float | bool | date):
        return v
    return copy.deepcopy(v)


def task_min_member(task: dict[str, Any]) -> int | None:
    """A task's ``minTaskMember`` entry: its ``minAvailable``, else, with a partition policy whose ``minPartitions``
    is set, ``minPartitions * partitionSize`` (the job webhook's ``mutateSpec`` default and the controller's
    ``getMinTaskMember``); None leaves the task out."""
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    pp = task.get("partitionPolicy")
    if pp is not None and int(pp.get("minPartitions") or 0) > 0:
        return int(pp["minPartitions"]) * int(pp.get("partitionSize") or 0)
    return None


def sub_group_policy(task: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup ``subGroupPolicy`` entry of a task with a ``partitionPolicy`` (the job controller's
    ``getSubGroupPolicy``): named after the task, ``subGroupSize`` = ``partitionSize``, ``minSubGroups`` =
    ``minPartitions``, the task's pods (label ``volcano.sh/task-spec``) grouped by ``volcano.sh/partition-id``,
    and the partition's ``networkTopology`` (mode, tier, tier name as given)."""
    pp = task["partitionPolicy"]
    out: dict[str, Any] = {"name": task["name"], "subGroupSize": int(pp.get("partitionSize") or 0),
                           "minSubGroups": int(pp.get("minPartitions") or 0),
                           "labelSelector": {"matchLabels": {"volcano.sh/task-spec": task["name"]}},
                           "matchLabelKeys": [PARTITION_ID_LABEL]}
    nt = pp.get("networkTopology")
    if nt is not None:
        out["networkTopology"] = pg_network_topology(nt, tier_or_name=False)
    return out


def pg_network_topology(nt: dict[str, Any], tier_or_name: bool) -> dict[str, Any]:
    """A vcjob's (or a partition's) ``networkTopology`` as the PodGroup carries it: the mode (hard when unset),
    then the tier; the job's keeps the tier name only without a tier (``createOrUpdatePodGroup``), a
    partition's keeps both as given (``setPgSubGroupPolicy``)."""
    out: dict[str, Any] = {"mode": nt.get("mode") or "hard"}
    if nt.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = nt["highestTierAllowed"]
        if tier_or_name:
            return out
    if nt.get("highestTierName"):
        out["highestTierName"] = nt["highestTierName"]
    return out


def partition_of(pod_name: str, size: Any) -> int:
    """The partition of a pod (``createJobPod``: index // partitionSize, 0 without a positive size).  ``size`` is
    the task's ``partitionSize`` as the typed boundary accepted it (``api/job_model.py``: an integer, perhaps
    written as a string) or None."""
    idx = int(pod_name.rsplit("-", 1)[1])
    n = int(size) if size is not None else 0
    return idx // n if n > 0 else 0


def qty_string(name: str, v: float) -> str:
    """A resource amount in the cache's units back to a quantity string."""
    if name == "cpu":
        return f"{v:g}m"
    if name == "memory":
        return f"{int(v)}"
    return f"{v:g}m"
