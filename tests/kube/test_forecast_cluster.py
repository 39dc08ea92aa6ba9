"""``pyvolcano forecast --kubeconfig`` against a real API server (issue 30 item 2): the cluster is listed as a
snapshot (nodes, pods, PodGroups, queues, Volcano Jobs) and its pending job is forecast."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from pyvolcano.cli import main
from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import POD
from tests.kube import cluster, kubeserver
from tests.kube.cluster import Env

pytestmark = [pytest.mark.kube]


def test_forecast_reads_the_cluster(kube_server: kubeserver.Server, api: KubeClient, env: Env) -> None:
    """A 4-cpu node holds a 3-cpu pod that started 100 s ago and runs 600 s (annotated); a pending 2-cpu job waits:
    it starts when the pod ends, about 500 s from now."""
    node = env.node("n1", cpu="4")
    cluster.mk_podgroup(api, env, "wait", 1)
    cluster.mk_pod(api, env, "wait-0", "wait", cpu="2")
    api.create(POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "run-0", "namespace": env.ns, "annotations": {"pyvolcano.io/duration": "600"}},
        "spec": {"schedulerName": env.scheduler_name, "nodeName": node, "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "3", "memory": "64Mi"}}}]}}, env.ns)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 100))
    api.patch(POD, "run-0", {"status": {"phase": "Running", "startTime": started}}, env.ns, subresource="status")
    r = CliRunner().invoke(main, ["forecast", "--kubeconfig", kube_server.kubeconfig, "--scheduler-name",
                                  env.scheduler_name, "-o", "json"])
    assert r.exit_code == 0, r.output
    jobs = {j["podgroup"]: j for j in json.loads(r.output.splitlines()[0])["jobs"]}
    got = jobs[f"{env.ns}/wait"]
    assert 490 <= got["start_median_s"] <= 501 and got["start_p5_s"] == got["start_p95_s"]
