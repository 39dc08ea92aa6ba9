"""The vcjob controller: a ``batch.volcano.sh/v1alpha1`` Job becomes a PodGroup and its Pods (Volcano's
``pkg/controllers/job``: job_controller_actions.go syncJob/killJob, job_controller_util.go applyPolicies).

What Volcano's job controller does, reduced to what scheduling outcomes depend on:
- a PodGroup named after the job with minMember = minAvailable, minTaskMember per task, the queue, the
  priority class and minResources (the requests of the first minAvailable pods, tasks in spec order);
- pods are created only once the PodGroup has left Pending (enqueue admitted it), named
  ``<job>-<task>-<index>`` with Volcano's labels/annotations and env ``VK_TASK_INDEX``;
- lifecycle policies: on PodEvicted / PodFailed / TaskCompleted (job or task level, or ``Any``) the action
  RestartJob / AbortJob / CompleteJob / TerminateJob; no policy: an evicted or failed pod is recreated, a job
  whose pods all succeeded completes; RestartJob counts retries and fails the job once they reach ``maxRetry`` (default 3);
- job phases Pending, Running, Restarting, Completed, Failed, Aborted, Terminated and status counts; on a cluster,
  where deleted pods terminate gracefully, Volcano's Aborting, Terminating and Completing while the job's pods
  are still going away (``status.terminating`` counts them).  The simulator deletes at once, so it never shows them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.convert import pod_requests
from pyvolcano.api.job_validate import job_problems, policy_events
from pyvolcano.api.types import GROUP_NAME_ANNOTATION, JOB_NAME_ANNOTATION, TASK_SPEC_ANNOTATION
from pyvolcano.controllers.api import ClusterAPI
from pyvolcano.errors import ManifestError

FINAL = ("Completed", "Failed", "Aborted", "Terminated")
#: the phase a job shows while the pods it killed are still terminating, and the one it reaches when they are gone
ENDING = {"Aborted": "Aborting", "Terminated": "Terminating", "Completed": "Completing"}
ENDED = {v: k for k, v in ENDING.items()}


def validate_job(job: dict[str, Any], queues: set[str] | None = None) -> None:
    """Volcano's admission checks (``api.job_validate``, shared with the controller and ``pyvolcano job run``);
    raises ManifestError naming the Job and the field of the first problem."""
    problems = job_problems(job, queues)
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

    @property
    def key(self) -> str:
        md = self.job["metadata"]
        return f"{md.get('namespace') or 'default'}/{md['name']}"


class JobController:
    """Reconciles vcjobs through a ClusterAPI.  Call ``add_job`` for a new Job, ``on_podgroup`` when a PodGroup's
    phase changes and ``on_pod`` when a pod changes phase or is evicted/deleted."""

    def __init__(self, api: ClusterAPI) -> None:
        self.api = api
        self.jobs: dict[str, JobState] = {}

    # --- helpers ------------------------------------------------------------------------------------------
    @staticmethod
    def _tasks(job: dict[str, Any]) -> list[dict[str, Any]]:
        return [dict(t, name=t.get("name") or f"task{i}") for i, t in enumerate(job["spec"]["tasks"])]

    def _pod(self, st: JobState, task: dict[str, Any], index: int) -> dict[str, Any]:
        md = st.job["metadata"]
        ns, jname = md.get("namespace") or "default", md["name"]
        tmpl = copy.deepcopy(task["template"])
        pmd = tmpl.setdefault("metadata", {})
        spec = tmpl.setdefault("spec", {})
        name = f"{jname}-{task['name']}-{index}"
        ann = dict(pmd.get("annotations") or {})
        ann.update({GROUP_NAME_ANNOTATION: jname, TASK_SPEC_ANNOTATION: task["name"], JOB_NAME_ANNOTATION: jname,
                    "volcano.sh/job-version": str(st.version), "volcano.sh/queue-name": self._queue(st.job)})
        labels = dict(pmd.get("labels") or {})
        labels.update({JOB_NAME_ANNOTATION: jname, "volcano.sh/job-namespace": ns, "volcano.sh/task-spec": task["name"]})
        pmd.update({"name": name, "namespace": ns, "annotations": ann, "labels": labels,
                    "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": jname,
                                         "uid": md.get("uid", ""), "controller": True}]})
        spec.setdefault("schedulerName", st.job["spec"].get("schedulerName") or "volcano")
        if st.job["spec"].get("priorityClassName") and not spec.get("priorityClassName"):
            spec["priorityClassName"] = st.job["spec"]["priorityClassName"]
        for c in spec.get("containers") or []:
            env = [e for e in c.get("env") or [] if e.get("name") != "VK_TASK_INDEX"]
            env.append({"name": "VK_TASK_INDEX", "value": str(index)})
            c["env"] = env
        tmpl.update({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending"}})
        return tmpl

    @staticmethod
    def _queue(job: dict[str, Any]) -> str:
        return job["spec"].get("queue") or "default"

    def _podgroup(self, st: JobState) -> dict[str, Any]:
        job = st.job
        md, spec = job["metadata"], job["spec"]
        tasks = self._tasks(job)
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
        mtm = {t["name"]: int(t["minAvailable"]) for t in tasks if t.get("minAvailable") is not None}
        pg_spec: dict[str, Any] = {"minMember": min_av, "queue": self._queue(job),
                                   "minResources": {k: qty_string(k, v) for k, v in min_res.items()}}
        if mtm:
            pg_spec["minTaskMember"] = mtm
        if spec.get("priorityClassName"):
            pg_spec["priorityClassName"] = spec["priorityClassName"]
        nt = spec.get("networkTopology")
        if isinstance(nt, dict):  # Volcano's createOrUpdatePodGroup: mode, then the tier or else the tier name
            pg_nt: dict[str, Any] = {"mode": nt.get("mode") or "hard"}
            if nt.get("highestTierAllowed") is not None:
                pg_nt["highestTierAllowed"] = nt["highestTierAllowed"]
            elif nt.get("highestTierName"):
                pg_nt["highestTierName"] = nt["highestTierName"]
            pg_spec["networkTopology"] = pg_nt
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": md["name"], "namespace": md.get("namespace") or "default",
                             "creationTimestamp": md.get("creationTimestamp"),
                             "annotations": dict(md.get("annotations") or {})},
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

    # --- reconcile -----------------------------------------------------------------------------------------
    def add_job(self, job: dict[str, Any]) -> JobState:
        st = JobState(job)
        self.jobs[st.key] = st
        self.api.create(self._podgroup(st))
        self._status(st)
        return st

    def on_podgroup(self, job_key: str, phase: str) -> None:
        st = self.jobs.get(job_key)
        if st is None or st.phase in FINAL or st.phase in ENDED:
            return
        if phase != "Pending" and st.phase in ("Pending", "Restarting") and not st.pods:
            self._create_pods(st)

    def _create_pods(self, st: JobState) -> None:
        ns = st.job["metadata"].get("namespace") or "default"
        for task in self._tasks(st.job):
            for i in range(int(task.get("replicas", 1))):
                pod = self._pod(st, task, i)
                name = pod["metadata"]["name"]
                if name in st.pods:
                    continue
                cur = self.api.get("Pod", ns, name)
                if cur is not None and not (cur["metadata"].get("deletionTimestamp") or name in st.terminating):
                    continue  # already there (a recovered job): a terminating predecessor is replaced instead
                st.pods[name] = "Pending"
                self.api.create(pod)
        st.phase = "Pending"
        self._status(st)

    def _policy(self, st: JobState, event: str, task: str) -> str | None:
        for t in self._tasks(st.job):
            if t["name"] == task:
                for p in t.get("policies") or []:
                    if _matches(p, event):
                        return p.get("action")
        for p in st.job["spec"].get("policies") or []:
            if _matches(p, event):
                return p.get("action")
        return None

    def on_pod(self, job_key: str, pod_name: str, task: str, phase: str, evicted: bool = False) -> str | None:
        """A pod reached ``phase`` (Running, Succeeded, Failed) or was evicted and is gone (``evicted``).
        Returns the lifecycle action taken, if any."""
        st = self.jobs.get(job_key)
        if st is None or st.phase in FINAL or pod_name not in st.pods:
            return None
        ns = st.job["metadata"].get("namespace") or "default"
        action: str | None = None
        if evicted:
            st.evicted += 1
            st.pods.pop(pod_name, None)
            action = self._policy(st, "PodEvicted", task)
            if action is None:  # Volcano's sync recreates the missing pod
                tasks = {t["name"]: t for t in self._tasks(st.job)}
                idx = int(pod_name.rsplit("-", 1)[1])
                pod = self._pod(st, tasks[task], idx)
                st.pods[pod_name] = "Pending"
                self.api.create(pod)
        else:
            st.pods[pod_name] = phase
            if phase == "Failed":
                action = self._policy(st, "PodFailed", task)
            elif phase == "Succeeded":
                done = [n for n, p in st.pods.items() if n.startswith(f"{st.job['metadata']['name']}-{task}-")]
                if all(st.pods[n] == "Succeeded" for n in done):
                    action = self._policy(st, "TaskCompleted", task)
        if action in ("RestartJob", "RestartTask", "RestartPod"):
            self._restart(st, ns)
        elif action == "AbortJob":
            self._finish(st, ns, "Aborted")
        elif action == "TerminateJob":
            self._finish(st, ns, "Terminated")
        elif action == "CompleteJob":
            self._finish(st, ns, "Completed")
        else:
            self._update_phase(st, ns)
        self._status(st)
        return action

    def on_pod_gone(self, job_key: str, pod_name: str) -> None:
        """A pod the controller deleted has finished terminating; an ending job ends when its last one is gone."""
        st = self.jobs.get(job_key)
        if st is None or pod_name not in st.terminating:
            return
        st.terminating.discard(pod_name)
        if not st.terminating and st.phase in ENDED:
            st.phase = ENDED[st.phase]
        elif not st.terminating and st.phase == "Restarting" and st.pods:
            st.phase = "Pending"  # Volcano: the old pods are gone, the new ones (created or waiting) take over
        self._status(st)

    def _update_phase(self, st: JobState, ns: str) -> None:
        phases = list(st.pods.values())
        min_av = int(st.job["spec"].get("minAvailable", len(phases)))
        all_done = bool(phases) and all(p == "Succeeded" for p in phases)
        enough_done = phases.count("Succeeded") >= min_av and "Running" not in phases and "Pending" not in phases
        if all_done or enough_done:
            self._finish(st, ns, "Completed")
        elif phases.count("Failed") and phases.count("Failed") + phases.count("Succeeded") == len(phases):
            self._finish(st, ns, "Failed")
        elif phases.count("Running") + phases.count("Succeeded") >= min_av and min_av > 0:
            st.phase = "Running"

    def _kill_pods(self, st: JobState, ns: str, finished: bool = False) -> None:
        """Delete the job's live pods; a finished job's completed pods go too (the simulator keeps no history
        in the cluster, and a real cluster's garbage collection follows the owner reference)."""
        for name, phase in list(st.pods.items()):
            if (finished or phase in ("Pending", "Running")) and not self.api.delete("Pod", ns, name):
                st.terminating.add(name)
        st.pods.clear()

    def _restart(self, st: JobState, ns: str) -> None:
        st.retries += 1
        max_retry = int(st.job["spec"].get("maxRetry", 3))
        if st.retries >= max_retry:  # Volcano's restarting state: retryCount reaching maxRetry fails the job
            self._finish(st, ns, "Failed")
            return
        self._kill_pods(st, ns)
        st.version += 1
        st.phase = "Restarting"
        pg = self.api.get("PodGroup", ns, st.job["metadata"]["name"])
        if pg is not None and (pg.get("status") or {}).get("phase") != "Pending":
            self._create_pods(st)
            st.phase = "Restarting"

    def _finish(self, st: JobState, ns: str, phase: str) -> None:
        self._kill_pods(st, ns, finished=True)
        st.phase = ENDING[phase] if st.terminating and phase in ENDING else phase
        self.api.delete("PodGroup", ns, st.job["metadata"]["name"])


def qty_string(name: str, v: float) -> str:
    """A resource amount in the cache's units back to a quantity string."""
    if name == "cpu":
        return f"{v:g}m"
    if name == "memory":
        return f"{int(v)}"
    return f"{v:g}m"
