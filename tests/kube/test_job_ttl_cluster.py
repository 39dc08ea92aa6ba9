"""``ttlSecondsAfterFinished`` and a running Job's scale on a real API server, with the session's ``pyvolcano
controller`` (no scheduler: the test admits the PodGroup and finishes the pods itself, as a scheduler and a
kubelet would)."""

from __future__ import annotations

import contextlib
import copy
import time

import pytest

from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.objects import parse_time
from pyvolcano.kube.resources import CONFIGMAP, POD, PODGROUP, QUEUE, VCJOB
from tests.kube import cluster
from tests.kube.cluster import Env, wait

pytestmark = [pytest.mark.kube]


def _job(ns: str, ttl: int) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "ttl", "namespace": ns},
            "spec": {"minAvailable": 2, "queue": "default", "schedulerName": "volcano", "ttlSecondsAfterFinished": ttl,
                     "plugins": {"svc": []}, "tasks": [{"name": "t", "replicas": 2, "template": {"spec": {
                         "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                                    "resources": {"requests": {"cpu": "100m"}}}]}}}]}}


def test_a_finished_job_is_deleted_after_its_ttl(api: KubeClient, env: Env, controller: cluster.Proc) -> None:
    with contextlib.suppress(ApiError):  # the queue Volcano's installer makes (a run of this file alone has none)
        api.create(QUEUE, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}})
    api.create(VCJOB, _job(env.ns, 2), env.ns)
    wait(lambda: api.get(PODGROUP, "ttl", env.ns), 30, "the PodGroup")
    api.patch(PODGROUP, "ttl", {"status": {"phase": "Inqueue"}}, env.ns)  # what enqueue does
    wait(lambda: len(api.list(POD, env.ns)[0]) == 2, 30, "the pods")
    spec = copy.deepcopy(api.get(VCJOB, "ttl", env.ns)["spec"])
    spec["tasks"][0]["replicas"] = 3
    spec["minAvailable"] = 3
    api.patch(VCJOB, "ttl", {"spec": spec}, env.ns)
    wait(lambda: len(api.list(POD, env.ns)[0]) == 3 and api.get(PODGROUP, "ttl", env.ns)["spec"]["minMember"] == 3,
         30, "the third pod and minMember 3")
    for p in api.list(POD, env.ns)[0]:
        api.patch(POD, p["metadata"]["name"], {"status": {"phase": "Succeeded"}}, env.ns, subresource="status")
    state = wait(lambda: (api.get(VCJOB, "ttl", env.ns)["status"]["state"]
                          if api.get(VCJOB, "ttl", env.ns)["status"]["state"]["phase"] == "Completed" else None),
                 30, "the job to complete")
    finished = parse_time(state["lastTransitionTime"])
    assert finished is not None and abs(finished - time.time()) < 30

    def gone() -> bool:
        try:
            api.get(VCJOB, "ttl", env.ns)
        except ApiError as exc:
            return exc.not_found
        return False
    wait(gone, 30, "the garbage collector to delete the job")
    assert time.time() >= finished + 2 - 1  # not before its TTL (lastTransitionTime is in whole seconds)
    wait(lambda: api.list(POD, env.ns)[0] == [] and api.list(CONFIGMAP, env.ns)[0] == [], 30,
         "its pods and ConfigMap to go with it")
