"""Volcano's admission rules (api/admission.py), cron schedules (api/cron.py) and the webhook's AdmissionReview
handling (kube/webhook.py), without an API server."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime

import pytest

from pyvolcano.api import admission
from pyvolcano.api.cron import CronError, parse
from pyvolcano.commands.install import manifest_objects
from pyvolcano.kube.webhook import HOOKS, Admission, Cluster


def job(**spec: object) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"tasks": [{"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}], **spec}}


class Queues(Cluster):
    def __init__(self, **queues: str) -> None:
        self.q = {n: {"metadata": {"name": n}, "spec": {"weight": 1}, "status": {"state": s}} for n, s in queues.items()}

    def queues(self):  # type: ignore[no-untyped-def]
        return self.q

    def namespace_annotations(self, namespace: str):  # type: ignore[no-untyped-def]
        return {"scheduling.volcano.sh/queue-name": "team"} if namespace == "team-ns" else {}


def review(path: str, obj: dict, op: str = "CREATE", cluster: Cluster | None = None, **req: object) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "operation": op, "object": obj, **req}}
    return Admission(cluster).review(path, json.dumps(body).encode())["response"]


def patch_of(resp: dict) -> list:
    assert resp["allowed"] and resp.get("patchType") == "JSONPatch"
    return json.loads(base64.b64decode(resp["patch"]))


# --- cron ----------------------------------------------------------------------------------------------------------
def test_cron_schedules_as_kubernetes() -> None:
    t = datetime(2026, 1, 1, 0, 3, tzinfo=UTC)  # a Thursday
    assert parse("*/5 * * * *").next(t) == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert parse("@hourly").next(t) == datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    assert parse("0 9 * * 1-5", "Europe/Paris").next(t) == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    assert parse("@every 1m30s").next(t) == datetime(2026, 1, 1, 0, 4, 30, tzinfo=UTC)


@pytest.mark.parametrize("expr", ["61 * * * *", "* * *", "* * * * * *", "@fortnightly", "@every soon", "",
                                  "TZ=UTC 0 * * * *", "0 0 31 2 *"])
def test_bad_cron_expressions_are_refused_with_a_clear_message(expr: str) -> None:
    with pytest.raises(CronError, match="schedule"):
        parse(expr)


def test_cronjob_rules() -> None:
    cj = {"metadata": {"name": "nightly"}, "spec": {"schedule": "0 2 * * *", "timeZone": "Asia/Shanghai"}}
    assert admission.validate_cronjob(cj) == ""
    assert admission.validate_cronjob({**cj, "spec": {"schedule": "0 25 * * *"}}) == \
        "schedule is not a valid cron expression"
    assert admission.validate_cronjob({**cj, "spec": {"schedule": "@daily", "timeZone": "Mars/Olympus"}}) == \
        "invalid timeZone"
    assert "timeZone can't be Local" in admission.validate_cronjob({**cj, "spec": {"schedule": "@daily",
                                                                                   "timeZone": "Local"}})
    assert admission.validate_cronjob({"metadata": {"name": "x" * 53}, "spec": {"schedule": "@daily"}}) == \
        "cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)"


# --- jobflows ------------------------------------------------------------------------------------------------------
def flow(*flows: tuple[str, list[str]]) -> dict:
    return {"metadata": {"name": "f"}, "spec": {"flows": [{"name": n, "dependsOn": {"targets": t}} for n, t in flows]}}


def test_jobflow_must_be_a_dag_of_defined_flows() -> None:
    assert admission.validate_jobflow(flow(("a", []), ("b", ["a"]), ("c", ["a", "b"]))) == ""
    assert admission.validate_jobflow(flow(("a", ["c"]), ("b", ["a"]), ("c", ["b"]))) == "jobflow Flow is not DAG"
    assert admission.validate_jobflow(flow(("a", ["a"]))) == "jobflow Flow is not DAG"
    assert admission.validate_jobflow(flow(("a", ["zz"]))) == "jobflow Flow is not DAG: vertex is not defined: zz"


# --- mutations -----------------------------------------------------------------------------------------------------
def test_job_defaults_as_volcanos_mutating_webhook() -> None:
    p = {op["path"]: op for op in admission.mutate_job(job(plugins={"mpi": []}))}
    assert p["/spec/queue"]["value"] == "default" and p["/spec/schedulerName"]["value"] == "volcano"
    assert p["/spec/maxRetry"]["value"] == 3 and p["/spec/minAvailable"]["value"] == 2
    task = p["/spec/tasks"]["value"][0]
    assert (task["name"], task["minAvailable"], task["maxRetry"]) == ("default0", 2, 3)
    assert p["/spec/plugins"]["value"] == {"mpi": [], "svc": [], "ssh": []}
    for plugins, want in (({"pytorch": ["--port=1"]}, {"pytorch": ["--port=1"], "svc": []}),
                          ({"mpi": [], "svc": ["--disable-network-policy"]},
                           {"mpi": [], "svc": ["--disable-network-policy"], "ssh": []}),
                          ({"env": []}, {"env": []})):
        p = {op["path"]: op for op in admission.mutate_job(job(plugins=plugins))}
        assert p["/spec/plugins"]["value"] == want
    # nothing to default: no patch at all
    full = job(queue="q", schedulerName="s", maxRetry=1, minAvailable=1)
    full["spec"]["tasks"][0].update(name="w", minAvailable=1, maxRetry=1)
    assert admission.mutate_job(full) == []


def test_queue_and_podgroup_defaults() -> None:
    q = {"metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy": "a/b", "volcano.sh/hierarchy-weights": "2/3"}},
         "spec": {}}
    assert admission.mutate_queue(q) == [
        {"op": "add", "path": "/metadata/annotations/volcano.sh~1hierarchy", "value": "root/a/b"},
        {"op": "add", "path": "/metadata/annotations/volcano.sh~1hierarchy-weights", "value": "1/2/3"},
        {"op": "add", "path": "/spec/reclaimable", "value": True},
        {"op": "add", "path": "/spec/weight", "value": 1}]
    pg = {"metadata": {"name": "pg", "namespace": "team-ns"}, "spec": {"queue": "default"}}
    assert patch_of(review("/podgroups/mutate", pg, cluster=Queues())) == [
        {"op": "add", "path": "/spec/queue", "value": "team"}]


# --- validations ---------------------------------------------------------------------------------------------------
def test_podgroup_pod_hypernode_and_queue_delete_rules() -> None:
    qs = Queues(open="Open", shut="Closed").q
    pg = {"metadata": {"name": "pg"}, "spec": {"queue": "open"}}
    assert admission.validate_podgroup(pg, qs) == ""
    assert admission.validate_podgroup({"spec": {"queue": "shut"}}, qs) == \
        "can only submit PodGroup to queue with state `Open`, queue `shut` status is `Closed`."
    both = {"spec": {"networkTopology": {"highestTierAllowed": 1, "highestTierName": "rack"}}}
    assert "must not specify 'highestTierAllowed' and 'highestTierName'" in admission.validate_podgroup(both, qs)
    pod = {"metadata": {"annotations": {"volcano.sh/jdb-min-available": "0"}}, "spec": {"schedulerName": "volcano"}}
    assert admission.validate_pod(pod) == \
        'invalid value <"0"> for volcano.sh/jdb-min-available, it must be a positive integer'
    pod["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "150%"}
    assert "between 1% ~ 99%" in admission.validate_pod(pod)
    pod["metadata"]["annotations"] = {"volcano.sh/jdb-max-unavailable": "1_0"}  # Atoi refuses what int() takes
    assert admission.validate_pod(pod) == \
        'invalid value strconv.Atoi: parsing "1_0": invalid syntax for volcano.sh/jdb-max-unavailable'
    pod["metadata"]["annotations"] = {"volcano.sh/jdb-max-unavailable": "+2"}
    assert admission.validate_pod(pod) == ""
    lookahead = {"spec": {"members": [{"selector": {"regexMatch": {"pattern": "node-(?=1)"}}}]}}
    assert "member regexMatch pattern is invalid" in admission.validate_hypernode(lookahead)  # RE2, as Go
    pod["spec"]["schedulerName"] = "default-scheduler"
    assert admission.validate_pod(pod) == ""
    assert "member must have at least one member" in admission.validate_hypernode({"spec": {"members": []}})
    bad_rx = {"spec": {"members": [{"selector": {"regexMatch": {"pattern": "node-("}}}]}}
    assert "member regexMatch pattern is invalid" in admission.validate_hypernode(bad_rx)
    assert admission.validate_queue_delete("default", {}) == "`default` queue can not be deleted"
    assert admission.validate_queue_delete("p", {"p": {"spec": {}}, "c": {"spec": {"parent": "p"}}}) == \
        "queue p can not be deleted because it has 1 child queues: c"


def qobj(name: str, parent: str = "", pods: str | None = None, **spec: object) -> dict:
    out: dict = {"metadata": {"name": name}, "spec": {"weight": 1, **({"parent": parent} if parent else {}), **spec},
                 "status": {"state": "Open"}}
    if pods is not None:
        out["status"]["allocated"] = {"cpu": "1", "pods": pods}
    return out


def test_queue_delete_with_allocated_pods_as_volcanos_flag() -> None:
    """``validateQueueDeleting``: the allocated-pods check only with --enable-queue-allocated-pods-check; the
    request's oldObject is the queue (an informer that has not seen it does not refuse)."""
    busy = qobj("busy", pods="2")
    on = admission.QueueRules(allocated_pods_check=True)
    assert admission.validate_queue_delete("busy", {}, busy, on) == \
        "queue busy cannot be deleted because it has allocated Pods: 2"
    assert admission.validate_queue_delete("busy", {}, busy) == ""  # Volcano's default: off
    assert admission.validate_queue_delete("busy", {}, qobj("busy", pods="0"), on) == ""
    assert admission.validate_queue_delete("busy", {}, qobj("busy", pods="lots"), on) == ""  # unreadable: no pods
    assert admission.validate_queue_delete("gone", {}) == 'queue.scheduling.volcano.sh "gone" not found'
    a = Admission(Queues(busy="Open"), queue_rules=on)
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "DELETE", "name": "busy", "oldObject": busy}}
    resp = a.review("/queues/validate", json.dumps(body).encode())["response"]
    assert resp["status"]["message"] == "queue busy cannot be deleted because it has allocated Pods: 2"


def test_queue_create_and_update_rules_of_volcanos_validate_queue() -> None:
    """``AdmitQueues``: state, hierarchy annotations, own parent, depth, a leaf parent holding pods, root
    protection, and the tree's resource rules only when something they read changed."""
    rules = admission.QueueRules()
    qs = {"a": qobj("a"), "b": qobj("b", "a"), "c": qobj("c", "b"), "d": qobj("d", "c"), "leaf": qobj("leaf", pods="3")}

    def change(q: dict, old: dict | None = None, op: str = "CREATE") -> str:
        return admission.validate_queue_change(op, q, old, {**qs, q["metadata"]["name"]: q}, rules)[0]

    assert change(qobj("g", guarantee={"resource": {"cpu": "2"}})) == \
        'requestBody.spec.deserved.cpu: Invalid value: "<nil>": deserved[cpu] must be >= guarantee[cpu]=2'
    assert change(qobj("g", guarantee={"resource": {"cpu": "2"}}, deserved={"cpu": "3"})) == ""
    bad_state = qobj("s")
    bad_state["status"]["state"] = "Closing"
    assert change(bad_state) == 'requestBody.spec.state: Invalid value: "Closing": queue state must be in [Open Closed]'
    ann = qobj("h")
    ann["metadata"]["annotations"] = {"volcano.sh/hierarchy": "root/x", "volcano.sh/hierarchy-weights": "1"}
    assert "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights" in change(ann)
    ann["metadata"]["annotations"]["volcano.sh/hierarchy-weights"] = "1/zero"
    assert "zero in the 1/zero is invalid number" in change(ann)
    ann["metadata"]["annotations"]["volcano.sh/hierarchy-weights"] = "1/0"
    assert "0 in the 1/0 must be larger than 0" in change(ann)
    assert change(qobj("self", "self")) == "queue self cannot use itself as parent"
    assert change(qobj("e", "d")) == ""  # depth 5: a b c d e
    assert change(qobj("f", "e"), None) == ""  # e does not exist yet: the parent rule of validate_queue says so
    deep = {**qs, "e": qobj("e", "d")}
    assert admission.validate_queue_change("CREATE", qobj("f", "e"), None, deep, rules)[0] == \
        "queue f exceeds the maximum allowed depth of 5"
    assert change(qobj("kid", "leaf")) == \
        "queue leaf cannot be the parent queue of queue kid because it has allocated Pods: 3"
    root, root2 = qobj("root", capability={"cpu": "4"}), qobj("root", capability={"cpu": "4000m"})
    assert admission.validate_queue_change("UPDATE", root2, root, qs, rules) == ("", False)  # same value
    root2["spec"]["capability"] = {"cpu": "8"}
    assert admission.validate_queue_change("UPDATE", root2, root, qs, rules)[0] == \
        "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
    assert admission.validate_queue_change("UPDATE", root2, root, qs, admission.QueueRules(root_protection=False)) \
        == ("", False)
    b2 = qobj("b", "a", capability={"cpu": "1"})
    assert admission.validate_queue_change("UPDATE", qs["b"], qs["b"], qs, rules) == ("", False)
    assert admission.validate_queue_change("UPDATE", b2, qs["b"], qs, rules) == ("", True)
    assert admission.validate_queue_change("CREATE", qobj("new"), None, qs, rules) == ("", True)


def test_webhook_paths_call_the_shared_job_and_queue_validators() -> None:
    resp = review("/jobs/validate", job(minAvailable=5), cluster=Queues(default="Open"))
    assert not resp["allowed"] and resp["uid"] == "u1"
    assert "spec.minAvailable (5) should not be greater than total replicas in tasks (2)" in resp["status"]["message"]
    resp = review("/jobs/validate", job(queue="nosuch"), cluster=Queues(default="Open"))
    assert "unable to find job queue 'nosuch'" in resp["status"]["message"]
    assert review("/jobs/validate", job(), cluster=Queues(default="Open"))["allowed"]
    q = {"metadata": {"name": "q"}, "spec": {"weight": 1, "capability": {"cpu": "1"},
                                             "guarantee": {"resource": {"cpu": "2"}}}}
    assert "must not be greater than" in review("/queues/validate", q)["status"]["message"]
    resp = review("/queues/validate", {}, op="DELETE", oldObject={"metadata": {"name": "default"}})
    assert resp["status"]["message"] == "`default` queue can not be deleted"


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"kind": "Pod", "apiVersion": "v1"}',
                                  b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
                                  json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                                              "request": {"uid": "x", "operation": "CREATE",
                                                          "object": "a string"}}).encode()])
def test_a_body_that_is_not_an_admission_review_is_refused_not_a_crash(body: bytes) -> None:
    out = Admission().review("/jobs/validate", body)
    assert out["kind"] == "AdmissionReview" and out["response"]["allowed"] is False
    assert out["response"]["status"]["message"]


def test_odd_objects_and_unknown_paths_and_operations_are_refused() -> None:
    assert "no admission webhook at '/nosuch'" in review("/nosuch", job())["status"]["message"]
    assert "invalid operation `DELETE`" in review("/jobs/mutate", job(), op="DELETE")["status"]["message"]
    weird = {"metadata": {"name": "j"}, "spec": {"tasks": "lots", "minAvailable": "x", "plugins": []}}
    assert review("/jobs/validate", weird, cluster=Queues(default="Open"))["allowed"] is False
    assert review("/jobs/mutate", weird)["allowed"] is True


def test_install_registers_every_path_with_volcanos_failure_policy() -> None:
    objs = [o for o in manifest_objects() if o["kind"].endswith("WebhookConfiguration")]
    names = {wh["name"] for o in objs for wh in o["webhooks"]}
    assert names == {h.name for h in HOOKS}
    for o in objs:
        (wh,) = o["webhooks"]
        assert wh["failurePolicy"] == "Fail" and wh["timeoutSeconds"] == 10
        assert wh["clientConfig"]["service"] == {"namespace": "volcano-system", "name": "volcano-admission-service",
                                                 "path": wh["clientConfig"]["service"]["path"], "port": 443}


@pytest.mark.parametrize("maker", ["cryptography", "openssl"])
def test_the_tls_server_answers_while_another_client_stalls(tmp_path, maker: str) -> None:  # type: ignore[no-untyped-def]
    """Certificates from either maker serve; a client that connects and stalls does not block another."""
    import shutil
    import socket
    import ssl
    import urllib.request

    from pyvolcano.kube import webhook as wh
    from pyvolcano.kube.webhook import WebhookServer

    if maker == "openssl" and shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    certs = (wh._cryptography_certs if maker == "cryptography" else wh._openssl_certs)(tmp_path, ["127.0.0.1"])
    server = WebhookServer(Admission(Queues(default="Open")), "127.0.0.1", 0, certs).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port)):  # connects, never says hello
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "u2", "operation": "CREATE", "object": job(minAvailable=9)}}).encode()
            req = urllib.request.Request(f"https://127.0.0.1:{server.port}/jobs/validate", data=body,
                                         headers={"Content-Type": "application/json"})
            ctx = ssl.create_default_context(cafile=str(certs.ca))
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                out = json.loads(r.read())
        assert out["response"]["uid"] == "u2" and out["response"]["allowed"] is False
    finally:
        server.stop()


def test_webhook_command_refuses_bad_flags_with_exit_2() -> None:
    from click.testing import CliRunner

    from pyvolcano.cli import main

    for args, msg in ((["--listen", "nowhere"], "--listen 'nowhere': expected HOST:PORT"),
                      (["--enabled-admission", "/nope"], "--enabled-admission: unknown path '/nope'"),
                      (["--webhook-service", "justname"], "--webhook-service 'justname': expected NAMESPACE/NAME")):
        r = CliRunner().invoke(main, ["webhook", *args])
        assert r.exit_code == 2 and msg in r.output, r.output


def test_job_updates_are_checked_with_volcanos_update_rule() -> None:
    old = job(minAvailable=1, queue="default")
    scaled = copy.deepcopy(old)
    scaled["spec"]["tasks"][0]["replicas"] = 4
    assert review("/jobs/validate", scaled, op="UPDATE", oldObject=old)["allowed"]
    moved = copy.deepcopy(old)
    moved["spec"]["queue"] = "other"
    resp = review("/jobs/validate", moved, op="UPDATE", oldObject=old)
    assert not resp["allowed"] and "job updates may not change fields other than" in resp["status"]["message"]
    assert "carries no oldObject" in review("/jobs/validate", old, op="UPDATE")["status"]["message"]


def test_job_rules_only_volcanos_webhook_checks() -> None:
    """``validateJobCreate``'s rules beyond the shared Job validator: pod names, whole CPUs under a topology
    policy, volumes, root and non-leaf queues, task dependencies forming a DAG."""
    qs = {"root": qobj("root"), "parent": qobj("parent"), "kid": qobj("kid", "parent"), "default": qobj("default")}

    def problems(**spec: object) -> list[str]:
        j = job(**spec)
        return admission.job_create_problems(j, qs)

    assert problems(queue="default") == [] and problems(queue="kid") == []
    assert problems(queue="root") == ["can not submit job to root queue;"]
    assert problems(queue="parent") == ["can only submit job to leaf queue, queue `parent` has 1 child queues;"]
    long = job()
    long["spec"]["tasks"][0]["name"] = "t" * 60
    (msg,) = admission.job_create_problems(long, None)
    assert msg.startswith(f"create pod with name j-{'t' * 60}-0 validate failed [name part must be no more than 63")
    topo = job()
    topo["spec"]["tasks"][0].update(topologyPolicy="single-numa-node")
    topo["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1500m"}}
    assert admission.job_create_problems(topo, None) == ["the cpu request isn't an integer in spec.task[0] container[0]."]
    topo["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    assert admission.job_create_problems(topo, None) == []
    assert problems(volumes=[{"volumeClaimName": "x"}]) == ["mountPath is required;"]
    assert problems(volumes=[{"mountPath": "/a", "volumeClaimName": "x"}, {"mountPath": "/a", "volumeClaimName": "y"}]) \
        == ["duplicated mountPath: /a;"]
    assert problems(volumes=[{"mountPath": "/a"}]) == ["either VolumeClaim or VolumeClaimName must be specified;"]
    assert problems(volumes=[{"mountPath": "/a", "volumeClaimName": "x", "volumeClaim": {"a": 1}}])[0].startswith(
        "conflict: If you want to use an existing PVC")
    assert problems(volumes=[{"mountPath": "/a", "volumeClaimName": "Bad_Name"}])[0].startswith(
        "invalid VolumeClaimName Bad_Name")

    def deps(*pairs: tuple[str, list[str]]) -> dict:
        j = job()
        base = j["spec"]["tasks"][0]
        j["spec"]["tasks"] = [{**copy.deepcopy(base), "name": n, **({"dependsOn": {"name": d}} if d else {})}
                              for n, d in pairs]
        return j

    dag_msg = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);"
    assert admission.job_create_problems(deps(("a", []), ("b", ["a"])), None) == []
    assert admission.job_create_problems(deps(("a", ["b"]), ("b", ["a"])), None) == [dag_msg]
    assert admission.job_create_problems(deps(("a", []), ("b", ["zz"])), None) == [dag_msg]  # as Volcano's topoSort
    weird = {"metadata": {"name": "j"}, "spec": {"tasks": [{"dependsOn": "x", "topologyPolicy": "best-effort",
                                                            "template": "no"}], "volumes": "none"}}
    assert admission.job_create_problems(weird, {}) == []  # nothing to read: no rule of these applies, no crash
    weird["spec"]["tasks"][0]["template"] = {"spec": {"containers": 5, "initContainers": ["x"]}}
    assert admission.job_create_problems(weird, {}) == [
        "the cpu request isn't an integer in spec.task[0] container[0]."]
    resp = review("/jobs/validate", job(queue="root"), cluster=Queues(default="Open", root="Open"))
    assert not resp["allowed"] and "can not submit job to root queue;" in resp["status"]["message"]
