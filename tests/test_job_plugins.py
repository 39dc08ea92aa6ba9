"""Volcano's job plugins, their arguments, running-Job updates and ``ttlSecondsAfterFinished``.

Plugin output is compared with Volcano's own controller in ``tests/kube/test_job_plugins_vs_volcano.py``; here are
the rules one by one: Go's flag parsing, the admission checks (``api/job_validate.py``), what each plugin adds to a
pod, Volcano's ``validateJobUpdate``, the controller applying a scale (``controllers/vcjob.py: update_job``), and the
simulator deleting a finished Job after its TTL."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from pyvolcano.api.job_plugin_args import go_int, parse
from pyvolcano.api.job_validate import job_problems, job_update_problems
from pyvolcano.conf.loader import load_conf_file
from pyvolcano.controllers.vcjob import JobController
from pyvolcano.kube import job_plugins
from pyvolcano.sim.cluster import parse_cluster_spec
from pyvolcano.sim.engine import Simulator
from pyvolcano.sim.workload import DURATION, Workload
from tests.test_vcjob_actions import ImmediateAPI


def task(name: str, replicas: int, container: str = "main", **spec: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {**spec, "containers": [
        {"name": container, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}


def job(plugins: dict[str, Any], *tasks: dict[str, Any], name: str = "j", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "uid": "u1"},
            "spec": {"queue": "default", "plugins": plugins,
                     "tasks": list(tasks) or [task("master", 1), task("worker", 2)], **spec}}


def pod_of(j: dict[str, Any], task_name: str, index: int) -> dict[str, Any]:
    """The pod the controller builds, with the plugins applied (as ``kube/cluster_api.py`` does)."""
    ctrl = JobController(ImmediateAPI())
    st = ctrl.add_job(copy.deepcopy(j))
    t = next(t for t in st.tasks if t["name"] == task_name)
    return job_plugins.mutate_pod(j, ctrl._pod(st, t, index))


def env(pod: dict[str, Any], container: int = 0, init: bool = False) -> dict[str, Any]:
    c = pod["spec"]["initContainers" if init else "containers"][container]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}


# --- arguments: Go's flag package ------------------------------------------------------------------------------
def test_go_flag_forms() -> None:
    a = parse("pytorch", ["--master=m", "-worker", "w", "--port", "0x10", "--wait-master-enabled"])
    assert a.error is None and a.values["master"] == "m" and a.values["worker"] == "w"
    assert a.values["port"] == 16 and a.values["wait-master-enabled"] is True
    assert parse("svc", ["--inject-hosts-env=false"]).values["inject-hosts-env"] is False
    assert parse("mpi", ["--port=017"]).values["port"] == 15  # a leading 0 is octal in Go
    # the first non-flag argument, or "--", ends the flags: what follows is not parsed
    assert parse("mpi", ["--master=a", "extra", "--port=x"]).values == {"master": "a", "worker": "worker", "port": 22}
    assert parse("mpi", ["--", "--port=x"]).error is None
    assert parse("env", ["--anything"]).error is None  # env never parses its arguments
    assert go_int("1_000") == 1000 and go_int(" 5") is None and go_int("9" * 30) is None


@pytest.mark.parametrize(("plugin", "args", "error"), [
    ("mpi", ["--nope=1"], "flag provided but not defined: -nope"),
    ("mpi", ["--port=abc"], 'invalid value "abc" for flag -port: parse error'),
    ("mpi", ["--port=99999999999999999999"], 'invalid value "99999999999999999999" for flag -port: value out of range'),
    ("mpi", ["--port"], "flag needs an argument: -port"),
    ("svc", ["--disable-network-policy=maybe"], 'invalid boolean value "maybe" for -disable-network-policy: parse error'),
    ("ssh", ["---x"], "bad flag syntax: ---x"),
    ("ray", ["-h"], "flag: help requested"),
    ("svc", "--publish-not-ready-addresses", "arguments must be a list of strings"),
])
def test_go_flag_errors(plugin: str, args: Any, error: str) -> None:
    assert parse(plugin, args).error == error


def test_values_before_an_error_are_kept_as_volcano_would_use_them() -> None:
    a = parse("mpi", ["--master=a", "--port=x", "--worker=b"])
    assert a.error and a.values["master"] == "a" and a.values["worker"] == "worker"


# --- admission -------------------------------------------------------------------------------------------------
def problems(j: dict[str, Any]) -> list[str]:
    return [str(p) for p in job_problems(j)]


def test_admission_refuses_unknown_plugins_bad_arguments_and_missing_roles() -> None:
    assert problems(job({"ssh": [], "svc": [], "env": [], "mpi": [], "pytorch": [], "hcclrank": []})) == []
    assert any("unable to find job plugin 'nccl'" in p for p in problems(job({"nccl": []})))
    assert problems(job({"mpi": ["--port=abc"]})) == [
        'Job ns/j: spec.plugins.mpi: plugin mpi flagset parse failed, err: invalid value "abc" for flag -port: '
        'parse error']
    assert problems(job({"mpi": ["--master=boss"]})) == [
        "Job ns/j: spec.plugins.mpi: The specified mpi master task was not found"]
    assert problems(job({"ray": []})) == ["Job ns/j: spec.plugins.ray: job j doesn't have head task head"]
    assert problems(job({"ray": []}, task("head", 1), task("worker", 1))) == []
    # wrong types are refused by the typed boundary (api/job_model.py), naming the field
    assert problems(job(["svc"])) == ["Job ns/j: spec.plugins: must be a mapping, got list"]  # type: ignore[arg-type]
    assert problems(job({"mpi": ["--port", 22]})) == [
        "Job ns/j: spec.plugins.mpi[1]: must be a string, got 22"]


# --- what each plugin does to a pod ----------------------------------------------------------------------------
def test_env_and_svc() -> None:
    j = job({"env": [], "svc": []}, task("ps", 1), task("worker-a", 2))
    p = pod_of(j, "worker-a", 1)
    e = env(p)
    assert e["VK_TASK_INDEX"] == e["VC_TASK_INDEX"] == "1"
    assert e["VC_WORKER_A_HOSTS"] == {"configMapKeyRef": {"name": "j-svc", "key": "VC_WORKER_A_HOSTS"}}
    assert (p["spec"]["hostname"], p["spec"]["subdomain"]) == ("j-worker-a-1", "j")
    assert {"name": "j-svc", "mountPath": "/etc/volcano"} in p["spec"]["containers"][0]["volumeMounts"]
    kinds = {o["kind"]: o for o in job_plugins.objects(j)}
    assert set(kinds) == {"ConfigMap", "Service", "NetworkPolicy"}
    assert kinds["ConfigMap"]["data"] == {
        "ps.host": "j-ps-0.j", "VC_PS_HOSTS": "j-ps-0.j", "VC_PS_NUM": "1",
        "worker_a.host": "j-worker-a-0.j\nj-worker-a-1.j", "VC_WORKER_A_HOSTS": "j-worker-a-0.j,j-worker-a-1.j",
        "VC_WORKER_A_NUM": "2"}
    assert kinds["Service"]["spec"] == {"clusterIP": "None", "selector": {
        "volcano.sh/job-name": "j", "volcano.sh/job-namespace": "ns"}}
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "u1" for o in kinds.values())
    quiet = job({"svc": ["--disable-network-policy", "--inject-hosts-env=false", "--publish-not-ready-addresses"]},
                task("head", 2, hostname="h", subdomain="d"))
    assert {o["kind"] for o in job_plugins.objects(quiet)} == {"ConfigMap", "Service"}
    assert job_plugins.hosts_configmap(quiet)["data"]["head.host"] == "h.d"  # a fixed hostname: one host
    qp = pod_of(quiet, "head", 1)
    assert env(qp) == {} and (qp["spec"]["hostname"], qp["spec"]["subdomain"]) == ("h", "d")
    assert job_plugins.owned(quiet) == [("ConfigMap", "j-svc"), ("Service", "j")]


def test_ssh_secret_and_mount() -> None:
    j = job({"ssh": ["--ssh-port=70000", "--ssh-key-file-path=/home/u/.ssh"]})
    (secret,) = job_plugins.objects(j)
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["id_rsa"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert data["id_rsa.pub"].startswith("ssh-rsa ") and data["authorized_keys"] == data["id_rsa.pub"]
    # a port outside 1..65535 falls back to 22; one Host entry per pod
    assert data["config"] == ("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
                              "Host j-master-0\n  HostName j-master-0.j\n  Port 22\n"
                              "Host j-worker-0\n  HostName j-worker-0.j\n  Port 22\n"
                              "Host j-worker-1\n  HostName j-worker-1.j\n  Port 22\n")
    p = pod_of(j, "worker", 0)
    vol = p["spec"]["volumes"][0]
    assert vol["secret"]["defaultMode"] == 0o644 and vol["secret"]["secretName"] == "j-ssh"
    assert p["spec"]["containers"][0]["volumeMounts"] == [{"name": "j-ssh", "mountPath": "/home/u/.ssh",
                                                           "subPath": ".ssh"}]
    given = job({"ssh": ["--ssh-private-key=PRIV", "--ssh-public-key=PUB"]})
    data = {k: base64.b64decode(v).decode() for k, v in job_plugins.objects(given)[0]["data"].items()}
    assert (data["id_rsa"], data["id_rsa.pub"], data["authorized_keys"]) == ("PRIV", "PUB", "PUB")


def test_mpi() -> None:
    j = job({"mpi": ["--port=2022"]})
    master, worker = pod_of(j, "master", 0), pod_of(j, "worker", 1)
    assert env(master)["MPI_HOST"] == "j-worker-0.j,j-worker-1.j" and "MPI_HOST" not in env(worker)
    assert worker["spec"]["containers"][0]["ports"] == [{"name": "mpijob-port", "containerPort": 2022}]
    no_worker = job({"mpi": []}, task("master", 1))
    assert "ports" not in pod_of(no_worker, "master", 0)["spec"]["containers"][0]  # Volcano returns early


def test_pytorch() -> None:
    j = job({"pytorch": ["--wait-master-enabled", "--wait-master-timeout=60"]})
    m, w = pod_of(j, "master", 0), pod_of(j, "worker", 1)
    assert env(m) == {"MASTER_ADDR": "j-master-0.j", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "0"}
    assert env(w)["RANK"] == "2" and "initContainers" not in m["spec"]
    (init,) = w["spec"]["initContainers"]
    assert init["name"] == "wait-for-master" and init["image"] == "busybox:1.36.1"
    assert "TIMEOUT=60" in init["command"][2] and "nc -z j-master-0.j 23456" in init["command"][2]


def test_tensorflow() -> None:
    j = job({"tensorflow": []}, task("ps", 1), task("worker", 2), task("evaluator", 0))
    cfg = json.loads(env(pod_of(j, "worker", 1))["TF_CONFIG"])
    assert cfg == {"cluster": {"ps": ["j-ps-0.j:2222"], "worker": ["j-worker-0.j:2222", "j-worker-1.j:2222"]},
                   "task": {"type": "worker", "index": 1}}
    assert env(pod_of(job({"tensorflow": []}, task("ps", 1)), "ps", 0)) == {}  # a single pod: nothing


def test_ray() -> None:
    j = job({"ray": ["--port=7000"]}, task("head", 1, container="head"), task("worker", 2, container="worker"))
    head, worker = pod_of(j, "head", 0), pod_of(j, "worker", 1)
    assert head["spec"]["containers"][0]["command"][2] == (
        "ray start --head --block --dashboard-host=0.0.0.0 --port=7000 --dashboard-port=8265 "
        "--ray-client-server-port=10001")
    assert [p["name"] for p in head["spec"]["containers"][0]["ports"]] == ["gcs", "dashboard", "client-server"]
    assert worker["spec"]["containers"][0]["command"] == ["sh", "-c", "ray start --block --address=j-head-0.j:7000"]
    (svc,) = job_plugins.objects(j)
    assert svc["metadata"]["name"] == "j-head-svc" and svc["spec"]["selector"]["volcano.sh/task-spec"] == "head"
    assert [p["port"] for p in svc["spec"]["ports"]] == [7000, 8265, 10001]


def test_hcclrank() -> None:
    j = job({"hcclrank": []}, task("master", 2), task("worker", 2))
    assert pod_of(j, "master", 1)["metadata"]["annotations"]["hccl/rankIndex"] == "1"
    assert pod_of(j, "worker", 1)["metadata"]["annotations"]["hccl/rankIndex"] == "3"  # master replicas + index
    with_rank = job({"pytorch": [], "hcclrank": []})  # RANK from pytorch wins
    assert pod_of(with_rank, "worker", 0)["metadata"]["annotations"]["hccl/rankIndex"] == "1"


def test_default_plugins_as_volcanos_mutating_webhook() -> None:
    assert job_plugins.default_plugins({"mpi": ["--port=1"]}) == {"mpi": ["--port=1"], "svc": [], "ssh": []}
    assert job_plugins.default_plugins({"env": []}) == {"env": []}


# --- updates: Volcano's validateJobUpdate ----------------------------------------------------------------------
def test_update_rules() -> None:
    old = job({}, task("a", 1), task("b", 2), minAvailable=3)
    scaled = copy.deepcopy(old)
    scaled["spec"]["tasks"][1]["replicas"] = 4
    scaled["spec"]["minAvailable"] = 5
    scaled["spec"]["priorityClassName"] = "high"
    assert job_update_problems(old, scaled) == []
    changed = copy.deepcopy(old)
    changed["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    assert [str(p) for p in job_update_problems(old, changed)] == [
        "Job ns/j: spec: job updates may not change fields other than `minAvailable`, `tasks[*].replicas under "
        "spec` and `PriorityClassName`"]
    more = copy.deepcopy(old)
    more["spec"]["tasks"].append(task("c", 1))
    assert [p.problem for p in job_update_problems(old, more)] == ["job updates may not add or remove tasks"]
    big = copy.deepcopy(old)
    big["spec"]["minAvailable"] = 9
    assert [p.problem for p in job_update_problems(old, big)] == [
        "job 'minAvailable' must not be greater than total replicas"]
    neg = copy.deepcopy(old)
    neg["spec"]["tasks"][0]["replicas"] = -1
    assert [p.problem for p in job_update_problems(old, neg)] == ["'replicas' must be >= 0 in task: a"]
    tmin = copy.deepcopy(old)
    tmin["spec"]["tasks"][0]["minAvailable"] = 2
    assert [p.problem for p in job_update_problems(old, tmin)] == ["'minAvailable' must be <= 'replicas' in task: a"]


# --- updates: the controller ------------------------------------------------------------------------------------
class PatchingAPI(ImmediateAPI):
    def patch_spec(self, kind: str, namespace: str, name: str, fields: dict[str, Any]) -> None:
        obj = self.objs[(kind, namespace, name)]
        obj["spec"] = {**obj["spec"], **fields}


def test_scale_up_and_down_with_the_podgroup_following() -> None:
    api = PatchingAPI()
    ctrl = JobController(api)
    j = job({}, task("a", 1), task("b", 2, ), minAvailable=3)
    j["metadata"]["namespace"] = "default"
    st = ctrl.add_job(j)
    api.objs[("PodGroup", "default", "j")]["status"]["phase"] = "Inqueue"
    ctrl.on_podgroup(st.key, "Inqueue")
    assert api.pods() == {"j-a-0", "j-b-0", "j-b-1"}
    up = copy.deepcopy(j)
    up["spec"]["tasks"][1]["replicas"] = 4
    up["spec"]["tasks"][1]["minAvailable"] = 3
    up["spec"]["minAvailable"] = 4
    assert ctrl.update_job(st.key, up)
    assert api.pods() == {"j-a-0", "j-b-0", "j-b-1", "j-b-2", "j-b-3"}
    pg = api.objs[("PodGroup", "default", "j")]["spec"]
    assert pg["minMember"] == 4 and pg["minTaskMember"] == {"b": 3} and pg["minResources"]["cpu"] == "4000m"
    down = copy.deepcopy(up)
    down["spec"]["tasks"][1]["replicas"] = 1
    down["spec"]["tasks"][1]["minAvailable"] = 1
    down["spec"]["minAvailable"] = 2
    ctrl.update_job(st.key, down)
    assert api.pods() == {"j-a-0", "j-b-0"}  # the pods past the new replicas are deleted
    assert api.objs[("PodGroup", "default", "j")]["spec"]["minMember"] == 2
    assert api.status["minAvailable"] == 2
    assert not ctrl.update_job("default/other", down)


def test_pods_carry_volcanos_metadata_and_no_env_without_the_env_plugin() -> None:
    p = pod_of(job({}), "worker", 1)
    md = p["metadata"]
    assert md["labels"]["volcano.sh/task-index"] == md["annotations"]["volcano.sh/task-index"] == "1"
    assert md["labels"]["volcano.sh/queue-name"] == "default"
    assert md["annotations"]["volcano.sh/template-uid"] == "j-worker"
    assert md["annotations"]["volcano.sh/job-retry-count"] == "0"
    assert "env" not in p["spec"]["containers"][0]


# --- ttlSecondsAfterFinished in the simulator --------------------------------------------------------------------
def sim_job(name: str, ttl: int | None) -> dict[str, Any]:
    t = task("t", 1)
    t["template"]["metadata"] = {"annotations": {DURATION: "10"}}
    j = job({}, t, name=name, minAvailable=1)
    j["metadata"] = {"name": name}
    if ttl is not None:
        j["spec"]["ttlSecondsAfterFinished"] = ttl
    return j


def test_simulator_deletes_a_finished_job_after_its_ttl() -> None:
    wl = Workload(jobs=[(0.0, sim_job("keep", None)), (0.0, sim_job("short", 30)),
                        (100.0, sim_job("short", None))])  # the name is free again once the TTL deleted it
    sim = Simulator(parse_cluster_spec("1x{cpu: 8, memory: 32Gi}"), [], wl, load_conf_file(None))
    res = sim.run()
    assert res.problems == []  # without the TTL the second "short" is refused: "a job of that name already exists"
    assert set(sim.controller.jobs) == {"default/keep", "default/short"}
    assert sim.controller.jobs["default/short"].job["spec"].get("ttlSecondsAfterFinished") is None
    finished = sim.records["default/short"].finished
    assert finished is not None and finished >= 100  # the second "short"
