"""Fixtures for the tests against a real API server (marker ``kube``).

``kube_server`` starts one kube-apiserver + etcd for the run through ``../shared/tools/kube/kube-up`` (or uses
``PYVOLCANO_KUBECONFIG``) and always stops it again; without either the ``kube`` tests skip and say how to run
them.  Under ``make test`` (``-n 2``) each worker that runs ``kube`` tests starts its own server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from pyvolcano.commands.install import apply_all, manifest_objects
from pyvolcano.kube.client import ApiError, KubeClient
from pyvolcano.kube.resources import NAMESPACE, NODE
from tests.kube import cluster, kubeserver
from tests.kube.cluster import Env, wait


@pytest.fixture(scope="session")
def kube_server() -> Iterator[kubeserver.Server]:
    with kubeserver.serving() as srv:
        yield srv


@pytest.fixture(scope="session")
def api(kube_server: kubeserver.Server) -> KubeClient:
    kc = cluster.client()
    apply_all(kc, manifest_objects(crds_only=True))
    for ns in kc.list(NAMESPACE, label_selector="pyvolcano-test")[0]:  # leftovers of an interrupted run
        cluster.clean_namespace(kc, ns["metadata"]["name"])
    for n in kc.list(NODE, label_selector="pyvolcano-test")[0]:
        with contextlib.suppress(ApiError):
            kc.delete(NODE, n["metadata"]["name"])
    return kc


@pytest.fixture(scope="session")
def controller(api: KubeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.Proc]:
    """One controller per pytest process, with leader election: when xdist workers share one server
    (``PYVOLCANO_KUBECONFIG``), only the Lease holder manages the jobs, as two controllers would both manage every
    job (that broke the vcjob tests under ``-n 2``); a worker that finishes releases the Lease and another
    worker's controller takes over at once."""
    log = tmp_path_factory.mktemp("controller") / "controller.log"
    p = cluster.Proc(["controller", "--listen-address", "", "--lock-object-namespace", "kube-system",
                      "--leader-elect-resource-name", "pyvolcano-test-controller",
                      "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
                      "--leader-elect-retry-period", "250ms"], log)
    wait(lambda: "controllers running" in p.text() or "waiting for the lease" in p.text() or p.p.poll() is not None,
         60, "the controller to start")
    assert p.p.poll() is None, p.text()[-3000:]
    yield p
    p.stop()


@pytest.fixture
def env(api: KubeClient) -> Iterator[Env]:
    e = Env(api)
    yield e
    e.cleanup()


@pytest.fixture
def procs() -> Iterator[list[cluster.Proc]]:
    ps: list[cluster.Proc] = []
    yield ps
    for p in ps:
        p.stop()
