"""The shared vcjob controller on a cluster where deleted pods terminate gracefully (``ClusterAPI.delete`` returns
False until ``on_pod_gone``): ending phases, and restarts that replace terminating pods instead of skipping them."""

from __future__ import annotations

from typing import Any

import yaml

from pyvolcano.controllers.vcjob import JobController
from tests.kube.test_vcctl import TF_JOB


class GracefulAPI:
    """An in-memory ClusterAPI whose pod deletions only mark the pod (a kubelet would finish them)."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.created: list[str] = []
        self.status: dict[str, Any] = {}

    def create(self, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        self.objs[(obj["kind"], md.get("namespace") or "default", md["name"])] = obj
        if obj["kind"] == "Pod":
            self.created.append(md["name"])

    def delete(self, kind: str, namespace: str, name: str) -> bool:
        obj = self.objs.get((kind, namespace, name))
        if obj is None or kind != "Pod":
            self.objs.pop((kind, namespace, name), None)
            return True
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return False

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objs.get((kind, namespace, name))

    def update_status(self, kind: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        self.status = status

    def event(self, obj: dict[str, Any], etype: str, reason: str, message: str) -> None:
        pass


def started() -> tuple[JobController, GracefulAPI, str]:
    api = GracefulAPI()
    ctrl = JobController(api)
    job = yaml.safe_load(TF_JOB)
    job["metadata"].setdefault("namespace", "default")
    st = ctrl.add_job(job)
    api.objs[("PodGroup", "default", job["metadata"]["name"])]["status"]["phase"] = "Inqueue"  # the scheduler's
    ctrl.on_podgroup(st.key, "Inqueue")
    for name in list(st.pods):
        ctrl.on_pod(st.key, name, name.rsplit("-", 2)[1], "Running")
    assert st.phase == "Running" and len(api.created) == 3
    return ctrl, api, st.key


def test_restart_creates_every_replacement_even_while_the_old_pods_terminate() -> None:
    ctrl, api, key = started()
    st = ctrl.jobs[key]
    ctrl.execute(st, "RestartJob")
    # killJob deleted the PodGroup; the sync re-created it Pending, so nothing is created before enqueue admits it
    assert len(api.created) == 3 and st.phase == "Restarting" and len(st.terminating) == 3
    pg = api.objs[("PodGroup", "default", "tensorflow-benchmark")]
    assert pg["status"]["phase"] == "Pending"
    ctrl.on_podgroup(key, "Inqueue")
    # each replacement is handed to the API at once (a cluster adapter parks it until its predecessor is gone);
    # Restarting lasts while total - terminating < minAvailable (restartingUpdateStatus)
    assert len(api.created) == 6 and st.phase == "Restarting"
    for name in sorted(st.terminating):
        ctrl.on_pod_gone(key, name)
    assert st.phase == "Pending" and api.status["terminating"] == 0 and len(st.pods) == 3


def test_abort_is_aborting_until_the_last_pod_is_gone() -> None:
    ctrl, api, key = started()
    st = ctrl.jobs[key]
    ctrl.execute(st, "AbortJob")
    assert st.phase == "Aborting" and len(st.terminating) == 3
    names = sorted(st.terminating)
    for name in names[:-1]:
        ctrl.on_pod_gone(key, name)
        assert st.phase == "Aborting"
    ctrl.on_pod_gone(key, names[-1])
    assert st.phase == "Aborted" and api.status["state"]["phase"] == "Aborted" and api.status["terminating"] == 0
