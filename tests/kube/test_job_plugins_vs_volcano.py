"""Job plugins and job updates side by side with Volcano's own controller (``vc-controller-manager``, Volcano
ed72c7c8, from ``../shared/tools/volcano/volcano-up``).

The same Jobs (one per job plugin, with the plugins Volcano's mutating webhook would add, one scaled up and one
scaled down after they started) are applied twice on the session's API server: once in a namespace that
``pyvolcano controller`` (the session's ``controller`` fixture) manages, once in a namespace that
``vc-controller-manager`` manages, with pyvolcano's controller frozen (SIGSTOP) for that time so that only
Volcano's acts.  No scheduler takes part: the test admits each PodGroup itself (status ``Inqueue``), which is
what makes both controllers create the pods.  Then the pods, Services, Secrets, ConfigMaps, NetworkPolicies and
PodGroups of the two namespaces must be the same: names, labels, annotations, env, ports, volumes, commands, init
containers, hostnames, the PodGroups' specs (minMember, minResources by amount, minTaskMember, queue); uids, times,
resourceVersions and the namespace are left out.  Known, documented differences (docs/volcano-differences.md) are
taken out explicitly: the PodGroup is named ``<job>`` here, ``<job>-<uid>`` in Volcano (and the pods' group-name
annotation with it), and Volcano's minResources has quota-style extras (``pods``, ``count/pods``,
``requests.*``); the ssh keys are random on both sides (their form is compared).

One ``volcano-up`` for all the cases, in one test (one xdist worker); the module takes about half a minute.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pyvolcano.api.job_plugin_args import default_plugins
from pyvolcano.api.resource import amount
from pyvolcano.commands.install import apply_all, manifest_objects
from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import (
    CONFIGMAP,
    NAMESPACE,
    NETWORKPOLICY,
    POD,
    PODGROUP,
    QUEUE,
    SECRET,
    SERVICE,
    SERVICEACCOUNT,
    VCJOB,
)
from tests.kube import cluster, kubeserver
from tests.kube.cluster import wait

pytestmark = [pytest.mark.kube]

VOLCANO_UP = kubeserver.TOOLS / "volcano" / "volcano-up"
VOLCANO_DOWN = kubeserver.TOOLS / "volcano" / "volcano-down"


def _task(name: str, replicas: int, container: str = "main", **spec: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "minAvailable": replicas, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "OnFailure", **spec, "containers": [{
            "name": container, "image": "busybox", "command": ["sleep", "1000"],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}


def _job(name: str, plugins: dict[str, list[str]], tasks: list[dict[str, Any]],
         webhook_plugins: bool = True) -> dict[str, Any]:
    """A Job set in full (no webhook fills anything in on Volcano's side): queue, minAvailable, schedulerName,
    maxRetry, every task's minAvailable, and the plugins the mutating webhook adds (``svc`` for the
    distributed-framework plugins, ``ssh`` for mpi: ``api/job_plugin_args.default_plugins``, the webhook's one
    rule) unless ``webhook_plugins`` is False."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "labels": {"case": name}, "annotations": {"note": "side-by-side"}},
            "spec": {"minAvailable": sum(t["replicas"] for t in tasks), "schedulerName": "volcano", "queue": "default",
                     "maxRetry": 3, "plugins": default_plugins(plugins) if webhook_plugins else plugins,
                     "tasks": tasks}}


CASES: list[dict[str, Any]] = [
    _job("env", {"env": []}, [_task("worker", 2)]),
    _job("svc", {"svc": ["--publish-not-ready-addresses", "--inject-hosts-env=true"], "env": []},
         [_task("ps", 1), _task("worker-a", 2)]),
    _job("svc-nonp", {"svc": ["--disable-network-policy", "--inject-hosts-env=false"]},
         [_task("head", 1, hostname="fixed-host")]),
    _job("ssh", {"ssh": ["--ssh-port=2222", "--ssh-key-file-path=/home/me/.ssh"], "svc": []},
         [_task("master", 1), _task("worker", 2)]),
    _job("mpi", {"mpi": ["--master=mpimaster", "--worker=mpiworker", "--port=2022"]},
         [_task("mpimaster", 1), _task("mpiworker", 2)]),
    _job("pytorch", {"pytorch": ["--port=23457"]}, [_task("master", 1), _task("worker", 2)]),
    # without svc (as if the webhook were off): whether svc's env and mount reach pytorch's init container depends
    # on Volcano's random plugin order (Go map iteration), so the init container is compared on its own
    _job("pytorch-wait", {"pytorch": ["--wait-master-enabled", "--wait-master-timeout=60"]},
         [_task("master", 1), _task("worker", 2)], webhook_plugins=False),
    _job("tensorflow", {"tensorflow": ["--port=2223"]},
         [_task("ps", 1), _task("worker", 2), _task("chief", 1)]),
    _job("ray", {"ray": ["--dashboardPort=8266"]},
         [_task("head", 1, container="head"), _task("worker", 2, container="worker")]),
    _job("hcclrank", {"hcclrank": [], "env": []}, [_task("master", 1), _task("worker", 2)]),
    _job("scale", {"svc": [], "env": []}, [_task("ps", 1), _task("worker", 2)]),
    _job("shrink", {"svc": []}, [_task("ps", 1), _task("worker", 3)]),
]


def _scaled(job: dict[str, Any], workers: int) -> dict[str, Any]:
    """The update applied once the job's pods exist: ``workers`` workers (and as many needed), minAvailable all."""
    ps, worker = job["spec"]["tasks"]
    return {"spec": {"minAvailable": 1 + workers, "tasks": [ps, {**worker, "replicas": workers,
                                                                   "minAvailable": workers}]}}


#: job -> (its update, the pods it has after it)
UPDATES = {"scale": (_scaled(CASES[-2], 3), 4), "shrink": (_scaled(CASES[-1], 1), 2)}
EXPECTED_PODS = {j["metadata"]["name"]: sum(t["replicas"] for t in j["spec"]["tasks"]) for j in CASES}


def _namespace(api: KubeClient, ns: str) -> None:
    api.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {
        "pyvolcano-test": ns}}})
    with contextlib.suppress(ApiError):
        api.create(SERVICEACCOUNT, {"apiVersion": "v1", "kind": "ServiceAccount",
                                    "metadata": {"name": "default", "namespace": ns}}, ns)


def _admit_podgroups(api: KubeClient, ns: str) -> None:
    """What a scheduler's enqueue does: every Pending PodGroup becomes Inqueue (so the controller makes pods)."""
    for pg in api.list(PODGROUP, ns)[0]:
        if ((pg.get("status") or {}).get("phase") or "Pending") == "Pending":
            with contextlib.suppress(ApiError):  # neither CRD has a status subresource for PodGroups
                api.patch(PODGROUP, pg["metadata"]["name"], {"status": {"phase": "Inqueue"}}, ns)


def _pods_by_job(api: KubeClient, ns: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in api.list(POD, ns)[0]:
        job = (p["metadata"].get("labels") or {}).get("volcano.sh/job-name", "")
        out[job] = out.get(job, 0) + 1
    return out


def _run(api: KubeClient, ns: str) -> None:
    """Apply every case, admit the PodGroups until every pod exists, scale ``scale`` up, wait for its pod."""
    for job in CASES:
        api.create(VCJOB, copy.deepcopy(job), ns)

    def settled(want: dict[str, int]) -> bool:
        _admit_podgroups(api, ns)
        return _pods_by_job(api, ns) == want

    try:
        wait(lambda: settled(EXPECTED_PODS), 90, f"the controller to create every pod in {ns}")
    except AssertionError as exc:
        state = {pg["metadata"]["name"]: (pg.get("status") or {}).get("phase") for pg in api.list(PODGROUP, ns)[0]}
        jobs = {j["metadata"]["name"]: (j.get("status") or {}).get("state") for j in api.list(VCJOB, ns)[0]}
        raise AssertionError(f"{exc}: pods {_pods_by_job(api, ns)}, PodGroups {state}, jobs {jobs}") from None
    for name, (update, _) in UPDATES.items():
        api.patch(VCJOB, name, update, ns)
    after = {**EXPECTED_PODS, **{name: n for name, (_, n) in UPDATES.items()}}
    wait(lambda: settled(after) and all(_pg_of(api, ns, name)["spec"]["minMember"] == n
                                        for name, (_, n) in UPDATES.items()), 60,
         f"the scaled jobs' pods and their PodGroups' minMember in {ns}")


def _pg_of(api: KubeClient, ns: str, job: str) -> dict[str, Any]:
    return next(pg for pg in api.list(PODGROUP, ns)[0] if _pg_job(pg) == job)


def _pg_job(pg: dict[str, Any]) -> str:
    """The job a PodGroup belongs to (its owner), whatever the PodGroup's name."""
    return next((o["name"] for o in pg["metadata"].get("ownerReferences") or [] if o.get("kind") == "Job"), "")


# --- the comparison ----------------------------------------------------------------------------------------------
_META_DROP = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace",
              "deletionTimestamp", "deletionGracePeriodSeconds")


def _meta(md: dict[str, Any], group_names: dict[str, str]) -> dict[str, Any]:
    out = {k: v for k, v in md.items() if k not in _META_DROP}
    out["ownerReferences"] = [{k: v for k, v in o.items() if k != "uid"} for o in md.get("ownerReferences") or []]
    ann = dict(md.get("annotations") or {})
    if "scheduling.k8s.io/group-name" in ann:  # <job>-<uid> in Volcano: the documented naming difference
        ann["scheduling.k8s.io/group-name"] = group_names.get(ann["scheduling.k8s.io/group-name"],
                                                               ann["scheduling.k8s.io/group-name"])
    out["annotations"] = ann
    out["labels"] = dict(md.get("labels") or {})
    return out


def _container(c: dict[str, Any]) -> dict[str, Any]:
    out = dict(c)
    # Volcano runs the plugins in Go's random map order: the env's order is not part of the behaviour
    out["env"] = sorted(c.get("env") or [], key=lambda e: (e["name"], str(e)))
    out["ports"] = sorted(c.get("ports") or [], key=lambda p: (p.get("containerPort", 0), str(p)))
    out["volumeMounts"] = sorted(c.get("volumeMounts") or [], key=lambda m: m["name"])
    return out


def snapshot(api: KubeClient, ns: str) -> dict[str, Any]:
    """Everything the controllers made in ``ns``, without what differs by nature (uids, times, namespace)."""
    pgs = api.list(PODGROUP, ns)[0]
    group_names = {pg["metadata"]["name"]: _pg_job(pg) for pg in pgs}
    out: dict[str, Any] = {}
    for p in api.list(POD, ns)[0]:
        spec = dict(p["spec"])
        for k in ("containers", "initContainers"):
            if k in spec:
                spec[k] = [_container(c) for c in spec[k]]
        spec["volumes"] = sorted(spec.get("volumes") or [], key=lambda v: v["name"])
        spec.pop("nodeName", None)
        out[f"Pod/{p['metadata']['name']}"] = {"metadata": _meta(p["metadata"], group_names), "spec": spec}
    for pg in pgs:
        md = {**pg["metadata"], "name": _pg_job(pg)}
        spec = dict(pg["spec"])
        # minResources compared by amount; Volcano's quota-style extras (pods, count/pods, requests.*) are a
        # documented difference
        spec["minResources"] = {k: amount(k, v) for k, v in (spec.get("minResources") or {}).items()
                                if k not in ("pods", "count/pods") and not k.startswith("requests.")}
        out[f"PodGroup/{_pg_job(pg)}"] = {"metadata": _meta(md, group_names), "spec": spec}
    for res in (SERVICE, CONFIGMAP, NETWORKPOLICY):
        for o in api.list(res, ns)[0]:
            body = {k: v for k, v in o.items() if k not in ("metadata", "status", "apiVersion", "kind")}
            if res == SERVICE and body["spec"].get("clusterIP") != "None":  # allocated: differs by nature
                body["spec"] = {k: v for k, v in body["spec"].items() if k not in ("clusterIP", "clusterIPs")}
            out[f"{o['kind'] or res.kind}/{o['metadata']['name']}"] = {"metadata": _meta(o["metadata"], {}), **body}
    for s in api.list(SECRET, ns)[0]:
        data = {k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()}
        shape = {"keys": sorted(data), "config": data.get("config"),
                 "pem": data.get("id_rsa", "").startswith("-----BEGIN RSA PRIVATE KEY-----"),
                 "pub": data.get("id_rsa.pub", "").startswith("ssh-rsa ") and data.get("id_rsa.pub", "").endswith("\n"),
                 "authorized": data.get("authorized_keys") == data.get("id_rsa.pub")}
        out[f"Secret/{s['metadata']['name']}"] = {"metadata": _meta(s["metadata"], {}), "type": s.get("type"),
                                                  "data": shape}
    # the namespace differs by construction (a label and selectors name it)
    return dict(json.loads(json.dumps(out).replace(f'"{ns}"', '"NS"')))


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    lines = [f"only pyvolcano: {k}" for k in sorted(set(a) - set(b))]
    lines += [f"only Volcano: {k}" for k in sorted(set(b) - set(a))]
    for k in sorted(set(a) & set(b)):
        if a[k] != b[k]:
            lines.append(f"{k}:\n  pyvolcano: {a[k]}\n  Volcano:   {b[k]}")
    return lines


@pytest.fixture(scope="module")
def sides(kube_server: kubeserver.Server, api: KubeClient, controller: cluster.Proc,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    if not (os.access(VOLCANO_UP, os.X_OK) and os.access(VOLCANO_DOWN, os.X_OK)):
        pytest.skip(f"needs Volcano's tools at {VOLCANO_UP.parent} (volcano-up, volcano-down)")
    if not kube_server.owned:
        pytest.skip("needs an API server of the run's own: volcano-up would disturb others sharing "
                    "PYVOLCANO_KUBECONFIG")
    wait(lambda: "controllers running" in controller.text(), 60, "pyvolcano's controller to lead")
    tag = uuid.uuid4().hex[:5]
    ns_py, ns_vc = f"pv-jp-py-{tag}", f"pv-jp-vc-{tag}"
    vdir = tmp_path_factory.mktemp("volcano")
    frozen = False
    try:
        with contextlib.suppress(ApiError):  # as volcano-up applies it (a run of this module alone has none)
            api.create(QUEUE, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                               "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}})
        _namespace(api, ns_py)
        _run(api, ns_py)
        py = snapshot(api, ns_py)
        os.kill(controller.p.pid, signal.SIGSTOP)  # only Volcano's controller acts from here on
        frozen = True
        r = subprocess.run([str(VOLCANO_UP), kube_server.kubeconfig, str(vdir), "--",
                            "--scheduler-name=pyvolcano-side-by-side-nobody"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        _namespace(api, ns_vc)
        _run(api, ns_vc)
        vc = snapshot(api, ns_vc)
        yield py, vc
    finally:
        subprocess.run([str(VOLCANO_DOWN), str(vdir)], capture_output=True, timeout=120)
        for ns in (ns_vc, ns_py):
            for res in (VCJOB, PODGROUP, POD, SERVICE, CONFIGMAP, SECRET, NETWORKPOLICY):
                with contextlib.suppress(ApiError):
                    api.request("DELETE", res.path(ns), {"gracePeriodSeconds": 0})
        apply_all(api, manifest_objects(crds_only=True))  # pyvolcano's CRDs back, as the other tests expect them
        if frozen:
            # frozen past its Lease, the controller would find itself deposed and exit (as Volcano's does) and
            # leave the later tests of this worker without one: start it afresh and wait until it leads again
            os.kill(controller.p.pid, signal.SIGCONT)
            runs = controller.text().count("controllers running")
            controller.restart()
            wait(lambda: controller.text().count("controllers running") > runs, 60, "pyvolcano's controller to lead again")
        for ns in (ns_vc, ns_py):
            with contextlib.suppress(ApiError):
                api.delete(NAMESPACE, ns)


def test_same_objects_as_volcanos_controller(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """One test for every case, so that one process (one ``volcano-up``) runs them all under ``-n 2``."""
    py, vc = sides
    diffs: list[str] = []
    for case in (j["metadata"]["name"] for j in CASES):
        a = {k: v for k, v in py.items() if _owner(v) == case}  # the objects of the case's Job (it owns them all)
        b = {k: v for k, v in vc.items() if _owner(v) == case}
        assert a, f"pyvolcano made nothing for {case}"
        diffs += _diff(a, b)
    assert not diffs, "\n".join(diffs)


def _owner(obj: dict[str, Any]) -> str:
    return next((o["name"] for o in obj["metadata"].get("ownerReferences") or []), "")


def test_the_cases_cover_every_plugin() -> None:
    from pyvolcano.api.job_plugin_args import VOLCANO_PLUGINS

    assert {p for j in CASES for p in j["spec"]["plugins"]} == set(VOLCANO_PLUGINS)
    # the webhook's defaults are in: the mpi case runs with the ssh and svc plugins it needs, pytorch with svc
    plugins = {j["metadata"]["name"]: set(j["spec"]["plugins"]) for j in CASES}
    assert plugins["mpi"] == {"mpi", "ssh", "svc"} and plugins["pytorch"] == {"pytorch", "svc"}
    assert plugins["pytorch-wait"] == {"pytorch"}

