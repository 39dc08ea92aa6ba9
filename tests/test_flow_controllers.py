"""The CronJob and JobFlow/JobTemplate controllers (controllers/cronjob.py, controllers/jobflow.py) on an in-memory
ClusterAPI: schedule ticks, concurrency policies, history limits, dependencies, retainPolicy and bad input."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from pyvolcano.controllers.cronjob import CronJobController, end_timestamp, fmt_duration, running_duration
from pyvolcano.controllers.jobflow import JobFlowController, template_status

T0 = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)


class Memory:
    """ClusterAPI in a dict, with uids and creation times as an API server gives them."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[tuple[str, str]] = []
        self.n = 0
        self.now = T0

    def create(self, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        self.n += 1
        obj["metadata"].update(uid=f"uid-{self.n}", creationTimestamp=self.now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.objs[(obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        self.objs.pop((kind, namespace, name), None)
        return True

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objs.get((kind, namespace, name))

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        if (kind, namespace, name) in self.objs:
            self.objs[(kind, namespace, name)]["status"] = copy.deepcopy(status)

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        self.events.append((reason, message))

    def jobs(self) -> list[dict[str, Any]]:
        return [o for (k, _, _), o in sorted(self.objs.items()) if k == "Job"]

    def set_phase(self, name: str, phase: str) -> None:
        self.objs[("Job", "ns", name)]["status"] = {"state": {"phase": phase, "lastTransitionTime":
                                                              self.now.strftime("%Y-%m-%dT%H:%M:%SZ")}}


def cronjob(api: Memory, **spec: Any) -> None:
    api.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                "metadata": {"name": "cj", "namespace": "ns"},
                "spec": {"schedule": "*/10 * * * *", "jobTemplate": {"metadata": {"labels": {"team": "a"}},
                                                                    "spec": {"queue": "q", "tasks": []}}, **spec}})


def tick(api: Memory, ctrl: CronJobController, minutes: float) -> float | None:
    api.now = T0 + timedelta(minutes=minutes)
    return ctrl.sync(api.get("CronJob", "ns", "cj") or {}, api.jobs(), api.now)


def test_a_cronjob_fires_on_schedule_with_volcanos_names_and_annotations() -> None:
    api, ctrl = Memory(), None
    cronjob(api)
    ctrl = CronJobController(api)
    wait = tick(api, ctrl, 5)
    assert api.jobs() == [] and wait is not None and abs(wait - 300.1) < 0.01
    tick(api, ctrl, 10.5)
    (job,) = api.jobs()
    name = f"cj-{int((T0 + timedelta(minutes=10)).timestamp()) // 60}"
    assert job["metadata"]["name"] == name and job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == "2026-01-01T00:10:00Z"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob" and job["spec"]["queue"] == "q"
    st = api.get("CronJob", "ns", "cj")["status"]  # type: ignore[index]
    assert st["lastScheduleTime"] == "2026-01-01T00:10:00Z" and [a["name"] for a in st["active"]] == [name]
    tick(api, ctrl, 11)  # same schedule time again: nothing new
    assert len(api.jobs()) == 1


def test_concurrency_policies_and_history_limits() -> None:
    api = Memory()
    cronjob(api, concurrencyPolicy="Forbid", successfulJobsHistoryLimit=1)
    ctrl = CronJobController(api)
    tick(api, ctrl, 10)
    tick(api, ctrl, 20)
    assert len(api.jobs()) == 1 and ("ForbidConcurrent", "Skipping job creation because another job is already "
                                     "running") in api.events
    api.set_phase(api.jobs()[0]["metadata"]["name"], "Completed")
    tick(api, ctrl, 30)
    assert len(api.jobs()) == 2
    st = api.get("CronJob", "ns", "cj")["status"]  # type: ignore[index]
    assert st["lastSuccessfulTime"] == "2026-01-01T00:20:00Z" and len(st["active"]) == 1
    api.set_phase(api.jobs()[1]["metadata"]["name"], "Completed")
    tick(api, ctrl, 40)  # two completed now, the limit is 1: the older goes
    names = [j["metadata"]["name"] for j in api.jobs()]
    assert len(names) == 2 and f"cj-{int(T0.timestamp()) // 60 + 10}" not in names

    api = Memory()
    cronjob(api, concurrencyPolicy="Replace")
    ctrl = CronJobController(api)
    tick(api, ctrl, 10)
    tick(api, ctrl, 20)
    (job,) = api.jobs()
    assert job["metadata"]["name"].endswith(str(int(T0.timestamp()) // 60 + 20))


def test_suspend_starting_deadline_and_an_unparseable_schedule() -> None:
    api = Memory()
    cronjob(api, suspend=True)
    ctrl = CronJobController(api)
    assert tick(api, ctrl, 30) is None and api.jobs() == []
    api = Memory()
    cronjob(api, startingDeadlineSeconds=60)
    ctrl = CronJobController(api)
    tick(api, ctrl, 13)  # 00:10 is more than 60 s ago: missed for good
    assert api.jobs() == []
    api = Memory()
    cronjob(api, schedule="61 * * * *")
    ctrl = CronJobController(api)
    assert tick(api, ctrl, 30) is None and tick(api, ctrl, 40) is None
    assert [r for r, _ in api.events] == ["UnparseableSchedule"]  # once, not on every sync


def template(api: Memory, name: str) -> None:
    api.create({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"queue": "q", "tasks": [{"name": name}]}})


def jobflow(api: Memory, flows: list[tuple[str, list[str]]], retain: str = "retain") -> None:
    api.create({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "jf", "namespace": "ns"},
                "spec": {"jobRetainPolicy": retain,
                         "flows": [{"name": n, **({"dependsOn": {"targets": t}} if t else {})} for n, t in flows]}})


def flow_sync(api: Memory, ctrl: JobFlowController) -> dict[str, Any]:
    templates = {o["metadata"]["name"]: o for (k, _, _), o in api.objs.items() if k == "JobTemplate"}
    ctrl.sync(api.get("JobFlow", "ns", "jf") or {}, api.jobs(), templates, api.now)
    return (api.get("JobFlow", "ns", "jf") or {}).get("status") or {}


def test_a_jobflow_runs_its_jobs_in_dependency_order_then_deletes_them() -> None:
    api = Memory()
    template(api, "a")
    template(api, "b")
    jobflow(api, [("a", []), ("b", ["a"])], retain="delete")
    ctrl = JobFlowController(api)
    st = flow_sync(api, ctrl)
    assert [j["metadata"]["name"] for j in api.jobs()] == ["jf-a"] and st["state"]["phase"] == "Pending"
    job = api.jobs()[0]
    assert job["metadata"]["labels"] == {"volcano.sh/createdByJobTemplate": "ns.a",
                                         "volcano.sh/createdByJobFlow": "ns.jf"}
    assert job["spec"]["tasks"] == [{"name": "a"}] and job["metadata"]["ownerReferences"][0]["kind"] == "JobFlow"
    api.set_phase("jf-a", "Running")
    st = flow_sync(api, ctrl)
    assert st["state"]["phase"] == "Running" and st["runningJobs"] == ["jf-a"] and len(api.jobs()) == 1
    api.set_phase("jf-a", "Completed")
    st = flow_sync(api, ctrl)
    assert [j["metadata"]["name"] for j in api.jobs()] == ["jf-a", "jf-b"]
    assert template_status(api.get("JobTemplate", "ns", "a") or {}, api.jobs()) == {"jobDependsOnList": ["jf-a"]}
    api.set_phase("jf-b", "Completed")
    st = flow_sync(api, ctrl)
    assert st["state"]["phase"] == "Succeed" and st["completedJobs"] == ["jf-a", "jf-b"]
    assert [h["state"] for h in st["jobStatusList"][0]["runningHistories"]] == ["Running", "Completed"]
    flow_sync(api, ctrl)  # retainPolicy delete: a Succeed flow removes its jobs
    assert api.jobs() == []


def test_a_failed_job_fails_the_flow_and_a_cycle_or_missing_template_never_crashes() -> None:
    api = Memory()
    template(api, "a")
    jobflow(api, [("a", []), ("b", ["a"])])
    ctrl = JobFlowController(api)
    flow_sync(api, ctrl)
    api.set_phase("jf-a", "Failed")
    assert flow_sync(api, ctrl)["state"]["phase"] == "Failed"
    api = Memory()
    template(api, "a")
    jobflow(api, [("a", ["b"]), ("b", ["a"]), ("c", [])])
    ctrl = JobFlowController(api)
    flow_sync(api, ctrl)
    assert api.jobs() == []  # c has no template; a and b wait on each other forever
    assert ("FailedCreate", "jobtemplate.flow.volcano.sh 'c' not found") in api.events


def test_jobflow_end_timestamp_is_creation_plus_the_jobs_running_duration() -> None:
    """``getAllJobStatus``: ``endTimestamp`` = the Job's creationTimestamp + ``status.runningDuration`` (which the
    job controller's syncJob writes: lastTransitionTime - creationTimestamp, a Go duration); none without it."""
    assert [fmt_duration(s) for s in (0, 42, 90, 3605, -5)] == ["0s", "42s", "1m30s", "1h0m5s", "-5s"]
    assert running_duration("2026-01-01T00:00:00Z", "2026-01-01T01:02:03Z") == "1h2m3s"
    assert running_duration(None, "2026-01-01T01:02:03Z") is None
    assert end_timestamp("2026-01-01T00:00:00Z", "1h2m3.5s") == "2026-01-01T01:02:03Z"
    assert end_timestamp("2026-01-01T00:00:00Z", "soon") is None and end_timestamp("x", "1s") is None
    api = Memory()
    template(api, "a")
    jobflow(api, [("a", [])], retain="retain")
    ctrl = JobFlowController(api)
    st = flow_sync(api, ctrl)
    assert "endTimestamp" not in st["jobStatusList"][0]  # no runningDuration yet
    api.now = T0 + timedelta(minutes=3)
    api.set_phase("jf-a", "Completed")
    api.objs[("Job", "ns", "jf-a")]["status"]["runningDuration"] = "3m0s"
    st = flow_sync(api, ctrl)
    (entry,) = st["jobStatusList"]
    assert entry["startTimestamp"] == "2026-01-01T00:00:00Z" and entry["endTimestamp"] == "2026-01-01T00:03:00Z"
    assert st["conditions"]["jf-a"]["runningDuration"] == "3m0s"


def test_the_job_controller_writes_running_duration_as_volcanos() -> None:
    """``runningDuration`` (``job_controller_actions.go``): a kill's write (``killPods``: an ending phase,
    Completed after Completing, any write of a finished Job, Pending after Restarting) sets lastTransitionTime -
    creationTimestamp; syncJob with an admitted PodGroup writes a status without it; syncJob's write while the
    PodGroup is Pending keeps the old one."""
    from pyvolcano.kube.cluster_api import _stamp_transition

    created = "2026-01-01T00:00:00Z"
    old = {"state": {"phase": "Running", "lastTransitionTime": "2026-01-01T00:01:40Z"}, "runningDuration": "9s"}
    run = {"state": {"phase": "Running"}}
    assert "runningDuration" not in _stamp_transition(old, run, created, lambda: True)
    out = _stamp_transition(old, run, created, lambda: False)
    assert out["state"]["lastTransitionTime"] == "2026-01-01T00:01:40Z" and out["runningDuration"] == "9s"
    assert "runningDuration" not in _stamp_transition({}, {"state": {"phase": "Pending"}}, created, lambda: False)
    for phase, was in (("Aborting", "Running"), ("Completed", "Completing"), ("Completed", "Completed"),
                       ("Failed", "Restarting"), ("Pending", "Restarting")):
        before = {"state": {"phase": was, "lastTransitionTime": "2026-01-01T00:00:05Z"}}
        out = _stamp_transition(before, {"state": {"phase": phase}}, created, lambda: True)
        want = "5s" if phase == was else None
        assert out.get("runningDuration", "") != "" and (want is None or out["runningDuration"] == want), (phase, was)
    # finished through syncJob (its pods all done): no runningDuration until a later kill's write
    assert "runningDuration" not in _stamp_transition(old, {"state": {"phase": "Completed"}}, created, lambda: True)
