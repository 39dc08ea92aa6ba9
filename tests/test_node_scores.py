"""Kubernetes 1.36 node scores as Volcano master's nodeorder computes them (``noderesources`` LeastAllocated,
MostAllocated, BalancedAllocation; ``helper.DefaultNormalizeScore``): whole numbers, vector and per-node forms
equal."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.framework.scores import default_normalize
from pyvolcano.plugins._k8s import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, nonzero_requests
from pyvolcano.plugins.nodeorder import (
    balance,
    balance1,
    balance_change,
    least_allocated,
    least_allocated1,
    most_allocated,
    most_allocated1,
)

GI = 1024.0**3


def test_least_allocated_is_an_integer_mean() -> None:
    # cpu (4000-1000)*100/4000 = 75; memory (8-1)*100/8 = 87.5 -> 87; (75*50 + 87*50) / 100 = 81
    alloc, req = np.array([[4000.0, 8 * GI]]), np.array([[1000.0, 1 * GI]])
    assert least_allocated(alloc, req).tolist() == [81.0]
    assert least_allocated1([4000.0, 8 * GI], [1000.0, 1 * GI]) == 81.0
    # over-requested resource scores 0; a resource the node lacks is left out of the mean
    assert least_allocated1([4000.0, 8 * GI], [5000.0, 0.0]) == 50.0
    assert least_allocated1([4000.0, 0.0], [1000.0, 0.0]) == 75.0


def test_most_allocated_caps_at_allocatable() -> None:
    assert most_allocated1([4000.0, 8 * GI], [1000.0, 3 * GI]) == 31.0  # 25 and 37.5 -> 37: (25 + 37) // 2
    assert most_allocated1([4000.0, 8 * GI], [9000.0, 8 * GI]) == 100.0
    assert most_allocated(np.array([[4000.0, 8 * GI]]), np.array([[1000.0, 3 * GI]])).tolist() == [31.0]


def test_balanced_scores_the_change_in_balance() -> None:
    alloc = [4000.0, 8 * GI]
    # empty node, pod (1000, 1Gi): with 0.25/0.125 -> std 0.0625 -> 93; without 100 -> 50 + (50 + 93 - 100)/2 = 71
    w, wo = balance1(alloc, [1000.0, 1 * GI]), balance1(alloc, [0.0, 0.0])
    assert (w, wo) == (93.0, 100.0)
    assert balance_change(np.array([w]), np.array([wo])).tolist() == [71.0]
    # a pod that evens out an unbalanced node scores above 75
    w, wo = balance1(alloc, [3000.0, 6 * GI]), balance1(alloc, [3000.0, 2 * GI])
    assert balance_change(np.array([w]), np.array([wo])).tolist()[0] > 75


@pytest.mark.parametrize("seed", range(5))
def test_vector_and_per_node_forms_agree(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    for k in (2, 3):
        alloc = rng.choice([0.0, 1000.0, 2000.0, 4000.0, 8 * GI, 3.0], size=(n, k))
        req = rng.choice([0.0, 100.0, 1000.0, 2500.0, 5000.0, 1 * GI, 2.0], size=(n, k))
        vec = balance(alloc, req)
        assert vec.tolist() == [balance1(a.tolist(), r.tolist()) for a, r in zip(alloc, req, strict=True)]
    alloc = rng.choice([0.0, 1000.0, 4000.0, 8 * GI], size=(n, 2))
    req = rng.choice([0.0, 100.0, 1000.0, 5000.0, 1 * GI], size=(n, 2))
    assert least_allocated(alloc, req).tolist() == [least_allocated1(a.tolist(), r.tolist())
                                                    for a, r in zip(alloc, req, strict=True)]
    assert most_allocated(alloc, req).tolist() == [most_allocated1(a.tolist(), r.tolist())
                                                   for a, r in zip(alloc, req, strict=True)]


def test_default_normalize() -> None:
    assert default_normalize(np.array([30.0, 0.0, 10.0]), False).tolist() == [100.0, 0.0, 33.0]
    assert default_normalize(np.array([2.0, 0.0, 1.0]), True).tolist() == [0.0, 100.0, 50.0]
    assert default_normalize(np.array([0.0, 0.0]), True).tolist() == [100.0, 100.0]
    assert default_normalize(np.array([0.0, 0.0]), False).tolist() == [0.0, 0.0]


def test_nonzero_requests_fill_missing_container_requests() -> None:
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {}}],
                    "initContainers": [{"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
                    "overhead": {"cpu": "10m"}}}
    cpu, mem = nonzero_requests(pod)
    assert cpu == 3000.0 + 10.0  # init container's 3 cpu beats 1 + 0.1
    assert mem == GI  # the init container's 1Gi beats two containers without a memory request (2 x 200Mi)
    assert nonzero_requests({"spec": {"containers": [{}, {}]}})[1] == 2 * DEFAULT_MEMORY
    explicit_zero = {"spec": {"containers": [{"resources": {"requests": {"cpu": "0", "memory": "0"}}}]}}
    assert nonzero_requests(explicit_zero) == (0.0, 0.0)  # only *missing* requests get the defaults
    assert nonzero_requests({"spec": {"containers": [{}]}}) == (DEFAULT_MILLI_CPU, DEFAULT_MEMORY)


def test_k8s_extra_only_for_pods_kubernetes_sees_differently() -> None:
    from pyvolcano.api.k8s_requests import k8s_extra
    pos = {"cpu": 0, "memory": 1, "pods": 2}
    full = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    req = np.array([1000.0, GI, 1.0])
    assert k8s_extra(full, pos, req, req) is None
    no_memory = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
    req = np.array([1000.0, 0.0, 1.0])
    assert k8s_extra(no_memory, pos, req, req) == (0.0, 0.0, 0.0, 0.0, DEFAULT_MEMORY)
    big_init = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                         "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}}
    req, init = np.array([1000.0, GI, 1.0]), np.array([2000.0, GI, 1.0])
    assert k8s_extra(big_init, pos, req, init) == (1000.0, 0.0, 0.0, 1000.0, 0.0)


def test_record_ties_lists_every_best_scored_node() -> None:
    """Volcano picks among equally scored nodes at random; ``record_ties`` reports them all, and pyvolcano's own
    choice (the first in node order) is one of them."""
    from pyvolcano.conf.loader import load_conf
    from pyvolcano.framework.cycle import cycle_objects

    def node(name: str, cpu: str) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}

    objs = [node("n1", "4"), node("n2", "8"), node("n3", "4"),
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
             "annotations": {"scheduling.k8s.io/group-name": "pg"}},
             "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
             "status": {"phase": "Pending"}}]
    conf = load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n'
                     '    arguments: {leastrequested.weight: 0, balancedresource.weight: 0}\n')
    for engine in ("vector", "scalar"):
        result, _ = cycle_objects(objs, conf, engine=engine, record_ties=True)
        assert result.ties == {"ns/p": ["n1", "n2", "n3"]}  # no resource scores: every node ties
        assert result.binds == {"ns/p": "n1"}
    conf = load_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n')
    result, _ = cycle_objects(objs, conf, record_ties=True)
    assert result.ties == {"ns/p": ["n2"]} and result.binds == {"ns/p": "n2"}  # the larger node is least requested
    assert cycle_objects(objs, conf)[0].ties == {}  # off unless asked


def test_template_key_tells_apart_pods_kubernetes_sees_differently() -> None:
    """Node selection shares masks and scores among a template's pods (``framework/node_select.py``); the scores
    read Kubernetes' view of the requests, so equal ``resreq`` with a different container layout (a container
    without requests gets the non-zero defaults) is another template."""
    from pyvolcano.cache.cache import SchedulerCache

    def pod(name: str, *extra: dict[str, object]) -> dict[str, object]:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                            "annotations": {"scheduling.k8s.io/group-name": "g"}},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}, *extra]},
                "status": {"phase": "Pending"}}

    cache = SchedulerCache("volcano")
    cache.upsert({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}, "spec": {"queue": "a"}})
    for p in (pod("a"), pod("b"), pod("c", {"name": "sidecar"})):
        assert cache.upsert(p)
    a, b, c = (cache.tasks[f"default/{n}"] for n in "abc")
    assert (a.resreq == c.resreq).all() and c.k8s_extra is not None and a.k8s_extra is None
    assert a.template_key == b.template_key != c.template_key
