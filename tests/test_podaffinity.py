"""Inter-pod affinity, topology spread and image locality (plugins/_podaffinity.py): the Kubernetes rules in
isolation, the counts through allocate / Statement discard / evict, and the figures the real Volcano printed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyvolcano.api.types import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.loader import load_conf
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.plugins._podaffinity import (
    NOTHING,
    POD_AFFINITY,
    PodAffinityState,
    normalize_affinity,
    normalize_spread,
    parse_selector,
)

Obj = dict[str, Any]

CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: nodeorder
"""

ANTI_A = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}}]}}


def node(name: str, zone: str | None, images: list[Obj] | None = None, cpu: str = "8") -> Obj:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["zone"] = zone
    status: Obj = {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
    if images is not None:
        status["images"] = images
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": status}


def pod(name: str, labels: dict[str, str], *, node_name: str = "", ns: str = "ns", group: str = "pg",
        **spec: Any) -> Obj:
    s: Obj = {"schedulerName": "volcano",
              "containers": spec.pop("containers", [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]), **spec}
    if node_name:
        s["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": s, "status": {"phase": "Running" if node_name else "Pending"}}


def pg(name: str = "pg", min_member: int = 1, ns: str = "ns") -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member},
            "status": {"phase": "Inqueue"}}


def session(objs: list[Obj], conf: str = CONF, engine: str = "vector") -> Session:
    return Session(SchedulerCache.from_objects(objs).snapshot(), load_conf(conf, "test conf"), engine).open()


def task(ssn: Session, uid: str) -> Any:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.uid == uid)


# --- selectors ---------------------------------------------------------------------------------------------------
def test_label_selector_semantics() -> None:
    """metav1.LabelSelectorAsSelector: nil matches nothing, {} everything (but counts nothing in spread);
    NotIn and DoesNotExist match a pod without the key."""
    assert not NOTHING.matches({"app": "a"})
    everything = parse_selector({})
    assert everything.matches({}) and everything.empty
    sel = parse_selector({"matchLabels": {"app": "a"},
                          "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]},
                                               {"key": "gone", "operator": "DoesNotExist"}]})
    assert sel.matches({"app": "a"}) and sel.matches({"app": "a", "tier": "web"})
    assert not sel.matches({"app": "a", "tier": "db"}) and not sel.matches({"app": "a", "gone": ""})
    assert not parse_selector({"matchExpressions": [{"key": "x", "operator": "Bogus"}]}).matches({"x": "1"})


def test_normalisation_is_kubernetes_integer_arithmetic() -> None:
    # interpodaffinity: 100 * (s - min) / (max - min), truncated; all equal -> 0
    assert normalize_affinity(np.array([-10.0, 0.0, 20.0])).tolist() == [0.0, 33.0, 100.0]
    assert normalize_affinity(np.array([5.0, 5.0])).tolist() == [0.0, 0.0]
    # podtopologyspread: 100 * (max + min - s) / max in integers, ignored nodes 0, all-zero -> 100
    raw = np.array([4.0, 0.0, 3.0, 9.0])
    assert normalize_spread(raw, np.array([False, False, False, True])).tolist() == [0.0, 100.0, 25.0, 0.0]
    assert normalize_spread(np.zeros(2), np.zeros(2, bool)).tolist() == [100.0, 100.0]


# --- counts follow the session ------------------------------------------------------------------------------------
def test_discarded_statement_restores_counts_and_answers() -> None:
    objs = [node("n1", "z1"), node("n2", "z2"), pg("a", 2), pg("b"),
            pod("a-0", {"app": "a"}, group="a", affinity=ANTI_A), pod("a-1", {"app": "a"}, group="a", affinity=ANTI_A),
            pod("b", {"app": "b"}, group="b")]
    ssn = session(objs)
    st: PodAffinityState = ssn.state.read(POD_AFFINITY)
    a0, a1 = task(ssn, "ns/a-0"), task(ssn, "ns/a-1")
    idx = np.arange(2)
    assert st.anti_ok(a1, idx).tolist() == [True, True]
    stmt = Statement(ssn)
    stmt.allocate(a0, 0)
    assert st.anti_ok(a1, idx).tolist() == [False, True]  # zone z1 now holds an app=a pod
    assert ssn.feasible_nodes(a1).tolist() == [False, True]
    stmt.discard()
    assert st.anti_ok(a1, idx).tolist() == [True, True]
    assert not st.placed and all(not c.any() for c in st.counters.values())
    assert ssn.feasible_nodes(a1).tolist() == [True, True]


def test_evicted_pod_stops_counting_and_unevict_does_not_restore() -> None:
    """Volcano's predicates event handlers remove an evicted pod from Kubernetes' NodeInfo; undoing the eviction
    does not put it back, because the handler's Reserve fails for a pod PrePredicate never saw
    (``_podaffinity.reserve_fails``; vc-oracle: tests/differential/repros/preempt-resolvable-anti-affinity)."""
    objs = [node("n1", "z1"), node("n2", "z1"), pg("run"), pod("r", {"app": "a"}, node_name="n1", group="run"),
            pg("new"), pod("p", {"app": "p"}, group="new", affinity=ANTI_A)]
    ssn = session(objs)
    st: PodAffinityState = ssn.state.read(POD_AFFINITY)
    r, p = task(ssn, "ns/r"), task(ssn, "ns/p")
    idx = np.arange(2)
    assert st.anti_ok(p, idx).tolist() == [False, False]
    stmt = Statement(ssn)
    stmt.evict(r, "test")
    assert r.status == TaskStatus.Releasing
    assert st.anti_ok(p, idx).tolist() == [True, True]
    stmt.discard()
    assert r.status == TaskStatus.Running
    assert st.anti_ok(p, idx).tolist() == [True, True]


def test_terminating_pod_counts_for_affinity_but_not_for_spread() -> None:
    """interpodaffinity counts every pod of the NodeInfo; podtopologyspread's countPodsMatchSelector skips
    terminating ones."""
    term = pod("old", {"app": "a"}, node_name="n1", group="run")
    term["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "a"}}}]
    objs = [node("n1", "z1"), node("n2", "z2"), pg("run"), term, pg("x"), pg("y"),
            pod("x", {"app": "x"}, group="x", affinity=ANTI_A),
            pod("y", {"app": "a"}, group="y", topologySpreadConstraints=spread)]
    ssn = session(objs)
    st: PodAffinityState = ssn.state.read(POD_AFFINITY)
    idx = np.arange(2)
    assert st.anti_ok(task(ssn, "ns/x"), idx).tolist() == [False, True]
    assert st.spread_ok(task(ssn, "ns/y"), idx).tolist() == [True, True]


def test_spread_min_domains_and_node_affinity_policy() -> None:
    """minDomains above the number of eligible domains makes the global minimum 0; nodes the pod's
    nodeSelector excludes do not count (nodeAffinityPolicy Honor) unless the policy is Ignore."""
    base = [node("n1", "z1"), node("n2", "z2"), node("n3", None), pg("run"), pg("new"),
            pod("r1", {"app": "s"}, node_name="n1", group="run"), pod("r2", {"app": "s"}, node_name="n2", group="run"),
            pod("r3", {"app": "s"}, node_name="n2", group="run")]

    def spread_ok(**c: Any) -> list[bool]:
        cons = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "s"}}, **c.pop("extra", {})}]
        ssn = session([*base, pod("p", {"app": "s"}, group="new", topologySpreadConstraints=cons, **c)])
        st: PodAffinityState = ssn.state.read(POD_AFFINITY)
        t = task(ssn, "ns/p")
        return (st.spread_ok(t, np.arange(3)) & st.spread_labels_ok(t, np.arange(3))).tolist()

    assert spread_ok() == [True, False, False]  # z1: 1 + 1 - 1 <= 1, z2: 2 + 1 - 1 > 1; n3 has no zone label
    assert spread_ok(extra={"minDomains": 3}) == [False, False, False]  # 2 domains < 3: minimum 0
    # only z2 is eligible (minimum 2): z1 counts 0 + 1 - 2, z2 2 + 1 - 2
    assert spread_ok(nodeSelector={"kubernetes.io/hostname": "n2"}) == [True, True, False]
    assert spread_ok(nodeSelector={"kubernetes.io/hostname": "n2"},
                     extra={"nodeAffinityPolicy": "Ignore"}) == [True, False, False]


def test_match_label_keys_narrow_the_spread_selector() -> None:
    cons = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "s"}}, "matchLabelKeys": ["rev"]}]
    objs = [node("n1", "z1"), node("n2", "z2"), pg("run"), pg("new"),
            pod("old1", {"app": "s", "rev": "1"}, node_name="n1", group="run"),
            pod("old2", {"app": "s", "rev": "1"}, node_name="n1", group="run"),
            pod("p", {"app": "s", "rev": "2"}, group="new", topologySpreadConstraints=cons)]
    ssn = session(objs)
    st: PodAffinityState = ssn.state.read(POD_AFFINITY)
    assert st.spread_ok(task(ssn, "ns/p"), np.arange(2)).tolist() == [True, True]  # rev 1 pods do not count


def test_pod_affinity_enable_switch() -> None:
    conf = CONF.replace("  - name: predicates\n", "  - name: predicates\n    arguments:\n"
                                                   "      predicate.PodAffinityEnable: false\n")
    objs = [node("n1", "z1"), pg("run"), pod("r", {"app": "a"}, node_name="n1", group="run"),
            pg("new"), pod("p", {"app": "p"}, group="new", affinity=ANTI_A)]
    assert session(objs).feasible_nodes(task(session(objs), "ns/p")).tolist() in ([False],)
    ssn = session(objs, conf)
    assert ssn.feasible_nodes(task(ssn, "ns/p")).tolist() == [True]


# --- image locality: figures printed by vc-oracle (Volcano ed72c7c8, actions "" -> nodeScores) -----------------
IMAGES = {
    "n1": [{"names": ["a:1", "reg/a@sha256:x"], "sizeBytes": 900000000}, {"names": ["b:latest"], "sizeBytes": 30000000},
           {"names": ["c:2"], "sizeBytes": 2000000000}],
    "n2": [{"names": ["a:1"], "sizeBytes": 900000000}, {"names": ["c:2"], "sizeBytes": 2000000000}],
    "n3": [{"names": ["b:latest"], "sizeBytes": 30000000}],
    "n4": [],
}
PODS: dict[str, Obj] = {
    "p1": {"containers": [{"name": "c", "image": "a:1"}, {"name": "d", "image": "b"}]},
    "p2": {"initContainers": [{"name": "i", "image": "c:2"}], "containers": [{"name": "c", "image": "reg/a@sha256:x"}]},
    "p3": {"containers": [{"name": "c", "image": "c:2"}]},
}


@pytest.mark.parametrize(("order", "want"), [
    (["n1", "n2", "n3", "n4"], {"p1": [10, 20, 0, 0], "p2": [33, 47, 0, 0], "p3": [46, 95, 0, 0]}),
    (["n2", "n1", "n3", "n4"], {"p1": [9, 20, 0, 0], "p2": [22, 57, 0, 0], "p3": [46, 95, 0, 0]}),
])
def test_image_locality_matches_volcano(order: list[str], want: dict[str, list[int]]) -> None:
    """Volcano counts an image's nodes as its cache met them (a node sees itself and earlier nodes), so the
    node order of the snapshot matters; ``want`` is in ``order``."""
    objs: list[Obj] = [node(n, "z", IMAGES[n]) for n in order] + [pg("pg", 1)]
    objs += [pod(name, {}, **spec) for name, spec in PODS.items()]
    ssn = session(objs)
    st: PodAffinityState = ssn.state.read(POD_AFFINITY)
    for name, scores in want.items():
        got = dict(zip(ssn.nodes.names, st.image_scores(st.parse(task(ssn, f"ns/{name}")).images).tolist(),
                       strict=True))
        assert got == {n: float(s) for n, s in zip(order, scores, strict=True)}, name


def test_image_locality_is_cached_per_image_set() -> None:
    """The static score is cached per pod template plus its images, so two pods alike except for the image
    get their own scores."""
    objs: list[Obj] = [node("n1", "z", IMAGES["n1"], cpu="9"), node("n2", "z", IMAGES["n3"], cpu="8"),
                       pg("pg", 1), pg("q", 1)]
    objs += [pod("x", {}, group="pg", containers=[{"name": "c", "image": "c:2",
                                                   "resources": {"requests": {"cpu": "1"}}}]),
             pod("y", {}, group="q", containers=[{"name": "c", "image": "zzz",
                                                  "resources": {"requests": {"cpu": "1"}}}])]
    for engine in ("vector", "scalar"):
        ssn = session(objs, engine=engine)
        assert ssn.select_node(task(ssn, "ns/x"))[0] == 0
        ssn.allocate(task(ssn, "ns/x"), 0)
        assert ssn.select_node(task(ssn, "ns/y"))[0] == 1  # no image anywhere: the emptier node
