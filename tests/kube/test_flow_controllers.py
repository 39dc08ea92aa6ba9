"""``pyvolcano controller``'s CronJob and JobFlow/JobTemplate controllers on a real API server: a CronJob tick
creates a Job, a JobFlow starts its dependent Job once the first one completed."""

from __future__ import annotations

import pytest

from pyvolcano.controllers.cronjob import end_timestamp
from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import CRONJOB, JOBFLOW, JOBTEMPLATE, VCJOB
from tests.kube import cluster
from tests.kube.cluster import Env, complete_job, wait

pytestmark = pytest.mark.kube

# a queue nobody creates: the job controller leaves these Jobs Pending (Invalid), so the test sets their phase
SPEC = {"queue": "no-such-queue-flow-test", "minAvailable": 1,
        "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}


def _jobs(api: KubeClient, ns: str) -> dict[str, dict]:
    return {j["metadata"]["name"]: j for j in api.list(VCJOB, ns)[0]}


def test_a_cronjob_tick_creates_its_job(api: KubeClient, env: Env, controller: cluster.Proc) -> None:
    api.create(CRONJOB, {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                         "metadata": {"name": "tick", "namespace": env.ns},
                         "spec": {"schedule": "@every 2s", "concurrencyPolicy": "Forbid",
                                  "jobTemplate": {"metadata": {"labels": {"app": "tick"}}, "spec": SPEC}}}, env.ns)
    jobs = wait(lambda: _jobs(api, env.ns), 30, "the CronJob's first Job")
    (name, job), = jobs.items()
    assert name.startswith("tick-") and job["metadata"]["labels"]["app"] == "tick"
    assert "volcano.sh/cronjob-scheduled-timestamp" in job["metadata"]["annotations"]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    cj = wait(lambda: (api.get(CRONJOB, "tick", env.ns).get("status") or {}).get("active") and
              api.get(CRONJOB, "tick", env.ns), 15, "the CronJob's status")
    assert [a["name"] for a in cj["status"]["active"]] == [name] and cj["status"]["lastScheduleTime"]


def test_a_jobflow_starts_the_dependent_job_after_the_first_completes(api: KubeClient, env: Env,
                                                                      controller: cluster.Proc) -> None:
    for t in ("prep", "train"):
        api.create(JOBTEMPLATE, {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                                 "metadata": {"name": t, "namespace": env.ns}, "spec": SPEC}, env.ns)
    api.create(JOBFLOW, {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                         "metadata": {"name": "flow", "namespace": env.ns},
                         "spec": {"jobRetainPolicy": "retain",
                                  "flows": [{"name": "prep"}, {"name": "train", "dependsOn": {"targets": ["prep"]}}]}},
               env.ns)
    wait(lambda: "flow-prep" in _jobs(api, env.ns), 30, "the JobFlow's first Job")
    assert "flow-train" not in _jobs(api, env.ns)
    prep = api.get(VCJOB, "flow-prep", env.ns)
    assert prep["metadata"]["labels"]["volcano.sh/createdByJobFlow"] == f"{env.ns}.flow"
    complete_job(api, env.ns, "flow-prep")
    wait(lambda: "flow-train" in _jobs(api, env.ns), 30, "the dependent Job")
    jt = wait(lambda: (api.get(JOBTEMPLATE, "prep", env.ns).get("status") or {}).get("jobDependsOnList"), 15,
              "the JobTemplate's status")
    assert jt == ["flow-prep"]
    st = wait(lambda: (api.get(JOBFLOW, "flow", env.ns).get("status") or {}).get("completedJobs"), 15,
              "the JobFlow's status")
    assert st == ["flow-prep"]
    # each jobStatusList entry's endTimestamp is its Job's creation time plus its runningDuration, none without one
    # (getAllJobStatus); flow-train's PodGroup is never admitted, so its status has none (syncJob's early write)
    def consistent() -> bool:
        jobs = _jobs(api, env.ns)
        entries = (api.get(JOBFLOW, "flow", env.ns).get("status") or {}).get("jobStatusList") or []
        return {e["name"] for e in entries} == {"flow-prep", "flow-train"} and all(
            e.get("endTimestamp") == end_timestamp(jobs[e["name"]]["metadata"]["creationTimestamp"],
                                                   (jobs[e["name"]].get("status") or {}).get("runningDuration"))
            for e in entries)

    wait(consistent, 30, "the JobFlow's endTimestamps to follow the Jobs' runningDuration")
    assert "runningDuration" not in (api.get(VCJOB, "flow-train", env.ns).get("status") or {})
