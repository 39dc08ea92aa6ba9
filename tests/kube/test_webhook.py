"""``pyvolcano webhook --register`` on a real API server: the API server calls it over TLS (a CA the test makes)
and refuses invalid Jobs, Queues and PodGroups with Volcano's messages; a Job without a queue gets ``default``."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyvolcano.kube import webhook as wh
from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import CRONJOB, PODGROUP, QUEUE, VCJOB
from tests.kube import cluster
from tests.kube.cluster import Env, wait

pytestmark = pytest.mark.kube

PATHS = ["/jobs/mutate", "/jobs/validate", "/queues/mutate", "/queues/validate", "/podgroups/mutate",
         "/podgroups/validate"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _refused(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ApiError) as exc:
        fn()
    return str(exc.value.message or exc.value)


@pytest.fixture(scope="module")
def webhook(api: KubeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.Proc]:
    tmp = tmp_path_factory.mktemp("webhook")
    certs = wh.make_certs(tmp / "certs", ["127.0.0.1"])
    port = _free_port()
    p = cluster.Proc(["webhook", "--listen", f"127.0.0.1:{port}", "--register", "--tls-cert-file", str(certs.cert),
                      "--tls-private-key-file", str(certs.key), "--ca-cert-file", str(certs.ca),
                      "--enabled-admission", ",".join(PATHS), "--enable-queue-allocated-pods-check"],
                     Path(tmp / "webhook.log"))
    try:
        wait(lambda: "webhook serving" in p.text() or p.p.poll() is not None, 30, "the webhook to start")
        assert p.p.poll() is None, p.text()[-3000:]
        p.port, p.ca = port, certs.ca  # type: ignore[attr-defined]
        with contextlib.suppress(ApiError):
            api.create(QUEUE, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                               "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}})
        yield p
    finally:
        p.stop()
        wh.unregister(api, PATHS)


def _job(name: str, ns: str, **spec: object) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"tasks": [{"replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox"}]}}}], **spec}}


def test_invalid_objects_are_refused_with_volcanos_message(api: KubeClient, env: Env, webhook: cluster.Proc) -> None:
    q_bad = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
             "metadata": {"name": f"bad-{env.id}"},
             "spec": {"weight": 1, "capability": {"cpu": "1"}, "guarantee": {"resource": {"cpu": "2"}}}}
    # the API server picks up new webhook configurations within a moment: wait for the first refusal
    def refused() -> bool:
        try:
            api.create(QUEUE, q_bad)
        except ApiError as exc:
            return "validatequeue.volcano.sh" in str(exc)
        api.delete(QUEUE, q_bad["metadata"]["name"])
        return False

    wait(refused, 20, "the queue webhook to refuse")
    msg = _refused(lambda: api.create(QUEUE, q_bad))
    assert "spec.guarantee.resource.cpu must not be greater than spec.capability.cpu" in msg

    msg = _refused(lambda: api.create(VCJOB, _job("toomany", env.ns, minAvailable=3), env.ns))
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in msg
    assert "spec.minAvailable (3) should not be greater than total replicas in tasks (1)" in msg

    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": env.ns}, "spec": {"minMember": 1, "queue": f"nosuch-{env.id}"}}
    msg = _refused(lambda: api.create(PODGROUP, pg, env.ns))
    assert f'unable to find queue: queue.scheduling.volcano.sh "nosuch-{env.id}" not found' in msg


def test_a_job_without_a_queue_gets_default_and_volcanos_defaults(api: KubeClient, env: Env,
                                                                 webhook: cluster.Proc) -> None:
    wait(lambda: _mutated(api, env), 20, "the job webhook to mutate")
    job = api.get(VCJOB, "plain", env.ns)
    spec = job["spec"]
    assert spec["queue"] == "default"
    assert spec["minAvailable"] == 1 and spec["maxRetry"] == 3 and spec["schedulerName"] == "volcano"
    assert spec["tasks"][0]["name"] == "default0" and spec["tasks"][0]["minAvailable"] == 1
    q = api.get(QUEUE, "default")
    assert q["spec"]["weight"] == 1


def test_an_mpi_job_gets_the_svc_and_ssh_plugins_it_needs(api: KubeClient, env: Env, webhook: cluster.Proc) -> None:
    """Volcano's ``patchDefaultPlugins``: a Job listing only ``mpi`` (or ``pytorch``) is stored with ``svc`` (and
    ``ssh`` for mpi), so the classic examples start; arguments given stay."""
    wait(lambda: _mutated(api, env), 20, "the job webhook to mutate")
    api.create(VCJOB, _job("mpi", env.ns, plugins={"mpi": ["--master=default0"]}), env.ns)
    assert api.get(VCJOB, "mpi", env.ns)["spec"]["plugins"] == {"mpi": ["--master=default0"], "svc": [], "ssh": []}
    api.create(VCJOB, _job("torch", env.ns, plugins={"pytorch": [], "svc": ["--disable-network-policy"]}), env.ns)
    assert api.get(VCJOB, "torch", env.ns)["spec"]["plugins"] == {"pytorch": [], "svc": ["--disable-network-policy"]}


def test_a_queue_with_allocated_pods_is_not_deleted(api: KubeClient, env: Env, webhook: cluster.Proc) -> None:
    """``validateQueueDeleting`` with ``--enable-queue-allocated-pods-check``: the queue's ``status.allocated``
    (the scheduler's) still counts pods; once it does not, the delete goes through."""
    name = f"busy-{env.id}"
    api.create(QUEUE, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                       "spec": {"weight": 1}})
    try:
        api.patch(QUEUE, name, {"status": {"allocated": {"cpu": "2", "pods": "2"}}}, subresource="status")
        msg = _refused(lambda: api.delete(QUEUE, name))
        assert f"queue {name} cannot be deleted because it has allocated Pods: 2" in msg
        api.patch(QUEUE, name, {"status": {"allocated": {"cpu": "0", "pods": "0"}}}, subresource="status")
        api.delete(QUEUE, name)
    finally:
        with contextlib.suppress(ApiError):
            api.patch(QUEUE, name, {"status": {"allocated": {}}}, subresource="status")
            api.delete(QUEUE, name)


def _mutated(api: KubeClient, env: Env) -> bool:
    with contextlib.suppress(ApiError):
        api.create(VCJOB, _job("plain", env.ns), env.ns)
    if api.get(VCJOB, "plain", env.ns)["spec"].get("queue") == "default":
        return True
    api.delete(VCJOB, "plain", env.ns)
    return False


def _post(proc: cluster.Proc, path: str, body: bytes, ctype: str = "application/json") -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cafile=str(proc.ca))  # type: ignore[attr-defined]
    req = urllib.request.Request(f"https://127.0.0.1:{proc.port}{path}", data=body,  # type: ignore[attr-defined]
                                 headers={"Content-Type": ctype}, method="POST")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_bad_requests_get_an_answer_and_the_webhook_keeps_serving(webhook: cluster.Proc) -> None:
    code, body = _post(webhook, "/jobs/validate", b"{not json")
    out = json.loads(body)
    assert code == 200 and out["kind"] == "AdmissionReview" and out["response"]["allowed"] is False
    assert "json parse error" in out["response"]["status"]["message"]
    code, body = _post(webhook, "/jobs/validate", json.dumps({"kind": "Pod", "apiVersion": "v1"}).encode())
    assert "not an admission.k8s.io/v1 AdmissionReview" in json.loads(body)["response"]["status"]["message"]
    assert _post(webhook, "/jobs/validate", b"{}", "text/plain")[0] == 415
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u", "operation": "CREATE", "object": {"metadata": {"name": "q"}, "spec": {}}}}
    code, body = _post(webhook, "/queues/mutate", json.dumps(review).encode())
    assert code == 200 and json.loads(body)["response"]["patchType"] == "JSONPatch"
    assert webhook.p.poll() is None


def test_a_webhook_that_is_down_gets_its_failure_policy_and_admitted_objects_stay(
        api: KubeClient, env: Env, tmp_path: Path) -> None:
    """``failurePolicy: Fail``, as Volcano's chart: with the webhook gone the API server refuses what it covers;
    what was admitted before stays."""
    port = _free_port()
    p = cluster.Proc(["webhook", "--listen", f"127.0.0.1:{port}", "--register", "--cert-dir", str(tmp_path / "c"),
                      "--enabled-admission", "/cronjobs/validate"], tmp_path / "webhook.log")
    try:
        wait(lambda: "webhook serving" in p.text() or p.p.poll() is not None, 30, "the webhook to start")
        assert p.p.poll() is None, p.text()[-3000:]

        def cronjob(name: str, schedule: str) -> dict:
            return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                    "metadata": {"name": name, "namespace": env.ns},
                    "spec": {"schedule": schedule, "suspend": True, "jobTemplate": {"spec": {"tasks": []}}}}

        def refused_bad() -> bool:
            try:
                api.create(CRONJOB, cronjob("bad", "61 * * * *"), env.ns)
            except ApiError as exc:
                return "schedule is not a valid cron expression" in str(exc)
            api.delete(CRONJOB, "bad", env.ns)
            return False

        wait(refused_bad, 20, "the cronjob webhook to refuse a bad schedule")
        api.create(CRONJOB, cronjob("good", "*/5 * * * *"), env.ns)
        p.stop()
        msg = _refused(lambda: api.create(CRONJOB, cronjob("later", "*/5 * * * *"), env.ns))
        assert 'failed calling webhook "validatecronjob.volcano.sh"' in msg
        assert api.get(CRONJOB, "good", env.ns)["spec"]["schedule"] == "*/5 * * * *"
    finally:
        p.stop()
        wh.unregister(api, ["/cronjobs/validate"])
