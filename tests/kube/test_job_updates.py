"""The job controller on a cluster (the in-memory API of ``test_controller.py``): a running Job scaled (the
PodGroup, the pods and svc's hosts ConfigMap follow), an update Volcano's webhook forbids (refused with its
message, nothing changes), and ``ttlSecondsAfterFinished`` (the Job is deleted that long after it finished)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
import yaml

from pyvolcano.kube.resources import CONFIGMAP, EVENT, NODE, POD, PODGROUP, VCJOB
from tests.kube.helpers import eventually, node
from tests.kube.test_controller import World, submit
from tests.kube.test_vcctl import TF_JOB


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    w.api.create(NODE, node("n1", cpu="16", memory="64Gi"))
    yield w.start()
    w.close()


def _replace_spec(w: World, spec: dict) -> None:
    job = w.job()
    job["spec"] = spec
    w.api.replace(VCJOB, job, "default")


def test_scale_up_then_down_a_running_job(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3, what="the job to run")
    spec = copy.deepcopy(world.job()["spec"])
    spec["tasks"][1]["replicas"] = 4
    spec["minAvailable"] = 4
    _replace_spec(world, spec)
    eventually(lambda: len(world.pods()) == 5, what="two more workers")
    pg = world.api.obj(PODGROUP, "tensorflow-benchmark", "default")
    assert pg["spec"]["minMember"] == 4
    assert world.job()["status"]["controlledResources"] == {"plugin-env": "env", "plugin-svc": "svc"}
    # the job runs: svc's OnJobUpdate rewrites the hosts (Volcano's syncJob for an initiated job)
    eventually(lambda: world.api.obj(CONFIGMAP, "tensorflow-benchmark-svc", "default")["data"]["VC_WORKER_NUM"] == "4",
               what="the hosts ConfigMap to list four workers")
    spec = copy.deepcopy(world.job()["spec"])
    spec["tasks"][1]["replicas"] = 1
    spec["minAvailable"] = 2
    _replace_spec(world, spec)
    world.api.run_bound_pods()
    eventually(lambda: set(world.pods()) == {"tensorflow-benchmark-ps-0", "tensorflow-benchmark-worker-0"},
               what="the extra workers to go")
    assert world.api.obj(PODGROUP, "tensorflow-benchmark", "default")["spec"]["minMember"] == 2
    eventually(lambda: world.api.obj(CONFIGMAP, "tensorflow-benchmark-svc", "default")["data"]["worker.host"] ==
               "tensorflow-benchmark-worker-0.tensorflow-benchmark", what="one worker host")
    assert world.phase() == "Running"  # scaling down is not an eviction: no RestartJob


def test_an_update_volcano_forbids_is_refused_with_its_message(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3, what="the job to run")
    before = {n: p["metadata"]["uid"] for n, p in world.pods().items()}
    spec = copy.deepcopy(world.job()["spec"])
    spec["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "other:1"
    spec["tasks"][1]["replicas"] = 3
    _replace_spec(world, spec)

    def refused() -> list[dict]:
        return [e for e in world.api.objects(EVENT, "default") if e.get("reason") == "FailedUpdate"]
    eventually(lambda: refused(), what="a FailedUpdate event")
    assert refused()[0]["message"] == (
        "Job default/tensorflow-benchmark: spec: job updates may not change fields other than `minAvailable`, "
        "`tasks[*].replicas under spec` and `PriorityClassName`")
    # the controller keeps the spec it runs: no new pod, none replaced, status writes do not repeat the event
    world.jobs.drain()
    assert {n: p["metadata"]["uid"] for n, p in world.pods().items()} == before
    assert len(refused()) == 1 and world.phase() == "Running"


def test_ttl_seconds_after_finished_deletes_the_finished_job(world: World) -> None:
    job = yaml.safe_load(TF_JOB)
    job["spec"]["ttlSecondsAfterFinished"] = 1
    world.api.create(VCJOB, job, "default")
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3, what="the job to run")
    for name in list(world.pods()):
        world.api.patch(POD, name, {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    eventually(lambda: world.phase() == "Completed", what="the job to complete")
    finished = world.job()["status"]["state"]["lastTransitionTime"]
    assert finished
    eventually(lambda: world.api.obj(VCJOB, "tensorflow-benchmark", "default") is None, timeout=10,
               what="the garbage collector to delete the job")
    eventually(lambda: world.pods() == {} and world.api.objects(CONFIGMAP, "default") == [], what="cleanup")


def test_aborted_jobs_are_not_collected(world: World) -> None:
    """Volcano's garbage collector collects Completed, Failed and Terminated jobs only (isJobFinished)."""
    from tests.kube.helpers import job_command

    job = yaml.safe_load(TF_JOB)
    job["spec"]["ttlSecondsAfterFinished"] = 0
    world.api.create(VCJOB, job, "default")
    eventually(lambda: world.phase() == "Running")
    job_command(world.api, "abort", "AbortJob")
    eventually(lambda: world.phase() == "Aborted", what="the job to be aborted")
    world.jobs.drain()
    assert world.jobs.ttl_timers == {} and world.job() is not None


def test_malformed_plugin_arguments_and_updates_are_refused_not_crashes(world: World) -> None:
    job = yaml.safe_load(TF_JOB)
    job["metadata"]["name"] = "bad-args"
    job["spec"]["plugins"] = {"svc": ["--disable-network-policy=perhaps"], "tensorflow": "not-a-list"}
    world.api.create(VCJOB, job, "default")
    eventually(lambda: ((world.job("bad-args").get("status") or {}).get("state") or {}).get("reason") == "Invalid")
    # a wrong type is the typed boundary's one problem (api/job_model.py), before Volcano's semantic rules
    assert world.job("bad-args")["status"]["state"]["message"] == (
        "Job default/bad-args: spec.plugins.tensorflow: must be a list, got 'not-a-list'")
    submit(world)
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3, what="the job to run")
    spec = copy.deepcopy(world.job()["spec"])
    spec["tasks"][1]["replicas"] = "many"
    _replace_spec(world, spec)
    eventually(lambda: [e for e in world.api.objects(EVENT, "default") if e.get("reason") == "FailedUpdate" and
                        "spec.tasks[1].replicas: 'many' is not an integer" in e.get("message", "")], what="the refusal")
    assert world.jobs.alive and len(world.pods()) == 3
