"""The vcjob controller's lifecycle actions, spelled out as Volcano's job controller runs them
(``pkg/controllers/job/state/*.go``; ``job_controller_actions.go``: killJob, killTarget, killPods, syncJob).

The API here deletes at once, as the simulator's does (``tests/test_vcjob_ending.py`` has the graceful case).  Every
test starts from a job whose PodGroup the scheduler admitted and whose pods run; its jobs have two tasks."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.controllers.vcjob import JobController, JobState, partition_of


class ImmediateAPI:
    """An in-memory ClusterAPI whose deletions are immediate; it records what was created and deleted."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.status: dict[str, Any] = {}

    def create(self, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        self.objs[(obj["kind"], md.get("namespace") or "default", md["name"])] = obj
        self.created.append(f"{obj['kind']}/{md['name']}")

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        if self.objs.pop((kind, namespace, name), None) is not None:
            self.deleted.append(f"{kind}/{name}")
        return True

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objs.get((kind, namespace, name))

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        self.status = status

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        pass

    def pods(self) -> set[str]:
        return {name for kind, _, name in self.objs if kind == "Pod"}

    def pg_phase(self) -> str | None:
        pg = self.objs.get(("PodGroup", "default", "j"))
        return None if pg is None else pg["status"]["phase"]


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, **extra,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}


def make_job(policies: list[dict[str, Any]] | None = None, tasks: list[dict[str, Any]] | None = None,
             **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"minAvailable": 3, "queue": "default", "policies": policies or [],
                     "tasks": tasks or [task("a", 1), task("b", 2)], **spec}}


def admitted(job: dict[str, Any], keep: bool = True) -> tuple[JobController, ImmediateAPI, JobState]:
    """The job created, its PodGroup admitted (Inqueue: the pods are created) and every pod Running."""
    api = ImmediateAPI()
    ctrl = JobController(api, keep_finished_pods=keep)
    st = ctrl.add_job(job)
    assert st.pods == {} and api.pg_phase() == "Pending"  # pods only once enqueue admitted the group
    admit(ctrl, api, st)
    for name in sorted(st.pods):
        ctrl.on_pod(st.key, name, name.split("-")[1], "Running")
    assert st.phase == "Running"
    api.created.clear()
    api.deleted.clear()
    return ctrl, api, st


def admit(ctrl: JobController, api: ImmediateAPI, st: JobState) -> None:
    api.objs[("PodGroup", "default", "j")]["status"]["phase"] = "Inqueue"
    ctrl.on_podgroup(st.key, "Inqueue")


def evict(ctrl: JobController, api: ImmediateAPI, st: JobState, name: str) -> str | None:
    """The pod is deleted by someone else (preemption, a failed node): the controller sees PodEvicted."""
    api.objs.pop(("Pod", "default", name), None)
    return ctrl.on_pod(st.key, name, name.split("-")[1], "Failed", evicted=True)


ALL = {"j-a-0", "j-b-0", "j-b-1"}


# --- RestartJob ---------------------------------------------------------------------------------------------------
def test_restart_job_deletes_every_pod_succeeded_ones_too_and_the_podgroup() -> None:
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}]))
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")  # task a is done (no TaskCompleted policy: a sync)
    assert st.phase == "Running"
    evict(ctrl, api, st, "j-b-0")  # PodEvicted -> RestartJob
    # killJob with PodRetainPhaseNone: the Succeeded j-a-0 goes as well; the PodGroup is deleted and re-created by
    # the next sync, Pending: the job is enqueued again before any pod is created
    assert set(api.deleted) == {"Pod/j-a-0", "Pod/j-b-1", "PodGroup/j"}
    assert api.pods() == set() and api.pg_phase() == "Pending"
    assert (st.phase, st.retries, st.version) == ("Restarting", 1, 1)
    assert api.status["retryCount"] == 1 and api.status["state"]["phase"] == "Restarting"
    admit(ctrl, api, st)
    # every pod is created again, with the new version; Restarting -> Pending (total - terminating >= minAvailable)
    assert api.pods() == ALL and st.phase == "Pending" and set(st.pods.values()) == {"Pending"}
    assert api.objs[("Pod", "default", "j-a-0")]["metadata"]["annotations"]["volcano.sh/job-version"] == "1"
    for name in sorted(ALL):
        ctrl.on_pod(st.key, name, name.split("-")[1], "Running")
    assert st.phase == "Running"


def test_restart_job_stays_restarting_until_the_new_podgroup_is_admitted() -> None:
    # restartingUpdateStatus judges by status.terminating as the kill stored it (3 of 3 replicas, minAvailable 3)
    # until pods are synced again, which needs the re-created PodGroup to leave Pending
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}]))
    evict(ctrl, api, st, "j-b-0")
    assert st.phase == "Restarting" and st.killed == 2
    ctrl.execute(st, "SyncJob")
    assert st.phase == "Restarting"


def test_restart_job_with_a_low_min_available_is_pending_at_once() -> None:
    # 3 replicas, minAvailable 1, 2 killed: 3 - 2 >= 1, so the next sync makes the job Pending (the PodGroup is
    # still Pending, so no pod exists yet)
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}], minAvailable=1))
    evict(ctrl, api, st, "j-b-0")
    assert st.phase == "Pending" and api.pods() == set() and st.retries == 1


def test_the_last_retry_keeps_finished_pods_and_fails_the_job() -> None:
    # maxRetry 2: at retryCount 1 (>= maxRetry - 1) killJob keeps Succeeded/Failed pods whatever the action;
    # retryCount reaches 2 = maxRetry, and the restarting state fails the job; its PodGroup is gone for good
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}], maxRetry=2))
    st.retries = 1
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")
    evict(ctrl, api, st, "j-b-0")
    assert (st.phase, st.retries) == ("Failed", 2)
    assert api.pods() == {"j-a-0"} and api.pg_phase() is None
    assert evict(ctrl, api, st, "j-a-0") is None  # a finished job takes no action


@pytest.mark.parametrize(("max_retry", "restarts_before_failed"), [(None, 3), (0, 3), (1, 1), (5, 5)])
def test_max_retry_defaults_to_three(max_retry: int | None, restarts_before_failed: int) -> None:
    # Volcano's webhook sets maxRetry 3 when the Job leaves it unset or 0 (mutate_job.go: DefaultMaxRetry)
    spec = {} if max_retry is None else {"maxRetry": max_retry}
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}], **spec))
    for i in range(1, restarts_before_failed + 1):
        assert st.phase != "Failed"
        admit(ctrl, api, st)
        evict(ctrl, api, st, "j-b-0")
        assert st.retries == i
    assert st.phase == "Failed"


def test_a_restarting_job_counts_no_further_retry() -> None:
    # state/restarting.go: another action while Restarting kills again but leaves retryCount alone
    ctrl, _api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartJob"}], minAvailable=3))
    ctrl.execute(st, "RestartJob")
    assert (st.phase, st.retries, st.killed) == ("Restarting", 1, 3)
    ctrl.execute(st, "RestartJob")
    # nothing left to kill: status.terminating 0, so restartingUpdateStatus moves on to Pending; still one retry
    assert (st.phase, st.retries, st.killed) == ("Pending", 1, 0)


# --- RestartTask, RestartPod, RestartPartition (killTarget) -------------------------------------------------------
def test_restart_task_kills_the_tasks_pods_whatever_their_phase_and_keeps_the_podgroup() -> None:
    ctrl, api, st = admitted(make_job(tasks=[task("a", 1), task("b", 2, policies=[
        {"event": "PodFailed", "action": "RestartTask"}])]))
    ctrl.on_pod(st.key, "j-b-1", "b", "Succeeded")
    ctrl.on_pod(st.key, "j-b-0", "b", "Failed")  # PodFailed -> RestartTask: j-b-0 and the Succeeded j-b-1
    assert set(api.deleted) == {"Pod/j-b-0", "Pod/j-b-1"}  # not the PodGroup, not task a
    assert (st.retries, st.version) == (1, 0)
    # the PodGroup is still admitted, so the sync that follows re-creates both at once: Restarting -> Pending
    assert api.pods() == ALL and st.phase == "Pending"
    assert st.pods == {"j-a-0": "Running", "j-b-0": "Pending", "j-b-1": "Pending"}


def test_restart_pod_recreates_only_the_evicted_pod() -> None:
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartPod"}]))
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")
    evict(ctrl, api, st, "j-b-1")
    assert api.deleted == [] and api.created == ["Pod/j-b-1"]  # the evicted pod was already gone
    assert (st.retries, st.version, st.phase) == (1, 0, "Pending")
    assert st.pods == {"j-a-0": "Succeeded", "j-b-0": "Running", "j-b-1": "Pending"}
    ctrl.on_pod(st.key, "j-b-1", "b", "Running")
    assert st.phase == "Running"  # pending.go: minAvailable <= running + succeeded + failed


def test_restart_partition_kills_the_pods_of_the_evicted_pods_partition() -> None:
    # partitionSize 2: pods 0,1 are partition 0 and 2,3 partition 1 (createJobPod: index // partitionSize)
    tasks = [task("w", 4, partitionPolicy={"partitionSize": 2})]
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartPartition"}], tasks=tasks,
                                      minAvailable=4))
    evict(ctrl, api, st, "j-w-3")
    assert api.deleted == ["Pod/j-w-2"] and sorted(api.created) == ["Pod/j-w-2", "Pod/j-w-3"]
    assert st.retries == 1 and st.pods["j-w-0"] == st.pods["j-w-1"] == "Running"
    assert [partition_of(f"j-w-{i}", 2) for i in range(4)] == [0, 0, 1, 1]


def test_restart_partition_without_a_partition_policy_does_nothing() -> None:
    # killPods returns before touching the status when the task has no partitions: no retry, no phase change
    ctrl, api, st = admitted(make_job([{"event": "PodEvicted", "action": "RestartPartition"}]))
    evict(ctrl, api, st, "j-b-0")
    assert st.retries == 0 and api.deleted == []


# --- AbortJob, TerminateJob, CompleteJob, ResumeJob ----------------------------------------------------------------
@pytest.mark.parametrize(("action", "phase"), [("AbortJob", "Aborted"), ("TerminateJob", "Terminated"),
                                               ("CompleteJob", "Completed")])
def test_ending_actions_keep_finished_pods_and_delete_the_rest(action: str, phase: str) -> None:
    ctrl, api, st = admitted(make_job([{"event": "PodFailed", "action": action}]))
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")
    ctrl.on_pod(st.key, "j-b-0", "b", "Failed")
    # PodRetainPhaseSoft: the Succeeded and the Failed pod stay, the Running one goes, with the PodGroup; the pods
    # are gone at once here, so the Aborting/Terminating/Completing step ends in the same sync
    assert set(api.deleted) == {"Pod/j-b-1", "PodGroup/j"}
    assert api.pods() == {"j-a-0", "j-b-0"} and st.phase == phase and st.retries == 0


def test_the_simulator_gc_drops_a_finished_jobs_pods() -> None:
    ctrl, api, st = admitted(make_job([{"event": "PodFailed", "action": "AbortJob"}]), keep=False)
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")
    ctrl.on_pod(st.key, "j-b-0", "b", "Failed")
    assert st.phase == "Aborted" and api.pods() == set() and st.pods == {}


def test_resume_an_aborted_job_restarts_it() -> None:
    ctrl, api, st = admitted(make_job())
    ctrl.on_pod(st.key, "j-a-0", "a", "Succeeded")
    ctrl.execute(st, "AbortJob")
    assert st.phase == "Aborted" and api.pods() == {"j-a-0"} and api.pg_phase() is None
    ctrl.execute(st, "ResumeJob")
    # state/aborted.go: killJob (keeping finished pods), retryCount + 1, Restarting; the sync re-creates the PodGroup
    assert (st.retries, api.pg_phase()) == (1, "Pending") and st.phase in ("Restarting", "Pending")
    admit(ctrl, api, st)
    assert api.pods() == ALL and st.pods["j-a-0"] == "Succeeded" and st.phase == "Pending"


def test_resume_on_a_running_job_is_a_sync() -> None:
    ctrl, api, st = admitted(make_job())
    ctrl.execute(st, "ResumeJob")
    assert (st.phase, st.retries, api.deleted) == ("Running", 0, [])


# --- events and policies --------------------------------------------------------------------------------------------
def test_task_completed_raises_the_tasks_policy_before_the_jobs() -> None:
    job = make_job([{"event": "TaskCompleted", "action": "AbortJob"}],
                   tasks=[task("a", 1), task("b", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])])
    ctrl, api, st = admitted(job)
    assert ctrl.on_pod(st.key, "j-b-0", "b", "Succeeded") is None  # half of task b: no TaskCompleted yet
    assert ctrl.on_pod(st.key, "j-b-1", "b", "Succeeded") == "CompleteJob"  # the task's policy wins
    assert st.phase == "Completed" and set(api.deleted) == {"Pod/j-a-0", "PodGroup/j"}


def test_any_event_matches_every_event() -> None:
    ctrl, _api, st = admitted(make_job([{"events": ["*"], "action": "TerminateJob"}]))
    assert ctrl.on_pod(st.key, "j-a-0", "a", "Failed") == "TerminateJob" and st.phase == "Terminated"


def test_an_evicted_pod_without_a_policy_is_recreated_and_the_job_goes_back_to_pending() -> None:
    # running.go: Pending pods (1) > replicas (3) - minAvailable (3) -> Pending; Running again once it runs
    ctrl, api, st = admitted(make_job())
    evict(ctrl, api, st, "j-b-0")
    assert api.created == ["Pod/j-b-0"] and st.phase == "Pending" and st.retries == 0
    ctrl.on_pod(st.key, "j-b-0", "b", "Running")
    assert st.phase == "Running"


def test_an_evicted_pod_of_an_elastic_job_keeps_it_running() -> None:
    # minAvailable 2 of 3: one pending pod is not more than 3 - 2, so the job stays Running
    ctrl, api, st = admitted(make_job(minAvailable=2))
    evict(ctrl, api, st, "j-b-0")
    assert st.phase == "Running"


@pytest.mark.parametrize(("outcomes", "spec", "phase"), [
    (("Succeeded", "Succeeded", "Succeeded"), {}, "Completed"),
    (("Succeeded", "Succeeded", "Failed"), {}, "Failed"),  # 2 succeeded < minAvailable 3
    (("Succeeded", "Succeeded", "Failed"), {"minAvailable": 2}, "Completed"),
    (("Failed", "Failed", "Succeeded"), {"minSuccess": 1}, "Completed"),  # minSuccess reached at the first success
    (("Succeeded", "Failed", "Failed"), {"minAvailable": 1, "minSuccess": 2}, "Failed"),
])
def test_a_running_job_ends_when_every_pod_has_finished(outcomes: tuple[str, ...], spec: dict[str, Any],
                                                        phase: str) -> None:
    ctrl, _api, st = admitted(make_job(**spec))
    for name, outcome in zip(("j-a-0", "j-b-0", "j-b-1"), outcomes, strict=True):
        ctrl.on_pod(st.key, name, name.split("-")[1], outcome)
    assert st.phase == phase


def test_a_task_below_its_min_available_fails_the_job() -> None:
    # running.go: when minAvailable >= the tasks' total minAvailable, a task with fewer successes than its own
    # minAvailable fails the job even if the job's minAvailable is met
    job = make_job(tasks=[task("a", 1), task("b", 2, minAvailable=2)], minAvailable=2)
    job["spec"]["tasks"][0]["minAvailable"] = 0
    ctrl, _api, st = admitted(job)
    for name, outcome in (("j-a-0", "Succeeded"), ("j-b-0", "Succeeded"), ("j-b-1", "Failed")):
        ctrl.on_pod(st.key, name, name.split("-")[1], outcome)
    assert st.phase == "Failed"
