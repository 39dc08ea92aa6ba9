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
        "invalid value <'0'> for volcano.sh/jdb-min-available, it must be a positive integer"
    pod["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "150%"}
    assert "between 1% ~ 99%" in admission.validate_pod(pod)
    pod["spec"]["schedulerName"] = "default-scheduler"
    assert admission.validate_pod(pod) == ""
    assert "member must have at least one member" in admission.validate_hypernode({"spec": {"members": []}})
    bad_rx = {"spec": {"members": [{"selector": {"regexMatch": {"pattern": "node-("}}}]}}
    assert "member regexMatch pattern is invalid" in admission.validate_hypernode(bad_rx)
    assert admission.validate_queue_delete("default", {}) == "`default` queue can not be deleted"
    assert admission.validate_queue_delete("p", {"c": {"spec": {"parent": "p"}}}) == \
        "queue p can not be deleted because it has 1 child queues: c"


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
