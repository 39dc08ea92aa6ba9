"""Fixtures for the tests against a real API server (marker ``kube``).

``kube_server`` starts one kube-apiserver + etcd for the run through ``../shared/tools/kube/kube-up`` (or uses
``PYVOLCANO_KUBECONFIG``) and always stops it again; without either the ``kube`` tests skip and say how to run
them.  Every ``kube`` test is put in one pytest-xdist group, so under ``make test`` (``-n 2 --dist loadgroup``)
they all run on one worker, one after another, against one server and one session-wide controller: two
controllers on one server would both manage every Volcano Job (that is what broke the vcjob tests under ``-n 2``).
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("kube") is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("kube"))


@pytest.fixture(scope="session")
def kube_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubeserver.Server]:
    if not kubeserver.available():
        pytest.skip(kubeserver.HOW_TO_RUN)
    srv = kubeserver.session_server(tmp_path_factory.getbasetemp())
    cluster.KUBECONFIG = srv.kubeconfig
    try:
        yield srv
    finally:
        srv.down()


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
    """One controller for the whole run (two would both manage every job)."""
    log = tmp_path_factory.mktemp("controller") / "controller.log"
    p = cluster.Proc(["controller", "--no-leader-elect", "--listen-address", ""], log)
    wait(lambda: "controllers running" in p.text() or p.p.poll() is not None, 60, "the controller to start")
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
