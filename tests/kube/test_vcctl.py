"""``pyvolcano job ...`` and ``pyvolcano queue ...`` (vcctl) against the in-memory API, and the validators."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.kube.resources import COMMAND, QUEUE, VCJOB
from pyvolcano.kube.validation import validate_job, validate_queue
from tests.kube.fakeapi import FakeApi
from tests.kube.helpers import queue

TF_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tensorflow-benchmark
  labels:
    "volcano.sh/job-type": "Tensorflow"
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins:
    env: []
    svc: []
  policies:
    - event: PodEvicted
      action: RestartJob
  tasks:
    - replicas: 1
      name: ps
      template:
        spec:
          containers:
            - name: tensorflow
              image: volcanosh/example-tf:0.0.1
              resources: {requests: {cpu: 1000m, memory: 2048Mi}}
          restartPolicy: OnFailure
    - replicas: 2
      name: worker
      policies:
        - event: TaskCompleted
          action: CompleteJob
      template:
        spec:
          containers:
            - name: tensorflow
              image: volcanosh/example-tf:0.0.1
              resources: {requests: {cpu: 2000m, memory: 2048Mi}}
          restartPolicy: OnFailure
"""


@pytest.fixture
def api(monkeypatch) -> FakeApi:
    a = FakeApi()
    a.create(QUEUE, queue("default"))
    for mod in ("job", "queue"):
        monkeypatch.setattr(f"pyvolcano.commands.{mod}.make_client", lambda *args, **kw: a)
    return a


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def test_job_run_from_file_list_view_suspend_resume_delete(api: FakeApi) -> None:
    r = run("job", "run", "-f", "-", input=TF_JOB)
    assert r.exit_code == 0, r.output
    assert "run job default/tensorflow-benchmark successfully" in r.output
    j = api.obj(VCJOB, "tensorflow-benchmark", "default")
    assert j["spec"]["minAvailable"] == 3 and [t["name"] for t in j["spec"]["tasks"]] == ["ps", "worker"]
    r = run("job", "list")
    assert r.exit_code == 0 and "tensorflow-benchmark" in r.output and "Tensorflow" in r.output
    r = run("job", "view", "-N", "tensorflow-benchmark")
    assert r.exit_code == 0 and "MinAvailable: 3" in r.output and "worker: replicas 2" in r.output
    for cmd in ("suspend", "resume"):
        r = run("job", cmd, "-N", "tensorflow-benchmark")
        assert r.exit_code == 0, r.output
    cmds = api.objects(COMMAND, "default")
    assert [c["action"] for c in cmds] == ["AbortJob", "ResumeJob"]
    assert cmds[0]["target"]["uid"] == j["metadata"]["uid"] and cmds[0]["target"]["kind"] == "Job"
    assert run("job", "delete", "-N", "tensorflow-benchmark").exit_code == 0
    assert api.obj(VCJOB, "tensorflow-benchmark", "default") is None


def test_job_run_from_flags_builds_vcctls_job(api: FakeApi) -> None:
    r = run("job", "run", "-N", "demo", "-r", "3", "-m", "2", "-R", "cpu=500m,memory=64Mi", "-n", "team")
    assert r.exit_code == 0, r.output
    j = api.obj(VCJOB, "demo", "team")
    task = j["spec"]["tasks"][0]
    assert task["replicas"] == 3 and j["spec"]["minAvailable"] == 2
    assert task["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "64Mi"}


@pytest.mark.parametrize("change, msg", [
    (lambda j: j["spec"].update(minAvailable=4), "should not be greater than total replicas"),
    (lambda j: j["spec"].update(queue="nope"), "unable to find job queue 'nope'"),
    (lambda j: j["spec"]["tasks"][1].update(name="ps"), "duplicated task name"),
    (lambda j: j["spec"]["tasks"][0].update(minAvailable=2), "minAvailable (2) is greater than replicas (1)"),
    (lambda j: j["spec"]["policies"][0].update(action="Explode"), "invalid policy action"),
])
def test_job_run_rejects_invalid_jobs_with_one_line(api: FakeApi, change, msg) -> None:
    j = yaml.safe_load(TF_JOB)
    change(j)
    r = run("job", "run", "-f", "-", input=yaml.safe_dump(j))
    assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output
    assert "Job default/tensorflow-benchmark" in r.output
    assert api.objects(VCJOB) == []


def test_job_commands_report_missing_jobs(api: FakeApi) -> None:
    r = run("job", "view", "-N", "ghost")
    assert r.exit_code == 2 and "ghost" in r.output and "HTTP 404" in r.output
    api.set_down(True)
    r = run("job", "list")
    assert r.exit_code == 2 and "cannot reach the API server" in r.output


def test_queue_create_list_get_operate_delete(api: FakeApi) -> None:
    r = run("queue", "create", "-n", "research", "-w", "3", "-c", "cpu=8,memory=16Gi")
    assert r.exit_code == 0, r.output
    q = api.obj(QUEUE, "research")
    assert q["spec"]["weight"] == 3 and q["spec"]["capability"] == {"cpu": "8", "memory": "16Gi"}
    r = run("queue", "list")
    assert "research" in r.output and "default" in r.output
    assert "research" in run("queue", "get", "-n", "research").output
    r = run("queue", "delete", "-n", "research")
    assert r.exit_code == 2 and "only a Closed queue can be deleted" in r.output
    assert run("queue", "operate", "-n", "research", "-a", "close").exit_code == 0
    assert [c["action"] for c in api.objects(COMMAND)] == ["CloseQueue"]
    api.patch(QUEUE, "research", {"status": {"state": "Closed"}}, subresource="status")  # the controller's part
    assert run("queue", "delete", "-n", "research").exit_code == 0
    assert api.obj(QUEUE, "research") is None
    r = run("queue", "delete", "-n", "default")
    assert r.exit_code == 2 and "can not be deleted" in r.output
    r = run("queue", "create", "-n", "bad", "-w", "0")
    assert r.exit_code == 2 and "weight must be a positive integer" in r.output


def test_validators() -> None:
    j = yaml.safe_load(TF_JOB)
    assert validate_job(j, {"default": {}}) == []
    closed = {"default": {"status": {"state": "Closed"}}}
    assert "status is 'Closed'" in validate_job(j, closed)[0]
    assert "unable to find job plugin 'svc'" in " ".join(validate_job(j, known_plugins=["env"]))
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    assert "resources.requests.cpu" in validate_job(j)[0]
    assert validate_job({"metadata": {"name": "x"}, "spec": {"tasks": []}}) == [
        "Job default/x: spec.tasks: no task specified in job spec"]
    q = {"metadata": {"name": "q"}, "spec": {"weight": 1, "capability": {"cpu": "2"}, "deserved": {"cpu": "4"}}}
    assert "spec.deserved.cpu must not be greater than spec.capability.cpu" in validate_queue(q)[0]
    assert "parent queue 'root' does not exist" in validate_queue(
        {"metadata": {"name": "q"}, "spec": {"parent": "root"}}, {})[0]
