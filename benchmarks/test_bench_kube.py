"""Kubernetes mode at scale on a real API server (``PYVOLCANO_KUBECONFIG``, or one started with
``../shared/tools/kube/kube-up``; skipped without either).

Run by ``make bench``.  What it measures is the whole path a user sees: objects
listed and watched from the API server, sessions, concurrent ``pods/binding`` calls, until every pod of a
backlog is bound.  Nodes are plain Node objects and no kubelet runs, so the figures are the scheduler's and
the API server's, not a node's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.kube import cluster, kubeserver
from tests.kube.cluster import Env, mk_pod, mk_podgroup, scheduler

from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import NODE, POD

pytestmark = [pytest.mark.slow, pytest.mark.kube]

NODES = 1000
GANGS = 300
GANG = 10


@pytest.fixture(scope="module")
def server() -> Iterator[kubeserver.Server]:
    with kubeserver.serving() as srv:
        yield srv


@pytest.fixture
def env(server: kubeserver.Server) -> Iterator[Env]:
    e = Env(cluster.client())
    yield e
    e.cleanup()


def _gang(api: KubeClient, env: Env, g: int) -> None:
    mk_podgroup(api, env, f"g{g}", GANG)
    for i in range(GANG):
        mk_pod(api, env, f"g{g}-{i}", f"g{g}")


def _bound(api: KubeClient, ns: str) -> int:
    return sum(1 for p in api.list(POD, ns)[0] if (p.get("spec") or {}).get("nodeName"))


def test_backlog_of_3000_pods_on_1000_nodes_binds(env: Env, tmp_path: Path) -> None:
    api = env.api
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: env.node(f"n{i}", cpu="8", memory="32Gi"), range(NODES)))
        list(pool.map(lambda g: _gang(api, env, g), range(GANGS)))
    pods = GANGS * GANG
    t0 = time.monotonic()
    proc = scheduler(tmp_path, "sched", "-v", env=env)
    try:
        cluster.wait(lambda: _bound(api, env.ns) == pods, 300, f"all {pods} pods to be bound", interval=0.5)
        seconds = time.monotonic() - t0
    finally:
        proc.stop()
    log = proc.text()
    synced = [ln for ln in log.splitlines() if "informers synced" in ln]
    print(f"\n{NODES} nodes, {pods} pods in gangs of {GANG}: all bound {seconds:.1f} s after the scheduler "
          f"started ({pods / seconds:.0f} pods/s end to end); {synced[-1] if synced else ''}")
    assert len(api.list(NODE, label_selector=env.label)[0]) == NODES
    assert seconds <= 120
