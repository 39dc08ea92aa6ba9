"""The controllers on the in-memory API, with the scheduler: a vcjob becomes a PodGroup and pods that get bound;
validation, plugins, commands, evictions and recovery after a controller restart."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import yaml

from pyvolcano.kube.client import ApiError
from pyvolcano.kube.cluster_api import KubeClusterAPI
from pyvolcano.kube.controller import JobRunner
from pyvolcano.kube.resources import COMMAND, CONFIGMAP, NODE, POD, PODGROUP, QUEUE, SERVICE, VCJOB
from pyvolcano.kube.scheduler import ConfFile, KubeScheduler, SchedulerOptions
from pyvolcano.kube.writer import EventRecorder, Writer
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import eventually, job_command, node, queue
from tests.kube.test_vcctl import TF_JOB


class World:
    """Scheduler (own thread), job controller and a kubelet loop, all on one fake API server."""

    def __init__(self) -> None:
        self.api = FakeApi()
        self.api.create(QUEUE, queue("default"))
        self.sched = KubeScheduler(self.api, ConfFile(None), SchedulerOptions(period=0.05))
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.sched.run, args=(self.stop,), daemon=True)
        self.writer = Writer(2)
        self.jobs = JobRunner(self.api, EventRecorder(self.api, self.writer))
        self.kubelet_on = True

    def start(self) -> World:
        self.t.start()
        assert self.jobs.start(5)
        threading.Thread(target=self._kubelet, daemon=True).start()
        return self

    def _kubelet(self) -> None:
        while not self.stop.wait(0.05):
            if self.kubelet_on:
                self.api.run_bound_pods()

    def close(self) -> None:
        self.stop.set()
        self.jobs.stop()
        self.t.join(5)
        self.sched.stop()
        self.writer.shutdown()

    def job(self, name: str = "tensorflow-benchmark", ns: str = "default") -> dict:
        return self.api.obj(VCJOB, name, ns)

    def phase(self, name: str = "tensorflow-benchmark") -> str:
        return ((self.job(name).get("status") or {}).get("state") or {}).get("phase", "")

    def pods(self, ns: str = "default") -> dict[str, dict]:
        return {p["metadata"]["name"]: p for p in self.api.objects(POD, ns)}


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    w.api.create(NODE, node("n1", cpu="8", memory="32Gi"))
    yield w.start()
    w.close()


def submit(w: World, text: str = TF_JOB, ns: str = "default") -> dict:
    job = yaml.safe_load(text)
    return w.api.create(VCJOB, job, ns)


def test_tensorflow_example_runs_end_to_end(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running", what="the job to run")
    pods = world.pods()
    assert set(pods) == {"tensorflow-benchmark-ps-0", "tensorflow-benchmark-worker-0", "tensorflow-benchmark-worker-1"}
    assert all(p["spec"].get("nodeName") == "n1" for p in pods.values())
    w1 = pods["tensorflow-benchmark-worker-1"]
    assert w1["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tensorflow-benchmark"
    assert w1["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
    assert w1["metadata"]["labels"]["volcano.sh/job-name"] == "tensorflow-benchmark"
    assert w1["metadata"]["ownerReferences"][0]["kind"] == "Job"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in w1["spec"]["containers"][0]["env"]}
    assert env["VK_TASK_INDEX"] == "1" and env["VC_TASK_INDEX"] == "1"
    # svc's host lists come from its ConfigMap, as in Volcano (configMapKeyRef)
    assert env["VC_PS_HOSTS"] == {"configMapKeyRef": {"name": "tensorflow-benchmark-svc", "key": "VC_PS_HOSTS"}}
    assert w1["spec"]["hostname"] == "tensorflow-benchmark-worker-1"
    assert w1["spec"]["subdomain"] == "tensorflow-benchmark"
    assert {"name": "tensorflow-benchmark-svc", "mountPath": "/etc/volcano"} in \
        w1["spec"]["containers"][0]["volumeMounts"]
    cm = world.api.obj(CONFIGMAP, "tensorflow-benchmark-svc", "default")
    assert cm["data"]["worker.host"] == ("tensorflow-benchmark-worker-0.tensorflow-benchmark\n"
                                         "tensorflow-benchmark-worker-1.tensorflow-benchmark")
    assert cm["data"]["VC_PS_HOSTS"] == "tensorflow-benchmark-ps-0.tensorflow-benchmark"
    assert cm["data"]["VC_WORKER_NUM"] == "2"
    assert world.api.obj(SERVICE, "tensorflow-benchmark", "default")["spec"]["clusterIP"] == "None"
    pg = world.api.obj(PODGROUP, "tensorflow-benchmark", "default")
    assert pg["spec"]["minMember"] == 3 and pg["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert world.job()["status"]["running"] == 3


def test_invalid_job_waits_with_a_message_until_its_queue_exists(world: World) -> None:
    job = yaml.safe_load(TF_JOB)
    job["spec"]["queue"] = "research"
    world.api.create(VCJOB, job, "default")
    eventually(lambda: (world.job().get("status") or {}).get("state", {}).get("reason") == "Invalid")
    msg = world.job()["status"]["state"]["message"]
    assert "spec.queue: unable to find job queue 'research'" in msg
    assert world.api.objects(PODGROUP) == [] and world.pods() == {}
    world.api.create(QUEUE, queue("research"))
    eventually(lambda: world.phase() == "Running", what="the job to start once its queue exists")


def test_minavailable_above_replicas_is_reported_on_the_job(world: World) -> None:
    job = yaml.safe_load(TF_JOB)
    job["metadata"]["name"] = "too-big"
    job["spec"]["minAvailable"] = 5
    world.api.create(VCJOB, job, "default")
    eventually(lambda: (world.job("too-big").get("status") or {}).get("state", {}).get("reason") == "Invalid")
    assert "spec.minAvailable (5) should not be greater than total replicas in tasks (3)" in \
        world.job("too-big")["status"]["state"]["message"]
    job["spec"]["plugins"] = {"nccl": []}  # not one of Volcano's job plugins
    job["metadata"]["name"] = "ssh-job"
    job["spec"]["minAvailable"] = 3
    world.api.create(VCJOB, job, "default")
    eventually(lambda: "unable to find job plugin 'nccl'" in
               ((world.job("ssh-job").get("status") or {}).get("state", {}).get("message") or ""))


def test_suspend_and_resume_through_commands(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    job_command(world.api, "abort", "AbortJob")
    eventually(lambda: world.phase() == "Aborted" and world.pods() == {}, what="the job to be aborted")
    assert world.api.objects(COMMAND) == []  # consumed
    job_command(world.api, "resume", "ResumeJob")
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3, what="the job to run again")


def terminating(w: World) -> int:
    return int((w.job().get("status") or {}).get("terminating", -1))


@pytest.mark.parametrize(("action", "ending", "ended"), [("AbortJob", "Aborting", "Aborted"),
                                                         ("TerminateJob", "Terminating", "Terminated"),
                                                         ("CompleteJob", "Completing", "Completed")])
def test_a_job_shows_its_ending_phase_while_its_pods_terminate(world: World, action: str, ending: str,
                                                                ended: str) -> None:
    # Volcano's Aborting/Terminating/Completing: the pods got their deletion but are still going away
    submit(world)
    eventually(lambda: world.phase() == "Running")
    world.kubelet_on = False
    job_command(world.api, "end", action)
    eventually(lambda: world.phase() == ending and terminating(world) == 3, what=f"{ending} with 3 terminating")
    assert all(p["metadata"].get("deletionTimestamp") for p in world.pods().values())
    job_command(world.api, "restart", "RestartJob")  # an ending job only ends
    world.kubelet_on = True
    eventually(lambda: world.phase() == ended and terminating(world) == 0 and world.pods() == {}, what=ended)


def test_resume_while_aborting_replaces_each_pod_once_it_is_gone(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    world.kubelet_on = False
    job_command(world.api, "abort", "AbortJob")
    eventually(lambda: world.phase() == "Aborting")
    job_command(world.api, "resume", "ResumeJob")  # Volcano accepts ResumeJob in Aborting
    # state/aborting.go: ResumeJob kills (keeping finished pods), counts a retry and restarts: Restarting while the
    # old pods terminate (total - terminating < minAvailable)
    eventually(lambda: world.job()["status"].get("retryCount") == 1 and world.phase() == "Restarting",
               what="the resume")
    world.kubelet_on = True
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3
               and not any(p["metadata"].get("deletionTimestamp") for p in world.pods().values()),
               what="the resumed job to run with three new pods")


def test_restart_waits_for_the_old_pods_then_runs_new_ones(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    old = {p["metadata"]["uid"] for p in world.pods().values()}
    world.kubelet_on = False
    job_command(world.api, "restart", "RestartJob")
    eventually(lambda: world.phase() == "Restarting" and terminating(world) == 3, what="Restarting")
    world.kubelet_on = True
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3 and terminating(world) == 0
               and not old & {p["metadata"]["uid"] for p in world.pods().values()},
               what="three new pods running")
    assert world.job()["status"]["retryCount"] == 1


def test_controller_restart_while_aborting_still_ends_the_job(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    world.kubelet_on = False
    job_command(world.api, "abort", "AbortJob")
    eventually(lambda: world.phase() == "Aborting" and terminating(world) == 3)
    world.jobs.stop()
    fresh = JobRunner(world.api, EventRecorder(world.api, world.writer))
    try:
        assert fresh.start(5)
        assert fresh.drain(5)
        assert fresh.ctrl.jobs["default/tensorflow-benchmark"].terminating == {
            "tensorflow-benchmark-ps-0", "tensorflow-benchmark-worker-0", "tensorflow-benchmark-worker-1"}
        world.kubelet_on = True
        eventually(lambda: world.phase() == "Aborted" and terminating(world) == 0, what="Aborted after restart")
    finally:
        fresh.stop()


def test_evicted_pod_restarts_the_job_per_its_policy(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    world.kubelet_on = False  # the evicted pod lingers while terminating: its successor must wait for it
    world.api.evict("default", "tensorflow-benchmark-worker-0")
    eventually(lambda: (world.job().get("status") or {}).get("retryCount") == 1, what="RestartJob (PodEvicted)")
    world.kubelet_on = True
    eventually(lambda: world.phase() == "Running" and len(world.pods()) == 3
               and not any(p["metadata"].get("deletionTimestamp") for p in world.pods().values()),
               what="the restarted job to run")
    assert world.job()["status"]["retryCount"] == 1  # the controller's own deletions were not evictions


def test_controller_restart_recovers_running_jobs(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    creates = world.jobs.capi.creates
    world.jobs.stop()
    fresh = JobRunner(world.api, EventRecorder(world.api, world.writer))
    try:
        assert fresh.start(5)
        assert fresh.drain(5)
        st = fresh.ctrl.jobs["default/tensorflow-benchmark"]
        assert st.phase == "Running" and len(st.pods) == 3
        assert fresh.capi.creates == 0 and creates > 0  # nothing re-created
        for w in ("worker-0", "worker-1"):  # the worker task completes: its policy completes the job
            world.api.patch(POD, f"tensorflow-benchmark-{w}", {"status": {"phase": "Succeeded"}}, "default",
                            subresource="status")
        eventually(lambda: world.phase() == "Completed", what="TaskCompleted -> CompleteJob after the restart")
    finally:
        fresh.stop()


def test_deleting_a_job_removes_what_it_owns(world: World) -> None:
    submit(world)
    eventually(lambda: world.phase() == "Running")
    world.api.delete(VCJOB, "tensorflow-benchmark", "default")
    world.api.run_bound_pods()
    eventually(lambda: world.pods() == {} and world.api.objects(PODGROUP) == [], what="cleanup")
    assert world.api.objects(SERVICE) == [] and world.api.objects(CONFIGMAP) == []


def test_cluster_api_parks_a_create_until_the_old_pod_is_gone() -> None:
    api = FakeApi()
    capi = KubeClusterAPI(api, EventRecorder(api, Writer(1)))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}
    capi.create(pod)
    capi.delete("Pod", "ns", "p")  # graceful: still there, terminating
    old_uid = api.obj(POD, "p", "ns")["metadata"]["uid"]
    capi.create({**pod, "spec": {"containers": [{"name": "c"}]}})
    assert ("ns", "p") in capi.parked
    api.delete(POD, "p", "ns", grace_period=0)
    capi.pod_gone("ns", "p", old_uid)
    assert api.obj(POD, "p", "ns")["metadata"]["uid"] != old_uid and not capi.parked
    assert capi.get("Pod", "ns", "nope") is None
    capi.delete("Pod", "ns", "nope")  # missing is fine
    with pytest.raises(ValueError):
        capi.get("Deployment", "ns", "x")
    api.fail("create", ApiError(500, "InternalError", "boom"))
    with pytest.raises(ApiError):
        capi.create({**pod, "metadata": {"name": "q", "namespace": "ns"}})
